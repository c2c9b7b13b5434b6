"""What a replay after a code change costs a lab: at K = 1.58 M it takes seconds a plate (docs/scale.md,
"Session 26"), and `next` / `status` said nothing while it ran. Checked on a small campaign with a faked code
change: the progress lines appear, and the state after is the one the campaign had."""

from __future__ import annotations

import pytest
from campaign_util import Assay, new_campaign, write_results

from screenbai.campaign import Campaign
from screenbai.campaign.state import replay, store


@pytest.fixture
def path(tmp_path):
    p = tmp_path / "r.campaign"
    c = new_campaign(p, K=30, d=3)
    assay = Assay(c.features, seed=3)
    for k in range(3):
        plate = c.next_plate(6)
        c.record(write_results(tmp_path / f"p{k}.csv", plate, assay(plate.arms)))
    c.close()
    return p


def test_a_replay_after_a_code_change_says_what_it_does_on_stderr(path, monkeypatch, capsys):
    """A replay from the start (the snapshots written by other code) printed nothing: at 1.58 M compounds `next`
    and `status` sat two minutes on a silent terminal. It now says so as it starts, each plate and results file as
    it starts (from REPLAY_STEPS_FROM_K compounds: lowered here), and when it is done; the state reached is the one
    saved before, and the next open (snapshots of this code) says nothing."""
    from screenbai.cli import main

    with Campaign.open(path) as c:
        state = store.encode_state(c.policy.state_dict())
    assert capsys.readouterr().err == ""  # snapshots of this code: no replay, nothing said
    monkeypatch.setattr(store, "code_fingerprint", lambda: "a newer screenbai")
    monkeypatch.setattr(replay, "REPLAY_STEPS_FROM_K", 30)
    with Campaign.open(path) as c:
        assert store.encode_state(c.policy.state_dict()) == state
    err = [line.split(" (at ")[0] for line in capsys.readouterr().err.splitlines()]
    assert err == [
        f"{path}: the campaign's saved state was written by other algorithm code: replaying its log once "
        "(3 plate(s), 3 results file(s)) to check this screenbai proposes the same plates ...",
        *(
            f"{path}: replaying {what}"
            for k in range(3)
            for what in (f"plate P00{k + 1} ({k + 1} of 3) ...", f"results file p{k}.csv ({k + 1} of 3) ...")
        ),
        f"{path}: replayed: this screenbai proposes the same 3 plate(s)",
    ]
    assert main(["campaign", "status", str(path)]) == 0  # replayed once: the snapshots are this code's now
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(store, "code_fingerprint", lambda: "yet another screenbai")
    monkeypatch.setattr(replay, "REPLAY_STEPS_FROM_K", 31)  # below it: the first line and the last only
    with Campaign.open(path) as c:
        assert store.encode_state(c.policy.state_dict()) == state
    assert len(capsys.readouterr().err.splitlines()) == 2


def _steps(path) -> list[str]:
    return [
        f"{path}: replaying {what}"
        for k in range(3)
        for what in (f"plate P00{k + 1} ({k + 1} of 3) ...", f"results file p{k}.csv ({k + 1} of 3) ...")
    ]


def test_repair_and_an_open_without_the_saved_state_say_what_they_replay_as_an_upgrade_does(path, monkeypatch, capsys):
    """`campaign repair` and Campaign.open(use_snapshot=False) replay the whole log too, and said nothing while they
    did (the replay after a code change alone printed its progress). They now print the same lines, from the same
    code, with their own first line; the state reached is the one saved before."""
    from screenbai.cli import main

    with Campaign.open(path) as c:
        state = store.encode_state(c.policy.state_dict())
    capsys.readouterr()
    monkeypatch.setattr(replay, "REPLAY_STEPS_FROM_K", 30)
    with Campaign.open(path, use_snapshot=False) as c:
        assert store.encode_state(c.policy.state_dict()) == state
    err = [line.split(" (at ")[0] for line in capsys.readouterr().err.splitlines()]
    assert err == [
        f"{path}: replaying its log from the start, not from its saved state, as asked (3 plate(s), 3 results "
        "file(s)) ...",
        *_steps(path),
        f"{path}: replayed: this screenbai proposes the same 3 plate(s)",
    ]
    assert main(["campaign", "repair", str(path)]) == 0
    captured = capsys.readouterr()
    assert "replayed 3 results file(s) from the log" in captured.out
    err = [line.split(" (at ")[0] for line in captured.err.splitlines()]
    assert err == [
        f"{path}: repairing it: replaying its log from the start (3 plate(s), 3 results file(s)) to rebuild its "
        "saved state ...",
        *_steps(path),
        f"{path}: replayed: this screenbai proposes the same 3 plate(s)",
    ]
    with Campaign.open(path) as c:  # the repaired snapshots: the same state, no replay, nothing said
        assert store.encode_state(c.policy.state_dict()) == state
    assert capsys.readouterr().err == ""


def test_a_log_with_nothing_to_replay_says_nothing(tmp_path, capsys):
    """A new campaign (a backtest's first open of its file) opened without its saved state has no plate to replay:
    it printed "replayed: this screenbai proposes the same 0 plate(s)" on every backtest's stderr."""
    from campaign_util import new_campaign

    new_campaign(tmp_path / "new.campaign").close()
    capsys.readouterr()
    with Campaign.open(tmp_path / "new.campaign", use_snapshot=False) as c:
        assert c.policy is not None
    assert capsys.readouterr().err == ""

"""kill -9 at every step of a campaign (after `next`, between validation and commit, mid-record):
the file stays consistent and the campaign resumes exactly as an uninterrupted one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from campaign_util import KILL_AT, KILLED_CHILD, Assay, new_campaign, write_results

from screenbai.campaign import Campaign
from screenbai.campaign.state.store import get_meta

REPO = Path(__file__).resolve().parents[1]



def cli(point: str, *argv) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-c", KILLED_CHILD, "" if point == "none" else KILL_AT[point], "campaign", *map(str, argv)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _state(camp: Campaign):
    n, s, _, failed = camp.observations()
    return n.tolist(), s.tolist(), failed, camp.open_wells()


@pytest.mark.slow
def test_kill_at_every_step_resumes_identically(tmp_path):
    plate_size, rounds = 6, 2
    ref_path, crash_path = tmp_path / "ref.campaign", tmp_path / "crash.campaign"
    ref = new_campaign(ref_path)
    new_campaign(crash_path).close()
    assay_ref, assay_crash = Assay(ref.features), Assay(ref.features)
    for k in range(rounds):
        plate = ref.next_plate(plate_size)
        ref.record(write_results(tmp_path / f"ref{k}.csv", plate, assay_ref(plate.arms)))

        plate_file = tmp_path / f"P{k + 1:03d}.csv"
        if k % 2 == 0:
            # killed after `next` committed the plate and before its file was written
            r = cli("after-next", "next", crash_path, "--plate-size", plate_size, "--out", plate_file)
            assert r.returncode == -signal.SIGKILL, r.stderr
            assert not plate_file.exists()
            r = cli("none", "plate", crash_path, f"P{k + 1:03d}", "--out", plate_file)
            assert r.returncode == 0, r.stderr
        else:
            r = cli("none", "next", crash_path, "--plate-size", plate_size, "--out", plate_file)
            assert r.returncode == 0, r.stderr
        with Campaign.open(crash_path) as c:
            plate_c = c.plate(f"P{k + 1:03d}")
            before = _state(c)
        assert plate_c.arms == plate.arms  # the same plate as the uninterrupted campaign
        results = write_results(tmp_path / f"crash{k}.csv", plate_c, assay_crash(plate_c.arms))
        for point in ("before-commit", "mid-record"):
            r = cli(point, "record", crash_path, results)
            assert r.returncode == -signal.SIGKILL, r.stderr
            with Campaign.open(crash_path) as c:
                assert _state(c) == before  # nothing of the killed record survived
        r = cli("none", "record", crash_path, results)
        assert r.returncode == 0, r.stderr

    with Campaign.open(crash_path) as c:
        assert _state(c) == _state(ref)
        assert c.history() == [(s, n, lead, done) for s, n, lead, done in ref.history()]
        # the progress plot's points: kept per results file, none missing after the kills
        assert c.progress_history() == ref.progress_history()
        assert all(p["in_contention"] is not None for p in c.progress_history())
        assert c.policy.result().recommendation == ref.policy.result().recommendation
        nxt = c.next_plate(plate_size)
    assert nxt.arms == ref.next_plate(plate_size).arms
    ref.close()


def test_unfinished_transaction_is_rolled_back_on_open(tmp_path):
    """A writer killed inside its transaction leaves a WAL that the next open rolls back."""
    path = tmp_path / "c.campaign"
    camp = new_campaign(path)
    plate = camp.next_plate(4)
    camp.close()
    results = write_results(tmp_path / "r.csv", plate, [1] * len(plate))
    r = cli("mid-record", "record", path, results)
    assert r.returncode == -signal.SIGKILL
    with Campaign.open(path) as c:
        assert c.open_wells() == {"P001": len(plate)}
        assert [e[2] for e in c.events()] == ["init", "plate"]
        c.record(results)
        assert c.open_wells() == {}


@pytest.mark.slow
def test_next_run_again_after_a_kill_before_its_file_writes_the_same_plate(tmp_path):
    """`next` killed between committing its plate and writing the file, then run again as it was: it writes that
    plate's file (the file an uninterrupted `next` writes) instead of proposing a second plate, says so on stderr,
    and the `next` after it proposes the second plate."""
    ref_path, crash_path = tmp_path / "ref.campaign", tmp_path / "crash.campaign"
    new_campaign(ref_path).close()
    new_campaign(crash_path).close()
    for name, point in (("ref", "none"), ("crash", "after-next")):
        r = cli(point, "next", tmp_path / f"{name}.campaign", "--plate-size", 6, "--out", tmp_path / f"{name}1.csv")
        assert r.returncode == (0 if point == "none" else -signal.SIGKILL), r.stderr
    assert not (tmp_path / "crash1.csv").exists()
    again = cli("none", "next", crash_path, "--plate-size", 6, "--out", tmp_path / "crash1.csv")
    assert again.returncode == 0, again.stderr
    assert "plate P001 was proposed by a `next` that stopped before writing its file" in again.stderr
    assert "plate P001:" in again.stdout
    assert (tmp_path / "crash1.csv").read_text() == (tmp_path / "ref1.csv").read_text()
    with Campaign.open(crash_path) as c:
        assert c.open_wells() == {"P001": 6}  # one plate in the lab, as in the uninterrupted campaign
    for name in ("ref", "crash"):
        r = cli("none", "next", tmp_path / f"{name}.campaign", "--plate-size", 6, "--out", tmp_path / f"{name}2.csv")
        assert r.returncode == 0 and "plate P002:" in r.stdout, r.stderr
    assert (tmp_path / "crash2.csv").read_text() == (tmp_path / "ref2.csv").read_text()


def test_a_plate_without_file_is_resumed_only_when_its_next_is_gone(tmp_path):
    """The mark of a plate whose file is not written yet: left alone while its process runs (a `next` at the same
    time), taken up once that process has ended, dropped once outcomes of the plate are recorded."""
    camp = new_campaign(tmp_path / "c.campaign")
    plate = camp.next_plate(4, file_follows=True)
    assert camp.interrupted_plate() is None  # this process runs: its `next` may be writing the file now
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    key = "plate_file_unwritten P001"
    camp._con.execute("UPDATE meta SET value = json_set(value, '$.pid', ?) WHERE key = ?", (int(gone.stdout), key))
    assert camp.interrupted_plate() == "P001"
    camp.write_plate("P001", tmp_path / "P001.csv")  # as `campaign plate` does
    assert camp.interrupted_plate() is None
    second = camp.next_plate(4, file_follows=True)  # never written, then outcomes recorded by compound id
    camp._con.execute(
        "UPDATE meta SET value = json_set(value, '$.pid', ?) WHERE key = ?",
        (int(gone.stdout), "plate_file_unwritten P002"),
    )
    camp.record(write_results(tmp_path / "r2.csv", second, [1] * len(second), by_compound=True))
    assert camp.interrupted_plate() is None
    assert "plate_file_unwritten P002" not in get_meta(camp._con) and plate.plate_id == "P001"
    camp.close()


def test_a_table_cut_short_leaves_the_last_whole_file(tmp_path):
    """export's CSV (and the rejected rows, backtest.json, hit_recovery.csv, written the same way) is replaced
    whole or not at all: a write stopped midway (a kill, an error) never leaves a cut table that reads as whole."""
    from screenbai.campaign.views.export import COLUMNS, write_csv
    from screenbai.textfiles import written_whole

    path = tmp_path / "cdk2.csv"
    write_csv([dict.fromkeys(COLUMNS, "old")] * 3, path)
    whole = path.read_text()
    with pytest.raises(KeyError):  # three rows written, then one that cannot be: the write stops midway
        write_csv([dict.fromkeys(COLUMNS, "new")] * 3 + [{}], path)
    assert path.read_text() == whole
    with pytest.raises(RuntimeError), written_whole(tmp_path / "backtest.json") as fh:
        fh.write('{"tests": 96,')
        raise RuntimeError("killed")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cdk2.csv"]  # no cut JSON, no temporary file left

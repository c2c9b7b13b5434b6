"""A plate recorded from the wrong file (censC): ``record --replace PLATE`` while no later plate was proposed.

Before: a second file for a recorded plate was refused ("a plate is recorded once: remove its rows") and nothing could
correct it.  Now its results are replaced, the log says what was replaced by what, and the policy is the one the right
file would have given; once `next` proposed a plate from the wrong outcomes the replacement is refused, saying why."""

from __future__ import annotations

import csv

import numpy as np
import pytest
from campaign_util import new_campaign, percent_campaign, write_results

from screenbai.campaign import Campaign, PlateLayout, ResultsError
from screenbai.campaign.state import store
from screenbai.campaign.state.changes import restart_algorithm
from screenbai.campaign.state.correction import ReplaceRefused
from screenbai.campaign.state.store import encode_state
from screenbai.cli import main


def _state(camp) -> tuple:
    """What the policy's choices rest on: its leader, whether it stopped, and the next plate it proposes."""
    res = camp.policy.result()
    return list(res.recommendation), bool(camp.policy.done), list(camp.next_plate(8).arms)


def _right(plate) -> list[int]:
    return [int(a % 3 == 0) for a in plate.arms]


def test_a_plate_recorded_from_the_wrong_file_is_replaced_as_if_the_right_one_came_first(tmp_path):
    a, b = new_campaign(tmp_path / "a.campaign"), new_campaign(tmp_path / "b.campaign")
    for camp in (a, b):
        camp.next_plate(8)
        camp.next_plate(8)  # two plates in the lab: P001's results come first, then P002's
    p1, p2 = a.plate("P001"), a.plate("P002")
    wrong = write_results(tmp_path / "wrong.csv", p1, [1 - v for v in _right(p1)])
    right = write_results(tmp_path / "right.csv", p1, _right(p1))
    second = write_results(tmp_path / "p2.csv", p2, _right(p2))
    a.record(wrong)
    a.record(second)
    with pytest.raises(
        ResultsError,
        match=r"a plate is recorded once: remove its rows, or, if wrong.csv at \S+ was the "
        r"wrong file, record this one with --replace P001 \(before `next` proposes another plate\)",
    ):
        a.record(right)
    rec = a.record(right, replace="p001")  # the plate id in any case, as record reads it
    assert rec.n_outcomes == len(p1) and rec.plates == ("P001",)
    b.record(right)
    b.record(second)
    told = dict(a._con.execute("SELECT well, value FROM outcomes WHERE plate_id = 'P001'"))
    assert told == {w: float(v) for w, v in zip(p1.wells, _right(p1))}
    detail = [d for _, _, kind, d in a.events() if kind == "record"][-1]
    assert detail["file"] == "right.csv" and detail["replaces"]["plate"] == "P001"
    assert detail["replaces"]["recorded_from"][0].startswith("wrong.csv at ")
    assert detail["replaces"]["changed"] == {w: f"{1 - v:g} -> {v:g}" for w, v in zip(p1.wells, _right(p1))}
    assert _state(a) == _state(b)  # the state after the record (its snapshot), and the plate it proposes next
    for camp in (a, b):
        camp.close()
    # the log replayed from the start proposes every stored plate again (else ReplayMismatch) and ends alike
    with (
        Campaign.open(tmp_path / "a.campaign", use_snapshot=False) as again,
        Campaign.open(tmp_path / "b.campaign") as b,
    ):
        assert _state(again) == _state(b)


def test_a_replacement_is_refused_once_a_later_plate_was_proposed(tmp_path, capsys):
    camp = new_campaign(tmp_path / "c.campaign")
    plate = camp.next_plate(8)
    camp.record(write_results(tmp_path / "wrong.csv", plate, [0] * len(plate)))
    camp.next_plate(8)
    with pytest.raises(ReplaceRefused) as info:
        camp.record(write_results(tmp_path / "right.csv", plate, _right(plate)), replace="P001")
    text = str(info.value)
    assert "--replace P001: its results were recorded from wrong.csv at " in text
    assert "plate P002 was proposed by `next`" in text and "the algorithm chose that plate from those outcomes" in text
    assert "Nothing was changed" in text and "a new campaign on the same library" in text
    assert "FILE --replace P001 --restart`): the results are replaced and the algorithm starts again from every" in text
    assert "plates proposed and not yet recorded stay in the lab" in text
    assert dict(camp._con.execute("SELECT well, value FROM outcomes")) == {w: 0.0 for w in plate.wells}
    snapshot = camp._con.execute("SELECT COUNT(*) FROM snapshots WHERE name = 'latest'").fetchone()
    assert snapshot == (1,)  # rolled back with the rest
    with pytest.raises(ReplaceRefused, match="plate P002 has no results recorded, nothing to replace"):
        camp.record(tmp_path / "right.csv", replace="P002")
    camp.close()
    code = main(["campaign", "record", str(tmp_path / "c.campaign"), str(tmp_path / "right.csv"), "--replace", "P001"])
    assert code != 0 and "plate P002 was proposed by `next`" in capsys.readouterr().err


def test_record_replace_from_the_command_line_replaces_readouts_and_the_plate_s_z_prime(tmp_path, capsys):
    camp = percent_campaign(tmp_path / "c.campaign", PlateLayout.build("24"))
    plate = camp.next_plate(None, tmp_path / "P001.csv")
    camp.close()
    with open(plate.path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    rng = np.random.default_rng(0)

    def filled(name, compound):
        for r in rows:
            base = {"positive control": 100.0, "negative control": 0.0}.get(r["role"])
            r["outcome"] = f"{base + 2 * rng.normal():.2f}" if base is not None else compound
        with open(tmp_path / name, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
        return str(tmp_path / name)

    c = str(tmp_path / "c.campaign")
    assert main(["campaign", "record", c, filled("wrong.csv", "10")]) == 0
    assert main(["campaign", "record", c, filled("right.csv", "> 100"), "--replace", "P001"]) == 0
    assert "plate P001: its results recorded before are replaced by right.csv's" in capsys.readouterr().out
    with Campaign.open(c) as camp:
        assert set(dict(camp._con.execute("SELECT well, value FROM outcomes")).values()) == {1.0}
        assert {t for (t,) in camp._con.execute("SELECT typed FROM censored")} == {"> 100"}
        qc = camp._con.execute("SELECT r.file FROM plate_qc q JOIN records r USING (record_id)").fetchall()
        assert qc == [("right.csv",)]  # one Z' for the plate: the right file's
        raw = camp._con.execute("SELECT COUNT(*), COUNT(DISTINCT record_id) FROM readouts").fetchone()
        assert raw == (len(rows), 1)
        detail = [d for _, _, kind, d in camp.events() if kind == "record"][-1]
        assert set(detail["replaces"]["changed"]) >= set(plate.wells)
        assert detail["replaces"]["changed"][plate.wells[0]] == "10 -> > 100"


def test_a_stop_that_rested_on_the_wrong_file_is_undone(tmp_path):
    """KL-LUCB stops on a plate read from the wrong file (one compound all hits, the others none); the right file
    (hits and non-hits alike on every compound) does not stop it. The replacement carries on, as the right file would
    have, rather than keep the stop the wrong values gave."""
    camp = new_campaign(tmp_path / "c.campaign", "kl-lucb", {"epsilon": 0.1}, K=3, d=2)
    plate = camp.next_plate(90, force=True)
    camp.record(write_results(tmp_path / "wrong.csv", plate, [int(a == plate.arms[0]) for a in plate.arms]))
    assert camp.policy.done  # the run has finished, on the wrong values
    camp.record(write_results(tmp_path / "right.csv", plate, [k % 2 for k in range(len(plate))]), replace="P001")
    assert not camp.policy.done
    camp.close()
    with Campaign.open(tmp_path / "c.campaign") as again:
        assert not again.policy.done and len(again.next_plate(9, force=True).arms) == 9


def test_replace_with_restart_after_a_later_plate_restarts_the_algorithm_on_the_right_outcomes(tmp_path, capsys):
    """P002 was proposed from the wrong P001: ``--replace P001 --restart`` replaces P001's results, then restarts the
    algorithm on every outcome recorded, as ``restart`` would on a campaign holding the right ones (its twin: the
    same log, P001's outcomes set right in the file, then ``restart`` at the same log step, which seeds the restarted
    algorithm). P002 stays in the lab; the log keeps the replaced values; the replay from the start ends alike."""
    a, b = new_campaign(tmp_path / "a.campaign"), new_campaign(tmp_path / "b.campaign")
    for camp in (a, b):
        p1 = camp.next_plate(8)
        camp.record(write_results(tmp_path / "wrong.csv", p1, [1 - v for v in _right(p1)]))
        p2 = camp.next_plate(8)  # chosen from the wrong outcomes
    right = write_results(tmp_path / "right.csv", p1, _right(p1))
    a.record(right, replace="P001", restart=True)
    with store.transaction(b._con):  # the twin: the right outcomes in the file, one step, then restart
        b._con.executemany(
            "UPDATE outcomes SET value = ? WHERE plate_id = 'P001' AND well = ?",
            [(float(v), w) for w, v in zip(p1.wells, _right(p1))],
        )
        store.add_event(b._con, "note", {})
    b._policy = None
    restart_algorithm(b, "twin")
    kinds = [kind for _, _, kind, _ in a.events()]
    assert kinds[-3:] == ["plate", "record", "restart"]
    detail = [d for _, _, kind, d in a.events() if kind == "record"][-1]
    assert detail["replaces"]["old"] == {w: float(1 - v) for w, v in zip(p1.wells, _right(p1))}
    assert detail["replaces"]["changed"] == {w: f"{1 - v:g} -> {v:g}" for w, v in zip(p1.wells, _right(p1))}
    assert a.open_wells() == {"P002": len(p2)}  # still in the lab, recorded as usual
    assert encode_state(a.policy.state_dict()) == encode_state(b.policy.state_dict())
    assert _state(a) == _state(b)
    for camp in (a, b):
        camp.record(write_results(tmp_path / f"p2_{camp.path.stem}.csv", camp.plate("P002"), _right(p2)))
        camp.close()
    with (
        Campaign.open(tmp_path / "a.campaign", use_snapshot=False) as again,
        Campaign.open(tmp_path / "b.campaign") as b,
    ):
        assert encode_state(again.policy.state_dict()) == encode_state(b.policy.state_dict())
        assert _state(again) == _state(b)
    # from the command line, on a campaign with a plate proposed after the wrong one
    c = new_campaign(tmp_path / "c.campaign")
    plate = c.next_plate(8)
    c.record(write_results(tmp_path / "wrong3.csv", plate, [0] * len(plate)))
    c.next_plate(8)
    c.close()
    right3 = write_results(tmp_path / "right3.csv", plate, _right(plate))
    code = main(["campaign", "record", str(tmp_path / "c.campaign"), str(right3), "--replace", "P001", "--restart"])
    assert code == 0
    assert "the algorithm restarted on every outcome recorded" in capsys.readouterr().out


def test_replace_with_restart_is_refused_where_a_restart_is_not_valid_or_not_needed(tmp_path):
    gse = new_campaign(tmp_path / "g.campaign", "gse-log", {"budget": 96}, K=20, d=2, seed=1)
    plate = gse.next_plate(8)
    gse.record(write_results(tmp_path / "wrong.csv", plate, [0] * len(plate)))
    gse.next_plate(8)
    with pytest.raises(
        ReplaceRefused,
        match="gse-log is a fixed-budget algorithm: its stages are planned for the "
        "campaign it started, so it cannot restart mid-campaign; nothing was changed",
    ):
        gse.record(write_results(tmp_path / "right.csv", plate, _right(plate)), replace="P001", restart=True)
    assert dict(gse._con.execute("SELECT well, value FROM outcomes")) == {w: 0.0 for w in plate.wells}
    assert [kind for _, _, kind, _ in gse.events()][-1] == "plate"
    gse.close()
    camp = new_campaign(tmp_path / "c.campaign")
    plate = camp.next_plate(8)
    camp.record(write_results(tmp_path / "wrong.csv", plate, [0] * len(plate)))
    with pytest.raises(ReplaceRefused, match="no plate was proposed since .* Run the same command without --restart"):
        camp.record(write_results(tmp_path / "right.csv", plate, _right(plate)), replace="P001", restart=True)
    with pytest.raises(ValueError, match="--restart goes with --replace PLATE"):
        camp.record(tmp_path / "right.csv", restart=True)
    assert [kind for _, _, kind, _ in camp.events()][-1] == "record"
    camp.close()

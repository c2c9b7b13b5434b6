"""A plate's controls however its results arrive: a file that leaves a plate's control rows out used to record
its compound wells with "Z' = n/a (too few controls)", unchecked and with no decision asked of the lab, and status
then counted only the other plates ("controls: 2 plate(s) passed" of 3); controls recorded in a file of their own
were never checked against the plate's other controls (Z' of each file alone)."""

from __future__ import annotations

import csv

import pytest
from campaign_util import percent_campaign, synthetic_library

from screenbai.campaign import Campaign, PlateLayout
from screenbai.campaign.lab.assay import ControlsFailed, Readout


def _campaign(tmp_path):
    layout = PlateLayout.build("48", positive="A01,C04,F08", negative="B02,E05,F01")  # scattered controls
    return percent_campaign(tmp_path / "c.campaign", layout)


def _results(path, plate_file, keep, positive=(95.0, 93.0, 97.0), negative=(5.0, 7.0, 3.0)):
    """The plate file filled in (controls from ``positive`` / ``negative`` in turn, compounds 80 or 20), only the
    rows whose role ``keep`` accepts."""
    with open(plate_file, newline="") as fh:
        rows = list(csv.DictReader(fh))
    pos, neg = iter(positive), iter(negative)
    for k, r in enumerate(rows):
        role = r["role"]
        r["outcome"] = (
            next(pos)
            if role == "positive control"
            else next(neg)
            if role == "negative control"
            else (80.0 if k % 3 == 0 else 20.0)
        )
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(r for r in rows if keep(r["role"]))
    return path


def test_a_plate_without_its_negative_controls_waits_for_the_lab(tmp_path):
    camp = _campaign(tmp_path)
    plate = camp.next_plate(20, tmp_path / "P001.csv")
    no_neg = _results(tmp_path / "R.csv", plate.path, lambda role: role != "negative control")
    with pytest.raises(
        ControlsFailed,
        match=r"(?s)plate P001: no Z': 0 negative control values of its 3 wells "
        r"\(B02, E05, F01\).*--accept.*--discard-plate",
    ):
        camp.record(no_neg)
    assert camp.open_wells() == {"P001": len(plate)}  # nothing recorded
    rec = camp.record(no_neg, accept=True)
    assert rec.qc == {"P001": (None, "accepted")} and rec.n_outcomes == len(plate)
    text = camp.status().text()
    assert "plate P001: controls FAILED (no Z': too few control values recorded), accepted by the lab" in text
    camp.close()


def test_controls_failed_in_the_wells_count_as_missing(tmp_path):
    camp = _campaign(tmp_path)
    plate = camp.next_plate(20, tmp_path / "P001.csv")
    failed = _results(tmp_path / "R.csv", plate.path, lambda role: True, positive=(95.0, "failed", ""))
    with pytest.raises(ControlsFailed, match=r"1 positive control value of its 3 wells \(A01, C04, F08\)"):
        camp.record(failed)
    assert camp.record(failed, discard=True).n_failed == len(plate)  # the lab's other way: tested again
    camp.close()


def test_controls_in_a_file_of_their_own_check_the_plate_once_its_compounds_come(tmp_path):
    """The controls recorded first (a file of their own) and the compounds after: the compounds' file is checked
    against the controls recorded before, and status counts the plate once."""
    camp = _campaign(tmp_path)
    plate = camp.next_plate(20, tmp_path / "P001.csv")
    controls = _results(tmp_path / "C.csv", plate.path, lambda role: role != "compound")
    assert camp.record(controls).qc["P001"][1] == "pass"
    compounds = _results(tmp_path / "W.csv", plate.path, lambda role: role == "compound")
    z, decision = camp.record(compounds).qc["P001"]
    assert decision == "pass" and z == pytest.approx(1 - 3 * (2 + 2) / 90)  # sd 2 of each kind, means 95 and 5
    assert camp.status().plate_qc == [("P001", z, "pass")]
    # a plate whose recorded controls failed: its compounds' file fails with them
    plate2 = camp.next_plate(20, tmp_path / "P002.csv")
    bad = _results(tmp_path / "C2.csv", plate2.path, lambda role: role != "compound", negative=(5.0, 90.0, 50.0))
    assert camp.record(bad, accept=True).qc["P002"][1] == "accepted"
    with pytest.raises(ControlsFailed, match=r"plate P002: Z' = -\d"):
        camp.record(_results(tmp_path / "W2.csv", plate2.path, lambda role: role == "compound"))
    camp.close()


def test_controls_reading_alike_are_accepted_and_status_says_why_there_is_no_z(tmp_path):
    """Controls that all read alike (a saturated reader: every control 100 %) give no Z' (-inf: no gap between the
    kinds), stored as none; once the lab accepted such a plate, status, report and export failed with "TypeError:
    unsupported format string passed to NoneType.__format__"."""
    camp = _campaign(tmp_path)
    plate = camp.next_plate(20, tmp_path / "P001.csv")
    alike = _results(tmp_path / "R.csv", plate.path, lambda role: True, positive=(100.0,) * 3, negative=(100.0,) * 3)
    with pytest.raises(ControlsFailed, match=r"Z' = -inf < 0.5 \(positive controls 100 \+- 0 %, negative 100"):
        camp.record(alike)
    assert camp.record(alike, accept=True).qc["P001"] == (-float("inf"), "accepted")
    status = camp.status()
    assert "plate P001: controls FAILED (no Z': its positive and negative controls read alike), accepted" in (
        status.text()
    )
    assert [list(q) for q in status.to_dict()["plate_qc"]] == [["P001", None, "accepted"]]
    camp.close()


def test_a_plate_without_control_wells_gets_no_control_check(tmp_path):
    """Plates of a layout without controls (``--controls none``) record no Z' row: status lists no plate's
    controls."""
    readout = Readout.build("percent inhibition", unit="%", hit_above=50.0)
    camp = Campaign.create(
        tmp_path / "n.campaign",
        synthetic_library(K=30, d=3),
        "glgape",
        {"epsilon": 0.1},
        seed=2,
        layout=PlateLayout.build("24", controls="none"),
        readout=readout,
    )
    plate = camp.next_plate(20, tmp_path / "P001.csv")
    assert camp.record(_results(tmp_path / "R.csv", plate.path, lambda role: True)).qc == {}
    assert camp.status().plate_qc == []
    camp.close()


def test_a_percent_thousands_out_is_refused_naming_the_line(tmp_path):
    """1e6 % inhibition (a raw signal pasted in place of the percent) counted as a hit; a percent of the controls'
    window beyond +-1000 % is refused, the file whole, naming the line and the value; 150 % and -40 % are kept."""
    from screenbai.campaign import ResultsError

    camp = _campaign(tmp_path)
    plate = camp.next_plate(20, tmp_path / "P001.csv")
    good = _results(tmp_path / "R.csv", plate.path, lambda role: True)
    rows = list(csv.DictReader(open(good, newline="")))
    first = next(k for k, r in enumerate(rows) if r["role"] not in ("positive control", "negative control"))
    for value, refused in (("1e6", True), ("-2500", True), ("150", False)):
        rows[first]["outcome"] = value
        path = tmp_path / f"R_{value}.csv"
        with open(path, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
        if refused:
            with pytest.raises(ResultsError) as info:
                camp.record(path)
            assert f"line {first + 2}" in str(info.value) and "beyond +-1000 %" in str(info.value)
            assert camp.open_wells() == {"P001": len(plate)}
        else:
            assert camp.record(path).n_outcomes == len(plate)
    camp.close()

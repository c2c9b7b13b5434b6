"""The hand-over files (`screenbai campaign export`): every well listed; the same campaign exports the same bytes."""

from __future__ import annotations

import pytest
from test_campaign_controls import _campaign, _results


def test_the_same_campaign_exports_the_same_files(tmp_path, monkeypatch):
    """Two exports of one campaign gave byte-different workbooks (zip stamps each part with the time it is
    written), so a lab's checksum of its hand-over never matched a second export."""
    import time

    from screenbai.campaign.views.export import export

    camp = _campaign(tmp_path)
    plate = camp.next_plate(20, tmp_path / "P001.csv")
    camp.record(_results(tmp_path / "R.csv", plate.path, lambda role: True))
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    export(camp, first)
    later = time.time() + 3600  # an hour later
    monkeypatch.setattr(time, "time", lambda: later)
    monkeypatch.setattr(time, "localtime", lambda secs=None: time.gmtime(later if secs is None else secs))
    export(camp, second)
    for name in ("c.csv", "c.xlsx", "c_report.html"):
        assert (first / name).read_bytes() == (second / name).read_bytes(), name
    camp.close()


def test_the_export_lists_every_well_with_its_readout_state_and_file(tmp_path):
    """The export was per compound only: which wells a compound was in, their raw readouts, the failed and open
    wells, the control wells and the file each came from were in the campaign file alone. ``<stem>_wells.csv`` and
    the workbook's "wells" sheet list every well of every plate."""
    import csv
    import zipfile

    from screenbai.campaign.views.export import export

    camp = _campaign(tmp_path)
    plate = camp.next_plate(20, tmp_path / "P001.csv")
    filled = _results(tmp_path / "R.csv", plate.path, lambda role: True)
    rows = list(csv.DictReader(open(filled, newline="")))
    failed_well = next(r["well"] for r in rows if r["role"] == "compound")
    for r in rows:
        if r["well"] == failed_well:
            r["outcome"] = "failed"
    with open(filled, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    camp.record(filled)
    second = camp.next_plate(20, tmp_path / "P002.csv")
    out = tmp_path / "out"
    out.mkdir()
    files = export(camp, out)
    assert out / "c_wells.csv" in files
    with open(out / "c_wells.csv", newline="") as fh:
        wells = list(csv.DictReader(fh))
    assert list(wells[0]) == [
        "plate_id",
        "well",
        "role",
        "compound_id",
        "readout (percent inhibition in %)",
        "outcome",
        "state",
        "file",
        "recorded_at",
        "plate_z_prime",
    ]
    assert [(w["plate_id"], w["well"]) for w in wells] == [("P001", r["well"]) for r in rows] + [
        ("P002", w)
        for w in sorted({*second.wells, "A01", "C04", "F08", "B02", "E05", "F01"}, key=lambda w: (w[0], int(w[1:])))
    ]
    typed = {r["well"]: r for r in rows}
    z = camp.status().plate_qc[0][1]
    for w in wells[: len(rows)]:
        r = typed[w["well"]]
        assert w["role"] == r["role"] and w["file"] == "R.csv"
        assert float(w["plate_z_prime"]) == pytest.approx(z)
        if w["well"] == failed_well:
            assert (w["state"], w["readout (percent inhibition in %)"], w["outcome"]) == ("failed", "", "")
            continue
        assert w["state"] == "recorded" and float(w["readout (percent inhibition in %)"]) == float(r["outcome"])
        if r["role"] == "compound":
            assert w["compound_id"] == r["compound_id"]
            assert w["outcome"] == ("1" if float(r["outcome"]) >= 50 else "0")  # the hit the algorithm was told
        else:
            assert w["compound_id"] == "" and w["outcome"] == ""
    assert {w["state"] for w in wells[len(rows) :]} == {"open"} and not any(w["file"] for w in wells[len(rows) :])
    with zipfile.ZipFile(out / "c.xlsx") as book:
        assert book.read("xl/workbook.xml").decode().count("<sheet ") == 3
        assert book.read("xl/worksheets/sheet2.xml").decode().count("<row ") == len(wells) + 1
    camp.close()

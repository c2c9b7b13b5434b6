"""The hand-over files depend on the campaign alone: the same campaign exports the same bytes."""

from __future__ import annotations

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

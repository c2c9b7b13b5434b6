"""The progress plot of the campaign report: compounds in contention and the certified epsilon kept
per results file in the history (live, after a repair, in a file made before they were kept)."""

from __future__ import annotations

import math
import sqlite3
import tempfile
from pathlib import Path

from campaign_util import Assay, new_campaign, write_results

from screenbai.bandits.certainty.certificate import certifies
from screenbai.campaign import Campaign
from screenbai.campaign.state import store
from screenbai.campaign.views.page import write_report
from screenbai.campaign.views.status import progress_point


def _run(camp: Campaign, tmp_path, plates: int, size: int = 8) -> None:
    assay = Assay(camp.features)
    for k in range(plates):
        plate = camp.next_plate(size)
        camp.record(write_results(tmp_path / f"r{k}.csv", plate, assay(plate.arms)))


def test_each_results_file_keeps_its_progress_point_and_repair_rebuilds_it(tmp_path):
    path = tmp_path / "c.campaign"
    with new_campaign(path) as camp:
        _run(camp, tmp_path, 6)
        live = camp.progress_history()
        # the last point is what status says now
        st = camp.status()
        assert (live[-1]["in_contention"], live[-1]["certified_epsilon"]) == (st.in_contention, st.certified_epsilon)
        assert [p["tests"] for p in live] == [n for _, n, _, _ in camp.history()]
    assert len(live) == 6 and all(p["in_contention"] is not None for p in live)
    assert live[-1]["in_contention"] < live[0]["in_contention"]  # the screen learns
    Campaign.repair(path)  # replays the log: every point from the outcomes recorded up to its file
    with Campaign.open(path) as camp:
        assert camp.progress_history() == live


def test_repair_keeps_the_points_before_a_restart(tmp_path):
    """The replay of repair starts at the latest restart (what came before may be another version's proposals), so
    the points before it are not rebuilt: repair kept only the later ones and lost the rest of the progress plot."""
    from screenbai.campaign.state.changes import restart_algorithm

    path = tmp_path / "c.campaign"
    with new_campaign(path) as camp:
        _run(camp, tmp_path, 2)
        restart_algorithm(camp, reason="test")
        assay = Assay(camp.features)
        plate = camp.next_plate(8)
        camp.record(write_results(tmp_path / "r9.csv", plate, assay(plate.arms)))
        live = camp.progress_history()
    assert len(live) == 3
    Campaign.repair(path)
    with Campaign.open(path) as camp:
        assert camp.progress_history() == live


def test_a_point_counts_only_the_outcomes_recorded_up_to_its_file(tmp_path):
    with new_campaign(tmp_path / "c.campaign") as camp:
        _run(camp, tmp_path, 3)
        first = camp.progress_history()[0]
        n_first = camp.observations(upto=first["step"])[0]
        assert n_first.sum() == first["tests"] < camp.observations()[0].sum()
        now = progress_point(camp, camp.policy, camp.policy.result())
        assert now[0] == camp.progress_history()[-1]["in_contention"]


def _drop_progress_columns(path) -> None:
    """The campaign file as screenbai made it before the history kept the progress columns."""
    con = sqlite3.connect(path)
    for column in ("in_contention", "certified_epsilon"):
        con.execute(f"ALTER TABLE history DROP COLUMN {column}")
    con.commit()
    con.close()


def test_a_file_made_before_the_progress_columns_is_migrated_and_repair_fills_it(tmp_path, monkeypatch):
    path = tmp_path / "old.campaign"
    with new_campaign(path) as camp:
        _run(camp, tmp_path, 2)
        before = camp.progress_history()
    _drop_progress_columns(path)
    # a reader that cannot change the file (read-only): the points are None, nothing fails
    monkeypatch.setattr(store, "ensure_progress_columns", lambda con, readonly=False: False)
    with Campaign.open(path) as camp:
        assert "in_contention" not in store.progress_columns(camp._con)
        assert [(p["in_contention"], p["certified_epsilon"]) for p in camp.progress_history()] == [(None, None)] * 2
    monkeypatch.undo()
    with Campaign.open(path) as camp:  # migrated on open: the columns are added, the old rows NULL
        assert {"in_contention", "certified_epsilon"} <= store.progress_columns(camp._con)
        assert all(p["in_contention"] is None for p in camp.progress_history())
        assay = Assay(camp.features)
        assay.count[:] = camp.observations()[0]  # the assay goes on where it was
        plate = camp.next_plate(8)
        camp.record(write_results(tmp_path / "r_new.csv", plate, assay(plate.arms)))
        points = camp.progress_history()
        assert [p["in_contention"] is None for p in points] == [True, True, False]
        svg = write_report(camp, tmp_path / "report").parent / "progress.svg"
        eps = points[-1]["certified_epsilon"]
        drawn = int(eps is not None and certifies(eps, camp.binary))  # a cure rate's bound near 1 is not drawn
        assert svg.read_text().count("<circle") == 3 + 1 + drawn  # tests: every file; the rest: the new one
    Campaign.repair(path)
    with Campaign.open(path) as camp:
        assert camp.progress_history()[:2] == before


def test_the_report_draws_one_point_per_results_file_and_the_forecast(tmp_path):
    with new_campaign(tmp_path / "c.campaign") as camp:
        _run(camp, tmp_path, 4)
        page = write_report(camp, tmp_path / "report")
        st = camp.status()
    svg = (page.parent / "progress.svg").read_text()
    assert '<img src="progress.svg"' in page.read_text()
    assert svg.count('r="2.5"') >= 4 + 4  # tests and contention: a point per results file
    if st.forecast_plates is not None:
        assert f"about {st.forecast_plates:.0f} more plate(s)" in svg


def test_the_progress_axis_counts_whole_files_and_leaves_room_after_the_last():
    """One results file and no forecast: the x axis had ticks 0, 0.2, ..., 1 and the point on the frame."""
    import re

    from screenbai.campaign.views.page import progress_figure

    point = {"tests": 352, "in_contention": 40, "certified_epsilon": 0.5}
    with tempfile.TemporaryDirectory() as tmp:
        svg = progress_figure([point], Path(tmp) / "p.svg").read_text()
    labels = re.findall(r'text-anchor="middle"[^>]*>([^<]+)</text>', svg)
    assert "0.2" not in labels and "1" in labels
    xs = [float(v) for v in re.findall(r'<circle cx="([\d.]+)"', svg)]
    assert max(xs) < 760 - 20 - 50  # clear of the frame's right edge


def test_a_simulation_can_skip_the_points_and_repair_fills_them(tmp_path):
    path = tmp_path / "sim.campaign"
    with new_campaign(path) as camp:
        camp.keep_progress = False  # as backtest does
        _run(camp, tmp_path, 3)
        assert [p["in_contention"] for p in camp.progress_history()] == [None] * 3
    Campaign.repair(path)
    with Campaign.open(path) as camp:
        assert all(p["in_contention"] is not None for p in camp.progress_history())


def test_points_not_kept_do_not_read_as_nothing_certified():
    """A backtest's --campaign-out keeps no progress points (None): the plot said "no point: nothing
    certified yet" of a run certified at 0.085; it says they were not kept and how to fill them in. An
    uncertified point (inf) still reads as nothing certified."""
    from screenbai.campaign.views.page import progress_figure

    unkept = [{"tests": 96 * k, "in_contention": None, "certified_epsilon": None} for k in (1, 2)]
    kept = [{"tests": 96, "in_contention": 40, "certified_epsilon": math.inf},
            {"tests": 192, "in_contention": 3, "certified_epsilon": 0.08}]
    with tempfile.TemporaryDirectory() as tmp:
        a = progress_figure(unkept, Path(tmp) / "a.svg").read_text()
        b = progress_figure(kept, Path(tmp) / "b.svg").read_text()
    assert "nothing certified yet" not in a and "campaign repair" in a
    assert "no point kept (2 file(s)" in a and "not kept (2 file(s))" in a
    assert "nothing certified yet (1 file(s))" in b and "kept" not in b
    # a panel with no point has no scale (its axis read 0 to 1e-12), a note instead
    assert "1e-12" not in a and a.count("no point to draw") == 2 and "no point to draw" not in b


def _certified_panel(svg: str) -> tuple[str, int]:
    """The certified-epsilon panel of a progress SVG: its title and the points drawn in it (the third band)."""
    import re

    title = re.findall(r">(certified epsilon[^<]*)</text>", svg)[0]
    band = svg.split(title)[1]
    return title, band.count("<circle")


def test_the_certified_panel_and_the_sentences_agree_on_what_is_certified(tmp_path):
    """LinGapE on 0/1 outcomes (a linear model of hits, which does not know they are 0/1) bounds the gap in hit
    rate by more than 1 after a few plates: status said "none yet", the plot drew no point and counted the files
    as nothing certified, while the sentence beside them on the same page read "within 1.7 of the best hit rate".
    And an algorithm that gives no certificate (GSE-Log) had its points called "not kept"."""
    with new_campaign(tmp_path / "lin.campaign", "lingape", {"epsilon": 0.1}) as camp:
        _run(camp, tmp_path, 3, size=24)
        points = camp.progress_history()
        st = camp.status()
        page = write_report(camp, tmp_path / "lin")
    vacuous = [p for p in points if not certifies(p["certified_epsilon"], True)]
    assert len(vacuous) == 3 and all(1 < p["certified_epsilon"] < math.inf for p in vacuous)  # e.g. 1.99
    assert st.certified_epsilon is None and "a gap in hit rate: none yet" in st.text()
    (sentence,) = st.certificate["sentences"]
    assert "not certified yet" in sentence and "within" not in sentence
    assert "within" not in page.read_text().split("What the outcomes certify")[1].split("<h2>")[0].split(
        "certificate without a model")[0]
    title, drawn = _certified_panel((page.parent / "progress.svg").read_text())
    assert drawn == 0 and "nothing certified yet (3 file(s))" in title
    with new_campaign(tmp_path / "gse.campaign", "gse-log", {"budget": 96}) as camp:
        _run(camp, tmp_path, 3, size=16)
        assert [p["certified_epsilon"] for p in camp.progress_history()] == [None] * 3
        svg = (write_report(camp, tmp_path / "gse").parent / "progress.svg").read_text()
    title, drawn = _certified_panel(svg)
    assert drawn == 0 and "kept" not in title and "the algorithm gives no certificate (3 file(s))" in title


def test_the_stopping_rules_epsilon_is_drawn_inside_the_certified_panel():
    """The README's recipe (epsilon 0.1, certified 0.085 after plate 2): the scale ended at 0.1, so the red dashed
    line of the stopping rule's epsilon lay on the panel's top frame and could not be seen."""
    import re

    from screenbai.campaign.views.page import progress_figure

    points = [
        {"tests": 352, "in_contention": 447, "certified_epsilon": math.inf},
        {"tests": 704, "in_contention": 84, "certified_epsilon": 0.085},
    ]
    with tempfile.TemporaryDirectory() as tmp:
        svg = progress_figure(points, Path(tmp) / "p.svg", epsilon=0.1).read_text()
    frame_tops = [float(v) for v in re.findall(r'<rect x="[\d.]+" y="([\d.]+)"[^>]*stroke="#444"', svg)]
    target = re.findall(r'<line [^>]*y1="([\d.]+)" y2="[\d.]+" stroke="#d62728"', svg)
    assert len(frame_tops) == 3 and len(target) == 1
    assert float(target[0]) > frame_tops[2] + 5  # below the frame's top edge, inside the panel


def test_the_epsilon_label_stays_clear_of_the_certified_epsilon_curve(tmp_path):
    """The finished CDK2 campaign's plot: certified epsilon about 0.8-0.95 for four plates, then 0.025 under the
    stopping rule's 0.1; the label "the stopping rule's epsilon = 0.1" sat at the right end above the dashed line,
    and the last segment, falling below it, ran through the text. The label now goes where no point or segment
    falls."""
    import re

    from screenbai.campaign.views.page import _CHAR, progress_figure

    eps = [0.81, 0.95, 0.94, 0.93, 0.025]
    points = [{"step": k, "tests": 352 * (k + 1), "in_contention": 100, "certified_epsilon": e}
              for k, e in enumerate(eps)]
    svg = progress_figure(points, tmp_path / "p.svg", epsilon=0.1).read_text()
    label = re.search(r'<text x="([\d.]+)" y="([\d.]+)" font-size="10" text-anchor="(\w+)"[^>]*>the stopping rule',
                      svg)
    assert label is not None
    at, base, anchor = float(label.group(1)), float(label.group(2)), label.group(3)
    wide = _CHAR * 10 * len("the stopping rule's epsilon = 0.1")
    x0 = at - wide if anchor == "end" else at
    # the certified epsilon's curve: the last polyline (the panels in order)
    curve = [tuple(map(float, p.split(","))) for p in re.findall(r'<polyline[^>]*points="([^"]+)"', svg)[-1].split()]
    assert len(curve) == len(eps)
    for (xa, ya), (xb, yb) in zip(curve, curve[1:]):
        for t in range(101):
            px, py = xa + (xb - xa) * t / 100, ya + (yb - ya) * t / 100
            assert not (x0 <= px <= x0 + wide and base - 10 <= py <= base), (px, py, x0, base)

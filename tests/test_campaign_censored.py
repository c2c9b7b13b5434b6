"""Censored readouts (censC): "> 10000" (inactive up to the top dose) and "< 1" (more potent than the lowest) as
dose-response files write them.

Before: each such cell was refused ("not a number (a value beyond the assay's range? write the limit ...)"), so the
lab edited every cell by hand.  In a binary campaign a bound that settles hit or not is recorded as that outcome, the
text kept for the log and the export; one that does not settle it, or a control well's, is refused."""

from __future__ import annotations

import csv
import json

import pytest
from campaign_util import synthetic_library

from screenbai.campaign import Campaign, PlateLayout, ResultsError
from screenbai.campaign.lab.assay import Readout
from screenbai.campaign.lab.censored import settles
from screenbai.campaign.views.export import compound_table, well_table


def _campaign(tmp_path, readout: Readout, outcome="binary"):
    layout = PlateLayout.build("24")  # 4 + 4 controls, 16 compound wells
    algorithm = "glgape" if outcome == "binary" else "m-lingape"
    return Campaign.create(
        tmp_path / "c.campaign",
        synthetic_library(K=30, d=3),
        algorithm,
        {"epsilon": 0.1},
        seed=2,
        layout=layout,
        readout=readout,
        outcome=outcome,
    )


def _filled(plate_file, out, positive, negative, compound: dict[int, str], default: str):
    """The plate file with its controls at ``positive`` / ``negative`` (in turn) and the k-th compound well at
    ``compound[k]`` (else ``default``); returns (path, compound wells in order)."""
    with open(plate_file, newline="") as fh:
        rows = list(csv.DictReader(fh))
    k, n = 0, {"positive control": 0, "negative control": 0}
    wells = []
    for r in rows:
        if r["role"] in n:
            values = positive if r["role"] == "positive control" else negative
            r["outcome"] = values[n[r["role"]] % len(values)]
            n[r["role"]] += 1
        else:
            r["outcome"] = compound.get(k, default)
            wells.append(r["well"])
            k += 1
    with open(out, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return out, wells


IC50 = dict(positive=["10", "12", "9", "11"], negative=["50000", "60000", "55000", "52000"])


def test_settled_bounds_are_recorded_as_hits_and_non_hits_with_their_text(tmp_path):
    camp = _campaign(tmp_path, Readout.build("IC50", unit="nM", hit_below=1000.0))
    plate = camp.next_plate(None, tmp_path / "P001.csv")
    cells = {0: "> 10000", 1: "<1", 2: ">10 uM", 3: "<= 1000", 4: "\u2265 1000.5", 5: "2000", 6: "20"}
    path, wells = _filled(plate.path, tmp_path / "R.csv", **IC50, compound=cells, default="3000")
    rec = camp.record(path)
    assert rec.n_outcomes == len(plate) and rec.n_failed == 0
    told = dict(camp._con.execute("SELECT well, value FROM outcomes"))
    assert [told[wells[k]] for k in range(7)] == [0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 1.0]
    raw = dict(camp._con.execute("SELECT well, raw FROM readouts WHERE kind = 'compound'"))
    assert raw[wells[0]] == 10000.0 and raw[wells[2]] == 10000.0  # the limit, in the declared unit (10 uM)
    # the log names each one as typed, with the outcome it settled
    detail = [d for _, _, kind, d in camp.events() if kind == "record"][-1]
    assert len(detail["censored"]) == 5
    with open(path, newline="") as fh:
        line = {r["well"]: n for n, r in enumerate(csv.DictReader(fh), start=2)}
    assert f"R.csv: line {line[wells[0]]}: well P001/{wells[0]}: '> 10000': a non-hit (IC50 > 10000 nM;" in "\n".join(
        detail["censored"]
    )
    assert any(f"well P001/{wells[1]}: '<1': a hit (IC50 < 1 nM;" in line for line in detail["censored"])
    # the export shows the text, never the limit alone; the mean readout leaves the bounds out, the hits count them
    rows = {r["well"]: r for r in well_table(camp)}
    assert rows[wells[0]]["readout"] == "> 10000" and rows[wells[1]]["readout"] == "<1"
    assert rows[wells[2]]["readout"] == ">10 uM" and rows[wells[5]]["readout"] == 2000.0
    by_id = {r["compound_id"]: r for r in compound_table(camp)}
    first = by_id[plate.compound_ids[plate.wells.index(wells[0])]]
    assert first["hits"] == 0 and first["tests"] == 1 and first["mean_readout"] is None
    hit = by_id[plate.compound_ids[plate.wells.index(wells[3])]]  # '<= 1000' at the cutoff: a hit
    assert hit["hits"] == 1 and hit["mean_readout"] is None
    camp.close()


def test_a_bound_that_does_not_settle_the_outcome_is_refused_naming_line_well_value_cutoff(tmp_path):
    camp = _campaign(tmp_path, Readout.build("IC50", unit="nM", hit_below=1000.0))
    plate = camp.next_plate(None, tmp_path / "P001.csv")
    path, wells = _filled(
        plate.path, tmp_path / "R.csv", **IC50, compound={0: "> 100", 1: "<5000", 2: ">= 1000"}, default="3000"
    )
    with pytest.raises(ResultsError) as info:
        camp.record(path)
    text = str(info.value)
    with open(path, newline="") as fh:
        lines = {r["well"]: n for n, r in enumerate(csv.DictReader(fh), start=2)}
    assert len(info.value.errors) == 3
    assert (
        f"R.csv: line {lines[wells[0]]}: outcome '> 100' for well P001/{wells[0]}: a censored value ('> 100', "
        "IC50 > 100 nM) does not settle hit or not: the hit cutoff is 1000 nM"
    ) in text
    assert "write the value measured, or 'failed'" in text
    assert f"well P001/{wells[2]}" in text  # >= 1000 may be 1000 itself, a hit
    assert camp.open_wells() == {"P001": len(plate)}  # nothing recorded
    camp.close()


def test_a_censored_control_is_refused(tmp_path):
    camp = _campaign(tmp_path, Readout.build("IC50", unit="nM", hit_below=1000.0))
    plate = camp.next_plate(None, tmp_path / "P001.csv")
    path, _ = _filled(
        plate.path,
        tmp_path / "R.csv",
        positive=IC50["positive"],
        negative=["> 50000", "60000", "55000", "52000"],
        compound={},
        default="3000",
    )
    with pytest.raises(
        ResultsError,
        match=r"line \d+: outcome '> 50000' for well P001/\w+: a censored value "
        r"\('> 50000'\) in a control well: a control's reading must be a value",
    ):
        camp.record(path)
    camp.close()


def test_a_percent_campaign_takes_above_100_as_a_hit_where_the_cutoff_is_below_100(tmp_path):
    camp = _campaign(tmp_path, Readout.build("percent inhibition", unit="%", hit_above=50.0))
    plate = camp.next_plate(None, tmp_path / "P001.csv")
    path, wells = _filled(
        plate.path,
        tmp_path / "R.csv",
        positive=["100", "98", "101", "99"],
        negative=["0", "2", "-1", "1"],
        compound={0: "> 100", 1: "<0", 2: ">100 %"},
        default="10",
    )
    camp.record(path)
    told = dict(camp._con.execute("SELECT well, value FROM outcomes"))
    assert [told[w] for w in wells[:4]] == [1.0, 0.0, 1.0, 0.0]
    assert {r["well"]: r["readout"] for r in well_table(camp)}[wells[0]] == "> 100"
    camp.close()
    # a bound on the other side of the cutoff settles nothing: "> 40" with a hit at 50 % or more
    camp = Campaign.create(
        tmp_path / "d.campaign",
        synthetic_library(K=30, d=3),
        "glgape",
        {"epsilon": 0.1},
        seed=2,
        layout=PlateLayout.build("24"),
        readout=Readout.build("percent inhibition", unit="%", hit_above=50.0),
    )
    plate = camp.next_plate(None, tmp_path / "Q001.csv")
    path, _ = _filled(
        plate.path,
        tmp_path / "S.csv",
        positive=["100", "98", "101", "99"],
        negative=["0", "2", "-1", "1"],
        compound={0: "> 40"},
        default="10",
    )
    with pytest.raises(ResultsError, match=r"'> 40'.*does not settle hit or not: the hit cutoff is 50 %"):
        camp.record(path)
    camp.close()


def test_a_continuous_campaign_still_refuses_a_bound(tmp_path):
    camp = _campaign(tmp_path, Readout.build("IC50", unit="nM", hit_below=1000.0), outcome="continuous")
    plate = camp.next_plate(None, tmp_path / "P001.csv")
    path, _ = _filled(plate.path, tmp_path / "R.csv", **IC50, compound={0: "> 10000"}, default="3000")
    with pytest.raises(ResultsError) as info:
        camp.record(path)
    assert (
        "'> 10000': a censored value cannot be recorded in a continuous campaign: its algorithm is told the value "
        "itself, and a bound is none; write the value measured nM, or 'failed'" in str(info.value)
    )  # it said "(the limit, 10000, if the lab takes it as the reading)": a bound is no value measured
    camp.close()


@pytest.mark.parametrize(
    "direction, relation, limit, settled",
    [
        ("below", ">", 1000, False),
        ("below", ">=", 1000, None),
        ("below", ">", 999, None),
        ("below", "<", 1000, True),
        ("below", "<=", 1000, True),
        ("below", "<", 1001, None),
        ("above", ">", 50, True),
        ("above", ">=", 50, True),
        ("above", ">", 49, None),
        ("above", "<", 50, False),
        ("above", "<=", 50, None),
        ("above", "<", 51, None),
    ],
)
def test_settles_at_the_cutoff(direction, relation, limit, settled):
    """At the cutoff itself: a hit is at or past it (IC50 <= 1000 nM, % >= 50), so '>= 1000' and '<= 50' may be it."""
    cutoff = 1000.0 if direction == "below" else 50.0
    readout = Readout.build("x", **{f"hit_{direction}": cutoff})
    assert settles(readout, relation, float(limit)) is settled


def test_an_old_file_without_the_censored_table_is_read(tmp_path, monkeypatch):
    """A campaign file made before censored values: read-only, an empty temporary table; writable, it is added."""
    import sqlite3

    camp = _campaign(tmp_path, Readout.build("IC50", unit="nM", hit_below=1000.0))
    plate = camp.next_plate(None, tmp_path / "P001.csv")
    camp.record(_filled(plate.path, tmp_path / "R.csv", **IC50, compound={}, default="3000")[0])
    camp.close()
    con = sqlite3.connect(tmp_path / "c.campaign")
    con.execute("DROP TABLE censored")
    con.commit()
    con.close()
    from screenbai.campaign.state import store

    with monkeypatch.context() as m:  # a file this user cannot change (chmod does not stop root): a temporary table
        m.setattr(store, "writable", lambda path: False)
        with Campaign.open(tmp_path / "c.campaign") as c:
            assert c.readonly and len(well_table(c)) > len(plate) and json.dumps(compound_table(c)[0], default=str)
    con = sqlite3.connect(tmp_path / "c.campaign")
    assert con.execute("SELECT COUNT(*) FROM sqlite_master WHERE name = 'censored'").fetchone() == (0,)
    con.close()
    with Campaign.open(tmp_path / "c.campaign") as c:
        assert {r["well"]: r["readout"] for r in well_table(c)}[plate.wells[0]] == 3000.0


def test_the_replicate_spread_leaves_a_censored_value_out(tmp_path):
    """status's replicate spread is of readings: "> 10000" beside 3000 on one compound's two wells read as a factor
    3.3 between replicates when its limit was taken for a value."""
    from screenbai.campaign.views.controls import spreads

    readout = Readout.build("IC50", unit="nM", hit_below=1000.0)
    camp = Campaign.create(
        tmp_path / "c.campaign",
        synthetic_library(K=30, d=3),
        "glgape",
        {"epsilon": 0.1},
        seed=2,
        layout=PlateLayout.build("24", replicates=2),
        readout=readout,
    )
    plate = camp.next_plate(None, tmp_path / "P001.csv")
    first = plate.compound_ids[0]
    with open(plate.path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    seen = set()
    for r in rows:
        role = r["role"]
        if role != "compound":
            r["outcome"] = {"positive control": "10", "negative control": "50000"}[role]
        else:
            r["outcome"] = "> 10000" if r["compound_id"] == first and first not in seen else "3000"
            seen.add(r["compound_id"])
    rows[0]["outcome"] = "11"  # the controls' spread is not 0
    with open(tmp_path / "R.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    camp.record(tmp_path / "R.csv")
    assert spreads(camp, readout)["replicate_sd"] == 0.0  # every other compound's two wells read 3000 alike
    camp.close()


def test_record_says_how_many_censored_values_it_took_and_as_what(tmp_path, capsys):
    """`campaign record` said nothing of the censored cells it recorded (only the log listed them): a lab could not
    tell from the output that '> 10000' was taken as a non-hit. It now says how many, as what, and which, as typed;
    a file without any says nothing of them."""
    from screenbai.cli import main

    camp = _campaign(tmp_path, Readout.build("IC50", unit="nM", hit_below=1000.0))
    plate = camp.next_plate(None, tmp_path / "P001.csv")
    cells = {0: "> 10000", 1: "<1", 2: ">10 uM", 3: "<= 1000", 4: "\u2265 1000.5", 5: "> 10000", 6: "20"}
    path, _ = _filled(plate.path, tmp_path / "R.csv", **IC50, compound=cells, default="3000")
    camp.close()
    assert main(["campaign", "record", str(tmp_path / "c.campaign"), str(path)]) == 0
    out = capsys.readouterr().out
    assert (
        "6 censored readouts recorded as the outcome they settle: 4 non-hits ('> 10000', '>10 uM', "
        "'\u2265 1000.5'), 2 hits ('<1', '<= 1000'); each is listed, as typed, in the campaign's log"
    ) in out
    with Campaign.open(tmp_path / "c.campaign") as again:
        plate = again.next_plate(None, tmp_path / "P002.csv")
    path, _ = _filled(plate.path, tmp_path / "S.csv", **IC50, compound={0: "<1"}, default="3000")
    assert main(["campaign", "record", str(tmp_path / "c.campaign"), str(path)]) == 0
    out = capsys.readouterr().out
    assert "1 censored readout recorded as the outcome it settles: 1 hit ('<1');" in out
    with Campaign.open(tmp_path / "c.campaign") as again:
        plate = again.next_plate(None, tmp_path / "P003.csv")
    path, _ = _filled(plate.path, tmp_path / "T.csv", **IC50, compound={}, default="3000")
    assert main(["campaign", "record", str(tmp_path / "c.campaign"), str(path)]) == 0
    assert "censored" not in capsys.readouterr().out


def _semicolon(path, out):
    """``path`` saved as Excel saves CSV where the decimal separator is the comma: ';' between the cells."""
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    with open(out, "w", newline="") as fh:
        csv.writer(fh, delimiter=";").writerows(rows)
    return out


@pytest.mark.parametrize("typed", ["> 1.234", "< 1.234", ">1.234 uM"])
def test_a_bound_that_reads_two_ways_in_a_file_of_decimal_commas_is_refused(tmp_path, typed):
    """In a ';' file with decimal commas '.' may group thousands: a plain 1.234 is refused as reading 1234 or 1.234,
    but a bound was not checked: '< 1.234' was recorded as a hit (< 1234 nM settles nothing) and '> 1.234' refused as
    settling nothing (> 1234 nM is a non-hit). The bound's number is now read by the same rule."""
    camp = _campaign(tmp_path, Readout.build("IC50", unit="nM", hit_below=1000.0))
    plate = camp.next_plate(None, tmp_path / "P001.csv")
    path, wells = _filled(plate.path, tmp_path / "R.csv", **IC50, compound={0: typed, 1: "12,5"}, default="3000")
    with pytest.raises(ResultsError) as info:
        camp.record(_semicolon(path, tmp_path / "S.csv"))
    sign, unit = typed[: typed.index("1")], typed[typed.index("4") + 1 :]
    problems = [line for line in str(info.value).splitlines() if "S.csv: line" in line]
    assert len(problems) == 1 and problems[0].split(": ", 2)[2] == (
        f"outcome {typed!r} for well P001/{wells[0]}: a '.' in a file that writes decimal commas (line 4: '12,5'): it "
        "reads 1234 with '.' grouping thousands, as where the decimal separator is the comma, or 1.234 with '.' as "
        f"the decimal point; write {sign}1234{unit}, or {sign}1,234{unit} for {typed}, as the lab meant it"
    )
    assert camp._con.execute("SELECT COUNT(*) FROM outcomes").fetchone()[0] == 0
    # as advised: > 1234 nM is a non-hit; and a bound's decimal comma shows the file's way for a plain 1.234
    path, wells = _filled(plate.path, tmp_path / "R.csv", **IC50, compound={0: "> 1234", 1: "12,5"}, default="3000")
    camp.record(_semicolon(path, tmp_path / "S.csv"))
    assert dict(camp._con.execute("SELECT well, value FROM outcomes"))[wells[0]] == 0.0
    camp.close()


def test_a_bound_s_decimal_comma_says_how_the_file_writes_numbers(tmp_path):
    camp = _campaign(tmp_path, Readout.build("IC50", unit="nM", hit_below=1000.0))
    plate = camp.next_plate(None, tmp_path / "P001.csv")
    path, _ = _filled(plate.path, tmp_path / "R.csv", **IC50, compound={0: "< 0,5", 1: "1.234"}, default="3000")
    shown = r"'1\.234'.*a '\.' in a file that writes decimal commas \(line 3: '< 0,5'\)"  # was: no outcome says which
    with pytest.raises(ResultsError, match=shown):
        camp.record(_semicolon(path, tmp_path / "S.csv"))
    camp.close()


def test_a_continuous_campaign_refuses_a_bound_that_reads_two_ways_as_a_bound(tmp_path):
    """Its bound cannot be recorded at all: it is told that, not to write '> 1234' (refused next)."""
    camp = _campaign(tmp_path, Readout.build("IC50", unit="nM", hit_below=1000.0), outcome="continuous")
    plate = camp.next_plate(None, tmp_path / "P001.csv")
    path, _ = _filled(plate.path, tmp_path / "R.csv", **IC50, compound={0: "> 1.234", 1: "12,5"}, default="3000")
    with pytest.raises(ResultsError, match="a censored value cannot be recorded in a continuous campaign") as info:
        camp.record(_semicolon(path, tmp_path / "S.csv"))
    assert "> 1234" not in str(info.value)
    camp.close()

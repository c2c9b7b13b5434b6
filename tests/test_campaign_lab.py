"""A campaign as a lab runs it (issue 20): plate formats and controls, raw readouts with a cutoff
and the Z'-factor, readable status, compounds added / withdrawn and the plate format changed
mid-campaign (replayed from the log), export."""

from __future__ import annotations

import csv
import html
import json
import math
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import numpy as np
import pytest
from campaign_util import Assay, synthetic_library

from screenbai.campaign import Campaign
from screenbai.campaign.lab.assay import ControlsFailed, Readout, z_prime
from screenbai.campaign.lab.layout import PlateLayout, parse_format
from screenbai.campaign.state.changes import add_compounds, set_layout, withdraw


# ------------------------------------------------------------------------------------- layouts
def test_formats_and_well_names():
    assert parse_format("96") == (8, 12) and parse_format("384") == (16, 24) and parse_format("3x5") == (3, 5)
    with pytest.raises(ValueError, match="100"):
        parse_format("100")
    lay = PlateLayout.build("384", controls="none")
    wells = lay.all_wells()
    assert wells[0] == "A01" and wells[23] == "A24" and wells[-1] == "P24" and len(set(wells)) == 384
    assert PlateLayout.build("96", controls="none").all_wells()[-1] == "H12"
    assert PlateLayout.build("1536", controls="none").all_wells()[-1] == "AF48"


def test_controls_on_the_edge_columns_empty_edge_and_replicates():
    lay = PlateLayout.build("384")
    assert lay.positive == tuple(f"{r}01" for r in "ABCDEFGHIJKLMNOP")
    assert lay.negative == tuple(f"{r}24" for r in "ABCDEFGHIJKLMNOP")
    assert lay.capacity == 384 - 32
    edge = PlateLayout.build("384", empty_edge=True)
    # rows A and P lose their 22 non-control wells each
    assert len(edge.empty_wells()) == 44 and edge.capacity == 384 - 32 - 44
    assert "A02" in edge.empty_wells() and "B02" not in edge.empty_wells()
    rep = PlateLayout.build("96", replicates=3)
    assert rep.compounds_per_plate == 80 // 3
    wells = rep.place(4)
    assert wells[:4] == ["A02", "A03", "A04", "A05"] and wells[4:8] == ["A06", "A07", "A08", "A09"]
    chosen = PlateLayout.build("96", positive="A01:D01", negative="E12,F12")
    assert chosen.positive == ("A01", "B01", "C01", "D01") and chosen.negative == ("E12", "F12")
    with pytest.raises(ValueError, match="Z99|not on a 8x12"):
        PlateLayout.build("96", positive="Z99")
    with pytest.raises(ValueError, match="both positive and negative"):
        PlateLayout.build("96", positive="A01", negative="A01")


@pytest.mark.parametrize("controls, said, asked", [
    ({"controls": "none", "positive": "A01:H01"}, "8 positive control wells (A01..H01) and no negative control wells",
     "give --negative-controls (e.g. A12:H12)"),
    ({"controls": "none", "negative": "A12:B12"}, "no positive control wells and 2 negative control wells",
     "give --positive-controls (e.g. A01:H01)"),
    ({"positive": "A01"}, "1 positive control well (A01) and 8 negative control wells (A12..H12)",
     "give --positive-controls"),
])
def test_controls_of_one_kind_are_refused_as_z_prime_needs_both(tmp_path, capsys, controls, said, asked):
    """Positive controls alone (--controls none --positive-controls A01:H01) were taken, and every plate then read
    "Z' = n/a (too few controls)": the layout is refused, at init and in `format`, saying why and what to give."""
    from screenbai.cli import main

    with pytest.raises(ValueError) as info:
        PlateLayout.build("96", **controls)
    for text in (said, "needs at least two wells of each", asked, "or --controls none alone"):
        assert text in str(info.value)
    options = {"controls": "--controls", "positive": "--positive-controls", "negative": "--negative-controls"}
    argv = [x for k, v in controls.items() for x in (options[k], v)]
    camp = tmp_path / "c.campaign"
    base = ["campaign", "init", str(camp), "--library", str(_lab_library(tmp_path)), "--id-column", "name",
            "--smiles-column", "smiles", "--d", "3", "--plate-format", "96"]
    assert main([*base, *argv]) == 2 and said in capsys.readouterr().err and not camp.exists()
    assert main([*base, "--controls", "none"]) == 0  # no controls at all: plates without a Z'
    # format keeps what it is not given (here no controls), so the wells named are all the controls there are
    assert main(["campaign", "format", str(camp), "--plate-format", "96", *argv]) == 2
    assert "needs at least two wells of each" in capsys.readouterr().err
    with Campaign.open(camp) as c:
        assert c.layout == PlateLayout.build("96", controls="none")


def test_a_full_plate_of_the_format_larger_than_the_library_is_refused_unless_forced(tmp_path):
    """A 96-well format on 30 compounds wrote a 30-compound plate without a word, where a plate size above the
    library was refused (the README: both refused unless --force); now both are, and --force fills the plate."""
    lib = synthetic_library(K=30, d=3)
    for k, layout in enumerate([PlateLayout.build("96"), None]):
        camp = Campaign.create(tmp_path / f"c{k}.campaign", lib, "glgape", {"epsilon": 0.1}, seed=2, layout=layout)
        with pytest.raises(ValueError) as info:
            camp.next_plate(None if layout is not None else 96)
        what = "a full 96-well plate of its layout (80 compounds)" if layout else "a plate of 96 wells"
        assert f"{what} for a library of 30 compounds" in str(info.value)
        assert "--plate-size) of at most 30" in str(info.value) and "force it (--force)" in str(info.value)
        assert camp._con.execute("SELECT COUNT(*) FROM plates").fetchone()[0] == 0
        camp.close()
        for forced, size, requested in [(False, 30, 30), (True, None if layout else 96, 80 if layout else 96)]:
            path = tmp_path / f"c{k}{forced}.campaign"
            with Campaign.create(path, lib, "glgape", {"epsilon": 0.1}, seed=2, layout=layout) as again:
                again.next_plate(size, force=forced)  # 30: each compound at most once; forced: a full plate
                assert again._con.execute("SELECT requested FROM plates").fetchone()[0] == requested


def test_a_row_for_a_well_the_plate_does_not_use_says_what_the_well_is(tmp_path):
    """A row for A02 of an --empty-edge 96-well plate read "not on plate P001 (wells B02..H12)": a wrong range (the
    controls in A01 and A12 are on it) and not the reason; the error now says it is an empty edge well."""
    from screenbai.campaign import ResultsError

    lib = synthetic_library(K=100, d=3)
    layout = PlateLayout.build("96", empty_edge=True)
    with Campaign.create(tmp_path / "c.campaign", lib, "glgape", {"epsilon": 0.1}, seed=2, layout=layout) as camp:
        plate = camp.next_plate(10)
        rows = f"plate_id,well,outcome\nP001,{plate.wells[0]},1\nP001,a2,1\nP001,Z77,0\nP001,G10,0\n"
        (tmp_path / "r.csv").write_text(rows)
        with pytest.raises(ResultsError) as info:
            camp.record(tmp_path / "r.csv")
        text = str(info.value)
        assert "line 3: well A02 is an empty edge well of plate P001" in text and "--empty-edge" in text
        assert "line 4: well 'Z77' is not on plate P001 (a 96-well plate, wells A01..H12)" in text
        last = plate.wells[-1]
        assert f"line 5: well G10 of plate P001 was left unused (the plate's compound wells are B02..{last})" in text
        assert "B02..H12" not in text and camp.open_wells() == {"P001": len(plate)}


def test_z_prime_matches_its_definition():
    pos, neg = [100, 96, 104, 100], [0, 2, -2, 0]
    sp, sn = np.std(pos, ddof=1), np.std(neg, ddof=1)
    assert z_prime(pos, neg) == pytest.approx(1 - 3 * (sp + sn) / 100)
    assert z_prime([1], [0, 0]) is None


# ------------------------------------------------------------------------------ plates and readouts
def _fill(plate_file: Path, values: dict, out: Path, controls=(100.0, 0.0), noise=2.0, seed=0) -> Path:
    """The plate file with its outcome column filled: compound wells from ``values`` (compound id ->
    value or a list of values used in turn), control wells around ``controls`` with ``noise``. The plate file's ids
    are read as ``record`` reads them (a formula-like id behind a quote is the id)."""
    from screenbai.textfiles import formula_unsafe

    rng = np.random.default_rng(seed)
    with open(plate_file, newline="") as fh:
        rows = list(csv.DictReader(fh))
    used: dict[str, int] = {}
    for r in rows:
        if r["role"] == "positive control":
            r["outcome"] = f"{controls[0] + noise * rng.normal():.3f}"
        elif r["role"] == "negative control":
            r["outcome"] = f"{controls[1] + noise * rng.normal():.3f}"
        else:
            cid = formula_unsafe(r["compound_id"])
            v = values[cid]
            if isinstance(v, list):
                k = used.get(cid, 0)
                used[cid] = k + 1
                v = v[k]
            r["outcome"] = str(v)
    with open(out, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return out


def _ic50_campaign(tmp_path, layout=None):
    lib = synthetic_library(K=30, d=3)
    readout = Readout.build("IC50", unit="nM", hit_below=100.0)
    layout = layout or PlateLayout.build("24")  # 4 + 4 controls, 16 compound wells
    return Campaign.create(
        tmp_path / "c.campaign", lib, "glgape", {"epsilon": 0.1}, seed=2, layout=layout, readout=readout
    )


def test_plate_file_names_wells_controls_and_why(tmp_path):
    camp = _ic50_campaign(tmp_path, PlateLayout.build("24", replicates=2))
    plate = camp.next_plate(None, tmp_path / "P001.csv")
    with open(plate.path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == ["plate_id", "well", "compound_id", "smiles", "role", "why", "outcome"]
    roles = [r["role"] for r in rows]
    assert roles.count("positive control") == 4 and roles.count("negative control") == 4
    comp = [r for r in rows if r["role"] == "compound"]
    assert len(comp) == 16 and len({r["compound_id"] for r in comp}) == 8  # 8 compounds, 2 wells each
    assert all(r["smiles"] for r in comp) and [r["well"] for r in rows][:2] == ["A01", "A02"]
    assert sum("replicate 2" in r["why"] for r in comp) == 8
    assert all("initial design" in r["why"] for r in comp if "replicate" not in r["why"])
    camp.close()


def test_a_first_plate_without_a_model_is_not_called_an_initial_design_to_fit_the_model(tmp_path):
    """KL-LUCB (each compound's own wells, no model) read "initial design: ... to fit the model" on its first
    plate; its first plate is its own rule's, and says so."""
    camp = Campaign.create(tmp_path / "k.campaign", synthetic_library(K=30, d=3), "kl-lucb", {"epsilon": 0.1},
                           seed=2)
    plate = camp.next_plate(8, tmp_path / "P001.csv")
    with open(plate.path, newline="") as fh:
        why = [r["why"] for r in csv.DictReader(fh)]
    assert len(why) == 8 and all(w.startswith("KL-LUCB") and "never tested" in w for w in why), why
    camp.close()


def test_raw_readouts_are_kept_and_turned_into_hits_by_the_cutoff(tmp_path):
    camp = _ic50_campaign(tmp_path)
    plate = camp.next_plate(None, tmp_path / "P001.csv")
    values = {cid: (50.0 if k % 3 == 0 else 2500.0) for k, cid in enumerate(sorted(set(plate.compound_ids)))}
    rec = camp.record(_fill(plate.path, values, tmp_path / "R001.csv", controls=(100.0, 5000.0), noise=20))
    assert rec.qc["P001"][1] == "pass" and rec.n_outcomes == len(plate)
    told = dict(camp._con.execute("SELECT well, value FROM outcomes"))
    raw = dict(camp._con.execute("SELECT well, raw FROM readouts WHERE kind = 'compound'"))
    for well, cid in zip(plate.wells, plate.compound_ids):
        assert raw[well] == values[cid]  # the value as typed
        assert told[well] == (1.0 if values[cid] <= 100.0 else 0.0)  # a hit: IC50 <= 100 nM
    assert camp._con.execute("SELECT COUNT(*) FROM readouts WHERE kind != 'compound'").fetchone()[0] == 8
    camp.close()


def test_a_plate_failing_its_controls_waits_for_the_lab_decision(tmp_path):
    camp = _ic50_campaign(tmp_path)
    plate = camp.next_plate(None, tmp_path / "P001.csv")
    values = {cid: 40.0 for cid in plate.compound_ids}
    bad = _fill(plate.path, values, tmp_path / "R001.csv", controls=(100.0, 155.0), noise=20)
    with pytest.raises(ControlsFailed, match=r"(?s)P001: Z' = .* < 0.5.*--accept.*--discard-plate"):
        camp.record(bad)
    with pytest.raises(ControlsFailed, match=r"positive controls [\d.]+ nM, sd [\d.]+ log10 units, negative [\d.]+ nM, "
                       r"sd [\d.]+ log10 units \(geometric mean, sd of log10\)"):  # an IC50's Z' is of log10
        camp.record(bad)
    assert camp.open_wells() == {"P001": len(plate)}  # nothing recorded
    rec = camp.record(bad, discard=True)
    assert rec.qc["P001"][1] == "discarded" and rec.n_failed == len(plate) and rec.n_outcomes == 0
    kept = camp._con.execute("SELECT COUNT(*) FROM readouts WHERE discarded = 1").fetchone()[0]
    assert kept == len(plate) + 8  # raw values kept, marked discarded
    again = camp.next_plate(None)  # the discarded wells come back first
    assert sorted(again.arms[: len(plate)]) == sorted(plate.arms)
    status = camp.status()
    assert any(p == "P001" and d == "discarded" for p, _, d in status.plate_qc)
    assert "controls FAILED" in status.text()
    camp.close()


def test_accepting_a_failing_plate_counts_its_outcomes(tmp_path):
    camp = _ic50_campaign(tmp_path)
    plate = camp.next_plate(None, tmp_path / "P001.csv")
    values = {c: 40.0 for c in plate.compound_ids}
    bad = _fill(plate.path, values, tmp_path / "R.csv", controls=(100.0, 155.0), noise=20)
    rec = camp.record(bad, accept=True)
    assert rec.qc["P001"][1] == "accepted" and rec.n_outcomes == len(plate)
    assert camp.status().tests == len(plate)
    camp.close()


@pytest.mark.parametrize("typed", ["-5", "0"])
def test_a_concentration_at_or_below_zero_refuses_the_file(tmp_path, typed):
    """An IC50 of -5 nM was recorded, and as a hit (-5 <= 100); a concentration is above 0, so the file is
    refused whole naming the line and value (0 too: no compound has an IC50 of 0)."""
    from screenbai.campaign import ResultsError

    camp = _ic50_campaign(tmp_path)
    plate = camp.next_plate(None, tmp_path / "P001.csv")
    values = {cid: 2500.0 for cid in plate.compound_ids}
    values[plate.compound_ids[0]] = float(typed)
    with pytest.raises(ResultsError) as info:
        camp.record(_fill(plate.path, values, tmp_path / "R001.csv", controls=(5.0, 5000.0), noise=1))
    line = 2 + [r.split(",")[1] for r in plate.path.read_text().splitlines()[1:]].index(plate.wells[0])
    assert f"line {line}: outcome '{float(typed)}' for well P001/{plate.wells[0]}" in str(info.value)
    assert "IC50 (nM) is a concentration, above 0" in str(info.value) and "nothing was recorded" in str(info.value)
    assert camp.open_wells() == {"P001": len(plate)}
    camp.close()


@pytest.mark.parametrize("name, unit, concentration", [
    ("IC50", "", True), ("Ki", "", True), ("k_d", "", True), ("binding", "µM", True), ("potency", "mol/L", True),
    ("solubility", "ng/mL", True), ("percent inhibition", "%", False), ("fluorescence", "RFU", False),
    ("pIC50", "", False), ("distance", "m", False),
])
def test_a_readout_is_a_concentration_by_its_name_or_unit(name, unit, concentration):
    readout = Readout.build(name, unit=unit, hit_above=1.0)
    assert readout.is_concentration is concentration
    assert (readout.problem(-5.0) is not None) is concentration
    assert readout.problem(0.5) is None  # 5 mol/L is refused now (above 1 M: tests/test_campaign_readout_ranges.py)


def test_a_percent_inhibition_may_be_negative_and_a_concentration_cutoff_may_not(tmp_path):
    lib = synthetic_library(K=30, d=3)
    readout = Readout.build("percent inhibition", unit="%", hit_above=50.0)
    camp = Campaign.create(tmp_path / "c.campaign", lib, "glgape", {"epsilon": 0.1}, seed=2,
                           layout=PlateLayout.build("24"), readout=readout)
    plate = camp.next_plate(None, tmp_path / "P001.csv")
    values = {cid: -5.0 for cid in plate.compound_ids}
    assert camp.record(_fill(plate.path, values, tmp_path / "R.csv", controls=(100.0, 0.0))).n_outcomes == len(plate)
    camp.close()
    with pytest.raises(ValueError, match=r"--hit-below -1: IC50 \(nM\) is a concentration, above 0"):
        Readout.build("IC50", unit="nM", hit_below=-1.0)


# ------------------------------------------------------------------------------------------ status
@pytest.mark.slow
def test_status_json_keys_and_contention_falls_as_the_screen_learns(tmp_path):
    lib = synthetic_library(K=30, d=3)
    camp = Campaign.create(tmp_path / "c.campaign", lib, "glgape", {"epsilon": 0.1}, seed=3)
    assay = Assay(lib.features, seed=1)
    seen, tests = [], 0
    for k in range(12):
        plate = camp.next_plate(24)
        tests += len(plate)
        path = tmp_path / f"r{k}.csv"
        with open(path, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["plate_id", "well", "outcome"])
            w.writerows([plate.plate_id, well, v] for well, v in zip(plate.wells, assay(plate.arms)))
        camp.record(path)
        if k in (1, 11) or camp.policy.done:
            seen.append(camp.status().to_dict())
        if camp.policy.done:
            break
    d = json.loads(json.dumps(seen[-1]))  # plain JSON
    for key in ("plates_done", "tests", "recommendation", "certified_epsilon", "in_contention", "forecast_plates"):
        assert key in d
    assert d["plates_done"] == k + 1 and d["tests"] == tests
    contention = [s["in_contention"] for s in seen]
    print(contention, d["certified_epsilon"])
    assert contention[0] > 3 * contention[-1] and contention[-1] >= 1, contention
    text = camp.status().text()
    assert "still in contention" in text and "plates done" in text
    camp.close()


# ------------------------------------------------------------------------------- mid-campaign changes
def _results(tmp_path, plate, values, tag):
    path = tmp_path / f"{tag}.csv"
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["plate_id", "well", "outcome"])
        w.writerows([plate.plate_id, well, v] for well, v in zip(plate.wells, values))
    return path


def _state(camp):
    n, s, _, failed = camp.observations()
    return n.tolist(), s.tolist(), failed, camp.open_wells(), camp.policy.result().recommendation


# glgape, and the defaults of `campaign init` for 0/1 and continuous outcomes
@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["glgape", "log-tas", "lin-tas"])
def test_added_and_withdrawn_compounds_are_replayed_from_the_log(tmp_path, algorithm):
    lib = synthetic_library(K=30, d=3)
    rng = np.random.default_rng(7)
    extra_X = np.hstack([rng.normal(size=(3, 3)), np.ones((3, 1))])
    camp = Campaign.create(tmp_path / "c.campaign", lib, algorithm, {"epsilon": 0.1}, seed=3)
    assay = Assay(np.vstack([lib.features, extra_X]), seed=1)
    for k in range(3):
        plate = camp.next_plate(24)
        camp.record(_results(tmp_path, plate, assay(plate.arms), f"a{k}"))
    in_lab = camp.next_plate(24)  # still in the lab during the changes
    arms = add_compounds(camp, ["NEW1", "NEW2", "NEW3"], ["CCO", "CCN", "CCC"], features=extra_X)
    assert arms == [30, 31, 32] and camp.K == 33
    withdraw(camp, "CPD0005", "out of stock")
    camp.record(_results(tmp_path, in_lab, assay(in_lab.arms), "lab"))  # its results still come back
    later = []
    for k in range(3):
        plate = camp.next_plate(24)
        later.extend(plate.arms)
        camp.record(_results(tmp_path, plate, assay(plate.arms), f"b{k}"))
    live_arms = set(np.asarray(camp.policy.arm_set).tolist())  # the compounds the policy chooses among
    assert 5 not in later and 5 not in live_arms and {30, 31, 32} <= live_arms  # withdrawn never again; new ones in
    if algorithm != "log-tas":  # log-tas completes the information collected: the model may settle them untested
        assert {30, 31, 32} & set(later)
    live = _state(camp)
    path = camp.path
    camp.close()
    with Campaign.open(path, use_snapshot=False) as again:  # replayed from the log alone
        assert _state(again) == live
        nxt = again.next_plate(24).arms
    with Campaign.open(path) as snap:
        pass
    assert nxt and 5 not in nxt
    with Campaign.open(path) as c:
        text = c.status().text()
        assert "3 compound(s) added" in text and "CPD0005 withdrawn (out of stock)" in text
        assert "error guarantee still holds" in text and c.status().active == 32
    del snap


def test_log_tas_with_replicate_wells_records_and_replays(tmp_path):
    """campaign init's default with every compound in two wells: the second well is a test no block planned
    (before: recording it raised); the state replayed from the log equals the live one."""
    lib = synthetic_library(K=30, d=3)
    camp = Campaign.create(tmp_path / "c.campaign", lib, "log-tas", {"epsilon": 0.1}, seed=3,
                           layout=PlateLayout.build("24", replicates=2, controls="none"))
    assay = Assay(lib.features, seed=1)
    for k in range(4):
        plate = camp.next_plate(None)
        assert len(plate) == 24 and all(plate.arms.count(a) % 2 == 0 for a in plate.arms)  # 12 proposed, 2 wells each
        camp.record(_results(tmp_path, plate, assay(plate.arms), f"r{k}"))
    live = _state(camp)
    assert sum(live[0]) == 96 and camp.policy.n_samples == 96
    path = camp.path
    camp.close()
    with Campaign.open(path, use_snapshot=False) as again:
        assert _state(again) == live


def test_many_compounds_are_withdrawn_in_one_step_from_the_command_line_or_a_file(tmp_path, capsys):
    """`withdraw` took one compound: keeping a shortlist of a large library meant a command (and a restart of the
    algorithm) per compound. Now the ids on the command line and those of a file's compound_id column (e.g. rows of
    the export) go in one logged step; a bad list is refused as a whole, naming the ids, the file and the line, and
    changes nothing; the log replayed from the start gives the same screen."""
    from screenbai.cli import main

    lib = synthetic_library(K=20, d=2)
    path = tmp_path / "c.campaign"
    camp = Campaign.create(path, lib, "log-tas", {"epsilon": 0.1}, seed=3)
    assay = Assay(lib.features, seed=1)
    plate = camp.next_plate(20)
    camp.record(_results(tmp_path, plate, assay(plate.arms), "a"))
    steps = len(camp.events())
    camp.close()
    listing = tmp_path / "drop.csv"
    listing.write_text("compound_id;note\nCPD0003;old batch\nCPD0004;\n\nCPD0007;x\n")
    bad = {
        "not in the campaign": (["CPD0001", "NOPE", "NADA"], []),
        "named more than once: CPD0003": (["CPD0003"], ["--from", str(listing)]),
        "no column 'id'": ([], ["--from", str(listing), "--id-column", "id"]),
        "name the compounds to withdraw": ([], []),
        "would leave 1; the screen needs 2": ([f"CPD{k:04d}" for k in range(1, 20)], []),
    }
    for message, (ids, options) in bad.items():
        assert main(["campaign", "withdraw", str(path), *ids, *options]) == 2, message
        err = capsys.readouterr().err
        assert message in err, err
    for missing, said in ((tmp_path / "none.csv", "file does not exist"), (tmp_path, "is a folder")):
        assert main(["campaign", "withdraw", str(path), "--from", str(missing)]) == 2
        assert f"{missing}: {said}" in capsys.readouterr().err
    empty = tmp_path / "empty_cell.csv"
    empty.write_text("compound_id,note\nCPD0002,a\n,b\n")
    assert main(["campaign", "withdraw", str(path), "--from", str(empty)]) == 2
    assert f"{empty}, line 3: empty 'compound_id'" in capsys.readouterr().err
    with Campaign.open(path) as c:  # every refusal changed nothing
        assert len(c.events()) == steps and len(c.policy.arm_set) == 20
    assert main(["campaign", "withdraw", str(path), "CPD0011", "--from", str(listing), "--reason", "shortlist"]) == 0
    assert "withdrew 4 compounds: no longer proposed or recommended; 16 compounds remain" in capsys.readouterr().out
    with Campaign.open(path) as c:
        assert len(c.events()) == steps + 1  # one step for the four
        assert sorted(set(range(20)) - set(np.asarray(c.policy.arm_set).tolist())) == [3, 4, 7, 11]
        assert "4 compounds withdrawn (CPD0011, CPD0003, CPD0004 and 1 more) (shortlist): they are no longer" \
            in c.status().text()
        for k in range(2):
            plate = c.next_plate(16)
            assert not {3, 4, 7, 11} & set(np.asarray(plate.arms).tolist())
            c.record(_results(tmp_path, plate, assay(plate.arms), f"b{k}"))
        live = _state(c)
    assert main(["campaign", "withdraw", str(path), "CPD0004"]) == 2
    assert "1 problem(s); nothing was changed:\n  already withdrawn: CPD0004; leave them out" in capsys.readouterr().err
    with Campaign.open(path, use_snapshot=False) as again:  # replayed from the log alone
        assert _state(again) == live


def test_withdraw_names_every_problem_of_the_request_at_once(tmp_path, capsys):
    """`withdraw` refused a list for its first kind of problem only: the unknown ids, then on the next try the ids
    named twice, then the ones already withdrawn. Every problem of the request is now named at once, each with its
    ids, and nothing changes."""
    from screenbai.cli import main

    lib = synthetic_library(K=8, d=2)
    path = tmp_path / "c.campaign"
    Campaign.create(path, lib, "log-tas", {"epsilon": 0.1}, seed=3).close()
    assert main(["campaign", "withdraw", str(path), "CPD0001"]) == 0
    with Campaign.open(path) as c:
        steps = len(c.events())
    capsys.readouterr()
    ids = ["CPD0001", "NOPE", "CPD0002", "CPD0002", "NADA", "CPD0003"]
    assert main(["campaign", "withdraw", str(path), *ids]) == 2
    err = capsys.readouterr().err
    assert f"withdraw from {path}: 3 problem(s); nothing was changed:" in err
    assert "not in the campaign: NOPE, NADA; the ids are the library's" in err
    assert "named more than once: CPD0002; name each compound once" in err
    assert "already withdrawn: CPD0001; leave them out" in err
    # too few left is said beside the others, counted on the ids that could go
    everyone = [f"CPD{k:04d}" for k in range(8)]
    assert main(["campaign", "withdraw", str(path), *everyone, "NOPE"]) == 2
    err = capsys.readouterr().err
    assert "3 problem(s)" in err and "NOPE" in err and "already withdrawn: CPD0001" in err
    assert "withdrawing 7 compound(s) would leave 0; the screen needs 2" in err
    with Campaign.open(path) as c:  # nothing changed
        assert len(c.events()) == steps and len(c.policy.arm_set) == 7


def test_fixed_budget_algorithms_refuse_a_change(tmp_path):
    lib = synthetic_library(K=12, d=2)
    camp = Campaign.create(tmp_path / "g.campaign", lib, "gse-log", {"budget": 120}, seed=1)
    with pytest.raises(ValueError, match="fixed-budget"):
        withdraw(camp, "CPD0001")
    camp.close()


def test_plate_format_changes_mid_campaign(tmp_path):
    lib = synthetic_library(K=60, d=3)
    camp = Campaign.create(
        tmp_path / "c.campaign", lib, "glgape", {"epsilon": 0.1}, seed=3, layout=PlateLayout.build("24")
    )
    assay = Assay(lib.features, seed=1)
    first = camp.next_plate(None)  # GLGapE's initial design: 12 compounds on the 24-well layout
    assert first.wells[0] == "A02" and camp._con.execute("SELECT COUNT(*) FROM controls").fetchone()[0] == 8
    camp.record(_results(tmp_path, first, assay(first.arms), "a"))
    set_layout(camp, PlateLayout.build("48", controls="none"))
    path = camp.path
    camp.close()
    with Campaign.open(path) as c:  # the new format is kept on resumption
        assert c.layout == PlateLayout.build("48", controls="none")
        assert any(e[2] == "layout" for e in c.events())
        second = c.next_plate(None)
        assert len(second) == 48 and second.wells[0] == "A01" and second.wells[-1] == "F08"
        assert c._con.execute("SELECT COUNT(*) FROM controls WHERE plate_id = 'P002'").fetchone()[0] == 0
        assert "plate format changed to 48-well" in c.status().text()


# ------------------------------------------------------------------------------------------ export
def test_export_writes_csv_xlsx_and_one_html_file(tmp_path, capsys):
    from screenbai.cli import main

    camp = _ic50_campaign(tmp_path)
    plate = camp.next_plate(None, tmp_path / "P001.csv")
    values = {cid: (50.0 if k % 2 else 900.0) for k, cid in enumerate(sorted(set(plate.compound_ids)))}
    camp.record(_fill(plate.path, values, tmp_path / "R001.csv", controls=(100.0, 5000.0), noise=20))
    withdraw(camp, camp.compound_ids[-1])
    path = camp.path
    camp.close()
    out = tmp_path / "export"
    out.mkdir()
    assert main(["campaign", "export", str(path), "--out", str(out)]) == 0
    with open(out / "c.csv", newline="") as fh:
        ordered = list(csv.DictReader(fh))
    rows = {r["compound_id"]: r for r in ordered}
    assert len(rows) == 30
    # for a colleague: the recommendation on the first line, the withdrawn compound last, each group best first
    assert ordered[0]["status"].startswith("recommended") and ordered[-1]["status"] == "withdrawn"
    groups = [r["status"] for r in ordered]
    assert groups == sorted(groups, key=lambda s: ["rec", "in ", "beh", "wit"].index(s[:3]))
    contention = [float(r["model_estimate"]) for r in ordered if r["status"] == "in contention"]
    assert contention == sorted(contention, reverse=True)
    for cid, v in values.items():
        n = plate.compound_ids.count(cid)
        assert int(rows[cid]["tests"]) == n and int(rows[cid]["hits"]) == (n if v <= 100 else 0)
        # the readout's unit, declared at init; a concentration's wells averaged on the log scale
        assert float(rows[cid]["geomean_readout (IC50 in nM)"]) == pytest.approx(v)
        lo, est, hi = (float(rows[cid][k]) for k in ("model_low", "model_estimate", "model_high"))
        assert lo <= est <= hi
    assert rows["CPD0029"]["status"] == "withdrawn" and rows["CPD0029"]["in_screen"] == "False"
    assert sum(r["status"].startswith("recommended") for r in rows.values()) == 1
    # the workbook: compounds, wells and campaign sheets; compounds with a header and 30 rows, numbers as numbers
    ns = {"m": "http://schemas.openxmlformats.org/spreadsheetml/2006/main"}
    with zipfile.ZipFile(out / "c.xlsx") as z:
        book = ET.fromstring(z.read("xl/workbook.xml"))
        assert [s.get("name") for s in book.find("m:sheets", ns)] == ["compounds", "wells", "campaign"]
        sheet = ET.fromstring(z.read("xl/worksheets/sheet1.xml"))
        about = z.read("xl/worksheets/sheet3.xml").decode()
    assert "IC50 (nM); a hit when IC50 &lt;= 100 nM" in about  # the campaign sheet names the readout and unit
    xml_rows = sheet.find("m:sheetData", ns).findall("m:row", ns)
    assert len(xml_rows) == 31
    names = [c.find("m:is/m:t", ns).text for c in xml_rows[0].findall("m:c", ns)]
    assert names == list(ordered[0]) and "geomean_readout (IC50 in nM)" in names
    first = xml_rows[1].findall("m:c", ns)
    assert first[3].find("m:v", ns).text == ordered[0]["tests"] and first[3].get("t") is None
    page = (out / "c_report.html").read_text()
    assert "data:image/" in page and 'src="' in page
    assert not [s for s in page.split('src="')[1:] if not s.startswith("data:")]  # nothing outside the file


def test_the_csv_export_keeps_formulas_out_and_floats_without_noise(tmp_path, capsys):
    """Ids starting with =, +, -, @ were written to the CSV as given, and Excel ran '=HYPERLINK(...)' as a formula
    (CSV injection); floats carried the arithmetic's noise (60.10000000000001). A text cell that starts like a
    formula is now written behind a single quote (OWASP), numbers as numbers (a negative mean is not touched) in 10
    significant digits; the workbook's text cells are inline strings, never formulas; `withdraw --from` reads the
    quoted ids back as the campaign knows them."""
    from screenbai.campaign.views.export import compound_table
    from screenbai.cli import main
    from screenbai.textfiles import formula_safe, formula_unsafe

    lib = synthetic_library(K=12, d=2)
    evil = ['=HYPERLINK("http://x.example","y")', "+1", "-2", "@SUM(A1)"]
    lib.compounds.loc[:3, "compound_id"] = evil
    readout = Readout.build("percent inhibition", unit="%", hit_above=50.0)
    camp = Campaign.create(tmp_path / "c.campaign", lib, "glgape", {"epsilon": 0.1}, seed=2,
                           layout=PlateLayout.build("24", replicates=3), readout=readout)
    plate = camp.next_plate(None, tmp_path / "P001.csv")
    # wells of 0.1, 0.2 and 0.3 % average to 0.20000000000000004 in floating point; -5.5, -4.5, -5 to -5
    values = {cid: [0.1, 0.2, 0.3] if k % 2 else [-5.5, -4.5, -5.0]
              for k, cid in enumerate(sorted(set(plate.compound_ids)))}
    camp.record(_fill(plate.path, values, tmp_path / "R001.csv", controls=(100.0, 0.0), noise=2))
    means = {r["compound_id"]: r["mean_readout"] for r in compound_table(camp)}
    path = camp.path
    camp.close()
    assert any(repr(m) not in ("0.2", "-5.0") for m in means.values() if m is not None)  # the noise was there
    out = tmp_path / "export"
    out.mkdir()
    assert main(["campaign", "export", str(path), "--out", str(out)]) == 0
    text = (out / "c.csv").read_text(encoding="utf-8")
    with open(out / "c.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    ids = [r["compound_id"] for r in rows]
    assert {"'" + e for e in evil} <= set(ids) and not set(evil) & set(ids)
    assert not any(line.startswith(("=", "+", "-", "@")) for line in text.splitlines())
    col = "mean_readout (percent inhibition in %)"
    written = {r[col] for r in rows if r[col]}
    assert written == {"0.2", "-5"}  # no noise, and the negative mean a number, not "'-5"
    for r in rows:
        for key in ("observed_rate", "model_estimate", "model_low", "model_high", "certified_epsilon"):
            assert not r[key].startswith("'") and len(r[key].lstrip("-").replace(".", "")) <= 15, (key, r[key])
    # the workbook: the ids as they are, inline strings (no <f> formula element anywhere)
    with zipfile.ZipFile(out / "c.xlsx") as z:
        sheet = z.read("xl/worksheets/sheet1.xml").decode()
    assert "<f>" not in sheet and "<f " not in sheet
    for e in evil:
        assert f'<t xml:space="preserve">{html.escape(e, quote=False)}</t>' in sheet
    # rows kept from the export withdraw their compounds
    kept = tmp_path / "kept.csv"
    with open(kept, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(r for r in rows if r["compound_id"] in ("'" + evil[0], "'" + evil[2]))
    assert main(["campaign", "withdraw", str(path), "--from", str(kept)]) == 0
    with Campaign.open(path) as c:
        assert sorted(set(range(12)) - set(np.asarray(c.policy.arm_set).tolist())) == [0, 2]
    capsys.readouterr()
    assert [formula_safe(t) for t in ("\tx", "\rx", "x=1", "")] == ["'\tx", "'\rx", "x=1", ""]
    assert formula_unsafe("'=1") == "=1" and formula_unsafe("'abc") == "'abc"


# ---------------------------------------------------------------------------------------- backtest
def _lab_library(tmp_path, n=30) -> Path:
    path = tmp_path / "lib.csv"
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["name", "smiles"])
        for k in range(n):
            w.writerow([f"L{k:02d}", "C" * (k % 10 + 1) + ("O", "N", "Cl")[k // 10]])
    return path


@pytest.mark.slow  # a whole backtest through the CLI (figure included): 9 s on a loaded machine
def test_backtest_from_a_two_column_csv(tmp_path, capsys):
    from screenbai.cli import main

    lib = _lab_library(tmp_path)
    truth = tmp_path / "measured.csv"
    with open(truth, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["compound", "ic50"])
        for k in range(28):  # L28, L29 have no measurement; X99 is not in the library
            w.writerow([f"L{k:02d}", 5.0 if k in (3, 4, 5) else 5000.0])
        w.writerow(["X99", 1.0])
    out = tmp_path / "bt"
    argv = ["campaign", "backtest", "--library", str(lib), "--id-column", "name", "--smiles-column", "smiles"]
    argv += ["--d", "3", "--truth", str(truth), "--truth-id-column", "compound", "--activity-column", "ic50"]
    argv += ["--threshold", "100", "--plate-size", "12", "--max-tests", "96", "--seed", "1", "--out", str(out)]
    assert main(argv + ["--algorithm", "m-lingape", "--param", "epsilon=0.1", "--param", "threshold=heuristic"]) == 0
    text = capsys.readouterr().out
    assert "2 library compounds without a value left out" in text and "1 values of compounds not in" in text
    assert "hit = ic50 < 100 (3 of 28 compounds)" in text
    assert "drawn with noise (sd 0.3 in log10 units, a factor 2)" in text  # the noise with its unit
    # what the hit-recovery share is, and why a best-arm campaign's is low (it read as worse than random)
    assert "share of the top-10 compounds tested at least once by the end: campaign" in text
    assert "it need not test many top ones" in text
    rec = json.loads((out / "backtest.json").read_text())["recommendation"][0]
    if rec["activity_nM"] == 5.0:  # one of three equal compounds: a tie, shown as one
        assert rec["potency_rank"] == 1 and rec["potency_rank_tied_to"] == 3 and "tied for ranks 1-3" in text
    else:
        assert rec["potency_rank"] == 4 and rec["potency_rank_tied_to"] == 28 and "tied for ranks 4-28" in text


def test_backtest_draws_each_test_with_noise_and_honours_the_library(tmp_path):
    from screenbai.campaign.backtest import hit_probability, outcomes_from_table
    from screenbai.campaign.library import import_library

    p = hit_probability(np.array([10.0, 100.0, 1000.0]), 100.0, "below", 0.3)
    assert 0.99 < p[0] < 1 and p[1] == pytest.approx(0.5) and 0 < p[2] < 0.01
    assert list(hit_probability(np.array([10.0, 1000.0]), 100.0, "below", 0.0)) == [1.0, 0.0]
    assert hit_probability(np.array([60.0]), 50.0, "above", 10.0)[0] == pytest.approx(0.841, abs=1e-3)
    lib = import_library(_lab_library(tmp_path), id_column="name", smiles_column="smiles", d=3)
    truth = tmp_path / "rates.csv"
    truth.write_text("name,rate\n" + "".join(f"L{k:02d},{k / 40}\n" for k in range(0, 30, 2)))
    known = outcomes_from_table(lib, truth)  # one numeric column in [0, 1]: hit rates
    assert list(known.library.compounds["compound_id"]) == [f"L{k:02d}" for k in range(0, 30, 2)]
    np.testing.assert_allclose(known.library.features, lib.features[::2])  # the library's own features
    np.testing.assert_allclose(known.rate, np.arange(0, 30, 2) / 40)
    bad = tmp_path / "bad.csv"
    bad.write_text("name,rate\nL00,0.5\nL01,high\n")
    with pytest.raises(ValueError, match=r"line 3: rate = 'high' is not a number"):
        outcomes_from_table(lib, bad)


def test_backtest_truth_values_out_of_range_are_named(tmp_path):
    """A hit rate of 1.5 was refused as "rate must hold hit rates in [0, 1]", and an IC50 of -1 as "a hit below a
    threshold in log10 units needs activities and threshold > 0", naming neither the file, the compound nor the
    value; each names them now, with the way on."""
    from screenbai.campaign.backtest import outcomes_from_table
    from screenbai.campaign.library import import_library

    lib = import_library(_lab_library(tmp_path), id_column="name", smiles_column="smiles", d=3)
    rates = tmp_path / "rates.csv"
    rates.write_text("name,rate\n" + "".join(f"L{k:02d},{1.5 if k == 4 else k / 40}\n" for k in range(10)))
    with pytest.raises(ValueError, match=r"rates.csv: the values of rate must be hit rates, in \[0, 1\]; 1 "
                       r"compound\(s\) are not: L04 \(1.5\); correct them or delete their rows, or give the column "
                       r"as --activity-column"):
        outcomes_from_table(lib, rates, rate_column="rate")
    ic50 = tmp_path / "ic50.csv"
    ic50.write_text("name,ic50\n" + "".join(f"L{k:02d},{-1 if k == 2 else 10 * (k + 1)}\n" for k in range(10)))
    with pytest.raises(ValueError, match=r"ic50.csv: the values of ic50 must be concentrations .*, above 0; 1 "
                       r"compound\(s\) are not: L02 \(-1\)"):
        outcomes_from_table(lib, ic50, activity_column="ic50", threshold=50.0)


# ---------------------------------------------------------------------------- GSE, init's messages
def test_gse_stages_fill_whole_plates(tmp_path, capsys):
    from screenbai.campaign import CampaignError
    from screenbai.campaign.labcli import whole_plate_budget

    lib = synthetic_library(K=30, d=3)
    layout = PlateLayout.build("24")  # 16 compound wells
    params = whole_plate_budget("gse-log", {"budget": 300}, 30, layout)
    assert params["budget"] == 320 and "each of gse-log's 5 stages is then 4 whole plate(s)" in capsys.readouterr().out
    camp = Campaign.create(tmp_path / "g.campaign", lib, "gse-log", params, seed=1, layout=layout)
    assert all(b % 16 == 0 for b in camp.policy.stage_budgets)
    assay = Assay(lib.features, seed=2)
    sizes = []
    for stage in range(2):
        stage_plates = []
        while True:
            try:
                stage_plates.append(camp.next_plate(None))
            except CampaignError:
                break
        for k, p in enumerate(stage_plates):
            camp.record(_results(tmp_path, p, assay(p.arms), f"s{stage}_{k}"))
        sizes.append([len(p) for p in stage_plates])
    assert sizes == [[16] * 4, [16] * 4]
    camp.close()


def test_gse_stages_fill_whole_default_plates_without_a_plate_format(tmp_path, capsys):
    from screenbai.campaign import CampaignError
    from screenbai.campaign.lab.plates import DEFAULT_PLATE_SIZE
    from screenbai.campaign.labcli import whole_plate_budget

    K = 200
    lib = synthetic_library(K=K, d=3)
    params = whole_plate_budget("gse-log", {"budget": 1000}, K, None)
    # ceil(log2 200) = 8 stages of 125 tests would leave a partial plate of 29 each: 2 plates of 96 each
    assert params["budget"] == 8 * 2 * DEFAULT_PLATE_SIZE
    assert "each of gse-log's 8 stages is then 2 whole plate(s) of 96 wells" in capsys.readouterr().out
    assert whole_plate_budget("gse-log", {"budget": 1000}, 30, None) == {"budget": 1000}  # no default plate
    camp = Campaign.create(tmp_path / "g.campaign", lib, "gse-log", params, seed=1)
    assay = Assay(lib.features, seed=2)
    sizes = []
    for stage in range(3):
        stage_plates = []
        while True:
            try:
                stage_plates.append(camp.next_plate(DEFAULT_PLATE_SIZE))  # what `next` asks without --plate-size
            except CampaignError:
                break
        for k, p in enumerate(stage_plates):
            camp.record(_results(tmp_path, p, assay(p.arms), f"s{stage}_{k}"))
        sizes.append([len(p) for p in stage_plates])
    assert sizes == [[96, 96]] * 3
    camp.close()


def test_init_prints_the_rejected_rows_and_writes_them_beside_the_campaign(tmp_path, capsys, monkeypatch):
    from screenbai.cli import main

    lib = _lab_library(tmp_path, n=12)
    with open(lib, "a") as fh:
        fh.write("BAD1,C1CC(\n,CCO\n")
    folder = tmp_path / "screens"
    folder.mkdir()
    monkeypatch.chdir(tmp_path)
    camp = folder / "s.campaign"
    argv = ["campaign", "init", str(camp), "--library", str(lib), "--id-column", "name", "--smiles-column", "smiles"]
    assert main(argv + ["--d", "3", "--plate-format", "384", "--empty-edge"]) == 0
    out = capsys.readouterr().out
    assert "row 14: BAD1 C1CC(: unparseable SMILES" in out and "row 15: (no id) CCO: missing id" in out
    assert f"all written to {folder / 's_rejected.csv'}" in out
    assert "384-well plates (16 rows x 24 columns), 16 positive control wells (A01..P01)" in out
    with open(folder / "s_rejected.csv", newline="") as fh:
        assert [r["compound_id"] for r in csv.DictReader(fh)] == ["BAD1", ""]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lib.csv", "screens"]  # nothing in the current folder


def test_status_forecast_uses_the_algorithms_threshold_when_it_states_one(tmp_path, monkeypatch):
    import math

    lib = synthetic_library(K=20, d=2)
    camp = Campaign.create(
        tmp_path / "c.campaign",
        lib,
        "m-lingape",
        {"epsilon": 0.1, "sigma": 0.5},
        seed=3,
        layout=PlateLayout.build("24"),
    )
    assay = Assay(lib.features, seed=1)
    plate = camp.next_plate(None)
    camp.record(_results(tmp_path, plate, assay(plate.arms), "a"))
    # no threshold stated, and a model of the features that a simulation on each compound's own posterior would
    # not follow (forecasts by simulation are for algorithms without one: test_restart_hands_the_screen_...)
    assert camp.status().forecast_plates is None
    assert "forecast of plates left: not available" in camp.status().text()
    cls = type(camp.policy.inner)
    monkeypatch.setattr(
        cls, "stopping_threshold", lambda self, t, delta: math.log((1 + math.log(t)) / delta), raising=False
    )
    st = camp.status()
    assert st.forecast_tests is not None and st.forecast_tests >= 0 and st.forecast_bound != "simulation"
    assert st.forecast_plates == math.ceil(st.forecast_tests / 16)
    assert f"forecast: about {st.forecast_plates:.0f} more plate(s) ({st.forecast_tests:,.0f} more tests) until the " \
        "stopping rule fires" in st.text()
    camp.close()


def test_a_separate_truth_is_restricted_to_the_library(tmp_path):
    from screenbai.campaign.backtest import KnownOutcomes, restrict_to_library

    truth_lib = synthetic_library(K=12, d=2, seed=1)  # the truth's own compounds CPD0000..CPD0011
    known = KnownOutcomes(truth_lib, np.linspace(0, 1, 12), np.arange(12.0), "truth", np.arange(12.0), "nM")
    lib = synthetic_library(K=16, d=3, seed=2)  # the library: CPD0000..CPD0015, other features
    out = restrict_to_library(known, lib)
    assert list(out.library.compounds["compound_id"]) == [f"CPD{k:04d}" for k in range(12)]
    np.testing.assert_array_equal(out.library.features, lib.features[:12])  # the library's features
    np.testing.assert_array_equal(out.rate, known.rate)
    assert "4 library compounds without a value left out" in out.description


def test_repair_after_a_change_keeps_the_new_base(tmp_path):
    """repair rebuilds the snapshot of the last base: after an added compound, the change, not the plate before."""
    lib = synthetic_library(K=20, d=2)
    extra = np.array([[0.3, -0.2, 1.0]])
    camp = Campaign.create(tmp_path / "c.campaign", lib, "glgape", {"epsilon": 0.1}, seed=3)
    assay = Assay(np.vstack([lib.features, extra]), seed=1)
    plate = camp.next_plate(12)
    camp.record(_results(tmp_path, plate, assay(plate.arms), "a"))
    in_lab = camp.next_plate(12)
    add_compounds(camp, ["NEW1"], ["CCO"], features=extra)
    path = camp.path
    camp.close()
    Campaign.repair(path)
    with Campaign.open(path) as c:
        c.record(_results(tmp_path, in_lab, assay(in_lab.arms), "b"))
        after_repair = _state(c)
    with Campaign.open(path, use_snapshot=False) as c:
        assert _state(c) == after_repair and c.policy.arm_set.size == 21


def test_new_compounds_are_featurized_as_the_library_was(tmp_path):
    """The projection on the library's stored principal components gives a library compound its own
    stored features back: a new compound lands in the same feature space."""
    from screenbai.campaign.library import import_library
    from screenbai.campaign.state.changes import featurize_new

    lib = import_library(_lab_library(tmp_path, n=20), id_column="name", smiles_column="smiles", d=3)
    camp = Campaign.create(tmp_path / "c.campaign", lib, "m-lingape", {"epsilon": 0.1}, seed=1)
    X = featurize_new(camp, list(camp.smiles[:5]))
    np.testing.assert_allclose(X, camp.features[:5], atol=1e-9)
    camp.close()


def test_the_lab_commands_name_what_they_refuse(tmp_path, capsys):
    """`add` of a structure already in the campaign named no compound (init names it), `--library FOLDER` said
    "does not exist", and `withdraw` of a row rejected at init said only "not in the campaign"."""
    from screenbai.cli import main

    lib = _lab_library(tmp_path, n=20)
    lib.write_text(lib.read_text() + "BAD-14,C1CC(\n")
    camp = str(tmp_path / "c.campaign")
    base = ["--id-column", "name", "--smiles-column", "smiles"]
    assert main(["campaign", "init", camp, "--library", str(tmp_path), *base, "--d", "3"]) == 2
    err = capsys.readouterr().err
    assert f"library file {tmp_path} is a folder; give the library file" in err and "does not exist" not in err
    assert main(["campaign", "init", camp, "--library", str(lib), *base, "--d", "3"]) == 0
    capsys.readouterr()
    new = tmp_path / "new.csv"
    new.write_text("name,smiles\nNEW1,OCC\nNEW2,c1ccccc1O\n")  # OCC is L01's CCO written another way
    assert main(["campaign", "add", camp, str(new), *base]) == 0
    assert "not added: row 2: NEW1 OCC: structure already in the campaign (same standardized structure as L01)" \
        in capsys.readouterr().out
    assert main(["campaign", "add", camp, str(tmp_path), *base]) == 2
    assert f"file of new compounds {tmp_path} is a folder" in capsys.readouterr().err
    assert main(["campaign", "withdraw", camp, "BAD-14", "NOPE"]) == 2
    err = capsys.readouterr().err
    assert "not in the campaign" in err and "NOPE" in err
    assert "BAD-14 (rejected at init: row 22 of the library, unparseable SMILES)" in err


def test_a_file_without_the_lab_tables_is_read_as_one_without_controls(tmp_path):
    """A campaign made before plate controls and readouts existed: opened read-only, the tables are
    empty temporary ones of the connection (status works); opened writable, they are added to the file."""
    import sqlite3

    from screenbai.campaign.lab.assay import ensure_schema

    camp = Campaign.create(tmp_path / "c.campaign", synthetic_library(K=10, d=2), "glgape", {}, seed=1)
    camp.close()
    con = sqlite3.connect(tmp_path / "c.campaign")
    for table in ("controls", "readouts", "plate_qc", "well_notes"):
        con.execute(f"DROP TABLE {table}")
    con.commit()
    con.close()
    ro = sqlite3.connect(f"file:{tmp_path / 'c.campaign'}?mode=ro", uri=True)
    ensure_schema(ro, readonly=True)
    assert ro.execute("SELECT COUNT(*) FROM readouts").fetchone() == (0,)
    main_tables = {r[0] for r in ro.execute("SELECT name FROM main.sqlite_master WHERE type = 'table'")}
    assert "readouts" not in main_tables  # nothing written into the file
    ro.close()
    with Campaign.open(tmp_path / "c.campaign") as c:  # writable: added to the file
        assert c.status().plate_qc == []
    con = sqlite3.connect(tmp_path / "c.campaign")
    assert {"controls", "readouts", "plate_qc", "well_notes"} <= {
        r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    }
    con.close()


def test_status_reports_the_spread_of_replicate_wells(tmp_path):
    """An IC50's wells spread by factors: its spreads (and the export's mean) are taken on the log scale ("sd 5.98e+03,
    in IC50 (nM)" said nothing a chemist uses); a readout that is no concentration keeps its own scale."""
    from screenbai.campaign.views.export import compound_table, header

    camp = _ic50_campaign(tmp_path, PlateLayout.build("24", replicates=2))
    plate = camp.next_plate(None, tmp_path / "P001.csv")
    ids = sorted(set(plate.compound_ids))
    values = {cid: [100.0 * (k + 1), 400.0 * (k + 1)] for k, cid in enumerate(ids)}  # replicates a factor 4 apart
    camp.record(_fill(plate.path, values, tmp_path / "R.csv", controls=(100.0, 5000.0), noise=20))
    st = camp.status()
    # each pair: log10 deviations +-log10(4)/2, one degree of freedom
    assert st.replicate_sd == pytest.approx(np.log10(4.0) / np.sqrt(2.0)) and st.spread_scale == "log10"
    assert ("spread of replicate wells (a compound twice or more on one plate): sd 0.43 log10 units (a factor 2.7), "
            "in IC50 (nM)") in st.text()
    assert "spread of the control wells (within a plate): sd" in st.text() and st.to_dict()["unit"] == "IC50 (nM)"
    rows = compound_table(camp)
    for k, cid in enumerate(ids):  # the geometric mean of the two wells
        assert rows[camp.compound_ids.index(cid)]["mean_readout"] == pytest.approx(200.0 * (k + 1))
    assert "geomean_readout (IC50 in nM)" in header(camp.readout)
    camp.close()

    lib = synthetic_library(K=30, d=3)
    camp = Campaign.create(tmp_path / "p.campaign", lib, "glgape", {"epsilon": 0.1}, seed=2,
                           layout=PlateLayout.build("24", replicates=2),
                           readout=Readout.build("percent inhibition", unit="%", hit_above=50.0))
    plate = camp.next_plate(None, tmp_path / "Q001.csv")
    values = {cid: [10.0 * k, 10.0 * k + 2.0] for k, cid in enumerate(sorted(set(plate.compound_ids)))}
    camp.record(_fill(plate.path, values, tmp_path / "S.csv", controls=(100.0, 0.0), noise=2))
    st = camp.status()
    assert st.replicate_sd == pytest.approx(np.sqrt(2.0)) and st.spread_scale == "linear"
    assert "spread of replicate wells (a compound twice or more on one plate): sd 1.41, in percent inhibition (%)" \
        in st.text()
    assert "mean_readout (percent inhibition in %)" in header(camp.readout)
    camp.close()


def test_status_says_the_certificate_then_its_model_check_then_the_forecast(tmp_path):
    """What the data certify reads as the certificate's sentence per recommended compound (about the hit rate,
    with the confidence and the model), the model check right after it and the forecast of plates left after
    that, all together in status and in the report's page."""
    from campaign_util import new_campaign, write_results

    from screenbai.campaign.views.page import write_report

    camp = new_campaign(tmp_path / "c.campaign", "log-tas", {"epsilon": 0.3}, K=20, d=2, seed=1)
    assay = Assay(camp.features, seed=2)
    for k in range(3):
        plate = camp.next_plate(20)
        camp.record(write_results(tmp_path / f"p{k}.csv", plate, assay(plate.arms)))
    st = camp.status()
    assert not st.done  # a running screen: its status forecasts the plates left
    text = st.text()
    sentence = st.certificate["sentences"][0]
    leader = st.recommendation[0].compound_id
    assert sentence.startswith(f"{leader}: ")
    if st.certified_epsilon < 1:
        from screenbai.bandits.certainty.certificate import epsilon_text  # rounded up: never more than certified

        assert f"within {epsilon_text(st.certified_epsilon)} of the best hit rate, 95 % confidence, under the " \
            "logistic model on these features" in sentence
    lines = text.splitlines()
    at = {key: next(i for i, s in enumerate(lines) if s.startswith(key))
          for key in ("certificate, true whenever you stop", "model check:", "forecast:")}
    assert lines[at["certificate, true whenever you stop"] + 1] == f"  {sentence}"
    assert at["certificate, true whenever you stop"] < at["model check:"] < at["forecast:"]
    assert "the stopping rule fires once it is at most epsilon = 0.3" in text and st.stop_epsilon == 0.3
    low, high = st.to_dict()["forecast_band_plates"]  # the band: draws of the estimate and the run's chance
    assert st.to_dict()["forecast_band_level"] == 0.8
    assert low <= high and (f"({low:.0f} to {high:.0f} plates in 80 % of runs if the model fitted so far holds: 5 "
                            "draws of its uncertainty (200 for log-tas's own wells) and the run's own chance)") in text
    assert st.to_dict() == camp.status().to_dict()  # seeded: the same outcomes, the same band
    page = write_report(camp, tmp_path / "report").read_text()
    block = page[page.index("<h2>What the outcomes certify</h2>"):page.index("<h2>Recommendation</h2>")]
    assert html.escape(sentence) in block and "model check" in block and "forecast" in block
    rec = st.recommendation[0]  # the observed rate as counted: "12 of 12 hits: 1 [...]", never "> 0.999" for 1
    if rec.tests:
        assert f"<td>{rec.total:.0f} of {rec.tests} hits: " in page
    camp.close()


def test_a_final_answer_never_tested_says_so(tmp_path):
    """A run can stop on the model alone (lin-tas after its first plate, the leader extrapolated): the final
    recommendation of a compound with no test says to test it before acting on it."""
    import dataclasses

    from campaign_util import new_campaign

    camp = new_campaign(tmp_path / "c.campaign", "log-tas", {"epsilon": 0.3}, K=20, d=2, seed=1)
    st = camp.status()
    line = dataclasses.replace(st.recommendation[0], tests=0, observed=None, observed_ci=None)
    final = dataclasses.replace(st, done=True, stopped=True, recommendation=[line], tests_at_stop=0,
                                model_only=[line.compound_id])
    assert "never tested: the answer rests on the model's extrapolation alone" in final.text()
    assert f"WARNING: {line.compound_id} never tested" in "\n".join(final.certainty_lines())  # beside the certificate
    assert "forecast of plates left: none, the run has finished" in final.text()
    # a finished run with many compounds still "in contention" says why it stopped all the same
    many = dataclasses.replace(final, in_contention=632, certified_epsilon=0.022)
    assert "still in contention: 632 compounds (" in many.text() and "the run has finished all the same: none of " \
        "them beats the recommendation by more than the certified epsilon below, 0.022" in many.text()
    assert "finished all the same" not in dataclasses.replace(many, done=False).text()
    # a continuous readout's certified epsilon is a gap in its unit
    cont = dataclasses.replace(final, outcome="continuous", unit="percent inhibition (%)", certified_epsilon=3.3,
                               certificate={"sentences": []})
    assert "(certified epsilon, a gap in mean percent inhibition (%): 3.3;" in cont.text()
    assert "never tested" not in dataclasses.replace(final, done=False).text()
    camp.close()


def test_lin_tas_stopping_on_the_model_alone_says_so_in_status_report_and_export(tmp_path):
    """lin-tas can stop after its first plate recommending a compound never tested (its guarantee allows it);
    status, its JSON, the report and the export said so only as a bare warning or not at all (the export's
    status read "recommended (final)"): each now says the answer rests on the model alone and suggests
    confirmation wells beside the best compound tested."""
    from campaign_util import write_results

    from screenbai.campaign.views.export import export
    from screenbai.campaign.views.page import write_report

    lib = synthetic_library(K=200, d=3, seed=0)
    camp = Campaign.create(tmp_path / "lt.campaign", lib, "lin-tas", {"epsilon": 0.5, "sigma": 0.1}, seed=1,
                           outcome="continuous")
    theta = np.array([3.0, -2.0, 1.0, 0.0])
    plate = camp.next_plate(24)
    values = lib.features[np.asarray(plate.arms)] @ theta + np.random.default_rng(0).normal(0, 0.1, len(plate))
    camp.record(write_results(tmp_path / "p.csv", plate, [f"{v:.3f}" for v in values]))
    assert camp.policy.done
    st = camp.status()
    leader = st.recommendation[0].compound_id
    assert st.recommendation[0].tests == 0 and st.model_only == [leader]  # the case at hand
    tested = sorted(set(plate.arms))
    means = {a: float(np.mean([v for b, v in zip(plate.arms, values) if b == a])) for a in tested}
    best = camp.compound_ids[max(means, key=lambda a: means[a])]
    warning = next(x for x in st.certainty_lines() if x.startswith("WARNING"))
    assert f"WARNING: {leader} never tested: the answer rests on the model's extrapolation alone from the " \
        f"{len(tested)} compounds tested" in warning
    assert f"Confirm it in the lab before acting on it: test it in a few wells (3 or more) beside the best " \
        f"compound tested, {best} (observed " in warning
    assert st.to_dict()["model_only"] == [leader] and st.to_dict()["best_tested"]["compound_id"] == best
    page = write_report(camp, tmp_path / "report").read_text()
    assert html.escape(warning) in page and "<b>never tested</b>: the model alone; confirm it in the lab" in page
    out = tmp_path / "export"
    out.mkdir()
    export(camp, out)
    with open(out / "lt.csv", newline="") as fh:
        first = next(csv.DictReader(fh))
    assert first["compound_id"] == leader and first["status"] == (
        "recommended (final; never tested: rests on the model alone, confirm it in the lab before acting on it)")
    camp.close()


def test_a_certificate_from_the_compound_s_own_wells_is_not_said_to_rest_on_the_model(tmp_path):
    """log-tas's own wells certify with no model; status then printed the certificate "under no model" and, right
    below, "model (the certificate ... hold(s) under it)" and "a certificate holds only if the model does", and
    a rejected model's check called the certificate unproven. Each line now says the certificate needs none."""
    import dataclasses

    from campaign_util import new_campaign

    from screenbai.bandits.certainty.model_check import MODEL_ASSUMED

    camp = new_campaign(tmp_path / "c.campaign", "log-tas", {"epsilon": 0.3}, K=20, d=2, seed=1)
    st = camp.status()
    camp.close()
    cert = {"model": "no model: the compound's own wells alone", "sentences": ["CPD0001: within 0.02 ..."]}
    check = {"n_tests": 700, "n_arms": 22, "rejected": False, "tests": [{"name": "x"}], "p_value": 0.8, "note": None,
             "warning": None}
    free = dataclasses.replace(st, certified_epsilon=0.02, certificate=cert, model_check=check,
                               model="log-tas models hits with a logistic model")
    text = free.text()
    assert "model (it chose the wells; the certificate above does not rest on it: the compound's own wells do)" in text
    assert "the certificate above needs no model: the compound's own wells certify it)" in text
    assert "a certificate holds only if the model does" not in text
    rejected = dataclasses.replace(free, model_check={**check, "rejected": True,
                                                      "warning": f"WARNING: misfit. {MODEL_ASSUMED}"})
    assert "treat it as unproven" not in rejected.text() and MODEL_ASSUMED not in rejected.text()
    assert "The certificate above rests on the compound's own wells, not on this model, and stands" in rejected.text()
    said = rejected.to_dict()["model_check"]["warning"]  # the JSON words it as the text (it called it unproven)
    assert MODEL_ASSUMED not in said and "rests on the compound's own wells" in said
    on_model = dataclasses.replace(rejected, certificate={**cert, "model": "the logistic model on these features"})
    assert "model (the certificate and the stopping rule's guarantee hold under it)" in on_model.text()
    assert "certificate, true whenever you stop if its model holds, which the model check below rejects" \
        in on_model.text()
    # the every-compound own wells' certificate (certainty/no_model.py): not beside the leader's own wells; beside
    # a model the check rejects, and within the epsilon asked, it says the lab may stop on it
    wells = {"model": "no model: each compound's own wells alone", "sentences": ["CPD0001: within 0.04 (wells)"]}
    both = dataclasses.replace(rejected, certified_epsilon_no_model=0.04, certificate_no_model=wells, stop_epsilon=0.1)
    assert "certificate without a model" not in both.text()
    lines = dataclasses.replace(both, certificate=on_model.certificate).text()
    assert "certificate without a model, true whenever you stop (each compound's own wells; certified epsilon 0.04; " \
        "it is at most epsilon = 0.1: the compounds' own wells alone back the recommendation, so you may stop on it " \
        "whatever the model check says):\n  CPD0001: within 0.04 (wells)" in lines
    wide = dataclasses.replace(both, certificate=on_model.certificate, certified_epsilon_no_model=0.3)
    assert "certified epsilon 0.3):" in wide.text() and "you may stop" not in wide.text()


def test_status_says_the_stopping_rule_s_second_route(tmp_path):
    """log-tas also stops when the leader's own wells certify it (merged from main): status read "4,865 rivals not
    yet ruled out ... it fires when none is left" beside a forecast of one more plate, with no word of the route
    that forecast took. GLGapE has no such route and says none."""
    import dataclasses

    from campaign_util import new_campaign

    from screenbai.campaign.views.status import _second_route

    camp = new_campaign(tmp_path / "c.campaign", "log-tas", {"epsilon": 0.3}, K=20, d=2, seed=1)
    route = _second_route(camp.policy)
    st = dataclasses.replace(camp.status(), done=False, stop_index=5.0, stop_threshold=0.0, stop_name="rivals:",
                             second_route=route)
    camp.close()
    assert "5, it fires when none is left; or sooner, without a model, once a compound's own wells show its hit " \
        "rate is at least 1 - epsilon = 0.7 (the forecast takes this route too)" in st.text()
    other = new_campaign(tmp_path / "g.campaign", "glgape")
    assert _second_route(other.policy) is None and other.status().second_route is None
    other.close()


def test_hit_rates_near_the_ends_are_not_rounded_to_certainty():
    """status and the report printed a model's extrapolation to an untested compound as "hit rate 1 [1, 1]"."""
    from screenbai.campaign.views.estimates import rate_text

    assert [rate_text(p) for p in (0.99999, 0.998, 0.5, 0.0123, 1e-5, 0.0)] == \
        ["> 0.999", "0.998", "0.5", "0.0123", "< 0.001", "0"]


def _gse_log_screen(tmp_path, budget: int, misspecified: bool):
    """A gse-log campaign (it spreads its tests) on 20 compounds, plates of 48 until its budget is spent: outcomes
    from the logistic model, or (misspecified) every other compound always a hit whatever its features. Returns
    the campaign and the tests told."""
    from campaign_util import new_campaign, write_results

    camp = new_campaign(tmp_path / "c.campaign", "gse-log", {"budget": budget}, K=20, d=2, seed=1)
    assay = Assay(camp.features, seed=2)
    told = 0
    for k in range(40):
        if camp.policy.done:
            break
        plate = camp.next_plate(48, force=True)
        values = [int(a % 2 == 0) for a in plate.arms] if misspecified else assay(plate.arms)
        camp.record(write_results(tmp_path / f"p{k}.csv", plate, values))
        told += len(plate)
    return camp, told


@pytest.mark.parametrize("misspecified", [False, True])
def test_status_checks_the_model_the_certificate_rests_on(tmp_path, misspecified):
    """status carries the model check beside the certificate: outcomes drawn from the logistic model
    pass; outcomes that ignore the features (every other compound always a hit) are rejected with a
    warning in the text and the JSON."""
    camp, told = _gse_log_screen(tmp_path, 480, misspecified)
    st = camp.status()
    check = st.to_dict()["model_check"]
    assert check is not None and check["n_tests"] == told > 300
    assert check["rejected"] is misspecified
    assert ("model check: WARNING" in st.text()) is misspecified
    # the certificate's header says it is only as true as its model ("true whenever you stop" alone misread);
    # gse-log gives none, so one is put beside this model check
    import dataclasses

    certified = dataclasses.replace(st, certified_epsilon=0.2, certificate={"sentences": ["CPD0001: within 0.2"]})
    assert ("certificate, true whenever you stop if its model holds, which the model check below rejects: treat "
            "it as unproven (certified epsilon" in certified.text()) is misspecified
    camp.close()


@pytest.mark.parametrize("misspecified", [False, True])
def test_status_adds_the_own_wells_certificate_that_needs_no_model(tmp_path, misspecified):
    """Beside the model's certificate, status gives the one every compound's own wells make under no model
    (certainty/no_model.py), from the campaign's own counts; where the model check rejects the model the text
    shows it even before it says much, and says so when it is within the epsilon asked."""
    from screenbai.bandits.certainty.no_model import anytime_intervals

    camp, _ = _gse_log_screen(tmp_path, 960, misspecified)
    st = camp.status()
    out = st.to_dict()
    n, s, _, _ = camp.observations()
    i = camp.compound_ids.index(st.recommendation[0].compound_id)
    lo, hi = anytime_intervals(s, n, 0.05 / camp.K)
    expected = max(0.0, max(h for j, h in enumerate(hi) if j != i) - lo[i])
    assert out["certified_epsilon_no_model"] == pytest.approx(expected)
    assert out["certificate_no_model"]["model"].startswith("no model")
    assert out["model_check"]["rejected"] is misspecified
    text = st.text()
    shown = "certificate without a model, true whenever you stop" in text
    assert shown is bool(misspecified or expected < 0.999)
    if misspecified:  # the even compounds always hit: the leader's own wells show it near 1, every odd one near 0
        assert expected < 0.25
        assert out["certificate_no_model"]["sentences"][0] in text
    camp.close()


def test_backtest_reads_hit_rates_from_the_library_s_own_csv(tmp_path, capsys):
    """`campaign backtest --library lib.csv --rate-column rate` (no --truth: the library holds the rates) read the
    CSV as the workflow's parquet and failed with "Parquet magic bytes not found"."""
    from screenbai.cli import main

    lib = tmp_path / "lib.csv"
    smiles = ["CCO", "CCN", "CCC", "c1ccccc1", "CC(=O)O", "CCOC", "CNC", "CCCl"]
    rates = [0.1, 0.2, 0.95, 0.3, 0.4, 0.2, 0.1, 0.5]
    rows = ["id,smiles,rate"] + [f"C{i},{smi},{r}" for i, (smi, r) in enumerate(zip(smiles, rates))]
    lib.write_text("\n".join(rows) + "\n")
    base = ["campaign", "backtest", "--library", str(lib), "--id-column", "id", "--smiles-column", "smiles", "--d", "3",
            "--param", "epsilon=0.1", "--param", "delta=0.05", "--plate-size", "24", "--max-tests", "48"]
    assert main(base + ["--rate-column", "rate", "--out", str(tmp_path / "bt")]) == 0
    report = json.loads((tmp_path / "bt" / "backtest.json").read_text())
    assert report["tests"] == 48 and "rate = rate" in report["description"]
    # a ChEMBL export or an SDF holds no rates: said, with what to do
    export = Path(__file__).parents[1] / "data" / "cdk2_chembl301_webexport_raw.csv.gz"
    capsys.readouterr()
    assert main(["campaign", "backtest", "--library", str(export), "--rate-column", "r", "--out",
                 str(tmp_path / "b2")]) == 2
    assert "not from a ChEMBL export; give the rates in a CSV/TSV with --truth" in capsys.readouterr().err
    sdf = tmp_path / "lib.sdf"
    sdf.write_text("")
    assert main(["campaign", "backtest", "--library", str(sdf), "--rate-column", "r", "--out",
                 str(tmp_path / "b3")]) == 2
    assert "not from an SDF; give the rates in a CSV/TSV with --truth" in capsys.readouterr().err


def test_backtest_compares_a_readout_where_larger_is_a_hit_on_its_own_scale(tmp_path, capsys):
    """`backtest --library lib.csv --activity-column pct --hit-above --threshold 50` (the library holds the readout)
    curated the column as IC50s in nM, lower the better: --hit-above was ignored. It now reads the readout as it is;
    a pIC50 column without --hit-above is refused with the way (it would be read as nM, the best as the weakest),
    and --hit-above with a ChEMBL export (IC50s) is refused."""
    from screenbai.cli import main

    lib = tmp_path / "lib.csv"
    smiles = ["CCO", "CCN", "CCC", "c1ccccc1", "CC(=O)O", "CCOC", "CNC", "CCCl"]
    pct = [5, 10, 97, 20, 30, 15, 8, 40]  # C2 the only hit above 50
    rows = ["id,smiles,pct,pIC50"] + [f"C{i},{smi},{v},{5 + v / 20}" for i, (smi, v) in enumerate(zip(smiles, pct))]
    lib.write_text("\n".join(rows) + "\n")
    base = ["campaign", "backtest", "--library", str(lib), "--id-column", "id", "--smiles-column", "smiles", "--d", "3",
            "--param", "epsilon=0.1", "--param", "delta=0.05", "--plate-size", "24", "--max-tests", "48",
            "--noise", "0"]
    assert main(base + ["--activity-column", "pct", "--hit-above", "--threshold", "50",
                        "--out", str(tmp_path / "a")]) == 0
    report = json.loads((tmp_path / "a" / "backtest.json").read_text())
    assert "> 50" in report["description"] and "1 of 8" in report["description"]
    capsys.readouterr()
    assert main(base + ["--activity-column", "pIC50", "--threshold", "9", "--out", str(tmp_path / "b")]) == 2
    assert "names logarithmic values (pIC50, pKi, ...), and without --hit-above" in capsys.readouterr().err
    assert main(base + ["--activity-column", "pIC50", "--hit-above", "--threshold", "9", "--out",
                        str(tmp_path / "c")]) == 0
    export = Path(__file__).parents[1] / "data" / "cdk2_chembl301_webexport_raw.csv.gz"
    capsys.readouterr()
    assert main(["campaign", "backtest", "--library", str(export), "--hit-above", "--threshold", "50", "--out",
                 str(tmp_path / "d")]) == 2
    assert "this file's activities are IC50s (lower is better); drop --hit-above" in capsys.readouterr().err


def test_backtest_prints_a_true_hit_rate_near_1_as_above_0_999_not_as_1():
    """With noisy tests no compound's hit rate is exactly 1, yet the backtest printed "true hit rate 1" for
    the 284 CDK2 compounds at or below 12 nM (threshold 1 000 nM), read as a certain hit."""
    from screenbai.campaign.backtest import BacktestResult

    curve = {"tests": [0, 96], "campaign": [0.0, 0.1], "random": [0.0, 0.1], "one_shot": [0.0, 0.1]}
    row = {"compound_id": "C1", "smiles": "CCO", "rate": 0.99999, "rate_rank": 1, "rate_rank_tied_to": 3, "K": 50,
           "activity_nM": None, "activity_label": "nM", "potency_rank": None, "potency_rank_tied_to": None}
    text = BacktestResult(96, 1, False, False, [row], curve, 10, "toy").text()
    assert "recommended C1: true hit rate > 0.999 (tied for ranks 1-3 of 50: 3 compounds equal)" in text


def test_status_and_init_forecast_with_the_exact_bound_on_a_small_library(tmp_path):
    from screenbai.bandits.certainty.forecast import BOUNDS
    from screenbai.campaign.views.forecast import prior_cost

    lib = synthetic_library(K=20, d=2)
    camp = Campaign.create(tmp_path / "c.campaign", lib, "log-tas", {"epsilon": 0.1}, seed=3,
                           layout=PlateLayout.build("24"))
    assert BOUNDS["exact"] in " ".join(prior_cost(camp))
    assay = Assay(lib.features, seed=1)
    plate = camp.next_plate(None)
    camp.record(_results(tmp_path, plate, assay(plate.arms), "a"))
    st = camp.status()
    assert st.forecast_bound == "exact" and st.forecast_tests is not None
    assert f"with T* from {BOUNDS['exact']}" in st.text()
    camp.close()


def test_the_wells_route_of_each_draw_goes_to_the_compound_the_estimate_ranks_first():
    """status's band: the own wells go to the estimate's leader whatever a draw of theta says. Under a draw that
    puts it below the bar its wells fail (the wells planned for it are lost), and the route starts again on the
    draw's own leader; under a draw where it passes, it is certified at the draw's rate. Without the estimate
    (init's prior draws) each draw's own leader is its route. The plate size reaches the route."""
    from screenbai.campaign.views.forecast import _shortcut

    class Wells:  # a stand-in for log-tas's own wells: 10 / (mean - 0.9) wells, once started at `done`
        def stopping_shortcut(self, answer, means, done, plate=None, rng=None):
            mean = float(np.ravel(means)[0])
            if mean <= 0.9:
                return math.inf
            tests = 10.0 / (mean - 0.9)
            return done + (tests if plate is None else plate * math.ceil(tests / plate - 1e-9))

    logit = lambda p: math.log(p / (1 - p))  # noqa: E731
    X = np.eye(2)
    estimate = np.array([logit(0.95), logit(0.6)])  # compound 0 first, at 0.95: 200 wells
    route = _shortcut(Wells(), X, "logistic", 100.0, 100, pick=estimate)
    assert route(estimate) == pytest.approx(100 + 200)
    assert route(np.array([logit(0.92), logit(0.6)])) == pytest.approx(100 + 500)  # it passes, at its draw's rate
    fails = np.array([logit(0.85), logit(0.98)])  # compound 0 below the bar: its 200 wells lost, then compound 1
    assert route(fails) == pytest.approx(100 + 200 + 200)  # 125 wells: two plates
    assert _shortcut(Wells(), X, "logistic", 100.0, 100)(fails) == pytest.approx(100 + 200)  # no estimate: its own
    assert route(np.array([logit(0.85), logit(0.7)])) == math.inf  # no compound passes: the likelihood-ratio route


def test_status_says_when_its_forecast_counts_on_the_wells_of_an_untested_compound(tmp_path):
    """After plate 1 of the README's recipe the forecast's point is often the own wells of the compound the
    estimate ranks first, never tested (seeds 6, 7 and 12 on CDK2: it was below the bar, the runs took 5-7 plates
    against 2 forecast). status names it, and only where the point is that route and the compound untested."""
    import dataclasses

    from screenbai.campaign.views.forecast import _shortcut, _untested_start, top_answer

    class Wells:  # the stand-in of test_the_wells_route_of_each_draw_...: 10 / (mean - 0.9) wells
        m = 1

        def stopping_shortcut(self, answer, means, done, plate=None, rng=None):
            mean = float(np.ravel(means)[0])
            return math.inf if mean <= 0.9 else done + plate * math.ceil(10.0 / (mean - 0.9) / plate - 1e-9)

    logit = lambda p: math.log(p / (1 - p))  # noqa: E731
    X = np.eye(3)

    def untested(theta, n, point):
        cap = _shortcut(Wells(), X, "logistic", 100.0, 100, pick=theta)(theta)
        return _untested_start(top_answer(X, theta, 1), cap, point, np.asarray(n, dtype=float))

    theta = np.array([logit(0.6), logit(0.95), logit(0.5)])  # 1 first, at 0.95: 200 wells, 2 plates of 100
    route = 100.0 + 200.0
    assert untested(theta, [5, 0, 5], route) == [1]  # compound 1 has no outcome
    assert untested(theta, [5, 1, 5], route) == []  # tested
    assert untested(theta, [5, 0, 5], 250.0) == []  # the likelihood-ratio set's route is sooner: no wells counted on
    assert untested(np.array([logit(0.6), logit(0.85), logit(0.5)]), [5, 0, 5], 900.0) == []  # below the bar

    # the sentence, beside the forecast (one compound, or several for top-m)
    path = tmp_path / "c.campaign"
    c = Campaign.create(path, synthetic_library(20, 2), "log-tas", {"epsilon": 0.1}, seed=1)
    plate = c.next_plate(20)
    c.record(_results(tmp_path, plate, Assay(c.features, seed=2)(plate.arms), "a"))
    st = c.status()
    c.close()
    # the leader was tested on plate 1 (7 of its 20 wells): no such sentence
    assert st.forecast_tests is not None and st.forecast_untested == [] and "not tested yet: the model" not in st.text()
    one = dataclasses.replace(st, forecast_untested=["CPD-7"])
    assert "counts on the own wells of CPD-7, not tested yet: the model's hit rate for it" in one.text()
    two = dataclasses.replace(st, forecast_untested=["CPD-7", "CPD-9"])
    assert "of CPD-7, CPD-9, not tested yet: the model's hit rate for them" in two.text()
    assert one.to_dict()["forecast_untested"] == ["CPD-7"]


def test_restart_hands_the_screen_to_another_algorithm(tmp_path, capsys):
    """Where the model is wrong, log-tas's sampling follows it and its certificate is unproven; `campaign restart`
    could only restart the same algorithm. `--algorithm kl-lucb` now hands the screen to an algorithm that needs
    no model of the features: it starts from every outcome recorded, keeps the question's epsilon and delta, is
    replayed from the file like any step, and status and the guarantee say what happened (each algorithm's delta
    adds up)."""
    from campaign_util import new_campaign, write_results

    from screenbai.campaign import Campaign
    from screenbai.campaign.state.store import encode_state
    from screenbai.campaign.views.page import write_report
    from screenbai.cli import main

    path = tmp_path / "c.campaign"
    camp = new_campaign(path, "log-tas", {"epsilon": 0.1, "delta": 0.04}, K=12, d=2, seed=1)
    rng = np.random.default_rng(5)

    def run(c, plates, tag):  # outcomes that ignore the features: compound 4 hits at 0.9, the others at 0.2
        for k in range(plates):
            if c.policy.done:
                break
            plate = c.next_plate(48, force=True)
            c.record(write_results(tmp_path / f"{tag}{k}.csv", plate,
                                   [int(rng.random() < (0.9 if a == 4 else 0.2)) for a in plate.arms]))

    run(camp, 2, "a")
    n_before = camp.observations()[0].copy()
    camp.close()
    refused = {"give --algorithm too": ["--param", "delta=0.01"], "screenbai algorithms": ["--algorithm", "no-such"],
               "fixed-budget": ["--algorithm", "gse-log"], "delta": ["--algorithm", "kl-lucb", "--param", "delta=2"]}
    for why, bad in refused.items():
        assert main(["campaign", "restart", str(path), *bad]) == 2
        assert why in capsys.readouterr().err
    with Campaign.open(path) as c:  # each refusal changed nothing
        assert c.algorithm == "log-tas" and c.policy.result().n_samples == 96
    assert main(["campaign", "restart", str(path), "--algorithm", "kl-lucb", "--reason", "model rejected"]) == 0
    out = capsys.readouterr().out
    assert "log-tas handed over to kl-lucb, which starts from the 96 outcomes recorded" in out
    assert "errs with probability at most 0.08, the sum of each algorithm's delta" in out
    with Campaign.open(path) as c:
        assert c.algorithm == "kl-lucb" and c.meta["params"] == {"epsilon": 0.1, "delta": 0.04}
        assert c.policy.result().n_samples == 96 and (c.observations()[0] == n_before).all()
        run(c, 1, "b")
        state_mid = encode_state(c.policy.state_dict())
        mid = c.status()
        assert encode_state(c.policy.state_dict()) == state_mid  # the simulations ran on copies
        with pytest.MonkeyPatch.context() as mp:  # a median run past the cap: said so, no number
            mp.setattr("screenbai.campaign.views.forecast.SIMULATED_CAP", 5)
            capped = c.status()
            capped_text = capped.text()
        run(c, 40, "c")
        assert c.policy.done
        best = c.policy.result().recommendation
        st = c.status()
        text, tests = st.text(), st.tests
        state = c.policy.state_dict()
    assert list(best) == [4]
    # mid-run: how far the stop is (its certified epsilon against epsilon), a forecast simulated from its state (it
    # leaves the policy as it was), contention from each compound's own wells, the features' fit called descriptive
    assert not mid.done and mid.stop_index == pytest.approx(mid.certified_epsilon) and mid.stop_threshold == 0.1
    assert mid.stop_index > 0.1 and "the certified epsilon of its answer (each compound's own wells) is" in mid.text()
    assert mid.forecast_bound == "simulation" and mid.forecast_plates >= 1 and mid.forecast_tests >= 1
    assert "runs of kl-lucb simulated from its current state" in mid.text()
    assert mid.tests + mid.forecast_tests <= 2 * tests and tests <= 3 * (mid.tests + mid.forecast_tests)
    assert "from each compound's own wells, still reaches the leader's" in mid.text()
    assert capped.forecast_tests == math.inf and capped.to_dict()["forecast_plates"] is None
    assert "forecast: more than 5 more tests: most of 9 runs of kl-lucb simulated" in capped_text
    # its sentence whole: "most of 9 runs ...; it tends to run long early (docs/certificate.md) had not stopped"
    assert ("each with its own chance, had not stopped after that many (a close race at the top, or a long list to "
            "test); the forecast tends to run long early (docs/certificate.md)") in capped_text
    assert "a logistic fit of the features (descriptive: kl-lucb uses no model of them)" in mid.text()
    assert "kl-lucb (epsilon=0.1, delta=0.04)" in text and "log-tas handed over to kl-lucb (epsilon=0.1, delta=0.04) " \
        "(model rejected), which started from the 96 outcomes recorded before" in text
    assert "CPD0004: within" in text and "under no model: each compound's own wells alone" in text
    assert "model check" not in text and "certificate without a model" not in text  # it is the certificate
    assert "kl-lucb takes each compound's 0/1 outcomes on their own, with no model of the features" in text
    with Campaign.open(path, use_snapshot=False) as c:  # the log replayed from the start gives the same screen
        assert c.policy.result().n_samples == tests and c.policy.result().recommendation == best
        assert encode_state(c.policy.state_dict()) == encode_state(state)
    Campaign.repair(path)
    with Campaign.open(path) as c:
        assert c.algorithm == "kl-lucb" and c.policy.result().recommendation == best
        write_report(c, tmp_path / "report")
    assert "handed to kl-lucb" in (tmp_path / "report" / "progress.svg").read_text()


def test_a_continuous_readout_is_handed_to_an_algorithm_for_it_with_the_choices_named(tmp_path):
    """KL-LUCB models 0/1 outcomes: a screen of a continuous readout was refused with init's wording ("use --outcome
    binary"), which no restart can do. The refusal now names the campaign and the algorithms that fit; one of them
    takes over."""
    from screenbai.campaign.state.changes import restart_algorithm

    lib = synthetic_library(K=10, d=2)
    camp = Campaign.create(tmp_path / "c.campaign", lib, "lin-tas", {"epsilon": 0.1}, seed=1, outcome="continuous")
    with pytest.raises(ValueError) as refused:
        restart_algorithm(camp, "model rejected", "kl-lucb")
    assert f"{camp.path} records a continuous readout" in str(refused.value)
    assert "lucb or ugape (with --param sigma=" in str(refused.value) and "--outcome" not in str(refused.value)
    assert camp.algorithm == "lin-tas"
    restart_algorithm(camp, "model rejected", "lucb", {"sigma": 2.0})
    assert camp.algorithm == "lucb" and camp.meta["params"]["sigma"] == 2.0
    # status then says the model is LUCB's (it said "lucb models ... with a linear-Gaussian model of the features")
    model = camp.status().model
    camp.close()
    assert model.startswith("lucb takes each compound's outcomes on its own, with no model of the features")
    assert "linear-Gaussian" not in model


def test_status_points_to_a_model_free_algorithm_where_the_model_check_rejects_the_model(tmp_path):
    import dataclasses

    from campaign_util import new_campaign

    camp = new_campaign(tmp_path / "c.campaign", "log-tas", {"epsilon": 0.1}, K=20, d=2, seed=1)
    st = dataclasses.replace(camp.status(), tests=700)
    camp.close()
    check = {"n_tests": 700, "n_arms": 20, "rejected": True, "tests": [{"name": "x"}], "p_value": 1e-4, "note": None,
             "warning": "WARNING: misfit."}
    hint = f"to finish without the model: `screenbai campaign restart {st.path} --algorithm kl-lucb`"
    assert hint in dataclasses.replace(st, model_check=check).text()
    assert hint not in dataclasses.replace(st, model_check={**check, "rejected": False}).text()
    assert hint not in dataclasses.replace(st, model_check=check, done=True).text()
    own = {"model": "no model: the compound's own wells alone", "sentences": []}
    assert hint not in dataclasses.replace(st, model_check=check, certified_epsilon=0.05, certificate=own).text()
    # a continuous readout: KL-LUCB, which takes 0/1 outcomes, would be refused; LUCB with the readout's noise scale
    text = dataclasses.replace(st, model_check=check, outcome="continuous").text()
    assert hint not in text
    assert (f"to finish without the model: `screenbai campaign restart {st.path} --algorithm lucb --param "
            "sigma=<the readout's noise scale>` hands the screen to LUCB") in text


def test_the_export_gives_a_readout_s_observed_mean_its_interval(tmp_path):
    """A continuous screen's export left observed_low and observed_high empty for tested compounds. From two wells on
    they hold Student's 95 % interval of the compound's mean (t with n - 1 degrees of freedom, by hand here); one
    well gives no interval (it says nothing of the spread)."""
    from scipy.stats import t as student

    from screenbai.campaign.views.export import compound_table

    lib = synthetic_library(K=12, d=2)
    camp = Campaign.create(tmp_path / "c.campaign", lib, "lin-tas", {"epsilon": 0.1, "sigma": 5.0}, seed=1,
                           outcome="continuous")
    plate = camp.next_plate(6)
    values = [10.0, 14.0, 30.0, 31.0, 33.0, 7.0][: len(plate)]
    camp.record(_results(tmp_path, plate, values, "a"))
    by_arm: dict[int, list[float]] = {}
    for arm, v in zip(plate.arms, values):
        by_arm.setdefault(int(arm), []).append(v)
    rows = compound_table(camp)
    camp.close()
    checked = 0
    for arm, vals in by_arm.items():
        row = rows[arm]
        assert row["observed_rate"] == pytest.approx(np.mean(vals))
        if len(vals) == 1:
            assert row["observed_low"] is None and row["observed_high"] is None
            continue
        half = student.ppf(0.975, len(vals) - 1) * np.std(vals, ddof=1) / np.sqrt(len(vals))
        mean = np.mean(vals)
        assert (row["observed_low"], row["observed_high"]) == pytest.approx((mean - half, mean + half))
        checked += 1
    assert all(r["observed_low"] is None for r in rows if r["tests"] == 0)
    assert checked >= 2  # the spanning set repeated to fill the plate: each compound in two wells


def test_replicate_wells_of_equal_values_spread_by_zero():
    """Three wells of 12.3 gave 'sd 2.04e-14' (their mean is not 12.3 in floating point): equal values spread by 0."""
    from screenbai.campaign.lab.assay import pooled_deviations as _pooled

    assert _pooled([("P001", 0, 12.3)] * 3 + [("P001", 1, 0.1)] * 6) == (0.0, 7)
    ss, dof = _pooled([("P001", 0, 1.0), ("P001", 0, 3.0)])
    assert (ss, dof) == (2.0, 1)


def test_rage_s_first_plate_on_one_compound_is_counted_against_the_model_s_parameters(tmp_path, monkeypatch):
    """RAGE's first plate put its 24 wells on one compound, and status read "no misfit detected in 24 outcomes of 1
    compounds ... 1 compounds tested for 1 model parameters" for a model of 4. A phase's plates now follow its design
    (numerics.design.spread_order); the old order, arm after arm, is put back here to keep the case."""
    from campaign_util import write_results

    from screenbai.bandits.phased import elimination

    monkeypatch.setattr(elimination, "spread_order", lambda counts: np.repeat(np.arange(counts.size), counts))
    camp = Campaign.create(tmp_path / "r.campaign", synthetic_library(K=30, d=3), "rage", {"epsilon": 0.1}, seed=0)
    plate = camp.next_plate(24)
    assert len(set(plate.arms)) == 1
    camp.record(write_results(tmp_path / "R.csv", plate, [1, 0] * 12))
    text = camp.status().text()
    assert "outcomes of 1 compound (" in text
    assert "1 compound tested, which determines 1 of the model's 4 parameters" in text
    camp.close()


def test_a_readout_where_lower_is_better_is_shown_on_its_own_scale(tmp_path):
    """A continuous IC50 with --hit-below is told to the algorithm negated (larger is better for it); status, its
    JSON, the export and the plate file's 'why' showed the negated means: "model mean outcome -1.72e+03", "observed
    -1.94e+03", model_estimate -1717.9 beside geomean_readout 1940.5. They are in nM now, the export lowest first."""
    from campaign_util import write_results

    from screenbai.campaign.views.export import compound_table, handover_order

    camp = Campaign.create(tmp_path / "c.campaign", synthetic_library(K=30, d=3), "m-lingape",
                           {"epsilon": 10.0, "sigma": 50.0}, seed=0, outcome="continuous",
                           readout=Readout.build("IC50", unit="nM", hit_below=1000.0))
    plate = camp.next_plate(24)
    camp.record(write_results(tmp_path / "R.csv", plate, [100.0 * (a + 1) for a in plate.arms]))
    st = camp.status()
    for line in st.recommendation:
        assert line.model > 0 and line.model_ci[0] <= line.model <= line.model_ci[1]
        assert line.observed is None or (line.observed > 0 and line.observed_ci[0] <= line.observed)
    assert " -" not in st.text().split("recommendation (")[1]  # no negated mean printed
    rows = handover_order(compound_table(camp), -1.0)
    tested = [r for r in rows if r["tests"]]
    assert all(r["observed_rate"] == pytest.approx(r["mean_readout"]) and r["mean_readout"] > 0 for r in tested)
    assert all(r["model_low"] <= r["model_estimate"] <= r["model_high"] and r["model_estimate"] > 0 for r in rows)
    behind = [r["model_estimate"] for r in rows if r["status"] == "behind the leader"]
    assert behind == sorted(behind)  # the most potent first
    from screenbai.campaign.views.explain import why_chosen

    arm = plate.arms[0]
    # the 'why' column (an IC50 is told as log10 now: its mean is geometric)
    assert f"geometric mean {100.0 * (arm + 1):.3g}" in why_chosen(camp, camp.policy)(arm, 0, 1)
    camp.close()



def test_a_continuous_campaign_says_sigma_with_its_units(tmp_path, capsys):
    """A continuous campaign's sigma read "sigma = 15" in the certificate, the model check and init, and not at all
    in the model line: its units are the readout's, which the policies (bandits/) do not know ("sigma = 15 %"; a
    concentration told as log10, "sigma = 0.3 log10 units of IC50")."""
    import re

    from campaign_util import write_results

    from screenbai.cli import main

    camp = Campaign.create(tmp_path / "c.campaign", synthetic_library(K=30, d=3), "lin-tas",
                           {"epsilon": 10.0, "sigma": 15.0}, seed=0, outcome="continuous",
                           readout=Readout.build("percent inhibition", unit="%", hit_above=50.0))
    plate = camp.next_plate(24)
    camp.record(write_results(tmp_path / "R.csv", plate, [(7.0 * a) % 90 for a in plate.arms]))
    st = camp.status()
    said = [*st.certificate["sentences"], st.certificate["model"], st.model, st.model_check["model"]]
    assert all("sigma = 15 %" in line for line in said), said
    assert not re.search(r"sigma = 15(?! %)", st.text() + json.dumps(st.to_dict()))
    assert "its noise scale is its parameter sigma = 15 %: compare it with the control wells' spread" in st.text()
    camp.close()
    camp = _log_ic50_campaign(tmp_path, "log.campaign")
    plate = camp.next_plate(24)
    camp.record(write_results(tmp_path / "L.csv", plate, [_ic50_of(a) for a in plate.arms]))
    st = camp.status()
    assert all("sigma = 0.3 log10 units of IC50" in line
               for line in [*st.certificate["sentences"], st.model, st.model_check["model"]])
    assert not re.search(r"sigma = 0\.3(?! log10 units of IC50)", st.text())
    camp.close()
    lib = _lab_library(tmp_path)
    assert main(["campaign", "init", str(tmp_path / "i.campaign"), "--library", str(lib), "--id-column", "name",
                 "--smiles-column", "smiles", "--d", "3", "--outcome", "continuous", "--readout", "IC50", "--unit",
                 "nM", "--hit-below", "1000", "--param", "epsilon=0.3"]) == 0
    out = capsys.readouterr().out
    assert "its noise scale is its parameter sigma = 1 log10 units of IC50" in out  # the model line
    assert "noise scale: sigma = 1 log10 units of IC50, lin-tas's default, not declared" in out
    assert not re.search(r"sigma = 1(?! log10 units of IC50)", out)


def test_status_says_how_often_replicate_wells_of_0_1_outcomes_disagree(tmp_path):
    """A binary campaign without a declared readout (the lab writes 0/1) said "spread of replicate wells ... sd 0.407
    (the raw readout's units)": the sd of hits and misses. It now says how often two wells of one compound on one
    plate disagree, and of one kind of control; a declared readout keeps its spreads (test above)."""
    from screenbai.campaign.views.controls import disagreeing_pairs

    assert disagreeing_pairs([("P", 1, 1), ("P", 1, 0), ("P", 1, 1), ("P", 2, 0), ("Q", 2, 1), ("Q", 2, 1)]) == (2, 4)
    camp = Campaign.create(tmp_path / "b.campaign", synthetic_library(K=30, d=3), "glgape", {"epsilon": 0.1}, seed=2,
                           layout=PlateLayout.build("24", replicates=2))
    plate = camp.next_plate(None, tmp_path / "P001.csv")
    ids = sorted(set(plate.compound_ids))
    values = {cid: [1, k % 2] for k, cid in enumerate(ids)}  # every other compound's two wells disagree
    camp.record(_fill(plate.path, values, tmp_path / "R.csv", controls=(1, 0), noise=0))
    st = camp.status()
    split = sum(k % 2 == 0 for k in range(len(ids)))
    assert st.replicate_sd is None and st.control_sd is None
    assert st.replicate_disagree == [split, len(ids)] and st.to_dict()["replicate_disagree"] == [split, len(ids)]
    text = st.text()
    assert "spread of replicate wells" not in text and "raw readout's units" not in text
    assert (f"replicate wells (a compound twice or more on one plate): {split} of {len(ids)} pairs disagree "
            f"({100 * split / len(ids):.0f} %: one a hit, the other not)") in text
    assert "control wells of one kind on one plate: 0 of 12 pairs disagree (0 %" in text
    camp.close()

def test_positive_controls_on_the_wrong_side_stop_the_plate(tmp_path):
    """A plate read rotated 180 degrees (or with its control columns swapped) has positive controls reading like
    negative ones: Z' only compares their spread to their gap, so it passed (0.95) and every compound well was
    recorded against another compound. The plate is now refused like one failing Z', until the lab decides."""
    readout = Readout.build("percent inhibition", unit="%", hit_above=50.0)
    camp = Campaign.create(tmp_path / "c.campaign", synthetic_library(K=30, d=3), "glgape", {"epsilon": 0.1}, seed=2,
                           layout=PlateLayout.build("24"), readout=readout)
    plate = camp.next_plate(None, tmp_path / "P001.csv")
    values = {cid: 40.0 for cid in plate.compound_ids}
    swapped = _fill(plate.path, values, tmp_path / "R.csv", controls=(3.0, 95.0))
    with pytest.raises(ControlsFailed, match=r"plate P001: Z' = 0\.\d+, but its positive controls \(mean 3.* %\) read "
                       r"below its negative ones \(9.* %\), where a hit when percent inhibition >= 50 % makes the "
                       r"positive ones the hits: was the plate read rotated"):
        camp.record(swapped)
    assert camp.open_wells() == {"P001": len(plate)}
    assert camp.record(swapped, accept=True).n_outcomes == len(plate)  # the lab's decision
    camp.close()
    (tmp_path / "i").mkdir()
    ic50 = _ic50_campaign(tmp_path / "i")  # hit below: potent (low) positive controls are the right way round
    plate = ic50.next_plate(None, tmp_path / "i" / "P001.csv")
    ic50.record(_fill(plate.path, {c: 50.0 for c in plate.compound_ids}, tmp_path / "i" / "R.csv",
                      controls=(5.0, 5000.0), noise=1))
    ic50.close()


def test_a_handover_to_the_algorithm_running_with_its_settings_is_refused(tmp_path):
    """`restart --algorithm log-tas` on a log-tas campaign was taken as a handover to itself: nothing changed but
    status then read the screen's error bound as the sum of both deltas (0.1 for 0.05)."""
    from screenbai.campaign.state.changes import restart_algorithm

    path = tmp_path / "c.campaign"
    Campaign.create(path, synthetic_library(K=30, d=3), "log-tas", {"epsilon": 0.1}, seed=1).close()
    with Campaign.open(path) as camp:
        steps = len(camp.events())
        with pytest.raises(ValueError, match=r"log-tas already runs .* with these settings \(\{'epsilon': 0.1\}\): "
                           r"handed over to itself it would only add its delta .* run `restart` without --algorithm"):
            restart_algorithm(camp, "", "log-tas", {})
        assert len(camp.events()) == steps
        restart_algorithm(camp, "", "log-tas", {"epsilon": 0.2})  # another setting: a handover
        assert camp.meta["params"] == {"epsilon": 0.2}


def test_adding_back_a_withdrawn_compound_says_it_was_withdrawn(tmp_path):
    """`add` of a compound withdrawn earlier (back in stock) said 'id already in the campaign', as if it were still
    screened: it says now that it was withdrawn and that nothing brings it back into this screen."""
    from screenbai.campaign.state.changes import read_new_compounds

    camp = Campaign.create(tmp_path / "c.campaign", synthetic_library(K=30, d=3), "glgape", {"epsilon": 0.1}, seed=1)
    withdraw(camp, ["CPD0003"], "out of stock")
    new = tmp_path / "new.csv"
    new.write_text(f"id,smiles\nCPD0003,{camp.smiles[3]}\nCPD0004,{camp.smiles[4]}\n")
    _, rejected = read_new_compounds(camp, new, id_column="id", smiles_column="smiles")
    detail = dict(zip(rejected["compound_id"], rejected["detail"]))
    assert "CPD0003 was withdrawn, and a withdrawn compound does not come back into this screen" in detail["CPD0003"]
    assert detail["CPD0004"] == ""  # still screened: nothing to add
    camp.close()


# ------------------------------------------------------------------- a concentration on the log10 scale
def _log_ic50_campaign(tmp_path, name="c.campaign", **kw):
    """A continuous IC50 campaign (nM, lower is better), lin-tas with epsilon and sigma in log10 units."""
    lib = synthetic_library(K=kw.pop("K", 30), d=kw.pop("d", 3), seed=kw.pop("seed", 0))
    return Campaign.create(tmp_path / name, lib, "lin-tas", {"epsilon": 0.3, "sigma": 0.3}, seed=1,
                           outcome="continuous", readout=Readout.build("IC50", unit="nM", hit_below=1000.0), **kw)


def test_status_names_the_campaign_s_own_z_prime_bound(tmp_path):
    """Status said "Z' >= 0.5: the controls separate well" of the passed plates whatever --min-z the campaign set: a
    plate at Z' = 0.4 passed under --min-z 0.3 was said to be at 0.5 or more."""
    lib = synthetic_library(K=30, d=3, seed=0)
    camp = Campaign.create(tmp_path / "c.campaign", lib, "lin-tas", {"epsilon": 0.3, "sigma": 0.3}, seed=1,
                           outcome="continuous", layout=PlateLayout.build("24"),
                           readout=Readout.build("inhibition", unit="%", hit_above=50.0, min_z=0.3))
    plate = camp.next_plate(None, tmp_path / "P001.csv")
    camp.record(_fill(plate.path, dict.fromkeys(plate.compound_ids, 40.0), tmp_path / "R001.csv", noise=14.0))
    st = camp.status()
    (_, z, decision), = st.plate_qc
    assert 0.3 <= z < 0.5 and decision == "pass" and st.min_z == 0.3
    assert f"Z' from {z:.2f} to {z:.2f} (each Z' >= 0.3, the campaign's bound)" in st.text()
    assert "0.5" not in st.text().split("controls: ")[1].split("\n")[0]
    camp.close()


def _ic50_of(arm: int) -> float:
    return 10.0 ** (1 + arm % 4)  # 10 nM to 10 uM: four orders of magnitude


def test_a_continuous_ic50_is_told_to_the_algorithm_as_minus_log10(tmp_path):
    """A continuous IC50 was told to the algorithm raw and negated (-10000 for a 10 uM well), a linear-Gaussian model
    of values spread over orders of magnitude with multiplicative noise, its sigma in nM. A new campaign tells it
    -log10 of the value in the declared unit (a pIC50 up to a constant); the file keeps the raw values."""
    from campaign_util import write_results

    camp = _log_ic50_campaign(tmp_path)
    plate = camp.next_plate(24)
    camp.record(write_results(tmp_path / "R.csv", plate, [_ic50_of(a) for a in plate.arms]))
    inner = getattr(camp.policy, "inner", camp.policy)
    told = np.zeros(camp.K)
    for a in plate.arms:
        told[a] -= math.log10(_ic50_of(a))
    assert np.allclose(inner.sums, told) and np.allclose(camp.observations()[1], told)
    assert camp.readout.scale == "log10" and camp.meta["readout"]["scale"] == "log10"
    raw = sorted(v for (v,) in camp._con.execute("SELECT raw FROM readouts WHERE kind = 'compound'"))
    assert raw == sorted(_ic50_of(a) for a in plate.arms)  # kept as typed
    # a percent inhibition, and hits by a cutoff, are told as before
    assert Readout.build("percent inhibition", unit="%", hit_above=50.0).modelled(False).scale == "linear"
    assert Readout.build("IC50", unit="nM", hit_below=100.0).modelled(True).scale == "linear"
    camp.close()


def test_a_campaign_file_from_before_the_log10_scale_replays_with_the_raw_values(tmp_path):
    """A campaign file made before keeps its readout as a dict without 'scale': it is told the raw value negated,
    as when it ran, and its replay from the log agrees."""
    from campaign_util import write_results

    from screenbai.campaign.state import store

    camp = _log_ic50_campaign(tmp_path)
    before = {k: v for k, v in camp.meta["readout"].items() if k not in ("scale", "z_log")}
    with store.transaction(camp._con):
        store.put_meta(camp._con, "readout", before)
    camp.close()
    assert Readout.from_dict(before).scale == "linear"
    camp = Campaign.open(tmp_path / "c.campaign")
    assert camp.readout.scale == "linear"
    plate = camp.next_plate(24)
    camp.record(write_results(tmp_path / "R.csv", plate, [_ic50_of(a) for a in plate.arms]))
    camp.close()
    told = np.zeros(30)
    for a in plate.arms:
        told[a] -= _ic50_of(a)
    for replayed in (False, True):
        with Campaign.open(tmp_path / "c.campaign", use_snapshot=not replayed) as again:
            assert np.allclose(getattr(again.policy, "inner", again.policy).sums, told)


def test_a_log10_campaign_shows_concentrations_in_status_and_export(tmp_path):
    """Told -log10 IC50, a campaign still shows the IC50 in nM: status's estimates and intervals, the export's
    columns (geometric means), the plate file's 'why' column, each within the observed values, intervals in order."""
    from campaign_util import write_results

    from screenbai.campaign.views.explain import why_chosen
    from screenbai.campaign.views.export import compound_table

    camp = _log_ic50_campaign(tmp_path)
    plate = camp.next_plate(24)
    rng = np.random.default_rng(0)
    values = [_ic50_of(a) * 10.0 ** rng.normal(0.0, 0.1) for a in plate.arms]
    camp.record(write_results(tmp_path / "R.csv", plate, values))
    low, high = min(values), max(values)
    st = camp.status()
    for line in st.recommendation:
        assert low <= line.model <= high and line.model_ci[0] <= line.model <= line.model_ci[1]
        assert line.observed is None or line.observed_ci[0] <= line.observed <= line.observed_ci[1] <= high
    assert "a gap in mean -log10 IC50 (IC50 in nM)" in st.text()
    assert "model geometric mean" in st.text() and "mean outcome" not in st.text()  # the recommendation's line too
    assert "-log10 IC50 (IC50 in nM)" in st.certificate["sentences"][0]
    assert "log10 IC50 (nM) (negated: lower is better)" in st.model and "epsilon are in log10 units" in st.model
    tested = [r for r in compound_table(camp) if r["tests"]]
    assert tested and all(low <= r["model_estimate"] <= high for r in tested)
    for r in tested:
        assert r["observed_rate"] == pytest.approx(r["mean_readout"])  # the geometric mean, in nM
        assert r["model_low"] <= r["model_estimate"] <= r["model_high"]
        assert r["observed_low"] is None or r["observed_low"] <= r["observed_rate"] <= r["observed_high"]
    arm = plate.arms[0]
    mine = [v for a, v in zip(plate.arms, values) if a == arm]
    geomean = 10.0 ** np.mean(np.log10(mine))
    assert f"geometric mean {geomean:.3g}" in why_chosen(camp, camp.policy)(arm, 0, 1)
    camp.close()


def test_z_prime_of_a_log10_readout_is_taken_on_log10_and_says_so(tmp_path, capsys):
    """The model takes a continuous IC50 as log10 and status gives its spreads in log10, but Z' was taken on the raw
    values, where the high control's spread alone decides it: controls at 10 nM and 10 uM, each within a factor
    1.26, read Z' = 0.44 and failed. Z' is now taken on log10 of the values for such a readout (0.84 here) and
    `record`, status and a failing plate's message say so; a readout the model takes as it is (a campaign made
    before, scale "linear") keeps the raw Z'."""
    import dataclasses

    from screenbai.campaign.lab.assay import NEGATIVE, POSITIVE, check_controls
    from screenbai.campaign.lab.results import Outcome
    from screenbai.cli import main

    factors = 10.0 ** np.array([-0.1, 0.0, 0.1, 0.0])
    pos, neg = 10.0 * factors, 1e4 * factors
    z_log, z_raw = z_prime(np.log10(pos), np.log10(neg)), z_prime(pos, neg)
    assert z_log == pytest.approx(0.837, abs=1e-3) and z_raw == pytest.approx(0.436, abs=1e-3)
    camp = _log_ic50_campaign(tmp_path, layout=PlateLayout.build("24"))
    assert camp.readout.scale == "log10"
    plate = camp.next_plate(None, tmp_path / "P001.csv")
    path = camp.path
    camp.close()
    with open(plate.path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    controls = {"positive control": iter(pos), "negative control": iter(neg)}
    for r in rows:
        r["outcome"] = str(next(controls[r["role"]]) if r["role"] in controls else _ic50_of(int(r["compound_id"][3:])))
    results = tmp_path / "R001.csv"
    with open(results, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    assert main(["campaign", "record", str(path), str(results)]) == 0
    assert "plate P001: controls Z' = 0.84 (of log10 IC50, the scale the model uses) (pass)" in capsys.readouterr().out
    with Campaign.open(path) as c:
        st = c.status()
    assert st.plate_qc[0][1] == pytest.approx(z_log)
    assert ("controls: 1 plate(s) passed, Z' from 0.84 to 0.84 (of log10 values, the scale the model uses; each Z' "
            ">= 0.5, the campaign's bound)") in st.text()
    # a failing plate names the scale and the spreads it compared; the raw scale as before
    log10 = camp.readout
    close = [Outcome(2, "P9", f"A{k:02d}", POSITIVE, v) for k, v in enumerate(pos)] + [
        Outcome(2, "P9", f"B{k:02d}", NEGATIVE, v) for k, v in enumerate(3 * pos)]
    with pytest.raises(ControlsFailed, match=r"Z' = -[\d.]+ < 0.5 \(of log10 IC50, the scale the model uses\) "
                       r"\(positive controls 10 nM, sd 0.082 log10 units, negative 30 nM, sd 0.082 log10 units "
                       r"\(geometric mean, sd of log10\)"):
        check_controls("R.csv", close, log10, accept=False, discard=False)
    linear = dataclasses.replace(log10, scale="linear", z_log=False)  # a file made before: Z' of the raw values
    assert linear.z_scale() == " (of the raw IC50 values, not of log10)"  # its spreads in status are of log10
    wide = [dataclasses.replace(o, value=v) for o, v in zip(close, [*pos, *neg])]
    assert check_controls("R.csv", wide, linear, accept=True, discard=False)["P9"] == (pytest.approx(z_raw), "accepted")
    assert check_controls("R.csv", wide, log10, accept=False, discard=False)["P9"] == (pytest.approx(z_log), "pass")
    with pytest.raises(ControlsFailed, match=r"Z' = -[\d.]+ < 0.5 \(of the raw IC50 values, not of log10\) \(positive "
                       r"controls [\d.]+ \+- [\d.]+ nM"):
        check_controls("R.csv", close, linear, accept=False, discard=False)


def test_status_names_the_scale_of_z_prime_and_of_the_spreads_of_a_concentration(tmp_path, capsys):
    """A binary IC50 campaign (or a continuous one made before log10) had its control and replicate spreads shown in
    log10 units and its Z', of the raw values as `record` decided the plate by, shown without a scale beside them:
    read together, the Z' seemed made of those spreads. The Z' lines and the JSON now name its scale (the raw
    values, not log10), `record`'s line too; the log10 spreads stay (a concentration spreads by factors); a
    continuous IC50 the model takes raw does not say its log10 spread is what its sigma stands for."""
    from screenbai.campaign.state import store
    from screenbai.cli import main

    camp = _ic50_campaign(tmp_path, PlateLayout.build("24", replicates=2))  # binary: hits at IC50 <= 100 nM
    plate = camp.next_plate(None, tmp_path / "P001.csv")
    values = {cid: [50.0, 60.0] * 10 for cid in camp.compound_ids}  # replicates a factor 1.2 apart
    _fill(plate.path, values, tmp_path / "R.csv", controls=(10.0, 5000.0), noise=0.5)
    path = camp.path
    camp.close()
    assert main(["campaign", "record", str(path), str(tmp_path / "R.csv")]) == 0
    assert "plate P001: controls Z' = " in (out := capsys.readouterr().out)
    assert "(of log10 IC50, as potency controls are compared) (" in out  # since Z' of log10 for a concentration
    with Campaign.open(path) as c:
        st = c.status()
    text, data = st.text(), st.to_dict()
    assert data["z_scale"] == "log10" and data["spread_scale"] == "log10"
    assert "(of log10 values, as potency controls are compared; each Z' >= 0.5" in text
    assert "spread of the control wells (within a plate): sd 0." in text and "log10 units (a factor" in text
    assert "the noise a linear model's sigma stands for" not in text  # binary: no sigma
    camp.close()

    # a continuous IC50 campaign: Z' and spreads both of log10, and said so
    camp = _log_ic50_campaign(tmp_path, name="l.campaign", layout=PlateLayout.build("24", replicates=2))
    plate = camp.next_plate(None, tmp_path / "Q001.csv")
    camp.record(_fill(plate.path, values, tmp_path / "S.csv", controls=(10.0, 5000.0), noise=0.5))
    st = camp.status()
    assert (st.z_scale, st.spread_scale) == ("log10", "log10")
    assert "(of log10 values, the scale the model uses; each Z' >= 0.5" in st.text()
    assert "(the noise a linear model's sigma stands for)" in st.text()
    # made before log10 (scale "linear"): the model takes the raw IC50, its sigma in nM, not log10 units
    before = {k: v for k, v in camp.meta["readout"].items() if k not in ("scale", "z_log")}
    with store.transaction(camp._con):
        store.put_meta(camp._con, "readout", before)
    camp.close()
    with Campaign.open(tmp_path / "l.campaign") as c:
        plate = c.next_plate(None, tmp_path / "Q002.csv")
        c.record(_fill(plate.path, values, tmp_path / "S2.csv", controls=(10.0, 5000.0), noise=0.5, seed=1))
        st = c.status()
    assert (st.z_scale, st.spread_scale) == ("linear", "log10")
    assert "not of their log10 as the spreads below" in st.text()
    assert "not the units of this campaign's sigma: its model takes the raw values, in IC50 (nM)" in st.text()


def test_lin_tas_finds_the_most_potent_compound_of_a_log_linear_ic50(tmp_path):
    """IC50s log-linear in the features (log10 IC50 = 2 - 0.8 x1 - 0.8 x2, noise a factor 10**0.05): the raw values
    negated fit a linear model badly, the weakest compounds pulling it, and lin-tas stopped recommending CPD0009 over
    CPD0004, 1 nM and over 20 times more potent than any other. Told -log10 IC50, it recommends the most potent."""
    from campaign_util import write_results

    camp = _log_ic50_campaign(tmp_path, K=10, d=2, seed=3)
    X = camp.features
    ic50 = 10.0 ** (2 - 0.8 * X[:, 0] - 0.8 * X[:, 1])
    assert int(np.argmin(ic50)) == 4 and np.sort(ic50)[1] > 20 * ic50[4]  # clearly the most potent
    rng = np.random.default_rng(1)
    for k in range(40):
        if camp.policy.done:
            break
        plate = camp.next_plate(8)
        values = [ic50[a] * 10.0 ** rng.normal(0.0, 0.05) for a in plate.arms]
        camp.record(write_results(tmp_path / f"R{k}.csv", plate, values))
    assert camp.policy.done
    assert [c.compound_id for c in camp.status().recommendation] == ["CPD0004"]
    camp.close()


def test_a_change_says_that_log_tas_own_wells_count_again_from_it(tmp_path):
    """The README's recipe stops on the leader's own wells (77 of 77 hits, certified within 0.085); a compound added
    afterwards restarts log-tas, whose own-wells route counts only the wells it plans from then on, and status read
    "not certified yet" while `add` said the outcomes recorded before "count in full". The sentence says which
    part counts them; GLGapE, whose likelihood-ratio set is its only rule, keeps the plain sentence."""
    from screenbai.campaign.state.changes import guarantee_after_change

    said = {}
    for algorithm in ("log-tas", "glgape"):
        lib = synthetic_library(K=20, d=2)
        camp = Campaign.create(tmp_path / f"{algorithm}.campaign", lib, algorithm, {"epsilon": 0.1}, seed=3)
        add_compounds(camp, ["NEW1"], ["CCO"], features=np.array([[0.3, -0.2, 1.0]]))
        said[algorithm] = guarantee_after_change(camp)
        camp.close()
    assert "count in full in its likelihood-ratio set; its second route, a compound's own wells, counts only " \
        "the wells it plans from now on" in said["log-tas"]
    assert "own wells" not in said["glgape"] and "count in full; its union bound" in said["glgape"]


def test_the_own_wells_route_is_declared_by_the_rule_not_read_off_a_forecast():
    """The change sentence and status's second route were given to any rule that overrode ``shortcut_tests``
    (a forecast of a second route), as if every such route were log-tas's own wells. The rule declares it
    (``StoppingRule.own_wells_route``): a rule declaring it gets both sentences without any override, one
    overriding ``shortcut_tests`` for another reason gets neither, and log-tas's rule declares it."""
    from types import SimpleNamespace

    from screenbai.bandits.core.parts import StoppingRule
    from screenbai.bandits.rules.own_wells import LikelihoodOrOwnWells
    from screenbai.campaign.state import changes
    from screenbai.campaign.views.status import _second_route

    class Declared(StoppingRule):
        own_wells_route = True

    class Forecasting(StoppingRule):  # a second route of its own (say a budget's end), not the own wells
        def shortcut_tests(self, answer, means, done, plate=None, rng=None):
            return 96.0

    def said(rule) -> str:
        camp = SimpleNamespace(algorithm="log-tas", meta={"params": {}}, policy=SimpleNamespace(stopping_rule=rule))
        old = changes.switches
        changes.switches = lambda camp: []
        try:
            return changes.guarantee_after_change(camp)
        finally:
            changes.switches = old

    wrapped = SimpleNamespace(inner=SimpleNamespace(stopping_rule=Declared(0.1, 0.05), m=1))  # a wrapper's policy
    assert "its second route, a compound's own wells, counts only the wells it plans" in said(Declared(0.1, 0.05))
    assert "once a compound's own wells show its hit rate is at least 1 - epsilon = 0.9" in _second_route(wrapped)
    assert "own wells" not in said(Forecasting(0.1, 0.05)) and "count in full; its union bound" in \
        said(Forecasting(0.1, 0.05))
    assert _second_route(SimpleNamespace(stopping_rule=Forecasting(0.1, 0.05))) is None
    assert LikelihoodOrOwnWells.own_wells_route and not StoppingRule.own_wells_route


def test_a_forecast_band_of_one_number_reads_as_one():
    """After the README's first plate status read "about 1 more plate(s) ... (1 to 1 plates in 80 % of runs, ...)";
    a band whose ends round alike is one number, as init's forecast says it ("704 tests in 80 % of runs")."""
    from screenbai.campaign.views.status import _band_words

    assert _band_words(1.0, 1.2) == "1 plate in 80 % of runs"
    assert _band_words(3.0, 3.0) == "3 plates in 80 % of runs"
    assert _band_words(2.0, 5.0) == "2 to 5 plates in 80 % of runs"
    assert _band_words(2.0, math.inf).startswith("2 plates or more in 90 % of runs")


def test_status_says_what_the_setting_guarantees_and_whether_the_certificate_is_proven(tmp_path):
    """Status names the setting's guarantee with its model ("guarantee: ..."), a fixed-budget algorithm's included
    (its model line said the certificate and the stopping rule's guarantee hold under the model: it has neither);
    the JSON's certificate_proven is False when the model check rejects the model the certificate rests on (its
    certificate dict still says guaranteed: True, a statement about the setting) and True on a well-specified
    screen."""
    from campaign_util import new_campaign, write_results

    # outcomes unrelated to the features: each compound always a hit or never, at random
    fixed = np.random.default_rng(5).integers(0, 2, 20)
    runs = {}
    for name, algorithm, params in [("unrelated", "log-tas", {"epsilon": 0.1}),
                                    ("logistic", "log-tas", {"epsilon": 0.1}),
                                    ("budget", "gse-log", {"budget": 120})]:
        camp = new_campaign(tmp_path / f"{name}.campaign", algorithm, params, K=20, d=2, seed=1)
        assay = Assay(camp.features, seed=2)
        for k in range(6):  # the unrelated outcomes are rejected from the 6th plate on (5 compounds tested)
            plate = camp.next_plate(20)
            values = fixed[np.asarray(plate.arms)] if name == "unrelated" else assay(plate.arms)
            camp.record(write_results(tmp_path / f"{name}{k}.csv", plate, values))
        runs[name] = camp.status()
        camp.close()
    bad, good, budget = runs["unrelated"], runs["logistic"], runs["budget"]
    assert bad.model_check["rejected"] and bad.certificate["guaranteed"]
    assert bad.to_dict()["certificate_proven"] is False
    assert not good.model_check["rejected"] and good.to_dict()["certificate_proven"] is True
    said = "guarantee: guaranteed: error at most delta = 0.05 if the 0/1 outcomes follow a logistic model of the "
    said += "features"
    assert said in bad.text() and said in good.text()
    text = budget.text()
    assert "guarantee: fixed budget: no error bound at a chosen delta" in text
    assert budget.to_dict()["guarantee"].startswith("fixed budget") and budget.to_dict()["certificate_proven"] is None
    assert "stopping rule's guarantee" not in text and "a fixed budget guarantees no error" in text
    # the forecast comes from the same model: said where the check rejects it
    forecast = [line for line in bad.text().splitlines() if line.startswith("forecast: about")]
    assert forecast and "NOT TO BE RELIED ON: the model check rejects the model" in forecast[0]
    assert "NOT TO BE RELIED ON" not in good.text()


def test_the_export_says_when_the_certified_epsilon_is_not_proven(tmp_path):
    """Outcomes unrelated to the features (each compound always a hit or never): the model check rejects the
    logistic model, yet the export's CSV gave the leader's certified epsilon (0.45 here, for a compound with 0 hits
    in 17 tests) with no word, and the workbook's campaign sheet named neither the guarantee nor the model check."""
    from campaign_util import new_campaign, write_results

    from screenbai.campaign.views.export import export

    fixed = np.random.default_rng(5).integers(0, 2, 20)
    camp = new_campaign(tmp_path / "u.campaign", "log-tas", {"epsilon": 0.1}, K=20, d=2, seed=1)
    for k in range(6):
        plate = camp.next_plate(20)
        camp.record(write_results(tmp_path / f"u{k}.csv", plate, fixed[np.asarray(plate.arms)]))
    export(camp, tmp_path)
    camp.close()
    with open(tmp_path / "u.csv", newline="") as fh:
        first = next(csv.DictReader(fh))
    assert first["certified_epsilon"] and first["status"] == (
        "recommended (current leader; certified epsilon not proven: the model check rejects its model)")
    with zipfile.ZipFile(tmp_path / "u.xlsx") as z:
        about = z.read("xl/worksheets/sheet3.xml").decode()
    for said in ("guaranteed: error at most delta = 0.05 if the 0/1 outcomes follow a logistic model",
                 "certificate holds under", "the logistic model on these features",
                 "no: the model check rejects its model", "WARNING: the logistic model on these features does not fit"):
        assert said in about, said


def test_status_says_the_model_intervals_say_little_while_few_compounds_are_tested(tmp_path):
    """After the README's first plate status gave an untested compound's hit rate as "> 0.999 [0.997, > 0.999]":
    a Wald interval from a fit with as many parameters as compounds tested, which reads as sure. While no more
    compounds than features are tested, status says the intervals are descriptive and say little yet; once more
    are tested it does not."""
    from campaign_util import new_campaign, write_results

    camp = new_campaign(tmp_path / "c.campaign", "log-tas", {"epsilon": 0.1}, K=20, d=5, seed=1)
    assay = Assay(camp.features, seed=2)
    d = camp.features.shape[1]
    plate = camp.next_plate(3)
    camp.record(write_results(tmp_path / "r1.csv", plate, assay(plate.arms)))
    st = camp.status()
    tested = len(set(np.asarray(plate.arms).tolist()))
    assert st.thin_fit == (tested, d) and tested <= d
    assert f"{tested} compound(s) tested for {d} features, so for others they say little yet" in st.text()
    assert json.loads(json.dumps(st.to_dict()))["thin_fit"] == [tested, d]
    for k in range(3):
        plate = camp.next_plate(20)
        camp.record(write_results(tmp_path / f"r{k + 2}.csv", plate, assay(plate.arms)))
    st = camp.status()
    assert st.thin_fit is None and "say little yet" not in st.text()
    camp.close()

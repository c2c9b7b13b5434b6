"""Readouts a lab writes, checked by kind: what no assay can give is refused (naming the file, line, well and value,
and what to write), what is merely unusual is recorded as written with a warning (stderr, the campaign's log).

Before: only a % beyond +-1000 % and a concentration at or below 0 were refused; an IC50 of 1e12 nM (1 000 mol/L,
a value in another unit) was recorded and counted as a non-hit, a percent readout declared by its name without
``--unit %`` had no bound at all, and nothing unusual (an IC50 of 5 mM, 300 % inhibition, a negative RLU) was
ever said."""

from __future__ import annotations

import csv

import pytest
from campaign_util import synthetic_library

from screenbai.campaign import Campaign, PlateLayout, ResultsError
from screenbai.campaign.lab.assay import Readout, concentration_factor
from screenbai.cli import main


def _campaign(tmp_path, readout: Readout, name="c.campaign"):
    layout = PlateLayout.build("48", positive="A01,C04,F08", negative="B02,E05,F01")
    return Campaign.create(
        tmp_path / name, synthetic_library(K=30, d=3), "glgape", {"epsilon": 0.1}, seed=2, layout=layout,
        readout=readout,
    )


def _filled(path, plate_file, positive, negative, compound, first=None):
    """The plate file with its controls at ``positive`` / ``negative`` (in turn), compounds at ``compound`` and the
    first compound well at ``first``; returns (path, the line of that first compound well)."""
    with open(plate_file, newline="") as fh:
        rows = list(csv.DictReader(fh))
    pos, neg = iter(positive), iter(negative)
    line = None
    for k, r in enumerate(rows):
        role = r["role"]
        if role == "positive control":
            r["outcome"] = next(pos)
        elif role == "negative control":
            r["outcome"] = next(neg)
        else:
            r["outcome"] = compound
            if line is None:
                line = k + 2
                r["outcome"] = compound if first is None else first
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return path, line


IC50 = dict(positive=("10", "12", "9"), negative=("10000", "12000", "9000"), compound="500")


def test_concentration_units_are_sized():
    assert concentration_factor("nM") == (1e-9, "M") and concentration_factor("µM") == (1e-6, "M")
    assert concentration_factor("nanomolar") == (1e-9, "M") and concentration_factor("mmol/L") == (1e-3, "M")
    assert concentration_factor("ng/mL") == (1e-6, "g/L") and concentration_factor("mg/L") == (1e-3, "g/L")
    assert concentration_factor("") is None and concentration_factor("RFU") is None


@pytest.mark.parametrize(
    "value, words",
    [
        ("0", "is a concentration, above 0"),
        ("-5", "is a concentration, above 0"),
        ("inf", "not a finite number"),
        ("nan", "not a finite number"),
        ("1e12", "1e+12 nM is 1e+03 M, above 1 M, which no assay doses"),  # micro- or picomolar typed as nM?
        ("1e-12", "1e-12 nM is 1e-21 M, below 1e-18 M (under one molecule per microlitre)"),
    ],
)
def test_an_impossible_ic50_is_refused_naming_line_well_and_value(tmp_path, value, words):
    camp = _campaign(tmp_path, Readout.build("IC50", unit="nM", hit_below=1000))
    plate = camp.next_plate(20, tmp_path / "P001.csv")
    path, line = _filled(tmp_path / "R.csv", plate.path, **IC50, first=value)
    with pytest.raises(ResultsError) as info:
        camp.record(path)
    message = str(info.value)
    assert f"R.csv: line {line}: outcome {value!r} for well P001/" in message and words in message
    assert camp.open_wells() == {"P001": len(plate)}  # nothing recorded
    camp.close()


@pytest.mark.parametrize(
    "value, words",
    [
        ("5e6", "5e+06 nM is 0.005 M, above 0.001 M, past the top concentration"),
        ("0.0005", "0.0005 nM is 5e-13 M, below 1e-12 M, past the tight-binding limit"),
    ],
)
def test_an_unusual_ic50_is_recorded_as_written_and_logged(tmp_path, value, words):
    camp = _campaign(tmp_path, Readout.build("IC50", unit="nM", hit_below=1000))
    plate = camp.next_plate(20, tmp_path / "P001.csv")
    path, line = _filled(tmp_path / "R.csv", plate.path, **IC50, first=value)
    rec = camp.record(path)
    assert rec.n_outcomes == len(plate) and len(rec.warnings) == 1
    assert rec.warnings[0].startswith(f"{path}: line {line}: outcome {value!r} for well P001/")
    assert words in rec.warnings[0]
    raw = {r[0] for r in camp._con.execute("SELECT raw FROM readouts WHERE kind = 'compound'")}
    assert float(value) in raw  # kept as written
    logged = [d for _, _, kind, d in camp.events() if kind == "record"]
    assert logged[-1]["suspicious"] == list(rec.warnings)
    camp.close()


def test_a_percent_readout_named_without_its_unit_is_bounded_too(tmp_path):
    """``--readout "percent inhibition" --hit-above 50`` (the module's own example, no --unit): 1e6 was recorded, a
    hit; now refused as with --unit %. 300 % is recorded with a warning, 150 % without one."""
    camp = _campaign(tmp_path, Readout.build("percent inhibition", hit_above=50.0))
    plate = camp.next_plate(20, tmp_path / "P001.csv")
    kw = dict(positive=("95", "93", "97"), negative=("5", "7", "3"), compound="20")
    path, line = _filled(tmp_path / "R.csv", plate.path, **kw, first="1e6")
    with pytest.raises(ResultsError, match=rf"line {line}: .*beyond \+-1000 %"):
        camp.record(path)
    path, line = _filled(tmp_path / "R2.csv", plate.path, **kw, first="300")
    rec = camp.record(path)
    assert len(rec.warnings) == 1 and "300 % is outside -100 % .. 200 %" in rec.warnings[0]
    camp.close()
    camp = _campaign(tmp_path, Readout.build("percent inhibition", unit="%", hit_above=50.0), "d.campaign")
    plate = camp.next_plate(20, tmp_path / "Q001.csv")
    assert camp.record(_filled(tmp_path / "R3.csv", plate.path, **kw, first="150")[0]).warnings == ()
    camp.close()


def test_a_negative_raw_count_is_warned_on_stderr_and_kept(tmp_path, capsys):
    """A luminescence in RLU below 0 (background-subtracted, or a sign slip) is recorded as written: `record` says so
    on stderr, naming the line, and the campaign's log keeps it."""
    camp = _campaign(tmp_path, Readout.build("luminescence", unit="RLU", hit_above=5000.0))
    plate = camp.next_plate(20, tmp_path / "P001.csv")
    path, line = _filled(
        tmp_path / "R.csv", plate.path, positive=("90000", "91000", "89000"), negative=("1000", "1100", "900"),
        compound="2000", first="-40",
    )
    camp.close()
    assert main(["campaign", "record", str(tmp_path / "c.campaign"), str(path)]) == 0
    err = capsys.readouterr().err
    assert f"warning: {path}: line {line}: outcome '-40' for well P001/" in err
    assert "a plate reader's raw RLU is not below 0" in err and "1 unusual value(s) recorded as written" in err
    with Campaign.open(tmp_path / "c.campaign") as camp:
        assert any("raw RLU is not below 0" in s for _, _, k, d in camp.events() for s in d.get("suspicious", ()))


OD = dict(positive=("2.0", "2.1", "1.9"), negative=("0.10", "0.12", "0.09"), compound="0.3")
COUNTS = dict(positive=("90000", "91000", "89000"), negative=("1000", "1100", "900"), compound="2000")


@pytest.mark.parametrize(
    "readout, kind",
    [
        (Readout.build("absorbance", hit_above=0.5), "absorbance"),
        (Readout.build("OD600", hit_above=0.5), "absorbance"),
        (Readout.build("growth", unit="OD", hit_above=0.5), "absorbance"),
        (Readout.build("signal", unit="A450", hit_above=0.5), "absorbance"),
        (Readout.build("luminescence", hit_above=5000.0), "raw count"),
        (Readout.build("signal", unit="RFU", hit_above=5000.0), "raw count"),
        (Readout.build("IC50", hit_below=1000), "concentration"),  # no unit: judged against the cutoff
        (Readout.build("IC50", unit="uM", hit_below=1), "molar"),
        (Readout.build("activity", hit_above=3), None),  # a readout of no known kind has no bounds
    ],
)
def test_a_readout_finds_its_row_of_the_table(readout, kind):
    assert readout.range_kind == kind


@pytest.mark.parametrize(
    "value, words",
    [
        ("350", "an absorbance of 350 OD is above 10 (a transmission of 1e-10), which no plate reader reads"),  # mOD
        ("-12", "an absorbance of -12 OD is below -10, which no reader reads"),
        ("nan", "not a finite number"),
        ("inf", "not a finite number"),
    ],
)
def test_an_impossible_absorbance_is_refused_naming_line_well_and_value(tmp_path, value, words):
    """An OD had no check at all: 350 (a value in mOD) was recorded, a hit."""
    camp = _campaign(tmp_path, Readout.build("absorbance", unit="OD", hit_above=0.5))
    plate = camp.next_plate(20, tmp_path / "P001.csv")
    path, line = _filled(tmp_path / "R.csv", plate.path, **OD, first=value)
    with pytest.raises(ResultsError) as info:
        camp.record(path)
    assert f"R.csv: line {line}: outcome {value!r} for well P001/" in str(info.value) and words in str(info.value)
    assert camp.open_wells() == {"P001": len(plate)}
    camp.close()


@pytest.mark.parametrize(
    "value, words",
    [
        ("4.2", "an absorbance of 4.2 OD is above 4, where plate readers saturate"),
        ("-0.2", "an absorbance of -0.2 OD is below -0.05, more negative than a blank-subtracted well's noise"),
        ("-0.03", None),  # a blank-subtracted well a little below 0: the reader's noise, no warning
        ("3.9", None),
    ],
)
def test_an_unusual_absorbance_is_recorded_as_written_and_logged(tmp_path, value, words):
    camp = _campaign(tmp_path, Readout.build("OD600", hit_above=0.5))
    plate = camp.next_plate(20, tmp_path / "P001.csv")
    path, line = _filled(tmp_path / "R.csv", plate.path, **OD, first=value)
    rec = camp.record(path)
    assert rec.n_outcomes == len(plate)
    if words is None:
        assert rec.warnings == ()
    else:
        assert len(rec.warnings) == 1 and rec.warnings[0].startswith(f"{path}: line {line}: outcome {value!r} for well")
        assert words in rec.warnings[0]
        assert [d for _, _, k, d in camp.events() if k == "record"][-1]["suspicious"] == list(rec.warnings)
    camp.close()


@pytest.mark.parametrize(
    "value, words",
    [
        ("65535", "65535: the largest count a 16-bit reader can give, which it writes for a saturated well"),
        ("2147483647", "2147483647: the largest count a signed 32-bit reader can give"),
        ("4294967295", "4294967295: the largest count a 32-bit reader can give"),
        ("5e9", "5000000000: a plate reader's raw RLU above 4294967295, past a 32-bit reader's counter"),
    ],
)
def test_a_saturated_well_of_raw_counts_is_warned_naming_the_well(tmp_path, capsys, value, words):
    """A reader's counter ceiling (65535, 2^31-1, 2^32-1) is what it writes for a saturated well: it was recorded
    silently as the well's signal; now `record` warns on stderr, naming the line and the well, and the log keeps it."""
    camp = _campaign(tmp_path, Readout.build("luminescence", unit="RLU", hit_above=5000.0))
    plate = camp.next_plate(20, tmp_path / "P001.csv")
    path, line = _filled(tmp_path / "R.csv", plate.path, **COUNTS, first=value)
    with open(path, newline="") as fh:
        well = next(r["well"] for r in csv.DictReader(fh) if r["role"] == "compound")
    camp.close()
    assert main(["campaign", "record", str(tmp_path / "c.campaign"), str(path)]) == 0
    err = capsys.readouterr().err
    assert f"warning: {path}: line {line}: outcome {value!r} for well P001/{well}: {words}" in err
    with Campaign.open(tmp_path / "c.campaign") as camp:
        assert any(words in s for _, _, k, d in camp.events() for s in d.get("suspicious", ()))


def test_a_raw_count_past_any_counter_is_refused(tmp_path):
    camp = _campaign(tmp_path, Readout.build("fluorescence", hit_above=5000.0))  # RFU by its name
    plate = camp.next_plate(20, tmp_path / "P001.csv")
    path, line = _filled(tmp_path / "R.csv", plate.path, **COUNTS, first="2e12")
    words = rf"line {line}: outcome '2e12' for well P001/\S+: 2e\+12: a plate reader's raw fluorescence above 1e\+12"
    with pytest.raises(ResultsError, match=words):
        camp.record(path)
    camp.close()


@pytest.mark.parametrize(
    "value, verdict",
    [
        ("1e22", "refused"),  # 1e19 times the cutoff: no two concentrations are that far apart, whatever the unit
        ("1e-16", "refused"),
        ("1e13", "1e+13 is 1e+10 times the hit cutoff 1000, further from it than the usual range of assays spans"),
        ("0.0000001", "1e-07 is 1e-10 times the hit cutoff 1000"),
        ("5", None),
    ],
)
def test_a_concentration_without_a_unit_is_judged_against_its_cutoff(tmp_path, value, verdict):
    """`--readout IC50 --hit-below 1000` without --unit had only the > 0 check: 1e22 was recorded, a non-hit."""
    camp = _campaign(tmp_path, Readout.build("IC50", hit_below=1000))
    plate = camp.next_plate(20, tmp_path / "P001.csv")
    path, line = _filled(tmp_path / "R.csv", plate.path, **IC50, first=value)
    if verdict == "refused":
        with pytest.raises(ResultsError, match=rf"line {line}: .*times the hit cutoff 1000: no two concentrations"):
            camp.record(path)
    else:
        warnings = camp.record(path).warnings
        assert (warnings == ()) if verdict is None else (len(warnings) == 1 and verdict in warnings[0])
    camp.close()


# ------------------------------------------------------------------------- Z' of a concentration on log10
#: controls at 10 nM and 10 uM, each spread by factors 10**+-0.1: sd of log10 0.0816 each, gap 3 log10 units
_FACTORS = 10.0 ** __import__("numpy").array([-0.1, 0.0, 0.1, 0.0])
_POS, _NEG = 10.0 * _FACTORS, 1e4 * _FACTORS
Z_LOG = 1 - 3 * 2 * (0.1 * (2 / 3) ** 0.5) / 3  # 0.837
Z_RAW = 0.436  # z_prime(_POS, _NEG): the high control's spread in nM alone


def _ic50_plate(tmp_path, name):
    camp = Campaign.create(
        tmp_path / f"{name}.campaign", synthetic_library(K=30, d=3), "glgape", {"epsilon": 0.1}, seed=2,
        layout=PlateLayout.build("24"), readout=Readout.build("IC50", unit="nM", hit_below=100.0),
    )
    plate = camp.next_plate(None, tmp_path / f"{name}_P001.csv")
    with open(plate.path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    controls = {"positive control": iter(_POS), "negative control": iter(_NEG)}
    for r in rows:
        r["outcome"] = repr(float(next(controls[r["role"]]))) if r["role"] in controls else "50"
    path = tmp_path / f"{name}_R001.csv"
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return camp, path


def test_a_binary_ic50_campaign_takes_z_prime_on_log10_and_says_so(tmp_path, capsys):
    """A binary IC50 campaign (hits at IC50 <= 100 nM) took Z' on the raw concentrations: controls 1 000 times apart,
    each within a factor 1.26, read Z' = 0.44 and failed the plate. Potency controls are compared on log10 (pIC50):
    Z' = 0.84 now, and `record`, status (text and JSON) and the export's well table say the scale."""
    import numpy as np

    from screenbai.campaign.lab.assay import z_prime
    from screenbai.campaign.views.export import export

    assert z_prime(np.log10(_POS), np.log10(_NEG)) == pytest.approx(Z_LOG, abs=1e-9)
    assert Z_LOG == pytest.approx(0.837, abs=1e-3)
    assert z_prime(_POS, _NEG) == pytest.approx(Z_RAW, abs=1e-3)
    camp, path = _ic50_plate(tmp_path, "c")
    assert camp.readout.scale == "linear" and camp.readout.z_on_log10  # binary: the model takes hits
    camp.close()
    assert main(["campaign", "record", str(tmp_path / "c.campaign"), str(path)]) == 0
    assert "plate P001: controls Z' = 0.84 (of log10 IC50, as potency controls are compared) (pass)" in (
        capsys.readouterr().out
    )
    with Campaign.open(tmp_path / "c.campaign") as camp:
        st = camp.status()
        assert st.plate_qc[0][1] == pytest.approx(Z_LOG) and st.to_dict()["z_scale"] == "log10"
        assert "Z' from 0.84 to 0.84 (of log10 values, as potency controls are compared; each Z' >= 0.5" in st.text()
        (tmp_path / "export").mkdir()
        out = export(camp, tmp_path / "export")
    wells = next(p for p in out if str(p).endswith("_wells.csv"))
    header = wells.read_text().splitlines()[0]
    assert header.endswith(",plate_z_prime (of log10)")


def test_a_campaign_file_from_before_keeps_its_raw_z_prime(tmp_path):
    """A file made before (its readout without ``z_log``) keeps the scale its plates were checked on: raw."""
    from screenbai.campaign.lab.assay import ControlsFailed
    from screenbai.campaign.state import store

    camp, path = _ic50_plate(tmp_path, "old")
    before = {k: v for k, v in camp.meta["readout"].items() if k != "z_log"}
    with store.transaction(camp._con):
        store.put_meta(camp._con, "readout", before)
    camp.close()
    with Campaign.open(tmp_path / "old.campaign") as camp:
        assert not camp.readout.z_on_log10
        with pytest.raises(ControlsFailed, match=r"Z' = 0.44 < 0.5 \(of the raw IC50 values, not of log10\)"):
            camp.record(path)
        assert camp.record(path, accept=True).qc["P001"][0] == pytest.approx(Z_RAW, abs=1e-3)
        assert camp.status().to_dict()["z_scale"] == "linear"


def test_a_plate_in_another_unit_than_the_plates_before_is_refused_until_the_lab_decides(tmp_path):
    """An IC50 campaign in nM: plate 1 with controls near 10 and 10 000 nM, plate 2 typed in uM (0.01 and 10). Z' of
    log10 passes (both kinds move alike), no value is out of range, and every compound of plate 2 read 1000 times
    more potent (all hits). Controls 100 times or more off the earlier plates' levels, both the same way, now fail
    the plate naming the factor and the unit; --accept records it as written. Controls 10 times off are drift, not
    a unit."""
    from screenbai.campaign.lab.assay import ControlsFailed

    in_um = (("0.01", "0.012", "0.009"), ("10", "12", "9"), "0.5")
    for name, decide in (("c", None), ("a", "accept")):
        camp = _campaign(tmp_path, Readout.build("IC50", unit="nM", hit_below=1000.0), name=f"{name}.campaign")
        first = camp.next_plate(10, tmp_path / f"{name}1.csv")
        second = camp.next_plate(10, tmp_path / f"{name}2.csv")
        camp.record(_filled(tmp_path / f"{name}r1.csv", first.path, **IC50)[0])
        slipped = _filled(tmp_path / f"{name}r2.csv", second.path, *in_um)[0]
        if decide:
            assert camp.record(slipped, accept=True).qc["P002"][1] == "accepted"
            assert ("plate P002: controls FAILED (Z' = 0.87 of log10 values, as potency controls are compared; Z' "
                    "passes, the plate failed record's other checks: positive controls on the non-hit side of the "
                    "negative ones, or both far off the earlier plates' (another unit?)), accepted by the lab"
                    ) in camp.status().text()
            camp.close()
            continue
        with pytest.raises(ControlsFailed) as info:
            camp.record(slipped)
        assert ("plate P002: Z' = " in str(info.value) and "but its controls read about 1e+03 times below those of "
                "the plates recorded before" in str(info.value))
        assert "a file in another unit than the campaign's nM" in str(info.value) and "--accept" in str(info.value)
        assert camp.open_wells() == {"P002": len(second)}
        drifted = _filled(tmp_path / "r3.csv", second.path, ("1", "1.2", "0.9"), ("1000", "1200", "900"), "50")[0]
        assert camp.record(drifted).qc["P002"][1] == "pass"
        camp.close()

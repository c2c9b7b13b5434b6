"""Curation: every dropped row has one reason; structures standardized; replicates merged."""

from __future__ import annotations

import io
import json
import logging
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from screenbai.chem.curate import DROP_REASONS, CurationReport, curate_activities
from screenbai.chem.standardize import MAX_HEAVY_ATOMS, count_heavy_atoms, standardize_smiles
from screenbai.chem.tables import STANDARD_COLUMNS, read_chembl_export

CYCLIN_A = r"cyclin[ -/]?A\b|CycA"


def _raw(rows: list[dict]) -> pd.DataFrame:
    base = {c: None for c in STANDARD_COLUMNS}
    base.update(standard_type="IC50", standard_relation="=", standard_units="nM", potential_duplicate=False)
    return pd.DataFrame([{**base, **r} for r in rows], columns=list(STANDARD_COLUMNS))


def _check_invariant(report: CurationReport) -> None:
    assert report.n_input == report.n_output_rows + sum(report.dropped.values())
    assert set(report.dropped) <= set(DROP_REASONS)


# ------------------------------------------------------------------ hand-made rows
BAD_ROWS = [
    dict(molecule_chembl_id="OK1", canonical_smiles="CCO", standard_value="50"),
    dict(molecule_chembl_id="BAD_SMILES", canonical_smiles="C1CC(", standard_value="5"),
    dict(molecule_chembl_id="BAD_VALENCE", canonical_smiles="C(C)(C)(C)(C)C", standard_value="5"),
    dict(molecule_chembl_id="NO_SMILES", canonical_smiles=None, standard_value="5"),
    dict(molecule_chembl_id="NO_VALUE", canonical_smiles="CCN", standard_value=None),
    dict(molecule_chembl_id="NOT_NUMBER", canonical_smiles="CCN", standard_value="n.d."),
    dict(molecule_chembl_id="ZERO", canonical_smiles="CCN", standard_value="0"),
    dict(molecule_chembl_id="NEGATIVE", canonical_smiles="CCN", standard_value="-3"),
    dict(molecule_chembl_id="INFINITE", canonical_smiles="CCN", standard_value="1e999"),
    dict(molecule_chembl_id="PERCENT", canonical_smiles="CCN", standard_value="30", standard_units="%"),
    dict(molecule_chembl_id="NO_UNIT", canonical_smiles="CCN", standard_value="30", standard_units=None),
    dict(molecule_chembl_id="GT", canonical_smiles="CCCl", standard_value="10000", standard_relation=">"),
    dict(molecule_chembl_id="LE", canonical_smiles="CCBr", standard_value="1", standard_relation="<="),
    dict(molecule_chembl_id="APPROX", canonical_smiles="CCI", standard_value="7", standard_relation="~"),
    dict(molecule_chembl_id="NO_REL", canonical_smiles="CCCO", standard_value="7", standard_relation=None),
    dict(molecule_chembl_id="FLAG1", canonical_smiles="CCCN", standard_value="7",
         data_validity_comment="Outside typical range"),
    dict(molecule_chembl_id="FLAG2", canonical_smiles="CCCN", standard_value="9", potential_duplicate=True),
    dict(molecule_chembl_id="KI", canonical_smiles="CCCC", standard_value="9", standard_type="Ki"),
]


def test_every_bad_row_has_its_reason_drop_mode(caplog):
    lib, rep = curate_activities(_raw(BAD_ROWS), censored="drop")
    _check_invariant(rep)
    assert rep.dropped == {
        "activity type not selected": 1,
        "missing SMILES": 1,
        "missing value": 1,
        "non-numeric value": 1,
        "non-positive value": 2,
        "infinite value": 1,
        "unknown unit": 1,
        "missing unit": 1,
        "censored relation": 3,
        "flagged: data validity comment": 1,
        "flagged: potential duplicate": 1,
        "unparseable SMILES": 2,
    }
    assert rep.n_input == 18 and rep.n_output_rows == 2 and rep.n_compounds == 2
    assert sorted(rep.unparseable) == [("BAD_SMILES", "C1CC("), ("BAD_VALENCE", "C(C)(C)(C)(C)C")]
    assert "BAD_SMILES" in caplog.text  # logged with its id
    assert "1 rows dropped as 'unknown unit': % (1)" in caplog.text  # the unit not read is named, not only counted
    assert lib["compound_id"].tolist() == ["NO_REL", "OK1"]  # missing relation counts as '='


def test_censored_keep_as_value_and_flags_kept(caplog):
    lib, rep = curate_activities(_raw(BAD_ROWS), censored="keep_as_value", drop_flagged=False)
    _check_invariant(rep)
    assert "censored relation" not in rep.dropped and not any(r.startswith("flagged") for r in rep.dropped)
    # each censored value taken as exact is counted by its relation (it was not recorded anywhere)
    assert rep.altered == {"censored '<=' taken as the value": 1, "censored '>' taken as the value": 1,
                           "censored '~' taken as the value": 1}
    frame = rep.to_frame().query("step == 'row'").set_index("reason")["count"]
    assert frame["kept, censored '>' taken as the value"] == 1 and frame["kept"] == rep.n_output_rows - 3
    assert frame.sum() == rep.n_input  # each input row under one outcome
    assert "3 censored values kept as exact values (censored: keep_as_value)" in caplog.text
    assert json.loads(rep.to_json())["altered"] == rep.altered
    assert curate_activities(_raw(BAD_ROWS))[1].altered == {}  # dropped, not altered
    by_id = lib.set_index("compound_id")
    assert by_id.loc["GT", "activity_nM"] == 10000.0 and by_id.loc["LE", "activity_nM"] == 1.0
    assert by_id.loc["FLAG1", "n_measurements"] == 2  # FLAG1 and FLAG2 are one molecule
    assert by_id.loc["FLAG1", "activity_nM"] == pytest.approx(math.sqrt(7 * 9))
    assert by_id.loc["FLAG1", "source_ids"] == "FLAG1;FLAG2"


def test_rdkit_noise_is_silenced(capfd):
    curate_activities(_raw(BAD_ROWS))
    err = capfd.readouterr().err
    assert "SMILES Parse Error" not in err and "Explicit valence" not in err


def test_salt_forms_merge_with_median_in_log_space():
    rows = [
        dict(molecule_chembl_id="CHEMBL25", canonical_smiles="CC(=O)Oc1ccccc1C(=O)O", standard_value="10"),
        dict(molecule_chembl_id="CHEMBL2", canonical_smiles="CC(=O)Oc1ccccc1C(=O)[O-].[Na+]", standard_value="1000"),
        dict(molecule_chembl_id="CHEMBL9", canonical_smiles="CCN.Cl", standard_value="5", standard_units="uM"),
        dict(molecule_chembl_id="CHEMBL8", canonical_smiles="CC[NH3+]", standard_value="500", standard_units="pM"),
        dict(molecule_chembl_id="CHEMBL7", canonical_smiles="CCCC(=O)[O-]", standard_value="2e-6", standard_units="M"),
    ]
    lib, rep = curate_activities(_raw(rows))
    _check_invariant(rep)
    assert rep.n_output_rows == 5 and rep.n_compounds == 3
    by_id = lib.set_index("compound_id")
    asp = by_id.loc["CHEMBL2"]  # representative id = first of the sorted ids
    assert asp["smiles"] == "CC(=O)Oc1ccccc1C(=O)O"  # sodium stripped, carboxylate neutralised
    assert asp["activity_nM"] == pytest.approx(100.0, rel=1e-12)  # median of log10(10), log10(1000)
    assert asp["pActivity"] == pytest.approx(7.0)
    assert asp["n_measurements"] == 2 and asp["source_ids"] == "CHEMBL2;CHEMBL25"
    assert asp["inchikey"] == "BSYNRYMUTXBXSQ-UHFFFAOYSA-N"  # aspirin
    ethylamine = by_id.loc["CHEMBL8"]  # HCl salt and ammonium cation -> neutral ethylamine
    assert ethylamine["smiles"] == "CCN" and ethylamine["n_measurements"] == 2
    assert ethylamine["activity_nM"] == pytest.approx(math.sqrt(5000 * 0.5))  # 5 uM and 500 pM
    assert by_id.loc["CHEMBL7", "smiles"] == "CCCC(=O)O"
    assert by_id.loc["CHEMBL7", "activity_nM"] == pytest.approx(2000.0)  # 2e-6 M
    assert list(lib.columns) == [
        "compound_id", "smiles", "inchikey", "activity_nM", "pActivity", "n_measurements", "source_ids"
    ]


def test_mass_units_use_molecular_weight():
    rows = [
        dict(molecule_chembl_id="A", canonical_smiles="CCO", standard_value="1", standard_units="ug.mL-1"),
        dict(molecule_chembl_id="B", canonical_smiles="c1ccccc1O", standard_value="0.5", standard_units="mM"),
    ]
    lib, rep = curate_activities(_raw(rows))
    a = lib.set_index("compound_id").loc["A", "activity_nM"]
    assert a == pytest.approx(1e6 / 46.069, rel=1e-4)  # 1 ug/mL ethanol = 21.7 uM
    assert lib.set_index("compound_id").loc["B", "activity_nM"] == pytest.approx(5e5)


def test_assay_regex_and_types_and_determinism():
    rows = [
        dict(molecule_chembl_id="C1", canonical_smiles="CCO", standard_value="5",
             assay_description="Inhibition of CDK2/cyclin A"),
        dict(molecule_chembl_id="C2", canonical_smiles="CCN", standard_value="6",
             assay_description="CDK2-CycA kinase assay"),
        dict(molecule_chembl_id="C3", canonical_smiles="CCC", standard_value="7", assay_description="CDK2/cyclin E"),
        dict(molecule_chembl_id="C4", canonical_smiles="CCS", standard_value="8", assay_description=None),
        dict(molecule_chembl_id="C5", canonical_smiles="CCCl", standard_value="9", standard_type="Ki",
             assay_description="cyclin A"),
    ]
    lib, rep = curate_activities(_raw(rows), assay_description_regex=CYCLIN_A)
    assert lib["compound_id"].tolist() == ["C1", "C2"]
    assert rep.dropped == {"activity type not selected": 1, "assay description not matched": 2}
    lib2, _ = curate_activities(_raw(rows), activity_types=("ic50", "KI"), assay_description_regex=CYCLIN_A,
                                combine_types="median")
    assert lib2["compound_id"].tolist() == ["C1", "C2", "C5"]
    shuffled = _raw(rows).sample(frac=1.0, random_state=3)
    pd.testing.assert_frame_equal(curate_activities(shuffled, assay_description_regex=CYCLIN_A)[0], lib)


def test_report_renderings():
    _, rep = curate_activities(_raw(BAD_ROWS))
    frame = rep.to_frame()
    assert frame.loc[frame["step"] == "row", "count"].sum() == rep.n_input
    assert frame.iloc[0, :3].tolist() == ["kept", 2, "row"]
    md = rep.to_markdown()
    assert "| unparseable SMILES" in md and "|      18 |" in md
    data = json.loads(rep.to_json())
    assert data["n_input"] == 18 and data["dropped"]["censored relation"] == 3
    assert ["BAD_SMILES", "unparseable SMILES", "C1CC("] in data["structures_dropped"]


def test_bad_arguments():
    with pytest.raises(ValueError, match="censored='keep'"):
        curate_activities(_raw(BAD_ROWS), censored="keep")
    with pytest.raises(ValueError, match="not a valid regex"):
        curate_activities(_raw(BAD_ROWS), assay_description_regex="cyclin[")
    with pytest.raises(ValueError, match="lacks column"):
        curate_activities(pd.DataFrame({"smiles": ["CCO"]}))


def test_standardize_smiles_helper():
    out = standardize_smiles(["[Na+].[O-]C(=O)c1ccccc1", "[Na]OC(=O)c1ccccc1", "nonsense", ""])
    assert out["smiles"].tolist()[:2] == ["O=C(O)c1ccccc1"] * 2  # ionic and covalent sodium salts
    assert out["error"].tolist() == [None, None, "unparseable SMILES", "missing SMILES"]
    # tautomers share the InChIKey; canonical SMILES only with the (slower) tautomer option
    pair = ["Oc1ccccn1", "O=c1cccc[nH]1"]
    assert standardize_smiles(pair)["inchikey"].nunique() == 1
    assert standardize_smiles(pair)["smiles"].nunique() == 2
    assert standardize_smiles(pair, canonical_tautomer=True)["smiles"].nunique() == 1


def test_values_outside_1_fM_to_1_M_are_dropped_by_reason_and_named(caplog):
    """A value of 5e-7 typed as nM (meant as M: 500 nM) was kept as 0.5 aM, the most potent compound by twelve
    log units and a cure under any label; 2e12 nM (2 000 M) too. Bounds inclusive; mass units once converted."""
    rows = [
        dict(molecule_chembl_id="OK", canonical_smiles="CCO", standard_value="50"),
        dict(molecule_chembl_id="ATTO", canonical_smiles="CCN", standard_value="5e-7"),
        dict(molecule_chembl_id="KILOMOLAR", canonical_smiles="CCC", standard_value="2", standard_units="kM"),
        dict(molecule_chembl_id="HUGE", canonical_smiles="CCCC", standard_value="2e12"),
        dict(molecule_chembl_id="ONE_FM", canonical_smiles="CCCCC", standard_value="1", standard_units="fM"),
        dict(molecule_chembl_id="LOW_EDGE", canonical_smiles="CCCCCC", standard_value="1e-3", standard_units="pM"),
        dict(molecule_chembl_id="HIGH_EDGE", canonical_smiles="CCCCCCC", standard_value="1", standard_units="M"),
        dict(molecule_chembl_id="MASS", canonical_smiles="CCCCCCCC", standard_value="1e9", standard_units="ug/mL"),
    ]
    lib, rep = curate_activities(_raw(rows[:-1]))
    _check_invariant(rep)
    assert rep.dropped == {"unknown unit": 2, "value outside 1 fM - 1 M": 2}  # kM, fM: no unit read
    assert lib["compound_id"].tolist() == ["HIGH_EDGE", "LOW_EDGE", "OK"]
    assert "2 rows dropped as 'value outside 1 fM - 1 M'" in caplog.text
    assert "ATTO (5e-07 nM)" in caplog.text and "HUGE (2e+12 nM)" in caplog.text
    _, rep = curate_activities(_raw([rows[0], rows[-1]]))
    assert rep.dropped == {"value outside 1 fM - 1 M": 1}  # 1e9 ug/mL of octane: 8.8e12 nM
    with pytest.raises(ValueError, match=r"1 rows dropped as 'value outside 1 fM - 1 M' \(are the units the "
                                         r"intended ones\? units found: nM \(1\)\)"):
        curate_activities(_raw([rows[1]]))


# ------------------------------------------------------------------ the real CDK2 export
@pytest.fixture(scope="module")
def cdk2_raw(cdk2_export):
    return read_chembl_export(cdk2_export)


@pytest.mark.slow
def test_cdk2_raw_export_default_curation(cdk2_raw):
    # cross-checked against PROVENANCE.md: 2,746 IC50 rows of 7,107; 5 IC50 rows lack SMILES,
    # 37 lack a value (36 of them also lack a unit); 642 '>' + 45 '<' nM rows and 24 '>' ug.mL-1
    # rows = 711 censored; of the 88 'Outside typical range' and 197 potential duplicates,
    # 72 and 170 are left once censored/missing rows are gone (checks run in DROP_REASONS order).
    lib, rep = curate_activities(cdk2_raw)
    _check_invariant(rep)
    assert rep.n_input == 7107
    assert rep.dropped == {
        "activity type not selected": 4361,
        "missing SMILES": 5,
        "missing value": 37,
        "censored relation": 711,
        "flagged: data validity comment": 72,
        "flagged: potential duplicate": 170,
    }
    assert rep.n_output_rows == 1751 and rep.n_compounds == 1531 == len(lib)
    assert rep.unparseable == []
    assert lib["compound_id"].is_unique and lib["inchikey"].is_unique
    assert lib["compound_id"].is_monotonic_increasing
    assert lib["n_measurements"].sum() == 1751
    # 1,751 rows -> 1,531 compounds: replicates of one ChEMBL id only (no two ids share a structure)
    assert rep.merged == {"merged: replicate measurement of one id": 220}
    assert rep.merged_largest_fold["merged: replicate measurement of one id"] == pytest.approx(2.52e5, rel=1e-3)
    assert lib["activity_nM"].min() == pytest.approx(0.3) and lib["activity_nM"].max() == pytest.approx(3.5e5)
    np.testing.assert_allclose(lib["pActivity"], 9 - np.log10(lib["activity_nM"]))


def test_cdk2_raw_export_study_settings(cdk2_raw):
    # keep censored bounds and curator flags, cyclin A assays only: the 10 compounds with
    # IC50 >= 1e6 nM (all flagged 'Outside typical range') are kept
    lib, rep = curate_activities(cdk2_raw, censored="keep_as_value", drop_flagged=False,
                                 assay_description_regex=CYCLIN_A)
    _check_invariant(rep)
    assert rep.dropped == {
        "activity type not selected": 4361,
        "assay description not matched": 2081,
        "missing SMILES": 1,
        "missing value": 12,
    }
    assert rep.n_output_rows == 652 and rep.n_compounds == 514
    assert int((lib["activity_nM"] >= 1e6).sum()) == 10


# ------------------------------------------------------------------ which fragment is the compound
def test_metal_complexes_are_dropped_never_reduced_or_merged(caplog):
    rows = [
        dict(molecule_chembl_id="CISPLATIN_A", canonical_smiles="N[Pt](N)(Cl)Cl", standard_value="5"),
        dict(molecule_chembl_id="CISPLATIN_B", canonical_smiles="N.N.Cl[Pt]Cl", standard_value="50",
             standard_units="uM"),
        dict(molecule_chembl_id="FERROCENE", canonical_smiles="[cH-]1cccc1.[cH-]1cccc1.[Fe+2]", standard_value="7"),
        dict(molecule_chembl_id="ZNCL2", canonical_smiles="[Cl-].[Cl-].[Zn+2]", standard_value="7"),
        dict(molecule_chembl_id="CP", canonical_smiles="C1=CCC=C1", standard_value="9"),  # cyclopentadiene itself
        dict(molecule_chembl_id="NACL", canonical_smiles="[Na+].[Cl-]", standard_value="3"),
        dict(molecule_chembl_id="MIX", canonical_smiles="CCCCN.CCCCCN", standard_value="3"),
        dict(molecule_chembl_id="TOSYLATE", canonical_smiles="CCCCCN.Cc1ccc(S(=O)(=O)O)cc1", standard_value="4"),
        dict(molecule_chembl_id="LI_SALT", canonical_smiles="CCCC(=O)[O-].[Li+]", standard_value="6"),
    ]
    lib, rep = curate_activities(_raw(rows))
    _check_invariant(rep)
    assert rep.dropped == {"metal-containing structure": 4, "inorganic structure": 1, "mixture of several compounds": 1}
    assert sorted(lib["smiles"]) == ["C1=CCC=C1", "CCCC(=O)O", "CCCCCN"]  # counter-ions stripped
    assert lib.set_index("compound_id").loc["CP", "n_measurements"] == 1  # ferrocene not merged into it
    named = {cid: why for cid, why, _ in rep.structures_dropped}
    assert named == {
        "CISPLATIN_A": "metal-containing structure", "CISPLATIN_B": "metal-containing structure",
        "FERROCENE": "metal-containing structure", "ZNCL2": "metal-containing structure",
        "NACL": "inorganic structure", "MIX": "mixture of several compounds",
    }
    assert "CISPLATIN_B (metal-containing structure)" in caplog.text


def test_giant_structure_is_counted_not_fatal():
    # a 20,000-atom SMILES crashed the interpreter inside RDKit: run in a child process so a
    # crash fails this test instead of the test session
    code = (
        "import pandas as pd\n"
        "from screenbai.chem.curate import curate_activities\n"
        "from screenbai.streams import results_stdout\n"
        "raw = pd.DataFrame({'molecule_chembl_id': ['HUGE', 'OK'], 'canonical_smiles': ['C' * 20000, 'CCO'],\n"
        "    'standard_type': 'IC50', 'standard_relation': '=', 'standard_value': '5', 'standard_units': 'nM'})\n"
        "with results_stdout() as out:  # the answer on a stream only this script writes (RDKit may print)\n"
        "    lib, rep = curate_activities(raw)\n"
        "    cid, why, smiles = rep.structures_dropped[0]\n"
        "    print(rep.dropped, lib['compound_id'].tolist(), cid, why, smiles[195:], file=out)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == (
        "{'structure too large': 1} ['OK'] HUGE structure too large CCCCC... (20,000 characters)"
    )


def test_heavy_atoms_counted_on_the_text():
    assert count_heavy_atoms("C[C@H](N)C(=O)O") == 6
    assert count_heavy_atoms("[2H]C([H])Cl.Br[Pt](Br)[nH+]1cccc1") == 10  # hydrogens not counted
    big = "C" * MAX_HEAVY_ATOMS
    assert standardize_smiles([big, big + "C"])["error"].tolist() == [None, "structure too large"]


# ------------------------------------------------------------------ nothing kept: say why
def test_nothing_kept_says_why():
    ki_rows = [dict(molecule_chembl_id=f"K{i}", canonical_smiles="CCO", standard_value="5", standard_type="Ki")
               for i in range(5)]
    with pytest.raises(ValueError, match=r"0 of 6 rows have activity type IC50; the data holds Ki \(5\), Kd \(1\)"):
        curate_activities(_raw(ki_rows + [dict(canonical_smiles="CCN", standard_value="1", standard_type="Kd")]))
    censored = [dict(canonical_smiles="CCO", standard_value="5", standard_relation=">"),
                dict(canonical_smiles="CCO", standard_value="5", standard_units="%")]
    message = r"units found: % \(1\).*1 rows dropped as 'censored relation' \(censored: keep_as_value"
    with pytest.raises(ValueError, match=message):
        curate_activities(_raw(censored))
    with pytest.raises(ValueError, match="do not match assay_description_regex 'cyclin'"):
        curate_activities(_raw(ki_rows), activity_types=["Ki"], assay_description_regex="cyclin")
    with pytest.raises(ValueError, match="the input holds no rows"):
        curate_activities(_raw([]))


def test_one_id_naming_two_structures_is_dropped_not_split_into_two_compounds(caplog):
    """Two structures under one id gave two library rows with the same compound_id (and the
    measurements of one compound could belong to the other): every such row is dropped, named."""
    rows = [
        dict(molecule_chembl_id="A", canonical_smiles="CCO", standard_value="5"),
        dict(molecule_chembl_id="A", canonical_smiles="CCN", standard_value="5000"),
        dict(molecule_chembl_id="A", canonical_smiles="OCC", standard_value="7"),  # CCO again
        dict(molecule_chembl_id="B", canonical_smiles="CCC", standard_value="10"),
        dict(molecule_chembl_id="C", canonical_smiles="CC(=O)[O-].[Na+]", standard_value="20"),
        dict(molecule_chembl_id="C", canonical_smiles="CC(=O)O", standard_value="80"),  # one compound, two forms
    ]
    lib, rep = curate_activities(_raw(rows))
    _check_invariant(rep)
    assert rep.dropped == {"id names several structures": 3}
    assert lib["compound_id"].tolist() == ["B", "C"]
    assert lib.set_index("compound_id").loc["C", "activity_nM"] == pytest.approx(40.0)
    assert sorted(smi for cid, why, smi in rep.structures_dropped if why == "id names several structures") == [
        "CCN", "CCO", "OCC"
    ]
    assert "dropped A (id names several structures)" in caplog.text


def test_non_numeric_values_are_shown_and_a_decimal_comma_named(caplog):
    rows = [
        dict(molecule_chembl_id="A", canonical_smiles="CCO", standard_value="5,5"),
        dict(molecule_chembl_id="B", canonical_smiles="CCN", standard_value="10,2"),
    ]
    with pytest.raises(ValueError, match=r"'non-numeric value' \(values found: 10,2 \(1\), 5,5 \(1\); a decimal comma"):
        curate_activities(_raw(rows))
    rows.append(dict(molecule_chembl_id="C", canonical_smiles="CCC", standard_value="7"))
    lib, rep = curate_activities(_raw(rows))  # some rows kept: the dropped ones are counted and logged
    assert rep.dropped == {"non-numeric value": 2} and lib["compound_id"].tolist() == ["C"]
    assert "2 rows dropped as 'non-numeric value': 10,2 (1), 5,5 (1)" in caplog.text


def test_a_row_without_id_gets_a_name_no_real_id_has(caplog):
    """The generated 'row0' met a real id 'row0': two structures under one id, both dropped."""
    rows = [
        dict(molecule_chembl_id=None, canonical_smiles="CCO", standard_value="5"),
        dict(molecule_chembl_id="row1", canonical_smiles="CCN", standard_value="50"),
        dict(molecule_chembl_id="", canonical_smiles="CCC", standard_value="7"),
    ]
    lib, rep = curate_activities(_raw(rows))
    _check_invariant(rep)
    assert rep.dropped == {}
    assert sorted(lib["compound_id"]) == ["row1", "row1_noid", "row3"]
    assert lib.set_index("compound_id").loc["row1", "smiles"] == "CCN"
    assert "2 rows have no compound id; named after their data row: row1_noid, row3" in caplog.text


# ------------------------------------------------------------------ which rows are one compound
def test_tautomers_stay_two_compounds_unless_canonical_tautomer():
    """2-hydroxypyridine and 2-pyridone share their standard InChIKey (its mobile-H layer merges
    them): with canonical_tautomer false they were merged all the same."""
    rows = [
        dict(molecule_chembl_id="HP", canonical_smiles="Oc1ccccn1", standard_value="10"),
        dict(molecule_chembl_id="PY", canonical_smiles="O=c1cccc[nH]1", standard_value="1000"),
        dict(molecule_chembl_id="PY", canonical_smiles="O=C1C=CC=CN1", standard_value="100"),  # the same, Kekulé
    ]
    lib, rep = curate_activities(_raw(rows))
    _check_invariant(rep)
    assert rep.n_compounds == 2 and lib["compound_id"].tolist() == ["HP", "PY"]
    assert lib["smiles"].tolist() == ["Oc1ccccn1", "O=c1cccc[nH]1"]
    assert lib["n_measurements"].tolist() == [1, 2]
    # the library's inchikey stays the standard one (a public identifier), shared by the two
    assert lib["inchikey"].tolist() == ["UBQKCCHYAOITMY-UHFFFAOYSA-N"] * 2
    # one id naming both tautomers names two structures
    lib, rep = curate_activities(_raw(rows + [dict(molecule_chembl_id="HP", canonical_smiles="O=c1cccc[nH]1",
                                                   standard_value="5")]))
    assert rep.dropped == {"id names several structures": 2} and lib["compound_id"].tolist() == ["PY"]
    # canonical_tautomer: one compound, as before
    lib, rep = curate_activities(_raw(rows), canonical_tautomer=True)
    assert rep.n_compounds == 1 and lib["n_measurements"].tolist() == [3]
    assert lib["source_ids"].tolist() == ["HP;PY"] and lib["inchikey"].tolist() == ["UBQKCCHYAOITMY-UHFFFAOYSA-N"]


ANOTHER_ID = "merged: another id of the same standardized structure"
REPLICATE = "merged: replicate measurement of one id"


def test_merges_are_counted_by_reason_with_their_spread(caplog):
    """Rows merged into one compound (a salt and its free base under two ids, replicates of one id)
    were counted nowhere: counts.csv said 6 rows kept, the library held 3 compounds."""
    rows = [
        dict(molecule_chembl_id="ASP", canonical_smiles="CC(=O)Oc1ccccc1C(=O)O", standard_value="10"),
        dict(molecule_chembl_id="ASP", canonical_smiles="CC(=O)Oc1ccccc1C(=O)O", standard_value="20"),
        dict(molecule_chembl_id="ASP_NA", canonical_smiles="CC(=O)Oc1ccccc1C(=O)[O-].[Na+]", standard_value="1000"),
        dict(molecule_chembl_id="B", canonical_smiles="CCN", standard_value="5"),
        dict(molecule_chembl_id="B", canonical_smiles="CCN", standard_value="50"),
        dict(molecule_chembl_id="B", canonical_smiles="CCN.Cl", standard_value="20"),
        dict(molecule_chembl_id="C", canonical_smiles="CCC", standard_value="7"),
        dict(molecule_chembl_id="D", canonical_smiles="CCCl", standard_value="7", standard_relation=">"),
    ]
    caplog.set_level(logging.INFO, logger="screenbai.chem")
    lib, rep = curate_activities(_raw(rows))
    _check_invariant(rep)
    assert rep.n_output_rows == 7 and rep.n_compounds == 3 == len(lib)
    assert rep.merged == {ANOTHER_ID: 1, REPLICATE: 3}
    assert rep.n_output_rows - sum(rep.merged.values()) == rep.n_compounds
    # the widest spread each merge combined: ASP and ASP_NA 10..1000 nM; B's replicates 5..50 nM
    assert rep.merged_largest_fold == {ANOTHER_ID: pytest.approx(100.0), REPLICATE: pytest.approx(10.0)}
    frame = pd.read_csv(io.StringIO(rep.to_frame().to_csv(index=False)))  # counts.csv as written and read
    assert list(frame.columns) == ["reason", "count", "step", "largest_fold"]
    assert frame.loc[frame["step"] == "row", "count"].sum() == rep.n_input  # each input row once, as before
    by_reason = frame.set_index("reason")
    assert by_reason.loc[ANOTHER_ID, "count"] == 1 and by_reason.loc[ANOTHER_ID, "step"] == "merge"
    assert by_reason.loc[ANOTHER_ID, "largest_fold"] == pytest.approx(100.0)
    assert by_reason.loc["compounds in library", "count"] == 3
    assert by_reason.loc["compounds in library", "step"] == "library"
    assert json.loads(rep.to_json())["merged"] == rep.merged
    assert f"| {REPLICATE}" in rep.to_markdown()
    assert "7 measurements -> 3 compounds" in caplog.text and "4 rows merged" in caplog.text
    # a compound whose merged values span more than 10-fold is named (ASP: 10 to 1000 nM; B's 5 to 50 nM is 10-fold)
    assert rep.n_wide_merges == 1 and rep.wide_merges == [("ASP", pytest.approx(100.0))]
    assert "1 compounds merge measurements more than 10-fold apart" in caplog.text and "ASP (100-fold)" in caplog.text
    assert json.loads(rep.to_json())["wide_merges"] == [["ASP", pytest.approx(100.0)]]
    # nothing merged: no merge rows, the library row still there
    _, rep = curate_activities(_raw(rows[-2:]))
    assert rep.merged == {} and rep.merged_largest_fold == {}
    assert rep.to_frame()["step"].tolist() == ["row", "row", "library"]


def test_the_fixed_h_key_is_computed_only_where_it_is_read():
    """The FixedH InChI (a third of a structure's standardization time) was computed for every structure of a
    campaign's library, which reads the standard InChIKey only, and the standard key twice with canonical tautomers."""
    from screenbai.chem.standardize import Standardizer

    pyridone, hydroxy = Standardizer()("O=c1cccc[nH]1"), Standardizer()("Oc1ccccn1")
    assert pyridone[1] == hydroxy[1] and pyridone[2] != hydroxy[2]  # one standard key, two compound keys
    unkeyed = Standardizer(keyed=False)("O=c1cccc[nH]1")
    assert unkeyed[:2] == pyridone[:2] and unkeyed[2] == unkeyed[1]
    canonical = Standardizer(canonical_tautomer=True)("O=c1cccc[nH]1")
    assert canonical[2] == canonical[1]


def test_canonical_tautomers_keep_stereoisomers_apart(caplog):
    """RDKit's tautomer canonicalizer removes the stereo of every atom and bond a tautomer touches: with
    canonical_tautomer, L- and D-alanine (an alpha C-H next to C=O), (R)- and (S)-lactic acid, the E and Z
    oximes were each merged into one compound."""
    pairs = [("C[C@@H](N)C(=O)O", "C[C@H](N)C(=O)O"), ("C[C@@H](O)C(=O)O", "C[C@H](O)C(=O)O"),
             ("C/C(=N/O)c1ccccc1", "C/C(=N\\O)c1ccccc1"),
             # the canonical tautomer of this hydantoin is aromatic: no tautomer holds its stereocentre
             ("O=C1N[C@H](Cc2ccccc2)C(=O)N1", "O=C1N[C@@H](Cc2ccccc2)C(=O)N1")]
    rows = [dict(molecule_chembl_id=f"{k}{i}", canonical_smiles=s, standard_value="10")
            for k, pair in enumerate(pairs) for i, s in enumerate(pair)]
    with caplog.at_level(logging.WARNING, logger="screenbai.chem"):
        lib, rep = curate_activities(_raw(rows), canonical_tautomer=True)
    _check_invariant(rep)
    assert rep.n_compounds == 8 and not rep.merged
    assert lib["smiles"].str.contains("@|/|\\\\").all()  # every compound keeps its stereo
    # the one whose canonical tautomer loses it is kept as drawn, and said
    assert "O=C1NC(=O)[C@@H](Cc2ccccc2)N1" in lib["smiles"].tolist()
    assert "canonical tautomer" in caplog.text and "O=C1N[C@H](Cc2ccccc2)C(=O)N1" in caplog.text
    # a tautomer pair without stereo is still one compound
    lib, rep = curate_activities(_raw([dict(molecule_chembl_id="HP", canonical_smiles="Oc1ccccn1", standard_value="1"),
                                       dict(molecule_chembl_id="PY", canonical_smiles="O=c1cccc[nH]1",
                                            standard_value="2")]), canonical_tautomer=True)
    assert rep.n_compounds == 1


def test_text_after_a_smiles_is_dropped_not_cut_off(caplog):
    """RDKit reads a SMILES up to its first blank and takes the rest for a name: 'CC O' was ethane,
    'c1ccccc1 Cl' benzene, each kept as a compound that no one measured."""
    rows = [dict(molecule_chembl_id="A", canonical_smiles="CC O", standard_value="10"),
            dict(molecule_chembl_id="B", canonical_smiles="c1ccccc1 Cl", standard_value="10"),
            dict(molecule_chembl_id="C", canonical_smiles="c1ccccc1Cl chlorobenzene", standard_value="10"),
            dict(molecule_chembl_id="D", canonical_smiles=" CCN\t", standard_value="10"),  # blanks around: fine
            dict(molecule_chembl_id="E", canonical_smiles="C[C@H](N)C(=O)O |&1:1|", standard_value="10")]  # CXSMILES
    with caplog.at_level(logging.WARNING, logger="screenbai.chem"):
        lib, rep = curate_activities(_raw(rows))
    _check_invariant(rep)
    assert rep.dropped == {"text after the SMILES": 3}
    assert [(c, s) for c, _, s in rep.structures_dropped] == [("A", "CC O"), ("B", "c1ccccc1 Cl"),
                                                               ("C", "c1ccccc1Cl chlorobenzene")]
    assert ("A", "CC O") in rep.unparseable and "'CC O'" in caplog.text
    assert lib["compound_id"].tolist() == ["D", "E"]
    frame = standardize_smiles(["CC O", "CCO"])
    assert frame["error"].tolist() == ["text after the SMILES", None]


def test_racemates_and_unknown_enantiomers_of_cxsmiles_are_not_the_pure_enantiomer():
    """A CXSMILES' enhanced stereo ('|&1:1|' racemic, '|o1:1|' one enantiomer of unknown configuration) was
    read and dropped: the racemate became (S)-alanine and merged with it, and the same racemate drawn
    from (R) was another compound; two ids of '|o1:1|' (the two peaks of a chiral separation) merged."""
    rows = [dict(molecule_chembl_id="S", canonical_smiles="C[C@H](N)C(=O)O", standard_value="10"),
            dict(molecule_chembl_id="RAC1", canonical_smiles="C[C@H](N)C(=O)O |&1:1|", standard_value="20"),
            dict(molecule_chembl_id="RAC2", canonical_smiles="C[C@@H](N)C(=O)O.Cl |&1:1|", standard_value="40"),
            dict(molecule_chembl_id="PEAK1", canonical_smiles="C[C@H](N)C(=O)O |o1:1|", standard_value="5"),
            dict(molecule_chembl_id="PEAK1", canonical_smiles="C[C@@H](N)C(=O)O |o1:1|", standard_value="5"),
            dict(molecule_chembl_id="PEAK2", canonical_smiles="C[C@H](N)C(=O)O |o1:1|", standard_value="500")]
    lib, rep = curate_activities(_raw(rows))
    _check_invariant(rep)
    assert lib["compound_id"].tolist() == ["PEAK1", "PEAK2", "RAC1", "S"]
    assert lib["source_ids"].tolist() == ["PEAK1", "PEAK2", "RAC1;RAC2", "S"]
    assert lib["smiles"].tolist() == ["C[C@H](N)C(=O)O |o1:1|"] * 2 + ["C[C@H](N)C(=O)O |&1:1|", "C[C@H](N)C(=O)O"]
    assert rep.merged == {ANOTHER_ID: 1, REPLICATE: 1}
    frame = standardize_smiles(["C[C@@H](N)C(=O)O |&1:1|"])
    assert frame["smiles"].tolist() == ["C[C@H](N)C(=O)O |&1:1|"]


def test_a_unit_in_another_case_or_spelled_out_is_converted_and_said(caplog):
    """'nm', 'NM', 'UM', 'nmol/L' were dropped as 'unknown unit': a table typed by hand lost its rows."""
    units = ["nm", "NM", "UM", "nmol/L", "µm", "mm", "Nanomolar"]
    rows = [dict(molecule_chembl_id=f"C{i}", canonical_smiles="C" * (i + 1) + "O", standard_value="2",
                 standard_units=u) for i, u in enumerate(units)]
    rows.append(dict(molecule_chembl_id="X", canonical_smiles="CCN", standard_value="2", standard_units="m"))
    with caplog.at_level(logging.WARNING, logger="screenbai.chem"):
        lib, rep = curate_activities(_raw(rows))
    _check_invariant(rep)
    assert rep.dropped == {"unknown unit": 1}  # 'm': metre, milli-? not a concentration
    assert lib["activity_nM"].tolist() == [2, 2, 2000, 2, 2000, 2e6, 2]
    assert "units read as" in caplog.text and "'UM' as uM (1 rows)" in caplog.text


# ------------------------------------------------------------------ stereo RDKit cannot hold
def test_allene_enantiomers_are_never_merged(caplog):
    # RDKit reads CC=[C@]=CC and CC=[C@@]=CC as CC=C=CC: one InChIKey, so they merged into one median
    rows = [
        dict(molecule_chembl_id="ALLENE_M", canonical_smiles="CC=[C@]=CC", standard_value="10"),
        dict(molecule_chembl_id="ALLENE_P", canonical_smiles="CC=[C@@]=CC", standard_value="1000"),
        dict(molecule_chembl_id="ALLENE_M2", canonical_smiles="CC=[C@]=CC", standard_value="40"),  # written alike
        dict(molecule_chembl_id="CUMULENE_E", canonical_smiles="C/C=C=C=C/C", standard_value="5"),
        dict(molecule_chembl_id="CUMULENE_Z", canonical_smiles="C/C=C=C=C\\C", standard_value="500"),
        # no axis (two methyls on one end), no stereocentre (two methyls): the '@' says nothing, so they merge
        dict(molecule_chembl_id="NOAXIS_A", canonical_smiles="CC=[C@]=C(C)C", standard_value="7"),
        dict(molecule_chembl_id="NOAXIS_B", canonical_smiles="CC=C=C(C)C", standard_value="7"),
        dict(molecule_chembl_id="NOCENTRE_A", canonical_smiles="C[C@H](C)CC", standard_value="3"),
        dict(molecule_chembl_id="NOCENTRE_B", canonical_smiles="CCC(C)C", standard_value="3"),
    ]
    with caplog.at_level(logging.WARNING, logger="screenbai.chem"):
        lib, rep = curate_activities(_raw(rows))
    _check_invariant(rep)
    by_id = lib.set_index("compound_id")
    assert by_id.loc["ALLENE_M", "source_ids"] == "ALLENE_M;ALLENE_M2"
    assert by_id.loc["ALLENE_M", "activity_nM"] == pytest.approx(20.0)  # sqrt(10 * 40), not merged with 1000
    assert by_id.loc["ALLENE_P", "activity_nM"] == 1000
    assert by_id.loc["CUMULENE_E", "n_measurements"] == by_id.loc["CUMULENE_Z", "n_measurements"] == 1
    assert by_id.loc["NOAXIS_A", "source_ids"] == "NOAXIS_A;NOAXIS_B"
    assert by_id.loc["NOCENTRE_A", "source_ids"] == "NOCENTRE_A;NOCENTRE_B"
    assert len(lib) == 6
    assert "4 structures specify stereo RDKit cannot hold" in caplog.text and "CC=[C@@]=CC" in caplog.text


# ------------------------------------------------------------------ counter-ions, solvents, mixtures
IBUPROFEN = "CC(C)Cc1ccc(C(C)C(=O)O)cc1"
KETOROLAC = "O=C(O)C1CCn2c1ccc2C(=O)c1ccccc1"
DICLOFENAC = "O=C(O)Cc1ccccc1Nc1c(Cl)cccc1Cl"
FLUNIXIN = "Cc1c(Nc2ncccc2C(=O)O)cccc1C(F)(F)F"
SALTS = {  # real-looking salts of ChEMBL -> the parent's SMILES as written alone
    "ketorolac tromethamine": (f"{KETOROLAC}.NC(CO)(CO)CO", KETOROLAC),
    "diclofenac diethylamine": (f"{DICLOFENAC}.CCNCC", DICLOFENAC),
    "diclofenac ethanolamine": ("[O-]C(=O)Cc1ccccc1Nc1c(Cl)cccc1Cl.[NH3+]CCO", DICLOFENAC),
    "flunixin meglumine": (f"{FLUNIXIN}.CNC[C@H](O)[C@@H](O)[C@H](O)[C@H](O)CO", FLUNIXIN),
    "ibuprofen lysine": (f"{IBUPROFEN}.NCCCC[C@H](N)C(=O)O", IBUPROFEN),
    "ibuprofen arginine": ("CC(C)Cc1ccc(C(C)C(=O)[O-])cc1.NC(=[NH2+])NCCC[C@H](N)C(=O)O", IBUPROFEN),
    "ibuprofen triethylammonium": ("CC(C)Cc1ccc(C(C)C(=O)[O-])cc1.CC[NH+](CC)CC", IBUPROFEN),
    "ibuprofen choline": ("CC(C)Cc1ccc(C(C)C(=O)[O-])cc1.C[N+](C)(C)CCO", IBUPROFEN),
    "ibuprofen sodium": ("CC(C)Cc1ccc(C(C)C(=O)[O-])cc1.[Na+]", IBUPROFEN),
    "ibuprofen potassium": ("CC(C)Cc1ccc(C(C)C(=O)[O-])cc1.[K+]", IBUPROFEN),
    "ibuprofen calcium": ("CC(C)Cc1ccc(C(C)C(=O)[O-])cc1.CC(C)Cc1ccc(C(C)C(=O)[O-])cc1.[Ca+2]", IBUPROFEN),
    "nicotine tosylate": ("CN1CCC[C@H]1c1cccnc1.Cc1ccc(S(=O)(=O)O)cc1", "CN1CCC[C@H]1c1cccnc1"),
    "nicotine mesylate": ("CN1CCC[C@H]1c1cccnc1.CS(=O)(=O)O", "CN1CCC[C@H]1c1cccnc1"),
    "nicotine besylate": ("CN1CCC[C@H]1c1cccnc1.O=S(=O)(O)c1ccccc1", "CN1CCC[C@H]1c1cccnc1"),
    "nicotine maleate": ("CN1CCC[C@H]1c1cccnc1.O=C(O)/C=C\\C(=O)O", "CN1CCC[C@H]1c1cccnc1"),
    "nicotine fumarate": ("CN1CCC[C@H]1c1cccnc1.O=C(O)/C=C/C(=O)O", "CN1CCC[C@H]1c1cccnc1"),
    "nicotine citrate": ("CN1CCC[C@H]1c1cccnc1.O=C(O)CC(O)(CC(=O)O)C(=O)O", "CN1CCC[C@H]1c1cccnc1"),
    "nicotine tartrate": ("CN1CCC[C@H]1c1cccnc1.O=C(O)[C@H](O)[C@@H](O)C(=O)O", "CN1CCC[C@H]1c1cccnc1"),
    "nicotine succinate": ("CN1CCC[C@H]1c1cccnc1.O=C(O)CCC(=O)O", "CN1CCC[C@H]1c1cccnc1"),
    "nicotine oxalate": ("CN1CCC[C@H]1c1cccnc1.O=C(O)C(=O)O", "CN1CCC[C@H]1c1cccnc1"),
    "nicotine TFA": ("CN1CCC[C@H]1c1cccnc1.O=C(O)C(F)(F)F", "CN1CCC[C@H]1c1cccnc1"),
    "nicotine HCl": ("CN1CCC[C@H]1c1cccnc1.Cl", "CN1CCC[C@H]1c1cccnc1"),
    "nicotine HBr": ("CN1CCC[C@H]1c1cccnc1.Br", "CN1CCC[C@H]1c1cccnc1"),
}


@pytest.mark.parametrize("name", sorted(SALTS))
def test_pharmaceutical_counter_ions_are_stripped(name):
    salt, parent = SALTS[name]
    out = standardize_smiles([salt, parent])
    assert out["error"].tolist() == [None, None], out
    assert out["smiles"][0] == out["smiles"][1]


def test_two_drugs_or_only_solvents_have_no_parent(caplog):
    rows = [
        dict(molecule_chembl_id="SALT", canonical_smiles=f"{KETOROLAC}.NC(CO)(CO)CO", standard_value="5"),
        dict(molecule_chembl_id="FREE", canonical_smiles=KETOROLAC, standard_value="20"),
        # two drug-like components: a mixture, whatever counter-ions come with them
        dict(molecule_chembl_id="TWO_DRUGS", canonical_smiles=f"{IBUPROFEN}.CN1CCC[C@H]1c1cccnc1.Cl",
             standard_value="5"),
        # ethanol and benzene: neither is the compound (ethanol was kept, benzene stripped as a solvent)
        dict(molecule_chembl_id="SOLVENTS", canonical_smiles="CCO.c1ccccc1", standard_value="5"),
        dict(molecule_chembl_id="TRIS_TEA", canonical_smiles="NC(CO)(CO)CO.CCN(CC)CC", standard_value="5"),
        dict(molecule_chembl_id="HYDRATE", canonical_smiles="CCO.O", standard_value="5"),  # ethanol itself
        dict(molecule_chembl_id="NA_ACETATE", canonical_smiles="CC(=O)[O-].[Na+]", standard_value="5"),
    ]
    with caplog.at_level(logging.WARNING, logger="screenbai.chem"):
        lib, rep = curate_activities(_raw(rows))
    _check_invariant(rep)
    assert rep.dropped == {"mixture of several compounds": 1, "no parent: only solvents and counter-ions": 2}
    named = {cid: why for cid, why, _ in rep.structures_dropped}
    assert named == {"TWO_DRUGS": "mixture of several compounds",
                     "SOLVENTS": "no parent: only solvents and counter-ions",
                     "TRIS_TEA": "no parent: only solvents and counter-ions"}
    assert lib.set_index("compound_id").loc["FREE", "source_ids"] == "FREE;SALT"
    assert sorted(lib["smiles"]) == ["CC(=O)O", "CCO", "O=C(c1ccccc1)c1ccc2n1CCC2C(=O)O"]
    assert "SOLVENTS (no parent: only solvents and counter-ions)" in caplog.text


# ------------------------------------------------------------------ several activity types
MIXED_TYPES = [
    dict(molecule_chembl_id="A", canonical_smiles="CCO", standard_value="10", standard_type="IC50"),
    dict(molecule_chembl_id="A", canonical_smiles="CCO", standard_value="1000", standard_type="Ki"),
    dict(molecule_chembl_id="B", canonical_smiles="CCN", standard_value="50", standard_type="Ki"),
    dict(molecule_chembl_id="C", canonical_smiles="CCC", standard_value="7", standard_type="IC50"),
]


def test_several_activity_types_are_never_merged_silently(caplog):
    """IC50 and Ki of one compound were merged into one median (100 nM here, neither value)."""
    with pytest.raises(ValueError, match=r"several activity types: IC50 \(2 rows\), Ki \(2 rows\).*combine_types"):
        curate_activities(_raw(MIXED_TYPES), activity_types=["IC50", "Ki"])
    lib, rep = curate_activities(_raw(MIXED_TYPES), activity_types=["IC50", "Ki"], combine_types="first_listed")
    _check_invariant(rep)
    assert rep.dropped == {"another activity type listed first": 1}
    assert dict(zip(lib["compound_id"], lib["activity_nM"])) == {"A": 10.0, "B": 50.0, "C": 7.0}
    lib, _ = curate_activities(_raw(MIXED_TYPES), activity_types=["Ki", "IC50"], combine_types="first_listed")
    assert dict(zip(lib["compound_id"], lib["activity_nM"])) == {"A": 1000.0, "B": 50.0, "C": 7.0}
    with caplog.at_level(logging.WARNING, logger="screenbai.chem"):
        lib, rep = curate_activities(_raw(MIXED_TYPES), activity_types=["IC50", "Ki"], combine_types="median")
    assert lib.set_index("compound_id").loc["A", "activity_nM"] == pytest.approx(100.0)
    assert rep.mixed_type_compounds == 1 and rep.settings["combine_types"] == "median"
    assert "1 compounds' values combine several activity types" in caplog.text
    # all types kept (activity_types empty): the same refusal; one type present: nothing to combine
    with pytest.raises(ValueError, match="combine_types"):
        curate_activities(_raw(MIXED_TYPES), activity_types=[])
    with pytest.raises(ValueError, match="activity_types is empty"):
        curate_activities(_raw(MIXED_TYPES), activity_types=[], combine_types="first_listed")
    with pytest.raises(ValueError, match="combine_types='mean'"):
        curate_activities(_raw(MIXED_TYPES), combine_types="mean")  # type: ignore[arg-type]
    lib, _ = curate_activities(_raw([MIXED_TYPES[0], MIXED_TYPES[3]]), activity_types=["IC50", "Ki"])
    assert len(lib) == 2


def test_a_config_keeping_several_types_must_say_how_to_combine_them():
    from screenbai.screening import activity_types_of

    chembl = {"kind": "chembl", "target_chembl_id": "CHEMBL1", "activity_types": ["IC50", "Ki"]}
    with pytest.raises(ValueError, match="curation.combine_types: first_listed"):
        activity_types_of({"source": chembl})
    with pytest.raises(ValueError, match="curation.combine_types"):
        activity_types_of({"source": {"kind": "export", "path": "x"}, "curation": {"activity_types": ["IC50", "Ki"]}})
    assert activity_types_of({"source": chembl, "curation": {"combine_types": "median"}}) == ["IC50", "Ki"]


# ------------------------------------------------------------------ values from pchembl_value
def test_rows_with_only_a_pchembl_value_are_recovered(caplog):
    base = dict(canonical_smiles="CCO", standard_value=None, standard_units=None)
    rows = [
        dict(base, molecule_chembl_id="P7", pchembl_value="7.0"),  # 100 nM
        dict(base, molecule_chembl_id="P9", canonical_smiles="CCN", pchembl_value=9, standard_relation=None),
        dict(base, molecule_chembl_id="CENSORED", canonical_smiles="CCC", pchembl_value="6", standard_relation=">"),
        dict(base, molecule_chembl_id="OUT", canonical_smiles="CCS", pchembl_value="16"),
        dict(base, molecule_chembl_id="TEXT", canonical_smiles="CCCl", pchembl_value="n.d."),
        dict(base, molecule_chembl_id="NONE", canonical_smiles="CCBr"),
        dict(base, molecule_chembl_id="FLAGGED", canonical_smiles="CCF", pchembl_value="8",
             data_validity_comment="Outside typical range"),
    ]
    frame = _raw(rows).assign(pchembl_value=[r.get("pchembl_value") for r in rows])
    with caplog.at_level(logging.WARNING, logger="screenbai.chem"):
        lib, rep = curate_activities(frame)
    _check_invariant(rep)
    assert dict(zip(lib["compound_id"], lib["activity_nM"])) == {"P7": pytest.approx(100.0), "P9": 1.0}
    assert rep.dropped == {"missing value": 4, "flagged: data validity comment": 1}
    assert rep.altered == {"value recovered from pchembl_value": 2}
    counts = rep.to_frame().set_index("reason")["count"]
    assert counts["kept, value recovered from pchembl_value"] == 2 and counts["kept"] == 0
    assert "2 rows without standard_value kept with the value recovered from pchembl_value" in caplog.text


# ------------------------------------------------------------------ messages
@pytest.mark.parametrize("typed, says, not_says", [
    ("1,000", ["a thousands separator (1,000)?", "1,000 meaning 1.0"], ["a decimal comma?"]),
    ("12,500,000", ["a thousands separator (12,500,000)?", "(e.g. 12500000 for 12,500,000)"],
     ["a decimal comma", "meaning 1.0"]),
    ("5,5", ["a decimal comma? write numbers with a decimal point"], ["thousands"]),
    ("0,5", ["a decimal comma? write numbers with a decimal point (e.g. 0.5 for 0,5)"], ["thousands"]),
])
def test_a_comma_in_a_value_is_named_for_what_it_may_be(typed, says, not_says):
    with pytest.raises(ValueError) as info:
        curate_activities(_raw([dict(canonical_smiles="CCO", standard_value=typed)]))
    for s in says:
        assert s in str(info.value)
    for s in not_says:
        assert s not in str(info.value)

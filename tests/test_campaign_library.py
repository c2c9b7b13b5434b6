"""Library import: every input row that is not an arm is reported with its reason; features are
the workflow's Morgan + PCA code plus an intercept."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from screenbai.campaign import import_library
from screenbai.chem.featurize import morgan_fingerprints, reduce_pca

GOOD = ["CCO", "c1ccccc1O", "CC(=O)Nc1ccc(O)cc1", "CCN(CC)CC", "C1CCNCC1", "Oc1ccncc1", "CC(C)Cc1ccc(cc1)C(C)C(=O)O"]


def _csv(tmp_path, rows, sep=","):
    p = tmp_path / "lib.csv"
    lines = [sep.join(["name", "structure", "note"])] + [sep.join([i, s, "x"]) for i, s in rows]
    p.write_text("\n".join(lines) + "\n")
    return p


def test_rejected_rows_by_reason(tmp_path):
    rows = [(f"C{i}", s) for i, s in enumerate(GOOD)] + [
        ("", "CCCC"),  # line 9: missing id
        ("B1", ""),  # line 10: missing SMILES
        ("B2", "C1CC(C"),  # line 11: unparseable
        ("C0", "c1ccccc1"),  # line 12: id C0 already used for another structure
        ("B3", "OCC"),  # line 13: same structure as C0 (ethanol)
        ("B4", "[Na+].[O-]c1ccccc1"),  # line 14: phenolate salt -> phenol, same as C1
        ("C2", "c1ccccc1O"),  # line 15: C2 again with C1's structure: another structure than C2's
        ("C2", "CC(=O)Nc1ccc(O)cc1"),  # line 16: C2 listed again with its own structure: one arm, reported
    ]
    lib = import_library(_csv(tmp_path, rows), id_column="name", smiles_column="structure", d=3)
    assert list(lib.compounds["compound_id"]) == [f"C{i}" for i in range(len(GOOD))]
    rej = lib.rejected.set_index("source_row")
    assert rej.loc[9, "reason"] == "missing id"
    assert rej.loc[10, "reason"] == "missing SMILES"
    assert rej.loc[11, "reason"] == "unparseable SMILES"
    assert rej.loc[12, "reason"] == "duplicate id"
    assert rej.loc[13, "reason"] == "duplicate structure" and "C0" in rej.loc[13, "detail"]
    assert rej.loc[14, "reason"] == "duplicate structure" and "C1" in rej.loc[14, "detail"]
    assert rej.loc[15, "reason"] == "duplicate id"
    assert rej.loc[16, "reason"] == "repeated compound" and "row 4" in rej.loc[16, "detail"]
    assert len(rej) == 8  # every input row is an arm or reported
    assert lib.rejected_counts() == {
        "duplicate id": 2,
        "duplicate structure": 2,
        "missing SMILES": 1,
        "missing id": 1,
        "repeated compound": 1,
        "unparseable SMILES": 1,
    }


def test_a_tautomer_of_a_listed_compound_is_named_as_such(tmp_path):
    """2-pyridone beside 2-hydroxypyridine shares its standard InChIKey (one compound in solution) and was reported as
    "same standardized structure", which it is not: the detail names the tautomer and the first compound's form."""
    rows = [(f"C{i}", s) for i, s in enumerate(GOOD)] + [("T1", "Oc1ccccn1"), ("T2", "O=c1cccc[nH]1")]
    lib = import_library(_csv(tmp_path, rows), id_column="name", smiles_column="structure", d=3)
    (detail,) = lib.rejected.loc[lib.rejected["compound_id"] == "T2", "detail"]
    assert detail.startswith("a tautomer of T1's structure (Oc1ccccn1; one compound in solution), standard InChIKey")
    assert "T1" in set(lib.compounds["compound_id"])


def test_rejected_rows_name_their_line_in_the_file(tmp_path):
    """Blank lines and a quoted field over two lines: pandas' row index is not the line."""
    p = tmp_path / "lib.csv"
    p.write_text('name,structure\nA,CCO\n\nB,C1CC(C\nC,CCN\n"D\nsalt",c1ccccc1\n\n\nE,XX\nF,CCCC\n')
    lib = import_library(p, id_column="name", smiles_column="structure", d=2)
    assert lib.compounds["source_row"].tolist() == [2, 5, 6, 11]
    assert lib.rejected[["source_row", "compound_id"]].values.tolist() == [[4, "B"], [10, "E"]]


def test_features_are_the_workflow_morgan_pca_plus_intercept(tmp_path):
    rows = [(f"C{i}", s) for i, s in enumerate(GOOD)]
    lib = import_library(
        _csv(tmp_path, rows, sep="\t"), id_column="name", smiles_column="structure", radius=2, n_bits=256, d=4
    )
    scores, _ = reduce_pca(morgan_fingerprints(list(lib.compounds["smiles"]), radius=2, n_bits=256), 4)
    np.testing.assert_array_equal(lib.features[:, :4], scores)
    np.testing.assert_array_equal(lib.features[:, 4], 1.0)
    assert lib.featurizer["radius"] == 2 and lib.featurizer["n_bits"] == 256 and lib.featurizer["d"] == 4
    assert lib.provenance["sha256"] and lib.provenance["n_compounds"] == len(GOOD)


def test_column_errors_name_the_columns(tmp_path):
    p = _csv(tmp_path, [("C0", "CCO")])
    with pytest.raises(ValueError, match=r"SMILES column 'smiles' is not a column.*'structure'"):
        import_library(p, id_column="name", smiles_column="smiles")
    with pytest.raises(ValueError, match="name the id and SMILES columns"):
        import_library(p)


def test_sdf_and_chembl_export(tmp_path):
    from rdkit import Chem

    sdf = tmp_path / "lib.sdf"
    w = Chem.SDWriter(str(sdf))
    for i, s in enumerate(GOOD):
        m = Chem.MolFromSmiles(s)
        m.SetProp("_Name", f"S{i}")
        w.write(m)
    w.close()
    sdf.write_text(sdf.read_text() + "S99 broken\n$$$$\n")
    lib = import_library(sdf, d=2)
    assert list(lib.compounds["compound_id"]) == [f"S{i}" for i in range(len(GOOD))]
    assert lib.rejected[["source_row", "compound_id", "reason"]].values.tolist() == [
        [len(GOOD) + 1, "S99 broken", "unreadable SDF record"]  # not "missing id"
    ]

    head = [
        '"Molecule ChEMBL ID"',
        '"Smiles"',
        '"Standard Type"',
        '"Standard Relation"',
        '"Standard Value"',
        '"Standard Units"',
    ]
    lines = [";".join(head)]
    for i, s in enumerate(GOOD):
        for value in (10, 20):  # two activity rows per molecule: one arm each
            lines.append(";".join(f'"{v}"' for v in (f"CHEMBL{i}", s, "IC50", "'='", value, "nM")))
    export = tmp_path / "export.csv"
    export.write_text("\n".join(lines) + "\n")
    lib = import_library(export, d=2)
    assert lib.provenance["kind"] == "chembl-export"
    assert lib.provenance["activity_rows"] == 2 * len(GOOD)
    assert list(lib.compounds["compound_id"]) == [f"CHEMBL{i}" for i in range(len(GOOD))]
    assert list(lib.compounds["source_row"]) == [2 + 2 * i for i in range(len(GOOD))]  # its first line


def test_featurized_workflow_library(tmp_path):
    (tmp_path / "features").mkdir()
    ids = [f"C{i}" for i in range(len(GOOD))]
    pd.DataFrame({"compound_id": ids, "smiles": GOOD, "activity_nM": 1.0}).to_parquet(tmp_path / "library.parquet")
    X = np.random.default_rng(0).normal(size=(len(GOOD), 3))
    table = pd.DataFrame(X, columns=["pc1", "pc2", "pc3"])
    table.insert(0, "compound_id", ids[::-1])
    table.to_parquet(tmp_path / "features" / "pca_d3.parquet")
    lib = import_library(tmp_path / "features" / "pca_d3.parquet")
    assert list(lib.compounds["compound_id"]) == ids[::-1]
    assert list(lib.compounds["smiles"]) == GOOD[::-1]
    np.testing.assert_array_equal(lib.features, np.hstack([X, np.ones((len(GOOD), 1))]))
    table["compound_id"] = ["C0"] + ids[1:]  # two rows under C0: refused, not an SQLite error at init
    table.loc[1, "compound_id"] = "C0"
    table.to_parquet(tmp_path / "features" / "pca_d3.parquet")
    with pytest.raises(ValueError, match=r"pca_d3.parquet: compound_id 'C0' appear\(s\) on more than one row"):
        import_library(tmp_path / "features" / "pca_d3.parquet")


def test_large_libraries_use_the_chunked_featurizer_with_the_same_scores(tmp_path, monkeypatch):
    import screenbai.chem.fingerprint_store as chem_store
    from screenbai.campaign import library

    rows = [(f"C{i}", s) for i, s in enumerate(GOOD)]
    p = _csv(tmp_path, rows)
    small = import_library(p, id_column="name", smiles_column="structure", radius=2, n_bits=256, d=3)
    calls = []
    real = chem_store.featurize_library
    monkeypatch.setattr(
        chem_store, "featurize_library", lambda *a, **k: calls.append(1) or real(*a, **{**k, "n_jobs": 1})
    )
    monkeypatch.setattr(library, "CHUNKED_ABOVE", 3)
    big = import_library(p, id_column="name", smiles_column="structure", radius=2, n_bits=256, d=3)
    assert calls == [1]
    np.testing.assert_allclose(big.features, small.features, rtol=0, atol=1e-10)


def test_fingerprint_settings_are_checked_before_d(tmp_path):
    """--bits 0 said 'choose 1 <= d <= 0'."""
    p = _csv(tmp_path, [(f"C{i}", s) for i, s in enumerate(GOOD)])
    with pytest.raises(ValueError, match=r"--bits >= 1 and --radius >= 0; got bits = 0"):
        import_library(p, id_column="name", smiles_column="structure", n_bits=0, d=2)


def test_principal_components_the_fingerprints_do_not_span_are_refused(tmp_path):
    """--d 7 on 7 compounds was taken ("choose 1 <= d <= 7"): 7 points centred on their mean span 6 directions,
    and the 7th feature was rounding noise (1e-15) along an arbitrary direction, on which a compound added later
    got an arbitrary score. Stereoisomers (one fingerprint) span fewer still: the message says how many."""
    rows = [(f"C{i}", s) for i, s in enumerate(GOOD)]
    with pytest.raises(ValueError, match=r"d = 7 principal components \(--d\): choose 1 <= d <= 6 for 7 compounds"):
        import_library(_csv(tmp_path, rows), id_column="name", smiles_column="structure", d=7)
    lib = import_library(_csv(tmp_path, rows), id_column="name", smiles_column="structure", d=6)
    assert np.abs(lib.features[:, :-1]).std(axis=0).min() > 1e-6
    stereo = [("R", "C[C@H](N)C(=O)O"), ("S", "C[C@@H](N)C(=O)O"), ("X", "CC(N)C(=O)O"), ("Y", "CCN"), ("Z", "CCCCN")]
    with pytest.raises(ValueError, match=r"vary along only 2 \(compounds with the same fingerprint.*choose --d 2"):
        import_library(_csv(tmp_path, stereo), id_column="name", smiles_column="structure", d=3)
    assert import_library(_csv(tmp_path, stereo), id_column="name", smiles_column="structure", d=2).features.shape \
        == (5, 3)


def test_an_sdf_without_titles_names_its_properties(tmp_path):
    """An SDF whose title lines are all empty (ids in an SD property) was refused as 'only 0 usable structure(s)
    ... (rejected: {'missing id': 7})', without the way on: the message now names the SD properties for --id-column."""
    from rdkit import Chem

    sdf = tmp_path / "untitled.sdf"
    with Chem.SDWriter(str(sdf)) as w:
        for i, s in enumerate(GOOD):
            mol = Chem.MolFromSmiles(s)
            mol.SetProp("Corp ID", f"CORP-{i}")
            w.write(mol)
    with pytest.raises(ValueError, match=r"untitled.sdf: the title line of every record is empty, .* with --id-column "
                       r"\(properties: \['Corp ID'\]\)"):
        import_library(sdf, d=2)
    lib = import_library(sdf, id_column="Corp ID", d=2)
    assert list(lib.compounds["compound_id"]) == [f"CORP-{i}" for i in range(len(GOOD))]


def test_a_library_with_too_few_usable_rows_names_the_first_rejected(tmp_path):
    """'only 1 usable structure(s) out of 150 rows ... (rejected: {'missing id': 75, 'duplicate id': 74})' named no
    row, and no rejected-rows file is written when init stops there: the first rejected rows are named."""
    p = _csv(tmp_path, [("A", "CCO"), ("A", "CCN"), ("", "CCC")])
    with pytest.raises(ValueError, match=r"only 1 usable structure\(s\) out of 3 rows; .*the first: row 3: "
                       r"duplicate id \(id A already used for another structure \(row 2\)\); row 4: missing id\)"):
        import_library(p, id_column="name", smiles_column="structure", d=1)


def test_text_after_a_smiles_is_rejected_not_cut_off(tmp_path):
    """'CC O' was read as ethane (RDKit takes what follows a blank for a name), an arm no one drew."""
    path = tmp_path / "lib.csv"
    path.write_text("id,smiles\nA,CC O\nB,c1ccccc1 Cl\nC,CCN\nD,CCCN\n")
    lib = import_library(path, id_column="id", smiles_column="smiles", d=1, n_bits=64, radius=1)
    assert lib.compounds["compound_id"].tolist() == ["C", "D"]
    assert lib.rejected[["source_row", "compound_id", "reason"]].values.tolist() == [
        [2, "A", "text after the SMILES"], [3, "B", "text after the SMILES"]]


def test_a_racemate_is_not_a_duplicate_of_its_enantiomer(tmp_path):
    """CXSMILES' enhanced stereo was dropped: the racemate '|&1:1|' was rejected as a duplicate of (S), and
    the second peak of a chiral separation ('|o1:1|' under another id) as a duplicate of the first."""
    path = tmp_path / "lib.tsv"
    path.write_text("id\tsmiles\nS\tC[C@H](N)C(=O)O\nRAC\tC[C@@H](N)C(=O)O |&1:1|\nP1\tC[C@H](N)C(=O)O |o1:1|\n"
                    "P2\tC[C@H](N)C(=O)O |o1:1|\nRAC2\tC[C@H](N)C(=O)O |&1:1|\nX\tCCCCO\n")
    lib = import_library(path, id_column="id", smiles_column="smiles", d=1, n_bits=64, radius=1)
    assert lib.compounds[["compound_id", "smiles"]].values.tolist() == [
        ["S", "C[C@H](N)C(=O)O"], ["RAC", "C[C@H](N)C(=O)O |&1:1|"], ["P1", "C[C@H](N)C(=O)O |o1:1|"],
        ["P2", "C[C@H](N)C(=O)O |o1:1|"], ["X", "CCCCO"]]
    assert lib.rejected[["compound_id", "reason"]].values.tolist() == [["RAC2", "duplicate structure"]]


ALLENES = "id,smiles\nM,CC=[C@]=CC\nP,CC=[C@@]=CC\nM2,CC=[C@]=CC\nX,CCCCO\nY,CCN\nZ,OCCCC\n"


def test_allene_enantiomers_are_two_compounds_and_the_same_smiles_twice_one(tmp_path, caplog):
    """RDKit reads CC=[C@]=CC and CC=[C@@]=CC as CC=C=CC (one standard InChIKey): the library refused the second
    enantiomer as a duplicate structure of the first.  The key is curation's (screenbai.chem.standardize.same_compound):
    stereoisomers stay apart, the same SMILES written twice is still one compound (the second reported), and the
    structures kept by their SMILES as written are named in the log as curation names them."""
    import logging

    path = tmp_path / "lib.csv"
    path.write_text(ALLENES)
    with caplog.at_level(logging.WARNING, logger="screenbai.campaign"):
        lib = import_library(path, id_column="id", smiles_column="smiles", d=1, n_bits=64, radius=1)
    assert lib.compounds["compound_id"].tolist() == ["M", "P", "X", "Y"]
    assert lib.rejected[["compound_id", "reason"]].values.tolist() == [
        ["M2", "duplicate structure"], ["Z", "duplicate structure"]]
    detail = dict(zip(lib.rejected["compound_id"], lib.rejected["detail"]))
    assert detail["M2"].startswith("the same SMILES as written as M, whose stereo RDKit cannot hold")
    assert detail["Z"].startswith("same standardized structure, standard InChIKey")  # OCCCC is X: as before
    assert "2 structures specify stereo RDKit cannot hold" in caplog.text
    assert "CC=[C@]=CC, CC=[C@@]=CC" in caplog.text


def test_a_campaign_file_made_before_still_opens_and_add_uses_the_same_key(tmp_path):
    """The compound key is not stored: a campaign file holds each compound's standardized SMILES (CC=C=CC for an
    allene) and its SMILES as given.  A file whose compounds are written as before opens, and `add` finds the
    stored compound a new row is by the same key as init: the other enantiomer of a stored allene is new (it was
    'structure already in the campaign', matched on CC=C=CC), the same allene SMILES under another id, and another
    spelling of a stored compound, are not."""
    from campaign_util import synthetic_library

    from screenbai.campaign import Campaign
    from screenbai.campaign.state.changes import read_new_compounds

    lib = synthetic_library(K=4, d=1)
    lib.compounds["smiles"] = ["CC=C=CC", "CCCCO", "CCN", "C[C@H](N)C(=O)O |o1:1|"]  # as init wrote them
    lib.compounds["input_smiles"] = ["CC=[C@]=CC", "CCCCO", "CCN", "C[C@H](N)C(=O)O |o1:1|"]
    Campaign.create(tmp_path / "c.campaign", lib, "glgape", {"epsilon": 0.1}, seed=1).close()
    camp = Campaign.open(tmp_path / "c.campaign")
    assert list(camp.compound_ids) == ["CPD0000", "CPD0001", "CPD0002", "CPD0003"]
    new = tmp_path / "new.csv"
    new.write_text("id,smiles\nP,CC=[C@@]=CC\nM2,CC=[C@]=CC\nB,OCCCC\nNEWN,NCC\nP2,C[C@H](N)C(=O)O |o1:1|\n")
    kept, rejected = read_new_compounds(camp, new, id_column="id", smiles_column="smiles")
    # '|o1:1|' under another id may be the other peak of a chiral separation: kept apart, as init does
    assert kept["compound_id"].tolist() == ["P", "P2"]
    assert rejected[["compound_id", "reason", "detail"]].values.tolist() == [
        ["M2", "structure already in the campaign", "same standardized structure as CPD0000"],
        ["B", "structure already in the campaign", "same standardized structure as CPD0001"],
        ["NEWN", "structure already in the campaign", "same standardized structure as CPD0002"]]
    camp.close()


@pytest.mark.parametrize("stored, added", [("Oc1ccccn1", "O=c1cccc[nH]1"), ("O=c1cccc[nH]1", "Oc1ccccn1")])
def test_add_refuses_a_tautomer_of_a_stored_compound_as_init_does(tmp_path, stored, added):
    """init refuses 2-pyridone listed beside 2-hydroxypyridine (one standard InChIKey: one compound in solution);
    `add` took it as a new compound, a second arm for the same compound (it looked only at stored compounds with
    the same standardized SMILES). Both now apply same_compound to the standardization's key. A structure with the
    same heavy atoms that is no tautomer (3-hydroxypyridine) is still added."""
    from campaign_util import synthetic_library

    from screenbai.campaign import Campaign
    from screenbai.campaign.state.changes import read_new_compounds

    rows = [(f"C{i}", s) for i, s in enumerate(GOOD)] + [("T1", stored), ("T2", added)]
    at_init = import_library(_csv(tmp_path, rows), id_column="name", smiles_column="structure", d=3).rejected
    assert at_init.loc[at_init["compound_id"] == "T2", "reason"].tolist() == ["duplicate structure"]
    lib = synthetic_library(K=4, d=1)
    lib.compounds["smiles"] = ["CCCCO", stored, "CCN", "c1ccccc1"]
    lib.compounds["input_smiles"] = list(lib.compounds["smiles"])
    Campaign.create(tmp_path / "c.campaign", lib, "glgape", {"epsilon": 0.1}, seed=1).close()
    new = tmp_path / "new.csv"
    new.write_text(f"id,smiles\nT2,{added}\nISO,Oc1cccnc1\n")
    with Campaign.open(tmp_path / "c.campaign") as camp:
        kept, rejected = read_new_compounds(camp, new, id_column="id", smiles_column="smiles")
    assert kept["compound_id"].tolist() == ["ISO"]
    assert rejected[["compound_id", "reason", "detail"]].values.tolist() == [
        ["T2", "structure already in the campaign", f"a tautomer of CPD0001's structure ({stored}; one compound in "
         "solution)"]]


def test_may_be_same_finds_every_stored_structure_of_one_key_and_few_others():
    """The index add uses before standardizing stored compounds again: tautomers, stereoisomers and the same
    structure are found (same heavy atoms, same graph); other isomers with the same atoms (3-hydroxypyridine beside
    2-pyridone, propanol beside acetone) are not."""
    from screenbai.chem.standardize import may_be_same

    stored = ["Oc1ccccn1", "Oc1cccnc1", "C[C@H](N)C(=O)O", "CC(=O)C", "CCCO", "Clc1ccccc1", "C[C@H](N)C(=O)O |o1:1|"]
    got = may_be_same(["O=c1cccc[nH]1", "C[C@@H](N)C(=O)O", "C=C(O)C", "CCCCl", "CC(C)O"], stored)
    assert got == [[0], [2, 6], [3], [], [3]]  # isopropanol's graph is acetone's: a candidate, same_compound decides

"""The chunked fingerprint store and the chunk-by-chunk PCA against the in-memory path."""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("rdkit")

from screenbai.chem.featurize import morgan_fingerprints, reduce_pca, smiles_problem
from screenbai.chem.fingerprint_store import (
    FingerprintStore,
    build_fingerprint_store,
    featurize_library,
    store_pca,
)

# small drug-like molecules; the invalid ones below are inserted at known rows
BASE = [
    "CCO", "c1ccccc1", "CC(=O)Oc1ccccc1C(=O)O", "CN1CCC[C@H]1c1cccnc1", "CC(C)Cc1ccc(cc1)C(C)C(=O)O",
    "O=C(O)c1ccccc1O", "CCN(CC)CC", "c1ccc2ccccc2c1", "CC(=O)Nc1ccc(O)cc1", "C1CCCCC1",
    "OC1=CC=CC=C1", "N#Cc1ccccc1", "CCOC(=O)C", "CCCCCCCC", "Clc1ccc(Cl)cc1", "CS(=O)(=O)N",
    "C1=CC=C(C=C1)N", "O=C1CCCCC1", "CC1=CC(=O)C=CC1=O", "c1ccncc1", "OCC(O)CO", "CC(C)(C)O",
]
LIBRARY = [f"{s}.{t}" if k % 3 == 0 else s for k, (s, t) in enumerate(zip(BASE * 3, BASE[::-1] * 3))]
INVALID = {4: ("C1CC", "syntax error"), 9: ("", "empty"), 30: ("C(C)(C)(C)(C)C", "valence error"),
           50: ("c1cccc1", "kekulization error")}
for row, (smi, _) in INVALID.items():
    LIBRARY.insert(row, smi)
VALID_ROWS = [i for i in range(len(LIBRARY)) if i not in INVALID]


def test_smiles_problem_names_the_reason():
    for smi, reason in INVALID.values():
        assert smiles_problem(smi) == reason
    assert smiles_problem(None) == "empty"
    assert smiles_problem(3.5) == "not text"
    assert smiles_problem("CCO") is None


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_store_equals_in_memory_path(tmp_path, n_jobs):
    features, info = featurize_library(LIBRARY, tmp_path / "store", d=5, chunk_size=7, n_jobs=n_jobs, progress=False)
    good = [LIBRARY[i] for i in VALID_ROWS]
    expected, expected_info = reduce_pca(morgan_fingerprints(good), 5)
    np.testing.assert_array_equal(features, expected)
    np.testing.assert_array_equal(info["components"], expected_info["components"])
    np.testing.assert_array_equal(info["row"], VALID_ROWS)
    store = FingerprintStore(tmp_path / "store")
    np.testing.assert_array_equal(store.to_array()[VALID_ROWS], morgan_fingerprints(good))
    assert not store.to_array()[list(INVALID)].any()
    report = info["invalid"]
    assert report["row"].tolist() == sorted(INVALID)
    assert report["reason"].tolist() == [INVALID[r][1] for r in sorted(INVALID)]
    assert info["invalid_by_reason"] == {reason: 1 for _, reason in INVALID.values()}
    assert store.n_chunks == -(-len(LIBRARY) // 7)


def test_file_source_read_in_chunks(tmp_path):
    path = tmp_path / "lib.csv.gz"
    pd.DataFrame({"id": range(len(LIBRARY)), "SMILES": LIBRARY}).to_csv(path, index=False)
    from_file = build_fingerprint_store(path, tmp_path / "a", chunk_size=10, n_jobs=1, progress=False)
    from_list = build_fingerprint_store(LIBRARY, tmp_path / "b", chunk_size=10, n_jobs=1, progress=False)
    np.testing.assert_array_equal(from_file.to_array(), from_list.to_array())
    assert from_file.invalid()["row"].tolist() == sorted(INVALID)
    with pytest.raises(ValueError, match="no column 'smi'"):
        build_fingerprint_store(path, tmp_path / "c", smiles_column="smi", progress=False)


def test_sampled_pca_projects_every_chunk_like_the_fitted_model(tmp_path):
    store = build_fingerprint_store(LIBRARY, tmp_path, chunk_size=8, n_jobs=1, progress=False)
    features, info = store_pca(store, 4, sample_size=25, random_state=3, progress=False)
    assert info["sample_size"] == 25 and features.shape == (len(VALID_ROWS), 4)
    bits = morgan_fingerprints([LIBRARY[i] for i in VALID_ROWS]).astype(float)
    np.testing.assert_allclose(features, (bits - info["mean"]) @ info["components"].T, atol=1e-12)
    again, _ = store_pca(store, 4, sample_size=25, random_state=3, progress=False)
    np.testing.assert_array_equal(features, again)
    other, _ = store_pca(store, 4, sample_size=25, random_state=4, progress=False)
    assert not np.allclose(np.abs(other), np.abs(features))


def test_interrupted_run_resumes_at_the_missing_chunks(tmp_path):
    complete = build_fingerprint_store(LIBRARY, tmp_path / "ref", chunk_size=6, n_jobs=1, progress=False)
    store_dir = tmp_path / "store"
    build_fingerprint_store(LIBRARY, store_dir, chunk_size=6, n_jobs=1, progress=False)
    # an interruption: the last chunks never written, the manifest not marked complete
    for i in (7, 8, 9, 10):
        (store_dir / f"chunk{i:06d}.json").unlink()
    (store_dir / "chunk000010.npy").unlink()
    manifest = json.loads((store_dir / "manifest.json").read_text())
    (store_dir / "manifest.json").write_text(json.dumps({**manifest, "complete": False}))
    with pytest.raises(ValueError, match="incomplete"):
        FingerprintStore(store_dir)
    for i in range(7):  # mark the finished chunks so that we can see they are not rewritten
        os.utime(store_dir / f"chunk{i:06d}.npy", (1, 1))
    resumed = build_fingerprint_store(LIBRARY, store_dir, chunk_size=6, n_jobs=2, progress=False)
    assert all((store_dir / f"chunk{i:06d}.npy").stat().st_mtime == 1 for i in range(7))
    assert all((store_dir / f"chunk{i:06d}.npy").stat().st_mtime > 1 for i in range(7, 11))
    np.testing.assert_array_equal(resumed.to_array(), complete.to_array())
    pd.testing.assert_frame_equal(resumed.invalid(), complete.invalid())


def test_store_of_another_library_or_parameters_is_refused(tmp_path):
    build_fingerprint_store(LIBRARY, tmp_path, chunk_size=6, n_jobs=1, progress=False)
    changed = list(LIBRARY)
    changed[13] = "CCN"
    with pytest.raises(ValueError, match="chunk 2 was computed from other SMILES"):
        build_fingerprint_store(changed, tmp_path, chunk_size=6, n_jobs=1, progress=False)
    with pytest.raises(ValueError, match="radius: 4 there, 2 asked"):
        build_fingerprint_store(LIBRARY, tmp_path, radius=2, chunk_size=6, n_jobs=1, progress=False)
    with pytest.raises(ValueError, match="more chunks than this library"):
        build_fingerprint_store(LIBRARY[:18], tmp_path, chunk_size=6, n_jobs=1, progress=False)

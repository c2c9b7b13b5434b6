"""Morgan fingerprints (current RDKit generator API) and PCA."""

from __future__ import annotations

import numpy as np
import pytest

from screenbai.chem.featurize import morgan_fingerprints, reduce_pca

SMILES = ["c1ccccc1", "CCO", "CC(=O)Oc1ccccc1C(=O)O", "CCN(CC)CC", "c1ccc2[nH]ccc2c1", "OC(=O)CCc1ccccc1",
          "CC(C)Cc1ccc(cc1)C(C)C(=O)O", "Nc1ncnc2[nH]cnc12", "CCCCCCCCO", "O=C1NC(=O)c2ccccc12"]


def test_known_bits_simple_molecules():
    from rdkit import Chem
    from rdkit.Chem import rdFingerprintGenerator

    fp = morgan_fingerprints(["c1ccccc1", "CCO"], radius=4, n_bits=1024)
    assert fp.shape == (2, 1024) and fp.dtype == np.uint8 and set(np.unique(fp)) <= {0, 1}
    # benzene: one environment per radius 0..3 (radius 3 spans the ring); ethanol: 6
    assert fp.sum(axis=1).tolist() == [4, 6]
    gen = rdFingerprintGenerator.GetMorganGenerator(radius=4, fpSize=1024)
    for row, smi in zip(fp, ["c1ccccc1", "CCO"]):
        expected = list(gen.GetFingerprint(Chem.MolFromSmiles(smi)).GetOnBits())
        assert np.flatnonzero(row).tolist() == expected
    # radius and length are honoured
    assert morgan_fingerprints(["c1ccccc1"], radius=1, n_bits=2048).shape == (1, 2048)
    assert morgan_fingerprints(["c1ccccc1"], radius=1).sum() == 2


def test_fingerprints_deterministic_and_bad_smiles():
    a = morgan_fingerprints(SMILES)
    b = morgan_fingerprints(list(reversed(SMILES)))[::-1]
    np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match=r"index 2: 'C1CC\('"):
        morgan_fingerprints(["CCO", "CCN", "C1CC("])
    with pytest.raises(ValueError, match="index 0"):
        morgan_fingerprints([None])


def test_pca_variance_order_centering_and_determinism():
    fp = morgan_fingerprints(SMILES * 3 + ["CCCC", "CCCCN", "c1ccncc1"])
    X, info = reduce_pca(fp, 5)
    assert X.shape == (len(fp), 5) and X.dtype == np.float64
    evr = info["explained_variance_ratio"]
    assert np.all(np.diff(evr) <= 1e-12) and 0 < evr.sum() <= 1 + 1e-12
    assert info["explained_variance_ratio_total"] == pytest.approx(evr.sum())
    np.testing.assert_allclose(X.mean(axis=0), 0, atol=1e-10)  # centered
    col_var = X.var(axis=0)
    assert np.all(np.diff(col_var) <= 1e-9)
    np.testing.assert_allclose((fp - info["mean"]) @ info["components"].T, X, atol=1e-10)
    X2, _ = reduce_pca(fp, 5)
    np.testing.assert_array_equal(X, X2)


def test_pca_d_bounds():
    fp = morgan_fingerprints(SMILES)  # 10 molecules
    X, _ = reduce_pca(fp, 10)
    assert X.shape == (10, 10)
    with pytest.raises(ValueError, match=r"d=11 .*1 <= d <= 10"):
        reduce_pca(fp, 11)
    with pytest.raises(ValueError, match="d=0"):
        reduce_pca(fp, 0)
    with pytest.raises(ValueError, match="2-D"):
        reduce_pca(fp[0], 2)


def test_pca_refuses_constant_fingerprints():
    fp = morgan_fingerprints(["CCO"] * 6)  # one structure: no bit varies
    with pytest.raises(ValueError, match="all 6 fingerprints are identical"):
        reduce_pca(fp, 2)
    with pytest.raises(ValueError, match="identical"):
        reduce_pca(np.zeros((4, 32), dtype=np.uint8), 1)
    X, info = reduce_pca(morgan_fingerprints(["CCO"] * 5 + ["CCN"]), 1)  # one differing row is enough
    assert info["explained_variance_ratio_total"] == pytest.approx(1.0) and np.ptp(X) > 0

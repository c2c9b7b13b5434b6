"""Molecular features: Morgan fingerprint bits and their PCA projection."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

logger = logging.getLogger("screenbai.chem")

__all__ = ["morgan_fingerprints", "reduce_pca", "smiles_problem"]


def smiles_problem(smiles: Any) -> str | None:
    """Why RDKit cannot read ``smiles``, in a few words (``None`` if it can).

    One of ``"empty"``, ``"not text"``, ``"syntax error"``, ``"valence error"``,
    ``"kekulization error"``, ``"sanitization error"``.
    """
    from rdkit import Chem
    from rdkit.rdBase import BlockLogs

    if not isinstance(smiles, str):
        return "empty" if smiles is None or (isinstance(smiles, float) and np.isnan(smiles)) else "not text"
    if not smiles.strip():
        return "empty"
    with BlockLogs():
        mol = Chem.MolFromSmiles(smiles, sanitize=False)
        if mol is None:
            return "syntax error"
        try:
            Chem.SanitizeMol(mol)
        except Chem.AtomValenceException:
            return "valence error"
        except (Chem.KekulizeException, Chem.AtomKekulizeException):
            return "kekulization error"
        except Chem.MolSanitizeException:
            return "sanitization error"
    return None


def morgan_fingerprints(smiles: Sequence[str], radius: int = 4, n_bits: int = 1024) -> np.ndarray:
    """Morgan (ECFP-like) bit vectors from SMILES with RDKit's fingerprint generator.

    Parameters
    ----------
    smiles : sequence of str
        One SMILES per compound (e.g. ``library["smiles"]``).
    radius : int
        Morgan radius (the CDK2 study uses 4).
    n_bits : int
        Fingerprint length (the CDK2 study uses 1024).

    Returns
    -------
    numpy.ndarray
        ``(n, n_bits)`` ``uint8`` array of 0/1.

    Raises
    ------
    ValueError
        If a SMILES cannot be parsed (the message names its index and text), or if
        ``radius``/``n_bits`` are not positive.
    """
    from rdkit import Chem
    from rdkit.Chem import rdFingerprintGenerator
    from rdkit.rdBase import BlockLogs

    if int(radius) < 0 or int(n_bits) < 1:
        raise ValueError(f"radius={radius} and n_bits={n_bits} must be >= 0 and >= 1")
    smiles = list(smiles)
    generator = rdFingerprintGenerator.GetMorganGenerator(radius=int(radius), fpSize=int(n_bits))
    out = np.zeros((len(smiles), int(n_bits)), dtype=np.uint8)
    with BlockLogs():
        for i, s in enumerate(smiles):
            mol = Chem.MolFromSmiles(s) if isinstance(s, str) and s.strip() else None
            if mol is None:
                raise ValueError(
                    f"cannot parse SMILES at index {i}: {s!r} ({smiles_problem(s)}); curate the library first "
                    "(screenbai.chem.curate_activities drops unparseable structures)"
                )
            out[i] = generator.GetFingerprintAsNumPy(mol)
    return out


def reduce_pca(fingerprints: np.ndarray, d: int, random_state: int = 0) -> tuple[np.ndarray, dict[str, Any]]:
    """Project fingerprints onto their first ``d`` principal components (centered PCA).

    Parameters
    ----------
    fingerprints : array-like, shape (n, n_bits)
        E.g. the output of :func:`morgan_fingerprints`.
    d : int
        Number of components, ``1 <= d <= min(n, n_bits)``.
    random_state : int
        Passed to scikit-learn (the full SVD used here is deterministic anyway).

    Returns
    -------
    features : numpy.ndarray
        ``(n, d)`` float64 scores.
    info : dict
        ``explained_variance_ratio`` (d,), ``explained_variance_ratio_total``,
        ``components`` (d, n_bits), ``mean`` (n_bits,) (to project new molecules:
        ``(fp - mean) @ components.T``), ``n_samples``, ``n_features``, ``svd_solver``.

    Raises
    ------
    ValueError
        If ``d`` is out of range (the message gives the maximum allowed), or if all
        fingerprints are identical (no variance to project).
    """
    import sklearn
    from sklearn.decomposition import PCA
    from threadpoolctl import threadpool_limits

    X = np.asarray(fingerprints, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"fingerprints must be a 2-D array (n, n_bits), got shape {X.shape}")
    n, p = X.shape
    d_max = min(n, p)
    if not isinstance(d, (int, np.integer)) or isinstance(d, bool) or d < 1 or d > d_max:
        raise ValueError(
            f"d={d!r} is not allowed for {n} molecules x {p} bits: choose an integer "
            f"1 <= d <= {d_max} (max allowed = min(n_molecules, n_bits))"
        )
    if not np.any(X != X[0]):
        # PCA of data without variance returns zero scores and NaN explained variance
        raise ValueError(
            f"all {n} fingerprints are identical (no bit varies): there is nothing to project. "
            "The library holds a single distinct structure, or the fingerprints are empty "
            "(e.g. n_bits too small or every SMILES the same); screen a library of different compounds."
        )
    # eigh of the p x p covariance (exact, fastest here) where scikit-learn has it (>= 1.5)
    major, minor = (int(x) for x in sklearn.__version__.split(".")[:2])
    solver = "covariance_eigh" if (major, minor) >= (1, 5) else "full"
    pca = PCA(n_components=int(d), svd_solver=solver, random_state=random_state)
    # one BLAS thread: reproducible to the bit, and 10x faster than oversubscribed threads
    # on a busy machine
    with threadpool_limits(limits=1, user_api="blas"):
        features = pca.fit_transform(X).astype(np.float64, copy=False)
    info: dict[str, Any] = {
        "explained_variance_ratio": pca.explained_variance_ratio_.copy(),
        "explained_variance_ratio_total": float(pca.explained_variance_ratio_.sum()),
        "components": pca.components_.copy(),
        "mean": pca.mean_.copy(),
        "n_samples": n,
        "n_features": p,
        "svd_solver": solver,
    }
    logger.info("PCA %d -> %d dims explains %.1f%% of the variance", p, d, 100 * info["explained_variance_ratio_total"])
    return features, info

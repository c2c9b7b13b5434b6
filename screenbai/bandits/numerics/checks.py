"""Checks of the inputs every layer takes: a feature matrix, a random generator or its seed."""

from __future__ import annotations

import numpy as np


def check_features(features) -> np.ndarray:
    """Validate a K x d feature matrix and return it as a float64 C-contiguous array."""
    X = np.asarray(features, dtype=float)
    if X.ndim != 2:
        raise ValueError(f"features must be a 2-D array of shape (K arms, d dimensions); got shape {X.shape}")
    if X.shape[0] < 1 or X.shape[1] < 1:
        raise ValueError(f"features must have at least one arm and one dimension; got shape {X.shape}")
    bad = ~np.isfinite(X)
    if bad.any():
        rows, cols = np.nonzero(bad)
        raise ValueError(
            f"features contain {bad.sum()} NaN/inf value(s), first at arm {rows[0]}, column {cols[0]} "
            f"(value {X[rows[0], cols[0]]}); remove or impute those arms before screening"
        )
    return np.ascontiguousarray(X)


def as_generator(rng) -> np.random.Generator:
    if isinstance(rng, np.random.Generator):
        return rng
    try:
        return np.random.default_rng(rng)
    except (TypeError, ValueError):
        raise ValueError(
            f"rng must be a numpy Generator, a seed (a whole number >= 0, or a SeedSequence) or None; got {rng!r}"
        ) from None

"""Checks of the inputs every layer takes: a feature matrix, a random generator or its seed."""

from __future__ import annotations

import numpy as np


def check_features(features) -> np.ndarray:
    """Validate a K x d feature matrix and return it as a float64 C-contiguous array."""
    X = _as_real_array(features)
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


def _as_real_array(features) -> np.ndarray:
    """``features`` as a float array, or a ValueError naming what is not a real number: a text column of a
    table, a ragged list, a complex value (numpy would cast it with a warning, dropping its imaginary part)."""
    if getattr(features, "ndim", 0) == 2 and hasattr(features, "columns") and hasattr(features, "dtypes"):
        from pandas.api.types import is_numeric_dtype  # a DataFrame: pandas is loaded already

        bad = [str(c) for c, t in zip(features.columns, features.dtypes) if not is_numeric_dtype(t)]
        if bad:
            others = f" and {len(bad) - 1} other(s)" if len(bad) > 1 else ""
            raise ValueError(
                f"features must be a K x d table of numbers; the table's column {bad[0]!r}{others} "
                f"{'hold' if others else 'holds'} values that are not numbers: "
                "pass only the feature columns (e.g. frame[[...]] or a fingerprint's bits)"
            )
    try:
        raw = np.asarray(features)
    except ValueError as exc:  # numpy's "inhomogeneous shape": rows of different lengths
        raise ValueError(f"features must be a K x d table of numbers; got rows of different lengths ({exc})") from None
    if np.iscomplexobj(raw):
        imag = np.nonzero(np.imag(raw))
        if imag[0].size:
            where = ", ".join(f"{w} {int(i[0])}" for w, i in zip(("arm", "column"), imag))
            raise ValueError(f"features must be real numbers; got a complex value with a nonzero imaginary part at "
                             f"{where} ({raw[tuple(i[0] for i in imag)]})")
        raw = np.real(raw)
    try:
        return np.asarray(raw, dtype=float)
    except (TypeError, ValueError):
        flat = raw.reshape(-1)
        first = next((v for v in flat if not _is_number(v)), flat[0] if flat.size else None)
        first = first.item() if isinstance(first, np.generic) else first  # 'x', not np.str_('x')
        raise ValueError(f"features must be a K x d table of numbers; got {first!r} among them") from None


def _is_number(value) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


def as_generator(rng) -> np.random.Generator:
    if isinstance(rng, np.random.Generator):
        return rng
    try:
        return np.random.default_rng(rng)
    except (TypeError, ValueError):
        raise ValueError(
            f"rng must be a numpy Generator, a seed (a whole number >= 0, or a SeedSequence) or None; got {rng!r}"
        ) from None

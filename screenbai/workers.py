"""How many worker processes: the one reading of an ``n_jobs`` / ``--jobs`` value, for the simulations
(bandits/core/runner.py) and the chemistry (standardizing, fingerprints)."""

from __future__ import annotations

import os

import numpy as np


def worker_count(n_jobs, what: str = "n_jobs") -> int:
    """Worker processes: a whole number >= 1 as given, or one per core for -1 or None; else a ValueError naming
    ``what`` (the argument or option) and the value."""
    whole = isinstance(n_jobs, (int, np.integer)) and not isinstance(n_jobs, bool)
    if n_jobs is None or (whole and int(n_jobs) == -1):
        return os.cpu_count() or 1
    if not whole or int(n_jobs) < 1:
        raise ValueError(f"{what} (worker processes; -1 or None for one per core) must be a whole number >= 1; "
                         f"got {n_jobs!r}")
    return int(n_jobs)

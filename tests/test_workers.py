"""One reading of a worker count (screenbai.workers), the same for simulations, standardizing and fingerprints."""

import os
import re

import numpy as np
import pytest

from screenbai.bandits import Instance
from screenbai.bandits.core.runner import replicate
from screenbai.chem.fingerprint_store import build_fingerprint_store
from screenbai.chem.standardize import standardize_smiles
from screenbai.workers import worker_count


def test_a_worker_count_is_a_whole_number_or_one_per_core():
    cores = os.cpu_count() or 1
    assert worker_count(None) == cores and worker_count(-1) == cores and worker_count(np.int64(-1)) == cores
    assert worker_count(3) == 3 and worker_count(np.int32(2)) == 2
    for bad in (0, -2, True, 1.5, 2.0, "2"):
        said = rf"^--jobs \(worker processes; -1 .*\) must be a whole number >= 1; got {re.escape(repr(bad))}$"
        with pytest.raises(ValueError, match=said):
            worker_count(bad, "--jobs")


@pytest.mark.parametrize("bad", [0, 1.5])
def test_each_caller_refuses_a_bad_count_naming_it(tmp_path, bad):
    inst = Instance(np.eye(2), np.array([0.6, 0.4]), "bernoulli", 0.5)
    with pytest.raises(ValueError, match=rf"^n_jobs \(.*; got {bad!r}$"):
        replicate(inst, "lucb", {"epsilon": 0.0, "delta": 0.1}, n_reps=1, n_jobs=bad)
    with pytest.raises(ValueError, match=rf"^n_jobs \(.*; got {bad!r}$"):
        standardize_smiles(["CCO"], n_jobs=bad)
    with pytest.raises(ValueError, match=rf"^n_jobs \(.*; got {bad!r}$"):  # it took int(1.5) = 1 and went on
        build_fingerprint_store(["CCO"], tmp_path / "fp", n_jobs=bad)

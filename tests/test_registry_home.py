"""The registry's map from a name to its module (so ``get`` imports one family), and the LP's
column-wise matrix built without scipy.sparse."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
from scipy import sparse

from screenbai.bandits.core import registry
from screenbai.bandits.numerics.rules import colwise

REPO = Path(__file__).resolve().parents[1]


def test_every_registered_name_has_its_module_in_the_map():
    entries = registry.available()
    assert set(registry._HOME) == set(entries)
    wrong = {n: (registry._HOME[n], e.cls.__module__) for n, e in entries.items()
             if e.cls.__module__ != f"screenbai.bandits.{registry._HOME[n]}"}
    assert not wrong


def test_get_imports_only_the_family_it_needs():
    code = ("import sys; from screenbai.bandits.core import registry as r; r.get('glgape'); "
            "print(sorted(m for m in sys.modules if m.startswith('screenbai.bandits.budget.gse')"
            " or m == 'screenbai.bandits.linear.static_adaptive'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(REPO), "PATH": ""}).stdout
    assert out.strip() == "[]"


def test_colwise_is_the_csc_matrix_of_the_columns():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 5))
    X[rng.random(X.shape) < 0.3] = 0.0  # zeros are left out, as csc_matrix does
    cols = np.vstack([X, -X])
    ref = sparse.csc_matrix(cols.T)
    start, index, value = colwise(cols)
    assert start.dtype == ref.indptr.dtype and index.dtype == ref.indices.dtype
    np.testing.assert_array_equal(start, ref.indptr)
    np.testing.assert_array_equal(index, ref.indices)
    np.testing.assert_array_equal(value, ref.data)

"""The small Cholesky kernels of numerics/linalg.py: scipy's numbers, bit for bit, and its refusals."""

import numpy as np
import pytest
from scipy.linalg import cho_factor, cho_solve

from screenbai.bandits.numerics.linalg import cholesky_lower, cholesky_solve


@pytest.mark.parametrize("d", [1, 2, 3, 10, 21])
def test_cholesky_kernels_give_scipys_numbers_exactly(d):
    rng = np.random.default_rng(d)
    for _ in range(20):
        B = rng.normal(size=(d + 3, d))
        A = B.T @ B + 1e-9 * np.eye(d)
        b, Bt = rng.normal(size=d), rng.normal(size=(d, 7))
        c = cholesky_lower(A)
        ref = cho_factor(A, lower=True)
        np.testing.assert_array_equal(np.tril(c), np.tril(ref[0]))
        np.testing.assert_array_equal(cholesky_solve(c, b), cho_solve(ref, b))
        np.testing.assert_array_equal(cholesky_solve(c, Bt), cho_solve(ref, Bt))
        np.testing.assert_allclose(A @ cholesky_solve(c, b), b, rtol=1e-6, atol=1e-6 * np.abs(b).max())


@pytest.mark.parametrize("A", [np.array([[1.0, 2.0], [2.0, 1.0]]), np.array([[1.0, 0.0], [0.0, np.nan]]),
                               np.zeros((3, 3))])
def test_cholesky_refuses_what_is_not_positive_definite(A):
    with pytest.raises(np.linalg.LinAlgError):
        cholesky_lower(A)

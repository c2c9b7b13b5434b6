"""The arms' features and how every algorithm walks them, at any K: the one home of the large-K plumbing.

A ``FeatureSource`` holds the K x d features (an array, or a read-only memory map of one: nothing
here copies them) and answers the questions large-K code asks of them:

* ``large``: whether K is large enough for the large-K paths (K >= ``LARGE_K``): the estimator
  keeps a Gram row by rank one and makes its update one blockwise pass, the policies use the
  values that pass computes ahead (docs/scale.md, section 2). Below, every path is the plain one.
* ``bounds()`` / ``blocks(...)``: the blocks [s, e) of a pass over the arms, or K-vectors (and the
  rows of X) cut into them, so that a chain of elementwise operations reads main memory once;
* ``products(V)``: X @ V for a d x k matrix V (k = 1 or 2) block by block, the one way large-K code
  computes X P x for an arm (so that a product computed for one purpose can serve another with
  the same bits), and ``gram_row``, ``quad_diag`` and ``weighted_gram``: X P x, diag(X P X^T)
  and X^T diag(w) X, each computed one way for everybody.

A new algorithm that walks the arms through its estimator's source (``RidgeState.source``) or its
own gets the block sizes, the large-K switch and the memory behaviour without new arguments.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

#: elements per block of the elementwise passes over K-vectors: 128 kB of float64, within a core's
#: L2 cache, so a chain of numpy operations on one block reads main memory once, not once per call.
#: Measured at K = 10^6: with 256 kB blocks the chains' temporaries came as fresh memory from the
#: system (page faults) and GLGapE's round was 15 % slower; 64 kB blocks cost more in numpy calls
BLOCK = 1 << 14
#: vectors up to this length are not split (the per-call cost of more numpy calls would outweigh the gain)
UNSPLIT_MAX = 1 << 15
#: from this K on, the large-K paths (``FeatureSource.large``): the estimator keeps the last Gram row
#: asked for up to date by rank one (saves a pass over X per round while the empirical best stays) and
#: computes the rank-one update's product X P x_a block by block, with the elementwise work on each
#: block while it is in cache; below, every row is computed afresh and the update is the plain one,
#: bit-identical to earlier releases
LARGE_K = 50_000


def block_bounds(n: int) -> list[tuple[int, int]]:
    """[start, end) of the blocks of a length-n vector: one block up to ``UNSPLIT_MAX``."""
    if n <= UNSPLIT_MAX:
        return [(0, n)]
    return [(s, min(s + BLOCK, n)) for s in range(0, n, BLOCK)]


def in_blocks(*arrays: np.ndarray) -> list[tuple[np.ndarray, ...]]:
    """Equal-length arrays in cache-sized pieces: tuples of views (elementwise results do not depend
    on them), or the arrays themselves when they are short (no slicing overhead at small K)."""
    n = len(arrays[0])
    if n <= UNSPLIT_MAX:
        return [arrays]
    return [tuple(a[s:e] for a in arrays) for s, e in block_bounds(n)]


def column_products(X_block: np.ndarray, Vt: np.ndarray, out: np.ndarray) -> np.ndarray:
    """X_block @ v for each row v of ``Vt`` (k x d, C-contiguous) into the rows of ``out`` (k x rows):
    the one way large-K code computes X P x for an arm, so that a product computed for one purpose
    (the greedy rule's) can serve another (the update's) with the same bits, whichever row it is.
    One matrix-vector product per vector, on a block that stays in cache between them: measured at
    K = 10^6, d = 20 (OpenBLAS 0.3.31, one thread), a pass of two such products per block costs 1.5
    passes X @ v, a two-column matrix product (gemm) 1.9 to 2."""
    for k in range(Vt.shape[0]):
        np.matmul(X_block, Vt[k], out=out[k])
    return out


class FeatureSource:
    """The features X (K x d) of the arms, and the passes over them (see the module docstring)."""

    def __init__(self, X: np.ndarray):
        if X.ndim != 2:
            raise ValueError(f"features must be a 2-D array (K arms, d dimensions); got shape {X.shape}")
        self.X = X
        self.K, self.d = X.shape
        self.large = self.K >= LARGE_K

    @classmethod
    def of(cls, X: np.ndarray | FeatureSource) -> FeatureSource:
        """``X`` itself when it is a source, else a source over the array ``X``."""
        return X if isinstance(X, FeatureSource) else cls(X)

    def bounds(self) -> list[tuple[int, int]]:
        """[start, end) of the blocks of a pass over the arms (one block up to ``UNSPLIT_MAX`` arms)."""
        return block_bounds(self.K)

    def blocks(self, *arrays: np.ndarray, rows: bool = False) -> list[tuple[np.ndarray, ...]]:
        """K-vectors ``arrays`` cut into the blocks of ``bounds`` (views), with the block's rows of X
        last when ``rows``."""
        return in_blocks(*arrays, self.X) if rows else in_blocks(*arrays)

    def products(self, V: np.ndarray, order: list[tuple[int, int]] | None = None
                 ) -> Iterator[tuple[int, int, np.ndarray]]:
        """(s, e, (X[s:e] @ V).T) for the blocks of ``bounds`` (or of ``order``), V a d x k matrix (k
        columns: one pass over X, ``column_products``), each product (k x rows) in one reused buffer
        (valid until the next block: use it while it is in cache)."""
        order = self.bounds() if order is None else order
        Vt = np.ascontiguousarray(np.asarray(V).T)
        buffer = np.empty((Vt.shape[0], max(e - s for s, e in order)))
        for s, e in order:
            yield s, e, column_products(self.X[s:e], Vt, buffer[:, : e - s])

    def gram_row(self, P: np.ndarray, x: np.ndarray) -> np.ndarray:
        """X P x: a row of the Gram matrix X P X^T (one pass)."""
        return self.X @ (P @ x)

    def quad_diag(self, P: np.ndarray) -> np.ndarray:
        """diag(X P X^T): ||x_a||^2_P for every arm (O(K d^2)). At large K block by block, (X_b P) x_b
        row by row with a matrix product per block (BLAS), one pass over X: the three-operand einsum
        runs without BLAS, about 80 passes X @ v at K = 10^6, d = 20 (the estimators' periodic exact
        rebuild); below, that einsum (bit-identical to earlier releases)."""
        if not self.large:
            return np.einsum("ij,jk,ik->i", self.X, P, self.X)
        out = np.empty(self.K)
        for s, e in self.bounds():
            X_b = self.X[s:e]
            np.einsum("ij,ij->i", X_b @ P, X_b, out=out[s:e])
        return out

    def weighted_gram(self, w: np.ndarray) -> np.ndarray:
        """X^T diag(w) X: the design matrix of counts ``w`` (d x d, O(K d^2)). At large K over the arms
        with a nonzero weight only (the tested ones: O(K_+ d^2), no pass over X and no d x K temporary);
        below over all arms (bit-identical to earlier releases)."""
        if not self.large:
            return (self.X.T * w) @ self.X
        rows = np.flatnonzero(w)
        X_w = self.X[rows]
        return (X_w.T * w[rows]) @ X_w

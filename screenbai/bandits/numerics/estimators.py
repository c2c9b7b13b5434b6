"""Least-squares estimators kept up to date cheaply.

``RidgeState`` holds P = (lambda0 I + sum_a n_a x_a x_a^T)^{-1}, log det V, b = sum r x and
diag(X P X^T), all updated by Sherman-Morrison in O(Kd + d^2) per pull; P is symmetrised
and rebuilt exactly from the per-arm counts every ``refresh_every`` pulls (bounds round-off drift).
"""

from __future__ import annotations

import copy
import math
from typing import Self, TypeVar

import numpy as np
from scipy.linalg import cho_factor, cho_solve

from screenbai.bandits.numerics.features import FeatureSource
from screenbai.bandits.numerics.linalg import check_ridge_scale, project, sherman_morrison
from screenbai.bandits.numerics.ties import BlockArgmax

__all__ = ["RidgeState", "TrackedRidgeState", "project"]

#: batches of at least this many outcomes are absorbed by one exact rebuild (see RidgeState.update_many)
BATCH_REBUILD = 1024


class RidgeState:
    """Regularised (or ordinary) least squares with rank-one updates.

    Parameters
    ----------
    X : (K, d) arm features, or a ``FeatureSource`` of them (``source``: how every pass walks them;
        its ``large`` switches on the large-K paths, ``keep_row``).
    lambda0 : the prior precision, V_0 = lambda0 * I.  With lambda0 = 0 (ordinary least squares,
        as in [SLM14] and GLGapE's design matrix) there is no inverse until the pulled arms span
        R^d: ``update`` only records the data, and ``refresh()`` builds P once it can (True).
    refresh_every : rebuild P exactly from the counts after this many updates.
    """

    def __init__(self, X: np.ndarray | FeatureSource, lambda0: float = 1.0, refresh_every: int = 2000):
        if not lambda0 >= 0:
            raise ValueError(f"lambda0 (ridge prior precision) must be >= 0; got {lambda0}")
        self.source = FeatureSource.of(X)
        X = self.X = self.source.X
        check_ridge_scale(X, lambda0)
        self.K, self.d = X.shape
        self.lambda0 = float(lambda0)
        self.refresh_every = int(refresh_every)
        self.counts = np.zeros(self.K)
        self.b = np.zeros(self.d)
        # P and diag stay None only with lambda0 = 0 until the pulled arms span R^d
        self.P: np.ndarray = None  # type: ignore[assignment]
        self.diag: np.ndarray = None  # type: ignore[assignment]
        self.logdet = -np.inf
        if self.lambda0 > 0:
            self.P = np.eye(self.d) / self.lambda0
            self.logdet = self.d * np.log(self.lambda0)
            self.diag = np.einsum("ij,ij->i", X, X) / self.lambda0  # ||x_a||^2_P
        self._since_refresh = 0
        # one Gram row X P x_w kept by rank one (large K: the next round's row without a pass over X)
        self.keep_row = self.source.large
        self._row_arm = -1
        self._row: np.ndarray | None = None
        # a second Gram row kept the same way, for a caller that asks for it (``keep_second``: m-LinGapE's
        # greedy rule keeps the row of c_t, which comes back in about half the rounds at K = 10^6)
        self._second_arm = -1
        self._second: np.ndarray | None = None
        # the argmax of the means found while the last update swept them (large K), until they are rebuilt,
        # and the hook that computed something else during that sweep (see ``update``), until P changes
        self.mu_top: BlockArgmax | None = None
        self.ahead = None

    def keeps_row(self, i: int) -> bool:
        """Whether row i of X P X^T is the one kept: arm i is the kept row's arm, or has the same
        features (duplicates share their row)."""
        return self._row is not None and (i == self._row_arm or np.array_equal(self.X[i], self.X[self._row_arm]))

    def keep_second(self, i: int, row: np.ndarray) -> None:
        """Keep ``row`` = X P x_i (with the current P) as the second Gram row, updated by rank one as the
        first (large K only; forgotten at the exact rebuild of P)."""
        if self.keep_row:
            self._second_arm, self._second = i, row

    def kept_row(self, i: int) -> np.ndarray | None:
        """Row i of X P X^T if one of the kept rows is it (the same features: duplicates share it), else None."""
        for arm, row in ((self._row_arm, self._row), (self._second_arm, self._second)):
            if row is not None and (i == arm or np.array_equal(self.X[i], self.X[arm])):
                return row
        return None

    def is_twin(self, i: int, w: int, *vectors: np.ndarray) -> bool:
        """Whether arm i is a twin of the kept row's arm w: the same features, and the same bits in the
        kept row, the diagonal and each of ``vectors`` (e.g. the means). Every elementwise value computed
        from those against w is then, with the entries of i and w swapped, the value against i
        (``ties.swap_to_twin``): duplicated compounds tie on their means, and the round's best arm
        then alternates between them at random."""
        row = self._row
        return (row is not None and w == self._row_arm and i != w and np.array_equal(self.X[i], self.X[w])
                and row[i] == row[w] and self.diag[i] == self.diag[w] and all(v[i] == v[w] for v in vectors))

    def gram_row(self, i: int) -> np.ndarray:
        """Row i of X P X^T (do not modify it): O(K d), or O(d) when it is the row being kept
        (``keeps_row``)."""
        if self.keeps_row(i):
            assert self._row is not None
            return self._row
        if self._second is not None and self.kept_row(i) is self._second:  # the second row's arm: swap the two
            self._row_arm, self._row, self._second_arm, self._second = (self._second_arm, self._second,
                                                                        self._row_arm, self._row)
            if self._second is None:
                self._second_arm = -1
            return self._row
        row = self.source.gram_row(self.P, self.X[i])
        if self.keep_row:
            self._row_arm, self._row = i, row
        return row

    @property
    def theta(self) -> np.ndarray:
        return self.P @ self.b

    def update(self, a: int, reward: float, also: np.ndarray | None = None, on_block=None,
               product: np.ndarray | None = None) -> np.ndarray | None:
        """Add one observation of arm a: O(Kd + d^2). At large K (``keep_row``), X ``also`` (a
        d-vector) is computed in the same pass over X and returned (otherwise None), and
        ``on_block(s, e, Xv)`` is called after each block [s, e) of the K-vectors (and of Xv, the
        product with ``also`` or None) is final, the block holding the kept row's arm first; it is
        then kept in ``ahead`` until P changes. ``product``: X P x_a with the current P, if the caller
        has it (large K, without ``also``; computed as ``FeatureSource.products`` does): the update then
        reads no X."""
        added = self._add(a, reward, None, 0.0, also, on_block, product)
        if self.P is not None and self._since_refresh >= self.refresh_every:
            self.refresh()
        return added if self.keep_row else None

    def _add(self, a: int, reward: float, mu=None, step=0.0, also=None, on_block=None, product=None):
        """Record the observation and update P, log det V and diag(X P X^T) by rank one (no refresh).

        Returns what ``_shrink`` returns (called with the other arguments), or None while there is no
        inverse yet.
        """
        x = self.X[a]
        self.b += reward * x
        self.counts[a] += 1
        if self.P is None:
            return None
        return self._shrink(x, mu, step, also, on_block, product)

    def _shrink(self, x: np.ndarray, mu: np.ndarray | None = None, step: float = 0.0,
                also: np.ndarray | None = None, on_block=None,
                product: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray] | np.ndarray | None:
        """The design gains x x^T: P, log det V, diag(X P X^T) and the kept Gram row by rank one.

        With g = X P x and gs = g / (1 + x^T P x) (before the update), the means ``mu`` (if given)
        move by gs * step. Small K returns (g, gs). Large K (``keep_row``) makes one blockwise pass
        over X that also computes X ``also`` (returned, else None) and keeps g and gs per block only;
        given ``product`` = g (with P before this update), it reads no X.
        """
        u, q = sherman_morrison(self.P, x)
        denom = 1.0 + q
        self.logdet += math.log1p(q)  # a Python float: math is 20x faster than numpy here
        self._since_refresh += 1
        if self.keep_row:
            # each kept row X P x_w loses gs (u^T x_w)
            rows = [(row, float(u @ self.X[arm])) for arm, row in ((self._row_arm, self._row),
                                                                     (self._second_arm, self._second))
                    if row is not None]
            return self._shrink_blockwise(u, denom, rows, mu, step, also, on_block, product)
        g = self.X @ u  # small K: no kept row, nothing computed ahead
        gs = np.empty_like(g)
        for g_b, gs_b, diag_b, *mu_b in self.source.blocks(g, gs, self.diag, *(() if mu is None else (mu,))):
            np.divide(g_b, denom, out=gs_b)
            diag_b -= g_b * gs_b
            if mu_b:
                mu_b[0] += gs_b * step
        return g, gs

    def _shrink_blockwise(self, u, denom, rows, mu, step, also, on_block, product) -> np.ndarray | None:
        """``_shrink`` at large K: one block of X at a time, its elementwise work while it is in cache.

        X P x_a is a matrix-vector product per block (``FeatureSource.products``), computed here (with
        X ``also`` in the same pass, if asked), or given as ``product``: the caller's, or one of the kept
        rows (``kept_row``), which may then be ``product`` itself (it is read before it is updated).
        ``rows``: the kept rows with their coefficients u^T x_w."""
        assert product is None or also is None, "a given product leaves no pass over X to compute X also"
        V = u[:, None] if also is None else np.column_stack([u, also])
        out = None if also is None else np.empty(self.K)
        top = BlockArgmax()
        bounds = self.source.bounds()
        if self._row is not None:  # the kept row's arm first: its own entries are final before any other block
            bounds.insert(0, bounds.pop(next(k for k, (s, e) in enumerate(bounds) if s <= self._row_arm < e)))
        blocks = ((s, e, product[None, s:e]) for s, e in bounds) if product is not None else \
            self.source.products(V, bounds)
        # two scratch blocks, reused (in cache), for gs and each product: the same operations as
        # ``g / denom``, ``diag -= g * gs`` ..., without a fresh temporary per operation
        scratch = np.empty((2, max(e - s for s, e in bounds)))
        for s, e, block in blocks:
            g_b = block[0]
            if out is not None:
                out[s:e] = block[1]
            gs_b, tmp = scratch[0, : e - s], scratch[1, : e - s]
            np.divide(g_b, denom, out=gs_b)
            self.diag[s:e] -= np.multiply(g_b, gs_b, out=tmp)  # g_b is not read after this: it may be a kept row
            for row, coef in rows:
                row[s:e] -= np.multiply(gs_b, coef, out=tmp)
            if mu is not None:
                mu[s:e] += np.multiply(gs_b, step, out=tmp)
                top.add(mu[s:e], s)
            if on_block is not None:
                on_block(s, e, out)
        if mu is not None:
            self.mu_top = top
        self.ahead = on_block
        return out

    def hold(self, a: int) -> None:
        """Add x_a to the design only: a test in flight, whose outcome is not known yet.

        P, log det V and diag change as in ``update``; b, the counts and the estimate do not.
        Used on a copy of the state (``design_copy``) when a plate is chosen.
        """
        if self.P is None:
            return
        shrunk = self._shrink(self.X[a])
        G = getattr(self, "G", None)  # the full Gram matrix X P X^T, when a subclass keeps one (small K)
        if G is not None:
            assert isinstance(shrunk, tuple)
            g, gs = shrunk
            G -= np.multiply.outer(g, gs)

    def design_copy(self, held: np.ndarray) -> Self:
        """A copy whose design also holds the tests in flight (``held``: per-arm counts)."""
        view = copy.copy(self)
        for name in ("P", "diag", "G", "_row", "_second"):
            value = getattr(self, name, None)
            if value is not None:
                setattr(view, name, value.copy())
        for a in np.flatnonzero(held):
            for _ in range(int(held[a])):
                view.hold(int(a))
        return view

    def state_dict(self) -> dict:
        """Plain-data state (see ``screenbai.bandits.core.state``)."""
        return {name: (value.copy() if isinstance(value, np.ndarray) else value)
                for name, value in vars(self).items() if name not in ("X", "Z", "source", "mu_top", "ahead")}

    def load_state_dict(self, state: dict) -> None:
        self.mu_top = self.ahead = None
        for name, value in state.items():
            setattr(self, name, value.copy() if isinstance(value, np.ndarray) else value)

    def update_many(self, arms: np.ndarray, rewards: np.ndarray) -> None:
        """Add a batch of observations.

        Below ``BATCH_REBUILD`` outcomes: one rank-one update each (bit-identical to sequential
        ``update`` calls). From there on: one exact rebuild from the counts, O(K d^2 + d^3) for the
        whole batch instead of O(k (K d + d^2)) for k rank-one steps (10^5 initial outcomes at
        K = 10^6 take one pass, not 10^5).
        """
        arms = np.asarray(arms, dtype=np.int64)
        rewards = np.asarray(rewards, dtype=float)
        if arms.size < BATCH_REBUILD:
            for a, r in zip(arms, rewards):
                self.update(int(a), float(r))
            return
        self.b += rewards @ self.X[arms]
        np.add.at(self.counts, arms, 1.0)
        self.refresh()

    def design_matrix(self) -> np.ndarray:
        V = self.source.weighted_gram(self.counts)
        V[np.diag_indices(self.d)] += self.lambda0
        return V

    def refresh(self) -> bool:
        """Recompute P, log det and diag(X P X^T) exactly from the per-arm counts.

        Returns False (and leaves no inverse) when V is singular, which only ordinary least
        squares (lambda0 = 0) can meet before the pulled arms span R^d.
        """
        try:
            c, low = cho_factor(self.design_matrix())
        except np.linalg.LinAlgError:
            if self.lambda0 > 0:
                raise
            self.P, self.diag = None, None  # type: ignore[assignment]
            return False
        self._row_arm, self._row, self._second_arm, self._second, self.ahead = -1, None, -1, None, None
        self.P = cho_solve((c, low), np.eye(self.d))
        self.P = 0.5 * (self.P + self.P.T)
        self.logdet = 2.0 * np.sum(np.log(np.diag(c)))
        self.diag = self.source.quad_diag(self.P)
        self._since_refresh = 0
        return True


class TrackedRidgeState(RidgeState):
    """RidgeState that also keeps the estimated means mu = X theta_hat (and optionally the full
    Gram matrix G = X P X^T) up to date by rank one, with few numpy calls per pull.

    After pulling x_a with u = P x_a, q = x_a^T u and g = X u:
    theta <- theta + u (r - mu_a) / (1 + q), hence mu <- mu + g (r - mu_a) / (1 + q), and
    G <- G - g g^T / (1 + q).  Both are rebuilt exactly at every refresh of P.
    """

    def __init__(self, X: np.ndarray | FeatureSource, lambda0: float = 1.0, refresh_every: int = 2000,
                 gram: bool = False):
        super().__init__(X, lambda0, refresh_every)
        self.mu = np.zeros(self.K)
        self.G = (self.X @ self.X.T) / self.lambda0 if gram else None

    def update(self, a: int, reward: float, also: np.ndarray | None = None, on_block=None,
               product: np.ndarray | None = None) -> np.ndarray | None:
        mu_a = float(self.mu[a])
        added = self._add(a, reward, self.mu, reward - mu_a, also, on_block, product)
        if self.G is not None:  # small K only (it is refused at large K)
            assert isinstance(added, tuple)
            g, gs = added
            self.G -= np.multiply.outer(g, gs)
        if self._since_refresh >= self.refresh_every:
            self.refresh()
        return added if self.keep_row else None

    def refresh(self) -> bool:
        ok = super().refresh()
        self.mu, self.mu_top = self.X @ (self.P @ self.b), None
        if self.G is not None:
            G = (self.X @ self.P) @ self.X.T
            self.G = 0.5 * (G + G.T)
        return ok


StateT = TypeVar("StateT", bound=RidgeState)


class PlateDesign:
    """The design of a ``RidgeState`` plus the tests in flight, for choosing the wells of a plate.

    The copy (of the state's own class) is rebuilt when outcomes were recorded since (``n_samples``
    changed) or tests left the flight; otherwise only the newly proposed tests are added, one rank-one update each.
    """

    def __init__(self):
        self.view: RidgeState | None = None
        self.at = -1
        self.held: np.ndarray | None = None

    def of(self, state: StateT, n_samples: int, in_flight: np.ndarray) -> StateT:
        view = self.view
        held = self.held
        if not isinstance(view, type(state)) or held is None or self.at != n_samples or (in_flight < held).any():
            view = state.design_copy(in_flight)
        else:
            for a in np.flatnonzero(in_flight > held):
                for _ in range(int(in_flight[a] - held[a])):
                    view.hold(int(a))
        self.view, self.at, self.held = view, n_samples, in_flight
        return view

"""[SLM14] static and phased allocations for linear best-arm identification.

Registered policies:

* ``"g-allocation"``     greedy G-optimal static allocation, stopping rule eq. 11;
* ``"xy-static"``        greedy XY static allocation, stopping rule eq. 11;
* ``"xy-oracle"``        greedy oracle allocation with theta*, stopping eq. 4 (default) or eq. 11;
* ``"xy-adaptive"``      phased XY allocation (see ``XYAdaptive`` for the readings of the garbled pseudo-code);
* ``"xy-fully-adaptive"`` the fully adaptive baseline of [SLM14] Fig. 4.

Implementation notes.

* Every greedy choice argmin_x max_y y^T (A + x x^T)^{-1} y is computed from G = Z A^{-1} Z^T,
  Q = Y A^{-1} Z^T and h_y = ||y||^2_{A^{-1}}, all kept up to date by rank one
  and rebuilt exactly from the counts every ``_REFRESH`` pulls (bounds round-off drift). Ties are broken at random
  (symmetric instances tie exactly).
* Static sequences (and each XY-adaptive phase) do not depend on rewards: they are generated once
  per (features, directions, allocation_seed) and kept in a module-level LRU cache, so Monte-Carlo
  replications share them. Their tie-breaks use ``allocation_seed``, not the policy ``rng``.
* ``run(env)`` (the ``Policy.run`` hook, used by ``runner.run``) evaluates the eq. 11 stopping rule
  for blocks of 4096 rounds at once, from cumulative per-arm counts and sums, and pulls each block
  with ``env.pull_sequence`` (the same draws as pulling one arm at a time), so it returns the same
  stopping time and recommendation as the round-by-round ask/tell path.
* Plates: a static sequence is handed out in order (a cancelled arm first again); the stopping rule
  only uses recorded outcomes. XY-adaptive waits for a phase's last outcome before ending it; the
  adaptive choices (restricted xy-static, xy-fully-adaptive) count the tests in flight in their design.
"""

from __future__ import annotations

import copy
import logging
from dataclasses import replace
from typing import ClassVar

import numpy as np
from scipy.linalg import cho_factor, cho_solve

from .cache import LRUCache, digest
from .certainty.certificate import certified_from_bounds
from .estimators import RidgeState
from .linalg import check_ridge_scale, gram_pull, project_if_deficient, refuse_quadratic, spanning_arms
from .params import (
    ALLOCATION_SEED,
    BOOLEAN,
    DELTA,
    LAMBDA_REG,
    REQUIRED,
    S_BOUND,
    SIGMA,
    Anything,
    Interval,
    Options,
    Param,
    resolve,
)
from .policy import NO_ARMS, Policy, Result, decode_state, encode_state, read_document, write_document
from .registry import register
from .ties import argmax_random

log = logging.getLogger(__name__)

_REFRESH = 10_000  # exact rebuild of the greedy state / OLS inverse every this many pulls (bounds round-off drift)
_BLOCK = 4096  # rounds per vectorised stopping-rule block (= the Environment noise buffer)
_TIE_RTOL = 1e-10  # greedy scores this close to the minimum count as ties
AUTO_RESTRICT_K = 200  # above this many arms, Y is restricted to pairs with the empirical best
RESTRICT_Y = Param(
    None, BOOLEAN, f"restrict Y to pairs with the empirical best (None: above {AUTO_RESTRICT_K} arms)", none=True
)
MONOTONE = Param(False, BOOLEAN, "survivors only shrink (False: rebuilt from all arms, as in [SLM14])")


# ====================================================================== shared helpers
def log_term(n, K: float, delta: float):
    """log_n(K^2/delta) = log(6 n^2 K^2 / (pi^2 delta)) ([SLM14] Prop. 1).

    K: the number of arms, or sqrt(K) for the per-arm bound log_n(K/delta) (``confidence="arms"``).
    """
    n = np.asarray(n, dtype=float)
    return np.log(6.0 * n * n * K * K / (np.pi**2 * delta))


def eq11_width(width2, c: float, n, K: float, delta: float):
    """[SLM14] Prop. 1's width c ||y||_{A^-1} sqrt(log_n(K^2/delta)) from width2 = ||y||^2_{A^-1}."""
    return c * np.sqrt(width2 * float(log_term(n, K, delta)))


def all_pairs(active: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Arm indices (I, J) of the unordered pairs of the active arms: y = x_I - x_J."""
    idx = np.flatnonzero(active) if active.dtype == bool else np.asarray(active)
    i, j = np.triu_indices(idx.size, 1)
    return idx[i], idx[j]


def star_pairs(active: np.ndarray, best: int) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (best, x) for the other active arms: the large-K approximation (O(K) directions instead of O(K^2))."""
    idx = np.flatnonzero(active) if active.dtype == bool else np.asarray(active)
    idx = idx[idx != best]
    return np.full(idx.size, best, dtype=np.int64), idx


def _break_tie(T: np.ndarray, h: np.ndarray, s: np.ndarray, tol: float, rng: np.random.Generator,
               band: float = 1e-9) -> int:
    """Arms tied on the minimax score: prefer the one that most reduces the directions currently at
    the maximum (sum of their norms after the pull), then pick at random (symmetric instances tie exactly).

    Without this, when two directions share the maximum no single pull lowers it, every arm ties,
    and random picks unbalance the canonical basis, while an average over all directions can stall
    the oracle allocation on the heavily weighted direction and never lower the maximum.
    """
    ties = np.flatnonzero(s <= tol)
    hv = h[:, 0]
    top = hv >= hv.max() * (1.0 - band)
    second = T[top][:, ties].sum(axis=0)
    m = second.min()
    ties = ties[second <= m + _TIE_RTOL * abs(m)]
    return int(ties[rng.integers(ties.size)]) if ties.size > 1 else int(ties[0])


class _GreedyState:
    """G = Z A^{-1} Z^T, Q = Y A^{-1} Z^T and h = diag(Y A^{-1} Y^T), kept by rank one.

    Directions are y = scale * (x_I - x_J) (J = -1 means y = scale * x_I, the G-criterion).
    ``A = prior * I + sum_a counts_a z_a z_a^T`` must be invertible when the state is (re)built.
    """

    def __init__(self, Z: np.ndarray, counts: np.ndarray, prior: float = 0.0):
        self.Z = Z
        self.K, self.d = Z.shape
        self.prior = float(prior)
        check_ridge_scale(Z, self.prior)
        self.counts = np.asarray(counts, dtype=np.int64).copy()
        self.I = np.arange(self.K)
        self.J = np.full(self.K, -1)
        self.scale = np.ones(self.K)
        self._since = 0
        self._rebuild_gram()
        self._build_directions()

    def _rebuild_gram(self) -> None:
        A = self.prior * np.eye(self.d) + (self.Z.T * self.counts) @ self.Z
        c = cho_factor(A)
        W = cho_solve(c, self.Z.T)  # A^{-1} Z^T
        G = self.Z @ W
        self._G = 0.5 * (G + G.T)

    def set_directions(self, I, J=None, scale=None) -> None:
        self.I = np.asarray(I, dtype=np.int64)
        self.J = np.full(self.I.size, -1) if J is None else np.asarray(J, dtype=np.int64)
        self.scale = np.ones(self.I.size) if scale is None else np.asarray(scale, dtype=float)
        self._G = np.array(self.M[: self.K])
        self._build_directions()

    def _build_directions(self) -> None:
        G = self._G
        pair = self.J >= 0
        Q = G[self.I].copy()
        Q[pair] -= G[self.J[pair]]
        Q *= self.scale[:, None]
        rows = np.arange(self.I.size)
        h = Q[rows, self.I].copy()
        h[pair] -= Q[rows[pair], self.J[pair]]
        h *= self.scale
        self.M = np.ascontiguousarray(np.vstack([G, Q]))
        self.h = h[:, None].copy()
        self._views()

    def _views(self) -> None:
        """Q and diag(G) are views into M (a rank-one update of M updates them); _T is scratch."""
        self.Q = self.M[self.K :]
        self.diag = np.diagonal(self.M[: self.K])
        self._T = np.empty_like(self.Q)

    def __getstate__(self) -> dict:
        """For pickle and ``copy.deepcopy``, which would copy the views as separate arrays."""
        state = self.__dict__.copy()
        for name in ("Q", "diag", "_T"):
            state.pop(name, None)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._views()

    def state_dict(self) -> dict:
        return {"counts": self.counts.copy(), "I": self.I.copy(), "J": self.J.copy(), "scale": self.scale.copy(),
                "since": int(self._since), "M": self.M.copy(), "h": self.h.copy()}

    def load_state_dict(self, state: dict) -> None:
        self.counts = np.array(state["counts"], dtype=np.int64)
        self.I, self.J = np.array(state["I"], dtype=np.int64), np.array(state["J"], dtype=np.int64)
        self.scale = np.array(state["scale"], dtype=float)
        self._since = int(state["since"])
        self.M = np.ascontiguousarray(state["M"], dtype=float).copy()
        self.h = np.array(state["h"], dtype=float)
        self._views()

    def copy(self) -> _GreedyState:
        """An independent copy (a plate's design: the tests in flight are pulled into it)."""
        twin = _GreedyState.__new__(_GreedyState)
        twin.Z, twin.K, twin.d, twin.prior = self.Z, self.K, self.d, self.prior
        twin._G = self._G
        twin.load_state_dict(self.state_dict())
        return twin

    @property
    def rho(self) -> float:
        """max_y ||y||^2_{A^{-1}} (the XY / G criterion of the current allocation)."""
        return float(self.h.max())

    def scores(self) -> np.ndarray:
        """score(k) = max_y [h_y - Q_yk^2 / (1 + G_kk)] = max_y ||y||^2_{(A + z_k z_k^T)^{-1}}."""
        T = self._T
        np.multiply(self.Q, self.Q, out=T)
        T *= 1.0 / (1.0 + self.diag)
        np.subtract(self.h, T, out=T)
        return T.max(axis=0)

    def choose(self, rng: np.random.Generator) -> int:
        s = self.scores()
        k = int(s.argmin())
        tol = s[k] + _TIE_RTOL * abs(s[k])
        if np.count_nonzero(s <= tol) > 1:
            k = _break_tie(self._T, self.h, s, tol, rng)
        return k

    def pull(self, k: int) -> None:
        col = gram_pull(self.M, k, self.K)
        q = col[self.K :]
        self.h -= (q * q / (1.0 + col[k]))[:, None]
        self.counts[k] += 1
        self._since += 1
        if self._since >= _REFRESH:
            self._since = 0
            self._rebuild_gram()
            self._build_directions()


class AllocationSequence:
    """A reward-independent greedy allocation, generated lazily and shared through a cache.

    stop_rule: None (unbounded static sequence), ("rho", thr) (XY-adaptive phase: ends at the first
    greedy pull after which max_y ||y||^2_{A^{-1}} <= thr) or ("eq4", c, K, delta) (XY-oracle: ends at
    the first n with c^2 max_y ||y||^2_{A^{-1}} / Delta_y^2 * log_n(K^2/delta) <= 1).
    """

    def __init__(self, Z, init_arms, I, J, scale, seed, stop_rule=None, tie_rtol=_TIE_RTOL):
        self.tie_rtol = float(tie_rtol)
        self.init_arms = np.asarray(init_arms, dtype=np.int64)
        counts = np.bincount(self.init_arms, minlength=Z.shape[0])
        self.state = _GreedyState(Z, counts)
        self.state.set_directions(I, J, scale)
        self.rng = np.random.default_rng(seed)
        self.stop_rule = stop_rule
        dtype = np.int16 if Z.shape[0] < 2**15 else np.int32
        self._arms = np.empty(max(1024, 2 * self.init_arms.size), dtype=dtype)
        self.length = self.init_arms.size
        self._arms[: self.length] = self.init_arms
        self.done = False
        self.rho_end = self.state.rho
        if stop_rule is not None and stop_rule[0] == "eq4":
            self._check_stop(greedy=False)

    @property
    def arms(self) -> np.ndarray:
        return self._arms[: self.length]

    def state_dict(self) -> dict:
        """Plain data: the sequence so far and what it needs to be extended (generator included)."""
        return {"init_arms": self.init_arms.copy(), "stop_rule": encode_state(self.stop_rule),
                "tie_rtol": self.tie_rtol,
                "arms": self.arms.copy(), "done": bool(self.done), "rho_end": float(self.rho_end),
                "rng": copy.deepcopy(self.rng.bit_generator.state), "prior": self.state.prior,
                "greedy": self.state.state_dict()}

    @classmethod
    def from_state(cls, Z: np.ndarray, state: dict) -> AllocationSequence:
        seq = cls.__new__(cls)
        seq.tie_rtol = float(state["tie_rtol"])
        seq.init_arms = np.asarray(state["init_arms"], dtype=np.int64)
        greedy = _GreedyState.__new__(_GreedyState)
        greedy.Z, (greedy.K, greedy.d), greedy.prior = Z, Z.shape, float(state["prior"])
        greedy.load_state_dict(state["greedy"])
        seq.state = greedy
        seq.rng = np.random.default_rng()
        seq.rng.bit_generator.state = state["rng"]
        seq.stop_rule = decode_state(state["stop_rule"])
        arms = np.asarray(state["arms"])
        seq._arms = np.empty(max(1024, 2 * arms.size), dtype=np.int16 if Z.shape[0] < 2**15 else np.int32)
        seq._arms[: arms.size] = arms
        seq.length = int(arms.size)
        seq.done, seq.rho_end = bool(state["done"]), float(state["rho_end"])
        return seq

    def _check_stop(self, greedy: bool) -> None:
        rule = self.stop_rule
        rho = self.state.rho
        if rule[0] == "rho":
            self.done = greedy and rho <= rule[1]
        else:
            _, c, K, delta = rule
            self.done = c * c * rho * float(log_term(self.length, K, delta)) <= 1.0
        if self.done:
            self.rho_end = rho

    def extend(self, n: int) -> None:
        """Generate the sequence up to length n (or until its stopping rule ends it)."""
        if self.done or n <= self.length:
            return
        if n > self._arms.size:
            grown = np.empty(max(n, 2 * self._arms.size), dtype=self._arms.dtype)
            grown[: self.length] = self._arms[: self.length]
            self._arms = grown
        state, rng, arms, rule = self.state, self.rng, self._arms, self.stop_rule
        t = self.length
        # the greedy step of _GreedyState.choose/pull, inlined: this loop runs ~1e7 times on [SLM14]
        K = state.K
        rtol, band = self.tie_rtol, max(self.tie_rtol, 1e-9)
        while t < n:
            M, Q, h, diag, T = state.M, state.Q, state.h, state.diag, state._T
            start, stop = t, min(n, t + _REFRESH - state._since)
            while t < stop:
                np.multiply(Q, Q, out=T)
                T *= 1.0 / (1.0 + diag)
                np.subtract(h, T, out=T)
                s = T.max(axis=0)
                k = s.argmin()
                tol = s[k] + rtol * abs(s[k])
                if np.count_nonzero(s <= tol) > 1:
                    k = _break_tie(T, h, s, tol, rng, band)
                col = gram_pull(M, k, K)
                q = col[K:]
                h -= (q * q / (1.0 + col[k]))[:, None]
                state.counts[k] += 1
                arms[t] = k
                t += 1
                if rule is not None:
                    self.length = t
                    self._check_stop(greedy=True)
                    if self.done:
                        break
            state._since += t - start
            self.length = t
            if self.done:
                break
            if state._since >= _REFRESH:
                state._since = 0
                state._rebuild_gram()
                state._build_directions()
        self.length = t
        self.rho_end = state.rho if not self.done else self.rho_end


_CACHE: LRUCache[AllocationSequence] = LRUCache(32)


def allocation_sequence(Z, init_arms, I, J=None, scale=None, seed=0, stop_rule=None,
                        tie_rtol=_TIE_RTOL) -> AllocationSequence:
    """The cached sequence for these features, directions, seed and stopping rule (LRU: Monte-Carlo
    replications share it)."""
    J = np.full(len(I), -1) if J is None else J
    scale = np.ones(len(I)) if scale is None else scale
    key: tuple = (
        digest(Z, np.asarray(init_arms), np.asarray(I), np.asarray(J), np.asarray(scale, dtype=float)),
        seed,
        stop_rule,
    )
    if tie_rtol != _TIE_RTOL:
        key += (float(tie_rtol),)
    return _CACHE.get(key, lambda: AllocationSequence(Z, init_arms, I, J, scale, seed, stop_rule, tie_rtol))


def clear_cache() -> None:
    _CACHE.clear()


_CACHE_FORMAT = "screenbai-allocation-cache"


def save_cache(path) -> None:
    """Write the cached sequences (with what they need to be extended) to one ``.npz`` (no pickle)."""
    entries = [{"key": encode_state(key), "Z": seq.state.Z, "sequence": seq.state_dict()}
               for key, seq in _CACHE.items().items()]
    write_document(path, {"format": _CACHE_FORMAT, "version": 1, "entries": entries})


def load_cache(path) -> int:
    """Load sequences written by ``save_cache`` into the cache; returns how many."""
    doc = read_document(path, _CACHE_FORMAT)
    for entry in doc["entries"]:
        Z = np.ascontiguousarray(entry["Z"], dtype=float)
        _CACHE.update({decode_state(entry["key"]): AllocationSequence.from_state(Z, entry["sequence"])})
    return len(doc["entries"])


def _batch_forward(counts, Z):
    """W_b = L_b^{-1} Z^T for A_b = Z^T diag(counts_b) Z = L_b L_b^T, all b at once.

    Cholesky and forward substitution vectorised over the batch (loops over d only), so that
    G_b = W_b^T W_b = Z A_b^{-1} Z^T. Returns W with shape (B, d, K).
    """
    B = counts.shape[0]
    K, d = Z.shape
    outer = (Z[:, :, None] * Z[:, None, :]).reshape(K, d * d)
    A = (counts @ outer).reshape(B, d, d)
    L = np.zeros_like(A)
    for j in range(d):
        Lj = L[:, j, :j]
        diag = A[:, j, j] - np.einsum("bk,bk->b", Lj, Lj)
        if np.any(diag <= 0):
            raise np.linalg.LinAlgError("design matrix is singular in the stopping-rule block")
        L[:, j, j] = np.sqrt(diag)
        if j + 1 < d:
            L[:, j + 1 :, j] = (A[:, j + 1 :, j] - np.einsum("bik,bk->bi", L[:, j + 1 :, :j], Lj)) / L[:, j, j][:, None]
    W = np.empty((B, d, K))
    for r in range(d):
        acc = np.broadcast_to(Z[:, r], (B, K)).copy()
        if r:
            acc -= np.einsum("bk,bkm->bm", L[:, r, :r], W[:, :r, :])
        W[:, r, :] = acc / L[:, r, r][:, None]
    return W


def eq11_batch(Z, counts, sums, n, c: float, K: float, delta: float):
    """Vectorised eq. 11 for B data states at once.

    counts, sums: (B, K) cumulative per-arm counts and reward sums; n: (B,) sample counts.
    Returns (ok (B,) bool, best (B,) int): ok[b] is True when x = Pi(theta_hat) beats every other arm
    by at least its eq. 11 width. Uses mu_hat = G sums and G = W^T W with W = L^{-1} Z^T.
    """
    B = counts.shape[0]
    W = _batch_forward(counts, Z)
    v = np.einsum("bdk,bk->bd", W, sums)
    mu = np.einsum("bdk,bd->bk", W, v)
    best = mu.argmax(axis=1)
    rows = np.arange(B)
    diag = np.einsum("bdk,bdk->bk", W, W)
    Wi = W[rows, :, best]  # (B, d)
    grow = np.einsum("bd,bdk->bk", Wi, W)
    width2 = np.maximum(diag[rows, best][:, None] + diag - 2.0 * grow, 0.0)
    gap = mu[rows, best][:, None] - mu
    lhs = c * c * width2 * log_term(n, K, delta)[:, None]
    ok_j = (gap >= 0) & (lhs <= gap * gap)
    ok_j[rows, best] = True
    return ok_j.all(axis=1), best


class _OLSTracker(RidgeState):
    """Ordinary least squares kept by rank one (``RidgeState`` with lambda0 = 0) plus eq. 11."""

    def __init__(self, Z):
        super().__init__(Z, lambda0=0.0, refresh_every=_REFRESH)
        self.Z = Z

    add = RidgeState.update

    def eq11(self, n: int, c: float, K: float, delta: float):
        """(ok, best, mu_hat) for the stopping rule eq. 11, O(Kd + d^2)."""
        theta = self.P @ self.b
        mu = self.Z @ theta
        i = int(mu.argmax())
        row = self.Z @ (self.P @ self.Z[i])
        width2 = np.maximum(self.diag[i] + self.diag - 2.0 * row, 0.0)
        gap = mu[i] - mu
        ok = (gap >= 0) & (c * c * width2 * float(log_term(n, K, delta)) <= gap * gap)
        ok[i] = True
        return bool(ok.all()), i, mu


def _ols_mu(Z, counts, sums):
    """mu_hat = Z theta_hat from per-arm aggregates (Cholesky), or None while A is singular."""
    A = (Z.T * counts) @ Z
    try:
        c = cho_factor(A)
    except np.linalg.LinAlgError:
        return None, None
    theta = cho_solve(c, Z.T @ sums)
    return Z @ theta, c


# ====================================================================== common base
class _SLMBase(Policy):
    """Shared parameters and projection onto the span of the arms."""

    parameters = {
        "delta": DELTA,
        "sigma": SIGMA,
        "confidence": Param(
            "pairs", Options(("pairs", "arms")), "log_n(K^2/delta) (pairs, as in [SLM14]) or log_n(K/delta)"
        ),
    }

    def __init__(self, features, **params):
        p = self._params = resolve(type(self), params)
        super().__init__(features, m=1, rng=p.rng, max_samples=p.max_samples)
        self.delta = p.delta
        self.confidence = p.confidence
        # log_term(n, K_log, delta) = log(6 n^2 K_log^2 / (pi^2 delta))
        self.K_log = float(self.K) if p.confidence == "pairs" else float(np.sqrt(self.K))
        self.sigma = p.sigma
        self.width_constant = 2.0 * np.sqrt(2.0) * p.sigma  # [SLM14]'s c: widths are c ||y||_{A^-1} sqrt(log term)
        refuse_quadratic(self.name, self.K, "the Gram matrix Z A^-1 Z^T of its allocation",
                         "m-LinGapE or LinGapE (O(K d) per round)")
        self.Z, self.basis = project_if_deficient(self.X)
        self.d_eff = self.Z.shape[1]
        self.init_arms = spanning_arms(self.Z)
        self._final: dict | None = None
        self._handed = 0  # positions of the arm sequence chosen so far (= n_samples without plates)

    def _ols_best(self, counts, sums, rng) -> np.ndarray:
        """The arm with the best OLS estimate from these counts and sums (empirical best while the
        pulled arms do not span)."""
        mu, _ = _ols_mu(self.Z, counts, sums)
        if mu is None:
            return Policy._recommend(self, rng)
        return np.array([argmax_random(mu, rng)])

    def _ols_certificate(self, counts, sums, n: int) -> np.ndarray:
        """eq. (1) of certainty/certificate.py with [SLM14] Prop. 1's confidence set on the OLS
        estimate from ``counts``, ``sums`` (n observations, a design fixed before the outcomes):
        |(x - x')^T (theta_hat - theta*)| <= c ||x - x'||_{A^-1} sqrt(log_n(K^2/delta)) for all pairs
        and all n at once, c = 2 sqrt(2) sigma: the widths of the eq. 11 stopping rule. inf while
        the tested arms do not span. O(K d^2)."""
        A = self._current_answer()
        mu, chol = _ols_mu(self.Z, np.asarray(counts, dtype=float), np.asarray(sums, dtype=float))
        if mu is None or n < 1:
            return np.full(A.size, np.inf)
        W = cho_solve(chol, self.Z.T)  # A^-1 Z^T
        diag = np.einsum("kd,dk->k", self.Z, W)
        rows = self.Z[A] @ W  # rows of Z A^-1 Z^T for the answer
        width2 = np.maximum(diag[A][:, None] + diag[None, :] - 2.0 * rows, 0.0)
        U = mu[None, :] - mu[A][:, None] + eq11_width(width2, self.width_constant, n, self.K_log, self.delta)
        U[np.arange(A.size), A] = -np.inf
        return certified_from_bounds(U, 1)

    def _certificate_model(self) -> tuple[str, tuple[str, ...]]:
        model, _ = super()._certificate_model()
        if isinstance(self, XYStatic) and self.restrict_y:
            return model, ("the directions follow the estimated best arm (restrict_y), so the design depends on "
                           "the outcomes while [SLM14] Prop. 1 assumes a fixed design",)
        return model, ()

    @staticmethod
    def _check_restrict(restrict_y, K: int) -> bool:
        if restrict_y is None:
            if K > AUTO_RESTRICT_K:
                log.warning(
                    "K = %d > %d arms: restricting Y to pairs with the empirical best arm "
                    "(an approximation); pass restrict_y=False to keep all pairs", K, AUTO_RESTRICT_K
                )
                return True
            return False
        return bool(restrict_y)

    _state_attrs: ClassVar[tuple[str, ...]] = ("_final", "_handed")

    def _fast_path_applies(self, env) -> bool:
        """A vectorised ``run`` starts from a fresh policy and needs ``env.pull_sequence``."""
        return self.n_samples == 0 and not self.n_in_flight and hasattr(env, "pull_sequence")

    def _record_run(self, counts, sums, n: int, stopped: bool, best: int | None) -> Result:
        """Put the policy in the state a round-by-round run would end in (vectorised paths)."""
        self.n = np.asarray(counts, dtype=np.int64).copy()
        self.sums = np.asarray(sums, dtype=float).copy()
        self.n_samples = self._handed = int(n)
        self._final = {"best": best}
        self._finish(stopped)
        return self.result()

    @classmethod
    def resolve_oracle(cls, key, instance):
        if key == "theta":
            if instance.theta is not None:
                return instance.theta
            return np.linalg.lstsq(instance.features, instance.means, rcond=None)[0]
        if key == "S":
            theta = cls.resolve_oracle("theta", instance)
            return float(np.linalg.norm(theta))
        raise ValueError(f"{cls.__name__} has no oracle value for parameter {key!r}")


# ====================================================================== static allocations
class _StaticAllocation(_SLMBase):
    """Precomputed greedy sequence + the eq. 11 stopping rule tested every round."""

    parameters = {"allocation_seed": ALLOCATION_SEED}

    def __init__(self, features, **params):
        super().__init__(features, **params)
        seed = self._params.allocation_seed
        self.allocation_seed = int(self.rng.integers(2**63)) if seed is None else seed
        self._ols = _OLSTracker(self.Z)
        self._ols_ready = False
        self._seq: AllocationSequence | None = None

    _state_attrs: ClassVar[tuple[str, ...]] = ("allocation_seed", "_ols", "_ols_ready")

    def _after_load(self) -> None:
        self._seq = None  # rebuilt (shared through the cache) on first use

    # -- to implement
    def _make_sequence(self) -> AllocationSequence:  # pragma: no cover - abstract
        raise NotImplementedError

    def _stops_eq4(self) -> bool:
        return False

    @property
    def sequence(self) -> AllocationSequence:
        if self._seq is None:
            self._seq = self._make_sequence()
        return self._seq

    # -- round-by-round path
    def _select(self):
        s, t = self.n_samples, self._handed
        seq = self.sequence
        if self._stops_eq4():
            if s >= self.init_arms.size and seq.done and t >= seq.length:
                return NO_ARMS if self.n_in_flight else None
        elif self._stops_now():
            return None
        if t >= seq.length:
            seq.extend(min(self.max_samples, max(t + 1, 2 * seq.length, t + _BLOCK)))
        if t >= seq.length:  # a finite sequence ran out without stopping: cannot happen for eq. 4
            return NO_ARMS if self.n_in_flight else None
        self._handed = t + 1
        return int(seq.arms[t])

    def _update(self, arms, rewards):
        for a, r in zip(arms, rewards):
            self._ols.add(int(a), float(r))

    def _stops_now(self) -> bool:
        """eq. 11 on recorded outcomes (eq. 4 ends with its sequence, in ``_select``)."""
        s = self.n_samples
        if s < self.init_arms.size or self._stops_eq4():
            return False
        if not self._ols_ready:
            self._ols_ready = self._ols.refresh()
        return self._ols_ready and self._ols.eq11(s, self.width_constant, self.K_log, self.delta)[0]

    def _recommend(self, rng):
        if self._final is not None and self._final.get("best") is not None:
            return np.array([self._final["best"]])
        return self._ols_best(self.n.astype(float), self.sums, rng)

    def _certified_epsilon(self) -> np.ndarray:
        """[SLM14] Prop. 1 on all outcomes (the stopping rule eq. 11's set; see ``_ols_certificate``)."""
        return self._ols_certificate(self.n, self.sums, self.n_samples)

    # -- vectorised path
    def run(self, env):
        """Same stopping time and recommendation as the ask/tell loop, eq. 11 tested per block."""
        if not self._fast_path_applies(env):
            return super().run(env)
        seq = self.sequence
        K, n0, cap = self.K, self.init_arms.size, self.max_samples
        counts = np.zeros(K)
        sums = np.zeros(K)
        t = 0
        eye = np.eye(K)
        while t < cap:
            t1 = min((t // _BLOCK + 1) * _BLOCK, cap)
            seq.extend(t1)
            t1 = min(t1, seq.length)
            if t1 <= t:  # finite (eq. 4) sequence exhausted
                break
            arms = seq.arms[t:t1].astype(np.int64)
            rewards = env.pull_sequence(arms)
            onehot = eye[arms]
            cum_n = counts + np.cumsum(onehot, axis=0)
            cum_s = np.cumsum(np.vstack([sums, onehot * rewards[:, None]]), axis=0)[1:]
            states = np.arange(t + 1, t1 + 1)  # data state after each pull of the block
            if self._stops_eq4():
                if seq.done and t1 == seq.length and t1 < cap:
                    mu, _ = _ols_mu(self.Z, cum_n[-1], cum_s[-1])
                    return self._record_run(cum_n[-1], cum_s[-1], t1, True, argmax_random(mu, self.rng))
            else:
                test = (states >= n0) & (states < cap)
                if test.any():
                    ok, best = eq11_batch(
                        self.Z, cum_n[test], cum_s[test], states[test], self.width_constant, self.K_log, self.delta
                    )
                    if ok.any():
                        first = int(np.argmax(ok))
                        row = np.flatnonzero(test)[first]
                        return self._record_run(cum_n[row], cum_s[row], states[row], True, int(best[first]))
            counts, sums, t = cum_n[-1], cum_s[-1], t1
        return self._record_run(counts, sums, t, False, None)


@register("g-allocation")
class GAllocation(_StaticAllocation):
    """[SLM14] greedy G-allocation: argmin_x max_x' ||x'||^2_{(A + x x^T)^{-1}}, stop by eq. 11.

    Parameters: delta, sigma (noise bound, c = 2 sqrt(2) sigma), confidence ("pairs": log_n(K^2/delta) as
    in [SLM14], default; "arms": log_n(K/delta), which reproduces [XHS18] Table 1's oracle exactly),
    allocation_seed (tie-breaks of the shared precomputed sequence; None draws one from rng), rng, max_samples.
    """

    name = "g-allocation"

    def _make_sequence(self):
        return allocation_sequence(self.Z, self.init_arms, np.arange(self.K), seed=self.allocation_seed)


@register("xy-static")
class XYStatic(_StaticAllocation):
    """[SLM14] greedy XY-static allocation: argmin_x max_{y in Y} ||y||^2_{(A+xx^T)^{-1}}, eq. 11.

    restrict_y: None (auto: True above K = 200, with a logged warning), True or False. When True,
    Y holds only the pairs with the current OLS empirical best arm; the allocation then depends on
    rewards (an approximation, no longer static) and is computed round by round (no fast path).
    """

    name = "xy-static"

    parameters = {"restrict_y": RESTRICT_Y}

    def __init__(self, features, **params):
        super().__init__(features, **params)
        self.restrict_y = self._check_restrict(self._params.restrict_y, self.K)
        self._live: _GreedyState | None = None
        self._live_best = -1
        self.diagnostics["restricted_y"] = self.restrict_y

    def _make_sequence(self):
        I, J = all_pairs(np.ones(self.K, dtype=bool))
        return allocation_sequence(self.Z, self.init_arms, I, J, seed=self.allocation_seed)

    _state_attrs = ("_live_best",)

    def state_dict(self) -> dict:
        state = super().state_dict()
        state["live"] = None if self._live is None else encode_state(self._live.state_dict())
        return state

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        self._live = None
        if state.get("live") is not None:
            self._live = _GreedyState(self.Z, self.n)
            self._live.load_state_dict(decode_state(state["live"]))

    def _select(self):
        if not self.restrict_y:
            return super()._select()
        s, t = self.n_samples, self._handed
        if t < self.init_arms.size:
            self._handed = t + 1
            return int(self.init_arms[t])
        if s < self.init_arms.size:  # initial arms in flight: no estimate yet
            return NO_ARMS
        if not self._ols_ready:
            self._ols_ready = self._ols.refresh()
        ok, best, _ = self._ols.eq11(s, self.width_constant, self.K_log, self.delta)
        if ok:
            return None
        if self._live is None:
            self._live = _GreedyState(self.Z, self.n)
        if best != self._live_best:
            self._live.set_directions(*star_pairs(np.ones(self.K, dtype=bool), best))
            self._live_best = best
        k = self._live.choose(self.rng)
        self._live.pull(k)  # the design counts the test from its choice on (a cancelled one is re-proposed)
        self._handed = t + 1
        return k

    def run(self, env):
        return Policy.run(self, env) if self.restrict_y else super().run(env)


@register("xy-oracle", theta="oracle")
class XYOracle(_StaticAllocation):
    """[SLM14] XY-oracle allocation: greedy on max_{y in Y*} ||y||^2_{(A+xx^T)^{-1}} / Delta_y^2.

    theta: the true parameter theta* (length d; "oracle" resolves it from the instance).
    stopping: "eq4" (default, true gaps: deterministic stopping time) or "eq11" (empirical rule).
    tie_rtol: greedy scores within this relative distance of the best count as tied and are decided
    by the reduction of the directions at the maximum (our choice). Every y in Y* contains x*, so the literal
    one-step minimax keeps pulling x* (which lowers all tied directions by a vanishing amount) and never
    reaches eq. 4 (e.g. Soare d = 4, omega = 0.2); 1e-3 breaks that stall. Use 1e-10 for the literal rule.
    """

    name = "xy-oracle"

    parameters = {
        "theta": Param(None, Anything("a vector of length d"), "the true parameter theta*", none=True, oracle=True),
        "stopping": Param("eq4", Options(("eq4", "eq11")), "eq4 (true gaps) or eq11 (empirical)"),
        "tie_rtol": Param(
            1e-3, Interval(0.0, 1.0, open=("high",)), "relative tolerance for near-ties of the greedy score"
        ),
    }

    def __init__(self, features, **params):
        super().__init__(features, **params)
        theta, stopping, tie_rtol = self._params.theta, self._params.stopping, self._params.tie_rtol
        if theta is None or isinstance(theta, str):
            raise ValueError(
                f"xy-oracle needs the true parameter theta (a length-{self.d} vector); got {theta!r}. "
                "In simulations pass theta='oracle' through policy_for_instance."
            )
        theta = np.asarray(theta, dtype=float).reshape(-1)
        if theta.size != self.d or not np.isfinite(theta).all():
            raise ValueError(f"theta must be a finite vector of length d = {self.d}; got shape {theta.shape}")
        self.theta = theta
        self.stopping = stopping
        self.tie_rtol = max(float(tie_rtol), _TIE_RTOL)
        mu = self.X @ theta
        self.best_arm = int(mu.argmax())
        gaps = mu[self.best_arm] - mu
        others = np.flatnonzero(np.arange(self.K) != self.best_arm)
        if np.min(gaps[others]) <= 1e-12 * max(1.0, abs(mu).max()):
            tied = others[gaps[others] <= 1e-12 * max(1.0, abs(mu).max())]
            raise ValueError(f"theta gives arm(s) {tied.tolist()} the same mean as the best arm {self.best_arm}; "
                             "the oracle allocation needs a unique best arm (Delta_min > 0)")
        self._others, self._gaps = others, gaps[others]
        self.diagnostics["stopping"] = stopping

    def _stops_eq4(self) -> bool:
        return self.stopping == "eq4"

    def _make_sequence(self):
        rule = ("eq4", self.width_constant, self.K_log, self.delta) if self.stopping == "eq4" else None
        I = np.full(self._others.size, self.best_arm)
        return allocation_sequence(self.Z, self.init_arms, I, self._others, 1.0 / self._gaps,
                                   seed=self.allocation_seed, stop_rule=rule, tie_rtol=self.tie_rtol)


# ====================================================================== XY-adaptive (phased)
@register("xy-adaptive")
class XYAdaptive(_SLMBase):
    """[SLM14] XY-adaptive: phases of XY-static allocation on the
    directions between surviving arms; each phase restarts from its own data (initial spanning pulls
    included), ends when max_y ||y||^2_{A^{-1}} <= alpha * (its value at the end of the previous phase),
    then discards dominated arms (Lemma 4 with c, strict <) and tests eq. 11.

    monotone: False (literal: the survivors are rebuilt from all of X, so discarded arms can come back)
    or True (survivors only shrink). restrict_y: as in xy-static (pairs with the previous phase's best).
    """

    name = "xy-adaptive"

    parameters = {
        "alpha": Param(0.1, Interval(0.0, 1.0, open=("low", "high")), "phase shrink factor"),
        "monotone": MONOTONE,
        "restrict_y": RESTRICT_Y,
        "allocation_seed": ALLOCATION_SEED,
    }

    def __init__(self, features, **params):
        super().__init__(features, **params)
        p = self._params
        self.alpha = p.alpha
        self.monotone = p.monotone
        self.restrict_y = self._check_restrict(p.restrict_y, self.K)
        self.allocation_seed = int(self.rng.integers(2**63)) if p.allocation_seed is None else p.allocation_seed
        self.active = np.ones(self.K, dtype=bool)
        # rho^0 / n_0: the phase test compares with the previous phase's value (not rho / t twice)
        self.rho_prev = 1.0 / (self.d_eff * (self.d_eff + 1) + 1)
        self.phase = 0
        self._prev_best: int | None = None
        self._t_handed = 0  # positions of this phase's sequence chosen so far
        self._start_phase()
        self.diagnostics.update(phases=0, restricted_y=self.restrict_y, monotone=self.monotone)

    def _phase_directions(self):
        if self.restrict_y:
            if self._prev_best is None:  # first phase: no estimate yet, use the G-criterion directions
                return np.flatnonzero(self.active), None
            return star_pairs(self.active, self._prev_best)
        return all_pairs(self.active)

    _state_attrs = ("allocation_seed", "active", "rho_prev", "phase", "_prev_best", "t_phase", "_t_handed",
                    "phase_counts", "phase_sums")

    def _phase_sequence(self) -> AllocationSequence:
        I, J = self._phase_directions()
        return allocation_sequence(self.Z, self.init_arms, I, J, seed=self.allocation_seed,
                                   stop_rule=("rho", self.alpha * self.rho_prev))

    def _after_load(self) -> None:
        self.seq = self._phase_sequence()

    def _start_phase(self) -> None:
        self.phase += 1
        self.seq = self._phase_sequence()
        self.t_phase = self._t_handed = 0
        self.phase_counts = np.zeros(self.K)
        self.phase_sums = np.zeros(self.K)

    def _end_phase(self):
        """Estimate on this phase's data, discard dominated arms, test eq. 11. Returns the best arm when done."""
        t = self.t_phase
        mu, chol = _ols_mu(self.Z, self.phase_counts, self.phase_sums)
        G = self.Z @ cho_solve(chol, self.Z.T)
        dg = np.diag(G)
        width = eq11_width(np.maximum(dg[:, None] + dg[None, :] - 2 * G, 0.0), self.width_constant, t, self.K_log,
                           self.delta)
        beaten = ((mu[None, :] - mu[:, None]) > width).any(axis=1)  # x beaten by some x' (eq. 16)
        survivors = ~beaten & (self.active if self.monotone else True)
        best = int(argmax_random(mu, self.rng))
        self.diagnostics["phases"] = self.phase
        self.diagnostics["last_phase_length"] = t
        # eq. 11 for x = Pi(theta_hat): every other arm beaten by at least its width (not strict)
        gap = mu[best] - mu
        ok = (gap >= 0) & (width[best] <= gap)
        ok[best] = True
        if ok.all():
            return best
        if survivors.sum() == 1:
            return int(np.flatnonzero(survivors)[0])
        if not survivors.any():  # monotone only: every remaining arm was beaten by a discarded one
            survivors = self.active.copy()
        self.active = survivors
        self.rho_prev = self.seq.rho_end
        self._prev_best = best
        self._start_phase()
        return None

    def _select(self):
        seq, t = self.seq, self._t_handed
        if t >= seq.length and not seq.done:
            seq.extend(t + min(_BLOCK, self.max_samples - self.n_samples))
        if seq.done and t >= seq.length:
            if self.n_in_flight:  # the phase ends with its last recorded outcome
                return NO_ARMS
            best = self._end_phase()
            if best is not None:
                self._final = {"best": best}
                return None
            return self._select()
        self._t_handed = t + 1
        return int(seq.arms[t])

    def _update(self, arms, rewards):
        for a, r in zip(arms, rewards):
            self.phase_counts[a] += 1
            self.phase_sums[a] += r
        self.t_phase += arms.size

    def _recommend(self, rng):
        if self._final is not None:
            return np.array([self._final["best"]])
        return self._ols_best(self.phase_counts, self.phase_sums, rng)

    def _certified_epsilon(self) -> np.ndarray:
        """[SLM14] Prop. 1 on the current phase's outcomes, as the phase's eq. 11 test (each phase's
        design is fixed when it starts; inf until the phase's tests span)."""
        return self._ols_certificate(self.phase_counts, self.phase_sums, self.t_phase)

    def run(self, env):
        """Phase by phase: the phase sequence is fixed, so pull it as one block (same reward stream)."""
        if not self._fast_path_applies(env):
            return super().run(env)
        t = 0
        while True:
            seq = self.seq
            room = self.max_samples - t
            seq.extend(room + 1)
            n_phase = min(seq.length, room)
            arms = seq.arms[:n_phase].astype(np.int64)
            rewards = env.pull_sequence(arms)
            self.phase_counts = np.bincount(arms, minlength=self.K).astype(float)
            self.phase_sums = np.bincount(arms, weights=rewards, minlength=self.K).astype(float, copy=False)
            np.add.at(self.n, arms, 1)
            np.add.at(self.sums, arms, rewards)
            t += n_phase
            self.t_phase = self._t_handed = n_phase
            self.n_samples = t
            if not (seq.done and n_phase == seq.length) or t >= self.max_samples:  # budget spent
                self._finish(False)
                return self.result()
            best = self._end_phase()
            if best is not None:
                self._final = {"best": best}
                self._finish(True)
                return self.result()


# ====================================================================== fully adaptive baseline
@register("xy-fully-adaptive", S="oracle")
class XYFullyAdaptive(_SLMBase):
    """The "fully adaptive XY" baseline of [SLM14] Fig. 4: the surviving set is recomputed
    after every pull from ridge estimates (ridge lambda = lambda_reg, [SLM14]'s eta) with the Prop. 2 width
    ||x - x'||_{(A^lambda)^{-1}} (sigma sqrt(d log((1 + n L^2/lambda)/delta)) + sqrt(lambda) S); data are never
    discarded; the next arm is the XY-greedy choice for the directions between survivors.
    Stops when one arm survives.

    S: bound on ||theta*|| ("oracle" resolves it from the instance). monotone / restrict_y as in xy-adaptive.
    """

    name = "xy-fully-adaptive"

    parameters = {
        "S": replace(S_BOUND, default=REQUIRED),
        "lambda_reg": LAMBDA_REG,
        "monotone": MONOTONE,
        "restrict_y": RESTRICT_Y,
    }
    fixed = {"confidence": "pairs"}
    renamed = {"eta": "lambda_reg"}

    def __init__(self, features, **params):
        super().__init__(features, **params)
        p = self._params
        self.S, self.lambda_reg = p.S, p.lambda_reg
        self.monotone = p.monotone
        self.restrict_y = self._check_restrict(p.restrict_y, self.K)
        self.L2 = float(np.max(np.einsum("ij,ij->i", self.X, self.X)))
        self.state = _GreedyState(self.Z, np.zeros(self.K), prior=self.lambda_reg)
        self.active = np.ones(self.K, dtype=bool)
        self._dir_key = None
        self._plate: tuple | None = None  # (n_samples, tests held, design with them) while a plate is chosen
        self.diagnostics.update(restricted_y=self.restrict_y, monotone=self.monotone)

    _state_attrs = ("state", "active", "_dir_key")

    def _after_load(self) -> None:
        self._plate = None

    def _plate_design(self) -> _GreedyState:
        """The greedy state with the tests in flight pulled in (estimates keep the recorded one)."""
        flight = self.in_flight
        if self._plate is None or self._plate[0] != self.n_samples or (flight < self._plate[1]).any():
            view, held = self.state.copy(), np.zeros(self.K, dtype=np.int64)
        else:
            _, held, view = self._plate
        for a in np.flatnonzero(flight > held):
            for _ in range(int(flight[a] - held[a])):
                view.pull(int(a))
        self._plate = (self.n_samples, flight, view)
        return view

    def _width_scale(self, n: int) -> float:
        lam = self.lambda_reg
        return self.sigma * np.sqrt(self.d_eff * np.log((1.0 + n * self.L2 / lam) / self.delta)) + np.sqrt(lam) * self.S

    def _select(self):
        s, t = self.n_samples, self._handed
        if t < self.init_arms.size:
            self._handed = t + 1
            return int(self.init_arms[t])
        if s < self.init_arms.size:  # initial arms in flight
            return NO_ARMS
        mu = self._survivors()
        if mu is None:
            return None
        best = int(argmax_random(np.where(self.active, mu, -np.inf), self.rng)) if self.restrict_y else -1
        key = (self.active.tobytes(), best)
        if key != self._dir_key:
            I, J = star_pairs(self.active, best) if self.restrict_y else all_pairs(self.active)
            self.state.set_directions(I, J)
            self._dir_key = key
            self._plate = None
        self._handed = t + 1
        return (self._plate_design() if self.n_in_flight else self.state).choose(self.rng)

    def _survivors(self) -> np.ndarray | None:
        """The surviving arms from recorded outcomes; the estimated means, or None when one is left."""
        mu = self.state.M[: self.K] @ self.sums  # Z (lambda I + A)^{-1} Z^T sums = Z theta_hat
        width = self._widths(np.arange(self.K))
        survivors = np.asarray(~((mu[None, :] - mu[:, None]) > width).any(axis=1), dtype=bool)
        self.active = survivors & self.active if self.monotone else survivors
        if self.active.sum() == 1:
            self._final = {"best": int(np.flatnonzero(self.active)[0])}
            return None
        return mu

    def _stops_now(self) -> bool:
        return self.n_samples >= self.init_arms.size and self._survivors() is None

    def _update(self, arms, rewards):
        for a in arms:
            self.state.pull(int(a))

    def _recommend(self, rng):
        if self._final is not None:
            return np.array([self._final["best"]])
        mu = self.state.M[: self.K] @ self.sums
        return np.array([argmax_random(np.where(self.active, mu, -np.inf), rng)])

    def _certified_epsilon(self) -> np.ndarray:
        """eq. (1) of certainty/certificate.py with [SLM14] Prop. 2's set (the elimination's widths):
        U(i, j) = mu_j - mu_i + ||x_i - x_j||_{(A^lambda)^-1} (sigma sqrt(d log((1 + n L^2 / lambda) /
        delta)) + sqrt(lambda) S) at the ridge estimate, valid for adaptive designs given S. O(K)."""
        A = self._current_answer()
        mu = self.state.M[: self.K] @ self.sums
        U = mu[None, :] - mu[A][:, None] + self._widths(A)
        U[np.arange(A.size), A] = -np.inf
        return certified_from_bounds(U, 1)

    def _widths(self, rows: np.ndarray) -> np.ndarray:
        """Prop. 2's widths ||x_i - x_j||_{(A^lambda)^-1} (...) for the arms i of ``rows`` against every
        arm j, from recorded outcomes (the elimination and the certificate)."""
        dg = self.state.diag
        G = self.state.M[rows][:, : self.K]
        return np.sqrt(np.maximum(dg[rows][:, None] + dg[None, :] - 2.0 * G, 0.0)) * self._width_scale(self.n_samples)

    def _certificate_model(self) -> tuple[str, tuple[str, ...]]:
        model, caveats = super()._certificate_model()
        return f"{model}, ||theta|| <= S = {self.S:g}", caveats



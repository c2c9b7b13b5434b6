"""[SLM14]'s greedy allocation argmin_x max_y y^T (A + x x^T)^{-1} y, and the reward-independent
sequences it generates (shared through a cache by Monte-Carlo replications).

* ``GreedyState`` keeps G = Z A^{-1} Z^T, Q = Y A^{-1} Z^T and h_y = ||y||^2_{A^{-1}} up to date by rank one
  and rebuilds them exactly from the counts every ``REFRESH`` pulls (bounds round-off drift). Its ``choose``
  and ``pull`` are the one greedy step: the sequences below and the adaptive rules (restricted xy-static,
  xy-fully-adaptive) all call them. Ties are broken at random (symmetric instances tie exactly).
* ``AllocationSequence``: a static sequence (or one XY-adaptive phase, or the XY-oracle sequence up to
  eq. 4) does not depend on rewards: it is generated once per (features, directions, allocation_seed, stopping
  rule) and kept in a module-level LRU cache (``allocation_sequence``). Its tie-breaks use ``allocation_seed``,
  not the policy ``rng``.
"""

from __future__ import annotations

import copy

import numpy as np
from scipy.linalg import cho_factor, cho_solve

from screenbai.bandits.core.cache import LRUCache, digest
from screenbai.bandits.core.persistence import read_document, write_document
from screenbai.bandits.core.state import decode_state, encode_state
from screenbai.bandits.linear.static_rules import REFRESH, log_term
from screenbai.bandits.numerics.linalg import check_ridge_scale, gram_pull

TIE_RTOL = 1e-10  # greedy scores this close to the minimum count as ties
_TIE_BAND = 1e-9  # directions this close to the maximum count as at the maximum (``_break_tie``)


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
               band: float = _TIE_BAND) -> int:
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
    ties = ties[second <= m + TIE_RTOL * abs(m)]
    return int(ties[rng.integers(ties.size)]) if ties.size > 1 else int(ties[0])


class GreedyState:
    """G = Z A^{-1} Z^T, Q = Y A^{-1} Z^T and h = diag(Y A^{-1} Y^T), kept by rank one.

    Directions are y = scale * (x_I - x_J) (J = -1 means y = scale * x_I, the G-criterion).
    ``A = prior * I + sum_a counts_a z_a z_a^T`` must be invertible when the state is (re)built.
    """

    def __init__(self, Z: np.ndarray, counts: np.ndarray, prior: float = 0.0):
        self._setup(Z, prior)
        check_ridge_scale(Z, self.prior)
        self.counts = np.asarray(counts, dtype=np.int64).copy()
        self.I = np.arange(self.K)
        self.J = np.full(self.K, -1)
        self.scale = np.ones(self.K)
        self._since = 0
        self._build_directions(self._gram())

    def _setup(self, Z: np.ndarray, prior: float) -> None:
        self.Z = Z
        self.K, self.d = Z.shape
        self.prior = float(prior)

    @classmethod
    def from_state(cls, Z: np.ndarray, prior: float, state: dict) -> GreedyState:
        """The state written by ``state_dict`` for these features and prior."""
        greedy = cls.__new__(cls)
        greedy._setup(Z, prior)
        greedy.load_state_dict(state)
        return greedy

    def _gram(self) -> np.ndarray:
        """G = Z A^{-1} Z^T rebuilt exactly from the counts (Cholesky)."""
        A = self.prior * np.eye(self.d) + (self.Z.T * self.counts) @ self.Z
        c = cho_factor(A)
        W = cho_solve(c, self.Z.T)  # A^{-1} Z^T
        G = self.Z @ W
        return 0.5 * (G + G.T)

    def set_directions(self, I, J=None, scale=None) -> None:
        self.I = np.asarray(I, dtype=np.int64)
        self.J = np.full(self.I.size, -1) if J is None else np.asarray(J, dtype=np.int64)
        self.scale = np.ones(self.I.size) if scale is None else np.asarray(scale, dtype=float)
        self._build_directions(np.array(self.M[: self.K]))

    def _build_directions(self, G: np.ndarray) -> None:
        pair = self.J >= 0
        Q = G[self.I].copy()
        Q[pair] -= G[self.J[pair]]
        Q *= self.scale[:, None]
        rows = np.arange(self.I.size)
        h = Q[rows, self.I].copy()
        h[pair] -= Q[rows[pair], self.J[pair]]
        h *= self.scale
        self.M = np.ascontiguousarray(np.vstack([G, Q]))
        self._views()
        self.h = h[:, None].copy()

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
        self._views()
        self.h = np.array(state["h"], dtype=float)

    def copy(self) -> GreedyState:
        """An independent copy (a plate's design: the tests in flight are pulled into it)."""
        return GreedyState.from_state(self.Z, self.prior, self.state_dict())

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

    def choose(self, rng: np.random.Generator, tie_rtol: float = TIE_RTOL) -> int:
        """The greedy arm argmin_k score(k); scores within ``tie_rtol`` of the minimum tie (``_break_tie``)."""
        s = self.scores()
        k = int(s.argmin())
        tol = s[k] + tie_rtol * abs(s[k])
        if np.count_nonzero(s <= tol) > 1:
            k = _break_tie(self._T, self.h, s, tol, rng, max(tie_rtol, _TIE_BAND))
        return k

    def pull(self, k: int, refresh: bool = True) -> None:
        """A <- A + z_k z_k^T by rank one; every ``REFRESH`` pulls the state is rebuilt exactly, here or (with
        ``refresh=False``) at the caller's ``refresh_if_due``."""
        col = gram_pull(self.M, k, self.K)
        q = col[self.K :]
        self.h -= (q * q / (1.0 + col[k]))[:, None]
        self.counts[k] += 1
        self._since += 1
        if refresh:
            self.refresh_if_due()

    def refresh_if_due(self) -> None:
        if self._since >= REFRESH:
            self._since = 0
            self._build_directions(self._gram())


class AllocationSequence:
    """A reward-independent greedy allocation, generated lazily and shared through a cache.

    stop_rule: None (unbounded static sequence), ("rho", thr) (XY-adaptive phase: ends at the first
    greedy pull after which max_y ||y||^2_{A^{-1}} <= thr) or ("eq4", c, K, delta, confidence) (XY-oracle:
    ends at the first n with c^2 max_y ||y||^2_{A^{-1}} / Delta_y^2 * log_n(K^2/delta) <= 1, [SLM14] eq. 4).
    """

    def __init__(self, Z, init_arms, I, J, scale, seed, stop_rule=None, tie_rtol=TIE_RTOL):
        self.tie_rtol = float(tie_rtol)
        self.init_arms = np.asarray(init_arms, dtype=np.int64)
        counts = np.bincount(self.init_arms, minlength=Z.shape[0])
        self.state = GreedyState(Z, counts)
        self.state.set_directions(I, J, scale)
        self.rng = np.random.default_rng(seed)
        self.stop_rule = stop_rule
        self._allocate(Z.shape[0], self.init_arms)
        self.done = False
        self.rho_end = self.state.rho
        if stop_rule is not None and stop_rule[0] == "eq4":
            self._check_stop(greedy=False)

    def _allocate(self, K: int, arms: np.ndarray) -> None:
        dtype = np.int16 if K < 2**15 else np.int32
        self._arms = np.empty(max(1024, 2 * arms.size), dtype=dtype)
        self._arms[: arms.size] = arms
        self.length = int(arms.size)

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
        seq.state = GreedyState.from_state(Z, state["prior"], state["greedy"])
        seq.rng = np.random.default_rng()
        seq.rng.bit_generator.state = state["rng"]
        seq.stop_rule = decode_state(state["stop_rule"])
        seq._allocate(Z.shape[0], np.asarray(state["arms"]))
        seq.done, seq.rho_end = bool(state["done"]), float(state["rho_end"])
        return seq

    def _check_stop(self, greedy: bool) -> None:
        rule = self.stop_rule
        rho = self.state.rho
        if rule[0] == "rho":
            self.done = greedy and rho <= rule[1]
        else:
            _, c, K, delta, confidence = rule
            self.done = c * c * rho * float(log_term(self.length, K, delta, confidence)) <= 1.0
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
        state, rng, arms, rule, tie_rtol = self.state, self.rng, self._arms, self.stop_rule, self.tie_rtol
        t = self.length
        while t < n:
            k = state.choose(rng, tie_rtol)
            state.pull(k, refresh=False)
            arms[t] = k
            t += 1
            if rule is not None:
                self.length = t
                self._check_stop(greedy=True)
                if self.done:
                    break
            state.refresh_if_due()  # after the stopping test (rho_end is the rank-one value)
        self.length = t
        if not self.done:
            self.rho_end = state.rho


_CACHE: LRUCache[AllocationSequence] = LRUCache(32)


def allocation_sequence(Z, init_arms, I, J=None, scale=None, seed=0, stop_rule=None,
                        tie_rtol=TIE_RTOL) -> AllocationSequence:
    """The cached sequence for these features, directions, seed and stopping rule (LRU: Monte-Carlo
    replications share it)."""
    J = np.full(len(I), -1) if J is None else J
    scale = np.ones(len(I)) if scale is None else scale
    key: tuple = (
        digest(Z, np.asarray(init_arms), np.asarray(I), np.asarray(J), np.asarray(scale, dtype=float)),
        seed,
        stop_rule,
    )
    if tie_rtol != TIE_RTOL:
        key += (float(tie_rtol),)
    return _CACHE.get(key, lambda: AllocationSequence(Z, init_arms, I, J, scale, seed, stop_rule, tie_rtol))


def clear_cache() -> None:
    _CACHE.clear()


_CACHE_FORMAT = "screenbai-allocation-cache"


def save_cache(path) -> None:
    """Write the cached sequences (with what they need to be extended) to one ``.npz`` (no pickle)."""
    entries = [{"key": encode_state(key), "Z": seq.state.Z, "sequence": seq.state_dict()}
               for key, seq in _CACHE.items().items()]
    write_document(path, {"format": _CACHE_FORMAT, "version": 2, "entries": entries})


def load_cache(path) -> int:
    """Load sequences written by ``save_cache`` into the cache; returns how many. A version-1 file's XY-oracle
    sequences (their eq. 4 rule had no confidence) are left out: they are generated again."""
    doc = read_document(path, _CACHE_FORMAT)
    loaded = 0
    for entry in doc["entries"]:
        rule = decode_state(entry["sequence"]["stop_rule"])
        if rule is not None and rule[0] == "eq4" and len(rule) != 5:
            continue
        Z = np.ascontiguousarray(entry["Z"], dtype=float)
        _CACHE.update({decode_state(entry["key"]): AllocationSequence.from_state(Z, entry["sequence"])})
        loaded += 1
    return loaded

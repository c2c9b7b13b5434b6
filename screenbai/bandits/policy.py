"""The ask/tell interface that every algorithm implements, and its result record.

A policy never draws rewards itself: the caller asks which arm(s) to test, runs the
experiment (a simulator, or a real assay) and tells the outcomes back.

    while not policy.done:
        arms = policy.ask()
        policy.tell(arms, env.pull(arms))
    result = policy.result()
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .ties import argmax_random, argmin_random, top_m  # noqa: F401 - re-exported for existing imports

DEFAULT_MAX_SAMPLES = 10**8


@dataclass(frozen=True)
class Result:
    """What a finished (or interrupted) run recommends and what it cost.

    recommendation: the recommended arm indices (length m; m = 1 for best-arm identification).
    n_samples: observations used, initialisation included.
    pulls: pull count per arm (length K).
    stopped: True when the stopping rule fired or the budget was spent as planned; False when
        the run hit ``max_samples`` (a non-terminated run, reported separately, never averaged in).
    diagnostics: algorithm-specific extras (e.g. Newton iterations, number of LPs solved).
    """

    recommendation: tuple[int, ...]
    n_samples: int
    pulls: np.ndarray
    stopped: bool
    diagnostics: dict[str, Any] = field(default_factory=dict)

    @property
    def best(self) -> int:
        return self.recommendation[0]


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


def check_probability(name: str, value: float) -> float:
    value = float(value)
    if not 0.0 < value < 1.0:
        raise ValueError(f"{name} must lie strictly between 0 and 1; got {value}")
    return value


def as_generator(rng) -> np.random.Generator:
    if isinstance(rng, np.random.Generator):
        return rng
    return np.random.default_rng(rng)


class Policy:
    """Base class: bookkeeping, validation and the ask/tell protocol.

    Subclasses implement ``_select()`` (return the next arms as an int array, or ``None`` when
    the stopping rule fires / the budget is spent) and ``_update(arms, rewards)``; they may
    override ``_recommend()``.  ``n``/``sums`` (per-arm counts and reward sums) are kept here.
    """

    name = "policy"
    #: rewards must be 0/1 (Bernoulli models); checked in ``tell``
    binary_rewards = False
    #: fixed-budget policies finish when the budget is spent
    fixed_budget = False

    def __init__(self, features, *, m: int = 1, rng=None, max_samples: int = DEFAULT_MAX_SAMPLES):
        self.X = check_features(features)
        self.K, self.d = self.X.shape
        m = int(m)
        if not (1 <= m < self.K or self.K == m == 1):
            raise ValueError(f"m (number of arms to identify) must satisfy 1 <= m < K = {self.K}; got m = {m}")
        self.m = m
        if int(max_samples) < 1:
            raise ValueError(f"max_samples must be a positive integer; got {max_samples}")
        self.max_samples = int(max_samples)
        self.rng = as_generator(rng)
        self.n = np.zeros(self.K, dtype=np.int64)
        self.sums = np.zeros(self.K)
        self.n_samples = 0
        self._next: np.ndarray | None = None
        self._pending: np.ndarray | None = None
        self._finished = False
        self._stopped = False
        self.diagnostics: dict[str, Any] = {}

    # ------------------------------------------------------------------ protocol
    @property
    def done(self) -> bool:
        if not self._finished and self._next is None and self._pending is None:
            self._advance()
        return self._finished

    def ask(self) -> np.ndarray:
        """The arm(s) to test next, as a 1-D array of arm indices."""
        if self._pending is not None:
            return self._pending
        if self.done:
            raise RuntimeError(f"{self.name} has finished after {self.n_samples} samples; call result()")
        self._pending, self._next = self._next, None
        return self._pending

    def tell(self, arms, rewards) -> None:
        """Report the outcomes of exactly the arms returned by the last ``ask()``."""
        pending = self._pending
        if pending is None:
            raise RuntimeError("tell() called without a pending ask(); call ask() first")
        arms = np.asarray(arms).reshape(-1)
        rewards = np.asarray(rewards, dtype=float).reshape(-1)
        if arms.shape != pending.shape or (arms != pending).any():
            raise ValueError(f"rewards were given for arms {arms.tolist()}, but the arms asked were {pending.tolist()}")
        if rewards.shape != arms.shape:
            raise ValueError(f"got {rewards.size} reward(s) for {arms.size} arm(s); give one reward per asked arm")
        if arms.size == 1:  # the hot path of sequential policies: plain float checks
            r = float(rewards[0])
            if not math.isfinite(r) or (self.binary_rewards and r != 0.0 and r != 1.0):
                self._reject_rewards(rewards)
        elif not np.isfinite(rewards).all() or (
            self.binary_rewards and not ((rewards == 0.0) | (rewards == 1.0)).all()
        ):
            self._reject_rewards(rewards)
        self._pending = None
        if arms.size == 1:
            a = arms[0]
            self.n[a] += 1
            self.sums[a] += rewards[0]
        else:
            np.add.at(self.n, arms, 1)
            np.add.at(self.sums, arms, rewards)
        self.n_samples += arms.size
        self._update(arms, rewards)

    def _reject_rewards(self, rewards: np.ndarray):
        if not np.isfinite(rewards).all():
            raise ValueError(f"rewards must be finite numbers; got {rewards.tolist()}")
        raise ValueError(
            f"{self.name} models binary (Bernoulli) outcomes; rewards must be 0 or 1, got {rewards.tolist()}"
        )

    def result(self) -> Result:
        return Result(
            recommendation=tuple(int(a) for a in np.atleast_1d(self._recommend())),
            n_samples=int(self.n_samples),
            pulls=self.n.copy(),
            stopped=bool(self._stopped),
            diagnostics=dict(self.diagnostics),
        )

    # ------------------------------------------------------------------ internals
    def _advance(self) -> None:
        if self.n_samples >= self.max_samples:
            self._finished = True
            return
        arms = self._select()
        if arms is None:
            self._finished = self._stopped = True
        else:
            self._next = np.asarray(arms, dtype=np.int64).reshape(-1)

    def _select(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def _update(self, arms: np.ndarray, rewards: np.ndarray) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _recommend(self):
        """Default: the m arms with the highest empirical mean (unpulled arms last)."""
        means = np.where(self.n > 0, self.sums / np.maximum(self.n, 1), -np.inf)
        return top_m(means, self.m, self.rng)

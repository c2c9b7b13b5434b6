"""Fixed-budget baselines of [AKG22] section 8: uniform, FB-LinGapE, LinUCB, UCB-GLM.

Every policy takes a required ``budget`` (total pulls), spends exactly that many (unless
FB-LinGapE's own stopping rule fires first) and recommends one arm:

* ``uniform``: floor(B/K) pulls per arm, the remainder to distinct random arms, all in one batch handed out round
  after round (``spread_order``: every plate holds every arm);
  recommends the best empirical mean (unpulled arms last).
* ``fb-lingape``: LinGapE ([XHS18], ``screenbai.bandits.linear.gifa``) cut at the budget; recommends its
  current empirical best (ridge estimate).  delta is grid-searched by the benchmark, not here.
* ``linucb``: LinUCB (ridge lambda = 1, index x^T theta + alpha ||x||_{V^-1}, alpha = 1, our choice);
  recommends the most pulled arm (ties: higher estimate, then random).
* ``ucb-glm``: UCB-GLM (Li et al. 2017): uniformly random pulls until the pulled arms span the
  feature space, then each round the penalised logistic MLE (warm-started) and the index
  x^T theta + alpha ||x||_{V^-1} with V = lambda_reg I + sum x x^T (our choice); most pulled arm.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from screenbai.bandits.core.params import (
    ALPHA_UCB,
    LAMBDA_REG,
    TEST_COUNT,
    declared,
    like,
    renamed,
    required,
    run_state,
)
from screenbai.bandits.core.policy import NO_ARMS, Policy
from screenbai.bandits.core.registry import register
from screenbai.bandits.linear.gifa import LinGapE
from screenbai.bandits.numerics.design import spread_order, uniform_allocation
from screenbai.bandits.numerics.estimators import PlateDesign, RidgeState
from screenbai.bandits.numerics.glm import logistic_mle
from screenbai.bandits.numerics.linalg import project
from screenbai.bandits.numerics.ties import argmax_random


def _most_pulled(n: np.ndarray, estimate: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The most pulled arm; ties broken by the higher estimated mean, then at random."""
    order = np.lexsort((rng.random(n.size), estimate, n))
    return np.array([order[-1]])


@register("uniform")
class UniformAllocation(Policy):
    """Uniform allocation of the budget, then the best empirical mean."""

    name = "uniform"
    fixed_budget = True
    models_features = False
    budget: int = required(TEST_COUNT, "total number of pulls")
    _sent: bool = run_state()

    def _setup(self, features, p) -> None:
        super()._setup(features, p)
        self.budget = p.budget
        self._sent = False

    def _select(self):
        if self._sent:
            return NO_ARMS if self.n_in_flight else None
        self._sent = True
        return spread_order(uniform_allocation(self.budget, self.K, self.rng))  # round after round, not arm after arm

    def _update(self, arms, rewards):
        pass


_LINGAPE: dict[str, Any] = declared(LinGapE)  # Any: fields below type-check


@register("fb-lingape")
class FBLinGapE(Policy):
    """FB-LinGapE: LinGapE run until the budget is spent or it stops; its empirical best.

    Its other parameters are LinGapE's; S and sigma accept "oracle" in simulations.
    """

    name = "fb-lingape"
    fixed_budget = True
    budget: int = required(TEST_COUNT, "total number of pulls")
    # LinGapE's parameters (their declarations), delta defaulting to 0.1
    epsilon: float = _LINGAPE["epsilon"]
    delta: float = like(_LINGAPE["delta"], default=0.1)
    sigma: float = _LINGAPE["sigma"]
    S: float = _LINGAPE["S"]
    L: float | None = _LINGAPE["L"]
    lambda_reg: float = _LINGAPE["lambda_reg"]
    delta_eff: str = _LINGAPE["delta_eff"]
    selection: str = _LINGAPE["selection"]
    init: str | bool = _LINGAPE["init"]
    refresh_every: int = _LINGAPE["refresh_every"]
    renamed = renamed(LinGapE)
    inner: LinGapE = run_state()

    def _setup(self, features, p) -> None:
        super()._setup(features, p)
        self.budget = p.budget
        inner = {k: getattr(p, k) for k in _LINGAPE if k not in ("rng", "max_samples")}
        self.inner = LinGapE(self.X, rng=self.rng, max_samples=min(self.budget, self.max_samples), **inner)

    @classmethod
    def resolve_oracle(cls, key, instance):
        return LinGapE.resolve_oracle(key, instance)

    def _stops_now(self) -> bool:
        if self.inner.done:
            self.diagnostics["stopped_early"] = bool(self.inner.n_samples < self.budget)
        return self.inner.done

    def _select(self):
        if self._stops_now():
            return None
        # one arm at a time, so that LinGapE's tests in flight are exactly this policy's
        return self.inner.propose(1)

    def _update(self, arms, rewards):
        self.inner.tell(arms, rewards)

    def _recommend(self, rng):
        return np.asarray(self.inner.result().recommendation[:1])


@register("linucb")
class LinUCB(Policy):
    """LinUCB for B rounds, most pulled arm; O(Kd + d^2) per round (rank-one updates)."""

    name = "linucb"
    fixed_budget = True
    budget: int = required(TEST_COUNT, "total number of pulls")
    alpha: float = ALPHA_UCB
    lambda_reg: float = LAMBDA_REG
    renamed = {"alpha_ucb": "alpha"}
    state: RidgeState = run_state()

    def _setup(self, features, p) -> None:
        super()._setup(features, p)
        self.budget = p.budget
        self.alpha = p.alpha
        self.state = RidgeState(self.X, p.lambda_reg)
        self._plate = PlateDesign()

    def _after_load(self) -> None:
        self._plate = PlateDesign()

    def _select(self):
        if self.n_samples + self.n_in_flight >= self.budget:
            return NO_ARMS if self.n_in_flight else None
        # widths from the design with the tests in flight (a plate), estimate from recorded outcomes
        design = self._plate.of(self.state, self.n_samples, self.in_flight) if self.n_in_flight else self.state
        ucb = self.X @ self.state.theta + self.alpha * np.sqrt(np.maximum(design.diag, 0.0))
        return argmax_random(ucb, self.rng)

    def _update(self, arms, rewards):
        self.state.update_many(arms, rewards)

    def _recommend(self, rng):
        return _most_pulled(self.n, self.X @ self.state.theta, rng)


@register("ucb-glm")
class UCBGLM(Policy):
    """UCB-GLM (Li et al. 2017) for B rounds, most pulled arm. Bernoulli (0/1) rewards."""

    name = "ucb-glm"
    fixed_budget = True
    binary_rewards = True
    budget: int = required(TEST_COUNT, "total number of pulls")
    alpha: float = ALPHA_UCB
    lambda_reg: float = LAMBDA_REG
    state: RidgeState = run_state()
    _basis: np.ndarray = run_state()
    theta: np.ndarray = run_state()

    def _setup(self, features, p) -> None:
        super()._setup(features, p)
        self.budget = p.budget
        self.alpha = p.alpha
        self.lambda_reg = p.lambda_reg
        self.Z, _ = project(self.X)  # V can only become invertible in the span of the arms
        self.state = RidgeState(self.Z, self.lambda_reg)
        self._basis = np.zeros((self.Z.shape[1], 0))
        self.theta = np.zeros(self.Z.shape[1])
        self._plate = PlateDesign()
        self.diagnostics.update(random_pulls=0, newton_iterations_max=0)

    def _after_load(self) -> None:
        self._plate = PlateDesign()

    @property
    def exploring(self) -> bool:
        return self._basis.shape[1] < self.Z.shape[1]

    def _select(self):
        if self.n_samples + self.n_in_flight >= self.budget:
            return NO_ARMS if self.n_in_flight else None
        if self.exploring:
            self.diagnostics["random_pulls"] += 1
            a = int(self.rng.integers(self.K))
            # grow an orthonormal basis of the tested arms' span (a cancelled arm is proposed again)
            z = self.Z[a]
            r = z - self._basis @ (self._basis.T @ z)
            if np.linalg.norm(r) > 1e-8 * max(float(np.linalg.norm(z)), 1e-300):
                self._basis = np.column_stack([self._basis, r / np.linalg.norm(r)])
            return a
        fit = logistic_mle(self.Z, self.n, self.sums, lambda_reg=self.lambda_reg, theta0=self.theta)
        self.theta = fit.theta
        self.diagnostics["newton_iterations_max"] = max(self.diagnostics["newton_iterations_max"], int(fit.n_iter))
        design = self._plate.of(self.state, self.n_samples, self.in_flight) if self.n_in_flight else self.state
        ucb = self.Z @ self.theta + self.alpha * np.sqrt(np.maximum(design.diag, 0.0))
        return argmax_random(ucb, self.rng)

    def _update(self, arms, rewards):
        self.state.update_many(arms, rewards)

    def _recommend(self, rng):
        theta = self.theta
        if self.exploring or not self.n.any():
            theta = logistic_mle(self.Z, self.n, self.sums, lambda_reg=self.lambda_reg, theta0=self.theta).theta
        return _most_pulled(self.n, self.Z @ theta, rng)

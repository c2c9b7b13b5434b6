"""Fixed-budget baselines of [AKG22] section 8: uniform, FB-LinGapE, LinUCB, UCB-GLM.

Every policy takes a required ``budget`` (total pulls), spends exactly that many (unless
FB-LinGapE's own stopping rule fires first) and recommends one arm:

* ``uniform``: floor(B/K) pulls per arm, the remainder to distinct random arms, all in one batch;
  recommends the best empirical mean (unpulled arms last).
* ``fb-lingape``: LinGapE ([XHS18], ``screenbai.bandits.gifa``) cut at the budget; recommends its
  current empirical best (ridge estimate).  delta is grid-searched by the benchmark, not here.
* ``linucb``: LinUCB (ridge lambda = 1, index x^T theta + alpha ||x||_{V^-1}, alpha = 1, our choice);
  recommends the most pulled arm (ties: higher estimate, then random).
* ``ucb-glm``: UCB-GLM (Li et al. 2017): uniformly random pulls until the pulled arms span the
  feature space, then each round the penalised logistic MLE (warm-started) and the index
  x^T theta + alpha ||x||_{V^-1} with V = lambda_reg I + sum x x^T (our choice); most pulled arm.
"""

from __future__ import annotations

import numpy as np

from .design import uniform_allocation
from .estimators import RidgeState
from .gifa import LinGapE
from .glm import logistic_mle
from .linalg import project
from .params import ALPHA_UCB, BUDGET, COMMON, LAMBDA_REG, declared, renamed, resolve
from .policy import Policy
from .registry import register
from .ties import argmax_random


def _most_pulled(n: np.ndarray, estimate: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The most pulled arm; ties broken by the higher estimated mean, then at random."""
    order = np.lexsort((rng.random(n.size), estimate, n))
    return np.array([order[-1]])


@register("uniform")
class UniformAllocation(Policy):
    """Uniform allocation of the budget, then the best empirical mean."""

    name = "uniform"
    fixed_budget = True

    parameters = {"budget": BUDGET}

    def __init__(self, features, **params):
        p = resolve(type(self), params)
        super().__init__(features, m=1, rng=p.rng, max_samples=p.max_samples)
        self.budget = p.budget
        self._sent = False

    def _select(self):
        if self._sent:
            return None
        self._sent = True
        return np.repeat(np.arange(self.K), uniform_allocation(self.budget, self.K, self.rng))

    def _update(self, arms, rewards):
        pass


@register("fb-lingape")
class FBLinGapE(Policy):
    """FB-LinGapE: LinGapE run until the budget is spent or it stops; its empirical best.

    Its other parameters are LinGapE's; S and sigma accept "oracle" in simulations.
    """

    name = "fb-lingape"
    fixed_budget = True
    parameters = {"budget": BUDGET, **{k: v for k, v in declared(LinGapE).items() if k not in COMMON}}
    defaults = {"delta": 0.1}
    renamed = renamed(LinGapE)

    def __init__(self, features, **params):
        p = resolve(type(self), params)
        super().__init__(features, m=1, rng=p.rng, max_samples=p.max_samples)
        self.budget = p.budget
        inner = {k: v for k, v in vars(p).items() if k not in ("budget", "rng", "max_samples")}
        self.inner = LinGapE(features, rng=self.rng, max_samples=min(self.budget, self.max_samples), **inner)

    @classmethod
    def resolve_oracle(cls, key, instance):
        return LinGapE.resolve_oracle(key, instance)

    def _select(self):
        if self.inner.done:
            self.diagnostics["stopped_early"] = bool(self.inner.n_samples < self.budget)
            return None
        return self.inner.ask()

    def _update(self, arms, rewards):
        self.inner.tell(arms, rewards)

    def _recommend(self):
        return np.asarray(self.inner.result().recommendation[:1])


@register("linucb")
class LinUCB(Policy):
    """LinUCB for B rounds, most pulled arm; O(Kd + d^2) per round (rank-one updates)."""

    name = "linucb"
    fixed_budget = True

    parameters = {"budget": BUDGET, "alpha": ALPHA_UCB, "lambda_reg": LAMBDA_REG}
    renamed = {"alpha_ucb": "alpha"}

    def __init__(self, features, **params):
        p = resolve(type(self), params)
        super().__init__(features, m=1, rng=p.rng, max_samples=p.max_samples)
        self.budget = p.budget
        self.alpha = p.alpha
        self.state = RidgeState(self.X, p.lambda_reg)

    def _select(self):
        if self.n_samples >= self.budget:
            return None
        ucb = self.X @ self.state.theta + self.alpha * np.sqrt(np.maximum(self.state.diag, 0.0))
        return argmax_random(ucb, self.rng)

    def _update(self, arms, rewards):
        self.state.update(int(arms[0]), float(rewards[0]))

    def _recommend(self):
        return _most_pulled(self.n, self.X @ self.state.theta, self.rng)


@register("ucb-glm")
class UCBGLM(Policy):
    """UCB-GLM (Li et al. 2017) for B rounds, most pulled arm. Bernoulli (0/1) rewards."""

    name = "ucb-glm"
    fixed_budget = True
    binary_rewards = True

    parameters = {"budget": BUDGET, "alpha": ALPHA_UCB, "lambda_reg": LAMBDA_REG}

    def __init__(self, features, **params):
        p = resolve(type(self), params)
        super().__init__(features, m=1, rng=p.rng, max_samples=p.max_samples)
        self.budget = p.budget
        self.alpha = p.alpha
        self.lambda_reg = p.lambda_reg
        self.Z, _ = project(self.X)  # V can only become invertible in the span of the arms
        self.state = RidgeState(self.Z, self.lambda_reg)
        self._basis = np.zeros((self.Z.shape[1], 0))
        self.theta = np.zeros(self.Z.shape[1])
        self.diagnostics.update(random_pulls=0, newton_iterations_max=0)

    @property
    def exploring(self) -> bool:
        return self._basis.shape[1] < self.Z.shape[1]

    def _select(self):
        if self.n_samples >= self.budget:
            return None
        if self.exploring:
            self.diagnostics["random_pulls"] += 1
            return int(self.rng.integers(self.K))
        fit = logistic_mle(self.Z, self.n, self.sums, lambda_reg=self.lambda_reg, theta0=self.theta)
        self.theta = fit.theta
        self.diagnostics["newton_iterations_max"] = max(self.diagnostics["newton_iterations_max"], int(fit.n_iter))
        ucb = self.Z @ self.theta + self.alpha * np.sqrt(np.maximum(self.state.diag, 0.0))
        return argmax_random(ucb, self.rng)

    def _update(self, arms, rewards):
        a = int(arms[0])
        self.state.update(a, float(rewards[0]))
        if self.exploring:  # grow an orthonormal basis of the pulled arms' span
            z = self.Z[a]
            r = z - self._basis @ (self._basis.T @ z)
            if np.linalg.norm(r) > 1e-8 * max(np.linalg.norm(z), 1e-300):
                self._basis = np.column_stack([self._basis, r / np.linalg.norm(r)])

    def _recommend(self):
        if self.exploring or not self.n.any():
            fit = logistic_mle(self.Z, self.n, self.sums, lambda_reg=self.lambda_reg, theta0=self.theta)
            self.theta = fit.theta
        return _most_pulled(self.n, self.Z @ self.theta, self.rng)

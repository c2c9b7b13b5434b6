"""Problem instances (features, true means, reward model) and the environments that draw rewards."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from screenbai.bandits.numerics.checks import as_generator, check_features

REWARD_MODELS = ("gaussian", "bernoulli", "replay")


@dataclass(frozen=True, eq=False)
class Instance:
    """A bandit problem: K arms with features, their true means and how rewards are drawn.

    reward: "gaussian" (mean + sigma * N(0, 1)), "bernoulli" (means must lie in [0, 1]) or
        "replay" (each pull returns one of the arm's recorded outcomes, drawn uniformly).
    theta: the true parameter when the means come from a (generalized) linear model; used only
        by oracle baselines and oracle constants (S = ||theta||, c_mu).
    link: "linear" or "logistic": how ``theta`` maps to the means.
    meta: what the builder knows of the problem, e.g. ``m``, the number of best arms a top-m instance
        is built for (its top m arms may tie, so a run for another m is warned of, naming both).
    """

    features: np.ndarray
    means: np.ndarray
    reward: str = "gaussian"
    sigma: float = 1.0
    theta: np.ndarray | None = None
    link: str = "linear"
    outcomes: tuple[np.ndarray, ...] | None = None
    name: str = "instance"
    meta: dict = field(default_factory=dict)

    def __post_init__(self):
        X = check_features(self.features)
        mu = np.asarray(self.means, dtype=float).reshape(-1)
        if mu.shape[0] != X.shape[0]:
            raise ValueError(
                f"means has {mu.shape[0]} entries but features has {X.shape[0]} arms; give one mean per arm"
            )
        if not np.isfinite(mu).all():
            raise ValueError("means contain NaN/inf; every arm needs a finite true mean")
        if self.reward not in REWARD_MODELS:
            raise ValueError(f"reward must be one of {REWARD_MODELS}; got {self.reward!r}")
        if self.reward == "bernoulli" and (mu.min() < 0 or mu.max() > 1):
            raise ValueError(f"Bernoulli means must lie in [0, 1]; got range [{mu.min()}, {mu.max()}]")
        if self.reward == "gaussian" and not self.sigma > 0:
            raise ValueError(f"sigma must be positive for Gaussian rewards; got {self.sigma}")
        if self.reward == "replay":
            if self.outcomes is None or len(self.outcomes) != X.shape[0]:
                raise ValueError("replay rewards need one array of recorded outcomes per arm (outcomes=...)")
            outs = tuple(np.asarray(o, dtype=float).reshape(-1) for o in self.outcomes)
            empty = [a for a, o in enumerate(outs) if o.size == 0]
            if empty:
                raise ValueError(f"arms {empty[:10]} have no recorded outcomes; replay needs at least one per arm")
            object.__setattr__(self, "outcomes", outs)
        if self.link not in ("linear", "logistic"):
            raise ValueError(f"link must be 'linear' or 'logistic'; got {self.link!r}")
        object.__setattr__(self, "features", X)
        object.__setattr__(self, "means", mu)
        if self.theta is not None:
            object.__setattr__(self, "theta", np.asarray(self.theta, dtype=float).reshape(-1))

    # ------------------------------------------------------------------ facts about the problem
    @property
    def K(self) -> int:
        return self.features.shape[0]

    @property
    def d(self) -> int:
        return self.features.shape[1]

    def best_arms(self, m: int = 1) -> np.ndarray:
        """Indices of the m largest means (stable order for ties)."""
        return np.sort(np.argsort(-self.means, kind="stable")[:m])

    def is_correct(self, recommendation, epsilon: float = 0.0, m: int | None = None) -> bool:
        """(epsilon, m)-correctness (``is_epsilon_correct``): every recommended arm has mean >= mu_[m] - epsilon."""
        return is_epsilon_correct(self.means, recommendation, epsilon, m)

    def environment(self, rng=None) -> Environment:
        return Environment(self, rng)


def mth_best(means, m: int) -> float:
    """mu_[m], the m-th largest of ``means`` (m = 1: the best)."""
    return float(np.sort(np.asarray(means, dtype=float).reshape(-1))[::-1][m - 1])


def epsilon_good(means, m: int, epsilon: float = 0.0) -> np.ndarray:
    """Per arm, whether it is an (epsilon, m)-good answer: mean >= mu_[m] - epsilon (the top-m epsilon-good
    definition of the error rates, shared/spec/ALGORITHMS.md; 1e-12 of round-off allowed). The one judgement of
    correctness: ``Instance.is_correct``, the screening study's ``eps_error`` and the campaign backtest use it."""
    mu = np.asarray(means, dtype=float).reshape(-1)
    return mu >= mth_best(mu, m) - float(epsilon) - 1e-12


def is_epsilon_correct(means, recommendation, epsilon: float = 0.0, m: int | None = None) -> bool:
    """Whether every recommended arm is (epsilon, m)-good (``epsilon_good``); m defaults to the answer's size."""
    rec = np.asarray(recommendation, dtype=int).reshape(-1)
    return bool(np.all(epsilon_good(means, rec.size if m is None else m, epsilon)[rec]))


class Environment:
    """Draws rewards for an instance from its own generator (buffered: same draws, fewer calls)."""

    _BUF = 4096

    def __init__(self, instance: Instance, rng=None):
        self.instance = instance
        self.rng = as_generator(rng)
        self._means = instance.means
        self._sigma = instance.sigma
        self._buf = np.empty(0)
        self._pos = 0

    def _noise(self, k: int) -> np.ndarray:
        if self._pos + k > self._buf.size:
            size = max(self._BUF, k)
            if self.instance.reward == "gaussian":
                self._buf = self.rng.standard_normal(size)
            else:
                self._buf = self.rng.random(size)
            self._pos = 0
        out = self._buf[self._pos : self._pos + k]
        self._pos += k
        return out

    def pull(self, arms) -> np.ndarray:
        arms = np.asarray(arms, dtype=np.int64).reshape(-1)
        model = self.instance.reward
        if model == "gaussian":
            return self._means[arms] + self._sigma * self._noise(arms.size)
        if model == "bernoulli":
            return (self._noise(arms.size) < self._means[arms]).astype(float)
        outs = self.instance.outcomes
        assert outs is not None  # checked by Instance for replay rewards
        u = self._noise(arms.size)
        return np.array([outs[a][int(v * outs[a].size)] for a, v in zip(arms, u)])

    def pull_sequence(self, arms) -> np.ndarray:
        """Rewards of the arms pulled one after another, in one call: the same draws as
        ``pull(a)`` for each arm in turn (a block is split where the noise buffer refills)."""
        arms = np.asarray(arms, dtype=np.int64).reshape(-1)
        out = np.empty(arms.size)
        start = 0
        while start < arms.size:
            room = self._buf.size - self._pos
            stop = start + (room if room > 0 else min(self._BUF, arms.size - start))
            stop = min(stop, arms.size)
            out[start:stop] = self.pull(arms[start:stop])
            start = stop
        return out

"""A test of fit of the model on the outcomes collected: the certificate holds only if the model does.

Logistic model (0/1 outcomes, P(hit) = mu(x_a^T theta)). The outcomes are aggregated per arm
(n_a tests, s_a hits) and the model is fitted by maximum likelihood (a tiny ridge keeps it finite
under separation). Two tests:

* binned (Hosmer & Lemeshow 1980): the arms sorted by predicted rate p_a are cut into about
  ``n_bins`` groups of equal numbers of tests (an arm is never split); per group g with N_g tests,
  O_g hits and E_g = sum n_a p_a expected ones,
      C = sum_g (O_g - E_g)^2 / (E_g (1 - E_g / N_g)),   p = P(chi2_{G - 2} > C)
  (G the number of groups; the usual reference distribution for a fitted logistic model);
* per arm, for the arms with at least ``min_tests`` tests: the two-sided binomial p-value of s_a
  under Binomial(n_a, p_a), Bonferroni-corrected over those arms (an arm whose own rate the
  features cannot explain, e.g. stereoisomers with one fingerprint).

Linear-Gaussian model (outcome x_a^T theta + noise, noise sub-Gaussian with scale sigma). The model
is fitted by least squares on the per-arm sums (with the sums of squares for the residuals), and
the residuals are standardised by sigma:

* lack of fit: z_a = (ybar_a - x_a^T theta_hat) / (sigma / sqrt(n_a)), C = sum_a z_a^2,
  p = P(chi2_{k - r} > C) (k tested arms, r the rank of their features): the means are not linear
  in the features;
* noise: C = RSS / sigma^2, p = P(chi2_{N - r} > C) (N tests): the noise is larger than sigma.
  (A variance below sigma^2, e.g. 0/1 outcomes with sigma = 1/2, only makes both tests conservative.)

The model is rejected at ``level`` when the smaller p-value of its two tests is below level / 2
(Bonferroni over the two). The reference distributions hold for a design fixed in advance; an
adaptive design (the bandit's) makes them approximate, so a rejection is a warning to heed, not a
proof, and an acceptance does not prove the model either (few tests detect little).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

# scipy.special's distribution functions, not scipy.stats: the p-values are the same (chi2.sf and norm.sf
# call these; binom's cdf/sf agree to 5e-13), and importing scipy.stats cost `campaign status` 0.55 s of CPU
from scipy.special import bdtr, bdtrc, chdtrc, expit, ndtr

from screenbai.bandits.numerics.glm import SeparableDataError, logistic_mle

LOGISTIC = "the logistic model on these features"
#: what a rejection means for a certificate resting on the model (the warning's last sentence; status
#: replaces it when the certificate rests on the compound's own wells instead, rules/own_wells.py)
MODEL_ASSUMED = ("The certificate and the stopping rule's guarantee assume this model: treat them as unproven; "
                 "richer features (or testing the deviating compounds apart) may restore the fit.")
LINEAR = "the linear-Gaussian model on these features"


@dataclass(frozen=True)
class FitTest:
    """One test: its name, statistic, degrees of freedom and p-value."""

    name: str
    statistic: float
    df: float
    p_value: float


@dataclass(frozen=True)
class ModelCheck:
    """The outcome of a model check (see the module docstring).

    rejected: whether the model is rejected at ``level``; p_value: the combined p-value
    (2 x the smaller of the tests', at most 1); tests: each test; arms: per-arm deviations
    (arm, tests, observed, predicted, p-value Bonferroni-corrected), worst first, those below
    ``level``; bins: for the logistic model, per group (tests, observed rate, predicted rate).
    """

    model: str
    level: float
    n_tests: int
    n_arms: int
    rejected: bool
    p_value: float
    tests: tuple[FitTest, ...]
    arms: tuple[tuple[int, int, float, float, float], ...] = ()
    bins: tuple[tuple[int, float, float], ...] = ()
    note: str = ""
    extra: dict = field(default_factory=dict)

    def warning(self, names=None) -> str | None:
        """A warning for the chemist when the model is rejected, else None."""
        if not self.rejected:
            return None
        worst = min(self.tests, key=lambda t: t.p_value)
        text = (f"WARNING: {self.model} does not fit the {self.n_tests:,} outcomes collected "
                f"(p {_p(self.p_value)}, below the level {self.level:g}; {worst.name}: p {_p(worst.p_value)})")
        if self.arms:
            shown = ", ".join(f"{names[a] if names is not None else f'arm {a}'} (observed {obs:.3g}, "
                              f"predicted {pred:.3g}, {n} tests)" for a, n, obs, pred, _ in self.arms[:5])
            text += f"; deviating: {shown}"
        return f"{text}. {MODEL_ASSUMED}"

    def to_dict(self, names=None) -> dict:
        return {
            "model": self.model,
            "level": self.level,
            "rejected": bool(self.rejected),
            "p_value": float(self.p_value) if self.tests else None,  # no test run: no p-value (not 1, "agrees")
            "n_tests": int(self.n_tests),
            "n_arms": int(self.n_arms),
            "tests": [{"name": t.name, "statistic": t.statistic, "df": t.df, "p_value": t.p_value}
                      for t in self.tests],
            "deviating": [{"compound": names[a] if names is not None else int(a), "tests": n, "observed": obs,
                           "predicted": pred, "p_value": p} for a, n, obs, pred, p in self.arms],
            "bins": [{"tests": n, "observed": o, "predicted": e} for n, o, e in self.bins],
            "note": self.note,
            "warning": self.warning(names),
        }


def _p(p: float) -> str:
    """A p-value as read: "= 0.012", or "< 0.001" (not "= 0", which no test gives)."""
    return "< 0.001" if p < 1e-3 else f"= {p:.2g}"


def _aggregates(features, n, sums):
    X = np.asarray(features, dtype=float)
    n = np.asarray(n, dtype=float).reshape(-1)
    sums = np.asarray(sums, dtype=float).reshape(-1)
    if X.ndim != 2 or n.shape != (X.shape[0],) or sums.shape != n.shape:
        raise ValueError(f"model check: features {X.shape}, counts {n.shape} and sums {sums.shape} must give one "
                         "row, one count and one sum per arm")
    if (n < 0).any() or not np.isfinite(sums).all():
        raise ValueError("model check: counts must be >= 0 and sums finite")
    tested = np.flatnonzero(n > 0)
    return X, n, sums, tested


def _combine(model, level, tests, n_tests, n_arms, **kw) -> ModelCheck:
    ps = [t.p_value for t in tests if math.isfinite(t.p_value)]
    p = min(1.0, len(ps) * min(ps)) if ps else 1.0
    return ModelCheck(model, float(level), int(n_tests), int(n_arms), bool(ps) and p < level, float(p),
                      tuple(tests), **kw)


def _tested_for(k: int, rank: int, n_params: int) -> str:
    """'3 compounds tested for 3 model parameters', or where their features span fewer of the model's parameters
    (RAGE's first plate: one compound) '1 compound tested, which determines 1 of the model's 4 parameters'."""
    if rank == n_params:
        return f"{k} compounds tested for {n_params} model parameters"
    tested = f"{k} compound{'' if k == 1 else 's'} tested"
    return f"{tested}, which determine{'s' if k == 1 else ''} {rank} of the model's {n_params} parameters"


def check_logistic(features, n, successes, *, level: float = 0.05, n_bins: int = 10, min_tests: int = 10,
                   theta=None) -> ModelCheck:
    """The logistic model's test of fit on per-arm counts ``n`` and hits ``successes`` (module docstring).
    ``theta``: the fitted parameter if already known (default: the MLE of these outcomes)."""
    X, n, s, tested = _aggregates(features, n, successes)
    if (s < 0).any() or (s > n).any():
        raise ValueError("model check: hits must lie between 0 and the number of tests of each arm")
    N = int(n.sum())
    if theta is None:
        if tested.size == 0:
            return _combine(LOGISTIC, level, (), 0, 0, note="no outcomes yet")
        try:
            theta = logistic_mle(X[tested], n[tested], s[tested], 1e-3).theta
        except SeparableDataError:
            theta = logistic_mle(X[tested], n[tested], s[tested], 1.0).theta
    rank = int(np.linalg.matrix_rank(X[tested]))
    if tested.size <= rank:  # as many parameters as compounds: the fit reproduces any outcomes (e.g. a spanning design)
        return _combine(LOGISTIC, level, (), N, tested.size,
                        note=f"{_tested_for(tested.size, rank, X.shape[1])}: the model fits any outcomes "
                        "of so few compounds exactly; it can be checked once more compounds than parameters are tested")
    p = expit(X[tested] @ np.asarray(theta, dtype=float))
    nt, st = n[tested], s[tested]
    tests = []
    # binned: groups of about N / n_bins tests by predicted rate
    order = np.argsort(p, kind="stable")
    cum = np.cumsum(nt[order])
    group = np.minimum((n_bins * (cum - 0.5 * nt[order]) / max(cum[-1], 1)).astype(int), n_bins - 1)
    Ng = np.bincount(group, weights=nt[order], minlength=n_bins)
    Og = np.bincount(group, weights=st[order], minlength=n_bins)
    Eg = np.bincount(group, weights=(nt * p)[order], minlength=n_bins)
    used = Ng > 0
    Ng, Og, Eg = Ng[used], Og[used], Eg[used]
    bins = tuple((int(a), float(o / a), float(e / a)) for a, o, e in zip(Ng, Og, Eg))
    if Ng.size >= 3:
        var = Eg * (1.0 - Eg / Ng)
        C = float(np.sum((Og - Eg) ** 2 / np.maximum(var, 1e-12)))
        tests.append(FitTest("observed against predicted hit rates in groups by predicted rate (Hosmer-Lemeshow)",
                             C, Ng.size - 2, float(chdtrc(Ng.size - 2, C))))
    # per arm: two-sided binomial p-values, Bonferroni over the arms with enough tests
    many = nt >= min_tests
    arms: tuple = ()
    if many.any():
        k = int(many.sum())
        sa, na, pa = st[many], nt[many], np.clip(p[many], 1e-12, 1 - 1e-12)
        ni = np.rint(na).astype(np.int64)  # whole numbers of tests: bdtr refuses a float n
        two = np.minimum(1.0, 2.0 * np.minimum(bdtr(sa, ni, pa), bdtrc(sa - 1, ni, pa)))
        adj = np.minimum(1.0, k * two)
        tests.append(FitTest(f"per compound, observed against predicted hits ({k} compounds with >= {min_tests} "
                             "tests, Bonferroni)", float(adj.min()), float("nan"), float(adj.min())))
        bad = np.flatnonzero(adj < level)
        bad = bad[np.argsort(adj[bad], kind="stable")]
        idx = tested[many]
        arms = tuple((int(idx[b]), int(na[b]), float(sa[b] / na[b]), float(pa[b]), float(adj[b])) for b in bad)
    note = "" if tests else "too few outcomes to test the fit"
    return _combine(LOGISTIC, level, tests, N, tested.size, arms=arms, bins=bins, note=note)


def check_linear(features, n, sums, sums_sq, sigma: float, *, level: float = 0.05, min_tests: int = 2) -> ModelCheck:
    """The linear-Gaussian model's test of fit on per-arm counts, sums and sums of squares, with the
    noise scale ``sigma`` the algorithm assumes (module docstring)."""
    X, n, s, tested = _aggregates(features, n, sums)
    s2 = np.asarray(sums_sq, dtype=float).reshape(-1)
    if s2.shape != n.shape or not np.isfinite(s2).all():
        raise ValueError(f"model check: sums of squares {s2.shape} must give one finite value per arm")
    if not sigma > 0:
        raise ValueError(f"model check: sigma (the noise scale) must be > 0; got {sigma}")
    model = f"{LINEAR} (noise scale sigma = {sigma:g})"
    N = int(n.sum())
    if tested.size == 0:
        return _combine(model, level, (), 0, 0, note="no outcomes yet")
    Xt, nt, st, s2t = X[tested], n[tested], s[tested], s2[tested]
    ybar = st / nt
    w = np.sqrt(nt)
    theta, *_ = np.linalg.lstsq(Xt * w[:, None], ybar * w, rcond=None)  # weighted least squares on the means
    r = int(np.linalg.matrix_rank(Xt))
    mu = Xt @ theta
    z = (ybar - mu) * w / sigma  # standardised arm residuals
    tests = []
    k = tested.size
    if k > r:
        C = float(z @ z)
        tests.append(FitTest("lack of fit: standardised compound means against the model", C, k - r,
                             float(chdtrc(k - r, C))))
    if N > r:
        rss = float(np.sum(s2t - 2.0 * mu * st + nt * mu * mu))
        C = max(rss, 0.0) / sigma**2
        tests.append(FitTest(f"noise: residual variance against sigma^2 = {sigma**2:g}", C, N - r,
                             float(chdtrc(N - r, C))))
    many = nt >= min_tests
    arms: tuple = ()
    if many.any():
        adj = np.minimum(1.0, int(many.sum()) * 2.0 * ndtr(-np.abs(z[many])))
        bad = np.flatnonzero(adj < level)
        bad = bad[np.argsort(adj[bad], kind="stable")]
        idx = tested[many]
        arms = tuple((int(idx[b]), int(nt[many][b]), float(ybar[many][b]), float(mu[many][b]), float(adj[b]))
                     for b in bad)
    note = "" if tests else "too few outcomes to test the fit"
    if tests and k <= r:  # the means fit exactly: only the noise is tested
        note = (f"the means' fit cannot be tested yet: {_tested_for(k, r, X.shape[1])} (only the noise "
                "against sigma is); it can be once more compounds than parameters are tested")
    return _combine(model, level, tests, N, k, arms=arms, note=note, extra={"residual_sd": float(np.std(z))})


def check_policy(policy, sums_sq=None, *, level: float = 0.05) -> ModelCheck | None:
    """The model check for the model ``policy`` assumes, on its recorded outcomes: logistic for 0/1
    outcomes, linear-Gaussian (needs the per-arm sums of squared outcomes ``sums_sq``, which a policy
    does not keep: the campaign's observations hold them) otherwise; None for policies that model
    every arm apart (no model of the features to check)."""
    if not policy.models_features:
        return None
    if policy.binary_rewards:
        return check_logistic(policy.X, policy.n, policy.sums, level=level)
    if sums_sq is None:
        raise ValueError("the linear model's check needs the per-arm sums of squared outcomes (sums_sq)")
    return check_linear(policy.X, policy.n, policy.sums, sums_sq, float(getattr(policy, "sigma", 1.0)), level=level)

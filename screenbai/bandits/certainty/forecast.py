"""How many tests (and plates) a fixed-confidence run will need: plug an estimate into the lower bound
and the algorithm's stopping threshold (LOWER_BOUND.md, "Certificate and forecast").

A run that samples in proportions w stops roughly when its evidence, which grows like t / T(w) (the GLR
statistic; Garivier & Kaufmann 2016, Sec. 3-4), reaches its threshold beta(t, delta). The evidence is random.
In the local (Gaussian) picture the GLR against the nearest alternative is M^2 / (4 u), u = t / T,
T = factor * T*(theta_hat), M a Brownian motion in u with drift 2 and variance 2 per unit (for two Gaussian
arms tested in turn M is the scaled difference of their sums; the GLR's mean is then u + 1/2, its variance
2 u + 1/2). The run stops when M first passes 2 sqrt(L u), L = beta(t, delta). Through the tangent of that
concave boundary at u (a first passage over a line, closed form) (``stopped_by``):

    P(stopped by t) = Phi(sqrt(2 u) - sqrt(2 L)) + exp(2 sqrt(L u) - L) Phi(-sqrt(2 u)).

The forecast is its median; where the mean evidence meets the threshold, t = T beta(t, delta)
(``stopping_time``), lies above it (the median is 0.96 times it at beta = 23 nats, 0.71 times at 3). With a
constant threshold the band (10-90 %) is 0.65-1.43 times the median at 23 nats, 0.10-2.7 times at 3: a run that
needs little evidence stops at very different times. ``factor`` is the algorithm's
measured sampling factor T(w_hat) / T* (1 for an algorithm that tracks w*; benchmarks/lower_bound.py measures
it) and beta the algorithm's own threshold, a callable.

The band says where the stop falls, for two reasons: theta is uncertain (draws of theta: a Gaussian
N(theta_hat, cov) the caller gives, e.g. the estimate's covariance, or explicit draws such as a bootstrap),
and even with theta known the stop is random (the law above). It is the ``level`` interval of the mixture of
the laws of theta_hat and the draws, given no stop after the ``done`` tests so far. Checked against simulated
two-arm GLR stops (tests/test_forecast.py) and log-tas's stops on kw_synthetic with theta known
(docs/lower_bound.md, "Session 13"). ``source`` says what
theta_hat rests on: "prior" (a guess before any outcome, e.g. at ``campaign init``) or "outcomes" (an
estimate from the tests so far); the forecast is only as good as that.

For 0/1 outcomes of a logistic model (``exact=True``) T* is the exact Bernoulli-KL bound's
(certainty/exact_logistic.py) where it is affordable (``exact_affordable``), not the local Fisher
form's: the likelihood-ratio stop collects exact Bernoulli evidence, and near a hit rate of 1 the local
form misjudges it (kw_synthetic d = 5 seed 2: from the true theta the local forecast was 2.16 times short of
the median stop, the exact one 1.62; after plate 8 of a campaign 1.73 and 1.43). It does not make forecasts
better in general: at d = 10 the exact T* is lower and the forecast, which assumes the best spread of tests,
is short by the algorithm's sampling factor (docs/lower_bound.md, "Session 12"). One exact solve, at
theta_hat; each draw of the band keeps its local T* times the ratio exact / local found at theta_hat.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import log_ndtr, ndtr

from screenbai.bandits.certainty.complexity import allocation_time, characteristic_time, exact_pairs_affordable
from screenbai.bandits.certainty.exact_logistic import exact_characteristic_time
from screenbai.bandits.certainty.local_form import shared_features
from screenbai.bandits.numerics.checks import check_features

SOURCES = ("prior", "outcomes")
#: the exact bound is used up to this many features (and local_form.EXACT_MAX_PAIRS pairs): one solve at these settings
#: takes 0.2-0.9 s at K = 50, d = 2-10 (log-tas's blocks use the same ones: T within 4 % of the exact T*)
EXACT_MAX_D = 10
EXACT_TOL = 3e-2
EXACT_STEPS = 20
#: what ``Forecast.bound`` says
BOUNDS = {"exact": "the exact Bernoulli-KL bound", "local": "the local Fisher form of the bound"}
#: a forecast beyond this many tests is reported as inf (the threshold outgrows t)
T_MAX = 1e15


#: a forecast this close to a whole number of plates (a fraction of one plate) counts as that number: the tests
#: are a continuous estimate, and 120.0001 tests in plates of 60 are 2 plates, not 3
WHOLE_PLATE_SLACK = 1e-4


def whole_plates(tests: float, plate_size: int) -> float:
    """The plates ``tests`` tests fill (inf when unbounded), rounded up but for WHOLE_PLATE_SLACK."""
    if not math.isfinite(tests):
        return math.inf
    return float(max(math.ceil(tests / max(plate_size, 1) - WHOLE_PLATE_SLACK), 0))


@dataclass(frozen=True)
class Forecast:
    """Tests (and plates) until a fixed-confidence run stops, with a band.

    tests: the point forecast (from theta_hat: the median of its stop, given none after the ``done`` tests so
    far); low, high: the band's ends (the ``level`` interval of the stop's law over theta_hat and the draws, module
    docstring); plates, plates_low, plates_high: the same
    in whole plates of ``plate_size`` (None without a plate size); T_star: T*(theta_hat); source:
    "prior" or "outcomes" (module docstring); draws: the point forecast of every draw of theta; bound: "exact"
    or "local", the form of T* (module docstring); past: the sampling factor of the tests so far (``counts``).
    """

    tests: float
    low: float
    high: float
    T_star: float
    factor: float
    delta: float
    epsilon: float
    source: str
    level: float
    plate_size: int | None = None
    draws: tuple[float, ...] = ()
    bound: str = "local"
    past: float = 1.0

    def _plates(self, tests: float) -> float | None:
        if self.plate_size is None:
            return None
        return whole_plates(tests, self.plate_size)

    @property
    def plates(self) -> float | None:
        return self._plates(self.tests)

    @property
    def plates_low(self) -> float | None:
        return self._plates(self.low)

    @property
    def plates_high(self) -> float | None:
        return self._plates(self.high)

    def as_dict(self) -> dict:
        """Plain numbers for JSON (inf as None)."""

        def num(x):
            return None if x is None or not math.isfinite(x) else float(x)

        return {
            "tests": num(self.tests), "tests_low": num(self.low), "tests_high": num(self.high),
            "plates": num(self.plates), "plates_low": num(self.plates_low), "plates_high": num(self.plates_high),
            "plate_size": self.plate_size, "T_star": num(self.T_star), "factor": self.factor, "delta": self.delta,
            "epsilon": self.epsilon, "source": self.source, "level": self.level, "bound": self.bound,
            "past": num(self.past),
        }


def exact_affordable(X, m: int = 1) -> bool:
    """Whether the exact Bernoulli-KL T* of these features is cheap enough for a forecast (EXACT_MAX_D
    features, EXACT_MAX_PAIRS pairs of the answer against the other arms)."""
    K, d = np.shape(X)
    return d <= EXACT_MAX_D and exact_pairs_affordable(K, m)


def exact_ratio(X, theta, local_T: float, **complexity) -> float | None:
    """T* of the exact Bernoulli-KL bound at theta divided by the local form's ``local_T`` (the logistic
    model; EXACT_TOL, EXACT_STEPS), or None where it is not affordable or not found (the local form stands)."""
    m = int(complexity.get("m", 1))
    if complexity.get("model") != "logistic" or not exact_affordable(X, m) or not math.isfinite(local_T):
        return None
    try:
        ex = exact_characteristic_time(X, theta, epsilon=float(complexity.get("epsilon", 0.0)), m=m,
                                       answer=complexity.get("answer"), tol=EXACT_TOL, max_iter=EXACT_STEPS,
                                       strict=False)
    except RuntimeError:  # no allocation evaluated (values not finite at an extreme theta)
        return None
    return ex.T_star / local_T if math.isfinite(ex.T_star) and ex.T_star > 0 else None


def stopping_time(T: float, beta: Callable[[float, float], float], delta: float, factor: float = 1.0) -> float:
    """The smallest t >= 1 with t >= factor * T * beta(t, delta), where the mean evidence meets the threshold
    (by doubling then bisection; the forecast is the median of the stop's law, a little earlier).

    inf when T is inf or the threshold outgrows t up to ``T_MAX``.
    """
    if not math.isfinite(T):
        return math.inf
    c = factor * T

    def gap(t: float) -> float:
        return t - c * float(beta(t, delta))

    if gap(1.0) >= 0:
        return 1.0
    lo, hi = 1.0, 2.0
    while gap(hi) < 0:
        lo, hi = hi, hi * 2.0
        if hi > T_MAX:
            return math.inf
    for _ in range(200):  # bisection to a relative 1e-10
        mid = 0.5 * (lo + hi)
        if gap(mid) >= 0:
            hi = mid
        else:
            lo = mid
        if hi - lo <= 1e-10 * hi:
            break
    return hi


def stopped_by(t: float, T: float, beta: Callable[[float, float], float], delta: float, cap: float = math.inf,
               done: float = 0.0, past: float = 1.0) -> float:
    """P(a run with characteristic time T (times its sampling factor) has stopped by test t): the first passage
    of its evidence over beta (module docstring); 1 from ``cap`` on (a second route of the stopping rule that
    fires there). ``done`` tests so far made at ``past`` times T per unit of evidence (their sampling factor):
    the mean evidence at t >= done is done / (past T) + (t - done) / T. 0 before the first test (t < 1): no run
    stops there, and beta is a threshold of t >= 1 (log(1 + log t) has no value at t < 1/e)."""
    if t >= cap:
        return 1.0
    if not math.isfinite(T) or t < 1.0:
        return 0.0
    u, level = (min(t, done) / past + max(t - done, 0.0)) / T, float(beta(t, delta))
    if u <= 0:
        return 0.0
    # first passage of the drift-2 Brownian motion M over 2 sqrt(L u) (module docstring), through the tangent of
    # that concave boundary at u: Phi(sqrt(2u) - sqrt(2L)) + exp(2 sqrt(L u) - L) Phi(-sqrt(2u))
    root = math.sqrt(2.0 * u)
    p = ndtr(root - math.sqrt(2.0 * level)) + math.exp(min(2.0 * math.sqrt(level * u) - level + log_ndtr(-root), 0.0))
    return float(min(p, 1.0))


def stop_quantiles(Ts: Sequence[float], caps: Sequence[float], beta: Callable[[float, float], float], delta: float,
                   qs: Sequence[float], done: float = 0.0, past: float = 1.0) -> list[float]:
    """The quantiles ``qs`` of the stop under the equal mixture of :func:`stopped_by`'s laws (one per T and cap),
    given no stop after ``done`` tests made at sampling factor ``past`` (caps at or below ``done`` did not fire
    and are dropped). inf where the mixture leaves that much mass on never stopping (before T_MAX). At least 1:
    the bisection looks at t >= 1 only, where beta is defined (a stop comes after a test)."""
    caps = [c if c > done else math.inf for c in caps]
    # components that share (T, cap) share their law: one evaluation each, weighted by their count (the own wells'
    # route draws are many and fall on a few whole plates)
    pairs, counts = np.unique(np.array([Ts, caps], dtype=float).T, axis=0, return_counts=True)
    weights = counts / counts.sum()

    def cdf(t: float) -> float:
        return float(sum(w * stopped_by(t, T, beta, delta, c, done, past) for (T, c), w in zip(pairs, weights)))

    base = cdf(done) if done > 0 else 0.0
    if base > 1 - 1e-9:  # every law says the run should have stopped already: the band starts now
        base = 0.0
    out = []
    for q in qs:
        target = base + q * (1.0 - base)
        lo = max(done, 1.0)
        hi = max(2.0 * lo, 2.0)
        while cdf(hi) < target:
            lo, hi = hi, 2.0 * hi
            if hi > T_MAX:
                hi = math.inf
                break
        if math.isfinite(hi):
            for _ in range(100):
                mid = 0.5 * (lo + hi)
                if cdf(mid) >= target:
                    hi = mid
                else:
                    lo = mid
                if hi - lo <= 1e-6 * hi:
                    break
        out.append(hi)
    return out


def _check_common(beta, delta: float, factor: float, source: str, level: float, plate_size) -> None:
    if not callable(beta):
        raise ValueError(f"beta must be a function beta(t, delta) (the algorithm's stopping threshold); got {beta!r}")
    if not (isinstance(delta, (int, float, np.floating)) and 0 < delta < 1):
        raise ValueError(f"delta (the error probability) must lie in (0, 1); got {delta!r}")
    if not (isinstance(factor, (int, float, np.floating)) and math.isfinite(factor) and factor > 0):
        raise ValueError(f"factor (the algorithm's sampling factor T(w_hat) / T*) must be a number > 0; got {factor!r}")
    if source not in SOURCES:
        raise ValueError(
            f"source must be one of {SOURCES}: 'prior' when theta_hat is a guess made before any outcome, "
            f"'outcomes' when it is estimated from the tests so far; got {source!r}"
        )
    if not 0 < level < 1:
        raise ValueError(f"level (the band's coverage) must lie in (0, 1); got {level!r}")
    if plate_size is not None and (isinstance(plate_size, bool) or not isinstance(plate_size, (int, np.integer))
                                   or plate_size < 1):
        raise ValueError(f"plate_size must be a whole number >= 1 (tests per plate) or None; got {plate_size!r}")


def forecast(
    X,
    theta_hat,
    beta: Callable[[float, float], float],
    delta: float,
    *,
    source: str,
    factor: float = 1.0,
    cov=None,
    thetas: Sequence | np.ndarray | None = None,
    n_draws: int = 20,
    level: float = 0.8,
    plate_size: int | None = None,
    rng=None,
    shortcut: Callable[[np.ndarray], float] | None = None,
    exact: bool = False,
    done: float = 0.0,
    counts=None,
    local_T: float | None = None,
    route_thetas: Sequence | np.ndarray | None = None,
    route_shortcut: Callable[[np.ndarray], float] | None = None,
    **complexity,
) -> Forecast:
    """Tests until the stop, from T*(theta_hat) and the threshold beta (module docstring).

    cov: covariance of theta_hat: ``n_draws`` draws from N(theta_hat, cov) give the band; or ``thetas``,
    explicit draws (a bootstrap). ``shortcut(theta)``: the tests in all after which a second route of the
    stopping rule, one beta does not describe, would stop if theta were the truth (``Policy.stopping_shortcut``,
    log-tas's own wells); each forecast is the smaller of the two. ``done``: tests already made without a stop
    (the point and the band are the stop's law given that); ``counts``: those tests per arm (done is then their
    sum), whose evidence is counted at their own rate, T(counts) / T* at theta_hat in the local form
    (``Forecast.past``; the tests to come at the rate of the best spread, times ``factor``); without them every
    test counts at that rate. ``exact``: the exact Bernoulli-KL T* where affordable (module docstring; ``bound``
    says which was used). ``complexity``: model, sigma, epsilon, m, answer... as for :func:`characteristic_time`.
    ``local_T``: the local form's T*(theta_hat) with these settings if already solved (one solve over all K arms,
    seconds to minutes at K = 10^6), for a forecast without draws; else it is solved here.
    ``route_thetas``: further draws of theta for the band's second route alone (``shortcut``, a few scalar operations
    each, where a draw of T* is a solve): each joins the mixture with its own route and the threshold's law of the
    solved components in turn (theta_hat, then the draws). So the band weighs the chance that the estimate's leader
    fails its wells (below the bar under that draw) by the posterior's mass, not by whether one of a handful of
    draws happens to fall there (docs/lower_bound.md, "Session 25"). ``route_shortcut(theta)``: the second route of
    ``route_thetas``' draws, one draw of it with the run's own chance where the route has its own outcomes (log-tas's
    wells: how many they need is random, a lucky run of hits certifies sooner; ``shortcut`` is the expected count);
    default ``shortcut`` (docs/lower_bound.md, "Session 26"). The band always holds the point.
    """
    _check_common(beta, delta, factor, source, level, plate_size)
    if not (isinstance(done, (int, float, np.integer, np.floating)) and math.isfinite(done) and done >= 0):
        raise ValueError(f"done (tests already made) must be a number >= 0; got {done!r}")
    if counts is not None:
        counts = np.asarray(counts, dtype=float).reshape(-1)
        if counts.shape != (np.shape(X)[0],) or not np.isfinite(counts).all() or counts.min() < 0:
            raise ValueError(f"counts must hold the {np.shape(X)[0]} arms' tests so far (finite, >= 0); got shape "
                             f"{counts.shape}")
        if done and not math.isclose(done, counts.sum()):
            raise ValueError(f"done = {done!r} tests, but counts add up to {counts.sum():g}: give counts alone (done "
                             "is their sum)")
        done = float(counts.sum())
    X = check_features(X)
    with shared_features(X):  # the point and every draw: one projection of the features (local_form)
        theta_hat = np.asarray(theta_hat, dtype=float).reshape(-1)
        point = None
        if local_T is not None and thetas is None and cov is None:  # no draws: only the value is needed
            T_local = float(local_T)
        else:
            point = characteristic_time(X, theta_hat, **complexity)
            T_local = point.T_star
        ratio = exact_ratio(X, theta_hat, T_local, **complexity) if exact else None
        scale = 1.0 if ratio is None else ratio
        T_point = T_local * scale
        past = 1.0
        if counts is not None:
            if done > 0:
                keys = ("model", "sigma", "epsilon", "m", "answer")
                T_past = allocation_time(X, theta_hat, counts, **{k: v for k, v in complexity.items() if k in keys})
                past = max(T_past / T_local, 1.0) if math.isfinite(T_local) and T_local > 0 else 1.0
        cap = math.inf if shortcut is None else float(shortcut(theta_hat))
        tests = stop_quantiles([factor * T_point], [cap], beta, delta, [0.5], done, past)[0]
        if thetas is None and cov is not None:
            cov = np.asarray(cov, dtype=float)
            if cov.shape != (theta_hat.size, theta_hat.size):
                raise ValueError(f"cov must be a {theta_hat.size} x {theta_hat.size} matrix; got shape {cov.shape}")
            gen = np.random.default_rng(rng)
            thetas = gen.multivariate_normal(theta_hat, cov, size=int(n_draws), method="eigh")
        values: list[float] = []
        Ts, caps = [factor * T_point], [cap]  # the mixture of the band: theta_hat and every draw
        if thetas is not None:
            w0 = complexity.pop("w0", None)
            # each draw starts from the point's solve (its arms and working pairs): most of its rounds are spared
            w0 = point if point is not None and math.isfinite(point.T_star) else w0
            for th in np.asarray(thetas, dtype=float):
                T = characteristic_time(X, th, w0=w0, **complexity).T_star * scale
                Ts.append(factor * T)
                caps.append(math.inf if shortcut is None else float(shortcut(th)))
                values.append(stop_quantiles(Ts[-1:], caps[-1:], beta, delta, [0.5], done, past)[0])
        if route_thetas is not None and shortcut is not None:
            drawn = shortcut if route_shortcut is None else route_shortcut
            more = [float(drawn(th)) for th in np.asarray(route_thetas, dtype=float)]
            if any(math.isfinite(c) for c in more + caps):  # else no second route: the band stands as it was
                solved = list(Ts)
                Ts = Ts + [solved[j % len(solved)] for j in range(len(more))]
                caps = caps + more
        low, high = stop_quantiles(Ts, caps, beta, delta, [(1 - level) / 2, (1 + level) / 2], done, past)
        low, high = min(low, tests), max(high, tests)  # the point's law is one of the mixture's: keep it inside
        return Forecast(
            tests=tests, low=low, high=high, T_star=T_point, factor=float(factor), delta=float(delta),
            epsilon=float(complexity.get("epsilon", 0.0)), source=source, level=float(level),
            plate_size=None if plate_size is None else int(plate_size), draws=tuple(values),
            bound="local" if ratio is None else "exact", past=past,
        )


def cost_table(
    X,
    theta_hat,
    beta: Callable[[float, float], float],
    *,
    epsilons: Sequence[float],
    deltas: Sequence[float],
    source: str,
    factor: float = 1.0,
    plate_size: int | None = None,
    exact: bool = False,
    known: dict | None = None,
    **complexity,
) -> list[dict]:
    """What other (epsilon, delta) would cost: one row per pair, point forecasts (tests, plates, T*),
    so that a chemist can choose before starting. ``beta(t, delta)`` and ``exact`` as in :func:`forecast`
    (one exact solve per epsilon; each row's ``bound`` says which form of T* it used). ``known``: epsilon -> the
    local form's T*(theta_hat) with these settings where already solved (not solved again)."""
    complexity.pop("epsilon", None)  # the table's own epsilons
    known = known or {}
    X = check_features(X)
    with shared_features(X):  # one projection of the features for every epsilon's solve
        return _table(X, theta_hat, beta, epsilons, deltas, source, factor, plate_size, exact, known, complexity)


def _table(X, theta_hat, beta, epsilons, deltas, source, factor, plate_size, exact, known, complexity) -> list[dict]:
    rows = []
    for eps in epsilons:
        T = (float(known[float(eps)]) if float(eps) in known
             else characteristic_time(X, theta_hat, epsilon=float(eps), **complexity).T_star)
        ratio = exact_ratio(X, theta_hat, T, epsilon=float(eps), **complexity) if exact else None
        T = T if ratio is None else T * ratio
        for delta in deltas:
            _check_common(beta, delta, factor, source, 0.5, plate_size)
            tests = stop_quantiles([factor * T], [math.inf], beta, float(delta), [0.5])[0]
            plates = None if plate_size is None else whole_plates(tests, plate_size)
            rows.append({"epsilon": float(eps), "delta": float(delta), "T_star": T, "tests": tests,
                         "plates": plates, "source": source, "bound": "local" if ratio is None else "exact"})
    return rows

"""The forecast of a run's length (screenbai.bandits.certainty.forecast)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from screenbai.bandits.certainty import characteristic_time, cost_table, forecast, stopping_time
from screenbai.bandits.certainty.forecast import stop_quantiles, stopped_by


def constant(t, delta):
    return math.log(1.0 / delta)


def growing(t, delta, d=3):
    # a threshold with a (d/2) log t term, like the self-normalised ones
    return math.log(1.0 / delta) + 0.5 * d * math.log(1.0 + t)


@pytest.mark.parametrize("gap,delta,factor", [(1.0, 0.05, 1.0), (0.2, 0.01, 1.7)])
def test_two_arms_with_a_constant_threshold_is_the_closed_form(gap, delta, factor):
    # the mean evidence meets the threshold at t = factor T* log(1/delta), T* = 8 / Delta^2 (LOWER_BOUND.md)
    T, L = factor * 8.0 / gap**2, math.log(1 / delta)
    assert stopping_time(8.0 / gap**2, constant, delta, factor) == pytest.approx(T * L, rel=1e-3)
    f = forecast(np.eye(2), [gap, 0.0], constant, delta, source="prior", factor=factor, plate_size=96)
    # the forecast is the median of the first passage (module docstring), the band its 10-90 % interval
    law = lambda t: (0.5 * math.erfc(-(math.sqrt(2 * t / T) - math.sqrt(2 * L)) / math.sqrt(2))  # noqa: E731
                     + math.exp(2 * math.sqrt(L * t / T) - L) * 0.5 * math.erfc(math.sqrt(t / T)))
    assert law(f.tests) == pytest.approx(0.5, abs=1e-5) and f.tests < T * L
    assert law(f.low) == pytest.approx(0.1, abs=1e-5)
    assert law(f.high) == pytest.approx(0.9, abs=1e-5)
    assert f.plates == math.ceil(f.tests / 96)
    assert f.source == "prior" and f.as_dict()["source"] == "prior"


def test_stopping_time_solves_the_fixed_point():
    for T in (0.5, 7.0, 300.0):
        t = stopping_time(T, growing, 0.05)
        assert t == pytest.approx(T * growing(t, 0.05), rel=1e-8)
        # the smallest solution: just below it the threshold is not reached
        assert t * (1 - 1e-6) < T * growing(t * (1 - 1e-6), 0.05)
    assert stopping_time(math.inf, growing, 0.05) == math.inf
    assert stopping_time(1.0, lambda t, d: 2 * t * t, 0.05) == math.inf  # the threshold outgrows t
    assert stopping_time(1e-6, constant, 0.05) == 1.0


def test_a_threshold_defined_from_t_1_on_is_never_called_below_it():
    """The bisection of the stop's law looked at t below 1 test (0.5, 0.25, ... when the stop is near), where a
    user's beta such as log(1 + log t) (Garivier & Kaufmann's heuristic, with t >= 1 in mind) has no value: "math
    domain error". The law is 0 before the first test and the quantiles are sought at t >= 1; the built-in
    thresholds (a constant, log1p(t / d), the blocks' 1e300 before block 2) were defined there anyway."""
    calls = []

    def heuristic(t, delta):
        calls.append(t)
        return math.log((1.0 + math.log(t)) / delta)  # no value below t = 1/e

    for T in (1e-3, 0.3, 5.0):  # stops at the first test (the point at 1 test), and later
        f = forecast(np.eye(2), [1.0, 0.0], heuristic, 0.05, source="prior", sigma=math.sqrt(T / 8.0),
                     plate_size=96, n_draws=0)
        assert 1.0 <= f.tests < math.inf and f.plates >= 1
    assert min(calls) >= 1.0
    assert stop_quantiles([1e-3], [math.inf], heuristic, 0.05, [0.1, 0.5, 0.9]) == pytest.approx([1.0] * 3, rel=1e-5)
    assert stopped_by(0.5, 1e-3, heuristic, 0.05) == 0.0


def test_the_band_holds_simulated_stops_of_a_two_arm_glr():
    """Two Gaussian arms (gap 0.5, sigma 1) tested in turn, stopped when the GLR of 'arm 1 is better' reaches a
    threshold growing like (3/2) log t: the forecast's median and band against 2 000 simulated stops. A band
    without the run's own chance (theta known: no draws) would be a point and hold none of them."""
    gap, n_runs, half = 0.5, 2000, 800
    rng = np.random.default_rng(7)
    s1 = np.cumsum(rng.normal(gap, 1.0, (n_runs, half)), axis=1)
    s2 = np.cumsum(rng.normal(0.0, 1.0, (n_runs, half)), axis=1)
    stops = np.full(n_runs, np.inf)
    for t in range(2, 2 * half):
        n1, n2 = (t + 1) // 2, t // 2
        diff = s1[:, n1 - 1] / n1 - s2[:, n2 - 1] / n2
        glr = np.where(diff > 0, diff**2 / (2 * (1 / n1 + 1 / n2)), 0.0)
        stops[(glr >= growing(t, 0.05)) & np.isinf(stops)] = t
    assert np.isfinite(stops).all()
    f = forecast(np.eye(2), [gap, 0.0], growing, 0.05, source="prior")
    assert np.median(stops) == pytest.approx(f.tests, rel=0.05)
    assert np.quantile(stops, 0.9) == pytest.approx(f.high, rel=0.05)
    assert np.quantile(stops, 0.1) == pytest.approx(f.low, rel=0.15)  # the tangent makes the low end a little late
    assert 0.75 <= np.mean((stops >= f.low) & (stops <= f.high)) <= 0.85  # an 80 % band (its low end a little late)


def test_the_law_given_tests_already_made_without_a_stop():
    T = 20.0
    before = stop_quantiles([T], [math.inf], growing, 0.05, [0.1, 0.5, 0.9])
    done = before[1]  # halfway: half of the runs would have stopped by now
    low, mid, high = stop_quantiles([T], [math.inf], growing, 0.05, [0.1, 0.5, 0.9], done)
    assert done < low < mid < high and mid > before[1] and high > before[2]
    F = lambda t: stopped_by(t, T, growing, 0.05)  # noqa: E731
    for q, t in ((0.1, low), (0.5, mid), (0.9, high)):
        assert (F(t) - F(done)) / (1 - F(done)) == pytest.approx(q, abs=1e-5)
    # a second route that fires at `cap` ends the law there; one that did not fire by `done` is dropped
    assert stop_quantiles([T], [0.5 * before[1]], growing, 0.05, [0.9])[0] == pytest.approx(0.5 * before[1])
    assert stop_quantiles([T], [0.5 * done], growing, 0.05, [0.5], done)[0] == pytest.approx(mid)
    f = forecast(np.eye(2), [1.0, 0.0], growing, 0.05, source="outcomes", done=done * 8 / T)  # T* = 8 there
    assert f.tests > done * 8 / T
    with pytest.raises(ValueError, match="done"):
        forecast(np.eye(2), [1.0, 0.0], growing, 0.05, source="outcomes", done=-1)


def test_the_tests_so_far_count_at_their_own_rate():
    """counts: the evidence of the tests made is done / (past T), past = T(counts) / T* at theta_hat; tests spread
    as w* leave the forecast as it was, tests piled on one arm delay it, by as much as the evidence they miss."""
    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, (12, 3))
    theta = rng.standard_normal(3) / 4  # small gaps: T* = 36, the mean evidence meets the threshold at 437 tests
    cx = characteristic_time(X, theta)
    done = 0.4 * stopping_time(cx.T_star, growing, 0.05)
    plain = forecast(X, theta, growing, 0.05, source="outcomes", done=done)
    spread = forecast(X, theta, growing, 0.05, source="outcomes", counts=done * cx.allocation)
    assert spread.past == pytest.approx(1.0, abs=1e-3) and spread.tests == pytest.approx(plain.tests, rel=1e-3)
    counts = np.full(12, 1.0)
    counts[int(np.argmin(X @ theta))] += done - 12  # nearly all on the worst arm
    piled = forecast(X, theta, growing, 0.05, source="outcomes", counts=counts)
    assert piled.past > 2 and piled.tests > plain.tests and piled.low > plain.low and piled.high > plain.high
    from screenbai.bandits.certainty.complexity import allocation_time

    assert piled.past == pytest.approx(allocation_time(X, theta, counts) / cx.T_star, rel=1e-9)
    # the law: the mean evidence at t is done / (past T) + (t - done) / T
    T, t = cx.T_star, 3 * done
    u = (done / piled.past + t - done) / T
    L = growing(t, 0.05)
    expect = 0.5 * math.erfc(-(math.sqrt(2 * u) - math.sqrt(2 * L)) / math.sqrt(2)) + math.exp(
        2 * math.sqrt(L * u) - L) * 0.5 * math.erfc(math.sqrt(u))
    assert stopped_by(t, T, growing, 0.05, done=done, past=piled.past) == pytest.approx(expect, rel=1e-9)
    with pytest.raises(ValueError, match="counts must hold the 12 arms"):
        forecast(X, theta, growing, 0.05, source="outcomes", counts=np.ones(5))
    with pytest.raises(ValueError, match=r"done = 5 tests, but counts add up to 12"):
        forecast(X, theta, growing, 0.05, source="outcomes", done=5, counts=np.ones(12))


def test_monotone_in_delta_and_epsilon():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (30, 4))
    theta = rng.standard_normal(4)
    by_delta = [forecast(X, theta, growing, d, source="outcomes").tests for d in (0.2, 0.05, 0.01, 0.001)]
    assert np.all(np.diff(by_delta) > 0)
    rows = cost_table(X, theta, growing, epsilons=[0.0, 0.1, 0.3, 1.0], deltas=[0.05], source="outcomes",
                      plate_size=24)
    tests = [r["tests"] for r in rows]
    assert np.all(np.diff(tests) < 0)
    assert all(r["plates"] == math.ceil(r["tests"] / 24) for r in rows)
    # the table's cells agree with the forecast
    f = forecast(X, theta, growing, 0.05, source="outcomes", epsilon=0.1)
    assert rows[1]["tests"] == pytest.approx(f.tests, rel=1e-12)


def test_band_from_draws():
    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, (20, 3))
    theta = rng.standard_normal(3)
    known = forecast(X, theta, growing, 0.05, source="outcomes")  # theta known: the run's own chance alone
    narrow = forecast(X, theta, growing, 0.05, source="outcomes", cov=1e-8 * np.eye(3), rng=0)
    wide = forecast(X, theta, growing, 0.05, source="outcomes", cov=0.05 * np.eye(3), rng=0, n_draws=30)
    assert known.low < known.tests < known.high
    assert narrow.low == pytest.approx(known.low, rel=5e-3) and narrow.high == pytest.approx(known.high, rel=5e-3)
    assert len(wide.draws) == 30
    assert wide.low <= wide.high and wide.high / wide.low > narrow.high / narrow.low
    # explicit draws (a bootstrap): the band is the interval of the mixture of their laws and theta_hat's
    thetas = [theta * s for s in (0.8, 0.9, 1.0, 1.1, 1.25)]
    f = forecast(X, theta, growing, 0.05, source="outcomes", thetas=thetas, level=0.9)
    Ts = [characteristic_time(X, th).T_star for th in [theta, *thetas]]
    mixture = lambda t: np.mean([stopped_by(t, T, growing, 0.05) for T in Ts])  # noqa: E731
    assert mixture(f.low) == pytest.approx(0.05, abs=1e-4) and mixture(f.high) == pytest.approx(0.95, abs=1e-4)
    assert f.draws[0] == pytest.approx(stop_quantiles(Ts[1:2], [math.inf], growing, 0.05, [0.5])[0], rel=3e-3)


def test_bad_input():
    with pytest.raises(ValueError, match="source must be one of"):
        forecast(np.eye(2), [1.0, 0.0], constant, 0.05, source="guess")
    with pytest.raises(ValueError, match="beta must be a function"):
        forecast(np.eye(2), [1.0, 0.0], 3.0, 0.05, source="prior")
    with pytest.raises(ValueError, match="delta"):
        forecast(np.eye(2), [1.0, 0.0], constant, 1.5, source="prior")
    with pytest.raises(ValueError, match="plate_size"):
        forecast(np.eye(2), [1.0, 0.0], constant, 0.05, source="prior", plate_size=0)
    with pytest.raises(ValueError, match="cov must be a 2 x 2"):
        forecast(np.eye(2), [1.0, 0.0], constant, 0.05, source="prior", cov=np.eye(3))


def test_the_exact_bound_for_bernoulli_outcomes_where_affordable():
    from screenbai.bandits.certainty.exact_logistic import exact_characteristic_time
    from screenbai.bandits.sim.generators import kw_synthetic

    inst = kw_synthetic(K=50, d=5, seed=2)  # best hit rate 0.964: the local form misjudges the evidence there
    X, th = inst.features, inst.theta
    best = (int(np.argmax(X @ th)),)
    kw = dict(source="prior", model="logistic", epsilon=0.1, answer=best)
    local = forecast(X, th, growing, 0.05, **kw)
    exact = forecast(X, th, growing, 0.05, exact=True, **kw)
    strict = exact_characteristic_time(X, th, epsilon=0.1, answer=best, tol=1e-2).T_star
    assert local.bound == "local" and exact.bound == "exact" and exact.as_dict()["bound"] == "exact"
    assert exact.T_star == pytest.approx(strict, rel=0.05)
    assert abs(local.T_star / strict - 1) > 0.15  # the two forms differ here, so the test tells them apart
    assert exact.tests == pytest.approx(stop_quantiles([exact.T_star], [math.inf], growing, 0.05, [0.5])[0], rel=1e-9)
    # the band: each draw's local T* times the ratio exact / local found at theta_hat
    other = th * 1.1
    band = forecast(X, th, growing, 0.05, exact=True, thetas=[th, other], **kw)
    ratio = exact.T_star / local.T_star
    T_other = characteristic_time(X, other, model="logistic", epsilon=0.1, answer=best).T_star
    assert band.draws[0] == pytest.approx(exact.tests, rel=1e-2)
    assert band.draws[1] == pytest.approx(stop_quantiles([T_other * ratio], [math.inf], growing, 0.05, [0.5])[0],
                                          rel=1e-2)
    rows = cost_table(X, th, growing, epsilons=[0.1, 0.2], deltas=[0.05], source="prior", model="logistic",
                      answer=best, exact=True)
    assert [r["bound"] for r in rows] == ["exact", "exact"]
    assert rows[0]["T_star"] == pytest.approx(exact.T_star, rel=1e-9)
    assert rows[1]["T_star"] < rows[0]["T_star"]  # a larger epsilon is cheaper under the exact bound too


def test_the_exact_bound_is_affordable_up_to_its_number_of_pairs_and_features():
    from screenbai.bandits.certainty.forecast import EXACT_MAX_D, exact_affordable
    from screenbai.bandits.certainty.local_form import EXACT_MAX_PAIRS, exact_pairs_affordable

    K = EXACT_MAX_PAIRS + 1  # one best against EXACT_MAX_PAIRS others: the largest affordable best-arm answer
    assert exact_pairs_affordable(K, 1) and not exact_pairs_affordable(K + 1, 1)
    assert exact_pairs_affordable(K, K - 1) and not exact_pairs_affordable(K + 1, K)  # top-m counts m (K - m)
    assert not exact_pairs_affordable(40, 10)  # 10 x 30 = 300 pairs
    assert exact_affordable(np.zeros((K, EXACT_MAX_D))) and not exact_affordable(np.zeros((K, EXACT_MAX_D + 1)))
    assert not exact_affordable(np.zeros((K + 1, 2)))


def test_the_exact_bound_falls_back_to_the_local_form_where_it_is_not_affordable():
    from screenbai.bandits.certainty.forecast import EXACT_MAX_D
    from screenbai.bandits.certainty.local_form import EXACT_MAX_PAIRS

    rng = np.random.default_rng(4)
    for K, d, model in ((EXACT_MAX_PAIRS + 2, 3, "logistic"), (30, EXACT_MAX_D + 1, "logistic"), (30, 3, "linear")):
        X = rng.uniform(-1, 1, size=(K, d))
        th = rng.normal(size=d)
        kw = dict(source="prior", model=model, epsilon=0.1, answer=(int(np.argmax(X @ th)),))
        f = forecast(X, th, growing, 0.05, exact=True, **kw)
        assert f.bound == "local", (K, d, model)
        assert f.tests == forecast(X, th, growing, 0.05, **kw).tests


# ---------------------------------------------------------------------------- a forecast by simulation
def test_the_library_s_beta_is_learnt_from_the_outcomes_and_the_draws_follow_each_compound():
    """The hierarchical beta-binomial posterior: with many compounds well tested it settles on the library's Beta;
    with 3 tests each it keeps the wide range of concentrations the data allow, and with one test each it learns
    nothing of the concentration (the single most likely pair, used before, gave forecasts 3 times too short there);
    each compound's draws follow its own tests."""
    from screenbai.bandits.certainty.simulated_forecast import hyper_posterior, rate_draws

    rng = np.random.default_rng(3)
    rates = rng.beta(2.0, 5.0, 3000)
    n = np.full(3000, 30)
    a, b, w = hyper_posterior(n, rng.binomial(n, rates))
    assert (w * a).sum() == pytest.approx(2.0, rel=0.15) and (w * b).sum() == pytest.approx(5.0, rel=0.15)
    _, _, flat = hyper_posterior(np.zeros(5), np.zeros(5))  # nothing tested: the grid's own weights, all equal
    assert np.allclose(flat, flat[0])
    few, small = np.full(40, 3), np.random.default_rng(0)
    a, b, w = hyper_posterior(few, small.binomial(few, small.beta(1.0, 3.0, 40)))
    order = np.argsort(a + b)
    low, high = (a + b)[order][np.searchsorted(np.cumsum(w[order]), [0.05, 0.95])]
    assert low <= 4.0 <= high and high / low > 10  # the true concentration (4) inside a wide 90 % interval
    once = np.ones(40)
    a, b, w = hyper_posterior(once, small.binomial(1, small.beta(1.0, 3.0, 40)).astype(float))
    by_mean = w.reshape(100, 60)  # (mean, concentration): one test each says nothing of the concentration
    assert np.allclose(by_mean / by_mean.sum(axis=1, keepdims=True), 1 / 60)
    # a compound with 2 000 tests is drawn near its own rate; one never tested spreads like the library
    n2 = np.r_[np.full(200, 30), 2000, 0]
    s2 = np.r_[rng.binomial(30, rates[:200]), 600, 0]
    draws = rate_draws(n2, s2, 4000, np.random.default_rng(0))
    assert np.abs(draws[:, 200] - 0.3).max() < 0.05
    assert draws[:, 201].mean() == pytest.approx(2 / 7, abs=0.04) and draws[:, 201].std() > 0.12


def test_simulated_stops_follow_the_policy_s_own_runs_and_leave_it_unchanged():
    """KL-LUCB from scratch on known rates: the simulated stops have the law of its own runs (medians within 15 %);
    a copy runs each draw (the policy's state unchanged); the tests in flight count; the cap gives inf."""
    from screenbai.bandits.certainty.simulated_forecast import quantiles, simulated_stops
    from screenbai.bandits.core.registry import make_policy
    from screenbai.bandits.sim.instance import Instance

    rates = np.array([0.8, 0.5, 0.45, 0.2])
    inst = Instance(np.eye(4), rates, reward="bernoulli")
    direct = [make_policy("kl-lucb", inst.features, rng=r, epsilon=0.1, delta=0.1).run(inst.environment(rng=50 + r))
              .n_samples for r in range(40)]
    policy = make_policy("kl-lucb", inst.features, rng=0, epsilon=0.1, delta=0.1)
    stops = simulated_stops(policy, np.tile(rates, (40, 1)), 1, 100_000, np.random.default_rng(1))
    assert np.isfinite(stops).all() and policy.n_samples == 0 and policy.n_in_flight == 0
    assert np.median(stops) == pytest.approx(np.median(direct), rel=0.15)
    assert quantiles(stops, [0.5])[0] in set(stops.tolist())
    flying = make_policy("kl-lucb", inst.features, rng=0, epsilon=0.1, delta=0.1)
    flying.propose(4)
    assert (simulated_stops(flying, np.tile(rates, (3, 1)), 1, 100_000, np.random.default_rng(1)) >= 4).all()
    assert flying.n_in_flight == 4
    assert np.isinf(simulated_stops(policy, np.tile(rates, (2, 1)), 4, 40, np.random.default_rng(1))).all()


def _wells_route(X, bar, cap):
    """A second route as log-tas's own wells: the estimate's leader's wells stop the run after ``cap`` tests where
    its mean under theta is at least the bar, and never where it is below."""
    leader = 0

    def route(theta):
        return cap if float(X[leader] @ theta) >= bar else math.inf

    return route


@pytest.mark.parametrize("sd,fails", [(0.55, True), (0.1, False)])
def test_the_band_weighs_the_leader_failing_its_wells_by_the_posterior_s_mass(sd, fails):
    # the leader's mean 1.5 against a bar of 1: under N(theta_hat, sd^2 I) it lies below the bar with chance
    # Phi(-0.5 / sd): 18 % at sd = 0.55 (above the band's 10 % tail), 3e-7 at sd = 0.1. The band's upper end must
    # reach past the wells' stop exactly when that chance is above its tail, on every seed: with a handful of draws
    # it turns on whether one of them happens to fall below the bar (README's recipe on CDK2, session 25)
    X = np.array([[1.0, 0.0], [0.0, 1.0], [0.9, 0.3]])  # the third arm 0.06 below the leader: a long race
    theta = np.array([1.5, 0.3])
    route = _wells_route(X, 1.0, 200.0)
    cov = sd**2 * np.eye(2)
    highs = []
    for seed in range(6):
        draws = np.random.default_rng(100 + seed).multivariate_normal(theta, cov, size=400)
        f = forecast(X, theta, growing, 0.05, source="outcomes", shortcut=route, route_thetas=draws)
        assert f.low <= f.tests <= f.high  # the band holds its own point
        assert f.tests == pytest.approx(200.0)  # the point: the estimate's leader passes
        highs.append(f.high)
    alone = stop_quantiles([characteristic_time(X, theta).T_star], [math.inf], growing, 0.05, [0.5])[0]
    if fails:  # a failed leader: the run goes on to the likelihood-ratio route, thousands of tests
        assert alone > 5 * 200.0 and min(highs) > 0.5 * alone
    else:
        assert max(highs) == pytest.approx(200.0, rel=1e-6)


def test_the_band_holds_its_point_and_grows_as_delta_falls():
    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, (25, 3))
    theta = rng.standard_normal(3)
    route = _wells_route(X, float(X[0] @ theta) - 0.2, 150.0)
    draws = np.random.default_rng(4).multivariate_normal(theta, 0.04 * np.eye(3), size=200)
    prev = None
    for delta in (0.2, 0.05, 0.01, 0.001):
        f = forecast(X, theta, growing, delta, source="outcomes", shortcut=route, cov=0.04 * np.eye(3), n_draws=4,
                     rng=0, route_thetas=draws)
        assert f.low <= f.tests <= f.high
        if prev is not None:
            assert f.low >= prev.low - 1e-6 and f.high >= prev.high - 1e-6
        prev = f

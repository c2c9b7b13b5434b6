"""The forecast of a run's length (screenbai.bandits.certainty.forecast)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from screenbai.bandits.certainty import characteristic_time, cost_table, forecast, stopping_time


def constant(t, delta):
    return math.log(1.0 / delta)


def growing(t, delta, d=3):
    # a threshold with a (d/2) log t term, like the self-normalised ones
    return math.log(1.0 / delta) + 0.5 * d * math.log(1.0 + t)


@pytest.mark.parametrize("gap,delta,factor", [(1.0, 0.05, 1.0), (0.2, 0.01, 1.7)])
def test_two_arms_with_a_constant_threshold_is_the_closed_form(gap, delta, factor):
    # t = factor T* log(1/delta), T* = 8 / Delta^2 (LOWER_BOUND.md)
    f = forecast(np.eye(2), [gap, 0.0], constant, delta, source="prior", factor=factor, plate_size=96)
    expect = factor * 8.0 / gap**2 * math.log(1 / delta)
    assert f.tests == pytest.approx(expect, rel=1e-3)
    assert f.low == f.high == f.tests  # no draws, no band
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
    narrow = forecast(X, theta, growing, 0.05, source="outcomes", cov=1e-8 * np.eye(3), rng=0)
    wide = forecast(X, theta, growing, 0.05, source="outcomes", cov=0.05 * np.eye(3), rng=0, n_draws=30)
    assert narrow.low == pytest.approx(narrow.tests, rel=5e-3) and narrow.high == pytest.approx(narrow.tests, rel=5e-3)
    assert len(wide.draws) == 30
    assert wide.low <= wide.high and wide.high / wide.low > narrow.high / narrow.low
    # explicit draws (a bootstrap): the band is their quantiles
    thetas = [theta * s for s in (0.8, 0.9, 1.0, 1.1, 1.25)]
    f = forecast(X, theta, growing, 0.05, source="outcomes", thetas=thetas, level=0.99)
    each = [stopping_time(characteristic_time(X, th).T_star, growing, 0.05) for th in thetas]
    assert f.low == pytest.approx(min(each), rel=3e-3) and f.high == pytest.approx(max(each), rel=3e-3)


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
    assert exact.tests == pytest.approx(stopping_time(exact.T_star, growing, 0.05), rel=1e-9)
    # the band: each draw's local T* times the ratio exact / local found at theta_hat
    other = th * 1.1
    band = forecast(X, th, growing, 0.05, exact=True, thetas=[th, other], **kw)
    ratio = exact.T_star / local.T_star
    T_other = characteristic_time(X, other, model="logistic", epsilon=0.1, answer=best).T_star
    assert band.draws[0] == pytest.approx(exact.tests, rel=1e-2)
    assert band.draws[1] == pytest.approx(stopping_time(T_other * ratio, growing, 0.05), rel=1e-2)
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

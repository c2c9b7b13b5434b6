"""Logistic MLE on per-arm counts (spec 1.4, P3, P4) and the c_mu helpers (P9)."""

import warnings

import numpy as np
import pytest
from scipy.special import expit

from screenbai.bandits.numerics.glm import (
    LogisticFit,
    SeparableDataError,
    c_mu_oracle,
    c_mu_plugin,
    c_mu_theory,
    dmu,
    logistic_mle,
)

sklearn_lm = pytest.importorskip("sklearn.linear_model")


def _counts(seed, K=30, d=5, lo=8, hi=40):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (K, d))
    theta = rng.standard_normal(d)
    n = rng.integers(lo, hi, K)
    s = rng.binomial(n, expit(X @ theta))
    return X, n, s


def _expand(X, n, s):
    Xe = np.repeat(X, n, axis=0)
    y = np.concatenate([np.r_[np.ones(si), np.zeros(ni - si)] for si, ni in zip(s, n)])
    return Xe, y


def _sklearn(Xe, y, C):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the penalty=None deprecation in sklearn >= 1.8
        kw = dict(penalty=None) if C is None else dict(C=C)
        lr = sklearn_lm.LogisticRegression(fit_intercept=False, tol=1e-12, max_iter=100000, **kw)
        return lr.fit(Xe, y).coef_[0]


def _unpenalised_grad_norm(X, n, s, theta):
    return np.abs(X.T @ (s - n * expit(X @ theta))).max()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_unpenalised_matches_sklearn(seed):
    X, n, s = _counts(seed)
    fit = logistic_mle(X, n, s, lambda_reg=0.0)
    assert isinstance(fit, LogisticFit) and fit.converged and not fit.separable_warning
    ref = _sklearn(*_expand(X, n, s), C=None)
    assert np.abs(fit.theta - ref).max() < 1e-5
    assert _unpenalised_grad_norm(X, n, s, fit.theta) < 1e-8  # the MLE equation [KW] eq. (4)


@pytest.mark.parametrize("lam", [0.5, 1.0, 5.0])
def test_penalised_matches_sklearn_same_penalty(lam):
    X, n, s = _counts(7)
    fit = logistic_mle(X, n, s, lambda_reg=lam)
    ref = _sklearn(*_expand(X, n, s), C=1.0 / lam)
    assert fit.converged
    assert np.abs(fit.theta - ref).max() < 1e-5


def test_unpulled_arms_are_ignored():
    X, n, s = _counts(3)
    n2, s2 = n.copy(), s.copy()
    n2[:5] = 0
    s2[:5] = 0
    full = logistic_mle(X[5:], n[5:], s[5:], lambda_reg=1.0)
    skip = logistic_mle(X, n2, s2, lambda_reg=1.0)
    assert np.allclose(full.theta, skip.theta, atol=1e-10)


def test_warm_start_needs_fewer_iterations():
    X, n, s = _counts(4)
    cold = logistic_mle(X, n, s, lambda_reg=1.0)
    # one extra observation, as in a sequential algorithm
    n2, s2 = n.copy(), s.copy()
    n2[0] += 1
    s2[0] += 1
    cold2 = logistic_mle(X, n2, s2, lambda_reg=1.0)
    warm2 = logistic_mle(X, n2, s2, lambda_reg=1.0, theta0=cold.theta)
    assert warm2.n_iter < cold2.n_iter
    assert np.allclose(warm2.theta, cold2.theta, atol=1e-7)


def test_separable_data_unpenalised_raises_clear_error():
    rng = np.random.default_rng(5)
    X = rng.uniform(-1, 1, (30, 5))
    theta = rng.standard_normal(5)
    n = np.ones(30)
    s = (X @ theta > 0).astype(float)  # perfectly separated by theta
    with pytest.raises(SeparableDataError, match="separable.*lambda_reg > 0"):
        logistic_mle(X, n, s, lambda_reg=0.0, max_iter=1000)
    fit = logistic_mle(X, n, s, lambda_reg=1.0)  # the remedy works
    assert fit.converged and np.isfinite(fit.theta).all() and np.linalg.norm(fit.theta) < 20


def test_saturated_all_ones_arm_raises():
    # K_+ <= d independent arms, one of them all successes: the MLE does not exist (spec 1.4)
    X = np.eye(3)
    with pytest.raises(SeparableDataError):
        logistic_mle(X, np.array([4, 4, 4]), np.array([2, 4, 1]), lambda_reg=0.0)


def test_rank_deficient_unpenalised_raises():
    X = np.random.default_rng(0).uniform(-1, 1, (3, 5))
    with pytest.raises(SeparableDataError, match="span"):
        logistic_mle(X, np.array([3, 3, 3]), np.array([1, 2, 1]), lambda_reg=0.0)


def test_max_iter_is_respected_and_reported():
    X, n, s = _counts(2)
    fit = logistic_mle(X, n, s, lambda_reg=1.0, max_iter=1)
    assert fit.n_iter == 1 and not fit.converged


def test_bad_counts_rejected():
    X = np.eye(2)
    with pytest.raises(ValueError, match="successes"):
        logistic_mle(X, np.array([1, 1]), np.array([2, 0]))
    with pytest.raises(ValueError, match="lambda_reg"):
        logistic_mle(X, np.array([1, 1]), np.array([1, 0]), lambda_reg=-1)


def test_c_mu_helpers():
    assert dmu(0.0) == pytest.approx(0.25)
    assert dmu(800.0) >= 0.0 and np.isfinite(dmu(-800.0))
    X = np.array([[1.0, 0.0], [0.0, 2.0]])
    theta = np.array([1.0, -1.0])
    assert c_mu_oracle(X, theta) == pytest.approx(dmu(2.0))
    assert c_mu_theory(5.0, 2.0) == pytest.approx(4.5e-5, rel=0.01)  # P9.1: S L = 10
    est = c_mu_plugin(X, theta, np.array([0.5, 0.5]), gamma=1.0)
    assert est == pytest.approx(dmu(2.5))
    assert est < c_mu_oracle(X, theta)

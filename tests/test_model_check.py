"""The model check (screenbai/bandits/certainty/model_check.py): accepts data drawn from the model,
rejects clearly misspecified data, and says so in a warning."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit

from screenbai.bandits.certainty.model_check import check_linear, check_logistic, check_policy
from screenbai.bandits.core.registry import policy_for_instance
from screenbai.bandits.core.runner import run
from screenbai.bandits.sim import generators as instances

K, D, SEEDS = 60, 3, range(20)


def _design(seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (K, D))
    theta = 1.5 * rng.standard_normal(D)
    n = rng.integers(10, 50, K)
    return rng, X, theta, n


def _logistic_rejections(means_of):
    out = 0
    for seed in SEEDS:
        rng, X, theta, n = _design(seed)
        s = rng.binomial(n, means_of(rng, X, theta))
        out += check_logistic(X, n, s).rejected
    return out


def test_logistic_accepts_data_from_the_model():
    assert _logistic_rejections(lambda rng, X, th: expit(X @ th)) <= 3  # level 0.05: about 1 in 20 expected


@pytest.mark.parametrize("means_of", [
    lambda rng, X, th: expit(np.einsum("kd,kd->k", X, 1.5 * rng.standard_normal((K, D)))),  # a theta per arm
    lambda rng, X, th: expit(2.0 - 3.0 * (X @ th) ** 2),  # a non-monotone link
], ids=["theta-per-arm", "non-monotone"])
def test_logistic_rejects_misspecified_data(means_of):
    assert _logistic_rejections(means_of) >= 18


def test_logistic_names_the_deviating_compound_in_its_warning():
    rng, X, theta, n = _design(0)
    n = np.full(K, 40)
    p = expit(X @ theta)
    p[7] = 1.0 - p[7] if abs(p[7] - 0.5) > 0.3 else 0.98 if p[7] < 0.5 else 0.02  # one arm off the model
    s = rng.binomial(n, p)
    check = check_logistic(X, n, s)
    assert check.rejected and check.arms[0][0] == 7
    names = [f"CPD-{a}" for a in range(K)]
    text = check.warning(names)
    assert "CPD-7" in text and "does not fit" in text
    d = check.to_dict(names)
    assert d["rejected"] and d["deviating"][0]["compound"] == "CPD-7" and len(d["bins"]) >= 3
    assert check_logistic(X, n, rng.binomial(n, expit(X @ theta))).warning() is None


def test_logistic_says_it_cannot_check_a_fit_with_as_many_parameters_as_compounds():
    """A spanning design (d compounds for d features, log-tas's first plate) is fitted exactly whatever the
    outcomes: the check says it cannot test the fit yet instead of reporting p = 1 ("agrees"); misspecified
    outcomes on one more compound than parameters are tested again."""
    rng, X, theta, n = _design(0)
    tested = np.zeros(K)
    tested[:D] = 40  # D compounds, D features
    s = np.where(np.arange(K) % 2 == 0, tested, 0)  # every other compound always a hit: no logistic model
    check = check_logistic(X, tested, s)
    assert not check.rejected and not check.tests
    assert "3 compounds tested for 3 model parameters" in check.note and check.to_dict()["note"] == check.note
    assert check.to_dict()["p_value"] is None  # status --json printed "p_value": 1.0 for a check never run
    tested[:12] = 40
    s = np.where(np.arange(K) % 2 == 0, tested, 0)
    assert check_logistic(X, tested, s).tests  # testable again
    warning = check_logistic(X, np.full(K, 40), np.where(np.arange(K) % 2 == 0, 40, 0)).warning()
    assert "(p < 0.001, below the level 0.05;" in warning  # never "p = 0"


def test_linear_says_the_means_fit_is_untestable_with_as_many_parameters_as_compounds():
    """lin-tas's first plate (a spanning set of d compounds, repeated) can end a campaign: the means then fit
    exactly whatever they are, and only the noise is tested; the check says so."""
    rng, X, theta, n = _design(0)
    n = np.zeros(K)
    n[:D] = 30
    mu = np.where(np.arange(K) % 2 == 0, 5.0, -5.0)  # means the model cannot follow, on only D compounds
    y = [mu[a] + 0.5 * rng.standard_normal(int(n[a])) for a in range(K)]
    s, s2 = np.array([v.sum() for v in y]), np.array([(v * v).sum() for v in y])
    check = check_linear(X, n, s, s2, 0.5)
    assert [t.name for t in check.tests] == ["noise: residual variance against sigma^2 = 0.25"]  # no lack-of-fit test
    assert "the means' fit cannot be tested yet: 3 compounds tested for 3 model parameters" in check.note


def test_too_few_compounds_are_counted_against_the_model_s_own_parameters():
    """RAGE's first plate puts every well on one compound: the note read "1 compounds tested for 1 model parameters"
    for a model of D parameters (the rank of the tested features, not the model's size)."""
    rng, X, theta, n = _design(0)
    one = np.zeros(K)
    one[0] = 24
    check = check_logistic(X, one, np.where(np.arange(K) == 0, 12, 0))
    assert f"1 compound tested, which determines 1 of the model's {D} parameters: the model fits" in check.note
    s = np.where(np.arange(K) == 0, 12.0, 0.0)
    check = check_linear(X, one, s, s * s / 24 + 1.0, 0.5)
    assert f"cannot be tested yet: 1 compound tested, which determines 1 of the model's {D} parameters" in check.note


def _linear_rejections(sigma_true, means_of, sigma=0.5):
    out = 0
    for seed in SEEDS:
        rng, X, theta, n = _design(seed)
        mu = means_of(rng, X, theta)
        y = [mu[a] + sigma_true * rng.standard_normal(n[a]) for a in range(K)]
        s, s2 = np.array([v.sum() for v in y]), np.array([(v * v).sum() for v in y])
        out += check_linear(X, n, s, s2, sigma).rejected
    return out


def test_linear_accepts_data_from_the_model():
    assert _linear_rejections(0.5, lambda rng, X, th: X @ th) <= 3


def test_linear_rejects_misspecified_means_and_excess_noise():
    assert _linear_rejections(0.5, lambda rng, X, th: X @ th + 0.5 * rng.standard_normal(K)) >= 18
    assert _linear_rejections(0.8, lambda rng, X, th: X @ th) >= 18  # noise above the assumed sigma


def test_check_policy_on_a_run():
    inst = instances.kw_synthetic(K=30, d=2, seed=0)
    policy = policy_for_instance("glgape", inst, rng=0, max_samples=2000)
    run(policy, inst.environment(np.random.default_rng(0)))
    check = check_policy(policy)
    assert check is not None and check.n_tests == policy.n_samples and not check.rejected
    lucb = policy_for_instance("lucb", inst, rng=0, max_samples=100)
    assert check_policy(lucb) is None
    lin = policy_for_instance("lingape", instances.soare(), rng=0)
    with pytest.raises(ValueError, match="sums of squared"):
        check_policy(lin)


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="hits must lie"):
        check_logistic(np.eye(2), [1, 1], [2, 0])
    with pytest.raises(ValueError, match="sigma"):
        check_linear(np.eye(2), [1, 1], [0, 0], [0, 0], 0.0)


def test_the_p_values_are_scipy_stats_ones_without_importing_it():
    """model_check takes scipy.special's functions (scipy.stats costs a command 0.55 s to import): the
    same p-values as scipy.stats' chi2, norm and binom, and `campaign status` never imports scipy.stats."""
    import subprocess
    import sys
    from pathlib import Path

    from scipy import special, stats

    rng = np.random.default_rng(0)
    n = rng.integers(1, 300, 500)
    p = rng.uniform(1e-6, 1 - 1e-6, 500)
    s = rng.binomial(n, p).astype(float)
    np.testing.assert_allclose(special.bdtr(s, n, p), stats.binom.cdf(s, n, p), rtol=1e-11, atol=1e-300)
    np.testing.assert_allclose(special.bdtrc(s - 1, n, p), stats.binom.sf(s - 1, n, p), rtol=1e-11, atol=1e-300)
    x, k = rng.uniform(0, 60, 100), rng.integers(1, 40, 100)
    assert (special.chdtrc(k, x) == stats.chi2.sf(x, k)).all() and (special.ndtr(-x / 9) == stats.norm.sf(x / 9)).all()
    code = "import sys, screenbai.bandits.certainty.model_check; print('scipy.stats' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(Path(__file__).resolve().parents[1]), "PATH": ""}).stdout
    assert out.strip() == "False"

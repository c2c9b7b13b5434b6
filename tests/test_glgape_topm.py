"""Top-m GLGapE: GLGapE's choices at m = 1, correct top-m answers, its stopping rule, bad m."""

import numpy as np
import pytest
from scipy.special import expit

from screenbai.bandits import available, make_policy, policy_for_instance
from screenbai.bandits.logistic.glgape_topm import TopMGLGapE
from screenbai.bandits.sim.generators import kw_synthetic


def _trace(name, instance, seed, **params):
    """The arms asked, in order, and the result of one run."""
    policy = policy_for_instance(name, instance, rng=np.random.default_rng(seed), **params)
    env = instance.environment(np.random.default_rng(1000 + seed))
    asked = []
    while not policy.done:
        arms = policy.ask()
        asked.extend(int(a) for a in arms)
        policy.tell(arms, env.pull(arms))
    return asked, policy.result(), policy


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("rule", ["ratio", "greedy"])
def test_m1_makes_exactly_glgapes_choices(seed, rule):
    inst = kw_synthetic(K=30, d=4, seed=seed)
    a, ra, _ = _trace("glgape", inst, seed, epsilon=0.1, c_mu="oracle", selection=rule, calibration="reinterpreted")
    b, rb, _ = _trace("m-glgape", inst, seed, epsilon=0.1, c_mu="oracle", selection=rule, m=1,
                      calibration="reinterpreted")
    assert len(a) > 3 * 5  # it went past the initial phase
    assert a == b
    assert list(ra.recommendation) == list(rb.recommendation)


@pytest.mark.parametrize("m", [2, 4])
def test_names_m_epsilon_good_arms_and_stops_only_when_every_gap_index_is_below_epsilon(m):
    eps = 0.1
    errors = 0
    for seed in range(12):
        inst = kw_synthetic(K=25, d=3, seed=seed)
        _, res, policy = _trace("m-glgape", inst, seed, epsilon=eps, c_mu="oracle", m=m, calibration="reinterpreted")
        J = np.asarray(res.recommendation)
        assert res.stopped and J.size == m == np.unique(J).size
        errors += not inst.is_correct(J, epsilon=eps, m=m)
        # J is the top m of the final estimate
        mu_hat = expit(policy.Z @ policy.theta)
        assert set(J) == set(np.argsort(-mu_hat)[:m])
        # the stopping rule held at the stop: every B(i, j), j in J, i outside, is <= epsilon,
        # recomputed here by brute force from GLGapE's width formula (4 corners per pair)
        P, Z = policy.state.P, policy.Z
        t, d = res.n_samples + 1, policy.d_eff  # the round that stopped
        a_eff = policy.diagnostics["a_eff"]
        scale = a_eff * np.sqrt(2 * d * np.log(t) * np.log(np.pi**2 * d * t**2 / (6 * policy.delta)))
        lo, hi = policy.c_mu, policy.k_mu
        for j in J:
            for i in set(range(inst.K)) - set(J):
                w = max(np.sqrt((c1 * Z[i] - c2 * Z[j]) @ P @ (c1 * Z[i] - c2 * Z[j]))
                        for c1 in (lo, hi) for c2 in (lo, hi))
                assert mu_hat[i] - mu_hat[j] + scale * w <= eps + 1e-9
    assert errors <= 1  # delta = 0.05 over 12 instances; a random m-subset would be wrong far more often


def test_more_arms_to_name_need_more_tests():
    inst = kw_synthetic(K=40, d=4, seed=5)
    tau = {
        m: np.median([_trace("m-glgape", inst, s, c_mu="oracle", m=m, calibration="reinterpreted")[1].n_samples
                      for s in range(6)])
        for m in (1, 5)
    }
    assert tau[5] > tau[1]


def test_registered_and_validates_m():
    assert available()["m-glgape"].cls is TopMGLGapE
    X = np.random.default_rng(0).uniform(-1, 1, (10, 3))
    assert make_policy("m-glgape", X, m=3).m == 3
    with pytest.raises(ValueError, match="integer"):
        make_policy("m-glgape", X, m=1.7)
    with pytest.raises(ValueError, match="1 <= m < K = 10"):
        make_policy("m-glgape", X, m=10)
    with pytest.raises(ValueError, match="epsilon"):
        make_policy("m-glgape", X, m=2, epsilon=-1)


@pytest.mark.slow
@pytest.mark.parametrize("m", [2, 3])
def test_default_names_m_arms_that_every_theta_of_the_likelihood_ratio_set_agrees_with(m):
    """The default stops when the likelihood-ratio set rules out every (named, other) pair: checked at
    the stop by sampling the set (thousands of theta with L(theta) <= level) and looking for one
    under which an arm outside the answer beats a named arm by more than epsilon."""
    from screenbai.bandits.numerics.lr_set import LikelihoodRatioSet, nll

    eps, errors, sampled = 0.1, 0, 0
    for seed in range(6):
        inst = kw_synthetic(K=20, d=3, seed=seed)
        _, res, policy = _trace("m-glgape", inst, seed, epsilon=eps, m=m)
        J = np.asarray(res.recommendation)
        assert res.stopped and J.size == m == np.unique(J).size
        errors += not inst.is_correct(J, epsilon=eps, m=m)
        pulled = np.flatnonzero(policy.n)
        Zp, n, s = policy.Z[pulled], policy.n[pulled], policy.sums[pulled]
        level = policy._predictor.loss + np.log(1 / policy.delta)
        cs = LikelihoodRatioSet(Zp, n, s, level, policy.theta)
        H = (Zp.T * (n * expit(Zp @ cs.theta) * expit(-Zp @ cs.theta))) @ Zp
        draws = np.random.default_rng(seed).multivariate_normal(cs.theta, 2 * cs.rho**2 / 3 * np.linalg.inv(H), 4000)
        inside = draws[[nll(Zp, n, s, th) <= level for th in draws]]
        sampled += len(inside)
        mu = expit(inside @ policy.Z.T)
        others = np.setdiff1d(np.arange(inst.K), J)
        assert (mu[:, others].max(axis=1) - mu[:, J].min(axis=1)).max(initial=-1) <= eps
    assert sampled > 1000
    assert errors <= 1

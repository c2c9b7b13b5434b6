"""Tests of the GIFA family (spec 2.2, 2.3) and the threshold catalogue (spec 1.5)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from screenbai.bandits import Instance, make_policy, policy_for_instance, replicate, run
from screenbai.bandits.linear.gap_indices import lucb_statistic, max_m_per_column, ugape_statistic
from screenbai.bandits.linear.gifa import GIFA, LinGapE, LinGIFA, MLinGapE
from screenbai.bandits.numerics import thresholds as th
from screenbai.bandits.numerics.estimators import TrackedRidgeState
from screenbai.bandits.sim.generators import reda_classic, soare


# ---------------------------------------------------------------------- thresholds (spec 1.5)
def test_abbasi_yadkori_matches_formula_and_bound():
    X = np.random.default_rng(0).standard_normal((6, 3))
    st = TrackedRidgeState(X, 2.0)
    for a in range(6):
        for _ in range(5):
            st.update(a, 0.0)
    V = st.design_matrix()
    R, S, lam, delta = 0.7, 1.5, 2.0, 0.01
    direct = R * math.sqrt(2 * math.log(math.sqrt(np.linalg.det(V)) / lam ** 1.5 / delta)) + math.sqrt(lam) * S
    got = th.abbasi_yadkori(st.logdet, 3, lam, R, S, delta)
    assert got == pytest.approx(direct, rel=1e-10)
    # eq. 4 upper bound with t = 30 observations, L = max norm
    L = np.linalg.norm(X, axis=1).max()
    assert got <= R * math.sqrt(3 * math.log((1 + 30 * L**2 / lam) / delta)) + math.sqrt(lam) * S + 1e-9
    assert th.effective_delta(0.05, 10) == pytest.approx(0.0005)
    assert th.effective_delta(0.05, 10, "ellipsoid") == 0.05
    with pytest.raises(ValueError, match="delta_eff"):
        th.effective_delta(0.05, 10, "both")


def test_reda_thresholds_values():
    # self-consistent (2): sqrt(2 ln(1/delta) + d ln(1 + (t+1) L^2 / (lambda0 d))) + sqrt(lambda0) S / sigma
    got = th.reda_theoretical(9, 0.05, 3, 1.0, 1.0, 0.5, 0.025)
    want = math.sqrt(2 * math.log(20) + 3 * math.log(1 + 10 / (0.025 * 3))) + math.sqrt(0.025) / 0.5
    assert got == pytest.approx(want)
    literal = th.reda_theoretical(9, 0.05, 3, 1.0, 1.0, 0.5, 0.025, paper_literal=True)
    expected = math.sqrt(2 * math.log(20) + 3 * math.log(1 + 10 / (0.025**2 * 3))) + math.sqrt(0.025) / 0.5
    assert literal == pytest.approx(expected)
    assert th.reda_heuristic(1, 0.05) == pytest.approx(math.sqrt(2 * math.log(20)))
    assert th.reda_heuristic(0, 0.05) == th.reda_heuristic(1, 0.05)
    assert th.reda_heuristic(100, 0.05) == pytest.approx(math.sqrt(2 * math.log((math.log(100) + 1) / 0.05)))
    assert th.lucb1_rate(10, 0.05, 4) == pytest.approx(math.log(5 * 4 * 10**4 / (4 * 0.05)))
    # sigma = 1/2: width sqrt(beta / (2 N)) (spec 1.5(e))
    assert th.lucb1_factor(10, 0.05, 4, 0.5) / math.sqrt(7) == pytest.approx(math.sqrt(th.lucb1_rate(10, 0.05, 4) / 14))
    assert th.hoeffding_width(10, 0.05, 50, 3) == pytest.approx(math.sqrt(math.log(4 * 50 * 1000 / 0.05) / 6))


# ---------------------------------------------------------------------- correctness on easy instances
EASY_CASES = [
    ("lingape", {"S": "oracle", "sigma": "oracle"}, "soare1"),
    ("lingape", {"S": "oracle", "sigma": "oracle", "selection": "ratio"}, "soare1"),
    ("lingape", {"S": "oracle", "sigma": "oracle", "delta_eff": "ellipsoid"}, "soare1"),
    ("m-lingape", {"m": 2, "S": "oracle"}, "reda2"),
    ("m-lingape", {"m": 2, "S": "oracle", "selection": "optimized"}, "reda2"),
    ("m-lingape", {"m": 2, "S": "oracle", "selection": "largest-variance"}, "reda2"),
    ("m-lingape", {"m": 2, "S": "oracle", "threshold": "heuristic", "index": "individual"}, "reda2"),
    ("m-lingape", {"m": 1, "S": "oracle", "threshold": "heuristic"}, "soare1"),
    ("lingifa", {"m": 2, "S": "oracle"}, "reda2"),
    ("lingifa", {"m": 2, "S": "oracle", "selection": "largest-variance"}, "reda2"),
    ("lingifa", {"m": 2, "S": "oracle", "stopping": "lucb"}, "reda2"),
    ("lingifa", {"m": 2, "S": "oracle", "index": "individual", "threshold": "heuristic"}, "reda2"),
    ("lingifa", {"m": 1, "S": "oracle", "threshold": "heuristic"}, "soare1"),
    ("lucb", {"m": 2}, "reda2"),
    ("lucb", {"m": 2, "selection": "both"}, "reda2"),
    ("ugape", {"m": 2}, "reda2"),
    ("ugape", {"m": 1, "threshold": "hoeffding"}, "bern"),
]


def _instance(key: str) -> Instance:
    if key == "soare1":
        return soare(2, omega=0.5, sigma=0.5)
    if key == "reda2":
        return reda_classic(4, 2, omega=np.pi / 3)
    X = np.eye(5)
    return Instance(X, np.array([0.9, 0.3, 0.2, 0.1, 0.3]), reward="bernoulli", name="bern")


@pytest.mark.parametrize("algorithm,params,key", EASY_CASES)
def test_finds_top_m_on_easy_instances(algorithm, params, key):
    inst = _instance(key)
    m = params.get("m", 1)
    for seed in range(3):
        pol = policy_for_instance(algorithm, inst, rng=seed, **params)
        res = run(pol, inst.environment(100 + seed))
        assert res.stopped
        assert list(res.recommendation) == inst.best_arms(m).tolist()
        assert res.n_samples == res.pulls.sum() >= (inst.K if pol.init == "all" else 1)


@pytest.mark.slow
@pytest.mark.parametrize(
    "algorithm,params",
    [
        ("lingape", {"S": "oracle", "sigma": "oracle"}),
        ("m-lingape", {"m": 2, "S": "oracle"}),
        ("m-lingape", {"m": 2, "S": "oracle", "threshold": "heuristic"}),
        ("lingifa", {"m": 2, "S": "oracle"}),
        ("lingifa", {"m": 2, "S": "oracle", "threshold": "heuristic"}),
        ("lucb", {"m": 2, "threshold": "heuristic"}),
        ("ugape", {"m": 2, "threshold": "heuristic"}),
    ],
)
def test_empirical_error_below_delta(algorithm, params):
    # gap mu_m - mu_{m+1} = 0.5 with sigma = 0.5: a rule that stops right after a few pulls errs often
    inst = reda_classic(4, 2, omega=np.pi / 3) if params.get("m") == 2 else soare(2, omega=0.5, sigma=0.5)
    delta = 0.1
    df = replicate(inst, algorithm, {**params, "delta": delta}, n_reps=200, seed=7, n_jobs=2)
    assert df["stopped"].all()
    assert 1.0 - df["correct"].mean() < delta


def test_early_stop_rule_would_fail_the_error_test():
    """Sanity check of the test above: with a tiny width the error rate exceeds delta."""
    inst = reda_classic(4, 2, omega=np.pi / 3)
    errors = 0
    for seed in range(60):
        pol = policy_for_instance("m-lingape", inst, m=2, S=0.0, threshold="heuristic", delta=0.999999, rng=seed)
        pol.confidence.sigma = 1e-9  # widths ~ 0: stops right after the initial pulls
        errors += not inst.is_correct(run(pol, inst.environment(seed)).recommendation, m=2)
    assert errors / 60 > 0.1


# ---------------------------------------------------------------------- stopping rules and compute_Jt / b_t / c_t
def test_ugape_statistic_never_exceeds_lucb_statistic():
    """Lemma 1: on the same indices tau^UGapE fires no later than tau^LUCB."""
    rng = np.random.default_rng(3)
    for _ in range(300):
        K = int(rng.integers(3, 9))
        m = int(rng.integers(1, K))
        B = rng.standard_normal((K, K))
        np.fill_diagonal(B, -np.inf)
        J = rng.choice(K, size=m, replace=False)
        assert ugape_statistic(B, J, m) <= lucb_statistic(B, J) + 1e-15


def test_lemma1_along_a_lingifa_run():
    inst = reda_classic(4, 2, omega=np.pi / 6)
    pol = policy_for_instance("lingifa", inst, m=2, S="oracle", stopping="lucb", rng=0)
    env = inst.environment(0)
    first_ugape = first_lucb = None
    while True:
        finished = pol.done
        B = pol.index_matrix(pol.means(), pol.threshold_factor(pol.n_samples))
        J = pol._J
        u, lu = ugape_statistic(B, J, 2), lucb_statistic(B, J)
        assert u <= lu + 1e-12
        if first_ugape is None and u <= 0:
            first_ugape = pol.n_samples
        if first_lucb is None and lu <= 0:
            first_lucb = pol.n_samples
        if finished:
            break
        arms = pol.ask()
        pol.tell(arms, env.pull(arms))
    assert first_lucb == pol.n_samples  # the run used tau^LUCB
    assert first_ugape is not None and first_ugape <= first_lucb


def test_compute_jt_bt_ct_on_a_hand_made_matrix():
    # B[i, j] = UCB on mu_i - mu_j, K = 4, m = 2
    B = np.array(
        [
            [-np.inf, 0.5, 0.9, 1.2],
            [0.3, -np.inf, 0.8, 1.1],
            [0.1, 0.2, -np.inf, 0.7],
            [-0.4, -0.1, 0.6, -np.inf],
        ]
    )
    # 2nd largest per column: col0: {0.3, 0.1, -0.4} -> 0.1; col1: {0.5, 0.2, -0.1} -> 0.2;
    # col2: {0.9, 0.8, 0.6} -> 0.8; col3: {1.2, 1.1, 0.7} -> 1.1
    assert max_m_per_column(B, 2).tolist() == [0.1, 0.2, 0.8, 1.1]
    mu = np.array([1.0, 0.9, 0.2, 0.0])
    pol = GIFA(np.eye(4), m=2, index="paired", compute_jt="ugape", compute_bt="gifa", stopping="ugape", init=False,
               rng=0)
    pol.gaps.index_matrix = lambda mu_, f, n: B.copy()
    pol.means = lambda: mu
    J, b, c, stat = pol.gifa_round()
    assert sorted(J.tolist()) == [0, 1]  # argmin^[2] of [0.1, 0.2, 0.8, 1.1]
    assert b == 1  # argmax_{j in J} max^2 = 0.2 at j = 1
    assert c == 2  # argmax_{a not in J} B[a, 1]: B[2,1] = 0.2 > B[3,1] = -0.1
    assert stat == pytest.approx(0.2)  # tau^UGapE
    pol.compute_bt, pol.stopping = "lucb", "lucb"
    J, b, c, stat = pol.gifa_round()
    # LUCB-type b_t: max_{i not in J} B[i, j]: j = 0 -> 0.1, j = 1 -> 0.2
    assert (b, c) == (1, 2) and stat == pytest.approx(0.2)
    pol.compute_jt = "empirical"
    J, b, c, stat = pol.gifa_round()
    assert sorted(J.tolist()) == [0, 1]


def test_fast_columns_equal_full_matrix():
    """The m-column path (m-LinGapE) and the K x K path (LinGIFA) compute the same indices."""
    rng = np.random.default_rng(5)
    X = rng.standard_normal((12, 4))
    for index in ("paired", "individual"):
        full = GIFA(X, m=3, index=index, compute_jt="ugape", compute_bt="gifa", stopping="ugape", rng=0)
        fast = GIFA(X, m=3, index=index, rng=0)
        arms = np.arange(12)
        for p in (full, fast):
            p.ask()
            p.tell(arms, X @ np.ones(4) + rng.standard_normal(12) * 0)
        for _ in range(30):
            a = int(rng.integers(12))
            r = float(rng.standard_normal())
            for p in (full, fast):
                p.state.update(a, r)
        mu = fast.means()
        assert np.allclose(mu, full.means())
        J = np.array([0, 5, 7])
        BJ = fast.gaps.columns_of_J(mu, J, 1.3, fast.n)
        B = full.index_matrix(mu, 1.3)
        want = B[:, J].T.copy()
        want[:, J] = -np.inf
        assert np.allclose(BJ, want)


def test_greedy_round_m1_matches_generic_rule():
    """LinGapE's one-row path picks the same b_t, c_t and arm as a direct computation."""
    rng = np.random.default_rng(2)
    X = rng.standard_normal((15, 4))
    pol = LinGapE(X, sigma=0.5, S=1.0, rng=0)
    env = Instance(X, X @ np.array([1.0, 0.5, 0.0, -0.3]), sigma=0.5).environment(1)
    for _ in range(40):
        arms = pol.ask()
        pol.tell(arms, env.pull(arms))
    st = pol.state
    P = np.linalg.inv(st.design_matrix())
    mu = X @ P @ st.b
    i = int(np.argmax(mu))
    f = pol.threshold_factor(pol.n_samples)
    D = X - X[i]
    ucb = mu - mu[i] + f * np.sqrt(np.einsum("ij,jk,ik->i", D, P, D))
    ucb[i] = -np.inf
    c = int(np.argmax(ucb))
    y = X[i] - X[c]
    scores = [y @ np.linalg.inv(st.design_matrix() + np.outer(x, x)) @ y for x in X]
    J, b, c_got, stat = pol.gifa_round()
    assert (b, c_got) == (i, c) and stat == pytest.approx(ucb[c])
    assert pol.select_arm(b, c_got) == int(np.argmin(scores))


# ---------------------------------------------------------------------- epsilon, budget, validation
def test_positive_epsilon_stops_earlier():
    inst = reda_classic(4, 2, omega=np.pi / 6)
    for algorithm in ("m-lingape", "lingifa", "ugape"):
        extra = {"S": "oracle"} if algorithm != "ugape" else {}
        exact = run(policy_for_instance(algorithm, inst, m=2, rng=1, **extra), inst.environment(1))
        loose = run(policy_for_instance(algorithm, inst, m=2, epsilon=0.2, rng=1, **extra), inst.environment(1))
        assert loose.n_samples < exact.n_samples
        assert inst.is_correct(loose.recommendation, epsilon=0.2, m=2)


def test_max_samples_cap_and_fixed_budget_use():
    inst = soare(2, omega=0.1, sigma=1.0)
    res = run(policy_for_instance("lingape", inst, S="oracle", max_samples=50, rng=0), inst.environment(0))
    assert not res.stopped and res.n_samples == 50
    pol = LinGapE(inst.features, max_samples=200, rng=0)
    res = run(pol, inst.environment(3))
    assert not res.stopped and res.n_samples == 200
    assert res.recommendation == (int(np.argmax(pol.means())),)  # the current empirical best
    # a budget smaller than K: the initial batch is cut to the budget
    res = run(LinGapE(inst.features, max_samples=2, rng=0), inst.environment(0))
    assert res.n_samples == 2 and not res.stopped
    # LUCB sampling both arms never overshoots the cap
    pol = make_policy("lucb", np.eye(4), m=2, selection="both", max_samples=9, rng=0)
    res = run(pol, reda_classic(4, 2).environment(0))
    assert res.n_samples == 9


def test_lucb_both_asks_two_arms():
    pol = make_policy("lucb", np.eye(4), m=1, selection="both", rng=0)
    pol.tell(pol.ask(), [1.0, 0.0, 0.2, 0.1])
    arms = pol.ask()
    assert arms.size == 2 and arms[0] != arms[1]


def test_projection_when_features_do_not_span():
    X = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.5, 0.2, 0.0]])
    pol = MLinGapE(X, m=1, S=1.0, sigma=0.5, rng=0)
    assert pol.d_eff == 2 and pol.Z.shape == (4, 2)
    inst = Instance(X, X @ np.array([1.0, 0.3, 5.0]), sigma=0.5)
    res = run(MLinGapE(X, m=1, S=1.1, sigma=0.5, rng=0), inst.environment(0))
    assert res.recommendation == (2,)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"delta": 1.0}, "delta"),
        ({"delta": 0.0}, "delta"),
        ({"epsilon": -0.1}, "epsilon"),
        ({"sigma": 0.0}, "sigma"),
        ({"S": -1.0}, "S"),
        ({"lambda_reg": 0.0}, "lambda_reg"),
        ({"selection": "random"}, "selection"),
        ({"threshold": "lucb1"}, "threshold"),
        ({"m": 4}, "m"),
    ],
)
def test_parameter_errors_name_the_value(kwargs, match):
    with pytest.raises(ValueError, match=match):
        MLinGapE(np.eye(4), **{"m": 1, **kwargs})


def test_classical_errors():
    with pytest.raises(ValueError, match="selection"):
        make_policy("lucb", np.eye(3), selection="greedy")
    with pytest.raises(ValueError, match="threshold"):
        make_policy("ugape", np.eye(3), threshold="theoretical")
    pol = make_policy("ugape", np.eye(3), threshold="hoeffding")
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        pol.tell(pol.ask(), [0.5, 2.0, 0.1])


def test_lingifa_lambda0_default_and_oracle():
    inst = reda_classic(4, 2)
    pol = policy_for_instance("lingifa", inst, m=2, S="oracle", sigma="oracle")
    assert pol.lambda_reg == pytest.approx(0.5 / 20) and pol.S == pytest.approx(1.0) and pol.sigma == 0.5
    assert pol.init == "none" and MLinGapE(inst.features, m=2).lambda_reg == 1.0
    with pytest.raises(ValueError, match="theta"):
        LinGIFA.resolve_oracle("S", Instance(np.eye(3), [0.1, 0.2, 0.3]))


def test_refresh_keeps_means_and_gram_exact():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((8, 3))
    st = TrackedRidgeState(X, 0.3, refresh_every=10**9, gram=True)
    for _ in range(500):
        st.update(int(rng.integers(8)), float(rng.standard_normal()))
    P = np.linalg.inv(st.design_matrix())
    assert np.allclose(st.mu, X @ P @ st.b, atol=1e-8)
    assert np.allclose(st.G, X @ P @ X.T, atol=1e-10)
    st.refresh()
    assert np.allclose(st.mu, X @ P @ st.b, atol=1e-12)


def test_oracle_string_outside_simulation_is_explained():
    with pytest.raises(ValueError, match="policy_for_instance"):
        make_policy("m-lingape", np.eye(3), S="oracle")


def test_ratio_rule_counts_lp_solves():
    inst = reda_classic(4, 2, omega=np.pi / 3)
    pol = policy_for_instance("m-lingape", inst, m=2, S="oracle", selection="optimized", rng=0)
    res = run(pol, inst.environment(0))
    assert 1 <= res.diagnostics["lp_solved"] <= 12  # cached by (b_t, c_t): at most K (K - 1) LPs


@pytest.mark.parametrize("name,params", [
    ("ugape", {}),
    ("lucb", {}),
    ("lingifa", {"index": "individual"}),
    ("lingifa", {"index": "individual", "stopping": "lucb"}),
])
@pytest.mark.parametrize("m", [1, 3])
def test_separable_round_equals_the_full_index_matrix(name, params, m):
    """Individual/classical indices skip the K x K matrix; the answer must be the matrix's."""
    rng = np.random.default_rng(m)
    X = rng.standard_normal((12, 4))
    policy = make_policy(name, X, m=m, rng=0, **params)
    for _ in range(40):  # continuous rewards: no ties
        arms = policy.ask()
        policy.tell(arms, rng.normal(size=arms.size))
    mu = policy.means()
    f = policy.threshold_factor(policy.n_samples)
    J, b, c, stat = policy.gaps.separable_round(mu, f, policy.n, policy.rng)
    B = policy.index_matrix(mu, f)
    colm = max_m_per_column(B, m)
    J_full = np.sort(np.argsort(colm)[:m]) if policy.compute_jt == "ugape" else np.sort(np.argsort(-mu)[:m])
    assert np.array_equal(np.sort(J), J_full)
    outside = np.setdiff1d(np.arange(12), J)
    lucb_stat = B[np.ix_(outside, J)].max()
    expected = colm[J].max() if policy.stopping == "ugape" else lucb_stat
    assert stat == pytest.approx(expected, rel=1e-12, abs=1e-12)
    assert c == outside[np.argmax(B[outside, b])]


def test_old_parameter_names_warn_and_act_like_the_new_ones():
    X = soare(2, omega=0.5, sigma=0.5)
    with (pytest.warns(DeprecationWarning, match="'R' is now called 'sigma'"),
          pytest.warns(DeprecationWarning, match="'lambda0' is now called 'lambda_reg'"),
          pytest.warns(DeprecationWarning, match="'rule' is now called 'selection'")):
        old = LinGapE(X.features, R=0.5, lambda0=2.0, rule="ratio", rng=0)
    new = LinGapE(X.features, sigma=0.5, lambda_reg=2.0, selection="ratio", rng=0)
    assert (old.sigma, old.lambda_reg, old.selection) == (new.sigma, new.lambda_reg, new.selection)
    assert (new.sigma, new.lambda_reg, new.selection) == (0.5, 2.0, "optimized")
    with pytest.raises(TypeError, match="both 'R' and its new name 'sigma'"):
        LinGapE(X.features, R=0.5, sigma=0.5)


@pytest.mark.parametrize("params,match", [
    ({"m": 1.7}, r"m=1\.7 .*an integer >= 1"),
    ({"delta": "abc"}, r"delta='abc' .*a number in \(0, 1\)"),
    ({"selection": "best"}, r"selection='best' .*one of 'greedy'"),
])
def test_declared_constraints_name_parameter_value_and_range(params, match):
    with pytest.raises(ValueError, match=match):
        MLinGapE(np.eye(4), **params)

"""The anytime certificate (screenbai/bandits/certainty/certificate.py): validity, coverage, shrinkage,
agreement with the stopping rules, and which settings carry a guarantee."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.special import expit

from screenbai.bandits.certainty.certificate import (
    VACUOUS_HIT_RATE_GAP,
    Certificate,
    certainty_summary,
    certified_from_bounds,
    certify,
    norm_bound_refuted,
)
from screenbai.bandits.core.registry import policy_for_instance
from screenbai.bandits.core.runner import run, run_one, true_gap
from screenbai.bandits.linear.confidence import RidgeRule
from screenbai.bandits.numerics.lr_set import LikelihoodRatioSet, nll
from screenbai.bandits.sim import generators as instances
from screenbai.bandits.sim.instance import Instance


def fan(sigma: float = 1.0) -> Instance:
    """8 arms on an arc, theta = e_1: close means, so early answers are often wrong."""
    ang = np.linspace(0.0, 0.6, 8)
    X = np.c_[np.cos(ang), np.sin(ang)]
    theta = np.array([1.0, 0.0])
    return Instance(X, X @ theta, "gaussian", sigma, theta, name="fan")


def logistic_arc() -> Instance:
    """8 arms on an arc with close cure rates (0.83 to 0.88)."""
    ang = np.linspace(0.0, 0.6, 8)
    X = np.c_[np.cos(ang), np.sin(ang)]
    theta = np.array([2.0, 0.0])
    return Instance(X, expit(X @ theta), "bernoulli", 0.5, theta, link="logistic", name="logistic_arc")


def logistic10() -> Instance:
    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, (10, 2))
    theta = np.array([1.5, -1.0])
    return Instance(X, expit(X @ theta), "bernoulli", 0.5, theta, link="logistic", name="logistic10")


def drive(policy, inst, n: int, seed: int = 0):
    """Ask/tell until n outcomes are recorded (or the policy is done)."""
    env = inst.environment(np.random.default_rng(seed))
    while not policy.done and policy.n_samples < n:
        arms = policy.ask()
        policy.tell(arms, env.pull(arms))
    return policy


# ---------------------------------------------------------------------- eq. (1)
def test_certified_from_bounds_is_the_mth_largest_clipped_at_zero():
    U = np.array([[-np.inf, 0.3, -0.2, 0.1], [0.5, -np.inf, 0.4, -1.0]])
    assert certified_from_bounds(U, 1).tolist() == [0.3, 0.5]
    assert certified_from_bounds(U, 2).tolist() == [0.1, 0.4]
    assert certified_from_bounds(-np.abs(U), 1).tolist() == [0.0, 0.0]


# ---------------------------------------------------------------------- shrinks, bounded below
@pytest.mark.slow
@pytest.mark.parametrize("name, inst, params", [
    ("lingape", fan(0.5), {}),
    ("m-lingape", fan(0.5), {"m": 2}),
    ("lucb", fan(0.5), {}),
    ("xy-static", fan(0.5), {}),
    ("glgape", logistic_arc(), {"epsilon": 0.02}),
])
def test_certificate_is_nonnegative_and_shrinks_with_data(name, inst, params):
    policy = policy_for_instance(name, inst, rng=1, max_samples=10**5, **params)
    seen = []
    for n in (100, 400, 1600, 6400):
        drive(policy, inst, n)
        cert = policy.certificate()
        assert cert is not None and len(cert.epsilon) == cert.m == policy.m
        assert all(e >= 0.0 for e in cert.epsilon)
        seen.append(cert.worst)
        if policy.done:
            break
    assert len(seen) >= 2
    assert seen[-1] < 0.5 * seen[0], seen


def test_certificate_changes_nothing():
    inst = fan(0.5)
    a = drive(policy_for_instance("m-lingape", inst, rng=4, m=2), inst, 60, seed=2)
    b = drive(policy_for_instance("m-lingape", inst, rng=4, m=2), inst, 60, seed=2)
    first = a.certificate()
    assert a.certificate() is first  # cached until the next outcome
    env_a, env_b = inst.environment(np.random.default_rng(9)), inst.environment(np.random.default_rng(9))
    for _ in range(30):
        arms = a.ask()
        assert np.array_equal(arms, b.ask())
        a.tell(arms, env_a.pull(arms))
        b.tell(arms, env_b.pull(arms))
        a.certificate()


# ---------------------------------------------------------------------- at the stop
@pytest.mark.parametrize("name, inst, params", [
    ("lingape", instances.soare(d=2, omega=0.3, sigma=0.5), {"delta": 0.1, "S": "oracle"}),
    ("m-lingape", fan(0.3), {"m": 2, "epsilon": 0.05}),
    ("lingifa", fan(0.3), {"epsilon": 0.05}),  # UGapE-type stopping
    ("lucb", fan(0.3), {"epsilon": 0.1}),
    ("ugape", fan(0.3), {"epsilon": 0.1, "m": 2}),
    ("xy-static", instances.soare(d=2, omega=0.5, sigma=0.3), {}),
    ("g-allocation", instances.soare(d=2, omega=0.5, sigma=0.3), {}),
    ("xy-adaptive", instances.soare(d=2, omega=0.5, sigma=0.3), {}),
    ("xy-fully-adaptive", instances.soare(d=2, omega=0.5, sigma=0.3), {}),
    ("glgape", logistic10(), {"epsilon": 0.1}),
    ("m-glgape", logistic10(), {"epsilon": 0.1, "m": 2}),
    ("glgape", logistic10(), {"epsilon": 0.1, "calibration": "self-normalized", "c_mu": 0.1, "S": 2.0}),
])
def test_at_the_stop_the_certificate_is_within_the_runs_epsilon(name, inst, params):
    policy = policy_for_instance(name, inst, rng=0, max_samples=200_000, **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = run(policy, inst.environment(np.random.default_rng(1)))
    assert res.stopped
    cert = policy.certificate()
    assert cert.guaranteed, cert.caveats
    eps = float(getattr(policy, "epsilon", 0.0))
    assert cert.worst <= eps + 1e-12, (cert.epsilon, eps)
    assert res.diagnostics["certified_epsilon"] == list(cert.epsilon)
    assert cert.arms == res.recommendation


# ---------------------------------------------------------------------- coverage
def _coverage(inst, name, params, n_runs, budgets, shrink=None):
    """Runs stopped at random budgets: (runs where the true gap exceeds the certificate, wrong answers)."""
    rng = np.random.default_rng(0)
    seqs = np.random.SeedSequence(11).spawn(n_runs)
    misses = wrong = 0
    orig = RidgeRule.factor
    if shrink is not None:  # a deliberately invalid set: every width multiplied by ``shrink``
        RidgeRule.factor = lambda self, s: shrink * orig(self, s)  # type: ignore[method-assign]
    try:
        for ss in seqs:
            rec = run_one(inst, name, {**params, "max_samples": int(rng.integers(*budgets))}, ss)
            assert rec["certified_epsilon"] >= 0.0
            misses += rec["true_gap"] > rec["certified_epsilon"] + 1e-12
            wrong += rec["true_gap"] > 0
    finally:
        RidgeRule.factor = orig  # type: ignore[method-assign]
    return misses, wrong


@pytest.mark.parametrize("name, params", [
    pytest.param("lingape", {"delta": 0.1}, marks=pytest.mark.slow),  # about 7 s each
    pytest.param("m-lingape", {"delta": 0.1, "m": 2}, marks=pytest.mark.slow),
    ("lucb", {"delta": 0.1}),
])
def test_coverage_over_runs_stopped_early(name, params):
    """200 runs cut at random budgets (8 to 120 tests): the true gap of the answer is within the
    certificate in at least 1 - delta of them, although many answers are wrong; the same runs with
    every width shrunk tenfold (an invalid set) miss in far more than delta of them."""
    n, delta = 200, params["delta"]
    misses, wrong = _coverage(fan(), name, params, n, (8, 120))
    assert wrong >= 0.25 * n  # early answers are often wrong: the check has teeth
    assert misses <= delta * n
    shrunk, _ = _coverage(fan(), name, params, n, (8, 120), shrink=0.1)
    assert shrunk > 2 * delta * n


@pytest.mark.slow
def test_coverage_glgape_likelihood_ratio():
    misses, wrong = _coverage(logistic_arc(), "glgape", {"delta": 0.1, "epsilon": 0.02}, 100, (10, 300))
    assert wrong >= 25
    assert misses <= 10


def test_likelihood_ratio_pair_bounds_hold_for_every_theta_in_the_set():
    """gap_bounds against thetas of C_t found by sampling: mu_j - mu_i never exceeds U[j]."""
    inst = logistic10()
    rng = np.random.default_rng(5)
    n = rng.integers(3, 30, inst.K).astype(float)
    s = rng.binomial(n.astype(int), inst.means).astype(float)
    Z = inst.features
    theta0 = np.zeros(2)
    from screenbai.bandits.numerics.glm import logistic_mle

    mle = logistic_mle(Z, n, s, 0.0, theta0=theta0).theta
    level = nll(Z, n, s, mle) + np.log(1 / 0.05)
    cs = LikelihoodRatioSet(Z, n, s, level, mle)
    draws = mle + rng.standard_normal((40000, 2)) * 1.5
    inside = np.array([nll(Z, n, s, t) <= level for t in draws])
    draws = draws[inside]
    assert len(draws) > 500
    mu = expit(draws @ Z.T)  # (draws, K)
    for i in range(inst.K):
        U = cs.gap_bounds(Z, i)
        worst = (mu - mu[:, [i]]).max(axis=0)
        worst[i] = -np.inf
        assert (worst <= U + 1e-9).all(), (i, worst - U)
        # and it is not vacuous: within 0.05 of the sampled supremum for the arms the test refined
        j = int(np.argmax(U))
        assert U[j] - worst[j] < 0.05


# ---------------------------------------------------------------------- guarantee, None, sentences
def test_fixed_budget_policies_certify_nothing():
    inst = fan()
    for name in ("gse-lin", "uniform", "linucb"):
        policy = policy_for_instance(name, inst, rng=0, budget=64)
        run(policy, inst.environment(np.random.default_rng(0)))
        assert policy.certificate() is None and certify(policy) is None
        assert "certified_epsilon" not in policy.result().diagnostics
    rec = run_one(inst, "gse-lin", {"budget": 64}, np.random.SeedSequence(0).spawn(1)[0])
    assert np.isnan(rec["certified_epsilon"]) and not rec["certified_guaranteed"]


@pytest.mark.parametrize("name, inst, params, guaranteed", [
    ("m-lingape", fan(), {"threshold": "heuristic"}, False),
    ("m-lingape", fan(), {}, True),
    ("glgape", logistic10(), {"calibration": "reinterpreted"}, False),
    ("glgape", logistic10(), {"calibration": "self-normalized"}, False),  # c_mu and S estimated
    ("glgape", logistic10(), {}, True),
    ("lucb", fan(), {"threshold": "heuristic"}, False),
])
def test_unguaranteed_settings_are_marked(name, inst, params, guaranteed):
    policy = drive(policy_for_instance(name, inst, rng=0, **params), inst, 200)
    cert = policy.certificate()
    assert cert is not None and cert.guaranteed is guaranteed
    text = " ".join(cert.sentence())
    assert ("NO GUARANTEE" in text) is (not guaranteed)


def test_sentence_and_json():
    cert = Certificate(arms=(3,), epsilon=(0.1712,), delta=0.05, guaranteed=True,
                       model="the logistic model on these features", quantity="cure rate")
    names = {3: "CPD-123"}
    assert cert.sentence(names) == [  # 0.1712 rounded up: "within 0.17" would claim more than is certified
        "CPD-123: within 0.18 of the best cure rate, 95 % confidence, under the logistic model on these features"
    ]
    top = Certificate(arms=(1, 2), epsilon=(0.0, np.inf), delta=0.1, guaranteed=True, model="M", m=2)
    lines = top.sentence()
    assert lines[0].startswith("arm 1: among the 2 best mean outcome") and "90 % confidence" in lines[0]
    assert "not certified yet" in lines[1]
    d = top.to_dict(["a", "b", "c"])
    assert d["epsilon"] == {"b": 0.0, "c": None} and d["worst"] is None and d["confidence"] == 0.9


def test_a_hit_rate_gap_that_prints_as_1_is_not_certified():
    """A certified epsilon is printed rounded up (0.9901 reads "1"): a gap in hit rate of 1 says nothing, so from there
    on the sentence says "not certified yet" (it read "within 1 of the best hit rate" between 0.99 and 0.999)."""
    from screenbai.bandits.certainty.certificate import VACUOUS_HIT_RATE_GAP, certifies, epsilon_text

    assert epsilon_text(VACUOUS_HIT_RATE_GAP) == "0.99" and epsilon_text(np.nextafter(VACUOUS_HIT_RATE_GAP, 1)) == "1"
    assert certifies(0.985, binary=True) and not certifies(0.995, binary=True) and certifies(0.995, binary=False)
    for eps, said in ((0.985, "within 0.99 of"), (0.995, "not certified yet")):
        cert = Certificate(arms=(0,), epsilon=(eps,), delta=0.05, guaranteed=True, model="M", quantity="hit rate",
                           vacuous_at=VACUOUS_HIT_RATE_GAP)
        assert said in cert.sentence()[0] and "within 1 of" not in cert.sentence()[0]


def test_logistic_certificate_never_exceeds_one():
    """Before the outcomes identify the model nothing is certified: the statement is empty (1)."""
    inst = logistic10()
    env = inst.environment(np.random.default_rng(0))
    for params in ({}, {"calibration": "self-normalized"}):
        policy = policy_for_instance("glgape", inst, rng=0, **params)
        arms = policy.propose(1)
        policy.tell(arms, env.pull(arms))
        assert policy.certificate().epsilon == (1.0,)
        assert "not certified yet" in policy.certificate().sentence()[0]


def test_run_records_carry_the_certificate():
    inst = fan(0.5)
    rec = run_one(inst, "lingape", {"max_samples": 50}, np.random.SeedSequence(3).spawn(1)[0])
    assert rec["certified_guaranteed"] is True
    assert 0.0 <= rec["certified_epsilon"] < np.inf
    assert rec["true_gap"] == true_gap(inst.means, rec["recommendation"])
    assert true_gap(np.array([0.1, 0.5, 0.4, 0.45]), [2, 1]) == pytest.approx(0.05)


def test_certainty_summary_for_the_campaign():
    inst = logistic10()
    policy = drive(policy_for_instance("glgape", inst, rng=0), inst, 300)
    names = [f"CPD-{a}" for a in range(inst.K)]
    out = certainty_summary(policy, names)
    cert = policy.certificate()
    assert out["certificate"]["epsilon"] == {names[cert.arms[0]]: cert.epsilon[0]}
    assert out["certified_epsilon"] == (cert.worst if cert.worst < VACUOUS_HIT_RATE_GAP else None)  # status's key
    assert "hit rate" in certainty_summary(policy, names, quantity="hit rate")["certificate"]["sentences"][0]
    assert out["model_check"]["n_tests"] == policy.n_samples
    lucb = drive(policy_for_instance("lucb", inst, rng=0), inst, 40)
    assert certainty_summary(lucb)["model_check"] is None


def test_certainty_summary_linear_needs_the_sums_of_squares():
    inst = fan(0.5)
    policy = drive(policy_for_instance("lingape", inst, rng=0), inst, 200)
    assert certainty_summary(policy)["model_check"] is None
    rng = np.random.default_rng(0)
    n = policy.n
    y = [inst.means[a] + 0.5 * rng.standard_normal(n[a]) for a in range(inst.K)]
    obs = (n, np.array([v.sum() for v in y]), np.array([(v * v).sum() for v in y]))
    check = certainty_summary(policy, observations=obs)["model_check"]
    assert check["n_tests"] == n.sum() and not check["rejected"]


def test_certainty_summary_on_a_campaign(tmp_path):
    """What `campaign status` will show: the certificate of the leader and the model check, by compound id."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from campaign_util import Assay, new_campaign, write_results

    camp = new_campaign(tmp_path / "c.campaign")
    try:
        assay = Assay(camp.features)
        for k in range(4):
            plate = camp.next_plate(24)
            camp.record(write_results(tmp_path / f"r{k}.csv", plate, assay(plate.arms)))
        obs = camp.observations()
        out = certainty_summary(camp.policy, camp.compound_ids, obs)
        (cid, eps), = out["certificate"]["epsilon"].items()
        assert cid in camp.compound_ids and 0.0 <= eps <= 1.0
        assert out["certificate"]["sentences"][0].startswith(f"{cid}: ")
        assert out["certified_epsilon"] == camp.status().certified_epsilon  # the same key, the same value
        assert out["model_check"]["n_tests"] == obs[0].sum() > 40
    finally:
        camp.close()


def test_summarize_counts_certificate_misses():
    from screenbai.bandits.core.runner import replicate, summarize

    inst = fan(0.5)
    df = replicate(inst, "lingape", {"max_samples": 30, "delta": 0.1}, n_reps=6, seed=2)
    row = summarize(df).iloc[0]
    assert row["median_certified_epsilon"] == pytest.approx(df["certified_epsilon"].median())
    assert row["certificate_misses"] == int((df["true_gap"] > df["certified_epsilon"]).sum()) == 0
    df.loc[0, "certified_epsilon"] = -1.0  # a certificate below the true gap counts as a miss
    assert summarize(df).iloc[0]["certificate_misses"] == 1


@pytest.mark.parametrize("name, params", [("glgape", {}), ("m-glgape", {"m": 2})])
def test_likelihood_ratio_certificate_is_tight_at_the_stop_without_the_tests_verdict(name, params):
    """At the stop the stopping test proved every pair within epsilon; the certificate's own pair
    bounds (range ends and refined rivals) get there too, without taking the test's verdict."""
    inst = logistic10()
    policy = policy_for_instance(name, inst, rng=0, epsilon=0.1, **params)
    run(policy, inst.environment(np.random.default_rng(0)))
    assert policy.likelihood.certified[0] == policy.n_samples
    with_verdict = policy.certificate().worst
    policy.likelihood.certified = ()
    policy.__dict__.pop("_certificate_cache")
    alone = policy.certificate().worst
    assert with_verdict <= 0.1 and with_verdict <= alone <= 0.1 + 1e-3


def test_a_norm_bound_the_outcomes_refute_voids_the_guarantee():
    """LinGapE's default S = 1 on Soare's instance (||theta*|| = 2): the data refute it."""
    inst = instances.soare(d=2, omega=0.1, sigma=0.5)
    for S, refuted in ((1.0, True), (2.5, False)):
        policy = drive(policy_for_instance("lingape", inst, rng=0, S=S, max_samples=3000), inst, 3000)
        cert = policy.certificate()
        assert cert.guaranteed is not refuted
        assert any("refute ||theta|| <= S" in c for c in cert.caveats) is refuted
    for S, refuted in ((0.5, True), (2.0, False)):  # [SLM14] Prop. 2's set assumes S too
        inst = instances.soare(d=2, omega=0.3, sigma=0.3)
        policy = policy_for_instance("xy-fully-adaptive", inst, rng=0, S=S)
        run(policy, inst.environment(np.random.default_rng(1)))
        assert policy.certificate().guaranteed is not refuted
    assert norm_bound_refuted(np.array([3.0, 0.0]), np.eye(2) * 0.25, 2.0, 1.5) == pytest.approx(2.0)
    assert norm_bound_refuted(np.array([3.0, 0.0]), np.eye(2) * 0.25, 2.0, 2.0) is None


def test_the_certificate_holds_at_every_read_of_a_run_at_once():
    """Anytime: 50 LinGapE runs, each read after 8, 12, 19, ... 120 outcomes; the runs with a read
    whose answer's true gap exceeds its certificate are at most delta of them (none: measured 0), and
    a set shrunk tenfold fails at some read in most runs (measured 35 of 50)."""
    inst, delta, n_runs = fan(), 0.1, 50
    reads = np.unique(np.geomspace(8, 120, 7).astype(int))

    def runs_with_a_miss(shrink):
        orig = RidgeRule.factor
        if shrink is not None:
            RidgeRule.factor = lambda self, s: shrink * orig(self, s)  # type: ignore[method-assign]
        try:
            bad = 0
            for seed in range(n_runs):
                policy = policy_for_instance("lingape", inst, rng=seed, delta=delta)
                env = inst.environment(np.random.default_rng(1000 + seed))
                missed = False
                for n in reads:
                    while not policy.done and policy.n_samples < n:
                        arms = policy.propose(1)
                        policy.tell(arms, env.pull(arms))
                    cert = policy.certificate()
                    missed |= true_gap(inst.means, cert.arms) > cert.worst + 1e-12
                bad += missed
            return bad
        finally:
            RidgeRule.factor = orig  # type: ignore[method-assign]

    assert runs_with_a_miss(None) <= delta * n_runs
    assert runs_with_a_miss(0.1) > 3 * delta * n_runs

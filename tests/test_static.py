"""[SLM14] static and phased allocations (spec 2.1): greedy rules vs brute force, stopping rules,
fast path vs ask/tell, correctness on easy instances, input validation."""

import logging

import numpy as np
import pytest

from screenbai.bandits import make_policy, policy_for_instance
from screenbai.bandits.core.runner import run as simulate
from screenbai.bandits.linear.static_greedy import GreedyState, all_pairs, allocation_sequence
from screenbai.bandits.linear.static_rules import OLSTracker, eq11_batch, log_term
from screenbai.bandits.numerics.linalg import spanning_arms
from screenbai.bandits.sim import generators as instances
from screenbai.bandits.sim.instance import Instance

ALL = ["g-allocation", "xy-static", "xy-oracle", "xy-adaptive", "xy-fully-adaptive"]


def _random_arms(K=5, d=3, seed=0):
    return np.random.default_rng(seed).standard_normal((K, d))


def _brute_scores(X, counts, dirs):
    """max_y ||y||^2_{(A + x_k x_k^T)^{-1}} for every k, by explicit inverses (test only)."""
    A = X.T @ (counts[:, None] * X)
    out = []
    for k in range(X.shape[0]):
        Pk = np.linalg.inv(A + np.outer(X[k], X[k]))
        out.append(max(y @ Pk @ y for y in dirs))
    return np.array(out)


def _directions(X, I, J):
    return [X[i] - (X[j] if j >= 0 else 0.0) for i, j in zip(I, J)]


@pytest.mark.parametrize("kind", ["G", "XY"])
def test_greedy_choice_equals_brute_force(kind):
    X = _random_arms(K=5, d=3, seed=1)
    if kind == "G":
        I, J = np.arange(5), np.full(5, -1)
    else:
        I, J = all_pairs(np.ones(5, dtype=bool))
    seq = allocation_sequence(X, spanning_arms(X), I, None if kind == "G" else J, seed=7)
    seq.extend(60)
    dirs = _directions(X, I, J)
    n0 = spanning_arms(X).size
    for t in range(n0, 60):
        counts = np.bincount(seq.arms[:t], minlength=5).astype(float)
        brute = _brute_scores(X, counts, dirs)
        chosen = seq.arms[t]
        assert brute[chosen] <= brute.min() * (1 + 1e-9), (t, chosen, brute)


def test_xy_score_equals_brute_force():
    X = _random_arms(K=6, d=4, seed=2)
    counts = np.array([3, 1, 4, 1, 5, 9])
    I, J = all_pairs(np.ones(6, dtype=bool))
    state = GreedyState(X, counts)
    state.set_directions(I, J)
    for k in (0, 3, 5, 2):  # rank-one updates keep the scores exact
        state.pull(k)
        counts[k] += 1
    np.testing.assert_allclose(state.scores(), _brute_scores(X, counts.astype(float), _directions(X, I, J)), rtol=1e-10)
    P = np.linalg.inv(X.T @ (counts[:, None] * X))
    assert state.rho == pytest.approx(max(y @ P @ y for y in _directions(X, I, J)), rel=1e-10)


def test_oracle_score_is_scaled_by_gaps():
    X = _random_arms(K=4, d=3, seed=3)
    gaps = np.array([0.5, 2.0, 1.0])
    state = GreedyState(X, np.array([2, 2, 2, 2]))
    state.set_directions(np.zeros(3, dtype=int), np.array([1, 2, 3]), 1.0 / gaps)
    P = np.linalg.inv(2 * X.T @ X)
    expected = max((X[0] - X[j]) @ P @ (X[0] - X[j]) / g**2 for j, g in zip([1, 2, 3], gaps))
    assert state.rho == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("name", ["g-allocation", "xy-static"])
def test_canonical_basis_allocation_is_balanced(name):
    p = make_policy(name, np.eye(5), allocation_seed=11)
    seq = p.sequence
    seq.extend(500)
    spread = [np.ptp(np.bincount(seq.arms[:t], minlength=5)) for t in range(5, 501)]
    assert max(spread) <= 1
    # ties are broken at random, not by index: the order inside each sweep varies
    sweeps = {tuple(seq.arms[5 * i : 5 * i + 5]) for i in range(1, 40)}
    assert len(sweeps) > 5


def test_eq11_batch_matches_direct_formula():
    X = _random_arms(K=5, d=3, seed=4)
    rng = np.random.default_rng(0)
    counts = rng.integers(5, 2000, size=(50, 5)).astype(float)
    theta = np.array([1.0, -0.5, 0.3])
    sums = counts * (X @ theta) + rng.standard_normal((50, 5)) * np.sqrt(counts)
    n = counts.sum(axis=1)
    ok, best = eq11_batch(X, counts, sums, n, 2 * np.sqrt(2), 5, 0.05)
    for b in range(50):
        A = X.T @ (counts[b][:, None] * X)
        P = np.linalg.inv(A)
        mu = X @ P @ X.T @ sums[b]
        i = int(np.argmax(mu))
        conds = [
            2 * np.sqrt(2) * np.sqrt((X[i] - X[j]) @ P @ (X[i] - X[j]) * log_term(n[b], 5, 0.05)) <= mu[i] - mu[j]
            for j in range(5)
            if j != i
        ]
        assert best[b] == i and ok[b] == all(conds)
    assert 0 < ok.sum() < 50  # the case mix exercises both answers


def test_eq11_one_state_agrees_with_the_batch_and_the_tracker():
    """The round-by-round rule (OLS kept by rank one) and the batch rule decide eq. 11 alike, and
    confidence="arms" is log(6 n^2 K / (pi^2 delta)) exactly."""
    X = _random_arms(K=6, d=3, seed=6)
    theta = np.array([0.8, -0.3, 0.5])
    rng = np.random.default_rng(1)
    tracker = OLSTracker(X)
    arms = np.concatenate([spanning_arms(X), rng.integers(6, size=3000)])
    counts, sums, seen = np.zeros(6), np.zeros(6), []
    for t, a in enumerate(arms, 1):
        r = X[a] @ theta + rng.standard_normal()
        tracker.add(int(a), float(r))
        counts[a] += 1
        sums[a] += r
        if t >= 3 and t % 50 == 0:
            assert tracker.refresh() or tracker.P is not None
            for conf in ("pairs", "arms"):
                ok, best, _ = tracker.eq11(t, 2 * np.sqrt(2), 6, 0.05, conf)
                ok_b, best_b = eq11_batch(X, counts[None], sums[None], np.array([t]), 2 * np.sqrt(2), 6, 0.05, conf)
                assert (ok, best) == (bool(ok_b[0]), int(best_b[0]))
                seen.append(ok)
    assert 0 < sum(seen) < len(seen)
    assert log_term(10, 7, 0.1, "arms") == pytest.approx(np.log(6 * 100 * 7 / (np.pi**2 * 0.1)), rel=1e-15)
    with pytest.raises(ValueError, match="confidence"):
        log_term(10, 7, 0.1, "both")


EASY = instances.soare(d=2, omega=0.5)  # gaps 0.245 and 2: stops after ~1e3 pulls


@pytest.mark.parametrize("name", ALL)
def test_returns_best_arm_on_easy_instance(name):
    for seed in (0, 1):
        p = policy_for_instance(name, EASY, rng=seed)
        r = simulate(p, EASY.environment(np.random.default_rng(100 + seed)))
        assert r.stopped and r.best == 0
        assert r.n_samples == r.pulls.sum() > 3


@pytest.mark.slow
@pytest.mark.parametrize("name", ["g-allocation", "xy-static", "xy-oracle", "xy-adaptive"])
def test_empirical_error_below_delta(name):
    # a harder easy instance so that the rule is actually tested (gap 0.04 between the two best)
    inst = instances.soare(d=2, omega=0.2)
    errors, runs = 0, 150
    for s in range(runs):
        p = policy_for_instance(name, inst, rng=s)
        r = simulate(p, inst.environment(np.random.default_rng(10_000 + s)))
        assert r.stopped
        errors += r.best != 0
    assert errors / runs <= 0.05


def test_fully_adaptive_error_below_delta():
    errors = 0
    for s in range(100):
        p = policy_for_instance("xy-fully-adaptive", EASY, rng=s)
        r = simulate(p, EASY.environment(np.random.default_rng(20_000 + s)))
        errors += r.best != 0
    assert errors / 100 <= 0.05


def test_oracle_eq4_stopping_time_is_deterministic_given_the_allocation():
    inst = instances.soare(d=3, omega=0.3)
    times = set()
    for s in range(4):
        p = policy_for_instance("xy-oracle", inst, rng=s)
        times.add(simulate(p, inst.environment(np.random.default_rng(s))).n_samples)
    assert len(times) == 1
    # and it is the first n where eq. 4 holds for the oracle sequence
    p = policy_for_instance("xy-oracle", inst)
    seq, n = p.sequence, times.pop()
    theta, X = inst.theta, inst.features
    mu = X @ theta

    def eq4(t):
        counts = np.bincount(seq.arms[:t], minlength=inst.K)
        P = np.linalg.inv(X.T @ (counts[:, None] * X))
        return all(
            8 * (X[0] - X[j]) @ P @ (X[0] - X[j]) * log_term(t, inst.K, 0.05) <= (mu[0] - mu[j]) ** 2
            for j in range(1, inst.K)
        )

    assert eq4(n) and not eq4(n - 1)


def test_oracle_eq11_option_uses_rewards():
    inst = instances.soare(d=2, omega=0.5)
    times = {
        simulate(policy_for_instance("xy-oracle", inst, stopping="eq11", rng=s),
                 inst.environment(np.random.default_rng(s))).n_samples
        for s in range(5)
    }
    assert len(times) > 1


def _ask_tell(policy, env):
    while not policy.done:
        arms = policy.ask()
        policy.tell(arms, env.pull(arms))
    return policy.result()


@pytest.mark.slow
@pytest.mark.parametrize("name,params", [
    ("g-allocation", {}),
    ("xy-static", {}),
    ("xy-oracle", {"stopping": "eq11"}),
    ("xy-oracle", {}),
    ("xy-adaptive", {}),
    ("xy-adaptive", {"monotone": True}),
])
def test_fast_path_equals_round_by_round(name, params):
    inst = instances.soare(d=3, omega=0.4 if name == "xy-adaptive" else 0.25)
    for seed in range(2 if name == "xy-adaptive" else 3):
        fast = simulate(policy_for_instance(name, inst, rng=seed, **params),
                        inst.environment(np.random.default_rng(seed)))
        slow = _ask_tell(policy_for_instance(name, inst, rng=seed, **params),
                         inst.environment(np.random.default_rng(seed)))
        one_noise_buffer = 4096 if name in ("g-allocation", "xy-static") else 1000
        assert fast.n_samples == slow.n_samples > one_noise_buffer
        np.testing.assert_array_equal(fast.pulls, slow.pulls)
        assert fast.recommendation == slow.recommendation and fast.stopped == slow.stopped


def test_fast_path_respects_max_samples():
    inst = instances.soare(d=2, omega=0.05)
    for name in ("xy-static", "xy-adaptive", "xy-oracle"):
        fast = simulate(policy_for_instance(name, inst, max_samples=5000), inst.environment(np.random.default_rng(1)))
        slow = _ask_tell(policy_for_instance(name, inst, max_samples=5000), inst.environment(np.random.default_rng(1)))
        assert fast.n_samples == slow.n_samples == 5000 and not fast.stopped and not slow.stopped
        np.testing.assert_array_equal(fast.pulls, slow.pulls)


@pytest.mark.slow
@pytest.mark.parametrize("monotone", [False, True])
def test_xy_adaptive_literal_readmits_and_monotone_shrinks(monotone):
    """The literal rule rebuilds the survivors from all arms after each phase: on this instance arms
    1 and 2, discarded after phase 1, come back after phase 2; with monotone=True they stay out."""
    inst = instances.soare(d=3, omega=0.3)
    p = policy_for_instance("xy-adaptive", inst, monotone=monotone, rng=0)
    env = inst.environment(np.random.default_rng(0))
    phases = [np.flatnonzero(p.active).tolist()]  # the survivors of each phase
    while not p.done:
        if np.flatnonzero(p.active).tolist() != phases[-1]:
            phases.append(np.flatnonzero(p.active).tolist())
        arms = p.ask()
        p.tell(arms, env.pull(arms))
    readmitted = any(set(later) - set(now) for i, now in enumerate(phases) for later in phases[i + 1:])
    assert readmitted != monotone
    assert all(set(b) <= set(a) for a, b in zip(phases, phases[1:])) == monotone
    assert phases[:2] == [[0, 1, 2, 3], [0, 3]]
    assert p.result().best == 0 and p.diagnostics["phases"] >= 2


@pytest.mark.slow
def test_rank_deficient_features_are_projected():
    X = np.array([[1.0, 0, 0, 0], [0, 1.0, 0, 0], [0.8, 0.5, 0, 0]])  # rank 2 in R^4
    theta = np.array([1.0, 0.2, 0, 0])
    inst = Instance(X, X @ theta, "gaussian", 1.0, theta)
    for name in ALL:
        r = simulate(policy_for_instance(name, inst, rng=0), inst.environment(np.random.default_rng(0)))
        assert r.stopped and r.best == 0


def test_restrict_y_is_automatic_above_200_arms(caplog):
    X = _random_arms(K=201, d=3, seed=5)
    with caplog.at_level(logging.WARNING):
        p = make_policy("xy-static", X)
    assert p.restrict_y and "restricting Y" in caplog.text
    assert not make_policy("xy-static", X, restrict_y=False).restrict_y


def test_restricted_y_still_finds_best_arm():
    r = simulate(policy_for_instance("xy-static", EASY, restrict_y=True, rng=0),
                 EASY.environment(np.random.default_rng(0)))
    assert r.stopped and r.best == 0 and r.diagnostics["restricted_y"]


@pytest.mark.parametrize("name,params,match", [
    ("xy-static", {"delta": 1.5}, "delta"),
    ("xy-static", {"confidence": "both"}, "confidence"),
    ("g-allocation", {"sigma": 0.0}, "sigma"),
    ("xy-adaptive", {"alpha": 1.0}, "alpha"),
    ("xy-oracle", {}, "theta"),  # registry default "oracle" without an instance
    ("xy-oracle", {"theta": [1.0, 0.0]}, "length"),
    ("xy-oracle", {"theta": [2.0, 0.0, 0.0], "stopping": "eq5"}, "stopping"),
    ("xy-oracle", {"theta": [0.0, 0.0, 0.0]}, "same mean"),
    ("xy-fully-adaptive", {}, "S"),
    ("xy-fully-adaptive", {"S": 1.0, "lambda_reg": 0.0}, "lambda_reg"),
])
def test_bad_inputs_are_named(name, params, match):
    X = instances.soare(d=3).features
    with pytest.raises(ValueError, match=match):
        make_policy(name, X, **params)


def test_nan_features_rejected():
    X = np.eye(3)
    X[1, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        make_policy("g-allocation", X)


def test_oracle_does_not_stall_on_shared_best_arm():
    # every y in Y* contains x*: the literal minimax keeps pulling x* and never meets eq. 4 here
    inst = instances.soare(d=4, omega=0.2)
    r = simulate(policy_for_instance("xy-oracle", inst, rng=0), inst.environment(np.random.default_rng(0)))
    assert r.stopped and r.best == 0 and r.n_samples < 20_000
    assert r.pulls[2] > 10 and r.pulls[3] > 10
    literal = policy_for_instance("xy-oracle", inst, tie_rtol=0.0, max_samples=20_000)
    assert not simulate(literal, inst.environment(np.random.default_rng(0))).stopped


def test_confidence_arms_uses_the_smaller_log_term():
    inst = instances.soare(d=3, omega=0.3)
    n = {c: simulate(policy_for_instance("xy-oracle", inst, confidence=c),
                     inst.environment(np.random.default_rng(0))).n_samples
         for c in ("pairs", "arms")}
    assert n["arms"] < n["pairs"]

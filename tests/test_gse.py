"""GSE (spec 2.5): budget accounting, projection, edge cases, accuracy on easy instances."""

import numpy as np
import pytest

from screenbai.bandits import Instance, make_policy
from screenbai.bandits.budget.gse import GSE, GSELin, n_stages, stage_sizes
from screenbai.bandits.sim.generators import akg_logistic, canonical

ALLOCS = ["uniform", "fw", "wynn", "greedy"]


def spend(name, inst, seed=0, **params):
    p = make_policy(name, inst.features, rng=seed, **params)
    env = inst.environment(seed + 1000)
    batches = 0
    while not p.done:
        arms = p.ask()
        p.tell(arms, env.pull(arms))
        batches += 1
    return p.result(), batches, p


def test_stage_schedule():
    assert n_stages(8, 2) == 3 and n_stages(9, 2) == 4 and n_stages(1, 2) == 0 and n_stages(2, 2) == 1
    assert n_stages(1000, 10) == 3  # exact powers: no floating-point log error
    assert stage_sizes(8, 2) == [8, 4, 2, 1]
    assert stage_sizes(9, 2) == [9, 5, 3, 2, 1]
    sizes = stage_sizes(10, 1.5)
    assert sizes[-1] == 1 and all(a > b for a, b in zip(sizes, sizes[1:]))


@pytest.mark.parametrize("alloc", ALLOCS)
@pytest.mark.parametrize("K,d", [(20, 4), (5, 8), (2, 3), (9, 9)])
def test_gse_lin_spends_exact_budget_and_returns_one_arm(alloc, K, d):
    rng = np.random.default_rng(K * 10 + d)
    X = rng.standard_normal((K, d))
    inst = Instance(X, X @ rng.standard_normal(d))
    smallest, _ = GSE.smallest_budget(K, K if alloc == "uniform" else min(K, d), allocation=alloc)
    for budget in (smallest, smallest + 37, max(smallest, 200)):
        res, batches, p = spend("gse-lin", inst, allocation=alloc, budget=budget)
        assert res.n_samples == budget == res.pulls.sum()
        assert len(res.recommendation) == 1 and 0 <= res.best < K
        assert batches == n_stages(K, 2)  # one plate per stage
        assert res.stopped


@pytest.mark.parametrize("alloc", ["uniform", "fw"])
def test_gse_log_spends_exact_budget_k_below_d(alloc):
    inst = akg_logistic(K=8, d=12, seed=3)  # K < d: projection needed from stage 1
    res, batches, p = spend("gse-log", inst, allocation=alloc, budget=81)
    assert res.n_samples == 81 and batches == 3 and len(res.recommendation) == 1
    assert p.diagnostics["pinv_stages"] == 0


def test_leftover_options():
    inst = canonical(d=8, gap=0.5)
    res, *_ = spend("gse-lin", inst, budget=100, leftover="unused")
    assert res.n_samples == 99  # 3 stages x 33
    res, *_ = spend("gse-lin", inst, budget=100, leftover="spread")
    assert res.n_samples == 100


def test_k1_is_refused():
    with pytest.raises(ValueError, match="1 arm; identifying the best arm needs at least 2"):
        make_policy("gse-lin", np.ones((1, 3)), budget=10)


def test_k2_single_stage():
    inst = Instance(np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([1.0, 0.0]), sigma=0.1)
    res, batches, _ = spend("gse-lin", inst, budget=7)
    assert batches == 1 and res.n_samples == 7 and res.best == 0


@pytest.mark.parametrize(
    "name,budget,smallest", [("gse-lin-uniform", 20, 64), ("gse-lin-uniform", 63, 64), ("gse-lin", 8, 64)]
)
def test_budget_too_small_for_stage_one_is_refused(name, budget, smallest):
    """4 stages of 5 tests for 16 arms used to eliminate untested arms and report stopped=True."""
    with pytest.raises(ValueError, match=rf"budget = {budget} is too small.*smallest valid budget is {smallest}$"):
        make_policy(name, canonical(d=16, gap=1.0).features, budget=budget)
    res, _, _ = spend(name, canonical(d=16, gap=1.0), budget=smallest)
    assert res.pulls.min() >= 1 and res.n_samples == smallest  # every arm tested in stage 1 (rank 16 = K)


@pytest.mark.parametrize("name,alloc",
                         [("gse-lin", "fw"), ("gse-lin", "uniform"), ("gse-lin", "greedy"), ("gse-lin", "wynn")])
def test_gse_lin_accurate_on_easy_instance(name, alloc):
    inst = canonical(d=8, gap=1.0, sigma=1.0)
    correct = [spend(name, inst, seed=s, allocation=alloc, budget=160)[0].best == 0 for s in range(200)]
    assert np.mean(correct) >= 0.9  # random guessing: 1/8


def test_gse_log_accurate_on_easy_instance():
    X = np.vstack([np.eye(4), -np.eye(4)])
    theta = np.array([2.5, 1.0, 0.0, -1.0])
    from scipy.special import expit

    inst = Instance(X, expit(X @ theta), "bernoulli", 0.5, theta, link="logistic")
    correct = [spend("gse-log", inst, seed=s, budget=240)[0].best == 0 for s in range(200)]
    assert np.mean(correct) >= 0.9


def test_gse_log_rejects_non_binary_rewards():
    p = make_policy("gse-log", np.eye(4), budget=20)
    arms = p.ask()
    with pytest.raises(ValueError, match="0 or 1"):
        p.tell(arms, np.full(arms.size, 0.5))


def test_design_allocation_is_computed_before_rewards_and_projected():
    # the stage-1 plate does not depend on the reward stream
    X = np.random.default_rng(2).standard_normal((30, 5))
    a1 = make_policy("gse-lin", X, budget=300, rng=1).ask()
    a2 = make_policy("gse-lin", X, budget=300, rng=1).ask()
    assert np.array_equal(a1, a2) and a1.size == 300 // 5


def test_parameter_errors():
    X = np.eye(8)
    with pytest.raises(ValueError, match=r"budget = 2 is too small.*rank 8.*smallest valid budget is 24"):
        make_policy("gse-lin", X, budget=2)
    with pytest.raises(ValueError, match="eta"):
        make_policy("gse-lin", X, budget=100, eta=1.0)
    with pytest.raises(ValueError, match="allocation"):
        make_policy("gse-lin", X, budget=100, allocation="optimal")
    with pytest.raises(ValueError, match="lambda_reg"):
        make_policy("gse-log", X, budget=100, lambda_reg=0)
    with pytest.raises(ValueError, match="budget"):
        make_policy("gse-lin", X, budget=0)
    with pytest.raises(TypeError):
        make_policy("gse-lin", X)  # budget is required


@pytest.mark.parametrize("reuse_data,best", [(False, 1), (True, 0)])
def test_reuse_data_decides_on_all_the_data_of_the_survivors(reuse_data, best):
    """4 arms, 2 stages of 8 uniform tests: stage 1 gives arms 0 and 1 means 1.0 and 0.7 (2 tests
    each), stage 2 gives them 0.5 and 0.6 (4 tests each). On stage 2 alone arm 1 wins; on all the
    data arm 0 does (2/3 against 19/30)."""
    outcome = [{0: 1.0, 1: 0.7, 2: 0.0, 3: 0.0}, {0: 0.5, 1: 0.6}]
    p = make_policy("gse-lin", np.eye(4), budget=16, allocation="uniform", reuse_data=reuse_data, rng=0)
    while not p.done:
        arms = p.ask()
        p.tell(arms, [outcome[p.stage][int(a)] for a in arms])
    assert p.n.tolist() == [6, 6, 2, 2]
    assert list(p.result().recommendation) == [best]


def test_aliases_registered():
    for alias in ("gse-lin-fwg", "gse-lin-uniform", "gse-lin-wynn", "gse-lin-greedy", "gse-log-uniform", "gse-log-fwg"):
        assert isinstance(make_policy(alias, np.eye(4), budget=20), GSELin.__mro__[1])


@pytest.mark.parametrize("name", ["gse-lin", "gse-log"])
def test_a_stage_is_handed_out_spread_over_its_design(name):
    """A stage's batch follows its design in every prefix (a plate), not one compound after another: arm after
    arm put the first plates of a stage on its lowest-numbered compound."""
    inst = akg_logistic(K=12, d=4, seed=0)
    p = make_policy(name, inst.features, rng=0, budget=400)
    batch = np.asarray(p.ask())
    counts = np.bincount(np.searchsorted(p.active, batch), minlength=p.active.size)
    assert (counts > 0).sum() >= 4
    N, s = counts.sum(), (counts > 0).sum()
    for t in range(1, N + 1):  # spread_order's promise for every prefix
        got = np.bincount(np.searchsorted(p.active, batch[:t]), minlength=p.active.size)
        assert np.all(np.abs(got - t * counts / N) <= 0.5 + s * counts / (2 * N) + 1e-9), t

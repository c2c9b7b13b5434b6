"""RAGE (screenbai.bandits.linear.rage): the XY design, phase sizes and decisions on hand cases,
the error rate, the certificate, whole plates and saved state."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import beta as beta_dist

from screenbai.bandits import load_policy, make_policy, policy_for_instance, save_policy
from screenbai.bandits.certainty.complexity import xy_design
from screenbai.bandits.linear.rage import RAGE
from screenbai.bandits.sim.generators import kw_synthetic, reda_classic, soare
from screenbai.bandits.sim.instance import Environment, Instance


def _inst(X, theta, sigma: float = 1.0) -> Instance:
    X = np.asarray(X, dtype=float)
    theta = np.asarray(theta, dtype=float)
    return Instance(X, X @ theta, "gaussian", sigma, theta, name="hand")


def _run(policy, inst, seed):
    return policy.run(Environment(inst, rng=np.random.default_rng(seed)))


def _noiseless(X, theta):
    """Outcomes equal to the means (the policy still assumes sigma = 1): decisions follow the formulas."""
    return _inst(X, theta, sigma=1e-12)


def _level(r: int, n: int, delta: float) -> float:
    return math.log(math.pi**2 * r * r * n * (n - 1) / (6 * delta))


# ---------------------------------------------------------------------- the design
def test_xy_design_of_two_arms_is_half_each_with_value_four():
    """Two independent arms: ||x_1 - x_2||^2_{A(w)^-1} = 1/w_1 + 1/w_2 (coordinates (1, -1) in the basis of
    the arms), minimal at w = (1/2, 1/2) with value 4, whatever the angle between them."""
    X = np.array([[1.0, 0.0], [np.cos(0.3), np.sin(0.3)]])
    w, rho, low = xy_design(X, (X[0] - X[1])[None, :])
    assert rho == pytest.approx(4.0, rel=1e-3) and low <= rho and low >= 4.0 * (1 - 1e-3)
    assert w == pytest.approx([0.5, 0.5], abs=1e-3)
    p = make_policy("rage", X, rng=0)
    assert p.design(np.array([0, 1]))[1] == pytest.approx(4.0, rel=1e-3)  # the policy's rho, spanning terms aside


def test_xy_design_beats_a_grid_and_the_grid_comes_close():
    """Three arms in the plane (Soare's shape): the solver's max_y ||y||^2 is within 1e-3 of the best
    point of a fine grid of the simplex and never above it by more."""
    X = np.array([[1.0, 0.0], [0.0, 1.0], [np.cos(0.4), np.sin(0.4)]])
    Y = np.array([X[0] - X[1], X[0] - X[2], X[1] - X[2]])
    _, rho, _ = xy_design(X, Y)
    g = np.linspace(0.0, 1.0, 801)[1:-1]
    a, b = np.meshgrid(g, g, indexing="ij")
    keep = a + b < 1 - 1e-9
    W = np.column_stack([a[keep], b[keep], 1 - a[keep] - b[keep]])
    A = np.einsum("nk,ki,kj->nij", W, X, X)
    vals = np.einsum("pi,nij,pj->np", Y, np.linalg.inv(A), Y).max(axis=1)
    best = float(vals.min())
    assert rho <= best * (1 + 1e-3)
    assert rho >= best * (1 - 2e-2)  # the grid's step


# ---------------------------------------------------------------------- phases and decisions by hand
def test_phase_sizes_and_elimination_on_two_arms():
    """Two arms e_1, e_2, sigma = 1, delta = 0.1, width0 = 1/4, outcomes without noise. Phase 1:
    rho = 4, L_1 = log(pi^2 * 2 / 0.6), n_1 = ceil(2.2 * 4 L_1 / (1/4)^2) = 492, 246 tests each, width
    sqrt(2 L_1 (2 / 246)) = 0.238. Gap 1 > 0.238: arm 1 is rejected after phase 1. Gap 0.2 < 0.238: no
    decision; phase 2 (target 1/8, L_2 = log(pi^2 * 4 * 2 / 0.6)) has width 0.119 < 0.2 and decides."""
    X = np.eye(2)
    L1, L2 = _level(1, 2, 0.1), _level(2, 2, 0.1)
    n1 = math.ceil(2.2 * 4 * L1 / 0.25**2)
    n2 = math.ceil(2.2 * 4 * L2 / 0.125**2)
    assert n1 == 492
    p = make_policy("rage", X, delta=0.1, sigma=1.0, rng=0)
    r = _run(p, _noiseless(X, [1.0, 0.0]), 0)
    assert r.stopped and r.recommendation == (0,)
    assert abs(r.diagnostics["phase_sizes"][0] - n1) <= 1 and r.diagnostics["phases"] == 1
    assert abs(r.pulls[0] - r.pulls[1]) <= 1
    p = make_policy("rage", X, delta=0.1, sigma=1.0, rng=0)
    r = _run(p, _noiseless(X, [0.2, 0.0]), 0)
    assert r.stopped and r.recommendation == (0,)
    sizes = r.diagnostics["phase_sizes"]
    assert len(sizes) == 2 and abs(sizes[0] - n1) <= 1 and abs(sizes[1] - n2) <= 4
    # a gap just under the phase-2 width needs a third phase
    width2 = math.sqrt(2 * L2 * 4 / sizes[1])
    p = make_policy("rage", X, delta=0.1, sigma=1.0, rng=0)
    r = _run(p, _noiseless(X, [0.95 * width2, 0.0]), 0)
    assert r.diagnostics["phases"] == 3


def test_top_m_accepts_and_rejects_in_one_phase():
    """e_1, e_2, e_3 with means 1, 0.9, 0 and m = 2, no noise: phase 1 has rho = 6 and width about
    0.24; arm 2 is certified below both others (rejected: 2 >= m_r = 2 better arms), arms 0 and 1 above
    arm 2 (accepted: 1 >= |S| - m_r = 1 worse arm), although 0 and 1 are not told apart: the answer is
    {0, 1} after one phase. With epsilon = 0 and m = 1 the same instance needs more phases."""
    X = np.eye(3)
    p = make_policy("rage", X, m=2, delta=0.1, rng=0)
    r = _run(p, _noiseless(X, [1.0, 0.9, 0.0]), 0)
    assert r.stopped and sorted(r.recommendation) == [0, 1] and r.diagnostics["phases"] == 1
    assert p.diagnostics["rho"][0] == pytest.approx(6.0, rel=1e-2)
    q = make_policy("rage", X, m=1, delta=0.1, rng=0)
    r1 = _run(q, _noiseless(X, [1.0, 0.9, 0.0]), 0)
    assert r1.recommendation == (0,) and r1.diagnostics["phases"] >= 2
    assert r1.diagnostics["active_sizes"][:2] == [3, 2]  # arm 2 eliminated after phase 1


def test_epsilon_good_stops_before_the_gap_is_resolved():
    """Two arms 0.05 apart with epsilon = 0.3: the first phase's width (0.24) certifies either arm
    0.3-good, so the run stops after one phase; with epsilon = 0 it needs the phases that resolve 0.05."""
    X = np.eye(2)
    inst = _noiseless(X, [0.05, 0.0])
    p = make_policy("rage", X, delta=0.1, epsilon=0.3, rng=0)
    r = _run(p, inst, 0)
    assert r.stopped and r.diagnostics["phases"] == 1
    assert 0 < r.diagnostics["certified_epsilon"][0] <= 0.3
    q = make_policy("rage", X, delta=0.1, rng=0)
    r0 = _run(q, inst, 0)
    assert r0.recommendation == (0,) and r0.diagnostics["phases"] >= 3


def test_a_first_phase_is_never_sized_narrower_than_epsilon():
    """With epsilon above the whole range of the means (soare:d=2, means 2, 0, 2 cos 0.01; epsilon 5) RAGE spent 745
    tests, its first phase sized for width 1/4 whatever epsilon; lin-tas stopped after 8. A phase whose widths are
    within epsilon always stops (the answer is the best-estimated arm, so its rivals' bounds are their widths): the
    first phase is now sized for max(width0, epsilon), here d = 2 tests; epsilon <= width0 keeps Fiez et al.'s
    schedule. The error guarantee holds (one phase sized for epsilon = 0.3 on arms 0.4 apart, below)."""
    inst = soare(d=2, omega=0.01)
    p = policy_for_instance("rage", inst, rng=0, epsilon=5.0)
    r = _run(p, inst, 0)
    assert r.stopped and r.n_samples == 2 and r.diagnostics["phases"] == 1
    assert r.diagnostics["certified_epsilon"][0] <= 5.0
    assert p.target_width(1) == 5.0 and p.target_width(2) == 2.5
    q = policy_for_instance("rage", inst, rng=0, epsilon=0.1)
    assert q.target_width(1) == 0.25 and q.target_width(3) == 0.0625  # Fiez et al.'s 2^-(r+1)
    # epsilon 0.3 above width0: arm 1 (0.6) is not 0.3-good, so stopping on the wider first phase must not pick it
    inst = _inst(np.eye(3), [1.0, 0.6, 0.0])
    errs, runs = 0, 100
    for seed in range(runs):
        p = policy_for_instance("rage", inst, rng=seed, epsilon=0.3, delta=0.1)
        errs += _run(p, inst, 90_000 + seed).recommendation[0] != 0
    assert p.target_width(1) == 0.3 and float(beta_dist.ppf(0.95, errs + 1, runs - errs)) <= 0.1


# ---------------------------------------------------------------------- the error rate
def _errors(inst, runs: int, delta: float) -> int:
    best = int(np.argmax(inst.means))
    errs = 0
    for seed in range(runs):
        p = policy_for_instance("rage", inst, rng=seed, delta=delta)
        errs += _run(p, inst, 50_000 + seed).recommendation[0] != best
    return errs


@pytest.mark.slow
def test_error_rate_at_most_delta_and_a_rule_without_level_errs(monkeypatch):
    """Three arms (Soare's shape, omega = 0.5, theta = 0.6 e_1, sigma = 1), delta = 0.1, 200 runs: the
    one-sided 95 % upper bound of the error rate is at most delta (0 errors measured). The same policy
    with its level L_r set to 0 (phase sizes d, decisions on the sign of the estimate: a broken rule)
    errs in far more runs (measured 106 of 200)."""
    th = 0.5
    inst = _inst([[1.0, 0.0], [0.0, 1.0], [np.cos(th), np.sin(th)]], [0.6, 0.0])
    runs, delta = 200, 0.1
    errs = _errors(inst, runs, delta)
    upper = 1.0 if errs >= runs else float(beta_dist.ppf(0.95, errs + 1, runs - errs))
    assert upper <= delta
    # no union bound and no confidence: phases of d tests, decisions on the sign of the estimate
    monkeypatch.setattr(RAGE, "level", lambda self, r, n: 0.0)
    assert _errors(inst, runs, delta) > 3 * max(errs, 5)


def test_certificate_holds_when_the_cap_stops_the_run():
    """Soare's instance (omega = 0.3) cut by the cap in mid-run: the certified epsilon of the answer
    bounds its true gap in every run (valid at any time), and is finite once a phase has closed."""
    inst = soare(d=2, omega=0.3)
    gaps = inst.means.max() - inst.means
    finite = 0
    for seed in range(30):
        p = policy_for_instance("rage", inst, rng=seed, delta=0.1, max_samples=400)
        r = _run(p, inst, seed)
        eps = p._certified_epsilon()
        finite += bool(np.isfinite(eps[0]))
        assert gaps[r.recommendation[0]] <= eps[0] + 1e-12
    assert finite == 30


# ---------------------------------------------------------------------- plates and state
def test_phases_fill_whole_plates():
    inst = reda_classic(K=4, m=2)
    p = policy_for_instance("rage", inst, m=2, rng=0, plate_size=96)
    env = Environment(inst, rng=np.random.default_rng(1))
    plates = []
    while not p.done:
        plate = p.propose(96)
        plates.append(plate.size)
        p.tell(plate, env.pull(plate))
    assert p.result().stopped and set(p.result().recommendation) == {0, 1}
    assert set(plates) == {96}
    assert all(s % 96 == 0 for s in p.diagnostics["phase_sizes"])


def test_a_phase_waits_for_its_outcomes_and_failed_wells_are_retested():
    X = np.eye(2)
    inst = _inst(X, [1.0, 0.0])
    p = make_policy("rage", X, delta=0.1, rng=0)
    env = Environment(inst, rng=np.random.default_rng(2))
    first = p.propose(10_000)
    assert first.size == p.diagnostics["phase_sizes"][0]
    assert p.propose(5).size == 0  # nothing before the phase's outcomes are in
    p.cancel(first[:3])
    p.tell(first[3:], env.pull(first[3:]))
    assert not p.done and p.phase == 1
    again = p.propose(10)
    assert sorted(again.tolist()) == sorted(first[:3].tolist())
    p.tell(again, env.pull(again))
    assert p.done and p.result().recommendation == (0,)


@pytest.mark.parametrize(
    "name, instance, params, plate",
    [
        ("rage", lambda: reda_classic(K=4, m=2), dict(rng=1, m=2, delta=0.1), 50),
        ("rage-glm", lambda: kw_synthetic(K=8, d=2, seed=0), dict(rng=1, epsilon=0.05, delta=0.1), 500),
    ],
)
def test_save_and_restore_mid_phase_gives_the_same_run(tmp_path, name, instance, params, plate):
    """RAGE and RAGE-GLM (phased/elimination.py): saved and restored in the middle of phase 2, the run
    goes on with the same plates, stop and certificate as the uninterrupted one."""
    inst = instance()
    ref = policy_for_instance(name, inst, **params)
    env = Environment(inst, rng=np.random.default_rng(5))
    log_ref = []
    while not ref.done:
        plates = ref.propose(plate)
        log_ref.append(plates.tolist())
        ref.tell(plates, env.pull(plates))
    assert ref.phase >= 2
    p = policy_for_instance(name, inst, **params)
    env = Environment(inst, rng=np.random.default_rng(5))
    log = []
    first = ref.diagnostics["phase_sizes"][0]
    while sum(len(x) for x in log) < first + 1.2 * plate:  # into phase 2
        plates = p.propose(plate)
        log.append(plates.tolist())
        p.tell(plates, env.pull(plates))
    assert p.phase == 2 and 0 < int(p.phase_counts.sum()) < int(p.planned.sum())  # mid-phase
    q = load_policy(save_policy(p, tmp_path / "mid"), inst.features)
    assert type(q) is type(p)
    while not q.done:
        plates = q.propose(plate)
        log.append(plates.tolist())
        q.tell(plates, env.pull(plates))
    assert log == log_ref
    assert q.result().recommendation == ref.result().recommendation
    assert q.result().n_samples == ref.result().n_samples
    assert q.result().diagnostics["certified_epsilon"] == ref.result().diagnostics["certified_epsilon"]


# ---------------------------------------------------------------------- the campaign
@pytest.mark.parametrize(
    "name, params, plate, n_max",
    [
        ("rage", {"sigma": 0.5, "epsilon": 0.3, "width0": 1.0}, 12, None),
        # a small library: each compound many times per plate (about 23 plates, 10 656 tests)
        pytest.param("rage-glm", {"epsilon": 0.3, "width0": 4.0}, 480, 20_000, marks=pytest.mark.slow),
    ],
)
def test_a_campaign_runs_a_phased_elimination_to_its_stop_and_certifies_the_answer(tmp_path, name, params, plate,
                                                                                   n_max):
    """`campaign init --algorithm rage` (0/1 outcomes, sigma = 1/2) or `rage-glm`, plates recorded as they
    come: the run stops, the answer is among the best (epsilon = 0.3) and status certifies it within epsilon."""
    from campaign_util import Assay, new_campaign, write_results

    camp = new_campaign(tmp_path / "r.campaign", name, params, K=12, d=2)
    assay = Assay(camp.features, seed=4) if n_max is None else Assay(camp.features, seed=4, n_max=n_max)
    for k in range(300):
        if camp.status().done:
            break
        plates = camp.next_plate(plate, force=plate > 96)  # more wells than a 96-well plate: forced
        camp.record(write_results(tmp_path / f"p{k}.csv", plates, assay(plates.arms)))
    st = camp.status()
    assert st.done and st.stopped
    assert st.certified_epsilon is not None and st.certified_epsilon <= 0.3
    leader = camp.compound_ids.index(st.recommendation[0].compound_id)
    assert assay.means.max() - assay.means[leader] <= 0.3
    camp.close()


@pytest.mark.parametrize("name, params", [("rage", {"sigma": 0.5, "epsilon": 0.3, "width0": 1.0}),
                                          ("rage-glm", {"epsilon": 0.3, "width0": 4.0})])
def test_compounds_added_and_withdrawn_mid_phase_restart_the_phases(tmp_path, name, params):
    """A campaign's change restarts the algorithm with the past as its first observations (campaign.state.armset):
    for a phased elimination those outcomes were not planned by any phase of the new run, so they never enter a
    phase's estimate, the first phase is planned again after them (RAGE-GLM's design and slope floor use them),
    and the wells in the lab at the change are recorded as unplanned tests (before: the past was counted in the
    phase built without it, and recording the plate in the lab raised "an outcome beyond the phase's design").
    The state replayed from the log equals the live one."""
    from campaign_util import Assay, synthetic_library, write_results

    from screenbai.campaign import Campaign
    from screenbai.campaign.state.changes import add_compounds, withdraw

    lib = synthetic_library(K=12, d=2)
    extra_X = np.hstack([np.random.default_rng(7).normal(size=(2, 2)), np.ones((2, 1))])
    camp = Campaign.create(tmp_path / "c.campaign", lib, name, params, seed=3)
    assay = Assay(np.vstack([lib.features, extra_X]), seed=4, n_max=2000)
    for k in range(3):
        plate = camp.next_plate(12)
        camp.record(write_results(tmp_path / f"a{k}.csv", plate, assay(plate.arms)))
    in_lab = camp.next_plate(12)
    add_compounds(camp, ["NEW1", "NEW2"], ["CCO", "CCN"], features=extra_X)
    inner = camp.policy.inner
    assert inner.phase == 1 and inner.phase_counts.sum() == 0  # the past is in no phase
    assert inner.n.sum() == 36 and inner._unplanned.sum() == 12  # ... but told; the plate in the lab unplanned
    assert len(inner.diagnostics["phase_sizes"]) == 1
    withdraw(camp, "CPD0005", "out of stock")
    camp.record(write_results(tmp_path / "lab.csv", in_lab, assay(in_lab.arms)))
    inner = camp.policy.inner
    assert inner._unplanned.sum() == 0 and inner.phase_counts.sum() == 0
    after = 0
    for k in range(4):
        plate = camp.next_plate(12)
        after += len(plate.arms)
        camp.record(write_results(tmp_path / f"b{k}.csv", plate, assay(plate.arms)))
    inner = camp.policy.inner
    # every well after the change went to a phase of the new run: the closed ones whole, the open one so far
    assert sum(inner.diagnostics["phase_sizes"][: inner.phase - 1]) + inner.phase_counts.sum() == after > 36
    live = (camp.observations()[0].tolist(), camp.policy.result().recommendation, inner.phase,
            inner.phase_counts.tolist())
    st = camp.status()
    text = st.text()
    assert "counts only the tests it designs from now on" in text
    # issue 19: the forecast of a phased elimination says what it leaves out, where it is printed
    assert "leaves out the phases' losses" in st.to_dict()["forecast_note"]
    assert st.forecast_plates is None or "leaves out the phases' losses" in text
    path = camp.path
    camp.close()
    with Campaign.open(path, use_snapshot=False) as again:  # replayed from the log alone
        inner = again.policy.inner
        assert (again.observations()[0].tolist(), again.policy.result().recommendation, inner.phase,
                inner.phase_counts.tolist()) == live


@pytest.mark.parametrize("name, params", [("rage", {"sigma": 0.5, "epsilon": 0.3, "width0": 1.0}),
                                          ("rage-glm", {"epsilon": 0.3, "width0": 4.0})])
def test_replicate_wells_are_tests_no_phase_planned(tmp_path, name, params):
    """`--replicates 2` puts every proposed compound in a second well that no phase planned: its outcome is an
    unplanned test (phased.elimination.fly_unplanned), never in the phase's estimate (before: recording the
    first plate raised "an outcome beyond the phase's design")."""
    from campaign_util import Assay, synthetic_library, write_results

    from screenbai.campaign import Campaign, PlateLayout

    lib = synthetic_library(K=12, d=2)
    camp = Campaign.create(tmp_path / "c.campaign", lib, name, params, seed=3,
                           layout=PlateLayout.build("24", replicates=2))
    assay = Assay(lib.features, seed=4, n_max=2000)
    wells = 0
    for k in range(4):
        plate = camp.next_plate(None)
        wells += len(plate.arms)
        camp.record(write_results(tmp_path / f"a{k}.csv", plate, assay(plate.arms)))
    inner = camp.policy.inner
    planned = sum(inner.diagnostics["phase_sizes"][: inner.phase - 1]) + inner.phase_counts.sum()
    assert inner.n.sum() == wells and planned == wells // 2 and inner._unplanned.sum() == 0


def test_many_directions_use_the_g_optimal_design_and_blockwise_norms(monkeypatch):
    """Above MAX_PAIRS directions the design is the G-optimal design of S's arms: its max ||y||^2 is at
    least the XY design's and at most 4 d (Kiefer-Wolfowitz: each ||z||^2 <= d), computed in row blocks
    equal to the brute force; the run still stops with the best arm."""
    import screenbai.bandits.phased.elimination as rage_mod

    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, (40, 3))
    p = make_policy("rage", X, rng=0)
    S = np.arange(40)
    _, rho_xy = p.design(S)
    monkeypatch.setattr(rage_mod, "MAX_PAIRS", 10)
    monkeypatch.setattr(rage_mod, "_ROWS", 7)
    w, rho_g = p.design(S)
    assert rho_xy * (1 - 2e-3) <= rho_g <= 4 * 3 * (1 + 1e-2)
    P = np.linalg.inv((X.T * w) @ X)
    D = X[:, None, :] - X[None, :, :]
    assert rage_mod.max_pair_norm(X, P) == pytest.approx(float(np.einsum("ijk,kl,ijl->ij", D, P, D).max()))
    inst = _inst(X, [1.0, -0.5, 0.3], sigma=0.5)
    r = _run(policy_for_instance("rage", inst, rng=0, width0=2.0), inst, 0)
    assert r.stopped and r.recommendation[0] == int(np.argmax(inst.means))


@pytest.mark.slow
def test_top_m_epsilon_error_rate_at_most_delta():
    """Réda's K = 4, m = 2 instance with epsilon = 0.05, delta = 0.1, 200 runs: the answer is
    (epsilon, m)-correct (every arm of it within epsilon of every arm outside) in all but a fraction whose
    one-sided 95 % upper bound is at most delta (0 errors measured)."""
    inst = reda_classic(K=4, m=2)
    mu = inst.means
    errs = 0
    for seed in range(200):
        p = policy_for_instance("rage", inst, rng=seed, m=2, epsilon=0.05, delta=0.1)
        ans = list(_run(p, inst, 70_000 + seed).recommendation)
        out = [k for k in range(4) if k not in ans]
        errs += bool(max(mu[out]) - min(mu[ans]) > 0.05)
    assert float(beta_dist.ppf(0.95, errs + 1, 200 - errs)) <= 0.1


def test_the_stopping_statistic_is_reported_between_phases():
    """Cut after phase 1 of the two-arm case with gap 0.2 (undecided there): diagnostics carry the
    stopping statistic (the answer's certified epsilon, about the width 0.238 - 0.2) and where it fires."""
    X = np.eye(2)
    p = make_policy("rage", X, delta=0.1, rng=0, max_samples=493)
    assert math.isnan(p.result().diagnostics["stat"])  # before the first phase's outcomes
    r = _run(p, _noiseless(X, [0.2, 0.0]), 0)
    assert not r.stopped and r.diagnostics["phases"] == 2
    width = math.sqrt(2 * _level(1, 2, 0.1) * (1 / r.pulls[0] + 1 / r.pulls[1]))
    assert r.diagnostics["stat"] == pytest.approx(0.0 - 0.2 + width, abs=0.01)
    assert r.diagnostics["stat_fires_at"] == 0.0


def test_the_forecast_caveats_say_what_each_elimination_leaves_out():
    """RAGE-GLM's second stop (its likelihood-ratio set, tested at the close of a phase that decides nothing) can end
    a run sooner than the phases' forecast: its caveat says so, where both said "runs cost more than it says" and
    RAGE's named RAGE-GLM's burn-in, which it has not."""
    from screenbai.bandits.core.registry import get

    rage, rage_glm = get("rage").cls.forecast_caveat, get("rage-glm").cls.forecast_caveat
    assert "leaves out the phases' losses" in rage and "leaves out the phases' losses" in rage_glm
    assert "RAGE-GLM" not in rage and "burn-in" not in rage and "more than it says" in rage
    assert "likelihood-ratio set" in rage_glm and "more or less than it says" in rage_glm

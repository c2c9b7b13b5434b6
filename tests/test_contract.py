"""The policy contract (screenbai.bandits.core.policy): state, save/load, plates, side-effect-free reads.

Every registered algorithm is driven against ``Streams``: arm a's k-th test always returns the same
outcome, whatever the order of the tests, so a sequential run, a run in plates and a restored run
can be compared outcome for outcome.
"""

from __future__ import annotations

import copy
import json
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from screenbai.bandits import available, load_policy, policy_for_instance, save_policy
from screenbai.bandits.sim.generators import akg_logistic, akg_sphere, kw_synthetic, reda_classic, soare
from screenbai.bandits.sim.instance import Instance

REPO = Path(__file__).resolve().parents[1]


class Streams:
    """Outcome of the k-th test of arm a: a fixed per-arm stream (0/1 or Gaussian)."""

    def __init__(self, instance, seed: int, length: int = 4000):
        rng = np.random.default_rng(seed)
        mu = instance.means[:, None]
        if instance.reward == "bernoulli":
            self.table = (rng.random((instance.K, length)) < mu).astype(float)
        else:
            self.table = mu + instance.sigma * rng.standard_normal((instance.K, length))
        self.used = np.zeros(instance.K, dtype=np.int64)

    def pull(self, arms) -> np.ndarray:
        out = np.empty(len(arms))
        for i, a in enumerate(np.asarray(arms, dtype=np.int64)):
            out[i] = self.table[a, self.used[a]]
            self.used[a] += 1
        return out


_LIN = reda_classic(K=5, m=1)
_LIN2 = reda_classic(K=6, m=2)
_SOARE = soare(d=3, omega=0.3)
_SPHERE = akg_sphere(K=12, d=4)
_LOGIT = kw_synthetic(K=20, d=4)
_AKG = akg_logistic(K=8, d=4)
#: one-hot compounds with hit rates 0.999, 0.5, 0.001: RAGE-GLM's phases never decide, the likelihood-ratio set stops
_SATURATED = Instance(np.eye(3), np.array([0.999, 0.5, 0.001]), "bernoulli", 0.5,
                      np.log(np.array([999.0, 1.0, 1.0 / 999.0])), link="logistic", name="saturated")

# name -> (instance, parameters); runs are capped so that the whole file stays fast
CASES = {
    "lingape": (_LIN, {"S": "oracle", "sigma": 0.5, "delta": 0.1, "max_samples": 300}),
    "m-lingape": (_LIN2, {"m": 2, "delta": 0.1, "max_samples": 300}),
    "lingifa": (_LIN2, {"m": 2, "delta": 0.1, "max_samples": 300}),
    "lucb": (_LIN, {"delta": 0.1, "max_samples": 300}),
    "ugape": (_LIN, {"delta": 0.1, "max_samples": 300}),
    "glgape": (_LOGIT, {"epsilon": 0.1, "max_samples": 400}),
    "m-glgape": (_LOGIT, {"m": 2, "epsilon": 0.1, "max_samples": 400}),
    "g-allocation": (_SOARE, {"max_samples": 300}),
    "xy-static": (_SOARE, {"max_samples": 300}),
    "xy-oracle": (_SOARE, {"max_samples": 300}),
    "xy-adaptive": (_SOARE, {"max_samples": 300}),
    "xy-fully-adaptive": (_SOARE, {"max_samples": 300}),
    "gse-lin": (_SPHERE, {"budget": 200}),
    "gse-lin-fwg": (_SPHERE, {"budget": 200}),
    "gse-lin-uniform": (_SPHERE, {"budget": 200}),
    "gse-lin-wynn": (_SPHERE, {"budget": 200}),
    "gse-lin-greedy": (_SPHERE, {"budget": 200}),
    "gse-log": (_AKG, {"budget": 240}),
    "gse-log-fwg": (_AKG, {"budget": 240}),
    "gse-log-uniform": (_AKG, {"budget": 240}),
    "gse-log-wynn": (_AKG, {"budget": 240}),
    "gse-log-greedy": (_AKG, {"budget": 240}),
    "uniform": (_SPHERE, {"budget": 200}),
    "fb-lingape": (_SPHERE, {"budget": 200, "S": "oracle"}),
    "linucb": (_SPHERE, {"budget": 200}),
    "ucb-glm": (_AKG, {"budget": 200}),
    "lin-tas": (_LIN2, {"m": 2, "delta": 0.1, "max_samples": 300}),
    "log-tas": (_LOGIT, {"epsilon": 0.1, "max_samples": 400}),
    "rage": (_LIN2, {"m": 2, "delta": 0.1, "width0": 2.0, "max_samples": 300}),
    "rage-glm": (_LOGIT, {"epsilon": 0.1, "width0": 4.0, "max_samples": 400}),
    "kl-lucb": (_LOGIT, {"epsilon": 0.1, "max_samples": 400}),
}
# variants whose code paths differ: the LP ratio rule, paired tests (two arms per round), restricted Y
VARIANTS = {
    "m-lingape/optimized": ("m-lingape", _LIN, {"selection": "optimized", "delta": 0.1, "max_samples": 300}),
    "m-lingape/both": ("m-lingape", _LIN2, {"m": 2, "selection": "both", "delta": 0.1, "max_samples": 300}),
    "glgape/greedy": ("glgape", _LOGIT, {"epsilon": 0.1, "selection": "greedy", "max_samples": 400}),
    "xy-static/restricted": ("xy-static", _SOARE, {"restrict_y": True, "max_samples": 300}),
    "lin-tas/soare": ("lin-tas", _SOARE, {"epsilon": 0.05, "max_samples": 300}),
    "rage/soare": ("rage", _SOARE, {"epsilon": 0.05, "width0": 1.0, "plate_size": 8, "max_samples": 300}),
    "rage-glm/plates": ("rage-glm", _LOGIT, {"epsilon": 0.1, "width0": 4.0, "plate_size": 8, "max_samples": 3000}),
    "rage-glm/saturated": ("rage-glm", _SATURATED, {"epsilon": 0.1, "width0": 4.0, "max_samples": 3000}),
}
ALL = {**{name: (name, *case) for name, case in CASES.items()}, **VARIANTS}


def test_every_registered_algorithm_is_covered():
    assert set(available()) == set(CASES)


def _build(label, seed=0):
    name, inst, params = ALL[label]
    return policy_for_instance(name, inst, rng=np.random.default_rng(seed), **params)


def _env(label, seed=7):
    return Streams(ALL[label][1], seed)


def _summary(policy):
    r = policy.result()
    return list(r.recommendation), r.n_samples, r.stopped, r.pulls.tolist()


def _sequential(policy, env, log, limit=None):
    """The plain ask/tell loop; ``limit`` rounds at most. Returns True when the policy is done."""
    rounds = 0
    while not policy.done and (limit is None or rounds < limit):
        arms = policy.ask()
        log.append(arms.tolist())
        policy.tell(arms, env.pull(arms))
        rounds += 1
    return policy.done


def _plates(policy, env, log, pending, size=5, limit=None):
    """Plates of ``size``; after each plate the older half of the arms in flight is told, newest
    first (out of order); an empty proposal tells everything in flight."""
    steps = 0
    while not policy.done and (limit is None or steps < limit):
        arms = policy.propose(size)
        assert arms.size or pending, "nothing proposed and nothing in flight"
        log.append(arms.tolist())
        pending.extend(arms.tolist())
        if not arms.size or policy.done:
            told, pending[:] = pending[:], []
        else:
            half = max(1, len(pending) // 2)
            told, pending[:] = pending[:half][::-1], pending[half:]
        if policy.done:
            if told:
                policy.cancel(told)
            break
        if told:
            policy.tell(told, env.pull(told))
        steps += 1
    return policy.done


@pytest.mark.slow
@pytest.mark.parametrize("label", sorted(ALL))
def test_propose_one_then_tell_reproduces_the_sequential_run(label):
    ref_log, log = [], []
    ref = _build(label)
    _sequential(ref, _env(label), ref_log)
    policy, env = _build(label), _env(label)
    while not policy.done:
        arms = policy.propose(1)
        assert arms.size == 1
        log.append(arms.tolist())
        policy.tell(arms, env.pull(arms))
    assert sum(log, []) == sum(ref_log, [])
    assert _summary(policy) == _summary(ref)
    assert policy.result().diagnostics == ref.result().diagnostics


@pytest.mark.slow
@pytest.mark.parametrize("label", sorted(ALL))
def test_restored_state_continues_exactly(label, tmp_path):
    """Stop after k rounds (k = 0: right after initialisation), copy the state into a policy built
    with another seed, continue: the same asks and the same result as without the interruption;
    the same for a run in plates interrupted with tests in flight (mid-GSE-stage), saved to a file
    and loaded."""
    ref_log = []
    ref = _build(label)
    _sequential(ref, _env(label), ref_log)
    ref_plates, pending = [], []
    refp = _build(label)
    _plates(refp, _env(label), ref_plates, pending)
    for k in (0, 1, 3, max(1, len(ref_log) // 2)):
        policy, env = _build(label), _env(label)
        log = []
        _sequential(policy, env, log, limit=k)
        restored = _build(label, seed=99)
        restored.load_state_dict(policy.state_dict())
        _sequential(restored, env, log)
        assert log == ref_log, f"asks differ after a restore at round {k}"
        assert _summary(restored) == _summary(ref)
        assert restored.result().diagnostics == ref.result().diagnostics

        policy, env = _build(label), _env(label)
        log, pending = [], []
        _plates(policy, env, log, pending, limit=k)
        restored = load_policy(save_policy(policy, tmp_path / f"at{k}"), ALL[label][1].features)
        _plates(restored, env, log, pending)
        assert log == ref_plates, f"plates differ after a restore at step {k}"
        assert _summary(restored) == _summary(refp)


@pytest.mark.parametrize("label", ["glgape", "m-lingape", "gse-log", "xy-adaptive"])
def test_saved_policy_continues_in_a_fresh_process(label, tmp_path):
    name, inst, params = ALL[label]
    policy, env = _build(label), _env(label)
    log = []
    _plates(policy, env, log, pending := [], size=7, limit=6)
    path = save_policy(policy, tmp_path / "policy")
    np.save(tmp_path / "features.npy", inst.features)
    np.save(tmp_path / "used.npy", env.used)
    np.save(tmp_path / "table.npy", env.table)
    (tmp_path / "pending.json").write_text(json.dumps(pending))
    # in this process
    here = load_policy(path, inst.features)
    assert type(here) is type(policy)
    _plates(here, env, log_here := [], pending, size=7)
    script = f"""
import json, sys
import numpy as np
sys.path.insert(0, {str(REPO)!r})
sys.path.insert(0, {str(Path(__file__).parent)!r})
from screenbai.bandits import load_policy
from test_contract import Streams, _plates
p = load_policy({str(path)!r}, np.load({str(tmp_path / "features.npy")!r}))
env = Streams.__new__(Streams)
env.table, env.used = np.load({str(tmp_path / "table.npy")!r}), np.load({str(tmp_path / "used.npy")!r})
log, pending = [], json.loads(open({str(tmp_path / "pending.json")!r}).read())
from screenbai.streams import results_stdout
with results_stdout() as out:  # the protocol: a stream only we write (highspy 1.16 prints a banner on fd 1)
    _plates(p, env, log, pending, size=7)
    r = p.result()
    print(json.dumps([log, list(r.recommendation), r.n_samples, r.stopped]), file=out)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=tmp_path)
    there = json.loads(out.stdout)
    r = here.result()
    assert there == [log_here, list(r.recommendation), r.n_samples, r.stopped]
    assert log_here  # the continuation did something


def test_load_policy_refuses_other_features_and_other_files(tmp_path):
    policy = _build("glgape")
    path = save_policy(policy, tmp_path / "p.npz")
    other = _LOGIT.features.copy()
    other[3, 1] += 1e-3
    with pytest.raises(ValueError, match="features differ"):
        load_policy(path, other)
    np.savez(tmp_path / "junk.npz", x=np.arange(3))
    with pytest.raises(ValueError, match="not a screenbai-policy file"):
        load_policy(tmp_path / "junk.npz", _LOGIT.features)
    with pytest.raises(ValueError, match="belongs to GLGapE"):
        _build("m-lingape").load_state_dict(policy.state_dict())


def test_glgape_state_after_lps_is_plain_data(tmp_path):
    """The state holds no solver object (the HiGHS model of the ratio rule cannot be pickled)."""
    policy, env = _build("glgape"), _env("glgape")
    _sequential(policy, env, [], limit=40)
    assert policy.design.n_solved > 0

    def plain(v):
        if isinstance(v, dict):
            return all(isinstance(k, str) and plain(x) for k, x in v.items())
        if isinstance(v, list):
            return all(plain(x) for x in v)
        return v is None or isinstance(v, (bool, int, float, str, np.ndarray))

    assert plain(policy.state_dict())


@pytest.mark.slow
@pytest.mark.parametrize("label", sorted(ALL))
def test_pickled_and_deep_copied_policies_continue_exactly(label):
    """Mid-run (for GLGapE after its ratio rule has built its HiGHS model), a pickled copy and a deep
    copy, each with a copy of the outcome streams, ask what the original asks and end as it ends."""
    ref_log = []
    _sequential(_build(label), _env(label), ref_log)
    policy, env = _build(label), _env(label)
    _sequential(policy, env, [], limit=len(ref_log) // 2)  # 0 for a policy that asks once
    if label == "glgape":
        assert policy.design._highs is not None
    copies = [pickle.loads(pickle.dumps(policy)), copy.deepcopy(policy)]
    envs = [copy.deepcopy(env) for _ in copies]
    _sequential(policy, env, log := [])
    assert log, "the run ended before the copies were made"
    for other, other_env in zip(copies, envs):
        _sequential(other, other_env, other_log := [])
        assert other_log == log
        assert _summary(other) == _summary(policy)
        assert other.result().diagnostics == policy.result().diagnostics


@pytest.mark.parametrize("label", ["glgape", "m-lingape", "gse-log", "lucb", "xy-static"])
def test_done_and_result_change_nothing(label):
    policy, env = _build(label), _env(label)
    _sequential(policy, env, [], limit=2)
    before = policy.state_dict()
    for _ in range(3):
        assert not policy.done
        policy.result()
    after = policy.state_dict()
    assert json.dumps(before, default=lambda a: a.tolist()) == json.dumps(after, default=lambda a: a.tolist())


# ---------------------------------------------------------------------- plates
def test_a_plate_never_enters_the_estimate_or_the_stopping_statistic():
    """m-LinGapE and GLGapE: proposing a plate of 96 leaves the estimate, the recorded design and the
    stopping statistic as they were; the plate's wells are spread by the design (not one arm 96 times)."""
    from screenbai.bandits import make_policy

    rng = np.random.default_rng(3)
    X = rng.standard_normal((60, 5))
    p = make_policy("m-lingape", X, delta=0.05, rng=1)
    env = Streams(type("I", (), {"means": X @ rng.standard_normal(5) * 0.2, "K": 60, "reward": "gaussian",
                                 "sigma": 0.5})(), 2)
    _sequential(p, env, [], limit=30)
    mu, P, stat = p.means().copy(), p.state.P.copy(), p.gifa_round()[3]
    plate = p.propose(96)
    assert plate.size == 96 and np.unique(plate).size > 5
    assert np.array_equal(p.means(), mu) and np.array_equal(p.state.P, P) and p.gifa_round()[3] == stat

    g = _build("glgape")
    genv = _env("glgape")
    _sequential(g, genv, [], limit=60)
    assert g._phase == "adaptive"
    theta, P = g.theta.copy(), g.state.P.copy()
    pair = g._pair(g.state)
    plate = g.propose(96)
    assert plate.size == 96 and np.unique(plate).size > 3
    assert np.array_equal(g.theta, theta) and np.array_equal(g.state.P, P) and g._pair(g.state)[:2] == pair[:2]


def test_cancel_returns_arms_to_the_pool():
    p, env = _build("m-lingape"), _env("m-lingape")
    _sequential(p, env, [], limit=3)
    plate = p.propose(6)
    assert p.n_in_flight == 6
    failed = plate[[1, 4]]
    p.cancel(failed)
    assert p.n_in_flight == 4
    with pytest.raises(ValueError, match="in flight"):
        p.tell(failed, [0.0, 0.0])
    again = p.propose(3)
    assert again[:2].tolist() == failed.tolist()  # failed wells come first
    rest = np.concatenate([np.delete(plate, [1, 4]), again])
    p.tell(rest, env.pull(rest))
    assert p.n_in_flight == 0 and p.n.sum() == p.n_samples


def test_gse_stage_over_several_plates_matches_the_sequential_stages():
    """GSE-Log: a stage of 80 tests is handed out as plates of 24 (24, 24, 24, 8), nothing more
    until its outcomes are all in (told out of order, some wells failed and re-proposed), and the
    run ends as the sequential one (binary outcomes: the stage sums are exact)."""
    ref = _build("gse-log")
    _sequential(ref, _env("gse-log"), stages := [])
    assert [len(s) for s in stages] == [80, 80, 80]
    p, env = _build("gse-log"), _env("gse-log")
    order = np.random.default_rng(0)
    for stage in stages:
        plates = [p.propose(24) for _ in range(4)]
        assert [q.size for q in plates] == [24, 24, 24, 8]
        assert p.propose(24).size == 0 and not p.done  # waiting for the stage's outcomes
        wells = np.concatenate(plates)
        assert sorted(wells.tolist()) == sorted(stage)
        failed = wells[:3]
        p.cancel(failed)
        assert p.propose(5).tolist() == failed.tolist()  # re-proposed first, nothing new
        wells = wells[order.permutation(wells.size)]
        for part in np.array_split(wells, 5):
            p.tell(part, env.pull(part))
    assert p.done
    assert _summary(p) == _summary(ref)
    with pytest.raises(RuntimeError, match="finished"):
        p.propose(1)


def test_tell_checks_the_arms_in_flight():
    p = _build("lingape")
    first = p.ask()
    with pytest.raises(ValueError, match="arms asked"):
        p.tell(first[::-1], np.zeros(first.size))  # ask() keeps its strictness
    p.tell(first, np.zeros(first.size))
    with pytest.raises(RuntimeError, match="without arms in flight"):
        p.tell([0], [0.0])
    plate = p.propose(3)
    with pytest.raises(ValueError, match="in flight"):
        p.tell([plate[0]] * 4, [0.0] * 4)
    with pytest.raises(ValueError, match="0..4"):
        p.cancel([7])
    p.tell(plate[::-1], np.zeros(3))  # any order
    assert p.n_in_flight == 0


_QUICK = {  # instances on which the rule fires within a few hundred tests
    "lingape": ("lingape", _LIN, {"S": "oracle", "sigma": 0.5, "delta": 0.1}),
    "m-lingape": ("m-lingape", reda_classic(K=5, m=1, omega=1.0), {"delta": 0.1}),
    "glgape": ("glgape", _LOGIT, {"epsilon": 0.1}),
    "g-allocation": ("g-allocation", soare(d=2, omega=1.0), {}),
    "lucb": ("lucb", reda_classic(K=5, m=1, omega=1.0), {"delta": 0.1, "sigma": 0.3}),
    "lin-tas": ("lin-tas", reda_classic(K=5, m=1, omega=1.0), {"delta": 0.1}),
    "log-tas": ("log-tas", _LOGIT, {"epsilon": 0.1}),
}


@pytest.mark.slow
@pytest.mark.parametrize("label", sorted(_QUICK))
def test_done_follows_every_tell_in_plates(label):
    """With plates of 8, one failed well per plate and half of the outcomes told at a time, the
    stopping rule is evaluated on each tell's outcomes: ``propose`` never discovers a stop itself."""
    name, inst, params = _QUICK[label]
    policy = policy_for_instance(name, inst, rng=np.random.default_rng(0), **params)
    env = Streams(inst, 3, length=20000)
    pending: list[int] = []
    for _ in range(2000):
        plate = policy.propose(8)
        assert not policy.done, "propose discovered the stop"
        pending.extend(plate.tolist())
        policy.cancel(pending[:1])
        pending = pending[1:]
        half, pending = pending[: len(pending) // 2], pending[len(pending) // 2 :]
        policy.tell(half, env.pull(half))
        if policy.done:
            break
    assert policy.done and policy.result().stopped

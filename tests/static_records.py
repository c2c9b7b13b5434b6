"""Seeded records of every [SLM14] static / phased allocation, to check that refactoring changes no result.

``python tests/static_records.py`` (re)writes ``tests/data/static_records.json``; ``test_static_records.py``
recomputes the records and compares them exactly (pulls per arm, recommendation, n_samples, stopped).

Each case runs one algorithm with one parameter set and seed in one mode:

* ``fast``: ``runner.run`` (the policy's vectorised ``run`` when it has one);
* ``sequential``: ask/tell, one test at a time;
* ``plates``: plates of 7 tests told in two parts, the last test of every third plate cancelled (failed well)
  and proposed again;
* ``restore``: ask/tell to half the fast run's length, then the state is written, the allocation cache
  cleared, and a fresh policy restored from the state finishes the run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from screenbai.bandits import policy_for_instance
from screenbai.bandits.core.runner import run as simulate
from screenbai.bandits.sim import generators as instances
from screenbai.bandits.sim.instance import Instance

PATH = Path(__file__).parent / "data" / "static_records.json"
MODES = ("fast", "sequential", "plates", "restore")
SEEDS = (0, 1, 2)


def _random_instance() -> Instance:
    """K = 7 arms in d = 3 (not the Soare shape: several pairs matter), Gaussian noise 1."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((7, 3))
    theta = np.array([3.0, -1.2, 1.8])
    return Instance(X, X @ theta, "gaussian", 1.0, theta)


def instances_used() -> dict[str, Instance]:
    return {"soare2": instances.soare(d=2, omega=0.5), "soare3": instances.soare(d=3, omega=0.4),
            "random7": _random_instance()}


#: (algorithm, parameters, instance): every registered static / phased algorithm and option
CASES: list[tuple[str, dict, str]] = [
    ("g-allocation", {}, "soare2"),
    ("g-allocation", {"confidence": "arms"}, "random7"),
    ("xy-static", {}, "soare3"),
    ("xy-static", {}, "random7"),
    ("xy-static", {"restrict_y": True}, "random7"),
    ("xy-static", {"max_samples": 3000}, "soare3"),
    ("xy-oracle", {}, "soare3"),
    ("xy-oracle", {"stopping": "eq11"}, "soare3"),
    ("xy-oracle", {"confidence": "arms"}, "random7"),
    ("xy-adaptive", {}, "soare2"),
    ("xy-adaptive", {"monotone": True}, "soare3"),
    ("xy-adaptive", {"restrict_y": True, "monotone": True}, "random7"),
    ("xy-adaptive", {"max_samples": 2000}, "soare3"),
    ("xy-fully-adaptive", {}, "soare2"),
    ("xy-fully-adaptive", {"restrict_y": True}, "random7"),
]


def _ask_tell(policy, env, stop_at: int | None = None):
    while not policy.done and (stop_at is None or policy.n_samples < stop_at):
        arms = policy.ask()
        policy.tell(arms, env.pull(arms))
    return policy


def _plates(policy, env):
    plate = 0
    while not policy.done:
        arms = policy.propose(7)
        if not arms.size:
            raise RuntimeError("nothing proposed while no test is in flight")
        plate += 1
        if plate % 3 == 0 and arms.size > 1:
            policy.cancel(arms[-1:])
            arms = arms[:-1]
        half = arms.size // 2
        for part in (arms[:half], arms[half:]):
            if part.size and not policy.done:
                policy.tell(part, env.pull(part))
            elif part.size:
                policy.cancel(part)
        if policy.done and policy.n_in_flight:
            policy.cancel(np.repeat(np.arange(policy.K), policy.in_flight))
    return policy


def run_case(name: str, params: dict, inst: Instance, seed: int, mode: str):
    """The result of one case (a ``Result``)."""
    from screenbai.bandits.linear import static_greedy

    def fresh():
        return policy_for_instance(name, inst, rng=seed, **params)

    def env():
        return inst.environment(np.random.default_rng(1000 + seed))

    if mode == "fast":
        return simulate(fresh(), env())
    if mode == "sequential":
        return _ask_tell(fresh(), env()).result()
    if mode == "plates":
        return _plates(fresh(), env()).result()
    if mode == "restore":
        total = simulate(fresh(), env()).n_samples
        e = env()
        first = _ask_tell(fresh(), e, stop_at=max(1, total // 2))
        state = first.state_dict()
        static_greedy.clear_cache()
        second = fresh()
        second.load_state_dict(state)
        return _ask_tell(second, e).result()
    raise ValueError(f"unknown mode {mode!r}")


def case_key(name: str, params: dict, inst_name: str, seed: int, mode: str) -> str:
    return f"{name} {json.dumps(params, sort_keys=True)} {inst_name} seed={seed} {mode}"


def records(cases=CASES, modes=MODES, seeds=SEEDS, insts: dict[str, Instance] | None = None) -> dict[str, dict]:
    """The records of ``cases`` (on ``insts``, by default this module's instances), as written to the JSON."""
    insts = instances_used() if insts is None else insts
    out = {}
    for name, params, inst_name in cases:
        for seed in seeds:
            for mode in modes:
                r = run_case(name, params, insts[inst_name], seed, mode)
                out[case_key(name, params, inst_name, seed, mode)] = {
                    "pulls": [int(v) for v in r.pulls], "recommendation": [int(a) for a in r.recommendation],
                    "n_samples": int(r.n_samples), "stopped": bool(r.stopped)}
    return out


if __name__ == "__main__":
    recs = records()
    PATH.parent.mkdir(exist_ok=True)
    PATH.write_text(json.dumps(recs, indent=0, sort_keys=True) + "\n")
    print(f"wrote {len(recs)} records to {PATH}", file=sys.stderr)

"""Seeded records of every registered policy that ``static_records.py`` does not cover (the GIFA family,
GLGapE, the block Track-and-Stop rules, RAGE, GSE and the baselines), to check that a refactoring changes no result.

``python tests/policy_records.py`` (re)writes ``tests/data/policy_records.json``; ``test_policy_records.py``
recomputes them and compares exactly (pulls per arm, recommendation, n_samples, stopped). The runs and modes
are ``static_records.run_case``'s (``fast``: the runner; ``plates``: plates of 7 told in two parts with failed
wells). Regenerate the file only with a change that is meant to alter results, and say which in the commit.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import static_records

from screenbai.bandits.core.registry import available
from screenbai.bandits.sim import generators as instances
from screenbai.bandits.sim.instance import Instance

PATH = Path(__file__).parent / "data" / "policy_records.json"
MODES = ("fast", "plates")
SEEDS = (0, 1)
STATIC = {"g-allocation", "xy-static", "xy-oracle", "xy-adaptive", "xy-fully-adaptive"}  # static_records.py


def _logistic() -> Instance:
    """K = 8 Bernoulli arms of a logistic model in d = 2, an easy gap (runs of a few hundred tests)."""
    rng = np.random.default_rng(5)
    X = rng.uniform(-1.0, 1.0, (8, 2))
    theta = np.array([2.5, -1.5])
    means = 1.0 / (1.0 + np.exp(-(X @ theta)))
    return Instance(X, means, "bernoulli", 0.5, theta, link="logistic", name="logistic8")


def _linear() -> Instance:
    """K = 7 arms in d = 3, Gaussian noise 2 (runs of a few hundred tests)."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((7, 3))
    theta = np.array([3.0, -1.2, 1.8])
    return Instance(X, X @ theta, "gaussian", 2.0, theta, name="random7")


def instances_used() -> dict[str, Instance]:
    return {"soare2": instances.soare(d=2, omega=0.5), "random7": _linear(), "logistic8": _logistic()}


#: (algorithm, parameters, instance)
CASES: list[tuple[str, dict, str]] = [
    ("lingape", {}, "soare2"),
    ("lingape", {}, "random7"),
    ("m-lingape", {"m": 2}, "soare2"),
    ("lingifa", {}, "random7"),
    ("lucb", {}, "random7"),
    ("ugape", {}, "random7"),
    ("lin-tas", {}, "soare2"),
    ("lin-tas", {"m": 2}, "soare2"),
    ("glgape", {"epsilon": 0.1}, "logistic8"),
    ("m-glgape", {"m": 2, "epsilon": 0.1}, "logistic8"),
    ("log-tas", {"epsilon": 0.1}, "logistic8"),
    ("rage", {}, "soare2"),
    ("rage", {"m": 2, "epsilon": 0.5}, "random7"),
    ("rage-glm", {"epsilon": 0.1, "width0": 4.0}, "logistic8"),
    ("kl-lucb", {"epsilon": 0.1}, "logistic8"),
    ("kl-lucb", {"m": 2, "epsilon": 0.1}, "logistic8"),
    ("uniform", {"budget": 300}, "random7"),
    ("linucb", {"budget": 300}, "random7"),
    ("fb-lingape", {"budget": 300}, "random7"),
    ("ucb-glm", {"budget": 300}, "logistic8"),
]
CASES += [(name, {"budget": 300}, "random7" if name.startswith("gse-lin") else "logistic8")
          for name in sorted(available()) if name.startswith("gse-")]


def records() -> dict[str, dict]:
    return static_records.records(CASES, MODES, SEEDS, instances_used())


if __name__ == "__main__":
    recs = records()
    PATH.parent.mkdir(exist_ok=True)
    PATH.write_text(json.dumps(recs, indent=0, sort_keys=True) + "\n")
    print(f"wrote {len(recs)} records to {PATH}", file=sys.stderr)

"""Median tests / lower bound of the block Track-and-Stop policies (lin-tas, log-tas) at delta = 0.05.

    python benchmarks/tracking_ratios.py --instances soare reda random1 --reps 100
    python benchmarks/tracking_ratios.py --instances kw2 kw5 kw10 --reps 50
    python benchmarks/tracking_ratios.py --instances cdk2 --reps 10 --results results/cdk2_potency
    python benchmarks/tracking_ratios.py --instances kw2 kw5 --reps 50 --algorithm glgape

Instances: soare (soare(d=2, omega=0.1), sigma 1, best arm), reda (reda_classic(K=4, m=2), top 2),
random0 / random1 / random2 ... (instances.random_linear(K=400, d=20, sigma=0.5, seed): X uniform in [-1, 1],
theta standard normal; benchmarks/lower_bound.py's random_linear is seed 0),
kw2 / kw5 / kw10 (kw_synthetic(K=50, d, seed=0), logistic, epsilon 0.1), cdk2 (the CDK2 potency
arms, IC50 < 100 nM, K = 400, d = 20, logistic,
epsilon 0.1, from a workflow run of config/cdk2_potency.yaml). ``--algorithm`` runs another registered
algorithm of the same model on the logistic instances (e.g. glgape, its default calibration).
LB = T*(theta) log(1/(2.4 delta)) from certainty.complexity. One CSV row per instance (--out) with
runs, errors (and their one-sided 95 % Clopper-Pearson upper bound), capped runs, median tests, LB
and their ratio.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from scipy.stats import beta

from screenbai.bandits import policy_for_instance
from screenbai.bandits.certainty.complexity import lower_bound
from screenbai.bandits.sim.generators import kw_synthetic, random_linear, reda_classic, soare
from screenbai.bandits.sim.instance import Environment, Instance


def _cdk2(results: str) -> Instance:
    from pathlib import Path

    from screenbai.screening import build_instance, ground_truth_arms

    res = Path(results)
    library = pd.read_parquet(res / "library.parquet")
    features = pd.read_parquet(res / "features" / "pca_d20.parquet")
    subset = pd.read_csv(res / "subsets" / "K400.csv")
    arms, fit = ground_truth_arms(library, features, threshold_nM=100.0)
    return build_instance(arms, subset, fit["theta_full"], name="cdk2_potency(K=400,d=20)")


def setting(name: str, results: str) -> tuple[Instance, str, dict, str]:
    """(instance, algorithm, parameters, model)."""
    if name == "soare":
        return soare(d=2, omega=0.1), "lin-tas", {}, "linear"
    if name == "reda":
        return reda_classic(K=4, m=2), "lin-tas", {"m": 2}, "linear"
    if name.startswith("random"):
        return random_linear(K=400, d=20, sigma=0.5, seed=int(name[6:])), "lin-tas", {}, "linear"
    if name.startswith("kw"):
        return kw_synthetic(K=50, d=int(name[2:]), seed=0), "log-tas", {"epsilon": 0.1}, "logistic"
    if name == "cdk2":
        return _cdk2(results), "log-tas", {"epsilon": 0.1}, "logistic"
    raise ValueError(f"unknown instance {name!r}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--instances", nargs="+", default=["soare", "reda", "random1"])
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--delta", type=float, default=0.05)
    ap.add_argument("--max-samples", type=int, default=10**6)
    ap.add_argument("--results", default="results/cdk2_potency")
    ap.add_argument("--algorithm", default=None, help="instead of log-tas on the logistic instances")
    ap.add_argument("--seed", type=int, default=0, help="the runs use seeds seed .. seed + reps - 1")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    rows = []
    for name in args.instances:
        inst, algo, params, model = setting(name, args.results)
        if args.algorithm and model == "logistic":
            algo = args.algorithm
        m = params.get("m", 1)
        eps = params.get("epsilon", 0.0)
        sigma = 0.5 if inst.reward == "bernoulli" else inst.sigma
        LB = lower_bound(inst.features, inst.theta, args.delta, model=model, sigma=sigma, epsilon=eps, m=m)
        order = np.argsort(-inst.means)
        kth = inst.means[order[m - 1]]
        tests, errors, capped = [], 0, 0
        t0 = time.perf_counter()
        for rep in range(args.seed, args.seed + args.reps):
            p = policy_for_instance(algo, inst, rng=rep, delta=args.delta, max_samples=args.max_samples, **params)
            r = p.run(Environment(inst, rng=np.random.default_rng(10_000 + rep)))
            capped += not r.stopped
            errors += bool((inst.means[list(r.recommendation)] < kth - eps - 1e-12).any())
            tests.append(r.n_samples)
        med = float(np.median(tests))
        rows.append({"instance": inst.name, "algorithm": algo, "delta": args.delta, "runs": args.reps,
                     "errors": errors, "error_upper": round(float(beta.ppf(0.95, errors + 1, args.reps - errors)), 4),
                     "capped": capped, "median_tests": med, "lower_bound": round(LB, 1),
                     "ratio": round(med / LB, 2), "s_per_run": round((time.perf_counter() - t0) / args.reps, 2)})
        print(rows[-1], flush=True)
    table = pd.DataFrame(rows)
    print(table.to_string(index=False))
    if args.out:
        table.to_csv(args.out, index=False)


if __name__ == "__main__":
    main()

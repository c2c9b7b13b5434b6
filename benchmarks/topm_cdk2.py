"""Top-m on the CDK2 arms: top-m GLGapE (m-glgape) against m-LinGapE, tests to stop and errors.

Uses the workflow's outputs of the CDK2 study (library, PCA features at d, the K-compound
subset): run `snakemake --cores 2 --configfile config/cdk2_potency.yaml` (or the paper's
config/config.yaml) first.  The cure label is rebuilt here with --threshold-nM (100: the
potency study; 1e6: the paper's), so the arms are exactly the workflow's.

    python benchmarks/topm_cdk2.py --m 5 --K 400 --d 20 --reps 20 --threshold-nM 100

Prints one row per algorithm: runs, runs that hit the cap, tests to stop (median, mean,
10-90 %), the exact-top-m error and the epsilon-error (definitions of
screenbai.screening.score_runs), the declared compounds' median rank by measured IC50, and
the wall time per run.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from screenbai.bandits.core.runner import replicate
from screenbai.report import markdown_table
from screenbai.screening import build_instance, ground_truth_arms, replication_seed, score_runs


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--results", default="results/cdk2_potency", help="workflow results folder of a CDK2 run")
    ap.add_argument("--threshold-nM", type=float, default=100.0, help="cure: IC50 below this (nM)")
    ap.add_argument("--m", type=int, default=5)
    ap.add_argument("--K", type=int, default=400)
    ap.add_argument("--d", type=int, default=20)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--epsilon", type=float, default=0.1)
    ap.add_argument("--delta", type=float, default=0.05)
    ap.add_argument("--max-samples", type=int, default=200_000)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args(argv)

    res = Path(args.results)
    library = pd.read_parquet(res / "library.parquet")
    features = pd.read_parquet(res / "features" / f"pca_d{args.d}.parquet")
    subset = pd.read_csv(res / "subsets" / f"K{args.K}.csv")
    arms, fit = ground_truth_arms(library, features, threshold_nM=args.threshold_nM)
    inst = build_instance(arms, subset, fit["theta_full"], name=f"cdk2_d{args.d}_K{args.K}")
    common = {"m": args.m, "epsilon": args.epsilon, "delta": args.delta, "max_samples": args.max_samples}
    entries = [
        {"label": f"m-glgape (top {args.m})", "algorithm": "m-glgape", "params": {**common, "c_mu": "oracle"}},
        {"label": f"m-lingape (top {args.m}, heuristic threshold)", "algorithm": "m-lingape",
         "params": {**common, "sigma": 0.5, "threshold": "heuristic"}},
    ]
    mu = np.sort(inst.means)[::-1]
    print(f"{len(library)} compounds, {fit['n_cured']} cure (IC50 < {args.threshold_nM:g} nM); "
          f"K = {args.K}, d = {args.d}; top cure rates {np.round(mu[:args.m + 2], 3).tolist()}; "
          f"{int(np.sum(inst.means >= mu[args.m - 1] - args.epsilon))} compounds within epsilon of the "
          f"{args.m}-th best")
    rows = []
    for entry in entries:
        t0 = time.perf_counter()
        rec = replicate(inst, entry["algorithm"], entry["params"], n_reps=args.reps,
                        seed=replication_seed(args.seed, args.d, args.K), n_jobs=1, progress=True)
        wall = time.perf_counter() - t0
        rec = score_runs(rec, inst.means, subset, entry, d=args.d, K=args.K)
        done = rec[rec["stopped"]]
        s = done["samples"].to_numpy(float)
        rows.append({
            "algorithm": entry["label"],
            "runs": len(rec),
            "not_stopped": int((~rec["stopped"]).sum()),
            "median_tests": float(np.median(s)) if s.size else np.nan,
            "mean_tests": float(s.mean()) if s.size else np.nan,
            "q10_tests": float(np.quantile(s, 0.1)) if s.size else np.nan,
            "q90_tests": float(np.quantile(s, 0.9)) if s.size else np.nan,
            "exact_error": float(done["exact_error"].mean()) if len(done) else np.nan,
            "eps_error": float(done["eps_error"].mean()) if len(done) else np.nan,
            "median_declared_IC50_rank": float(rec["declared_rank_median"].median()),
            "s_per_run": wall / len(rec),
        })
    print(markdown_table(pd.DataFrame(rows)))


if __name__ == "__main__":
    main()

"""Does the anytime certificate hold whenever it is read?  Coverage over runs cut at random budgets.

Each run of ``--algorithm`` on ``--instance`` is stopped at a budget drawn log-uniformly in
[``--min-tests``, ``--max-tests``] (the lab that stops for money), and the certificate of its answer
(screenbai/bandits/certainty/certificate.py) is compared with the answer's true gap
mu_(m) - min_{answer} mu_i. The certificate holds with probability 1 - delta at all times at once,
so at most about delta of the runs may miss (true gap above the certified epsilon). Prints runs,
wrong answers (true gap > 0), misses with a one-sided 95 % Clopper-Pearson upper bound on the miss
rate, and the median certified epsilon; ``--out`` writes one row per run.

    python benchmarks/certificate_coverage.py --instance kw_synthetic:K=50,d=2,seed=0 \
        --algorithm glgape --param delta=0.05 --runs 200 --min-tests 20 --max-tests 2000
"""

from __future__ import annotations

import argparse
import json
import time
import warnings

import numpy as np
import pandas as pd
from scipy import stats

from screenbai.bandits.core.runner import run_one
from screenbai.bandits.sim.generators import parse_instance


def _value(text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def coverage(instance, algorithm: str, params: dict, runs: int, lo: int, hi: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    budgets = np.exp(rng.uniform(np.log(lo), np.log(hi), runs)).astype(int)
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for ss, b in zip(np.random.SeedSequence(seed).spawn(runs), budgets):
            rec = run_one(instance, algorithm, {**params, "max_samples": int(b)}, ss)
            rows.append({k: rec[k] for k in ("algorithm", "replication", "samples", "stopped", "recommendation",
                                             "certified_epsilon", "certified_guaranteed", "true_gap")})
    df = pd.DataFrame(rows)
    df.insert(0, "instance", instance.name)
    df["miss"] = df["true_gap"] > df["certified_epsilon"] + 1e-12
    return df


def upper_95(k: int, n: int) -> float:
    """One-sided 95 % Clopper-Pearson upper bound on a rate with k events in n trials."""
    return 1.0 if k >= n else float(stats.beta.ppf(0.95, k + 1, n - k))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--instance", required=True, help='e.g. soare:d=2,omega=0.1 (name:key=value,...)')
    ap.add_argument("--algorithm", required=True)
    ap.add_argument("--param", action="append", default=[], help="key=value (JSON value), repeatable")
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--min-tests", type=int, default=10)
    ap.add_argument("--max-tests", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", help="CSV of one row per run")
    args = ap.parse_args(argv)
    params = {k: _value(v) for k, v in (p.split("=", 1) for p in args.param)}
    t0 = time.perf_counter()
    df = coverage(parse_instance(args.instance), args.algorithm, params, args.runs, args.min_tests,
                  args.max_tests, args.seed)
    misses, n = int(df["miss"].sum()), len(df)
    print(f"{args.algorithm} {params} on {df['instance'].iloc[0]}: {n} runs cut at {args.min_tests} to "
          f"{args.max_tests} tests; wrong answers {int((df['true_gap'] > 0).sum())}; misses {misses} "
          f"(rate upper bound {upper_95(misses, n):.3f}); median certified epsilon "
          f"{df['certified_epsilon'].median():.3g}; guaranteed {bool(df['certified_guaranteed'].all())}; "
          f"{time.perf_counter() - t0:.0f} s")
    if args.out:
        df.to_csv(args.out, index=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

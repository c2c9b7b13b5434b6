"""m-LinGapE's round on the real library: whole runs of the scale study's setting, timed round by round.

    python benchmarks/moses_rounds.py                       # K = 10^6, 2 runs
    python benchmarks/moses_rounds.py --old /tmp/old        # the same runs with older code too, alternately

bench_scale.py times rounds on Gaussian features; which of m-LinGapE's one-pass guesses holds
depends on the features (docs/scale.md), so this script times the study's m-LinGapE runs
(benchmarks/scale_study.py: MOSES PCA features with an intercept, its simulated outcomes and
settings) from the first round to the stop. Each run is a process of its own (one BLAS thread),
with the tree's ``screenbai`` first on the path; it reports the tests, the answer, the median
round, and (code that counts them) the share of rounds in which the update or the greedy rule
read no X. The features come from scale_study's cache (``--features``), built on first use.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]


def worker(args: argparse.Namespace) -> dict:
    sys.path[:0] = [str(args.tree), str(args.tree / "benchmarks")]
    import scale_study as study
    from threadpoolctl import threadpool_limits

    from screenbai.bandits import make_policy

    F = study.library_features(args.store, args.features)
    _, cure = study.ground_truth(F)
    subset = np.sort(np.random.default_rng(args.K).choice(len(F), size=args.K, replace=False))  # as the study
    X = np.column_stack([np.ones(args.K), F[subset]])
    cure = cure[subset]
    rng = np.random.default_rng([args.K, args.run])
    policy = make_policy("m-lingape", X, rng=np.random.default_rng(args.run), **study.ALGORITHMS["m-lingape"])
    times = []
    with threadpool_limits(limits=1):
        while not policy.done:
            t0 = time.perf_counter()
            arms = np.atleast_1d(policy.ask())
            policy.tell(arms, (rng.random(arms.size) < cure[arms]).astype(float))
            times.append(time.perf_counter() - t0)
    gaps = policy.gaps
    once = gaps.products_reused + gaps.guesses_right if hasattr(gaps, "guesses_right") else None
    rounds = len(times) - 1  # the first ask is the spanning-set start
    return {"tests": int(policy.n_samples), "answer": int(policy.result().recommendation[0]),
            "round_ms": 1e3 * float(np.median(times[1:])), "read_once": None if once is None else once / rounds}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--K", type=int, default=1_000_000, help="library size screened")
    ap.add_argument("--runs", type=int, default=2, help="runs (outcome seeds) per tree")
    ap.add_argument("--old", type=Path, default=None, help="a worktree of older code: time it too, alternately")
    ap.add_argument("--store", type=Path, default=Path("/tmp/screenbai_moses_store"), help="fingerprint store")
    ap.add_argument("--features", type=Path, default=Path("/tmp/screenbai_moses_d20.npy"), help="PCA scores cache")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)  # the worker's JSON result file
    ap.add_argument("--tree", type=Path, default=REPO, help=argparse.SUPPRESS)
    ap.add_argument("--run", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        Path(args.result).write_text(json.dumps(worker(args)))  # a file: a dependency may print on stdout
        return 0
    print(f"m-LinGapE on MOSES, K = {args.K:,}; load average {os.getloadavg()[0]:.1f} (other jobs may share the cores)")
    trees = [("new", REPO)] + ([("old", args.old)] if args.old is not None else [])
    for run in range(args.runs):
        for label, tree in trees:
            with tempfile.TemporaryDirectory() as tmp:
                result = Path(tmp) / "result.json"
                cmd = [sys.executable, __file__, "--worker", "--tree", str(tree), "--run", str(run), "--K",
                       str(args.K), "--store", str(args.store), "--features", str(args.features),
                       "--result", str(result)]
                out = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(tree)})
                if out.returncode != 0:
                    print(f"{label} run {run}: error: {out.stderr.strip().splitlines()[-1]}")
                    continue
                r = json.loads(result.read_text())
            once = "" if r["read_once"] is None else f", X read once in {100 * r['read_once']:.0f}% of rounds"
            print(f"{label} run {run}: {r['tests']} tests, answer {r['answer']}, "
                  f"median round {r['round_ms']:.1f} ms{once}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

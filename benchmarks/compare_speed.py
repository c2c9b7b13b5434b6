"""Per-round cost of two commits, measured in one run (for "did this refactor make it slower?").

    python benchmarks/compare_speed.py REV_BEFORE REV_AFTER [--reps 2]

Both commits' ``screenbai`` and ``benchmarks`` are extracted (git archive) to a temporary
directory; each measurement pass runs in its own process, alternating the two commits, and uses
CPU time (``time.process_time``) rather than wall time, so that other jobs sharing the cores
disturb the comparison less.  The configurations are those of ``bench_speed.py`` at d = 20 and
K = 100 / 400 (GSE: one whole run, K = 100, d = 10); the table gives the best of the passes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

# one measurement pass, run by a child process with the commit's tree first on sys.path; it writes its
# rows to the file named by its second argument, never to stdout (a dependency may print there: highspy 1.16
# prints a banner when a solver is built)
_PASS = r"""
import json, sys, time, types
sys.path[:0] = [sys.argv[1], sys.argv[1] + "/benchmarks"]
from threadpoolctl import threadpool_limits
import bench_speed as b
b.time = types.SimpleNamespace(perf_counter=time.process_time)
rows = []
with threadpool_limits(limits=1):
    for name, (params, model) in b.FIXED_CONFIDENCE.items():
        for K, d in [(100, 20), (400, 20)]:
            if K > b.MAX_K.get(name, K):
                continue
            rounds = 200 if name in ("lingifa", "xy-static", "glgape", "ucb-glm") else 1000
            rows.append([name, K, d, min(b.per_round_us(name, params, model, K, d, rounds) for _ in range(3))])
    for name, (params, model) in b.FIXED_BUDGET.items():
        rows.append([name, 100, 10, 1e6 * b.whole_run_s(name, params, model, 100, 10, reps=3)])
with open(sys.argv[2], "w") as fh:
    json.dump(rows, fh)
"""


def _extract(rev: str, into: Path) -> Path:
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "screenbai", "benchmarks"],
                             check=True, capture_output=True).stdout
    tarfile.open(fileobj=BytesIO(archive)).extractall(into, filter="data")
    return into


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("before", help="the reference commit")
    ap.add_argument("after", help="the commit to compare with it")
    ap.add_argument("--reps", type=int, default=2, help="measurement passes per commit (alternating)")
    args = ap.parse_args(argv)
    best: dict[str, dict[tuple, float]] = {args.before: {}, args.after: {}}
    with tempfile.TemporaryDirectory() as tmp:
        trees = {rev: _extract(rev, Path(tmp) / f"tree{i}") for i, rev in enumerate((args.before, args.after))}
        for rep in range(args.reps):
            for rev, tree in trees.items():
                rows = Path(tmp) / "rows.json"
                subprocess.run([sys.executable, "-c", _PASS, str(tree), str(rows)], check=True, capture_output=True,
                               text=True, env={**os.environ, "PYTHONPATH": str(tree)})
                for name, K, d, us in json.loads(rows.read_text()):
                    key = (name, K, d)
                    best[rev][key] = min(us, best[rev].get(key, np.inf))
                print(f"pass {rep + 1}/{args.reps} of {rev} done", file=sys.stderr, flush=True)
    ratios = []
    print(f"| algorithm | K | d | {args.before} (us) | {args.after} (us) | after / before |")
    print("|---|---|---|---|---|---|")
    for key, before in best[args.before].items():
        after = best[args.after].get(key)
        if after is None:
            continue
        ratios.append(after / before)
        print(f"| {key[0]} | {key[1]} | {key[2]} | {before:.1f} | {after:.1f} | {after / before:.2f} |")
    print(f"\ngeometric mean of the ratios: {np.exp(np.mean(np.log(ratios))):.3f} ({len(ratios)} configurations)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

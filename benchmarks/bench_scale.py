"""Per-round cost at library scale (K up to 10^6, d = 20), against one pass over the features.

    python benchmarks/bench_scale.py                          # K = 10^4, 10^5, 10^6: m-LinGapE, GLGapE
    python benchmarks/bench_scale.py --K 400 --old /tmp/old   # before/after on the same K, old code in /tmp/old
                                                              # (git worktree add /tmp/old <commit>)
    python benchmarks/bench_scale.py --rebuild --K 1000000    # the estimators' periodic exact rebuild alone

Every measurement runs in its own process (``--worker``), so each reports its own peak memory
(ru_maxrss). In the same process it times one pass over the feature matrix (``X @ v``, the
median of 7) and then ``--rounds`` rounds of ask / pull / tell once ``--after`` tests are recorded
(the initial phase and the rounds up to there are not timed), each followed by one more pass.
Times are CPU time of the process (one BLAS thread: less inflated than wall-clock time by other jobs
on a shared machine). "round/pass" is the median over the rounds of the round's time over the
pass timed right after it, with its quartiles; "mean" is the mean round over the mean pass: the
amortised cost, which the median hides when work comes in bursts (GLGapE's likelihood-ratio
stopping test runs after every 1 % more tests; both estimators rebuild P exactly every
``refresh_every`` tests). Each
configuration is measured ``--repeats`` times (with ``--old``, alternating the two trees), and the
summary gives the median and range over these measurements. For m-LinGapE each measurement also
gives the share of the timed rounds in which the update, or the greedy rule, read no X (its two
guesses, docs/scale.md). Nothing can stop: the instance has
two arms sharing the best mean and epsilon is 0 (GLGapE: 1e-9). Features are seeded Gaussian
rows scaled to norm about 1; rewards are linear with Gaussian noise (m-LinGapE) or Bernoulli
with logistic means (GLGapE).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]

ALGORITHMS = {
    # name -> (registered name, parameters, reward model)
    "m-lingape": ("m-lingape", {"m": 1, "epsilon": 0.0, "delta": 0.05, "selection": "greedy"}, "linear"),
    "glgape": ("glgape", {"epsilon": 1e-9, "delta": 0.05, "c_mu": 0.05}, "logistic"),
}


def instance(K: int, d: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((K, d)) / np.sqrt(d)
    theta = rng.standard_normal(d)
    theta /= np.linalg.norm(theta)
    mu = X @ theta
    X[1] = X[int(np.argmax(mu))]  # a twin of the best arm: the stopping rule cannot fire
    return X, theta


def rebuild_worker(args: argparse.Namespace) -> dict:
    """The periodic exact rebuild of P (``refresh``, every ``refresh_every`` tests) of m-LinGapE's
    estimator, with counts on ``--after`` random arms, against one pass X @ v timed right after it
    (3 times; the rounds' table leaves it out when no rebuild falls within the timed rounds)."""
    from threadpoolctl import threadpool_limits

    from screenbai.bandits.numerics.estimators import TrackedRidgeState

    X, _ = instance(args.K, args.d)
    rng = np.random.default_rng(2)
    v = rng.standard_normal(args.d)
    ratios = []
    with threadpool_limits(limits=1):
        state = TrackedRidgeState(X, 1.0)
        arms = rng.integers(args.K, size=args.after)
        np.add.at(state.counts, arms, 1.0)
        state.b += rng.standard_normal(arms.size) @ X[arms]
        for _ in range(3):
            t0 = time.process_time()
            state.refresh()
            t1 = time.process_time()
            X @ v
            ratios.append((t1 - t0) / (time.process_time() - t1))
    return {"algorithm": "rebuild", "K": args.K, "d": args.d, "rebuild_passes": ratios}


def worker(args: argparse.Namespace) -> dict:
    from threadpoolctl import threadpool_limits

    from screenbai.bandits import make_policy

    name, params, model = ALGORITHMS[args.algorithm]
    params = {**params, **json.loads(args.params)}
    X, theta = instance(args.K, args.d)
    rng = np.random.default_rng(1)
    with threadpool_limits(limits=1):
        v = rng.standard_normal(args.d)
        times = []
        for _ in range(7):
            t0 = time.process_time()
            X @ v
            times.append(time.process_time() - t0)
        matvec = float(np.median(times))
        clock = time.process_time

        def pull(arms: np.ndarray) -> np.ndarray:
            z = X[arms] @ theta
            if model == "linear":
                return z + 0.5 * rng.standard_normal(arms.size)
            return (rng.random(arms.size) < 1.0 / (1.0 + np.exp(-3.0 * z))).astype(float)

        t0 = time.perf_counter()
        policy = make_policy(name, X, **params)
        build = time.perf_counter() - t0
        t0 = time.perf_counter()
        init_pulls = 0
        # the initial phase: until a round asks for a single arm
        while True:
            arms = np.atleast_1d(policy.ask())
            policy.tell(arms, pull(arms))
            init_pulls += arms.size
            if arms.size == 1 and init_pulls > 2 * args.d + 2:
                break
        init = time.perf_counter() - t0
        while policy.n_samples < args.after:  # untimed, up to the sample count the rounds are timed at
            arms = np.atleast_1d(policy.ask())
            policy.tell(arms, pull(arms))
        timed_from = int(policy.n_samples)
        rounds, passes = [], []
        gaps = getattr(policy, "gaps", None)  # m-LinGapE: rounds whose update or greedy rule read no X
        gaps = gaps if hasattr(gaps, "guesses_right") else None  # (older code: not counted)
        # (code before the greedy rule kept c's row: its greedy rule read no X only on a right guess)
        counts = ("products_reused", "rows_reused" if hasattr(gaps, "rows_reused") else "guesses_right")
        before = [getattr(gaps, c) for c in counts] if gaps is not None else None
        for _ in range(args.rounds):
            t0 = clock()
            arms = np.atleast_1d(policy.ask())
            policy.tell(arms, pull(arms))
            t1 = clock()
            X @ v  # a pass right after each round: the ratio sees the same load as the round
            rounds.append(t1 - t0)
            passes.append(clock() - t1)
    ratios = np.array(rounds) / np.array(passes)
    once = None if before is None else [getattr(gaps, c) - b for c, b in zip(counts, before)]
    return {"algorithm": args.algorithm, "K": args.K, "d": args.d, "matvec_s": matvec,
            "round_s": float(np.median(rounds)), "ratio": float(np.median(ratios)),
            "mean_round_s": float(np.mean(rounds)), "mean_ratio": float(np.mean(rounds) / np.mean(passes)),
            "timed_from": timed_from,
            "ratio_q25": float(np.quantile(ratios, 0.25)), "ratio_q75": float(np.quantile(ratios, 0.75)),
            "build_s": build, "init_s": init, "init_pulls": init_pulls,
            "read_once": None if once is None else [n / args.rounds for n in once],
            "peak_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20}


def run_worker(tree: Path, algorithm: str, K: int, d: int, rounds: int, after: int, params: dict,
               rebuild: bool = False) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    with tempfile.TemporaryDirectory() as tmp:
        result = Path(tmp) / "result.json"
        cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", "--algorithm", algorithm, "--K", str(K),
               "--d", str(d), "--rounds", str(rounds), "--after", str(after), "--params", json.dumps(params),
               "--result", str(result)] + (["--rebuild"] if rebuild else [])
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=tree)
        if out.returncode != 0:
            return {"algorithm": algorithm, "K": K, "d": d, "error": out.stderr.strip().splitlines()[-1]}
        return json.loads(result.read_text())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--K", type=int, nargs="+", default=[10_000, 100_000, 1_000_000], help="numbers of arms")
    ap.add_argument("--d", type=int, default=20, help="feature dimension")
    ap.add_argument("--rounds", type=int, default=30, help="timed rounds per measurement")
    ap.add_argument("--after", type=int, default=2000, help="tests recorded before the timed rounds")
    ap.add_argument("--repeats", type=int, default=3, help="measurements (processes) per algorithm, K and tree")
    ap.add_argument("--algorithms", nargs="+", default=list(ALGORITHMS), choices=list(ALGORITHMS))
    ap.add_argument("--params", default="{}", help="extra parameters (JSON) for every algorithm")
    ap.add_argument("--old", type=Path, default=None, help="a worktree of older code: time it too, alternately")
    ap.add_argument("--old-params", default="{}", help="extra parameters (JSON) for the old code")
    ap.add_argument("--write", type=Path, default=None,
                    help="also write the summary table between the bench_scale markers of this file (docs/speed.md)")
    ap.add_argument("--rebuild", action="store_true",
                    help="time only the estimators' periodic exact rebuild of P, in passes X @ v")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)  # the worker's JSON result file
    ap.add_argument("--algorithm", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        args.K = args.K[0]
        work = rebuild_worker if args.rebuild else worker
        Path(args.result).write_text(json.dumps(work(args)))  # a file: a dependency may print on stdout
        return 0
    if args.rebuild:
        trees = [("new", REPO)] + ([("old", args.old)] if args.old is not None else [])
        print(f"exact rebuild of P after {args.after} tests, d = {args.d}, one BLAS thread, CPU time, load average "
              f"{os.getloadavg()[0]:.1f}: rebuild / one pass X @ v (3 rebuilds)")
        for K in args.K:
            for label, tree in trees:
                r = run_worker(tree, "rebuild", K, args.d, 0, args.after, {}, rebuild=True)
                print(f"{label:5s} K = {K:>9,}: " + (r["error"] if "error" in r else
                                                     " ".join(f"{x:.1f}" for x in r["rebuild_passes"])))
        return 0
    load_before = os.getloadavg()[0]
    print(f"screenbai scale benchmark: Python {platform.python_version()}, {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.1f} (other jobs may share the cores); one BLAS thread, CPU time; {args.rounds} rounds "
          f"after {args.after} tests per measurement, {args.repeats} measurements (processes) each")
    head = f"{'tree':5s} {'algorithm':10s} {'K':>9s} {'pass X@v':>10s} {'round':>10s} {'round/pass':>10s} " \
           f"{'(q25-q75)':>11s} {'mean':>6s} {'init pulls':>10s} {'init':>8s} {'peak RSS':>9s}"
    print(head)
    rows = []

    def hit_rate(r: dict) -> str:
        once = r.get("read_once")
        return "" if once is None else (f"  X read once: update {100 * once[0]:.0f}%, greedy "
                                        f"{100 * once[1]:.0f}% of rounds")

    trees = [("new", REPO, json.loads(args.params))]
    if args.old is not None:
        trees.append(("old", args.old, json.loads(args.old_params)))
    for algorithm in args.algorithms:
        for K in args.K:
            for _ in range(args.repeats):
                for label, tree, params in trees:  # alternating: both trees see the same load
                    r = run_worker(tree, algorithm, K, args.d, args.rounds, args.after, params)
                    r["tree"] = label
                    rows.append(r)
                    if "error" in r:
                        print(f"{label:5s} {algorithm:10s} {K:9d}  error: {r['error']}")
                        continue
                    print(f"{label:5s} {algorithm:10s} {K:9d} {1e3 * r['matvec_s']:8.3f}ms {1e3 * r['round_s']:8.3f}ms "
                          f"{r['ratio']:10.2f} {r['ratio_q25']:5.2f}-{r['ratio_q75']:<5.2f} {r['mean_ratio']:6.2f} "
                          f"{r['init_pulls']:10d} "
                          f"{r['init_s']:7.2f}s {r['peak_rss_gib']:7.2f}GiB{hit_rate(r)}", flush=True)
    print("\nacross measurements: median (min-max)")
    ok = [r for r in rows if "error" not in r]

    def spread(values) -> str:
        return f"{np.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"

    for algorithm in dict.fromkeys(args.algorithms):
        for K in args.K:
            for label, _, _ in trees:
                sel = [r for r in ok if (r["algorithm"], r["K"], r["tree"]) == (algorithm, K, label)]
                if sel:
                    print(f"{label:5s} {algorithm:10s} K = {K:>9,}: round/pass median "
                          f"{spread([r['ratio'] for r in sel])}, mean {spread([r['mean_ratio'] for r in sel])}, "
                          f"round {spread([1e3 * r['round_s'] for r in sel])} ms, "
                          f"peak RSS {max(r['peak_rss_gib'] for r in sel):.2f} GiB")
            new = [r for r in ok if (r["algorithm"], r["K"], r["tree"]) == (algorithm, K, "new")]
            old = [r for r in ok if (r["algorithm"], r["K"], r["tree"]) == (algorithm, K, "old")]
            if new and len(new) == len(old):  # measured in alternation: pair them
                print(f"      {algorithm}, K = {K}: new/old round cost "
                      f"{spread([a['round_s'] / b['round_s'] for a, b in zip(new, old)])}")
        new = [r for r in ok if r["algorithm"] == algorithm and r["tree"] == "new"]
        Ks = sorted({r["K"] for r in new})
        if len(Ks) >= 2:
            lo = [r for r in new if r["K"] == Ks[0]]
            hi = [r for r in new if r["K"] == Ks[-1]]
            round_growth = np.median([r["round_s"] for r in hi]) / np.median([r["round_s"] for r in lo])
            pass_growth = np.median([r["matvec_s"] for r in hi]) / np.median([r["matvec_s"] for r in lo])
            print(f"{algorithm}: K = {Ks[0]:,} -> {Ks[-1]:,} (x{Ks[-1] // Ks[0]}): round cost x{round_growth:.0f}, "
                  f"one pass X@v x{pass_growth:.0f} (medians over the measurements)")
    if args.write is not None:
        from screenbai.report.tables import write_generated_block

        write_generated_block(args.write, "bench_scale", summary_table(args, ok, load_before))
        print(f"wrote the table into {args.write}")
    return 0


#: round / pass at K = 10^6 that each algorithm's round must stay within, median and mean (docs/scale.md)
TARGETS = {"m-lingape": 3.0, "glgape": 6.0}
LABELS = {"m-lingape": "m-LinGapE (greedy, m = 1)", "glgape": "GLGapE (greedy, auto; likelihood-ratio test)"}


def summary_table(args: argparse.Namespace, rows: list[dict], load_before: float) -> str:
    """The markdown block for docs/speed.md: per algorithm and K, the medians over the measurements
    (range in brackets) of round / pass over the timed rounds, median and mean, and the target."""
    command = "python benchmarks/bench_scale.py " + " ".join(
        f"--{k} {' '.join(map(str, v)) if isinstance(v, list) else v}" for k, v in
        (("algorithms", args.algorithms), ("K", args.K), ("rounds", args.rounds), ("after", args.after),
         ("repeats", args.repeats))) + " --write docs/speed.md"
    lines = [f"Written by `{command}`. Machine: {os.cpu_count()} cores, load average {load_before:.1f} at the start "
             f"and {os.getloadavg()[0]:.1f} at the end (other jobs share the cores); d = {args.d}; CPU time of one "
             "process per measurement with one BLAS thread. Round / pass: the round's time over one pass `X @ v` "
             f"timed right after it, over {args.rounds} rounds after {args.after} tests; **median** over the rounds, "
             "and "
             "**mean** (the mean round over the mean pass: the amortised cost, periodic work included); medians over "
             f"the {args.repeats} measurements, their range in brackets.", "",
             "| algorithm | K | one pass X@v | round (median) | round / pass, median | round / pass, mean "
             "| target at K = 10⁶ | peak RSS |", "|---|---|---|---|---|---|---|---|"]

    def spread(values: list[float]) -> str:
        return f"{np.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"

    for algorithm in args.algorithms:
        for K in args.K:
            sel = [r for r in rows if (r["algorithm"], r["K"], r["tree"]) == (algorithm, K, "new")]
            if not sel:
                continue
            target = f"<= {TARGETS[algorithm]:g}" if K == 1_000_000 and algorithm in TARGETS else ""
            pass_ms, round_ms = (1e3 * np.median([r[key] for r in sel]) for key in ("matvec_s", "round_s"))
            lines.append(f"| {LABELS.get(algorithm, algorithm)} | {K:,} | {pass_ms:.2f} ms "
                         f"| {round_ms:.2f} ms | {spread([r['ratio'] for r in sel])} "
                         f"| {spread([r['mean_ratio'] for r in sel])} | {target} "
                         f"| {max(r['peak_rss_gib'] for r in sel):.2f} GiB |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())

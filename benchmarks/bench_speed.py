"""Per-round cost of each algorithm (microseconds per round), and how it grows with K and d.

    python benchmarks/bench_speed.py            # full grid, writes its block of docs/speed.md
    python benchmarks/bench_speed.py --quick    # a smaller grid

The tables go between the ``bench_speed`` markers of docs/speed.md (``write_generated_block``): the
prose around them is a person's and stays as it is; the figures cannot go stale without a rerun.
Times are CPU seconds of this process (one BLAS thread), so that other jobs on a shared machine
inflate them less than wall-clock time would.

Each fixed-confidence algorithm runs on a random instance for a fixed number of rounds (its
stopping rule cannot fire: two arms share the best mean and epsilon = 0), ask/tell overhead and
reward draws included; initialisation rounds are excluded by timing a second window of rounds.
Fixed-budget algorithms (GSE) are timed per whole run.  The "growth" columns divide the cost at
the largest K (or d) by the cost at the smallest, next to the K*d ratio: a per-round cost that
grew faster than K*d would show a growth above that ratio.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import expit
from threadpoolctl import threadpool_limits

from screenbai.bandits import Instance, make_policy, policy_for_instance
from screenbai.report import write_generated_block

ROOT = Path(__file__).resolve().parents[1]

# name -> (parameters, model)
FIXED_CONFIDENCE = {
    "lingape": ({"epsilon": 0.0, "delta": 0.05}, "linear"),
    "m-lingape": ({"m": 1, "epsilon": 0.0, "delta": 0.05, "selection": "greedy"}, "linear"),
    "m-lingape(m=3)": ({"m": 3, "epsilon": 0.0, "delta": 0.05, "selection": "greedy"}, "linear"),
    "lingifa": ({"m": 1, "epsilon": 0.0, "delta": 0.05}, "linear"),
    "lucb": ({"m": 1, "epsilon": 0.0, "delta": 0.05}, "linear"),
    "ugape": ({"m": 1, "epsilon": 0.0, "delta": 0.05}, "linear"),
    "kl-lucb": ({"m": 1, "epsilon": 0.0, "delta": 0.05}, "logistic"),  # 0/1 outcomes, features ignored
    "glgape": ({"epsilon": 1e-9, "delta": 0.05, "c_mu": 0.05}, "logistic"),
    "linucb": ({"budget": None}, "linear"),
    "ucb-glm": ({"budget": None}, "logistic"),
    "g-allocation": ({}, "linear"),
    "xy-static": ({}, "linear"),
    "xy-oracle": ({"theta": "oracle"}, "linear"),
    "xy-adaptive": ({}, "linear"),
}

# O(K^2)-per-round or O(K |Y|)-memory algorithms: timed up to this K only
TWIN_GAP = {"xy-oracle": 1e-4}
MAX_K = {"xy-static": 400, "xy-oracle": 400, "xy-adaptive": 100, "lingifa": 1000}
FIXED_BUDGET = {
    "gse-lin": ({"budget": 4000}, "linear"),
    "gse-log": ({"budget": 4000}, "logistic"),
}


def random_instance(K: int, d: int, model: str, seed: int = 0, gap: float = 0.0) -> Instance:
    """Random arms where the best mean is shared by two arms with different features.

    With epsilon = 0 (or tiny) a fixed-confidence rule then cannot separate the two (spec P13),
    so every algorithm runs through the timing window instead of stopping early on an easy draw.
    ``gap`` > 0 lowers the twin's mean by that much (XY-oracle needs a unique best arm).
    """
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(K, d)) / np.sqrt(d)
    theta = rng.standard_normal(d)
    best = int(np.argmax(X @ theta))
    v = rng.standard_normal(d)
    v -= (v @ theta) / (theta @ theta) * theta  # orthogonal to theta: same mean, other features
    other = (best + 1) % K
    X[other] = X[best] + 0.5 * np.linalg.norm(X[best]) * v / np.linalg.norm(v) - gap * theta / (theta @ theta)
    if model == "logistic":
        return Instance(X, expit(X @ theta), "bernoulli", 0.5, theta, link="logistic")
    return Instance(X, X @ theta, "gaussian", 0.5, theta)


def _drive(policy, env, rounds: int) -> int:
    done = 0
    while done < rounds and not policy.done:
        arms = policy.ask()
        policy.tell(arms, env.pull(arms))
        done += 1
    return done


def per_round_us(name: str, params: dict, model: str, K: int, d: int, rounds: int) -> float:
    algo = name.split("(")[0]
    inst = random_instance(K, d, model, gap=TWIN_GAP.get(algo, 0.0))
    params = dict(params)
    if "budget" in params and params["budget"] is None:
        params["budget"] = 10 * rounds + 10 * K
    policy = policy_for_instance(algo, inst, rng=np.random.default_rng(1), max_samples=10**7, **params)
    env = inst.environment(np.random.default_rng(2))
    _drive(policy, env, K + 3 * d)  # initialisation and warm-up, not timed
    t0 = time.process_time()
    done = _drive(policy, env, rounds)
    elapsed = time.process_time() - t0
    if done == 0:
        return float("nan")
    return 1e6 * elapsed / done


def whole_run_s(name: str, params: dict, model: str, K: int, d: int, reps: int = 5) -> float:
    inst = random_instance(K, d, model)
    times = []
    for r in range(reps):
        t0 = time.process_time()
        policy = make_policy(name, inst.features, rng=np.random.default_rng(r), **params)
        env = inst.environment(np.random.default_rng(100 + r))
        _drive(policy, env, 10**9)
        times.append(time.process_time() - t0)
    return float(np.median(times))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--only", nargs="+", default=None, metavar="NAME", help="time only these algorithms")
    ap.add_argument("--out", default=str(ROOT / "docs" / "speed.md"))
    args = ap.parse_args(argv)
    with threadpool_limits(limits=1):  # small matrices: BLAS threads only add overhead
        return _run(args)


def _run(args) -> int:
    Ks = [10, 100, 400] if args.quick else [10, 100, 400, 1000]
    ds = [5, 20] if args.quick else [5, 20, 50]
    rounds = args.rounds or (300 if args.quick else 1000)
    load_before = os.getloadavg()[0]

    from screenbai.bandits.core.registry import available

    registered = available()
    rows = []
    wanted = set(args.only) if args.only else None
    for name, (params, model) in FIXED_CONFIDENCE.items():
        if name.split("(")[0] not in registered or (wanted and name.split("(")[0] not in wanted):
            continue
        for K in Ks:
            for d in ds:
                if d >= K or K > MAX_K.get(name, K):
                    continue
                us = per_round_us(name, params, model, K, d, rounds)
                rows.append({"algorithm": name, "K": K, "d": d, "us_per_round": us})
                print(f"{name:16s} K={K:5d} d={d:3d}  {us:9.1f} us/round", flush=True)
    table = pd.DataFrame(rows)
    fb_rows = []
    for name, (params, model) in FIXED_BUDGET.items():
        if name not in registered or (wanted and name not in wanted):
            continue
        for K in [100, 400, 1000]:
            for d in [10, 20, 50]:
                s = whole_run_s(name, params, model, K, d)
                fb_rows.append({"algorithm": name, "K": K, "d": d, "budget": params["budget"], "seconds_per_run": s})
                print(f"{name:16s} K={K:5d} d={d:3d}  {s:8.4f} s/run", flush=True)
    fb = pd.DataFrame(fb_rows)

    command = "python benchmarks/bench_speed.py" + (" --quick" if args.quick else "")
    lines = [f"Written by `{command}` ({rounds} rounds per cell). Machine: {os.cpu_count()} cores, load average "
             f"{load_before:.1f} at the start and {os.getloadavg()[0]:.1f} at the end (other jobs share the cores); "
             "CPU time of one process with one BLAS thread; ask/tell overhead and reward draws included.", ""]
    if len(table):
        wide = table.pivot_table(index="algorithm", columns=["K", "d"], values="us_per_round", sort=False)
        lines += ["## Fixed confidence: microseconds per round", "", _markdown(wide.round(1)), ""]
        growth = []
        for name, grp in table.groupby("algorithm", sort=False):
            g = grp.set_index(["K", "d"])["us_per_round"]
            dmid = 20 if 20 in ds else ds[-1]
            kk = [k for k in Ks if (k, dmid) in g.index]
            kd = 400 if any((400, x) in g.index for x in ds) else max(k for k, _ in g.index)
            dd = [x for x in ds if (kd, x) in g.index]
            growth.append({
                "algorithm": name,
                "K from": kk[0], "K to": kk[-1], "d": dmid,
                "cost ratio (K)": round(g[(kk[-1], dmid)] / g[(kk[0], dmid)], 2),
                "K ratio": kk[-1] / kk[0],
                "at K": kd, "d from": dd[0], "d to": dd[-1],
                "cost ratio (d)": round(g[(kd, dd[-1])] / g[(kd, dd[0])], 2),
                "d ratio": dd[-1] / dd[0],
            })
        growth_table = _markdown(pd.DataFrame(growth).set_index("algorithm"))
        lines += ["## Growth (cost ratio vs the K or d ratio)", "", growth_table, ""]
    if len(fb):
        fb_table = _markdown(fb.set_index("algorithm").round(4))
        lines += ["## Fixed budget: seconds per whole run (median of 5)", "", fb_table, ""]
    lines += ["## Targets (K = 400, d = 20)", "", "| what | measured | target |", "|---|---|---|"]
    def _at(name):
        row = table[(table.algorithm == name) & (table.K == 400) & (table.d == 20)] if len(table) else table
        return float(row.us_per_round.iloc[0]) if len(row) else float("nan")
    lines.append(f"| m-LinGapE (greedy, m = 1) round | {_at('m-lingape'):.1f} us | <= 50 us |")
    lines.append(f"| GLGapE round (ratio rule, LPs included) | {_at('glgape'):.1f} us | <= 300 us |")
    if len(fb):
        gse = fb[(fb.algorithm == "gse-log") & (fb.K == 400) & (fb.d == 20)]
        if len(gse):
            lines.append(f"| GSE-Log whole run, budget 4000 | {float(gse.seconds_per_run.iloc[0]):.3f} s | < 0.2 s |")
    write_generated_block(args.out, "bench_speed", "\n".join(lines))
    print(f"written the bench_speed block of {args.out}")
    return 0


def _markdown(df: pd.DataFrame) -> str:
    cols = [str(c) for c in df.columns]
    idx = df.index.name or ""
    out = ["| " + " | ".join([str(idx)] + cols) + " |", "|" + "---|" * (len(cols) + 1)]
    for key, row in df.iterrows():
        out.append("| " + " | ".join([str(key)] + [f"{v:g}" if isinstance(v, float) else str(v) for v in row]) + " |")
    return "\n".join(out)


if __name__ == "__main__":
    raise SystemExit(main())

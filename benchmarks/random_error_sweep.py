"""Error rates of the guaranteed fixed-confidence settings on random instances near the decision boundary.

The papers' instances (benchmarks/error_rates.py) are few and known; this sweep draws seeded random
ones that nobody tuned for: K = 3..12 arms in d = 2..5 dimensions, the m-th best arm and the
runner-up placed near the boundary of an (epsilon, m)-correct answer, and runs every guaranteed
default on each, at a large delta so that runs are cheap.

* linear-Gaussian, sigma in {0.5, 1}: lin-tas, rage, m-lingape, lingifa and lingape (threshold
  'theoretical' / Abbasi-Yadkori with S = ||theta*||, the true norm: their guarantee assumes
  S >= ||theta*||), lucb and ugape (lucb1; they ignore the features), xy-adaptive and g-allocation
  (exact best arm, m = 1, epsilon = 0 only);
* logistic with 0/1 outcomes, means in (0.02, 0.98) with near-saturated arms: log-tas, rage-glm,
  glgape and m-glgape (calibration 'likelihood-ratio'), kl-lucb (no model of the features).

Each (family, m, epsilon) of m in {1, 2}, epsilon in {0, 0.05, 0.1} gets ``--per-combo`` instances.
The means are chosen first (the m-th best at the boundary, the runner-up r * epsilon below it, r in
[0.5, 2] with half the draws in (1, 1.3]: just outside epsilon; at epsilon = 0 a small gap), the
other arms kept away from the boundary; the features are random, U[-1, 1]^d, moved along theta* so
that x_k^T theta* is the chosen mean (or logit).  Runs are judged by
``screenbai.bandits.sim.instance.epsilon_good`` at the cell's (epsilon, m), and the runner's own
``correct`` is checked against it.

A cell is a **violation** when the one-sided 95 % Clopper-Pearson LOWER bound on its error rate
exceeds delta, **suspicious** when the observed rate does.  Capped runs (no stop before
``max_samples``) are not errors; they are counted apart and left out of the rate.

    nice -n 10 python benchmarks/random_error_sweep.py --out docs/random_error_sweep_records.csv  # 40 min
    python benchmarks/random_error_sweep.py --only lin-tas rage --runs 50 --out /tmp/x.csv
    python benchmarks/random_error_sweep.py --list                                   # the instances
    python benchmarks/random_error_sweep.py --from-records /tmp/sweep.csv            # the summary only

One process, one core (``replicate(..., n_jobs=1)``); each cell is appended to ``--out`` as it ends.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import expit, logit
from scipy.stats import beta

from screenbai.bandits import replicate
from screenbai.bandits.core.params import without_guarantee
from screenbai.bandits.core.registry import get
from screenbai.bandits.sim.instance import Instance, epsilon_good

EPSILONS = (0.0, 0.05, 0.1)
MS = (1, 2)

#: algorithm -> (settings, takes m, takes epsilon, fraction of --runs: the costly ones run fewer, at least 20)
LINEAR = {
    "lin-tas": ({}, True, True, 1.0),
    "rage": ({}, True, True, 1.0),
    "m-lingape": ({"threshold": "theoretical", "S": "oracle"}, True, True, 0.2),
    "lingifa": ({"threshold": "theoretical", "S": "oracle"}, True, True, 0.25),
    "lingape": ({"S": "oracle"}, False, True, 1.0),
    "lucb": ({"threshold": "lucb1"}, True, True, 0.1),
    "ugape": ({"threshold": "lucb1"}, True, True, 0.1),
    "xy-adaptive": ({}, False, False, 0.25),
    "g-allocation": ({}, False, False, 0.25),
}
LOGISTIC = {
    "log-tas": ({}, True, True, 0.1),
    "rage-glm": ({}, True, True, 0.5),
    "glgape": ({"calibration": "likelihood-ratio"}, False, True, 0.2),
    "m-glgape": ({"calibration": "likelihood-ratio"}, True, True, 0.2),
    "kl-lucb": ({}, True, True, 0.5),
}
MAX_SAMPLES = 200_000
#: m-GLGapE with m = 1 makes GLGapE's choices (docs/error_rates.md): it runs at m = 2 only
TOP_M_ONLY = ("m-glgape",)


@dataclass(frozen=True)
class Drawn:
    """One random instance and what it was drawn for."""

    instance: Instance
    family: str
    m: int
    epsilon: float
    describe: str


def _features(rng, means_or_logits: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
    """theta* ~ N(0, I_d) and features U[-1, 1]^d moved along theta* so that x_k^T theta* = target_k."""
    theta = rng.standard_normal(d)
    while np.linalg.norm(theta) < 0.5:
        theta = rng.standard_normal(d)
    U = rng.uniform(-1.0, 1.0, size=(means_or_logits.size, d))
    X = U + np.outer(means_or_logits - U @ theta, theta) / (theta @ theta)
    return X, theta


def _boundary_means(rng, K: int, m: int, epsilon: float, top: float, low: float, unit: float) -> tuple[np.ndarray, str]:
    """Means with the m-th best at ``top``, the runner-up near the (epsilon, m) boundary, the rest
    below it with a margin; ``unit`` scales the gap drawn at epsilon = 0 (the noise scale)."""
    if epsilon > 0:
        r = rng.uniform(1.0, 1.3) if rng.random() < 0.5 else rng.uniform(0.5, 2.0)
        gap = r * epsilon
        what = f"runner-up {r:.2f} eps below"
    else:
        gap = unit * rng.uniform(0.1, 0.3)
        what = f"gap {gap:.3f}"
    mu = np.empty(K)
    mu[m - 1] = top
    if m == 2:
        mu[0] = top + rng.uniform(0.0, 2.0 * max(epsilon, gap))
    mu[m] = top - gap
    floor = min(top - gap, top - epsilon) - max(0.3 * max(epsilon, gap), 0.01)
    mu[m + 1 :] = rng.uniform(low, floor, size=K - m - 1)
    perm = rng.permutation(K)
    return mu[perm], what


def draw(family: str, m: int, epsilon: float, index: int, seed: int) -> Drawn:
    """The ``index``-th random instance of (family, m, epsilon), from ``seed``."""
    key = [seed, ("linear", "logistic").index(family), m, int(round(epsilon * 1000)), index]
    rng = np.random.default_rng(key)
    K, d = int(rng.integers(max(3, m + 2), 13)), int(rng.integers(2, 6))
    if family == "linear":
        sigma = float(rng.choice([0.5, 1.0]))
        mu, what = _boundary_means(rng, K, m, epsilon, top=0.0, low=-1.5, unit=sigma)
        X, theta = _features(rng, mu, d)
        inst = Instance(X, X @ theta, "gaussian", sigma, theta)
        desc = f"linear K={K} d={d} sigma={sigma:g} {what}"
    else:
        top = float(rng.choice([rng.uniform(0.3, 0.8), rng.uniform(0.9, 0.97)]))
        mu, what = _boundary_means(rng, K, m, epsilon, top=top, low=0.02, unit=0.5)
        mu = np.clip(mu, 0.02, 0.98)
        X, theta = _features(rng, logit(mu), d)
        inst = Instance(X, expit(X @ theta), "bernoulli", 0.5, theta, link="logistic")
        desc = f"logistic K={K} d={d} top={top:.2f} min={mu.min():.3f} {what}"
    name = f"rand_{family}(m={m},eps={epsilon:g},i={index},seed={seed})"
    return Drawn(
        Instance(inst.features, inst.means, inst.reward, inst.sigma, inst.theta, inst.link, name=name, meta={"m": m}),
        family,
        m,
        epsilon,
        desc,
    )


def cp_bounds(errors: int, runs: int, level: float = 0.95) -> tuple[float, float]:
    """One-sided Clopper-Pearson lower and upper bounds (each at ``level``) on the error probability."""
    if runs <= 0:
        return 0.0, 1.0
    lower = 0.0 if errors == 0 else float(beta.ppf(1 - level, errors, runs - errors + 1))
    upper = 1.0 if errors >= runs else float(beta.ppf(level, errors + 1, runs - errors))
    return lower, upper


def cells(args):
    algorithms = {
        **{a: ("linear", *v) for a, v in LINEAR.items()},
        **{a: ("logistic", *v) for a, v in LOGISTIC.items()},
    }
    for index in range(args.per_combo):  # the first instance of every combination first
        for family in ("linear", "logistic"):
            for m in MS:
                for epsilon in EPSILONS:
                    drawn = draw(family, m, epsilon, index, args.seed)
                    for alg, (fam, params, takes_m, takes_eps, factor) in algorithms.items():
                        if fam != family or (args.only and alg not in args.only):
                            continue
                        if (m > 1 and not takes_m) or (epsilon > 0 and not takes_eps) or (m == 1 and alg in TOP_M_ONLY):
                            continue
                        p = {**params, "delta": args.delta, "max_samples": args.max_samples}
                        if takes_m:
                            p["m"] = m
                        if takes_eps:
                            p["epsilon"] = epsilon
                        if without_guarantee(get(alg).cls, p):
                            raise SystemExit(
                                f"{alg} {p}: a setting without a guarantee; the sweep covers guaranteed ones"
                            )
                        yield drawn, alg, p, max(int(args.runs * factor), 20)


def judge(drawn: Drawn, rec: pd.DataFrame) -> np.ndarray:
    """Per run, whether the answer is m distinct (epsilon, m)-good arms (``epsilon_good``)."""
    good = epsilon_good(drawn.instance.means, drawn.m, drawn.epsilon)
    out = []
    for answer in rec["recommendation"]:
        a = np.asarray(answer, dtype=int)
        out.append(a.size == drawn.m and np.unique(a).size == a.size and bool(good[a].all()))
    return np.array(out, dtype=bool)


def run_cell(drawn: Drawn, alg: str, params: dict, runs: int, seed: int, start: int = 0) -> dict:
    t0 = time.perf_counter()
    rec = replicate(drawn.instance, alg, params, n_reps=runs, seed=seed, start=start, n_jobs=1)
    stopped = rec["stopped"].to_numpy(bool)
    ok = judge(drawn, rec)
    errors = int((stopped & ~ok).sum())
    done = int(stopped.sum())
    lower, upper = cp_bounds(errors, done)
    delta = params["delta"]
    return {
        "instance": drawn.instance.name,
        "description": drawn.describe,
        "algorithm": alg,
        "setting": ", ".join(
            f"{k}={v}" for k, v in params.items() if k not in ("delta", "m", "epsilon", "max_samples")
        ),
        "m": drawn.m,
        "epsilon": drawn.epsilon,
        "delta": delta,
        "runs": len(rec),
        "stopped": done,
        "capped": int((~stopped).sum()),
        "errors": errors,
        "error_rate": errors / max(done, 1),
        "cp_lower95": lower,
        "cp_upper95": upper,
        "median_tests": float(rec.loc[stopped, "samples"].median()) if done else np.nan,
        "runner_disagrees": int((rec["correct"].to_numpy(bool) != ok)[stopped].sum()),
        "violation": lower > delta,
        "suspicious": errors / max(done, 1) > delta,
        "seconds": round(time.perf_counter() - t0, 1),
    }


def summary(df: pd.DataFrame) -> str:
    lines = [
        f"cells {len(df)}, runs {int(df['runs'].sum())}, violations {int(df['violation'].sum())}, "
        f"suspicious {int(df['suspicious'].sum())}, cells with capped runs {int((df['capped'] > 0).sum())} "
        f"({int(df['capped'].sum())} runs), runner/epsilon_good disagreements {int(df['runner_disagrees'].sum())}",
        "",
        "| algorithm | cells | runs | stopped | errors | max error rate | max CP upper | capped | violations "
        "| suspicious |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for alg, g in df.groupby("algorithm", sort=False):
        lines.append(
            f"| {alg} | {len(g)} | {int(g['runs'].sum())} | {int(g['stopped'].sum())} | {int(g['errors'].sum())} | "
            f"{g['error_rate'].max():.3f} | {g['cp_upper95'].max():.3f} | {int(g['capped'].sum())} | "
            f"{int(g['violation'].sum())} | {int(g['suspicious'].sum())} |"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=200, help="runs per cell (slow algorithms run a fraction, >= 20)")
    ap.add_argument("--seed", type=int, default=2024, help="draws the instances and seeds the runs")
    ap.add_argument("--per-combo", type=int, default=2, help="random instances per (family, m, epsilon)")
    ap.add_argument("--delta", type=float, default=0.2)
    ap.add_argument(
        "--max-samples",
        type=int,
        default=MAX_SAMPLES,
        help="cap on tests per run (capped runs are counted apart, not as errors)",
    )
    ap.add_argument("--only", nargs="*", help=f"algorithms (default: all of {[*LINEAR, *LOGISTIC]})")
    ap.add_argument("--list", action="store_true", help="print the instances and exit")
    ap.add_argument("--from-records", help="print the summary of a records CSV instead of running")
    ap.add_argument("--out", default="random_error_sweep.csv", help="records CSV, one row per cell (replaced)")
    args = ap.parse_args()
    unknown = set(args.only or ()) - {*LINEAR, *LOGISTIC}
    if unknown:
        raise SystemExit(f"--only: unknown algorithm(s) {sorted(unknown)}; choose from {[*LINEAR, *LOGISTIC]}")
    if args.from_records:
        print(summary(pd.read_csv(args.from_records)))
        return
    if args.list:
        seen = set()
        for drawn, *_ in cells(args):
            if drawn.instance.name not in seen:
                seen.add(drawn.instance.name)
                print(drawn.instance.name, drawn.describe, np.round(np.sort(drawn.instance.means)[::-1], 3))
        return
    out = Path(args.out)
    if out.exists():
        out.unlink()
    rows = []
    for drawn, alg, params, runs in cells(args):
        row = run_cell(drawn, alg, params, runs, args.seed)
        rows.append(row)
        pd.DataFrame([row]).to_csv(out, mode="a", header=not out.exists(), index=False)
        flag = " VIOLATION" if row["violation"] else (" suspicious" if row["suspicious"] else "")
        print(
            f"{row['instance']:40s} {alg:12s} runs={row['runs']:3d} capped={row['capped']:3d} "
            f"errors={row['errors']:3d} "
            f"rate={row['error_rate']:.3f} CP=[{row['cp_lower95']:.3f},{row['cp_upper95']:.3f}] "
            f"median={row['median_tests']:.0f} ({row['seconds']:.0f} s){flag}",
            flush=True,
        )
    print(summary(pd.DataFrame(rows)))


if __name__ == "__main__":
    main()

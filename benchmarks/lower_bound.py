"""How far every fixed-confidence algorithm is from the lower bound (../shared/spec/LOWER_BOUND.md).

For each instance, every registered fixed-confidence algorithm that applies to it (linear algorithms
on the linear-Gaussian instances, those modelling 0/1 outcomes on the logistic ones, top-m ones on
Réda's m = 2 instance, algorithms that ignore the features (LUCB, UGapE) only there, as in
benchmarks/error_rates.py: on Soare's instance they need about 10^6 tests per arm) and
each of its settings (the thresholds / calibrations of benchmarks/error_rates.py's SETTINGS; for an
algorithm not listed there, its default and every option of a declared ``threshold``, ``calibration``
or ``stopping`` parameter, so algorithms registered later are picked up), at each delta:

- runs, errors among the runs that stopped, their one-sided 95 % Clopper-Pearson upper bound, runs
  that hit the cap (counted as not stopped, not as errors);
- median tests over all runs (capped runs at their cap: a lower end when ``capped`` > 0);
- LB = T*(theta) log(1 / (2.4 delta)) (screenbai.bandits.certainty; linear-Gaussian with the
  instance's sigma, or the logistic local Fisher form with epsilon on the means), ratio = median / LB;
- sampling factor = median over runs of T(w_hat) / T*, w_hat the run's fraction of tests per arm,
  and stopping factor = median tests / (median T(w_hat) log(1 / (2.4 delta))): they multiply to the
  ratio (LOWER_BOUND.md, "Splitting the excess");
- logistic instances small enough for the exact Bernoulli-KL bound (at most EXACT_MAX_PAIRS pairs per
  answer: kw_synthetic), the same under the exact KL: T_star_exact (Kelley's cutting planes at tol 1 %,
  an upper end), lower_bound_exact, ratio_exact, and sampling / stopping factors with T_ex(w_hat). The
  exact bound is the one that holds for 0/1 outcomes; the local form approximates it (within 2 % at
  d = 2, up to 18 % off at d = 5, and a rule that tracks the exact w* is measured only by the exact
  T_ex(w_hat)). Blank where the instance is too large (the potency arms).

Instances: Soare et al.'s (d = 2, omega = 0.1, sigma = 1), Réda et al.'s (K = 4, m = 2, sigma = 0.5), a
random linear one (K = 400, d = 20, X uniform in [-1, 1], theta standard normal, sigma = 0.5; the CLI's
``random_linear``), Kazerouni & Wein's synthetic logistic ones (K = 50, d = 2, 5, 10, seeds 0-2,
epsilon = 0.1) and the CDK2 and EGFR potency arms (K = 400 compounds of the workflow's subset, d = 20
PCA components + intercept, logistic ground truth fitted at IC50 < 100 nM the way the workflow does it,
epsilon = 0.1; built once and cached under data/cache/).

    python benchmarks/lower_bound.py --instances soare reda --reps 100 --out table.csv
    python benchmarks/lower_bound.py --instances kw_d2_s0 --algorithms glgape --reps 50 --deltas 0.05 0.01
    python benchmarks/lower_bound.py --list            # instance names and the algorithm cells
    python benchmarks/lower_bound.py --instances soare --algorithms lingape m-lingape lingifa \
        --settings Abbasi theoretical --S oracle --reps 300 --deltas 0.01 --jobs 1

``--S oracle`` (or a number) sets the bound S on ||theta*|| of the settings that assume one, as in
benchmarks/error_rates.py (column S of the records, beside the setting in the table).

One CSV row per (instance, algorithm, setting, delta), appended as each cell finishes.

Long cells in chunks, on several machines or cores: ``--start`` numbers the runs of a chunk (run r uses the
same seeds whichever chunk holds it), ``--save-runs`` keeps each cell's per-run table, and ``--combine``
makes the rows of the records from saved tables (the chunks of a cell joined):

    B="python benchmarks/lower_bound.py --instances egfr_potency --algorithms log-tas --reps 50"
    $B --save-runs a.pkl & $B --start 50 --save-runs b.pkl
    python benchmarks/lower_bound.py --combine a.pkl b.pkl --out table.csv
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from error_rates import SETTINGS, norm_bound, setting_text, upper_bound  # noqa: E402  (the settings and bound of the error-rate study)

from screenbai.bandits import replicate  # noqa: E402
from screenbai.bandits.certainty import allocation_time, characteristic_time  # noqa: E402
from screenbai.bandits.certainty.complexity import exact_pairs_affordable, log_factor  # noqa: E402
from screenbai.bandits.core.params import Options, declared, without_guarantee  # noqa: E402
from screenbai.bandits.core.registry import available  # noqa: E402

CACHE = ROOT / "data" / "cache"
#: parameters whose options are an algorithm's stopping rules (one setting each)
SETTING_PARAMS = ("threshold", "calibration", "stopping")


@dataclass(frozen=True)
class Spec:
    """An instance of the benchmark: how to build it, its model for the bound, epsilon and m."""

    build: object
    model: str
    epsilon: float
    m: int = 1
    unstructured: bool = False  # algorithms that ignore the features (LUCB, UGapE) run here


def _potency(target: str, K: int = 400, d: int = 20, threshold_nM: float = 100.0):
    """The workflow's arms for the target (bench_plates.study_instance: curate, Morgan + PCA, the logistic
    ground truth of screenbai.screening.ground_truth_arms, the study's subset), cached as .npz."""
    from screenbai.bandits import Instance

    path = CACHE / f"lower_bound_{target}_K{K}_d{d}_{threshold_nM:g}nM.npz"
    if not path.exists():
        from bench_plates import study_instance

        config = {"cdk2": ROOT / "config" / "cdk2_potency.yaml", "egfr": ROOT / "config" / "egfr.yaml"}[target]
        inst = study_instance(config, d=d, K=K, threshold_nM=threshold_nM)
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(path, X=inst.features, means=inst.means, theta=inst.theta)
    z = np.load(path)
    return Instance(z["X"], z["means"], "bernoulli", 0.5, z["theta"], link="logistic",
                    name=f"{target}_potency(K={K},d={d},IC50<{threshold_nM:g}nM)")


def _specs() -> dict[str, Spec]:
    from screenbai.bandits.sim.generators import kw_synthetic, random_linear, reda_classic, soare

    out = {
        "soare": Spec(lambda: soare(d=2, omega=0.1), "linear", 0.0),
        "reda": Spec(lambda: reda_classic(K=4, m=2), "linear", 0.0, m=2, unstructured=True),
        "random_linear": Spec(lambda: random_linear(K=400, d=20, sigma=0.5, seed=0), "linear", 0.0),
    }
    for seed in (1, 2):  # the same generator, other seeds (issue 19's target 10 holds on each)
        out[f"random_linear_s{seed}"] = Spec(lambda seed=seed: random_linear(K=400, d=20, sigma=0.5, seed=seed),
                                             "linear", 0.0)
    for d in (2, 5, 10):
        for seed in (0, 1, 2):
            out[f"kw_d{d}_s{seed}"] = Spec(lambda d=d, seed=seed: kw_synthetic(K=50, d=d, seed=seed), "logistic", 0.1)
    out["cdk2_potency"] = Spec(lambda: _potency("cdk2"), "logistic", 0.1)
    out["egfr_potency"] = Spec(lambda: _potency("egfr"), "logistic", 0.1)
    return out


def settings_of(name: str) -> list[tuple[str, dict]]:
    """The settings of an algorithm: error_rates.SETTINGS's when listed there, else its default and every
    option of its declared stopping-rule parameters."""
    listed = [(label, dict(params)) for alg, label, params in SETTINGS if alg == name]
    if listed:
        return listed
    entry = available()[name]
    params = declared(entry.cls)
    out = [("default", {})]
    for key in SETTING_PARAMS:
        p = params.get(key)
        if p is None or key in entry.defaults or not isinstance(p.constraint, Options):
            continue
        out += [(f"{key}={v}", {key: v}) for v in p.constraint.values if v != p.default]
    return out


def applies(name: str, spec: Spec) -> bool:
    cls = available()[name].cls
    if getattr(cls, "fixed_budget", False):
        return False
    if getattr(cls, "binary_rewards", False) != (spec.model == "logistic"):
        return False
    if not getattr(cls, "models_features", True) and not spec.unstructured:
        return False
    return spec.m == 1 or "m" in available()[name].parameters()


def run_cell(inst, spec: Spec, cx, cx_exact, name: str, label: str, base: dict, delta: float, args) -> dict:
    entry = available()[name]
    params = {**base, "delta": delta}
    keys = entry.parameters()
    if "m" in keys:
        params["m"] = spec.m
    if "epsilon" in keys:
        params["epsilon"] = spec.epsilon
    if args.max_samples:
        params["max_samples"] = args.max_samples
    S = norm_bound(name, params, inst, args.S)
    if S is not None:
        params["S"] = S
    guaranteed = not without_guarantee(entry.cls, params)
    t0 = time.perf_counter()
    rec = replicate(inst, name, params, n_reps=args.reps, seed=args.seed, start=args.start, n_jobs=args.jobs)
    seconds = time.perf_counter() - t0
    if args.save_runs:
        saved = Path(args.save_runs)
        key = {"instance_name": args.instance_name, "algorithm": name, "setting": label, "delta": delta,
               "guaranteed": guaranteed, "seconds": seconds, "S": S}
        tables = pd.read_pickle(saved) if saved.exists() else []
        # beside it, then renamed: a run killed while writing keeps the cells saved before (a whole file)
        tmp = saved.with_name(f"{saved.name}.{os.getpid()}.tmp")
        pd.to_pickle([*tables, (key, rec)], tmp)
        os.replace(tmp, saved)
    return {**summarise(inst, spec, cx, cx_exact, name, label, delta, guaranteed, rec, seconds), "S": S}


def summarise(inst, spec: Spec, cx, cx_exact, name: str, label: str, delta: float, guaranteed: bool,
              rec: pd.DataFrame, seconds: float) -> dict:
    """One row of the records from a cell's per-run table (module docstring)."""
    stopped = rec["stopped"].astype(bool)
    errors = int((~rec.loc[stopped, "correct"].astype(bool)).sum())
    n_stopped = int(stopped.sum())
    factor = log_factor(delta)
    LB = cx.T_star * factor
    kw = {"model": spec.model, "sigma": float(inst.sigma), "epsilon": spec.epsilon, "m": spec.m}
    T_hat = np.array([allocation_time(inst.features, inst.theta, np.asarray(p, float), **kw) for p in rec["pulls"]])
    median_tests = float(rec["samples"].median())
    T_med = float(np.median(T_hat))
    exact = {key: math.nan for key in EXACT_COLUMNS}
    if cx_exact is not None:
        T_ex = np.array([allocation_time(inst.features, inst.theta, np.asarray(p, float), exact=True, **kw)
                         for p in rec["pulls"]])
        T_ex_med = float(np.median(T_ex))  # nan if a run's pairs did not converge: not hidden
        exact = {"T_star_exact": cx_exact.T_star, "lower_bound_exact": cx_exact.T_star * factor,
                 "ratio_exact": median_tests / (cx_exact.T_star * factor),
                 "sampling_factor_exact": T_ex_med / cx_exact.T_star,
                 "stopping_factor_exact": median_tests / (T_ex_med * factor)}
    return {
        "instance": inst.name, "algorithm": name, "setting": label, "delta": delta,
        "guaranteed": guaranteed, "runs": len(rec), "stopped": n_stopped, "errors": errors,
        "error_upper": upper_bound(errors, max(n_stopped, 1)), "capped": int(rec["hit_cap"].sum()),
        "median_tests": median_tests, "T_star": cx.T_star, "lower_bound": LB,
        "ratio": median_tests / LB if LB > 0 else math.inf,
        "sampling_factor": T_med / cx.T_star, "stopping_factor": median_tests / (T_med * factor),
        "epsilon": spec.epsilon, "m": spec.m, "model": spec.model, "seconds": seconds,
        **exact,
    }


#: the exact Bernoulli-KL columns (logistic instances with at most EXACT_MAX_PAIRS pairs per answer)
EXACT_COLUMNS = ("T_star_exact", "lower_bound_exact", "ratio_exact", "sampling_factor_exact", "stopping_factor_exact")


def exact_bound(inst, spec: Spec):
    """The exact Bernoulli-KL T* of a logistic instance small enough for it (tol 1 %), else None."""
    if spec.model != "logistic" or not exact_pairs_affordable(inst.features.shape[0], spec.m):
        return None
    return characteristic_time(inst.features, inst.theta, model="logistic", epsilon=spec.epsilon, m=spec.m,
                               exact=True, tol=1e-2)


def combine(files, out: Path) -> None:
    """The rows of per-run tables saved by --save-runs, the chunks of each cell joined (their runs must not
    overlap), appended to ``out``."""
    cells: dict[tuple, list] = {}
    for f in files:
        for key, rec in pd.read_pickle(f):
            cell = (key["instance_name"], key["algorithm"], key["setting"], key["delta"], key["guaranteed"])
            cells.setdefault(cell, []).append((key["seconds"], rec, key.get("S")))
    specs = _specs()
    joined = {cell: pd.concat([r for _, r, _ in chunks], ignore_index=True) for cell, chunks in cells.items()}
    for (inst_name, name, label, *_), rec in joined.items():  # every cell checked before any row is written
        _check_chunks(f"{inst_name} {name} {label}", rec)
    for (inst_name, name, label, delta, guaranteed), chunks in cells.items():
        rec = joined[(inst_name, name, label, delta, guaranteed)]
        spec = specs[inst_name]
        inst = spec.build()
        cx = characteristic_time(inst.features, inst.theta, model=spec.model, sigma=float(inst.sigma),
                                 epsilon=spec.epsilon, m=spec.m)
        row = summarise(inst, spec, cx, exact_bound(inst, spec), name, label, delta, guaranteed, rec,
                        sum(sec for sec, _, _ in chunks))
        row["instance"], row["S"] = inst_name, chunks[0][2]  # one S: _check_chunks compared the params
        pd.DataFrame([row]).to_csv(out, mode="a", header=not out.exists(), index=False)
        print(f"{inst_name} {name} {label} delta={delta:g}: runs={row['runs']} errors={row['errors']} "
              f"median={row['median_tests']:.0f} ratio={row['ratio']:.4g}", flush=True)


def _check_chunks(cell: str, rec: pd.DataFrame) -> None:
    """Refuse chunks of one cell that, joined, would equal no single run of it: runs in two chunks, runs in none
    between them (a gap), or chunks run with different seeds or parameters (--seed, --max-samples)."""
    runs = rec["replication"].astype(int)
    twice = sorted(set(runs[runs.duplicated()]))
    if twice:
        raise SystemExit(f"{cell}: the chunks overlap (runs {twice} twice); give each chunk its own --start")
    missing = sorted(set(range(runs.min(), runs.max() + 1)) - set(runs))
    if missing:
        raise SystemExit(
            f"{cell}: runs {missing} are in no chunk (a gap between the chunks' --start and --reps); "
            f"run them (--start {missing[0]}) and combine again"
        )
    for column, option in (("seed", "--seed"), ("params", "--max-samples and --S")):
        values = sorted(set(rec[column].astype(str)))
        if len(values) > 1:
            raise SystemExit(
                f"{cell}: the chunks were run with different {column} ({' and '.join(values)}); "
                f"run every chunk of a cell with the same {option}"
            )


def bounds(instances, deltas) -> None:
    """T* and LB of each instance; for the logistic ones also the exact Bernoulli-KL bound (tol 1 %)."""
    specs = _specs()
    print("| instance | model | epsilon | m | T* (local form) | T* exact [lower end] | exact / local | LB at delta |")
    print("|---|---|---|---|---|---|---|---|")
    for name in instances:
        spec = specs[name]
        inst = spec.build()
        kw = {"model": spec.model, "sigma": float(inst.sigma), "epsilon": spec.epsilon, "m": spec.m}
        t0 = time.perf_counter()
        cx = characteristic_time(inst.features, inst.theta, **kw)
        seconds = time.perf_counter() - t0
        exact = "-"
        ratio = "-"
        if spec.model == "logistic" and exact_pairs_affordable(inst.K, spec.m):
            ex = characteristic_time(inst.features, inst.theta, exact=True, tol=1e-2, **kw)
            exact, ratio = f"{ex.T_star:.4g} [{ex.lower:.4g}]", f"{ex.T_star / cx.T_star:.3f}"
        lbs = ", ".join(f"{cx.T_star * log_factor(d):.4g} ({d:g})" for d in deltas)
        print(f"| {inst.name} | {spec.model} | {spec.epsilon:g} | {spec.m} | {cx.T_star:.4g} ({seconds:.2f} s) | "
              f"{exact} | {ratio} | {lbs} |", flush=True)


def markdown(df: pd.DataFrame) -> str:
    """The records as a Markdown table (one line per row)."""
    lines = [
        "| instance | algorithm | setting | guaranteed | delta | runs | errors (95 % upper) | capped | median tests | "
        "LB | ratio | sampling x stopping | LB, exact KL | ratio, exact KL | sampling x stopping, exact KL |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    df = df.reindex(columns=[*df.columns, *(c for c in EXACT_COLUMNS if c not in df.columns)])
    for r in df.itertuples():
        if math.isnan(r.ratio_exact):
            exact = "- | - | -"
        else:
            exact = (f"{r.lower_bound_exact:.4g} | {r.ratio_exact:.4g} | "
                     f"{r.sampling_factor_exact:.3g} x {r.stopping_factor_exact:.3g}")
        setting = setting_text(r.setting, getattr(r, "S", None))
        lines.append(
            f"| {r.instance} | {r.algorithm} | {setting} | {'yes' if r.guaranteed else 'no'} | {r.delta:g} | "
            f"{r.runs} | {r.errors} ({r.error_upper:.3f}) | {r.capped} | {r.median_tests:g} | {r.lower_bound:.4g} | "
            f"{r.ratio:.4g} | {r.sampling_factor:.3g} x {r.stopping_factor:.3g} | {exact} |"
        )
    return "\n".join(lines)


def timing(K: int = 5000, d: int = 20, repeats: int = 3) -> None:
    """Seconds per T* at K = 5000, d = 20 on random_linear (linear, sigma = 0.5) and on the same features with
    a logistic model (theta / 2, epsilon = 0.1 on the means, the answer fixed to the best arm: the maximum over
    all 345 epsilon-good answers solves one problem per answer the floor cannot exclude, about a minute
    here): cold, and warm-started from a nearby theta's allocation (the previous plate's)."""
    from screenbai.bandits.sim.generators import random_linear

    inst = random_linear(K=K, d=d, sigma=0.5, seed=0)
    rng = np.random.default_rng(1)
    best = [int(np.argmax(inst.features @ inst.theta))]
    for model, theta, kw in (("linear", inst.theta, {"sigma": 0.5}),
                             ("logistic", inst.theta / 2, {"epsilon": 0.1, "answer": best})):
        cold, warm, cpu = [], [], []
        for _ in range(repeats):
            t0, c0 = time.perf_counter(), time.process_time()
            cx = characteristic_time(inst.features, theta, model=model, **kw)
            cold.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
            nearby = theta + 0.02 * rng.standard_normal(d)
            t0 = time.perf_counter()
            characteristic_time(inst.features, nearby, model=model, w0=cx.allocation, **kw)
            warm.append(time.perf_counter() - t0)
        print(f"K = {K}, d = {d}, {model}: T* = {cx.T_star:.4g} (certified within {cx.T_star / cx.lower - 1:.1e}); "
              f"cold {np.median(cold):.2f} s ({np.median(cpu):.2f} s CPU), warm-started {np.median(warm):.2f} s "
              f"(medians of {repeats}; wall time depends on the machine's load)", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    specs = _specs()
    ap.add_argument("--instances", nargs="*", default=["soare", "reda", "kw_d2_s0"],
                    help=f"instance names (default: the cheap ones); all: {', '.join(specs)}")
    ap.add_argument("--algorithms", nargs="*", help="algorithm names (default: every fixed-confidence one)")
    ap.add_argument("--settings", nargs="*", help="setting labels to run, by prefix (default: all)")
    ap.add_argument("--reps", type=int, default=100)
    ap.add_argument("--deltas", nargs="*", type=float, default=[0.05])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--start", type=int, default=0, help="the index of the first run (a chunk of a longer cell)")
    ap.add_argument("--save-runs", help="keep every cell's per-run table in this file (pickle), for --combine")
    ap.add_argument("--combine", nargs="+", help="write the rows of saved per-run tables (chunks of a cell "
                    "joined) to --out, run nothing")
    ap.add_argument("--S", help="bound on ||theta*|| for the settings that assume one: 'oracle' (each "
                    "instance's ||theta*||) or a number (default: each algorithm's own)")
    ap.add_argument("--max-samples", type=int, help="cap on tests per run (default: each algorithm's)")
    ap.add_argument("--out", default="lower_bound.csv")
    ap.add_argument("--list", action="store_true", help="print the instances and the cells, run nothing")
    ap.add_argument("--markdown", help="print a records CSV written by this script as a Markdown table, run nothing")
    ap.add_argument("--docs", action="store_true", help="with --markdown: write the table into docs/lower_bound.md")
    ap.add_argument("--timing", action="store_true",
                    help="time T* at K = 5000, d = 20 (what a campaign would pay after every plate), run nothing else")
    ap.add_argument("--bounds", action="store_true",
                    help="print T* and LB of the instances (logistic: the local form and the exact Bernoulli-KL "
                         "bound), run no algorithm")
    args = ap.parse_args()
    unknown = [n for n in args.instances if n not in specs]
    if unknown:
        raise SystemExit(f"unknown instance(s) {unknown}; available: {', '.join(specs)}")
    names = args.algorithms or [n for n, e in available().items() if not getattr(e.cls, "fixed_budget", False)]
    bad = [n for n in names if n not in available()]
    if bad:
        raise SystemExit(f"unknown algorithm(s) {bad}; available: {', '.join(available())}")
    if args.markdown:
        table = markdown(pd.read_csv(args.markdown))
        print(table)
        if args.docs:
            from screenbai.report import write_generated_block

            write_generated_block(ROOT / "docs" / "lower_bound.md", "lower_bound:table", table)
        return
    if args.bounds:
        bounds(args.instances, args.deltas)
        return
    if args.combine:
        combine(args.combine, Path(args.out))
        return
    if args.timing:
        timing()
        return
    out = Path(args.out)
    for inst_name in args.instances:
        spec = specs[inst_name]
        inst = spec.build()
        todo = [(n, lab, p) for n in names if applies(n, spec) for lab, p in settings_of(n)
                if not args.settings or any(lab.startswith(s) for s in args.settings)]
        if args.list:
            print(inst_name, inst.name, [f"{n}/{lab}" for n, lab, _ in todo])
            continue
        t0 = time.perf_counter()
        args.instance_name = inst_name
        cx = characteristic_time(inst.features, inst.theta, model=spec.model, sigma=float(inst.sigma),
                                 epsilon=spec.epsilon, m=spec.m)
        print(f"{inst.name}: T* = {cx.T_star:.4g} (answer {cx.answer}, {time.perf_counter() - t0:.2f} s)", flush=True)
        cx_exact = exact_bound(inst, spec)
        if cx_exact is not None:
            print(f"  exact Bernoulli-KL T* = {cx_exact.T_star:.4g} (LP lower end {cx_exact.lower:.4g})", flush=True)
        for name, label, base in todo:
            for delta in args.deltas:
                try:
                    row = run_cell(inst, spec, cx, cx_exact, name, label, base, delta, args)
                except Exception as exc:  # one failing cell (memory, a refused size) must not end the study
                    print(f"  {name:18s} {label:28s} delta={delta:g}: FAILED ({type(exc).__name__}: {exc})", flush=True)
                    continue
                row["instance"] = inst_name
                pd.DataFrame([row]).to_csv(out, mode="a", header=not out.exists(), index=False)
                print(
                    f"  {name:18s} {label:28s} delta={delta:<5g} runs={row['runs']} errors={row['errors']} "
                    f"(up95 {row['error_upper']:.3f}) capped={row['capped']} median={row['median_tests']:.0f} "
                    f"LB={row['lower_bound']:.4g} ratio={row['ratio']:.3g} = {row['sampling_factor']:.3g} x "
                    f"{row['stopping_factor']:.3g} ({row['seconds']:.0f} s)"
                    + ("" if math.isnan(row["ratio_exact"]) else
                       f"; exact KL: LB={row['lower_bound_exact']:.4g} ratio={row['ratio_exact']:.3g} = "
                       f"{row['sampling_factor_exact']:.3g} x {row['stopping_factor_exact']:.3g}"),
                    flush=True,
                )


if __name__ == "__main__":
    main()

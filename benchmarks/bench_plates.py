"""Plates: what filling a plate costs in tests, and how fast the campaign commands answer.

    python benchmarks/bench_plates.py                 # both parts; rewrites the generated blocks of docs/plates.md
    python benchmarks/bench_plates.py --part plates --reps 5 --jobs 2
    python benchmarks/bench_plates.py --part commands
    python benchmarks/bench_plates.py --part probe    # GLGapE's default on the CDK2/EGFR arms, one test at a time

Part 1 (plates). Each run proposes a plate with ``policy.propose(size)``, draws its outcomes and
tells them all, until the stopping rule fires (or the cap); replication r uses the same policy and
assay seeds for every plate size.  Reported per (instance, algorithm, plate size): tests and plates
until stopping, the ratio to plates of one, the error rate (recommended compound more than epsilon
below the best) and the share of runs that stopped.  The settings (``SETTINGS``):

- the CDK2 and EGFR arms of the workflow (d = 20 PCA components + intercept, K = 400 compounds
  drawn with the study's subset seed; settings from config/config.yaml and config/egfr.yaml) with
  the logistic ground truth fitted at ``--threshold-nM`` (10 nM: 5-6 of the 400 compounds are
  within epsilon = 0.1 of the best, so a wrong answer is possible; the study's 10^6 nM label puts
  99 % of them within epsilon);
  - m-LinGapE with today's defaults (theoretical threshold), epsilon 0.1, delta 0.05, sigma 0.5;
  - GLGapE with the study's settings: the paper's calibration ("reinterpreted", NO error guarantee)
    and the true c_mu;
- [KW]'s synthetic logistic instances (K = 50, d = 2, seeds 0 and 2), where the paper's calibration
  errs in 7.5-9 % of sequential runs (docs/error_rates.md): GLGapE with its default (the
  likelihood-ratio stopping rule), with the self-normalized calibration (the previous default) and
  with the paper's, many runs per plate size, to see whether plates change the error rate.
GLGapE's default (the likelihood-ratio stopping rule) on the CDK2/EGFR arms: ``--part probe``.

Part 2 (commands). A campaign at K = 10 000 (random 20-dimensional features + intercept; the
library's chemistry plays no part in these timings) with GLGapE, 5 000 outcomes recorded on
plates of 96; then each ``screenbai campaign`` command is run in a fresh process (wall-clock
time, interpreter start and imports included, replay from the stored snapshot included), and
the full replay from the log without the snapshot is timed in-process.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from screenbai.report import markdown_table, write_generated_block  # noqa: E402  (this tree's package)

PLATE_SIZES = (1, 8, 24, 96)
TARGETS = {"CDK2": ROOT / "config" / "config.yaml", "EGFR": ROOT / "config" / "egfr.yaml"}


# ------------------------------------------------------------------------------- part 1
def study_instance(config_path: Path, d: int = 20, K: int = 400, threshold_nM: float | None = None):
    """The workflow's arms for (d, K): curate, Morgan + PCA, logistic ground truth (at the study's
    threshold, or ``threshold_nM``), the study's subset."""
    from screenbai.chem.curate import curate_activities
    from screenbai.chem.featurize import morgan_fingerprints, reduce_pca
    from screenbai.screening import (
        acquire_activities,
        activity_types_of,
        build_instance,
        draw_subset,
        ground_truth_arms,
        prepare_activities,
    )

    cfg = yaml.safe_load(config_path.read_text())
    # the fallback read as the source: its stands_in_for (the target it replaces) is no key of a source
    fallback = {k: v for k, v in cfg["offline_fallback"].items() if k != "stands_in_for"}
    raw, _ = acquire_activities(fallback, None, repo_root=ROOT)
    types = activity_types_of(cfg)
    library, _ = curate_activities(prepare_activities(raw, types), activity_types=types, **cfg["curation"])
    fz = cfg["featurize"]
    scores, _ = reduce_pca(
        morgan_fingerprints(library["smiles"].tolist(), fz["radius"], fz["n_bits"]),
        d,
        random_state=fz["pca_random_state"],
    )
    features = pd.DataFrame(scores, columns=[f"pc{i + 1}" for i in range(d)])
    features.insert(0, "compound_id", library["compound_id"].to_numpy())
    gt = cfg["ground_truth"]
    arms, fit = ground_truth_arms(
        library,
        features,
        threshold_nM=gt["threshold_nM"] if threshold_nM is None else threshold_nM,
        C=gt["C"],
        random_state=gt["random_state"],
    )
    subset = draw_subset(library, K, cfg["screen"]["subset_seed"])
    inst = build_instance(arms, subset, fit["theta_full"], name=f"{cfg['target_name']}_d{d}_K{K}")
    return inst


def run_plates(inst, algorithm: str, params: dict, size: int, seed_seq, cap: int) -> dict:
    from screenbai.bandits import policy_for_instance

    policy_ss, env_ss = seed_seq.spawn(2)
    policy = policy_for_instance(algorithm, inst, rng=np.random.default_rng(policy_ss), **params)
    env = inst.environment(np.random.default_rng(env_ss))
    tests = plates = 0
    t0 = time.perf_counter()
    while not policy.done and tests < cap:
        arms = policy.propose(min(size, cap - tests))
        if arms.size == 0:
            raise RuntimeError(f"{algorithm} proposed an empty plate with nothing in flight")
        policy.tell(arms, env.pull(arms))
        tests += arms.size
        plates += 1
    res = policy.result()
    eps = float(params.get("epsilon", 0.0))
    gap = float(inst.means.max() - inst.means[res.best])
    return {
        "tests": tests,
        "plates": plates,
        "stopped": bool(policy.done),
        "correct": gap <= eps + 1e-12,
        "time_s": time.perf_counter() - t0,
    }


def _job(args):
    from threadpoolctl import threadpool_limits

    name, inst, label, algorithm, params, size, rep, seed, cap = args
    with threadpool_limits(limits=1):
        t0 = time.process_time()
        ss = np.random.SeedSequence([seed, rep])
        row = run_plates(inst, algorithm, params, size, ss, cap)
        return {
            "instance": name,
            "algorithm": label,
            "plate_size": size,
            "replication": rep,
            **row,
            "cpu_s": time.process_time() - t0,
        }


EPS, DELTA = 0.1, 0.05
PAPER = {"epsilon": EPS, "delta": DELTA, "calibration": "reinterpreted", "c_mu": "oracle"}  # no guarantee
DEFAULT = {"epsilon": EPS, "delta": DELTA}  # GLGapE's defaults: the likelihood-ratio stopping rule
SELF_NORMALIZED = {**DEFAULT, "calibration": "self-normalized"}  # the default when the plates were measured
#: (instance, algorithm label, algorithm, parameters, replications as a multiple of --reps, test cap)
SETTINGS = [
    *[(t, "m-lingape", "m-lingape", {**DEFAULT, "sigma": 0.5}, 1, 200_000) for t in ("CDK2", "EGFR")],
    *[(t, "glgape (paper's calibration)", "glgape", PAPER, 5, 20_000) for t in ("CDK2", "EGFR")],
    *[
        (f"kw d=2 seed {s}", label, "glgape", params, mult, 200_000)
        for s in (0, 2)
        for label, params, mult in (("glgape (paper's calibration)", PAPER, 25), ("glgape (default)", DEFAULT, 5),
                                    ("glgape (self-normalized)", SELF_NORMALIZED, 5))
    ],
]


def instances(threshold_nM: float) -> dict:
    from screenbai.bandits.sim.generators import kw_synthetic

    out = {}
    for target, cfg in TARGETS.items():
        out[target] = study_instance(cfg, threshold_nM=threshold_nM)
    for seed in (0, 2):
        out[f"kw d=2 seed {seed}"] = kw_synthetic(K=50, d=2, seed=seed)
    for name, inst in out.items():
        m = np.sort(inst.means)[::-1]
        print(
            f"{name}: K = {inst.K}, d = {inst.d}, best cure rate {m[0]:.3f}, "
            f"{int((m >= m[0] - EPS).sum())} compounds within epsilon = {EPS} of it",
            flush=True,
        )
    return out


def part_plates(reps: int, jobs: int, seed: int, threshold_nM: float) -> pd.DataFrame:
    insts = instances(threshold_nM)
    tasks = [
        (name, insts[name], label, algorithm, params, size, r, seed, cap)
        for name, label, algorithm, params, mult, cap in SETTINGS
        for size in PLATE_SIZES
        for r in range(reps * mult)
    ]
    from tqdm import tqdm

    with ProcessPoolExecutor(max_workers=jobs) as pool:
        rows = list(tqdm(pool.map(_job, tasks, chunksize=4), total=len(tasks), desc="plate runs"))
    return pd.DataFrame(rows)


def _probe_job(args):
    from threadpoolctl import threadpool_limits

    from screenbai.bandits import policy_for_instance

    name, inst, rep, seed, cap = args
    with threadpool_limits(limits=1):
        t0 = time.process_time()
        policy_ss, env_ss = np.random.SeedSequence([seed, rep]).spawn(2)
        policy = policy_for_instance("glgape", inst, rng=np.random.default_rng(policy_ss), **DEFAULT)
        env = inst.environment(np.random.default_rng(env_ss))
        stats = {}
        while not policy.done and policy.n_samples < cap:
            arms = policy.propose(1)
            policy.tell(arms, env.pull(arms))
            if policy.n_samples in (cap // 8, cap // 4, cap // 2, cap):
                stats[policy.n_samples] = policy.diagnostics.get("stat")
        result = policy.result()
        return {
            "instance": name,
            "replication": rep,
            "tests": int(policy.n_samples),
            "stopped": bool(policy.done),
            "correct": bool(inst.is_correct(result.recommendation, epsilon=EPS)),
            **{f"rivals open at {k:,} tests": v for k, v in stats.items()},
            "CPU (s)": time.process_time() - t0,
        }


def part_probe(reps: int, jobs: int, seed: int, threshold_nM: float, cap: int) -> pd.DataFrame:
    """GLGapE's default, sequential, on the CDK2/EGFR arms: the tests until it stops (or how far from it after
    ``cap``)."""
    insts = {t: study_instance(cfg, threshold_nM=threshold_nM) for t, cfg in TARGETS.items()}
    tasks = [(name, inst, r, seed, cap) for name, inst in insts.items() for r in range(reps)]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        return pd.DataFrame(list(pool.map(_probe_job, tasks)))


def plates_table(runs: pd.DataFrame) -> pd.DataFrame:
    out = []
    for (target, algorithm), grp in runs.groupby(["instance", "algorithm"], sort=False):
        base = grp[grp.plate_size == 1]["tests"].mean()
        for size, g in grp.groupby("plate_size"):
            done = g[g.stopped]
            out.append(
                {
                    "instance": target,
                    "algorithm": algorithm,
                    "plate size": size,
                    "runs": len(g),
                    "not stopped": int((~g.stopped).sum()),
                    "median tests": round(float(done["tests"].median())),
                    "mean tests": round(float(done["tests"].mean())),
                    "tests / plate-1 tests": round(float(g["tests"].mean() / base), 3),
                    "mean plates": round(float(g["plates"].mean()), 1),
                    "errors": int((~done["correct"]).sum()),
                    "error rate": round(float(1 - done["correct"].mean()), 3),
                    "mean CPU (s)": round(float(g["cpu_s"].mean()), 3),
                }
            )
    return pd.DataFrame(out)


# ------------------------------------------------------------------------------- part 2
def build_big_campaign(path: Path, K: int = 10_000, d: int = 20, outcomes: int = 5_000, plate: int = 96, seed: int = 0):
    from screenbai.campaign import Campaign, Library

    rng = np.random.default_rng(seed)
    X = np.hstack([rng.normal(size=(K, d)) / np.sqrt(d), np.ones((K, 1))])
    theta = rng.normal(size=d + 1) * 2.0
    means = 1.0 / (1.0 + np.exp(-X @ theta))
    compounds = pd.DataFrame({"compound_id": [f"CPD{i:05d}" for i in range(K)], "smiles": ["c1ccccc1CCO"] * K})
    compounds["input_smiles"] = compounds["smiles"]
    compounds["source_row"] = np.arange(2, K + 2)
    rejected = pd.DataFrame(columns=["source_row", "compound_id", "smiles", "reason", "detail"])
    lib = Library(compounds, X, rejected, {"method": "random", "d": d}, {"path": "synthetic", "kind": "benchmark"})
    camp = Campaign.create(path, lib, "glgape", {"epsilon": 0.01, "delta": 0.05}, seed=seed)
    work = path.parent
    recorded = k = 0
    while recorded < outcomes:
        p = camp.next_plate(min(plate, outcomes - recorded))
        values = (rng.random(len(p)) < means[list(p.arms)]).astype(int)
        res = work / f"bench_results_{k}.csv"
        res.write_text("plate_id,well,outcome\n" + "".join(f"{p.plate_id},{w},{v}\n" for w, v in zip(p.wells, values)))
        camp.record(res)
        recorded += len(p)
        k += 1
    camp.close()
    return means


def part_commands(workdir: Path, repeats: int = 3) -> tuple[pd.DataFrame, dict]:
    from screenbai.campaign import Campaign

    path = workdir / "big.campaign"
    t0 = time.perf_counter()
    build_big_campaign(path)
    build_s = time.perf_counter() - t0
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def cpu_children() -> float:
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        return ru.ru_utime + ru.ru_stime

    def timed(*argv, fresh_copy: bool = False):
        times, cpu = [], []
        for i in range(repeats):
            target = path
            if fresh_copy:
                target = workdir / f"copy{i}.campaign"
                shutil.copy(path, target)
            # {i}: a new plate file per repeat (an existing one is never written over)
            args = [a.replace("{campaign}", str(target)).replace("{i}", str(i)) for a in argv]
            t, c = time.perf_counter(), cpu_children()
            r = subprocess.run(
                [sys.executable, "-m", "screenbai.cli", "campaign", *args],
                env=env,
                capture_output=True,
                text=True,
                check=False,
            )
            times.append(time.perf_counter() - t)
            cpu.append(cpu_children() - c)
            if r.returncode != 0:
                raise RuntimeError(f"{args}: {r.stderr}")
        return min(times), float(np.median(times)), min(cpu)

    with Campaign.open(path) as camp:
        p = camp.next_plate(96, workdir / "open.csv")
        n_tests = int(camp.observations()[0].sum())
    shutil.copy(path, workdir / "with_open_plate.campaign")
    results = workdir / "open_results.csv"
    rows = pd.read_csv(workdir / "open.csv")
    rows["outcome"] = 1
    rows.to_csv(results, index=False)
    base = path
    timings = {}
    timings["status"] = timed("status", "{campaign}")
    timings["next --plate-size 96"] = timed(
        "next", "{campaign}", "--plate-size", "96", "--out", str(workdir / "n{i}.csv"), fresh_copy=True
    )
    timings["record (96 wells)"] = timed("record", "{campaign}", str(results), fresh_copy=True)
    timings["plate (rewrite a plate file)"] = timed(
        "plate", "{campaign}", p.plate_id, "--out", str(workdir / "x{i}.csv")
    )
    timings["report"] = timed("report", "{campaign}", "--out", str(workdir / "rep"))
    start, c = time.perf_counter(), cpu_children()
    subprocess.run(
        [sys.executable, "-c", "import screenbai.campaign.cli, screenbai.bandits.core.registry as r; r.available()"],
        env=env,
        check=True,
    )
    wall = time.perf_counter() - start
    timings["(python start + imports of the algorithms only)"] = (wall, wall, cpu_children() - c)
    with Campaign.open(base, use_snapshot=False) as camp:
        t = time.perf_counter()
        camp.replay(use_snapshot=False)
        full = time.perf_counter() - t
    with Campaign.open(base) as camp:
        t = time.perf_counter()
        camp.replay(use_snapshot=True)
        snap = time.perf_counter() - t
    table = pd.DataFrame(
        [
            {"command": k, "wall, best of 3 (s)": v[0], "wall, median (s)": v[1], "CPU, best (s)": v[2]}
            for k, v in timings.items()
        ]
    )
    facts = {
        "K": 10_000,
        "d": 21,
        "recorded outcomes": n_tests,
        "build (s)": build_s,
        "policy from snapshot, in-process (s)": snap,
        "full replay from the log, in-process (s)": full,
        "file size (MB)": path.stat().st_size / 1e6,
    }
    return table, facts


# ------------------------------------------------------------------------------- part 3
CDK2_EXPORT = "data/chembl/cdk2_chembl301_webexport_raw.csv.gz"


def _shared(name: str) -> Path:
    for base in (ROOT.parent / "shared", ROOT.parents[1] / "shared", Path("/work/shared")):
        if (base / name).is_file():
            return base / name
    raise FileNotFoundError(f"{name} not found under ../shared; give --library")


def lp_cold_vs_warm(K: int, d: int = 20, n: int = 60, seed: int = 0) -> tuple[float, float]:
    """CPU ms per LP of GLGapE's L1 ratio rule (rules.L1Design) for random gap directions x_i - x_j,
    solved from HiGHS's cold start (what L1Design does) and warm, from the previous optimal basis."""
    from screenbai.bandits.numerics.rules import L1Design

    rng = np.random.default_rng(seed)
    X = np.hstack([rng.normal(size=(K, d)) / np.sqrt(d), np.ones((K, 1))])
    ys = [X[rng.integers(K)] * 1.2 - X[rng.integers(K)] for _ in range(n)]
    out = []
    for cold in (True, False):
        design = L1Design(X)
        design.solve(ys[0])
        h = design._highs
        t = time.process_time()
        for y in ys[1:]:
            if cold:
                h.clearSolver()
            h.changeRowsBounds(design.d, design._rows, y, y)
            h.run()
        out.append(1000 * (time.process_time() - t) / (n - 1))
    return out[0], out[1]


def part_lab(workdir: Path, library: Path, repeats: int = 3, plates: int = 4) -> tuple[pd.DataFrame, dict]:
    """A lab's week at K ~ 5 000, d = 20: ``init`` on the CDK2 export (4 866 structures standardized,
    Morgan radius 4 / 1024 bits, PCA d = 20) with 384-well plates and edge controls, GLGapE's first
    plate and ``plates`` adaptive plates recorded (outcomes drawn from a logistic model of the
    features), then ``next`` (an adaptive plate of 352 compounds) and ``status`` timed in fresh
    processes on copies of the file (wall clock, interpreter start and imports included)."""
    from screenbai.campaign import Campaign

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    path = workdir / "cdk2.campaign"
    cpu: dict[float, float] = {}  # wall time of a run -> its CPU time (user + system, the child's)

    def run(*argv):
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        c = ru.ru_utime + ru.ru_stime
        t = time.perf_counter()
        r = subprocess.run(
            [sys.executable, "-m", "screenbai.cli", "campaign", *map(str, argv)],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if r.returncode != 0:
            raise RuntimeError(f"{argv}: {r.stderr}")
        wall = time.perf_counter() - t
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu[wall] = ru.ru_utime + ru.ru_stime - c
        return wall

    init_s = run(
        "init", path, "--library", library, "--algorithm", "glgape", "--param", "epsilon=0.1",
        "--seed", "1", "--plate-format", "384",
    )
    rng = np.random.default_rng(0)
    with Campaign.open(path) as camp:
        K, d = camp.features.shape
        theta = rng.normal(size=d) * 1.5
        theta[-1] = -2.0
        means = 1.0 / (1.0 + np.exp(-camp.features @ theta))
        for k in range(plates + 1):
            p = camp.next_plate(None)
            values = (rng.random(len(p)) < means[list(p.arms)]).astype(int)
            res = workdir / f"r{k}.csv"
            rows = "".join(f"{p.plate_id},{w},{v}\n" for w, v in zip(p.wells, values))
            res.write_text("plate_id,well,outcome\n" + rows)
            camp.record(res)
        tests = int(camp.observations()[0].sum())
    timings = {"init (4 866 structures, 384-well plates)": [init_s]}
    nxt, nxt96, status, record = [], [], [], []
    for i in range(repeats):
        copy = workdir / f"copy{i}.campaign"
        shutil.copy(path, copy)
        nxt.append(run("next", copy, "--out", workdir / f"next{i}.csv"))
        status.append(run("status", copy))
        filled = pd.read_csv(workdir / f"next{i}.csv")
        filled["outcome"] = (rng.random(len(filled)) < 0.3).astype(int)
        filled.loc[filled["role"] == "positive control", "outcome"] = 1  # controls that pass (Z' = 1)
        filled.loc[filled["role"] == "negative control", "outcome"] = 0
        filled.to_csv(workdir / f"done{i}.csv", index=False)
        record.append(run("record", copy, workdir / f"done{i}.csv"))
        copy96 = workdir / f"copy96_{i}.campaign"
        shutil.copy(path, copy96)
        nxt96.append(run("next", copy96, "--plate-size", "96", "--out", workdir / f"n96_{i}.csv"))
    timings["next (an adaptive 384-well plate: 352 compounds)"] = nxt
    timings["next --plate-size 96 (96 compounds on the 384-well layout)"] = nxt96
    timings["record (a 384-well plate, controls included)"] = record
    timings["status"] = status
    table = pd.DataFrame(
        [
            {
                "command": k,
                "wall, best (s)": min(v),
                "wall, median (s)": float(np.median(v)),
                "CPU, best (s)": min(cpu[w] for w in v),
            }
            for k, v in timings.items()
        ]
    )
    facts = {"K": K, "d": d - 1, "recorded outcomes before next": tests, "plates recorded": plates + 1}
    for k in (400, K):
        cold, warm = lp_cold_vs_warm(k)
        facts[f"L1 ratio-rule LP at K = {k}, CPU ms per LP, cold / warm start"] = f"{cold:.3g} / {warm:.3g}"
    return table, facts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--part", choices=["plates", "probe", "commands", "lab", "both"], default="both")
    ap.add_argument("--library", help="--part lab: the CDK2 ChEMBL export (default: ../shared/" + CDK2_EXPORT + ")")
    ap.add_argument("--probe-cap", type=int, default=50_000, help="--part probe: tests per run")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--threshold-nM", type=float, default=10.0, help="cure label of the CDK2/EGFR ground truth")
    ap.add_argument("--out", default=str(ROOT / "docs" / "plates.md"))
    args = ap.parse_args()
    command = f"python benchmarks/bench_plates.py {' '.join(sys.argv[1:])}".rstrip()
    out = Path(args.out)
    if args.part in ("plates", "both"):
        runs = part_plates(args.reps, args.jobs, args.seed, args.threshold_nM)
        runs.to_csv(out.with_suffix(".csv.gz"), index=False, float_format="%.4g")  # one row per run
        table = plates_table(runs)
        print(table.to_string(index=False))
        write_generated_block(out, "bench_plates:plates", f"Written by `{command}`.\n\n" + markdown_table(table, ".6g"))
    if args.part == "probe":
        table = part_probe(2, args.jobs, args.seed, args.threshold_nM, args.probe_cap)
        print(table.to_string(index=False))
        write_generated_block(out, "bench_plates:probe", f"Written by `{command}`.\n\n" + markdown_table(table, ".3g"))
    if args.part in ("commands", "both"):
        load = os.getloadavg()[0]
        with tempfile.TemporaryDirectory(prefix="bench-plates-") as tmp:
            table, facts = part_commands(Path(tmp))
        facts["load average (1 min) before / after"] = f"{load:.2f} / {os.getloadavg()[0]:.2f}"
        print(table.to_string(index=False))
        print(facts)
        write_generated_block(
            out,
            "bench_plates:commands",
            f"Written by `{command}`.\n\n"
            + markdown_table(table, ".3g")
            + "\n\n"
            + "\n".join(f"- {k}: {v:.3g}" if isinstance(v, float) else f"- {k}: {v}" for k, v in facts.items()),
        )
    if args.part == "lab":
        load = os.getloadavg()[0]
        library = Path(args.library) if args.library else _shared(CDK2_EXPORT)
        with tempfile.TemporaryDirectory(prefix="bench-lab-") as tmp:
            table, facts = part_lab(Path(tmp), library)
        facts["load average (1 min) before / after"] = f"{load:.2f} / {os.getloadavg()[0]:.2f}"
        print(table.to_string(index=False))
        print(facts)
        write_generated_block(
            out,
            "bench_plates:lab",
            f"Written by `{command}`.\n\n"
            + markdown_table(table, ".3g")
            + "\n\n"
            + "\n".join(f"- {k}: {v}" for k, v in facts.items()),
        )
    print(f"written {out} (only its generated blocks; the prose around them is kept)")

if __name__ == "__main__":
    main()

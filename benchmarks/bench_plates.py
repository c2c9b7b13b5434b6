"""Plates: what filling a plate costs in tests, and how fast the campaign commands answer.

    python benchmarks/bench_plates.py                 # both parts; rewrites the generated blocks of docs/plates.md
    python benchmarks/bench_plates.py --part plates --reps 5 --jobs 2
    python benchmarks/bench_plates.py --part commands

Part 1 (plates). The CDK2 and EGFR arms of the workflow (d = 20 PCA components + intercept,
K = 400 compounds drawn with the study's subset seed, logistic ground truth fitted at the study's
threshold; settings read from config/config.yaml and config/egfr.yaml), GLGapE and m-LinGapE with
the study's parameters, plate sizes 1, 8, 24 and 96, 20 replications with common random numbers
(replication r uses the same policy and assay seeds for every plate size).  Each run proposes a
plate with ``policy.propose(size)``, draws its outcomes and tells them all, until the stopping
rule fires (or the 20 000-test cap of the study).  Reported: tests and plates until stopping,
the ratio to plates of one, and the error rate (recommended compound more than epsilon below
the best cure rate).

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
ALGORITHMS = ("glgape", "m-lingape")


# ------------------------------------------------------------------------------- part 1
def study_instance(config_path: Path, d: int = 20, K: int = 400):
    """The workflow's arms for (d, K): curate, Morgan + PCA, logistic ground truth, the study's subset."""
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
    raw, _ = acquire_activities(cfg["offline_fallback"], None, repo_root=ROOT)
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
        library, features, threshold_nM=gt["threshold_nM"], C=gt["C"], random_state=gt["random_state"]
    )
    subset = draw_subset(library, K, cfg["screen"]["subset_seed"])
    inst = build_instance(arms, subset, fit["theta_full"], name=f"{cfg['target_name']}_d{d}_K{K}")
    params = {a["algorithm"]: dict(a.get("params") or {}) for a in cfg["algorithms"] if a["algorithm"] in ALGORITHMS}
    return inst, params, int(cfg["screen"]["max_samples"])


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

    target, inst, algorithm, params, size, rep, seed, cap = args
    with threadpool_limits(limits=1):
        ss = np.random.SeedSequence([seed, rep])
        return {
            "target": target,
            "algorithm": algorithm,
            "plate_size": size,
            "replication": rep,
            **run_plates(inst, algorithm, params, size, ss, cap),
        }


def part_plates(reps: int, jobs: int, seed: int) -> pd.DataFrame:
    tasks = []
    for target, cfg in TARGETS.items():
        inst, params, cap = study_instance(cfg)
        print(f"{target}: K = {inst.K}, d = {inst.d}, best cure rate {inst.means.max():.3f}", flush=True)
        for algorithm in ALGORITHMS:
            for size in PLATE_SIZES:
                tasks += [(target, inst, algorithm, params[algorithm], size, r, seed, cap) for r in range(reps)]
    from tqdm import tqdm

    with ProcessPoolExecutor(max_workers=jobs) as pool:
        rows = list(tqdm(pool.map(_job, tasks, chunksize=1), total=len(tasks), desc="plate runs"))
    return pd.DataFrame(rows)


def plates_table(runs: pd.DataFrame) -> pd.DataFrame:
    out = []
    for (target, algorithm), grp in runs.groupby(["target", "algorithm"], sort=False):
        base = grp[grp.plate_size == 1]["tests"].mean()
        for size, g in grp.groupby("plate_size"):
            done = g[g.stopped]
            out.append(
                {
                    "target": target,
                    "algorithm": algorithm,
                    "plate size": size,
                    "runs": len(g),
                    "not stopped": int((~g.stopped).sum()),
                    "median tests": float(done["tests"].median()),
                    "mean tests": float(done["tests"].mean()),
                    "tests / plate-1 tests": float(g["tests"].mean() / base),
                    "mean plates": float(g["plates"].mean()),
                    "error rate": float(1 - done["correct"].mean()),
                    "mean time (s)": float(g["time_s"].mean()),
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
            args = [a.replace("{campaign}", str(target)) for a in argv]
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
        "next", "{campaign}", "--plate-size", "96", "--out", str(workdir / "n.csv"), fresh_copy=True
    )
    timings["record (96 wells)"] = timed("record", "{campaign}", str(results), fresh_copy=True)
    timings["plate (rewrite a plate file)"] = timed("plate", "{campaign}", p.plate_id, "--out", str(workdir / "x.csv"))
    timings["report"] = timed("report", "{campaign}", "--out", str(workdir / "rep"))
    start, c = time.perf_counter(), cpu_children()
    subprocess.run(
        [sys.executable, "-c", "import screenbai.campaign.cli, screenbai.bandits.registry as r; r.available()"],
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--part", choices=["plates", "commands", "both"], default="both")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", default=str(ROOT / "docs" / "plates.md"))
    args = ap.parse_args()
    command = f"python benchmarks/bench_plates.py {' '.join(sys.argv[1:])}".rstrip()
    out = Path(args.out)
    if args.part in ("plates", "both"):
        runs = part_plates(args.reps, args.jobs, args.seed)
        runs.to_csv(out.with_suffix(".csv"), index=False)
        table = plates_table(runs)
        print(table.to_string(index=False))
        write_generated_block(out, "bench_plates:plates", f"Written by `{command}`.\n\n" + markdown_table(table, ".4g"))
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
    print(f"written {out} (only its generated blocks; the prose around them is kept)")

if __name__ == "__main__":
    main()

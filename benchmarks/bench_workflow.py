"""Cost of the screening workflow's stages on the CDK2 ChEMBL export.

    python benchmarks/bench_workflow.py            # stages + per-rule totals of the last study run
    python benchmarks/bench_workflow.py --quick    # stages only, fewer repeats
    python benchmarks/bench_workflow.py --study    # also run the whole study (snakemake --cores 2) in a scratch dir

Stages timed in-process: reading the export, curation, Morgan fingerprints (radius 4, 1024
bits) and PCA (d = 20 and 40) per 1 000 molecules, the logistic ground truth, and one run of
each configured algorithm at d = 20, K = 400.  When ``results/<target>/benchmarks/`` exists
(a finished ``snakemake`` run), the per-rule CPU times Snakemake recorded are summed too.
Writes docs/reproduction/bench_workflow.md.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "docs" / "reproduction" / "bench_workflow.md"


def _best(fn, repeats):
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def stage_costs(config: dict, repeats: int) -> tuple[pd.DataFrame, dict]:
    from screenbai.chem.curate import curate_activities
    from screenbai.chem.featurize import morgan_fingerprints, reduce_pca
    from screenbai.screening import acquire_activities, draw_subset, ground_truth_arms, run_chunk

    rows = []
    fb = config["offline_fallback"]
    t, (raw, _) = _best(lambda: acquire_activities(fb, None, repo_root=REPO), repeats)
    rows.append(("read ChEMBL export", len(raw), "rows", t))
    t, (library, rep) = _best(lambda: curate_activities(raw, **config["curation"]), 1)
    rows.append(("curate (RDKit standardisation, merge)", len(raw), "rows", t))
    n = len(library)
    fz = config["featurize"]
    smiles = library["smiles"].tolist()
    t, fps = _best(lambda: morgan_fingerprints(smiles, radius=fz["radius"], n_bits=fz["n_bits"]), repeats)
    rows.append((f"Morgan fingerprints r={fz['radius']}, {fz['n_bits']} bits", n, "molecules", t))
    feats = {}
    for d in (20, 40):
        t, (f, _) = _best(lambda d=d: reduce_pca(fps, d, random_state=0), repeats)
        feats[d] = f
        rows.append((f"PCA to d = {d}", n, "molecules", t))
    table = pd.DataFrame(feats[20], columns=[f"pc{i + 1}" for i in range(20)])
    table.insert(0, "compound_id", library["compound_id"].to_numpy())
    gt = config["ground_truth"]
    t, (arms, fit) = _best(
        lambda: ground_truth_arms(library, table, threshold_nM=gt["threshold_nM"], C=gt["C"]), repeats
    )
    rows.append(("logistic ground truth, d = 20", n, "molecules", t))
    sub = draw_subset(library, 400, config["screen"]["subset_seed"])
    for entry in config["algorithms"]:
        t, rec = _best(lambda entry=entry: run_chunk(arms, sub, fit["theta_full"], entry, d=20, K=400, seed=1, start=0,
                                                     n_reps=1,
                                         max_samples=config["screen"]["max_samples"]), 1)
        rows.append((f"one run of {entry['label']}, d = 20, K = 400 ({int(rec['samples'].iat[0])} tests)", 1, "run", t))
    df = pd.DataFrame(rows, columns=["stage", "n", "unit", "seconds"])
    df["per_1000"] = np.where(df["unit"] == "molecules", df["seconds"] / df["n"] * 1000, np.nan)
    return df, {"n_compounds": n, "n_rows": len(raw)}


def rule_totals(target: str) -> pd.DataFrame | None:
    bench = REPO / "results" / target / "benchmarks"
    if not bench.is_dir():
        return None
    rows = []
    for tsv in bench.rglob("*.tsv"):
        b = pd.read_csv(tsv, sep="\t")
        name = tsv.stem
        rule = "screen " + name.split("_d")[0] if tsv.parent.name == "screen" else name.split("_d")[0]
        rows.append({"rule": rule, "jobs": 1, "wall_s": float(b["s"].iloc[0])})
    return pd.DataFrame(rows).groupby("rule", as_index=False).sum().sort_values("wall_s", ascending=False)


def whole_study(cores: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory", tmp,
                               "--configfile", str(REPO / "config" / "config.yaml"), "--cores", str(cores)],
                              capture_output=True, text=True, env={**os.environ, "SCREENBAI_SHARED_DATA": str(
                                  (REPO / os.environ.get("SCREENBAI_SHARED_DATA", "../shared/data/chembl")).resolve())})
        if proc.returncode:
            raise RuntimeError(proc.stderr[-3000:])
        return time.perf_counter() - t0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="two repeats per stage instead of five")
    ap.add_argument("--study", action="store_true", help="also time the whole study with snakemake --cores 2")
    args = ap.parse_args(argv)
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    from snakemake.utils import validate

    validate(config, str(REPO / "workflow" / "schemas" / "config.schema.yaml"))
    stages, facts = stage_costs(config, 2 if args.quick else 5)
    command = f"python benchmarks/bench_workflow.py{' --quick' if args.quick else ''}"
    lines = ["# Workflow stage costs (CDK2 ChEMBL export)", "",
             f"Machine: {os.cpu_count()} cores; command `{command}`; "
             f"{facts['n_rows']} export rows, {facts['n_compounds']} curated compounds. "
             "Best of repeats, wall-clock seconds.", "",
             "| stage | n | seconds | seconds per 1 000 molecules |", "|---|---|---|---|"]
    for r in stages.itertuples():
        per = "" if np.isnan(r.per_1000) else f"{r.per_1000:.3f}"
        lines.append(f"| {r.stage} | {r.n} {r.unit} | {r.seconds:.3f} | {per} |")
    totals = rule_totals(config["target_name"])
    if totals is not None:
        lines += ["", "Per-rule totals of the last `snakemake` run (Snakemake `benchmark:` files, job wall time "
                  "including Python start-up and imports, summed over jobs):", "",
                  "| rule | jobs | wall s (sum) | wall s per job |", "|---|---|---|---|"]
        lines += [f"| {r.rule} | {r.jobs} | {r.wall_s:.1f} | {r.wall_s / r.jobs:.1f} |" for r in totals.itertuples()]
    if args.study:
        wall = whole_study(2)
        lines += ["", "Whole study from scratch (`snakemake --cores 2`, offline fallback): "
                  f"**{wall / 60:.1f} min** wall."]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

"""Cost of the screening workflow's stages on the CDK2 ChEMBL export.

    python benchmarks/bench_workflow.py            # stages + per-rule totals of the last study run
    python benchmarks/bench_workflow.py --quick    # stages only, fewer repeats
    python benchmarks/bench_workflow.py --study    # also time the main job (snakemake --cores 2) in a fresh clone
    python benchmarks/bench_workflow.py --study-only [--offline]   # only the main job (the README's one figure)

Stages timed in-process: reading the export, curation, Morgan fingerprints (radius 4, 1024
bits) and PCA (d = 20 and 40) per 1 000 molecules, the logistic ground truth, and one run of
each configured algorithm at d = 20, K = 400.  When ``results/<target>/benchmarks/`` exists
(a finished ``snakemake`` run), the per-rule CPU times Snakemake recorded are summed too.
Writes docs/reproduction/bench_workflow.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "docs" / "reproduction" / "bench_workflow.md"
STUDY_START, STUDY_END = "<!-- main job: written by --study -->", "<!-- end of main job -->"


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
    # the fallback read as the source: its stands_in_for (the target it replaces) is no key of a source
    fb = {k: v for k, v in config["offline_fallback"].items() if k != "stands_in_for"}
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


def _machine() -> str:
    model = ""
    with contextlib.suppress(OSError):
        with open("/proc/cpuinfo") as fh:
            model = next((ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")), "")
    cpu = model or platform.processor() or platform.machine()
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}"


def whole_study(cores: int, offline: bool) -> dict:
    """The main job as a new user runs it: a fresh clone of this repository's HEAD in an empty folder,
    `snakemake --cores N` with config/config.yaml, from the ChEMBL download (or, offline, the export in data/)
    to the report.  The load average is sampled every 10 s during the run (other jobs share the cores)."""
    loads, done = [os.getloadavg()[0]], threading.Event()

    def sample():
        while not done.wait(10):
            loads.append(os.getloadavg()[0])

    env = dict(os.environ)
    if offline:  # nothing listens there: ChEMBL cannot be reached, the run uses the shipped export
        env.update(HTTPS_PROXY="http://127.0.0.1:9", HTTP_PROXY="http://127.0.0.1:9", NO_PROXY="")
    with tempfile.TemporaryDirectory() as tmp:
        clone = Path(tmp) / "screenbai"
        subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
        threading.Thread(target=sample, daemon=True).start()
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "snakemake", "--cores", str(cores)], cwd=clone,
                              capture_output=True, text=True, env=env)
        wall = time.perf_counter() - t0
        done.set()
        if proc.returncode:
            raise RuntimeError(proc.stderr[-3000:])
        provenance = json.loads((clone / "results" / "cdk2_cyclinA" / "raw" / "provenance.json").read_text())
        commit = subprocess.run(["git", "-C", str(clone), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
    fallback = "the ChEMBL export shipped in data/ (offline fallback)" if provenance["used"] == "offline_fallback" \
        else "a ChEMBL download"
    return {"wall": wall, "loads": loads, "data": fallback, "commit": commit, "cores": cores,
            "jobs": proc.stderr.count("Finished job"), "nice": os.nice(0)}


def study_section(r: dict) -> list[str]:
    m, s = divmod(round(r["wall"]), 60)
    niceness = f", at niceness {r['nice']}" if r.get("nice") else ""
    return [
        STUDY_START,
        "## The main job: how long it takes",
        "",
        f"**{m} min {s:02d} s** wall for the main job (`snakemake --cores {r['cores']}`, config/config.yaml, "
        f"{r['jobs']} jobs, from {r['data']}), run by `python benchmarks/bench_workflow.py --study-only"
        f"{' --offline' if 'offline' in r['data'] else ''}` on commit {r['commit']} in a fresh clone, with the "
        f"environment already installed{niceness}. "
        f"Machine: {_machine()}. Load: other jobs shared the cores; the 1-minute "
        f"load average was {r['loads'][0]:.1f} at the start and {np.mean(r['loads']):.1f} on average during the run "
        f"(max {max(r['loads']):.1f}; {os.cpu_count()} would mean the cores fully busy). On a busier machine it "
        "takes longer: this is the one figure for the main job's run time; the README and the configs point here.",
        STUDY_END,
        "",
    ]


def _keep_study(text: str) -> list[str]:
    """The main-job section of an existing page (kept when only the stages are measured again)."""
    if STUDY_START not in text or STUDY_END not in text:
        return []
    return text[text.index(STUDY_START):text.index(STUDY_END) + len(STUDY_END)].splitlines() + [""]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="two repeats per stage instead of five")
    ap.add_argument("--study", action="store_true", help="also time the main job (snakemake --cores 2, fresh clone)")
    ap.add_argument("--study-only", action="store_true", help="time the main job only; keep the stage tables")
    ap.add_argument("--offline", action="store_true", help="with --study: ChEMBL unreachable (the shipped export)")
    args = ap.parse_args(argv)
    old = OUT.read_text(encoding="utf-8") if OUT.is_file() else ""
    study = study_section(whole_study(2, args.offline)) if args.study or args.study_only else _keep_study(old)
    if args.study_only:
        body = old.split("\n")
        if STUDY_START in old:
            rest = (old[:old.index(STUDY_START)] + old[old.index(STUDY_END) + len(STUDY_END):]).strip("\n")
            body = rest.split("\n")
        lines = body[:2] + study + body[2:]
        OUT.write_text("\n".join(lines).rstrip("\n") + "\n", encoding="utf-8")
        print("\n".join(study))
        return
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    from snakemake.utils import validate

    validate(config, str(REPO / "workflow" / "schemas" / "config.schema.yaml"))
    stages, facts = stage_costs(config, 2 if args.quick else 5)
    command = f"python benchmarks/bench_workflow.py{' --quick' if args.quick else ''}"
    lines = ["# Workflow stage costs (CDK2 ChEMBL export)", "", *study,
             f"Machine: {_machine()}; command `{command}`; "
             f"{facts['n_rows']} export rows, {facts['n_compounds']} curated compounds. Best of repeats, "
             f"wall-clock seconds; load average {os.getloadavg()[0]:.1f} at the end.", "",
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
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

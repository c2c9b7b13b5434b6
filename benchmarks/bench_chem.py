"""Time the chemistry pipeline on the staged ChEMBL files.

Usage: ``python benchmarks/bench_chem.py`` (data from env ``SCREENBAI_SHARED_DATA`` or
``../shared/data/chembl`` relative to the repository root).  Prints one table.
"""

from __future__ import annotations

import os
import platform
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from screenbai.chem import (  # noqa: E402
    binarize,
    curate_activities,
    fit_ground_truth,
    morgan_fingerprints,
    read_chembl_export,
    reduce_pca,
)

CYCLIN_A = r"cyclin[ -/]?A\b|CycA"


def timed(fn, *args, **kwargs):
    """(result, (wall seconds, CPU seconds of this process))."""
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn(*args, **kwargs)
    return out, (time.perf_counter() - t0, time.process_time() - c0)


def fmt(t: tuple[float, float], per: float | None = None) -> tuple[str, str]:
    if per:
        return f"{1000 * t[0] / per:.3f} s/1000 mol", f"{1000 * t[1] / per:.3f} s/1000 mol"
    return f"{t[0]:.2f} s", f"{t[1]:.2f} s"


def main() -> int:
    data = Path(os.environ.get("SCREENBAI_SHARED_DATA", REPO.parent / "shared" / "data" / "chembl"))
    raw_path = data / "cdk2_chembl301_webexport_raw.csv.gz"
    egfr_path = data / "egfr_chembl203_ic50_nM_teachopencadd_chembl27.csv"
    if not raw_path.is_file():
        print(f"data not found: {raw_path} (set SCREENBAI_SHARED_DATA)", file=sys.stderr)
        return 1
    rows: list[tuple[str, str, str, str]] = []

    raw, t = timed(read_chembl_export, raw_path)
    rows.append(("read CDK2 raw export", f"{len(raw):,} rows", *fmt(t)))
    (lib, rep), t = timed(curate_activities, raw)
    rows.append(("curate CDK2 (defaults)", f"{rep.n_compounds:,} compounds", *fmt(t)))
    (lib_s, rep_s), t = timed(curate_activities, raw, censored="keep_as_value", drop_flagged=False,
                              assay_description_regex=CYCLIN_A)
    rows.append(("curate CDK2 (cyclin A, keep censored+flagged)", f"{rep_s.n_compounds:,} compounds", *fmt(t)))
    if egfr_path.is_file():
        egfr = read_chembl_export(egfr_path)
        (lib_e, rep_e), t = timed(curate_activities, egfr)
        rows.append(("curate EGFR (5,568 unique SMILES)", f"{rep_e.n_compounds:,} compounds", *fmt(t)))

    fp, t = timed(morgan_fingerprints, lib["smiles"], radius=4, n_bits=1024)
    rows.append(("Morgan r=4, 1024 bits", f"{len(fp):,} molecules", *fmt(t, per=len(fp))))
    reduce_pca(fp[:50], 2)  # warm-up: imports and BLAS initialisation are not PCA time
    for d in (5, 20, 50):
        (X, info), t = timed(reduce_pca, fp, d)
        rows.append((f"PCA d={d}", f"EVR total {info['explained_variance_ratio_total']:.3f}", *fmt(t)))
    fp_s = morgan_fingerprints(lib_s["smiles"])
    X_s, _ = reduce_pca(fp_s, 20)
    cured = binarize(lib_s["activity_nM"])
    gt, t = timed(fit_ground_truth, X_s, cured)
    rows.append(("logistic ground truth (cyclin A set, d=20)",
                 f"{gt.n_cured} cured / {gt.n_not_cured} not, AUC {gt.roc_auc:.3f}", *fmt(t)))

    head = ("step", "size", "wall", "CPU")
    w = [max(len(r[i]) for r in rows + [head]) for i in range(4)]
    print(f"screenbai chem benchmark: Python {platform.python_version()}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"| {head[0]:<{w[0]}} | {head[1]:<{w[1]}} | {head[2]:>{w[2]}} | {head[3]:>{w[3]}} |")
    print(f"|{'-' * (w[0] + 2)}|{'-' * (w[1] + 2)}|{'-' * (w[2] + 1)}:|{'-' * (w[3] + 1)}:|")
    for a, b, c, e in rows:
        print(f"| {a:<{w[0]}} | {b:<{w[1]}} | {c:>{w[2]}} | {e:>{w[3]}} |")
    print()
    print("CDK2 raw export, default curation:")
    print(rep.to_markdown())
    if egfr_path.is_file():
        print()
        print("EGFR file, default curation:")
        print(rep_e.to_markdown())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Figures and tables of a screening study, from the workflow's run records.

Plots take an ``ax`` (or create one), draw on it and return the figure; they never call
``plt.show()``: they use matplotlib's object API (``Figure``), which needs no backend and
leaves pyplot's state alone.  Metrics: mean and
quantiles of the samples used, error frequency, and runs that hit the safety cap reported
apart (a run that never stopped has no sample complexity).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

__all__ = [
    "declared_compounds",
    "ground_truth_table",
    "plot_error_rate",
    "plot_pulls_per_arm",
    "plot_samples",
    "structure_grid",
    "summarize_screens",
    "markdown_table",
    "write_report",
]

_KEYS = ["label", "algorithm", "d", "K"]


def _axes(ax):
    if ax is None:
        ax = Figure(figsize=(5.5, 4)).subplots()
    return ax.figure, ax


# ---------------------------------------------------------------------------------- tables
def summarize_screens(records: pd.DataFrame, epsilon: float = 0.1) -> pd.DataFrame:
    """One row per (algorithm label, d, K): runs, samples (mean, sd, quantiles), error rate.

    ``error_rate`` is the fraction of stopped runs whose declared compound is not
    epsilon-best (for fixed-budget algorithms: not the best); ``not_stopped`` counts runs that
    hit ``max_samples`` (kept out of the samples statistics); ``eps_error_rate`` applies the
    same epsilon-criterion to every algorithm, fixed-budget ones included; ``mean_gap`` is the
    mean cure-rate shortfall of the declared compound to the best of the K (all runs).
    """
    rows = []
    for key, g in records.groupby(_KEYS, sort=True):
        stopped = g[g["stopped"].astype(bool)]
        s = stopped["samples"].to_numpy(dtype=float)
        rows.append(
            {
                **dict(zip(_KEYS, key)),
                "runs": len(g),
                "not_stopped": int(len(g) - len(stopped)),
                "mean_samples": float(s.mean()) if s.size else np.nan,
                "sd_samples": float(s.std(ddof=1)) if s.size > 1 else np.nan,
                "median_samples": float(np.median(s)) if s.size else np.nan,
                "q10_samples": float(np.quantile(s, 0.1)) if s.size else np.nan,
                "q90_samples": float(np.quantile(s, 0.9)) if s.size else np.nan,
                "samples_per_arm": float(s.mean() / key[3]) if s.size else np.nan,
                "error_rate": float(1.0 - stopped["correct"].astype(bool).mean()) if len(stopped) else np.nan,
                "exact_best_rate": float((stopped["declared_mean_rank"] == 1).mean()) if len(stopped) else np.nan,
                # one yardstick for every algorithm: declared cure rate more than epsilon below the best
                "eps_error_rate": float(((stopped["best_mean"] - stopped["declared_mean"]) > epsilon + 1e-12).mean())
                if len(stopped) else np.nan,
                # cure-rate gap of the declared compound to the best of the K, over all runs
                "mean_gap": float((g["best_mean"] - g["declared_mean"]).mean()),
                "mean_samples_all": float(g["samples"].mean()),
                "mean_wall_time_s": float(g["wall_time_s"].mean()),
            }
        )
    return pd.DataFrame(rows)


def declared_compounds(records: pd.DataFrame) -> pd.DataFrame:
    """Per (algorithm, d, K): the compound declared best most often, beside the best of the K.

    Columns: the compound (id, SMILES when known, measured activity, its rank among the K by
    activity, its true cure rate and rank by cure rate), how often it was declared, how many
    different compounds were declared, and the most potent compound of the sample.
    """
    rows = []
    for key, g in records.groupby(_KEYS, sort=True):
        counts = g["declared_id"].value_counts()
        top = counts.index[0]
        first = g[g["declared_id"] == top].iloc[0]
        rows.append(
            {
                **dict(zip(_KEYS, key)),
                "declared_id": top,
                "declared_smiles": first.get("declared_smiles", None),
                "declared_activity_nM": float(first["declared_activity_nM"]),
                "declared_activity_rank": int(first["declared_activity_rank"]),
                "declared_cure_rate": float(first["declared_mean"]),
                "declared_cure_rate_rank": int(first["declared_mean_rank"]),
                "times_declared": int(counts.iloc[0]),
                "runs": int(len(g)),
                "distinct_declared": int(counts.size),
                "median_declared_activity_nM": float(g["declared_activity_nM"].median()),
                "best_activity_nM": float(first["best_activity_nM"]),
                "best_cure_rate": float(first["best_mean"]),
                "best_cure_rate_id": first["best_mean_id"],
            }
        )
    return pd.DataFrame(rows)


def ground_truth_table(fits: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """Class balance and logistic-fit quality per PCA dimension d."""
    rows = []
    for f in fits:
        row = {k: f[k] for k in ("d", "threshold_nM", "n_compounds", "n_cured", "n_not_cured",
                                 "mean_min", "mean_median", "mean_max") if k in f}
        row.update({k: v for k, v in (f.get("metrics") or {}).items() if np.isscalar(v) or v is None})
        rows.append(row)
    return pd.DataFrame(rows).sort_values("d").reset_index(drop=True)


# ---------------------------------------------------------------------------------- figures
def _varied(summary: pd.DataFrame, x: str, fixed: Mapping[str, int]):
    sel = summary
    for k, v in fixed.items():
        sel = sel[sel[k] == v]
    return sel.sort_values(x)


def plot_samples(summary: pd.DataFrame, x: str, fixed: Mapping[str, int], ax=None, *, show_K: bool = True):
    """Mean samples to stop (error bars: 10%-90% quantiles) against ``x`` ("d" or "K").

    ``fixed`` selects the screens (e.g. ``{"K": 400}``).  A dashed line marks K samples
    (one test per compound), the reference of the paper's "tau < K" statements.
    """
    fig, ax = _axes(ax)
    sel = _varied(summary, x, fixed)
    for label, g in sel.groupby("label", sort=False):
        y = g["mean_samples"].to_numpy(float)
        lo = y - g["q10_samples"].to_numpy(float)
        hi = g["q90_samples"].to_numpy(float) - y
        line = ax.errorbar(g[x], y, yerr=[lo, hi], marker="o", capsize=3, label=label)
        capped = g[g["not_stopped"] > 0]
        if len(capped):  # runs that hit max_samples: shown apart, at their (capped) mean
            ax.plot(capped[x], capped["mean_samples_all"], ls="none", marker="x", ms=8,
                    color=line[0].get_color(), label=f"{label}: hit the cap (not stopped)")
    if show_K:
        if x == "K":
            ks = np.sort(sel["K"].unique())
            ax.plot(ks, ks, "k--", lw=1, label="K (one test per compound)")
        elif "K" in fixed:
            ax.axhline(fixed["K"], color="k", ls="--", lw=1, label=f"K = {fixed['K']}")
    ax.set_xlabel("PCA dimension d" if x == "d" else "number of compounds K")
    ax.set_ylabel("tests until the algorithm stops\n(mean; bars: 10-90 % of runs)")
    ax.set_yscale("log")
    ax.set_title(", ".join(f"{k} = {v}" for k, v in fixed.items()))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def plot_error_rate(summary: pd.DataFrame, x: str, fixed: Mapping[str, int], ax=None, *, delta: float | None = None,
                    column: str = "eps_error_rate"):
    """Fraction of stopped runs whose declared compound is not epsilon-best, against ``x``."""
    fig, ax = _axes(ax)
    sel = _varied(summary, x, fixed)
    # curves often coincide (all at 0): open markers of decreasing size keep each one visible
    for i, (label, g) in enumerate(sel.groupby("label", sort=False)):
        ax.plot(g[x], g[column], marker="osD^v"[i % 5], ms=max(11 - 3 * i, 4), fillstyle="none",
                mew=1.5, label=label)
    if delta is not None:
        ax.axhline(delta, color="k", ls="--", lw=1, label=f"delta = {delta:g}")
    ax.set_xlabel("PCA dimension d" if x == "d" else "number of compounds K")
    ax.set_ylabel("error rate (declared > epsilon below best)" if column == "eps_error_rate" else column)
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(", ".join(f"{k} = {v}" for k, v in fixed.items()))
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def plot_pulls_per_arm(records: pd.DataFrame, means: np.ndarray, ax=None):
    """Mean tests per compound against the compound's rank by true cure rate (one line per algorithm)."""
    fig, ax = _axes(ax)
    order = np.argsort(-np.asarray(means), kind="stable")
    for label, g in records.groupby("label", sort=False):
        pulls = np.mean(np.stack([np.asarray(p, dtype=float) for p in g["pulls"]]), axis=0)
        ax.plot(np.arange(1, len(order) + 1), pulls[order], ls="none", marker=".", ms=4, alpha=0.7, label=label)
    ax.set_xlabel("compound rank by true cure rate (1 = best)")
    ax.set_ylabel("mean tests per compound")
    ax.set_yscale("symlog", linthresh=1)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def structure_grid(table: pd.DataFrame, *, smiles: str = "smiles", legend: Sequence[str] | None = None,
                   mols_per_row: int = 4, size: tuple[int, int] = (320, 300)):
    """PIL image of the structures in ``table`` (rdkit ``MolsToGridImage``)."""
    from rdkit import Chem
    from rdkit.Chem import Draw

    mols = [Chem.MolFromSmiles(s) if isinstance(s, str) else None for s in table[smiles]]
    mols = [m if m is not None else Chem.MolFromSmiles("") for m in mols]
    legends = list(legend) if legend is not None else [""] * len(mols)
    options = Draw.MolDrawOptions()
    options.legendFraction = 0.25  # room for three legend lines at a readable size
    options.legendFontSize = 18
    return Draw.MolsToGridImage(mols, molsPerRow=max(1, min(mols_per_row, len(mols))), subImgSize=size,
                                legends=legends, returnPNG=False, drawOptions=options)


# ---------------------------------------------------------------------------------- orchestration
def _fmt_nM(v: float) -> str:
    return f"{v:.3g}"


def write_report(
    records: pd.DataFrame,
    *,
    library: pd.DataFrame,
    curation: Mapping[str, Any],
    fits: Sequence[Mapping[str, Any]],
    studies: Mapping[str, Mapping[str, Any]],
    reference: tuple[int, int],
    reference_means: np.ndarray,
    outputs: Mapping[str, str | os.PathLike],
    algorithms: Sequence[Mapping[str, Any]] = (),
    title: str = "",
    mols_per_row: int = 4,
) -> dict[str, pd.DataFrame]:
    """Write every table and figure of the report (paths in ``outputs``) and a markdown summary.

    ``outputs`` keys: ``summary`` (csv), ``declared`` (csv), ``ground_truth`` (csv),
    ``structures`` (png), ``pulls`` (png), ``markdown`` (md), and ``study_<name>`` (png) per
    study.  ``reference`` is the (d, K) screen shown in the pulls and structures figures.
    """
    smiles = dict(zip(library["compound_id"], library["smiles"]))
    records = records.copy()
    records["declared_smiles"] = records["declared_id"].map(smiles)
    eps = next(((a.get("params") or {}).get("epsilon") for a in algorithms
                if (a.get("params") or {}).get("epsilon") is not None), 0.1)
    summary = summarize_screens(records, epsilon=float(eps))
    declared = declared_compounds(records)
    gt = ground_truth_table(fits)
    summary.to_csv(outputs["summary"], index=False)
    declared.to_csv(outputs["declared"], index=False)
    gt.to_csv(outputs["ground_truth"], index=False)
    deltas = {a["label"]: (a.get("params") or {}).get("delta") for a in algorithms}
    delta = next((v for v in deltas.values() if v is not None), None)

    # one figure per study: samples and error rate against the varied parameter
    for name, study in studies.items():
        d_list = study["d"] if isinstance(study["d"], list) else [study["d"]]
        k_list = study["K"] if isinstance(study["K"], list) else [study["K"]]
        fig = Figure(figsize=(11, 4))
        ax1, ax2 = fig.subplots(1, 2)
        if len(d_list) >= len(k_list):
            x, fixed = "d", {"K": int(k_list[0])}
        else:
            x, fixed = "K", {"d": int(d_list[0])}
        plot_samples(summary, x, fixed, ax1)
        plot_error_rate(summary, x, fixed, ax2, delta=delta)
        fig.suptitle(f"{title or 'screen'}: tests and errors versus {x}", fontsize=10)
        fig.tight_layout()
        fig.savefig(outputs[f"study_{name}"], dpi=110)

    d_ref, K_ref = reference
    ref = records[(records["d"] == d_ref) & (records["K"] == K_ref)]
    fig = plot_pulls_per_arm(ref, reference_means)
    fig.axes[0].set_title(f"tests per compound, d = {d_ref}, K = {K_ref}")
    fig.tight_layout()
    fig.savefig(outputs["pulls"], dpi=110)

    # structures: the compound each algorithm declared at the reference screen, and the best of the K
    dref = declared[(declared["d"] == d_ref) & (declared["K"] == K_ref)]
    grid_rows = [
        {"smiles": r.declared_smiles,
         "legend": f"{r.label} (d={d_ref}, K={K_ref})\n{r.declared_id}\nIC50 {_fmt_nM(r.declared_activity_nM)} nM, rank {r.declared_activity_rank}/{K_ref}"}
        for r in dref.itertuples()
    ]
    if len(ref):
        best_id = library.set_index("compound_id")["activity_nM"]
        sample_best = ref.iloc[0]
        best_cid = best_id[best_id == sample_best["best_activity_nM"]].index
        if len(best_cid):
            grid_rows.append({"smiles": smiles.get(best_cid[0]),
                              "legend": f"best of the {K_ref}: {best_cid[0]}\nIC50 {_fmt_nM(sample_best['best_activity_nM'])} nM"})
    grid = pd.DataFrame(grid_rows or [{"smiles": "", "legend": "no runs"}])
    img = structure_grid(grid, legend=list(grid["legend"]), mols_per_row=mols_per_row)
    img.save(outputs["structures"])

    Path(outputs["markdown"]).write_text(
        _markdown(title, curation, gt, summary, declared, reference), encoding="utf-8"
    )
    return {"summary": summary, "declared": declared, "ground_truth": gt}


def markdown_table(df: pd.DataFrame, floatfmt: str = ".4g") -> str:
    """A GitHub markdown table (no extra dependency)."""
    def cell(v):
        if isinstance(v, (float, np.floating)):
            return "" if np.isnan(v) else format(float(v), floatfmt)
        return str(v)

    head = "| " + " | ".join(map(str, df.columns)) + " |"
    sep = "|" + "---|" * len(df.columns)
    body = ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join([head, sep, *body])


def _markdown(title, curation, gt, summary, declared, reference) -> str:
    src = curation.get("source", {})
    lines = [f"# {title or 'Screening report'}", ""]
    if src.get("used") == "offline_fallback":
        lines += [f"> **WARNING: {src.get('warning')}**", ""]
    settings = src.get("settings", {})
    lines += [
        "## Data",
        "",
        f"Source used: `{settings.get('kind')}` "
        + (f"target `{settings.get('target_chembl_id')}`" if settings.get("target_chembl_id") else f"file `{settings.get('path')}`")
        + f", {src.get('n_rows', '?')} activity rows.",
        "",
        f"Curation: {curation.get('n_input')} rows in, {curation.get('n_output_rows')} measurements kept, "
        f"{curation.get('n_compounds')} compounds.",
        "",
        "| reason | rows |",
        "|---|---|",
    ]
    lines += [f"| {k} | {v} |" for k, v in (curation.get("dropped") or {}).items()]
    lines += ["", "## Ground truth (per PCA dimension d; the bandit sees d + 1 features)", "",
              markdown_table(gt), "",
              "## Samples and errors", "", markdown_table(summary.drop(columns=["algorithm"])), "",
              f"## Declared compounds (reference screen d = {reference[0]}, K = {reference[1]}, and all screens)", "",
              markdown_table(declared.drop(columns=["algorithm", "declared_smiles"])), ""]
    return "\n".join(lines)

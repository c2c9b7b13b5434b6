"""Figures and tables of a screening study, from the workflow's run records.

Plots take an ``ax`` (or create one), draw on it and return the figure; they use matplotlib's
object API (``Figure``), which needs no backend and leaves pyplot's state alone.

Every number has one definition, used by the tables and the figures alike (the run records of
:func:`screenbai.screening.score_runs` carry them):

* ``exact_error_rate``: stopped runs whose declared compounds are not all among the m best
  cure rates of the sample (m = 1: the declared compound is not the best);
* ``eps_error_rate``: stopped runs where a declared compound's cure rate is more than epsilon
  below the m-th best; when epsilon makes most of the sample a correct answer
  (``eps_good_fraction`` >= :data:`UNINFORMATIVE`), it says little, and the report says so;
* the declared compounds' measured potency: their rank among the K by measured activity
  (1 = most potent), its median over runs, and how often each compound was declared.

Runs that hit the safety cap (not stopped) are counted apart: they have no sample complexity.
The tests to stop are quoted and drawn as medians, their spread as the interquartile range.

Every algorithm's paragraph, table row and figure legend says whether its setting guarantees an
error of at most delta (from the parameters' declarations, :mod:`screenbai.guarantees`) and the
error rate docs/error_rates.md measured for that setting ("not measured" when it has none).
"""

from __future__ import annotations

import html
import os
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from screenbai.guarantees import Guarantee, guarantee_of, read_error_rates

__all__ = [
    "IMBALANCED",
    "UNINFORMATIVE",
    "algorithm_guarantees",
    "consensus",
    "declared_compounds",
    "ground_truth_table",
    "markdown_table",
    "plot_declared_potency",
    "plot_declared_rank",
    "plot_error_rate",
    "plot_pulls_per_arm",
    "plot_samples",
    "report_tables",
    "structure_grid",
    "summarize_screens",
    "summary_page",
    "write_report",
]

_KEYS = ["label", "algorithm", "d", "K"]

#: Share of the sample within epsilon of the best above which the epsilon-error says little.
UNINFORMATIVE = 0.5
#: Share of the compounds in one class of the cure label above which the label cannot tell good
#: compounds from bad (the summary says so at its top).
IMBALANCED = 0.9


def _axes(ax):
    if ax is None:
        ax = Figure(figsize=(5.5, 4)).subplots()
    return ax.figure, ax


def _format_activity(value_nM: float, activity: str) -> str:
    from screenbai.screening import format_activity

    return format_activity(value_nM, activity)


def _concentration_axis(axis) -> None:
    """A log axis of concentrations in nM whose ticks read 100 nM, 1 uM, 10 uM (not 1e+02)."""
    from screenbai.screening import format_concentration

    axis.set_major_locator(LogLocator(base=10))
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: format_concentration(v) if v > 0 else ""))
    axis.set_minor_formatter(NullFormatter())


def _legend_below(ax, ncol: int = 1, fontsize: float = 7) -> None:
    """The legend under the axes (below the x label), where it cannot cover a curve."""
    from matplotlib.transforms import ScaledTranslation, blended_transform_factory

    # 0.45 inch under the axes, whatever their height: clear of the tick labels and the x label
    at = blended_transform_factory(ax.transAxes, ax.transAxes) + ScaledTranslation(0, -0.45, ax.figure.dpi_scale_trans)
    ax.legend(fontsize=fontsize, loc="upper center", bbox_to_anchor=(0.5, 0.0), bbox_transform=at, ncol=ncol,
              frameon=False)


def _count_axis(axis) -> None:
    """A log axis of counts whose ticks read 20, 50, 100, 1000, 20 000 (not 2 x 10^1)."""
    def plain(v, _pos=None):
        return f"{v:,.0f}".replace(",", " ") if v >= 1 else f"{v:g}"

    def minor(v, _pos=None):
        lo, hi = axis.get_view_interval()
        lead = round(v / 10 ** np.floor(np.log10(v))) if v > 0 else 0
        return plain(v) if lead in (2, 5) and hi / max(lo, 1e-12) < 300 else ""

    axis.set_major_formatter(FuncFormatter(plain))
    axis.set_minor_formatter(FuncFormatter(minor))


def _name(label: str, names: Mapping[str, str] | None) -> str:
    return (names or {}).get(label, label)


def _style(df: pd.DataFrame) -> dict[str, tuple[str, str, int]]:
    """Each algorithm label's colour, marker and index, the same in every figure (labels in sorted order)."""
    return {lab: (f"C{i % 10}", "osD^v"[i % 5], i) for i, lab in enumerate(sorted(set(df["label"])))}


# ---------------------------------------------------------------------------------- tables
def _q(s: np.ndarray, q: float) -> float:
    return float(np.quantile(s, q)) if s.size else np.nan


def summarize_screens(records: pd.DataFrame) -> pd.DataFrame:
    """One row per (algorithm label, d, K): tests to stop, both error rates, declared potency.

    Sample statistics and error rates are over the runs that stopped (``not_stopped`` counts
    the others).  ``eps_good_fraction``: share of the K compounds that epsilon makes correct;
    ``median_declared_rank``: median over runs of the declared compounds' rank by measured
    activity among the K (1 = most potent), also as a percentage of K.
    """
    rows = []
    for key, g in records.groupby(_KEYS, sort=True):
        stopped = g[g["stopped"].astype(bool)]
        s = stopped["samples"].to_numpy(dtype=float)
        K = int(key[3])
        ranks = g["declared_rank_median"].to_numpy(dtype=float)
        declared_nM = np.concatenate([np.asarray(v, dtype=float) for v in g["declared_activity_nM"]])
        rows.append(
            {
                **dict(zip(_KEYS, key)),
                "m": int(g["m"].iloc[0]),
                "epsilon": float(g["epsilon"].iloc[0]),
                "runs": len(g),
                "not_stopped": int(len(g) - len(stopped)),
                "mean_samples": float(s.mean()) if s.size else np.nan,
                "sd_samples": float(s.std(ddof=1)) if s.size > 1 else np.nan,
                "median_samples": float(np.median(s)) if s.size else np.nan,
                "q10_samples": _q(s, 0.1),
                "q25_samples": _q(s, 0.25),
                "q75_samples": _q(s, 0.75),
                "q90_samples": _q(s, 0.9),
                "samples_per_compound": float(s.mean() / K) if s.size else np.nan,
                "exact_error_rate": float(stopped["exact_error"].astype(bool).mean()) if len(stopped) else np.nan,
                "eps_error_rate": float(stopped["eps_error"].astype(bool).mean()) if len(stopped) else np.nan,
                "eps_good_fraction": float(g["n_eps_good"].iloc[0]) / K,
                "median_declared_rank": float(np.median(ranks)),
                "median_declared_rank_pct": float(100.0 * np.median(ranks) / K),
                "median_declared_activity_nM": float(np.median(declared_nM)),
                "best_activity_nM": float(g["best_activity_nM"].iloc[0]),
                "distinct_declared": len({c for ids in g["declared_ids"] for c in ids}),
                "mean_samples_all": float(g["samples"].mean()),
                "median_samples_all": float(g["samples"].median()),
                "mean_wall_time_s": float(g["wall_time_s"].mean()),
                # the anytime certificate of the runs, when the records carry it
                **({"median_certified_epsilon": float(np.nanmedian(g["certified_epsilon"].to_numpy(dtype=float)))}
                   if "certified_epsilon" in g.columns and g["certified_epsilon"].notna().any() else {}),
                **({"certified_guaranteed": bool(g["certified_guaranteed"].astype(bool).all())}
                   if "certified_guaranteed" in g.columns else {}),
            }
        )
    return pd.DataFrame(rows)


def algorithm_guarantees(
    records: pd.DataFrame, algorithms: Sequence[Mapping[str, Any]] = (), error_rates: pd.DataFrame | None = None
) -> dict[str, Guarantee | None]:
    """Each algorithm label's :class:`~screenbai.guarantees.Guarantee`: from the parameters the runs
    used (the records' ``params``), else from the config entry of that label (``algorithms``);
    None for an algorithm that is not registered.  ``error_rates``: the error-rate records
    (default: docs/error_rates_records.csv)."""
    from screenbai.bandits.core.registry import available

    table = read_error_rates() if error_rates is None else error_rates
    entries = {a["label"]: a for a in algorithms}
    out: dict[str, Guarantee | None] = {}
    for label, g in records.groupby("label", sort=False):
        first = g.iloc[0]
        entry = entries.get(label, {})
        algorithm = str(first["algorithm"]) if "algorithm" in g.columns else entry.get("algorithm", "")
        params = first["params"] if "params" in g.columns else (entry.get("params") or {})
        out[label] = guarantee_of(algorithm, params, table) if algorithm.lower() in available() else None
    return out


def _tag(guarantee: Guarantee | None) -> str:
    return guarantee.tag if guarantee is not None else "guarantee unknown"


def _measured_rate(guarantees: Mapping[str, Guarantee | None]) -> dict[str, str]:
    return {lab: g.measured_rate() if g is not None else "not measured" for lab, g in guarantees.items()}


def consensus(declared: pd.DataFrame, m: int = 1) -> tuple[bool, pd.DataFrame]:
    """Whether the runs agree on the m compounds declared most often (``declared``: the rows of one
    algorithm and screen of :func:`declared_compounds`), and those compounds: every compound
    declared at least as often as the m-th most often declared one.  More than m of them (a tie
    at the m-th place) means no consensus: the report lists them all instead of picking one."""
    if not len(declared):
        return False, declared
    counts = np.sort(declared["times_declared"].to_numpy())[::-1]
    top = declared[declared["times_declared"] >= counts[min(m, len(counts)) - 1]]
    return len(top) == m, top


def declared_compounds(records: pd.DataFrame, smiles: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Every compound declared on each screen, with how often it was declared and its potency.

    One row per (algorithm, d, K, compound), most often declared first: ``times_declared`` of
    ``runs``, measured activity and its rank among the K (1 = most potent), true cure rate and
    its rank, and the most potent compound of the sample for comparison.
    """
    rows = []
    for key, g in records.groupby(_KEYS, sort=True):
        seen: dict[str, dict] = {}
        for r in g.itertuples():
            for j, cid in enumerate(r.declared_ids):
                entry = seen.setdefault(cid, {
                    "compound_id": cid,
                    "times_declared": 0,
                    "activity_nM": float(r.declared_activity_nM[j]),
                    "activity_rank": int(r.declared_activity_rank[j]),
                    "cure_rate": float(r.declared_mean[j]),
                    "cure_rate_rank": int(r.declared_mean_rank[j]),
                })
                entry["times_declared"] += 1
        first = g.iloc[0]
        for entry in sorted(seen.values(), key=lambda e: (-e["times_declared"], e["activity_rank"])):
            rows.append({
                **dict(zip(_KEYS, key)),
                **entry,
                "runs": len(g),
                "smiles": (smiles or {}).get(entry["compound_id"]),
                "most_potent_id": first["best_activity_id"],
                "best_activity_nM": float(first["best_activity_nM"]),
            })
    return pd.DataFrame(rows)


#: the ground truth's fit metrics, named for what they measure: on the compounds the logistic model
#: was fitted on (in-sample, optimistic) or cross-validated (each compound predicted without it)
_FIT_METRICS = {
    "accuracy": "accuracy on the fitted compounds (in-sample)",
    "roc_auc": "AUC on the fitted compounds (in-sample)",
    "log_loss": "log-loss on the fitted compounds (in-sample)",
    "brier": "Brier on the fitted compounds (in-sample)",
    "cv_folds": "CV folds",
    "cv_roc_auc": "AUC cross-validated",
    "cv_log_loss": "log-loss cross-validated",
    "cv_brier": "Brier cross-validated",
}


def ground_truth_table(fits: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """Class balance and logistic-fit quality per PCA dimension d; the fit metrics say whether they
    are on the fitted compounds (in-sample) or cross-validated."""
    rows = []
    for f in fits:
        row = {k: f[k] for k in ("d", "threshold_nM", "n_compounds", "n_cured", "n_not_cured",
                                 "mean_min", "mean_median", "mean_max") if k in f}
        row.update({_FIT_METRICS.get(k, k): v for k, v in (f.get("metrics") or {}).items()
                    if (np.isscalar(v) or v is None) and k not in row})
        rows.append(row)
    return pd.DataFrame(rows).sort_values("d").reset_index(drop=True)


def _typed(df: pd.DataFrame, activity: str) -> pd.DataFrame:
    """Name the activity columns after the measured quantity (``activity_nM`` -> ``Ki_nM``)."""
    out = df.copy()
    for col in [c for c in out.columns if "activity_nM" in c]:
        if activity == "pChEMBL":
            out[col.replace("activity_nM", "pChEMBL")] = 9.0 - np.log10(out.pop(col).astype(float))
        else:
            out = out.rename(columns={col: col.replace("activity_nM", f"{activity}_nM")})
    return out.rename(columns={c: c.replace("activity_rank", f"{activity}_rank")
                               for c in out.columns if "activity_rank" in c})


# ---------------------------------------------------------------------------------- figures
def _varied(summary: pd.DataFrame, x: str, fixed: Mapping[str, int]):
    sel = summary
    for k, v in fixed.items():
        sel = sel[sel[k] == v]
    return sel.sort_values(x, kind="stable")


def _xlabel(x: str) -> str:
    return "PCA dimension d" if x == "d" else "number of compounds K"


def plot_samples(summary: pd.DataFrame, x: str, fixed: Mapping[str, int], ax=None, *, show_K: bool = True,
                 names: Mapping[str, str] | None = None):
    """Median tests to stop (bars: interquartile range of the stopped runs) against ``x`` ("d" or "K"):
    the statistic the text quotes.

    ``fixed`` selects the screens (e.g. ``{"K": 400}``).  A dashed line marks K tests (one test
    per compound), the reference of the paper's "tau < K" statements.  ``names``: the legend's
    name of each label (e.g. with its guarantee).
    """
    fig, ax = _axes(ax)
    sel = _varied(summary, x, fixed)
    style = _style(summary)
    for label, g in sel.groupby("label", sort=False):
        y = g["median_samples"].to_numpy(float)
        lo = y - g["q25_samples"].to_numpy(float)
        hi = g["q75_samples"].to_numpy(float) - y
        line = ax.errorbar(g[x], y, yerr=[lo, hi], marker=style[label][1], color=style[label][0], capsize=3,
                           label=_name(label, names))
        capped = g[g["not_stopped"] > 0]
        if len(capped):  # runs that hit max_samples: shown apart, at the median of all runs (capped ones at the cap)
            ax.plot(capped[x], capped["median_samples_all"], ls="none", marker="x", ms=8,
                    color=line[0].get_color(), label=f"{_name(label, names)}: hit the cap (not stopped)")
    if show_K:
        if x == "K":
            ks = np.sort(sel["K"].unique())
            ax.plot(ks, ks, "k--", lw=1, label="K (one test per compound)")
        elif "K" in fixed:
            ax.axhline(fixed["K"], color="k", ls="--", lw=1, label=f"K = {fixed['K']} (one test per compound)")
    ax.set_xlabel(_xlabel(x))
    ax.set_ylabel("tests until the algorithm stops\n(median; bars: 25-75 % of stopped runs)")
    ax.set_yscale("log")
    _count_axis(ax.yaxis)
    ax.set_title("tests to stop, " + ", ".join(f"{k} = {v}" for k, v in fixed.items()), fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    _legend_below(ax)
    return fig


def plot_error_rate(summary: pd.DataFrame, x: str, fixed: Mapping[str, int], ax=None, *, delta: float | None = None,
                    names: Mapping[str, str] | None = None):
    """Exact-best error (solid) and epsilon-error (dashed) of the stopped runs against ``x``.

    Where epsilon makes at least :data:`UNINFORMATIVE` of the sample correct, the epsilon-error
    is not drawn (a flat line at 0 would say nothing) and a note under the panel says so.
    """
    fig, ax = _axes(ax)
    sel = _varied(summary, x, fixed)
    hidden = []
    style = _style(summary)
    for label, g in sel.groupby("label", sort=False):
        name = _name(label, names)
        color, marker, i = style[label]
        line, = ax.plot(g[x], g["exact_error_rate"], marker=marker, ms=max(9 - 2 * i, 4), color=color,
                        fillstyle="none", mew=1.5, label=f"{name}: not the exact best")
        informative = g["eps_good_fraction"] < UNINFORMATIVE
        if informative.any():
            ax.plot(g.loc[informative, x], g.loc[informative, "eps_error_rate"], ls="--", marker=marker,
                    ms=4, color=line.get_color(), label=f"{name}: more than epsilon below")
        if (~informative).any():
            hidden.append((label, float(g["epsilon"].iloc[0]), float(g["eps_good_fraction"].max())))
    if delta is not None:
        ax.axhline(delta, color="k", ls=":", lw=1, label=f"delta = {delta:g}")
    if hidden:  # in the legend's place under the panel, never over the curves
        groups: dict[tuple[float, float], list[str]] = {}
        for lab, e, f in hidden:
            groups.setdefault((e, round(f, 2)), []).append(lab)
        text = "\n".join(textwrap.fill(f"epsilon = {e:g} counts up to {f:.0%} of the sample as correct "
                                        f"({', '.join(labs)}): epsilon-error not drawn", 60)
                          for (e, f), labs in groups.items())
        ax.plot([], [], ls="none", label=text)
    ax.set_xlabel(_xlabel(x))
    ax.set_ylabel("error rate (stopped runs)")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title("errors, " + ", ".join(f"{k} = {v}" for k, v in fixed.items()), fontsize=10)
    ax.grid(True, alpha=0.3)
    _legend_below(ax)
    return fig


def plot_declared_rank(summary: pd.DataFrame, x: str, fixed: Mapping[str, int], ax=None, *, activity: str = "IC50",
                       names: Mapping[str, str] | None = None):
    """Median rank of the declared compounds by measured activity, as % of the sample (lower = more potent)."""
    fig, ax = _axes(ax)
    sel = _varied(summary, x, fixed)
    style = _style(summary)
    for label, g in sel.groupby("label", sort=False):
        ax.plot(g[x], g["median_declared_rank_pct"], marker=style[label][1], color=style[label][0],
                label=_name(label, names))
    ax.axhline(10, color="k", ls="--", lw=1, label="top 10 % of the sample")
    ax.axhline(50, color="0.5", ls=":", lw=1, label="a random compound (median)")
    ax.set_xlabel(_xlabel(x))
    ax.set_ylabel(f"declared compounds' rank by measured {activity}\n(median over runs, % of K; 0 = most potent)")
    ax.set_ylim(0, 100)
    ax.invert_yaxis()
    ax.set_title("potency of the declared compounds", fontsize=10)
    ax.grid(True, alpha=0.3)
    _legend_below(ax)
    return fig


def plot_pulls_per_arm(records: pd.DataFrame, means: np.ndarray, ax=None, *, names: Mapping[str, str] | None = None,
                       title: str | None = None):
    """Mean tests per compound against the compound's rank by true cure rate (one series per algorithm).

    ``title`` is wrapped to the axes' width (a long study title was cut at both sides)."""
    fig, ax = _axes(ax)
    if title:
        width = max(30, int(ax.get_position().width * fig.get_figwidth() * 72 / 9 * 1.6))  # characters at 9 pt
        ax.set_title("\n".join(textwrap.fill(line, width) for line in title.split("\n")), fontsize=9)
    order = np.argsort(-np.asarray(means), kind="stable")
    style = _style(records)
    for label, g in records.groupby("label", sort=False):
        pulls = np.mean(np.stack([np.asarray(p, dtype=float) for p in g["pulls"]]), axis=0)
        ax.plot(np.arange(1, len(order) + 1), pulls[order], ls="none", marker=".", ms=4, alpha=0.7,
                color=style[label][0], label=_name(label, names))
    ax.set_xlabel("compound rank by true cure rate (1 = best)")
    ax.set_ylabel("mean tests per compound")
    ax.set_yscale("symlog", linthresh=1)
    _count_axis(ax.yaxis)
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.grid(True, alpha=0.3)
    _legend_below(ax, ncol=2, fontsize=8)
    return fig


def plot_declared_potency(declared: pd.DataFrame, arms: pd.DataFrame | None = None, ax=None, *,
                          activity: str = "IC50", threshold_nM: float | None = None,
                          names: Mapping[str, str] | None = None, title: str | None = None):
    """Each declared compound's estimated cure rate (the ground truth's logistic fit, bars: its 95 %
    interval) beside its measured potency, one colour per algorithm, the marker's size growing with
    how often it was declared; the other compounds of the sample in grey (``arms``: compound_id,
    activity_nM, mean), and the cure label's threshold.

    ``declared``: the rows of one screen of :func:`declared_compounds`, with ``cure_rate_lo95``
    and ``cure_rate_hi95`` when the interval is known.
    """
    fig, ax = _axes(ax)
    if arms is not None and len(arms):
        ax.plot(arms["activity_nM"], arms["mean"], ls="none", marker=".", ms=5, color="0.7",
                label="the other compounds of the sample", zorder=1)
    labels = sorted(set(declared["label"]))
    style = _style(declared)
    shift = {lab: 10 ** (0.04 * (i - (len(labels) - 1) / 2)) for i, lab in enumerate(labels)}  # side by side
    for label in labels:
        g = declared[declared["label"] == label]
        x = g["activity_nM"].to_numpy(float) * shift[label]
        y = g["cure_rate"].to_numpy(float)
        if {"cure_rate_lo95", "cure_rate_hi95"} <= set(g.columns):
            err = [y - g["cure_rate_lo95"].to_numpy(float), g["cure_rate_hi95"].to_numpy(float) - y]
        else:
            err = None
        color, marker, _ = style[label]
        ax.errorbar(x, y, yerr=err, ls="none", color=color, elinewidth=1, capsize=2, zorder=2)
        size = 12 + 60 * g["times_declared"].to_numpy(float) / g["runs"].to_numpy(float)
        ax.scatter(x, y, s=size, marker=marker, color=color, edgecolor="k", lw=0.5, zorder=3,
                   label=_name(label, names))
    from screenbai.screening import format_concentration

    quantity = "activity (from pChEMBL values)" if activity == "pChEMBL" else activity
    if threshold_nM is not None:
        ax.axvline(threshold_nM, color="k", ls="--", lw=1,
                   label=f"cure label: {quantity} < {format_concentration(threshold_nM)}")
    ax.set_xscale("log")
    _concentration_axis(ax.xaxis)
    ax.invert_xaxis()  # more potent to the right
    ax.set_xlabel(f"measured {quantity} (more potent to the right)")
    ax.set_ylabel("estimated cure rate (ground truth's logistic fit;\nbars: 95 % interval)")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(("\n".join(textwrap.fill(line, 80) for line in title.split("\n")) + "\n" if title else "")
                 + "declared compounds: estimated cure rate and measured potency\n"
                 "(marker size: share of runs that declared it)", fontsize=9)
    ax.grid(True, which="major", alpha=0.3)
    _legend_below(ax, ncol=2)
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
    # RDKit's stubs type these properties as MolDrawOptions
    options.legendFraction = 0.3  # type: ignore[assignment]  # room for three legend lines
    options.legendFontSize = 16  # type: ignore[assignment]
    return Draw.MolsToGridImage(mols, molsPerRow=max(1, min(mols_per_row, len(mols))), subImgSize=size,
                                legends=legends, returnPNG=False, drawOptions=options)


# ---------------------------------------------------------------------------------- the summary page
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


def write_generated_block(path: str | os.PathLike, name: str, content: str) -> None:
    """Put ``content`` between the lines ``<!-- name:begin -->`` and ``<!-- name:end -->`` of the text
    file ``path`` and leave everything else (the prose a person wrote around it) as it was.

    A file without these markers gets them, with the content, appended at its end (a missing file is
    created).  Markers that are unpaired, repeated or out of order are an error: nothing is written.
    """
    path = Path(path)
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    block = f"{begin}\n{content.strip()}\n{end}"
    lines = text.splitlines()
    at_begin = [i for i, line in enumerate(lines) if line.strip() == begin]
    at_end = [i for i, line in enumerate(lines) if line.strip() == end]
    if not at_begin and not at_end:
        text = (text.rstrip() + "\n\n" if text.strip() else "") + block + "\n"
    elif len(at_begin) == 1 and len(at_end) == 1 and at_begin[0] < at_end[0]:
        text = "\n".join(lines[: at_begin[0]] + [block] + lines[at_end[0] + 1 :]) + "\n"
    else:
        raise ValueError(
            f"{path}: the generated block {name!r} needs exactly one {begin!r} line before one {end!r} "
            f"line (found begin on lines {[i + 1 for i in at_begin]}, end on lines {[i + 1 for i in at_end]}); "
            "fix the markers by hand"
        )
    path.write_text(text, encoding="utf-8")


def html_table(df: pd.DataFrame, floatfmt: str = ".4g") -> str:
    return df.to_html(index=False, na_rep="", border=0, classes="screenbai",
                      float_format=lambda v: format(v, floatfmt), escape=True)


_CSS = """<style>
.screenbai-summary { font-family: sans-serif; font-size: 14px; }
.screenbai-summary .warning { border: 2px solid #b00; background: #fee; padding: 8px; font-weight: bold; }
table.screenbai { border-collapse: collapse; font-size: 12px; margin: 6px 0 14px 0; }
table.screenbai th, table.screenbai td { border: 1px solid #ccc; padding: 2px 6px; text-align: right; }
table.screenbai th { background: #eee; }
</style>"""


class _Page:
    """A page built once and written as markdown (summary.md) and as HTML (the report's summary)."""

    def __init__(self):
        self.blocks: list[tuple[str, Any]] = []

    def heading(self, text, level=2):
        self.blocks.append(("h", (level, text)))

    def para(self, text):
        self.blocks.append(("p", text))

    def warning(self, text):
        self.blocks.append(("w", text))

    def items(self, texts):
        self.blocks.append(("ul", list(texts)))

    def table(self, df):
        self.blocks.append(("t", df))

    def markdown(self) -> str:
        out = []
        for kind, v in self.blocks:
            if kind == "h":
                out += ["#" * v[0] + " " + v[1], ""]
            elif kind == "p":
                out += [v, ""]
            elif kind == "w":
                out += [f"> **WARNING: {v}**", ""]
            elif kind == "ul":
                out += [f"- {t}" for t in v] + [""]
            else:
                out += [markdown_table(v), ""]
        return "\n".join(out)

    def html(self) -> str:
        out = [_CSS, '<div class="screenbai-summary">']
        for kind, v in self.blocks:
            if kind == "h":
                out.append(f"<h{v[0] + 1}>{html.escape(v[1])}</h{v[0] + 1}>")
            elif kind == "p":
                out.append(f"<p>{html.escape(v)}</p>")
            elif kind == "w":
                out.append(f'<p class="warning">WARNING: {html.escape(v)}</p>')
            elif kind == "ul":
                out.append("<ul>" + "".join(f"<li>{html.escape(t)}</li>" for t in v) + "</ul>")
            else:
                out.append(html_table(v))
        out.append("</div>")
        return "\n".join(out)


def label_warning(label: Mapping[str, Any]) -> str | None:
    """The warning a cure label earns when more than :data:`IMBALANCED` of the compounds fall in one
    class: it cannot tell good compounds from bad (an algorithm declaring a weak compound is still
    "correct"); None otherwise."""
    n = int(label.get("n_compounds") or 0)
    cured = int(label.get("n_cured") or 0)
    if n <= 0:
        return None
    share, side = max((cured / n, "cure"), ((n - cured) / n, "do not cure"))
    if share <= IMBALANCED:
        return None
    return (f"the cure label {label.get('description')} cannot tell good compounds from bad: {share:.1%} of the "
            f"{n} compounds {side} (more than {IMBALANCED:.0%} in one class), so nearly every compound's cure rate "
            "is close to the best and an algorithm can declare a weak compound and still be counted correct. "
            "Judge the answers by their measured potency below, or choose a threshold near the potency you want "
            "(ground_truth.threshold_nM) or ground_truth.potent_fraction")


def _provenance(page: _Page, curation: Mapping[str, Any], label: Mapping[str, Any], activity: str):
    src = curation.get("source", {})
    settings = src.get("settings", {})
    if src.get("used") == "offline_fallback":
        page.warning(str(src.get("warning")))
    for text in (label_warning(label), (label.get("K_clipped") or {}).get("message")):
        if text:
            page.warning(text)
    where = (f"ChEMBL target {settings.get('target_chembl_id')}" if settings.get("target_chembl_id")
             else f"file {settings.get('path')} ({settings.get('kind')})")
    used = "the offline fallback" if src.get("used") == "offline_fallback" else "the configured source"
    declared_as = (f"{activity} (given as pChEMBL values, -log10 molar, converted to nM"
                   if label.get("pchembl_of") else f"{activity} (as declared")
    p_name = activity if activity == "pChEMBL" else f"p{activity}"
    page.heading("Data")
    page.items([
        f"Activities: {where}, {used}; {src.get('n_rows', '?')} rows.",
        f"Activity type: {declared_as}; rows per declared type in the data: "
        + ", ".join(f"{k} {v}" for k, v in (label.get("rows_per_type") or {}).items()) + ").",
        (f"Curation: {curation.get('n_input')} rows in, {curation.get('n_output_rows')} measurements kept, "
         f"{curation.get('n_compounds')} compounds."),
        (f"Cure label: {label.get('description')}: {label.get('n_cured')} of {label.get('n_compounds')} compounds "
         f"cure ({100.0 * label.get('n_cured', 0) / max(label.get('n_compounds', 1), 1):.1f} %); threshold "
         f"{label.get('threshold_nM', float('nan')):.4g} nM = {p_name} "
         f"{label.get('threshold_pActivity', float('nan')):.2f}."),
    ])
    dropped = curation.get("dropped") or {}
    if dropped:
        page.table(pd.DataFrame({"dropped because": list(dropped), "rows": list(dropped.values())}))


def _declared_words(rows: pd.DataFrame, activity: str, K: int) -> str:
    return "; ".join(f"{r.compound_id} ({_format_activity(r.activity_nM, activity)}, rank {r.activity_rank} of {K})"
                     for r in rows.itertuples())


def _findings(summary: pd.DataFrame, declared: pd.DataFrame, reference: tuple[int, int], activity: str,
              guarantees: Mapping[str, Guarantee | None] | None = None) -> list[str]:
    """One paragraph per algorithm at the reference screen: what a chemist would want to know, first
    whether its setting guarantees its error and what was measured for it."""
    d_ref, K_ref = reference
    out = []
    for r in summary[(summary["d"] == d_ref) & (summary["K"] == K_ref)].itertuples():
        names = "1 compound" if r.m == 1 else f"{r.m} compounds"
        whose = "declared compound's" if r.m == 1 else f"{r.m} declared compounds'"
        distinct = f"{r.distinct_declared} different compound{'s' if r.distinct_declared > 1 else ''}"
        rows = declared[(declared["label"] == r.label) & (declared["d"] == d_ref) & (declared["K"] == K_ref)]
        agreed, top = consensus(rows, int(r.m))
        if not len(top):
            most = ""
        elif agreed:
            what = "Most often declared" if r.m == 1 else f"The {r.m} most often declared"
            counts = sorted(set(top["times_declared"]), reverse=True)
            most = (f" {what}: {_declared_words(top, activity, K_ref)}, "
                    f"{'/'.join(map(str, counts))} of {r.runs} runs.")
        else:
            most = (f" No consensus: {len(top)} compounds tie as most often declared "
                    f"({int(top['times_declared'].min())} of {r.runs} runs each"
                    + (f", where {r.m} are named per run" if r.m > 1 else "")
                    + f"): {_declared_words(top, activity, K_ref)}.")
        tests = (
            f"stopped after {r.median_samples:.0f} tests (median; {'fewer' if r.median_samples < K_ref else 'more'} "
            f"than the {K_ref} compounds)"
            if r.runs > r.not_stopped
            else "never stopped"
        )
        eps_note = (f"epsilon = {r.epsilon:g} counts {r.eps_good_fraction:.0%} of the sample as correct, so the "
                    "epsilon-error says little here" if r.eps_good_fraction >= UNINFORMATIVE
                    else f"more than epsilon = {r.epsilon:g} below: {r.eps_error_rate:.2f}")
        g = (guarantees or {}).get(r.label)
        promise = (f"{g.tag.upper() if g.kind == 'none' else g.tag}, measured error rate {g.measured_rate()}"
                   if g is not None else "guarantee unknown (the algorithm is not registered)")
        certified = ""
        if "median_certified_epsilon" in summary.columns and np.isfinite(r.median_certified_epsilon):
            unproven = "certified_guaranteed" in summary.columns and not bool(r.certified_guaranteed)
            certified = (f" Certified epsilon (median over runs): {r.median_certified_epsilon:.3g}"
                         + (" (not a guarantee under this setting)." if unproven else "."))
        out.append(
            f"{r.label} (d = {d_ref}, K = {K_ref}, names {names}; {promise}): {tests}"
            + (f", {r.not_stopped} of {r.runs} runs hit the cap" if r.not_stopped else "")
            + f". The {whose} median rank by measured {activity} is {r.median_declared_rank:.0f} of {K_ref} "
            f"(top {r.median_declared_rank_pct:.1f} %; "
            f"median {_format_activity(r.median_declared_activity_nM, activity)}, "
            f"best of the sample {_format_activity(r.best_activity_nM, activity)}); {distinct} "
            f"declared in {r.runs} runs. Error: not the exact best {r.exact_error_rate:.2f}; {eps_note}."
            + certified + most
        )
    return out


# ---------------------------------------------------------------------------------- orchestration
def write_report(
    records: pd.DataFrame,
    *,
    library: pd.DataFrame,
    curation: Mapping[str, Any],
    label: Mapping[str, Any],
    fits: Sequence[Mapping[str, Any]],
    studies: Mapping[str, Mapping[str, Any]],
    reference: tuple[int, int],
    reference_means: np.ndarray,
    outputs: Mapping[str, str | os.PathLike],
    algorithms: Sequence[Mapping[str, Any]] = (),
    title: str = "",
    activity: str = "IC50",
    mols_per_row: int = 4,
    reference_arms: pd.DataFrame | None = None,
    error_rates: pd.DataFrame | None = None,
) -> dict[str, pd.DataFrame]:
    """Write every table and figure of the report (paths in ``outputs``), as CSV, markdown and HTML.

    ``outputs`` keys: ``summary``, ``declared``, ``ground_truth`` (csv, and the same with
    ``_html``), ``structures``, ``pulls`` (png), ``markdown`` (md), ``page`` (the HTML summary),
    ``study_<name>`` (png) per study and, optionally, ``potency`` (png: the declared compounds'
    estimated cure rate beside their measured potency).  ``label`` is the cure label of the curate
    rule; ``activity`` names the measured quantity (IC50, Ki, ...) in every table and figure.
    ``reference`` is the (d, K) screen of the pulls, potency and structures figures;
    ``reference_arms`` the ground truth's arms of its K compounds at its d (``compound_id``,
    ``activity_nM``, ``mean`` and, when known, the interval ``mean_lo95``, ``mean_hi95``).
    ``error_rates``: the measured error rates (default: docs/error_rates_records.csv) each
    algorithm's guarantee is quoted with.
    """
    smiles = dict(zip(library["compound_id"], library["smiles"]))
    built = report_tables(records, library=library, fits=fits, reference=reference, algorithms=algorithms,
                          reference_arms=reference_arms, error_rates=error_rates)
    summary, declared, gt, guarantees = (built[k] for k in ("summary", "declared", "ground_truth", "guarantees"))
    names = {lab: f"{lab} ({_tag(g)})" for lab, g in guarantees.items()}
    tables = {"summary": _typed(summary.drop(columns=["algorithm"]), activity),
              "declared": _typed(declared.drop(columns=["algorithm"]), activity), "ground_truth": gt}
    for key, df in tables.items():
        df.to_csv(outputs[key], index=False)
        if f"{key}_html" in outputs:
            Path(outputs[f"{key}_html"]).write_text(_CSS + "\n" + html_table(df), encoding="utf-8")
    deltas = [(a.get("params") or {}).get("delta") for a in algorithms]
    delta = next((v for v in deltas if v is not None), None)
    raw_title, title = title, _title(title, curation)

    for name, study in studies.items():
        d_list = study["d"] if isinstance(study["d"], list) else [study["d"]]
        k_list = study["K"] if isinstance(study["K"], list) else [study["K"]]
        x, fixed = ("d", {"K": int(k_list[0])}) if len(d_list) >= len(k_list) else ("K", {"d": int(d_list[0])})
        fig = Figure(figsize=(16, 6.2), layout="constrained")  # room for the legends under the panels
        ax1, ax2, ax3 = fig.subplots(1, 3)
        plot_samples(summary, x, fixed, ax1, names=names)
        plot_error_rate(summary, x, fixed, ax2, delta=delta, names=names)
        plot_declared_rank(summary, x, fixed, ax3, activity=activity, names=names)
        fig.suptitle(textwrap.fill(f"{title}: tests, errors and potency versus {x}", 150), fontsize=11)
        fig.savefig(outputs[f"study_{name}"], dpi=100, bbox_inches="tight")

    d_ref, K_ref = reference
    ref = records[(records["d"] == d_ref) & (records["K"] == K_ref)]
    fig = plot_pulls_per_arm(ref, reference_means, names=names,
                             title=f"{title}\ntests per compound, d = {d_ref}, K = {K_ref}")
    fig.savefig(outputs["pulls"], dpi=110, bbox_inches="tight")

    dref = declared[(declared["d"] == d_ref) & (declared["K"] == K_ref)]
    if "potency" in outputs:
        sample = (None if reference_arms is None
                  else reference_arms[~reference_arms["compound_id"].isin(set(dref["compound_id"]))])
        fig = plot_declared_potency(dref, sample, activity=activity, threshold_nM=label.get("threshold_nM"),
                                    names=names, title=f"{title}\nd = {d_ref}, K = {K_ref}")
        fig.set_size_inches(7, 5.5)
        fig.savefig(outputs["potency"], dpi=110, bbox_inches="tight")

    # structures: what each algorithm declared most often at the reference screen, and the best of the K
    per_alg = max(1, min(4, int(summary["m"].max()) if len(summary) else 1))
    m_of = summary.drop_duplicates("label").set_index("label")["m"]
    tied = {lab for lab, g in dref.groupby("label", sort=False) if not consensus(g, int(m_of.get(lab, 1)))[0]}
    grid_rows = [
        {"smiles": r.smiles,
         "legend": f"{names.get(r.label, r.label)}\n{r.times_declared} of {r.runs} runs"
                   f"{' (tied: no consensus)' if r.label in tied else ''}, {r.compound_id}\n"
                   f"{_format_activity(r.activity_nM, activity)}, rank {r.activity_rank}/{K_ref}"}
        for _, g in dref.groupby("label", sort=False) for r in g.head(per_alg).itertuples()
    ]
    if len(ref):
        first = ref.iloc[0]
        grid_rows.append({"smiles": smiles.get(first["best_activity_id"]),
                          "legend": f"most potent of the {K_ref}\n{first['best_activity_id']}\n"
                                    f"{_format_activity(first['best_activity_nM'], activity)}"})
    grid = pd.DataFrame(grid_rows or [{"smiles": "", "legend": "no runs"}])
    img = structure_grid(grid, legend=list(grid["legend"]), mols_per_row=mols_per_row)
    img.save(outputs["structures"])

    page = summary_page(built, curation=curation, label=label, reference=reference, activity=activity,
                        title=raw_title)
    Path(outputs["markdown"]).write_text(page.markdown(), encoding="utf-8")
    if "page" in outputs:
        Path(outputs["page"]).write_text(page.html(), encoding="utf-8")
    return {"summary": summary, "declared": declared, "ground_truth": gt}


def _title(title: str, curation: Mapping[str, Any]) -> str:
    title = title or "Screening report"
    src = curation.get("source", {})
    if src.get("used") == "offline_fallback":  # the title names the requested target: say what was used
        title += f" [data: {Path(str(src.get('settings', {}).get('path', '?'))).name}, offline fallback]"
    return title


def report_tables(
    records: pd.DataFrame,
    *,
    library: pd.DataFrame,
    fits: Sequence[Mapping[str, Any]],
    reference: tuple[int, int],
    algorithms: Sequence[Mapping[str, Any]] = (),
    reference_arms: pd.DataFrame | None = None,
    error_rates: pd.DataFrame | None = None,
) -> dict[str, Any]:
    """The report's tables (``summary``, ``declared``, ``ground_truth``) and each label's
    ``guarantees``; the summary says each algorithm's guarantee and measured error rate, the declared
    compounds of the reference screen their cure rate's interval (from ``reference_arms``)."""
    smiles = dict(zip(library["compound_id"], library["smiles"]))
    summary = summarize_screens(records)
    declared = declared_compounds(records, smiles)
    guarantees = algorithm_guarantees(records, algorithms, error_rates)
    summary.insert(1, "guarantee", summary["label"].map(lambda lab: _tag(guarantees.get(lab))))
    summary.insert(2, "measured_error_rate", summary["label"].map(_measured_rate(guarantees)))
    if reference_arms is not None and {"mean_lo95", "mean_hi95"} <= set(reference_arms.columns):
        interval = reference_arms.set_index("compound_id")[["mean_lo95", "mean_hi95"]]
        at_ref = declared["d"] == reference[0]
        for col, src in (("cure_rate_lo95", "mean_lo95"), ("cure_rate_hi95", "mean_hi95")):
            declared.loc[at_ref, col] = interval[src].reindex(declared.loc[at_ref, "compound_id"]).to_numpy()
    gt = ground_truth_table(fits)
    return {"summary": summary, "declared": declared, "ground_truth": gt, "guarantees": guarantees}


def summary_page(tables: Mapping[str, Any], *, curation: Mapping[str, Any], label: Mapping[str, Any],
                 reference: tuple[int, int], activity: str = "IC50", title: str = "") -> _Page:
    """The summary page (markdown and HTML) from :func:`report_tables`: warnings first (offline
    fallback, a label that cannot tell good compounds from bad, a clipped K), the data, what each
    algorithm's setting guarantees, what the screens found and every table."""
    summary, declared, gt, guarantees = (tables[k] for k in ("summary", "declared", "ground_truth", "guarantees"))
    d_ref, K_ref = reference
    dref = declared[(declared["d"] == d_ref) & (declared["K"] == K_ref)]
    title = _title(title, curation)
    page = _Page()
    page.heading(title, 1)
    _provenance(page, curation, label, activity)
    page.heading("What each algorithm's setting guarantees")
    page.items([f"{lab}: {g.sentence() if g is not None else 'guarantee unknown (not a registered algorithm)'}."
                for lab, g in guarantees.items()])
    page.heading(f"What the screens found (d = {d_ref}, K = {K_ref})")
    page.items(_findings(summary, declared, reference, activity, guarantees))
    page.para("Errors are over the runs that stopped. Not the exact best: a declared compound is not among the m "
              "best cure rates of the sample. More than epsilon below: a declared compound's cure rate is more than "
              "the algorithm's epsilon below the m-th best (fixed-budget algorithms: the report's epsilon).")
    page.heading("Tests and errors, every screen")
    short = {"label": "algorithm", "guarantee": "guarantee", "measured_error_rate": "measured error rate",
             "d": "d", "K": "K", "m": "m", "runs": "runs", "not_stopped": "not stopped",
             "median_samples": "tests (median)", "exact_error_rate": "not exact best", "epsilon": "epsilon",
             "eps_error_rate": "> epsilon below", "eps_good_fraction": "share within epsilon",
             "median_declared_rank_pct": "declared rank (% of K)", "distinct_declared": "different declared"}
    if "median_certified_epsilon" in summary.columns:
        short["median_certified_epsilon"] = "certified epsilon (median)"
    page.table(summary[list(short)].rename(columns=short))
    page.para("guarantee: whether the algorithm's setting keeps its error at most delta (error <= delta), does not "
              "(no guarantee) or has no delta (fixed budget); measured error rate: docs/error_rates.md, on the "
              "papers' instances, for the same algorithm and setting. Full table, with the spread of the tests and "
              "the declared potency: summary.csv (summary_table.html).")
    page.heading(f"Declared compounds (d = {d_ref}, K = {K_ref}; most often declared first)")
    page.table(_typed(dref.drop(columns=["algorithm", "smiles", "d", "K", "runs"]).groupby("label", sort=False).head(5),
                      activity))
    page.heading("Ground truth per PCA dimension d (the bandit sees d + 1 features)")
    page.para("The fit metrics 'on the fitted compounds (in-sample)' score the logistic model on the compounds it was "
              "fitted on, which flatters it; the cross-validated ones score each compound with a model fitted "
              "without it (stratified k-fold, k = CV folds).")
    page.table(gt)
    return page


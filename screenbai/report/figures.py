"""The report's figures: tests to stop, error rates and declared potency against d or K, tests per
compound, the declared compounds' cure rate beside their potency, and structure grids.

Plots take an ``ax`` (or create one), draw on it and return the figure; they use matplotlib's
object API (``Figure``), which needs no backend and leaves pyplot's state alone.  Each algorithm
label keeps its colour and marker in every figure; the tests to stop are drawn as medians, their
spread as the interquartile range (the numbers are defined in :mod:`screenbai.report.tables`).
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter, NullLocator

from screenbai.screening.activities import HUMAN_MICROMOLAR

from .tables import UNINFORMATIVE


def _axes(ax):
    if ax is None:
        ax = Figure(figsize=(5.5, 4)).subplots()
    return ax.figure, ax


#: micromolar in figure text, as a chemist writes it (the CSV and JSON files keep ASCII 'uM'); the summary page's too
FIGURE_MICROMOLAR = HUMAN_MICROMOLAR


def _concentration_axis(axis) -> None:
    """A log axis of concentrations in nM whose ticks read 100 nM, 1 µM, 10 µM (not 1e+02)."""
    from screenbai.screening import format_concentration

    axis.set_major_locator(LogLocator(base=10))
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: format_concentration(v, FIGURE_MICROMOLAR) if v > 0 else ""))
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


def _varied(summary: pd.DataFrame, x: str, fixed: Mapping[str, int]):
    sel = summary
    for k, v in fixed.items():
        sel = sel[sel[k] == v]
    return sel.sort_values(x, kind="stable")


def _xlabel(x: str) -> str:
    return "PCA dimension d" if x == "d" else "number of compounds K"


def _x_axis(ax, sel: pd.DataFrame, x: str) -> None:
    """The x axis of a study: its label, and ticks at the values studied (whole numbers: d = 2, 3, not the
    2.0, 2.2, ..., 3.0 matplotlib chose for two values)."""
    ax.set_xlabel(_xlabel(x))
    values = sorted({int(v) for v in sel[x]})
    if 0 < len(values) <= 12:
        ax.set_xticks(values)
        ax.set_xticklabels([f"{v:,}" for v in values])
        ax.xaxis.set_minor_locator(NullLocator())


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
    _x_axis(ax, sel, x)
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
    _x_axis(ax, sel, x)
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
    _x_axis(ax, sel, x)
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
                   label=f"cure label: {quantity} < {format_concentration(threshold_nM, FIGURE_MICROMOLAR)}")
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


def structure_grid(
    table: pd.DataFrame,
    *,
    smiles: str = "smiles",
    legend: Sequence[str] | None = None,
    mols_per_row: int = 4,
    size: tuple[int, int] = (320, 300),
):
    """PIL image of the structures in ``table`` (drawn by rdkit), each with its legend below it: one line per
    '\\n', at a fixed line spacing (rdkit's own multi-line legends set each line by its glyphs' height, so a
    line of capitals and digits, an id such as MOL001, overlapped the next), shrunk to the cell's width."""
    from PIL import Image, ImageDraw, ImageFont
    from rdkit import Chem
    from rdkit.Chem import Draw

    mols = [Chem.MolFromSmiles(s) if isinstance(s, str) else None for s in table[smiles]]
    mols = [m if m is not None else Chem.MolFromSmiles("") for m in mols]
    legends = list(legend) if legend is not None else [""] * len(mols)
    per_row = max(1, min(mols_per_row, len(mols)))
    w, h = size
    text_h = int(0.3 * h)  # room for three legend lines
    drawings = Draw.MolsToGridImage(mols, molsPerRow=per_row, subImgSize=(w, h - text_h), returnPNG=False)
    rows = max(1, -(-len(mols) // per_row))
    img = Image.new("RGB", (per_row * w, rows * h), "white")
    pen = ImageDraw.Draw(img)
    for i, text in enumerate(legends):
        r, c = divmod(i, per_row)
        img.paste(drawings.crop((c * w, r * (h - text_h), (c + 1) * w, (r + 1) * (h - text_h))), (c * w, r * h))
        lines = str(text).split("\n") if text else []
        font_size = 16
        font = ImageFont.load_default(size=font_size)
        while font_size > 8 and any(pen.textlength(line, font=font) > w - 8 for line in lines):
            font_size -= 1
            font = ImageFont.load_default(size=font_size)
        step = round(1.3 * font_size)
        top = r * h + (h - text_h) + max(0, (text_h - step * len(lines)) // 2)
        for k, line in enumerate(lines):
            pen.text((c * w + w / 2, top + k * step), line, fill="black", font=font, anchor="ma")
    return img

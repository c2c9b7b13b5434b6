"""The report's summary page, built once and written as markdown (summary.md) and as HTML.

Warnings first (offline fallback, a cure label that cannot tell good compounds from bad, a clipped
K), then the data, what each algorithm's setting guarantees (:mod:`screenbai.guarantees`) with the
error rate docs/error_rates.md measured for it, what the screens found, and every table.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from screenbai.chem.curate import WIDE_MERGE_FOLD
from screenbai.guarantees import Guarantee
from screenbai.screening import HUMAN_MICROMOLAR, format_activity

from .tables import UNINFORMATIVE, consensus, html_table, markdown_table, name_activity_columns

#: Share of the compounds in one class of the cure label above which the label cannot tell good
#: compounds from bad (the summary says so at its top).
IMBALANCED = 0.9


PAGE_CSS = """<style>
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
        """The page as an HTML fragment (no <head> to declare its encoding: µ is written &micro;, ASCII)."""
        out = [PAGE_CSS, '<div class="screenbai-summary">']
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
        return "\n".join(out).replace("\u00b5", "&micro;")


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


def twins_warning(label: Mapping[str, Any]) -> str | None:
    """What compounds with the same features mean for the answers (``label["feature_twins"]``, counted by the
    report from the arms), or None when every compound's features are its own."""
    twins = label.get("feature_twins") or {}
    if not twins.get("compounds"):
        return None
    groups = f"{twins['groups']} group{'' if twins['groups'] == 1 else 's'}"
    return (f"{twins['compounds']} compounds share their feature vector with another ({groups}; "
            "stereoisomers, which Morgan fingerprints do not tell apart, or a bit collision): every model of the "
            "features gives them the same cure rate, so a compound an algorithm declares stands for its whole group, "
            "whose measured potencies may differ widely. The declared compounds' table names the others with their "
            "activities (same_features_as): compare them before choosing one")


def _provenance(page: _Page, curation: Mapping[str, Any], label: Mapping[str, Any], activity: str):
    src = curation.get("source", {})
    settings = src.get("settings", {})
    if src.get("used") == "offline_fallback":
        page.warning(str(src.get("warning")))
    for text in (label_warning(label), (label.get("K_clipped") or {}).get("message"), twins_warning(label)):
        if text:
            page.warning(text)
    where = (f"ChEMBL target {settings.get('target_chembl_id')}" if settings.get("target_chembl_id")
             else f"file {settings.get('path')} ({settings.get('kind')})")
    used = "the offline fallback" if src.get("used") == "offline_fallback" else "the configured source"
    declared_as = (f"{activity} (given as pChEMBL values, -log10 molar, converted to nM"
                   if label.get("pchembl_of") else f"{activity} (as declared")
    p_name = activity if activity == "pChEMBL" else f"p{activity}"
    altered = ", ".join(f"{n} {r}" for r, n in (curation.get("altered") or {}).items())
    altered = f" ({altered})" if altered else ""
    merged = curation.get("merged") or {}
    folds = curation.get("merged_largest_fold") or {}
    merges = "; ".join(f"{n} {r.removeprefix('merged: ')}, up to {folds.get(r, float('nan')):.3g}-fold apart"
                       for r, n in merged.items())
    if curation.get("n_wide_merges"):
        widest = ", ".join(f"{c} ({f:.3g}-fold)" for c, f in (curation.get("wide_merges") or [])[:5])
        merges += (f"; {curation['n_wide_merges']} compounds merge measurements more than {WIDE_MERGE_FOLD:g}-fold "
                   "apart, their median standing for values that disagree (another assay, a unit slip?), widest "
                   f"{widest}; curation/report.json: wide_merges")
    merges = f" ({sum(merged.values())} rows merged by median: {merges})" if merged else ""
    page.heading("Data")
    page.items([
        f"Activities: {where}, {used}; {src.get('n_rows', '?')} rows"
        + (f"; units: {src['units']}." if src.get("units") else "."),
        f"Activity type: {declared_as}; rows per declared type in the data: "
        + ", ".join(f"{k} {v}" for k, v in (label.get("rows_per_type") or {}).items()) + ").",
        (f"Curation: {curation.get('n_input')} rows in, {curation.get('n_output_rows')} measurements kept"
         f"{altered}, {curation.get('n_compounds')} compounds{merges}."),
        (f"Cure label: {label.get('description')}: {label.get('n_cured')} of {label.get('n_compounds')} compounds "
         f"cure ({100.0 * label.get('n_cured', 0) / max(label.get('n_compounds', 1), 1):.1f} %); threshold "
         f"{label.get('threshold_nM', float('nan')):.4g} nM = {p_name} "
         f"{label.get('threshold_pActivity', float('nan')):.2f}."),
    ])
    dropped = curation.get("dropped") or {}
    if dropped:
        page.table(pd.DataFrame({"dropped because": list(dropped), "rows": list(dropped.values())}))


def _activity(value_nM: float, activity: str) -> str:
    """An activity as the page writes it for people: micromolar as µM (the CSV and JSON tables keep ASCII 'uM')."""
    return format_activity(value_nM, activity, HUMAN_MICROMOLAR)


def _declared_words(rows: pd.DataFrame, activity: str, K: int) -> str:
    return "; ".join(f"{r.compound_id} ({_activity(r.activity_nM, activity)}, rank {r.activity_rank} of {K})"
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
        # "error rate not measured", never "measured error rate not measured"
        rate = f"measured error rate {g.measured_rate()}" if g is not None and g.measured else "error rate not measured"
        promise = (
            f"{g.tag.upper() if g.kind == 'none' else g.tag}, {rate}"
            if g is not None
            else "guarantee unknown (the algorithm is not registered)"
        )
        certified = ""
        holds = f"if {g.assumes}" if g is not None and g.assumes else "under the algorithm's model"
        if "median_certified_epsilon" in summary.columns and np.isfinite(r.median_certified_epsilon):
            unproven = "certified_guaranteed" in summary.columns and not bool(r.certified_guaranteed)
            certified = (f" Certified epsilon (median over runs): {r.median_certified_epsilon:.3g} of cure rate"
                         + (" (not a guarantee under this setting)." if unproven else
                            " (when a run ends, its declared compounds are certified within this of the best cure "
                            f"rate, with 1 - delta confidence, {holds})."))
        out.append(
            f"{r.label} (d = {d_ref}, K = {K_ref}, names {names}; {promise}): {tests}"
            + (f", {r.not_stopped} of {r.runs} runs hit the cap" if r.not_stopped else "")
            + f". The {whose} median rank by measured {activity} is {r.median_declared_rank:.0f} of {K_ref} "
            f"(top {r.median_declared_rank_pct:.1f} %; "
            f"median {_activity(r.median_declared_activity_nM, activity)}, "
            f"best of the sample {_activity(r.best_activity_nM, activity)}); {distinct} "
            f"declared in {r.runs} runs. "
            # error rates are over the runs that stopped: with none, there is no rate to quote
            + (f"Error: not measured: no run stopped (all {r.runs} hit max_samples)." if r.runs == r.not_stopped
               else f"Error: not the exact best {r.exact_error_rate:.2f}; {eps_note}.")
            + certified + most
        )
    return out


def report_title(title: str, curation: Mapping[str, Any]) -> str:
    """The title of the report's pages and figures, naming the offline fallback's file when it was used."""
    title = title or "Screening report"
    src = curation.get("source", {})
    if src.get("used") == "offline_fallback":  # the title names the requested target: say what was used
        title += f" [data: {Path(str(src.get('settings', {}).get('path', '?'))).name}, offline fallback]"
    return title


def summary_page(tables: Mapping[str, Any], *, curation: Mapping[str, Any], label: Mapping[str, Any],
                 reference: tuple[int, int], activity: str = "IC50", title: str = "") -> _Page:
    """The summary page (markdown and HTML) from :func:`report_tables`: warnings first (offline
    fallback, a label that cannot tell good compounds from bad, a clipped K), the data, what each
    algorithm's setting guarantees, what the screens found and every table."""
    summary, declared, gt, guarantees = (tables[k] for k in ("summary", "declared", "ground_truth", "guarantees"))
    d_ref, K_ref = reference
    dref = declared[(declared["d"] == d_ref) & (declared["K"] == K_ref)]
    title = report_title(title, curation)
    page = _Page()
    page.heading(title, 1)
    _provenance(page, curation, label, activity)
    page.heading("What each algorithm's setting guarantees")
    page.items([f"{lab}: {g.sentence() if g is not None else 'guarantee unknown (not a registered algorithm)'}."
                for lab, g in guarantees.items()])
    page.para("A guarantee holds under its model. Here each compound's true cure rate is a logistic regression of "
              "the cure label on the same features (the ground truth, below), so the logistic model holds by "
              "construction and these simulations do not test it (a real screen's `campaign status` does, with its "
              "model check); a linear model of the cure rates is misspecified here.")
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
    top = dref.drop(columns=["algorithm", "smiles", "d", "K", "runs"]).groupby("label", sort=False).head(5)
    page.table(name_activity_columns(top, activity))
    page.heading("Ground truth per PCA dimension d (the bandit sees d + 1 features)")
    page.para("The fit metrics 'on the fitted compounds (in-sample)' score the logistic model on the compounds it was "
              "fitted on, which flatters it; the cross-validated ones score each compound with a model fitted "
              "without it (stratified k-fold, k = CV folds).")
    page.table(gt)
    return page

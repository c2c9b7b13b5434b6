"""The whole report on disk: every table (CSV and HTML), every figure (PNG) and the summary page
(markdown and HTML), into the files the workflow names."""

from __future__ import annotations

import os
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from screenbai.screening import format_activity
from screenbai.textfiles import figure_saved, image_saved, write_whole, written_whole

from .figures import (
    plot_declared_potency,
    plot_declared_rank,
    plot_error_rate,
    plot_pulls_per_arm,
    plot_samples,
    structure_grid,
)
from .summary import PAGE_CSS, report_title, summary_page
from .tables import consensus, feature_twins, guarantee_tag, html_table, name_activity_columns, report_tables


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
    arms: pd.DataFrame | None = None,
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
    algorithm's guarantee is quoted with. ``arms``: the ground truth's arms of every compound (features
    ``x0``, ...), whose compounds with the same features the summary counts and the declared table names.
    """
    smiles = dict(zip(library["compound_id"], library["smiles"]))
    twins = feature_twins(arms) if arms is not None else {}
    if twins:
        groups = len({frozenset([c, *(o for o, _ in others)]) for c, others in twins.items()})
        label = {**label, "feature_twins": {"compounds": len(twins), "groups": groups}}
    built = report_tables(records, library=library, fits=fits, reference=reference, algorithms=algorithms,
                          reference_arms=reference_arms, error_rates=error_rates, twins=twins)
    summary, declared, gt, guarantees = (built[k] for k in ("summary", "declared", "ground_truth", "guarantees"))
    names = {lab: f"{lab} ({guarantee_tag(g)})" for lab, g in guarantees.items()}
    tables = {"summary": name_activity_columns(summary.drop(columns=["algorithm"]), activity),
              "declared": name_activity_columns(declared.drop(columns=["algorithm"]), activity), "ground_truth": gt}
    for key, df in tables.items():
        with written_whole(outputs[key]) as fh:
            df.to_csv(fh, index=False)
        if f"{key}_html" in outputs:
            write_whole(outputs[f"{key}_html"], PAGE_CSS + "\n" + html_table(df))
    deltas = [(a.get("params") or {}).get("delta") for a in algorithms]
    delta = next((v for v in deltas if v is not None), None)
    raw_title, title = title, report_title(title, curation)

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
        figure_saved(fig, outputs[f"study_{name}"], dpi=100, bbox_inches="tight")

    d_ref, K_ref = reference
    ref = records[(records["d"] == d_ref) & (records["K"] == K_ref)]
    fig = plot_pulls_per_arm(ref, reference_means, names=names,
                             title=f"{title}\ntests per compound, d = {d_ref}, K = {K_ref}")
    figure_saved(fig, outputs["pulls"], dpi=110, bbox_inches="tight")

    dref = declared[(declared["d"] == d_ref) & (declared["K"] == K_ref)]
    if "potency" in outputs:
        sample = (None if reference_arms is None
                  else reference_arms[~reference_arms["compound_id"].isin(set(dref["compound_id"]))])
        fig = plot_declared_potency(dref, sample, activity=activity, threshold_nM=label.get("threshold_nM"),
                                    names=names, title=f"{title}\nd = {d_ref}, K = {K_ref}")
        fig.set_size_inches(7, 5.5)
        figure_saved(fig, outputs["potency"], dpi=110, bbox_inches="tight")

    # structures: what each algorithm declared most often at the reference screen, and the best of the K
    per_alg = max(1, min(4, int(summary["m"].max()) if len(summary) else 1))
    m_of = summary.drop_duplicates("label").set_index("label")["m"]
    tied = {lab for lab, g in dref.groupby("label", sort=False) if not consensus(g, int(m_of.get(lab, 1)))[0]}
    grid_rows = [
        {"smiles": r.smiles,
         "legend": f"{names.get(r.label, r.label)}\n{r.times_declared} of {r.runs} runs"
                   f"{' (tied: no consensus)' if r.label in tied else ''}, {r.compound_id}\n"
                   f"{format_activity(r.activity_nM, activity)}, rank {r.activity_rank}/{K_ref}"}
        for _, g in dref.groupby("label", sort=False) for r in g.head(per_alg).itertuples()
    ]
    if len(ref):
        first = ref.iloc[0]
        grid_rows.append({"smiles": smiles.get(first["best_activity_id"]),
                          "legend": f"most potent of the {K_ref}\n{first['best_activity_id']}\n"
                                    f"{format_activity(first['best_activity_nM'], activity)}"})
    grid = pd.DataFrame(grid_rows or [{"smiles": "", "legend": "no runs"}])
    img = structure_grid(grid, legend=list(grid["legend"]), mols_per_row=mols_per_row)
    image_saved(img, outputs["structures"])

    page = summary_page(built, curation=curation, label=label, reference=reference, activity=activity,
                        title=raw_title)
    write_whole(outputs["markdown"], page.markdown())
    if "page" in outputs:
        write_whole(outputs["page"], page.html())
    return {"summary": summary, "declared": declared, "ground_truth": gt}

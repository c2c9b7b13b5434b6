"""Report tables and figures from run records."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from screenbai.report import (
    algorithm_guarantees,
    consensus,
    declared_compounds,
    ground_truth_table,
    label_warning,
    markdown_table,
    plot_declared_potency,
    plot_declared_rank,
    plot_error_rate,
    plot_pulls_per_arm,
    plot_samples,
    report_tables,
    structure_grid,
    summarize_screens,
    summary_page,
    write_generated_block,
    write_report,
)

SMILES = {"A": "CCO", "B": "c1ccccc1O", "C": "CC(=O)Nc1ccc(O)cc1"}


def _records():
    """Two algorithms, two screens (K = 3), four runs each; alg2's last run hit the cap.

    Cure rates of the sample: A 0.9, B 0.7, C 0.5 (A is best); measured IC50: A 12, B 300,
    C 0.4 nM (ranks 2, 3, 1).  epsilon = 0.25 counts A and B as correct answers.
    """
    mean = {"A": 0.9, "B": 0.7, "C": 0.5}
    nM = {"A": 12.0, "B": 300.0, "C": 0.4}
    rank = {"A": 2, "B": 3, "C": 1}
    rows = []
    for label in ("alg1", "alg2"):
        for d, K in ((2, 3), (4, 3)):
            for rep in range(4):
                declared = "A" if (label == "alg1" or rep < 2) else "B"
                rows.append({
                    "label": label, "algorithm": label, "d": d, "K": K, "replication": rep, "m": 1,
                    "epsilon": 0.25, "samples": 10 * (rep + 1) * d, "stopped": rep != 3 or label == "alg1",
                    "wall_time_s": 0.01, "pulls": [5, 3, 2], "declared_ids": [declared],
                    "declared_arms": [0 if declared == "A" else 1],
                    "declared_activity_nM": [nM[declared]], "declared_activity_rank": [rank[declared]],
                    "declared_mean": [mean[declared]], "declared_mean_rank": [1 if declared == "A" else 2],
                    "declared_rank_median": float(rank[declared]),
                    "exact_error": declared != "A", "eps_error": mean[declared] < 0.9 - 0.25, "n_eps_good": 2,
                    "best_mean": 0.9, "best_mean_id": "A", "best_activity_nM": 0.4, "best_activity_id": "C",
                })
    return pd.DataFrame(rows)


def test_summary_keeps_unstopped_runs_apart_and_uses_the_run_errors():
    s = summarize_screens(_records()).set_index(["label", "d"])
    a1, a2 = s.loc[("alg1", 2)], s.loc[("alg2", 2)]
    assert a1["runs"] == 4 and a1["not_stopped"] == 0
    assert a1["mean_samples"] == pytest.approx(np.mean([20, 40, 60, 80]))
    assert a2["not_stopped"] == 1
    assert a2["mean_samples"] == pytest.approx(np.mean([20, 40, 60]))  # the capped run is not averaged in
    assert a1["exact_error_rate"] == 0 and a2["exact_error_rate"] == pytest.approx(1 / 3)  # B in run 2 of 3 stopped
    assert a2["eps_error_rate"] == 0  # B is within epsilon = 0.25 of A
    assert a2["eps_good_fraction"] == pytest.approx(2 / 3)
    assert a1["median_declared_rank"] == 2 and a2["median_declared_rank"] == 2.5
    assert a2["median_declared_rank_pct"] == pytest.approx(100 * 2.5 / 3)
    assert a2["distinct_declared"] == 2 and a2["median_declared_activity_nM"] == pytest.approx((12 + 300) / 2)
    assert s.loc[("alg1", 4), "samples_per_compound"] == pytest.approx(np.mean([40, 80, 120, 160]) / 3)


def test_declared_compounds_counts_every_declared_compound():
    d = declared_compounds(_records(), SMILES)
    g = d[(d["label"] == "alg2") & (d["d"] == 2)]
    assert list(g["compound_id"]) == ["A", "B"] and list(g["times_declared"]) == [2, 2]
    assert list(g["activity_nM"]) == [12.0, 300.0] and list(g["activity_rank"]) == [2, 3]
    assert g["smiles"].iat[0] == "CCO" and (g["most_potent_id"] == "C").all() and (g["runs"] == 4).all()
    assert d.groupby(["label", "d"])["times_declared"].sum().eq(4).all()


def test_ground_truth_table():
    fits = [{"d": 5, "n_compounds": 10, "n_cured": 9, "n_not_cured": 1, "metrics": {"roc_auc": 0.8, "arr": [1, 2]}},
            {"d": 2, "n_compounds": 10, "n_cured": 9, "n_not_cured": 1, "mean_min": 0.1, "mean_median": 0.4,
             "mean_max": 0.9, "metrics": {"roc_auc": 0.7, "n": 10, "intercept": -1.4, "C": 1.0}}]
    t = ground_truth_table(fits)
    assert list(t["d"]) == [2, 5] and list(t["AUC on the fitted compounds (in-sample)"]) == [0.7, 0.8]
    assert "arr" not in t
    # every column says what it is: no bare n (n_compounds again), C or mean_* (the fitted cure rates)
    assert {"n", "C", "intercept", "mean_min"}.isdisjoint(t.columns)
    assert t.loc[0, "cure rate median"] == 0.4 and t.loc[0, "C (inverse L2 penalty of the fit)"] == 1.0
    assert t.loc[0, "intercept (log-odds)"] == -1.4


def test_plots_return_figures_with_data():
    s = summarize_screens(_records())
    fig = plot_samples(s, "d", {"K": 3})
    assert isinstance(fig, Figure)
    texts = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert texts.count("alg1") == texts.count("alg2") == 1 and "K = 3 (one test per compound)" in texts
    assert "alg2: hit the cap (not stopped)" in texts and len(texts) == 4
    studied = sorted(int(v) for v in s["d"].unique())  # ticks at the dimensions studied, not 2.0, 2.2, ...
    for f in (fig, plot_declared_rank(s, "d", {"K": 3})):
        assert list(f.axes[0].get_xticks()) == studied
        assert [t.get_text() for t in f.axes[0].get_xticklabels()] == [str(v) for v in studied]
    fig = plot_error_rate(s, "d", {"K": 3}, delta=0.05)
    lines = {line.get_label(): line.get_ydata() for line in fig.axes[0].get_lines()}
    np.testing.assert_allclose(lines["alg2: not the exact best"], [1 / 3, 1 / 3])
    # epsilon = 0.25 counts 2 of 3 compounds as correct: the epsilon-error is not drawn, and the panel says why
    assert not any("epsilon below" in k for k in lines)
    assert any("epsilon-error not drawn" in t.get_text() for t in fig.axes[0].get_legend().get_texts())
    s2 = s.assign(eps_good_fraction=0.1)
    lines = {ln.get_label(): ln.get_ydata() for ln in plot_error_rate(s2, "d", {"K": 3}).axes[0].get_lines()}
    np.testing.assert_allclose(lines["alg2: more than epsilon below"], [0, 0])
    fig = plot_declared_rank(s, "d", {"K": 3}, activity="Ki")
    assert "Ki" in fig.axes[0].get_ylabel()
    lines = {ln.get_label(): ln.get_ydata() for ln in fig.axes[0].get_lines()}
    np.testing.assert_allclose(lines["alg2"], [100 * 2.5 / 3] * 2)
    fig = plot_pulls_per_arm(_records(), np.array([0.9, 0.7, 0.5]))
    np.testing.assert_allclose(fig.axes[0].get_lines()[0].get_ydata(), [5, 3, 2])


def test_structure_grid_and_markdown():
    img = structure_grid(pd.DataFrame({"smiles": list(SMILES.values())}), legend=list(SMILES), mols_per_row=2)
    assert img.size[0] > 100 and img.size[1] > 100
    assert np.asarray(img).std() > 0  # something was drawn
    md = markdown_table(pd.DataFrame({"a": [1.23456, np.nan], "b": ["x", "y"]}))
    assert md.splitlines() == ["| a | b |", "|---|---|", "| 1.235 | x |", "|  | y |"]


def test_structure_grid_legend_lines_do_not_touch():
    """Each line of a legend is its own band of ink, with white rows between: rdkit's own multi-line legends set
    a line by its glyphs' height, and the report's 'most potent of the 24 / MOL001 / Ki 0.444 nM' (the workflow's
    small test) drew MOL001 into the line below it."""
    legend = ["most potent of the 24\nMOL001\nKi 0.444 nM", "glgape (no guarantee)\n3 of 3 runs, MOL031\nKi 65.5 nM"]
    img = structure_grid(
        pd.DataFrame({"smiles": ["CCc1ccccc1", "OC(=O)NC(=O)c1ccccc1"]}), legend=legend, mols_per_row=2, size=(320, 300)
    )
    assert img.size == (640, 300)
    grey = np.asarray(img.convert("L"))
    for cell in range(2):
        band = grey[210:300, cell * 320 : (cell + 1) * 320] < 128  # the legend's part of the cell
        inked = band.any(axis=1).astype(int)
        lines = int(inked[0] + (np.diff(inked) == 1).sum())
        assert lines == 3, (cell, inked)


def test_write_report_files(tmp_path):
    library = pd.DataFrame({"compound_id": list(SMILES), "smiles": list(SMILES.values()),
                            "activity_nM": [12.0, 300.0, 0.4]})
    outputs = {k: tmp_path / f"{k}.{ext}" for k, ext in
               [("summary", "csv"), ("declared", "csv"), ("ground_truth", "csv"), ("summary_html", "html"),
                ("declared_html", "html"), ("ground_truth_html", "html"), ("structures", "png"),
                ("pulls", "png"), ("potency", "png"), ("markdown", "md"), ("page", "html"), ("study_vary_d", "png")]}
    curation = {"n_input": 9, "n_output_rows": 5, "n_compounds": 3, "dropped": {"censored relation": 6},
                "altered": {"censored '>' taken as the value": 2},
                "merged": {"merged: replicate measurement of one id": 2}, "merged_largest_fold":
                    {"merged: replicate measurement of one id": 31.6},
                "n_wide_merges": 1, "wide_merges": [["CHEMBL7", 31.6]],
                "source": {"used": "offline_fallback", "warning": "OFFLINE FALLBACK: used x.csv",
                           "settings": {"kind": "export", "path": "x.csv"}, "n_rows": 9,
                           "units": "nM, the default: source.units is not given and the activity column 'v' "
                                    "names no unit"}}
    label = {"description": "Ki < 100 nM", "threshold_nM": 100.0, "threshold_pActivity": 7.0, "n_cured": 2,
             "n_compounds": 3, "rows_per_type": {"Ki": 9}}
    fits = [{"d": d, "n_compounds": 3, "n_cured": 2, "n_not_cured": 1, "metrics": {}} for d in (2, 4)]
    write_report(_records(), library=library, curation=curation, label=label, fits=fits,
                 studies={"vary_d": {"K": 3, "d": [2, 4]}}, reference=(4, 3),
                 reference_means=np.array([0.9, 0.7, 0.5]), outputs=outputs,
                 algorithms=[{"label": "alg1", "params": {"delta": 0.05}}], title="t", activity="Ki",
                 reference_arms=library.assign(mean=[0.9, 0.7, 0.5], mean_lo95=0.1, mean_hi95=0.95),
                 error_rates=ERROR_RATES, arms=library.assign(x0=[1.0, 1.0, 2.0], x1=0.0))  # A and B: twins
    assert "WARNING: 2 compounds share their feature vector with another (1 group;" in outputs["markdown"].read_text()
    assert pd.read_csv(outputs["declared"]).set_index("compound_id")["same_features_as"].to_dict() == {
        "A": "B (300 nM)", "B": "A (12 nM)"}
    for key in ("structures", "pulls", "study_vary_d", "potency"):
        assert outputs[key].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and outputs[key].stat().st_size > 2000
    declared = pd.read_csv(outputs["declared"])
    assert {"Ki_nM", "Ki_rank", "best_Ki_nM"} <= set(declared.columns)
    assert set(declared["smiles"]) == {"CCO", "c1ccccc1O"}
    md = outputs["markdown"].read_text()
    assert md.index("WARNING: OFFLINE FALLBACK") < md.index("## Data")  # the fallback comes first
    assert md.startswith("# t [data: x.csv, offline fallback]")
    assert "9 rows; units: nM, the default: source.units is not given" in md  # a default unit is said, not assumed
    assert "5 measurements kept (2 censored '>' taken as the value), 3 compounds" in md  # keep_as_value is said
    # merges are said, with the widest spread they combined
    assert "3 compounds (2 rows merged by median: 2 replicate measurement of one id, up to 31.6-fold apart; 1 " in md
    assert "merge measurements more than 10-fold apart" in md and "widest CHEMBL7 (31.6-fold)" in md
    assert "| censored relation | 6 |" in md and "Cure label: Ki < 100 nM: 2 of 3 compounds cure (66.7 %)" in md
    assert "alg2 (d = 4, K = 3, names 1 compound; guarantee unknown" in md
    assert "2 different compounds declared in 4 runs" in md
    assert "epsilon = 0.25 counts 67% of the sample as correct" in md
    page = outputs["page"].read_text()
    assert 'class="warning"' in page and page.count("<table") == 4 and "IC50" not in page
    assert "<table" in outputs["declared_html"].read_text()


def test_generated_block_replaces_only_its_own_text(tmp_path):
    doc = tmp_path / "doc.md"
    write_generated_block(doc, "bench", "table 1")  # a new file: the block alone
    assert doc.read_text() == "<!-- bench:begin -->\ntable 1\n<!-- bench:end -->\n"
    prose_before, prose_after = "# Title\n\nWhy these runs.\n", "\nWhat the table shows.\n"
    doc.write_text(prose_before + doc.read_text() + prose_after)
    write_generated_block(doc, "bench", "table 2\nsecond line")
    write_generated_block(doc, "other", "another block")  # a second name: appended, the first untouched
    text = doc.read_text()
    assert text.startswith(prose_before + "<!-- bench:begin -->\ntable 2\nsecond line\n<!-- bench:end -->\n")
    assert "What the table shows." in text and "table 1" not in text
    assert text.endswith("<!-- other:begin -->\nanother block\n<!-- other:end -->\n")
    write_generated_block(doc, "bench", "table 2\nsecond line")
    assert doc.read_text() == text  # idempotent
    doc.write_text(text.replace("<!-- bench:end -->", ""))
    broken = doc.read_text()
    with pytest.raises(ValueError, match=r"doc.md.*'bench'.*begin on lines \[4\], end on lines \[\]"):
        write_generated_block(doc, "bench", "table 3")
    assert doc.read_text() == broken


# ---------------------------------------------------------------------------------- issue 17, section 4
ERROR_RATES = pd.DataFrame([
    # instance, algorithm, setting, delta, runs, not_stopped, errors, error_rate
    ("a", "glgape", "reinterpreted (paper)", 0.05, 500, 0, 35, 0.07),
    ("b", "glgape", "reinterpreted (paper)", 0.05, 500, 0, 9, 0.018),
    ("a", "glgape", "reinterpreted (paper)", 0.1, 500, 0, 40, 0.08),
    ("a", "glgape", "likelihood-ratio (default)", 0.05, 500, 0, 0, 0.0),
    ("a", "m-lingape", "heuristic", 0.1, 500, 0, 2, 0.004),
], columns=["instance", "algorithm", "setting", "delta", "runs", "not_stopped", "errors", "error_rate"])

RUNS = {  # label -> (registered algorithm, the params the runs used)
    "alg1": ("glgape", {"epsilon": 0.1, "delta": 0.05, "calibration": "reinterpreted"}),
    "alg2": ("gse-log", {"budget": 15}),
    "safe": ("glgape", {"epsilon": 0.1, "delta": 0.05}),
    "heur": ("m-lingape", {"m": 1, "delta": 0.05, "threshold": "heuristic"}),
}


def _registered_records():
    """_records() with registered algorithms and the params of each run (as the runner records them)."""
    base = _records()
    parts = [base[base["label"] == "alg1"].assign(label=lab) for lab in ("safe", "heur")]
    rec = pd.concat([base, *parts], ignore_index=True)
    rec["algorithm"] = rec["label"].map(lambda lab: RUNS[lab][0])
    rec["params"] = rec["label"].map(lambda lab: json.dumps(RUNS[lab][1]))
    return rec


def _page(records, label=None, fits=None, **kw):
    """The summary page's markdown and the tables, without drawing a figure (fast)."""
    library = pd.DataFrame({"compound_id": list(SMILES), "smiles": list(SMILES.values()),
                            "activity_nM": [12.0, 300.0, 0.4]})
    label = label or {"description": "Ki < 100 nM", "threshold_nM": 100.0, "threshold_pActivity": 7.0,
                      "n_cured": 2, "n_compounds": 3, "rows_per_type": {"Ki": 9}}
    fits = fits or [{"d": d, "n_compounds": 3, "n_cured": 2, "n_not_cured": 1, "metrics": {}} for d in (2, 4)]
    tables = report_tables(records, library=library, fits=fits, reference=(4, 3), error_rates=ERROR_RATES, **kw)
    page = summary_page(tables, curation={"source": {"used": "source"}}, label=label, reference=(4, 3),
                        activity="Ki", title="t")
    return page.markdown(), page.html(), tables


def test_the_summary_page_writes_micromolar_as_a_chemist_does_and_the_tables_keep_numbers():
    """Figures said 1 µM, the summary page (summary.md, summary.html) "Ki 12 uM" for the same compounds. Its text
    for people now says µM (the HTML as &micro;: the page is a fragment with no declared encoding); the tables
    (CSV, JSON) keep their numbers in nM."""
    records = _records()  # A 12 uM, B 300 uM declared; C 400 nM the best of the sample
    records["declared_activity_nM"] = records["declared_activity_nM"].map(lambda v: [1000.0 * x for x in v])
    records["best_activity_nM"] *= 1000.0
    md, page, tables = _page(records)
    assert "median Ki 12 \u00b5M, best of the sample Ki 400 nM" in md and "B (Ki 300 \u00b5M, rank 3 of 3)" in md
    assert "uM" not in md
    assert "Ki 12 &micro;M" in page and "uM" not in page and "\u00b5" not in page  # ASCII HTML
    assert "uM" not in tables["summary"].to_csv() and "\u00b5" not in tables["summary"].to_csv()


def test_no_error_rate_is_quoted_when_no_run_stopped():
    """It read 'Error: not the exact best nan; more than epsilon = 0.25 below: nan'."""
    records = _records()
    records.loc[records["label"] == "alg2", "stopped"] = False
    md, page, _ = _page(records)
    assert "nan" not in md and "nan" not in page
    assert "alg2 (d = 4, K = 3" in md and "Error: not measured: no run stopped (all 4 hit max_samples)." in md
    assert "Error: not the exact best 0.00; " in md  # alg1 stopped: its rate is quoted


def test_every_algorithm_says_whether_its_setting_is_guaranteed_with_the_measured_rate():
    md, _, tables = _page(_registered_records())
    s = tables["summary"].drop_duplicates("label").set_index("label")
    assert s.loc["alg1", "guarantee"] == "no guarantee" and s.loc["safe", "guarantee"] == "error <= delta"
    assert s.loc["alg2", "guarantee"] == "fixed budget" and s.loc["heur", "guarantee"] == "no guarantee"
    # measured at the run's delta (0.05: two instances), never mixed with delta = 0.1
    assert s.loc["alg1", "measured_error_rate"] == "0.018-0.070 (44 errors in 1000 runs)"
    assert s.loc["safe", "measured_error_rate"] == "0.000 (0 errors in 500 runs)"
    assert s.loc["alg2", "measured_error_rate"] == "not measured"
    assert s.loc["heur", "measured_error_rate"] == "0.004 (2 errors in 500 runs)"  # only delta 0.1 was measured
    assert ("- alg1: NO ERROR GUARANTEE: calibration='reinterpreted' voids it, the error can exceed delta; measured "
            "error rate 0.018-0.070 (44 errors in 1000 runs) on 2 instances at delta = 0.05") in md
    # the model the guarantee holds under is named (it said only "error at most delta")
    assert ("- safe: guaranteed: error at most delta = 0.05 if the 0/1 outcomes follow a logistic model of the "
            "features; measured error rate 0.000") in md
    assert "so the logistic model holds by construction and these simulations do not test it" in md
    assert "- heur: NO ERROR GUARANTEE: threshold='heuristic' voids it" in md and "at delta = 0.1" in md
    assert "- alg2: fixed budget: no error bound at a chosen delta" in md and "error rate not measured" in md
    # the paragraph of each algorithm, and its table rows
    assert "alg1 (d = 4, K = 3, names 1 compound; NO GUARANTEE, measured error rate 0.018-0.070" in md
    assert "safe (d = 4, K = 3, names 1 compound; error <= delta, measured error rate 0.000" in md
    assert "alg2 (d = 4, K = 3, names 1 compound; fixed budget, error rate not measured)" in md
    assert "measured error rate not measured" not in md  # what the paragraph said
    assert "| alg1 | no guarantee | 0.018-0.070 (44 errors in 1000 runs) | 2 | 3 |" in md
    assert "| alg2 | fixed budget | not measured | 2 | 3 |" in md


def test_legends_name_the_guarantee():
    rec = _registered_records()
    names = {lab: f"{lab} ({g.tag})" for lab, g in algorithm_guarantees(rec, error_rates=ERROR_RATES).items()}
    s = summarize_screens(rec)
    for fig in (plot_samples(s, "d", {"K": 3}, names=names), plot_declared_rank(s, "d", {"K": 3}, names=names),
                plot_pulls_per_arm(rec, np.array([0.9, 0.7, 0.5]), names=names)):
        texts = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
        assert {"alg1 (no guarantee)", "alg2 (fixed budget)", "safe (error <= delta)"} <= set(texts), texts
    texts = [t.get_text() for t in plot_error_rate(s, "d", {"K": 3}, names=names).axes[0].get_legend().get_texts()]
    assert "heur (no guarantee): not the exact best" in texts


def test_the_guarantee_comes_from_the_parameters_declarations():
    """Every value a parameter declares as voiding the guarantee is reported as such, for every algorithm."""
    from screenbai.bandits.core.params import declared
    from screenbai.bandits.core.registry import available
    from screenbai.guarantees import guarantee_of

    seen = 0
    for name, entry in available().items():
        params = declared(entry.cls)
        if "budget" in params:
            assert guarantee_of(name, {}, ERROR_RATES).kind == "fixed budget", name
            continue
        assert guarantee_of(name, {}, ERROR_RATES).kind == "guaranteed", name  # the defaults keep the guarantee
        for key, p in params.items():
            for value in p.no_guarantee:
                g = guarantee_of(name, {key: value}, ERROR_RATES)
                assert g.kind == "none" and g.voided_by == (f"{key}={value!r}",), (name, key, value)
                seen += 1
    assert seen >= 8  # glgape, m-glgape (2 each), m-lingape, lingifa, lucb, ugape


@pytest.mark.parametrize("name", ["glgape", "m-glgape"])
def test_a_calibration_run_on_plug_in_constants_has_no_guarantee(name):
    """GLGapE's 'self-normalized' and 'theory' calibrations assume c_mu (and S) known; at their default
    plug-in estimates the report, status and certificate say "no guarantee" (they said "error <= delta")."""
    from screenbai.guarantees import guarantee_of

    g = guarantee_of(name, {"calibration": "self-normalized"}, ERROR_RATES)
    assert g.kind == "none" and "c_mu='estimate' and S='estimate'" in g.voided_by[0], g
    assert "NO ERROR GUARANTEE" in g.promise()
    assert guarantee_of(name, {"calibration": "self-normalized", "c_mu": 0.1}, ERROR_RATES).voided_by == (
        "calibration='self-normalized' with S='estimate' (plug-in estimates, not the known bounds its guarantee "
        "assumes)",)
    assert guarantee_of(name, {"calibration": "theory"}, ERROR_RATES).kind == "none"
    # known constants given: the guarantee holds, as with the default likelihood-ratio calibration
    known = {"calibration": "self-normalized", "c_mu": 0.1, "S": 3.0}
    assert guarantee_of(name, known, ERROR_RATES).kind == "guaranteed"
    assert guarantee_of(name, {"calibration": "theory", "c_mu": 0.1}, ERROR_RATES).kind == "guaranteed"
    assert guarantee_of(name, {}, ERROR_RATES).kind == "guaranteed"


def test_no_consensus_when_compounds_tie_as_most_often_declared():
    md, _, _ = _page(_registered_records())
    # alg2 declared A in 2 runs and B in 2: no compound is the most often declared
    assert ("No consensus: 2 compounds tie as most often declared (2 of 4 runs each): A (Ki 12 nM, rank 2 of 3); "
            "B (Ki 300 nM, rank 3 of 3).") in md
    assert "Most often declared: A (Ki 12 nM, rank 2 of 3), 4 of 4 runs." in md  # alg1: every run
    rows = declared_compounds(_records())
    rows = rows[(rows["label"] == "alg2") & (rows["d"] == 2)]
    assert consensus(rows)[0] is False and len(consensus(rows)[1]) == 2
    assert consensus(rows, m=2)[0] is True  # a top-2 algorithm naming A and B in every run agrees


def _drawn(fig):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return canvas.get_renderer()


def test_figures_show_the_quoted_medians_with_their_spread_and_legends_off_the_curves():
    rec = _records()
    s = summarize_screens(rec)
    fig = plot_samples(s, "d", {"K": 3})
    ax = fig.axes[0]
    stopped = rec[(rec["label"] == "alg2") & rec["stopped"]].groupby("d")["samples"]
    bars = [c for c in ax.containers if c.get_label() == "alg2"][0]
    np.testing.assert_allclose(bars.lines[0].get_ydata(), stopped.median())  # the statistic the text quotes
    spans = [sorted((seg[0][1], seg[1][1])) for seg in bars.lines[2][0].get_segments()]
    np.testing.assert_allclose(spans, np.c_[stopped.quantile(0.25), stopped.quantile(0.75)])  # its spread: the IQR
    renderer = _drawn(fig)
    assert ax.get_legend().get_window_extent(renderer).y1 < ax.get_window_extent(renderer).y0  # under the axes
    fig = plot_error_rate(s.assign(eps_good_fraction=0.9), "d", {"K": 3}, delta=0.05)
    renderer = _drawn(fig)
    ax = fig.axes[0]
    assert not ax.texts  # the note is in the legend, and the legend is under the axes
    assert ax.get_legend().get_window_extent(renderer).y1 < ax.get_window_extent(renderer).y0
    assert any("epsilon-error not drawn" in t.get_text() for t in ax.get_legend().get_texts())


def test_the_pulls_title_fits_the_figure():
    title = ("cdk2_cyclinA (CHEMBL2094128, IC50): which compounds to test, and how many tests it took "
             "[data: cdk2_chembl301_webexport_raw.csv.gz, offline fallback]\ntests per compound, d = 20, K = 400")
    fig = plot_pulls_per_arm(_records(), np.array([0.9, 0.7, 0.5]), title=title)
    renderer = _drawn(fig)
    box = fig.axes[0].title.get_window_extent(renderer)
    assert 0 <= box.x0 and box.x1 <= fig.bbox.width  # not cut at either side
    assert fig.axes[0].title.get_text().replace("\n", " ").split() == title.replace("\n", " ").split()


def test_declared_compounds_cure_rate_interval_beside_their_potency_in_readable_units():
    d = declared_compounds(_records())
    d = d[(d["d"] == 4)].assign(cure_rate_lo95=lambda t: t["cure_rate"] - 0.2,
                                cure_rate_hi95=lambda t: t["cure_rate"] + 0.05)
    sample = pd.DataFrame({"compound_id": ["C", "X"], "activity_nM": [0.4, 2e4], "mean": [0.5, 0.1]})
    fig = plot_declared_potency(d, sample, activity="Ki", threshold_nM=100.0)
    ax = fig.axes[0]
    _drawn(fig)
    ticks = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    # micromolar as a chemist writes it in a figure (the CSV and JSON files keep ASCII 'uM')
    assert {"1 nM", "100 nM", "1 \u00b5M", "10 \u00b5M"} <= set(ticks) and not any("e+" in t or "^" in t for t in ticks)
    assert not any("uM" in t for t in ticks)
    legend = plot_declared_potency(d, sample, activity="Ki", threshold_nM=2000.0).axes[0].get_legend_handles_labels()[1]
    assert "cure label: Ki < 2 \u00b5M" in legend
    a1 = d[d["label"] == "alg1"]
    pts = [c for c in ax.collections if c.get_label() == "alg1"][0].get_offsets()
    np.testing.assert_allclose(np.asarray(pts)[:, 1], a1["cure_rate"])  # its estimated cure rate ...
    bars = ax.containers[0]  # alg1's error bars (drawn first)
    spans = [sorted((seg[0][1], seg[1][1])) for seg in bars.lines[2][0].get_segments()]
    np.testing.assert_allclose(spans, np.c_[a1["cure_rate"] - 0.2, a1["cure_rate"] + 0.05])  # ... with its interval
    assert "cure label: Ki < 100 nM" in [t.get_text() for t in ax.get_legend().get_texts()]
    # the report takes the interval from the arms of the reference screen
    arms = pd.DataFrame({"compound_id": list(SMILES), "activity_nM": [12.0, 300.0, 0.4], "mean": [0.9, 0.7, 0.5],
                         "mean_lo95": [0.8, 0.5, 0.3], "mean_hi95": [0.95, 0.8, 0.7]})
    _, _, tables = _page(_records(), reference_arms=arms)
    ref = tables["declared"][tables["declared"]["d"] == 4].set_index("compound_id")
    assert ref.loc["A", "cure_rate_lo95"].tolist() == [0.8, 0.8] and ref.loc["B", "cure_rate_hi95"] == 0.8


def test_ground_truth_metrics_say_in_sample_and_cross_validated():
    metrics = {"roc_auc": 0.99, "brier": 0.01, "cv_folds": 5, "cv_roc_auc": 0.71, "cv_brier": 0.2}
    fits = [{"d": d, "n_compounds": 3, "n_cured": 2, "n_not_cured": 1, "metrics": metrics} for d in (2, 4)]
    md, _, tables = _page(_records(), fits=fits)
    gt = tables["ground_truth"]
    assert list(gt["AUC on the fitted compounds (in-sample)"]) == [0.99, 0.99]
    assert list(gt["AUC cross-validated"]) == [0.71, 0.71] and list(gt["CV folds"]) == [5, 5]
    assert "| AUC on the fitted compounds (in-sample) |" in md and "| AUC cross-validated |" in md
    assert "roc_auc" not in md


def test_a_label_with_nearly_one_class_is_flagged_at_the_top():
    lopsided = {"description": "IC50 < 1e+06 nM", "threshold_nM": 1e6, "threshold_pActivity": 3.0, "n_cured": 1590,
                "n_compounds": 1600, "rows_per_type": {"IC50": 2000}}
    text = label_warning(lopsided)
    assert text and "99.4% of the 1600 compounds cure" in text and "cannot tell good compounds from bad" in text
    assert label_warning({**lopsided, "n_cured": 10}).count("do not cure") == 1  # the other side too
    assert label_warning({**lopsided, "n_cured": 599}) is None and label_warning({**lopsided, "n_cured": 1440}) is None
    md, page, _ = _page(_records(), label=lopsided)
    assert md.index("cannot tell good compounds from bad") < md.index("## Data")
    assert "cannot tell good" in page


def test_a_certified_epsilon_column_is_shown_when_the_records_have_it():
    md, _, tables = _page(_records())
    assert "median_certified_epsilon" not in tables["summary"] and "certified" not in md
    rec = _records().assign(certified_epsilon=lambda t: 0.01 * (t["replication"] + 1))
    md, _, tables = _page(rec)
    assert (tables["summary"]["median_certified_epsilon"] == 0.025).all()
    assert "certified epsilon (median)" in md
    assert "Certified epsilon (median over runs): 0.025 of cure rate (when a run ends, its declared compounds are " \
        "certified within this of the best cure rate, with 1 - delta confidence, under the algorithm's model)." in md
    md, _, _ = _page(rec.assign(certified_guaranteed=False))  # as the runner records it for a heuristic setting
    assert "Certified epsilon (median over runs): 0.025 of cure rate (not a guarantee under this setting)." in md
    # a registered algorithm's certificate names the model it holds under
    rec = _registered_records().assign(certified_epsilon=lambda t: 0.01 * (t["replication"] + 1),
                                       certified_guaranteed=True)
    md, _, _ = _page(rec)
    assert ("certified within this of the best cure rate, with 1 - delta confidence, if the 0/1 outcomes follow a "
            "logistic model of the features).") in md


def test_compounds_with_the_same_features_are_named_beside_a_declared_one(tmp_path):
    """Stereoisomers share their Morgan fingerprint, so the ground truth gives them one cure rate: the report
    declared CPD301 (80 uM) with no word that its twin CPD300 measured 10 nM. The summary now counts such
    compounds and the declared table names each declared compound's twins with their activities."""
    from screenbai.report.summary import twins_warning
    from screenbai.report.tables import feature_twins

    arms = pd.DataFrame({"compound_id": ["A", "B", "C", "D", "E"], "x0": [1.0, 0.5, 1.0, 0.5, 2.0],
                         "x1": [0.0, 1.0, 0.0, 1.0, 0.0], "activity_nM": [12.0, 300.0, 80000.0, 5.0, 1.0]})
    twins = feature_twins(arms)
    assert twins == {"A": [("C", 80000.0)], "C": [("A", 12.0)], "B": [("D", 5.0)], "D": [("B", 300.0)]}
    assert feature_twins(arms.drop(index=[2, 3])) == {}
    library = pd.DataFrame({"compound_id": list(SMILES), "smiles": list(SMILES.values())})
    fits = [{"d": d, "n_compounds": 3, "n_cured": 2, "n_not_cured": 1, "metrics": {}} for d in (2, 4)]
    declared = report_tables(_records(), library=library, fits=fits, reference=(4, 3), error_rates=ERROR_RATES,
                             twins=twins)["declared"]
    said = dict(zip(declared["compound_id"], declared["same_features_as"]))
    assert said == {"A": "C (8e+04 nM)", "B": "D (5 nM)"}
    warning = twins_warning({"feature_twins": {"compounds": 4, "groups": 2}})
    assert warning.startswith("4 compounds share their feature vector with another (2 groups;")
    assert twins_warning({}) is None and twins_warning({"feature_twins": {"compounds": 0, "groups": 0}}) is None

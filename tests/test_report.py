"""Report tables and figures from run records."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from screenbai.report import (
    declared_compounds,
    ground_truth_table,
    markdown_table,
    plot_declared_rank,
    plot_error_rate,
    plot_pulls_per_arm,
    plot_samples,
    structure_grid,
    summarize_screens,
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
            {"d": 2, "n_compounds": 10, "n_cured": 9, "n_not_cured": 1, "metrics": {"roc_auc": 0.7}}]
    t = ground_truth_table(fits)
    assert list(t["d"]) == [2, 5] and list(t["AUC on the fitted compounds (in-sample)"]) == [0.7, 0.8]
    assert "arr" not in t


def test_plots_return_figures_with_data():
    s = summarize_screens(_records())
    fig = plot_samples(s, "d", {"K": 3})
    assert isinstance(fig, Figure)
    texts = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert texts.count("alg1") == texts.count("alg2") == 1 and "K = 3 (one test per compound)" in texts
    assert "alg2: hit the cap (not stopped)" in texts and len(texts) == 4
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


def test_write_report_files(tmp_path):
    library = pd.DataFrame({"compound_id": list(SMILES), "smiles": list(SMILES.values()),
                            "activity_nM": [12.0, 300.0, 0.4]})
    outputs = {k: tmp_path / f"{k}.{ext}" for k, ext in
               [("summary", "csv"), ("declared", "csv"), ("ground_truth", "csv"), ("summary_html", "html"),
                ("declared_html", "html"), ("ground_truth_html", "html"), ("structures", "png"),
                ("pulls", "png"), ("markdown", "md"), ("page", "html"), ("study_vary_d", "png")]}
    curation = {"n_input": 9, "n_output_rows": 3, "n_compounds": 3, "dropped": {"censored relation": 6},
                "source": {"used": "offline_fallback", "warning": "OFFLINE FALLBACK: used x.csv",
                           "settings": {"kind": "export", "path": "x.csv"}, "n_rows": 9}}
    label = {"description": "Ki < 100 nM", "threshold_nM": 100.0, "threshold_pActivity": 7.0, "n_cured": 2,
             "n_compounds": 3, "rows_per_type": {"Ki": 9}}
    fits = [{"d": d, "n_compounds": 3, "n_cured": 2, "n_not_cured": 1, "metrics": {}} for d in (2, 4)]
    write_report(_records(), library=library, curation=curation, label=label, fits=fits,
                 studies={"vary_d": {"K": 3, "d": [2, 4]}}, reference=(4, 3),
                 reference_means=np.array([0.9, 0.7, 0.5]), outputs=outputs,
                 algorithms=[{"label": "alg1", "params": {"delta": 0.05}}], title="t", activity="Ki")
    for key in ("structures", "pulls", "study_vary_d"):
        assert outputs[key].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and outputs[key].stat().st_size > 2000
    declared = pd.read_csv(outputs["declared"])
    assert {"Ki_nM", "Ki_rank", "best_Ki_nM"} <= set(declared.columns)
    assert set(declared["smiles"]) == {"CCO", "c1ccccc1O"}
    md = outputs["markdown"].read_text()
    assert md.index("WARNING: OFFLINE FALLBACK") < md.index("## Data")  # the fallback comes first
    assert md.startswith("# t [data: x.csv, offline fallback]")
    assert "| censored relation | 6 |" in md and "Cure label: Ki < 100 nM: 2 of 3 compounds cure (66.7 %)" in md
    assert "alg2 (d = 4, K = 3, names 1 compound; guarantee unknown" in md and "2 different compounds declared in 4 runs" in md
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

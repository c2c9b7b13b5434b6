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
    plot_error_rate,
    plot_pulls_per_arm,
    plot_samples,
    structure_grid,
    summarize_screens,
    write_report,
)

SMILES = {"A": "CCO", "B": "c1ccccc1O", "C": "CC(=O)Nc1ccc(O)cc1"}


def _records():
    rows = []
    for label in ("alg1", "alg2"):
        for d, K in ((2, 3), (4, 3)):
            for rep in range(4):
                declared = "A" if (label == "alg1" or rep < 3) else "B"
                rows.append({
                    "label": label, "algorithm": label, "d": d, "K": K, "replication": rep,
                    "samples": 10 * (rep + 1) * d, "stopped": rep != 3 or label == "alg1",
                    "correct": declared == "A", "wall_time_s": 0.01, "pulls": [5, 3, 2],
                    "declared_id": declared, "declared_arm": 0 if declared == "A" else 1,
                    "declared_activity_nM": 12.0 if declared == "A" else 300.0,
                    "declared_activity_rank": 2 if declared == "A" else 3,
                    "declared_mean": 0.9 if declared == "A" else 0.7,
                    "declared_mean_rank": 1 if declared == "A" else 2,
                    "best_mean": 0.9, "best_mean_id": "A", "best_activity_nM": 0.4,
                })
    return pd.DataFrame(rows)


def test_summary_keeps_unstopped_runs_apart():
    s = summarize_screens(_records()).set_index(["label", "d"])
    a1, a2 = s.loc[("alg1", 2)], s.loc[("alg2", 2)]
    assert a1["runs"] == 4 and a1["not_stopped"] == 0
    assert a1["mean_samples"] == pytest.approx(np.mean([20, 40, 60, 80]))
    assert a2["not_stopped"] == 1
    assert a2["mean_samples"] == pytest.approx(np.mean([20, 40, 60]))  # the capped run is not averaged in
    assert a1["error_rate"] == 0 and a2["error_rate"] == 0  # alg2's wrong answer came from the unstopped run
    assert a1["eps_error_rate"] == 0 and a1["mean_samples_all"] == a1["mean_samples"]
    assert a2["mean_gap"] == pytest.approx(0.2 / 4)  # declared 0.7 vs best 0.9 in one of four runs
    strict = summarize_screens(_records(), epsilon=0.0).set_index(["label", "d"])
    assert strict.loc[("alg1", 2), "eps_error_rate"] == 0
    assert s.loc[("alg1", 4), "samples_per_arm"] == pytest.approx(np.mean([40, 80, 120, 160]) / 3)


def test_declared_compounds_takes_the_mode():
    d = declared_compounds(_records()).set_index(["label", "d"])
    row = d.loc[("alg2", 2)]
    assert row["declared_id"] == "A" and row["times_declared"] == 3 and row["distinct_declared"] == 2
    assert row["declared_activity_nM"] == 12.0 and row["best_activity_nM"] == 0.4
    assert row["declared_activity_rank"] == 2


def test_ground_truth_table():
    fits = [{"d": 5, "n_compounds": 10, "n_cured": 9, "n_not_cured": 1, "metrics": {"roc_auc": 0.8, "arr": [1, 2]}},
            {"d": 2, "n_compounds": 10, "n_cured": 9, "n_not_cured": 1, "metrics": {"roc_auc": 0.7}}]
    t = ground_truth_table(fits)
    assert list(t["d"]) == [2, 5] and list(t["roc_auc"]) == [0.7, 0.8] and "arr" not in t


def test_plots_return_figures_with_data():
    s = summarize_screens(_records())
    fig = plot_samples(s, "d", {"K": 3})
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    assert texts.count("alg1") == texts.count("alg2") == 1 and "K = 3" in texts
    assert "alg2: hit the cap (not stopped)" in texts and len(texts) == 4
    fig = plot_error_rate(s, "d", {"K": 3}, delta=0.05)
    ys = [line.get_ydata() for line in fig.axes[0].get_lines() if line.get_label() == "alg1"][0]
    np.testing.assert_allclose(ys, [0, 0])
    fig = plot_pulls_per_arm(_records(), np.array([0.9, 0.7, 0.5]))
    np.testing.assert_allclose(fig.axes[0].get_lines()[0].get_ydata(), [5, 3, 2])


def test_structure_grid_and_markdown():
    img = structure_grid(pd.DataFrame({"smiles": list(SMILES.values())}), legend=list(SMILES), mols_per_row=2)
    assert img.size[0] > 100 and img.size[1] > 100
    assert np.asarray(img).std() > 0  # something was drawn
    md = markdown_table(pd.DataFrame({"a": [1.23456, np.nan], "b": ["x", "y"]}))
    assert md.splitlines() == ["| a | b |", "|---|---|", "| 1.235 | x |", "|  | y |"]


def test_write_report_files(tmp_path):
    library = pd.DataFrame({"compound_id": list(SMILES), "smiles": list(SMILES.values()), "activity_nM": [12.0, 300.0, 0.4]})
    outputs = {k: tmp_path / f"{k}.{ext}" for k, ext in
               [("summary", "csv"), ("declared", "csv"), ("ground_truth", "csv"), ("structures", "png"),
                ("pulls", "png"), ("markdown", "md"), ("study_vary_d", "png")]}
    curation = {"n_input": 9, "n_output_rows": 3, "n_compounds": 3, "dropped": {"censored relation": 6},
                "source": {"used": "offline_fallback", "warning": "OFFLINE FALLBACK: used x.csv",
                           "settings": {"kind": "export", "path": "x.csv"}, "n_rows": 9}}
    fits = [{"d": d, "n_compounds": 3, "n_cured": 2, "n_not_cured": 1, "metrics": {}} for d in (2, 4)]
    write_report(_records(), library=library, curation=curation, fits=fits,
                 studies={"vary_d": {"K": 3, "d": [2, 4]}}, reference=(4, 3),
                 reference_means=np.array([0.9, 0.7, 0.5]), outputs=outputs,
                 algorithms=[{"label": "alg1", "params": {"delta": 0.05}}], title="t")
    for key in ("structures", "pulls", "study_vary_d"):
        assert outputs[key].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and outputs[key].stat().st_size > 2000
    declared = pd.read_csv(outputs["declared"])
    assert set(declared["declared_smiles"]) == {"CCO"}
    md = outputs["markdown"].read_text()
    assert "WARNING: OFFLINE FALLBACK" in md and "censored relation | 6" in md

"""Screening glue: data paths and offline fallback, subsets, arms, chunked replications."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from screenbai import screening
from screenbai.screening import (
    acquire_activities,
    build_instance,
    check_algorithms,
    draw_subset,
    merge_records,
    reference_point,
    replication_chunks,
    replication_seed,
    resolve_data_path,
    run_chunk,
    study_points,
)


def _arms(n=120, d=4, seed=0):
    """Arms table as the ground_truth rule writes it: PCA coords + intercept, logistic means."""
    rng = np.random.default_rng(seed)
    A = np.c_[rng.normal(size=(n, d)), np.ones(n)]
    theta = rng.normal(size=d + 1)
    arms = pd.DataFrame(A, columns=[f"x{i}" for i in range(d + 1)])
    arms.insert(0, "compound_id", [f"C{i:03d}" for i in range(n)])
    arms.insert(1, "activity_nM", rng.lognormal(5, 2, n))
    arms.insert(2, "cured", True)
    arms.insert(3, "mean", 1 / (1 + np.exp(-A @ theta)))
    library = arms[["compound_id", "activity_nM"]].assign(smiles="CCO")
    return arms, library, theta


GSE = {"label": "gse", "algorithm": "gse-log", "budget_per_arm": 4}
GLGAPE = {"label": "gl", "algorithm": "glgape", "params": {"epsilon": 0.1, "delta": 0.05, "c_mu": "oracle"}}


# ---------------------------------------------------------------------------------- data paths
def test_resolve_data_path_order(tmp_path, monkeypatch):
    root, shared = tmp_path / "repo", tmp_path / "shared"
    root.mkdir()
    shared.mkdir()
    (shared / "a.csv").write_text("x")
    monkeypatch.setenv("SCREENBAI_SHARED_DATA", str(shared))
    assert resolve_data_path("a.csv", root) == (shared / "a.csv").resolve()
    (root / "a.csv").write_text("y")  # the repository copy wins
    assert resolve_data_path("a.csv", root) == (root / "a.csv").resolve()
    assert resolve_data_path(str(shared / "a.csv"), root) == (shared / "a.csv").resolve()
    with pytest.raises(FileNotFoundError, match="missing.csv.*SCREENBAI_SHARED_DATA"):
        resolve_data_path("missing.csv", root)


def _table(tmp_path):
    path = tmp_path / "mine.csv"
    pd.DataFrame({"smi": ["CCO", "c1ccccc1O"], "ic50": ["5", "50"]}).to_csv(path, index=False)
    return {"kind": "table", "path": str(path), "smiles_column": "smi", "activity_column": "ic50"}


def test_offline_fallback_is_used_and_recorded(tmp_path, monkeypatch):
    from screenbai.chem import acquire

    def unreachable(*args, **kwargs):
        raise acquire.ChemblUnavailableError("no network; point at a file with kind: export")

    monkeypatch.setattr(acquire, "fetch_chembl_activities", unreachable)
    source = {"kind": "chembl", "target_chembl_id": "CHEMBL2094128"}
    raw, prov = acquire_activities(source, _table(tmp_path), cache_dir=tmp_path / "cache", repo_root=tmp_path)
    assert len(raw) == 2 and prov["used"] == "offline_fallback"
    assert "CHEMBL2094128" in prov["warning"] and "NOT from the requested target" in prov["warning"]
    with pytest.raises(acquire.ChemblUnavailableError, match="point at a file"):
        acquire_activities(source, None, cache_dir=tmp_path / "cache", repo_root=tmp_path)


def test_local_table_needs_no_fallback(tmp_path):
    raw, prov = acquire_activities(_table(tmp_path), None, repo_root=tmp_path)
    assert prov["used"] == "source" and prov["n_rows"] == 2


# ---------------------------------------------------------------------------------- plan
def test_study_plan():
    studies = {"vary_d": {"K": 40, "d": [2, 5]}, "vary_K": {"d": 5, "K": [20, 40]}}
    assert study_points(studies) == [(2, 40), (5, 20), (5, 40)]
    assert reference_point(studies) == (5, 40)  # shared by both studies
    assert reference_point(studies, {"d": 2, "K": 40}) == (2, 40)
    with pytest.raises(ValueError, match="not one of the screens"):
        reference_point(studies, {"d": 3, "K": 40})
    assert replication_chunks(25, 10) == [(0, 10), (10, 10), (20, 5)]
    assert replication_seed(7, 5, 40) == replication_seed(7, 5, 40) != replication_seed(7, 5, 20)


def test_check_algorithms_names_the_problem():
    check_algorithms([GSE, GLGAPE])
    with pytest.raises(ValueError, match="unknown algorithm 'glgap'"):
        check_algorithms([{"label": "x", "algorithm": "glgap"}])
    with pytest.raises(ValueError, match="no parameter 'epsilonn'"):
        check_algorithms([{"label": "x", "algorithm": "glgape", "params": {"epsilonn": 0.1}}])
    with pytest.raises(ValueError, match="more than once"):
        check_algorithms([GSE, dict(GSE)])
    with pytest.raises(ValueError, match="both budget and budget_per_arm"):
        check_algorithms([{**GSE, "params": {"budget": 10}}])


# ---------------------------------------------------------------------------------- arms
def test_draw_subset_seeded_and_ranked():
    _, library, _ = _arms()
    a = draw_subset(library, 30, 5)
    assert a.equals(draw_subset(library, 30, 5))
    assert not a["compound_id"].equals(draw_subset(library, 30, 6)["compound_id"])
    assert a["compound_id"].is_unique and list(a["arm"]) == list(range(30))
    assert a.loc[a["activity_nM"].idxmin(), "activity_rank"] == 1
    with pytest.raises(ValueError, match="K = 500 .* has 120"):
        draw_subset(library, 500, 0)


def test_build_instance_is_logistic_with_intercept():
    arms, library, theta = _arms()
    sub = draw_subset(library, 25, 1)
    inst = build_instance(arms, sub, theta, "t")
    assert inst.K == 25 and inst.d == 5 and inst.reward == "bernoulli"
    np.testing.assert_allclose(inst.means, 1 / (1 + np.exp(-inst.features @ theta)))
    np.testing.assert_array_equal(inst.features[:, -1], 1.0)


def test_ground_truth_arms_rejects_a_single_class():
    _, library, _ = _arms()
    feats = pd.DataFrame({"compound_id": library["compound_id"], "pc1": 0.0})
    with pytest.raises(ValueError, match="one side of ground_truth.threshold_nM"):
        screening.ground_truth_arms(library, feats, threshold_nM=1e12)


# ---------------------------------------------------------------------------------- runs
def test_chunks_reproduce_the_whole_run():
    arms, library, theta = _arms()
    sub = draw_subset(library, 20, 3)
    kw = dict(d=4, K=20, seed=11, max_samples=10**5)
    whole = run_chunk(arms, sub, theta, GSE, start=0, n_reps=6, **kw)
    parts = merge_records([run_chunk(arms, sub, theta, GSE, start=s, n_reps=3, **kw) for s in (3, 0)])
    cols = ["replication", "samples", "declared_id", "correct"]
    pd.testing.assert_frame_equal(whole[cols], parts[cols])
    assert list(whole["replication"]) == list(range(6))
    assert (whole["samples"] == 4 * 20).all()  # budget_per_arm * K
    with pytest.raises(ValueError, match="appear twice"):
        merge_records([whole, whole])


def test_run_chunk_records_declared_compound():
    arms, library, theta = _arms()
    sub = draw_subset(library, 20, 3)
    rec = run_chunk(arms, sub, theta, GLGAPE, d=4, K=20, seed=1, start=0, n_reps=3, max_samples=10**5)
    assert set(rec["label"]) == {"gl"} and set(rec["d"]) == {4} and set(rec["K"]) == {20}
    row = rec.iloc[0]
    expect = sub.iloc[row["declared_arm"]]
    assert row["declared_id"] == expect["compound_id"]
    assert row["declared_activity_nM"] == expect["activity_nM"]
    assert row["declared_activity_rank"] == expect["activity_rank"]
    mu = arms.set_index("compound_id").loc[sub["compound_id"], "mean"].to_numpy()
    assert row["best_mean"] == pytest.approx(mu.max())
    assert row["declared_mean"] == pytest.approx(mu[row["declared_arm"]])
    assert len(row["pulls"]) == 20 and sum(row["pulls"]) == row["samples"]
    assert rec["stopped"].all() and rec["correct"].mean() >= 2 / 3


@pytest.mark.parametrize("params,match", [
    ({"m": 1.7}, r"m=1\.7 is not allowed.*an integer >= 1"),
    ({"delta": "abc"}, r"delta='abc' is not allowed.*\(0, 1\)"),
    ({"budget": -5}, r"budget=-5 is not allowed.*an integer >= 1"),
])
def test_check_algorithms_refuses_bad_values_up_front(params, match):
    algorithm = "gse-lin" if "budget" in params else "m-lingape"
    with pytest.raises(ValueError, match=match):
        check_algorithms([{"label": "a", "algorithm": algorithm, "params": params}])


def test_check_algorithms_accepts_oracle_and_old_names():
    check_algorithms([
        {"label": "a", "algorithm": "lingape", "params": {"S": "oracle", "R": 1.0}},
        {"label": "b", "algorithm": "glgape", "params": {"c_mu": "oracle", "epsilon": 0.1}},
    ])

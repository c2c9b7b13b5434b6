"""Screening glue: data paths and offline fallback, subsets, arms, chunked replications."""

from __future__ import annotations

import warnings
from pathlib import Path

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
GLGAPE = {"label": "gl", "algorithm": "glgape",
          "params": {"epsilon": 0.1, "delta": 0.05, "c_mu": "oracle", "calibration": "reinterpreted"}}


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
    assert "CHEMBL2094128" in prov["warning"] and "NOT from a ChEMBL download of the requested target: the file " \
        "does not say which target it holds" in prov["warning"]
    with pytest.raises(acquire.ChemblUnavailableError, match="point at a file"):
        acquire_activities(source, None, cache_dir=tmp_path / "cache", repo_root=tmp_path)


def _unreachable(monkeypatch):
    from screenbai.chem import acquire

    def unreachable(*args, **kwargs):
        raise acquire.ChemblUnavailableError("ChEMBL could not be reached within 20 s")

    monkeypatch.setattr(acquire, "fetch_chembl_activities", unreachable)


def test_a_fallback_file_of_another_target_is_refused_unless_it_stands_in_for_the_requested_one(
    tmp_path, monkeypatch
):
    """A config copied from the CDK2 one for EGFR screened CDK2 (the fallback) with exit 0."""
    _unreachable(monkeypatch)
    fallback = _table(tmp_path)
    pd.read_csv(fallback["path"]).assign(target_chembl_id="CHEMBL301").to_csv(fallback["path"], index=False)
    egfr = {"kind": "chembl", "target_chembl_id": "CHEMBL203"}
    with pytest.raises(ValueError, match=r"offline_fallback.path .*mine.csv holds target CHEMBL301 \(2 rows\), not "
                                         r"the requested source.target_chembl_id CHEMBL203: .* set "
                                         r"offline_fallback.stands_in_for: CHEMBL203"):
        acquire_activities(egfr, fallback, cache_dir=tmp_path / "cache", repo_root=tmp_path)
    with pytest.raises(ValueError, match=r"\(offline_fallback.stands_in_for is CHEMBL2094128\)"):
        acquire_activities(egfr, {**fallback, "stands_in_for": "CHEMBL2094128"}, cache_dir=tmp_path / "cache",
                           repo_root=tmp_path)
    raw, prov = acquire_activities(egfr, {**fallback, "stands_in_for": "CHEMBL203"}, cache_dir=tmp_path / "cache",
                                   repo_root=tmp_path)  # opted in: used, and said loudly as before
    assert prov["used"] == "offline_fallback" and "NOT from the requested target" in prov["warning"]
    assert "the file holds CHEMBL301, accepted in its place" in prov["warning"]
    raw, prov = acquire_activities({**egfr, "target_chembl_id": "CHEMBL301"}, fallback,
                                   cache_dir=tmp_path / "cache", repo_root=tmp_path)  # the same target
    assert len(raw) == 2
    # EGFR's config: the fallback holds the requested target (an older extract); the warning said "NOT from the
    # requested target" of it
    assert "NOT from" not in prov["warning"] and "are from the requested target (CHEMBL301), as this file holds " \
        "it, not from ChEMBL's current data" in prov["warning"]


def test_a_missing_fallback_file_says_chembl_was_unreachable_and_where_it_looked(tmp_path, monkeypatch):
    _unreachable(monkeypatch)
    monkeypatch.setenv("SCREENBAI_SHARED_DATA", str(tmp_path / "shared"))
    fallback = {**_table(tmp_path), "path": "egfr.csv"}
    with pytest.raises(FileNotFoundError) as err:
        acquire_activities({"kind": "chembl", "target_chembl_id": "CHEMBL203"}, fallback,
                           cache_dir=tmp_path / "cache", repo_root=tmp_path)
    text = str(err.value)
    assert text.startswith("ChEMBL target CHEMBL203 could not be downloaded and no cache exists (ChEMBL could not")
    assert "offline_fallback.path = 'egfr.csv' not found; looked at: " in text
    assert str(tmp_path / "shared" / "egfr.csv") in text and "set SCREENBAI_SHARED_DATA" in text


def test_sources_checked_before_any_job(tmp_path, monkeypatch):
    from screenbai.screening import check_sources

    monkeypatch.setenv("SCREENBAI_SHARED_DATA", str(tmp_path / "shared"))
    config = {"source": {"kind": "chembl", "target_chembl_id": "CHEMBL203"},
              "offline_fallback": {"kind": "export", "path": "cdk2.csv.gz", "stands_in_for": "CHEMBL2094128"}}
    notes = check_sources(config, tmp_path)
    assert len(notes) == 2
    assert notes[0].startswith("offline_fallback.stands_in_for = 'CHEMBL2094128' but source.target_chembl_id = "
                               "'CHEMBL203': the fallback was chosen for another target")
    assert notes[1].startswith("offline_fallback.path = 'cdk2.csv.gz' not found")
    assert "SCREENBAI_SHARED_DATA" in notes[1]
    (tmp_path / "cdk2.csv.gz").write_text("x")
    config["offline_fallback"]["stands_in_for"] = "CHEMBL203"
    assert check_sources(config, tmp_path) == []
    with pytest.raises(FileNotFoundError, match="source.path = 'mine.csv' not found"):
        check_sources({"source": {"kind": "export", "path": "mine.csv"}}, tmp_path)
    with pytest.raises(ValueError, match="source.stands_in_for = 'CHEMBL1': stands_in_for belongs to offline_fallback"):
        check_sources({"source": {**config["source"], "stands_in_for": "CHEMBL1"}}, tmp_path)


def test_local_table_needs_no_fallback(tmp_path):
    raw, prov = acquire_activities(_table(tmp_path), None, repo_root=tmp_path)
    assert prov["used"] == "source" and prov["n_rows"] == 2
    # no units anywhere: nM is the default, and the provenance (so the report) says so
    assert prov["units"] == "nM, the default: source.units is not given and the activity column 'ic50' names no unit"


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


def test_a_chunk_not_in_the_plan_names_the_chunks_there_are():
    """snakemake asked for runs/.../chunk7.parquet of a screen of 2 chunks failed with a bare IndexError in
    common.smk's chunk_start (CHUNKS[int(wildcards.chunk)]): the chunk, the chunks the config makes, what to do."""
    from screenbai.screening import replication_chunk

    assert [replication_chunk(25, 10, c) for c in ("0", "1", "2")] == replication_chunks(25, 10)
    for chunk in ("3", "7", -1):
        with pytest.raises(ValueError) as info:
            replication_chunk(25, 10, chunk)
        assert str(info.value) == (
            f"screen chunk {chunk} (chunk{chunk}.parquet) is not in the plan: screen.replications = 25 in chunks of "
            "screen.chunk_size = 10 make 3 chunk(s), chunk0 to chunk2; ask for one of those, or raise "
            "screen.replications in the config to run more"
        )


def test_a_pca_dimension_must_fit_the_fingerprints_and_the_library():
    from screenbai.screening import check_dimensions

    check_dimensions([2, 44], 256, 44)
    with pytest.raises(ValueError, match=r"screen.studies: d = 70 exceeds featurize.n_bits = 64"):
        check_dimensions([2, 70], 64)
    with pytest.raises(ValueError, match=r"screen.studies: d = 45, 70 exceeds the 44 compounds of lib.csv: .* lower "
                                         r"d in screen.studies to at most 44"):
        check_dimensions([2, 45, 70], 256, 44, "lib.csv")


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


def test_ground_truth_arms_rejects_a_single_class():  # the curate rule refuses it earlier (cure_threshold)
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
    cols = ["replication", "samples", "declared_arms", "exact_error"]
    pd.testing.assert_frame_equal(whole[cols], parts[cols])
    assert list(whole["replication"]) == list(range(6))
    assert (whole["samples"] == 4 * 20).all()  # budget_per_arm * K
    with pytest.raises(ValueError, match="appear twice"):
        merge_records([whole, whole])


def test_a_budget_too_small_for_the_arms_span_names_the_run_the_screen_and_the_key():
    """gse-log with budget_per_arm 3 on d = 16, K = 16 (the PCA's span known only once it has run) failed in the
    screen rule with 'budget = 48 is too small for gse-log ...', naming neither the run, the screen nor the key."""
    arms, library, theta = _arms(n=40, d=12)
    sub = draw_subset(library, 14, 3)
    entry = {"label": "gse-small", "algorithm": "gse-log", "budget_per_arm": 1}
    message = (r"algorithms: 'gse-small' \(gse-log\) on the screen d = 12, K = 14: budget = 14 is too small .*; "
               r"the budget is budget_per_arm = 1 times K = 14: raise budget_per_arm of 'gse-small'")
    with pytest.raises(ValueError, match=message):
        run_chunk(arms, sub, theta, entry, d=12, K=14, seed=1, start=0, n_reps=1, max_samples=10**5)


def test_run_chunk_records_declared_compound_and_both_errors():
    arms, library, theta = _arms()
    sub = draw_subset(library, 20, 3)
    rec = run_chunk(arms, sub, theta, GLGAPE, d=4, K=20, seed=1, start=0, n_reps=3, max_samples=10**5)
    assert set(rec["label"]) == {"gl"} and set(rec["d"]) == {4} and set(rec["K"]) == {20}
    mu = arms.set_index("compound_id").loc[sub["compound_id"], "mean"].to_numpy()
    for row in rec.itertuples():
        (a,) = row.declared_arms
        expect = sub.iloc[a]
        assert row.declared_ids == [expect["compound_id"]]
        assert row.declared_activity_nM == [expect["activity_nM"]]
        assert row.declared_activity_rank == [expect["activity_rank"]]
        assert row.declared_rank_median == expect["activity_rank"]
        assert row.declared_mean == [pytest.approx(mu[a])]
        assert row.exact_error == (a != int(np.argmax(mu)))
        assert row.eps_error == (mu[a] < mu.max() - 0.1)
        assert len(row.pulls) == 20 and sum(row.pulls) == row.samples
    assert (rec["epsilon"] == 0.1).all() and (rec["m"] == 1).all()
    assert (rec["n_eps_good"] == (mu >= mu.max() - 0.1).sum()).all()
    assert rec["best_mean"].iat[0] == pytest.approx(mu.max())
    assert rec["stopped"].all() and rec["eps_error"].mean() <= 1 / 3


@pytest.mark.slow
def test_top_m_runs_are_judged_against_the_m_th_best():
    arms, library, theta = _arms()
    sub = draw_subset(library, 20, 3)
    entry = {"label": "top3", "algorithm": "m-glgape", "params": {"m": 3, "epsilon": 0.05, "c_mu": "oracle"}}
    rec = run_chunk(arms, sub, theta, entry, d=4, K=20, seed=2, start=0, n_reps=2, max_samples=10**5)
    mu = arms.set_index("compound_id").loc[sub["compound_id"], "mean"].to_numpy()
    third = np.sort(mu)[::-1][2]
    for row in rec.itertuples():
        arms_ = np.asarray(row.declared_arms)
        assert arms_.size == 3 == len(row.declared_ids)
        assert row.exact_error == bool(np.any(mu[arms_] < third))
        assert row.eps_error == bool(np.any(mu[arms_] < third - 0.05))
        assert row.declared_rank_median == np.median(sub["activity_rank"].to_numpy()[arms_])


def test_judging_epsilon_is_the_algorithms_own():
    from screenbai.screening import judging_epsilon

    assert judging_epsilon(GLGAPE) == 0.1
    assert judging_epsilon({"label": "g", "algorithm": "glgape"}) == 0.1  # GLGapE's default
    assert judging_epsilon({"label": "g", "algorithm": "glgape", "params": {"epsilon": 0.02}}) == 0.02
    assert judging_epsilon(GSE, default=0.07) == 0.07  # fixed budget: the report's epsilon


def test_check_algorithms_checks_values_at_every_screen_size():
    check_algorithms([GSE, GLGAPE], sizes=[10, 400])
    with pytest.raises(ValueError, match="'gl'.*delta=2.0 is not allowed"):  # the declared vocabulary, first
        check_algorithms([{**GLGAPE, "params": {"delta": 2.0}}], sizes=[10])
    top = {"label": "top", "algorithm": "m-glgape", "params": {"m": 12}}
    check_algorithms([top], sizes=[20, 40])
    with pytest.raises(ValueError, match="'top' .* K = 10 .*m = 12"):
        check_algorithms([top], sizes=[10, 40])


# ---------------------------------------------------------------------------------- activity types, labels
def _raw(types, values):
    return pd.DataFrame({"canonical_smiles": ["CCO"] * len(values), "standard_type": types,
                         "standard_value": [str(v) for v in values], "standard_units": "nM",
                         "standard_relation": "="})


def test_declared_activity_type_is_checked_against_the_data():
    from screenbai.screening import check_activity_types

    raw = _raw(["Ki"] * 5 + ["Kd"], [1, 2, 3, 4, 5, 6])
    assert check_activity_types(raw, ["Ki"]) == {"Ki": 5}
    message = r"declares activity type\(s\) \['IC50'\] but x.csv holds Ki \(5 rows\), Kd \(1 rows\)"
    with pytest.raises(ValueError, match=message):
        check_activity_types(raw, ["IC50"], "x.csv")


def test_activity_types_of_a_config():
    from screenbai.screening import activity_types_of

    table = {"kind": "table", "path": "x.csv", "activity_column": "ki_nM", "activity_type": "Ki"}
    assert activity_types_of({"source": table}) == ["Ki"]
    assert activity_types_of({"source": {**table, "activity_type": "ki"}}) == ["Ki"]
    with pytest.raises(ValueError, match="names Ki values but source.activity_type is 'IC50' \\(the default\\)"):
        activity_types_of({"source": {k: v for k, v in table.items() if k != "activity_type"}})
    with pytest.raises(ValueError, match="keeps none of the types the source declares"):
        activity_types_of({"source": table, "curation": {"activity_types": ["IC50"]}})
    chembl = {"kind": "chembl", "target_chembl_id": "CHEMBL1", "activity_types": ["Kd"]}
    assert activity_types_of({"source": chembl}) == ["Kd"]
    assert activity_types_of({"source": {"kind": "export", "path": "x"}}) == ["IC50"]
    with pytest.raises(ValueError, match="pChEMBL is read from tables"):
        activity_types_of({"source": {"kind": "export", "path": "x"}, "curation": {"activity_types": ["pChEMBL"]}})
    # a pIC50 column declared as IC50 concentrations: refused before any job starts
    with pytest.raises(ValueError, match="activity_column 'pIC50' names logarithmic values"):
        activity_types_of({"source": {**table, "activity_column": "pIC50", "activity_type": "IC50"}})
    assert activity_types_of({"source": {**table, "activity_column": "pIC50", "activity_type": "pChEMBL"}}) == [
        "pChEMBL"
    ]


def test_pchembl_values_become_nM_with_flipped_bounds():
    from screenbai.screening import format_activity, format_concentration, prepare_activities

    raw = _raw(["pChEMBL"] * 3, [7, 9.5, 6])
    raw["standard_relation"] = ["=", "=", ">"]
    out = prepare_activities(raw, ["pChEMBL"])
    np.testing.assert_allclose(out["standard_value"].astype(float), [100.0, 10 ** -0.5, 1000.0])
    assert list(out["standard_relation"]) == ["=", "=", "<"]  # pChEMBL > 6 is activity < 1000 nM
    assert format_activity(100.0, "pChEMBL") == "pChEMBL 7.00" and format_activity(0.15, "Ki") == "Ki 0.15 nM"
    # ASCII micromolar where files are read by programs (CSV, JSON, summary); figures ask for µM
    assert format_activity(6.2e4, "IC50") == "IC50 62 uM"
    assert [format_concentration(v, "\u00b5M") for v in (999.9, 6.2e4, 0.3, 2e6)] == [
        "1 \u00b5M", "62 \u00b5M", "0.3 nM", "2 mM"]
    with pytest.raises(ValueError, match="outside 0-15 .*250"):
        prepare_activities(_raw(["pChEMBL"] * 2, [7, 250]), ["pChEMBL"], "p.csv")


def test_out_of_range_pchembl_value_is_named_by_data_row_id_and_value():
    from screenbai.screening import prepare_activities

    raw = _raw(["pChEMBL"] * 3, [7.5, 5, 8000])
    raw["molecule_chembl_id"] = ["x1", "x2", "x3"]
    # the third data row, as the user's table lists it, with its id and its value as written (the message
    # said "first: np.float64(8000.0) in row 2": numpy's repr and a 0-based index)
    with pytest.raises(ValueError, match=r"p.tsv: 1 declared pChEMBL value\(s\) lie outside 0-15 \(first: 8000 in "
                       r"data row 3 \(id x3\)\)") as caught:
        prepare_activities(raw, ["pChEMBL"], "p.tsv")
    assert "np.float64" not in str(caught.value)


def test_library_size_is_named():
    from screenbai.screening import check_library_size

    check_library_size(72, [12, 72])
    with pytest.raises(ValueError, match="K = 100, 400 compounds but lib has 72; lower K to at most 72"):
        check_library_size(72, [12, 100, 400], "lib")


@pytest.mark.parametrize("params,match", [
    ({"m": 1.7}, r"m=1\.7 is not allowed.*an integer >= 1"),
    ({"delta": "abc"}, r"delta='abc' is not allowed.*\(0, 1\)"),
    ({"budget": -5}, r"budget=-5 is not allowed.*an integer (>= 1|in \[1, )"),
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


def test_check_algorithms_refuses_a_negative_budget_per_arm():
    with pytest.raises(ValueError, match=r"budget_per_arm=-2 is not allowed.*a number > 0"):
        check_algorithms([{"label": "a", "algorithm": "gse-lin", "budget_per_arm": -2}])


# ---------------------------------------------------------------------------------- issue 17, section 5
def test_a_K_larger_than_the_library_is_clipped_by_default_with_a_warning():
    import yaml

    from screenbai.screening import check_library_size

    schema = yaml.safe_load((Path(__file__).resolve().parents[1] / "workflow/schemas/config.schema.yaml").read_text())
    assert schema["properties"]["screen"]["properties"]["clip_K"]["default"] is True
    with pytest.warns(UserWarning, match=r"asks for K = 800 compounds but lib has 794: K = 794 runs instead"):
        clipped = check_library_size(794, [100, 400, 800], "lib", clip=True)
    assert clipped["asked"] == [800] and clipped["ran"] == 794 and "screen.clip_K" in clipped["message"]
    assert check_library_size(794, [100, 794], "lib", clip=True) is None
    with pytest.raises(ValueError, match="or set screen.clip_K: true"):  # refused only when asked to
        check_library_size(794, [800], "lib", clip=False)


def test_pchembl_values_are_labelled_with_the_activity_they_measure():
    from screenbai.chem.ground_truth import cure_threshold
    from screenbai.screening import activity_label_of, pchembl_of

    table = {"kind": "table", "path": "x.csv", "activity_column": "value", "activity_type": "pChEMBL"}
    assert activity_label_of({"source": {**table, "pchembl_of": "ki"}}) == "Ki"  # declared
    assert activity_label_of({"source": {**table, "activity_column": "pKi"}}) == "Ki"  # said by the column
    assert activity_label_of({"source": {**table, "activity_column": "pIC50"}}) == "IC50"
    assert activity_label_of({"source": table}) == "pChEMBL" and pchembl_of(table) is None  # not said
    words = cure_threshold([1.0, 1e3, 1e5], threshold_nM=100.0, activity_label="Ki")["description"]
    assert words == "Ki < 100 nM"
    # when the source does not say which activity: never "pChEMBL < 100 nM"
    words = cure_threshold([1.0, 1e3, 1e5], threshold_nM=100.0, activity_label="pChEMBL")["description"]
    assert words == "pChEMBL > 7 (activity < 100 nM)"
    words = cure_threshold([1.0, 1e3, 1e5], threshold_pActivity=7.0, activity_label="pChEMBL")["description"]
    assert words == "pChEMBL > 7 (activity < 100 nM)"
    with pytest.raises(ValueError, match=r"source.pchembl_of = 'IC50' but source.activity_column 'pKi' names Ki"):
        pchembl_of({**table, "activity_column": "pKi", "pchembl_of": "IC50"})
    with pytest.raises(ValueError, match=r"source.pchembl_of = 'Ki' is set but source.activity_type is 'Ki'"):
        activity_label_of({"source": {**table, "activity_type": "Ki", "activity_column": "ki_nM", "pchembl_of": "Ki"}})


def test_units_with_pchembl_values_are_refused_naming_the_key():
    from screenbai.screening import activity_types_of

    table = {"kind": "table", "path": "x.csv", "activity_column": "pKi", "activity_type": "pChEMBL", "units": "nM"}
    with pytest.raises(ValueError, match=r"source.units = 'nM' contradicts source.activity_type: pChEMBL"):
        activity_types_of({"source": table})
    assert activity_types_of({"source": {k: v for k, v in table.items() if k != "units"}}) == ["pChEMBL"]


def test_a_screen_with_no_more_compounds_than_features_is_warned_about():
    """d = 12 on K = 8 compounds ran silently: log-tas needed a median of 1 566 tests for 8 compounds, a model of
    13 parameters fitting each compound on its own. Such screens are named in a warning (they stay legal)."""
    from screenbai.screening import OverparameterisedScreenWarning, warn_overparameterised

    with pytest.warns(OverparameterisedScreenWarning, match=r"the screen\(s\) d = 12, K = 8 have no more compounds"):
        assert warn_overparameterised([(3, 8), (12, 8), (3, 40)]) == [(12, 8)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert warn_overparameterised([(3, 8), (7, 9)]) == []  # K = 9 > d + 1 = 8

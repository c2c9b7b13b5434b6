"""The Snakemake workflow end to end on a small generated library, and its config validation."""

from __future__ import annotations

import copy
import itertools
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
SNAKEMAKE = [sys.executable, "-m", "snakemake"]

CORES = ["c1ccc({R})cc1", "c1ccnc({R})c1", "O=C(N{R})c1ccccc1", "c1ccc2[nH]c({R})nc2c1",
         "Cc1cc({R})ncn1", "O=C1CCC({R})N1"]
SUBSTITUENTS = ["C", "CC", "OC", "Cl", "F", "N", "C(F)(F)F", "C(=O)O", "CCN", "OCC", "C#N", "S(C)(=O)=O"]


def make_library(path: Path, seed: int = 0) -> pd.DataFrame:
    """72 valid drug-like SMILES (6 cores x 12 substituents) with IC50s from a hidden model,
    plus rows curation must drop (no SMILES, a censored value, a non-numeric value)."""
    from rdkit import Chem

    rng = np.random.default_rng(seed)
    smiles = [Chem.MolToSmiles(Chem.MolFromSmiles(c.format(R=r))) for c, r in itertools.product(CORES, SUBSTITUENTS)]
    assert len(set(smiles)) == len(smiles) == 72
    core = np.repeat(np.arange(len(CORES)), len(SUBSTITUENTS))
    sub = np.tile(np.arange(len(SUBSTITUENTS)), len(CORES))
    log_ic50 = 1.0 + 0.6 * core + 0.25 * sub + rng.normal(0, 0.4, 72)  # log10 nM: ~10 nM .. 1e6 nM
    table = pd.DataFrame({"name": [f"MOL{i:03d}" for i in range(72)], "smiles": smiles,
                          "ic50_nM": [f"{10 ** v:.4g}" for v in log_ic50]})
    bad = pd.DataFrame({"name": ["BAD1", "BAD2", "BAD3"], "smiles": ["", "CCO", "CCN"],
                        "ic50_nM": ["50", ">10000", "n.d."]})
    out = pd.concat([table, bad], ignore_index=True)
    out.to_csv(path, index=False)
    return table


def small_config(data: Path) -> dict:
    return {
        "target_name": "toy",
        "source": {"kind": "table", "path": str(data), "smiles_column": "smiles",
                   "activity_column": "ic50_nM", "id_column": "name"},
        "offline_fallback": None,
        "featurize": {"radius": 2, "n_bits": 256},
        "ground_truth": {"threshold_nM": 3000.0},
        "screen": {"studies": {"vary_d": {"K": 24, "d": [2, 3]}, "vary_K": {"d": 3, "K": [12, 24]}},
                   "replications": 3, "chunk_size": 2, "subset_seed": 1, "seed": 3, "max_samples": 20000},
        "algorithms": [
            {"label": "glgape", "algorithm": "glgape", "params": {"epsilon": 0.1, "delta": 0.05, "c_mu": "oracle"}},
            {"label": "gse-log", "algorithm": "gse-log", "budget_per_arm": 3},
        ],
        "report": {"title": "toy screen"},
    }


def run_snakemake(workdir: Path, config: dict, *args: str) -> subprocess.CompletedProcess:
    cfg = workdir / "config.yaml"
    cfg.write_text(yaml.safe_dump(config, sort_keys=False))
    cmd = [*SNAKEMAKE, "-s", str(REPO / "Snakefile"), "--directory", str(workdir), "--configfile", str(cfg), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def toy_run(tmp_path_factory):
    work = tmp_path_factory.mktemp("toy")
    truth = make_library(work / "library.csv")
    config = small_config(work / "library.csv")
    proc = run_snakemake(work, config, "--cores", "2")
    assert proc.returncode == 0, proc.stderr[-4000:]
    return work / "results" / "toy", config, truth, work


@pytest.mark.slow
def test_workflow_runs_end_to_end(toy_run):
    res, config, truth, _ = toy_run
    curation = json.loads((res / "curation" / "report.json").read_text())
    assert curation["n_input"] == 75 and curation["n_compounds"] == 72
    assert sum(curation["dropped"].values()) == 3  # each bad row counted under one reason
    assert curation["source"]["used"] == "source"

    records = pd.read_parquet(res / "records.parquet")
    # 2 algorithms x 3 screens (d, K) x 3 replications (chunks of 2 + 1), every chunk merged once
    assert len(records) == 2 * 3 * 3
    assert set(map(tuple, records[["d", "K"]].drop_duplicates().to_numpy())) == {(2, 24), (3, 12), (3, 24)}
    assert all(sorted(g) == [0, 1, 2] for _, g in records.groupby(["label", "d", "K"])["replication"])
    gse = records[records["label"] == "gse-log"]
    assert (gse["samples"] == 3 * gse["K"]).all()
    assert records["declared_id"].isin(truth["name"]).all()

    # the declared compounds table names compounds of the sample, with their measured activity
    declared = pd.read_csv(res / "report" / "declared_compounds.csv")
    assert len(declared) == 2 * 3
    measured = truth.set_index("name")["ic50_nM"].astype(float)
    np.testing.assert_allclose(declared["declared_activity_nM"], measured[declared["declared_id"]].to_numpy(), rtol=1e-6)
    assert (declared["declared_activity_rank"].between(1, declared["K"])).all()
    assert (declared["best_activity_nM"] <= declared["declared_activity_nM"]).all()

    subset = pd.read_csv(res / "subsets" / "K24.csv")
    assert len(subset) == 24 and subset["compound_id"].is_unique

    gt = pd.read_csv(res / "report" / "ground_truth.csv")
    assert list(gt["d"]) == [2, 3] and (gt["n_cured"] + gt["n_not_cured"] == 72).all()
    assert (gt["n_cured"] > 0).all() and (gt["n_not_cured"] > 0).all()

    for name in ("study_vary_d.png", "study_vary_K.png", "pulls_per_arm.png", "declared_structures.png"):
        png = res / "report" / name
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000, name
    md = (res / "report" / "summary.md").read_text()
    assert "WARNING" not in md and "| glgape | 3 | 24 |" in md


@pytest.mark.slow
def test_rerun_is_a_no_op_and_results_do_not_depend_on_cores(toy_run, tmp_path):
    res, config, _, work = toy_run
    proc = run_snakemake(work, config, "--cores", "2", "-n")
    assert proc.returncode == 0 and "Nothing to be done" in proc.stdout + proc.stderr
    # re-run the GSE-Log screens on one core with other chunks: identical records
    copy_dir = tmp_path / "copy"
    shutil.copytree(work, copy_dir, ignore=shutil.ignore_patterns("runs", "records.parquet", ".snakemake"))
    one = copy.deepcopy(config)
    one["algorithms"] = one["algorithms"][1:]
    one["screen"]["chunk_size"] = 3
    proc = run_snakemake(copy_dir, one, "--cores", "1", "results/toy/records.parquet")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "rule curate" not in proc.stdout + proc.stderr  # upstream results were reused
    cols = ["label", "d", "K", "replication", "samples", "declared_id", "correct"]
    a = pd.read_parquet(res / "records.parquet")
    a = a[a["label"] == "gse-log"][cols].reset_index(drop=True)
    b = pd.read_parquet(copy_dir / "results" / "toy" / "records.parquet")[cols].reset_index(drop=True)
    pd.testing.assert_frame_equal(a, b)


# ---------------------------------------------------------------------------------- validation
def _validate(config):
    from snakemake.utils import validate

    validate(config, str(SCHEMA))
    return config


@pytest.mark.parametrize(
    "mutate, expected",
    [
        (lambda c: c["featurize"].update(raduis=3), "raduis"),
        (lambda c: c.update(algoritms=[]), "algoritms"),
        (lambda c: c["screen"].update(replications=0), "replications"),
        (lambda c: c["curation"].update(censored="maybe"), "maybe"),
        (lambda c: c["source"].update(kind="chembl"), "target_chembl_id"),
        (lambda c: c["source"].update(target_chembl_id="CDK2"), "target_chembl_id"),
        (lambda c: c["algorithms"][0].update(parms={}), "parms"),
        (lambda c: c["ground_truth"].update(threshold_nM="1e6"), "threshold_nM"),
    ],
)
def test_schema_rejects_and_names_bad_keys_and_values(tmp_path, mutate, expected):
    import jsonschema
    from snakemake.exceptions import WorkflowError

    config = small_config(tmp_path / "x.csv")
    config["curation"] = {}
    _validate(copy.deepcopy(config))  # the unmutated config is valid
    mutate(config)
    with pytest.raises((WorkflowError, jsonschema.ValidationError)) as err:
        _validate(config)
    text = str(err.value) + str(getattr(err.value, "args", ""))
    assert expected in text


def test_shipped_configs_are_valid():
    for name in ("config.yaml", "egfr.yaml"):
        config = _validate(yaml.safe_load((REPO / "config" / name).read_text()))
        assert config["featurize"]["radius"] == 4 and config["featurize"]["n_bits"] == 1024
        assert {a["algorithm"] for a in config["algorithms"]} >= {"glgape", "gse-log", "m-lingape"}


def test_bad_config_fails_before_any_job(tmp_path):
    config = small_config(tmp_path / "library.csv")
    config["screen"]["chunk_sise"] = 3
    proc = run_snakemake(tmp_path, config, "--cores", "1")
    assert proc.returncode != 0
    assert "chunk_sise" in proc.stderr + proc.stdout
    assert not (tmp_path / "results").exists()
    # an algorithm parameter the algorithm does not have is caught at the same point
    config = small_config(tmp_path / "library.csv")
    config["algorithms"][0]["params"]["epsilonn"] = 0.1
    proc = run_snakemake(tmp_path, config, "--cores", "1")
    assert proc.returncode != 0 and "epsilonn" in proc.stderr + proc.stdout
    assert not (tmp_path / "results").exists()

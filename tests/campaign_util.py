"""Helpers shared by the campaign tests: a small synthetic library and a deterministic assay."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pandas as pd

from screenbai.campaign import Campaign, Library

#: where a campaign command run by ``KILLED_CHILD`` kills itself (SIGKILL): the Campaign method that dies
KILL_AT = {
    "after-next": "write_plate",  # the plate is committed, its file not written yet
    "before-commit": "_commit_outcomes",  # the results file is validated, nothing written yet
    "mid-record": "_save_history",  # inside the record's transaction, outcomes (and readouts) written
    "mid-add": "_restart_at",  # inside the add's transaction, the compound inserted
}

#: ``python -c KILLED_CHILD METHOD campaign ARGS...``: the screenbai command, killed when it calls
#: Campaign.METHOD (none: it runs whole)
KILLED_CHILD = """
import os, signal, sys
from screenbai.campaign import campaign as C
method, argv = sys.argv[1], sys.argv[2:]
if method:
    setattr(C.Campaign, method, lambda *args, **kwargs: os.kill(os.getpid(), signal.SIGKILL))
from screenbai.cli import main
sys.exit(main(argv))
"""

SMILES = ["CCO", "CCN", "CCC", "c1ccccc1", "CC(=O)O", "CCOC", "CNC", "CCCl", "OCCO", "C1CCCCC1"]


def synthetic_library(K: int = 30, d: int = 3, seed: int = 0) -> Library:
    rng = np.random.default_rng(seed)
    X = np.hstack([rng.normal(size=(K, d)), np.ones((K, 1))])
    compounds = pd.DataFrame(
        {
            "compound_id": [f"CPD{i:04d}" for i in range(K)],
            "smiles": [SMILES[i % len(SMILES)] for i in range(K)],
        }
    )
    compounds["input_smiles"] = compounds["smiles"]
    compounds["source_row"] = np.arange(2, K + 2)
    rejected = pd.DataFrame(columns=["source_row", "compound_id", "smiles", "reason", "detail"])
    return Library(compounds, X, rejected, {"method": "synthetic", "d": d}, {"path": "synthetic", "kind": "test"})


class Assay:
    """Outcome of the j-th test of arm a is draws[a, j]: the same whatever order or process asks."""

    def __init__(self, X: np.ndarray, seed: int = 1, n_max: int = 4000):
        theta = np.random.default_rng(seed).normal(size=X.shape[1]) * 1.5
        self.means = 1.0 / (1.0 + np.exp(-X @ theta))
        self.draws = (np.random.default_rng(seed + 1).random((X.shape[0], n_max)) < self.means[:, None]).astype(int)
        self.count = np.zeros(X.shape[0], dtype=int)

    def __call__(self, arms) -> np.ndarray:
        out = []
        for a in np.asarray(arms).reshape(-1):
            out.append(self.draws[a, self.count[a]])
            self.count[a] += 1
        return np.asarray(out)


def write_results(path: Path, plate, values, *, by_compound: bool = False) -> Path:
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["plate_id", "compound_id" if by_compound else "well", "outcome"])
        for well, cid, v in zip(plate.wells, plate.compound_ids, values):
            w.writerow([plate.plate_id, cid if by_compound else well, v])
    return path


def new_campaign(
    path: Path, algorithm: str = "glgape", params: dict | None = None, K: int = 30, d: int = 3, seed: int = 3
) -> Campaign:
    params = {"epsilon": 0.1, "delta": 0.05} if params is None and algorithm == "glgape" else (params or {})
    return Campaign.create(path, synthetic_library(K, d), algorithm, params, seed=seed)


def percent_campaign(path: Path, layout) -> Campaign:
    """A GLGapE campaign (epsilon 0.1, seed 2) of 30 synthetic compounds read in percent inhibition, a hit at 50 % or
    more, on plates of ``layout`` (a PlateLayout): the lab tests' plates with controls."""
    from screenbai.campaign.lab.assay import Readout

    readout = Readout.build("percent inhibition", unit="%", hit_above=50.0)
    return Campaign.create(
        path, synthetic_library(K=30, d=3), "glgape", {"epsilon": 0.1}, seed=2, layout=layout, readout=readout
    )

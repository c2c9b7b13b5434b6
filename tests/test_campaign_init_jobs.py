"""``init`` standardizes a library on worker processes (``--jobs``), chunk by chunk: at 1.58 M structures one
process took about 32 minutes before the fingerprints. The campaign must be the same whatever the number of
workers: the same compounds in the same order, the same features, the same rejected rows with the same reasons."""

from __future__ import annotations

import csv
import multiprocessing
import sqlite3

import pandas as pd
import pytest

from screenbai.campaign.state import store
from screenbai.chem import standardize
from screenbai.cli import main

# duplicates, tautomers, salts and bad rows spread over several chunks of 4 (the test's chunk size), so that the
# curation's "first seen" rules cross chunk boundaries
ROWS = [
    ("C00", "CCO"),
    ("C01", "c1ccccc1O"),
    ("C02", "CC(=O)Nc1ccc(O)cc1"),
    ("C03", "CCN(CC)CC"),
    ("C04", "C1CCNCC1"),
    ("C05", "Oc1ccccn1"),
    ("C06", "CC(C)Cc1ccc(cc1)C(C)C(=O)O"),
    ("C07", "c1ccc2ccccc2c1"),
    ("B01", "C1CC("),
    ("", "CCCC"),
    ("B02", ""),
    ("B03", "OCC"),
    ("B04", "[Na+].[O-]c1ccccc1"),
    ("C08", "CCOC(=O)C"),
    ("B05", "O=c1cccc[nH]1"),
    ("C02", "CC(=O)Nc1ccc(O)cc1"),
    ("C01", "c1ccccc1"),
    ("C09", "NC(=O)c1ccccc1"),
    ("B06", "CC O"),
    ("C10", "Clc1ccccc1"),
    ("B07", "[Pt](Cl)(Cl)(N)N"),
    ("C11", "CC(C)O"),
    ("C12", "OC(=O)c1ccccc1O"),
    ("B08", "CCO.c1ccccc1"),
    ("C13", "c1ccncc1"),
    ("C14", "C[C@H](N)C(=O)O"),
    ("C15", "C[C@@H](N)C(=O)O"),
    ("C16", "CCCCCCN"),
    ("C17", "OCCCCO"),
]


class _PoolSpy:
    """Stands for the ``multiprocessing`` module in :mod:`screenbai.chem.standardize`: real pools, sizes noted."""

    def __init__(self):
        self.pools: list[int] = []

    def get_context(self, method):
        ctx, spy = multiprocessing.get_context(method), self

        class _Context:
            def Pool(self, n):  # noqa: N802 (multiprocessing's name)
                spy.pools.append(n)
                return ctx.Pool(n)

        return _Context()


@pytest.fixture()
def small_chunks(monkeypatch):
    monkeypatch.setattr(standardize, "CHUNK_SIZE", 4)
    spy = _PoolSpy()
    monkeypatch.setattr(standardize, "multiprocessing", spy)
    return spy


def _library(tmp_path):
    p = tmp_path / "lib.csv"
    with open(p, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["id", "smiles"])
        w.writerows(ROWS)
    return p


def _stored(path):
    con = sqlite3.connect(path)
    try:
        compounds = con.execute("SELECT * FROM compounds ORDER BY arm").fetchall()
        rejected = con.execute("SELECT * FROM rejected ORDER BY source_row").fetchall()
        features = store.get_array(con, "features")
    finally:
        con.close()
    return compounds, rejected, features


def test_init_on_one_or_two_workers_stores_the_same_library(tmp_path, small_chunks, capsys):
    lib = _library(tmp_path)
    stored = {}
    for jobs in ("1", "2"):
        camp = tmp_path / f"j{jobs}.campaign"
        args = ["campaign", "init", str(camp), "--library", str(lib), "--id-column", "id", "--smiles-column", "smiles"]
        assert main([*args, "--d", "3", "--jobs", jobs, "--rejected-out", str(tmp_path / f"rej{jobs}.csv")]) == 0
        err = capsys.readouterr().err
        assert "standardizing" in err and f"{len(ROWS)}/{len(ROWS)}" in err  # the progress bar, on stderr
        stored[jobs] = _stored(camp)
    assert small_chunks.pools == [2]  # one process for --jobs 1, a pool of two for --jobs 2
    (c1, r1, f1), (c2, r2, f2) = stored["1"], stored["2"]
    assert c1 == c2 and r1 == r2 and f1.tobytes() == f2.tobytes()
    assert (tmp_path / "rej1.csv").read_bytes() == (tmp_path / "rej2.csv").read_bytes()
    # the curation worked across chunks: a structure seen in an earlier chunk is a duplicate in a later one
    reasons = {row[1]: row[3] for row in r1 if row[1]}
    assert reasons["B03"] == "duplicate structure" and reasons["B05"] == "duplicate structure"
    assert reasons["B01"] == "unparseable SMILES" and reasons["B07"] == "metal-containing structure"
    assert len(c1) + len(r1) == len(ROWS)


def test_standardize_smiles_gives_the_same_frame_on_any_number_of_workers(small_chunks):
    smiles = [s or None for _, s in ROWS] + ["  ", "C" * 1100]
    one = standardize.standardize_smiles(smiles, n_jobs=1)
    assert small_chunks.pools == []
    for n_jobs, chunk_size in [(2, 4), (2, 1), (3, 5), (-1, 7)]:
        pd.testing.assert_frame_equal(standardize.standardize_smiles(smiles, n_jobs=n_jobs, chunk_size=chunk_size), one)
    assert len(small_chunks.pools) == 4
    assert one["error"].iloc[-1] == "structure too large" and one["error"].iloc[-2] == "missing SMILES"


@pytest.mark.parametrize("jobs", ["0", "-2"])
def test_a_bad_jobs_value_is_refused_before_reading_the_library(tmp_path, jobs, capsys):
    lib = _library(tmp_path)
    args = ["campaign", "init", str(tmp_path / "x.campaign"), "--library", str(lib), "--id-column", "id"]
    assert main([*args, "--smiles-column", "smiles", "--jobs", jobs]) == 2
    err = capsys.readouterr().err
    assert "--jobs (worker processes; -1" in err and f"got {jobs}" in err and "reading" not in err
    assert not (tmp_path / "x.campaign").exists()

"""A campaign's compound ids and SMILES are read from the file when used: at 1.58 M compounds every command read
both columns into Python lists on opening (3-5 s), where next, record and status need a plate's or a
recommendation's few. Counted SQL statements on a small campaign, not timings (docs/scale.md)."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest
from campaign_util import Assay, new_campaign, write_results

from screenbai.campaign import Campaign
from screenbai.campaign.state import store

WHOLE_COLUMN = "FROM compounds ORDER BY arm"  # what reading a whole column (or both) asks SQLite


@pytest.fixture
def traced(monkeypatch):
    """Every SQL statement of the campaign files opened from now on."""
    statements: list[str] = []
    connect = store.connect

    def traced_connect(*args, **kwargs):
        con = connect(*args, **kwargs)
        con.set_trace_callback(statements.append)
        return con

    monkeypatch.setattr(store, "connect", traced_connect)
    return statements


def _columns(path):
    con = sqlite3.connect(path)
    try:
        return [list(col) for col in zip(*con.execute("SELECT compound_id, smiles FROM compounds ORDER BY arm"))]
    finally:
        con.close()


@pytest.mark.parametrize("algorithm", ["log-tas", "glgape"])
def test_next_record_and_status_read_no_whole_column_of_compounds(tmp_path, traced, algorithm):
    path = tmp_path / "c.campaign"
    params = None if algorithm == "log-tas" else {"epsilon": 0.1, "delta": 0.05}
    new_campaign(path, algorithm, params, K=60, d=3).close()
    assay = Assay(Campaign.open(path).features, seed=4)
    for k, by_compound in enumerate([False, True]):
        with Campaign.open(path) as c:
            plate = c.next_plate(12)
        with Campaign.open(path) as c:
            c.record(write_results(tmp_path / f"p{k}.csv", plate, assay(plate.arms), by_compound=by_compound))
    with Campaign.open(path) as c:
        st = c.status()
        text, data = st.text(), st.to_dict()
    assert traced and not [s for s in traced if WHOLE_COLUMN in s], [s for s in traced if WHOLE_COLUMN in s]
    ids, smiles = _columns(path)
    rec = data["recommendation"][0]
    assert rec["smiles"] == smiles[ids.index(rec["compound_id"])] and rec["compound_id"] in text
    assert list(plate.compound_ids) == [ids[a] for a in plate.arms]
    assert list(plate.smiles) == [smiles[a] for a in plate.arms]


def test_the_columns_read_as_the_lists_they_replace(tmp_path, monkeypatch):
    monkeypatch.setattr(store.CompoundColumn, "FEW_ARMS", 3)
    path = tmp_path / "c.campaign"
    new_campaign(path, K=12).close()
    ids, smiles = _columns(path)
    c = Campaign.open(path)
    assert c.K == 12 and len(c.compound_ids) == 12 and len(c.smiles) == 12
    assert c.compound_ids[np.int64(5)] == ids[5] and c.smiles[-1] == smiles[-1] and c.compound_ids[-12] == ids[0]
    with pytest.raises(IndexError, match="arm 12 out of range: the campaign has 12 compounds"):
        c.compound_ids[12]
    assert c._arm_of[ids[7]] == 7 and ids[7] in c._arm_of and "nope" not in c._arm_of
    with pytest.raises(KeyError):
        c._arm_of["nope"]
    assert c.compound_ids.of(np.array([4, 2]))[1] == ids[2] and c.compound_ids.of([4, 2, 9])[1:] == [ids[2], ids[9]]
    assert [c.compound_ids[a] for a in range(12)] == ids  # past FEW_ARMS single arms: the whole column, once
    assert c.compound_ids == ids and list(c.compound_ids) == ids and c.compound_ids[2:5] == ids[2:5]
    assert c.compound_ids.index(ids[3]) == 3 and ids[4] in c.compound_ids
    c.close()
    assert c.smiles[3] == smiles[3] and list(c.smiles) == smiles  # after close: read once, read-only

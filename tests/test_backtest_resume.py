"""A backtest killed part way continues when the same command runs again (``--campaign-out``), and ends exactly as
a run never interrupted: the same plates, outcomes, stop and answer (campaign/backtest_file.py). A file begun
with other settings, or not made by a backtest, is refused rather than continued into a mix."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from campaign_util import synthetic_library

from screenbai.campaign import Campaign
from screenbai.campaign.backtest import KnownOutcomes, run_backtest
from screenbai.campaign.state.store import CampaignError

REPO = Path(__file__).resolve().parents[1]


def known() -> KnownOutcomes:
    lib = synthetic_library(K=20, d=2, seed=5)
    rate = np.full(20, 0.05)
    rate[7] = 0.95
    rate[[2, 11]] = 0.4
    return KnownOutcomes(lib, rate, None, "planted")


def backtest(path, algorithm="lucb", plate_size=10, **params):
    return run_backtest(
        known(),
        algorithm,
        params or {"delta": 0.05},
        seed=2,
        plate_size=plate_size,
        max_tests=20000,
        top_k=3,
        campaign_path=path,
    )


def contents(path) -> dict:
    """Every table's rows, the clock's columns (at, *_at, meta created_at) left out."""
    con = sqlite3.connect(path)
    try:
        out = {}
        for (table,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"):
            cols = [
                c[1] for c in con.execute(f"PRAGMA table_info({table})") if c[1] != "at" and not c[1].endswith("_at")
            ]
            rows = con.execute(f"SELECT {', '.join(cols)} FROM {table} ORDER BY 1, 2").fetchall()
            out[table] = [r for r in rows if not (table == "meta" and r[0] == "created_at")]
        return out
    finally:
        con.close()


def summary(res) -> tuple:
    return res.tests, res.plates, res.stopped, res.finished, res.recommendation, res.curve, res.correct


class Killed(BaseException):
    """What a kill looks like to the test: nothing after it runs in the backtest."""


LUCB = ("lucb", {"delta": 0.05})
CASES = [
    pytest.param(LUCB, 1, True, id="lucb-plate1-not-recorded"),
    pytest.param(LUCB, 1, False, id="lucb-plate1-recorded"),
    pytest.param(LUCB, 4, True, id="lucb-plate4-not-recorded"),
    pytest.param(LUCB, 4, False, id="lucb-plate4-recorded"),
    pytest.param(("glgape", {"epsilon": 0.2}), 5, True, id="glgape-plate5-not-recorded"),
    # the default algorithm (its policy rebuilt from the file's snapshot): 14 plates, killed halfway
    pytest.param(("log-tas", {"epsilon": 0.2}), 7, False, id="log-tas-plate7-recorded", marks=pytest.mark.slow),
]


@pytest.mark.parametrize(("setting", "at", "before_commit"), CASES)
def test_a_killed_backtest_continues_to_the_same_end(tmp_path, monkeypatch, setting, at, before_commit):
    """Killed at results file ``at`` (before or after its commit), the same call again ends with the plates,
    outcomes, stop and answer of a run never interrupted; before this, it refused ('already exists')."""
    algorithm, params = setting

    def backtest(path):
        return globals()["backtest"](path, algorithm, **params)

    whole = backtest(tmp_path / "whole.campaign")
    assert whole.plates > at + 1  # the kill falls inside the run
    record, calls = Campaign.record, []

    def killed(self, path, **kw):
        calls.append(path)
        if len(calls) == at and before_commit:
            raise Killed
        done = record(self, path, **kw)
        if len(calls) == at:
            raise Killed
        return done

    monkeypatch.setattr(Campaign, "record", killed)
    with pytest.raises(Killed):
        backtest(tmp_path / "cut.campaign")
    monkeypatch.undo()
    with Campaign.open(tmp_path / "cut.campaign") as camp:
        assert len(camp.history()) == at - before_commit  # the kill left a part of the run
    again = backtest(tmp_path / "cut.campaign")
    assert summary(again) == summary(whole)
    assert contents(tmp_path / "cut.campaign") == contents(tmp_path / "whole.campaign")
    # a finished backtest run again changes nothing and says the same
    assert summary(backtest(tmp_path / "cut.campaign")) == summary(whole)
    assert contents(tmp_path / "cut.campaign") == contents(tmp_path / "whole.campaign")


def test_a_backtest_killed_outright_continues_to_the_same_end(tmp_path):
    """SIGKILL in a child process at its third results file (inside the record's transaction: the outcomes
    written, not committed), then the same backtest again: as a run never interrupted."""
    child = (
        "import os, signal, sys\n"
        "sys.path.insert(0, sys.argv[2])\n"
        "from screenbai.campaign import campaign as C\n"
        "import test_backtest_resume as t\n"
        "save, calls = C.Campaign._save_history, []\n"
        "def die(self, *a):\n"
        "    calls.append(1)\n"
        "    if len(calls) == 3:\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
        "    return save(self, *a)\n"
        "C.Campaign._save_history = die\n"
        "t.backtest(sys.argv[1])\n"
    )
    cut = tmp_path / "cut.campaign"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [sys.executable, "-c", child, str(cut), str(REPO / "tests")],
        env=env,
        timeout=300,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == -9, proc.stderr
    with Campaign.open(cut) as camp:
        assert len(camp.history()) == 2 and len(camp.open_wells()) == 1  # the third plate not recorded
    whole = backtest(tmp_path / "whole.campaign")
    assert summary(backtest(cut)) == summary(whole)
    assert contents(cut) == contents(tmp_path / "whole.campaign")


def test_a_campaign_file_of_other_settings_is_refused_not_mixed(tmp_path):
    """Another plate size (or algorithm, seed, truth) would mix two backtests in one file: refused, naming the
    file and the setting; the file is left as it was."""
    path = tmp_path / "bt.campaign"
    backtest(path, plate_size=10)
    before = contents(path)
    with pytest.raises(
        CampaignError,
        match=r"bt\.campaign holds a backtest begun with other settings "
        r"\(--plate-size: 10 there, 12 now\).*delete",
    ):
        backtest(path, plate_size=12)
    with pytest.raises(CampaignError, match=r"--param: \{'delta': 0.05\} there, \{'delta': 0.1\} now"):
        backtest(path, delta=0.1)
    other = KnownOutcomes(known().library, np.roll(known().rate, 1), None, "planted")
    with pytest.raises(CampaignError, match="the known outcomes' hit rates"):
        run_backtest(
            other, "lucb", {"delta": 0.05}, seed=2, plate_size=10, max_tests=20000, top_k=3, campaign_path=path
        )
    assert contents(path) == before


def test_a_campaign_not_made_by_a_backtest_is_refused(tmp_path):
    path = tmp_path / "lab.campaign"
    Campaign.create(path, known().library, "lucb", {"delta": 0.05}, seed=2).close()
    with pytest.raises(CampaignError, match=r"lab\.campaign exists and is not a backtest's campaign file.*delete"):
        backtest(path)
    with pytest.raises(ValueError, match="is a folder; give the campaign file's name"):
        backtest(tmp_path)


def test_recorded_outcomes_not_drawn_by_the_backtest_are_refused(tmp_path):
    """A results file recorded by hand into a backtest's file: the outcomes are not the assay's, refused."""
    path = tmp_path / "bt.campaign"
    record, calls = Campaign.record, []

    def stop(self, p, **kw):
        calls.append(p)
        if len(calls) == 2:
            raise Killed
        return record(self, p, **kw)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Campaign, "record", stop)
        with pytest.raises(Killed):
            backtest(path)
    with Campaign.open(path) as camp:  # plate P002 is open: recorded by hand, all misses
        plate = camp.plate("P002")
        hand = tmp_path / "P002_results.csv"
        hand.write_text("plate_id,well,outcome\n" + "".join(f"P002,{w},0\n" for w in plate.wells))
        camp.record(hand)
    with pytest.raises(CampaignError, match=r"plate P002's recorded outcomes are not the ones this backtest draws"):
        backtest(path)


def test_the_command_refuses_another_backtest_s_file_before_reading_the_truth(tmp_path, capsys, monkeypatch):
    """`campaign backtest --campaign-out F` with F of another plate size: refused before the truth is read and
    featurized (minutes for a large library), naming the file and the setting (exit 2, no traceback)."""
    import screenbai.campaign.backtest as bt
    from screenbai.cli import main

    path = tmp_path / "bt.campaign"
    backtest(path, plate_size=10)

    def never(*args, **kwargs):
        raise AssertionError("the truth was read before the campaign file was checked")

    monkeypatch.setattr(bt, "outcomes_from_activities", never)
    lib = tmp_path / "lib.csv"
    lib.write_text("id,smiles,ic50_nM\nM1,CCO,10\nM2,CCN,1000\n")
    argv = ["campaign", "backtest", "--library", str(lib), "--id-column", "id", "--smiles-column", "smiles"]
    argv += ["--activity-column", "ic50_nM", "--algorithm", "lucb", "--param", "delta=0.05", "--seed", "2"]
    argv += ["--plate-size", "12", "--max-tests", "20000", "--campaign-out", str(path), "--out", str(tmp_path / "o")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"--campaign-out {path} holds a backtest begun with other settings (--plate-size: 10 there, 12 now)" in err

"""benchmarks/lower_bound.py in chunks: the row made by --combine from two chunks (--start, --save-runs) is the row
of one run of all the replications, and overlapping chunks are refused."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = [sys.executable, str(REPO / "benchmarks" / "lower_bound.py")]
CELL = ["--instances", "soare", "--algorithms", "lin-tas", "--deltas", "0.05", "--jobs", "1"]


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*SCRIPT, *args], cwd=cwd, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_chunks_combine_to_the_row_of_one_run(tmp_path):
    for start, name in (("0", "a"), ("3", "b")):
        done = _run(*CELL, "--reps", "3", "--start", start, "--save-runs", f"{name}.pkl", "--out", f"{name}.csv",
                    cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    assert _run(*CELL, "--reps", "6", "--out", "whole.csv", cwd=tmp_path).returncode == 0
    assert _run("--combine", "a.pkl", "b.pkl", "--out", "joined.csv", cwd=tmp_path).returncode == 0
    joined, whole = (pd.read_csv(tmp_path / f).drop(columns="seconds") for f in ("joined.csv", "whole.csv"))
    assert joined["runs"].item() == 6
    pd.testing.assert_frame_equal(joined, whole)
    # a chunk alone is not the whole: the test above can tell them apart
    assert pd.read_csv(tmp_path / "a.csv")["runs"].item() == 3

    overlap = _run("--combine", "a.pkl", "a.pkl", "--out", "bad.csv", cwd=tmp_path)
    assert overlap.returncode != 0
    assert "overlap" in overlap.stderr and "--start" in overlap.stderr
    assert not (tmp_path / "bad.csv").exists()


@pytest.mark.slow
def test_chunks_that_join_to_no_single_run_are_refused(tmp_path):
    """A gap between chunks, or chunks of other seeds or caps, joined would give a row that no single run gives:
    --combine refuses them, naming the runs or the option, and writes nothing."""
    # name: (--start, --seed, --max-samples)
    chunks = {"a": ("0", "0", "9000"), "gap": ("4", "0", "9000"), "seed": ("2", "7", "9000"), "cap": ("2", "0", "300")}
    for name, (start, seed, cap) in chunks.items():
        options = ["--reps", "2", "--start", start, "--seed", seed, "--max-samples", cap]
        done = _run(*CELL, *options, "--save-runs", f"{name}.pkl", "--out", f"{name}.csv", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    said = {"gap": "runs [2, 3] are in no chunk", "seed": "different seed (0 and 7)", "cap": "the same --max-samples"}
    for other, message in said.items():
        joined = _run("--combine", "a.pkl", f"{other}.pkl", "--out", "bad.csv", cwd=tmp_path)
        assert joined.returncode != 0 and message in joined.stderr, joined.stderr
        assert not (tmp_path / "bad.csv").exists()

#: the script, killed (SIGKILL) once pandas has written half of its --save-runs pickle
KILLED_WHILE_SAVING = """
import os, runpy, signal, sys
import pandas as pd
real = pd.to_pickle
def half_then_killed(obj, path, *args, **kwargs):
    real(obj, path, *args, **kwargs)
    data = open(path, "rb").read()
    open(path, "wb").write(data[: len(data) // 2])
    os.kill(os.getpid(), signal.SIGKILL)
pd.to_pickle = half_then_killed
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


@pytest.mark.slow
def test_a_chunk_killed_while_saving_keeps_the_runs_saved_before(tmp_path):
    """--save-runs rewrites its file for every cell: killed midway, the file keeps the cells saved before (written
    beside it and renamed), where it was cut and lost them all."""
    assert _run(*CELL, "--reps", "2", "--save-runs", "a.pkl", "--out", "a.csv", cwd=tmp_path).returncode == 0
    saved = pd.read_pickle(tmp_path / "a.pkl")
    another_cell = [*CELL, "--reps", "2", "--deltas", "0.1", "--save-runs", "a.pkl", "--out", "a.csv"]
    command = [sys.executable, "-c", KILLED_WHILE_SAVING, *SCRIPT[1:], *another_cell]
    killed = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert killed.returncode == -9, killed.stderr
    kept = pd.read_pickle(tmp_path / "a.pkl")
    assert [key for key, _ in kept] == [key for key, _ in saved]


def test_the_benchmarks_give_the_norm_bound_settings_s_on_request():
    """The linear GapE rows on Soare's instance ran with the default S = 1 while ||theta*|| = 2, outside their
    assumption. ``--S oracle`` runs the settings that assume ||theta*|| <= S with each instance's ||theta*|| (the
    others as they are) and the records name it beside the setting."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    import error_rates

    from screenbai.bandits.sim.generators import soare
    from screenbai.guarantees import assumptions_failing

    inst = soare(d=2, omega=0.1)
    bound = error_rates.norm_bound
    assert bound("lingape", {"delta": 0.05}, inst, "oracle") == pytest.approx(2.0)
    assert bound("lingifa", {"threshold": "theoretical"}, inst, "oracle") == pytest.approx(2.0)
    assert bound("m-lingape", {"threshold": "heuristic"}, inst, "oracle") is None  # assumes no S
    assert bound("xy-static", {}, inst, "oracle") is None and bound("lingape", {}, inst, None) is None
    assert bound("lingape", {}, inst, "3") == 3.0
    assert assumptions_failing("lingape", {"S": bound("lingape", {}, inst, "oracle")}, inst) == []
    assert any("S = 1 is below ||theta*|| = 2" in s for s in assumptions_failing("lingape", {}, inst))
    row = {"instance": "soare", "algorithm": "lingape", "setting": "Abbasi-Yadkori", "delta": 0.05, "guarantee": True,
           "runs": 10, "not_stopped": 0, "errors": 0, "error_rate": 0.0, "upper95": 0.26, "median_samples": 5000.0}
    text = error_rates.table(pd.DataFrame([{**row, "S": 2.0}, {**row, "S": float("nan")}]))
    assert "| lingape | Abbasi-Yadkori, S = 2 | 0.05 |" in text and "| lingape | Abbasi-Yadkori | 0.05 |" in text

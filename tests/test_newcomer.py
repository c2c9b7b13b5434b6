"""What a newcomer trips on (issue 17, section 3): help texts, names, tables, messages, comments."""

from __future__ import annotations

import csv
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from screenbai.bandits import replicate, summarize
from screenbai.bandits.core import registry
from screenbai.bandits.sim.generators import kw_synthetic
from screenbai.cli import main

REPO = Path(__file__).resolve().parents[1]


def _help(capsys, *argv: str) -> str:
    with pytest.raises(SystemExit):
        main([*argv, "--help"])
    return capsys.readouterr().out


def _entries(text: str) -> list[str]:
    """The help of each option, on one line."""
    options = text.split("options:", 1)[1]
    parts = re.split(r"\n  (?=-)", options)
    return [" ".join(p.split()) for p in parts if p.strip()]


@pytest.mark.parametrize("command", [[], ["simulate"], ["campaign"], ["campaign", "init"], ["campaign", "backtest"],
                                     ["campaign", "status"]])
def test_help_says_each_default_once_in_plain_text(command, capsys):
    text = _help(capsys, *command)
    assert "``" not in text and ":class:" not in text  # no raw reStructuredText
    assert "(default: None)" not in text and "(default: [])" not in text and "(default: False)" not in text
    for entry in _entries(text):
        assert entry.count("default") <= 1, entry


def test_simulate_help_states_the_defaults_it_has(capsys):
    entries = {e.split()[0]: e for e in _entries(_help(capsys, "simulate"))}
    assert "(default: 20)" in entries["--reps"] and "(default: 0)" in entries["--seed"]
    assert "(default: mean)" in entries["--means-column"]


def test_every_description_is_whole_sentences():
    """`screenbai algorithms` showed the first docstring line, cut mid-sentence (xy-adaptive: "... on the")."""
    for name, entry in registry.available().items():
        text = entry.description
        assert text.rstrip(")").endswith(".") or text.endswith(")"), (name, text)
        words = text.split()
        assert words[-1].rstrip(".)").lower() not in {"the", "a", "of", "on", "and", "with", "to", "from"}, name


def test_gse_aliases_are_described_by_their_own_allocation_and_all_run():
    entries = registry.available()
    aliases = {n: e for n, e in entries.items() if n.startswith("gse-") and n not in ("gse-lin", "gse-log")}
    assert {f"gse-{m}-{a}" for m in ("lin", "log") for a in ("uniform", "fwg", "wynn", "greedy")} <= set(aliases)
    descriptions = [e.description for e in aliases.values()]
    assert len(set(descriptions)) == len(descriptions)
    for name, entry in aliases.items():
        allocation = entry.defaults["allocation"]
        assert ("Frank-Wolfe" in entry.description) == (allocation == "fw"), name
    inst = kw_synthetic(K=10, d=2, seed=0)
    for name in ("gse-log-wynn", "gse-log-greedy"):  # listed by `screenbai algorithms`, refused by simulate before
        rec = replicate(inst, name, {"budget": 200}, n_reps=1, seed=0)
        assert int(rec["samples"].iat[0]) == 200


def test_an_unknown_algorithm_gets_close_matches(capsys, tmp_path):
    assert main(["simulate", "glgapee", "--instance", "soare:d=2", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: unknown algorithm 'glgapee'; did you mean glgape")  # not a quoted KeyError
    assert main(["campaign", "init", str(tmp_path / "c.campaign"), "--library", "x.csv", "--algorithm",
                 "m-lingap"]) == 2
    assert "did you mean m-lingape" in capsys.readouterr().err


def test_summarize_prints_the_whole_table():
    records = replicate(kw_synthetic(K=10, d=2, seed=0), "gse-log", {"budget": 60}, n_reps=2, seed=0)
    records = records.assign(params=records["params"].str.replace("}", ', "note": "' + "x" * 150 + '"}'))
    text = str(summarize(records))
    assert "..." not in text
    for column in summarize(records).columns:
        assert column in text


def test_simulate_names_the_features_file_it_cannot_read(tmp_path, capsys):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    assert main(["simulate", "gse-lin", "--features", str(empty), "--param", "budget=10", "--no-progress"]) == 2
    assert f"error: features file {empty} could not be read" in capsys.readouterr().err
    header = tmp_path / "header.csv"
    header.write_text("x0,mean\n")
    assert main(["simulate", "gse-lin", "--features", str(header), "--param", "budget=10", "--no-progress"]) == 2
    assert f"error: features file {header} has no rows" in capsys.readouterr().err


def test_config_comments_name_glgapes_default_calibration():
    from screenbai.bandits.core.params import declared
    from screenbai.bandits.logistic.glgape import GLGapE

    default = declared(GLGapE)["calibration"].default
    for path in [REPO / ".test" / "config" / "config.yaml", *sorted((REPO / "config").glob("*.yaml"))]:
        for said in re.findall(r"the default,\s*#?\s*calibration:\s*([\w-]+)", path.read_text()):
            assert said == default, f"{path}: says the default calibration is {said}, it is {default}"


def test_backtests_default_cap_is_in_the_readme(capsys):
    readme = " ".join(REPO.joinpath("README.md").read_text().split())
    entries = {e.split()[0]: e for e in _entries(_help(capsys, "campaign", "backtest"))}
    assert "(default: 20000)" in entries["--max-tests"]
    assert "`--max-tests` (default 20 000)" in readme


def test_the_main_jobs_run_time_is_stated_once():
    """One figure, made by benchmarks/bench_workflow.py with the machine and the load; the rest point to it."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import bench_workflow
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    run = {"wall": 1234.4, "loads": [3.0, 5.0, 7.0], "data": "the ChEMBL export shipped in data/ (offline fallback)",
           "commit": "abc1234", "cores": 2, "jobs": 131}
    section = "\n".join(bench_workflow.study_section(run))
    assert "**20 min 34 s** wall for the main job" in section and "131 jobs" in section and "--offline" in section
    assert "Machine:" in section and "load average was 3.0 at the start and 5.0 on average" in section
    page = (REPO / "docs" / "reproduction" / "bench_workflow.md").read_text()
    if bench_workflow.STUDY_START in page:  # the figure, once measured, is in that form
        assert re.search(r"\*\*\d+ min \d\d s\*\* wall for the main job .* Machine: .* load average", page, re.S)
    readme = REPO.joinpath("README.md").read_text()
    two_commands = readme[readme.index("## Two commands"):readme.index("## What the report shows")]
    assert "docs/reproduction/bench_workflow.md" in two_commands
    assert not re.search(r"\d+ min \d+ s|\d+ min\b", two_commands)
    for config in ("config.yaml", "cdk2_potency.yaml"):
        text = (REPO / "config" / config).read_text()
        assert not re.search(r"\d+ min\b", text) and "bench_workflow.md" in text
    study = (REPO / "docs" / "cdk2_study.md").read_text()
    assert "5 min 34 s" not in study and "bench_workflow.md" in study


# ------------------------------------------------------------------ a killed backtest
SMILES = ["CCO", "CCN", "CCC", "c1ccccc1", "CC(=O)O", "CCOC", "CNC", "CCCl", "OCCO", "C1CCCCC1"]


def _library(path: Path) -> Path:
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["id", "smiles", "ic50_nM"])
        for i, s in enumerate(SMILES):
            w.writerow([f"M{i}", s, 10.0 ** (1 + i % 4)])
    return path


def _folders(tmp: Path) -> list[Path]:
    return sorted(tmp.glob("screenbai-backtest-*"))


@pytest.mark.slow
def test_a_killed_backtest_leaves_no_temporary_folder(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    orphan = tmp / "screenbai-backtest-999999999-x"  # of a backtest killed with -9 (no such process)
    (orphan / "sub").mkdir(parents=True)
    library = _library(tmp_path / "l.csv")
    cmd = [sys.executable, "-m", "screenbai.cli", "campaign", "backtest", "--library", str(library),
           "--id-column", "id", "--smiles-column", "smiles", "--activity-column", "ic50_nM", "--d", "3",
           "--algorithm", "uniform", "--param", "budget=1000000", "--plate-size", "1", "--max-tests", "1000000",
           "--out", str(tmp_path / "out")]
    env = {**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not [f for f in _folders(tmp) if f != orphan] and time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()[1]
            time.sleep(0.2)
        assert orphan not in _folders(tmp)  # removed when the next backtest started
        assert _folders(tmp), "the backtest never made its folder"
        time.sleep(1.0)  # plates under way
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM
    assert _folders(tmp) == []
    assert tempfile.gettempdir() != str(tmp)  # the test's TMPDIR stayed the child's


def test_ci_run_removes_its_temporary_folder_whatever_happens(tmp_path):
    """Issue 17 section 1: `.ci/run` makes its venvs in a temporary folder and removes it, here after a failure."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp), "PYTHON": "false"}  # `false -m venv` fails at once
    done = subprocess.run(["bash", str(REPO / ".ci" / "run")], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert list(tmp.iterdir()) == []


# ---------------------------------------------------------------- a chemist's trial of the README recipe (session 6)


def test_the_backtest_figure_keeps_its_title_inside(tmp_path):
    """hit_recovery.png cut its one-line title (the backtest's description, 170 characters) at both sides."""
    from screenbai.campaign.backtest import BacktestResult, hit_figure

    description = ("measured.csv: hit = ic50_nM < 1000 (1021 of 2203 compounds), each test drawn with noise "
                   "(sd 0.3 in log10 units, a factor 2); "
                   "2663 library compounds without a value left out; 8 values of compounds not in the library ignored")
    curve = {"tests": [1, 2, 3], "campaign": [0.0, 0.1, 0.1], "random": [0.0, 0.0, 0.1], "one_shot": [0.0, 0.1, 0.2]}
    fig = hit_figure(BacktestResult(3, 1, False, False, [], curve, 10, description))
    renderer = fig.canvas.get_renderer()
    fig.draw(renderer)
    box, page = fig.axes[0].title.get_window_extent(renderer), fig.bbox
    assert page.x0 <= box.x0 and box.x1 <= page.x1 and box.y1 <= page.y1, (box, page)
    assert "ignored" in fig.axes[0].get_title()  # wrapped, not shortened


def test_init_help_has_no_empty_default_and_names_where_the_plate_size_is(capsys):
    text = _help(capsys, "campaign", "init")
    assert "(default: )" not in text and "delta-correct" not in text
    entry = next(e for e in _entries(text) if e.startswith("--plate-format"))
    assert "`next`" in entry and "96" in entry  # --plate-size is next's option, not init's
    withdraw = _help(capsys, "campaign", "withdraw")
    assert "(default: )" not in withdraw and "the compounds to withdraw" in withdraw


def test_status_of_a_hit_screen_reads_plainly(tmp_path):
    """A binary campaign speaks of hit rates (not cure rates), names the model the certificate holds under
    next to it, and the plate file's 'why' says a compound's hits, not its 'mean outcome'."""
    import numpy as np
    from campaign_util import Assay, new_campaign, write_results

    from screenbai.campaign.views.explain import why_chosen

    camp = new_campaign(tmp_path / "s.campaign", "log-tas", {"epsilon": 0.1, "delta": 0.05})
    assert "forecast of plates left: once the first outcomes are recorded" in camp.status().text()
    assay = Assay(camp.features)
    for k in range(3):
        plate = camp.next_plate(12)
        camp.record(write_results(tmp_path / f"s{k}.csv", plate, assay(plate.arms)))
    lines = camp.status().text().splitlines()
    assert not any("cure" in line for line in lines)
    assert any(line.startswith("certificate") and "a gap in hit rate" in line for line in lines)
    k = next(i for i, line in enumerate(lines) if line.startswith("certificate"))
    assert lines[k + 1].startswith("  ")  # the certificate's sentence, then the model it holds under
    assert lines[k + 2].startswith("model (the certificate and the stopping rule's guarantee hold under it): ")
    n, s, _, _ = camp.observations()
    tested = int(np.flatnonzero(n)[0])
    why = why_chosen(camp, camp.policy)(tested, 0, 1)
    assert f"tested {int(n[tested])} times, {int(s[tested])} hit(s)" in why and "mean outcome" not in why
    # a snapshot saved before log-tas named its count: still a count, not "a rival may still beat ... by up to 29"
    getattr(camp.policy, "inner", camp.policy).diagnostics.pop("stat_name")
    assert "not fired; rivals not yet ruled out by the stopping test:" in camp.status().text()
    camp.close()


def test_init_says_what_its_features_are():
    from screenbai.campaign.library import features_meaning

    assert features_meaning({"method": "morgan+pca", "d": 20, "intercept": True}) == (
        "morgan+pca: 20 principal components of the Morgan fingerprints and a constant")
    assert features_meaning({"method": "synthetic", "d": 3}) == "synthetic: 3 columns"

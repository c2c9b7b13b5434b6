"""What a dependency prints never reaches screenbai's output (issue 17, section 1).

highspy 1.16 prints a banner on the C-level stdout (file descriptor 1) when ``Highs()`` is built;
``redirect_stdout`` does not catch it, and it broke ``--json`` and the subprocess protocols.  The
doubles below print both ways, ``print`` and ``os.write(1, ...)``; everything runs in a fresh
process, where stdout is a real pipe as it is for a user.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from campaign_util import new_campaign

REPO = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent

# a dependency that talks: Python print and a write to file descriptor 1
NOISY = """
import os, sys
sys.path[:0] = [{repo!r}, {tests!r}]
def noise(what):
    print("NOISE from print in " + what)
    sys.stdout.flush()
    os.write(1, ("NOISE from fd 1 in " + what + "\\n").encode())
"""


def _python(code: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    script = NOISY.format(repo=str(REPO), tests=str(TESTS)) + code
    return subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, env=env, timeout=120)


def test_the_ratio_rules_solver_is_built_without_a_word():
    """The real highspy (1.16 prints its banner) and a double of it that prints both ways: stdout stays empty."""
    code = """
import numpy as np
import highspy
from screenbai.bandits.numerics.rules import L1Design
X = np.random.default_rng(0).normal(size=(12, 3))
L1Design(X).solve(np.ones(3))            # the installed highspy
class Talking(highspy.Highs):
    def __init__(self):
        noise("Highs()")
        super().__init__()
highspy.Highs = Talking
L1Design(X).solve(np.ones(3))            # a release that prints at construction
"""
    out = _python(code)
    assert out.returncode == 0, out.stderr
    assert out.stdout == ""


def test_campaign_status_json_is_valid_whatever_a_dependency_prints(tmp_path):
    path = tmp_path / "screen.campaign"
    new_campaign(path).close()
    code = """
import json
from screenbai.campaign.campaign import Campaign
status = Campaign.status
def talking_status(self):
    noise("status")
    return status(self)
Campaign.status = talking_status
from screenbai.cli import main
raise SystemExit(main(sys.argv[1:]))
"""
    out = _python(code, "campaign", "status", str(path), "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["tests"] == 0  # the whole of stdout is the JSON document
    assert "NOISE from print in status" in out.stderr and "NOISE from fd 1 in status" in out.stderr
    out = _python(code, "campaign", "next", str(path), "--plate-size", "4", "--out", str(tmp_path / "P001.csv"))
    assert out.returncode == 0, out.stderr
    assert "NOISE" not in out.stdout and out.stdout.startswith("plate P001: 4 wells")


def test_simulate_prints_only_its_table(tmp_path):
    code = """
import screenbai.bandits.core.runner as runner
replicate = runner.replicate
def talking_replicate(*a, **k):
    noise("replicate")
    return replicate(*a, **k)
runner.replicate = talking_replicate
from screenbai.cli import main
raise SystemExit(main(sys.argv[1:]))
"""
    out = _python(code, "simulate", "glgape", "--instance", "kw_synthetic:K=10,d=2,seed=0", "--reps", "1",
                  "--param", "epsilon=0.2", "--no-progress")
    assert out.returncode == 0, out.stderr
    assert "NOISE" not in out.stdout and "glgape" in out.stdout.splitlines()[1]
    assert out.stderr.count("NOISE") == 2


def test_results_stdout_restores_stdout(capfd):
    from screenbai.streams import quiet_native_output, results_stdout, say

    with results_stdout() as out:
        print("dependency")
        os.write(1, b"native\n")
        say("ours")
        with quiet_native_output():
            os.write(1, b"banner\n")
            print("banner")
    assert out is not None
    print("after")
    captured = capfd.readouterr()
    assert "ours" in captured.out and "after" in captured.out
    assert "dependency" in captured.err and "native" in captured.err
    assert "banner" not in captured.out + captured.err
    assert not np.isin(["dependency", "native"], captured.out.split()).any()

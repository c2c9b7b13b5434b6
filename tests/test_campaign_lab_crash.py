"""Issue 20's done-when test: a whole campaign through the CLI on 384-well plates with controls,
continuous readouts and a compound added mid-campaign, killed (SIGKILL) at random points and at
points inside its transactions, and resumed as a lab would (run the command again if it left no
trace; write a lost plate file again) ends exactly where the uninterrupted campaign ends."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from campaign_util import KILL_AT, KILLED_CHILD

from screenbai.campaign import Campaign

REPO = Path(__file__).resolve().parents[1]


SMILES = [f"{'C' * (k % 10 + 1)}{('O', 'N', 'Cl', 'Br')[k // 10]}" for k in range(40)]
PLATE = 24  # compounds per plate (of the 352 compound wells of a 384-well plate with edge controls)


def _command(point: str, argv: list, kill_after: float | None) -> int | None:
    """Run ``screenbai campaign ARGV`` in a child; SIGKILL it after ``kill_after`` seconds (None: let it
    finish).  Returns its exit code (negative: killed)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_CHILD, "" if point == "none" else KILL_AT[point], "campaign", *map(str, argv)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _, err = proc.communicate(timeout=kill_after if kill_after is not None else 300)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
        return proc.returncode
    if proc.returncode not in (0, -signal.SIGKILL):
        raise AssertionError(f"{argv}: exit {proc.returncode}: {err}")
    return proc.returncode


class Lab:
    """The assay: the j-th test of a compound reads mean + noise[j]; controls around 95 and 3 (percent
    inhibition).  The same readouts whatever run asks, given the same plates."""

    def __init__(self, seed: int = 5):
        rng = np.random.default_rng(seed)
        self.mean = {f"L{k:02d}": float(v) for k, v in enumerate(rng.uniform(5, 80, size=len(SMILES)))}
        self.mean["NEW1"] = 90.0  # the compound synthesised mid-campaign is the best
        self.noise = rng.normal(0, 4, size=1000)
        self.count: dict[str, int] = {}

    def fill(self, plate_file: Path, out: Path) -> Path:
        with open(plate_file, newline="") as fh:
            rows = list(csv.DictReader(fh))
        for k, r in enumerate(rows):
            if r["role"] == "positive control":
                r["outcome"] = f"{95 + self.noise[k % 50] / 2:.2f}"
            elif r["role"] == "negative control":
                r["outcome"] = f"{3 + self.noise[k % 50 + 50] / 2:.2f}"
            else:
                j = self.count.get(r["compound_id"], 0)
                self.count[r["compound_id"]] = j + 1
                r["outcome"] = f"{self.mean[r['compound_id']] + self.noise[j]:.2f}"
        with open(out, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
        return out


def _counts(path: Path) -> tuple[int, int, int]:
    """(plates, results files, compounds) in the campaign file, or (-1, ...) when there is none yet."""
    if not path.exists():
        return -1, -1, -1
    with Campaign.open(path) as c:
        con = c._con
        return tuple(con.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("plates", "records", "compounds"))


def _campaign(folder: Path, kill_rng: np.random.Generator | None) -> dict:
    """Run the whole campaign in ``folder``; with ``kill_rng``, every command is first killed at a
    point inside its transaction (where there is one) and at random moments, then resumed."""
    folder.mkdir()
    lib, new = folder / "lib.csv", folder / "new.csv"
    lib.write_text("name,smiles\n" + "".join(f"L{k:02d},{s}\n" for k, s in enumerate(SMILES)))
    new.write_text("name,smiles\nNEW1,OCCCCCCO\n")
    path = folder / "screen.campaign"
    lab = Lab()

    def step(argv, done, points=("none",)):
        """Run a command until ``done()`` says it took effect, killing it first when crashing."""
        if kill_rng is not None:
            for point in points:
                if point != "none":
                    assert _command(point, argv, None) == -signal.SIGKILL
                    if done():
                        return
            for _ in range(1):
                _command("none", argv, float(kill_rng.uniform(0.05, 2.5)))
                if done():
                    return
        assert _command("none", argv, None) == 0
        assert done()

    init = ["init", path, "--library", lib, "--id-column", "name", "--smiles-column", "smiles", "--d", "3"]
    init += ["--algorithm", "m-lingape", "--param", "epsilon=5", "--param", "sigma=4", "--param", "S=100"]
    init += ["--outcome", "continuous", "--readout", "percent inhibition", "--unit", "%", "--hit-above", "50"]
    init += ["--plate-format", "384", "--seed", "3"]
    step(init, lambda: path.exists())
    for k in range(1, 5):
        plate_id = f"P{k:03d}"
        plate_file = folder / f"{plate_id}.csv"
        n_plates = _counts(path)[0]
        step(["next", path, "--plate-size", PLATE], lambda n=n_plates: _counts(path)[0] > n, ("after-next",))
        if not plate_file.exists():  # killed between the commit and the file: the lab writes it again
            assert _command("none", ["plate", path, plate_id], None) == 0
        if k == 2:  # a compound synthesised while plate 2 is in the lab
            n_compounds = _counts(path)[2]
            add = ["add", path, new, "--id-column", "name", "--smiles-column", "smiles"]
            step(add, lambda n=n_compounds: _counts(path)[2] > n, ("mid-add",))
        results = lab.fill(plate_file, folder / f"R{k:03d}.csv")
        n_records = _counts(path)[1]
        step(["record", path, results], lambda n=n_records: _counts(path)[1] > n, ("mid-record",))
    r = subprocess.run(
        [sys.executable, "-m", "screenbai.cli", "campaign", "status", str(path), "--json"],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        check=True,
    )
    status = json.loads(r.stdout)
    with Campaign.open(path, use_snapshot=False) as c:
        n, s, _, failed = c.observations()
        raw = c._con.execute("SELECT plate_id, well, kind, raw FROM readouts ORDER BY plate_id, well").fetchall()
        wells = c._con.execute("SELECT plate_id, well, arm FROM wells ORDER BY plate_id, position").fetchall()
        history = [(n_, lead, done) for _, n_, lead, done in c.history()]
        history += [(p["tests"], p["in_contention"], p["certified_epsilon"]) for p in c.progress_history()]
        nxt = c.next_plate(PLATE).arms
    status.pop("path")
    status["changes"] = [line.split(": ", 1)[1] for line in status["changes"]]  # without the time of day
    return {
        "status": status,
        "n": n.tolist(),
        "s": s.tolist(),
        "failed": failed,
        "raw": raw,
        "wells": wells,
        "history": history,
        "next": nxt,
    }


@pytest.mark.slow  # about 35 commands in child processes: 1-4 min
def test_a_lab_campaign_killed_anywhere_resumes_to_the_same_result(tmp_path):
    start = time.time()
    ref = _campaign(tmp_path / "ref", None)
    crashed = _campaign(tmp_path / "crash", np.random.default_rng(2026))
    assert ref["status"]["plates_done"] == 4 and ref["status"]["n_compounds"] == 41
    assert len(ref["raw"]) == 4 * (PLATE + 32)  # every compound and control well's raw readout
    assert ref["status"]["in_contention"] is not None and "certified_epsilon" in ref["status"]
    assert crashed == ref, f"({time.time() - start:.0f} s)"

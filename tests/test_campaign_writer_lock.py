"""One backtest at a time on a ``--campaign-out`` file (campaign/state/writer.py): two at once interleaved their
plates in one file, each drawing the assay's stream from its first plate, and both ended with a mix. A second one
now fails at once naming the process that writes the file, as does a `record` or `next` on it meanwhile; two
`record` commands still run beside each other (SQLite orders their steps: tests/test_campaign_concurrent.py).

Deterministic: another process takes the lock and says so on its stdout, and keeps it until its stdin closes; the
commands run while it holds it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_backtest_resume import backtest

from screenbai.campaign import Campaign
from screenbai.campaign.state.writer import CampaignBusy, lock_path, stepping, writing
from screenbai.cli import main

REPO = Path(__file__).resolve().parents[1]
HOLD = (
    "import sys; from screenbai.campaign.state.writer import {how}\n"
    "with {how}(sys.argv[1]):\n"
    "    print('held', flush=True); sys.stdin.read()\n"
)


class Holder:
    """Another process holding the lock of ``path`` (``how``: writing, as a backtest, or stepping, as a record)."""

    def __init__(self, path, how="writing"):
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
        self.proc = subprocess.Popen(
            [sys.executable, "-c", HOLD.format(how=how), str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert self.proc.stdout.readline() == "held\n"  # blocks until the lock is held, however long that takes

    def __enter__(self):
        return self.proc.pid

    def __exit__(self, *exc):
        self.proc.stdin.close()
        assert self.proc.wait() == 0


def test_a_second_backtest_on_the_same_file_fails_at_once_naming_the_first(tmp_path):
    path = tmp_path / "bt.campaign"
    with Holder(path) as pid:
        with pytest.raises(CampaignBusy) as info:
            backtest(path)
        assert str(info.value) == (
            f"campaign {path} is being written by another screenbai process (pid {pid}); wait for it or remove "
            f"{path}.lock if no such process runs"
        )
        assert not path.exists()  # nothing begun
    res = backtest(path)  # once it is done
    assert res.stopped and not lock_path(path).exists()  # the sidecar goes with its holder
    with Holder(path, "stepping"):  # a record running on the finished file: the backtest waits for it
        with pytest.raises(CampaignBusy, match=r"another screenbai process \(pid unknown: a record or next\)"):
            backtest(path)


def test_record_and_next_fail_at_once_while_a_backtest_writes_the_file(tmp_path, capsys):
    path = tmp_path / "bt.campaign"
    backtest(path)
    with Campaign.open(path) as camp:
        n_events = len(camp.events())
    with Holder(path) as pid:
        for argv in (["next", str(path), "--out", str(tmp_path / "P.csv")], ["repair", str(path)]):
            assert main(["campaign", *argv]) == 2
            assert f"error: campaign {path} is being written by another screenbai process (pid {pid})" in (
                capsys.readouterr().err
            )
    with Campaign.open(path) as camp:
        assert len(camp.events()) == n_events  # nothing written


def test_steps_share_the_lock_and_a_stale_sidecar_blocks_nothing(tmp_path):
    path = tmp_path / "c.campaign"
    with stepping(path), stepping(path):  # two steps in one process
        pass
    assert not lock_path(path).exists()  # the last holder removes the sidecar
    lock_path(path).write_text("999999999\n")  # left by a backtest killed outright: its lock went with it
    with Holder(path, "stepping"), stepping(path):  # two steps at once
        pass
    with writing(path):
        assert lock_path(path).read_text() == f"{os.getpid()}\n"
        with pytest.raises(CampaignBusy, match=rf"\(pid {os.getpid()}\)"):
            with stepping(path):
                pass
    assert not lock_path(path).exists()

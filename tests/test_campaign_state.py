"""The campaign's state is right whatever the order results arrive in, a killed `init`, or junk
written into the file (issue 18)."""

from __future__ import annotations

import dataclasses
import errno
import hashlib
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from campaign_util import Assay, new_campaign, synthetic_library, write_results

from screenbai.campaign import Campaign, ResultsError
from screenbai.campaign import campaign as C
from screenbai.campaign.state import creation, store
from screenbai.cli import main


def _digest(camp: Campaign) -> str:
    return hashlib.sha256(store.encode_state(camp.policy.state_dict()).encode()).hexdigest()


def _rows(plate, values, idx):
    return [(plate.plate_id, plate.wells[i], values[i]) for i in idx]


def _write(path, rows):
    path.write_text("plate_id,well,outcome\n" + "".join(f"{p},{w},{v}\n" for p, w, v in rows))
    return path


# ------------------------------------------------------------------------------------ order independence
@pytest.mark.parametrize(
    "seed, rounds, fires_alone, failed, calibration",
    [
        # neither plate alone fires the rule, both together do (the "not fired" vs "fired");
        # seed 7 since a campaign solves the L1 ratio rule's LPs from a cold start (seed 2 no longer gave it)
        (7, 3, (False, False), False, "likelihood-ratio"),
        # each plate alone fires it, with a different leader; a failed well on each plate. The paper's
        # calibration (no guarantee) fires early enough for this on K = 20 (the default's Bayesian
        # predictions made it rare: no seed of 0-29 gave it); the state's order independence is the same
        (7, 0, (True, True), True, "reinterpreted"),
    ],
)
def test_the_same_outcomes_in_any_order_give_the_same_state(tmp_path, seed, rounds, fires_alone, failed,
                                                            calibration):
    """Two plates in the lab, their outcomes recorded in every order and split (plate by plate
    either way round, one combined file, a plate in two parts around the other): the same policy
    state (state_dict digest), leader, stopping decision and status."""
    base = tmp_path / "base.campaign"
    camp = new_campaign(base, params={"epsilon": 0.3, "delta": 0.05, "calibration": calibration}, K=20, d=2,
                        seed=seed)
    assay = Assay(camp.features, seed=seed)
    p0 = camp.next_plate(12)
    camp.record(write_results(tmp_path / "p0.csv", p0, assay(p0.arms)))
    for k in range(rounds):  # plates recorded as they come, to where the stopping rule is near
        a, b = camp.next_plate(12), camp.next_plate(12)
        camp.record(write_results(tmp_path / f"a{k}.csv", a, assay(a.arms)))
        camp.record(write_results(tmp_path / f"b{k}.csv", b, assay(b.arms)))
    a, b = camp.next_plate(12), camp.next_plate(12)  # both in the lab
    va, vb = assay(a.arms), assay(b.arms)
    camp.close()
    half = len(a) // 2
    if failed:  # back in the queue, in plate order whatever the order of the files
        va, vb = [*va[:1], "failed", *va[2:]], [*vb[:2], "failed", *vb[3:]]
    A, B = _rows(a, va, range(len(a))), _rows(b, vb, range(len(b)))
    A1, A2 = A[:half], A[half:]
    B1, B2 = B[:half], B[half:]
    both = A + B
    random.Random(0).shuffle(both)
    orders = {
        "A then B": [A, B],
        "B then A": [B, A],
        "one combined file": [both],
        "half of A, B, the rest of A": [A1, B, A2],
        "B's second half, A, B's first half": [B2, A, B1],
        "four parts": [A2, B2, A1, B1],
    }
    seen = {}
    for name, files in orders.items():
        folder = tmp_path / name.replace(" ", "_").replace(",", "").replace("'", "")
        folder.mkdir()
        shutil.copy(base, folder / "c.campaign")
        with Campaign.open(folder / "c.campaign") as c:
            for k, rows in enumerate(files):
                c.record(_write(folder / f"r{k}.csv", rows))
            status = c.status()
            text = status.text().replace(str(folder / "c.campaign"), "CAMPAIGN")
            status = {**status.to_dict(), "path": None, "text": text}
            got = (_digest(c), c.policy.result().recommendation, c.policy.done, status)
        if name == "four parts":  # replaying the whole log gives the same (a full replay takes a while)
            with Campaign.open(folder / "c.campaign", use_snapshot=False) as c:
                assert _digest(c) == got[0], name
        seen[name] = got
    first = seen["A then B"]
    for name, got in seen.items():
        assert got[0] == first[0], f"{name}: another policy state than 'A then B'"
        assert got[1:3] == first[1:3], f"{name}: leader / stopping decision {got[1:3]} vs {first[1:3]}"
        assert got[3] == first[3], name
    assert first[2]  # the rule fired with both plates' outcomes, in every order

    # the scenario is the one meant: one plate alone fires the rule or not as stated
    alone = []
    for plate_rows, fires in zip((A, B), fires_alone):
        folder = tmp_path / f"alone{fires}{len(list(tmp_path.iterdir()))}"
        folder.mkdir()
        shutil.copy(base, folder / "c.campaign")
        with Campaign.open(folder / "c.campaign") as c:
            c.record(_write(folder / "r.csv", plate_rows))
            assert c.policy.done == fires
            alone.append(c.policy.result().recommendation)
    if all(fires_alone):  # the answer with one plate depends on which: recorded first, it would have stayed
        assert alone[0] != alone[1]


# ------------------------------------------------------------------------------------ a killed init
def _killed_create(path, lib, point: tuple[str, int]) -> int:
    """Run Campaign.create in a forked process that kills itself (SIGKILL) at ``point``: before the
    n-th SQL statement, or at a step of putting the file in place; the child's wait status."""
    pid = os.fork()
    if pid == 0:  # the child
        try:
            kind, n = point
            count = [0]

            def die(*_args, **_kwargs):
                os.kill(os.getpid(), signal.SIGKILL)

            if kind == "sql":
                connect = store.connect

                def traced(*args, **kwargs):
                    con = connect(*args, **kwargs)

                    def trace(_statement):
                        count[0] += 1
                        if count[0] == n:
                            die()

                    con.set_trace_callback(trace)
                    return con

                store.connect = traced
            elif kind == "fsync":
                creation._fsync = die
            elif kind == "link":
                creation.os.link = die
            elif kind == "unlink":  # the file is in place, its temporary name not yet removed
                creation.os.unlink = die
            Campaign.create(path, lib, "glgape", {"epsilon": 0.1}, seed=1).close()
        finally:
            os._exit(0)
    return os.waitpid(pid, 0)[1]


def _statements_of_create(tmp_path, lib) -> int:
    count = [0]
    connect = store.connect

    def traced(*args, **kwargs):
        con = connect(*args, **kwargs)
        con.set_trace_callback(lambda _s: count.__setitem__(0, count[0] + 1))
        return con

    store.connect = traced
    try:
        Campaign.create(tmp_path / "count.campaign", lib, "glgape", {"epsilon": 0.1}, seed=1).close()
    finally:
        store.connect = connect
    return count[0]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="kills forked processes")
def test_init_killed_at_any_instant_leaves_no_file_or_a_whole_campaign(tmp_path):
    lib = synthetic_library(K=30, d=3)
    n = _statements_of_create(tmp_path, lib)
    assert n > 20  # schema, settings, compounds, arrays, the init event, then opening the file made
    # every third statement (each kill and re-run takes 0.15 s), the last one, and putting the file in place
    points = [("sql", k) for k in (*range(1, n, 3), n)] + [("fsync", 0), ("link", 0), ("unlink", 0)]
    path = tmp_path / "c.campaign"
    complete = []
    for point in points:
        status = _killed_create(path, lib, point)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, point
        if path.exists():  # only once the file is complete
            complete.append(point)
            with Campaign.open(path) as camp:
                assert camp.K == 30 and [e[2] for e in camp.events()] == ["init"], point
                assert camp.features.shape == lib.features.shape
            path.unlink()
        # a re-run works (and removes what the killed one left)
        Campaign.create(path, lib, "glgape", {"epsilon": 0.1}, seed=1).close()
        assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".c.campaign")) == [], point
        path.unlink()
    # a file exists only when killed once it was in place: before its temporary name was removed, or
    # while the campaign made was being opened (the last statements)
    assert ("unlink", 0) in complete and ("fsync", 0) not in complete and ("link", 0) not in complete
    assert all(k > n - 8 for kind, k in complete if kind == "sql"), complete


# ------------------------------------------------------------------------------------ silent damage
def _library_with_arrays():
    lib = synthetic_library(K=30, d=3)
    rng = np.random.default_rng(7)
    return dataclasses.replace(lib, arrays={"pca_components": rng.normal(size=(3, 64)), "pca_mean": rng.random(64)})


@pytest.fixture()
def screen(tmp_path):
    """A campaign with a plate recorded and a plate part-recorded (the two snapshots differ),
    VACUUMed so that each stored value is in the file once."""
    path = tmp_path / "screen.campaign"
    lib = _library_with_arrays()
    camp = Campaign.create(path, lib, "glgape", {"epsilon": 0.1, "delta": 0.05}, seed=3)
    assay = Assay(camp.features)
    p1 = camp.next_plate(10)
    camp.record(write_results(tmp_path / "r1.csv", p1, assay(p1.arms)))
    p2 = camp.next_plate(10)
    camp.record(_write(tmp_path / "r2.csv", _rows(p2, assay(p2.arms[:4]), range(4))))
    digest = _digest(camp)
    camp.close()
    con = sqlite3.connect(path)
    con.execute("VACUUM")
    con.close()
    return path, lib, digest


def _junk_into(path, stored: bytes) -> None:
    """Overwrite 32 bytes of ``stored`` (a value kept in the file) where they sit in the file, leaving
    SQLite's page structure intact."""
    data = path.read_bytes()
    for start in range(0, len(stored) - 32, 8):
        needle = stored[start : start + 32]
        if data.count(needle) == 1:
            at = data.index(needle)
            junk = np.full(4, 1e300).tobytes()
            path.write_bytes(data[:at] + junk + data[at + 32 :])
            return
    raise AssertionError("the stored value was not found in the file")


def _stored(path, part: str) -> bytes:
    kind, name = part.split()
    con = sqlite3.connect(path)
    try:
        if kind == "array":
            return con.execute("SELECT data FROM arrays WHERE name = ?", (name,)).fetchone()[0]
        return con.execute("SELECT state FROM snapshots WHERE name = ?", (name,)).fetchone()[0].encode()
    finally:
        con.close()


PARTS = ["array features", "array pca_components", "array pca_mean", "snapshot latest", "snapshot plate"]


@pytest.mark.parametrize("part", PARTS)
def test_junk_in_any_stored_array_or_snapshot_is_named_on_open(screen, part, capsys):
    path, lib, digest = screen
    _junk_into(path, _stored(path, part))
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"  # SQLite sees nothing wrong
    con.close()
    with pytest.raises(store.CampaignDamaged) as err:
        Campaign.open(path)
    assert err.value.parts == [part]
    assert str(path) in str(err.value) and part in str(err.value)
    assert main(["campaign", "status", str(path)]) == 2
    out = capsys.readouterr().err
    assert part in out and "SHA-256" in out
    if part.startswith("snapshot"):  # a cache of the log: the command that rebuilds it is named, and works
        assert f"screenbai campaign repair {path}" in out
        assert main(["campaign", "repair", str(path)]) == 0
        capsys.readouterr()
        with Campaign.open(path) as camp:
            assert _digest(camp) == digest
            assert camp.status().tests == 14
        assert main(["campaign", "status", str(path)]) == 0
    else:  # the library's arrays are not in the log: a backup is the way back, and repair says so
        assert "backup" in out
        assert main(["campaign", "repair", str(path)]) == 2
        assert part in capsys.readouterr().err


# ------------------------------------------------------------------------------------ rough edges
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture()
def small(tmp_path):
    camp = new_campaign(tmp_path / "c.campaign")
    plate = camp.next_plate(4)
    camp.close()
    return tmp_path / "c.campaign", plate


def test_a_results_file_cut_after_an_empty_last_outcome_is_refused(small, tmp_path):
    path, plate = small
    whole = write_results(tmp_path / "whole.csv", plate, [1, 0, 1, 1]).read_text()
    cut = tmp_path / "cut.csv"
    cut.write_text(whole.rstrip("\n")[:-1])  # "P001,A04," : the copy stopped before the last outcome
    with Campaign.open(path) as camp:
        with pytest.raises(ResultsError) as err:
            camp.record(cut)
        assert camp.open_wells() == {"P001": 4}  # nothing recorded
    msg = str(err.value)
    assert str(cut) in msg and "line 5" in msg and "cut short" in msg and "'failed'" in msg
    # the same row ended by a line break is a failed well, as before
    cut.write_text(whole.rstrip("\n")[:-1] + "\n")
    with Campaign.open(path) as camp:
        assert camp.record(cut).n_failed == 1


def test_the_campaign_file_given_as_results_says_what_it_is(small, capsys):
    path, _ = small
    assert main(["campaign", "record", str(path), str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}: this is an SQLite database" in err and "screenbai campaign record CAMPAIGN RESULTS.csv" in err
    assert "UTF-8" not in err  # not advice about text encodings


def test_plates_beyond_the_library_or_a_plate_format_need_force(tmp_path, capsys):
    path = tmp_path / "c.campaign"
    new_campaign(path, K=30).close()
    for size, why in [(100_000, "library of 30 compounds"), (31, "library of 30 compounds")]:
        assert main(["campaign", "next", str(path), "--plate-size", str(size)]) == 2
        err = capsys.readouterr().err
        assert str(path) in err and f"{size:,} wells" in err and why in err and "--force" in err
    with Campaign.open(path) as camp:
        assert camp.open_wells() == {}  # nothing committed
    big = tmp_path / "big.campaign"
    new_campaign(big, K=2000, d=2).close()
    assert main(["campaign", "next", str(big), "--plate-size", "1600"]) == 2
    assert "largest plate format (1,536 wells)" in capsys.readouterr().err
    assert main(["campaign", "next", str(path), "--plate-size", "40", "--force"]) == 0
    with Campaign.open(path) as camp:
        assert [e[3]["requested"] for e in camp.events() if e[2] == "plate"] == [40]


def test_a_repeated_param_is_refused_naming_it(tmp_path, capsys):
    argv = ["campaign", "init", str(tmp_path / "c.campaign"), "--library", str(tmp_path / "lib.csv")]
    assert main([*argv, "--param", "epsilon=0.1", "--param", "delta=0.05", "--param", "epsilon=0.2"]) == 2
    assert "--param epsilon is given twice" in capsys.readouterr().err
    assert not (tmp_path / "c.campaign").exists()


def test_disk_full_names_the_file_and_changes_nothing(tmp_path, monkeypatch, capsys):
    """SQLite's own 'disk full' (its max_page_count reached) inside the transaction of `next`."""
    path = tmp_path / "c.campaign"
    new_campaign(path).close()
    con = sqlite3.connect(path)
    con.execute("VACUUM")  # no free pages left for the new plate to fill
    con.close()
    before = path.read_bytes()
    connect = store.connect

    def full(*args, **kwargs):
        con = connect(*args, **kwargs)
        pages = con.execute("PRAGMA page_count").fetchone()[0]
        con.execute(f"PRAGMA max_page_count = {pages}")
        return con

    monkeypatch.setattr(store, "connect", full)
    assert main(["campaign", "next", str(path), "--plate-size", "4"]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "disk is full" in err and "nothing was changed" in err and "Free space" in err
    monkeypatch.setattr(store, "connect", connect)
    assert path.read_bytes() == before and not (tmp_path / "P001.csv").exists()
    assert main(["campaign", "next", str(path), "--plate-size", "4"]) == 0  # with room again, it goes on
    assert (tmp_path / "P001.csv").exists()

    def no_space(*_args, **_kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(C, "write_plate_file", no_space)  # the plate is committed, its file cannot be written
    assert main(["campaign", "next", str(path), "--plate-size", "4"]) == 2
    err = capsys.readouterr().err
    assert f"file {tmp_path / 'P002.csv'} could not be written" in err and "No space left" in err
    assert f"screenbai campaign plate {path} P002 --out FILE" in err


def test_damaged_pages_name_the_file_and_the_remedy(small, capsys):
    path, _ = small
    con = sqlite3.connect(path)
    page_size = con.execute("PRAGMA page_size").fetchone()[0]
    root = con.execute("SELECT rootpage FROM sqlite_master WHERE name = 'compounds'").fetchone()[0]
    con.close()
    data = bytearray(path.read_bytes())
    data[(root - 1) * page_size] = 0x7F  # not a b-tree page type
    path.write_bytes(bytes(data))
    assert main(["campaign", "status", str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "damaged" in err and "backup" in err and "Traceback" not in err


@pytest.mark.parametrize("what", ["file", "folder"])
def test_a_read_only_campaign_shows_its_status_and_refuses_changes_naming_why(tmp_path, what, monkeypatch, capsys):
    path = tmp_path / "c.campaign"
    camp = new_campaign(path)
    plate = camp.next_plate(4)
    camp.record(write_results(tmp_path / "r1.csv", plate, [1, 0, 1, 1]))
    plate = camp.next_plate(4)
    camp.close()
    results = write_results(tmp_path / "r2.csv", plate, [1, 1, 1, 1])
    (path if what == "file" else tmp_path).chmod(0o555)
    if os.geteuid() == 0:  # root may write anything: see the permission bits as another user would
        monkeypatch.setattr(
            store,
            "writable",
            lambda p: all(q.stat().st_mode & 0o200 for q in (Path(p), Path(p).parent)),
            raising=False,
        )
    before = path.read_bytes()
    try:
        assert main(["campaign", "status", str(path), "--json"]) == 0
        status = json.loads(capsys.readouterr().out)
        assert status["tests"] == 4 and status["open_wells"] == {"P002": 4}
        for argv in (["record", str(path), str(results)], ["next", str(path), "--plate-size", "4"]):
            assert main(["campaign", *argv]) == 2
            err = capsys.readouterr().err
            assert str(path) in err and "read-only" in err and "chmod" in err and "nothing was changed" in err, err
        assert path.read_bytes() == before
        assert sorted(p.name for p in tmp_path.iterdir()) == ["c.campaign", "r1.csv", "r2.csv"]  # no journal left
    finally:
        (path if what == "file" else tmp_path).chmod(0o755)


def test_a_closed_pipe_after_the_change_is_committed_exits_0(small):
    """`screenbai campaign next ... | head -1`: the reader is gone before the command prints."""
    path, _ = small
    read, write = os.pipe()
    os.close(read)  # the reader has gone: any write to the pipe fails (EPIPE)
    try:
        r = subprocess.run(
            [sys.executable, "-m", "screenbai.cli", "campaign", "next", str(path), "--plate-size", "4"],
            env={**os.environ, "PYTHONPATH": str(REPO)},
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write)
    assert r.returncode == 0, r.stderr
    assert "Broken pipe" not in r.stderr and "Traceback" not in r.stderr
    with Campaign.open(path) as camp:
        assert list(camp.open_wells()) == ["P001", "P002"]  # the plate was committed


def test_a_campaign_of_schema_1_is_upgraded_by_repair(tmp_path, capsys):
    """Files made before the checksums: open names the upgrade, repair does it (the same state)."""
    path = tmp_path / "old.campaign"
    camp = new_campaign(path)
    assay = Assay(camp.features)
    plate = camp.next_plate(6)
    camp.record(write_results(tmp_path / "r1.csv", plate, assay(plate.arms)))
    nxt = camp.next_plate(6)
    digest = _digest(camp)
    camp.close()
    con = sqlite3.connect(path, isolation_level=None)
    con.executescript(
        """
        ALTER TABLE arrays DROP COLUMN sha256;
        CREATE TABLE snapshot (id INTEGER PRIMARY KEY CHECK (id = 1), step INTEGER NOT NULL, state TEXT NOT NULL);
        INSERT INTO snapshot SELECT 1, step, state FROM snapshots WHERE name = 'latest';
        DROP TABLE snapshots;
        DROP INDEX outcomes_of_record;
        UPDATE meta SET value = '1' WHERE key = 'schema_version';
        """
    )
    con.close()
    with pytest.raises(store.CampaignFileError, match=f"campaign schema 1.*screenbai campaign repair {path}"):
        Campaign.open(path)
    assert main(["campaign", "repair", str(path)]) == 0
    assert "upgraded to campaign schema 2" in capsys.readouterr().out
    with Campaign.open(path) as camp:
        assert _digest(camp) == digest
        camp.record(write_results(tmp_path / "r2.csv", nxt, assay(nxt.arms)))  # and it goes on
        assert camp.open_wells() == {}


def test_recheck_runs_the_stopping_rule_while_the_rest_of_a_batch_waits():
    """``tell`` leaves the rule to the end of a chosen batch (so that propose(1) + tell gives the
    sequential choices); ``recheck`` runs it now, as a campaign does after each results file."""
    from screenbai.bandits.core.policy import Policy

    class Batches(Policy):
        def _select(self):
            return np.arange(3)  # a batch of three arms

        def _update(self, arms, rewards):
            pass

        def _stops_now(self):
            return self.n_samples >= 1

    policy = Batches(np.eye(4))
    assert policy.propose(1).tolist() == [0]  # arms 1 and 2 wait in the queue
    policy.tell([0], [1.0])
    assert not policy.done  # the rest of the batch is still to come
    policy.recheck()
    assert policy.done and policy.result().stopped
    with pytest.raises(RuntimeError, match="finished"):
        policy.propose(1)


@pytest.mark.parametrize("algorithm, params, says", [
    ("log-tas", {"epsilon": 0.1}, "logistic model"),
    ("lin-tas", {"sigma": 0.5}, "linear model"),
    ("rage", {"sigma": 0.5}, "linear model"),
])
def test_status_names_the_algorithms_own_model_of_0_1_outcomes(tmp_path, algorithm, params, says):
    """A linear algorithm run on 0/1 outcomes certifies under the linear model, not the logistic one."""
    from campaign_util import new_campaign, write_results

    from screenbai.campaign.views.forecast import prior_cost
    from screenbai.campaign.views.status import campaign_status

    camp = new_campaign(tmp_path / "c.campaign", algorithm, params)
    plate = camp.next_plate(12)
    camp.record(write_results(tmp_path / "r.csv", plate, [i % 2 for i in range(len(plate.arms))]))
    st = campaign_status(camp)
    assert says in st.model and ("logistic" in says) == ("logistic" in st.model), st.model
    assert prior_cost(camp, draws=2)  # the forecast solves T* in the algorithm's model without failing

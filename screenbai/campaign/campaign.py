"""The ``Campaign`` object: a real screen, plate by plate, kept in one SQLite file.

    camp = Campaign.create("cdk2.campaign", import_library("export.csv.gz"), "log-tas",
                           {"epsilon": 0.1, "delta": 0.05}, seed=1)
    plate = camp.next_plate(96, "P001.csv")     # the lab tests these wells
    camp.record("P001_results.csv")             # validated first; all or nothing
    print(camp.status().text())

The file is the only state: the policy is rebuilt by replaying its log
(:mod:`~screenbai.campaign.state.replay`, which says why the order in which results files arrive does
not matter), from snapshots of its state cached in the same transaction as each step;
``Campaign.open(..., use_snapshot=False)`` replays from the start instead, and ``Campaign.repair``
rebuilds the snapshots from the log.

``create`` builds the file under a temporary name in the same folder and renames it into place
once complete (:mod:`~screenbai.campaign.state.creation`): a killed ``init`` leaves no campaign file,
never half of one.  ``open`` checks the SHA-256 of every stored array and snapshot
(:func:`screenbai.campaign.state.store.check_damage`).
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
from collections.abc import Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .lab import assay, censored
from .lab.assay import Readout
from .lab.layout import PlateLayout
from .lab.plates import FORMATS, check_plate_path, well_names, write_plate_file
from .lab.results import Outcome, WellInfo, read_results
from .state import correction, store
from .state.creation import create_file
from .state.replay import FROM_START, PolicyReplay, propose_wells
from .state.store import CampaignError

#: meta key (+ plate id) of a plate committed by ``next`` whose file is not written yet (Campaign.interrupted_plate)
_UNWRITTEN = "plate_file_unwritten "


def _running(pid: int) -> bool:
    """Whether process ``pid`` runs on this machine (on Windows, where signal 0 would end it, assumed)."""
    if os.name == "nt" or pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # it runs under another user
        return True
    return True


@dataclass(frozen=True)
class Plate:
    plate_id: str
    wells: tuple[str, ...]
    arms: tuple[int, ...]
    compound_ids: tuple[str, ...]
    smiles: tuple[str, ...]
    path: Path | None = None

    def __len__(self) -> int:
        return len(self.wells)


@dataclass(frozen=True)
class RecordSummary:
    record_id: int
    file: str
    n_outcomes: int
    n_failed: int
    plates: tuple[str, ...]
    #: plate id -> (Z'-factor or None, decision: "pass", "accepted", "discarded", "no controls")
    qc: dict = field(default_factory=dict)
    #: unusual values recorded as written (``Readout.suspicion``), each naming the file, line, well and value
    warnings: tuple[str, ...] = ()
    #: censored cells recorded as the outcome they settle (``lab.censored.Censored``; a discarded plate's left out)
    censored: tuple = ()

class _Plates(Mapping):
    """Plate id -> well -> WellInfo, read from the file only for the plates a results file names."""

    def __init__(self, camp: Campaign):
        self._camp = camp
        self._ids = [r[0] for r in camp._con.execute("SELECT plate_id FROM plates ORDER BY step")]
        self._known = set(self._ids)
        self._cache: dict[str, dict[str, WellInfo]] = {}

    def __getitem__(self, plate_id: str) -> dict[str, WellInfo]:
        if plate_id not in self._known:
            raise KeyError(plate_id)
        if plate_id not in self._cache:
            ids = self._camp.compound_ids
            self._cache[plate_id] = {
                well: WellInfo(arm, ids[arm], None if file is None else f"{file} at {at}")
                for well, arm, file, at in self._camp._con.execute(
                    "SELECT w.well, w.arm, r.file, r.recorded_at FROM wells w "
                    "LEFT JOIN outcomes o USING (plate_id, well) "
                    "LEFT JOIN records r USING (record_id) WHERE w.plate_id = ? ORDER BY w.position",
                    (plate_id,),
                )
            }
            for well, kind, file, at in self._camp._con.execute(
                "SELECT c.well, c.kind, r.file, r.recorded_at FROM controls c "
                "LEFT JOIN readouts o USING (plate_id, well) LEFT JOIN records r USING (record_id) "
                "WHERE c.plate_id = ?",
                (plate_id,),
            ):
                arm = assay.POSITIVE if kind == "positive" else assay.NEGATIVE
                self._cache[plate_id][well] = WellInfo(
                    arm, assay.CONTROL_IDS[arm], None if file is None else f"{file} at {at}"
                )
        return self._cache[plate_id]

    def layout(self, plate_id: str) -> PlateLayout | None:
        """The layout ``plate_id`` was proposed with (None: a plate without a format)."""
        row = self._camp._con.execute(
            "SELECT e.detail FROM plates p JOIN events e USING (step) WHERE p.plate_id = ?", (plate_id,)
        ).fetchone()
        layout = None if row is None else json.loads(row[0]).get("layout")
        return None if layout is None else PlateLayout.from_dict(layout)

    def __contains__(self, plate_id) -> bool:
        return plate_id in self._known

    def __iter__(self):
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)


class Campaign(PolicyReplay):
    """One campaign file: library, algorithm, plates, outcomes and the log (see module doc)."""

    # read from the file when used (PolicyReplay says list[str]: a change there would cost every campaign a replay)
    compound_ids: store.CompoundColumn  # type: ignore[assignment]
    smiles: store.CompoundColumn

    def __init__(self, path: Path, con: sqlite3.Connection, *, use_snapshot: bool = True, verify: bool = True):
        self.path = Path(path)
        self._con = con
        #: this user cannot change the file (it was opened read-only): reading works, steps are refused
        self.readonly = not store.writable(self.path)
        self.use_snapshot = use_snapshot
        try:
            if verify:
                store.check_damage(con, self.path)
            assay.ensure_schema(con, readonly=self.readonly)  # files made before plate controls and readouts existed
            store.ensure_progress_columns(con, readonly=self.readonly)  # and before the progress plot
            self.meta = store.get_meta(con)
            self._load_compounds()
        except sqlite3.Error as exc:
            con.close()
            raise store.file_error(exc, self.path, "reading it") from None
        except BaseException:
            con.close()
            raise
        self._policy = None
        self._policy_step = 0  # the last plate/record step the in-memory policy has taken
        #: keep the compounds in contention and the certified epsilon of every results file in the
        #: history (the report's progress plot; the certificate costs 5 ms to 3 s per file, log-tas's 0.9-3.2 s
        #: at 1 600 compounds). Simulations of many plates (backtest, benchmarks/change_study.py) turn it off:
        #: their rows hold NULL there, which ``repair`` fills in
        self.keep_progress = True

    def _load_compounds(self) -> None:
        # read from the file when used: most commands need a plate's or a recommendation's ids, not all K
        n = store.n_compounds(self._con)
        self.compound_ids = store.CompoundColumn(self._con, self.path, "compound_id", n)
        self.smiles = store.CompoundColumn(self._con, self.path, "smiles", n)
        self._arm_of = store.ArmOf(self._con, self.compound_ids)
        self.features = store.get_array(self._con, "features")

    @property
    def K(self) -> int:
        return len(self.compound_ids)

    @property
    def binary(self) -> bool:
        return self.meta["outcome"] == "binary"

    @property
    def layout(self) -> PlateLayout | None:
        """The plate layout of the next plate (None: plates of --plate-size wells, no controls)."""
        d = self.meta.get("layout")
        return None if d is None else PlateLayout.from_dict(d)

    @property
    def readout(self) -> Readout | None:
        """The raw readout declared at init (None: the lab writes what the algorithm is told)."""
        d = self.meta.get("readout")
        return None if d is None else Readout.from_dict(d)

    # ------------------------------------------------------------------ creation / opening
    @classmethod
    def create(
        cls,
        path,
        library,
        algorithm: str,
        params: dict | None = None,
        *,
        seed: int = 0,
        outcome: str = "binary",
        note: str = "",
        durable: bool = True,
        layout: PlateLayout | None = None,
        readout: Readout | None = None,
        meta: dict | None = None,
    ) -> Campaign:
        """Create a campaign file for ``library`` (a :class:`~screenbai.campaign.library.Library`); ``meta``: more
        metadata written with it (:func:`~screenbai.campaign.state.creation.create_file`)."""
        path = create_file(
            path, library, algorithm, params, seed=seed, outcome=outcome, note=note, layout=layout, readout=readout,
            meta=meta,
        )
        return cls(path, store.connect(path, durable=durable), verify=False)

    @classmethod
    def open(cls, path, *, use_snapshot: bool = True, durable: bool = True) -> Campaign:
        """Open a campaign file; its arrays and snapshots are checked against their SHA-256 first (``durable``: as
        for ``create``; False for a backtest)."""
        return cls(Path(path), store.connect(path, durable=durable), use_snapshot=use_snapshot)

    @classmethod
    def repair(cls, path) -> str:
        """Rebuild the policy snapshots and the leader history from the event log, with fresh checksums
        (and bring a file of an earlier schema up to date).  One transaction: a replay that does not
        reproduce the stored plates changes nothing.  Stored arrays cannot be rebuilt from the log: a
        damaged one is refused.  Returns what was done, in words."""
        path = Path(path)
        camp = cls(path, store.connect(path, schema=False), use_snapshot=False, verify=False)
        con = camp._con
        try:
            with camp._step("repairing it"):
                upgraded = store.upgrade_schema(con)
                if any(p.startswith("array ") for p in store.damaged_parts(con)):
                    store.check_damage(con, path)  # names them, and says a backup is the way back
                plate_state: list = []
                history: list = []

                def on_plate(step, pol):
                    plate_state[:] = [step, store.encode_state(pol.state_dict())]

                policy, last = camp._replay_now(
                    False, lambda step, pol: history.append((step, *camp._history_row(step, pol))), on_plate=on_plate,
                    why=FROM_START["repair"],
                )
                con.execute("DELETE FROM snapshots")
                # the replay starts at the latest restart: the points before it are kept as they were
                restarted = con.execute("SELECT MAX(step) FROM events WHERE kind = 'restart'").fetchone()[0]
                con.execute("DELETE FROM history WHERE step > ?", (restarted or 0,))
                if plate_state:
                    store.put_snapshot(con, "plate", *plate_state)
                if last:
                    store.put_snapshot(con, "latest", last, store.encode_state(policy.state_dict()))
                con.executemany(
                    "INSERT INTO history (step, n_tests, leader, done, in_contention, certified_epsilon) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    ((s, n, json.dumps(lead), int(done), c, e) for s, n, lead, done, c, e in history),
                )
                camp._policy, camp._policy_step = policy, last
        finally:
            camp.close()
        return (
            (f"upgraded to campaign schema {store.SCHEMA_VERSION}; " if upgraded else "")
            + f"replayed {len(history)} results file(s) from the log; the policy snapshots and the leader "
            "history are rebuilt, with fresh checksums"
        )

    def close(self) -> None:
        self._con.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ------------------------------------------------------------------ steps (the policy: PolicyReplay)
    @contextmanager
    def _step(self, doing: str = "writing a step"):
        """One logged step: a write transaction, taken before the policy is read.

        Another process (a second ``record`` or ``next`` run at the same time) may have written a
        step since this object read the file: the lock is taken first and the policy brought up to
        date inside it, so every step starts from the file's latest state.  On any failure the
        in-memory policy is dropped (rebuilt from the file); SQLite's errors (read-only, disk full,
        damaged pages) become a CampaignFileError naming the file, the cause and the remedy.
        """
        self.check_writable(doing)
        try:
            with store.transaction(self._con):
                if self._policy is not None and self._policy_step != self._last_step():
                    self._policy = None
                    self.meta = store.get_meta(self._con)  # another process may have switched the algorithm
                yield
        except sqlite3.Error as exc:
            self._policy = None
            raise store.file_error(exc, self.path, doing) from None
        except BaseException:
            self._policy = None
            raise

    def check_writable(self, doing: str = "writing a step") -> None:
        """Raise a CampaignFileError naming the file, why it cannot be changed and what to do, if it cannot."""
        if self.readonly:
            raise store.readonly_error(self.path, doing)

    # ------------------------------------------------------------------ plates
    def next_plate(
        self, size: int | None = None, path=None, *, force: bool = False, file_follows: bool = False
    ) -> Plate:
        """Propose up to ``size`` wells, record the plate as pending and write its file to ``path``.

        With a plate layout (``init --plate-format``), ``size`` caps the compounds on the plate
        (None: as many as the layout holds) and the plate also has its control wells.
        The plate is committed first, then the file is written (atomically): after a crash in
        between, ``write_plate`` writes the file of the pending plate again.  A plate larger than the
        library (a full plate of the format included) or than the largest plate format is refused unless
        ``force`` (a typo such as 100 000 wells for 33 compounds would commit a plate the lab cannot run).
        With ``path`` or ``file_follows`` (the caller writes it with ``write_plate``) the plate is marked, in
        its transaction, as having no file until ``write_plate`` writes one: :meth:`interrupted_plate`.
        """
        layout = self.layout
        full = size is None
        if size is None:
            if layout is None:
                raise ValueError("give a plate size (this campaign has no plate format; see `campaign format`)")
            size = layout.compounds_per_plate
        size = int(size)
        if size < 1:
            raise ValueError(f"plate size must be at least 1; got {size}")
        largest = max(rows * cols for rows, cols in FORMATS)
        if not force and size > self.K:
            if layout is None:
                what = f"a plate of {size:,} wells"
            elif full:
                what = f"a full {layout.format_name} plate of its layout ({size:,} compounds)"
            else:
                what = f"a plate of {size:,} compounds"
            raise ValueError(
                f"{self.path}: {what} for a library of {self.K:,} compounds (each compound {size / self.K:.1f} "
                f"times on one plate on average); give a plate size (--plate-size) of at most {self.K:,}"
                + (" (the plate's other compound wells stay empty)" if layout is not None else "")
                + ", or force it (--force) if the repeats are meant"
            )
        if not force and size > largest:
            raise ValueError(
                f"{self.path}: a plate of {size:,} wells is larger than the largest plate format ({largest:,} "
                f"wells); give a plate size (--plate-size) of at most {largest:,} (one plate per `next`), or force it "
                "(--force)"
            )
        replicates = 1
        if layout is not None:
            size = min(size, layout.compounds_per_plate)
            replicates = layout.replicates
        if path is not None:
            check_plate_path(path)  # before the plate is committed: a plate without its file would be in the lab
        with self._step("recording a new plate"):
            policy = self.policy
            if policy.done:
                raise CampaignError(
                    f"{self.algorithm} has finished (the stopping rule fired or the budget is spent); "
                    f"see `screenbai campaign status {self.path}` for the recommendation and "
                    f"`screenbai campaign export {self.path}` to write it out"
                )
            from .views.explain import why_chosen

            before = why_chosen(self, policy)  # what the policy knew before this plate
            arms = propose_wells(policy, size, replicates)
            if arms.size == 0:
                open_wells = self._con.execute(
                    "SELECT COUNT(*) FROM wells w LEFT JOIN outcomes o USING (plate_id, well) WHERE o.id IS NULL"
                ).fetchone()[0]
                # the empty proposal is not logged: _step drops the policy, rebuilt from the file
                raise CampaignError(
                    f"{self.algorithm} has nothing to propose until the outcomes of the {open_wells} open well(s) "
                    "are recorded (e.g. the end of an initialisation or of a GSE stage)"
                )
            n_plates = self._con.execute("SELECT COUNT(*) FROM plates").fetchone()[0]
            plate_id = f"P{n_plates + 1:03d}"
            detail: dict = {"plate_id": plate_id, "requested": size, "n_wells": int(arms.size)}
            if layout is not None:
                detail.update(replicates=replicates, layout=layout.to_dict())
            step = store.add_event(self._con, "plate", detail)
            if path is not None or file_follows:
                mark = {"plate_id": plate_id, "pid": os.getpid(), "host": socket.gethostname()}
                store.put_meta(self._con, _UNWRITTEN + plate_id, mark)
            self._con.execute(
                "INSERT INTO plates (plate_id, step, requested, created_at) VALUES (?, ?, ?, ?)",
                (plate_id, step, size, store.now()),
            )
            names = well_names(int(arms.size)) if layout is None else layout.place(int(arms.size) // replicates)
            self._con.executemany(
                "INSERT INTO wells (plate_id, well, position, arm) VALUES (?, ?, ?, ?)",
                ((plate_id, w, k, int(a)) for k, (w, a) in enumerate(zip(names, arms))),
            )
            if layout is not None:
                self._con.executemany(
                    "INSERT INTO controls (plate_id, well, kind) VALUES (?, ?, ?)",
                    [(plate_id, w, "positive") for w in layout.positive]
                    + [(plate_id, w, "negative") for w in layout.negative],
                )
            self._con.executemany(
                "INSERT INTO well_notes (plate_id, well, why) VALUES (?, ?, ?)",
                (
                    (plate_id, w, before(int(a), k, int(arms.size) // replicates))
                    for k, (w, a) in enumerate(zip(names, arms))
                ),
            )
            self._save_snapshot(step, plate=True)
        plate = self.plate(plate_id)
        if path is not None:
            plate = self.write_plate(plate_id, path)
        return plate

    def plate(self, plate_id: str) -> Plate:
        """The plate ``plate_id`` (p001 is P001, as ``record`` reads a plate id)."""
        plate_id = self.plate_id(plate_id)
        rows = self._con.execute(
            "SELECT well, arm FROM wells WHERE plate_id = ? ORDER BY position", (plate_id,)
        ).fetchall()
        arms = tuple(int(a) for _, a in rows)
        return Plate(
            plate_id,
            tuple(w for w, _ in rows),
            arms,
            tuple(self.compound_ids[a] for a in arms),
            tuple(self.smiles[a] for a in arms),
        )

    def plate_id(self, given: str) -> str:
        """A plate's id as stored, from the id as typed (any case); refused naming the campaign's plates."""
        ids = [r[0] for r in self._con.execute("SELECT plate_id FROM plates ORDER BY step")]
        found = {i.upper(): i for i in ids}.get(str(given).strip().upper())
        if found is None:
            known = (", ".join(ids) if len(ids) <= 6 else f"{ids[0]} .. {ids[-1]}") or "none yet"
            raise CampaignError(f"no plate {given!r} in {self.path} (plates: {known}); give the plate_id of its file")
        return found

    def write_plate(self, plate_id: str, path) -> Plate:
        """(Re)write the plate file of ``plate_id``: plate_id, well, compound_id, smiles, outcome, and
        (plates made with this version) role and why: the control wells, and which rule chose each well."""
        from .views.explain import plate_rows

        p = self.plate(plate_id)
        rows, extra = plate_rows(self, p)
        write_plate_file(path, plate_id, rows, extra)
        self.forget_unwritten(plate_id)
        return Plate(p.plate_id, p.wells, p.arms, p.compound_ids, p.smiles, Path(path))

    def interrupted_plate(self) -> str | None:
        """The first plate committed by a ``next`` that was killed before it wrote the plate's file (its mark is
        left, its process no longer runs on this machine, none of its wells recorded), else None.  A mark of a
        process still running (a ``next`` at the same time) or of another machine is left alone."""
        for key, mark in sorted(store.get_meta(self._con).items()):
            if not key.startswith(_UNWRITTEN) or mark.get("host") != socket.gethostname() or _running(mark["pid"]):
                continue
            plate_id = mark["plate_id"]
            if self.open_wells().get(plate_id, 0) == len(self.plate(plate_id).wells):
                return plate_id
            self.forget_unwritten(plate_id)  # outcomes recorded: the lab had the plate
        return None

    def forget_unwritten(self, plate_id: str) -> None:
        """Clear the mark of a plate without a file (its file is written, or it no longer matters)."""
        if self.readonly or store.get_meta(self._con).get(_UNWRITTEN + plate_id) is None:
            return
        with store.transaction(self._con):
            self._con.execute("DELETE FROM meta WHERE key = ?", (_UNWRITTEN + plate_id,))

    def _plate_map(self) -> _Plates:
        return _Plates(self)

    # ------------------------------------------------------------------ results
    def record(self, path, *, accept: bool = False, discard: bool = False, plate: str | None = None,
               outcome_column: str | None = None, replace: str | None = None, restart: bool = False) -> RecordSummary:
        """Validate a results file against the plates, then record it in one transaction.

        With a declared readout the values are raw readouts (kept as typed; the algorithm is told
        the hit or the value, see :mod:`~screenbai.campaign.lab.assay`); control wells are checked per
        plate (Z'), and a plate failing them is refused unless ``accept`` (its outcomes count) or
        ``discard`` (its compound wells count as failed and are tested again) is given.  ``plate`` is the plate of
        a file that names none: a plate reader's grid, or a list of wells without a plate_id column.
        ``outcome_column``: the column of outcomes where the header has several candidates (Signal and Result).
        ``replace``: a plate recorded from the wrong file, whose results this file replaces (it names that plate
        alone; refused once a later plate was proposed, unless ``restart``, which restarts the algorithm after it on
        every outcome recorded: :mod:`~screenbai.campaign.state.correction`).
        """
        from .library import file_sha256

        if accept and discard:
            raise ValueError("give one of --accept and --discard-plate, not both")
        if restart and replace is None:
            raise ValueError(
                "--restart goes with --replace PLATE (a plate recorded from the wrong file); to restart "
                f"the algorithm alone: `screenbai campaign restart {self.path}`"
            )
        path = Path(path)
        readout = self.readout
        with self._step(f"recording {path.name}"):  # validated against the file's latest state, under its lock
            # rolled back on error
            taken = None if replace is None else correction.take_back(self, replace, plate, restart)
            plates = self._plate_map()
            notes: list[str] = []
            outcomes = read_results(
                path,
                plates,
                binary=self.binary and readout is None,
                check=None if readout is None else readout.problem,
                layout_of=plates.layout,
                plate=plate if taken is None else taken["plate"],
                unusual=None if readout is None else readout.suspicion,
                notes=notes,
                outcome_column=outcome_column,
                column_unit=None if readout is None else readout.column_unit_problem,
                censor=censored.reader(readout, self.binary),  # "> 10000" where it settles hit or not
            )
            controls = [o for o in outcomes if o.arm < 0]
            compounds = [o for o in outcomes if o.arm >= 0]
            levels = None if readout is None or not readout.z_on_log10 else assay.earlier_control_levels(
                self._con, {o.plate_id for o in outcomes})  # a file in another unit: its controls all move
            qc = assay.check_controls(path, controls, readout, accept=accept, discard=discard,
                                      plates=assay.controls_of(self._con, plates, compounds), levels=levels)
            dropped = {p for p, (_, decision) in qc.items() if decision == "discarded"}
            told = [
                Outcome(
                    o.line,
                    o.plate_id,
                    o.well,
                    o.arm,
                    None
                    if o.value is None or o.plate_id in dropped
                    else (o.value if readout is None else readout.told(o.value, self.binary, o.censored)),
                )
                for o in compounds
            ]
            extra: dict = {"censored": censored.log_lines(path.name, compounds, readout) if readout else []}
            extra["replaces"] = None if taken is None else correction.replaced(taken, controls, compounds)
            summary = self._commit_outcomes(told, path.name, file_sha256(path), notes, extra, restart=restart)
            assay.save_readouts(self._con, summary.record_id, controls, compounds, qc)
            return RecordSummary(
                summary.record_id, summary.file, summary.n_outcomes, summary.n_failed, summary.plates, qc, tuple(notes),
                tuple(o.censored for o in compounds if o.censored is not None and o.plate_id not in dropped)
            )

    def _commit_outcomes(
        self, outcomes: list[Outcome], name: str, sha256: str, notes=(), extra=None, restart: bool = False
    ) -> RecordSummary:
        """Write the step and bring the policy up to date; called inside ``_step`` (which drops a
        half-updated policy).  The policy is that of the replay (``_after_record``): the state after
        the last plate told every outcome recorded since, whatever order the files came in; with ``restart``
        (``--replace --restart``), the algorithm restarted after the step on every outcome recorded."""
        policy = None if restart else self.policy
        told = self._policy_step != (store.get_snapshot(self._con, "plate") or (0,))[0]
        n_failed = sum(o.value is None for o in outcomes)
        plates = tuple(dict.fromkeys(o.plate_id for o in outcomes))
        step = store.add_event(
            self._con,
            "record",
            {
                "file": name,
                "sha256": sha256,
                "n_outcomes": len(outcomes) - n_failed,
                "n_failed": n_failed,
                "plates": list(plates),
                **({"suspicious": list(notes)} if notes else {}),  # unusual values kept as written (the log says so)
                **{k: v for k, v in (extra or {}).items() if v},  # censored cells; a plate's results replaced
            },
        )
        cur = self._con.execute(
            "INSERT INTO records (step, file, sha256, recorded_at) VALUES (?, ?, ?, ?)",
            (step, name, sha256, store.now()),
        )
        assert cur.lastrowid is not None  # an INSERT sets it
        record_id = int(cur.lastrowid)
        self._con.executemany(
            "INSERT INTO outcomes (record_id, plate_id, well, arm, value) VALUES (?, ?, ?, ?, ?)",
            ((record_id, o.plate_id, o.well, o.arm, o.value) for o in outcomes),
        )
        base = store.get_snapshot(self._con, "plate")
        if restart:  # a restart event logged after it, its snapshots saved
            self._save_history(step, correction.restart_after(self, step, ", ".join(plates)))
            return RecordSummary(record_id, name, len(outcomes) - n_failed, n_failed, plates)
        if base is None:  # no snapshot after the last plate (cannot happen after a plate): replay it all
            policy, _ = self._replay_now(False, None)
        else:
            policy = self._after_record(policy, base[0], base[1], told, step)
        self._policy = policy
        self._save_history(step, policy)
        self._save_snapshot(step)
        return RecordSummary(record_id, name, len(outcomes) - n_failed, n_failed, plates)

    def _history_row(self, step: int, policy) -> tuple:
        """(tests, leaders, finished, compounds in contention, certified epsilon) after the results
        file of log step ``step``, from the outcomes recorded up to it: the same live and in a replay."""
        from .views.status import progress_point

        res = policy.result()
        return (int(res.n_samples), [self.compound_ids[a] for a in res.recommendation], bool(policy.done),
                *(progress_point(self, policy, res, upto=step) if self.keep_progress else (None, None)))

    def _save_history(self, step: int, policy) -> None:
        n_tests, leaders, done, in_contention, certified = self._history_row(step, policy)
        self._con.execute(
            "INSERT INTO history (step, n_tests, leader, done, in_contention, certified_epsilon) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (step, n_tests, json.dumps(leaders), int(done), in_contention, certified),
        )

    # ------------------------------------------------------------------ read-only views
    def observations(self, upto: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """Per-arm (tests, sum of outcomes, sum of squared outcomes) and the number of failed wells
        (of the results files recorded at log steps <= ``upto``; None: all)."""
        n = np.zeros(self.K, dtype=np.int64)
        s = np.zeros(self.K)
        s2 = np.zeros(self.K)
        failed = 0
        upto_sql = "" if upto is None else "WHERE record_id IN (SELECT record_id FROM records WHERE step <= ?) "
        for arm, cnt, tot, tot2, nf in self._con.execute(
            "SELECT arm, COUNT(value), TOTAL(value), TOTAL(value * value), SUM(value IS NULL) "
            f"FROM outcomes {upto_sql}GROUP BY arm",
            () if upto is None else (int(upto),),
        ):
            n[arm], s[arm], s2[arm] = cnt, tot, tot2
            failed += int(nf)
        return n, s, s2, failed

    def open_wells(self) -> dict[str, int]:
        """Plate id -> number of wells without a recorded outcome (plates still in the lab)."""
        return {
            p: int(c)
            for p, c in self._con.execute(
                "SELECT w.plate_id, COUNT(*) FROM wells w JOIN plates p USING (plate_id) "
                "LEFT JOIN outcomes o USING (plate_id, well) WHERE o.id IS NULL GROUP BY w.plate_id ORDER BY p.step"
            )
        }

    def open_well_names(self, plate_id: str) -> list[tuple[str, str]]:
        """(well, compound id) of every well of ``plate_id`` without a recorded outcome, in well order."""
        return [
            (w, "control" if a < 0 else self.compound_ids[a])
            for w, a in self._con.execute(
                "SELECT w.well, w.arm FROM wells w LEFT JOIN outcomes o USING (plate_id, well) "
                "WHERE w.plate_id = ? AND o.id IS NULL ORDER BY w.position",
                (plate_id,),
            )
        ]

    def history(self) -> list[tuple[int, int, list[str], bool]]:
        return [
            (s, n, json.loads(l), bool(d))
            for s, n, l, d in self._con.execute("SELECT step, n_tests, leader, done FROM history ORDER BY step")
        ]

    def progress_history(self) -> list[dict]:
        """Per results file, in order: its log step, tests recorded, compounds still in contention and
        the certified epsilon then (None where not known: a file made before they were kept, until
        ``repair``, or nothing certified; inf: no answer certified yet)."""
        have = store.progress_columns(self._con)
        cols = [c if c in have else f"NULL AS {c}" for c in ("in_contention", "certified_epsilon")]
        return [
            {"step": s, "tests": n, "in_contention": c, "certified_epsilon": e}
            for s, n, c, e in self._con.execute(f"SELECT step, n_tests, {', '.join(cols)} FROM history ORDER BY step")
        ]

    def events(self) -> list[tuple[int, str, str, dict]]:
        return [
            (s, at, k, json.loads(d))
            for s, at, k, d in self._con.execute("SELECT step, at, kind, detail FROM events ORDER BY step")
        ]

    def same_features(self, arm: int) -> list[int]:
        """The other arms whose feature vector equals ``arm``'s (e.g. stereoisomers: Morgan
        fingerprints ignore stereochemistry), which no model of the features can tell apart."""
        same = np.flatnonzero((self.features == self.features[arm]).all(axis=1))
        return [int(b) for b in same if b != arm]

    def rejected(self) -> list[tuple]:
        return self._con.execute(
            "SELECT source_row, compound_id, smiles, reason, detail FROM rejected ORDER BY source_row"
        ).fetchall()

    def status(self):
        from .views.status import campaign_status

        return campaign_status(self)

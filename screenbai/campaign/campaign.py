"""The ``Campaign`` object: a real screen, plate by plate, kept in one SQLite file.

    camp = Campaign.create("cdk2.campaign", import_library("export.csv.gz"), "log-tas",
                           {"epsilon": 0.1, "delta": 0.05}, seed=1)
    plate = camp.next_plate(96, "P001.csv")     # the lab tests these wells
    camp.record("P001_results.csv")             # validated first; all or nothing
    print(camp.status().text())

The file is the only state.  The policy is rebuilt by replaying the log: every plate is proposed
again (and must equal the stored one: a determinism guard), and after each results file the
policy is the one right after the last plate, told every outcome recorded since that plate at
once, in plate order (plate, then well; failed wells then cancelled), and its stopping rule run.
So the state, the leader and the stopping decision depend on which outcomes are recorded, not on
how the lab split them into files nor on the order the files arrive (two plates in the lab
recorded either way round, a plate recorded in parts, one combined file).  Outcomes of plates
still in the lab when the stopping rule fired are kept in the file; the answer then takes them
in if the rule still holds with them (the same answer whatever the order), else stays as it was
(they are cancelled in the policy): a finished campaign never starts again.  (When the rule holds
on part of the outcomes and not on all of them, the answer given first stays: that one case
depends on the order.)  Snapshots of the policy's ``state_dict`` after the latest step and after
the latest plate are stored, with their SHA-256, in the same transaction as the step, as caches
of that replay; ``Campaign.open(..., use_snapshot=False)`` replays from the start instead, and
``Campaign.repair`` rebuilds them from the log.

``create`` builds the file under a temporary name in the same folder and renames it into place
once complete: a killed ``init`` leaves no campaign file, never half of one.  ``open`` checks the
SHA-256 of every stored array and snapshot (:func:`screenbai.campaign.store.check_damage`).
"""

from __future__ import annotations

import glob
import json
import os
import sqlite3
from collections.abc import Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import assay, store
from .armset import ArmSetPolicy, restart
from .assay import Readout
from .layout import PlateLayout
from .plates import FORMATS, check_plate_path, well_names, write_plate_file
from .results import Outcome, WellInfo, read_results

OUTCOMES = ("binary", "continuous")
#: the algorithm a campaign runs when none is named, per outcome kind: the delta-correct setting with the
#: fewest tests measured (docs/lower_bound.md: block Track-and-Stop, logistic for 0/1 outcomes, linear
#: for a continuous readout, whose guarantee then needs the readout's noise scale --param sigma)
DEFAULT_ALGORITHM = {"binary": "log-tas", "continuous": "lin-tas"}


def default_algorithm(outcome: str) -> str:
    """The algorithm of :data:`DEFAULT_ALGORITHM` for an outcome kind (binary or continuous)."""
    if outcome not in DEFAULT_ALGORITHM:
        raise ValueError(f"outcome must be one of {OUTCOMES}; got {outcome!r}")
    return DEFAULT_ALGORITHM[outcome]
#: the log events that replay follows: plates proposed, results recorded, changes of the compound set
REPLAYED = "('plate', 'record', 'add', 'withdraw')"


class CampaignError(RuntimeError):
    """An action that the campaign's state does not allow (nothing to propose, finished, ...)."""


class ReplayMismatch(CampaignError):
    """Replaying the log does not reproduce a stored plate (the algorithm or its code changed)."""


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


# ------------------------------------------------------------------- policy protocol adapters
def _propose(policy, n: int, replicates: int = 1) -> np.ndarray:
    """The arms of a plate: ``n`` proposed, each in ``replicates`` wells (all once, then again, ...)."""
    arms = np.asarray(policy.propose(int(n)), dtype=np.int64).reshape(-1)
    if replicates > 1 and arms.size:
        policy.fly(np.tile(arms, replicates - 1))
        arms = np.tile(arms, replicates)
    return arms


def _tell(policy, arms: np.ndarray, values: np.ndarray) -> None:
    if arms.size:
        policy.tell(arms, values)


def _cancel(policy, arms: np.ndarray) -> None:
    if arms.size:
        policy.cancel(arms)


# ------------------------------------------------------------------- creating the file atomically
def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _publish(tmp: Path, path: Path) -> None:
    """Put the complete file ``tmp`` in place as ``path``, atomically and without replacing a file
    created meanwhile; then make the rename itself durable (fsync of the folder)."""
    try:
        os.link(tmp, path)  # fails if path exists (os.replace would silently replace it)
    except FileExistsError:
        raise store.CampaignFileError(
            f"{path} already exists (created while this init ran); choose another campaign file or delete it first"
        ) from None
    except OSError:  # a file system without hard links
        if path.exists():
            raise store.CampaignFileError(f"{path} already exists; choose another campaign file") from None
        os.rename(tmp, path)
    else:
        os.unlink(tmp)
    try:
        _fsync(path.parent)
    except OSError:  # folders cannot be opened for fsync on some systems (Windows)
        pass


def _remove_stale_builds(path: Path) -> None:
    """Remove the temporary files of earlier ``create`` runs for ``path`` that were killed."""
    if os.name != "posix":  # os.kill(pid, 0) asks whether a process lives only on POSIX (Windows ends it)
        return
    for tmp in path.parent.glob(f".{glob.escape(path.name)}.*.init*"):
        pid = tmp.name[len(path.name) + 2 :].split(".", 1)[0]
        if not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:  # that init is gone: its file is debris
            tmp.unlink(missing_ok=True)
        except OSError:  # alive (another user's), or signals not supported: leave it
            pass


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

    def __contains__(self, plate_id) -> bool:
        return plate_id in self._known

    def __iter__(self):
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)


def check_settings(algorithm: str, params: dict, seed: int, outcome: str):
    """Check a campaign's algorithm, parameter values, seed and outcome kind without the library
    (so that ``init`` refuses a typo before featurizing); returns the registry entry."""
    from screenbai.bandits.core import registry
    from screenbai.bandits.core.params import check

    try:
        entry = registry.get(algorithm)
    except KeyError as exc:
        raise ValueError(exc.args[0]) from None  # its message names the registered algorithms
    oracle = sorted(k for k, v in {**entry.defaults, **params}.items() if isinstance(v, str) and v == "oracle")
    if oracle:
        raise ValueError(
            f"{entry.name}: parameter(s) {', '.join(oracle)} = 'oracle' need the true cure rates, which a real "
            "campaign does not know; give a value with --param (see `screenbai algorithms`)"
        )
    check(entry.cls, {**entry.defaults, **params})
    if outcome not in OUTCOMES:
        raise ValueError(f"outcome must be one of {OUTCOMES}; got {outcome!r}")
    if outcome == "continuous" and getattr(entry.cls, "binary_rewards", False):
        raise ValueError(f"{entry.name} models binary (0/1) outcomes; use --outcome binary or a linear algorithm")
    if int(seed) < 0:
        raise ValueError(f"the seed must be a whole number >= 0; got {seed}")
    return entry


class Campaign:
    """One campaign file: library, algorithm, plates, outcomes and the log (see module doc)."""

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

    def _load_compounds(self) -> None:
        rows = self._con.execute("SELECT arm, compound_id, smiles FROM compounds ORDER BY arm").fetchall()
        self.compound_ids = [r[1] for r in rows]
        self.smiles = [r[2] for r in rows]
        self._arm_of = {cid: arm for arm, cid, _ in rows}
        self.features = store.get_array(self._con, "features")

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
    ) -> Campaign:
        """Create a campaign file for ``library`` (a :class:`~screenbai.campaign.library.Library`)."""
        import screenbai
        from screenbai.bandits.core import registry
        from screenbai.bandits.core.params import unnamed_defaults
        from screenbai.bandits.core.policy import encode_state

        params = dict(params or {})
        entry = check_settings(algorithm, params, seed, outcome)
        registry.make_policy(entry.name, library.features, rng=int(seed), **params)  # what depends on the library
        path = Path(path)
        if path.exists():
            raise store.CampaignFileError(f"{path} already exists; choose another campaign file or delete it first")
        if not path.parent.is_dir():
            raise store.CampaignFileError(
                f"cannot create {path}: folder {path.parent} does not exist; create it first"
            )
        _remove_stale_builds(path)
        # built under a temporary name beside the target and renamed into place once complete: a killed
        # init leaves no campaign file (a re-run then works), never an empty or half-filled one
        tmp = path.with_name(f".{path.name}.{os.getpid()}.init")
        try:
            con = store.connect(tmp, create=True, durable=False)  # durability comes from the fsync below
            try:
                store.create_schema(con)
                with store.transaction(con):
                    assay.ensure_schema(con)
                    if layout is not None:
                        store.put_meta(con, "layout", layout.to_dict())
                    if readout is not None:
                        store.put_meta(con, "readout", readout.to_dict())
                    # the L1 ratio rule's LPs from a cold start: a restored policy replays no chain of
                    # earlier LPs before its next one (screenbai.bandits.numerics.rules.L1Design)
                    store.put_meta(con, "lp_start", "cold")
                    for key, value in {
                        "algorithm": entry.name,
                        "params": params,
                        # a later release may change a default: a screen goes on with the ones it started with
                        "defaults": encode_state(unnamed_defaults(entry.cls, params)),
                        "seed": int(seed),
                        "outcome": outcome,
                        "featurizer": library.featurizer,
                        "provenance": library.provenance,
                        "note": note,
                        "screenbai_version": screenbai.__version__,
                        "created_at": store.now(),
                    }.items():
                        store.put_meta(con, key, value)
                    c = library.compounds
                    con.executemany(
                        "INSERT INTO compounds (arm, compound_id, smiles, input_smiles, source_row) "
                        "VALUES (?, ?, ?, ?, ?)",
                        zip(
                            range(len(c)),
                            c["compound_id"],
                            c["smiles"],
                            c["input_smiles"],
                            (int(r) for r in c["source_row"]),
                        ),
                    )
                    store.put_array(con, "features", library.features)
                    for name, arr in library.arrays.items():
                        store.put_array(con, name, np.asarray(arr))
                    r = library.rejected
                    con.executemany(
                        "INSERT INTO rejected (source_row, compound_id, smiles, reason, detail) VALUES (?, ?, ?, ?, ?)",
                        (
                            (int(a), b, s, reason, detail)
                            for a, b, s, reason, detail in zip(
                                r["source_row"], r["compound_id"], r["smiles"], r["reason"], r["detail"]
                            )
                        ),
                    )
                    store.add_event(
                        con,
                        "init",
                        {
                            "algorithm": entry.name,
                            "params": params,
                            "seed": int(seed),
                            "n_compounds": len(c),
                            "n_rejected": len(r),
                            **({} if layout is None else {"layout": layout.to_dict()}),
                            **({} if readout is None else {"readout": readout.to_dict()}),
                        },
                    )
            finally:
                con.close()  # checkpoints the WAL into the file and removes it
            _fsync(tmp)
            _publish(tmp, path)
        except BaseException as exc:
            for extra in ("", "-wal", "-shm", "-journal"):
                Path(str(tmp) + extra).unlink(missing_ok=True)
            if isinstance(exc, (sqlite3.Error, OSError)):
                raise store.file_error(exc, path, "creating it") from exc
            raise
        return cls(path, store.connect(path, durable=durable), verify=False)

    @classmethod
    def open(cls, path, *, use_snapshot: bool = True) -> Campaign:
        """Open a campaign file; its arrays and snapshots are checked against their SHA-256 first."""
        return cls(Path(path), store.connect(path), use_snapshot=use_snapshot)

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
                    False, lambda step, pol: history.append((step, *camp._leaders(pol))), on_plate=on_plate
                )
                con.execute("DELETE FROM snapshots")
                con.execute("DELETE FROM history")
                if plate_state:
                    store.put_snapshot(con, "plate", *plate_state)
                if last:
                    store.put_snapshot(con, "latest", last, store.encode_state(policy.state_dict()))
                con.executemany(
                    "INSERT INTO history (step, n_tests, leader, done) VALUES (?, ?, ?, ?)",
                    ((s, n, json.dumps(lead), int(done)) for s, n, lead, done in history),
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

    # ------------------------------------------------------------------ the policy, by replay
    @property
    def K(self) -> int:
        return len(self.compound_ids)

    @property
    def algorithm(self) -> str:
        return self.meta["algorithm"]

    @property
    def binary(self) -> bool:
        return self.meta["outcome"] == "binary"

    def _new_policy(self, step: int = 0) -> ArmSetPolicy:
        """The algorithm, fresh, on the compounds active after log step ``step`` (all of the
        library until compounds are added or withdrawn; see :mod:`~screenbai.campaign.armset`)."""
        from screenbai.bandits import make_policy
        from screenbai.bandits.core import registry
        from screenbai.bandits.core.params import keep_saved_defaults
        from screenbai.bandits.core.policy import decode_state

        params = dict(self.meta["params"])
        if "defaults" in self.meta:  # campaigns made before screenbai stored them have none to keep
            cls = registry.get(self.algorithm).cls
            params.update(keep_saved_defaults(cls, decode_state(self.meta["defaults"]), str(self.path)))
        active, n_total, change = self._active_at(step)
        # after a change the algorithm restarts with its own stream, drawn from the seed and the change's step
        rng = int(self.meta["seed"]) if change == 0 else np.random.SeedSequence([int(self.meta["seed"]), change])
        inner = make_policy(self.algorithm, self.features[active], rng=rng, **params)
        if self.meta.get("lp_start") == "cold":  # campaigns made before it keep the warm-start chain
            from screenbai.bandits.numerics.rules import solve_cold

            solve_cold(inner)
        return ArmSetPolicy(inner, active, n_total)

    def _active_at(self, step: int) -> tuple[np.ndarray, int, int]:
        """(active arms, compounds in the file, step of the last change) after log step ``step``
        (0: at init; the latest change at or before ``step`` otherwise)."""
        n_total = int(self._con.execute("SELECT COUNT(*) FROM compounds").fetchone()[0])
        changes = self._con.execute(
            "SELECT step, kind, detail FROM events WHERE kind IN ('add', 'withdraw') AND step <= ? ORDER BY step",
            (step if step else 0,),
        ).fetchall()
        if not changes:
            init = self._con.execute("SELECT detail FROM events WHERE kind = 'init'").fetchone()
            k0 = int(json.loads(init[0])["n_compounds"]) if init else n_total
            return np.arange(k0, dtype=np.int64), k0, 0
        last = changes[-1]
        d = json.loads(last[2])
        return np.asarray(d["active"], dtype=np.int64), int(d["n_total"]), int(last[0])

    def _restart_at(self, step: int) -> ArmSetPolicy:
        """The policy right after the change logged at ``step``: the algorithm on the new active set,
        told every outcome recorded before it, the wells then in the lab in flight."""
        recorded = [(a, v) for a, v in self._outcomes(0, step - 1) if v is not None]  # in plate order
        in_flight = [
            a
            for (a,) in self._con.execute(
                "SELECT w.arm FROM wells w JOIN plates p USING (plate_id) WHERE p.step < ? AND NOT EXISTS "
                "(SELECT 1 FROM outcomes o JOIN records r USING (record_id) "
                " WHERE o.plate_id = w.plate_id AND o.well = w.well AND r.step < ?) ORDER BY p.step, w.position",
                (step, step),
            )
        ]
        fresh = self._new_policy(step)
        return restart(fresh.inner, fresh.arm_set, fresh.n_arms_total, recorded, in_flight)

    @property
    def policy(self):
        """The policy after every recorded step (rebuilt lazily from the file)."""
        if self._policy is None:
            self._policy, self._policy_step = self._replay(use_snapshot=self.use_snapshot)
        return self._policy

    def replay(self, *, use_snapshot: bool = True, on_record=None):
        """Rebuild the policy from the log (from the snapshot when allowed and present).

        ``on_record(step, policy)`` is called after each replayed results file.
        """
        return self._replay(use_snapshot=use_snapshot, on_record=on_record)[0]

    def _replay(self, *, use_snapshot: bool, on_record=None):
        """(policy, last step replayed); read in one transaction, so a concurrent writer is seen whole or not at all."""
        if self._con.in_transaction:
            return self._replay_now(use_snapshot, on_record)
        try:
            self._con.execute("BEGIN")
            try:
                return self._replay_now(use_snapshot, on_record)
            finally:
                self._con.execute("COMMIT")
        except sqlite3.Error as exc:
            raise store.file_error(exc, self.path, "reading it") from None

    def _last_step(self) -> int:
        row = self._con.execute(f"SELECT MAX(step) FROM events WHERE kind IN {REPLAYED}").fetchone()
        return int(row[0] or 0)

    def _loaded(self, state: str | dict | None, step: int = 0):
        """A policy with ``state`` (a ``state_dict``, or a stored snapshot's text, of log step ``step``;
        None: the fresh policy)."""
        policy = self._new_policy(step)
        if state is not None:
            policy.load_state_dict(store.decode_state(state) if isinstance(state, str) else state)
        return policy

    def _outcomes(self, after: int, upto: int) -> list[tuple[int, float | None]]:
        """(arm, value) of the results files recorded at steps after < step <= upto, in plate order
        (the plate's step, then the well's position): the same list whatever files brought them."""
        return self._con.execute(
            "SELECT o.arm, o.value FROM outcomes o JOIN records r USING (record_id) "
            "JOIN wells w USING (plate_id, well) JOIN plates p USING (plate_id) "
            "WHERE r.step > ? AND r.step <= ? ORDER BY p.step, w.position",
            (after, upto),
        ).fetchall()

    def _replay_now(self, use_snapshot: bool, on_record, on_plate=None):
        """Replay the log (see the module doc) from the latest snapshot when it is the last step, else
        from the snapshot after the last plate, else (or ``use_snapshot=False``) from the start.

        After a results file: the policy right after the last plate (``base``), told every outcome
        recorded since that plate in plate order (see ``_after_record``, also for a policy that had
        already finished).  ``on_record(step, policy)`` / ``on_plate(step, policy)`` are called after
        each replayed results file / plate."""
        base: str | dict | None = None  # the state after the last plate (None: the fresh policy, before any plate)
        base_step = 0  # and its step
        if use_snapshot:
            latest = store.get_snapshot(self._con, "latest")
            if latest is not None and latest[0] == self._last_step():
                return self._loaded(latest[1], latest[0]), latest[0]
            snap = store.get_snapshot(self._con, "plate")
            if snap is not None:
                base_step, base = snap
        policy = self._loaded(base, base_step)
        events = self._con.execute(
            f"SELECT step, kind, detail FROM events WHERE kind IN {REPLAYED} AND step > ? ORDER BY step",
            (base_step,),
        ).fetchall()
        told = False  # whether the policy in hand has taken outcomes since the last plate
        for step, kind, detail in events:
            if kind in ("add", "withdraw"):
                # the algorithm restarts on the new set of compounds: the new base, as after a plate
                policy = self._restart_at(step)
                base_step, base, told = step, policy.state_dict(), False
                if on_plate is not None:  # a new base, as a plate is (repair stores it as the 'plate' snapshot)
                    on_plate(step, policy)
            elif kind == "plate":
                d = json.loads(detail)
                arms = _propose(policy, d["requested"], d.get("replicates", 1))
                stored = np.asarray(
                    [a for (a,) in self._con.execute(
                        "SELECT arm FROM wells WHERE plate_id = ? ORDER BY position", (d["plate_id"],)
                    )],
                    dtype=np.int64,
                )
                if arms.shape != stored.shape or (arms != stored).any():
                    raise ReplayMismatch(
                        f"{self.path}: replaying the log proposes other compounds for plate {d['plate_id']} than "
                        f"the stored ones (first arms {arms[:5].tolist()} vs {stored[:5].tolist()}); the algorithm "
                        f"{self.algorithm} behaves differently in this screenbai version "
                        f"({self.meta.get('screenbai_version')} made the campaign)"
                    )
                base_step, base, told = step, policy.state_dict(), False
                if on_plate is not None:
                    on_plate(step, policy)
            else:
                policy = self._after_record(policy, base_step, base, told, step)
                told = True
                self._leaders(policy)  # as the live record does (a policy's result() may draw tie-breaks)
                if on_record is not None:
                    on_record(step, policy)
        return policy, (int(events[-1][0]) if events else base_step)

    def _after_record(self, policy, base_step: int, base: str | dict | None, told: bool, step: int):
        """The policy after the results file recorded at ``step`` (see ``_replay_now``); ``policy`` is the one
        before it, ``base`` the state right after the last plate (step ``base_step``), ``told`` whether
        ``policy`` has taken outcomes since.

        The state after the last plate told every outcome recorded since, in plate order: the same
        whatever order the files came in.  Once the stopping rule has fired, it is kept only if the
        rule still holds with the new outcomes (its confidence bounds hold at every time, so the answer
        with more outcomes is as sound); otherwise the answer given stays, the file's wells are cancelled.
        """
        since = self._outcomes(base_step, step)
        if not policy.done:
            if told:
                policy = self._loaded(base, base_step)
            self._apply_record(policy, since)
            return policy
        again = self._loaded(base, base_step)
        self._apply_record(again, since)
        if again.done:
            return again
        _cancel(policy, np.asarray([a for a, _ in self._outcomes(step - 1, step)], dtype=np.int64))
        return policy

    @staticmethod
    def _apply_record(policy, rows) -> None:
        """Tell outcomes (in the given order), cancel the failed wells, then run the stopping rule on
        every recorded outcome whatever is still in the lab (``Policy.recheck``), so that ``done`` and
        the leader follow every recorded file.  A finished policy's answer no longer changes: it
        cancels them all (plates in the lab when the rule fired)."""
        if policy.done:
            _cancel(policy, np.asarray([a for a, _ in rows], dtype=np.int64))
            return
        ok = [(a, v) for a, v in rows if v is not None]
        failed = np.asarray([a for a, v in rows if v is None], dtype=np.int64)
        _tell(policy, np.asarray([a for a, _ in ok], dtype=np.int64), np.asarray([v for _, v in ok], dtype=float))
        _cancel(policy, failed)
        policy.recheck()

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

    def _save_snapshot(self, step: int, *, plate: bool = False) -> None:
        """The policy's state after ``step`` (also as the state after the last plate, for a plate)."""
        assert self._policy is not None  # saved right after the policy took a step
        state = store.encode_state(self._policy.state_dict())
        store.put_snapshot(self._con, "latest", step, state)
        if plate:
            store.put_snapshot(self._con, "plate", step, state)
        self._policy_step = step

    # ------------------------------------------------------------------ plates
    def next_plate(self, size: int | None = None, path=None, *, force: bool = False) -> Plate:
        """Propose up to ``size`` wells, record the plate as pending and write its file to ``path``.

        With a plate layout (``init --plate-format``), ``size`` caps the compounds on the plate
        (None: as many as the layout holds) and the plate also has its control wells.
        The plate is committed first, then the file is written (atomically): after a crash in
        between, ``write_plate`` writes the file of the pending plate again.  A plate larger than the
        library or than the largest plate format is refused unless ``force`` (a typo such as 100 000
        wells for 33 compounds would commit a plate the lab cannot run).
        """
        layout = self.layout
        if size is None:
            if layout is None:
                raise ValueError("give a plate size (this campaign has no plate format; see `campaign format`)")
            size = min(layout.compounds_per_plate, self.K)  # a full plate (a small library: each compound once)
        size = int(size)
        if size < 1:
            raise ValueError(f"plate size must be at least 1; got {size}")
        largest = max(rows * cols for rows, cols in FORMATS)
        if not force and size > self.K:
            raise ValueError(
                f"{self.path}: a plate of {size:,} wells for a library of {self.K:,} compounds (each compound "
                f"{size / self.K:.1f} times on one plate on average); give a plate size (--plate-size) of at most "
                f"{self.K:,}, or force it (--force) if the repeats are meant"
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
                    "see `screenbai campaign status` for the recommendation"
                )
            from .explain import why_chosen

            before = why_chosen(self, policy)  # what the policy knew before this plate
            arms = _propose(policy, size, replicates)
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
        rows = self._con.execute(
            "SELECT well, arm FROM wells WHERE plate_id = ? ORDER BY position", (plate_id,)
        ).fetchall()
        if not rows:
            raise CampaignError(f"no plate {plate_id!r} in {self.path}")
        arms = tuple(int(a) for _, a in rows)
        return Plate(
            plate_id,
            tuple(w for w, _ in rows),
            arms,
            tuple(self.compound_ids[a] for a in arms),
            tuple(self.smiles[a] for a in arms),
        )

    def write_plate(self, plate_id: str, path) -> Plate:
        """(Re)write the plate file of ``plate_id``: plate_id, well, compound_id, smiles, outcome, and
        (plates made with this version) role and why: the control wells, and which rule chose each well."""
        from .explain import plate_rows

        p = self.plate(plate_id)
        rows, extra = plate_rows(self, p)
        write_plate_file(path, plate_id, rows, extra)
        return Plate(p.plate_id, p.wells, p.arms, p.compound_ids, p.smiles, Path(path))

    def _plate_map(self) -> _Plates:
        return _Plates(self)

    # ------------------------------------------------------------------ results
    def record(self, path, *, accept: bool = False, discard: bool = False) -> RecordSummary:
        """Validate a results file against the plates, then record it in one transaction.

        With a declared readout the values are raw readouts (kept as typed; the algorithm is told
        the hit or the value, see :mod:`~screenbai.campaign.assay`); control wells are checked per
        plate (Z'), and a plate failing them is refused unless ``accept`` (its outcomes count) or
        ``discard`` (its compound wells count as failed and are tested again) is given.
        """
        from .library import file_sha256

        if accept and discard:
            raise ValueError("give one of --accept and --discard-plate, not both")
        path = Path(path)
        readout = self.readout
        with self._step(f"recording {path.name}"):  # validated against the file's latest state, under its lock
            outcomes = read_results(path, self._plate_map(), binary=self.binary and readout is None)
            controls = [o for o in outcomes if o.arm < 0]
            compounds = [o for o in outcomes if o.arm >= 0]
            qc = assay.check_controls(path, controls, readout, accept=accept, discard=discard)
            dropped = {p for p, (_, decision) in qc.items() if decision == "discarded"}
            told = [
                Outcome(
                    o.line,
                    o.plate_id,
                    o.well,
                    o.arm,
                    None
                    if o.value is None or o.plate_id in dropped
                    else (o.value if readout is None else readout.told(o.value, self.binary)),
                )
                for o in compounds
            ]
            summary = self._commit_outcomes(told, path.name, file_sha256(path))
            assay.save_readouts(self._con, summary.record_id, controls, compounds, qc)
            return RecordSummary(
                summary.record_id, summary.file, summary.n_outcomes, summary.n_failed, summary.plates, qc
            )

    def _commit_outcomes(self, outcomes: list[Outcome], name: str, sha256: str) -> RecordSummary:
        """Write the step and bring the policy up to date; called inside ``_step`` (which drops a
        half-updated policy).  The policy is that of the replay (``_after_record``): the state after
        the last plate told every outcome recorded since, whatever order the files came in."""
        policy = self.policy
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
        if base is None:  # no snapshot after the last plate (cannot happen after a plate): replay it all
            policy, _ = self._replay_now(False, None)
        else:
            policy = self._after_record(policy, base[0], base[1], told, step)
        self._policy = policy
        self._save_history(step, policy)
        self._save_snapshot(step)
        return RecordSummary(record_id, name, len(outcomes) - n_failed, n_failed, plates)

    def _leaders(self, policy) -> tuple[int, list[str], bool]:
        res = policy.result()
        return int(res.n_samples), [self.compound_ids[a] for a in res.recommendation], bool(policy.done)

    def _save_history(self, step: int, policy) -> None:
        n_tests, leaders, done = self._leaders(policy)
        self._con.execute(
            "INSERT INTO history (step, n_tests, leader, done) VALUES (?, ?, ?, ?)",
            (step, n_tests, json.dumps(leaders), int(done)),
        )

    # ------------------------------------------------------------------ read-only views
    def observations(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """Per-arm (tests, sum of outcomes, sum of squared outcomes) and the number of failed wells."""
        n = np.zeros(self.K, dtype=np.int64)
        s = np.zeros(self.K)
        s2 = np.zeros(self.K)
        failed = 0
        for arm, cnt, tot, tot2, nf in self._con.execute(
            "SELECT arm, COUNT(value), TOTAL(value), TOTAL(value * value), SUM(value IS NULL) "
            "FROM outcomes GROUP BY arm"
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

    def history(self) -> list[tuple[int, int, list[str], bool]]:
        return [
            (s, n, json.loads(l), bool(d))
            for s, n, l, d in self._con.execute("SELECT step, n_tests, leader, done FROM history ORDER BY step")
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
        from .status import campaign_status

        return campaign_status(self)

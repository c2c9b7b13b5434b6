"""The campaign's policy, rebuilt by replaying the log of its file.

The file is the only state.  In the replay of its log every plate is proposed
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
of that replay, with the fingerprint of the code that wrote them: where another code wrote them (an
upgrade), the next open replays from the start, so an algorithm that now proposes other plates is
named (``ReplayMismatch``) instead of carrying on from a state this code would not have reached.
``Campaign.open(..., use_snapshot=False)`` replays from the start instead, and ``Campaign.repair``
rebuilds them from the log.

:class:`PolicyReplay` holds that replay; :class:`~screenbai.campaign.Campaign` inherits it and
supplies the open file (``_con``), its metadata, features and compound ids.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import time
from pathlib import Path

import numpy as np

from screenbai.bandits.core.state import StateVersionError

from . import store
from .armset import ArmSetPolicy, restart

#: the log events that replay follows: plates proposed, results recorded, changes of the compound set
REPLAYED = "('plate', 'record', 'add', 'withdraw', 'restart')"

#: from this many active compounds a replay after a code change says each step as it starts (``_replay_progress``):
#: at K = 1.58 M log-tas's second plate takes 85 s to propose again, its stopping certificate 35 s
REPLAY_STEPS_FROM_K = 50_000


#: the first line of a replay from the start (``_replay_progress``), by what asked for it; {counts}: its steps
FROM_START = {
    "checked": "the campaign's saved state was written by other algorithm code: replaying its log once ({counts}) "
    "to check this screenbai proposes the same plates ...",
    "older": "the campaign's saved state was written by an older screenbai: replaying its log from the start "
    "({counts}) ...",
    "asked": "replaying its log from the start, not from its saved state, as asked ({counts}) ...",
    "repair": "repairing it: replaying its log from the start ({counts}) to rebuild its saved state ...",
}


class ReplayMismatch(store.CampaignError):
    """Replaying the log does not reproduce a stored plate (the algorithm or its code changed)."""


def propose_wells(policy, n: int, replicates: int = 1) -> np.ndarray:
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


class PolicyReplay:
    """The policy after every logged step, rebuilt from the file (see the module doc)."""

    # supplied by the campaign that inherits this replay
    path: Path
    meta: dict
    features: np.ndarray
    compound_ids: list[str]
    use_snapshot: bool
    _con: sqlite3.Connection
    _policy: ArmSetPolicy | None
    _policy_step: int  # the last plate/record step the in-memory policy has taken

    @property
    def algorithm(self) -> str:
        return self.meta["algorithm"]

    def _new_policy(self, step: int = 0) -> ArmSetPolicy:
        """The algorithm, fresh, on the compounds active after log step ``step`` (all of the
        library until compounds are added or withdrawn; see :mod:`~screenbai.campaign.state.armset`)."""
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
        inner = make_policy(self.algorithm, self._features_of(active), rng=rng, **params)
        if self.meta.get("lp_start") == "cold":  # campaigns made before it keep the warm-start chain
            from screenbai.bandits.numerics.rules import solve_cold

            solve_cold(inner)
        return ArmSetPolicy(inner, active, n_total)

    def _features_of(self, active: np.ndarray) -> np.ndarray:
        """The features of the ``active`` arms: every arm in order (no compound added or withdrawn) is the campaign's
        own array, read-only, not a copy (266 MB at K = 1.58 M, d = 21; a policy that wrote into its features would
        fail there loudly instead of changing the campaign's)."""
        if active.size == len(self.features) and np.array_equal(active, np.arange(active.size)):
            view = self.features.view()
            view.flags.writeable = False
            return view
        return self.features[active]

    def _active_at(self, step: int) -> tuple[np.ndarray, int, int]:
        """(active arms, compounds in the file, step of the last change) after log step ``step``
        (0: at init; the latest change at or before ``step`` otherwise)."""
        n_total = int(self._con.execute("SELECT COUNT(*) FROM compounds").fetchone()[0])
        changes = self._con.execute(
            "SELECT step, kind, detail FROM events WHERE kind IN ('add', 'withdraw', 'restart') AND step <= ? "
            "ORDER BY step",
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

    def _replay_now(self, use_snapshot: bool, on_record, on_plate=None, why: str = ""):
        """Replay the log (see the module doc) from the latest snapshot when it is the last step, else
        from the snapshot after the last plate, else (or ``use_snapshot=False``) from the start.

        After a results file: the policy right after the last plate (``base``), told every outcome
        recorded since that plate in plate order (see ``_after_record``, also for a policy that had
        already finished).  ``on_record(step, policy)`` / ``on_plate(step, policy)`` are called after
        each replayed results file / plate.  Snapshots written by another screenbai version (other state
        fields) are passed over: the log is then replayed from the start.  ``why``: what a replay from the start
        says first (:data:`FROM_START`)."""
        if use_snapshot:
            try:
                return self._replay_from_snapshots(on_record, on_plate)
            except StateVersionError:  # snapshots of an older screenbai: the log replayed from the start
                return self._replay_from_start(on_record, on_plate, FROM_START["older"])
        return self._replay_from_start(on_record, on_plate, why or FROM_START["asked"])

    def _replay_from_start(self, on_record, on_plate, why: str):
        """The log replayed from the start, saying so on stderr as it goes (``_replay_progress``, ``why``: its first
        line); every replay from the start does, whatever asked for it (repair, ``use_snapshot=False``, an upgrade)."""
        say = self._replay_progress(why)
        policy, last = self._replay_from(None, 0, on_record, on_plate, say)
        say(None, "")
        return policy, last

    def _replay_from_snapshots(self, on_record, on_plate):
        """``_replay_now`` from the latest snapshot when it is the last step, else from the plate snapshot;
        from the start where another code wrote them (``_replay_checked``)."""
        if not store.snapshots_current(self._con):
            return self._replay_checked(on_record, on_plate)
        base: str | dict | None = None  # the state after the last plate (None: the fresh policy, before any plate)
        base_step = 0  # and its step
        latest = store.get_snapshot(self._con, "latest")
        if latest is not None and latest[0] == self._last_step():
            return self._loaded(latest[1], latest[0]), latest[0]
        snap = store.get_snapshot(self._con, "plate")
        if snap is not None:
            base_step, base = snap
        return self._replay_from(base, base_step, on_record, on_plate)

    def _replay_checked(self, on_record, on_plate):
        """The log replayed from the start because the snapshots were written by another code (an upgrade, or a
        file made before the code was fingerprinted): each plate proposed again must equal the stored one, else
        ``ReplayMismatch`` says what to do.  Once it does, the snapshots are stored again for this code, so the
        check costs one replay; a file that cannot be written now (read-only, another writer) is checked again
        at the next open."""
        plate: list = []

        def at_plate(step, policy):
            plate[:] = [step, policy.state_dict()]
            if on_plate is not None:
                on_plate(step, policy)

        policy, last = self._replay_from_start(on_record, at_plate, FROM_START["checked"])
        try:
            if plate:
                store.put_snapshot(self._con, "plate", plate[0], store.encode_state(plate[1]))
            if last:
                store.put_snapshot(self._con, "latest", last, store.encode_state(policy.state_dict()))
        except sqlite3.OperationalError:
            pass
        return policy, last

    def _replay_progress(self, why: str):
        """What a replay from the start does, on stderr: `next` or `status` on a campaign of 1.58 M compounds said
        nothing for the two minutes of its replay after a code change.  A line as it starts (``why``, its
        ``{counts}`` the plates and results files to replay); from ``REPLAY_STEPS_FROM_K`` compounds one as each
        plate or results file starts (its own step can take a minute); one when it is done.  Returns
        ``say(kind, detail)``: before the log step of that kind and detail; ``say(None, "")``: done."""
        started = time.monotonic()
        rows = self._con.execute(
            "SELECT kind FROM events WHERE kind IN ('plate', 'record') AND step >= "
            "(SELECT COALESCE(MAX(step), 0) FROM events WHERE kind = 'restart')"
        ).fetchall()
        n = {kind: sum(k == kind for (k,) in rows) for kind in ("plate", "record")}
        each = len(self.features) >= REPLAY_STEPS_FROM_K
        done = {"plate": 0, "record": 0}

        def line(what: str) -> None:
            if n["plate"] or n["record"]:  # a log with nothing to replay (a new campaign) says nothing
                print(f"{self.path}: {what} (at {time.monotonic() - started:.0f} s)", file=sys.stderr, flush=True)

        line(why.format(counts=f"{n['plate']} plate(s), {n['record']} results file(s)"))

        def say(kind: str | None, detail: str) -> None:
            if kind is None:
                line(f"replayed: this screenbai proposes the same {done['plate']} plate(s)")
            elif kind in done:
                done[kind] += 1
                if each:
                    d = json.loads(detail)
                    what = f"plate {d['plate_id']}" if kind == "plate" else f"results file {d['file']}"
                    line(f"replaying {what} ({done[kind]} of {n[kind]}) ...")

        return say

    def _replay_from(self, base: str | dict | None, base_step: int, on_record, on_plate, before=None):
        """The log replayed from ``base`` (a state after the plate at ``base_step``; None: the fresh policy);
        ``before(kind, detail)`` is called as each step starts (``_replay_progress``)."""
        restarted = self._con.execute(
            "SELECT MAX(step) FROM events WHERE kind = 'restart' AND step > ?", (base_step,)
        ).fetchone()[0]
        if restarted is not None:
            # the algorithm restarted there on every outcome recorded before (``restart``): what came before
            # is not replayed (it may be another screenbai version's proposals)
            policy = self._restart_at(int(restarted))
            base_step, base = int(restarted), policy.state_dict()
            if on_plate is not None:
                on_plate(base_step, policy)
        else:
            policy = self._loaded(base, base_step)
        events = self._con.execute(
            f"SELECT step, kind, detail FROM events WHERE kind IN {REPLAYED} AND step > ? ORDER BY step",
            (base_step,),
        ).fetchall()
        told = False  # whether the policy in hand has taken outcomes since the last plate
        for step, kind, detail in events:
            if before is not None:
                before(kind, detail)
            if kind in ("add", "withdraw", "restart"):
                # the algorithm restarts on the new set of compounds: the new base, as after a plate
                policy = self._restart_at(step)
                base_step, base, told = step, policy.state_dict(), False
                if on_plate is not None:  # a new base, as a plate is (repair stores it as the 'plate' snapshot)
                    on_plate(step, policy)
            elif kind == "plate":
                d = json.loads(detail)
                arms = propose_wells(policy, d["requested"], d.get("replicates", 1))
                stored = np.asarray(
                    [
                        a
                        for (a,) in self._con.execute(
                            "SELECT arm FROM wells WHERE plate_id = ? ORDER BY position", (d["plate_id"],)
                        )
                    ],
                    dtype=np.int64,
                )
                if arms.shape != stored.shape or (arms != stored).any():
                    k = min(arms.size, stored.size)
                    at = int(np.argmax(arms[:k] != stored[:k])) if (arms[:k] != stored[:k]).any() else k
                    raise ReplayMismatch(
                        f"{self.path}: replaying the log proposes other compounds for plate {d['plate_id']} than "
                        f"the stored ones ({arms.size} vs {stored.size} wells, differing from well {at + 1} on: arms "
                        f"{arms[at : at + 5].tolist()} vs {stored[at : at + 5].tolist()}); the algorithm "
                        f"{self.algorithm} behaves differently in this screenbai (the campaign was made with screenbai "
                        f"{self.meta.get('screenbai_version')}, whose code differs from this one). Every outcome is "
                        "kept in the file. "
                        f"To carry on with this version, run `screenbai campaign restart {self.path}`: the algorithm "
                        "starts again on every outcome recorded, as after an added compound (status then says what "
                        "that does to the guarantee); or use the screenbai that made the campaign"
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

    def _save_snapshot(self, step: int, *, plate: bool = False) -> None:
        """The policy's state after ``step`` (also as the state after the last plate, for a plate)."""
        assert self._policy is not None  # saved right after the policy took a step
        state = store.encode_state(self._policy.state_dict())
        store.put_snapshot(self._con, "latest", step, state)
        if plate:
            store.put_snapshot(self._con, "plate", step, state)
        self._policy_step = step

    def _leaders(self, policy) -> tuple[int, list[str], bool]:
        res = policy.result()
        return int(res.n_samples), [self.compound_ids[a] for a in res.recommendation], bool(policy.done)

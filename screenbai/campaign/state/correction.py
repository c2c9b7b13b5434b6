"""``record --replace PLATE``: a plate recorded from the wrong file (another plate's, last week's, a wrong export),
recorded again from the right one.

The log is never rewritten.  The plate's recorded results (outcomes, raw readouts, censored cells, its Z') are taken
out of the file and the right file is recorded as a new ``record`` event whose ``replaces`` key says what was
replaced: the plate, the file(s) that had recorded it and when, every well's value then, and the wells whose value
changed (old -> new); the event's own file, SHA-256 and time say by what and when.  The policy is then rebuilt by
the replay (:mod:`~screenbai.campaign.state.replay`): from the state after the last plate, told every outcome recorded
since, the right ones in place of the wrong; a replay from the start gives the same, as the outcomes sit with the
new event.

Valid only while no choice of the algorithm rests on the wrong outcomes: no plate proposed by ``next`` after them,
and no change of the compound set (add, withdraw, restart), which restarts the algorithm on the outcomes then
recorded.  Two plates in the lab recorded either way round give one state (the replay's order rule), so a plate
whose results came before another's may be replaced as long as nothing was proposed since.  After a later plate,
``record --replace`` is refused, saying why (that plate was chosen from the wrong outcomes) and what the lab can do.

``record --replace PLATE --restart`` is the way past that: the plate's results are replaced as above, then a
``restart`` event is logged (:func:`~screenbai.campaign.state.changes.log_restart`), so the algorithm starts again on
every outcome recorded, the right ones in place of the wrong, as the ``restart`` command starts it: valid evidence
however adaptively the tests were chosen (:mod:`~screenbai.campaign.state.armset`), and the replay never proposes
again a plate from before a restart, so the plates chosen from the wrong outcomes stand as tests, not as choices to
reproduce.  Plates proposed and not yet recorded stay in the lab (in flight): their results are recorded as usual.
Refused where ``restart`` is (a fixed-budget algorithm, GSE, plans its stages for the campaign it started), and where
nothing rests on the wrong outcomes (no restart needed: ``--replace`` alone).
"""

from __future__ import annotations

#: log events after which a plate's results cannot be replaced: the algorithm chose or restarted from them
_LATER = ("plate", "add", "withdraw", "restart")


class ReplaceRefused(ValueError):
    """``record --replace`` of a plate whose results cannot be replaced (none recorded, or a choice rests on them)."""


def take_back(camp, plate_id: str, plate: str | None, restart: bool = False) -> dict:
    """Check that ``plate_id``'s recorded results may be replaced, take them out of the file (inside the caller's
    transaction) and return what they were, for the new record event.  ``plate``: ``record --plate``, which must
    then be the same plate.  ``restart``: ``--restart``, the algorithm restarted after (:func:`restart_after`), which
    lets a plate be replaced after a later plate or change."""
    from .changes import cannot_restart

    con = camp._con
    if restart and (why := cannot_restart(camp.algorithm)):
        raise ReplaceRefused(
            f"--replace {plate_id} --restart: {why}; nothing was changed. A plate of {camp.path} is corrected only "
            "before `next` proposes another (--replace without --restart); past that, start a new campaign on the "
            "same library (`screenbai campaign init`) with the right outcomes"
        )
    known = [p for (p,) in con.execute("SELECT plate_id FROM plates ORDER BY step")]
    named = {p.upper(): p for p in known}.get(plate_id.strip().upper())
    if named is None:
        raise ReplaceRefused(
            f"--replace {plate_id!r}: not a plate of {camp.path} (plates: {', '.join(known) or 'none yet'}); give the "
            "plate id of the plate recorded from the wrong file"
        )
    if plate is not None and plate.strip().upper() != named.upper():
        raise ReplaceRefused(f"--replace {named} with --plate {plate}: give one plate, the one recorded in error")
    records = con.execute(
        "SELECT DISTINCT r.step, r.file, r.recorded_at FROM records r WHERE r.record_id IN "
        "(SELECT record_id FROM outcomes WHERE plate_id = ? UNION SELECT record_id FROM readouts WHERE plate_id = ?) "
        "ORDER BY r.step",
        (named, named),
    ).fetchall()
    if not records:
        raise ReplaceRefused(
            f"--replace {named}: plate {named} has no results recorded, nothing to replace; record its file without "
            "--replace"
        )
    first = int(records[0][0])
    later = con.execute(
        f"SELECT e.step, e.kind, e.at, p.plate_id FROM events e LEFT JOIN plates p USING (step) WHERE e.kind IN "
        f"({', '.join('?' * len(_LATER))}) AND e.step > ? ORDER BY e.step",
        (*_LATER, first),
    ).fetchall()
    if later and not restart:
        raise ReplaceRefused(_refusal(camp, named, records[0], later))
    if restart and not later:
        raise ReplaceRefused(
            f"--replace {named} --restart: no plate was proposed since its results were recorded, nor did the "
            "compound set change, so no choice of the algorithm rests on them and nothing needs a restart; nothing "
            "was changed. Run the same command without --restart: the results are replaced and the algorithm carries "
            "on as if the right file had come first"
        )
    old = {
        well: (typed if typed is not None else raw if kind != "compound" or raw is not None else told)
        for well, kind, raw, typed, told in con.execute(
            "SELECT w.well, COALESCE(r.kind, 'compound'), r.raw, c.typed, o.value FROM "
            "(SELECT well FROM outcomes WHERE plate_id = :p UNION SELECT well FROM readouts WHERE plate_id = :p) w "
            "LEFT JOIN readouts r ON r.plate_id = :p AND r.well = w.well "
            "LEFT JOIN censored c ON c.plate_id = :p AND c.well = w.well "
            "LEFT JOIN outcomes o ON o.plate_id = :p AND o.well = w.well",
            {"p": named},
        )
    }
    for table in ("outcomes", "readouts", "censored", "plate_qc"):
        con.execute(f"DELETE FROM {table} WHERE plate_id = ?", (named,))
    # the cached policy told the wrong outcomes: the record's replay starts from the state after the last plate
    con.execute("DELETE FROM snapshots WHERE name = 'latest'")
    camp._policy = None
    return {
        "plate": named,
        "recorded_from": [f"{file} at {at}" for _, file, at in records],
        "old": {w: old[w] for w in sorted(old)},
    }


def restart_after(camp, record_step: int, plate_id: str):
    """After the record event (``record_step``) that replaced ``plate_id``'s results with ``--restart``: log the
    ``restart`` event (the caller's step) and return a copy of the restarted policy for the record's history row
    (whose ``result()`` may draw tie-breaks, which the policy kept, as the replay's, must not have drawn)."""
    from .changes import log_restart

    step = log_restart(
        camp,
        f"{plate_id} recorded from the wrong file, replaced at log step {record_step} by record --replace --restart",
    )
    return camp._loaded(camp._policy.state_dict(), step)


def replaced(taken: dict, controls, compounds) -> dict:
    """The record event's ``replaces`` entry: ``take_back``'s, with the wells whose value changed (old -> new; a well
    left out of the new file: -> open)."""
    new = {o.well: (o.censored.typed if o.censored is not None else o.value) for o in (*compounds, *controls)}
    old = taken["old"]
    changed = {
        w: f"{_text(old.get(w))} -> {_text(new[w]) if w in new else 'open'}"
        for w in sorted(set(old) | set(new))
        if old.get(w) != new.get(w)
    }
    return {**taken, "changed": changed}


def _text(value) -> str:
    return "failed" if value is None else value if isinstance(value, str) else f"{value:g}"


def _refusal(camp, plate_id: str, first: tuple, later: list) -> str:
    """Why a plate's results cannot be replaced once a later step rests on them, and what the lab can do."""
    step, kind, at, proposed = later[0]
    what = f"plate {proposed} was proposed by `next`" if kind == "plate" else f"the compound set changed ({kind})"
    return (
        f"--replace {plate_id}: its results were recorded from {first[1]} at {first[2]}, and since then {what} at "
        f"{at} (log step {step}): the algorithm chose {'that plate' if kind == 'plate' else 'its next plates'} from "
        f"those outcomes, so replacing them now would leave its choices resting on values the campaign no longer "
        f"holds, and the replay of its log could not reproduce them. Nothing was changed: the wrong values still "
        f"count. A plate is corrected with --replace alone only before `next` proposes another (or the compound set "
        f"changes); past that, add --restart (`record {camp.path} FILE --replace {plate_id} --restart`): the "
        f"results are replaced and the algorithm starts again from every outcome recorded, the right ones in place "
        f"of the wrong, as `screenbai campaign restart` starts it (its run so far is not carried on, and `status` "
        f"says what that does to the guarantee); plates proposed and not yet recorded stay in the lab and are "
        f"recorded as usual. Or start a new campaign on the same library (`screenbai campaign init`). "
        f"`screenbai campaign export {camp.path}` lists every well with the file that recorded it"
    )

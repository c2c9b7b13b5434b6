"""Changes mid-campaign: compounds added (newly synthesised), some withdrawn (out of stock), the plate
format changed.  Each is one logged step (``add``, ``withdraw``, ``layout`` events), replayed on
resumption, and said in ``status`` with what it did to the error guarantee.

Adding or withdrawing restarts the algorithm on the new set of compounds with every outcome recorded
so far (:mod:`~screenbai.campaign.state.armset`, which says why the guarantee survives for the
fixed-confidence algorithms).  A new compound is featurized exactly as the library was: its Morgan
fingerprint projected on the library's stored principal components (the PCA is not refitted, so the
features of the compounds already screened do not move).
"""

from __future__ import annotations

import json

import numpy as np

from ..lab.layout import PlateLayout
from . import store


def _guard(camp) -> None:
    policy = camp.policy
    if getattr(policy, "fixed_budget", False):
        raise ValueError(
            f"{camp.algorithm} is a fixed-budget algorithm: its stages are planned for the compounds it started "
            "with, so compounds cannot be added or withdrawn mid-campaign; export the results and start a new "
            "campaign with the new library"
        )


def featurize_new(camp, smiles: list[str]) -> np.ndarray:
    """Features of new structures as the campaign's library was featurized (stored PCA, intercept)."""
    f = camp.meta["featurizer"]
    if f.get("method") != "morgan+pca":
        raise ValueError(
            f"{camp.path}: its features came from {f.get('method')!r}, not from structures screenbai featurized; "
            "new compounds need their features from the same source "
            "(give them with screenbai.campaign.state.changes.add_compounds(camp, ids, smiles, features=...))"
        )
    from screenbai.chem.featurize import morgan_fingerprints

    fp = morgan_fingerprints(list(smiles), radius=int(f["radius"]), n_bits=int(f["n_bits"]))
    comps = store.get_array(camp._con, "pca_components")
    mean = store.get_array(camp._con, "pca_mean")
    scores = (np.asarray(fp, dtype=float) - mean) @ comps.T
    return np.hstack([scores, np.ones((scores.shape[0], 1))])


def read_new_compounds(camp, path, *, id_column=None, smiles_column=None, kind="auto"):
    """Read and standardize a file of new structures as ``init`` reads a library; returns (kept
    frame: compound_id, smiles, input_smiles, source_row; rejected frame), with the ids and structures
    already in the campaign rejected too."""
    from pathlib import Path

    import pandas as pd

    from ..library import _detect_kind, _read_rows, curate_structures

    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"file of new compounds {path} is a folder; give the CSV/TSV/SDF of the new structures")
    if not path.is_file():
        raise FileNotFoundError(f"file of new compounds {path} does not exist")
    kind = _detect_kind(path) if kind == "auto" else kind
    if kind == "featurized":
        raise ValueError(f"{path}: give the new structures as CSV/TSV/SDF (id and SMILES), not features")
    frame, _ = _read_rows(path, kind, id_column, smiles_column)
    kept, rejected = curate_structures(frame)
    known_ids = set(camp.compound_ids)
    active = {camp.compound_ids[int(a)] for a in getattr(camp.policy, "arm_set", range(camp.K))}
    same = _same_as_stored(camp, list(kept.itertuples(index=False)))
    extra = []
    keep = []
    for row in kept.itertuples(index=False):
        if row.compound_id in known_ids:
            extra.append((row.source_row, row.compound_id, row.input_smiles, "id already in the campaign",
                          _withdrawn_note(row.compound_id, active)))
        elif row.compound_id in same:
            first, what = same[row.compound_id]
            extra.append(
                (
                    row.source_row,
                    row.compound_id,
                    row.input_smiles,
                    "structure already in the campaign",
                    what + (f"; {_withdrawn_note(first, active)}" if first not in active else ""),
                )
            )
        else:
            keep.append(row)
    kept = pd.DataFrame(keep, columns=kept.columns) if keep else kept.iloc[0:0]
    if extra:
        more = pd.DataFrame(extra, columns=["source_row", "compound_id", "smiles", "reason", "detail"])
        rejected = pd.concat([rejected, more], ignore_index=True) if len(rejected) else more
    return kept.reset_index(drop=True), rejected


def _same_as_stored(camp, rows) -> dict[str, tuple[str, str]]:
    """New compound id -> (the id of the compound of the campaign it is, what the log says of it), for new rows that
    are one of the campaign's compounds as :func:`~screenbai.chem.standardize.same_compound` says, as ``init``:
    the same standardized structure, or a tautomer of it (2-pyridone beside 2-hydroxypyridine: the same standard
    InChIKey, one compound in solution).  The stored compounds' keys are not in the file: those that may be one
    (``may_be_same``) are standardized again from their SMILES as given (an allene's stereo is only in it:
    CC=[C@]=CC and CC=[C@@]=CC are both CC=C=CC)."""
    from screenbai.chem.standardize import may_be_same, same_compound, standardize_smiles

    candidates = may_be_same([r.smiles for r in rows], camp.smiles)
    arms = sorted({a for c in candidates for a in c})
    if not arms:
        return {}
    stored = {a: camp._con.execute("SELECT compound_id, input_smiles FROM compounds WHERE arm = ?", (a,)).fetchone()
              for a in arms}
    ids = [str(r.compound_id) for r in rows] + [str(stored[a][0]) for a in arms]
    std = standardize_smiles([r.input_smiles for r in rows] + [stored[a][1] or camp.smiles[a] for a in arms])
    ident = [None if e is not None else same_compound(k, s, i)
             for k, s, e, i in zip(std["key"], std["smiles"], std["error"], ids)]
    ident_of_arm = dict(zip(arms, ident[len(rows):]))
    smiles_of_arm = dict(zip(arms, std["smiles"][len(rows):]))
    out: dict[str, tuple[str, str]] = {}
    for row, new, arms_here in zip(rows, ident[: len(rows)], candidates):
        for a in arms_here:
            first, same_smiles = str(stored[a][0]), row.smiles in (camp.smiles[a], smiles_of_arm[a])
            # a stored SMILES today's standardization refuses: the same standardized structure, as before
            if new == ident_of_arm[a] or (ident_of_arm[a] is None and same_smiles):
                out[str(row.compound_id)] = (
                    first,
                    f"same standardized structure as {first}"
                    if same_smiles  # else init's words (curate_structures)
                    else f"a tautomer of {first}'s structure ({smiles_of_arm[a]}; one compound in solution)",
                )
                break
    return out


def _withdrawn_note(compound_id: str, active: set[str]) -> str:
    """Why a compound of the campaign cannot be added again when it was withdrawn (say so: 'already in the
    campaign' alone reads as if it were still screened)."""
    if compound_id in active:
        return ""
    return (f"{compound_id} was withdrawn, and a withdrawn compound does not come back into this screen; to screen it "
            "again start a new campaign")


def add_compounds(camp, ids, smiles, *, features=None, input_smiles=None, source: str = "") -> list[int]:
    """Add compounds (ids, standardized SMILES; features computed as the library's unless given) as
    one logged step; the algorithm restarts on the enlarged set.  Returns the new arms."""
    ids, smiles = [str(i) for i in ids], [str(s) for s in smiles]
    if not ids:
        raise ValueError("no new compound to add")
    if len(set(ids)) != len(ids):
        raise ValueError("the new compounds repeat an id")
    clash = sorted(set(ids) & set(camp.compound_ids))
    if clash:
        raise ValueError(f"compound id(s) {', '.join(clash[:5])} are already in the campaign")
    X_new = featurize_new(camp, smiles) if features is None else np.asarray(features, dtype=float)
    if X_new.shape != (len(ids), camp.features.shape[1]):
        raise ValueError(
            f"the new compounds' features have shape {X_new.shape}; expected ({len(ids)}, {camp.features.shape[1]})"
        )
    _guard(camp)
    with camp._step():
        try:
            policy = camp.policy
            n_before = camp.K
            arms = list(range(n_before, n_before + len(ids)))
            camp._con.executemany(
                "INSERT INTO compounds (arm, compound_id, smiles, input_smiles, source_row) VALUES (?, ?, ?, ?, ?)",
                zip(arms, ids, smiles, input_smiles or smiles, (None for _ in ids)),
            )
            store.put_array(camp._con, "features", np.vstack([camp.features, X_new]))
            active = sorted({*map(int, policy.arm_set), *arms})
            step = store.add_event(
                camp._con,
                "add",
                {
                    "compounds": ids,
                    "arms": arms,
                    "active": active,
                    "n_total": n_before + len(ids),
                    "source": str(source),
                    "tests_before": int(policy.result().n_samples),
                },
            )
            camp._load_compounds()
            camp._policy = camp._restart_at(step)
            camp._save_snapshot(step, plate=True)
        except BaseException:
            camp._load_compounds()  # the transaction is rolled back: the file's compounds again
            raise
    return arms


def withdraw(camp, compound_ids: str | list[str], reason: str = "") -> list[int]:
    """Withdraw compounds (out of stock, a shortlist kept): proposed and recommended no more; one logged step for
    them all (the algorithm restarts once). Refused as a whole, naming every problem of the request at once (the ids
    not in the campaign, named twice or already withdrawn, too few compounds left), when there is any; nothing is
    changed then. Returns their arms."""
    ids = [compound_ids] if isinstance(compound_ids, str) else list(compound_ids)
    if not ids:
        raise ValueError("name at least one compound to withdraw")
    _guard(camp)  # a fixed-budget screen refuses any withdrawal, whichever ids
    with camp._step():
        problems = _withdraw_problems(camp, ids)
        if problems:
            # all at once: one refusal per kind of problem sent the user back to the list again and again
            raise ValueError(f"withdraw from {camp.path}: {len(problems)} problem(s); nothing was changed:\n  "
                             + "\n  ".join(problems))
        policy = camp.policy
        arms = [camp._arm_of[c] for c in ids]
        gone = set(arms)
        active = [int(a) for a in policy.arm_set if int(a) not in gone]
        n, _, _, _ = camp.observations()
        step = store.add_event(
            camp._con,
            "withdraw",
            {
                "compounds": ids,
                "arms": arms,
                "active": active,
                "n_total": camp.K,
                "reason": reason,
                "tests_of_it": int(n[arms].sum()),
                "tests_before": int(policy.result().n_samples),
            },
        )
        camp._policy = camp._restart_at(step)
        camp._save_snapshot(step, plate=True)
    return arms


def _withdraw_problems(camp, ids: list[str]) -> list[str]:
    """Every problem of a request to withdraw ``ids``, each naming its ids and what to do (empty: none); read under
    the step's lock, so 'already withdrawn' is the file's latest state."""
    problems = []
    unknown = list(dict.fromkeys(c for c in ids if c not in camp._arm_of))
    if unknown:
        # a row rejected at init (no SMILES, a duplicate structure ...) has an id the user may well know
        rejected = {cid: (row, reason, detail) for row, cid, _, reason, detail in camp.rejected() if cid}
        named = [
            c if c not in rejected else (
                f"{c} (rejected at init: row {rejected[c][0]} of the library, {rejected[c][1]}"
                + (f": {rejected[c][2]}" if rejected[c][2] else "") + ")"
            )
            for c in unknown
        ]
        problems.append(f"not in the campaign: {_listed(named)}; the ids are the library's (the plate files' and the "
                        "export's compound_id)")
    twice = sorted({c for c in ids if ids.count(c) > 1})
    if twice:
        problems.append(f"named more than once: {_listed(twice)}; name each compound once")
    policy = camp.policy
    current = {int(a) for a in policy.arm_set}
    known = list(dict.fromkeys(c for c in ids if c in camp._arm_of))
    already = [c for c in known if camp._arm_of[c] not in current]
    if already:
        problems.append(f"already withdrawn: {_listed(already)}; leave them out")
    left = len(current - {camp._arm_of[c] for c in known})
    m = int(getattr(policy, "m", 1))
    if left <= m:
        problems.append(f"withdrawing {len(known) - len(already)} compound(s) would leave {left}; the screen needs "
                        f"{m + 1}")
    return problems


def _listed(ids: list[str], shown: int = 10) -> str:
    """``ids`` for a message: the first ``shown`` and how many more."""
    return ", ".join(ids[:shown]) + (f" and {len(ids) - shown} more" if len(ids) > shown else "")


def read_compound_ids(path, id_column: str = "compound_id") -> list[str]:
    """The compound ids in column ``id_column`` of a CSV/TSV (the export's and the plate files' column by default; the
    separator , tab or ; as the header uses), in the file's order; an id the export wrote behind a quote (one that
    starts like a spreadsheet formula) as it is in the campaign. A missing column or file, or an empty cell, is
    refused naming the file (and line)."""
    from screenbai.textfiles import formula_unsafe, not_utf8, open_text, table_rows

    try:
        with open_text(path) as fh:
            text = fh.read()
    except FileNotFoundError:
        raise ValueError(f"{path}: file does not exist") from None
    except IsADirectoryError:
        raise ValueError(f"{path}: is a folder; give the CSV/TSV listing the compounds") from None
    except UnicodeDecodeError as exc:
        raise not_utf8(path, exc) from None
    if not text.strip() or not text.splitlines()[0].strip():
        raise ValueError(f"{path}: line 1: empty file or empty header; expected a header with {id_column!r}")
    _, head, rows = table_rows(text)
    if id_column not in head:
        raise ValueError(f"{path}: no column {id_column!r} (columns: {', '.join(head)}); name the column of compound "
                         "ids with --id-column")
    col, ids = head.index(id_column), []
    for line, fields in rows:
        value = fields[col].strip() if col < len(fields) else ""
        if not value:
            raise ValueError(f"{path}, line {line}: empty {id_column!r}; give the compound's id or delete the row")
        ids.append(formula_unsafe(value))
    if not ids:
        raise ValueError(f"{path}: no compound listed under {id_column!r}")
    return ids


#: settings of the question itself, kept when the algorithm is switched unless the user gives others
QUESTION = ("epsilon", "delta", "m")


def restart_algorithm(camp, reason: str = "", algorithm: str | None = None, params: dict | None = None) -> int:
    """Restart the algorithm on every outcome recorded so far (one logged step), as after an added compound,
    without replaying what came before: the way on when this screenbai's algorithm no longer reproduces the
    campaign's plates (``ReplayMismatch``, e.g. after an upgrade).  With ``algorithm``, another algorithm
    takes over (e.g. ``kl-lucb``, which needs no model, when the model check rejects the model): it starts from
    every outcome recorded, with ``params``, and the question's settings (``QUESTION``) the campaign had where
    it takes them and ``params`` does not say.  Returns the step."""
    from screenbai.bandits.core.params import declared, unnamed_defaults
    from screenbai.bandits.core.policy import encode_state
    from screenbai.bandits.core.registry import available, get

    from .creation import check_settings

    switch = None
    if algorithm is not None:
        binary_only = algorithm in available() and getattr(get(algorithm).cls, "binary_rewards", False)
        if camp.meta["outcome"] == "continuous" and binary_only:
            raise ValueError(
                f"{algorithm} models 0/1 outcomes, and {camp.path} records a continuous readout (fixed at init); hand "
                "it to an algorithm for continuous outcomes: without a model of the features lucb or ugape (with "
                "--param sigma=<the readout's noise scale>), with one lin-tas"
            )
        entry = check_settings(algorithm, {}, int(camp.meta["seed"]), camp.meta["outcome"])  # a typo: named
        old = camp.meta["params"]
        takes = declared(entry.cls)
        kept = {k: old[k] for k in QUESTION if k in old and k in takes and k not in (params or {})}
        new_params = {**kept, **(params or {})}
        check_settings(entry.name, new_params, int(camp.meta["seed"]), camp.meta["outcome"])
        if entry.name == camp.algorithm and new_params == old:
            raise ValueError(
                f"{entry.name} already runs {camp.path} with these settings ({old or 'its defaults'}): handed over to "
                "itself it would only add its delta to the screen's error bound; to restart it on the outcomes "
                "recorded, run `restart` without --algorithm, or change a setting with --param"
            )
        switch = {"algorithm": entry.name, "params": new_params,
                  "defaults": encode_state(unnamed_defaults(entry.cls, new_params))}
    elif params:
        raise ValueError("--param changes the settings of an algorithm taking over: give --algorithm too")
    name = camp.algorithm if switch is None else switch["algorithm"]
    if why := cannot_restart(name):
        raise ValueError(f"{why}; export the results and start a new campaign")
    before = dict(camp.meta)
    with camp._step("restarting its algorithm"):
        try:
            extra: dict = {}
            if switch is not None:
                extra.update(algorithm=switch["algorithm"], params=switch["params"],
                             replaces={"algorithm": camp.algorithm, "params": camp.meta["params"]})
                for key, value in switch.items():  # what every later step builds the policy from
                    store.put_meta(camp._con, key, value)
                    camp.meta[key] = value
            step = log_restart(camp, reason, extra)
        except BaseException:
            camp.meta = before  # the step is rolled back: so is the campaign's algorithm
            camp._policy = None
            raise
    return step


def cannot_restart(name: str) -> str:
    """Why the algorithm ``name`` cannot restart mid-campaign ("" if it can)."""
    from screenbai.bandits.core.registry import get

    if getattr(get(name).cls, "fixed_budget", False):
        return (
            f"{name} is a fixed-budget algorithm: its stages are planned for the campaign it started, so it "
            "cannot restart mid-campaign"
        )
    return ""


def log_restart(camp, reason: str, extra: dict | None = None) -> int:
    """Log a ``restart`` event inside the caller's step (``camp._step``): the algorithm starts again on every outcome
    recorded, the wells in the lab in flight; the policy and its snapshots are the restarted one's.  Returns the
    step."""
    active, n_total, _ = camp._active_at(camp._last_step())
    n, _, _, _ = camp.observations()
    detail = {
        "active": [int(a) for a in active],
        "n_total": int(n_total),
        "reason": reason,
        "tests_before": int(n.sum()),
        "screenbai_version": _version(),
        **(extra or {}),
    }
    step = store.add_event(camp._con, "restart", detail)
    camp._policy = camp._restart_at(step)
    camp._policy_step = step
    camp._save_snapshot(step, plate=True)
    return step


def needs_restart(camp) -> bool:
    """Whether ``restart`` without another algorithm has anything to do: the log does not replay under this screenbai
    (a stored plate proposed otherwise, ``ReplayMismatch``, or the algorithm's code failing on it). A log that
    replays is carried on from as it is; restarting it would only add a step and start the algorithm's designs
    again."""
    try:
        camp.policy  # noqa: B018 (replayed, and checked plate by plate where another code wrote the snapshots)
    except Exception:  # noqa: BLE001 (whatever stops the replay, the restart, which does not replay it, is the way on)
        return True
    return False


def switches(camp) -> list[dict]:
    """The restarts that handed the campaign to another algorithm, in order (their log details)."""
    rows = camp._con.execute("SELECT detail FROM events WHERE kind = 'restart' ORDER BY step").fetchall()
    return [d for d in (json.loads(r[0]) for r in rows) if "algorithm" in d]


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("screenbai")
    except PackageNotFoundError:
        return "unknown"


def set_layout(camp, layout: PlateLayout) -> None:
    """Change the plate format for the plates proposed from now on (one logged step)."""
    previous = camp.layout
    with store.transaction(camp._con):
        store.put_meta(camp._con, "layout", layout.to_dict())
        store.add_event(
            camp._con,
            "layout",
            {"layout": layout.to_dict(), "previous": None if previous is None else previous.to_dict()},
        )
    camp.meta["layout"] = layout.to_dict()


def _setting(algorithm: str, params: dict, key: str):
    """The value of ``key`` an algorithm ran with: given in ``params``, else its default (None: it has none)."""
    from screenbai.bandits.core.params import declared
    from screenbai.bandits.core.registry import get

    p = declared(get(algorithm).cls).get(key)
    return params.get(key, None if p is None else p.default)


def guarantee_after_change(camp) -> str:
    """What a change does to the error guarantee, in one sentence."""
    from screenbai.bandits.core.params import without_guarantee
    from screenbai.bandits.core.parts import own_wells_route
    from screenbai.bandits.core.registry import get

    entry = get(camp.algorithm)
    voided = without_guarantee(entry.cls, {**entry.defaults, **camp.meta["params"]})
    handed = switches(camp)
    if handed:
        first = handed[0]["replaces"]
        chain = " then ".join([first["algorithm"]] + [h["algorithm"] for h in handed])
        if voided:
            return (f"the screen was handed over ({chain}); {camp.algorithm} has no error guarantee as set "
                    f"({', '.join(voided)})")
        deltas = [_setting(a["algorithm"], a["params"], "delta") for a in [first, *handed]]
        total = (f"at most {sum(deltas):g}, the sum of each algorithm's delta" if all(
            isinstance(x, (int, float)) for x in deltas) else "at most the sum of each algorithm's delta")
        return (
            f"the screen was handed over ({chain}): {camp.algorithm}'s confidence bounds hold at every moment "
            f"whatever chose the tests before, so its answer is wrong with probability at most its delta "
            f"({_setting(camp.algorithm, camp.meta['params'], 'delta')}) under its own assumptions; the "
            f"procedure as a whole, which could have stopped under any of them, errs with probability {total}"
        )
    if voided:
        return f"there was no error guarantee before ({', '.join(voided)}) and there is none after"
    if not getattr(entry.cls, "absorbed_outcomes_count", True):
        return (
            "the error guarantee still holds for the new set of compounds (the outcomes recorded before guide the "
            "algorithm's designs; its stopping rule counts only the tests it designs from now on, in lin-tas's blocks "
            "or a phased elimination's phases (RAGE-GLM's second stop, its likelihood-ratio set, counts every "
            "outcome), and its union bound the new number of compounds); its designs start again from the first "
            "(lin-tas's spanning block, RAGE's first phase)"
        )
    return (
        "the error guarantee still holds for the new set of compounds (its confidence bounds are valid for any "
        "order of tests, so the outcomes recorded before count in full"
        + (
            " in its likelihood-ratio set; its second route, a compound's own wells, counts only the wells it plans "
            "from now on, so a compound its own wells certified before the change is certified so again only once "
            "new wells of it are recorded"
            if own_wells_route(camp.policy)  # its count starts again at a change (rules/own_wells.py)
            else ""
        )
        + "; its union bound now counts the new number "
        "of compounds); measured for GLGapE: no wrong answer in 200 simulated campaigns with a compound added and "
        "the best one withdrawn at delta 0.1, an error rate of at most 1.5% with 95% confidence (docs/error_rates.md, "
        "'After a change'); the first plate after the change may repeat the algorithm's initial design"
    )


def change_lines(camp) -> list[str]:
    """The changes of the compound set and of the plate format, each in one line."""
    out: list[str] = []
    rows = camp._con.execute(
        "SELECT at, kind, detail FROM events WHERE kind IN ('add', 'withdraw', 'restart', 'layout') ORDER BY step"
    ).fetchall()
    if not rows:
        return out
    promise = guarantee_after_change(camp)
    handed = switches(camp)
    algorithm = handed[0]["replaces"]["algorithm"] if handed else camp.algorithm  # the one at each change
    for at, kind, detail in rows:
        d = json.loads(detail)
        when = at[:16].replace("T", " ")
        if kind == "add":
            out.append(
                f"{when}: {len(d['compounds'])} compound(s) added ({', '.join(d['compounds'][:3])}"
                f"{' ...' if len(d['compounds']) > 3 else ''}); {algorithm} restarted on {len(d['active']):,} "
                f"compounds with the {d['tests_before']:,} outcomes recorded before"
            )
        elif kind == "withdraw":
            why = f" ({d['reason']})" if d.get("reason") else ""
            ids = d["compounds"]
            who = (f"{ids[0]} withdrawn{why}: it is" if len(ids) == 1 else
                   f"{len(ids)} compounds withdrawn ({_listed(ids, 3)}){why}: they are")
            out.append(
                f"{when}: {who} no longer proposed or recommended, {'its' if len(ids) == 1 else 'their'} "
                f"{d['tests_of_it']} outcome(s) no longer count in the model; the answer is now the best of the "
                f"{len(d['active']):,} remaining compounds"
            )
        elif kind == "restart":
            why = f" ({d['reason']})" if d.get("reason") else ""
            if "algorithm" in d:
                algorithm = d["algorithm"]
                settings = ", ".join(f"{k}={v}" for k, v in d["params"].items()) or "its defaults"
                out.append(
                    f"{when}: {d['replaces']['algorithm']} handed over to {algorithm} ({settings}){why}, which started "
                    f"from the {d['tests_before']:,} outcomes recorded before, with screenbai "
                    f"{d.get('screenbai_version', 'unknown')}"
                )
            else:
                out.append(
                    f"{when}: {algorithm} restarted{why} on the {d['tests_before']:,} outcomes recorded before, "
                    f"with screenbai {d.get('screenbai_version', 'unknown')}"
                )
        else:
            out.append(
                f"{when}: plate format changed to {PlateLayout.from_dict(d['layout']).describe()} (plates proposed "
                "from then on; the error guarantee does not depend on the plate format)"
            )
    if any(kind != "layout" for _, kind, _ in rows):
        out.append(f"guarantee after these changes: {promise}")
    return out

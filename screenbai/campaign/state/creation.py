"""A new campaign file, built atomically: the settings checked, the library and the metadata written
under a temporary name beside the target, then renamed into place.

A killed ``init`` leaves no campaign file (a re-run then works), never an empty or half-filled
one; the temporary files of killed runs are removed by the next ``create`` for the same path.
:meth:`screenbai.campaign.Campaign.create` calls :func:`create_file` and opens the result.
"""

from __future__ import annotations

import glob
import os
import sqlite3
from pathlib import Path

import numpy as np

from ..lab import assay
from ..lab.assay import Readout
from ..lab.layout import PlateLayout
from . import store

#: what the lab writes per well: 0/1 outcomes, or real values (not for the algorithms of 0/1 outcomes)
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
    epsilon = params.get("epsilon", entry.defaults.get("epsilon"))
    if outcome == "binary" and isinstance(epsilon, (int, float)) and epsilon >= 1:
        raise ValueError(f"{entry.name}: epsilon={epsilon!r} is a tolerance on hit rates here (binary outcomes), and "
                         "at 1 or more every compound would count as correct; give 0 <= epsilon < 1 (e.g. "
                         "--param epsilon=0.1)")
    if int(seed) < 0:
        raise ValueError(f"the seed must be a whole number >= 0; got {seed}")
    return entry


def create_file(
    path,
    library,
    algorithm: str,
    params: dict | None = None,
    *,
    seed: int = 0,
    outcome: str = "binary",
    note: str = "",
    layout: PlateLayout | None = None,
    readout: Readout | None = None,
    meta: dict | None = None,
) -> Path:
    """Write the campaign file ``path`` for ``library`` (a :class:`~screenbai.campaign.library.Library`),
    atomically (see the module doc); returns its path. ``meta``: more metadata (key -> JSON value), written in
    the same transaction (the backtest's settings, which a re-run checks before it continues the file)."""
    import screenbai
    from screenbai.bandits.core import registry
    from screenbai.bandits.core.params import unnamed_defaults
    from screenbai.bandits.core.policy import encode_state

    params = dict(params or {})
    entry = check_settings(algorithm, params, seed, outcome)
    # a continuous concentration is told on the log10 scale (lab/assay.py); kept with the readout, so replays agree
    readout = None if readout is None else readout.modelled(outcome == "binary")
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
                for key, value in (meta or {}).items():
                    store.put_meta(con, key, value)
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
    return path


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

"""The study's activities: the data source (with its offline fallback), the declared activity types
checked against the config and the data, pChEMBL values turned into nM, and potencies in words."""

from __future__ import annotations

import logging
import math
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

logger = logging.getLogger("screenbai.screening")

#: Where relative data paths are looked up after the repository root.
SHARED_DATA_ENV = "SCREENBAI_SHARED_DATA"
DEFAULT_SHARED_DATA = "../shared/data/chembl"


def resolve_data_path(path: str | os.PathLike, repo_root: str | os.PathLike = ".", key: str | None = None) -> Path:
    """Find a data file: absolute, under ``repo_root``, or under ``$SCREENBAI_SHARED_DATA``.

    ``$VARS`` and ``~`` are expanded first.  ``$SCREENBAI_SHARED_DATA`` defaults to
    ``../shared/data/chembl`` relative to ``repo_root``.  ``key``: the config key that names the
    path (``source.path``), named by the error.
    """
    raw = os.path.expanduser(os.path.expandvars(str(path)))
    p = Path(raw)
    if p.is_absolute():
        candidates = [p]
    else:
        shared = Path(os.path.expanduser(os.environ.get(SHARED_DATA_ENV, DEFAULT_SHARED_DATA)))
        if not shared.is_absolute():
            shared = Path(repo_root) / shared
        candidates = [Path(repo_root) / p, shared / p]
    for c in candidates:
        if c.is_file():
            return c.resolve()
    raise FileNotFoundError(
        f"{f'{key} = ' if key else 'data file '}{str(path)!r} not found; looked at: "
        f"{', '.join(str(c) for c in candidates)}. "
        f"Give an absolute path, a path relative to the repository root, or set "
        f"{SHARED_DATA_ENV} to the directory that holds it."
    )


def _with_resolved_path(source: Mapping[str, Any], repo_root, key: str) -> dict:
    cfg = {k: v for k, v in dict(source).items() if v is not None}
    if "path" in cfg:
        cfg["path"] = str(resolve_data_path(cfg["path"], repo_root, f"{key}.path"))
    return cfg


def acquire_activities(
    source: Mapping[str, Any],
    fallback: Mapping[str, Any] | None = None,
    *,
    cache_dir: str | os.PathLike = "data/cache",
    repo_root: str | os.PathLike = ".",
) -> tuple[pd.DataFrame, dict]:
    """Load the raw activities of ``source``; fall back to a local file if ChEMBL is unreachable.

    Returns ``(raw, provenance)``; ``provenance`` records the source actually used
    (``used``: "source" or "offline_fallback"), its settings and, after a fallback, the error
    and a warning text that the report repeats.  Without a fallback the
    :class:`~screenbai.chem.chembl_web.ChemblUnavailableError` (whose message says how to point
    the config at a file) propagates.
    """
    from screenbai.chem.acquire import load_activities
    from screenbai.chem.chembl_web import ChemblUnavailableError

    cfg = _with_resolved_path(source, repo_root, "source")
    provenance: dict[str, Any] = {"requested": dict(source), "used": "source", "settings": cfg}
    try:
        raw = load_activities(cfg, cache_dir=Path(cache_dir), config_key="source")
    except ChemblUnavailableError as exc:
        if not fallback:
            raise
        fallback = dict(fallback)
        stands_in_for = fallback.pop("stands_in_for", None)
        try:
            fb = _with_resolved_path(fallback, repo_root, "offline_fallback")
        except FileNotFoundError as missing:
            raise FileNotFoundError(
                f"ChEMBL target {source.get('target_chembl_id')} could not be downloaded and no cache exists "
                f"({exc}), and the offline fallback is missing: {missing}"
            ) from None
        requested = str(source.get("target_chembl_id"))
        raw = load_activities(fb, cache_dir=Path(cache_dir), config_key="offline_fallback")
        _check_fallback_target(raw, requested, stands_in_for, fb["path"])
        warning = (
            f"OFFLINE FALLBACK: ChEMBL target {requested} could not be "
            f"downloaded and no cache exists; using {fb.get('path')} ({fb.get('kind')}) instead. "
            + _fallback_holds(raw, requested)
        )
        logger.warning("%s Cause: %s", warning, exc)
        provenance.update(used="offline_fallback", settings=fb, error=str(exc), warning=warning)
    provenance["n_rows"] = len(raw)
    if "units" in raw.attrs:  # a table's: where the unit came from (a default is said, not assumed silently)
        provenance["units"] = raw.attrs["units"]
    return raw, provenance


def check_sources(config: Mapping[str, Any], repo_root: str | os.PathLike = ".") -> list[str]:
    """What the config's sources declare, checked before any job; each error names the key.

    A table's ``units`` is one curation converts and agrees with a unit its activity column's header
    names (``Ki (uM)``), for ``source`` and ``offline_fallback`` alike; ``source.path`` exists;
    ``stands_in_for`` is set on the fallback only.  Returned as warnings to show, not errors (the
    fallback is read only when ChEMBL cannot be reached and nothing is cached): a missing
    ``offline_fallback.path``, and a ``stands_in_for`` naming another target than the requested one
    (a config copied for another target).
    """
    from screenbai.chem.units import table_units

    for key in ("source", "offline_fallback"):
        src = config.get(key) or {}
        if src.get("kind") == "table" and _canonical(src.get("activity_type", "IC50")) != "pChEMBL":
            table_units(str(src.get("activity_column", "")), src.get("units"), "the config", f"{key}.units")
    source = config["source"]
    if "stands_in_for" in source:
        raise ValueError(
            f"source.stands_in_for = {source['stands_in_for']!r}: stands_in_for belongs to offline_fallback (the "
            "requested target a fallback file of another target may stand in for); remove it from source"
        )
    if source.get("path"):
        resolve_data_path(source["path"], repo_root, "source.path")
    fallback = config.get("offline_fallback") or {}
    if source.get("kind") != "chembl" or not fallback:
        return []  # the fallback is read only in place of a ChEMBL download
    notes = []
    requested = source.get("target_chembl_id")
    if fallback.get("stands_in_for") not in (None, requested):
        notes.append(
            f"offline_fallback.stands_in_for = {fallback['stands_in_for']!r} but source.target_chembl_id = "
            f"{requested!r}: the fallback was chosen for another target, and a file of another target is refused "
            f"if ChEMBL cannot be reached. Point offline_fallback at data of {requested}, or set it to null"
        )
    if fallback.get("path"):
        try:
            resolve_data_path(fallback["path"], repo_root, "offline_fallback.path")
        except FileNotFoundError as exc:
            notes.append(f"{exc} It is read only if ChEMBL cannot be reached and nothing is cached; then the run "
                         "stops.")
    return notes


def _fallback_holds(raw: pd.DataFrame, requested: str) -> str:
    """What the fallback's results are, by the target its ``target_chembl_id`` column names: the requested one
    (EGFR's extract: a file, not a download, so not ChEMBL's current data), another one (the CDK2 export, which
    ``stands_in_for`` the complex) or none said; the warning said "NOT from the requested target" of all three."""
    held = set()
    if "target_chembl_id" in raw.columns:
        held = {t for t in raw["target_chembl_id"].dropna().astype(str).str.strip() if t}
    if held == {requested}:
        return (
            f"These results are from the requested target ({requested}), as this file holds it, not from ChEMBL's "
            "current data: its release and selection may differ from a download."
        )
    if held:
        return (
            f"These results are NOT from the requested target: the file holds {', '.join(sorted(held))}, accepted "
            "in its place (offline_fallback.stands_in_for)."
        )
    return (
        f"These results are NOT from a ChEMBL download of the requested target: the file does not say which target "
        f"it holds (no target_chembl_id column); they are {requested}'s only if the file holds its data."
    )


def _check_fallback_target(raw: pd.DataFrame, requested: str, stands_in_for: str | None, path: str) -> None:
    """Refuse an offline fallback whose ``target_chembl_id`` column names a target other than the requested
    one (a full report of the wrong target, exit 0), unless ``offline_fallback.stands_in_for`` names the
    requested target: the opt-in names the target it was made for, so a config copied for another
    target does not inherit it."""
    if "target_chembl_id" not in raw.columns:
        return  # a file that does not say its target: the run's warning says it is not the requested one
    held = raw["target_chembl_id"].dropna().astype(str).str.strip().value_counts()
    others = [t for t in held.index if t and t != requested]
    if not others or stands_in_for == requested:
        return
    holds = ", ".join(f"{t} ({n} rows)" for t, n in held.items())
    raise ValueError(
        f"offline_fallback.path {path} holds target {holds}, not the requested source.target_chembl_id "
        f"{requested}"
        + (f" (offline_fallback.stands_in_for is {stands_in_for})" if stands_in_for else "")
        + f": its results would be another target's. Point offline_fallback.path at data of {requested}, "
        f"or set offline_fallback: null to stop when ChEMBL cannot be reached; to screen {others[0]} in its "
        f"place knowingly, set offline_fallback.stands_in_for: {requested}"
    )


#: Activity types known by name (any other ChEMBL ``standard_type`` may be declared too).
#: pChEMBL values are -log10(molar) of some potency measure; they are converted to nM.
ACTIVITY_TYPES = ("IC50", "Ki", "Kd", "EC50", "pChEMBL")
_CANONICAL = {t.lower(): t for t in ACTIVITY_TYPES}
_FLIP_RELATION = {">": "<", "<": ">", ">=": "<=", "<=": ">=", "=>": "=<", "=<": "=>", "≥": "≤", "≤": "≥"}


def _canonical(t: str) -> str:
    return _CANONICAL.get(str(t).strip().lower(), str(t).strip())


def _types_named_in(column: str) -> set[str]:
    """Known activity types a column name mentions as a word (``ki_nM`` -> {Ki})."""
    words = {w for w in re.split(r"[^a-z0-9]+", column.lower()) if w}
    return {t for key, t in _CANONICAL.items() if key in words}


def activity_types_of(config: Mapping[str, Any]) -> list[str]:
    """The activity type(s) a workflow config declares, checked for agreement; fails before any job.

    ``curation.activity_types`` if given, else the source's own declaration (``activity_types``
    of a ChEMBL download, ``activity_type`` of a table; IC50 by default).  A table whose
    activity column is named after another type (``ki_nM`` declared as IC50) and a curation
    that keeps a type the source does not declare are errors naming both.
    """
    source = config["source"]
    kind = source.get("kind")
    if kind == "table":
        from screenbai.chem.tables import check_not_log_scale

        check_not_log_scale(source.get("activity_column"), source.get("activity_type"), "source")
        src_types = [_canonical(source.get("activity_type", "IC50"))]
        named = _types_named_in(str(source.get("activity_column", "")))
        if named and not named & set(src_types):
            raise ValueError(
                f"source.activity_column {source['activity_column']!r} names {'/'.join(sorted(named))} values "
                f"but source.activity_type is {src_types[0]!r}"
                f"{' (the default)' if 'activity_type' not in source else ''}; "
                f"declare the type the file holds, e.g. activity_type: {min(named)}"
            )
    elif kind == "chembl":
        src_types = [_canonical(t) for t in source.get("activity_types", ["IC50"])]
    else:
        src_types = []  # a ChEMBL export holds its types in its standard_type column
    cur = (config.get("curation") or {}).get("activity_types")
    types = [_canonical(t) for t in cur] if cur else (src_types or ["IC50"])
    if src_types and not set(types) & set(src_types):
        raise ValueError(
            f"curation.activity_types {types} keeps none of the types the source declares ({src_types}); "
            "give the same type(s) in both, or drop curation.activity_types to use the source's"
        )
    combine = (config.get("curation") or {}).get("combine_types")
    if len({t.lower() for t in types}) > 1 and combine is None:
        raise ValueError(
            f"the config keeps activity types {types} (curation.activity_types or the source's): they are different "
            "quantities, and one compound's values of each would be merged into one median. Keep one type, or set "
            "curation.combine_types: first_listed (each compound keeps only the type listed first) or "
            "curation.combine_types: median (one median over all types)"
        )
    if "pChEMBL" in types and kind != "table":
        raise ValueError(
            "activity type pChEMBL is read from tables (kind: table, activity_type: pChEMBL); for ChEMBL "
            "downloads and exports choose the measured type(s), e.g. [IC50] or [Ki]"
        )
    if kind == "table":
        pchembl_of(source)  # its checks: units and pchembl_of agree with activity_type
    return types


def pchembl_of(source: Mapping[str, Any]) -> str | None:
    """The activity a table of pChEMBL values measures (``Ki`` for pKi values), or None when the
    source does not say.

    Said by ``source.pchembl_of`` (e.g. ``Ki``) or by the activity column's name (``pKi``,
    ``pIC50``, ``log_kd``).  Refused, naming the key: ``units`` with ``activity_type: pChEMBL``
    (pChEMBL values have no unit: a column in nM is a concentration, not a pChEMBL value),
    ``pchembl_of`` without ``activity_type: pChEMBL``, and a ``pchembl_of`` the column's name contradicts.
    """
    from screenbai.chem.tables import _LOG_SCALE_NAME

    declared_type = _canonical(source.get("activity_type", "IC50"))
    given = source.get("pchembl_of")
    if declared_type != "pChEMBL":
        if given is not None:
            raise ValueError(
                f"source.pchembl_of = {given!r} is set but source.activity_type is {declared_type!r}: pchembl_of names "
                "the activity behind pChEMBL values; use it with activity_type: pChEMBL, or remove it"
            )
        return None
    if source.get("units") is not None:
        raise ValueError(
            f"source.units = {source['units']!r} contradicts source.activity_type: pChEMBL: pChEMBL values are "
            "-log10(molar) and have no unit. Remove source.units for pChEMBL values, or, if the column holds "
            f"concentrations in {source['units']}, declare their type instead (e.g. activity_type: Ki)"
        )
    column = str(source.get("activity_column") or "")
    named = {
        _canonical(m.group(2)) if _canonical(m.group(2)) != m.group(2) else m.group(2).upper()
        for w in re.split(r"[^a-z0-9]+", column.lower()) if w
        for m in [_LOG_SCALE_NAME.match(w)] if m and m.group(2)
    }
    if given is not None:
        given = _canonical(str(given))
        if given == "pChEMBL":
            raise ValueError("source.pchembl_of = 'pChEMBL': name the measured activity, e.g. pchembl_of: Ki")
        if named and given not in named:
            raise ValueError(
                f"source.pchembl_of = {given!r} but source.activity_column {column!r} names "
                f"{'/'.join(sorted(named))} values; make them agree"
            )
        return given
    return next(iter(named)) if len(named) == 1 else None


def activity_label_of(config: Mapping[str, Any]) -> str:
    """The activity every label, table and figure names: the declared type(s) (``IC50``, ``Ki/Kd``),
    or, for pChEMBL values whose source says what they measure (:func:`pchembl_of`), that activity
    (``Ki``: the values are converted to nM, so "Ki < 100 nM" is what the label means)."""
    types = activity_types_of(config)
    source = config["source"]
    if types == ["pChEMBL"] and source.get("kind") == "table":
        return pchembl_of(source) or "pChEMBL"
    return "/".join(types)


def check_activity_types(raw: pd.DataFrame, types: Sequence[str], where: str = "the data") -> dict[str, int]:
    """Compare the declared types with the ``standard_type`` values the data hold.

    Returns the row count per declared type found.  Raises ValueError naming both the declared
    types and what the data hold when none of the declared types is present.
    """
    held = (
        raw["standard_type"].astype("string").str.strip()
        if "standard_type" in raw.columns
        else pd.Series(dtype="string")
    )
    counts = held.fillna("(none)").value_counts()
    lower = {str(k).lower(): int(v) for k, v in counts.items()}
    found = {t: lower.get(t.lower(), 0) for t in types}
    if not any(found.values()):
        holds = ", ".join(f"{k} ({v} rows)" for k, v in counts.head(6).items()) or "no activity types"
        raise ValueError(
            f"the run declares activity type(s) {list(types)} but {where} holds {holds}: 0 of {len(raw)} rows "
            "would be kept. Declare the type the data hold (source.activity_type for a table, "
            "curation.activity_types otherwise)"
        )
    return found


def prepare_activities(raw: pd.DataFrame, types: Sequence[str], where: str = "the data") -> pd.DataFrame:
    """Raw rows ready for curation: declared types checked, pChEMBL values turned into nM.

    A pChEMBL value p is -log10(molar): p = 7 is 100 nM, so a "> 7" bound becomes "< 100 nM".
    Values outside 0-15 are not pChEMBL values (an error naming the first).
    """
    check_activity_types(raw, types, where)
    out = raw.copy()
    is_p = out["standard_type"].astype("string").str.strip().str.lower().eq("pchembl").fillna(False).to_numpy()
    if is_p.any():
        p = pd.to_numeric(out.loc[is_p, "standard_value"], errors="coerce")
        _refuse_out_of_range_pchembl(out, p, where)
        nM = (10.0 ** (9.0 - p)).map(lambda v: f"{v:.12g}", na_action="ignore")
        out["standard_value"] = out["standard_value"].astype("object")
        out.loc[is_p, "standard_value"] = nM.where(p.notna(), out.loc[is_p, "standard_value"])
        out["standard_units"] = out["standard_units"].astype("object")
        out.loc[is_p, "standard_units"] = "nM"
        if "standard_relation" in out.columns:
            rel = out.loc[is_p, "standard_relation"].astype("object")
            out["standard_relation"] = out["standard_relation"].astype("object")
            out.loc[is_p, "standard_relation"] = rel.map(
                lambda r: _FLIP_RELATION.get(str(r).strip(), r) if isinstance(r, str) else r
            )
    return out


def _refuse_out_of_range_pchembl(raw: pd.DataFrame, p: pd.Series, where: str) -> None:
    """pChEMBL values outside 0-15 are concentrations, not -log10(molar): refused, naming the first by its
    data row (1-based, as the table lists them), its compound id and its value as written."""
    bad = p[(p < 0) | (p > 15)]
    if not len(bad):
        return
    row = raw.index.get_loc(bad.index[0]) + 1
    ids = raw["molecule_chembl_id"] if "molecule_chembl_id" in raw.columns else None
    named = "" if ids is None or _is_missing(ids.loc[bad.index[0]]) else f" (id {ids.loc[bad.index[0]]})"
    raise ValueError(
        f"{where}: {len(bad)} declared pChEMBL value(s) lie outside 0-15 (first: {bad.iloc[0]:g} in data row "
        f"{row}{named}); pChEMBL is -log10(molar), typically 4-11. If the values are concentrations, "
        "declare their type (IC50, Ki, ...) and units instead"
    )


def _is_missing(value: Any) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


#: micromolar in text for people (figures, the report's summary page in markdown and HTML), as a chemist writes it;
#: CSV, JSON and logs keep ASCII 'uM' (machine-readable)
HUMAN_MICROMOLAR = "\u00b5M"


def format_concentration(value_nM: float, micromolar: str = "uM") -> str:
    """A concentration in the unit a chemist reads: ``0.3 nM``, ``100 nM``, ``1 uM``, ``62 uM``, ``1 mM``
    (pM below 0.1 nM, M from 1 M; three significant digits).  ``micromolar``: how micromolar is written,
    ASCII ``uM`` by default (CSV, JSON, logs: machine-readable); figures pass ``"µM"``."""
    v = float(value_nM)
    if not math.isfinite(v) or v <= 0:
        return f"{v:g} nM"
    for scale, unit in ((1e9, "M"), (1e6, "mM"), (1e3, micromolar), (0.1, "nM")):
        if v >= scale * (1 - 5e-4):  # 999.9 nM reads 1 uM, not 1e+03 nM
            factor = 1.0 if unit == "nM" else scale
            return f"{float(f'{v / factor:.3g}'):g} {unit}"
    return f"{float(f'{v * 1e3:.3g}'):g} pM"


def format_activity(value_nM: float, label: str, micromolar: str = "uM") -> str:
    """``IC50 12 nM`` / ``Ki 0.15 nM`` / ``IC50 62 uM``; pChEMBL as ``pChEMBL 7.92``.  ``micromolar``: as for
    :func:`format_concentration` (text for people passes :data:`HUMAN_MICROMOLAR`)."""
    if label == "pChEMBL":
        return f"pChEMBL {9.0 - math.log10(value_nM):.2f}"
    return f"{label} {format_concentration(value_nM, micromolar)}"

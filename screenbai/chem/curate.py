"""Curate raw activity rows into a compound library (one row per standardized structure).

Each input row is either kept or dropped under exactly one reason; the checks run in the
order of :data:`DROP_REASONS` and the first failing check names the reason.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from screenbai.chem.curation_report import CurationReport
from screenbai.chem.standardize import same_compound, standardize_unique
from screenbai.chem.units import MASS_UNITS, UNIT_FACTORS_TO_NM, canonical_unit
from screenbai.textfiles import comma_readings

logger = logging.getLogger("screenbai.chem")

__all__ = [
    "DROP_REASONS",
    "MERGE_REASONS",
    "UNIT_FACTORS_TO_NM",
    "CurationReport",
    "curate_activities",
]

#: Drop reasons, in the order the checks are applied.
DROP_REASONS: tuple[str, ...] = (
    "activity type not selected",
    "assay description not matched",
    "missing SMILES",
    "missing value",
    "non-numeric value",
    "non-positive value",
    "infinite value",
    "missing unit",
    "unknown unit",
    "censored relation",
    "unknown relation",
    "flagged: data validity comment",
    "flagged: potential duplicate",
    "structure too large",
    "unparseable SMILES",
    "text after the SMILES",
    "metal-containing structure",
    "inorganic structure",
    "mixture of several compounds",
    "no parent: only solvents and counter-ions",
    "standardization failed",
    "unit not convertible",
    "value outside 1 fM - 1 M",
    "id names several structures",
    "another activity type listed first",
)

#: Why a kept row became part of another row's compound (its measurement merged by median): a row of
#: an id whose compound another id holds too (a salt and its free base, one structure registered
#: twice), or a further measurement of an id already counted.
MERGE_REASONS: tuple[str, ...] = (
    "merged: another id of the same standardized structure",
    "merged: replicate measurement of one id",
)

#: a compound whose merged measurements span more than this fold (one log unit) is named in the report
#: (``CurationReport.wide_merges``): its median stands for values that disagree (another assay, a unit slip)
WIDE_MERGE_FOLD = 10.0
#: the widest merges the report names (their number is always given)
WIDE_MERGES_NAMED = 20
#: activities outside these bounds (nM: 1 fM and 1 M, pActivity 15 and 0, the range pChEMBL values are held to)
#: measure no binding; they are a unit slip ('5e-7' nM meant as M) or a typing error, and are dropped by reason
PLAUSIBLE_NM = (1e-6, 1e9)

#: How curation combines one compound's values of several activity types (IC50 and Ki are different quantities:
#: never combined unless asked): ``first_listed`` keeps the values of the type ``activity_types`` lists first
#: (the others are dropped by reason), ``median`` takes the median over all of them.
COMBINE_TYPES = ("first_listed", "median")
_EXACT = {"=", "==", "eq"}
#: a relation written before a value ('>1,000')
_RELATION = re.compile(r"^[<>=~]*\s*")
CENSORED_RELATIONS = {">", "<", ">=", "<=", "~", "=>", "=<", ">>", "<<", "≥", "≤"}  # ≥ ≤: typed in a spreadsheet


def _parse_float(v: Any) -> float | None | str:
    """float, None (missing) or 'non-numeric'."""
    if v is None or v is pd.NA:
        return None
    if isinstance(v, (int, float, np.floating, np.integer)) and not isinstance(v, bool):
        f = float(v)
        return None if math.isnan(f) else f
    s = str(v).strip()
    if s == "":
        return None
    try:
        f = float(s)
    except ValueError:
        return "non-numeric"
    return None if math.isnan(f) else f


@dataclass(frozen=True)
class _RowChecks:
    """The per-row checks of :func:`curate_activities` that need no structure."""

    wanted_types: frozenset[str]
    description_pattern: re.Pattern[str] | None
    censored: str
    drop_flagged: bool

    def first_failure(self, row: dict[str, Any]) -> str | tuple[float, bool, bool]:
        """The first failing check's reason, or ``(value, is_mass, from_pchembl)``: the value in nM, or in
        mass units when ``is_mass`` (converted once the molecular weight is known); ``from_pchembl``: a row
        without ``standard_value`` whose ``pchembl_value`` gave it."""
        t = row["standard_type"]
        if self.wanted_types and (_blank(t) or str(t).strip().lower() not in self.wanted_types):
            return "activity type not selected"
        desc = row["assay_description"]
        if self.description_pattern is not None and (_blank(desc) or not self.description_pattern.search(str(desc))):
            return "assay description not matched"
        if _blank(row["canonical_smiles"]):
            return "missing SMILES"
        v = _parse_float(row["standard_value"])
        if v is None:
            return self._from_pchembl(row)
        if isinstance(v, str):
            return "non-numeric value"
        if not v > 0:
            return "non-positive value"
        if math.isinf(v):  # 'inf', '1e999': no concentration
            return "infinite value"
        u = None if _blank(row["standard_units"]) else str(row["standard_units"]).strip()
        if u is None:
            return "missing unit"
        u = canonical_unit(u)  # 'nm', 'UM', 'nmol/L': said by curate_activities
        if u is None:
            return "unknown unit"
        if u in UNIT_FACTORS_TO_NM:
            value, is_mass = v * UNIT_FACTORS_TO_NM[u], False
        elif u in MASS_UNITS:
            value, is_mass = v, True
        else:
            return "unknown unit"
        rel = _relation(row)
        if rel in CENSORED_RELATIONS:
            if self.censored == "drop":
                return "censored relation"
        elif rel not in _EXACT:
            return "unknown relation"
        if self.drop_flagged and not _blank(row["data_validity_comment"]):
            return "flagged: data validity comment"
        dup = row["potential_duplicate"]
        if self.drop_flagged and not _blank(dup) and str(dup).strip().lower() in {"true", "1", "1.0", "t", "yes"}:
            return "flagged: potential duplicate"
        return value, is_mass, False

    def _from_pchembl(self, row: dict[str, Any]) -> str | tuple[float, bool, bool]:
        """A row without ``standard_value``: its ``pchembl_value`` p (-log10 molar, 0-15) with relation '=' (or
        none) is the value 10^(9 - p) nM; else it is dropped as 'missing value'."""
        p = _parse_float(row["pchembl_value"])
        if not isinstance(p, float) or not 0.0 <= p <= 15.0 or _relation(row) not in _EXACT:
            return "missing value"
        outcome = self.first_failure({**row, "standard_value": 10.0 ** (9.0 - p), "standard_units": "nM"})
        return outcome if isinstance(outcome, str) else (outcome[0], False, True)


_ROW_FIELDS = (
    "molecule_chembl_id", "canonical_smiles", "standard_type", "standard_relation", "standard_value",
    "standard_units", "data_validity_comment", "potential_duplicate", "assay_description", "pchembl_value",
)


def _relation(row: dict[str, Any]) -> str:
    """A row's relation, unquoted (``'='`` in ChEMBL exports); a missing one counts as ``=``."""
    return "=" if _blank(row["standard_relation"]) else str(row["standard_relation"]).strip().strip("'\"")


def _blank(v: Any) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)) or (isinstance(v, str) and not v.strip())


def _rows(raw_df: pd.DataFrame) -> list[dict[str, Any]]:
    """The fields curation reads, one dict per row (absent columns read as None)."""
    n = len(raw_df)
    columns = {c: raw_df[c].tolist() if c in raw_df.columns else [None] * n for c in _ROW_FIELDS}
    return [{c: columns[c][i] for c in _ROW_FIELDS} for i in range(n)]


def _row_ids(rows: list[dict[str, Any]]) -> list[str]:
    """Each row's compound id; a row without one gets ``row<n>`` (its 1-based data row), made
    unique against the real ids (a real 'row1' would otherwise be taken for the same compound)."""
    real = {str(r["molecule_chembl_id"]) for r in rows if not _blank(r["molecule_chembl_id"])}
    ids, made = [], []
    for i, r in enumerate(rows, start=1):
        if not _blank(r["molecule_chembl_id"]):
            ids.append(str(r["molecule_chembl_id"]))
            continue
        name = f"row{i}"
        while name in real:
            name = f"{name}_noid"
        ids.append(name)
        made.append(name)
    if made:
        logger.warning("%d rows have no compound id; named after their data row: %s", len(made), ", ".join(made[:10]))
    return ids


def _say_respelled_units(rows: list[dict[str, Any]], reason: list[str | None]) -> None:
    """Log the units of kept rows read as another spelling of an accepted unit ('nm' as nM)."""
    counts: dict[tuple[str, str], int] = {}
    for i, row in enumerate(rows):
        u = row["standard_units"]
        if reason[i] is None and not _blank(u) and canonical_unit(str(u).strip()) != str(u).strip():
            key = (str(u).strip(), str(canonical_unit(str(u).strip())))
            counts[key] = counts.get(key, 0) + 1
    if counts:
        logger.warning("units read as another spelling of an accepted unit: %s",
                       ", ".join(f"{u!r} as {c} ({n} rows)" for (u, c), n in sorted(counts.items())))


def _checked_options(
    raw_df: pd.DataFrame, censored: str, assay_description_regex: str | None, combine_types: str | None,
    activity_types: Sequence[str],
) -> re.Pattern[str] | None:
    """Refuse unusable options or input columns; return the compiled assay regex."""
    if censored not in ("drop", "keep_as_value"):
        raise ValueError(f"censored={censored!r}: use 'drop' or 'keep_as_value'")
    if combine_types not in (None, *COMBINE_TYPES):
        raise ValueError(f"combine_types={combine_types!r}: use one of {', '.join(COMBINE_TYPES)}")
    if combine_types == "first_listed" and not activity_types:
        raise ValueError("combine_types='first_listed' keeps per compound the type activity_types lists first, but "
                         "activity_types is empty (all types): list the types in the order to keep them")
    missing_cols = [c for c in ("canonical_smiles", "standard_value") if c not in raw_df.columns]
    if missing_cols:
        raise ValueError(
            f"raw_df lacks column(s) {missing_cols}; columns found: {list(raw_df.columns)}. "
            "Read the data with screenbai.chem.acquire first."
        )
    try:
        return re.compile(assay_description_regex, re.IGNORECASE) if assay_description_regex else None
    except re.error as exc:
        raise ValueError(f"assay_description_regex={assay_description_regex!r} is not a valid regex: {exc}") from exc


def _attach_structures(
    smiles_in: list[str],
    ids: list[str],
    reason: list[str | None],
    value_nM: list[float],
    is_mass: list[bool],
    canonical_tautomer: bool,
) -> tuple[list[str | None], list[str | None], list[str | None], list[tuple[str, str, str]]]:
    """Standardize the structures of the rows still kept.

    Rows whose structure fails get their reason in ``reason``; mass concentrations are
    converted to nM in ``value_nM``, and a value outside :data:`PLAUSIBLE_NM` (in nM) is dropped.
    Returns the standardized SMILES, InChIKeys and compound keys per row and the
    ``(id, reason, smiles)`` of the rows dropped for their structure.
    """
    n = len(smiles_in)
    standardized = standardize_unique({smiles_in[i] for i in range(n) if reason[i] is None}, canonical_tautomer)
    std_smiles: list[str | None] = [None] * n
    std_inchikey: list[str | None] = [None] * n
    std_key: list[str | None] = [None] * n
    structures_dropped: list[tuple[str, str, str]] = []
    implausible: list[str] = []
    for i in range(n):
        if reason[i] is not None:
            continue
        res = standardized[smiles_in[i]]
        if isinstance(res, str):
            reason[i] = res
            structures_dropped.append((ids[i], res, _shorten(smiles_in[i])))
            continue
        if is_mass[i]:
            if not res[3] > 0:
                reason[i] = "unit not convertible"
                continue
            value_nM[i] = value_nM[i] * 1e6 / res[3]
        if not PLAUSIBLE_NM[0] <= value_nM[i] <= PLAUSIBLE_NM[1]:
            reason[i] = "value outside 1 fM - 1 M"
            implausible.append(f"{ids[i]} ({value_nM[i]:.3g} nM)")
            continue
        # '|o1:1|' under two ids: maybe the two enantiomers, so one compound per id
        std_smiles[i], std_inchikey[i] = res[0], res[1]
        std_key[i] = same_compound(res[2], res[0], ids[i])
    # one id, several structures: which measurement belongs to which compound is unknown, and the
    # library's ids must name one compound each, so every such row is dropped
    keys_of: dict[str, set[str]] = {}
    for i in range(n):
        if reason[i] is None:
            keys_of.setdefault(ids[i], set()).add(std_key[i])  # type: ignore[arg-type]
    for i in range(n):
        if reason[i] is None and len(keys_of[ids[i]]) > 1:
            reason[i] = why = "id names several structures"
            structures_dropped.append((ids[i], why, _shorten(smiles_in[i])))
            std_smiles[i] = std_inchikey[i] = std_key[i] = None
    for cid, why, smi in structures_dropped:
        logger.warning("dropped %s (%s): %r", cid, why, smi)
    if implausible:
        logger.warning(
            "%d rows dropped as 'value outside 1 fM - 1 M' (a unit slip or a typing error?): %s%s", len(implausible),
            ", ".join(implausible[:10]), f" and {len(implausible) - 10} more" if len(implausible) > 10 else "",
        )
    return std_smiles, std_inchikey, std_key, structures_dropped


def _shorten(smiles: str, limit: int = 200) -> str:
    return smiles if len(smiles) <= limit else f"{smiles[:limit]}... ({len(smiles):,} characters)"


def _count_reasons(reasons: Sequence[str | None]) -> dict[str, int]:
    """Reason -> number of rows, in the order of :data:`DROP_REASONS` (non-zero only)."""
    counts: dict[str, int] = {}
    for r in reasons:
        if r is not None:
            counts[r] = counts.get(r, 0) + 1
    return {r: counts[r] for r in DROP_REASONS if r in counts}


def _holds(rows: list[dict[str, Any]], field: str, which: Sequence[int]) -> str:
    """The values of ``field`` among rows ``which``, most frequent first, with counts."""
    counts: dict[str, int] = {}
    for i in which:
        v = rows[i][field]
        key = "(empty)" if _blank(v) else str(v).strip()
        counts[key] = counts.get(key, 0) + 1
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    shown = ", ".join(f"{k} ({c})" for k, c in ranked[:6])
    return shown + (f" and {len(ranked) - 6} more" if len(ranked) > 6 else "")


def _why_nothing_kept(
    rows: list[dict[str, Any]],
    reason: list[str | None],
    activity_types: Sequence[str],
    assay_description_regex: str | None,
) -> str:
    """Why curation kept no row: the counts per reason, and for the main ones what the data holds."""
    n = len(rows)
    if n == 0:
        return "curation kept no compound: the input holds no rows (check the source file or query)"
    dropped = _count_reasons(reason)
    rows_with = {r: [i for i, x in enumerate(reason) if x == r] for r in dropped}
    parts = [f"curation kept no compound from {n:,} rows"]
    type_rows = rows_with.get("activity type not selected", [])
    if type_rows:
        wanted = ", ".join(activity_types)
        parts.append(
            f"{n - len(type_rows):,} of {n:,} rows have activity type {wanted}; the data holds "
            f"{_holds(rows, 'standard_type', type_rows)}: choose activity_types among these"
        )
    if "assay description not matched" in rows_with:
        parts.append(
            f"{len(rows_with['assay description not matched']):,} rows of the selected types do not match "
            f"assay_description_regex {assay_description_regex!r}"
        )
    hints = {
        "unknown unit": lambda idx: f"units found: {_holds(rows, 'standard_units', idx)}",
        "censored relation": lambda idx: "censored: keep_as_value keeps '>'/'<' values as bounds",
        "flagged: data validity comment": lambda idx: "drop_flagged: false keeps flagged rows",
        "flagged: potential duplicate": lambda idx: "drop_flagged: false keeps flagged rows",
        "missing value": lambda idx: "are the value column and the file's delimiter the intended ones?",
        "non-numeric value": lambda idx: f"values found: {_holds(rows, 'standard_value', idx)}"
        + _comma_hint([str(rows[i]["standard_value"]).strip() for i in idx]),
        "missing SMILES": lambda idx: "are the SMILES column and the file's delimiter the intended ones?",
        "value outside 1 fM - 1 M": lambda idx: "are the units the intended ones? units found: "
        + _holds(rows, "standard_units", idx),
    }
    for r, idx in rows_with.items():
        if r in ("activity type not selected", "assay description not matched"):
            continue
        hint = hints.get(r)
        parts.append(f"{len(idx):,} rows dropped as {r!r}" + (f" ({hint(idx)})" if hint else ""))
    return "; ".join(parts) + "."


def _type_of(row: dict[str, Any]) -> str:
    return "(none)" if _blank(row["standard_type"]) else str(row["standard_type"]).strip()


def _refuse_mixed_types(rows: list[dict[str, Any]], reason: list[str | None], combine_types: str | None) -> None:
    """Several activity types among the rows kept, and no combine_types: refused (their values would be merged)."""
    counts: dict[str, int] = {}
    names: dict[str, str] = {}
    for row, why in zip(rows, reason):
        if why is None:
            counts[_type_of(row).lower()] = counts.get(_type_of(row).lower(), 0) + 1
            names.setdefault(_type_of(row).lower(), _type_of(row))
    if len(counts) > 1 and combine_types is None:
        held = ", ".join(f"{names[t]} ({n} rows)" for t, n in counts.items())
        raise ValueError(
            f"the rows kept hold several activity types: {held}. They are different quantities, and one "
            "compound's values of each would be merged into one median. Keep one type (activity_types), or say "
            "how to combine them: combine_types: first_listed (each compound keeps only the values of the type "
            "activity_types lists first; its other rows are dropped by reason) or combine_types: median (one "
            "median over all types)"
        )


def _combine_types(
    rows: list[dict[str, Any]], reason: list[str | None], keys: list[str | None], combine_types: str | None,
    order: Sequence[str],
) -> int:
    """Apply ``combine_types`` to the rows kept (``first_listed``: drop per compound the types listed later);
    return the number of compounds whose library value combines several types."""
    types_of: dict[str, set[str]] = {}
    for i, row in enumerate(rows):
        if reason[i] is None:
            types_of.setdefault(keys[i], set()).add(_type_of(row).lower())  # type: ignore[arg-type]
    if combine_types == "first_listed":
        rank = {t.strip().lower(): k for k, t in enumerate(order)}
        first = {key: min(types, key=lambda t: rank.get(t, len(rank))) for key, types in types_of.items()}
        for i, row in enumerate(rows):
            if reason[i] is None and _type_of(row).lower() != first[keys[i]]:  # type: ignore[index]
                reason[i] = "another activity type listed first"
                keys[i] = None
        return 0
    mixed = sum(len(types) > 1 for types in types_of.values())
    if mixed:
        logger.warning("%d compounds' values combine several activity types into one median (combine_types: median)",
                       mixed)
    return mixed


def _comma_hint(values: list[str]) -> str:
    """What a comma in values float() refused may be (:func:`screenbai.textfiles.comma_readings`, as a lab's
    results are read): a thousands separator (1,000 and 12,500,000), which 1,000 may also be a decimal comma of,
    or a decimal comma (5,5)."""
    cores = [_RELATION.sub("", v) for v in values]  # '>1,000': the number after the relation
    readings = [(v, *comma_readings(v)) for v in cores]
    thousands = [(v, t, d) for v, t, d in readings if t is not None]
    decimal = [(v, d) for v, t, d in readings if t is None and d is not None]
    hint = ""
    if thousands:
        v, t, _ = thousands[0]
        hint += f"; a thousands separator ({v})? write numbers without it (e.g. {t} for {v})"
        both = next(((v, d) for v, _, d in thousands if d is not None), None)
        if both:
            hint += f", or, if ',' is the decimal comma there ({both[0]} meaning {both[1]}), with a decimal point"
    if decimal:
        hint += (f"; a decimal comma? write numbers with a decimal point (e.g. {decimal[0][1]} for {decimal[0][0]}), "
                 "or save the file from a spreadsheet set to an English locale")
    return hint


def curate_activities(
    raw_df: pd.DataFrame,
    *,
    activity_types: Sequence[str] = ("IC50",),
    censored: Literal["drop", "keep_as_value"] = "drop",
    drop_flagged: bool = True,
    assay_description_regex: str | None = None,
    canonical_tautomer: bool = False,
    combine_types: Literal["first_listed", "median"] | None = None,
) -> tuple[pd.DataFrame, CurationReport]:
    """Filter, convert, standardize and merge raw activities into a compound library.

    Parameters
    ----------
    raw_df : pandas.DataFrame
        Output of a :mod:`screenbai.chem.acquire` reader (standard columns).
    activity_types : sequence of str
        ``standard_type`` values to keep (case-insensitive; empty keeps all).
    censored : {"drop", "keep_as_value"}
        Rows with relation ``>``, ``<``, ``>=``, ``<=``, ``~``: drop them, or keep the
        bound as if it were the value.  A missing relation counts as ``=``.
    drop_flagged : bool
        Drop rows with a ``data_validity_comment`` or ``potential_duplicate`` true.
    assay_description_regex : str, optional
        Keep only rows whose ``assay_description`` matches (case-insensitive search),
        e.g. ``r"cyclin[ -/]?A\\b|CycA"``.
    canonical_tautomer : bool
        Also canonicalize tautomers (slower; off by default), so that tautomers drawn differently
        (2-hydroxypyridine, 2-pyridone) are one compound; off, they are two
        (:func:`~screenbai.chem.standardize.compound_key`).  Stereo is kept: a structure whose
        canonical tautomer would lose a stereocentre or E/Z bond it specifies is kept as drawn (logged).
    combine_types : {"first_listed", "median"}, optional
        How one compound's values of several activity types combine (see :data:`COMBINE_TYPES`); required when
        the rows kept hold several types (IC50 and Ki are different quantities: never merged unless asked).

    Raises
    ------
    ValueError
        Unusable options or columns; several activity types kept and no ``combine_types``; or no row kept (the
        message says which checks dropped the rows and what the data holds instead, e.g. its activity types).

    Returns
    -------
    library : pandas.DataFrame
        ``compound_id, smiles, inchikey, activity_nM, pActivity, n_measurements, source_ids``
        sorted by ``compound_id``, one row per :func:`~screenbai.chem.standardize.compound_key`;
        ``inchikey`` is the standard InChIKey (two tautomers kept apart share it); ``activity_nM`` is
        the median in log10 space of the kept measurements; ``pActivity = 9 - log10(activity_nM)``.
    report : CurationReport
        Counts per drop reason; ``n_input == n_output_rows + sum(dropped)``; rows merged per reason,
        ``n_output_rows - sum(merged) == n_compounds``.

    Notes
    -----
    Mass concentrations (``ug.mL-1``) are converted with the molecular weight of the SMILES
    as given (the substance tested, counter-ions included): nM = value * 1e6 / MW.
    A row without ``standard_value`` whose ``pchembl_value`` p lies in 0-15, with relation '=' (or none), is
    kept with the value 10^(9 - p) nM, counted as ``"value recovered from pchembl_value"`` (report.altered).
    A value outside 1 fM - 1 M once in nM (pActivity 15 - 0, the range of pChEMBL values) measures no
    binding (a unit slip, a typing error): it is dropped under its own reason and named in the log.
    """
    pattern = _checked_options(raw_df, censored, assay_description_regex, combine_types, activity_types)
    checks = _RowChecks(frozenset(t.strip().lower() for t in activity_types), pattern, censored, drop_flagged)
    rows = _rows(raw_df)
    ids = _row_ids(rows)
    n = len(rows)

    reason: list[str | None] = [None] * n
    value_nM = [math.nan] * n
    is_mass = [False] * n
    from_pchembl = [False] * n
    for i, row in enumerate(rows):
        outcome = checks.first_failure(row)
        if isinstance(outcome, str):
            reason[i] = outcome
        else:
            value_nM[i], is_mass[i], from_pchembl[i] = outcome
    # the rule log shows what was not a number (e.g. 5,5 with a decimal comma) and which units were not read
    # ('mg/kg', or 'ÂµM' from a file decoded twice): the counts alone name no value
    for why, column in (("non-numeric value", "standard_value"), ("unknown unit", "standard_units")):
        which = [i for i in range(n) if reason[i] == why]
        if which:
            logger.warning("%d rows dropped as %r: %s", len(which), why, _holds(rows, column, which))

    _refuse_mixed_types(rows, reason, combine_types)
    _say_respelled_units(rows, reason)
    smiles_in = [str(row["canonical_smiles"]).strip() for row in rows]
    std_smiles, std_inchikey, std_key, structures_dropped = _attach_structures(
        smiles_in, ids, reason, value_nM, is_mass, canonical_tautomer
    )
    mixed_types = _combine_types(rows, reason, std_key, combine_types, activity_types)
    kept_idx = [i for i in range(n) if reason[i] is None]
    dropped = _count_reasons(reason)
    assert n == len(kept_idx) + sum(dropped.values()), "curation lost track of rows"
    if not kept_idx:
        raise ValueError(_why_nothing_kept(rows, reason, activity_types, assay_description_regex))
    kept = pd.DataFrame(
        {
            "id": [ids[i] for i in kept_idx],
            "smiles": [std_smiles[i] for i in kept_idx],
            "inchikey": [std_inchikey[i] for i in kept_idx],
            "key": [std_key[i] for i in kept_idx],
            "value_nM": np.array([value_nM[i] for i in kept_idx], dtype=float),
        }
    )
    library, merged, largest_fold, wide = _merge_by_key(kept)
    # keep_as_value changes what a censored row says ('>100' becomes 100): counted per relation, never silent
    altered: dict[str, int] = {}
    for i in kept_idx:
        if _relation(rows[i]) in CENSORED_RELATIONS:
            why = f"censored {_relation(rows[i])!r} taken as the value"
            altered[why] = altered.get(why, 0) + 1
    if altered:
        logger.warning(
            "%d censored values kept as exact values (censored: keep_as_value): %s",
            sum(altered.values()), ", ".join(f"{n} {r}" for r, n in sorted(altered.items())),
        )
    recovered = [ids[i] for i in kept_idx if from_pchembl[i]]
    if recovered:  # no standard_value, a pChEMBL value: the value is 10^(9 - p) nM, counted and named
        altered["value recovered from pchembl_value"] = len(recovered)
        logger.warning("%d rows without standard_value kept with the value recovered from pchembl_value "
                       "(10^(9 - p) nM): %s", len(recovered), ", ".join(recovered[:10]))
    report = CurationReport(
        n_input=n,
        n_output_rows=len(kept_idx),
        n_compounds=len(library),
        dropped=dropped,
        structures_dropped=structures_dropped,
        settings={
            "activity_types": list(activity_types),
            "censored": censored,
            "drop_flagged": drop_flagged,
            "assay_description_regex": assay_description_regex,
            "canonical_tautomer": canonical_tautomer,
            "combine_types": combine_types,
        },
        mixed_type_compounds=mixed_types,
        altered=dict(sorted(altered.items())),
        merged=merged,
        merged_largest_fold=largest_fold,
        n_wide_merges=len(wide),
        wide_merges=wide[:WIDE_MERGES_NAMED],
    )
    if wide:
        logger.warning("%d compounds merge measurements more than %g-fold apart (their median stands for values that "
                       "disagree: another assay, a unit slip?); widest: %s", len(wide), WIDE_MERGE_FOLD,
                       ", ".join(f"{c} ({f:.3g}-fold)" for c, f in wide[:5]))
    logger.info(
        "curated %d rows -> %d measurements -> %d compounds; dropped %s; %d rows merged (median): %s",
        n, report.n_output_rows, report.n_compounds, dropped, sum(merged.values()),
        ", ".join(f"{k} {r.removeprefix('merged: ')} (up to {largest_fold[r]:.3g}-fold apart)"
                  for r, k in merged.items()) or "none",
    )
    return library, report


LIBRARY_COLUMNS = ("compound_id", "smiles", "inchikey", "activity_nM", "pActivity", "n_measurements", "source_ids")


def _geometric_median(values: np.ndarray) -> float:
    """Median in log10 space: the middle value (odd n) or the geometric mean of the two
    middle values (even n); exact for single measurements."""
    v = np.sort(np.asarray(values, dtype=float))
    k = v.size // 2
    if v.size % 2 or v[k - 1] == v[k]:
        return float(v[k])
    return float(math.sqrt(v[k - 1]) * math.sqrt(v[k]))


def _merge_by_key(
    kept: pd.DataFrame,
) -> tuple[pd.DataFrame, dict[str, int], dict[str, float], list[tuple[str, float]]]:
    """One row per compound key (plain Python grouping: per-group pandas calls are ~100x slower);
    the rows merged per reason of :data:`MERGE_REASONS`, with the largest fold each combined; and the
    compounds whose measurements span more than WIDE_MERGE_FOLD, widest first."""
    groups: dict[str, list[tuple[str, str, str, float]]] = {}
    for cid, smi, inchikey, key, val in zip(kept["id"], kept["smiles"], kept["inchikey"], kept["key"],
                                            kept["value_nM"]):
        groups.setdefault(key, []).append((str(cid), smi, inchikey, float(val)))
    another_id, replicate = MERGE_REASONS
    merged = dict.fromkeys(MERGE_REASONS, 0)
    fold = dict.fromkeys(MERGE_REASONS, 1.0)
    rows = []
    spreads: list[tuple[str, float]] = []  # (compound id, fold) of every compound of several measurements
    for key in sorted(groups):
        members = sorted(groups[key])  # by id, then SMILES: deterministic representative
        med_nM = _geometric_median(np.array([m[3] for m in members]))
        ids = sorted({m[0] for m in members})
        # each id's first row stands for the id, its other rows are replicates; all ids but one merge
        values_of: dict[str, list[float]] = {}
        for m in members:
            values_of.setdefault(m[0], []).append(m[3])
        merged[another_id] += len(ids) - 1
        merged[replicate] += len(members) - len(ids)
        if len(ids) > 1:
            fold[another_id] = max(fold[another_id], _fold([m[3] for m in members]))
        for values in values_of.values():
            if len(values) > 1:
                fold[replicate] = max(fold[replicate], _fold(values))
        if len(members) > 1:
            spreads.append((ids[0], _fold([m[3] for m in members])))
        rows.append((ids[0], members[0][1], members[0][2], med_nM, 9.0 - math.log10(med_nM), len(members),
                     ";".join(ids)))
    lib = pd.DataFrame(
        {
            "compound_id": pd.Series([r[0] for r in rows], dtype=object),
            "smiles": pd.Series([r[1] for r in rows], dtype=object),
            "inchikey": pd.Series([r[2] for r in rows], dtype=object),
            "activity_nM": pd.Series([r[3] for r in rows], dtype="float64"),
            "pActivity": pd.Series([r[4] for r in rows], dtype="float64"),
            "n_measurements": pd.Series([r[5] for r in rows], dtype="int64"),
            "source_ids": pd.Series([r[6] for r in rows], dtype=object),
        },
        columns=list(LIBRARY_COLUMNS),
    )
    lib = lib.sort_values(["compound_id", "inchikey"], kind="mergesort").reset_index(drop=True)
    wide = sorted((w for w in spreads if w[1] > WIDE_MERGE_FOLD), key=lambda w: (-w[1], w[0]))
    return lib, {r: n for r, n in merged.items() if n}, {r: fold[r] for r, n in merged.items() if n}, wide


def _fold(values: list[float]) -> float:
    """Highest over lowest value: how far apart the measurements merged into one compound were."""
    return max(values) / min(values)

"""Bioactivity and structure tables from files: ChEMBL web exports (or their snake_case derivatives)
and chemists' own CSV/TSV/SDF tables.

Every activity reader returns one :class:`pandas.DataFrame` whose first columns are
:data:`STANDARD_COLUMNS` (missing ones filled with NA); other columns of the source follow,
snake_cased.  Values are kept as delivered by the source (``standard_value`` is text, as in the
ChEMBL API); :func:`screenbai.chem.curate.curate_activities` parses, converts and filters them.
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import itertools
import logging
import re
from pathlib import Path
from typing import IO, Any

import pandas as pd

from screenbai.chem.curate import CENSORED_RELATIONS
from screenbai.chem.standardize import MAX_HEAVY_ATOMS
from screenbai.chem.units import ACCEPTED_UNITS, same_unit, table_units
from screenbai.textfiles import not_utf8, open_text

logger = logging.getLogger("screenbai.chem")

#: Columns every acquisition function returns, in this order.
STANDARD_COLUMNS: tuple[str, ...] = (
    "molecule_chembl_id",
    "canonical_smiles",
    "standard_type",
    "standard_relation",
    "standard_value",
    "standard_units",
    "data_validity_comment",
    "potential_duplicate",
    "assay_chembl_id",
    "assay_description",
    "assay_type",
    "target_chembl_id",
    "document_chembl_id",
)

#: Columns a ChEMBL export (or a derived snake_case file) must contain.
REQUIRED_EXPORT_COLUMNS: tuple[str, ...] = (
    "molecule_chembl_id",
    "canonical_smiles",
    "standard_type",
    "standard_value",
    "standard_units",
)

_HEADER_ALIASES = {"smiles": "canonical_smiles", "molecule_chembl_id_": "molecule_chembl_id"}
_NA_STRINGS = {"", "None", "none", "NULL", "null", "NaN", "nan", "N/A", "NA"}


# ----------------------------------------------------------------------------------------
# helpers shared by all readers
# ----------------------------------------------------------------------------------------


def _snake(name: str) -> str:
    s = re.sub(r"[^0-9a-zA-Z]+", "_", str(name).strip()).strip("_").lower()
    return _HEADER_ALIASES.get(s, s)


def _to_bool(value: Any) -> Any:
    if value is None or value is pd.NA:
        return pd.NA
    if isinstance(value, float) and value != value:
        return pd.NA
    s = str(value).strip().lower()
    if s in {"true", "1", "t", "yes", "y", "1.0"}:
        return True
    if s in {"false", "0", "f", "no", "n", "0.0"}:
        return False
    return pd.NA


def _clean_value(v: Any) -> Any:
    if v is None or v is pd.NA:
        return None
    if isinstance(v, float) and v != v:
        return None
    if isinstance(v, str):
        v = v.strip()
        return None if v in _NA_STRINGS else v
    return v


def to_standard_columns(df: pd.DataFrame) -> pd.DataFrame:
    """Order/complete the standard columns, normalise NA (None), relations and flags.

    Text columns are ``object`` dtype with ``None`` for missing values (same with pandas 2
    and 3); ``potential_duplicate`` is the nullable ``boolean`` dtype.
    """
    out = pd.DataFrame(index=pd.RangeIndex(len(df)))
    extra = [c for c in df.columns if c not in STANDARD_COLUMNS]
    for col in list(STANDARD_COLUMNS) + extra:
        values = df[col].tolist() if col in df.columns else [None] * len(df)
        if col == "potential_duplicate":
            out[col] = pd.array([_to_bool(v) for v in values], dtype="boolean")
            continue
        cleaned = [_clean_value(v) for v in values]
        if col == "standard_relation":
            cleaned = [None if v is None else (str(v).strip("'\" ") or None) for v in cleaned]
        out[col] = pd.Series(cleaned, index=out.index, dtype=object)
    return out


_DELIMITERS = {";": "';'", "\t": "tab", ",": "','"}


def _sniff_delimiter(header: str) -> str:
    counts = {d: header.count(d) for d in _DELIMITERS}
    best = max(counts, key=lambda d: counts[d])
    return best if counts[best] > 0 else ","


def _check_rows_match_header(path: Path, lines: list[str], sep: str) -> None:
    """Refuse a header whose delimiter differs from the rows' (pandas would read every row
    as one field and curation would drop them all as 'missing value')."""
    header = next(csv.reader([lines[0]], delimiter=sep))
    rows = [r for r in csv.reader(lines[1:], delimiter=sep) if any(f.strip() for f in r)]
    if not rows or any(len(r) == len(header) for r in rows):
        return
    first = next(line for line in lines[1:] if line.strip())
    for other, name in _DELIMITERS.items():
        n_fields = len(next(csv.reader([first], delimiter=other)))
        if n_fields > 1 and (other != sep or len(header) == 1):
            told = (
                "holds one column"
                if len(header) == 1
                else f"is separated by {_DELIMITERS[sep]} ({len(header)} columns)"
            )
            raise ValueError(
                f"{path}: the header {told} but the rows are separated by {name} ({n_fields} fields in the "
                "first row): write the header with the rows' delimiter"
            )
    raise ValueError(
        f"{path}: none of the first {len(rows)} rows has the header's {len(header)} columns "
        f"(delimiter {_DELIMITERS[sep]}); check the file's delimiter and quoting"
    )


def read_text_table(path: Path, sep: str | None = None) -> pd.DataFrame:
    """Read a delimited text table (gzip allowed) as text; every problem names the file."""
    try:
        with open_text(path) as fh:
            head = [line for line in itertools.islice(fh, 51)]
        if not any(line.strip() for line in head):
            raise ValueError(f"{path}: the file is empty; expected a header line and data rows")
        sep = sep or _sniff_delimiter(head[0])
        _check_rows_match_header(path, head, sep)
        with open_text(path) as fh:
            df = pd.read_csv(fh, sep=sep, dtype=str, keep_default_na=False, quotechar='"')
        # pandas renames a repeated column ("ic50", "ic50.1"); remember which, so that naming one is refused
        names = next(csv.reader([head[0].rstrip("\r\n")], delimiter=sep))
        df.attrs["repeated_columns"] = sorted({n for n in names if names.count(n) > 1})
        with open_text(path) as fh:
            df.attrs["source_lines"] = _data_lines(fh, sep, len(df))
        return df
    except UnicodeDecodeError as exc:
        raise not_utf8(path, exc) from exc
    except (pd.errors.ParserError, OSError, EOFError) as exc:  # malformed rows, corrupt gzip
        raise ValueError(f"{path}: cannot be read as a delimited text table: {exc}") from exc


def _data_lines(fh: IO[str], sep: str, n_rows: int) -> list[int]:
    """The line on which each data row starts (the header is line 1): pandas skips blank lines
    and a quoted field may span lines, so the row's index is not its line."""
    reader = csv.reader(fh, delimiter=sep, quotechar='"')
    lines, start = [], 1
    for fields in reader:
        if fields and start > 1:  # a blank line reads as []; the first record is the header
            lines.append(start)
        start = reader.line_num + 1
    return lines if len(lines) == n_rows else list(range(2, n_rows + 2))


def _require_rows(path: Path, df: pd.DataFrame) -> None:
    if len(df) == 0:
        raise ValueError(f"{path}: holds no data rows (columns: {list(df.columns)})")


# ----------------------------------------------------------------------------------------
# ChEMBL web interface exports and derived files
# ----------------------------------------------------------------------------------------


def is_chembl_export(path: str | Path) -> bool:
    """Whether a text file's header is a ChEMBL web export's (it has the ``Molecule ChEMBL ID`` column)."""
    try:
        with open_text(Path(path)) as fh:
            return "Molecule ChEMBL ID" in fh.readline()
    except UnicodeDecodeError as exc:
        raise not_utf8(Path(path), exc) from exc


def read_chembl_export(path: str | Path) -> pd.DataFrame:
    """Read a CSV exported from the ChEMBL web interface (or a snake_case derivative).

    Parameters
    ----------
    path : str or Path
        ``;``-separated, double-quoted export (headers such as ``Molecule ChEMBL ID``, ``Smiles``, relations like
        ``'='``), optionally gzipped; comma/tab separated files with snake_case headers are detected automatically.

    Returns
    -------
    pandas.DataFrame
        :data:`STANDARD_COLUMNS` first, then the remaining columns snake_cased.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        If a required column is missing (the message lists the columns found).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"ChEMBL export not found: {path}")
    raw = read_text_table(path)
    _require_rows(path, raw)
    df = raw.rename(columns={c: _snake(c) for c in raw.columns})
    df = df.loc[:, ~df.columns.duplicated()]
    missing = [c for c in REQUIRED_EXPORT_COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(
            f"{path}: required column {missing[0]!r} not found"
            + (f" (also missing: {missing[1:]})" if len(missing) > 1 else "")
            + f"; columns found: {list(raw.columns)}. Expected a ChEMBL web export "
            "(';'-separated, headers like 'Molecule ChEMBL ID', 'Smiles', 'Standard Value') "
            "or a table with snake_case headers."
        )
    out = to_standard_columns(df)
    out.attrs["source_lines"] = raw.attrs["source_lines"]
    logger.info("read %d activity rows from ChEMBL export %s", len(out), path)
    return out


# ----------------------------------------------------------------------------------------
# chemists' own tables (CSV/TSV/SDF)
# ----------------------------------------------------------------------------------------

# every relation curation reads, longest first ('=>' is not '=' and a value '> 10')
_RELATIONS = sorted(CENSORED_RELATIONS | {"=", "=="}, key=lambda r: (-len(r), r))
_VALUE_WITH_RELATION = re.compile(rf"^\s*({'|'.join(map(re.escape, _RELATIONS))})?\s*(.*?)\s*$")


def _is_sdf(path: Path) -> bool:
    return ".sdf" in "".join(path.suffixes).lower() or path.suffix.lower() == ".sd"


def _read_table(path: Path, what: str) -> tuple[pd.DataFrame, bool]:
    """A chemist's CSV/TSV/SDF file as read (with at least one row), and whether it is SDF."""
    if not path.is_file():
        raise FileNotFoundError(f"{what} not found: {path}")
    is_sdf = _is_sdf(path)
    df = _read_sdf(path) if is_sdf else read_text_table(path)
    _require_rows(path, df)
    return df, is_sdf


def _read_sdf(path: Path) -> pd.DataFrame:
    """One row per SDF record: its properties, ``_Name`` (the title line), ``_structure_smiles``,
    ``_record`` (0-based) and ``_problem`` (why the record has no SMILES, else None)."""
    import shutil
    import tempfile

    from rdkit import Chem
    from rdkit.rdBase import BlockLogs

    rows: list[dict[str, Any]] = []
    bad: list[str] = []
    too_large: list[str] = []
    with contextlib.ExitStack() as stack:
        source = path
        with open(path, "rb") as fh:
            if fh.read(2) == b"\x1f\x8b":  # gzip: the indexed reader needs a plain file
                source = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="screenbai-sdf-"))) / "in.sdf"
                with gzip.open(path, "rb") as src, open(source, "wb") as dst:
                    shutil.copyfileobj(src, dst)
        stack.enter_context(BlockLogs())
        supplier = Chem.SDMolSupplier(str(source))
        # by index: iterating skips the records that follow some unreadable ones, without a word
        for i in range(len(supplier)):
            mol = supplier[i]
            if mol is None:
                title = supplier.GetItemText(i).split("\n", 1)[0].strip()
                bad.append(f"{i + 1} {title!r}")
                rows.append(
                    {"_Name": title, "_structure_smiles": None, "_problem": "unreadable SDF record", "_record": i}
                )
                continue
            # as written: RDKit would turn the id '007' into 7, the same as the id '7'
            props: dict[str, Any] = {k: str(v) for k, v in mol.GetPropsAsDict(True, False, False).items()}
            props["_Name"] = mol.GetProp("_Name") if mol.HasProp("_Name") else ""
            props["_problem"] = None
            if mol.GetNumHeavyAtoms() > MAX_HEAVY_ATOMS:  # RDKit's SMILES writer can crash on these
                too_large.append(f"{i + 1} {props['_Name']!r} ({mol.GetNumHeavyAtoms():,} heavy atoms)")
                props["_structure_smiles"] = None
                props["_problem"] = "structure too large"
            else:
                props["_structure_smiles"] = Chem.MolToSmiles(mol)
            props["_record"] = i
            rows.append(props)
    if bad:
        logger.warning("%s: SDF records RDKit cannot read (kept with no SMILES): %s", path, "; ".join(bad[:20]))
    if too_large:
        logger.warning(
            "%s: SDF records larger than the %d heavy atoms curation can identify (kept with no SMILES): %s",
            path, MAX_HEAVY_ATOMS, "; ".join(too_large),
        )
    return pd.DataFrame(rows)


def read_activity_table(
    path: str | Path,
    *,
    smiles_column: str | None,
    activity_column: str,
    id_column: str | None = None,
    units: str | None = None,
    activity_type: str = "IC50",
    relation_column: str | None = None,
    config_key: str = "",
) -> pd.DataFrame:
    """Read a chemist's activity table (CSV, TSV or SDF) into the standard columns.

    The table's own columns named like a standard column (``standard_relation``,
    ``standard_units``, ``standard_type``, ``data_validity_comment``, ``potential_duplicate``,
    ``assay_description``, ``target_chembl_id``, ... in any case or spacing) are used, never
    dropped or overwritten: see :func:`_own_columns`.

    Parameters
    ----------
    path : str or Path
        ``.csv``/``.tsv``/``.txt`` (delimiter sniffed, gzip allowed) or ``.sdf``/``.sdf.gz``.
    smiles_column : str or None
        Column holding SMILES.  For SDF, ``None`` takes the structure of each record.
    activity_column : str
        Column holding the activity value.  Values such as ``">10000"`` are split into
        relation and value.
    id_column : str, optional
        Compound identifier column (``"_Name"`` is the SDF title line).  Without it the table's
        ``molecule_chembl_id`` column, else ids ``<file stem>_<row>`` are generated.
    units : str, optional
        Unit of the values (one of :data:`ACCEPTED_UNITS`); see :func:`table_units` for a unit
        named in the activity column's header and a ``standard_units`` column.
    activity_type : str
        Written to ``standard_type`` (e.g. ``"IC50"``) where the table has no ``standard_type``
        column of its own (or a blank one); curation keeps the rows of the declared type.
    relation_column : str, optional
        Column holding relations (``=``, ``>``, ...); default: the table's ``standard_relation``.
    config_key : str
        The config mapping the arguments come from (``"source"``): messages then name its keys
        (``source.units``).

    Returns
    -------
    pandas.DataFrame
        :data:`STANDARD_COLUMNS` first, then the table's other columns.

    Raises
    ------
    ValueError
        If a named column does not exist (the message lists the available ones), or the table's own columns
        contradict the arguments (e.g. its ``standard_units`` and ``units``).
    """
    path = Path(path)
    df, is_sdf = _read_table(path, "activity table")
    _check_named_columns(
        path,
        df,
        is_sdf,
        smiles_column=smiles_column,
        activity_column=activity_column,
        id_column=id_column,
        relation_column=relation_column,
    )
    check_not_log_scale(activity_column, activity_type, str(path))
    pchembl = str(activity_type).strip().lower() == "pchembl"
    key = f"{config_key}." if config_key else ""
    used = {smiles_column, activity_column, id_column, relation_column}
    own = _own_columns(path, df, used)
    out = pd.DataFrame(index=df.index)
    if smiles_column is None:
        out["canonical_smiles"] = df.get("_structure_smiles", pd.Series(pd.NA, index=df.index))
    else:
        out["canonical_smiles"] = df[smiles_column]
    if id_column is None and "molecule_chembl_id" in own:
        id_column = own.pop("molecule_chembl_id")
        logger.info("%s: compound ids from its column %r", path, id_column)
    if id_column is not None:
        out["molecule_chembl_id"] = df[id_column].astype("object")
    else:
        width = len(str(len(df)))
        out["molecule_chembl_id"] = [f"{path.name.split('.')[0]}_{i + 1:0{width}d}" for i in range(len(df))]
    if relation_column is None and "standard_relation" in own:
        relation_column = own.pop("standard_relation")
        logger.info("%s: relations ('=', '>', ...) from its column %r", path, relation_column)
    elif relation_column is not None and "standard_relation" in own:
        _refuse_disagreeing(path, df, relation_column, own.pop("standard_relation"), f"{key}relation_column")
    _refuse_unread_relations(path, df, used, relation_column, own, f"{key}relation_column")
    out["standard_relation"], out["standard_value"] = _relations(path, df, activity_column, relation_column)
    types = df[own.pop("standard_type")] if "standard_type" in own and not pchembl else None
    # the table's own type where it gives one: curation keeps the declared type's rows and counts the others
    out["standard_type"] = activity_type if types is None else [activity_type if _blank(t) else t for t in types]
    if pchembl:  # -log10(molar) values have no unit (converted to nM by screening.prepare_activities)
        out["standard_units"], units_read = None, "none: pChEMBL values (-log10 molar), converted to nM"
    else:
        own_units = own.pop("standard_units", None)
        if own_units is None:
            _refuse_unread_units(path, df, used, table_units(activity_column, units, str(path), f"{key}units")[0])
        out["standard_units"], units_read = _row_units(path, df, activity_column, units, own_units, f"{key}units")
    for name in _ROW_DESCRIPTORS:  # what the config has no key for: as the table gives it
        if name in own:
            out[name] = df[own.pop(name)]
    for name, col in own.items():  # a standard column the config maps elsewhere: kept under another name
        out[f"source_{name}"] = df[col]
        logger.info("%s: its column %r is kept as source_%s (the config names another column)", path, col, name)
    for col in df.columns:
        name = _snake(col) or col
        if col not in used and col not in _SDF_INTERNAL and name not in out.columns and name not in STANDARD_COLUMNS:
            out[name] = df[col]
    result = to_standard_columns(out)
    result.attrs["units"] = units_read  # the run's provenance and report say it
    logger.info("read %d activity rows from %s", len(result), path)
    return result


#: The table's own columns that describe each row and that no config key maps: copied as they are.
_ROW_DESCRIPTORS = (
    "data_validity_comment", "potential_duplicate", "assay_chembl_id", "assay_description", "assay_type",
    "target_chembl_id", "document_chembl_id",
)


def _blank(v: Any) -> bool:
    return _clean_value(v) is None


def _own_columns(path: Path, df: pd.DataFrame, used: set[str | None]) -> dict[str, str]:
    """Standard name -> the table's column of that name (snake_cased: ``Standard Units``), among the
    columns the arguments do not name; two columns of one name are refused (which one holds it is unknown)."""
    own: dict[str, list[str]] = {}
    for col in df.columns:
        name = _snake(col)
        if col not in used and name in STANDARD_COLUMNS:
            own.setdefault(name, []).append(col)
    for name, cols in own.items():
        if len(cols) > 1:
            raise ValueError(
                f"{path}: columns {cols} all read as {name!r}; which one holds it is ambiguous: rename all but one"
            )
    return {name: cols[0] for name, cols in own.items()}


def _refuse_disagreeing(path: Path, df: pd.DataFrame, named: str, own: str, key: str) -> None:
    """The column a key names and the table's own column of that meaning must say the same."""
    a, b = df[named].map(_clean_value), df[own].map(_clean_value)
    differ = [i for i, (x, y) in enumerate(zip(a, b)) if x != y]
    if differ:
        i = differ[0]
        line = df.attrs.get("source_lines", list(range(2, len(df) + 2)))[i]
        raise ValueError(
            f"{path}: {key} names column {named!r} but the table's own column {own!r} says otherwise on "
            f"{len(differ)} rows (first: line {line}, {a.iloc[i]!r} vs {b.iloc[i]!r}); which holds the rows' "
            f"relations is ambiguous: set {key}: {own!r}, or remove or rename one of the two columns"
        )


def _relations(
    path: Path, df: pd.DataFrame, activity_column: str, relation_column: str | None
) -> tuple[list[Any], list[Any]]:
    """Relation and value of each row: a relation written in the value (``>100``) or in the relation
    column; both, and different, is refused."""
    rel, val = _split_relations(df[activity_column].astype("object"))
    if relation_column is None:
        return rel, val
    lines = df.attrs.get("source_lines", list(range(2, len(df) + 2)))
    for i, given in enumerate(df[relation_column].map(_clean_value)):
        written = rel[i]
        if given is not None and written is not pd.NA and str(given).strip("'\" ") != written:
            raise ValueError(
                f"{path}: line {lines[i]}: the value {df[activity_column].iloc[i]!r} of {activity_column!r} says "
                f"{written!r} but its relation column {relation_column!r} says {given!r}; correct one of them"
            )
        if given is not None:
            rel[i] = given
    return rel, val


#: column names (snake_cased) that say a row's relation or unit although not ChEMBL's standard_relation / standard_units
_RELATION_LIKE = {"relation", "relations", "qualifier", "activity_qualifier", "activity_relation", "operator"}
_UNIT_LIKE = {"unit", "units", "activity_unit", "activity_units", "value_unit", "value_units"}


def _refuse_unread_relations(
    path: Path, df: pd.DataFrame, used: set[str | None], relation_column: str | None, own: dict[str, str], key: str
) -> None:
    """A column named like a relation (``relation``, ``qualifier``) that no key maps, holding '>' or '<': its
    censored values would be read as exact values (a '> 10000' as 10000 nM), so it is refused."""
    if relation_column is not None or "standard_relation" in own:
        return
    for col in (c for c in df.columns if c not in used and _snake(c) in _RELATION_LIKE):
        held = df[col].map(_clean_value).dropna().astype(str).str.strip("'\" ")
        censored = held[held.isin(CENSORED_RELATIONS)]
        if len(censored):
            raise ValueError(
                f"{path}: its column {col!r} holds relations ({censored.iloc[0]!r} on {len(censored)} rows) that are "
                f"not read: their values would count as exact. Set {key}: {col!r}, or rename the column "
                "standard_relation"
            )


def _refuse_unread_units(path: Path, df: pd.DataFrame, used: set[str | None], unit: str) -> None:
    """A column named like a unit (``unit``, ``units``) that no key maps, naming units other than the one the
    values are read in: its rows would be read in that unit, off by its factor, so it is refused."""
    for col in (c for c in df.columns if c not in used and _snake(c) in _UNIT_LIKE):
        held = df[col].map(_clean_value).dropna().astype(str)
        other = held[~held.map(lambda u: u in ACCEPTED_UNITS and same_unit(u, unit))]
        if len(other):
            raise ValueError(
                f"{path}: its column {col!r} gives units ({other.iloc[0]!r} on {len(other)} rows) that are not "
                f"read: every value is read in {unit}. Rename the column standard_units so that each row's "
                "unit is converted, or remove it if it does not hold the values' units"
            )


def _row_units(
    path: Path, df: pd.DataFrame, activity_column: str, units: str | None, own: str | None, key: str
) -> tuple[Any, str]:
    """Each row's unit: the table's own ``standard_units`` column when it has one (each row converted by
    curation), else the unit :func:`table_units` finds.  A declared or header-named unit that the
    column contradicts is refused; the column's blank rows take that unit.  Returns the units and
    how they were read, in words."""
    unit, how = table_units(activity_column, units, str(path), key)
    declared = units is not None or how.startswith("named")
    if own is None:
        read_in = f"{unit} ({how})" if declared else how
        (logger.info if declared else logger.warning)("%s: values of %r read in %s", path, activity_column, read_in)
        return unit, read_in
    given = df[own].map(_clean_value)
    if declared:
        counts = given.value_counts()
        other = [f"{u} ({n} rows)" for u, n in counts.items() if u not in ACCEPTED_UNITS or not same_unit(u, unit)]
        if other:
            raise ValueError(
                f"{path}: its column {own!r} gives each row's unit, and not all are {unit} ({how}): "
                f"{', '.join(other)}. Remove {key} so that each row's unit is converted (curation counts "
                "the rows of a unit it does not know), or correct the column"
            )
    blank = int(given.isna().sum())
    if blank and declared:
        logger.info("%s: %d rows with no unit in %r read in %s (%s)", path, blank, own, unit, how)
        filled = [unit if u is None else u for u in given]
        return filled, f"each row's from its column {own!r} ({unit}, {how}, where blank)"
    logger.info("%s: each row's unit from its column %r", path, own)
    return given.tolist(), f"each row's from its column {own!r}"


#: names of -log10(molar) potencies (pIC50, pKi, ...) and of logarithms (log_ic50, logKi)
_LOG_SCALE_NAME = re.compile(r"^(p|log|log10|neglog)_?(ic50|ki|kd|ec50|xc50|ac50|gi50|ed50)$|^(log|log10|neglog|plog)$")


def check_not_log_scale(activity_column: str | None, activity_type: str | None, where: str) -> None:
    """Refuse a table whose activity column or declared type names logarithmic values (pIC50,
    log_ki) unless it is declared pChEMBL: read as concentrations in nM, a pIC50 of 8 would
    become 8 nM and the most potent compounds the weakest."""
    if str(activity_type or "").strip().lower() == "pchembl":
        return
    named = [
        f"{what} {name!r}"
        for what, name in (("activity_column", activity_column), ("activity_type", activity_type))
        if name and any(_LOG_SCALE_NAME.match(w) for w in re.split(r"[^a-z0-9]+", str(name).lower()) if w)
    ]
    if named:
        raise ValueError(
            f"{where}: {' and '.join(named)} names logarithmic values, but the values are read as "
            "concentrations in the declared units. For -log10(molar) values (pIC50, pKi, ...) "
            "declare activity_type: pChEMBL (converted to nM as 10^(9 - p)); otherwise give the "
            "concentrations themselves with their units"
        )


_SDF_INTERNAL = ("_structure_smiles", "_record", "_problem")


class ColumnsNotNamed(ValueError):
    """A CSV/TSV table of structures read without its id or SMILES column named (``read_structure_table``)."""


def read_structure_table(
    path: str | Path, *, id_column: str | None = None, smiles_column: str | None = None
) -> pd.DataFrame:
    """Read a table of structures without activities (CSV, TSV or SDF), one row per input row.

    Parameters
    ----------
    path : str or Path
        ``.csv``/``.tsv``/``.txt`` (delimiter sniffed, gzip allowed) or ``.sdf``/``.sdf.gz``.
    id_column, smiles_column : str, optional
        The columns holding the compound id and its SMILES, both required for a text table; for SDF the title
        line (``"_Name"``) and each record's structure by default.

    Returns
    -------
    pandas.DataFrame
        ``source_row`` (text: the line where the row starts, the header being line 1; SDF: the record's number
        from 1), ``compound_id`` and ``smiles`` as written, and ``problem``: why an SDF record has no SMILES
        ("unreadable SDF record", "structure too large"), else None; as objects.  Nothing is dropped or checked
        here: curation reports blank, unparseable and duplicate rows by ``source_row``.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        If the file is empty, not UTF-8, malformed, holds no data rows, or lacks a named column (the message
        names the file and lists the columns found; :class:`ColumnsNotNamed` when a text table's are not named).
    """
    path = Path(path)
    df, is_sdf = _read_table(path, "structure table")
    available = [c for c in df.columns if c not in _SDF_INTERNAL]
    if is_sdf:
        if id_column is None:
            _refuse_untitled_sdf(path, df, available)
        id_column = id_column or "_Name"
        smiles_column = smiles_column or "_structure_smiles"
    elif id_column is None or smiles_column is None:
        raise ColumnsNotNamed(f"{path}: name the id and SMILES columns of a CSV/TSV table; its columns are {available}")
    for what, col in (("id", id_column), ("SMILES", smiles_column)):
        if col not in df.columns:
            raise ValueError(
                f"{path}: the {what} column {col!r} is not a column of the table; its columns are {available}"
            )
        _refuse_repeated(path, df, f"{what} column", col)
    rows = df["_record"].to_numpy() + 1 if is_sdf else df.attrs["source_lines"]
    problem = df["_problem"] if is_sdf and smiles_column == "_structure_smiles" else pd.Series(None, index=df.index)
    return pd.DataFrame(
        {
            "source_row": pd.array(rows, dtype="int64"),
            "compound_id": df[id_column].astype(object).to_numpy(),
            "smiles": df[smiles_column].astype(object).to_numpy(),
            "problem": pd.Series([p if isinstance(p, str) else None for p in problem], dtype=object),
        }
    )


def _refuse_untitled_sdf(path: Path, df: pd.DataFrame, available: list[str]) -> None:
    """The title lines are an SDF's compound ids by default: refuse a file where every one is blank (each record
    would be rejected as 'missing id'), naming the SD properties that may hold the ids."""
    if df["_Name"].map(lambda v: isinstance(v, str) and bool(v.strip())).any():
        return
    properties = [c for c in available if not c.startswith("_")]  # RDKit's own (_Name, _MolFileInfo ...) are none
    way = (f"name the SD property holding them with --id-column (properties: {properties})" if properties
           else "the records have no SD property either: give each record its id on its title line")
    raise ValueError(f"{path}: the title line of every record is empty, and it is the compound id by default; {way}")


def _check_named_columns(path: Path, df: pd.DataFrame, is_sdf: bool, **named: str | None) -> None:
    """Refuse a named column the table lacks (or no SMILES column for a text table)."""
    available = [c for c in df.columns if c not in _SDF_INTERNAL]
    if named["smiles_column"] is None and not is_sdf:
        raise ValueError(f"{path}: smiles_column is required for CSV/TSV tables; available columns: {available}")
    for arg, col in named.items():
        if col is not None and col not in df.columns:
            raise ValueError(f"{path}: {arg}={col!r} is not a column of the table; available columns: {available}")
        _refuse_repeated(path, df, arg, col)


def _refuse_repeated(path: Path, df: pd.DataFrame, arg: str, col: str | None) -> None:
    """A named column that the header holds twice: which one is meant is unknown."""
    if col is not None and col in df.attrs.get("repeated_columns", ()):
        raise ValueError(
            f"{path}: line 1: the {arg} {col!r} appears more than once in the header; rename the copies "
            "so that each column has its own name"
        )


def _split_relations(values: pd.Series) -> tuple[list[Any], list[Any]]:
    """Split values such as ``">10000"`` into relation (NA when absent) and value."""
    rel: list[Any] = []
    val: list[Any] = []
    for v in values:
        if v is None or (isinstance(v, float) and v != v):
            rel.append(pd.NA)
            val.append(pd.NA)
            continue
        m = _VALUE_WITH_RELATION.match(str(v))
        assert m is not None  # the pattern matches any text
        rel.append(m.group(1) if m.group(1) else pd.NA)
        val.append(m.group(2))
    return rel, val

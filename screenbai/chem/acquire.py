"""Acquire bioactivity tables: the ChEMBL web service, ChEMBL web exports, chemists' tables.

Every reader returns one :class:`pandas.DataFrame` whose first columns are
:data:`STANDARD_COLUMNS` (missing ones filled with NA); other columns of the source
follow, snake_cased.  Values are kept as delivered by the source (``standard_value``
is text, as in the ChEMBL API); :func:`screenbai.chem.curate.curate_activities`
parses, converts and filters them.
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import itertools
import logging
import re
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import pandas as pd

from screenbai.chem.curate import MAX_HEAVY_ATOMS
from screenbai.textfiles import not_utf8, open_text

logger = logging.getLogger("screenbai.chem")

__all__ = [
    "STANDARD_COLUMNS",
    "ChemblUnavailableError",
    "fetch_chembl_activities",
    "read_chembl_export",
    "read_activity_table",
    "read_structure_table",
    "is_chembl_export",
    "load_activities",
]

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

_TARGET_RE = re.compile(r"^CHEMBL\d+$")
_HEADER_ALIASES = {"smiles": "canonical_smiles", "molecule_chembl_id_": "molecule_chembl_id"}
_NA_STRINGS = {"", "None", "none", "NULL", "null", "NaN", "nan", "N/A", "NA"}
_LOCAL_FILE_HINT = (
    "Point the data source at a local file instead: in the workflow config use "
    "`kind: export` with `path: <file>` for a CSV downloaded from the ChEMBL web interface "
    "(target page > Activity > export CSV), or `kind: table` with `path`, `smiles_column` "
    "and `activity_column` for your own CSV/TSV/SDF table."
)


class ChemblUnavailableError(RuntimeError):
    """The ChEMBL web service could not be reached or answered with an error."""


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


def _finalize(df: pd.DataFrame) -> pd.DataFrame:
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


def _read_text_table(path: Path, sep: str | None = None) -> pd.DataFrame:
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
        ``;``-separated, double-quoted export (headers such as ``Molecule ChEMBL ID``,
        ``Smiles``, relations like ``'='``), optionally gzipped; comma/tab separated
        files with snake_case headers are detected automatically.

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
    raw = _read_text_table(path)
    _require_rows(path, raw)
    renamed = {c: _snake(c) for c in raw.columns}
    df = raw.rename(columns=renamed)
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
    out = _finalize(df)
    out.attrs["source_lines"] = raw.attrs["source_lines"]
    logger.info("read %d activity rows from ChEMBL export %s", len(out), path)
    return out


# ----------------------------------------------------------------------------------------
# chemists' own tables (CSV/TSV/SDF)
# ----------------------------------------------------------------------------------------

_VALUE_WITH_RELATION = re.compile(r"^\s*(>=|<=|>|<|~|=|≥|≤)?\s*(.*?)\s*$")


def _is_sdf(path: Path) -> bool:
    return ".sdf" in "".join(path.suffixes).lower() or path.suffix.lower() == ".sd"


def _read_table(path: Path, what: str) -> tuple[pd.DataFrame, bool]:
    """A chemist's CSV/TSV/SDF file as read (with at least one row), and whether it is SDF."""
    if not path.is_file():
        raise FileNotFoundError(f"{what} not found: {path}")
    is_sdf = _is_sdf(path)
    df = _read_sdf(path) if is_sdf else _read_text_table(path)
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
            props: dict[str, Any] = {k: str(v) for k, v in mol.GetPropsAsDict(True, False).items()}
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
    units: str = "nM",
    activity_type: str = "IC50",
    relation_column: str | None = None,
) -> pd.DataFrame:
    """Read a chemist's activity table (CSV, TSV or SDF) into the standard columns.

    Parameters
    ----------
    path : str or Path
        ``.csv``/``.tsv``/``.txt`` (delimiter sniffed, gzip allowed) or ``.sdf``/``.sdf.gz``.
    smiles_column : str or None
        Column holding SMILES.  For SDF, ``None`` takes the structure of each record.
    activity_column : str
        Column holding the activity value.  Values such as ``">10000"`` are split into
        relation and value when ``relation_column`` is not given.
    id_column : str, optional
        Compound identifier column (``"_Name"`` is the SDF title line).  Without it ids
        ``<file stem>_<row>`` are generated.
    units : str
        Unit of every value (e.g. ``"nM"``, ``"uM"``).
    activity_type : str
        Written to ``standard_type`` (e.g. ``"IC50"``).
    relation_column : str, optional
        Column holding relations (``=``, ``>``, ...).

    Returns
    -------
    pandas.DataFrame
        :data:`STANDARD_COLUMNS` first, then the table's other columns.

    Raises
    ------
    ValueError
        If a named column does not exist (the message lists the available ones).
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
    out = pd.DataFrame(index=df.index)
    if smiles_column is None:
        out["canonical_smiles"] = df.get("_structure_smiles", pd.Series(pd.NA, index=df.index))
    else:
        out["canonical_smiles"] = df[smiles_column]
    if id_column is not None:
        out["molecule_chembl_id"] = df[id_column].astype("object")
    else:
        width = len(str(len(df)))
        out["molecule_chembl_id"] = [f"{path.name.split('.')[0]}_{i + 1:0{width}d}" for i in range(len(df))]
    values = df[activity_column].astype("object")
    if relation_column is not None:
        out["standard_relation"] = df[relation_column]
        out["standard_value"] = values
    else:
        out["standard_relation"], out["standard_value"] = _split_relations(values)
    out["standard_type"] = activity_type
    out["standard_units"] = units
    used = {smiles_column, activity_column, id_column, relation_column, *_SDF_INTERNAL}
    for col in df.columns:
        name = _snake(col) or col
        if col not in used and name not in out.columns and name not in STANDARD_COLUMNS:
            out[name] = df[col]
    result = _finalize(out)
    logger.info("read %d activity rows from %s", len(result), path)
    return result


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


def read_structure_table(
    path: str | Path, *, id_column: str | None = None, smiles_column: str | None = None
) -> pd.DataFrame:
    """Read a table of structures without activities (CSV, TSV or SDF), one row per input row.

    Parameters
    ----------
    path : str or Path
        ``.csv``/``.tsv``/``.txt`` (delimiter sniffed, gzip allowed) or ``.sdf``/``.sdf.gz``.
    id_column, smiles_column : str, optional
        The columns holding the compound id and its SMILES; both are required for a text table.
        For SDF they default to the title line (``"_Name"``) and each record's structure.

    Returns
    -------
    pandas.DataFrame
        ``source_row`` (text: the line where the row starts, the header being line 1; SDF: the record's
        number from 1), ``compound_id`` and ``smiles`` as written, and ``problem``: why an SDF
        record has no SMILES ("unreadable SDF record", "structure too large"), else None; as
        objects.  Nothing is dropped or checked here: curation reports blank, unparseable and
        duplicate rows by ``source_row``.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        If the file is empty, not UTF-8, malformed, holds no data rows, or lacks a named column
        (the message names the file and lists the columns found).
    """
    path = Path(path)
    df, is_sdf = _read_table(path, "structure table")
    available = [c for c in df.columns if c not in _SDF_INTERNAL]
    if is_sdf:
        id_column = id_column or "_Name"
        smiles_column = smiles_column or "_structure_smiles"
    elif id_column is None or smiles_column is None:
        raise ValueError(f"{path}: name the id and SMILES columns of a CSV/TSV table; its columns are {available}")
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


# ----------------------------------------------------------------------------------------
# the live ChEMBL web service (chembl-webresource-client)
# ----------------------------------------------------------------------------------------

_API_FIELDS = STANDARD_COLUMNS + ("activity_id", "pchembl_value", "assay_variant_mutation")


def _validate_target(target_chembl_id: str) -> str:
    if not isinstance(target_chembl_id, str) or not _TARGET_RE.match(target_chembl_id.strip().upper()):
        raise ValueError(
            f"invalid ChEMBL target id {target_chembl_id!r}: expected 'CHEMBL' followed by digits, "
            "e.g. 'CHEMBL301' (CDK2) or 'CHEMBL2094128' (CDK2/cyclin A)"
        )
    return target_chembl_id.strip().upper()


def _cache_path(cache_dir: str | Path, target: str, types: Sequence[str]) -> Path:
    tag = "-".join(re.sub(r"[^0-9A-Za-z]+", "_", t).strip("_") for t in types) or "all"
    return Path(cache_dir) / f"chembl_{target}_{tag}.csv.gz"


@contextlib.contextmanager
def _client_settings(**values: Any) -> Iterator[Any]:
    """Temporarily set attributes of the client's Settings singleton; restore on exit."""
    from chembl_webresource_client.settings import Settings  # no network on import

    settings = Settings.Instance()
    saved = {k: (k in vars(settings), getattr(settings, k)) for k in values}
    try:
        for k, v in values.items():
            setattr(settings, k, v)
        yield settings
    finally:
        for k, (was_instance_attr, old) in saved.items():
            if was_instance_attr:
                setattr(settings, k, old)
            else:
                with contextlib.suppress(AttributeError):
                    delattr(settings, k)


def _activity_query(target: str, types: Sequence[str]) -> Any:
    """The client's lazy query for a target's activities, configured by the current Settings.

    Built from the client's QuerySet for the ``activity`` resource (collection ``activities``)
    rather than ``new_client``, whose import downloads the API schema with no timeout.
    """
    from chembl_webresource_client.query_set import (  # no network on import
        Model,
        QuerySet,
    )

    query = QuerySet(model=Model("activity", "activities", ("json",))).filter(target_chembl_id=target)
    if len(types) == 1:
        query = query.filter(standard_type=types[0])
    elif types:
        query = query.filter(standard_type__in=",".join(types))
    return query.only(*_API_FIELDS)


class _DeadlineExceeded(Exception):
    pass


def _records_within(query: Any, deadline: float) -> list[dict[str, Any]]:
    """All records of ``query``, or :class:`_DeadlineExceeded` after ``deadline`` seconds in total.

    The per-read timeout does not bound a server that trickles bytes; so the pages are read
    in a worker thread, and at the deadline the responses being read are shut down (urllib3's
    ``HTTPResponse.shutdown``), which ends the worker's blocking read.
    """
    reading: list[Any] = []
    query.query.session.hooks["response"].append(lambda response, *args, **kwargs: reading.append(response.raw))
    outcome: dict[str, Any] = {}

    def download() -> None:
        try:
            outcome["records"] = [dict(r) for r in query]
        except Exception as exc:  # noqa: BLE001 (handed to the calling thread, which raises it)
            outcome["error"] = exc

    worker = threading.Thread(target=download, name="chembl-download", daemon=True)
    worker.start()
    worker.join(deadline)
    if worker.is_alive():
        for raw in reading:
            with contextlib.suppress(Exception):
                raw.shutdown()
        worker.join(1.0)
        raise _DeadlineExceeded
    if "error" in outcome:
        raise outcome["error"]
    return outcome["records"]


def _download_activities(
    target: str, types: Sequence[str], *, timeout: float, deadline: float, page_size: int, retries: int
) -> list[dict[str, Any]]:
    import requests
    from chembl_webresource_client.settings import Settings

    url = Settings.Instance().NEW_CLIENT_URL
    start = time.perf_counter()
    try:
        with _client_settings(
            NEW_CLIENT_TIMEOUT=timeout,
            TOTAL_RETRIES=retries,
            BACKOFF_FACTOR=0.5,
            MAX_LIMIT=page_size,
            CACHING=False,
        ):
            records = _records_within(_activity_query(target, types), deadline)
    except _DeadlineExceeded:
        raise ChemblUnavailableError(
            f"The ChEMBL web service at {url} did not deliver the activities of {target} within the "
            f"total deadline of {deadline:g} s (it answers, but too slowly; raise `deadline` to wait "
            f"longer). {_LOCAL_FILE_HINT}"
        ) from None
    except (requests.exceptions.ConnectionError, requests.exceptions.Timeout) as exc:
        raise ChemblUnavailableError(
            f"The ChEMBL web service at {url} could not be reached within {timeout:g} s "
            f"({type(exc).__name__}: {exc}). {_LOCAL_FILE_HINT}"
        ) from exc
    except Exception as exc:  # HTTP errors, retries exhausted, malformed answers
        status = getattr(getattr(exc, "response", None), "status_code", None)
        raise ChemblUnavailableError(
            f"The ChEMBL web service at {url} answered with an error"
            + (f" (HTTP {status})" if status else "")
            + f": {type(exc).__name__}: {str(exc)[:300]}. Try again later, or: {_LOCAL_FILE_HINT}"
        ) from exc
    logger.info(
        "downloaded %d activities for %s %s from %s in %.1f s",
        len(records), target, list(types), url, time.perf_counter() - start,
    )
    if not records:
        kinds = ", ".join(types) + " " if types else ""
        raise ValueError(
            f"ChEMBL has no {kinds}activities for target {target} (the service at {url} answered with "
            f"0 records; nothing was cached): check the target id at "
            f"https://www.ebi.ac.uk/chembl/target_report_card/{target}/ and the activity types"
        )
    return records


def fetch_chembl_activities(
    target_chembl_id: str,
    *,
    activity_types: Sequence[str] = ("IC50",),
    cache_dir: str | Path = "data/cache",
    timeout: float = 30,
    deadline: float = 600,
    page_size: int = 1000,
    refresh: bool = False,
    retries: int = 2,
) -> pd.DataFrame:
    """Download the activities of a ChEMBL target through chembl-webresource-client.

    The result is cached as ``<cache_dir>/chembl_<target>_<types>.csv.gz`` and returned from
    there on later calls (offline too) unless ``refresh`` is true.

    Parameters
    ----------
    target_chembl_id : str
        Target id such as ``"CHEMBL301"``.
    activity_types : sequence of str
        ChEMBL ``standard_type`` values to download (empty = all types).
    cache_dir : str or Path
        Cache directory (created if needed).
    timeout : float
        Seconds allowed for each HTTP connect and each read.
    deadline : float
        Seconds allowed for the whole download, retries included (a server that trickles
        bytes never trips the per-read ``timeout``).
    page_size : int
        Records per page (the server allows at most 1000).
    refresh : bool
        Ignore an existing cache file and download again.
    retries : int
        Retries per request on connection errors and HTTP 400-420/500-504.

    Returns
    -------
    pandas.DataFrame
        :data:`STANDARD_COLUMNS` first, then ``activity_id``, ``pchembl_value``, ...

    Raises
    ------
    ValueError
        Malformed target id, page size or deadline; or no activities for the target (an
        unknown target id): nothing is cached then.
    ChemblUnavailableError
        Service unreachable, too slow, past the deadline, or answering with errors, and no
        cache file; the message explains how to use a local export instead.
    """
    target = _validate_target(target_chembl_id)
    if isinstance(activity_types, str):
        activity_types = (activity_types,)
    types = tuple(activity_types)
    if not 1 <= int(page_size) <= 1000:
        raise ValueError(f"page_size={page_size} out of range: the ChEMBL API serves 1 to 1000 records per page")
    if not deadline > 0:
        raise ValueError(f"deadline={deadline!r}: give the seconds allowed for the whole download (> 0)")
    cache = _cache_path(cache_dir, target, types)
    if cache.is_file() and not refresh:
        logger.info("reading cached ChEMBL activities from %s", cache)
        return _finalize(_read_text_table(cache, sep=","))
    records = _download_activities(
        target, types, timeout=timeout, deadline=deadline, page_size=int(page_size), retries=retries
    )
    df = pd.DataFrame.from_records(records)
    # the API serves numbers as text ("50.0"); keep text everywhere for a loss-free cache
    for col in df.columns:
        df[col] = df[col].map(lambda v: v if v is None or isinstance(v, str) else str(v))
    out = _finalize(df)
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_name(cache.name + ".tmp")
    out.to_csv(tmp, index=False, compression="gzip", na_rep="")
    tmp.replace(cache)
    logger.info("cached %d rows at %s", len(out), cache)
    return out


# ----------------------------------------------------------------------------------------
# dispatcher used by the workflow
# ----------------------------------------------------------------------------------------

_KIND_ALIASES = {"chembl": "chembl", "api": "chembl", "export": "export", "chembl_export": "export",
                 "table": "table", "csv": "table", "tsv": "table", "sdf": "table"}


def load_activities(source_config: Mapping[str, Any], cache_dir: str | Path = "data/cache") -> pd.DataFrame:
    """Load raw activities as described by a config mapping (what the workflow calls).

    Parameters
    ----------
    source_config : mapping
        ``kind`` (alias ``source``) selects the reader:

        - ``"chembl"``: ``target_chembl_id`` (required), ``activity_types`` (default
          ``["IC50"]``), ``timeout`` (30), ``deadline`` (600), ``page_size`` (1000), ``refresh`` (false),
          ``retries`` (2) -> :func:`fetch_chembl_activities`.
        - ``"export"``: ``path`` -> :func:`read_chembl_export`.
        - ``"table"`` (aliases ``csv``, ``tsv``, ``sdf``): ``path``, ``smiles_column``,
          ``activity_column``, optional ``id_column``, ``units`` ("nM"), ``activity_type``
          ("IC50"), ``relation_column`` -> :func:`read_activity_table`.
    cache_dir : str or Path
        Cache directory for ``kind: chembl``.

    Returns
    -------
    pandas.DataFrame
        Raw activities with :data:`STANDARD_COLUMNS`.
    """
    cfg = dict(source_config)
    kind_raw = cfg.pop("kind", None) or cfg.pop("source", None)
    kind = _KIND_ALIASES.get(str(kind_raw).lower()) if kind_raw is not None else None
    if kind is None:
        raise ValueError(
            f"source config needs 'kind' in ['chembl', 'export', 'table'], got {kind_raw!r} "
            f"(config: {dict(source_config)})"
        )

    def need(key: str) -> Any:
        if key not in cfg or cfg[key] in (None, ""):
            raise ValueError(f"source config of kind {kind!r} needs key {key!r}; got keys {sorted(cfg)}")
        return cfg.pop(key)

    def reject_unknown() -> None:
        if cfg:
            raise ValueError(f"unknown keys for source kind {kind!r}: {sorted(cfg)}")

    if kind == "chembl":
        target = need("target_chembl_id")
        kwargs = {
            k: cfg.pop(k)
            for k in ("activity_types", "timeout", "deadline", "page_size", "refresh", "retries")
            if k in cfg
        }
        reject_unknown()
        return fetch_chembl_activities(target, cache_dir=cache_dir, **kwargs)
    if kind == "export":
        path = need("path")
        reject_unknown()
        return read_chembl_export(path)
    path = need("path")
    activity_column = need("activity_column")
    smiles_column = cfg.pop("smiles_column", None)
    table_kwargs = {k: cfg.pop(k) for k in ("id_column", "units", "activity_type", "relation_column") if k in cfg}
    cfg.pop("pchembl_of", None)  # names the activity behind pChEMBL values in labels (screening.pchembl_of)
    reject_unknown()
    return read_activity_table(path, smiles_column=smiles_column, activity_column=activity_column, **table_kwargs)

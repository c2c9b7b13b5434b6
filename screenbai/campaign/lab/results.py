"""Reading and validating a results file from the lab, before anything is written.

A results file is CSV or TSV (``;`` also accepted) with a header naming the columns:

* ``plate_id`` (or ``plate``; case does not matter, nor a space or "-" for "_": ``Plate ID``),
* ``well`` and/or ``compound_id`` (or ``compound``): with only a compound id, its open wells on
  that plate are filled in well order; a well may be written A1, a01, A01, A001, 'A 1' or A-01,
  or as a reader's ``Row`` (A, or 1) and ``Column`` columns,
* ``well`` also as a plate reader's list export writes it: ``Well Position``, ``Well ID``, ``Well Name``,
* ``outcome`` (or ``result``, ``value``, and a reader's ``Signal``, ``RFU``, ``RLU``, ``Counts``, ``Readout``; a
  header with two of them is refused unless ``--outcome-column`` names the one to read): 0/1 for binary assays, a
  number for continuous ones (in a ``;``-separated file, as Excel saves CSV where the decimal separator is a comma,
  12,5 is 12.5; a number that reads two ways there, 1.234 beside decimal commas or with nothing to tell it from
  1234, is refused; a 0/1 outcome reads one way: 1.000 is 1), empty or ``failed`` for a failed well (its compound
  goes back into the queue). A file whose outcomes are all empty is refused: it is the plate file before the lab
  filled it in.

The plate file written by ``next`` has exactly these columns, so the lab can fill in the
``outcome`` column and record the same file.  A plate reader's grid (:mod:`~screenbai.campaign.lab.grid`) or a
list of wells without a plate_id column is read with ``plate`` (``record --plate``); an Excel workbook (.xlsx) from
its first sheet (:mod:`~screenbai.campaign.lab.workbook`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from screenbai.textfiles import formula_unsafe, not_utf8, open_text, table_rows

from .censored import Censored, bound_parts
from .grid import Grid, find_grid
from .layout import PlateLayout, well_span
from .numbers import parse_outcome, read_two_ways
from .plates import row_name
from .workbook import first_sheet, is_workbook

ALIASES = {
    "plate_id": ("plate_id", "plate"),
    # as plate readers' list exports name them (Envision, PHERAstar/BMG, Tecan: Well, Well Position, ...)
    "well": ("well", "well_position", "well_positions", "well_id", "well_name"),
    "compound_id": ("compound_id", "compound"),
    # a reader's value column: Signal, RFU, RLU, Counts (two of them in one file are refused: --outcome-column)
    "outcome": ("outcome", "result", "value", "signal", "rfu", "rlu", "counts", "readout"),
}
#: header names not read as a column, for what they usually hold in a reader's export (said when a column is missing)
NOT_ALIASES = {
    "sample": "sample labels (X1, S1, Blank B), not the campaign's compound ids",
    "sample_id": "sample labels, not necessarily the campaign's compound ids",
    "content": "sample labels (Sample X1, Standard S1, Blank B), not the campaign's compound ids",
    "barcode": "the plate's barcode, not the campaign's plate id",
    "plate_barcode": "the plate's barcode, not the campaign's plate id",
}
MAX_ERRORS = 50
#: a reader's export may name the well in two columns: its row (A, or 1 for A) and its column (1, 01)
ROW_NAMES, COLUMN_NAMES = ("row", "well_row"), ("column", "col", "well_column", "well_col")


class ResultsError(ValueError):
    """A results file was refused; ``errors`` lists every problem (file, line, value, what to do)."""

    def __init__(self, path, errors: list[str]):
        self.path = str(path)
        self.errors = list(errors)
        shown = self.errors[:MAX_ERRORS]
        more = f"\n... and {len(self.errors) - MAX_ERRORS} more" if len(self.errors) > MAX_ERRORS else ""
        super().__init__(
            f"{path}: {len(self.errors)} problem(s); nothing was recorded:\n  " + "\n  ".join(shown) + more
        )


@dataclass(frozen=True)
class Outcome:
    line: int
    plate_id: str
    well: str
    arm: int
    value: float | None  # None: failed well; a censored cell's limit
    censored: Censored | None = None  # a bound that settles hit or not ("> 10000"), as typed (lab/censored.py)


@dataclass(frozen=True)
class WellInfo:
    arm: int
    compound_id: str
    recorded_by: str | None  # the file that recorded it, None while open


def _read(
    path: Path, outcome_column: str | None = None
) -> tuple[list[str], list[tuple[int, list[str]]], bool, str, str, int]:
    """(header, data rows with their line numbers, whether the text ends with a line break, the separator, the
    text, the header's line number). A plate reader's list export whose header (a well column and a value column,
    or ``outcome_column``) comes below the reader's own lines (its name, the date, the protocol) is read from that
    header, line numbers kept."""
    try:
        with open(path, "rb") as fh:
            magic = fh.read(16)
    except FileNotFoundError:
        raise ResultsError(path, [f"{path}: file does not exist"]) from None
    except IsADirectoryError:
        raise ResultsError(path, [f"{path}: is a folder; give the results file (CSV or TSV)"]) from None
    except OSError as exc:
        raise ResultsError(path, [f"{path}: cannot be read ({exc.strerror}); check its permissions"]) from None
    if magic == b"SQLite format 3\x00":
        raise ResultsError(
            path,
            [
                f"{path}: this is an SQLite database (a screenbai campaign file?), not a results table; give the "
                "lab's results file (CSV or TSV: plate_id, well, outcome), e.g. the plate file written by `next` with "
                "its outcome column filled in: `screenbai campaign record CAMPAIGN RESULTS.csv`"
            ],
        )
    try:
        if magic.startswith(b"PK\x03\x04") and is_workbook(path):  # saved from Excel: its first sheet, row n line n
            text = first_sheet(path)[1]
        else:
            with open_text(path) as fh:
                text = fh.read()
    except UnicodeDecodeError as exc:
        raise ResultsError(path, [str(not_utf8(path, exc))]) from None
    except ValueError as exc:  # a workbook that cannot be read
        raise ResultsError(path, [str(exc)]) from None
    lines = text.splitlines()
    skip = _lines_above_header(lines, outcome_column)
    if not lines or (not lines[skip].strip() and find_grid(text, str(path)) is None):  # a grid may have lines above
        raise ResultsError(path, [f"{path}: line 1: empty file or empty header; expected plate_id,well,outcome"])
    sep, head, rows = table_rows("".join(text.splitlines(keepends=True)[skip:]))
    rows = [(line + skip, fields) for line, fields in rows]
    head = [_column_name(f) for f in head]
    return head, rows, text.endswith(("\n", "\r")), sep, text, skip + 1


#: how far down a reader's list export's header is looked for (its own lines above it: a few to a few dozen)
HEADER_SEARCH_LINES = 60


def _lines_above_header(lines: list[str], outcome_column: str | None) -> int:
    """How many lines stand above a list's header: 0 when line 1 names a column of a results file; else the first line
    naming a well column (or a Row and a Column) and a value column (``outcome_column`` among them) within
    HEADER_SEARCH_LINES, if any."""
    known = {n for names in ALIASES.values() for n in names}
    values = set(ALIASES["outcome"]) | ({_column_name(outcome_column)} if outcome_column else set())

    def names(line: str) -> set[str]:
        sep = max((",", "\t", ";"), key=line.count)
        return {_column_name(f.strip('"')) for f in line.split(sep)}

    if not lines or names(lines[0]) & known:
        return 0
    for k, line in enumerate(lines[1:HEADER_SEARCH_LINES], start=1):
        named = names(line)
        by_row_column = bool(named & set(ROW_NAMES) and named & set(COLUMN_NAMES))
        if (named & set(ALIASES["well"]) or by_row_column) and named & values:
            return k
    return 0


def _column_name(field: str) -> str:
    """A header field as read: 'Plate ID', 'plate-id' and 'PLATE_ID' are plate_id."""
    return re.sub(r"[\s-]+", "_", field.strip().lower())


def _header_again(fields: list[str], header: list[str]) -> str | None:
    """'same' for a data row that repeats the header (two files of one layout joined one after the other), 'other'
    for another file's header (its rows would be read in the first header's columns), else None."""
    named = [_column_name(f) for f in fields]
    if named == header:
        return "same"
    header_like = any(n in ALIASES["plate_id"] for n in named) and any(n in ALIASES["outcome"] for n in named)
    return "other" if header_like else None


def read_results(
    path,
    plates: Mapping[str, dict[str, WellInfo]],
    *,
    binary: bool,
    check: Callable[[float], str | None] | None = None,
    layout_of: Callable[[str], PlateLayout | None] | None = None,
    plate: str | None = None,
    unusual: Callable[[float], str | None] | None = None,
    notes: list[str] | None = None,
    outcome_column: str | None = None,
    column_unit: Callable[[str], str | None] | None = None,
    censor: Callable[..., Censored | str | None] | None = None,
) -> list[Outcome]:
    """Parse and validate ``path`` against the campaign's plates; raise ResultsError listing every problem.

    ``plates`` maps plate id -> well -> WellInfo (arm, compound id, and the file that recorded
    it, if any); only the plates the file names are looked up.  ``check`` says what is wrong with a
    value of the campaign's readout, if anything (:meth:`~screenbai.campaign.lab.assay.Readout.problem`);
    ``layout_of`` gives a plate's layout, to say what a well not in its map is (an empty edge well ...).
    ``plate`` (``record --plate``) is the plate of a file without a plate_id column: a plate reader's grid
    (:mod:`~screenbai.campaign.lab.grid`) or its list of wells; a file with the column must then name only it.
    ``unusual`` says what is unusual in a value ``check`` lets through
    (:meth:`~screenbai.campaign.lab.assay.Readout.suspicion`): each such value is appended to ``notes`` naming the
    file, line, well and value, and kept as written.  ``outcome_column`` (``record --outcome-column``) names the
    column of outcomes where the header has several that could be (Signal and Result ...); ``column_unit`` says what is
    wrong with its name, if anything (a unit other than the readout's: :meth:`~screenbai.campaign.lab.assay.Readout.
    column_unit_problem`).  ``censor`` reads a censored cell ("> 10000": :func:`~screenbai.campaign.lab.censored.
    read`): one that settles hit or not is an outcome with its limit as value, ``check`` and ``unusual`` applied to the
    limit; one that does not, or a control well's, is refused.  Returns the outcomes in file order.
    """
    path = Path(path)
    header, rows, ends_with_newline, sep, text, head_line = _read(path, outcome_column)
    plate_ids = {p.upper(): p for p in plates}
    if plate is not None and plate.strip().upper() not in plate_ids:
        ids = sorted(plates)
        known = (", ".join(ids) if len(ids) <= 6 else f"{ids[0]} .. {ids[-1]}") or "none yet"
        raise ResultsError(
            path,
            [
                f"{path}: --plate {plate!r} is not a plate of this campaign (plates: {known}); give "
                "the plate id of the plate file `next` wrote"
            ],
        )
    plate = None if plate is None else plate_ids[plate.strip().upper()]
    chosen = outcome_column is not None and _column_name(outcome_column) in header
    grid = None if chosen or any(h in ALIASES["outcome"] for h in header) else find_grid(text, str(path))
    if grid is not None and outcome_column is not None:  # its columns are the plate's: none holds "the outcomes"
        what = f"it is {grid.describe()}, a plate reader's grid whose columns are the plate's columns 1 .. {grid.cols}"
        raise ResultsError(
            path,
            [
                f"{path}: line {grid.header_line}: --outcome-column {outcome_column!r} is not a column of this file: "
                f"{what}, one value per well; record it without --outcome-column (`record ... {path.name} --plate "
                f"{plate or 'PLATE_ID'}`), or, for another of the reader's values, export that one as a grid or a list"
            ],
        )
    if grid is not None:  # a plate reader's grid: read as the long file of its cells (grid.py)
        header, rows, ends_with_newline, sep = _grid_rows(path, grid, plate, plates, layout_of)
    errors: list[str] = []
    col: dict[str, int] = {}
    for key, names in ALIASES.items():
        hits = [i for i, h in enumerate(header) if h in names]
        if key == "outcome" and outcome_column is not None:
            hits = [i for i, h in enumerate(header) if h == _column_name(outcome_column)]
            if not hits:
                errors.append(
                    f"{path}: line {head_line}: --outcome-column {outcome_column!r} is not a column of the "
                    f"header {header}; give one of its columns"
                )
                continue
            unit_problem = None if column_unit is None else column_unit(outcome_column)
            if unit_problem:
                errors.append(f"{path}: line {head_line}: {unit_problem}")
        if len(hits) > 1 and key == "outcome" and outcome_column is None:
            both = " and ".join(repr(header[i]) for i in hits)
            errors.append(
                f"{path}: line {head_line}: {len(hits)} columns could hold the outcomes ({both}): say which "
                f"with --outcome-column (e.g. `record ... --outcome-column {header[hits[0]]}`)"
            )
        elif len(hits) > 1:
            both = " and ".join(repr(header[i]) for i in hits)
            errors.append(
                f"{path}: line {head_line}: column {key!r} appears {len(hits)} times ({both}); keep one of "
                "them (delete or rename the other)"
            )
        elif hits:
            col[key] = hits[0]
    # a reader's export may give the well as a Row column (A or 1) and a Column column (1): read as one well
    row_col = _row_column(header) if "well" not in col else None
    # a column refused above (two candidates, or a bad --outcome-column) is not said missing again
    missing = [
        k
        for k in ("plate_id", "outcome")
        if k not in col and not (k == "plate_id" and plate) and not (k == "outcome" and errors)
    ]
    if "well" not in col and "compound_id" not in col and row_col is None:
        missing.append("well or compound_id")
    if missing:
        unread = "".join(
            f"; {h!r} is not read: it usually holds {NOT_ALIASES[h]} (rename it if it holds what is missing)"
            for h in header
            if h in NOT_ALIASES
        )
        ways = (
            "; a list of wells without a plate column: name its plate, `record ... --plate P001`"
            if "plate_id" in missing and "well" in col
            else ""
        ) + ("; readouts under another name: `record ... --outcome-column NAME`" if "outcome" in missing else "")
        errors.append(
            f"{path}: line {head_line}: missing column(s) {', '.join(missing)}; header is {header}; expected "
            f"plate_id, well (or compound_id), outcome{unread}{ways}"
        )
    if errors:
        raise ResultsError(path, errors)

    def field(fields, key):
        if key == "plate_id" and "plate_id" not in col:
            return plate  # --plate, for a file without the column
        if key == "well" and row_col is not None:
            return _row_column_well(fields[row_col[0]], fields[row_col[1]])
        i = col.get(key)
        if i is None or i >= len(fields):
            return None
        # the plate file's text cells went out behind a quote where they start like a formula (Excel may have
        # dropped it on saving): the ids as the campaign knows them; an outcome is a number, read as written
        return fields[i].strip() if key == "outcome" else formula_unsafe(fields[i].strip())

    out: list[Outcome] = []
    seen: dict[tuple[str, str], tuple[int, str | None]] = {}
    # wells still open per (plate, compound), in well order, for rows that give only the compound
    open_wells: dict[tuple[str, str], list[str]] = {}
    loaded: set[str] = set()

    def open_queue(plate_id, compound):
        if plate_id not in loaded:
            loaded.add(plate_id)
            for w, info in plates[plate_id].items():
                if info.recorded_by is None:
                    open_wells.setdefault((plate_id, info.compound_id), []).append(w)
        return open_wells.get((plate_id, compound))

    # a 0/1 outcome reads one way whatever the separators: 1.000 is 1 (1000 is no outcome), 0.000 is 0
    bounds = None if censor is None else bound_parts  # a bound's number is read as a plain one
    two_ways = read_two_ways(rows, col["outcome"], bounds) if sep == ";" and not binary else {}
    already: dict[str, dict[str, tuple[int, str]]] = {}  # plate -> well -> (line, the file that recorded it)
    unknown: dict[str | None, list[int]] = {}  # a plate id not of this campaign -> its lines
    # (plate, an empty edge well?) -> (line, well) of the rows naming a well the plate left empty or unused
    unused: dict[tuple[str, bool], list[tuple[int, str]]] = {}
    n_blank = 0  # rows with an empty outcome (a failed well, unless all are empty)
    aliases: dict[str, dict[tuple[str, int] | str, str]] = {}

    def _well_alias(plate_id, wells):
        if plate_id not in aliases:
            aliases[plate_id] = {_well_key(w): w for w in wells}
        return aliases[plate_id]

    for line, fields in rows:
        where = f"{path}: line {line}"
        again = _header_again(fields, header)
        if again == "same":  # no data on it: the rows below read as the first header says
            continue
        if again == "other":
            errors.append(
                f"{where}: a header unlike line {head_line}'s ({fields!r}; line {head_line}: {header!r}): "
                f"files of two layouts joined one after the other? the rows below it would be read in line "
                f"{head_line}'s columns; record each file on its own"
            )
            continue
        if len(fields) != len(header):
            errors.append(f"{where}: {len(fields)} field(s) where the header has {len(header)}: {fields!r}")
            continue
        plate_id, well, compound, raw = (field(fields, k) for k in ("plate_id", "well", "compound_id", "outcome"))
        plate_id = plate_ids.get((plate_id or "").upper(), plate_id)  # p001 is P001
        if plate is not None and plate_id != plate:
            errors.append(
                f"{where}: plate {plate_id!r} where --plate says {plate}; record each plate's rows with "
                "its own --plate, or without --plate when the file names the plate of every row"
            )
            continue
        if plate_id not in plates:
            unknown.setdefault(plate_id, []).append(line)
            continue
        wells = plates[plate_id]
        if well:
            well = _well_alias(plate_id, wells).get(_well_key(well), well)  # A1, a01 are A01
            if well not in wells and grid is not None:
                continue  # a reader reads every well of the plate: the wells it leaves unused or empty are no problem
            if well not in wells:
                layout = None if layout_of is None else layout_of(plate_id)
                named = _unused_well(well, layout)
                if named is not None:  # a plate reader's export of the whole plate: one problem per plate and kind
                    unused.setdefault((plate_id, named[1]), []).append((line, named[0]))
                else:
                    errors.append(f"{where}: {_not_on_plate(well, plate_id, wells, layout)}")
                continue
            if compound and wells[well].compound_id != compound:
                errors.append(
                    f"{where}: compound {compound!r} was not in well {plate_id}/{well} "
                    f"(it holds {wells[well].compound_id}); check the plate map"
                )
                continue
        else:
            if not compound:
                errors.append(f"{where}: neither a well nor a compound id; give one of them")
                continue
            queue = open_queue(plate_id, compound)
            if queue is None and not any(w.compound_id == compound for w in wells.values()):
                errors.append(f"{where}: compound {compound!r} was not on plate {plate_id}")
                continue
            if not queue:
                errors.append(
                    f"{where}: compound {compound!r} has no open well left on plate {plate_id} "
                    "(more rows than wells, or already recorded)"
                )
                continue
            well = queue.pop(0)
        slot = (plate_id, well)
        if slot in seen:
            first_line, first_raw = seen[slot]
            errors.append(
                f"{where}: well {plate_id}/{well} appears twice (first on line {first_line}, outcome {first_raw!r}; "
                f"here {raw!r}); keep the row with the lab's reading of that well and delete the other"
            )
            continue
        seen[slot] = (line, raw)
        info = wells[well]
        if info.recorded_by is not None:
            already.setdefault(plate_id, {})[well] = (line, info.recorded_by)
            continue
        q = open_queue(plate_id, info.compound_id)
        if q and well in q:
            q.remove(well)
        if not raw and not ends_with_newline and line == rows[-1][0] and col["outcome"] == len(header) - 1:
            errors.append(
                f"{where}: the file ends right after an empty outcome, without a line break, for well "
                f"{plate_id}/{well}: it looks cut short (a copy or save that did not finish). Check the file "
                "against the lab's record; if that well failed, write 'failed' in its outcome column"
            )
            continue
        bound = (
            None
            if censor is None or not raw
            else censor(raw, decimal_comma=sep == ";", control=info.arm < 0, two_ways=two_ways.get(line))
        )
        value = (
            bound
            if isinstance(bound, str)
            else bound.limit
            if bound is not None
            else two_ways.get(line) or parse_outcome(raw, binary, decimal_comma=sep == ";")
        )
        if check is not None and isinstance(value, float):
            value = check(value) or value
        if isinstance(value, str):
            errors.append(f"{where}: outcome {raw!r} for well {plate_id}/{well}: {value}")
            continue
        note = None if unusual is None or value is None else unusual(value)
        if note and notes is not None:
            notes.append(f"{where}: outcome {raw!r} for well {plate_id}/{well}: {note}")
        n_blank += not raw
        out.append(Outcome(line, plate_id, well, info.arm, value, bound if isinstance(bound, Censored) else None))
    if out and n_blank == len(out) and not errors:
        errors.append(
            f"{path}: the outcome column is empty on all {len(out)} rows: is this the plate file before the lab "
            "filled it in? Nothing was recorded; if every well failed, write 'failed' in the outcome column"
        )
    errors[:0] = [_not_a_plate(path, plate_id, lines, plates) for plate_id, lines in unknown.items()]
    errors.extend(_already_recorded(path, plate_id, done, len(plates[plate_id])) for plate_id, done in already.items())
    for (plate_id, _), found in unused.items():
        layout = layout_of(plate_id) if layout_of is not None else None
        errors.append(_unused_rows(path, plate_id, found, plates[plate_id], layout))
    if not rows:
        errors.append(f"{path}: no data rows under the header")
    if errors:
        raise ResultsError(path, errors)
    return out


def _grid_rows(
    path: Path,
    grid: Grid,
    plate: str | None,
    plates: Mapping[str, dict[str, WellInfo]],
    layout_of: Callable[[str], PlateLayout | None] | None,
) -> tuple[list[str], list, bool, str]:
    """A plate reader's grid as a long file's (header, rows, ends with a line break, separator): one row
    (plate_id, well, outcome) per cell, on the line of its grid row; refused whole when the grid names no plate
    (no --plate), is malformed, or is not the shape of the plate."""
    if plate is None:
        example = sorted(plates)[-1] if plates else "P001"
        raise ResultsError(
            path,
            [
                f"{path}: {grid.describe()}, a plate reader's export, names no plate: say which "
                f"plate it is with --plate (e.g. `record ... {path.name} --plate {example}`)"
            ],
        )
    errors = list(grid.errors)
    layout = None if layout_of is None else layout_of(plate)
    if layout is not None and (grid.rows, grid.cols) != (layout.rows, layout.cols):
        errors.append(
            f"{path}: {grid.describe()} where plate {plate} is a {layout.format_name} plate ({layout.rows} "
            f"rows x {layout.cols} columns); give the grid of plate {plate}, or the right --plate"
        )
    else:
        outside = sorted(set(plates[plate]) - {well for _, well, _ in grid.cells})
        if outside:
            errors.append(
                f"{path}: {grid.describe()} leaves out well(s) {well_span(outside)} of plate {plate}; "
                f"give the grid of the whole plate, or the right --plate"
            )
    if errors:
        raise ResultsError(path, errors)
    return ["plate_id", "well", "outcome"], [(line, [plate, well, v]) for line, well, v in grid.cells], True, grid.sep


def _lines(lines: list[int]) -> str:
    """A file's lines for a message: 'line 7', 'lines 2-97' when they follow on, else the first five ('lines 2, 5,
    9, 11, 12, ...')."""
    if len(lines) == 1:
        return f"line {lines[0]}"
    if lines[-1] - lines[0] == len(lines) - 1:
        return f"lines {lines[0]}-{lines[-1]}"
    return f"lines {', '.join(map(str, lines[:5]))}{', ...' if len(lines) > 5 else ''}"


def _not_a_plate(path: Path, plate_id: str | None, lines: list[int], plates: Mapping) -> str:
    """The rows naming a plate the campaign does not have, in one message."""
    ids = sorted(plates)
    known = (", ".join(ids) if len(ids) <= 6 else f"{ids[0]} .. {ids[-1]}") or "none yet"
    return (
        f"{path}: {_lines(lines)}: plate {plate_id!r}{'' if len(lines) == 1 else f' ({len(lines)} rows)'} is not a "
        f"plate of this campaign (plates: {known}); correct the "
        "plate_id to the one on the plate file `next` wrote (a typo, or a row of another campaign's plate?)"
    )


def _already_recorded(path: Path, plate_id: str, done: dict[str, tuple[int, str]], n_wells: int) -> str:
    """The rows of wells a plate had recorded before, in one message with the way on."""
    files = ", ".join(dict.fromkeys(by for _, by in done.values()))
    if len(done) == n_wells:
        return (
            f"{path}: plate {plate_id} was already recorded (all its {n_wells} wells, from {files}); a plate is "
            f"recorded once: remove its rows, or, if {files} was the wrong file, record this one with --replace "
            f"{plate_id} (before `next` proposes another plate)"
        )
    lines = sorted(line for line, _ in done.values())
    if len(done) == 1:
        return f"{path}: {_lines(lines)}: well {plate_id}/{next(iter(done))} was already recorded (from {files})"
    return (
        f"{path}: {_lines(lines)}: {len(done)} wells of plate {plate_id} were already recorded "
        f"({well_span(sorted(done))}; from {files}); a well is recorded once: delete those rows and record the file "
        "again, its other rows then count"
    )


#: a well as labs write it: A1, a01, A001, and with a space, '-', '_' or ':' between row and column (A 1, A-01)
_WELL = re.compile(r"^([A-Za-z]+)[\s_:-]?0*(\d+)$")


def _unused_well(well: str, layout: PlateLayout | None) -> tuple[str, bool] | None:
    """(The name, whether an empty edge well) of a well of the plate's format that its map leaves out (an empty
    edge well, a well left unused), else None (no well of the format at all, or a plate without a format)."""
    if layout is None:
        return None
    names, empty = _format_wells(layout)
    named = names.get(_well_key(well))
    return None if named is None else (named, named in empty)


@functools.lru_cache(maxsize=8)
def _format_wells(layout: PlateLayout) -> tuple[dict, frozenset[str]]:
    """A format's wells by their key (A1, a01 and A01 alike) and its empty edge wells: built once per layout, not
    per row (a plate reader's 1 536-well export may name a thousand unused wells)."""
    return {_well_key(w): w for w in layout.all_wells()}, frozenset(layout.empty_wells())


def _unused_rows(
    path: Path, plate_id: str, found: list[tuple[int, str]], wells: Mapping[str, WellInfo], layout: PlateLayout | None
) -> str:
    """The rows naming wells a plate left unused, or its empty edge wells, in one message (one row: as
    :func:`_not_on_plate`)."""
    lines = [line for line, _ in found]
    if len(found) == 1 or layout is None:
        return f"{path}: {_lines(lines)}: {_not_on_plate(found[0][1], plate_id, wells, layout)}"
    span = well_span([w for _, w in found])
    if found[0][1] in layout.empty_wells():
        what = f"empty edge wells of plate {plate_id} ({span}; its layout leaves the outer ring empty, --empty-edge)"
    else:
        used = well_span([w for w, info in wells.items() if info.arm >= 0])
        what = f"wells plate {plate_id} left unused ({span}; its compound wells are {used})"
    return (
        f"{path}: {_lines(lines)}: {len(found)} rows name {what}, so nothing was tested there; delete those rows (a "
        "plate reader's export of every well?), or correct the wells if they were misread"
    )


def _not_on_plate(well: str, plate_id: str, wells: Mapping[str, WellInfo], layout: PlateLayout | None) -> str:
    """Why a results row's well is not in the plate's map: an empty edge well, a well the plate left unused, or
    no well of its format at all."""
    if layout is None:  # wells named row by row from A01, compound wells only
        return (
            f"well {well!r} is not on plate {plate_id} (wells {next(iter(wells))}..{list(wells)[-1]}); correct "
            f"it{_typo_hint(well, wells)}"
        )
    named = {_well_key(w): w for w in layout.all_wells()}.get(_well_key(well))
    if named in layout.empty_wells():
        return (
            f"well {named} is an empty edge well of plate {plate_id} (its layout leaves the outer ring empty, "
            "--empty-edge), so nothing was tested there; delete the row, or correct the well if it was misread"
        )
    if named is not None:
        return (
            f"well {named} of plate {plate_id} was left unused (the plate's compound wells are "
            f"{well_span([w for w, info in wells.items() if info.arm >= 0])}); delete the row, or correct the well"
        )
    shape = f"a {layout.format_name} plate, wells {layout.all_wells()[0]}..{layout.all_wells()[-1]}"
    return f"well {well!r} is not on plate {plate_id} ({shape}); correct it{_typo_hint(well, wells)}"


def _typo_hint(well: str, wells: Mapping[str, WellInfo]) -> str:
    """A plate's well that a mistyped one reads as with the letter O for a zero or I / l for a one (B1O: B10), if any;
    else the row of the plate file to copy it from."""
    w = well.strip()
    fixed = w[:1] + w[1:].translate(str.maketrans("OoIli", "00111"))
    named = {_well_key(x): x for x in wells}.get(_well_key(fixed))
    if named is not None and fixed != w:
        return f" (to {named}? a letter O or I typed for a digit)"
    return " to the well the plate file `next` wrote gives for this row's compound"


def _row_column(header: list[str]) -> tuple[int, int] | None:
    """The (Row, Column) columns of a header that names the well in two (a reader's export), else None."""
    rows = [i for i, h in enumerate(header) if h in ROW_NAMES]
    cols = [i for i, h in enumerate(header) if h in COLUMN_NAMES]
    return (rows[0], cols[0]) if len(rows) == 1 and len(cols) == 1 else None


def _row_column_well(row: str, column: str) -> str:
    """The well of a Row cell (A, or 1 for A) and a Column cell (1, 01): A01; the cells as written otherwise, so the
    error names them."""
    row, column = formula_unsafe(row.strip()), column.strip()
    if row.isdigit() and 0 < int(row) <= 702:  # rows numbered from 1 (1 is A, 27 is AA)
        row = row_name(int(row) - 1)
    if not row and not column:
        return ""
    return f"{row}{column}" if row.isalpha() and column.isdigit() else f"{row} / {column}"


def _well_key(well: str) -> tuple[str, int] | str:
    """A well as (row letters, column number): A1, a01, A001, 'A 1' and A-01 are one well."""
    m = _WELL.match(well.strip())
    return (m.group(1).upper(), int(m.group(2))) if m else well

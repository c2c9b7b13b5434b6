"""A plate reader's export as a grid: one line per plate row, one column per plate column.

Plate readers (and a lab's own sheets) write a plate as it lies on the bench::

    ,1,2,3,4,5,6
    A,94.7,22.7,89.3,3.8,21.9,5.8
    B,94.2,81.3,80.9,81.1,26.0,0.7
    ...

The grid's header line holds the column numbers 1, 2, ... (its first cell anything: empty, ``<>``, a label) and the
lines below it start with the row letters A, B, ... (AA, AB, ... past Z on a 1536-well plate).  Lines above the
grid (the reader's metadata: instrument, date, barcode) are left out; trailing empty cells (an extra blank column)
too.  Anything after the grid other than blank lines is refused (a second read or plate in one file: one grid per
file).  The grid names no plate: ``record --plate P002`` says which.  The grid becomes the rows of a long results
file (``plate_id, well, outcome``), one per cell, each with the line of its grid row, so the checks of
:func:`~screenbai.campaign.lab.results.read_results` apply to it as to any file; a cell of a well the plate does not
use (an empty edge well, a control-free corner) is left out there, since a reader reads every well.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass

from .layout import well_name
from .plates import row_name

#: the separators a grid line may use (Excel's ';' where the decimal separator is the comma)
_SEPARATORS = (",", "\t", ";")


@dataclass(frozen=True)
class Grid:
    """Where the grid is in the file: its header line, separator, size, and its cells as
    (line, well, text) in row order."""

    header_line: int
    sep: str
    rows: int
    cols: int
    cells: tuple[tuple[int, str, str], ...]
    errors: tuple[str, ...]

    @property
    def last_line(self) -> int:
        return self.header_line + self.rows

    def describe(self) -> str:
        return f"a {self.rows}x{self.cols} grid (lines {self.header_line}-{self.last_line})"


def _fields(line: str, sep: str) -> list[str]:
    fields = next(csv.reader([line], delimiter=sep), [])
    while fields and not fields[-1].strip():
        fields.pop()
    return [f.strip() for f in fields]


def _columns(fields: list[str]) -> int:
    """The number of columns when ``fields`` are a grid header (anything, then 1, 2, ..., n with n >= 2), else 0."""
    numbers = fields[1:]
    if len(numbers) < 2 or not all(f.isdigit() for f in numbers):
        return 0
    return len(numbers) if [int(f) for f in numbers] == list(range(1, len(numbers) + 1)) else 0


def find_grid(text: str, where: str) -> Grid | None:
    """The first grid in ``text`` (a header of column numbers followed by a line starting with 'A'), else None.
    ``where`` names the file in the errors (a row of the wrong length, a file cut short, anything after the grid)."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        for sep in _SEPARATORS:
            cols = _columns(_fields(line, sep))
            if cols and i + 1 < len(lines) and _fields(lines[i + 1], sep)[:1] in (["A"], ["a"]):
                return _read_grid(lines, i, sep, cols, where, text.endswith(("\n", "\r")))
    return None


def _read_grid(lines: list[str], head: int, sep: str, cols: int, where: str, ends_with_newline: bool) -> Grid:
    cells: list[tuple[int, str, str]] = []
    errors: list[str] = []
    r = 0
    k = head + 1
    while k < len(lines):
        fields = _fields(lines[k], sep)
        if not fields or fields[0].upper() != row_name(r):
            break
        line = k + 1
        values = fields[1:]
        if len(values) > cols:
            errors.append(
                f"{where}: line {line}: row {row_name(r)} has {len(values)} values where the grid's header (line "
                f"{head + 1}) numbers {cols} columns; correct the row or the header"
            )
        elif len(values) < cols and k == len(lines) - 1 and not ends_with_newline:
            errors.append(
                f"{where}: line {line}: the file ends inside row {row_name(r)} ({len(values)} of {cols} values), "
                "without a line break: it looks cut short (a copy or save that did not finish); check the file "
                "against the plate reader's"
            )
        values += [""] * (cols - len(values))  # trailing empty cells: wells without a reading (failed, or unused)
        cells.extend((line, well_name(r, c), v) for c, v in enumerate(values[:cols]))
        r += 1
        k += 1
    after = [n + 1 for n in range(k, len(lines)) if lines[n].strip(" \t,;")]
    if after:
        errors.append(
            f"{where}: line {after[0]}: more after the {r}x{cols} grid of lines {head + 1}-{head + 1 + r} "
            f"({len(after)} non-empty line{'' if len(after) == 1 else 's'} below it: a second read or plate?); "
            "record one grid per file: keep the plate's grid and delete the rest"
        )
    return Grid(head + 1, sep, r, cols, tuple(cells), tuple(errors))

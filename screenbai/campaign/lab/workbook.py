"""A results file saved from Excel as a workbook (.xlsx), read without extra packages.

Plate readers and lab sheets often save .xlsx; ``record`` read only text tables and refused a workbook ("save it
as 'CSV UTF-8'").  The first sheet of the workbook is turned into the text of a CSV table, one line per
spreadsheet row (row n of the sheet is line n, so the errors name the row Excel shows), and read as any results
file: a long list (plate_id, well, outcome) or a plate reader's grid (:mod:`~screenbai.campaign.lab.grid`).
Numbers are written as Python writes them (12.5, 1e-07), so no decimal comma or thousands separator can blur them;
a formula's cached value is what Excel showed; a text cell is its text.
"""

from __future__ import annotations

import csv
import io
import posixpath
import re
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

_MAIN = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
_REL = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
_PKG_REL = "{http://schemas.openxmlformats.org/package/2006/relationships}"
_REF = re.compile(r"([A-Z]+)(\d+)")
#: rows x columns of a sheet read at most (a 1 536-well reader export with its metadata is far below)
MAX_CELLS = 2_000_000


def is_workbook(path: Path) -> bool:
    """Whether ``path`` is a zip holding an Excel workbook (xl/workbook.xml)."""
    try:
        with zipfile.ZipFile(path) as z:
            return "xl/workbook.xml" in z.namelist()
    except (zipfile.BadZipFile, OSError):
        return False


def _column(letters: str) -> int:
    k = 0
    for ch in letters:
        k = k * 26 + ord(ch) - 64
    return k - 1


def _number(text: str) -> str:
    """A numeric cell as a plain number: 95 for 95.0, 12.5, 1e-07."""
    value = float(text)
    return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)


def _text(node) -> str:
    """The text of a shared or inline string (its runs joined)."""
    return "".join(t.text or "" for t in node.iter(f"{_MAIN}t"))


def first_sheet(path: Path) -> tuple[str, str]:
    """(The first sheet's name, its cells as CSV text: line n is row n of the sheet); ValueError naming the file
    for a workbook that cannot be read."""
    try:
        with zipfile.ZipFile(path) as z:
            book = ET.fromstring(z.read("xl/workbook.xml"))
            sheets = book.find(f"{_MAIN}sheets")
            if sheets is None or not len(sheets):
                raise ValueError(f"{path}: the workbook has no sheet")
            sheet = sheets[0]
            rels = ET.fromstring(z.read("xl/_rels/workbook.xml.rels"))
            target = next(
                r.get("Target", "")
                for r in rels.iter(f"{_PKG_REL}Relationship")
                if r.get("Id") == sheet.get(f"{_REL}id")
            )
            part = target.lstrip("/") if target.startswith("/") else posixpath.normpath(posixpath.join("xl", target))
            shared = []
            if "xl/sharedStrings.xml" in z.namelist():
                shared = [_text(si) for si in ET.fromstring(z.read("xl/sharedStrings.xml")).iter(f"{_MAIN}si")]
            data = ET.fromstring(z.read(part))
    except (zipfile.BadZipFile, KeyError, StopIteration, ET.ParseError) as exc:
        raise ValueError(
            f"{path}: an Excel workbook that cannot be read ({type(exc).__name__}: {exc}); save its first sheet as "
            "'CSV UTF-8' (Excel: File > Save As) and give that file"
        ) from None
    rows: dict[int, dict[int, str]] = {}
    for c in data.iter(f"{_MAIN}c"):
        m = _REF.fullmatch(c.get("r", ""))
        if m is None:
            continue
        kind, v = c.get("t", "n"), c.find(f"{_MAIN}v")
        if kind == "inlineStr":
            inline = c.find(f"{_MAIN}is")
            value = _text(c if inline is None else inline)
        elif v is None or v.text is None:
            continue
        elif kind == "s":
            value = shared[int(v.text)]
        elif kind == "n":
            value = _number(v.text)
        elif kind == "b":
            value = "TRUE" if v.text == "1" else "FALSE"
        else:  # str (a formula's text), e (an error value such as #DIV/0!)
            value = v.text
        rows.setdefault(int(m.group(2)), {})[_column(m.group(1))] = value.replace("\r", " ").replace("\n", " ")
    n_rows = max(rows, default=0)
    n_cols = 1 + max((max(r) for r in rows.values()), default=0)
    if n_rows * n_cols > MAX_CELLS:
        raise ValueError(
            f"{path}: the first sheet spans {n_rows:,} rows x {n_cols:,} columns; a results sheet "
            "is far smaller: save the results alone as 'CSV UTF-8' and give that file"
        )
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for r in range(1, n_rows + 1):
        cells = rows.get(r, {})
        writer.writerow([cells.get(k, "") for k in range(max(cells) + 1)] if cells else [])
    return str(sheet.get("name")), out.getvalue()

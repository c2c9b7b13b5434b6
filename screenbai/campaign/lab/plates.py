"""Plate files (CSV: plate_id, well, compound_id, smiles, then role and why when known, then outcome) and
the well names of plates without a layout (see layout.py for plate formats, controls and replicates)."""

from __future__ import annotations

import csv
import os
from pathlib import Path

from screenbai.textfiles import formula_safe

#: standard microplate formats (rows x columns), smallest first
FORMATS = ((8, 12), (16, 24), (32, 48))
#: wells of a plate when the campaign has no plate format and ``next`` is given no --plate-size
DEFAULT_PLATE_SIZE = 96
PLATE_COLUMNS = ("plate_id", "well", "compound_id", "smiles", "outcome")


def row_name(i: int) -> str:
    letters = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        letters = chr(65 + r) + letters
    return letters


def well_names(size: int) -> list[str]:
    """Well names filled row by row on the smallest standard plate that holds ``size`` wells
    (96: A01..H12, 384: A01..P24, 1536: A01..AF48); beyond 1536, W00001, W00002, ..."""
    if size < 1:
        raise ValueError(f"a plate needs at least one well; got {size}")
    for rows, cols in FORMATS:
        if size <= rows * cols:
            return [f"{row_name(k // cols)}{k % cols + 1:02d}" for k in range(size)]
    return [f"W{k + 1:05d}" for k in range(size)]


def check_plate_path(path: str | Path) -> None:
    """Refuse a plate file path that cannot be written (no such folder, a folder, not writable) or
    that exists."""
    path = Path(path)
    folder = path.parent
    where = f"cannot write the plate file {path}"
    if not folder.is_dir():
        raise ValueError(f"{where}: folder {folder} does not exist; create it or choose --out")
    if path.is_dir():
        raise ValueError(f"{where}: it is a folder; give a file name such as {path / 'P001.csv'}")
    if not os.access(folder, os.W_OK):
        raise ValueError(f"{where}: folder {folder} is not writable; choose --out")
    if path.exists():
        raise ValueError(
            f"{where}: the file exists (it may hold the lab's results, or another campaign's plate); "
            "move it away, or choose another file with --out"
        )


def write_plate_file(
    path: str | Path, plate_id: str, wells: list[tuple[str, str, str]], extra: dict[str, list[str]] | None = None
) -> Path:
    """Write (well, compound_id, smiles) rows, the ``extra`` columns (name -> one value per well: the
    well's role, why it was chosen) and last an empty outcome column for the lab to fill.

    Written to a temporary file and renamed, so a crash never leaves half a plate file.  An
    existing file is never replaced: it may be the same plate with the lab's outcomes typed in.
    The lab opens it in Excel: a cell starting like a formula (an id '=HYPERLINK(...)') is written behind a single
    quote (:func:`~screenbai.textfiles.formula_safe`), which ``record`` takes off again.
    """
    path = Path(path)
    check_plate_path(path)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        extra = {k: v for k, v in (extra or {}).items() if any(v)}
        writer.writerow((*PLATE_COLUMNS[:-1], *extra, PLATE_COLUMNS[-1]))  # the lab fills in the last column
        for k, (well, compound_id, smiles) in enumerate(wells):
            cells = (plate_id, well, compound_id, smiles, *(v[k] for v in extra.values()))
            writer.writerow((*(formula_safe(str(c)) for c in cells), ""))  # every cell text; the outcome empty
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    return path

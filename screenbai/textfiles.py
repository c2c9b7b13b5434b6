"""Opening the text files people give (tables, results): gzip, UTF-8 with or without BOM, and
UTF-16 with its byte-order mark (Excel's 'Unicode text'); a clear error for anything else. And the
text cells of the CSVs written for a spreadsheet, kept from being run as formulas. And what a number typed with
commas most likely is (:func:`comma_hint`), for the results of a lab and the activities of curation.

Kept free of pandas: the campaign's ``record`` reads results files through it and starts fast.
"""

from __future__ import annotations

import contextlib
import csv
import glob
import gzip
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import IO

_GZIP = b"\x1f\x8b"
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


def _opener(path: Path):
    with open(path, "rb") as fh:
        return gzip.open if fh.read(2) == _GZIP else open


def open_text(path: str | Path) -> IO[str]:
    """The file as text (newline="" for the csv module): UTF-16 when it starts with a UTF-16
    byte-order mark, else UTF-8 (a UTF-8 BOM is skipped); gzip is read through."""
    path = Path(path)
    opener = _opener(path)
    with opener(path, "rb") as fh:
        encoding = "utf-16" if fh.read(2) in _UTF16_BOMS else "utf-8-sig"
    return opener(path, "rt", encoding=encoding, newline="")


@contextlib.contextmanager
def _beside(path: Path) -> Iterator[Path]:
    """A temporary name beside ``path``, renamed onto it when the block ends; removed if the block fails. The
    temporary files of writers killed outright (SIGKILL: no cleanup ran) are removed first."""
    _remove_stale(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _remove_stale(path: Path) -> None:
    """Remove the temporary files of earlier writes of ``path`` whose process no longer runs."""
    if os.name != "posix":  # os.kill(pid, 0) asks whether a process lives only on POSIX
        return
    for tmp in path.parent.glob(f".{glob.escape(path.name)}.*.tmp"):
        pid = tmp.name[len(path.name) + 2 : -len(".tmp")]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            tmp.unlink(missing_ok=True)
        except OSError:  # alive, another user's
            pass


@contextlib.contextmanager
def written_whole(path: str | os.PathLike) -> Iterator[IO[str]]:
    """A text file (UTF-8, newline="" for the csv module) written under a temporary name beside ``path`` and
    renamed onto it when the block ends: a kill or an error on the way leaves ``path`` as it was (or absent), never
    half written, so a program reading it never takes a cut table for the whole.

    The one home of that idea for every file a command or the workflow writes for people or programs to read:
    :func:`written_whole_bytes` for binary files (a workbook, a PNG), :func:`write_whole` for a text or bytes
    already made, :func:`figure_saved` for a matplotlib figure."""
    with _beside(Path(path)) as tmp, open(tmp, "w", newline="", encoding="utf-8") as fh:
        yield fh


@contextlib.contextmanager
def written_whole_bytes(path: str | os.PathLike) -> Iterator[IO[bytes]]:
    """:func:`written_whole` for a binary file: a zip, a PNG, a parquet table, an array."""
    with _beside(Path(path)) as tmp, open(tmp, "wb") as fh:
        yield fh


def write_whole(path: str | os.PathLike, content: str | bytes) -> Path:
    """``Path.write_text`` (UTF-8) or ``write_bytes``, written whole (:func:`written_whole`)."""
    with written_whole_bytes(path) as fh:
        fh.write(content.encode("utf-8") if isinstance(content, str) else content)
    return Path(path)


def figure_saved(fig, path: str | os.PathLike, **kwargs) -> Path:
    """``fig.savefig(path, **kwargs)`` (a matplotlib figure, or anything with a ``savefig``), written whole; the
    format is the file's suffix, as savefig would take it from the name."""
    path = Path(path)
    with written_whole_bytes(path) as fh:
        fig.savefig(fh, format=kwargs.pop("format", None) or path.suffix.lstrip(".").lower() or "png", **kwargs)
    return path


def image_saved(image, path: str | os.PathLike) -> Path:
    """``image.save(path)`` (a PIL image, e.g. RDKit's grid of structures), written whole, in the suffix's format."""
    path = Path(path)
    kind = path.suffix.lstrip(".").upper() or "PNG"
    with written_whole_bytes(path) as fh:
        image.save(fh, format="JPEG" if kind == "JPG" else kind)
    return path


def not_utf8(path: str | Path, exc: UnicodeDecodeError) -> ValueError:
    """The error for a file that is not UTF-8 text: where, and how to convert it."""
    path = Path(path)
    with _opener(path)(path, "rb") as fh:
        data = fh.read()
    if data[:4] == b"PK\x03\x04":
        return ValueError(
            f"{path}: this is a zip archive or an Excel workbook, not a text table; "
            "save it as 'CSV UTF-8' (Excel: File > Save As) and give that file"
        )
    if data[:8] == b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1":  # OLE2: Excel 97-2003 .xls (and other old Office files)
        return ValueError(
            f"{path}: this is an Excel 97-2003 workbook (.xls) or another old Office file, not a text table; "
            "save it as 'CSV UTF-8' (Excel: File > Save As) and give that file"
        )
    line = 1
    for line, raw in enumerate(data.splitlines(), start=1):
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as bad:
            byte = raw[bad.start : bad.start + 1]
            where = f"line {line} (byte {byte!r})"
            break
    else:
        where = f"byte {exc.start}"
    utf16 = data[:200].count(b"\x00") * 4 > len(data[:200])  # every other byte NUL: UTF-16 text without BOM
    guess = "UTF-16 without a byte-order mark" if utf16 else "Latin-1/Windows-1252"
    return ValueError(
        f"{path}: not UTF-8 text at {where}; the encodings tried are UTF-8 (with or without BOM) and UTF-16 "
        f"with a byte-order mark. The file is probably {guess}: convert it, e.g. "
        "`iconv -f WINDOWS-1252 -t UTF-8 in.csv > out.csv` (or -f UTF-16LE for UTF-16), or save it from Excel "
        "as 'CSV UTF-8'"
    )


def table_rows(text: str) -> tuple[str, list[str], list[tuple[int, list[str]]]]:
    """A CSV/TSV table's text as (separator, header fields stripped, data rows with their line numbers). The
    separator is the one of , tab and ; its header uses most; rows with only blank fields are left out. The text
    must have a non-empty first line (the callers say what header they expected)."""
    lines = text.splitlines(keepends=True)
    sep = max((",", "\t", ";"), key=lines[0].count)
    reader = csv.reader(lines, delimiter=sep)
    head = [f.strip() for f in next(reader)]
    rows = [(reader.line_num, fields) for fields in reader if any(f.strip() for f in fields)]
    return sep, head, rows


#: what makes a spreadsheet read a cell of a CSV as a formula (OWASP, "CSV Injection")
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def formula_safe(text: str) -> str:
    """A text cell for a CSV a spreadsheet will open: behind a single quote when it starts like a formula (OWASP's
    advice), so that Excel shows '=HYPERLINK(...)' as text instead of running it. For text columns only: a
    negative number in a numeric column is a number, not a formula."""
    return "'" + text if text.startswith(FORMULA_START) else text


def formula_unsafe(text: str) -> str:
    """A cell read back from such a CSV as it was before :func:`formula_safe`: the quote taken off where it stands
    before a formula's start (a spreadsheet that saved the file again may have taken it off already)."""
    return text[1:] if text.startswith("'") and text[1:].startswith(FORMULA_START) else text


#: ',' grouping thousands (1,000 and 12,500,000)
_THOUSANDS_COMMA = re.compile(r"[-+]?\d{1,3}(?:,\d{3})+")
#: ',' the decimal separator (0,5 and 12,5; 1,000 too: 1.000 where the comma is the decimal separator)
_DECIMAL_COMMA = re.compile(r"[-+]?\d+,\d+")


def comma_readings(number: str) -> tuple[str | None, str | None]:
    """The numbers a text with commas that float() refuses may be, written as float() reads them: (',' grouping
    thousands: 12,500,000 -> 12500000; ',' the decimal comma: 0,5 -> 0.5), None where a reading does not fit.
    1,000 fits both; a thousands separator is the likelier (typed in a spreadsheet of an English locale)."""
    text = number.strip()
    thousands = text.replace(",", "") if _THOUSANDS_COMMA.fullmatch(text) else None
    decimal = text.replace(",", ".") if _DECIMAL_COMMA.fullmatch(text) else None
    return thousands, decimal


def comma_hint(number: str) -> str:
    """What a number with commas that float() refuses most likely is, and how to write it; '' if the commas are
    neither a thousands separator nor a decimal comma."""
    thousands, decimal = comma_readings(number)
    if thousands is not None:
        return f"a thousands separator? write {thousands}" + (
            f", or {decimal} if ',' is the decimal comma there" if decimal is not None else ""
        )
    return "" if decimal is None else f"a decimal comma? write {decimal}"

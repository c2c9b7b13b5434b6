"""A results file's outcome cells as labs write them: a number, a failed well, or what is wrong with the cell.

Decimal commas in a ``;``-separated file (Excel's CSV where the decimal separator is the comma), numbers that read two
ways there, and a hint for what ``float()`` refuses (a unit, a censored value, a thousands separator, a spreadsheet's
error value).  Used by :mod:`~screenbai.campaign.lab.results`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

from screenbai.textfiles import comma_hint

FAILED = ("", "failed")
_DECIMAL_COMMA = re.compile(r"[-+]?\d*,\d+")
_DECIMAL_POINT = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+)(?:[eE][-+]?\d+)?")
#: '.' between groups of three digits: in a locale whose decimal separator is the comma it groups thousands
#: (1.234 is 1234, 1.234.567 is 1234567; 1.234,5 is 1234.5); elsewhere 1.234 has a decimal point
_GROUPED = re.compile(r"[-+]?[1-9]\d{0,2}(?:\.\d{3})+(?:,\d+)?")


#: a space groups thousands where the decimal separator is the comma (5 000; Excel: a no-break or narrow one)
_SPACES = "[ \u00a0\u202f]"
_SPACE_GROUPED = re.compile(rf"[-+]?[1-9]\d{{0,2}}(?:{_SPACES}\d{{3}})+(?:,\d+)?")


def read_two_ways(
    rows: list[tuple[int, list[str]]], col: int, bound: Callable[[str], tuple[str, str, str] | None] | None = None
) -> dict[int, str]:
    """Line -> what is wrong, for the outcomes of a ``;``-separated file that read two ways.

    Excel saves CSV with ``;`` where the decimal separator is the comma, and there a '.' groups thousands:
    1.234 is 1234, not 1.234, which can turn a hit into a non-hit.  Such a file is known by its decimal commas
    (12,5); a number with a '.' in it then mixes two ways of writing numbers and is refused.  Without decimal
    commas a '.' is a decimal point when some outcome shows it (12.5, 0.125, 1234.5); when every outcome with
    a '.' could be thousands (1.234, 5.678), no value of the file says which, and those are refused too.
    ``bound`` splits a censored cell into (what is before its number, the number, what is after: "> ", "1.234",
    " nM"), None for another cell (:func:`~screenbai.campaign.lab.censored.bound_parts`): the bound's number is
    read by the same rule, and shows the file's way of writing numbers as a plain one does.
    """
    cells = []  # (line, the number, what the cell has before it, after it)
    for line, f in rows:
        if col < len(f):
            v = f[col].strip()
            parts = None if bound is None else bound(v)
            before, number, after = ("", v, "") if parts is None else parts
            cells.append((line, number, before, after))
    commas = [c for c in cells if _DECIMAL_COMMA.fullmatch(c[1])]
    grouped = [c for c in cells if _GROUPED.fullmatch(c[1]) and c[1].count(".") == 1 and "," not in c[1]]
    points = [c for c in cells if _DECIMAL_POINT.fullmatch(c[1]) and c not in grouped]
    out: dict[int, str] = {}
    if commas:
        line0, v0, b0, a0 = commas[0]
        first = f"line {line0}: {b0 + v0 + a0!r}"
        for line, v, b, a in grouped:
            out[line] = (
                f"a '.' in a file that writes decimal commas ({first}): it reads {_thousands(v)} with '.' grouping "
                f"thousands, as where the decimal separator is the comma, or {v} with '.' as the decimal point; "
                f"write {b}{_thousands(v)}{a}, or {b}{v.replace('.', ',')}{a} for {b}{v}{a}, as the lab meant it"
            )
        for line, v, b, a in points:
            out[line] = (
                f"a decimal point in a file that writes decimal commas ({first}): the file mixes two ways of writing "
                f"numbers (pasted from two sources?), so which one a number uses cannot be told; write "
                f"{b}{v.replace('.', ',')}{a} if it is {b}{v}{a}"
            )
    elif grouped and not points:
        for line, v, b, a in grouped:
            out[line] = (
                f"in a ';'-separated file (as Excel saves CSV where the decimal separator is the comma) it reads "
                f"{_thousands(v)} with '.' grouping thousands, or {v} with '.' as the decimal point, and no other "
                f"outcome of the file says which; write {b}{_thousands(v)}{a}, or {b}{v.replace('.', ',')}{a} for "
                f"{b}{v}{a}"
            )
    return out


def _thousands(text: str) -> str:
    """A number written with '.' grouping thousands, without them (1.234 -> 1234; 1.234,5 -> 1234,5)."""
    return text.replace(".", "")


#: what to write for a failed well, the end of every "not a number" / "not 0 or 1" message
_FAILED_WELL = "leave it empty / write 'failed' for a failed well"
#: a 0/1 campaign (no readout declared) told a readout: what to write instead, and how such values can be recorded
_BINARY_READOUT = (
    "this campaign records 0 or 1, with no readout or cutoff to compare it with: write 1 for a hit, 0 for none, or "
    f"{_FAILED_WELL}; to record readouts such as '> 10000' as the hit or non-hit they settle, declare the readout at "
    "init (--readout IC50 --unit nM --hit-below 1000)"
)
#: a continuous campaign told a censored value: it is told values, and a bound is none (lab/censored.py refuses it
#: in the same words where a readout is declared)
CONTINUOUS_BOUND = (
    "a censored value cannot be recorded in a continuous campaign: its algorithm is told the value itself, and a "
    "bound is none"
)
_CENSORED = re.compile(r"([<>]=?)\s*([-+]?\d+(?:\.\d+)?)")
#: a number with a unit after it (53 %, 12 nM)
_WITH_UNIT = re.compile(r"([-+]?\d+(?:\.\d+)?)\s*(%|[a-zA-Zµμ]+)")


def _advice(text: str, binary: bool) -> str | None:
    """The whole of what to write for a cell float() refuses, where the generic "write a number, or ..." would be
    wrong or said twice: a readout (with its unit, or a bound) in a 0/1 campaign, a bound in a continuous one."""
    if binary and _WITH_UNIT.fullmatch(text):
        return f" (a readout with its unit?): {_BINARY_READOUT}"
    if _CENSORED.fullmatch(text):
        if binary:
            return f" (a value beyond the assay's range?): {_BINARY_READOUT}"
        return f" (a value beyond the assay's range?): {CONTINUOUS_BOUND}; write the value measured, or {_FAILED_WELL}"
    return None


def _hint(text: str) -> str:
    """What a lab's number that float() refuses most likely is: a decimal comma, a unit, a thousands separator (a
    bound, or a readout in a 0/1 campaign: ``_advice``)."""
    if text.lower() in ("n.d.", "nd", "n/a", "na", "-", "--"):
        return " (not determined? that is a failed well)"
    if re.fullmatch(r"#(N/A|[A-Z0-9/]+[!?])", text.upper()):  # #DIV/0!, #VALUE!, #NAME?, #N/A
        return " (a spreadsheet's error value: the cell's formula failed; write the reading it should have given)"
    if text.lower() in ("true", "false", "yes", "no", "y", "n", "hit", "no hit", "active", "inactive"):
        return " (a yes / no? write 1 for a hit, 0 for none)"
    if text.lower() in ("ovrflw", "overflow", "over", "sat", "saturated", "range?"):
        return " (a reading beyond the plate reader's range? write 'failed', or re-read the plate)"
    if _GROUPED.fullmatch(text):  # 1.234.567, 1.234,5: float() reads no thousands separator
        return f" ('.' grouping thousands? write {_thousands(text)})"
    if re.fullmatch(r"[-+]?[1-9]\d{0,2}(?:,\d{3})+\.\d*", text):  # 1,234.5: ',' groups thousands
        return f" (',' grouping thousands? write {text.replace(',', '')})"
    if comma_hint(text):  # 1,000 and 12,500,000: most likely a thousands separator; 0,5: a decimal comma
        return f" ({comma_hint(text)})"
    if _SPACE_GROUPED.fullmatch(text):  # 5 000, 1 234,5
        return f" (a space grouping thousands? write {re.sub(_SPACES, '', text)})"
    if _WITH_UNIT.fullmatch(text):
        return " (a unit after the number? write the number alone, in the unit declared at init)"
    return ""


def parse_outcome(raw: str | None, binary: bool, *, decimal_comma: bool = False):
    """The outcome as a float, None for a failed well, or a string saying what is wrong.  With
    ``decimal_comma`` (a ``;``-separated file, as Excel saves CSV where the decimal separator is a comma)
    12,5 is 12.5."""
    text = (raw or "").strip().replace("\u2212", "-")  # a typeset minus sign (Word, a PDF report) is a minus
    if decimal_comma and _DECIMAL_COMMA.fullmatch(text):
        text = text.replace(",", ".")
    if text.lower() in FAILED:
        return None
    try:
        if "_" in text:  # float() reads 1_5 as 15
            raise ValueError(text)
        value = float(text)
    except ValueError:
        kind = "0 or 1" if binary else "a number"
        advice = _advice(text, binary)
        if advice is not None:
            return f"not {kind}{advice}"
        return f"not {kind}{_hint(text)}; write {kind}, or {_FAILED_WELL}"
    if not math.isfinite(value):
        return "not a finite number"
    if binary and value not in (0.0, 1.0):
        return "this campaign's assay is binary: write 0 or 1 (or 'failed')"
    return value

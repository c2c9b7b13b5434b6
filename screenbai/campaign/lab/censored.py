"""Censored readouts: a cell that gives a bound, not a value ("> 10000", ">10 uM", "< 1", ">= 100 %").

A dose-response fit writes "> 10000" for a compound inactive up to the top concentration and "< 1" for one more
potent than the lowest dose.  In a binary campaign with a declared readout (``init --readout ... --hit-below`` or
``--hit-above``) such a bound settles the outcome when every value it allows is on one side of the cutoff: "> 10000"
nM with a hit at IC50 <= 1000 nM is a non-hit, "< 1" is a hit; "> 100" with that cutoff settles nothing (the value
may be either side) and is refused, saying why and what to write.  A settled one is recorded as its outcome (hit
1 / non-hit 0); its limit, relation and the cell as typed are kept (table ``censored``, beside ``readouts``,
whose ``raw`` holds the limit in the declared unit), so the log and the export show "> 10000", never 10000.  It
is no reading to average or to check controls with: a control well's censored value is refused, and the
model-free summaries (the export's mean readout, status's replicate spread) leave it out.  A continuous
campaign's algorithm is told the value itself, which a bound is not: refused there, as before.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from .assay import Readout, concentration_factor
from .numbers import CONTINUOUS_BOUND

#: '>', '>=', '<', '<=' as labs write them (also the signs typed as one character, and '=>' / '=<')
_SIGNS = {">": ">", ">=": ">=", "=>": ">=", "\u2265": ">=", "<": "<", "<=": "<=", "=<": "<=", "\u2264": "<="}
_CELL = re.compile(
    r"(>=|=>|<=|=<|[<>\u2264\u2265])\s*([-+]?(?:\d+(?:[.,]\d*)?|[.,]\d+)(?:[eE][-+]?\d+)?)\s*(%|[a-zA-Z\u00b5\u03bc/]+)?"
)


@dataclass(frozen=True)
class Censored:
    """A settled censored cell: the bound (``relation`` of ``limit``, in the declared unit), the cell as typed, and
    whether it settles a hit."""

    relation: str
    limit: float
    typed: str
    hit: bool

    def describe(self, readout: Readout) -> str:
        unit = f" {readout.unit}" if readout.unit else ""
        what = "a hit" if self.hit else "a non-hit"
        return f"{what} ({readout.name} {self.relation} {self.limit:g}{unit}; {readout.rule()})"


def split(text: str, *, decimal_comma: bool = False) -> tuple[str, float, str] | None:
    """(relation, number, unit as written or "") of a censored cell, or None for a cell that is not one.  A decimal
    comma reads as a point only with ``decimal_comma`` (a ';'-separated file)."""
    m = _CELL.fullmatch(text.strip().replace("\u2212", "-"))
    if m is None:
        return None
    number = m.group(2)
    if "," in number:
        if not decimal_comma:
            return None  # '> 1,000': a thousands separator or a decimal comma; parse_outcome's hint says both
        number = number.replace(",", ".")
    return _SIGNS[m.group(1)], float(number), (m.group(3) or "")


def bound_parts(text: str) -> tuple[str, str, str] | None:
    """A censored cell as (what is before its number, the number, what is after: "> ", "1.234", " nM"), None for a
    cell that is not one: :func:`~screenbai.campaign.lab.numbers.read_two_ways` reads the number as it reads a plain
    one (in a ';' file '.' may group thousands: > 1.234 is > 1234 there)."""
    typed = text.strip()
    m = _CELL.fullmatch(typed.replace("\u2212", "-"))
    if m is None:
        return None
    return typed[: m.start(2)], m.group(2), typed[m.end(2) :]


def settles(readout: Readout, relation: str, limit: float) -> bool | None:
    """Whether every value ``relation`` ``limit`` allows is a hit (True), none is (False), or it settles nothing."""
    assert readout.cutoff is not None
    c = readout.cutoff
    if readout.direction == "below":  # a hit at value <= c
        if relation in ("<", "<=") and limit <= c:
            return True
        if (relation == ">" and limit >= c) or (relation == ">=" and limit > c):
            return False
        return None
    if relation in (">", ">=") and limit >= c:  # a hit at value >= c
        return True
    if (relation == "<" and limit <= c) or (relation == "<=" and limit < c):
        return False
    return None


def read(
    readout: Readout,
    binary: bool,
    raw: str,
    *,
    decimal_comma: bool = False,
    control: bool = False,
    two_ways: str | None = None,
):
    """A results cell read as a censored value: :class:`Censored` when it settles the outcome, a string saying what is
    wrong and what to write when it does not (or cannot be taken here), None for a cell that is no censored value.
    ``two_ways``: what :func:`~screenbai.campaign.lab.numbers.read_two_ways` says of the bound's number (> 1.234 in a
    file of decimal commas), refused as a plain number is where a bound could be recorded."""
    parts = split(raw or "", decimal_comma=decimal_comma)
    if parts is None:
        return None
    relation, number, unit = parts
    typed = raw.strip()
    unit_name = f" {readout.unit}" if readout.unit else ""
    if control:
        return (
            f"a censored value ({typed!r}) in a control well: a control's reading must be a value, the Z' of the "
            f"plate is computed from it; write the value measured{unit_name}, or 'failed'"
        )
    if not binary:
        return f"{typed!r}: {CONTINUOUS_BOUND}; write the value measured{unit_name}, or 'failed'"
    if readout.cutoff is None:
        return (
            f"a censored value ({typed!r}): this campaign's readout has no hit cutoff to settle it by; write the value "
            f"measured{unit_name} (the limit, {number:g}, if the lab takes it as the reading), or 'failed'"
        )
    if two_ways:
        return two_ways
    limit = number
    if unit:
        converted = _in_declared_unit(readout, number, unit)
        if isinstance(converted, str):
            return f"a censored value ({typed!r}) {converted}"
        limit = converted
    hit = settles(readout, relation, limit)
    if hit is None:
        return (
            f"a censored value ({typed!r}, {readout.name} {relation} {limit:g}{unit_name}) does not settle hit or "
            f"not: the hit cutoff is {readout.cutoff:g}{unit_name} ({readout.rule()}) and the value may lie either "
            f"side of it; write the value measured, or 'failed' (the well is tested again)"
        )
    return Censored(relation, float(limit), typed, hit)


def _in_declared_unit(readout: Readout, number: float, unit: str) -> float | str:
    """``number`` ``unit`` in the readout's declared unit, or what stops it (a unit of another kind, none declared)."""
    plain = unit.strip()
    if plain.lower() == readout.unit.strip().lower() or (plain == "%" and readout.is_percent):
        return number
    own = concentration_factor(readout.unit) if readout.is_concentration else None
    named = concentration_factor(plain)
    if own is None or named is None or own[1] != named[1]:
        declared = f"{readout.unit}, declared at init" if readout.unit else "no unit declared at init"
        return f"is in {unit}, not in this campaign's unit ({declared}); write it in {readout.unit or 'that unit'}"
    return float(f"{number * named[0] / own[0]:.12g}")  # 10 uM is 10000 nM, not 9999.999999999998


def reader(readout: Readout | None, binary: bool):
    """``read`` for ``readout`` and ``binary``, as :func:`~screenbai.campaign.lab.results.read_results` takes it; None
    without a declared readout (the lab writes what the algorithm is told: a bound is refused as no number)."""
    return None if readout is None else functools.partial(read, readout, binary)


def log_lines(path, outcomes, readout: Readout) -> list[str]:
    """One line per censored cell recorded, for the record event (file, line, well, the cell as typed, the outcome)."""
    return [
        f"{path}: line {o.line}: well {o.plate_id}/{o.well}: {o.censored.typed!r}: {o.censored.describe(readout)}"
        for o in outcomes
        if o.censored is not None
    ]


def summary_line(cells, shown: int = 3) -> str:
    """What ``record`` says of the censored cells it recorded (:class:`Censored`), beside its other lines: how many,
    as what, and some of them as typed; "" for none.  The log lists each one (the record event's key censored)."""
    if not cells:
        return ""
    parts = []
    for hit, one, many in ((False, "non-hit", "non-hits"), (True, "hit", "hits")):
        typed = [c.typed for c in cells if c.hit == hit]
        if typed:
            distinct = list(dict.fromkeys(typed))
            listed = ", ".join(repr(t) for t in distinct[:shown]) + (", ..." if len(distinct) > shown else "")
            parts.append(f"{len(typed)} {one if len(typed) == 1 else many} ({listed})")
    n = len(cells)
    what = "readout recorded as the outcome it settles" if n == 1 else "readouts recorded as the outcome they settle"
    return (
        f"{n} censored {what}: {', '.join(parts)}; each is listed, as typed, in the campaign's log (the record event)"
    )

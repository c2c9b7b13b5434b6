"""Plates as a lab has them: format, control wells, empty edge wells, replicates.

A layout is set at ``init`` (``--plate-format 384 --controls edge --empty-edge --replicates 2``)
and may be changed mid-campaign (``screenbai campaign format``; a ``layout`` event in the log).
Wells are named row letter + two-digit column: A01..H12 on a 96-well plate, A01..P24 on a 384-well
plate, A01..AF48 on a 1536-well plate.  On each plate, in this order:

* control wells: positive and negative controls at chosen positions; by default (``edge``) the
  first column holds the positive controls and the last column the negative ones (8 + 8 wells on a
  96-well plate, 16 + 16 on a 384-well plate); at least two of each kind, which the Z'-factor needs
  (or none);
* empty wells: with ``empty_edge`` the other wells of the outer ring (evaporation, edge effects);
* compound wells: the rest, filled row by row.  With ``r`` replicates the algorithm chooses
  ``floor(wells / r)`` compounds and each is placed ``r`` times: first every compound once, then
  every compound again, so a compound's replicates sit on different rows or columns.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

from .plates import row_name

#: plate formats by number of wells (rows, columns); other shapes as ROWSxCOLS
FORMATS = {6: (2, 3), 12: (3, 4), 24: (4, 6), 48: (6, 8), 96: (8, 12), 384: (16, 24), 1536: (32, 48)}
CONTROLS = ("edge", "none")
_WELL = re.compile(r"^([A-Za-z]{1,2})0*(\d{1,3})$")


def parse_format(text) -> tuple[int, int]:
    """'96', '384', '1536' (and 6..48), or 'ROWSxCOLS' (e.g. '8x12') -> (rows, columns)."""
    t = str(text).strip().lower()
    m = re.fullmatch(r"(\d+)\s*x\s*(\d+)", t)
    if m:
        rows, cols = int(m.group(1)), int(m.group(2))
        if not (1 <= rows <= 52 and 1 <= cols <= 99):
            raise ValueError(f"plate format {text!r}: rows must be 1..52 and columns 1..99")
        return rows, cols
    if t.isdigit() and int(t) in FORMATS:
        return FORMATS[int(t)]
    raise ValueError(
        f"plate format {text!r} is not known; give {', '.join(map(str, FORMATS))} wells, or ROWSxCOLS such as 8x12"
    )


def well_name(row: int, col: int) -> str:
    return f"{row_name(row)}{col + 1:02d}"


@dataclass(frozen=True)
class PlateLayout:
    rows: int = 8
    cols: int = 12
    positive: tuple[str, ...] = ()
    negative: tuple[str, ...] = ()
    empty_edge: bool = False
    replicates: int = 1

    # ------------------------------------------------------------- construction
    @classmethod
    def build(
        cls,
        plate_format="96",
        *,
        controls: str = "edge",
        positive: str | None = None,
        negative: str | None = None,
        empty_edge: bool = False,
        replicates: int = 1,
    ) -> PlateLayout:
        """A layout from the command line's words (see the module doc); checked whole."""
        rows, cols = parse_format(plate_format)
        if controls not in CONTROLS:
            raise ValueError(f"--controls must be one of {CONTROLS}; got {controls!r}")
        pos, neg = edge_controls(rows, cols) if controls == "edge" else ((), ())
        if positive is not None:
            pos = parse_wells(positive, rows, cols, "--positive-controls")
        if negative is not None:
            neg = parse_wells(negative, rows, cols, "--negative-controls")
        both = sorted(set(pos) & set(neg))
        if both:
            raise ValueError(f"well(s) {', '.join(both)} are both positive and negative controls")
        kinds = {"positive": pos, "negative": neg}
        few = [kind for kind, wells in kinds.items() if len(wells) < 2]
        if (pos or neg) and few:
            # z_prime needs two of each kind: with fewer every plate would read "Z' = n/a", its controls unchecked
            example = {"positive": f"{well_name(0, 0)}:{well_name(rows - 1, 0)}",
                       "negative": f"{well_name(0, cols - 1)}:{well_name(rows - 1, cols - 1)}"}
            said = " and ".join(
                f"{len(wells) or 'no'} {kind} control well{'' if len(wells) == 1 else 's'}"
                + (f" ({well_span(wells)})" if wells else "")
                for kind, wells in kinds.items()
            )
            raise ValueError(
                f"{said}: a plate's Z'-factor compares positive and negative controls and needs at least two wells "
                "of each, so no plate's controls could be checked; give "
                + " and ".join(f"--{kind}-controls (e.g. {example[kind]})" for kind in few)
                + ", or --controls none alone for plates without control wells"
            )
        if int(replicates) < 1:
            raise ValueError(f"--replicates must be at least 1; got {replicates}")
        layout = cls(rows, cols, pos, neg, bool(empty_edge), int(replicates))
        if layout.capacity < 1:
            raise ValueError(
                f"a {rows}x{cols} plate with {len(pos) + len(neg)} control wells"
                + (" and an empty edge" if empty_edge else "")
                + f" has no well left for a compound (replicates {replicates}); change the layout"
            )
        return layout

    @classmethod
    def from_dict(cls, d: dict) -> PlateLayout:
        return cls(
            int(d["rows"]),
            int(d["cols"]),
            tuple(d["positive"]),
            tuple(d["negative"]),
            bool(d["empty_edge"]),
            int(d["replicates"]),
        )

    def to_dict(self) -> dict:
        d = asdict(self)
        d["positive"], d["negative"] = list(self.positive), list(self.negative)
        return d

    # ------------------------------------------------------------- wells
    @property
    def n_wells(self) -> int:
        return self.rows * self.cols

    def all_wells(self) -> list[str]:
        return [well_name(r, c) for r in range(self.rows) for c in range(self.cols)]

    def empty_wells(self) -> list[str]:
        if not self.empty_edge:
            return []
        controls = set(self.positive) | set(self.negative)
        edge = [
            well_name(r, c)
            for r in range(self.rows)
            for c in range(self.cols)
            if r in (0, self.rows - 1) or c in (0, self.cols - 1)
        ]
        return [w for w in edge if w not in controls]

    def compound_wells(self) -> list[str]:
        skip = set(self.positive) | set(self.negative) | set(self.empty_wells())
        return [w for w in self.all_wells() if w not in skip]

    @property
    def capacity(self) -> int:
        """Compound wells on one plate (controls and empty wells excluded)."""
        return len(self.compound_wells()) // self.replicates * self.replicates

    @property
    def compounds_per_plate(self) -> int:
        return len(self.compound_wells()) // self.replicates

    def place(self, n_compounds: int) -> list[str]:
        """The wells of ``n_compounds`` compounds with their replicates: replicate k of compound i is
        well ``k * n + i`` of the compound wells (every compound once, then again, ...)."""
        return self.compound_wells()[: n_compounds * self.replicates]

    @property
    def format_name(self) -> str:
        """'384-well' for a standard format, else 'ROWSxCOLS'."""
        fmt = next((f"{n}-well" for n, shape in FORMATS.items() if shape == (self.rows, self.cols)), None)
        return fmt or f"{self.rows}x{self.cols}"

    def describe(self) -> str:
        parts = [f"{self.format_name} plates ({_counted(self.rows, 'row')} x {_counted(self.cols, 'column')})"]
        if self.positive or self.negative:
            # one kind alone is refused by build, but a file may hold such a layout from before
            neg = f"{len(self.negative)} negative ({well_span(self.negative)})" if self.negative else "no negative"
            pos = f"{_counted(len(self.positive), 'positive control well')} ({well_span(self.positive)})"
            parts.append(f"{pos} and {neg}" if self.positive else f"no positive control wells and {neg}")
        else:
            parts.append("no control wells")
        if self.empty_edge:
            parts.append(f"{_counted(len(self.empty_wells()), 'edge well')} left empty")
        parts.append(
            f"{_counted(self.compounds_per_plate, 'compound')} per plate"
            + (f", each in {self.replicates} wells" if self.replicates > 1 else "")
        )
        return ", ".join(parts)


def edge_controls(rows: int, cols: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The ``edge`` scheme's (positive, negative) control wells: the first column and the last (none on a plate of
    fewer than 3 columns, which would hold no compound wells between them)."""
    if cols < 3:
        return (), ()
    return tuple(well_name(r, 0) for r in range(rows)), tuple(well_name(r, cols - 1) for r in range(rows))


def _counted(n: int, noun: str) -> str:
    """'1 row', '8 rows'."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def well_span(wells) -> str:
    """Wells for a message: all of them up to three, else the first and the last ('A01..H12')."""
    wells = list(wells)
    if len(wells) <= 3:
        return ", ".join(wells)
    return f"{wells[0]}..{wells[-1]}"


def parse_wells(text: str, rows: int, cols: int, option: str) -> tuple[str, ...]:
    """'A01,B01' or a rectangle 'A01:H01' (or both, comma-separated) -> normalized well names."""
    out: list[str] = []
    for part in (p.strip() for p in str(text).split(",")):
        if not part:
            continue
        ends = [e.strip() for e in part.split(":")]
        if len(ends) > 2:
            raise ValueError(f"{option}: {part!r} is not a well or a range such as A01:H01")
        (r0, c0), (r1, c1) = (_rc(e, rows, cols, option) for e in (ends[0], ends[-1]))
        for r in range(min(r0, r1), max(r0, r1) + 1):
            for c in range(min(c0, c1), max(c0, c1) + 1):
                w = well_name(r, c)
                if w not in out:
                    out.append(w)
    if not out:
        raise ValueError(f"{option}: no well given; write wells such as A01,B01 or a range A01:H01")
    return tuple(out)


def _rc(text: str, rows: int, cols: int, option: str) -> tuple[int, int]:
    m = _WELL.match(text)
    if not m:
        raise ValueError(f"{option}: {text!r} is not a well name (row letters and a column number, e.g. A01)")
    letters = m.group(1).upper()
    r = 0
    for ch in letters:
        r = r * 26 + (ord(ch) - 64)
    r -= 1
    c = int(m.group(2)) - 1
    if not (0 <= r < rows and 0 <= c < cols):
        raise ValueError(
            f"{option}: well {text} is not on a {rows}x{cols} plate (A01..{well_name(rows - 1, cols - 1)})"
        )
    return r, c

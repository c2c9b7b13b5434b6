"""What a value the lab writes may be, by kind of readout: one table, ``RANGES``.

Each kind has a range outside which a value is refused (no assay or reader can give it: a value in another unit, a
raw signal in place of a percent, digits run together; ``record`` names the file, line, well and value and what to
write) and a narrower usual range outside which it is recorded as written with a warning (stderr and the campaign's
log, the record event's ``suspicious`` list), plus the values at which a reader's counter stops (a saturated well),
also warned.  :meth:`~screenbai.campaign.lab.assay.Readout.problem` and ``suspicion`` look the readout's kind up
here (``Readout.range_kind``); the words of each message are in the table beside its bound.

The value compared is that of the kind's scale: a concentration in a unit of known size in mol/L or g/L; one in a
unit of no known size (none declared) as its ratio to the hit cutoff, which is in the same unit (two concentrations an
assay can give are at most 10^18 apart, 1e-18 .. 1 M, and two usual ones 10^9, 1 pM .. 1 mM, whatever the unit); the
others as written.  A value that is not a finite number (nan, inf) is refused before, for every kind.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: the largest count of a 16-bit, a signed 32-bit and an unsigned 32-bit counter: a reader writes it for a well whose
#: signal went past what it can count (a saturated well), not the well's signal
READER_CEILINGS = (65535.0, 2147483647.0, 4294967295.0)
_INF = float("inf")


@dataclass(frozen=True)
class Range:
    """Bounds of one kind of readout, on its scale (see the module doc), and what to say past each."""

    impossible: tuple[float, float]
    usual: tuple[float, float]
    #: message templates: {raw} the value as written (:g), {value} on the kind's scale (.3g), {bound} the bound passed
    #: (:g), {low} {high} the usual range's ends, {base} the scale's unit, {unit} the declared unit, {label} the
    #: readout's name and unit, {cutoff} the hit cutoff
    refused_low: str = ""
    refused_high: str = ""
    unusual_low: str = ""
    unusual_high: str = ""
    ceilings: tuple[float, ...] = ()
    at_ceiling: str = ""
    #: write whole numbers whole (counts: 4294967295, not 4.29497e+09)
    whole: bool = False

    def number(self, x: float) -> str:
        return str(int(x)) if self.whole and float(x).is_integer() and abs(x) < 1e10 else f"{x:g}"


_UNIT_SLIP = "a value in another unit (the declared one is {unit})"
#: what to say of a concentration in mol/L or g/L past each bound
_CONCENTRATION_WORDS: dict[str, Any] = {
    "refused_low": "{raw} {unit} is {value} {base}, below {bound} {base} (under one molecule per microlitre): "
    + _UNIT_SLIP
    + "? write it in {unit}, or 'failed'",
    "refused_high": "{raw} {unit} is {value} {base}, above {bound} {base}, which no assay doses: "
    + _UNIT_SLIP
    + ", or a curve fit extrapolated past the top concentration? write it in {unit}, the assay's top "
    "concentration if the compound was inactive up to it, or 'failed'",
    "unusual_low": "{raw} {unit} is {value} {base}, below {bound} {base}, past the tight-binding limit of nearly "
    "every assay: a value in another unit than {unit}? recorded as written; check it",
    "unusual_high": "{raw} {unit} is {value} {base}, above {bound} {base}, past the top concentration of nearly "
    "every assay: a curve fit's extrapolation, or a value in another unit than {unit}? recorded as written; "
    "check it",
}
#: a unit-less concentration's ratio to the hit cutoff, and a percent: the same words past either end
_RATIO_REFUSED = (
    "{raw} is {value} times the hit cutoff {cutoff}: no two concentrations an assay can give are "
    "that far apart (1e-18 .. 1 M), whatever the unit: a value in another unit, or a typo? write it in the unit "
    "of the cutoff, or 'failed'"
)
_RATIO_UNUSUAL = (
    "{raw} is {value} times the hit cutoff {cutoff}, further from it than the usual range of "
    "assays spans (1 pM .. 1 mM, a factor 1e9): a value in another unit? recorded as written; check it (a unit "
    "declared at init, --unit nM, lets record check the values themselves)"
)
_PERCENT_REFUSED = (
    "{label} beyond +-{high_impossible} %: a raw signal in place of the percent, or a typo? write "
    "the percent measured, or 'failed'"
)
_PERCENT_UNUSUAL = (
    "{raw} % is outside {low} % .. {high} %, far past the controls' window: a raw signal, a typo or "
    "a plate normalised on the wrong controls? recorded as written; check it"
)


def _both_ends(refused: str, unusual: str) -> dict[str, Any]:
    return {"refused_low": refused, "refused_high": refused, "unusual_low": unusual, "unusual_high": unusual}


RANGES: dict[str, Range] = {
    # a concentration in mol/L: no assay doses near 1 M, and under 1e-18 M is less than one molecule per microlitre;
    # below 1 pM is past the tight-binding limit of nearly every assay, above 1 mM past any top concentration
    "molar": Range(impossible=(1e-18, 1.0), usual=(1e-12, 1e-3), **_CONCENTRATION_WORDS),
    # the same in g/L, for molar masses of 100 (a fragment) to 10^6 g/mol
    "mass": Range(impossible=(1e-16, 1000.0), usual=(1e-10, 1.0), **_CONCENTRATION_WORDS),
    # a concentration in a unit of no known size, as its ratio to the hit cutoff (in the same unit)
    "concentration": Range(
        impossible=(1e-18, 1e18),
        usual=(1e-9, 1e9),
        **_both_ends(
            refused=_RATIO_REFUSED,
            unusual=_RATIO_UNUSUAL,
        ),
    ),
    # a percent of the controls' window (inhibition, activity, viability) runs a little past 0 and 100, not
    # thousands: beyond +-1000 % a raw signal or a typo; outside -100 .. 200 % twice the window past either end
    "percent": Range(
        impossible=(-1000.0, 1000.0),
        usual=(-100.0, 200.0),
        **_both_ends(
            refused=_PERCENT_REFUSED,
            unusual=_PERCENT_UNUSUAL,
        ),
    ),
    # an absorbance (OD): readers read up to 3.5-4.5 OD and saturate there (an OD of 4 lets 1/10 000 of the light
    # through); above 10 (1e-10 of it) no reader reads, so the value is in mOD, a raw signal or a %; a blank-subtracted
    # OD is a little below 0 by the reader's noise (a few 0.01), not more
    "absorbance": Range(
        impossible=(-10.0, 10.0),
        usual=(-0.05, 4.0),
        refused_low="an absorbance of {raw} OD is below {bound}, which no reader reads: a value in mOD (divide by "
        "1000), a raw signal, or a sign slip? write the OD, or 'failed'",
        refused_high="an absorbance of {raw} OD is above {bound} (a transmission of 1e-10), which no plate reader "
        "reads (they saturate near 4): a value in mOD (divide by 1000), a raw signal or a %? write the OD, or "
        "'failed'",
        unusual_low="an absorbance of {raw} OD is below {bound}, more negative than a blank-subtracted well's noise: "
        "a blank read on the wrong well, a bubble or a sign slip? recorded as written; check it",
        unusual_high="an absorbance of {raw} OD is above {bound}, where plate readers saturate: the well's OD may be "
        "higher than read (dilute and read again)? recorded as written; check it",
    ),
    # a plate reader's raw signal in counts (RLU, RFU, counts, CPS, CPM): a reader gives 0 or more (below: a
    # background-subtracted value, or a sign slip); a 32-bit counter stops at 4 294 967 295, so more is a sum of reads
    # or a value from elsewhere, and above 1e12 digits run together or a number pasted from another column (no
    # detector counts 200 times past a 32-bit counter in one read); a counter's ceiling is a saturated well
    "raw count": Range(
        impossible=(-_INF, 1e12),
        usual=(0.0, 4294967295.0),
        refused_high="{raw}: a plate reader's raw {unit} above {bound}, 200 times past a 32-bit reader's counter "
        "(4294967295): digits run together, or a number from another column? write the reading, or 'failed'",
        unusual_low="{raw}: a plate reader's raw {unit} is not below 0 (background-subtracted, or a sign slip?); "
        "recorded as written; check it",
        unusual_high="{raw}: a plate reader's raw {unit} above {bound}, past a 32-bit reader's counter: a sum of "
        "reads, or a value from another column? recorded as written; check it",
        ceilings=READER_CEILINGS,
        whole=True,
        at_ceiling="{raw}: the largest count a {bits} reader can give, which it writes for a saturated well (its "
        "signal may be higher than read): read the plate again at a lower gain, or write 'failed'; recorded as "
        "written; check it",
    ),
}
_BITS = {65535.0: "16-bit", 2147483647.0: "signed 32-bit", 4294967295.0: "32-bit"}


def judge(kind: str, raw: float, value: float, **words) -> tuple[str, str] | None:
    """("refused" or "unusual", what to say) for a value ``raw`` as written, ``value`` on the kind's scale, of a
    readout of kind ``kind`` (a key of ``RANGES``); None where it is usual.  ``words`` fill the templates (base,
    unit, label, cutoff)."""
    r = RANGES[kind]
    n = r.number
    fields = dict(
        words,
        raw=n(raw),
        value=f"{value:.3g}",
        low=n(r.usual[0]),
        high=n(r.usual[1]),
        high_impossible=n(r.impossible[1]),
    )
    (lo, hi), (ulo, uhi) = r.impossible, r.usual
    if value < lo:
        return "refused", r.refused_low.format(bound=n(lo), **fields)
    if value > hi:
        return "refused", r.refused_high.format(bound=n(hi), **fields)
    if value in r.ceilings:
        return "unusual", r.at_ceiling.format(bits=_BITS.get(value, ""), **fields)
    if value < ulo:
        return "unusual", r.unusual_low.format(bound=n(ulo), **fields)
    if value > uhi:
        return "unusual", r.unusual_high.format(bound=n(uhi), **fields)
    return None

"""Units of activity values: those curation converts to nM, the one a column's header names
(``Ki (uM)``), and the unit a table's values are read in (declared, named by the header, or the default)."""

from __future__ import annotations

import re

#: Multiplicative factors from molar units to nM.
UNIT_FACTORS_TO_NM: dict[str, float] = {
    "pM": 1e-3,
    "nM": 1.0,
    "uM": 1e3,
    "µM": 1e3,  # micro sign U+00B5 (ChEMBL exports)
    "μM": 1e3,  # Greek mu U+03BC
    "mM": 1e6,
    "M": 1e9,
}
#: Mass concentrations (µg/mL == mg/L); converted with the molecular weight of the SMILES.
MASS_UNITS = {"ug.mL-1", "ug/mL", "ug/ml", "µg/mL", "µg.mL-1", "μg/mL", "μg.mL-1", "ug ml-1", "mg/L", "mg.L-1"}


#: Units a table's values may be declared in (``source.units``): those curation converts to nM.
ACCEPTED_UNITS: tuple[str, ...] = (*UNIT_FACTORS_TO_NM, *sorted(MASS_UNITS))

# Units a column header may name, as words: 'Ki (uM)', 'ic50_nM', 'IC50 [µmol/L]'; case aside,
# except M, whose lower case is no unit
_HEADER_UNIT_WORDS = {
    **{u.lower(): u for u in UNIT_FACTORS_TO_NM if u != "M"},
    **{u.lower(): u for u in MASS_UNITS},
    "pmol/l": "pM", "nmol/l": "nM", "umol/l": "uM", "µmol/l": "µM", "μmol/l": "μM", "mmol/l": "mM", "mol/l": "M",
    "picomolar": "pM", "nanomolar": "nM", "micromolar": "uM", "millimolar": "mM", "molar": "M",
}
_HEADER_WORD = re.compile(r"[^\s_()\[\]{},;:|]+")


def canonical_unit(unit: str) -> str | None:
    """A row's unit as curation converts it: itself when accepted, else the same unit in another case or
    spelled out (``nm``, ``UM``, ``nmol/L``, ``micromolar``); None for any other (``m`` is no concentration)."""
    if unit in UNIT_FACTORS_TO_NM or unit in MASS_UNITS:
        return unit
    return _HEADER_UNIT_WORDS.get(unit.lower())


def same_unit(a: str, b: str) -> bool:
    """Whether two accepted units convert alike (uM, µM and μM; ug/mL and mg/L)."""
    if a in MASS_UNITS or b in MASS_UNITS:
        return a in MASS_UNITS and b in MASS_UNITS
    return UNIT_FACTORS_TO_NM[a] == UNIT_FACTORS_TO_NM[b]


def unit_named_in(header: str) -> str | None:
    """The unit an activity column's header names as a word (``Ki (uM)`` -> uM), or None.

    A header naming two different units is refused (which one holds is unknown)."""
    found = {
        _HEADER_UNIT_WORDS.get(w.lower()) if w != "M" else "M"
        for w in _HEADER_WORD.findall(str(header))
        if w == "M" or w.lower() in _HEADER_UNIT_WORDS
    }
    found.discard(None)
    named = sorted(u for u in found if u is not None)
    if len(named) > 1 and not all(same_unit(named[0], u) for u in named[1:]):
        raise ValueError(f"the activity column {header!r} names several units ({', '.join(named)}): rename it")
    return named[0] if named else None


def table_units(activity_column: str, units: str | None, where: str, key: str = "units") -> tuple[str, str]:
    """The unit of a table's values and where it comes from: ``(unit, how)``.

    ``units`` (the config's ``source.units``, named ``key`` in messages) when given: it must be one of
    :data:`ACCEPTED_UNITS` and agree with a unit the activity column's header names (``Ki (uM)``).
    Else the header's unit; else nM, the default, which ``how`` says (the run's log and report show it).
    """
    if units is not None and units not in ACCEPTED_UNITS:
        raise ValueError(
            f"{where}: {key} = {units!r} is not a unit curation converts; accepted: {', '.join(ACCEPTED_UNITS)}"
        )
    try:
        named = unit_named_in(activity_column)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None
    if units is not None and named is not None and not same_unit(units, named):
        raise ValueError(
            f"{where}: {key} = {units!r} contradicts the activity column {activity_column!r}, whose header names "
            f"{named}: a value read in the wrong unit is off by a factor of "
            f"{_factor(units, named)}. Set {key}: {named} if the header is right, else rename the column"
        )
    if units is not None:
        return units, f"{key}"
    if named is not None:
        return named, f"named by the activity column {activity_column!r}"
    return "nM", f"nM, the default: {key} is not given and the activity column {activity_column!r} names no unit"


def _factor(a: str, b: str) -> str:
    if a in MASS_UNITS or b in MASS_UNITS:
        return "the molecular weight"
    ratio = UNIT_FACTORS_TO_NM[a] / UNIT_FACTORS_TO_NM[b]
    return f"{max(ratio, 1 / ratio):g}"

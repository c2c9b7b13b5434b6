"""Readouts as the assay gives them: raw values, a hit cutoff, control wells and the Z'-factor.

Declared at ``init`` (``--readout "percent inhibition" --hit-above 50``, or ``--readout IC50
--unit nM --hit-below 1000``).  Every value the lab writes in the outcome column is kept as it
was typed (table ``readouts``), and what the algorithm is told is derived from it:

* binary campaigns (logistic model, GLGapE / GSE-Log): 1 when the value is a hit (at or above the
  cutoff with ``--hit-above``, at or below it with ``--hit-below``), else 0;
* continuous campaigns (linear-Gaussian model, m-LinGapE and the other linear algorithms): the value
  itself, negated with ``--hit-below`` so that larger is better for the algorithm, which looks for
  the compound with the largest mean; for a concentration (an IC50, a Ki ...: ``scale`` "log10", set at
  ``init``), log10 of the value in the declared unit, negated with ``--hit-below`` (-log10 IC50, as a
  pIC50 up to a constant): concentrations spread over orders of magnitude, their noise by factors.
  Campaign files made before keep the raw value (``scale`` "linear"), and so replay as they ran.

Control wells (see :mod:`~screenbai.campaign.lab.layout`) are read from the same results file.  Per
plate, once it has at least two positive and two negative control values, the Z'-factor
(Zhang, Chung & Oldenburg 1999, J. Biomol. Screen. 4:67, eq. 1)

    Z' = 1 - 3 (sd_pos + sd_neg) / |mean_pos - mean_neg|

is computed (sample standard deviations): for a concentration (an IC50, a Ki ...), of log10 of the values, as
potency controls are compared in the field (pIC50): they spread by factors, and on the raw values the high
control's spread alone sets Z' (controls at 10 nM and 10 uM, each within a factor 1.26, read 0.44 raw and 0.84 on
log10); for a % or a raw signal, of the values themselves.  Campaign files made before keep the scale they were
checked on (``z_log`` False: log10 only where the model takes the readout as log10, ``scale`` "log10").  A plate
with Z' below ``min_z`` (default 0.5, the paper's "excellent assay" bound) fails its controls: ``record`` refuses
the file until the lab decides, ``--accept`` (its outcomes count) or ``--discard-plate`` (its compound wells count as
failed and go back into the queue; their raw values stay in the file, marked discarded).
"""

from __future__ import annotations

import math
import re
import sqlite3
from dataclasses import asdict, dataclass, replace

import numpy as np

from . import ranges

DIRECTIONS = ("above", "below")
#: a plate's controls fail below this Z' unless init says otherwise (--min-z, with --readout)
DEFAULT_MIN_Z = 0.5
#: pseudo-arms of control wells in a plate map (never a compound's arm, which is >= 0)
POSITIVE, NEGATIVE = -1, -2
CONTROL_IDS = {POSITIVE: "POSITIVE_CONTROL", NEGATIVE: "NEGATIVE_CONTROL"}
KIND_OF = {POSITIVE: "positive", NEGATIVE: "negative"}

#: readouts that are a concentration whatever unit is declared (compared without case, spaces or '-')
CONCENTRATION_READOUTS = ("ic50", "ec50", "ac50", "gi50", "cc50", "ki", "kd", "kb")
#: the potencies among them: the lower, the more potent (a CC50, a cytotoxic concentration, is better higher)
POTENCY_READOUTS = ("ic50", "ec50", "ac50", "gi50", "ki", "kd", "kb")
#: units of a concentration: molar (pM .. M, mol/L) or mass per volume (ng/mL, mg/L)
_CONCENTRATION_UNIT = re.compile(
    r"[fpnuµμm]?M|[fpnuµμm]?mol\s*/\s*[dm]?[lL]|(femto|pico|nano|micro|milli)?molar|[fpnuµμmk]?g\s*/\s*[mµμud]?[lL]"
)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS controls (plate_id TEXT NOT NULL, well TEXT NOT NULL, kind TEXT NOT NULL,
    PRIMARY KEY (plate_id, well));
CREATE TABLE IF NOT EXISTS readouts (record_id INTEGER NOT NULL, plate_id TEXT NOT NULL, well TEXT NOT NULL,
    kind TEXT NOT NULL, raw REAL, discarded INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (plate_id, well));
CREATE TABLE IF NOT EXISTS plate_qc (plate_id TEXT NOT NULL, record_id INTEGER NOT NULL, z_prime REAL,
    n_positive INTEGER NOT NULL, n_negative INTEGER NOT NULL, decision TEXT NOT NULL,
    PRIMARY KEY (plate_id, record_id));
CREATE TABLE IF NOT EXISTS censored (plate_id TEXT NOT NULL, well TEXT NOT NULL, relation TEXT NOT NULL,
    typed TEXT NOT NULL, PRIMARY KEY (plate_id, well));
CREATE TABLE IF NOT EXISTS well_notes (plate_id TEXT NOT NULL, well TEXT NOT NULL, why TEXT NOT NULL,
    PRIMARY KEY (plate_id, well));
"""


def ensure_schema(con: sqlite3.Connection, *, readonly: bool = False) -> None:
    """The tables of plate controls and raw readouts, added to files made before they existed; in a
    file this user cannot change, as empty temporary tables of the connection (so that ``status`` and
    ``report`` read such a file as one without controls or readouts)."""
    have = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    for statement in _SCHEMA.split(";"):
        if not statement.strip():
            continue
        name = statement.split("EXISTS", 1)[1].split("(", 1)[0].strip()
        if name in have:
            continue
        con.execute(statement.replace("CREATE TABLE", "CREATE TEMP TABLE") if readonly else statement)


def check_min_z(min_z) -> None:
    """Refuse a bound on Z' that no plate could pass (Z' is at most 1) or that is not a number."""
    if not math.isfinite(float(min_z)) or float(min_z) >= 1:
        raise ValueError(f"--min-z must be a number below 1 (Z' is at most 1); got {min_z}")


#: units of a plate reader's raw signal: counts of photons or fluorescence, at least 0 as the reader gives them
RAW_COUNT_UNITS = ("rlu", "rfu", "counts", "count", "cps", "cpm")
#: readout names that are such a raw signal when no unit says so
RAW_COUNT_NAMES = ("luminescence", "fluorescence", "counts", "rlu", "rfu")
#: units of an absorbance (OD, Abs, OD600, A450 ...), and readout names that are one when no unit says so
_ABSORBANCE_UNIT = re.compile(r"(od|abs|absorbance|a(?=\s*\d))(\s*\d{3}(\s*nm)?)?")
_ABSORBANCE_NAME = re.compile(r"(absorbance|opticaldensity|od|abs|a(?=\d))(at)?(\d{3}(nm)?)?")
_SI = {"": 1.0, "k": 1e3, "d": 1e-1, "m": 1e-3, "u": 1e-6, "µ": 1e-6, "μ": 1e-6, "n": 1e-9, "p": 1e-12, "f": 1e-15}
_WORDS = {"": "", "milli": "m", "micro": "u", "nano": "n", "pico": "p", "femto": "f"}


def concentration_factor(unit: str) -> tuple[float, str] | None:
    """(The factor to mol/L or g/L, "M" or "g/L") of a concentration's unit (nM: 1e-9 M; ng/mL: 1e-6 g/L), or None
    for a unit of no known size (none declared, or another)."""
    u = unit.strip()
    m = re.fullmatch(r"([fpnuµμm]?)M", u) or re.fullmatch(r"(femto|pico|nano|micro|milli)?molar", u.lower())
    if m:
        return _SI[_WORDS.get(m.group(1) or "", m.group(1) or "")], "M"
    m = re.fullmatch(r"([fpnuµμm]?)mol\s*/\s*([dm]?)[lL]", u)
    if m:
        return _SI[m.group(1)] / _SI[m.group(2)], "M"
    m = re.fullmatch(r"([fpnuµμmk]?)g\s*/\s*([mµμud]?)[lL]", u)
    if m:
        return _SI[m.group(1)] / _SI[m.group(2)], "g/L"
    return None


@dataclass(frozen=True)
class Readout:
    name: str = "outcome"
    unit: str = ""
    cutoff: float | None = None
    direction: str = "above"
    min_z: float = DEFAULT_MIN_Z
    #: what a continuous campaign tells the algorithm: the value ("linear") or log10 of it ("log10", a concentration)
    scale: str = "linear"
    #: Z' of log10 of the values for a concentration whatever the model takes (set at init since log10 Z'; files
    #: made before have none: their Z' is of log10 only with ``scale`` "log10")
    z_log: bool = False

    @classmethod
    def build(
        cls, name: str, *, unit: str = "", hit_above=None, hit_below=None, min_z: float = DEFAULT_MIN_Z
    ) -> Readout:
        if hit_above is not None and hit_below is not None:
            raise ValueError("give one of --hit-above and --hit-below, not both")
        cutoff = hit_above if hit_above is not None else hit_below
        if cutoff is not None and not math.isfinite(float(cutoff)):
            raise ValueError(f"the hit cutoff must be a finite number; got {cutoff}")
        check_min_z(min_z)
        readout = cls(
            str(name),
            str(unit or ""),
            None if cutoff is None else float(cutoff),
            "below" if hit_below is not None else "above",
            float(min_z),
        )
        if readout.cutoff is not None and readout.cutoff <= 0 and readout.is_concentration:
            raise ValueError(
                f"--hit-{readout.direction} {readout.cutoff:g}: {readout.label()} is a concentration, above 0, so no "
                "compound could be a hit or every one would; give the cutoff in the declared unit"
            )
        return readout

    @classmethod
    def from_dict(cls, d: dict) -> Readout:
        return cls(**d)

    def to_dict(self) -> dict:
        return asdict(self)

    def modelled(self, binary: bool) -> Readout:
        """This readout as a new campaign tells it: on the log10 scale for a continuous concentration, else as is."""
        log = not binary and self.is_concentration
        return replace(self, scale="log10" if log else "linear", z_log=self.is_concentration)

    @property
    def z_on_log10(self) -> bool:
        """Whether a plate's Z' is of log10 of the values (a concentration; see the module doc), else of the values."""
        return self.scale == "log10" or (self.z_log and self.is_concentration)

    @property
    def is_concentration(self) -> bool:
        """Whether the readout is a concentration (an IC50, a Ki, or any readout in M, nM, mol/L, ng/mL ...)."""
        return self._plain_name() in CONCENTRATION_READOUTS or bool(_CONCENTRATION_UNIT.fullmatch(self.unit.strip()))

    @property
    def is_potency(self) -> bool:
        """Whether the readout is a potency by its name (IC50, EC50, Ki, Kd ...): the lower, the more potent."""
        return self._plain_name() in POTENCY_READOUTS

    def _plain_name(self) -> str:
        return re.sub(r"[\s_-]", "", self.name.lower())

    @property
    def is_percent(self) -> bool:
        """Whether the readout is a percent (of the controls' window): unit %, or named so without a unit."""
        unit = self.unit.strip().lower()
        return unit in ("%", "percent", "pct") or (not unit and ("percent" in self.name.lower() or "%" in self.name))

    @property
    def is_raw_count(self) -> bool:
        """Whether the readout is a plate reader's raw signal in counts (RLU, RFU, counts ...), by unit or name."""
        unit = self.unit.strip().lower()
        return unit in RAW_COUNT_UNITS or (not unit and self._plain_name() in RAW_COUNT_NAMES)

    @property
    def is_absorbance(self) -> bool:
        """Whether the readout is an absorbance (OD), by unit (OD, Abs, OD600, A450) or, without one, by name."""
        unit = self.unit.strip().lower()
        return bool(_ABSORBANCE_UNIT.fullmatch(unit) or (not unit and _ABSORBANCE_NAME.fullmatch(self._plain_name())))

    @property
    def range_kind(self) -> str | None:
        """The kind of readout whose bounds apply to its values (a key of :data:`~screenbai.campaign.lab.ranges.
        RANGES`), or None where none do: a concentration in a unit of known size ("molar", "mass") or of none
        ("concentration", checked against the hit cutoff; without a cutoff only above 0), a "percent", an
        "absorbance", a "raw count"."""
        if self.is_concentration:
            factor = concentration_factor(self.unit)
            if factor is not None:
                return "molar" if factor[1] == "M" else "mass"
            return "concentration" if self.cutoff is not None and self.cutoff > 0 else None
        if self.is_percent:
            return "percent"
        if self.is_absorbance:
            return "absorbance"
        return "raw count" if self.is_raw_count else None

    def _judged(self, raw: float) -> tuple[str, str] | None:
        kind = self.range_kind
        if kind is None:
            return None
        size = self._in_base_unit(raw)
        if size is None:  # a concentration of no known unit is judged by its ratio to the cutoff (same unit)
            size = (raw / self.cutoff if kind == "concentration" and self.cutoff else raw), ""
        words = dict(unit=self.unit or self.name, label=self.label(), cutoff=f"{self.cutoff:g}" if self.cutoff else "")
        return ranges.judge(kind, raw, size[0], base=size[1], **words)

    def problem(self, raw: float) -> str | None:
        """What makes a value the lab wrote impossible for this readout, or None: a concentration at or below 0, or a
        value outside its kind's possible range (:mod:`~screenbai.campaign.lab.ranges`: a concentration beyond 1e-18
        .. 1 M, a percent beyond +-1000 %, an OD beyond +-10, a raw count above 1e12). What is merely unusual is
        :meth:`suspicion`'s."""
        if self.is_concentration and raw <= 0:
            return (
                f"{self.label()} is a concentration, above 0; a sign or digit lost? write the value measured, the "
                "assay's lower limit if it is below the range, or 'failed'"
            )
        judged = self._judged(raw)
        return judged[1] if judged is not None and judged[0] == "refused" else None

    def suspicion(self, raw: float) -> str | None:
        """What is unusual, not impossible, in a value ``problem`` let through, or None: it is recorded as written,
        with a warning (stderr and the campaign's log). Outside its kind's usual range
        (:mod:`~screenbai.campaign.lab.ranges`), or a reader's counter ceiling (65535, 2^31-1, 2^32-1: a saturated
        well)."""
        judged = self._judged(raw)
        return judged[1] if judged is not None and judged[0] == "unusual" else None

    def _in_base_unit(self, raw: float) -> tuple[float, str] | None:
        """A concentration's value in mol/L or g/L (with which), None for another readout or a unit of unknown size."""
        factor = concentration_factor(self.unit) if self.is_concentration else None
        return None if factor is None else (raw * factor[0], factor[1])

    def column_unit_problem(self, column: str) -> str | None:
        """What is wrong with a results column (``record --outcome-column``) whose header names a concentration unit
        other than the readout's (``IC50 (uM)`` in a campaign in nM): read in the declared unit, every value would be
        off by the units' ratio, the hits with them. None where it names none, the same unit, or the readout has no
        unit of known size."""
        own = concentration_factor(self.unit) if self.is_concentration else None
        if own is None:
            return None
        for word in re.findall(r"[^\s_()\[\]{},;:|]+", column):
            if re.fullmatch(r"[fpnuµμ]m", word, re.IGNORECASE):  # 'IC50 (um)', 'ic50_NM': the molar units in any case
                word = word[0].lower() + "M"
            named = concentration_factor(word)
            if named is None or named == own:
                continue
            head = (f"the column {column!r} names {word}, but this campaign's {self.name} is in {self.unit} (declared "
                    "at init)")
            if named[1] != own[1]:
                return (f"{head}, a {'molar' if own[1] == 'M' else 'mass'} concentration: convert the values to "
                        f"{self.unit} and name the column so, or rename it if its header is wrong")
            ratio = named[0] / own[0]
            return (f"{head}: read as {self.unit}, every value would be off by a factor of {max(ratio, 1 / ratio):g}; "
                    f"convert the values to {self.unit} ({'multiply' if ratio > 1 else 'divide'} by "
                    f"{max(ratio, 1 / ratio):g}) and name the column so, or rename it if its header is wrong")
        return None

    def label(self) -> str:
        return f"{self.name} ({self.unit})" if self.unit else self.name

    def rule(self) -> str:
        if self.cutoff is None:
            return "no hit cutoff declared"
        sign = ">=" if self.direction == "above" else "<="
        return f"a hit when {self.name} {sign} {self.cutoff:g}{(' ' + self.unit) if self.unit else ''}"

    def is_hit(self, raw: np.ndarray) -> np.ndarray:
        raw = np.asarray(raw, dtype=float)
        if self.cutoff is None:
            raise ValueError("no hit cutoff was declared for this campaign's readout")
        return raw >= self.cutoff if self.direction == "above" else raw <= self.cutoff

    def told(self, raw: float, binary: bool, censored=None) -> float:
        """What the algorithm is told for a raw value (see module doc); for a censored one (``censored``: a bound
        that settles hit or not, :class:`~screenbai.campaign.lab.censored.Censored`), the hit it settles."""
        if censored is not None:
            return float(censored.hit)
        if binary:
            return float(self.is_hit(np.asarray([raw]))[0])
        value = math.log10(raw) if self.scale == "log10" else float(raw)
        return value if self.direction == "above" else -value

    def as_read(self, told):
        """A value of a continuous campaign as the algorithm was told it (a mean of them, an interval's end) back on
        the readout's own scale, the inverse of ``told``: negated back with --hit-below, then 10**x on the log10 scale
        (a mean of log10 values becomes a geometric mean). Numbers and arrays alike."""
        value = -told if self.direction == "below" else told
        if self.scale != "log10":
            return value
        with np.errstate(over="ignore"):  # a model's wild extrapolation: inf, not an error
            return np.power(10.0, value)

    def told_quantity(self) -> str:
        """What a continuous campaign tells the algorithm, in words: "IC50 (in nM)", or on the log10 scale
        "-log10 IC50 (IC50 in nM)" (negated with --hit-below)."""
        if self.scale != "log10":
            return self.name + (f" (in {self.unit})" if self.unit else "")
        sign = "-" if self.direction == "below" else ""
        return f"{sign}log10 {self.name}" + (f" ({self.name} in {self.unit})" if self.unit else "")

    def z_scale(self) -> str:
        """Where a Z' is shown, the scale it is on (see the module doc): log10 for a concentration (the scale the model
        uses where it takes the readout so; else as potency controls are compared); the raw values for a
        concentration of a campaign made before, said since status gives its spreads in log10 units; nothing for a
        readout that is no concentration (raw, as Z' usually is)."""
        if self.scale == "log10":
            return f" (of log10 {self.name}, the scale the model uses)"
        if self.z_on_log10:
            return f" (of log10 {self.name}, as potency controls are compared)"
        return f" (of the raw {self.name} values, not of log10)" if self.is_concentration else ""

    def told_units(self) -> str:
        """The units of what a continuous campaign tells the algorithm, so of its epsilon and sigma."""
        if self.scale == "log10":
            return f"log10 units of {self.name} (0.3: a factor 2)"
        return f"{self.name} ({self.unit}) units" if self.unit else "the readout's units"

    def model(self, binary: bool, algorithm: str, sigma: float | None = None) -> str:
        """The algorithm's model of this readout, in one sentence (``model_sentence``)."""
        return model_sentence(algorithm, binary, self, sigma)


def told_amount(value: float, readout: Readout | None) -> str:
    """A value on the scale a continuous campaign tells the algorithm (its sigma, its epsilon) with its units:
    "15 %", "0.3 log10 units of IC50", "15 fluorescence units"; "15 in the readout's units" without a declared
    readout (the values the lab writes)."""
    if readout is None:
        return f"{value:g} in the readout's units"
    if readout.scale == "log10":
        return f"{value:g} log10 units of {readout.name}"
    return f"{value:g} {readout.unit}" if readout.unit else f"{value:g} {readout.name} units"


def with_sigma_unit(text: str, sigma: float | None, readout: Readout | None) -> str:
    """``text`` with a continuous campaign's sigma given its units (``told_amount``) where it says "sigma = 15": the
    policies and the model check (bandits/) write the number alone, as they do not know the readout."""
    if sigma is None:
        return text
    number, amount = f"{sigma:g}", told_amount(sigma, readout)
    unit = re.escape(amount[len(number):])  # not twice: a text already said with its units is left as it is
    return re.sub(rf"sigma = {re.escape(number)}(?![\w.]|{unit})", f"sigma = {amount}", text)


def model_sentence(algorithm: str, binary: bool, readout: Readout | None = None, sigma: float | None = None) -> str:
    """How ``algorithm`` models a campaign's outcomes, in one sentence: 0/1 outcomes (hits by ``readout``'s rule,
    when there is one) or a continuous readout, through the features or each compound on its own; ``sigma``: a
    continuous readout's noise scale, said with its units (``told_amount``)."""
    if binary:
        hits = (f"hits ({readout.rule()}; the raw {readout.name} is kept in the file)" if readout is not None
                else "the 0/1 outcomes")
        if not models_features(algorithm):
            own = hits if readout is not None else "0/1 outcomes"
            return (f"{algorithm} takes each compound's {own} on their own, with no model of the features: "
                    f"{no_feature_model(algorithm)}")
        if not logistic_on_hits(algorithm):
            return (f"{algorithm} models {hits} with a linear model of the features, noise sub-Gaussian with its "
                    "declared sigma (1/2 covers any 0/1 outcome)")
        if readout is None:
            return f"{algorithm} models {hits} with a logistic model of the features"
        return (f"{algorithm} models hits with a logistic model of the features ({readout.rule()}; the raw "
                f"{readout.name} is kept in the file)")
    what = "outcomes" if readout is None else readout.label()
    flip = " (negated: lower is better)" if readout is not None and readout.direction == "below" else ""
    value = "" if sigma is None else f" = {told_amount(sigma, readout)}"
    noise = f"its noise scale is its parameter sigma{value}: compare it with the control wells' spread in status"
    if readout is not None and readout.scale == "log10":
        what = f"log10 {what}"
        noise += ("; sigma and epsilon are in log10 units (epsilon 0.3: a factor 2 in " + readout.name + ")")
    if not models_features(algorithm):
        return (f"{algorithm} takes each compound's {what}{flip} on its own, with no model of the features: each "
                f"compound's outcomes independent, noise sub-Gaussian; {noise}")
    itself = "" if readout is None or readout.scale == "log10" else " itself"
    return f"{algorithm} models the {what}{itself}{flip} with a linear-Gaussian model of the features; {noise}"


def no_feature_model(algorithm: str) -> str:
    """What an algorithm with no model of the features assumes of a compound's 0/1 outcomes: independent draws of
    its hit rate (KL-LUCB), or noise sub-Gaussian with the declared sigma (LUCB, UGapE)."""
    from screenbai.bandits.core.registry import get

    if getattr(get(algorithm).cls, "binary_rewards", False):
        return "each compound's outcomes independent draws of its own hit rate"
    return ("each compound's outcomes independent, noise sub-Gaussian with its declared sigma (1/2 covers any 0/1 "
            "outcome)")


def models_features(algorithm: str) -> bool:
    """Whether the registered ``algorithm`` models the outcomes through the compounds' features (False: each
    compound on its own, as LUCB, UGapE and KL-LUCB)."""
    from screenbai.bandits.core.registry import get

    return bool(getattr(get(algorithm).cls, "models_features", True))


def logistic_on_hits(algorithm: str) -> bool:
    """Whether the registered ``algorithm`` models 0/1 outcomes with a logistic model (GLGapE, log-tas,
    GSE-Log, UCB-GLM) rather than a linear model with sub-Gaussian noise (LinGapE, lin-tas, RAGE, ...)."""
    from screenbai.bandits.core.registry import get  # here: the plate and results readers need no policy code

    return bool(getattr(get(algorithm).cls, "binary_rewards", False))


def pooled_deviations(rows, log: bool = False) -> tuple[float, int]:
    """Sum of squared deviations from each group's mean and its degrees of freedom, over rows (key, key, value)
    grouped by their two keys, groups of at least two values; ``log``: of log10 of the values (those above 0)."""
    groups: dict[tuple, list[float]] = {}
    for a, b, value in rows:
        if not log or value > 0:
            groups.setdefault((a, b), []).append(math.log10(value) if log else float(value))
    ss, dof = 0.0, 0
    for key in sorted(groups, key=str):  # sorted: the same sum whatever order the outcomes were recorded in
        if len(groups[key]) >= 2:
            v = np.sort(groups[key])
            ss += float(((v - v.mean()) ** 2).sum()) if v[0] != v[-1] else 0.0  # equal values: 0, not rounding noise
            dof += v.size - 1
    return ss, dof


def z_prime(pos, neg) -> float | None:
    """Z' = 1 - 3 (sd_p + sd_n) / |mu_p - mu_n| (sample sd); None below two values of each."""
    pos, neg = np.asarray(pos, dtype=float), np.asarray(neg, dtype=float)
    if pos.size < 2 or neg.size < 2:
        return None
    gap = abs(pos.mean() - neg.mean())
    spread = 3.0 * (pos.std(ddof=1) + neg.std(ddof=1))
    if gap == 0:
        return -math.inf
    return float(1.0 - spread / gap)


class ControlsFailed(ValueError):
    """A results file holds a plate whose controls fail (Z' below the bound); nothing was recorded."""


#: log10 units both kinds of a concentration's controls must move together, from the earlier plates' levels, to be
#: read as a unit slip (100 times: nM for uM is 1000; real plate-to-plate drift of potency controls is far smaller)
UNIT_SLIP_LOG10 = 2.0


def earlier_control_levels(con, plate_ids) -> dict[int, float]:
    """The median over the plates recorded before (not ``plate_ids``, not discarded) of each plate's mean log10 control
    value, per kind (a concentration's controls: :func:`check_controls`'s ``levels``); a kind no such plate has is
    absent."""
    per_plate: dict[tuple[str, int], list[float]] = {}
    for plate_id, kind, raw in con.execute(
        "SELECT plate_id, kind, raw FROM readouts WHERE kind != 'compound' AND raw > 0 AND discarded = 0"
    ):
        if plate_id not in plate_ids:
            per_plate.setdefault((plate_id, POSITIVE if kind == "positive" else NEGATIVE), []).append(math.log10(raw))
    return {k: float(np.median([np.mean(v) for (_, kind), v in per_plate.items() if kind == k]))
            for k in (POSITIVE, NEGATIVE) if any(kind == k for _, kind in per_plate)}


def _unit_slip(values: dict[int, list[float]], levels: dict[int, float], readout: Readout) -> str | None:
    """What is wrong when both kinds of a plate's concentration controls read at least UNIT_SLIP_LOG10 log10 units
    from the earlier plates' levels, the same way (by about the same factor): a file in another unit. None else."""
    if not all(values[k] and k in levels for k in (POSITIVE, NEGATIVE)):
        return None
    shift = {k: float(np.mean(np.log10(values[k]))) - levels[k] for k in (POSITIVE, NEGATIVE)}
    pos, neg = shift[POSITIVE], shift[NEGATIVE]
    if min(abs(pos), abs(neg)) < UNIT_SLIP_LOG10 or pos * neg < 0 or abs(pos - neg) > 1.0:
        return None
    factor, way = 10 ** abs((pos + neg) / 2), "above" if pos > 0 else "below"
    unit = readout.unit
    return (f"its controls read about {factor:.3g} times {way} those of the plates recorded before (positive "
            f"{10 ** (levels[POSITIVE] + pos):.3g} {unit} against {10 ** levels[POSITIVE]:.3g} {unit}, negative "
            f"{10 ** (levels[NEGATIVE] + neg):.3g} {unit} against {10 ** levels[NEGATIVE]:.3g} {unit}; geometric "
            f"means): a file in another unit than the campaign's {unit} (uM written for nM reads 1000 times below), or "
            f"were the plates before it? convert the file in the wrong unit to {unit}; if it is this one, record it "
            "again")


def check_controls(
    path, controls, readout: Readout | None, *, accept: bool, discard: bool, plates: dict | None = None,
    levels: dict[int, float] | None = None,
) -> dict:
    """Plate id -> (Z', decision) for the plates whose control wells ``controls`` (outcomes with a
    control pseudo-arm) a results file holds, or whose compound wells it records; raises :class:`ControlsFailed`
    when a plate fails and the lab has not decided (``accept`` / ``discard``).

    ``plates`` maps each plate whose compound wells the file records to (its control values recorded by earlier
    files, its control wells), each by pseudo-arm: Z' is of the plate's controls however many files brought them
    (a plate recorded in parts), and a plate with control wells whose compound outcomes would count while fewer
    than two of a kind have a value (rows left out of the file, failed or empty) fails too, with a declared readout
    (``min_z`` applies to it): its plate cannot be checked. ``levels`` (:func:`earlier_control_levels`, for a
    concentration) fails a plate whose controls all read 100 times or more above or below the earlier plates': a file
    in another unit passes Z' of log10 (both kinds move alike) and would turn every compound into a hit or none."""
    min_z = DEFAULT_MIN_Z if readout is None else readout.min_z
    log = readout is not None and readout.z_on_log10  # a concentration's Z' of log10 (module doc)
    scale = "" if readout is None else readout.z_scale()
    by_plate: dict[str, dict[int, list[float]]] = {}
    for plate_id, (earlier, _) in (plates or {}).items():
        by_plate[plate_id] = {k: list(earlier.get(k, ())) for k in (POSITIVE, NEGATIVE)}
    for o in controls:
        slot = by_plate.setdefault(o.plate_id, {POSITIVE: [], NEGATIVE: []})
        if o.value is not None and (not log or o.value > 0):  # a concentration at or below 0 is refused before
            slot[o.arm].append(float(o.value))
    qc: dict[str, tuple[float | None, str]] = {}
    failing = []
    for plate_id, values in by_plate.items():
        z = z_prime(*(np.log10(values[k]) if log else values[k] for k in (POSITIVE, NEGATIVE)))
        swapped = None if z is None else _reversed_controls(values[POSITIVE], values[NEGATIVE], readout)
        if swapped is None and z is not None and log and levels and readout is not None:
            swapped = _unit_slip(values, levels, readout)
        wells = (plates or {}).get(plate_id, ({}, {}))[1]
        # a declared readout's plate with control wells but too few values (0/1 outcomes without one: no bound on Z')
        if z is None and readout is not None and all(wells.get(k) for k in (POSITIVE, NEGATIVE)):
            few = "; ".join(
                f"{len(values[k])} {KIND_OF[k]} control value{'' if len(values[k]) == 1 else 's'} of its "
                f"{len(wells[k])} wells ({', '.join(wells[k]) if len(wells[k]) <= 6 else wells[k][0] + '..'})"
                for k in (POSITIVE, NEGATIVE)
                if len(values[k]) < 2
            )
            failing.append(
                f"plate {plate_id}: no Z': {few}, in this file and any recorded before (rows left out, or failed "
                "wells), so its controls cannot be checked; add its control rows to the file"
            )
            qc[plate_id] = (None, "accepted" if accept else "discarded" if discard else "failed")
        elif z is None:
            qc[plate_id] = (None, "too few controls")
        elif swapped is not None:
            failing.append(f"plate {plate_id}: Z' = {z:.2f}{scale}, but {swapped}")
            qc[plate_id] = (z, "accepted" if accept else "discarded" if discard else "failed")
        elif z >= min_z:
            qc[plate_id] = (z, "pass")
        else:
            pos, neg = np.asarray(values[POSITIVE]), np.asarray(values[NEGATIVE])
            unit = f" {readout.unit}" if readout is not None and readout.unit else ""
            if log:  # the spreads Z' compared: in log10 units, beside the geometric means in the unit
                lp, ln = np.log10(pos), np.log10(neg)
                spread = (f"positive controls {10 ** lp.mean():.3g}{unit}, sd {lp.std(ddof=1):.2g} log10 units, "
                          f"negative {10 ** ln.mean():.3g}{unit}, sd {ln.std(ddof=1):.2g} log10 units (geometric "
                          f"mean, sd of log10), n = {pos.size} + {neg.size}")
            else:
                spread = (f"positive controls {pos.mean():.3g} +- {pos.std(ddof=1):.2g}{unit}, negative "
                          f"{neg.mean():.3g} +- {neg.std(ddof=1):.2g}{unit} (mean +- sd), n = {pos.size} + {neg.size}")
            failing.append(f"plate {plate_id}: Z' = {z:.2f} < {min_z:g}{scale} ({spread})")
            qc[plate_id] = (z, "accepted" if accept else "discarded" if discard else "failed")
    if failing and not (accept or discard):
        raise ControlsFailed(
            f"{path}: the controls of {len(failing)} plate(s) fail; nothing was recorded:\n  "
            + "\n  ".join(failing)
            + "\nthe lab decides: record the file again with --accept (the plate's outcomes count) or "
            "--discard-plate (its compound wells count as failed wells and are proposed again)"
        )
    return qc


def _reversed_controls(pos, neg, readout: Readout | None) -> str | None:
    """What is wrong when a plate's positive controls read on the non-hit side of its negative ones (for --hit-above,
    below them): the plate read rotated (A01 at the far corner: every compound well misplaced too) or the control
    wells swapped. None when they read the right way, or without a hit direction to judge by."""
    if readout is None or readout.cutoff is None:
        return None
    p, n = float(np.mean(pos)), float(np.mean(neg))
    if (p > n) == (readout.direction == "above") or p == n:
        return None
    side = "below" if readout.direction == "above" else "above"
    unit = f" {readout.unit}" if readout.unit else ""
    return (f"its positive controls (mean {p:.3g}{unit}) read {side} its negative ones ({n:.3g}{unit}), where "
            f"{readout.rule()} makes the positive ones the hits: was the plate read rotated (A01 at the far corner, "
            "every compound well misplaced too) or were the control wells swapped?")


def controls_of(con, plates, compounds) -> dict:
    """Plate id -> (control values recorded before by pseudo-arm, control wells by pseudo-arm) for the plates
    with control wells whose compound wells ``compounds`` record (``check_controls``'s ``plates``; ``plates``: plate
    id -> well -> :class:`~screenbai.campaign.lab.results.WellInfo`)."""
    out: dict[str, tuple[dict[int, list[float]], dict[int, list[str]]]] = {}
    for plate_id in dict.fromkeys(o.plate_id for o in compounds):
        wells: dict[int, list[str]] = {}
        for well, info in plates[plate_id].items():
            if info.arm < 0:
                wells.setdefault(info.arm, []).append(well)
        if not wells:  # a plate without control wells has no Z' to check
            continue
        earlier: dict[int, list[float]] = {}
        for kind, raw in con.execute(
            "SELECT kind, raw FROM readouts WHERE plate_id = ? AND kind != 'compound' AND raw IS NOT NULL "
            "AND discarded = 0 ORDER BY well",
            (plate_id,),
        ):
            earlier.setdefault(POSITIVE if kind == "positive" else NEGATIVE, []).append(float(raw))
        out[plate_id] = (earlier, wells)
    return out


def save_readouts(con, record_id: int, controls, compounds, qc: dict) -> None:
    """Keep every raw value of a recorded file (compound and control wells) and the plates' Z'."""
    dropped = {p for p, (_, decision) in qc.items() if decision == "discarded"}
    con.executemany(
        "INSERT INTO readouts (record_id, plate_id, well, kind, raw, discarded) VALUES (?, ?, ?, ?, ?, ?)",
        [
            (record_id, o.plate_id, o.well, KIND_OF.get(o.arm, "compound"), o.value, int(o.plate_id in dropped))
            for o in (*compounds, *controls)
        ],
    )
    con.executemany(  # a censored cell ("> 10000"): its relation and text beside the limit in raw (lab/censored.py)
        "INSERT INTO censored (plate_id, well, relation, typed) VALUES (?, ?, ?, ?)",
        [(o.plate_id, o.well, o.censored.relation, o.censored.typed) for o in compounds if o.censored is not None],
    )
    for plate_id, (z, decision) in qc.items():
        n_pos = sum(o.plate_id == plate_id and o.arm == POSITIVE and o.value is not None for o in controls)
        n_neg = sum(o.plate_id == plate_id and o.arm == NEGATIVE and o.value is not None for o in controls)
        con.execute(
            "INSERT INTO plate_qc (plate_id, record_id, z_prime, n_positive, n_negative, decision) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (plate_id, record_id, None if z is None or not math.isfinite(z) else z, n_pos, n_neg, decision),
        )

"""What an algorithm's setting guarantees (error at most delta, or not) and what was measured.

The guarantee comes from the parameters' declarations: a value listed in ``Param.no_guarantee``
(:func:`screenbai.bandits.core.params.without_guarantee`) voids it, and an algorithm with a ``budget``
(fixed budget) has no delta to keep.  The measured error rates are the records of
``benchmarks/error_rates.py`` (docs/error_rates_records.csv, the table of docs/error_rates.md),
looked up by algorithm and setting; :data:`SETTINGS` names each measured setting by its
parameters, for the benchmark and for this look-up alike.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from screenbai.bandits.core.params import REQUIRED, declared, without_guarantee
from screenbai.bandits.core.registry import get

#: docs/error_rates_records.csv of this repository (the benchmark's default output)
ERROR_RATES_RECORDS = Path(__file__).resolve().parents[1] / "docs" / "error_rates_records.csv"

#: (algorithm, setting label, params) of every setting benchmarks/error_rates.py measures; whether a
#: setting has a guarantee comes from the parameters' declarations, not from this list
SETTINGS: list[tuple[str, str, dict[str, Any]]] = [
    ("lingape", "Abbasi-Yadkori", {}),
    ("m-lingape", "theoretical", {"threshold": "theoretical"}),
    ("m-lingape", "heuristic", {"threshold": "heuristic"}),
    ("lingifa", "theoretical", {"threshold": "theoretical"}),
    ("lingifa", "heuristic", {"threshold": "heuristic"}),
    ("lucb", "lucb1", {"threshold": "lucb1"}),
    ("lucb", "heuristic", {"threshold": "heuristic"}),
    ("ugape", "lucb1", {"threshold": "lucb1"}),
    ("ugape", "heuristic", {"threshold": "heuristic"}),
    ("kl-lucb", "Jeffreys mixture", {}),
    ("xy-static", "eq. 11", {}),
    ("g-allocation", "eq. 11", {}),
    # a quarter of XY-adaptive's runs on Soare's instance need ~3.2 million tests (a phase restarted
    # from scratch after forgetting arms), beyond the default cap of 10^6
    ("xy-adaptive", "eq. 11", {"max_samples": 10**7}),
    ("xy-oracle", "eq. 4", {}),
    ("xy-fully-adaptive", "Prop. 2 (S oracle)", {"S": "oracle"}),
    ("glgape", "likelihood-ratio (default)", {"calibration": "likelihood-ratio"}),
    ("glgape", "self-normalized", {"calibration": "self-normalized"}),
    ("glgape", "reinterpreted (paper)", {"calibration": "reinterpreted"}),
    ("m-glgape", "likelihood-ratio (default)", {"calibration": "likelihood-ratio"}),
    ("m-glgape", "self-normalized", {"calibration": "self-normalized"}),
    ("m-glgape", "reinterpreted (paper)", {"calibration": "reinterpreted"}),
]

#: parameters that do not define a setting (caps, generators)
_NOT_A_SETTING = ("max_samples", "rng")


def _resolved(algorithm: str, params: Mapping[str, Any]) -> tuple[Any, dict]:
    entry = get(algorithm)
    defaults = {k: p.default for k, p in declared(entry.cls).items() if p.default is not REQUIRED}
    return entry, {**defaults, **entry.defaults, **dict(params)}


def setting_of(algorithm: str, params: Mapping[str, Any]) -> str | None:
    """The :data:`SETTINGS` label of ``algorithm`` run with ``params`` (defaults filled in), None
    when the run is none of the measured settings."""
    entry, values = _resolved(algorithm, params)
    for name, label, p in SETTINGS:
        if name == entry.name and all(values.get(k) == v for k, v in p.items() if k not in _NOT_A_SETTING):
            return label
    return None


@dataclass(frozen=True)
class Guarantee:
    """What one configured run promises and what docs/error_rates.md measured for its setting.

    ``kind``: "guaranteed" (error at most delta), "none" (``voided_by`` names the settings that void
    it) or "fixed budget" (no delta: the error falls with the budget).  ``measured``: one row per
    instance of the error-rate records at this setting (at the run's delta when measured there).
    """

    algorithm: str
    kind: str
    delta: float | None = None
    setting: str | None = None
    voided_by: tuple[str, ...] = ()
    measured: list[dict] = field(default_factory=list)
    measured_delta: float | None = None

    @property
    def tag(self) -> str:
        """A few words for legends: "error <= delta", "no guarantee", "fixed budget"."""
        return {"guaranteed": "error <= delta", "none": "no guarantee", "fixed budget": "fixed budget"}[self.kind]

    def promise(self) -> str:
        """What the setting promises, in a sentence."""
        if self.kind == "guaranteed":
            return f"guaranteed: error at most delta = {self.delta:g}"
        if self.kind == "none":
            return f"NO ERROR GUARANTEE: {', '.join(self.voided_by)} voids it, the error can exceed delta"
        return "fixed budget: no error bound at a chosen delta (the error falls as the budget grows)"

    def measured_rate(self) -> str:
        """The measured error rate in a few words, or "not measured"."""
        if not self.measured:
            return "not measured"
        rates = [r["error_rate"] for r in self.measured]
        runs = sum(int(r["runs"]) - int(r.get("not_stopped", 0)) for r in self.measured)
        errors = sum(int(r["errors"]) for r in self.measured)
        lo, hi = min(rates), max(rates)
        span = f"{lo:.3f}" if lo == hi else f"{lo:.3f}-{hi:.3f}"
        return f"{span} ({errors} errors in {runs} runs)"

    def measured_text(self) -> str:
        """Where and how the error rate was measured, or that it was not."""
        if not self.measured:
            return (f"error rate not measured for this setting ({self.algorithm}"
                    f"{', ' + self.setting if self.setting else ''}) in docs/error_rates.md")
        n = len({r["instance"] for r in self.measured})
        return (f"measured error rate {self.measured_rate()} on {n} instance{'s' if n > 1 else ''} at "
                f"delta = {self.measured_delta:g} ({self.algorithm}, {self.setting}: docs/error_rates.md)")

    def sentence(self) -> str:
        return f"{self.promise()}; {self.measured_text()}"


def read_error_rates(path: str | os.PathLike | None = None):
    """The error-rate records (docs/error_rates_records.csv by default); an empty table when absent."""
    import pandas as pd

    path = Path(path) if path is not None else ERROR_RATES_RECORDS
    if not path.is_file():
        return pd.DataFrame(columns=["instance", "algorithm", "setting", "delta", "runs", "not_stopped", "errors",
                                     "error_rate"])
    return pd.read_csv(path)


def guarantee_of(algorithm: str, params: Mapping[str, Any] | str | None, error_rates=None) -> Guarantee:
    """The :class:`Guarantee` of ``algorithm`` run with ``params`` (a dict, or the JSON of a run
    record's ``params``), its measured error rate looked up in ``error_rates`` (a DataFrame of the
    benchmark's records; default: docs/error_rates_records.csv) by algorithm and setting, at the
    run's delta when that delta was measured, else at every delta measured."""
    params = dict(json.loads(params) if isinstance(params, str) else (params or {}))
    entry, values = _resolved(algorithm, params)
    decl = declared(entry.cls)
    delta = values.get("delta") if "delta" in decl else None
    voided: tuple[str, ...] = ()
    if "budget" in decl:
        kind = "fixed budget"
    else:
        voided = tuple(without_guarantee(entry.cls, {**entry.defaults, **params}))
        kind = "none" if voided else "guaranteed"
    setting = setting_of(algorithm, params)
    measured: list[dict] = []
    measured_delta = None
    if setting is not None:
        table = read_error_rates() if error_rates is None else error_rates
        rows = table[(table["algorithm"] == entry.name) & (table["setting"] == setting)]
        if len(rows):
            at = rows[rows["delta"] == delta] if delta is not None else rows.iloc[:0]
            if not len(at):  # the run's delta was not measured: the largest one that was
                at = rows[rows["delta"] == rows["delta"].max()]
            measured = at.to_dict("records")
            measured_delta = float(at["delta"].iloc[0])
    return Guarantee(entry.name, kind, None if delta is None else float(delta), setting, voided, measured,
                     measured_delta)

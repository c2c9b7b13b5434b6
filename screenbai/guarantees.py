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
    #: the model and assumptions the guarantee (and the certificate) holds under, in words (:func:`assumptions`)
    assumes: str = ""

    @property
    def tag(self) -> str:
        """A few words for legends: "error <= delta", "no guarantee", "fixed budget"."""
        return {"guaranteed": "error <= delta", "none": "no guarantee", "fixed budget": "fixed budget"}[self.kind]

    def promise(self) -> str:
        """What the setting promises, in a sentence."""
        if self.kind == "guaranteed":
            return f"guaranteed: error at most delta = {self.delta:g}" + (f" if {self.assumes}" if self.assumes else "")
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


def guarantee_of(algorithm: str, params: Mapping[str, Any] | str | None, error_rates=None,
                 look_up: bool = True) -> Guarantee:
    """The :class:`Guarantee` of ``algorithm`` run with ``params`` (a dict, or the JSON of a run
    record's ``params``), its measured error rate looked up in ``error_rates`` (a DataFrame of the
    benchmark's records; default: docs/error_rates_records.csv) by algorithm and setting, at the
    run's delta when that delta was measured, else at every delta measured (``look_up=False``: not looked
    up, no table read: the promise alone)."""
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
    if setting is not None and look_up:
        table = read_error_rates() if error_rates is None else error_rates
        rows = table[(table["algorithm"] == entry.name) & (table["setting"] == setting)]
        if len(rows):
            at = rows[rows["delta"] == delta] if delta is not None else rows.iloc[:0]
            if not len(at):  # the run's delta was not measured: the largest one that was
                at = rows[rows["delta"] == rows["delta"].max()]
            measured = at.to_dict("records")
            measured_delta = float(at["delta"].iloc[0])
    return Guarantee(entry.name, kind, None if delta is None else float(delta), setting, voided, measured,
                     measured_delta, assumptions(entry.cls, values) if kind == "guaranteed" else "")


def _uses_norm_bound(cls: type, values: Mapping[str, Any]) -> bool:
    """Whether the setting's confidence set assumes ||theta*|| <= S: a parameter S, with the linear GapE
    thresholds ('theoretical', 'abbasi-yadkori') or GLGapE's 'self-normalized' calibration."""
    if "S" not in declared(cls):
        return False
    threshold = values.get("threshold", getattr(cls, "threshold", None))
    if isinstance(threshold, str) and threshold not in ("theoretical", "abbasi-yadkori"):
        return False
    calibration = values.get("calibration")
    return calibration is None or calibration == "self-normalized"


def assumes_norm_bound(algorithm: str, params: Mapping[str, Any]) -> bool:
    """Whether ``algorithm`` run with ``params`` (defaults filled in) assumes ||theta*|| <= S (its parameter S):
    the benchmarks set S for these settings only (``--S oracle``)."""
    entry, values = _resolved(algorithm, params)
    return _uses_norm_bound(entry.cls, values)


def _sigma_assumed(cls: type, values: Mapping[str, Any]) -> bool:
    """Whether the setting assumes the noise sub-Gaussian of scale sigma (a simulation's oracle parameter;
    not with LUCB's 'hoeffding' threshold, which assumes outcomes in [0, 1])."""
    p = declared(cls).get("sigma")
    return p is not None and p.oracle and values.get("threshold") != "hoeffding"


def _text(value: Any) -> str:
    if value == "oracle":
        return "'oracle' (the true value, in simulations)"
    return f"{value:g}" if isinstance(value, (int, float)) and not isinstance(value, bool) else repr(value)


def assumptions(cls: type, values: Mapping[str, Any]) -> str:
    """The model and assumptions under which a fixed-confidence setting of ``cls`` (``values``: its
    parameters, defaults filled in) keeps its error at most delta, in words."""
    binary, features = bool(getattr(cls, "binary_rewards", False)), bool(getattr(cls, "models_features", True))
    if not features:
        if binary:
            return "each arm's 0/1 outcomes are independent draws of its own rate (no model of the features)"
        if values.get("threshold") == "hoeffding":
            return "each arm's outcomes are independent and lie in [0, 1] (no model of the features)"
        return (f"each arm's outcomes are independent, their noise sub-Gaussian with scale at most sigma = "
                f"{_text(values.get('sigma'))} (no model of the features)")
    if binary:
        out = "the 0/1 outcomes follow a logistic model of the features"
        calibration = values.get("calibration")
        if calibration in ("self-normalized", "theory"):
            out += f", mu' >= c_mu = {_text(values.get('c_mu'))} on the arms"
    else:
        out = "the outcomes' means are linear in the features"
        if _sigma_assumed(cls, values):
            out += f", the noise sub-Gaussian with scale at most sigma = {_text(values.get('sigma'))}"
    if _uses_norm_bound(cls, values):
        out += f", ||theta*|| <= S = {_text(values.get('S'))}"
    return out


def for_instance(algorithm: str, params: Mapping[str, Any] | str | None, instance) -> dict:
    """``params`` as a simulation on ``instance`` runs them (``policy_for_instance``): a noise scale sigma
    not given is the instance's own."""
    from screenbai.bandits.core.registry import noise_scale

    params = dict(json.loads(params) if isinstance(params, str) else (params or {}))
    entry, values = _resolved(algorithm, params)
    if _sigma_assumed(entry.cls, values) and "sigma" not in params:
        params["sigma"] = noise_scale(instance)
    return params


def assumptions_failing(algorithm: str, params: Mapping[str, Any] | str | None, instance) -> list[str]:
    """The assumptions of ``algorithm``'s guarantee (run with ``params``) that a simulated ``instance`` (a
    :class:`screenbai.bandits.sim.instance.Instance`, whose truth is known) breaks, in words: a bound S below
    ||theta*||, a noise scale sigma below the instance's, means no linear (logistic) function of the features.
    Where one fails the run's error (and certificate) is not proven at delta. Empty for fixed-budget settings."""
    import numpy as np

    params = for_instance(algorithm, params, instance)
    entry, values = _resolved(algorithm, params)
    cls = entry.cls
    if "budget" in declared(cls):
        return []
    out = []
    theta = None if instance.theta is None else np.asarray(instance.theta, dtype=float)
    S = values.get("S")
    if S == "oracle" and theta is not None:
        S = values["S"] = float(np.linalg.norm(theta))
    if (theta is not None and _uses_norm_bound(cls, values) and isinstance(S, (int, float))
            and float(np.linalg.norm(theta)) > float(S) * (1 + 1e-9)):
        out.append(f"S = {S:g} is below ||theta*|| = {float(np.linalg.norm(theta)):.3g} on this instance")
    sigma = values.get("sigma")
    if _sigma_assumed(cls, values) and isinstance(sigma, (int, float)):
        noise = {"gaussian": float(instance.sigma), "bernoulli": 0.5}.get(instance.reward)
        if noise is not None and float(sigma) < noise * (1 - 1e-9):
            what = "the Gaussian noise's sd" if instance.reward == "gaussian" else "the scale of 0/1 outcomes"
            out.append(f"sigma = {sigma:g} is below {what}, {noise:g}, on this instance")
    if getattr(cls, "models_features", True):
        X = np.asarray(instance.features, dtype=float)
        mu = np.asarray(instance.means, dtype=float)
        binary = bool(getattr(cls, "binary_rewards", False))
        if binary:
            mu = np.log(np.clip(mu, 1e-12, 1 - 1e-12) / np.clip(1 - mu, 1e-12, 1 - 1e-12))
        fit = X @ np.linalg.lstsq(X, mu, rcond=None)[0]
        if np.abs(fit - mu).max() > 1e-6 * max(1.0, float(np.abs(mu).max())):
            how = "the logit of the means is" if binary else "the means are"
            out.append(f"{how} not a linear function of the features on this instance (largest misfit "
                       f"{float(np.abs(fit - mu).max()):.3g}): the model is misspecified")
    return out

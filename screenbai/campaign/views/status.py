"""Where a campaign stands: tests used, plates in the lab, recommendation, stopping rule."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np

from screenbai.bandits.certainty.certificate import epsilon_text, model_check_json, ordinal
from screenbai.bandits.certainty.forecast import BOUNDS
from screenbai.bandits.core.params import without_guarantee
from screenbai.bandits.core.registry import get as registered
from screenbai.campaign.lab.assay import model_sentence, models_features, with_sigma_unit
from screenbai.guarantees import guarantee_of

from .certified import (
    best_first,
    certificate_data,
    certified_epsilon,
    no_model_certificate_data,
    sigma_of,
    worst_epsilon,
)
from .controls import control_lines, spreads
from .estimates import Z95, as_read, contention_intervals, model_estimates, read_back, wilson_interval
from .forecast import BAND_LEVEL, FORECAST_DRAWS, ROUTE_DRAWS, forecast_left, never_stops
from .model_ranges import model_ranges, recommendation_lines

#: what a gap index (GIFA's B(t), GLGapE's calibrated index: the upper confidence bound of a rival's lead
#: over the leader, stop at <= epsilon) means, said before its value in ``status``
GAP_INDEX = "a rival may still beat the leader by up to"
#: what a count that fires at 0 means when the policy does not name it (a snapshot saved before it did)
RIVALS_OPEN = "rivals not yet ruled out by the stopping test:"


@dataclass
class CompoundLine:
    compound_id: str
    smiles: str
    tests: int
    #: hits (0/1 outcomes), or tests times the observed mean on the readout's own scale (geometric for log10)
    total: float
    observed: float | None
    observed_ci: tuple[float, float] | None
    model: float
    model_ci: tuple[float, float]
    #: other compounds with the same feature vector: the model cannot tell them apart
    same_features: list[str] = field(default_factory=list)
    #: [min, max] of the hit rate over the stopping rule's likelihood-ratio set (views/model_ranges.py), valid at any
    #: stop under the logistic model; None where the rule holds no such set (``model_ci`` is then the interval shown,
    #: descriptive) or where the set is empty
    model_range: tuple[float, float] | None = None


@dataclass
class Status:
    path: str
    algorithm: str
    params: dict
    seed: int
    outcome: str
    n_compounds: int
    tests: int
    failed_wells: int
    plates: int
    open_wells: dict
    done: bool
    stopped: bool
    stop_index: float | None
    stop_threshold: float | None
    #: what the index says, before its value: a gap index's "a rival may still beat the leader by up to"
    #: (the default) or a count's "rivals not yet ruled out by ...:"
    stop_name: str
    budget: int | None
    #: tests the algorithm had used when it finished (plates in the lab then are recorded after it)
    tests_at_stop: int | None = None
    recommendation: list[CompoundLine] = field(default_factory=list)
    #: the chosen settings that void the algorithm's error guarantee (e.g. "threshold='heuristic'")
    no_guarantee: list[str] = field(default_factory=list)
    #: plates whose every compound well has a recorded outcome (or a failed well)
    plates_done: int = 0
    #: the largest epsilon at which the current answer is certified; None while nothing is certified (no valid
    #: confidence set, no outcome yet, or a bound that says nothing: ``certifies``), where the text says "none"
    certified_epsilon: float | None = None
    certificate: dict | None = None
    #: the certificate from every compound's own wells, under no model (certainty/no_model.py; 0/1 outcomes only):
    #: its largest epsilon over the recommendation (None as for ``certified_epsilon``), and the certificate as JSON data
    certified_epsilon_no_model: float | None = None
    certificate_no_model: dict | None = None
    #: compounds whose model interval still reaches the leader's (upper bound >= the leader's lower bound; for a
    #: top-m answer the lowest lower bound of the m recommended: a compound below it cannot take a place)
    in_contention: int | None = None
    #: the size of the answer (the algorithm's m: "name the 5 compounds to test")
    m: int = 1
    #: the test of fit of the model the certificate rests on (certainty/model_check.py), None without a model
    model_check: dict | None = None
    #: compounds the algorithm chooses among (all, less the withdrawn)
    active: int = 0
    #: plates still needed by the forecast (None until a forecast is available)
    forecast_plates: float | None = None
    forecast_tests: float | None = None
    #: plates still needed at the band's ends: the BAND_LEVEL interval of the stop over draws of the estimate and
    #: the run's own chance (inf: the rule may never fire; see ``forecast.forecast_left``)
    forecast_band_plates: list[float] | None = None
    #: the share of runs the band should hold (BAND_LEVEL; None without a forecast)
    forecast_band_level: float | None = None
    #: the form of T* the forecast used: "exact" (the Bernoulli-KL bound) or "local" (its local Fisher form)
    forecast_bound: str | None = None
    layout: str | None = None
    readout: str | None = None
    model: str | None = None
    #: per plate with control wells: plate id, Z' (of log10 of the values where ``geometric``), decision
    plate_qc: list = field(default_factory=list)
    #: the plates among them whose Z' is undefined (None there) because their positive and negative controls read
    #: alike (no gap between them: a reader saturated, the controls not dispensed), not for want of control values
    plate_qc_alike: list = field(default_factory=list)
    #: the Z' a plate's controls must reach (the readout's --min-z; 0.5 without a readout)
    min_z: float = 0.5
    #: pooled within-plate sd of the control wells (a continuous readout's noise scale)
    control_sd: float | None = None
    #: pooled sd of a compound's replicate wells on one plate (the readout's noise on compounds)
    replicate_sd: float | None = None
    #: for 0/1 outcomes written as such (no readout declared; the sds above are then None): [pairs of wells that
    #: disagree, pairs], of one kind of control on one plate and of one compound on one plate
    control_disagree: list[int] | None = None
    replicate_disagree: list[int] | None = None
    #: the scale of the two spreads: "log10" for a concentration (an IC50's wells spread by factors), else "linear"
    spread_scale: str = "linear"
    #: the scale of the plates' Z': "log10" for a readout the model takes as log10, else "linear" (the raw values,
    #: also for a binary IC50, whose spreads are in log10: the status text says so)
    z_scale: str = "linear"
    #: the compound-set changes, in order, each with what it did to the guarantee
    changes: list[str] = field(default_factory=list)
    #: which rule chooses the wells, in one line (the plate files' 'why' column says it per well)
    rule: str | None = None
    #: what the algorithm's forecast leaves out (``Policy.forecast_caveat``), said beside the forecast
    forecast_note: str | None = None
    #: the compounds, not tested yet, whose own wells the forecast's point counts on (log-tas's second route;
    #: ``forecast.forecast_left``)
    forecast_untested: list[str] = field(default_factory=list)
    #: why the forecast has no end (the rule would never fire at the fitted model: ``forecast.never_stops``), else None
    forecast_never: str | None = None
    #: the raw readout with its unit, e.g. "percent inhibition (%)" (the spreads of control and replicate wells
    #: are in it), None without a declared readout
    unit: str | None = None
    #: what the algorithm is told of a continuous readout ("-log10 IC50 (IC50 in nM)"): the certified epsilon's gap
    quantity: str | None = None
    #: a continuous readout told as log10 (a concentration): its means are shown as geometric means
    geometric: bool = False
    #: the epsilon the stopping rule aims at (the algorithm's, the default included), None without a stopping rule
    stop_epsilon: float | None = None
    #: the final recommendation's compounds never tested: the answer rests on the model alone (lin-tas can stop
    #: after its first plate on an extrapolation); empty while the run goes on
    model_only: list[str] = field(default_factory=list)
    #: the stopping rule's second route, one its count or index does not show (log-tas's own wells), in words;
    #: None without one
    second_route: str | None = None
    #: beside a recommendation never tested, the compound with the best observed mean among those tested (id,
    #: observed mean of the outcomes the algorithm is told, tests) and how many compounds were tested: the
    #: comparator for confirmation wells
    best_tested: dict | None = None
    #: what the algorithm's setting promises, and under which model (screenbai.guarantees: fixed budget, no
    #: guarantee, or error at most delta if ...)
    guarantee: str = ""
    #: (compounds tested, features) while no more compounds than features are tested (``_thin_fit``), else None
    thin_fit: tuple[int, int] | None = None
    #: whether the certificate is proven: the setting guaranteed, and its model not rejected by the model check
    #: (unless the compound's own wells certify it); None without a certificate
    certificate_proven: bool | None = None
    #: the delta at which the recommendation's ``model_range`` hold (together, at any stop); None where the rule
    #: holds no likelihood-ratio set: the model intervals shown are then the descriptive ``model_ci``
    model_range_delta: float | None = None

    def to_dict(self) -> dict:
        """Plain data for JSON: a value not defined yet (NaN, e.g. the stopping index before the first
        tests) is None, since NaN is not JSON and strict parsers (jq, JavaScript) refuse it. The model check's
        warning is worded as the text words it (``model_check_warning``)."""
        out = _finite(asdict(self))
        if out.get("model_check") and out["model_check"].get("warning"):
            out["model_check"]["warning"] = self.model_check_warning()
        return out

    def text(self) -> str:
        params = ", ".join(f"{k}={v}" for k, v in self.params.items()) or "defaults"
        lines = [
            (
                f"campaign {self.path}: {self.algorithm} ({params}), seed {self.seed}, "
                f"{self.n_compounds:,} compounds, {self.outcome} outcomes"
            ),
            (
                f"tests recorded: {self.tests:,}"
                + (f" (+ {self.failed_wells} failed wells, back in the queue)" if self.failed_wells else "")
                + (f" of a budget of {self.budget:,}" if self.budget else "")
            ),
        ]
        done = f"plates done: {self.plates_done} of {self.plates} proposed (every compound well recorded)"
        if self.open_wells:
            pend = ", ".join(f"{p} ({n} wells)" for p, n in self.open_wells.items())
            lines.append(f"{done}; {len(self.open_wells)} in the lab awaiting results: {pend}")
        else:
            lines.append(f"{done}; none awaiting results")
        if self.done:
            how = "the stopping rule has fired" if self.stopped else "the run was capped before the rule fired"
            if self.budget:
                how = "the budget is spent"
            at = self.tests if self.tests_at_stop is None else self.tests_at_stop
            later = (
                f" ({self.tests - at:,} more recorded since, from plates that were in the lab; "
                "they do not change the answer)"
                if self.tests > at
                else ""
            )
            lines.append(f"finished: {how} after {at:,} tests{later}; the recommendation below is final")
        elif self.stop_index is not None and math.isnan(self.stop_index):
            lines.append("stopping rule: not fired; not evaluated yet (its first tests are not all recorded)")
        elif self.stop_index is not None and self.stop_threshold is not None:
            count = self.stop_name.endswith(":") and self.stop_threshold == 0  # rivals left, fires at none
            lines.append(
                f"stopping rule: not fired; {self.stop_name} "
                + (f"{self.stop_index:,.0f}, it fires when none is left" if count
                   else f"{self.stop_index:.4g}, it fires at <= {self.stop_threshold:.4g}")
                + (f"; or sooner, {self.second_route}" if self.second_route else "")
            )
        elif self.budget:
            lines.append(f"not finished: {self.budget - self.tests:,} tests of the budget left")
        else:
            lines.append("stopping rule: not fired (this algorithm does not report how far it is from firing)")
        lines.extend(self._progress_lines())
        if self.no_guarantee:
            lines.append(
                f"NO ERROR GUARANTEE: {', '.join(self.no_guarantee)} makes the stopping rule a heuristic; the "
                "answer may be wrong more often than delta (docs/error_rates.md)"
            )
        elif self.guarantee:
            lines.append(f"guarantee: {self.guarantee}")
        lines.extend(recommendation_lines(self))
        return "\n".join(lines)

    def _progress_lines(self) -> list[str]:
        """The numbers a lab plans with, each with a one-line meaning."""
        out = [
            f"compounds in the screen: {self.active:,}"
            + (f" ({self.n_compounds - self.active:,} withdrawn)" if self.active < self.n_compounds else ""),
        ]
        if self.in_contention is not None:
            cert = None if self.certified_epsilon is None else epsilon_text(self.certified_epsilon)
            settled = self.done and self.in_contention > self.m and cert is not None
            out.append(
                f"still in contention: {self.in_contention:,} compound{'' if self.in_contention == 1 else 's'} "
                f"({'its' if self.in_contention == 1 else 'their'} 95% interval of the {self._rate()}"
                + ("" if models_features(self.algorithm) else ", from each compound's own wells,")
                + f" still reaches {self.against()}; a description of the estimates, not the stopping rule's test"
                + (f"; the run has finished all the same: {self._beats()} by more than the "
                   f"certified epsilon below, {cert}, at the certificate's confidence)"
                   if settled else ")")
            )
        out.extend(self.certainty_lines())
        if self.rule:
            out.append(f"why these wells: {self.rule} (per well: the plate file's 'why' column)")
        if self.layout:
            out.append(f"plate layout: {self.layout}")
        out.extend(control_lines(self))
        out.extend(self.changes)
        return out

    def certainty_lines(self) -> list[str]:
        """What the data certify, the model check it rests on, and what is left to pay, together: the
        certificate's sentence per recommended compound (certainty/certificate.py), the model and its test
        of fit (certainty/model_check.py), and the forecast of plates left with what it leaves out."""
        out = []
        cert = self.certificate
        if cert is None:
            out.append("certificate: none yet (no outcome recorded)" if self.tests == 0 else
                       "certificate: none (this algorithm gives no certificate, or it is not available yet)")
        else:
            aim = self.stop_epsilon
            fires = "" if aim is None else f"; the stopping rule fires once it is at most epsilon = {aim:g}"
            value = "none yet" if self.certified_epsilon is None else epsilon_text(self.certified_epsilon)
            gap = self._rate() if self.outcome == "binary" or not self.unit else f"mean {self.quantity or self.unit}"
            mc = self.model_check
            doubt = (" if its model holds, which the model check below rejects: treat it as unproven"
                     if mc is not None and mc.get("rejected") and not self.certified_by_own_wells() else "")
            out.append(f"certificate, true whenever you stop{doubt} (certified epsilon, a gap in {gap}: "
                       f"{value}{fires}):")
            out.extend(f"  {s}" for s in cert.get("sentences", []))
        if self.done and self.model_only:
            best = self.best_tested
            beside = "" if not best else (
                f" beside the best compound tested, {best['compound_id']} (observed {best['observed']:.3g} over "
                f"{best['tests']} tests), to see whether it really beats it")
            tested = "" if not best else f" from the {best['tested_compounds']:,} compounds tested"
            out.append(
                f"WARNING: {', '.join(self.model_only)} never tested: the answer rests on the model's extrapolation "
                f"alone{tested} (the model check says how far the model is checked). Confirm it in the lab before "
                f"acting on it: test it in a few wells (3 or more){beside}"
            )
        wells = self.certified_by_own_wells()
        if self.model:
            out.append(
                "model (it chose the wells; the certificate above does not rest on it: the compound's own wells "
                f"do): {self.model}" if wells else
                f"model (the certificate and the stopping rule's guarantee hold under it): {self.model}"
                if not self.budget else
                f"model (the estimates and the recommendation rest on it; a fixed budget guarantees no error): "
                f"{self.model}"
            )
        mc = self.model_check
        if mc is not None and mc["n_tests"] > 0:
            if mc["rejected"]:
                out.append("model check: " + self.model_check_warning())
                if not wells and not self.done:
                    # a continuous readout goes to LUCB with the readout's noise scale: KL-LUCB takes 0/1 outcomes
                    how = ("--algorithm kl-lucb` hands the screen to KL-LUCB" if self.outcome == "binary" else
                           "--algorithm lucb --param sigma=<the readout's noise scale>` hands the screen to LUCB")
                    out.append(
                        f"  to finish without the model: `screenbai campaign restart {self.path} {how}, whose "
                        "sampling and stopping rest on each compound's own wells "
                        f"alone (it starts from the {self.tests:,} outcomes recorded; it tests every compound at "
                        f"least once, so it suits a short list: {self.active:,} compounds here; `screenbai campaign "
                        "withdraw` takes a list of the others)"
                    )
            elif not mc["tests"]:
                out.append(f"model check: not possible yet ({mc['note']}); " + (
                    "the certificate above needs no model (the compound's own wells)" if wells
                    else "the certificate rests on the model unchecked"))
            else:
                out.append(
                    f"model check: no misfit detected in {mc['n_tests']:,} outcomes of {mc['n_arms']:,} compound"
                    f"{'s' * (mc['n_arms'] != 1)} "
                    f"(p = {mc['p_value']:.2g}; few outcomes detect little, and " + (
                        "the certificate above needs no model: the compound's own wells certify it)" if wells
                        else "a certificate holds only if the model does)")
                    + (f"; {mc['note']}" if mc.get("note") else "")
                )
        out.extend(self._no_model_lines())
        if self.forecast_bound == "simulation" and self.forecast_plates is not None:
            out.append(self._simulated_forecast_line())
        elif self.forecast_never:
            out.append(f"forecast: no end in sight: at the model fitted to the outcomes so far the screen "
                       f"{self.forecast_never}")
        elif self.forecast_plates is not None and self.forecast_tests is not None:
            out.append(
                f"forecast: about {self.forecast_plates:.0f} more plate(s) ({self.forecast_tests:,.0f} more tests) "
                f"until the stopping rule fires{self._band()}, from the model fitted to the outcomes so far (it "
                "changes as they do; with many features runs often need more: docs/lower_bound.md)"
                + (f", with T* from {BOUNDS[self.forecast_bound]}" if self.forecast_bound in BOUNDS else "")
                + (f"; {self.forecast_note}" if self.forecast_note else "")
                + (self._untested_note() if self.forecast_untested else "")
                + ("; NOT TO BE RELIED ON: the model check rejects the model this forecast comes from"
                   if self.model_check and self.model_check.get("rejected") else "")
            )
        elif self.done:
            out.append("forecast of plates left: none, the run has finished")
        else:
            out.append(
                "forecast of plates left: once the first outcomes are recorded (`screenbai campaign init` gives a "
                "guess from a prior)"
                if self.tests == 0 and not self.budget
                else "forecast of plates left: not available (this algorithm states no stopping threshold, or it "
                "has finished)"
            )
        return out

    def _no_model_lines(self) -> list[str]:
        """The certificate of every compound's own wells (certainty/no_model.py), where it says something (below a
        gap of 1) or where the model check rejects the model (it is then the statement that stands); not beside a
        certificate that already rests on the own wells."""
        cert, value = self.certificate_no_model, self.certified_epsilon_no_model
        if cert is None or self.certified_by_own_wells():
            return []
        rejected = bool(self.model_check and self.model_check.get("rejected"))
        if value is None and not rejected:
            return []
        aim = self.stop_epsilon
        enough = (f"; it is at most epsilon = {aim:g}: the compounds' own wells alone back the recommendation, "
                  "so you may stop on it whatever the model check says"
                  if aim is not None and value is not None and value <= aim else "")
        shown = "none yet" if value is None else epsilon_text(value)
        return [f"certificate without a model, true whenever you stop (each compound's own wells; certified "
                f"epsilon {shown}{enough}):"] + [f"  {s}" for s in cert.get("sentences", [])]

    def _untested_note(self) -> str:
        """Why a forecast counting on the wells of compounds not tested yet may run long."""
        one = len(self.forecast_untested) == 1
        return (f"; it counts on the own wells of {', '.join(self.forecast_untested)}, not tested yet: the model's "
                f"hit rate for {'it' if one else 'them'} extrapolates from the compounds tested, and where "
                f"{'it proves' if one else 'one proves'} below the bar the wells fail and the screen takes longer "
                "(in backtests of the README's recipe on CDK2 such a compound was below the bar in 11 of 20 runs; "
                'docs/lower_bound.md, "Session 15")')

    def model_check_warning(self) -> str:
        """The model check's warning as status and the export's campaign sheet say it: where the recommended
        compound's own wells certify the answer, its last sentence says the certificate stands instead of calling
        it unproven (which contradicted "certificate proven: yes" beside it in the export)."""
        from screenbai.bandits.certainty.model_check import MODEL_ASSUMED

        warning = str((self.model_check or {}).get("warning") or "")
        if not self.certified_by_own_wells():
            return warning
        return warning.replace(MODEL_ASSUMED, (
            "The certificate above rests on the compound's own wells, not on this model, and stands; the "
            "model chose the wells (richer features may restore its fit)."))

    def certified_by_own_wells(self) -> bool:
        """Whether the certificate rests on the recommended compound's own wells and no model (log-tas's
        rules/own_wells.py, whose model statement begins "no model"), so the model line and the model check
        must not say the certificate holds only under the model."""
        return self.certificate is not None and str(self.certificate.get("model") or "").startswith("no model")

    def _simulated_forecast_line(self) -> str:
        """The forecast of an algorithm with no threshold, from runs of it simulated on (views/forecast.py)."""
        from .forecast import SIMULATED_CAP, SIMULATED_RUNS

        how = (f"{SIMULATED_RUNS} runs of {self.algorithm} simulated from its current state on hit rates drawn "
               "from each compound's posterior (the library's rates taken as draws of one Beta, itself drawn from what "
               "the outcomes so far say of it; no model of the features), each with its own chance")
        caveat = "; the forecast tends to run long early (docs/certificate.md)"
        if self.forecast_tests is None or not math.isfinite(self.forecast_tests):  # the caveat after the sentence
            return (f"forecast: more than {SIMULATED_CAP:,} more tests: most of {how}, had not stopped after that "
                    f"many (a close race at the top, or a long list to test){caveat}")
        low, high = self.forecast_band_plates or (None, None)
        return (f"forecast: about {self.forecast_plates:.0f} more plate(s) ({self.forecast_tests:,.0f} more tests) "
                f"until the stopping rule fires ({_band_words(low, high)}), over {how}{caveat}")

    def _band(self) -> str:
        """The forecast's band in words: " (4 to 9 plates in 80 % of runs, over 5 draws of the estimate's uncertainty
        and the run's own chance)"."""
        if not self.forecast_band_plates:
            return ""
        low, high = self.forecast_band_plates
        return (f" ({_band_words(low, high)} if the model fitted so far holds: {FORECAST_DRAWS} draws of its "
                f"uncertainty ({ROUTE_DRAWS} for log-tas's own wells) and the run's own chance)")

    def against(self) -> str:
        """What a compound's interval must reach to stay in contention: the leader's, or for a top-m answer the
        lowest lower bound of the m recommended (a compound below it has m compounds surely above it)."""
        return "the leader's" if self.m == 1 else f"the lowest lower bound of the {self.m} recommended compounds"

    def _beats(self) -> str:
        return ("none of them beats the recommendation" if self.m == 1 else
                f"no recommended compound is below the {ordinal(self.m)} best")

    def _rate(self) -> str:
        """A binary campaign's outcome is a hit (the readout past its cutoff, or a 0/1 result)."""
        if self.outcome == "binary":
            return "hit rate"
        return "geometric mean" if self.geometric else "mean outcome"


def _thin_fit(n: np.ndarray, d: int) -> tuple[int, int] | None:
    """``Status.thin_fit``: (compounds tested, features) when some are tested and no more than the features."""
    tested = int(np.count_nonzero(n))
    return (tested, int(d)) if 0 < tested <= d else None


def _band_words(low: float | None, high: float | None) -> str:
    """The forecast's band of plates in words: "4 to 9 plates in 80 % of runs", or, when its upper end is unbounded
    (at least one run in ten never stops), "4 plates or more in 90 % of runs; at least one run in 10 never stops"."""
    lo = "?" if low is None or not math.isfinite(low) else f"{low:.0f}"
    if high is not None and math.isfinite(high):
        if lo == f"{high:.0f}":  # "1 to 1 plates" after the README's first plate: one number, as init says it
            return f"{lo} plate{'' if lo == '1' else 's'} in {BAND_LEVEL * 100:.0f} % of runs"
        return f"{lo} to {high:.0f} plates in {BAND_LEVEL * 100:.0f} % of runs"
    return (f"{lo} plates or more in {(1 + BAND_LEVEL) / 2 * 100:.0f} % of runs; at least one run in "
            f"{round(2 / (1 - BAND_LEVEL)):.0f} never stops")


def _second_route(policy) -> str | None:
    """The stopping rule's second route in words, when it declares one (``StoppingRule.own_wells_route``: log-tas's
    own wells), else None."""
    from screenbai.bandits.core.parts import own_wells_route

    if not own_wells_route(policy):
        return None
    rule = getattr(getattr(policy, "inner", policy), "stopping_rule", None)
    eps = getattr(rule, "epsilon", None)
    level = "" if eps is None else f" = {1 - float(eps):.2g}"
    m = int(getattr(getattr(policy, "inner", policy), "m", 1))  # the rule needs wells for each of the m (own_wells.py)
    who = "a compound's own wells show" if m == 1 else f"the own wells of each of {m} compounds show"
    return (f"without a model, once {who} its hit rate is at least 1 - epsilon{level} (the forecast takes this route "
            "too)")


def campaign_status(camp) -> Status:
    policy = camp.policy
    done = bool(policy.done)
    res = policy.result()
    n, s, s2, failed = camp.observations()
    back = read_back(camp)  # a readout told negated or as log10 (an IC50) is shown on its own scale
    told = model_estimates(camp.features, n, s, s2, binary=camp.binary)
    est, lo, hi = as_read(back, *told)
    c_lo, c_hi = contention_intervals(camp, n, s, s2, told)  # the same fit, not a second one
    rec = []
    order = best_first(res.recommendation, told[0])  # a top-m answer, best first; the certificates follow it
    for a in order:
        if n[a] == 0:
            obs, ci = None, None
        elif camp.binary:
            obs, ci = float(s[a] / n[a]), wilson_interval(float(s[a]), int(n[a]))
        else:
            mean = s[a] / n[a]
            sd = math.sqrt(max(s2[a] / n[a] - mean * mean, 0.0) * n[a] / max(n[a] - 1, 1))
            half = Z95 * sd / math.sqrt(n[a])
            mean, low, high = as_read(back, mean, mean - half, mean + half)
            obs, ci = float(mean), (float(low), float(high))
        rec.append(
            CompoundLine(
                camp.compound_ids[a],
                camp.smiles[a],
                int(n[a]),
                float(s[a]) if camp.binary else float(n[a] * back(s[a] / max(n[a], 1))),
                obs,
                ci,
                float(est[a]),
                (float(lo[a]), float(hi[a])),
                [camp.compound_ids[b] for b in camp.same_features(a)],
            )
        )
    model_only = [c.compound_id for c in rec if c.tests == 0] if done else []
    best_tested = None
    if model_only and n.sum() > 0:
        idx = np.asarray(getattr(policy, "arm_set", np.arange(camp.K)))
        idx = idx[n[idx] > 0]
        if idx.size:
            mean = s[idx] / n[idx]
            b = int(idx[np.lexsort((-n[idx], -mean))[0]])  # the best observed mean, the most tested on a tie
            best_tested = {"compound_id": camp.compound_ids[b], "observed": float(back(s[b] / n[b])),
                           "tests": int(n[b]), "tested_compounds": int(idx.size)}
    diag = res.diagnostics
    params = camp.meta["params"]
    budget = getattr(policy, "budget", None) if getattr(policy, "fixed_budget", False) else None
    status = Status(
        path=str(camp.path),
        algorithm=camp.algorithm,
        params=params,
        seed=int(camp.meta["seed"]),
        outcome=camp.meta["outcome"],
        n_compounds=camp.K,
        tests=int(n.sum()),
        failed_wells=failed,
        plates=int(camp._con.execute("SELECT COUNT(*) FROM plates").fetchone()[0]),
        open_wells=camp.open_wells(),
        done=done,
        stopped=bool(res.stopped),
        stop_index=None if done else _float(diag.get("stat")),
        stop_threshold=_float(diag.get("stat_fires_at", getattr(policy, "epsilon", None))) if "stat" in diag else None,
        stop_name=str(diag.get("stat_name", RIVALS_OPEN if "stat_fires_at" in diag else GAP_INDEX)),
        budget=None if budget is None else int(budget),
        tests_at_stop=int(res.n_samples) if done else None,
        recommendation=rec,
        model_only=model_only,
        best_tested=best_tested,
        thin_fit=_thin_fit(n, camp.features.shape[1]) if models_features(camp.algorithm) else None,
        second_route=_second_route(policy),
        no_guarantee=without_guarantee(
            type(getattr(policy, "inner", policy)), {**registered(camp.algorithm).defaults, **params}
        ),
        guarantee=with_sigma_unit(guarantee_of(camp.algorithm, params, look_up=False).promise(),
                                  None if camp.binary else sigma_of(policy), camp.readout),
        **progress(camp, policy, res, n, c_lo, c_hi, order),
    )
    status.certificate_proven = proven(status)
    ranges = model_ranges(policy, order, status.no_guarantee) if camp.binary else None
    if ranges is not None:
        for line, r in zip(rec, ranges[0]):
            line.model_range = r
        status.model_range_delta = ranges[1]
    return status


def proven(status: Status) -> bool | None:
    """Whether the status's certificate is proven: None without one; False when the setting has no guarantee
    (declared, or a caveat of the policy) or the model check rejects the model it rests on (unless the
    compound's own wells certify the answer, which needs no model)."""
    cert = status.certificate
    if cert is None:
        return None
    rejected = bool(status.model_check and status.model_check.get("rejected"))
    return bool(cert.get("guaranteed")) and not status.no_guarantee and (
        not rejected or status.certified_by_own_wells())


def progress(camp, policy, res, n, lo, hi, order=None) -> dict:
    """The plan-the-week numbers of ``Status``: plates done, contention, certificate, forecast,
    layout, readout model, controls, changes (see the field comments); ``order``: the recommendation's compounds
    as the status table lists them (``best_first``), which the certificates' sentences follow."""
    from ..state.changes import change_lines
    from .explain import rule_of

    active = getattr(policy, "arm_set", np.arange(camp.K))
    in_contention = _in_contention(camp, policy, res, n, lo, hi)
    cert = certificate_data(camp, policy, order)
    certified = certified_epsilon(cert, camp.binary)
    obs = camp.observations()
    free = no_model_certificate_data(camp, policy, res, obs[0], obs[1], order)
    forecast = forecast_left(camp, policy)
    idx = np.asarray(active)
    check = model_check_json(getattr(policy, "inner", policy), camp.compound_ids.of(idx),
                             tuple(o[idx] for o in obs[:3]))
    sigma = None if camp.binary else sigma_of(policy)  # a continuous readout's, said with its units
    readout = camp.readout
    if check is not None and sigma is not None:
        check.update({k: with_sigma_unit(check[k], sigma, readout) for k in ("model", "warning") if check[k]})
    if check is not None and check.get("warning") and getattr(policy, "fixed_budget", False):
        from screenbai.bandits.certainty.model_check import MODEL_ASSUMED  # a fixed budget: no certificate, no rule

        check["warning"] = check["warning"].replace(MODEL_ASSUMED, (
            "The estimates and the recommendation rest on this model: treat them as unproven; richer features (or "
            "testing the deviating compounds apart) may restore the fit."))
    layout = camp.layout
    qc = camp._con.execute(
        "SELECT q.plate_id, q.z_prime, q.decision, q.z_prime IS NULL AND q.n_positive >= 2 AND q.n_negative >= 2 "
        "FROM plate_qc q JOIN records r USING (record_id) ORDER BY r.step"
    ).fetchall()
    # a plate recorded in parts has a row per file, each of its controls so far: the last one is the plate's
    last = {p: (p, z, d, bool(alike)) for p, z, d, alike in qc}
    plates_done = camp._con.execute(
        "SELECT COUNT(*) FROM plates p WHERE NOT EXISTS (SELECT 1 FROM wells w LEFT JOIN outcomes o "
        "USING (plate_id, well) WHERE w.plate_id = p.plate_id AND o.id IS NULL)"
    ).fetchone()[0]
    model = model_sentence(camp.algorithm, camp.binary, readout, sigma)
    return {
        "plates_done": int(plates_done),
        "certified_epsilon": certified,
        "certificate": cert,
        "certified_epsilon_no_model": certified_epsilon(free, True),
        "certificate_no_model": free,
        "in_contention": in_contention,
        "model_check": check,
        "active": int(np.size(active)),
        "forecast_plates": None if forecast is None else forecast[1],
        "forecast_tests": None if forecast is None else forecast[0],
        "forecast_band_plates": None if forecast is None else [forecast[2], forecast[3]],
        "forecast_band_level": None if forecast is None else BAND_LEVEL,
        "forecast_bound": None if forecast is None else forecast[4],
        "forecast_untested": [] if forecast is None else forecast[5],
        "layout": None if layout is None else layout.describe(),
        "readout": None if readout is None else readout.rule(),
        "model": model,
        "plate_qc": [(p, z, d) for p, z, d, _ in last.values()],
        "plate_qc_alike": [p for p, _, _, alike in last.values() if alike],
        **spreads(camp, readout),
        "changes": change_lines(camp),
        "rule": rule_of(camp.algorithm),
        "forecast_note": getattr(getattr(policy, "inner", policy), "forecast_caveat", "") or None,
        "forecast_never": (never_stops(camp, float(getattr(getattr(policy, "inner", policy), "epsilon", 0.0)),
                                       at="the model fitted to the outcomes")
                           if forecast is not None and forecast[4] != "simulation" and not math.isfinite(forecast[0])
                           else None),
        "unit": None if readout is None else readout.label(),
        "quantity": None if readout is None else readout.told_quantity(),
        "geometric": readout is not None and readout.scale == "log10",  # set for continuous ones only
        "stop_epsilon": _stop_epsilon(policy),
        "m": len(res.recommendation) or 1,
    }


def _stop_epsilon(policy) -> float | None:
    """The epsilon the algorithm's stopping rule aims at (its parameter, default included); None for an
    algorithm without a stopping rule (a fixed budget)."""
    inner = getattr(policy, "inner", policy)
    eps = getattr(inner, "epsilon", None)
    return None if getattr(inner, "stopping_rule", None) is None or eps is None else float(eps)


def _in_contention(camp, policy, res, n, lo, hi) -> int | None:
    """Compounds whose interval [lo, hi] (``contention_intervals``) still reaches the leader's (hi >= its lo), or for
    a top-m answer the lowest lo of the m recommended (``Status.against``), among the active ones; None before any
    test."""
    if not res.recommendation or int(n.sum()) == 0:
        return None
    active = getattr(policy, "arm_set", np.arange(camp.K))
    return int((hi[active] >= min(lo[a] for a in res.recommendation)).sum())  # the leader's, or the m-th


def progress_point(camp, policy, res, upto: int | None = None) -> tuple[int | None, float | None]:
    """(compounds in contention, certified epsilon) from the outcomes of the results files recorded up
    to log step ``upto`` and ``policy`` after them (``res``: its ``result()``): the two curves of the
    report's progress plot, kept per results file in the history (as ``status`` computes them)."""
    n, s, s2, _ = camp.observations(upto)
    in_contention = None
    if int(n.sum()) > 0:
        lo, hi = contention_intervals(camp, n, s, s2)
        in_contention = _in_contention(camp, policy, res, n, lo, hi)
    return in_contention, worst_epsilon(certificate_data(camp, policy))


def _finite(v):
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {k: _finite(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return type(v)(_finite(x) for x in v)
    return v


def _float(v):
    return None if v is None else float(v)

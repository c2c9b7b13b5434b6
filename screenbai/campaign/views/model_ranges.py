"""The model's intervals status shows beside the recommendation (split from status.py).

Where the campaign's stopping rule holds a likelihood-ratio confidence set C_t of the logistic model (log-tas,
GLGapE and m-GLGapE at their default calibration, RAGE-GLM: the rule's ``lr_sets``), each listed compound's
model interval is the range of its hit rate over C_t, [min, max] of mu(x'theta) over theta in C_t
(numerics/lr_range.py): theta* lies in C_t at every t with probability at least 1 - delta, so the ranges are
true together, at any stop, under the logistic model on these features. The ends are safe (outer) bounds,
printed rounded outwards. Only the compounds listed are ranged (a few plane searches each, over the compounds
tested), never the whole library.

Where the rule holds no such set (linear rules, other calibrations, a setting without guarantee) the interval
stays the Wald interval at the fit (estimates.model_estimates), said to be descriptive.
"""

from __future__ import annotations

import math

import numpy as np

from screenbai.bandits.numerics.lr_range import hit_rate_ranges
from screenbai.campaign.lab.assay import models_features

from .estimates import rate_text

#: what the ranges are, said once above them
RANGE_MEANING = (
    "model range: every hit rate the stopping rule's likelihood-ratio set allows, for the compounds "
    "listed together; valid at any stop, under the logistic model on these features, at the campaign's "
    "delta = {delta:g}"
)
#: what the Wald intervals are where the rule holds no such set
WALD_MEANING = "the model's intervals are descriptive: a Wald interval at its fit, not valid at any stop"


def model_ranges(policy, arms, no_guarantee=()) -> tuple[list[tuple[float, float] | None], float] | None:
    """(per arm of ``arms``, [min, max] of its hit rate over the rule's likelihood-ratio sets, or None when a set
    is empty; the delta they hold at), or None where the rule holds no such set or the setting has no guarantee.
    With no set built yet (no outcome) every range is [0, 1]."""
    inner = getattr(policy, "inner", policy)
    rule = getattr(inner, "stopping_rule", None)
    lr_sets = getattr(rule, "lr_sets", None)
    Z = getattr(inner, "Z", None)
    if not callable(lr_sets) or Z is None or no_guarantee:
        return None
    arms = np.asarray(arms, dtype=np.int64).reshape(-1)
    # the algorithm's own arm numbers: after a change it works on the active compounds only (state/armset.py)
    local = np.asarray(policy.to_local(arms) if hasattr(policy, "to_local") else arms, dtype=np.int64)
    if not arms.size or (local < 0).any():  # a compound withdrawn: not the algorithm's
        return None if arms.size else ([], float(inner.delta))
    return hit_rate_ranges(lr_sets(), np.asarray(Z[local], dtype=float)), float(inner.delta)


def range_text(lo: float, hi: float) -> str:
    """[lo, hi] rounded outwards to 3 decimals, so that the interval printed holds the one computed."""
    return f"[{math.floor(lo * 1000.0) / 1000.0:.3f}, {math.ceil(hi * 1000.0 - 1e-9) / 1000.0:.3f}]"


def recommendation_lines(st) -> list[str]:
    """The recommendation's table of a ``Status`` ``st``: each compound with the model's estimate and its interval
    (the range over the likelihood-ratio set where ``st.model_range_delta`` is set, else the descriptive Wald
    interval) and its observed rate."""
    which = (
        ("final" if st.done else "current leader")
        if st.m == 1
        else (f"{'final' if st.done else 'current'} top {st.m}, by the model's estimate")
    )
    ranged = st.model_range_delta is not None
    rate = st._rate()
    lines = [
        f"recommendation ({which}), "
        + (
            "with the model's ranges (valid at any stop) and 95% intervals of the observed rates:"
            if ranged
            else "with 95% intervals:"
        )
    ]
    if ranged:
        rejected = bool(st.model_check and st.model_check.get("rejected"))
        lines.append(
            f"  ({RANGE_MEANING.format(delta=st.model_range_delta)}"
            + ("; the model check above rejects this model: treat them as unproven" if rejected else "")
            + ")"
        )
    elif models_features(st.algorithm):
        lines.append(f"  ({WALD_MEANING})")
    if st.thin_fit is not None:  # as many parameters as compounds tested
        lines.append(
            "  ({} compound(s) tested for {} features, so for others they say little yet: the ranges stay wide until "
            "the compounds tested span the features)".format(*st.thin_fit)
            if ranged
            else "  (the model's intervals are descriptive, at its fit: {} compound(s) tested for {} features, so for "
            "others they say little yet; the certificate is what is proven)".format(*st.thin_fit)
        )
    for c in st.recommendation:
        obs = (
            (
                "never tested: the answer rests on the model's extrapolation alone (see the model check); test "
                "this compound before acting on it"
                if st.done
                else "not tested yet: the model's figure extrapolates from the compounds tested (see the model check)"
            )
            if c.observed is None or c.observed_ci is None
            else f"observed {c.observed:.3g} [{c.observed_ci[0]:.3g}, {c.observed_ci[1]:.3g}] over {c.tests} tests"
        )
        lines.append(f"  {c.compound_id}  {c.smiles}")
        fmt = rate_text if st.outcome == "binary" else (lambda v: f"{v:.3g}")
        if ranged:
            interval = (
                f"range {range_text(*c.model_range)}"
                if c.model_range is not None
                else "range: none (no theta of the model fits the outcomes at this delta: the set is empty, an "
                "event of probability at most delta, or the model is wrong)"
            )
            lines.append(f"      model {rate} {fmt(c.model)}, {interval}; {obs}")
        else:
            model = (
                "model"
                if models_features(st.algorithm)
                else (
                    f"a {'logistic' if st.outcome == 'binary' else 'linear'} fit of the features (descriptive: "
                    f"{st.algorithm} uses no model of them),"
                )
            )
            lines.append(f"      {model} {rate} {fmt(c.model)} [{fmt(c.model_ci[0])}, {fmt(c.model_ci[1])}]; {obs}")
        if c.same_features:
            shown = ", ".join(c.same_features[:5]) + (" ..." if len(c.same_features) > 5 else "")
            lines.append(
                f"      same features as {shown}: the model cannot tell them apart (e.g. stereoisomers: "
                "the fingerprint ignores stereochemistry); compare their observed rates, or test them apart"
            )
    return lines

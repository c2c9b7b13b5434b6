"""The certificates a campaign shows (status, the report, the progress history), as JSON data about the campaign's
own quantity (split from status.py): the policy's, and the own wells' under no model.

What the campaign knows and the policy does not is added here: the compounds' names, the quantity the sentences are
about (the hit rate, or the mean readout with its unit), the order of the status table (a top-m answer best first
by the model's estimate: the sentences follow it), the units of a continuous readout's sigma in the model's words,
and, for 0/1 outcomes, that a gap in hit rate of about 1 says nothing, whatever the model (a linear model of the
hits, LinGapE's, does not know its outcomes are 0/1: its certificate read "within 1.7 of the best hit rate").
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from screenbai.bandits.certainty.certificate import VACUOUS_HIT_RATE_GAP, Certificate, certifies
from screenbai.bandits.certainty.no_model import no_model_certificate
from screenbai.campaign.lab.assay import Readout, with_sigma_unit


def best_first(recommendation, told: np.ndarray) -> list[int]:
    """The answer's compounds as status lists them: best first by the model's estimate of what the algorithm is
    told (``told``: larger is better), the answer's own order among equals. The certificates' sentences follow it."""
    return sorted((int(a) for a in recommendation), key=lambda a: -told[a])


def shown(camp, cert: Certificate, order=None) -> Certificate:
    """``cert`` as the campaign shows it: its compounds in ``order`` (``best_first``; those not in it after, as
    they were), vacuous from a gap in hit rate of VACUOUS_HIT_RATE_GAP for 0/1 outcomes, and a continuous
    readout's sigma with its units in the model's words (``with_sigma_unit``)."""
    if order is not None:
        at = {int(a): k for k, a in enumerate(order)}
        pairs = sorted(zip(cert.arms, cert.epsilon), key=lambda p: at.get(int(p[0]), len(at)))
        cert = dataclasses.replace(cert, arms=tuple(a for a, _ in pairs), epsilon=tuple(e for _, e in pairs))
    if camp.binary and cert.vacuous_at > VACUOUS_HIT_RATE_GAP:
        cert = dataclasses.replace(cert, vacuous_at=VACUOUS_HIT_RATE_GAP)
    elif not camp.binary:
        cert = dataclasses.replace(cert, model=with_sigma_unit(cert.model, sigma_of(camp.policy), camp.readout))
    return cert


def sigma_of(policy) -> float | None:
    """The noise scale sigma the algorithm assumes (its parameter, the default included), None without one."""
    sigma = getattr(getattr(policy, "inner", policy), "sigma", None)
    return None if sigma is None else float(sigma)


def certificate_data(camp, policy, order=None) -> dict | None:
    """The certificate as JSON data (``shown``), its sentences about the campaign's quantity: the hit rate (0/1
    outcomes) or the mean readout with its unit; None when the algorithm gives none."""
    certificate = getattr(policy, "certificate", None)
    c = certificate() if callable(certificate) else None
    if c is None:
        return None
    readout = camp.meta.get("readout")
    if camp.binary:
        quantity = "hit rate"
    elif readout:
        quantity = f"mean {Readout.from_dict(readout).told_quantity()}"  # -log10 IC50 on the log10 scale
    else:
        quantity = "mean outcome"
    return shown(camp, c, order).to_dict(camp.compound_ids, quantity)


def no_model_certificate_data(camp, policy, res, n, s, order=None) -> dict | None:
    """The own wells' certificate of the recommendation under no model (certainty/no_model.py) as JSON data, at the
    algorithm's delta (0.05 without one), among the compounds not withdrawn; None for readouts that are not 0/1
    and before a recommendation."""
    if not camp.binary or not res.recommendation:
        return None
    inner = getattr(policy, "inner", policy)
    delta = float(getattr(inner, "delta", None) or 0.05)
    m = int(getattr(inner, "m", 1))
    compared = np.asarray(getattr(policy, "arm_set", np.arange(camp.K)))
    if len(compared) <= m or not set(res.recommendation) <= set(compared.tolist()):
        return None
    cert = no_model_certificate(s, n, res.recommendation, delta, m=m, compared=compared)
    return shown(camp, cert, order).to_dict(camp.compound_ids, "hit rate")


def worst_epsilon(cert: dict | None) -> float | None:
    """The largest certified epsilon of a certificate's answer (inf: none of it certified yet; None: no
    certificate), as the history keeps it (its None: no point)."""
    if cert is None:
        return None
    return math.inf if cert.get("worst") is None else float(cert["worst"])


def certified_epsilon(cert: dict | None, binary: bool) -> float | None:
    """``worst_epsilon`` as status says it: None also while it certifies nothing (``certifies``)."""
    eps = worst_epsilon(cert)
    return eps if eps is not None and certifies(eps, binary) else None

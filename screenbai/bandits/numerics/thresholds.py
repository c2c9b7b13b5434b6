"""Confidence thresholds of the pure-exploration algorithms, as small pure functions.

Every function returns the factor a width is built from; the GIFA engine (``gifa.py``) turns it
into a width: linear indices use ``factor * ||y||_{(V^lambda)^{-1}}``, classical (per-arm) indices
use ``factor / sqrt(N_a)``.  ``s`` always counts the observations collected so far (the papers index time differently).
"""

from __future__ import annotations

import math

DELTA_EFF = ("pairs", "ellipsoid")


def effective_delta(delta: float, K: int, delta_eff: str = "pairs") -> float:
    """[XHS18] union bound over the K^2 pairs ("pairs", delta/K^2) or the ellipsoid bound ("ellipsoid", delta).

    "pairs" (delta / K^2, the union bound of [XHS18] Lemma 3) is paper-faithful (default), "ellipsoid" is
    valid and tighter.
    """
    if delta_eff == "pairs":
        return delta / (K * K)
    if delta_eff == "ellipsoid":
        return delta
    raise ValueError(f"delta_eff must be one of {DELTA_EFF}; got {delta_eff!r}")


def abbasi_yadkori(logdet: float, d: int, lambda0: float, R: float, S: float, delta: float) -> float:
    """C_t of [XHS18] eq. 3, from log det V_t^lambda kept incrementally.

    C_t = R sqrt(2 log(det(V_t)^{1/2} det(lambda I)^{-1/2} / delta)) + sqrt(lambda) S,
    so that |y^T (theta_hat - theta*)| <= C_t ||y||_{V_t^{-1}}.  ``delta`` is the effective level
    (see ``effective_delta``).
    """
    log_ratio = 0.5 * (logdet - d * math.log(lambda0))
    return R * math.sqrt(2.0 * (log_ratio + math.log(1.0 / delta))) + math.sqrt(lambda0) * S


def reda_theoretical(
    s: int,
    delta: float,
    d: int,
    L: float,
    S: float,
    sigma: float,
    lambda0: float,
    paper_literal: bool = False,
) -> float:
    """[RKD21] eq. (2); the width is this times sigma ||y||_{V^{-1}}.

    Self-consistent form (default, our choice): sqrt(2 ln(1/delta) + d ln(1 + (s+1) L^2 / (lambda0 d)))
    + sqrt(lambda0) S / sigma, with V_0 = lambda0 I.  ``paper_literal=True`` reproduces the printed
    mix, lambda^2 inside the log and sqrt(lambda) outside, with lambda = lambda0.
    """
    lam_log = lambda0 * lambda0 if paper_literal else lambda0
    inner = 2.0 * math.log(1.0 / delta) + d * math.log1p((s + 1) * L * L / (lam_log * d))
    return math.sqrt(inner) + math.sqrt(lambda0) * S / sigma


def reda_heuristic(s: int, delta: float) -> float:
    """[RKD21] experimental threshold sqrt(2 ln((ln s + 1) / delta)); s >= 1 enforced.

    The width is this times sigma ||y||_{V^{-1}} (linear) or sigma / sqrt(N_a) (classical).
    It carries no delta-guarantee: report the empirical error next to it.
    """
    s = max(int(s), 1)
    return math.sqrt(2.0 * math.log((math.log(s) + 1.0) / delta))


def lucb1_rate(s: int, delta: float, K: int) -> float:
    """beta(t, delta) = ln(5 K t^4 / (4 delta)) of LUCB1 (Kalyanakrishnan et al. 2012).

    Individual width W_t(a) = sqrt(2 sigma^2 beta / N_a(t)); t = s >= 1.
    """
    s = max(int(s), 1)
    return math.log(5.0 * K / (4.0 * delta)) + 4.0 * math.log(s)


def lucb1_factor(s: int, delta: float, K: int, sigma: float) -> float:
    """sigma sqrt(2 beta): the LUCB1 width is this / sqrt(N_a)."""
    return sigma * math.sqrt(2.0 * lucb1_rate(s, delta, K))


def hoeffding_factor(s: int, delta: float, K: int) -> float:
    """sqrt(log(4 K t^3 / delta) / 2): the Hoeffding width for rewards in [0, 1] is this / sqrt(T_k).

    Used for the GapE baseline of [KW] (the paper does not configure it); t = s >= 1.
    """
    s = max(int(s), 1)
    return math.sqrt(0.5 * (math.log(4.0 * K / delta) + 3.0 * math.log(s)))


def hoeffding_width(s: int, delta: float, K: int, n_pulls: int) -> float:
    """sqrt(log(4 K t^3 / delta) / (2 T_k)) (Hoeffding)."""
    return hoeffding_factor(s, delta, K) / math.sqrt(n_pulls)

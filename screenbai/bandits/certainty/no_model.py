"""A certificate that needs no model: every compound's own wells, with anytime intervals for all at once.

The certificate of ``certificate.py`` holds under the policy's model of the features; when the model check
rejects that model, it is unproven. The outcomes still say something without any model, if the 0/1 outcomes
of a compound are independent draws of its own hit rate mu_k (whatever chose when to test it): each
compound's own wells give an interval for mu_k, and intervals for all K compounds at once bound every gap.

**The interval** (``anytime_intervals``). For a compound with S hits in n = S + F tests, the mixture of
likelihood ratios under the Jeffreys prior Beta(1/2, 1/2),

    E_n(p) = integral q^S (1 - q)^F Beta(1/2, 1/2)(dq) / (p^S (1 - p)^F)
           = B(S + 1/2, F + 1/2) / (B(1/2, 1/2) p^S (1 - p)^F),

is under mu_k = p a non-negative martingale with E_0 = 1 (Robbins 1970, the method of mixtures; each outcome
enters when it is recorded, an event fixed before it is seen, so any adaptive choice of wells keeps it one),
and Ville's inequality gives P(sup_n E_n(mu_k) >= 1/alpha) <= alpha. So

    I_k = {p : E_n(p) < 1/alpha}
        = {p : S log p + F log(1 - p) > log B(S + 1/2, F + 1/2) - log B(1/2, 1/2) - log(1/alpha)}

holds mu_k at every n at once with probability at least 1 - alpha. The left side is concave in p with its
maximum at S / n, and the right side is below that maximum (the mixture's value is at most the maximised
likelihood), so I_k is an interval around S / n, found by bisection on each side. A compound never tested
has I_k = [0, 1].

**All compounds at once.** With alpha = delta / K for each of the K compounds compared, every mu_k lies in
its I_k at every time with probability at least 1 - delta (a union bound). Then for a recommended compound
i and any rival j, mu_j - mu_i <= hi_j - lo_i, and eq. (1) of ``certificate.py`` with U(i, j) = hi_j - lo_i
gives the certified epsilon: max(0, max_j hi_j - lo_i) for the best arm, the m-th largest for top-m. A rival
never tested has hi_j = 1, so in a large library the statement says something only once lo_i is near 1
(the own wells' route of log-tas); in a library whose every compound has been tested it bounds every gap.
Compounds added to a running campaign raise K, and statements read before the addition were made at the
smaller K (the campaign's change log says when the set of compounds changed).

The statement is true whenever it is read, under independent 0/1 outcomes per compound and no model of the
features; it costs log(K / delta) nats per compound where the model's set pays its d-parameter fit.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy.special import betaln

from .certificate import VACUOUS_HIT_RATE_GAP, Certificate, certified_from_bounds

#: bisection steps of the interval's ends (2^-50: exact to double precision on [0, 1])
_STEPS = 50

MODEL = ("no model: each compound's own wells alone (0/1 outcomes independent given the compound; anytime "
         "intervals for all {K:,} compounds compared at once)")


def anytime_intervals(successes: np.ndarray, tests: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Per compound, the interval I_k of the module docstring at level ``alpha``: (lower ends, upper ends).
    Vectorised over compounds; [0, 1] where a compound has no test."""
    S = np.asarray(successes, dtype=float)
    n = np.asarray(tests, dtype=float)
    if S.shape != n.shape:
        raise ValueError(f"successes and tests differ in shape: {S.shape} and {n.shape}")
    if np.any(n < 0) or np.any(S < 0) or np.any(S > n):
        raise ValueError("need 0 <= successes <= tests for every compound")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1); got {alpha}")
    F = n - S
    level = betaln(S + 0.5, F + 0.5) - betaln(0.5, 0.5) - math.log(1.0 / alpha)
    p_hat = np.divide(S, n, out=np.full_like(n, 0.5), where=n > 0)

    def inside(p: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            loglik = np.where(S > 0, S * np.log(p), 0.0) + np.where(F > 0, F * np.log1p(-p), 0.0)
        return loglik > level

    # lower end: the largest p <= p_hat outside the interval (bisection on [0, p_hat]); 0 when S = 0
    out_lo, in_lo = np.zeros_like(p_hat), p_hat.copy()
    out_hi, in_hi = np.ones_like(p_hat), p_hat.copy()
    for _ in range(_STEPS):
        mid = 0.5 * (out_lo + in_lo)
        ok = inside(mid)
        in_lo, out_lo = np.where(ok, mid, in_lo), np.where(ok, out_lo, mid)
        mid = 0.5 * (in_hi + out_hi)
        ok = inside(mid)
        in_hi, out_hi = np.where(ok, mid, in_hi), np.where(ok, out_hi, mid)
    # S = 0 (an untested compound too): nothing outside below p_hat = 0; F = 0: nothing outside above
    return np.where(S > 0, out_lo, 0.0), np.where(F > 0, out_hi, 1.0)


def _lower_end(S: float, F: float, level: float) -> float:
    """The lower end of I_k for S > 0: the root in (0, S / n) of g(p) = S log p + F log(1 - p) - level, concave
    and increasing there. Halving from S / n brackets it from below; Newton's steps from below then climb to it
    without passing it (the tangent of a concave function lies above it), and the last point still outside is
    returned, so the end errs on the wide side by at most a rounding."""
    def g(p: float) -> float:
        return S * math.log(p) + (F * math.log1p(-p) if F > 0 else 0.0) - level

    p = S / (S + F)
    while True:
        p *= 0.5
        if p == 0.0:  # a fractional S so small that the root lies below the smallest double: the end is 0
            return 0.0
        value = g(p)
        if value < 0:
            break
    for _ in range(100):
        slope = S / p - (F / (1.0 - p) if F > 0 else 0.0)
        nxt = p - value / slope
        value_next = g(nxt) if nxt > p else 0.0
        for _ in range(64):  # a step onto the root by rounding: back off by ulps to the last point outside
            if value_next < 0 or not nxt > p:
                break
            nxt = math.nextafter(nxt, 0.0)
            value_next = g(nxt)
        if not (nxt > p and value_next < 0):
            break
        step, p, value = nxt - p, nxt, value_next
        if step <= 1e-15 * p:
            break
    return p


def anytime_interval(successes: float, tests: float, alpha: float) -> tuple[float, float]:
    """``anytime_intervals`` of one compound, in scalar arithmetic by Newton's method (``_lower_end``; the upper
    end is the lower end of 1 - p): about 100 times faster for one compound than the vectorised bisection, which
    it matches to 1e-12 (KL-LUCB's round updates two compounds; kl_lucb.py). Remembered per (successes, tests,
    alpha): a screen's counts repeat (most compounds at 0 or 1 hit in 1 or 2 tests), and a simulated forecast
    solves the same few pairs some 10^5 times (``_solved``)."""
    S, n = float(successes), float(tests)
    if not (0 <= S <= n):
        raise ValueError(f"need 0 <= successes <= tests; got {S:g} successes in {n:g} tests")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1); got {alpha}")
    return _solved(S, n, float(alpha))


@functools.lru_cache(maxsize=1 << 15)  # 2^15 intervals, about 10 MB; the same answer whether remembered or not
def _solved(S: float, n: float, alpha: float) -> tuple[float, float]:
    F = n - S
    level = float(betaln(S + 0.5, F + 0.5) - betaln(0.5, 0.5)) - math.log(1.0 / alpha)
    return (_lower_end(S, F, level) if S > 0 else 0.0), (1.0 - _lower_end(F, S, level) if F > 0 else 1.0)


def certified_from_intervals(lo: np.ndarray, hi: np.ndarray, answer, m: int = 1) -> np.ndarray:
    """Per arm i of ``answer`` (positions in ``lo``/``hi``), eq. (1) with U(i, j) = hi_j - lo_i: the certified
    epsilon of intervals that hold for all arms at once (the m-th largest over rivals j for top-m). O(m K)."""
    A = np.asarray(answer, dtype=np.int64)
    U = hi[None, :] - lo[A][:, None]
    U[np.arange(A.size), A] = -np.inf
    return certified_from_bounds(U, m)


def no_model_certificate(successes: np.ndarray, tests: np.ndarray, answer, delta: float, m: int = 1,
                         compared=None, quantity: str = "hit rate") -> Certificate:
    """The certificate of the module docstring for ``answer`` (arm indices) among the ``compared`` arms (default
    all; e.g. a campaign's compounds not withdrawn), from each arm's own 0/1 outcomes: per answer arm the certified
    epsilon max(0, m-th largest over rivals j of hi_j - lo_i), at level ``delta`` for all arms at once."""
    S = np.asarray(successes, dtype=float)
    n = np.asarray(tests, dtype=float)
    idx = np.arange(S.size) if compared is None else np.asarray(compared, dtype=np.int64)
    answer = tuple(int(a) for a in answer)
    if not set(answer) <= set(idx.tolist()):
        raise ValueError(f"the answer {answer} is not among the arms compared")
    K = idx.size
    lo, hi = anytime_intervals(S[idx], n[idx], delta / K)
    if K <= m:  # no rival outside the answer: every arm is among the m best
        eps = tuple(0.0 for _ in answer)
    else:
        at = {int(a): k for k, a in enumerate(idx)}
        eps = tuple(float(e) for e in certified_from_intervals(lo, hi, [at[a] for a in answer], m))
    return Certificate(arms=answer, epsilon=eps, delta=float(delta), guaranteed=True, model=MODEL.format(K=K), m=m,
                       n_samples=int(n[idx].sum()), quantity=quantity,
                       vacuous_at=VACUOUS_HIT_RATE_GAP)

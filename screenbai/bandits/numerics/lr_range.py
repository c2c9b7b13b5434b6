"""The range of x'theta over the likelihood-ratio confidence set C_t (lr_set.py), for a few rows x: the hit
rates mu(x'theta) a compound may have under the logistic model on these features, valid at every t at once
(theta* lies in C_t at all times with probability at least 1 - delta, so mu(x'theta*) lies in the range of
mu(x'theta) over C_t for every x at once on the same event).

C_t is convex (L_t is), so each end is a 1-D convex program: the largest g such that C_t reaches the plane x'theta
= g. It is found by bisection on g with the set's exact plane tests (Newton on the plane,
``lr_set._plane_search``): a plane whose minimum of L_t exceeds the level, with a point of C_t on the near side,
has no point of C_t beyond it. Only such a test moves the outer end, and a test that does not converge counts as
reached, so the end returned is always a safe (outer) bound, within RANGE_TOL of the exact end on the linear
predictor. A set with a minimiser has the search as its own (``LikelihoodRatioSet._range_end``, the one the
certificate and the stopping tests use, here bisected to RANGE_TOL). A set without a minimiser (separable outcomes)
may be unbounded along x: the search starts at the surrogate centre, used only once it is checked to lie in C_t,
and steps out until a plane test (with the UNBOUNDED_SLACK margin) rules the far side out; a step past ETA_CAP, where
mu is within 1e-17 of 0 or 1, tests the plane at ETA_CAP itself, and only when that one is not ruled out does the end
count as unbounded. An empty set (its minimum above the level: theta* is
outside it, an event of probability at most delta) has no range: None.

Cost per end: about log2(width / RANGE_TOL) plane tests, each a few Newton steps of O(K_+ d^2) (K_+ the
compounds tested): for the few compounds a status lists, not for the whole library.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import expit

from screenbai.bandits.numerics.linalg import cholesky_solve
from screenbai.bandits.numerics.lr_set import UNBOUNDED_SLACK, LikelihoodRatioSet, _onto_plane, _plane_search, nll

#: the bisection stops when the bracket of an end is this narrow on the linear predictor x'theta
RANGE_TOL = 1e-3
#: at most this many plane tests per end
MAX_TESTS = 60
#: |x'theta| beyond this counts as unbounded (mu within 1e-17 of 0 or 1)
ETA_CAP = 40.0


def _rules_out(cs: LikelihoodRatioSet, w: np.ndarray, Hinv_w: np.ndarray, g: float) -> bool:
    """No theta of C_t has w'theta >= g (exact plane test; a point of C_t with w'theta < g is known)."""
    start = _onto_plane(cs.theta, w, Hinv_w, g)
    return _plane_search(cs.Zp, cs.n, cs.s, w, start, cs.level, 0.0 if cs.bounded else UNBOUNDED_SLACK)[0]


def upper_end(cs: LikelihoodRatioSet, w: np.ndarray, tol: float = RANGE_TOL) -> float:
    """A safe upper bound on max of w'theta over the non-empty set C_t, within ``tol`` of it (inf: none found
    below ETA_CAP). A set with a minimiser: the set's own range end (``LikelihoodRatioSet._range_end``, bisected
    to ``tol``); without one (separable outcomes), stepped out from the surrogate centre here."""
    w = np.asarray(w, dtype=float)
    if cs.bounded:
        return cs._range_end(w, lower=False, steps=MAX_TESTS, tol=tol)
    if not w.any():
        return math.inf
    if nll(cs.Zp, cs.n, cs.s, cs.theta) > cs.level:  # no point of C_t known: no safe plane test
        return math.inf
    Hinv_w = cholesky_solve(cs.chol, w)
    inside, outside, step = float(w @ cs.theta), math.inf, math.sqrt(float(w @ Hinv_w))
    while math.isinf(outside):  # step out from the centre until a plane rules the far side out
        g = inside + step
        if g > ETA_CAP:  # a step past the cap: the cap's own plane still decides (a wide step may leap the end)
            if inside >= ETA_CAP or not _rules_out(cs, w, Hinv_w, ETA_CAP):
                return math.inf
            outside = ETA_CAP
        elif _rules_out(cs, w, Hinv_w, g):
            outside = g
        else:
            inside, step = g, 2.0 * step
    for _ in range(MAX_TESTS):
        if outside - inside <= tol:
            break
        mid = 0.5 * (inside + outside)
        if _rules_out(cs, w, Hinv_w, mid):
            outside = mid
        else:
            inside = mid
    return outside


def predictor_range(
    sets: list[LikelihoodRatioSet], x: np.ndarray, tol: float = RANGE_TOL
) -> tuple[float, float] | None:
    """Safe ends (lo, hi) of x'theta over the intersection of ``sets`` (each holds theta* on the same event:
    lr_windows), each within ``tol`` of the exact end over the set that gives it; (-inf, inf) for no set, None
    when a set is empty or the ranges do not meet (theta* is then outside a set: probability at most delta)."""
    lo, hi = -math.inf, math.inf
    x = np.asarray(x, dtype=float)
    for cs in sets:
        if cs.empty:
            return None
        hi = min(hi, upper_end(cs, x, tol))
        lo = max(lo, -upper_end(cs, -x, tol))
    return None if lo > hi + tol else (lo, max(lo, hi))


def hit_rate_ranges(
    sets: list[LikelihoodRatioSet], X: np.ndarray, tol: float = RANGE_TOL
) -> list[tuple[float, float] | None]:
    """Per row x of X, [min, max] of mu(x'theta) over the intersection of ``sets`` (``predictor_range``; mu is
    increasing, so the ends map through it), [0, 1] for no set, None for an empty one."""
    out: list[tuple[float, float] | None] = []
    for x in np.atleast_2d(X):
        r = predictor_range(sets, x, tol)
        out.append(None if r is None else (float(expit(r[0])), float(expit(r[1]))))
    return out

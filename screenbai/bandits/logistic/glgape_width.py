"""GLGapE's confidence widths ([KW] eqs. (6)-(9)) and their calibrations.

The width of the gap mu_i - mu_j is ``scale(t) * nu_t(i, j)`` with

    nu_t(i, j) = max_{c, c' in [c_mu, k_mu]} ||c x_i - c' x_j||_{M^-1}        ([KW] eq. 9)

and ``scale(t)`` set by the calibration:

* "likelihood-ratio" (default): the widths only choose the tests (scaled as "self-normalized"
  below); the policy stops on the likelihood-ratio confidence set of lr_set.py, whose guarantee
  needs neither c_mu nor S.
* "self-normalized" (delta-correct given c_mu and S that bound the truth): the gap error of the ridge-penalised MLE is
  (c_i x_i - c_j x_j)^T G^-1 (S_t - lambda theta*) with G >= c_mu M + lambda I, so it is at most
  nu_t(i, j) / c_mu * (||S_t||_{V^-1} + ||theta*|| sqrt(lambda c_mu)) with V = M + (lambda / c_mu) I,
  and the self-normalised martingale bound (Abbasi-Yadkori et al. 2011, Thm 1; rewards in [0, R]
  are R/2-sub-Gaussian) gives, with probability 1 - delta for all t at once,
  ||S_t||_{V^-1} <= R/2 sqrt(2 log(1/delta) + d log(1 + t L^2 c_mu / (d lambda))).
  A larger delta gives narrower widths, hence fewer or equal tests.
* "reinterpreted" (the paper's experiments, eq. 34 read as a rescaling): the largest width at the
  end of the initial phase is 1.  It divides delta out (root(t) / root(E) grows with delta), so a
  larger delta makes it test more, and it has no guarantee: it errs in 7 % and 12 % of 500 runs on two
  of six [KW] instances at delta = 0.05 (docs/error_rates.md).
* "literal34": eq. (34) as printed; it stops at tau = E (kept to document the pitfall).
* "theory": alpha = 2 kappa R / c_mu with eq. (6)'s log term; valid but very conservative.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from screenbai.bandits.certainty.certificate import certified_from_bounds
from screenbai.bandits.core.parts import StoppingRule

CALIBRATIONS = ("likelihood-ratio", "self-normalized", "reinterpreted", "literal34", "theory")
EXACT_WIDTH_MAX_K = 4096  # the calibration's largest pair width: exact up to this K, bounded from rows above
#: calibrations that come with an (epsilon, delta) guarantee (all but "likelihood-ratio" need a valid c_mu)
GUARANTEED = ("likelihood-ratio", "self-normalized", "theory")


def log_root(t: float, d: int, delta: float) -> float:
    """sqrt(2 d log t * log(pi^2 d t^2 / (6 delta))): [KW] eq. (6) without alpha."""
    return math.sqrt(2.0 * d * math.log(t) * math.log(math.pi**2 * d * t * t / (6.0 * delta)))


def corners(c_lo: float, c_hi: float) -> tuple[tuple[float, float], ...]:
    return ((c_lo, c_lo), (c_lo, c_hi), (c_hi, c_lo), (c_hi, c_hi))


def corner_widths(q_ii, q_jj, q_ij, c_lo: float, c_hi: float):
    """max over (c, c') in [c_lo, c_hi]^2 of c^2 q_ii - 2 c c' q_ij + c'^2 q_jj, and the corner.

    The quadratic form is convex in (c, c') (positive semidefinite), so the maximum over the box
    is at one of its four vertices.  Works elementwise on arrays.  Returns the
    squared width (clipped at 0) and the corner index into ``corners(c_lo, c_hi)``.
    """
    f = np.stack([c1 * c1 * q_ii - 2.0 * c1 * c2 * q_ij + c2 * c2 * q_jj for c1, c2 in corners(c_lo, c_hi)])
    idx = np.argmax(f, axis=0)
    best = np.take_along_axis(f, idx[None, ...], axis=0)[0] if f.ndim > 1 else f[idx]
    return np.maximum(best, 0.0), idx


def max_corner_sq(q_ii: float, q_jj: np.ndarray, q_ij: np.ndarray, c_lo: float, c_hi: float,
                  fewer_ops: bool = False) -> np.ndarray:
    """Squared width for one arm i against all j at once (the corner itself is found later for j_t only).

    ``fewer_ops`` (large K, where these operations are a large part of the round): the same value
    once clipped at 0, in 12 array operations instead of 19, with other round-off. The corners
    (lo, lo) and (hi, hi) give lo^2 D and hi^2 D with D = ||z_i - z_j||^2 >= 0, so hi^2 D is their
    maximum (when round-off makes D < 0 both are negative and the clipped result is the same);
    the corners (lo, hi) and (hi, lo) differ only in which of q_ii, q_jj gets hi^2.
    """
    if fewer_ops:
        lo2, hi2 = c_lo * c_lo, c_hi * c_hi
        total = q_jj + q_ii
        out = q_ij * -2.0
        out += total
        out *= hi2  # hi^2 D
        spread = np.subtract(q_jj, q_ii)
        np.abs(spread, out=spread)
        spread *= 0.5 * (hi2 - lo2)
        total *= 0.5 * (hi2 + lo2)
        total += spread
        total -= (2.0 * c_lo * c_hi) * q_ij  # the larger of the corners (lo, hi) and (hi, lo)
        return np.maximum(out, total, out=out)
    (lo, _), _, _, (hi, _) = corners(c_lo, c_hi)
    out = (lo * lo * q_ii) + (lo * lo) * q_jj - (2.0 * lo * lo) * q_ij
    for c1, c2 in ((lo, hi), (hi, lo), (hi, hi)):
        out = np.maximum(out, (c1 * c1 * q_ii) + (c2 * c2) * q_jj - (2.0 * c1 * c2) * q_ij, out=out)
    return out


def max_pair_width(Z: np.ndarray, P: np.ndarray, c_lo: float, c_hi: float, q: np.ndarray | None = None,
                   n_rows: int = 32) -> float:
    """max over i != j and the corners (c, c') of ||c z_i - c' z_j||_P, the calibration's nu_max.

    Exact, from the K x K Gram matrix, up to ``EXACT_WIDTH_MAX_K`` arms. Above, a K x K pass is out
    of reach (80 GB at K = 10^5): the maximum is taken over the pairs of ``n_rows`` exact Gram rows
    (O(K d) each), those of the arms with the largest ||z||_P and of farthest-pair steps from them.
    That is a lower bound, within a factor 2 for the symmetric corners (for any arm p,
    ||z_i - z_j|| <= 2 max_j' ||z_p - z_j'||), so the calibrated widths are at least the exact
    ones: more tests, never a weaker confidence. ``q`` = diag(Z P Z^T) if already known.
    """
    K = Z.shape[0]
    if K <= EXACT_WIDTH_MAX_K:
        G = Z @ P @ Z.T
        q = np.diag(G)
        nu2_max = 0.0
        for c1, c2 in corners(c_lo, c_hi):
            f = c1 * c1 * q[:, None] - 2.0 * c1 * c2 * G + c2 * c2 * q[None, :]
            np.fill_diagonal(f, -np.inf)
            nu2_max = max(nu2_max, float(f.max()))
        return float(np.sqrt(max(nu2_max, 0.0)))
    q = np.einsum("ij,jk,ik->i", Z, P, Z) if q is None else q
    by_norm = np.argpartition(-q, n_rows // 2)[: n_rows // 2]
    todo, nu2_max = list(by_norm), 0.0
    done: set[int] = set()
    while todo and len(done) < n_rows:
        i = int(todo.pop(0))
        if i in done:
            continue
        done.add(i)
        g = Z @ (P @ Z[i])  # Gram row i
        f = np.full(K, -np.inf)
        for c1, c2 in corners(c_lo, c_hi):  # (c, c') on (i, j) and on (j, i)
            np.maximum(f, c1 * c1 * q[i] - 2.0 * c1 * c2 * g + c2 * c2 * q, out=f)
            np.maximum(f, c2 * c2 * q[i] - 2.0 * c1 * c2 * g + c1 * c1 * q, out=f)
        f[i] = -np.inf
        j = int(np.argmax(f))
        nu2_max = max(nu2_max, float(f[j]))
        todo.insert(0, j)  # farthest-pair step: the partner of i next
    return float(np.sqrt(max(nu2_max, 0.0)))


@dataclass(frozen=True)
class PaperScale:
    """scale(t) = a_eff * root(t) ([KW] eq. 6 with the calibrated alpha)."""

    a_eff: float
    d: int
    delta: float

    def __call__(self, t: float) -> float:
        return self.a_eff * log_root(t, self.d, self.delta)


@dataclass(frozen=True)
class SelfNormalizedScale:
    """scale(t) = (R/2 sqrt(2 log(1/delta) + d log(1 + t L^2 c_mu / (d lambda))) + S sqrt(lambda c_mu)) / c_mu."""

    R: float
    d: int
    delta: float
    L: float
    c_mu: float
    lambda_reg: float
    S: float

    def __call__(self, t: float) -> float:
        log_det = self.d * math.log1p(t * self.L**2 * self.c_mu / (self.d * self.lambda_reg))
        noise = 0.5 * self.R * math.sqrt(2.0 * math.log(1.0 / self.delta) + log_det)
        return (noise + self.S * math.sqrt(self.lambda_reg * self.c_mu)) / self.c_mu


SCALES = {cls.__name__: cls for cls in (PaperScale, SelfNormalizedScale)}


def calibrate(
    calibration: str, *, Z: np.ndarray, P: np.ndarray, q: np.ndarray, M: np.ndarray, s_init: int, delta: float,
    c_mu: float, k_mu: float, R: float, lambda_reg: float, S: float,
):
    """The width scale chosen by ``calibration`` from the state at the end of the initial phase.

    Returns (scale, diagnostics).  ``P`` = M^-1, ``q`` = diag(Z P Z^T), ``s_init`` the number of initial observations,
    ``S`` a bound on ||theta*|| (only used by "self-normalized").
    """
    d = Z.shape[1]
    L = float(np.sqrt(np.einsum("ij,ij->i", Z, Z).max()))
    if calibration in ("self-normalized", "likelihood-ratio"):  # O(K d): it runs again at every doubling
        return SelfNormalizedScale(R, d, delta, L, c_mu, lambda_reg, S), {"S": S}
    nu_max = max_pair_width(Z, P, c_mu, k_mu, q)
    if nu_max == 0.0:
        raise ValueError("all arms have identical features; there is nothing to identify")
    diagnostics = {"nu_max_init": nu_max}
    root_cal = log_root(max(s_init, 2), d, delta)
    kappa = float(np.sqrt(3.0 + 2.0 * np.log1p(2.0 * L * L / float(np.linalg.eigvalsh(M)[0]))))
    if calibration == "reinterpreted":
        a_eff = 1.0 / (root_cal * nu_max)
    elif calibration == "literal34":
        a_eff = c_mu / (2.0 * kappa * R * root_cal * nu_max)
    elif calibration == "theory":
        a_eff = 2.0 * kappa * R / c_mu
    else:
        raise ValueError(f"calibration must be one of {CALIBRATIONS}; got {calibration!r}")
    diagnostics.update(a_eff=a_eff, kappa=kappa)
    return PaperScale(a_eff, d, delta), diagnostics


class WidthRule(StoppingRule):
    """The stopping rule of GLGapE's width calibrations (core/parts.py): U(i, j) = mu_j - mu_i +
    scale(t) nu_t(i, j) at the penalised MLE ([KW] eq. 9) with the calibration's scale, as GLGapE's round
    compares with epsilon. It reads the owner's estimate, design and scale (``policy.theta``,
    ``policy.state``, ``policy.width_scale``; the bounds from ``policy._bounds_against``); no state of its
    own. Before the design spans (widths undefined) nothing is certified (inf)."""

    name = "confidence widths"

    def __init__(self, calibration: str, epsilon: float, delta: float):
        super().__init__(epsilon, delta)
        self.calibration = calibration

    def certified_epsilon(self, answer: np.ndarray) -> np.ndarray:
        """eq. (1) of certainty/certificate.py with the widths at the estimate."""
        A = np.asarray(answer)
        pol = self.policy
        if pol._phase != "adaptive":
            return np.full(A.size, np.inf)
        mu = expit(pol.Z @ pol.theta)
        U = pol._bounds_against(pol.state, A, mu, pol.width_scale(pol.n_samples + 1))[0]
        return certified_from_bounds(U, A.size)

    def model(self) -> tuple[str, tuple[str, ...]]:
        pol = self.policy
        model = "the logistic model on these features"
        if self.calibration in ("reinterpreted", "literal34"):
            return model, ()  # declared without guarantee in the parameters
        # a constant left at its plug-in estimate voids the guarantee: declared by
        # GLGapE.settings_without_guarantee (the certificate's caveat), said here in the model's words
        c_mu = f"c_mu = {pol.c_mu:.3g}" if pol.c_mu is not None else "c_mu"
        if pol.c_mu_source != "given":
            c_mu += " (estimated)"
        if self.calibration == "theory":
            return f"{model}, mu' >= {c_mu} on the arms", ()
        S = pol.diagnostics.get("S", pol.S)
        S_text = "S" if S is None else f"S = {float(S):.3g}"
        if pol.S is None:
            S_text += " (estimated)"
        return f"{model}, mu' >= {c_mu} on the arms and ||theta|| <= {S_text}", ()

"""An anytime-valid likelihood-ratio confidence set for a logistic model, and a stopping test on it.

    C_t = {theta : L_t(theta) <= P_t + log(1/delta)}

L_t(theta) = sum_s -log p_theta(y_s | x_s) is the unpenalised negative log-likelihood of the
outcomes so far and P_t = sum_s -log q_s(y_s) the loss of the predictions made *before* each
outcome was seen, q_s = (1 - w_s) p_s + w_s / 2 with w_s = 1 / (s + 2) (the small mixing weight caps
one outcome's loss at log(2 (s + 2))) and p_s any prediction from the earlier outcomes: here
``RunningPredictor``'s, a Bayesian average over Gaussian priors of moderated Laplace predictives.
Under the true theta*, exp(L_t(theta*) - P_t) = prod_s q_s(y_s) / p_theta*(y_s) is a non-negative
martingale with mean 1 (each factor has conditional mean 1 because q_s is fixed before y_s), so
by Ville's inequality theta* stays in C_t at all times at once with probability at least 1 - delta
("universal inference" with a running estimate: Wasserman, Ramdas & Balakrishnan 2020; Emmenegger
et al. 2023).  Nothing else is assumed: no bound S on ||theta*||, no lower bound c_mu on mu'.  The
arms may be chosen adaptively and the outcomes may arrive in batches (plates): a batch is
predicted with the estimate from before it.

The stopping test certifies that arm(s) ``named`` are epsilon-good for every theta in C_t:
mu(x_j^T theta) - mu(x_i^T theta) <= epsilon for every named i and every other arm j.  C_t is
convex (L_t is), so "no theta in C_t has (x_j - x_i)^T theta > g" holds exactly when the
minimum of L_t on the hyperplane (x_j - x_i)^T theta = g exceeds the level (a point of C_t
lies on the other side).  The largest safe g follows from the range of x_i^T theta over C_t:
mu(b + g) - mu(b) <= epsilon for every b in that range; a pair that plane does not settle gets
tangent planes of the alternative {x_j^T theta > logit(mu(x_i^T theta) + epsilon)}, which is convex
(``epsilon_curve``), so that the test is not conservative where the range is wide (large d: the
range ends' margins are far below the margin at the likely theta).  Arms far from the answer are ruled out
first by an outer bound of C_t (the self-concordance of the logistic loss, Bach 2010, Prop. 1);
the rest get an exact Newton solve on the hyperplane (at most MAX_EXACT_TESTS of them; the rest
count as not ruled out), the likeliest violator first, and the test returns at the first arm it
cannot rule out.  ``pair_stands`` (rules/likelihood.py) is the cheap first look: a point of
C_t where the sampled rival wins.

**Separable outcomes** (no minimiser of L_t, ``bounded`` False). Validity never needs the minimiser: C_t
is the level set of L_t at an absolute level, convex, bounded or not, and a pair is ruled out only by exact
plane tests (with no minimiser the plane's infimum may lie at infinity: True then also needs a margin of
UNBOUNDED_SLACK nats). What goes is what uses the minimiser: the outer radius (infinite), the box, the range
ends (+-inf), so the margin is the smallest over every x_i^T theta (at logit((1 - epsilon) / 2)) and every
arm is a candidate; a surrogate centre theta~ (the ridge MLE at SURROGATE_RIDGE) and H~ (the Hessian of L_t
there plus the ridge) only start the planes' solves and order the candidates (``_surrogate``).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.linalg import solve_triangular
from scipy.special import expit, logit

from screenbai.bandits.numerics.features import FeatureSource
from screenbai.bandits.numerics.glm import SeparableDataError, epsilon_curve, epsilon_margin, logistic_mle
from screenbai.bandits.numerics.linalg import cholesky_lower, cholesky_solve
from screenbai.bandits.numerics.ties import largest_first

_MAX_NEWTON = 60
MAX_EXACT_TESTS = 256  # per named arm and test: arms the bounds leave beyond this count as not ruled out
BOX_MIN_ALIVE = 64  # more arms than this left by the outer radius: the box bound (2 d range ends) prunes them
EXACT_NORMS_MAX_K = 20_000  # the outer bound's H^-1 norms: exact (O(K d^2)) up to this K, from M^-1 above
MAX_CERT_TESTS = 32  # the certificate's exact range ends per answer arm (beyond, outer bounds)
_CERT_STEPS = 14  # bisections of the certificate's range ends (the stopping test's own use 8)
_DECREMENT_TOL = 1e-10  # Newton decrement (squared) at which a hyperplane minimum is taken as reached
_MAX_ETA_STEP = 10.0  # a plane search's first step moves no tested arm's linear predictor by more (_plane_search)
SURROGATE_RIDGE = 1e-3  # separable outcomes: the ridge of the surrogate centre (starting points only)
UNBOUNDED_SLACK = 1e-6  # separable outcomes: nats by which a plane's minimum must clear the level


def forecast_level(t: float, d: int, delta: float) -> float:
    """An approximation, for forecasts only, of the evidence (nats) the likelihood-ratio set needs
    to rule a rival out after t tests: log(1/delta) plus the regret of the running predictions
    against the maximum-likelihood fit, which for a d-parameter logistic model grows like
    (d/2) log(1 + t/d). The stopping test itself uses the measured regret, never this."""
    return math.log(1.0 / delta) + 0.5 * d * math.log1p(max(t, 0.0) / d)


def prediction_loss(p1: np.ndarray, rewards: np.ndarray, n_before: int) -> float:
    """sum of -log q(y) for outcomes ``rewards`` (0/1) predicted with probabilities ``p1`` of a 1,
    the s-th of them (counting from ``n_before``) mixed with a fair coin at weight w_s = 1 / (s + 2):
    q = (1 - w_s) p1 + w_s / 2, so one outcome costs at most log(2 (s + 2))."""
    rewards = np.asarray(rewards, dtype=float)
    w = 1.0 / (n_before + 2.0 + np.arange(rewards.size))
    q1 = (1.0 - w) * np.asarray(p1, dtype=float) + 0.5 * w  # probability of a 1
    q = np.where(rewards > 0.5, q1, 1.0 - q1)
    return float(-np.log(q).sum())


#: prior precisions lambda_k of the Gaussian priors N(0, I / lambda_k) the running predictor averages
PRIOR_PRECISIONS = (1.0, 4.0, 16.0)


class RunningPredictor:
    """The predictions q_s of P_t: a Bayesian model average over Gaussian priors, each predictive moderated.

    Component k is the posterior of the logistic model under the prior N(0, I / lambda_k), approximated
    at its MAP theta_k (the ridge-penalised MLE) with covariance Sigma_k = (lambda_k I + H_k)^-1, H_k the
    Fisher information sum_s mu'(x_s^T theta_k) x_s x_s^T (Laplace); its predictive probability of a 1
    at x is MacKay's moderated mu(x^T theta_k / sqrt(1 + pi x^T Sigma_k x / 8)) (MacKay 1992, eq. 99:
    the probit approximation of the posterior mean of mu). The components are averaged with weights
    proportional to 1/K_prior times the probability each gave the outcomes so far (Bayesian model
    averaging: its loss is within log(#priors) nats of the best component's), and the average is mixed
    with w_s / 2, w_s = 1 / (s + 2), as ``prediction_loss`` (one outcome costs at most log(2 (s + 2))).

    Validity does not depend on any of these choices: every prediction of a batch of outcomes is made
    from the state fitted to the outcomes before the batch (``observe`` first, ``refit`` after), so
    exp(L_t(theta*) - P_t) stays a martingale with mean 1 (module docstring). The choices only lower
    P_t - L_t(MLE), the regret that the set's level carries: against the plug-in ridge MLE (the
    predictor before this one) measured at the stops of log-tas runs on kw_synthetic (K = 50, seed 0),
    (benchmarks/lr_regret.py; docs/lower_bound.md).

    **Refit schedule** (``refit_growth``). The set stays valid for ANY predictable predictor: all that
    Ville's inequality needs is that q_s is fixed before y_s is seen, not that it uses every earlier
    outcome. So the MAP points and their Cholesky factors may be refitted only now and then, predicting
    with the last fitted ones in between (the prior weights are still updated at every outcome, by
    ``observe``, from those same fixed predictions). With ``refit_growth`` = g > 0 the caller refits only
    when ``due(t)``: once the number of outcomes t has grown by g (at least by one outcome) since the
    last refit, so a run of T outcomes refits about log(T) / g times and the amortised cost per outcome
    is O(K_+ d^2 / (g t)) instead of O(K_+ d^2). The stale predictions cost a little regret (a larger
    level), never validity. g = 0 (the default, log-tas's) refits after every outcome.

    ``refit`` costs one warm-started Newton solve, O(K_+ d^2), and one Cholesky factorisation of a d x d
    matrix per prior; ``observe`` O(b d^2) for a batch of b outcomes.
    """

    def __init__(self, d: int, precisions: tuple[float, ...] = PRIOR_PRECISIONS, refit_growth: float = 0.0):
        if not refit_growth >= 0.0:
            raise ValueError(f"refit_growth must be >= 0 (0: refit after every outcome); got {refit_growth}")
        self.lams = np.asarray(precisions, dtype=float)
        k = self.lams.size
        self.theta = np.zeros((k, d))
        self.chol = np.sqrt(self.lams)[:, None, None] * np.eye(d)  # lower Cholesky factors of lambda_k I + H_k
        self.log_w = np.full(k, -math.log(k))  # log posterior weights of the priors
        self.loss = 0.0  # P_t
        self.refit_growth = float(refit_growth)
        self.fitted_at = -1  # the number of outcomes at the last refit (-1: never refitted)

    def state_dict(self) -> dict:
        state = {"theta": self.theta.copy(), "chol": self.chol.copy(), "log_w": self.log_w.copy(), "loss": self.loss}
        if self.refit_growth > 0.0:  # the schedule's position (log-tas's state keeps its former shape)
            state["fitted_at"] = self.fitted_at
        return state

    def load_state_dict(self, state: dict) -> None:
        self.theta = np.array(state["theta"], dtype=float)
        self.chol = np.array(state["chol"], dtype=float)
        self.log_w = np.array(state["log_w"], dtype=float)
        self.loss = float(state["loss"])
        self.fitted_at = int(state.get("fitted_at", -1))  # a state saved before the schedule: refit next

    def due(self, t: int) -> bool:
        """Whether to refit after t outcomes: always with ``refit_growth`` 0, else once t has grown by
        that fraction (at least by one outcome) since the last refit."""
        if self.refit_growth <= 0.0 or self.fitted_at < 0:
            return True
        return t >= self.fitted_at + max(1, int(self.refit_growth * self.fitted_at))

    def _component_probabilities(self, Zb: np.ndarray) -> np.ndarray:
        """Each component's moderated probability of a 1 at the rows of Zb (priors x rows)."""
        eta = self.theta @ Zb.T
        out = np.empty_like(eta)
        for k in range(self.lams.size):
            u = solve_triangular(self.chol[k], Zb.T, lower=True)  # ||u||^2 = x^T Sigma_k x
            out[k] = expit(eta[k] / np.sqrt(1.0 + (math.pi / 8.0) * np.einsum("ij,ij->j", u, u)))
        return out

    def probability(self, Zb: np.ndarray) -> np.ndarray:
        """The averaged predictive probability of a 1 at the rows of Zb (before the w_s mixing)."""
        w = np.exp(self.log_w - self.log_w.max())
        return (w / w.sum()) @ self._component_probabilities(np.atleast_2d(Zb))

    def observe(self, Zb: np.ndarray, rewards: np.ndarray, n_before: int, index: np.ndarray | None = None) -> float:
        """Add the loss of outcomes ``rewards`` at the rows of Zb, all predicted from the current state
        (the s-th of them, counting from ``n_before``, mixed with w_s / 2), to P_t and return it; then
        reweigh the priors by the probability each component gave them. Call ``refit`` next.
        With ``index``, Zb holds distinct rows and outcome s is at row ``index[s]`` (a batch that tests
        few arms many times: the predictions are computed once per row)."""
        Zb = np.atleast_2d(np.asarray(Zb, dtype=float))
        y = np.asarray(rewards, dtype=float).reshape(-1) > 0.5
        pk = self._component_probabilities(Zb)
        if index is not None:
            pk = pk[:, np.asarray(index, dtype=np.int64)]
        w = np.exp(self.log_w - self.log_w.max())
        loss = prediction_loss((w / w.sum()) @ pk, y, n_before)
        self.loss += loss
        self.log_w = self.log_w + np.log(np.clip(np.where(y[None, :], pk, 1.0 - pk), 1e-300, None)).sum(axis=1)
        self.log_w -= self.log_w.max()
        return loss

    def refit(self, Zp: np.ndarray, n: np.ndarray, s: np.ndarray, t: int | None = None) -> None:
        """Refit every component to all the outcomes so far (pulled arms' features ``Zp``, counts ``n``,
        successes ``s``; ``t`` outcomes in all, default n.sum()): the MAP under its prior, warm-started,
        and the Cholesky factor of its precision."""
        self.fitted_at = int(np.sum(n)) if t is None else int(t)
        d = self.theta.shape[1]
        for k, lam in enumerate(self.lams):
            th = logistic_mle(Zp, n, s, float(lam), theta0=self.theta[k], decrement_tol=1e-10).theta
            eta = Zp @ th
            p = expit(eta)
            H = (Zp.T * (np.asarray(n, dtype=float) * p * (1.0 - p))) @ Zp
            H[np.diag_indices(d)] += lam
            self.theta[k] = th
            self.chol[k] = np.linalg.cholesky(H)


def observe_in_chunks(predictor: RunningPredictor, Z: np.ndarray, n: np.ndarray, s: np.ndarray, arms: np.ndarray,
                      rewards: np.ndarray, n_before: int, d: int, growth: float) -> None:
    """Add a batch of outcomes (``arms``, ``rewards``, in the order recorded; ``n`` and ``s`` the per-arm
    counts and successes with the batch included) to ``predictor``'s P_t in consecutive chunks, each
    predicted from the outcomes before it (a chunk of d, then growing by ``growth`` times the outcomes
    before it), the predictor refitted between chunks. The order is fixed before the outcomes are seen,
    so exp(L_t(theta*) - P_t) stays a martingale (module docstring); one prediction for a whole batch
    would cost up to log 2 per outcome more. The caller refits after the last chunk."""
    arms = np.asarray(arms, dtype=np.int64).reshape(-1)
    rewards = np.asarray(rewards, dtype=float).reshape(-1)
    n = np.array(n, dtype=float)
    s = np.array(s, dtype=float)
    np.subtract.at(n, arms, 1.0)
    np.subtract.at(s, arms, rewards)
    lo = 0
    while lo < arms.size:
        hi = min(arms.size, lo + max(d, math.ceil(growth * (n_before + lo))))
        a, r = arms[lo:hi], rewards[lo:hi]
        rows, index = np.unique(a, return_inverse=True)
        predictor.observe(Z[rows], r, n_before + lo, index=index)
        np.add.at(n, a, 1.0)
        np.add.at(s, a, r)
        if hi < arms.size:
            pulled = np.flatnonzero(n)
            predictor.refit(Z[pulled], n[pulled], s[pulled])
        lo = hi


def nll(Zp: np.ndarray, n: np.ndarray, s: np.ndarray, theta: np.ndarray) -> float:
    """L(theta) = sum_a n_a log(1 + e^eta_a) - s_a eta_a over the pulled arms (unpenalised)."""
    return _loss(Zp @ theta, n, s)


def _loss(eta, n, s) -> float:
    return float(n @ np.logaddexp(0.0, eta) - s @ eta)


def _grad_hess(Zp, n, s, eta):
    """Gradient and Hessian of L at the linear predictors ``eta``."""
    p = expit(eta)
    return Zp.T @ (n * p - s), (Zp.T * (n * p * (1.0 - p))) @ Zp


def exceeds_on_plane(Zp, n, s, v: np.ndarray, theta: np.ndarray, level: float) -> bool:
    """Whether min L over the hyperplane {v^T x = v^T theta} (``theta`` lies on it) exceeds ``level``.

    Newton's method restricted to the plane (each step is orthogonal to v), with backtracking.
    False as soon as a point with L <= level is found, and also when the minimisation does not
    converge (the answer must never wrongly be True: True lets the policy stop).
    """
    return _plane_search(Zp, n, s, v, theta, level)[0]


def _plane_search(Zp, n, s, v: np.ndarray, theta: np.ndarray, level: float,
                  slack: float = 0.0) -> tuple[bool, np.ndarray]:
    """``exceeds_on_plane`` and the last point of the plane it reached (one with L <= level when False
    because such a point was found). True needs the minimum to exceed ``level + slack`` (a set without a
    minimiser: the plane's infimum may lie at infinity, approached along directions where L is flat)."""
    d = theta.size
    ridge = 1e-12 * np.eye(d)
    cap = _MAX_ETA_STEP
    for _ in range(_MAX_NEWTON):
        eta = Zp @ theta
        f = _loss(eta, n, s)
        if f <= level:
            return False, theta
        g, H = _grad_hess(Zp, n, s, eta)
        try:
            c = cholesky_lower(H + ridge * max(1.0, float(np.abs(H).max())))
        except np.linalg.LinAlgError:
            return False, theta
        a, b = cholesky_solve(c, g), cholesky_solve(c, v)
        step = -(a - (v @ a) / (v @ b) * b)  # v^T step = 0
        decrement = -float(g @ step)
        if decrement <= _DECREMENT_TOL:
            return f - max(decrement, 0.0) > level + slack, theta
        # where every tested arm's prediction saturates, H is nearly singular along the plane: a Newton step of
        # 1e12 halved 33 times still gave no decrease, and the search gave up (counted as not ruled out). So a
        # step moves no prediction by more than cap, doubled after each full capped step: a fixed cap of 10 ran
        # out of iterations where the minimum lies hundreds out (separable outcomes: a pair bound of 0.96 for 0.77)
        reach = float(np.abs(Zp @ step).max())
        capped = reach > cap
        if capped:
            step = step * (cap / reach)
        slope = -float(g @ step)
        size = 1.0
        while size > 1e-10:
            cand = theta + size * step
            f_c = nll(Zp, n, s, cand)
            if f_c <= f - 1e-4 * size * slope:
                break
            size *= 0.5
        else:
            return False, theta
        cap *= 2.0 if capped and size == 1.0 else 1.0
        theta = cand
    return False, theta


#: tangent planes tried per pair before a rival counts as not ruled out (``LikelihoodRatioSet._rules_out_pair``)
TANGENT_STEPS = 6


def _onto_plane(theta: np.ndarray, v: np.ndarray, Hinv_v: np.ndarray, g: float) -> np.ndarray:
    """The minimiser of the quadratic model at ``theta`` on the plane v^T x = g (a good start)."""
    return theta + (g - v @ theta) / (v @ Hinv_v) * Hinv_v


def _outer_radius(gap: float, kappa: float) -> float:
    """The rho with (e^-k rho + k rho - 1) / k^2 = gap: every theta of C_t has ||theta - theta_m||_H <= rho.

    From L(theta_m + D) - L(theta_m) >= ||D||_H^2 psi(max_a |x_a^T D|), psi(r) = (e^-r + r - 1) / r^2
    decreasing (Bach 2010, Prop. 1, at the minimiser theta_m), and max_a |x_a^T D| <= kappa ||D||_H.
    """
    if kappa <= 0.0:
        return math.sqrt(2.0 * gap)
    lo, hi = 0.0, math.sqrt(2.0 * gap) + gap * kappa + 1.0  # doubled below until F(hi) >= gap

    def F(r):
        x = kappa * r
        return (math.expm1(-x) + x) / (kappa * kappa)

    while F(hi) < gap:
        hi *= 2.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if F(mid) < gap else (lo, mid)
    return hi


def _pair_gap_bound(v_lo: float, v_hi: float, G: np.ndarray, W: np.ndarray) -> np.ndarray:
    """max over v in [v_lo, v_hi] of mu(min(v + G, W)) - mu(v), elementwise (an upper bound on
    mu(w) - mu(v) when w - v <= G and w <= W).  With G >= 0 (G is raised to 0: that can only raise
    a bound that is then <= 0 anyway) the function of v rises up to v* = min(-G/2, W - G) and falls
    after (mu(v + G) - mu(v) peaks at -G/2; beyond W - G it is mu(W) - mu(v)), so the maximum is at
    v* clipped to the range."""
    G = np.maximum(G, 0.0)
    v = np.clip(np.minimum(-0.5 * G, W - G), v_lo, v_hi)
    return expit(np.minimum(v + G, W)) - expit(v)


class LikelihoodRatioSet:
    """The set C_t for the data (``Zp`` the pulled arms' features, counts ``n``, successes ``s``)."""

    def __init__(self, Zp: np.ndarray, n: np.ndarray, s: np.ndarray, level: float, theta0: np.ndarray):
        self.Zp, self.n, self.s, self.level = Zp, n.astype(float), s.astype(float), float(level)
        # the minimiser of L (the unpenalised MLE); it does not exist when the outcomes are separable
        self.bounded = True
        try:
            self.theta = logistic_mle(Zp, self.n, self.s, 0.0, theta0=theta0, decrement_tol=1e-14).theta
        except SeparableDataError:
            self._surrogate(theta0)
            return
        eta = Zp @ self.theta
        f = _loss(eta, self.n, self.s)
        H = _grad_hess(Zp, self.n, self.s, eta)[1]
        self.f_min = f
        self.chol = cholesky_lower(H)  # lower factor of H
        W = cholesky_solve(self.chol, Zp.T)  # H^-1 x_a for the pulled arms
        kappa = float(np.sqrt(np.max(np.einsum("ij,ji->i", Zp, W))))
        self.empty = f > self.level
        self._box: tuple | None = None  # (eigenvectors of H, the box's sides), computed when needed
        self.rho = 0.0 if self.empty else _outer_radius(self.level - f, kappa)

    def _surrogate(self, theta0: np.ndarray) -> None:
        """No minimiser (separable outcomes): the surrogate centre theta~ (the ridge MLE at SURROGATE_RIDGE)
        and the Cholesky factor of H~ (the Hessian of L_t there plus the ridge), which only start the planes'
        solves and order the candidates (module docstring). Not known to be empty: the tests decide."""
        self.bounded, self.empty, self.rho, self._box = False, False, math.inf, None
        self.f_min = -math.inf  # not attained (the infimum of L_t is not computed)
        d = int(np.asarray(theta0).size)
        self.theta = logistic_mle(self.Zp, self.n, self.s, SURROGATE_RIDGE, theta0=theta0).theta
        eta = self.Zp @ self.theta
        H = _grad_hess(self.Zp, self.n, self.s, eta)[1]
        H[np.diag_indices(d)] += SURROGATE_RIDGE
        self.chol = cholesky_lower(H)
        self._r_quad = math.sqrt(2.0 * max(self.level - _loss(eta, self.n, self.s), 0.0))  # scores only

    def _range_end(self, u: np.ndarray, lower: bool, steps: int = 8, tol: float = 0.0) -> float:
        """A safe bound on min (``lower``) or max of u^T theta over C_t: a value c with no point of C_t beyond
        it, from exact hyperplane tests stepped out from the centre (doubling) until one rules the far side out,
        or the outer radius, then ``steps`` bisections, fewer once the bracket is ``tol`` wide (-inf or inf for
        a set without a minimiser: no outer radius; lr_range searches those)."""
        if not self.bounded:
            return -math.inf if lower else math.inf
        sign = -1.0 if lower else 1.0
        w = sign * u
        Hinv_w = cholesky_solve(self.chol, w)
        sd = math.sqrt(float(w @ Hinv_w))
        if sd == 0.0:
            return sign * (u @ self.theta)
        centre = float(w @ self.theta)
        inside = centre  # a level reached by C_t
        outside = centre + self.rho * sd  # the outer bound: nothing of C_t beyond it
        quad = centre + math.sqrt(2.0 * (self.level - self.f_min)) * sd  # the quadratic model's end
        # step out, doubling: a bisection of [quad, outer radius] tests planes far out, where the radius is
        # loose by 10x or more and a search that fails counts as reached (an end of -33.4 for a true -8.28)
        step = max(quad - centre, 1e-6 * sd)
        probe = centre + step
        while probe < outside:
            if self._beyond_is_empty(w, Hinv_w, probe):
                outside = probe
                break
            inside, step = probe, 2.0 * step
            probe = inside + step
        for _ in range(steps):
            if outside - inside <= tol:
                break
            mid = 0.5 * (inside + outside)
            if self._beyond_is_empty(w, Hinv_w, mid):
                outside = mid
            else:
                inside = mid
        return sign * outside

    def _beyond_is_empty(self, w: np.ndarray, Hinv_w: np.ndarray, g: float) -> bool:
        """No theta of C_t has w^T theta >= g (the minimiser lies below g)."""
        start = _onto_plane(self.theta, w, Hinv_w, g)
        return exceeds_on_plane(self.Zp, self.n, self.s, w, start, self.level)

    def open_arms(self, Z: np.ndarray, named: np.ndarray, epsilon: float, rival: tuple[int, int] | None = None,
                  P: np.ndarray | None = None, diag: np.ndarray | None = None) -> int | None:
        """How many other arms are not ruled out: 0 when, for every theta in C_t, each arm of
        ``named`` is within ``epsilon`` of every other arm's mean (the stopping rule fires).

        ``Z`` holds all arms' features.  ``rival`` = (named arm, other arm) is tested first: if it
        stands, None is returned at once (not ruled out; the others not counted).  Then the pairs
        the outer bound cannot rule out get an exact test, the likeliest first; after the first
        that stands, the remaining candidates are counted as open without solving (so the count is
        an upper bound, exact at 0). A set without a minimiser (module docstring) takes the smallest
        margin and every other arm as a candidate, scored at theta~ and H~; the same contract.
        The outer bound needs ||x_j - x_i||_{H^-1} for every arm: exact
        (O(K d^2)) up to EXACT_NORMS_MAX_K arms, above from ``P`` = M^-1 of the same outcomes and
        ``diag`` = diag(Z P Z^T) (O(K d): H >= c M with c the smallest weight mu' of a pulled arm).

        The box bound (``_box_bound``: 2 d range ends, each a bisection of exact tests, then O(d^2)
        per candidate) is computed only once the likeliest candidate is ruled out by its exact test.
        While that candidate stands the answer is not stopping whatever the box removes: the box is
        an outer bound of C_t, so it never removes an arm whose exact test stands, and the likeliest
        arm of the pruned set is then that same candidate, tested first with the same result. The
        decision (0 or not) is the one with the box computed every time; only the count, an upper
        bound either way, is then the number of candidates left by the outer radius (larger). (The
        one exception, an exact test that fails to converge on an arm the box removes, can only
        keep the answer open, that is delay a stop: never a wrong stop.) This keeps the box's cost,
        about 20 d exact solves and an O(K d^2) pass at large K, out of every test that cannot stop.
        """
        if self.empty:
            return 0
        named = np.asarray(named).ravel()
        is_named = np.zeros(Z.shape[0], dtype=bool)
        is_named[named] = True
        r_quad = math.sqrt(2.0 * (self.level - self.f_min)) if self.bounded else self._r_quad
        is_open = np.zeros(Z.shape[0], dtype=bool)
        n_open = 0
        b0 = float(logit((1.0 - epsilon) / 2.0)) if epsilon < 1.0 else -math.inf  # where the margin is smallest
        for i in named:
            zi = Z[int(i)]
            centre = float(zi @ self.theta)
            # use the end of the range of x_i^T theta nearest b0
            if n_open or not self.bounded:  # not stopping, or no range: the smallest margin, valid for any b
                b = b0
            elif b0 < centre:
                b = max(b0, self._range_end(zi, lower=True))
            else:
                b = min(b0, self._range_end(zi, lower=False))
            g = epsilon_margin(b, epsilon)
            if math.isinf(g):
                continue
            if rival is not None and rival[0] == i and not self._rules_out_pair(zi, Z[rival[1]], g, epsilon):
                return None
            alive, score = [], []
            for lo, Zb, sd2, _ in self._norm_blocks(Z, int(i), P, diag):
                sd = np.sqrt(np.maximum(sd2, 0.0))
                gap_hat = Zb @ self.theta - centre
                near = gap_hat + self.rho * sd > g if self.bounded else True  # no outer radius: every arm
                keep = np.flatnonzero(near & ~is_named[lo:lo + Zb.shape[0]])
                alive.append(keep + lo)
                score.append(gap_hat[keep] + r_quad * sd[keep])
            alive_all, score_all = np.concatenate(alive), np.concatenate(score)
            first, first_out = -1, False  # the likeliest candidate and its exact test, if done
            if self.bounded and not n_open and alive_all.size > BOX_MIN_ALIVE:  # many left: the box rules out more
                # ... unless the likeliest candidate stands, which the box cannot change (see the docstring)
                first = int(alive_all[largest_first(score_all, 1)[0]])
                first_out = self._rules_out_pair(zi, Z[first], g, epsilon)
                if first_out:
                    V = Z[alive_all] - zi
                    keep = V @ self.theta + self._box_bound(V) > g
                    alive_all, score_all = alive_all[keep], score_all[keep]
            # exact tests, likeliest first, until one stands (at most MAX_EXACT_TESTS: the round stays
            # O(K d)); from there on every candidate counts as open, without a test
            skip = np.zeros(alive_all.size, dtype=bool)  # ruled out by an exact test
            if not n_open:
                for pos in largest_first(score_all, MAX_EXACT_TESTS):
                    j = int(alive_all[pos])
                    if not (first_out if j == first else self._rules_out_pair(zi, Z[j], g, epsilon)):
                        break
                    skip[pos] = True
            counted = alive_all[~skip]
            n_open += int(np.count_nonzero(~is_open[counted]))
            is_open[counted] = True
        return n_open

    def _norm_blocks(self, Z: np.ndarray | FeatureSource, i: int, P: np.ndarray | None, diag: np.ndarray | None):
        """For the blocks of arms j of the feature source's passes (features.py): (first index, Z block,
        ||z_j - z_i||^2_{H^-1}, ||z_j||^2_{H^-1}), H the Hessian of L_t at its minimiser: exact (O(K d^2))
        up to EXACT_NORMS_MAX_K arms, above upper bounds from ``P`` = M^-1 and ``diag`` = diag(Z P Z^T)
        of the same outcomes (O(K d): H >= c M with c the smallest weight mu' of a pulled arm)."""
        source = FeatureSource.of(Z)
        Z = source.X
        zi = Z[i]
        if source.K <= EXACT_NORMS_MAX_K or P is None or diag is None:
            Hinv_zi = cholesky_solve(self.chol, zi)
            zz = float(zi @ Hinv_zi)
            for lo, hi in source.bounds():  # blocks: O(block d) memory at any K
                Zb = Z[lo:hi]
                own = np.einsum("ij,ji->i", Zb, cholesky_solve(self.chol, Zb.T))  # ||z_j||^2_{H^-1}
                yield lo, Zb, own - 2.0 * (Zb @ Hinv_zi) + zz, own
            return
        eta_p = self.Zp @ self.theta
        c_min = float((expit(eta_p) * expit(-eta_p)).min())
        cross = source.gram_row(np.asarray(P), zi)
        for lo, hi in source.bounds():
            q = diag[lo:hi]
            yield lo, Z[lo:hi], (q - 2.0 * cross[lo:hi] + diag[i]) / c_min, q / c_min

    def gap_bounds(self, Z: np.ndarray, i: int, m: int = 1, P: np.ndarray | None = None,
                   diag: np.ndarray | None = None, n_exact: int = MAX_CERT_TESTS) -> np.ndarray:
        """U[j] >= sup over C_t of mu(z_j^T theta) - mu(z_i^T theta) for every arm j (-inf at j = i):
        the pair bounds of the anytime certificate (certainty/certificate.py, eq. (1)).

        With v = z_i^T theta in its range [v_lo, v_hi] (exact range ends), the gap
        g = (z_j - z_i)^T theta at most G_j and w = z_j^T theta at most W_j:
        sup mu(w) - mu(v) <= max over v in [v_lo, v_hi] of mu(min(v + G_j, W_j)) - mu(v)
        (``_pair_gap_bound``, closed form). G_j and W_j come from the outer radius of C_t for every
        arm at once (O(K d^2), O(K d) above EXACT_NORMS_MAX_K arms with ``P``, ``diag``); then the
        bounds at the top (the m largest, which decide eq. (1)) get the exact range end of
        (z_j - z_i)^T theta, until the m largest are exact or ``n_exact`` arms were refined.
        A set without a minimiser (separable outcomes): every bound starts at 1 (means in [0, 1]) and,
        when at most ``n_exact`` arms decide eq. (1) (K - m), each gets the pair test's bisection
        (``_pair_bound``), the likeliest violator first, from the m-th largest bound found so far up
        (below it a bound does not change eq. (1)); otherwise every bound stays 1.
        """
        K = Z.shape[0]
        if self.empty:  # empty: nothing is possible (probability <= delta)
            U = np.zeros(K)
            U[i] = -np.inf
            return U
        if not self.bounded:
            return self._gap_bounds_unbounded(Z, i, m, n_exact)
        zi = Z[i]
        v_lo = self._range_end(zi, lower=True, steps=_CERT_STEPS)
        v_hi = self._range_end(zi, lower=False, steps=_CERT_STEPS)
        G, W = np.empty(K), np.empty(K)
        centre = float(zi @ self.theta)
        for lo, Zb, sd2, own in self._norm_blocks(Z, i, P, diag):
            eta = Zb @ self.theta
            G[lo:lo + Zb.shape[0]] = eta - centre + self.rho * np.sqrt(np.maximum(sd2, 0.0))
            W[lo:lo + Zb.shape[0]] = eta + self.rho * np.sqrt(np.maximum(own, 0.0))
        U = _pair_gap_bound(v_lo, v_hi, G, W)
        U[i] = -np.inf
        exact = np.zeros(K, dtype=bool)
        exact[i] = True
        n_done = 0
        while n_done < n_exact:
            top = np.argpartition(-U, m - 1)[:m]
            todo = top[~exact[top]][: n_exact - n_done]
            if not todo.size:
                break
            for j in todo:  # at most m arms per pass, n_exact in all
                g = min(G[j], self._range_end(Z[j] - zi, lower=False, steps=_CERT_STEPS))
                U[j] = _pair_gap_bound(v_lo, v_hi, np.array([g]), W[j:j + 1])[0]
                exact[j] = True
            n_done += todo.size
        # then the m largest by the pair test itself (tangent planes of the alternative): bisection on
        # epsilon, each step a sufficient test, so U[j] stays an upper bound
        tight = np.zeros(K, dtype=bool)
        tight[i] = True
        for _ in range(n_exact):
            top = np.argpartition(-U, m - 1)[:m]
            todo = top[~tight[top]]
            if not todo.size:
                break
            j = int(todo[0])
            U[j] = self._pair_bound(zi, Z[j], v_lo, v_hi, float(U[j]))
            tight[j] = True
        return U

    def _gap_bounds_unbounded(self, Z: np.ndarray, i: int, m: int, n_exact: int) -> np.ndarray:
        """``gap_bounds`` for a set without a minimiser (see there)."""
        K = Z.shape[0]
        U = np.ones(K)
        U[i] = -np.inf
        if K - m > n_exact:
            return U
        zi = Z[i]
        score = Z @ self.theta - float(zi @ self.theta)
        score[i] = -np.inf
        found: list[float] = []
        for j in np.argsort(-score, kind="stable")[:K - 1]:
            floor = sorted(found)[-m] if len(found) >= m else 0.0
            U[j] = self._pair_bound(zi, Z[j], -math.inf, math.inf, 1.0, floor)
            found.append(float(U[j]))
        return U

    def _pair_bound(self, zi: np.ndarray, zj: np.ndarray, v_lo: float, v_hi: float, hi: float,
                    floor: float = 0.0) -> float:
        """The smallest epsilon in [floor, hi] (to _CERT_STEPS bisections) for which ``_rules_out_pair``
        shows no theta of C_t with mu(z_j^T theta) - mu(z_i^T theta) > epsilon (z_i^T theta in [v_lo, v_hi]);
        ``hi`` itself when no epsilon below it is shown (hi = 1 is then the trivial bound)."""
        if floor > 0.0:  # below ``floor`` a bound matters no more: try it first
            if floor >= hi:
                return hi
            g = epsilon_margin(min(max(float(logit((1.0 - floor) / 2.0)), v_lo), v_hi), floor)
            if math.isinf(g) or self._rules_out_pair(zi, zj, g, floor):
                return floor
        elif not 0.0 < hi < 1.0 and not (hi == 1.0 and not self.bounded):
            return hi
        lo = floor
        for _ in range(_CERT_STEPS):
            eps = 0.5 * (lo + hi)
            b0 = float(logit((1.0 - eps) / 2.0))  # where the margin is smallest
            g = epsilon_margin(min(max(b0, v_lo), v_hi), eps)
            if math.isinf(g) or self._rules_out_pair(zi, zj, g, eps):
                hi = eps
            else:
                lo = eps
        return hi

    def _box_bound(self, V: np.ndarray) -> np.ndarray:
        """An upper bound on max over C_t of v^T (theta - theta_m) for each row v of V, O(d) each.

        C_t - theta_m lies in the box -s_k^- <= b_k^T D <= s_k^+ along the eigenvectors b_k of H,
        whose 2 d sides are safe range ends (exact tests, computed once per set); so
        v^T D <= sum_k max(c_k s_k^+, -c_k s_k^-) with c = B^T v.  Unlike the outer radius it does
        not grow with the largest ||x_a||_{H^-1}, which is large when some tested arm has a small
        slope mu'.
        """
        if self._box is None:
            B = np.linalg.eigh(cholesky_solve(self.chol, np.eye(self.theta.size)))[1]
            centre = B.T @ self.theta
            up = np.array([self._range_end(b, lower=False) for b in B.T]) - centre
            down = centre - np.array([self._range_end(b, lower=True) for b in B.T])
            self._box = (B, up, down)
        B, up, down = self._box
        C = V @ B
        return np.where(C > 0, C * up, -C * down).sum(axis=1)

    def _rules_out(self, v: np.ndarray, g: float) -> bool:
        """No theta of C_t has v^T theta >= g (exact: Newton on the hyperplane)."""
        return self._plane_test(v, g)[0]

    def _plane_test(self, v: np.ndarray, g: float) -> tuple[bool, np.ndarray]:
        """``_rules_out`` and, when False, a point of C_t on or beyond the plane v^T theta = g."""
        if v @ self.theta >= g:
            return False, self.theta
        if not v.any():  # two arms with identical features: v^T theta = 0 < g everywhere
            return True, self.theta
        start = _onto_plane(self.theta, v, cholesky_solve(self.chol, v), g)
        return _plane_search(self.Zp, self.n, self.s, v, start, self.level, 0.0 if self.bounded else UNBOUNDED_SLACK)

    def _rules_out_pair(self, zi: np.ndarray, zj: np.ndarray, g: float, epsilon: float) -> bool:
        """No theta of C_t has mu(z_j^T theta) - mu(z_i^T theta) > epsilon.

        First the plane (z_j - z_i)^T theta = g, g a margin valid over the range of z_i^T theta
        (``open_arms``). If C_t reaches beyond it, tangent planes of the alternative instead:
        A = {theta : z_i^T theta < logit(1 - epsilon), z_j^T theta > h(z_i^T theta)} with h convex
        (``epsilon_curve``), so for any a0 < logit(1 - epsilon) the whole of A lies beyond the plane
        z_j^T theta - h'(a0) z_i^T theta = h(a0) - h'(a0) a0; if C_t does not reach beyond it, C_t
        misses A (exact for each plane; the planes are only sufficient, so a False is "not shown").
        Each next a0 is z_i^T p at the point p of C_t found beyond the last plane (a cutting-plane
        search for the separating tangent); a p inside A ends the search (the rival stands).
        A set without a minimiser may be unbounded along z_j (or against z_i), where every tangent
        plane is crossed: it first tries A's asymptotes, z_i^T theta = logit(1 - epsilon) (A has
        mu_i < 1 - epsilon) and z_j^T theta = logit(epsilon) (A has mu_j > epsilon), each an exact plane test.
        """
        ruled, p = self._plane_test(zj - zi, g)
        if ruled or epsilon <= 0.0:  # epsilon = 0: h(a) = a, the first plane is A's own boundary
            return ruled
        a_max = float(logit(1.0 - epsilon)) if epsilon < 1.0 else math.inf
        if not self.bounded and epsilon < 1.0 and (self._rules_out(-zi, -a_max)
                                                   or self._rules_out(zj, float(logit(epsilon)))):
            return True
        touch = float(logit((1.0 - epsilon) / 2.0))  # where the first plane's slope, 1, is h's
        for _ in range(TANGENT_STEPS):
            a, b = float(zi @ p), float(zj @ p)
            if a < a_max:
                h, slope = epsilon_curve(a, epsilon)
                if b > h:
                    return False  # p lies in C_t and in A: the rival stands
                touch = a
            else:  # mu_i >= 1 - epsilon at p, so p is not in A: the separating tangent, if any, touches
                touch += 0.5 * (a_max - touch)  # h to the right of the last one, below a_max
            h, slope = epsilon_curve(touch, epsilon)
            ruled, p = self._plane_test(zj - slope * zi, h - slope * touch)
            if ruled:
                return True
        return False

"""[KW] GLGapE: gap-based exploration for best-arm identification in logistic bandits.

The policy pulls E = min(K, 3 d') distinct random arms, then random arms until the design
matrix M = sum_l x_l x_l^T has full rank d' (features are projected onto their span first when
rank(X) < d).  It then calibrates the width scale and loops:

    theta  <- penalised logistic MLE, warm-started
    i      <- argmax_a mu(x_a^T theta)
    U(j)   <- mu_j - mu_i + scale(t) * max_{c, c' in [c_mu, k_mu]} ||c x_i - c' x_j||_{M^-1}
    j      <- argmax_{j != i} U(j); stop and return i when U(j) <= epsilon (the width calibrations)
              or when the likelihood-ratio test rules out every j (the default)
    pull the arm chosen by the L1 ratio rule (or the greedy rule) for y = c1 x_i - c2 x_j

M^{-1} has no ridge (as in the paper): it is built from the counts and inverted once by Cholesky
after the initial phase, then kept up to date by Sherman-Morrison with diag(X M^-1 X^T), and
rebuilt exactly every ``refresh_every`` pulls (bounds round-off drift).  A round costs O(Kd + d^2) for the widths,
O(K_+ d^2 + d^3) per Newton iteration, and one LP per new (i, j, corner) key.

Calibrations (formulas and derivation in glgape_width.py and lr_set.py; measured error rates and
costs in docs/error_rates.md):

* "likelihood-ratio" (default): error at most delta with no assumption beyond the logistic model
  (no c_mu, no S).  The policy stops when the anytime-valid likelihood-ratio confidence set
  {theta : L_t(theta) <= P_t + log(1/delta)} (P_t: the loss of the predictions made before each
  outcome, lr_set.RunningPredictor's, its MAP points refitted after every 1 % more tests; lr_set.py)
  puts arm i within epsilon of every other arm for every theta in it.  The test
  runs after every 1 % more tests (at least d; so a run stops at most that many tests late), at
  O(d^2 + K_+ d) when a cheap witness shows that the sampled rival still stands, else with exact
  Newton tests on the pulled arms' data, and one O(K d) pass (O(K d^2) up to 20 000 arms) only
  when the sampled rival is ruled out, followed by at most 256 exact tests (arms beyond count as
  not ruled out, which can only delay the stop).  The widths only choose the tests (scaled as
  "self-normalized"; a scale from the set's own radius was tried and needed as many tests).  No
  error in 500 runs on any of seven [KW] instances at d = 2, 5 and 10, with 1.3 to 36 times fewer
  tests than "self-normalized" at d = 2 and 5 and about 160 times fewer at d = 10.
* "self-normalized": error at most delta GIVEN a valid lower bound c_mu on mu' and
  upper bound S on ||theta*||.  scale(t) = (1/2 sqrt(2 log(1/delta) + d log(1 + t L^2 c_mu /
  (d lambda))) + S sqrt(lambda c_mu)) / c_mu, from the self-normalised bound on the MLE's score; a
  larger delta narrows every width.  By default c_mu and S are plug-in estimates, re-estimated
  whenever the sample count doubles; they are estimates, not bounds (at d = 10 they were on the
  wrong side in about a third of the re-estimations, benchmarks/glgape_plugin_check.py), so with
  them the error rate is what docs/error_rates.md measures: no error in 500 runs per cell on five
  instances at d = 2 and 5, at 9 to 270 times the tests of the paper's calibration; at d = 10 a run
  takes a few hundred thousand tests.  The guarantee itself needs c_mu and S given as numbers
  known to bound the truth (the paper's assumption).
* "reinterpreted" (the paper's experiments, [KW] eq. 34 read as "largest initial width 1"):
  NO GUARANTEE.  It divides delta out, so a larger delta makes it test more, and it errs in
  7 % and 12 % of 500 runs on two of six [KW] instances at delta = 0.05.
* "literal34" (eq. 34 as printed: it stops at tau = E, kept to document the pitfall).
* "theory" (alpha = 2 kappa R / c_mu with eq. 6's log term; valid but very conservative).
"""

from __future__ import annotations

from dataclasses import astuple

import numpy as np
from scipy.special import expit

from screenbai.bandits.core.params import (
    DELTA,
    HIT_RATE_EPSILON,
    LAMBDA_REG,
    NONNEGATIVE,
    POSITIVE,
    POSITIVE_INT,
    REFRESH_EVERY,
    SIGMA,
    TEST_COUNT,
    AnyOf,
    Options,
    like,
    param,
    run_state,
)
from screenbai.bandits.core.policy import NO_ARMS, Policy
from screenbai.bandits.core.registry import register
from screenbai.bandits.logistic.glgape_width import (
    CALIBRATIONS,
    EXACT_WIDTH_MAX_K,
    SCALES,
    WidthRule,
    calibrate,
    corner_widths,
    corners,
    log_root,
    max_corner_sq,
    max_pair_width,
)
from screenbai.bandits.numerics.estimators import PlateDesign, RidgeState
from screenbai.bandits.numerics.glm import SeparableDataError, c_mu_oracle, c_mu_plugin, logistic_into, logistic_mle
from screenbai.bandits.numerics.linalg import project_if_deficient
from screenbai.bandits.numerics.lr_set import RunningPredictor
from screenbai.bandits.numerics.rules import L1Design, greedy_arm
from screenbai.bandits.numerics.ties import BlockArgmax, swap_to_twin
from screenbai.bandits.rules.likelihood import LikelihoodRatioTest

#: "likelihood-ratio": the running predictor's MAP points are refitted after every 1 % more tests (at
#: least one; lr_set.RunningPredictor's refit schedule: the set stays valid, the predictions are only staler)
PREDICTOR_REFIT_GROWTH = 0.01
RATIO_MAX_K = 5000  # selection "auto": the L1 ratio rule up to this K, the greedy rule above
RULES = ("ratio", "greedy")

__all__ = ["EXACT_WIDTH_MAX_K", "GLGapE", "corner_widths", "corners", "log_root", "max_corner_sq", "max_pair_width"]


@register("glgape")
class GLGapE(Policy):
    """[KW] GLGapE: (epsilon, delta)-best-arm identification in a logistic bandit.

    Parameters
    ----------
    epsilon : tolerance of the answer (> 0; 0 only together with an explicit ``max_samples``).
    delta : confidence level in (0, 1).
    E : size of the initial phase (distinct random arms); default min(K, 3 d').
    c_mu : lower bound on mu' over the arms: a number in (0, k_mu], "oracle" (resolved from the
        true instance by ``policy_for_instance``: min_a mu'(x_a^T theta*)), or "estimate" (the
        plug-in min_a mu'(|x_a^T theta_hat| + gamma ||x_a||_{M^-1}) computed once at the end of
        the initial phase; re-estimated at every doubling of the sample count under "self-normalized"
        and "likelihood-ratio", where it only shapes the widths that choose the tests).
    k_mu : Lipschitz constant of mu (1/4 for the logistic link).
    calibration : "likelihood-ratio" (default, error <= delta, no assumption on c_mu or S) |
        "self-normalized" (error <= delta given valid c_mu and S) | "reinterpreted" (the paper's,
        no guarantee) | "literal34" | "theory" (see the module docstring).
    S : bound on ||theta*|| used by the "self-normalized" widths: a number, "oracle" or "estimate" (plug-in).
    selection : "ratio" (L1-LP ratio rule, [KW] Alg. 3, LPs over all K arms cached by (i, j, corner)),
        "greedy", or "auto" (ratio up to K = 5000 arms, greedy above, where an LP over K columns per
        new key would dominate the round).
    lambda_reg : ridge penalty of the logistic MLE (not specified by the paper; keeps the MLE finite under separation).
    sigma : reward bound (1 for Bernoulli), only used by "literal34"/"theory".
    gamma : safety factor of the c_mu plug-in estimate.
    refresh_every : rebuild M^-1 exactly from the counts after this many rank-one updates.
    mle_tol : Newton-decrement tolerance of the per-round warm-started MLE (twice the remaining
        log-likelihood gap; the initial fit uses 1e-12).  1e-8 is statistically negligible and
        saves about one Newton iteration per round.
    """

    name = "glgape"
    binary_rewards = True
    epsilon: float = like(HIT_RATE_EPSILON, default=0.1,
                          help="tolerance on the hit rates (0 only with an explicit max_samples)")
    delta: float = DELTA
    E: int | None = param(None, POSITIVE_INT, "size of the initial phase (None: min(K, 3 d'))", none=True)
    #: a number or "estimate" (the default); as an attribute (saved with the state), None until
    #: estimated, then the estimate
    c_mu: float | None = param(
        "estimate", AnyOf((POSITIVE, Options(("estimate",)))),
        "lower bound on mu' over the arms (the guarantee assumes one; 'estimate' is a plug-in, not a bound)",
        oracle=True, state=True,
    )
    k_mu: float = param(0.25, POSITIVE, "Lipschitz constant of the link")
    calibration: str = param(
        "likelihood-ratio", Options(CALIBRATIONS),
        "confidence set: 'likelihood-ratio' (error <= delta, no assumption on c_mu or S), 'self-normalized' "
        "(error <= delta given valid c_mu and S; the default plug-ins are estimates), 'theory' (valid, very "
        "conservative), the paper's 'reinterpreted' and 'literal34' (no guarantee)",
        no_guarantee=("reinterpreted", "literal34"),
    )
    selection: str = param("auto", Options(("auto",) + RULES + ("optimized",)),
                           "arm-selection rule: L1 ratio rule, greedy, or auto (ratio up to K = 5000, greedy above)")
    lambda_reg: float = like(LAMBDA_REG, constraint=NONNEGATIVE)
    sigma: float = like(SIGMA, help="reward bound (1 for Bernoulli), used by 'literal34' and 'theory'", oracle=False)
    #: a number or "estimate" (the default); as an attribute, None while estimated
    S: float | None = param(
        "estimate", AnyOf((NONNEGATIVE, Options(("estimate",)))),
        "bound on ||theta*|| ('self-normalized' only); 'estimate': plug-in ||theta_hat|| + gamma sqrt(tr M^-1)",
        oracle=True,
    )
    gamma: float = param(1.0, NONNEGATIVE, "safety factor of the c_mu and S plug-in estimates")
    refresh_every: int = like(REFRESH_EVERY, default=1000)
    mle_tol: float = param(1e-8, POSITIVE, "Newton-decrement tolerance of the per-round MLE")
    #: None: 10^6 (an explicit cap is what allows epsilon = 0)
    max_samples: int = param(None, TEST_COUNT, "safety cap on the number of pulls (None: 10^6)", none=True)
    renamed = {"rule": "selection", "R": "sigma"}

    # the run's state
    _phase: str = run_state()  # "start", then "adaptive"
    _best: int | None = run_state()
    theta: np.ndarray = run_state()
    state: RidgeState = run_state()  # M^-1 with diag(Z M^-1 Z^T)
    design: L1Design | None = run_state()  # the ratio rule's LP cache
    _s_init: int = run_state()
    _scale_fields: tuple = run_state()  # (kind, values) of the width scale, plain data
    _generation: int = run_state()
    _next_calibration: float = run_state()
    _checked_at: int = run_state()  # n_samples when the stopping rule was last evaluated
    _eta: np.ndarray | None = run_state()  # Z theta when computed with the last update (large K)
    _mle_iters: int = run_state()
    _mle_rounds: int = run_state()
    _mle_over10: int = run_state()
    _mle_max: int = run_state()
    _mle_not_converged: int = run_state()
    _sep_warnings: int = run_state()
    #: "likelihood-ratio": the predictions made before each outcome, and their loss P_t (the set's
    #: level, read by its stopping rule, rules/likelihood.py)
    _predictor: RunningPredictor = run_state()  # used by that calibration only (the state's shape is fixed)

    def _setup(self, features, p) -> None:
        epsilon, max_samples, E, c_mu, calibration = p.epsilon, p.max_samples, p.E, p.c_mu, p.calibration
        rule = "ratio" if p.selection == "optimized" else p.selection
        if rule == "auto":
            rule = "ratio" if len(features) <= RATIO_MAX_K else "greedy"
        if epsilon == 0 and max_samples is None:
            raise ValueError(
                f"epsilon must be > 0 for GLGapE; got {epsilon}. With epsilon <= 0 and no max_samples cap "
                "the run may never stop (two arms with equal means can never be told apart); "
                "pass epsilon > 0, or epsilon = 0 together with max_samples"
            )
        super()._setup(features, p)
        self.epsilon = epsilon
        self.delta = p.delta
        self.calibration, self.rule = calibration, rule
        self.k_mu = p.k_mu
        if c_mu == "estimate":
            self.c_mu = None
        else:
            if not c_mu <= self.k_mu:
                raise ValueError(f"c_mu must lie in (0, k_mu = {self.k_mu}]; got {c_mu}")
            self.c_mu = c_mu
        self.c_mu_source = "estimate" if self.c_mu is None else "given"
        self.lambda_reg = p.lambda_reg
        self.R, self.gamma = p.sigma, p.gamma
        self.S = None if p.S == "estimate" else p.S
        if calibration in ("self-normalized", "likelihood-ratio") and not self.lambda_reg > 0:
            raise ValueError(
                f"the self-normalized calibration needs a ridge penalty lambda_reg > 0; got {self.lambda_reg}"
            )
        self.mle_tol = p.mle_tol
        self.refresh_every = p.refresh_every

        self.Z, self.Q = project_if_deficient(self.X)
        self.d_eff = self.Z.shape[1]
        E_default = min(self.K, 3 * self.d_eff)
        self.E = E_default if E is None else int(E)
        if not 1 <= self.E <= self.K:
            raise ValueError(f"E (initial phase size, distinct arms) must satisfy 1 <= E <= K = {self.K}; got {E}")

        self._phase = "start"
        self._generation = 0
        self._best = None
        self.theta = np.zeros(self.d_eff)
        self._eta = None
        self._pulled: np.ndarray | None = None  # the arms with a test, sorted, when kept (large K)
        # M^-1 with diag(Z M^-1 Z^T): no ridge, as in the paper; inverted once the initial phase spans
        self.state = RidgeState(self.Z, lambda0=0.0, refresh_every=self.refresh_every)
        self.design = L1Design(self.Z) if rule == "ratio" else None
        self._mle_iters = 0
        self._mle_rounds = 0
        self._mle_over10 = 0
        self._mle_max = 0
        self._mle_not_converged = 0
        self._sep_warnings = 0
        self._s_init = 0  # both set at the end of the initial phase
        self._scale_fields = ()
        self._next_calibration = np.inf
        self._checked_at = -1  # n_samples when the stopping rule was last evaluated
        # "likelihood-ratio": the predictions made before each outcome, and their loss P_t
        self._predictor = RunningPredictor(self.d_eff, refit_growth=PREDICTOR_REFIT_GROWTH)
        # the stopping rule: the likelihood-ratio set (rules/likelihood.py) or the calibration's widths
        self.stopping_rule = self._stopping_rule(p).attach(self)
        self._plate = PlateDesign()
        self.diagnostics.update(E=self.E, d_eff=self.d_eff, calibration=calibration, rule=rule)
        if calibration == "likelihood-ratio":  # the index: rivals not yet ruled out at the last full test
            self.diagnostics.update(stat=float(self.K - 1), stat_fires_at=0.0,
                                    stat_name="rivals not ruled out at the likelihood-ratio test's last full count:")

    def _stopping_rule(self, p) -> LikelihoodRatioTest | WidthRule:
        if p.calibration == "likelihood-ratio":
            return LikelihoodRatioTest(self.Z, self.epsilon, self.delta)
        return WidthRule(p.calibration, self.epsilon, self.delta)

    @property
    def likelihood(self) -> LikelihoodRatioTest:
        """The likelihood-ratio stopping rule (the default calibration only)."""
        rule = self.stopping_rule
        if not isinstance(rule, LikelihoodRatioTest):
            raise RuntimeError(f"the {self.calibration!r} calibration has no likelihood-ratio set")
        return rule

    @classmethod
    def settings_without_guarantee(cls, values: dict) -> list[str]:
        """The calibrations whose guarantee assumes c_mu (and S) known, run with plug-in estimates instead
        ('estimate', the default): their error can exceed delta (``params.without_guarantee``)."""
        calibration = values.get("calibration")
        needs = {"self-normalized": ("c_mu", "S"), "theory": ("c_mu",)}.get(str(calibration), ())
        estimated = [k for k in needs if values.get(k) == "estimate"]
        if not estimated:
            return []
        return [f"calibration={calibration!r} with {' and '.join(f'{k}=' + repr('estimate') for k in estimated)} "
                "(plug-in estimates, not the known bounds its guarantee assumes)"]

    # ------------------------------------------------------------------ oracle constants
    @classmethod
    def resolve_oracle(cls, key: str, instance):
        if key == "c_mu":
            if instance.theta is None or instance.link != "logistic":
                raise ValueError("c_mu='oracle' needs a logistic instance with a known theta")
            return c_mu_oracle(instance.features, instance.theta)
        if key == "S":
            if instance.theta is None:
                raise ValueError("S='oracle' needs an instance with a known theta")
            return float(np.linalg.norm(instance.theta))
        raise ValueError(f"glgape has no oracle value for parameter {key!r} (only c_mu and S)")

    # ------------------------------------------------------------------ ask/tell hooks
    def _select(self):
        if self._phase == "start":
            self._phase = "init"
            return self.rng.choice(self.K, size=self.E, replace=False)
        if self._phase == "init":
            M = (self.Z.T * self.n) @ self.Z
            # safeguard: the paper does not say what to do if M stays singular
            if np.linalg.matrix_rank(M) < self.d_eff:
                if self.n_in_flight:  # wait when the tests in flight will span
                    M = (self.Z.T * (self.n + self.in_flight)) @ self.Z
                    if np.linalg.matrix_rank(M) == self.d_eff:
                        return NO_ARMS
                return int(self.rng.integers(self.K))
            self._finish_initial_phase()
        return self._adaptive_round()

    def _update(self, arms, rewards):
        if self.calibration == "likelihood-ratio":  # predicted from the outcomes before these, then refitted
            self._predictor.observe(self.Z[arms], rewards, self.n_samples - arms.size)
            # refitted once the initial phase's E outcomes are in (the phase is one batch of fixed tests:
            # its predictions then do not depend on how its outcomes are told, one by one or together),
            # then after every PREDICTOR_REFIT_GROWTH more tests
            if self.n_samples >= (self.E or 0) and self._predictor.due(self.n_samples):
                pulled = np.flatnonzero(self.n) if self._pulled is None else np.union1d(self._pulled, arms)
                self._predictor.refit(self.Z[pulled], self.n[pulled], self.sums[pulled], self.n_samples)
        if self._phase == "adaptive" and arms.size == 1 and self.state.source.large:
            # large K: the fit needs only the counts, so fit first and let the rank-one update's
            # pass over Z also compute the next round's Z theta (one pass instead of two)
            a = int(arms[0])
            if self._pulled is None:
                self._pulled = np.flatnonzero(self.n)
            elif self.n[a] == 1:  # a new arm: the sorted pulled arms without a sweep over the K counts
                self._pulled = np.insert(self._pulled, np.searchsorted(self._pulled, a), a)
            self._fit(pulled=self._pulled)
            w = self.state._row_arm if self.state._row is not None else None  # probably the next best arm
            ahead = None if w is None else _RoundSweep(self, self.state, self.width_scale(self.n_samples + 1),
                                                       np.empty(self.K), True, w)
            self._eta = self.state.update(a, float(rewards[0]), also=self.theta, on_block=ahead)
            return
        self._pulled = None
        self.state.update_many(arms, rewards)
        if self._phase == "adaptive":
            self._fit()

    def _recommend(self, rng):
        if self._best is not None:
            return np.array([self._best])
        return super()._recommend(rng)

    def _stops_now(self) -> bool:
        """The stopping rule on recorded outcomes (once per new outcome, in the adaptive phase)."""
        if self._phase != "adaptive" or self._checked_at == self.n_samples:
            return False
        self._checked_at = self.n_samples
        if self._pair(self.state) is None:
            self._stop()
            return True
        return False

    def _after_load(self) -> None:
        self._pulled = None
        if self.c_mu is not None:
            self._corners = corners(self.c_mu, self.k_mu)
        if self._scale_fields:
            self.width_scale = SCALES[self._scale_fields[0]](*self._scale_fields[1])
        self._plate = PlateDesign()

    # ------------------------------------------------------------------ internals
    def _fit(self, decrement_tol: float | None = None, pulled: np.ndarray | None = None):
        """The warm-started penalised MLE; ``pulled`` = the arms with a test, if known."""
        tol = self.mle_tol if decrement_tol is None else decrement_tol
        Z, n, sums = self.Z, self.n, self.sums
        pulled = np.flatnonzero(n) if pulled is None else pulled
        if pulled.size < self.K // 2:  # the fit's own checks and masks then run over the pulled arms only
            Z, n, sums = Z[pulled], n[pulled], sums[pulled]
        try:
            fit = logistic_mle(Z, n, sums, self.lambda_reg, theta0=self.theta, decrement_tol=tol)
        except SeparableDataError as exc:
            raise SeparableDataError(f"GLGapE after {self.n_samples} samples: {exc}") from None
        self.theta, self._eta = fit.theta, None
        self._mle_rounds += 1
        self._mle_iters += fit.n_iter
        self._mle_max = max(self._mle_max, fit.n_iter)
        self._mle_over10 += fit.n_iter > 10
        self._mle_not_converged += not fit.converged
        self._sep_warnings += fit.separable_warning

    def _finish_initial_phase(self):
        self.state.refresh()
        self._s_init = int(self.n_samples)
        self._fit(decrement_tol=1e-12)
        self._phase = "adaptive"
        self._calibrate()
        self.diagnostics.update(s_init=self._s_init, c_mu_source=self.c_mu_source)

    def _calibrate(self):
        """Plug-in constants and the width scale.  The paper's calibrations freeze them at the end of
        the initial phase; "self-normalized" re-estimates the plug-in c_mu and S whenever the sample
        count has doubled (tighter as data accrue; O(log tau) times, O(K d + d^3) each)."""
        if self.c_mu_source == "estimate" and (self._generation == 0 or self._recalibrates):
            est = c_mu_plugin(self.Z, self.theta, np.sqrt(np.maximum(self.state.diag, 0.0)), self.gamma)
            self.c_mu = min(max(est, 1e-12), self.k_mu)
        S = self.S
        if S is None:  # plug-in bound on ||theta*||, inflated like c_mu's (only "self-normalized" uses it)
            S = float(np.linalg.norm(self.theta)) + self.gamma * float(np.sqrt(np.trace(self.state.P)))
        self._corners = corners(self._c_mu, self.k_mu)
        self.width_scale, calib = calibrate(
            self.calibration, Z=self.Z, P=self.state.P, q=self.state.diag, M=self.state.design_matrix(),
            s_init=self._s_init, delta=self.delta, c_mu=self._c_mu, k_mu=self.k_mu, R=self.R,
            lambda_reg=self.lambda_reg, S=S,
        )
        self._scale_fields = (type(self.width_scale).__name__, astuple(self.width_scale))
        self._generation += 1  # LP cache keys carry it: the corners move with c_mu
        self._next_calibration = 2 * self.n_samples if self._recalibrates else np.inf
        self.diagnostics.update(c_mu=self.c_mu, calibrations=self._generation, **calib)

    def _adaptive_round(self):
        if self.n_samples >= self._next_calibration:
            self._calibrate()
        if self.n_in_flight:
            return self._plate_round()
        self._checked_at = self.n_samples
        pair = self._pair(self.state)
        if pair is None:
            return self._stop()
        return self._choose(*pair, self.state, self.n)

    def _pair(self, state: RidgeState, check: bool = True) -> tuple[int, int, int] | None:
        """(i_t, j_t, corner) from the estimate and the widths of ``state``'s design, or None when
        the stopping rule fires (``check``) or there is a single arm."""
        scale = self.width_scale(self.n_samples + 1)
        ahead = state.ahead if state is self.state else None  # computed by the update's sweep (large K)
        if not (isinstance(ahead, _RoundSweep) and ahead.scale == scale and ahead.c_mu == self.c_mu):
            ahead = None
            mu = self.Z @ self.theta if self._eta is None else np.empty(self.K)
            means = _RoundSweep(self, state, scale, mu, self._eta, None).run()
        else:
            mu = ahead.mu
        i = (means if ahead is None else ahead).top.result(mu, self.rng)
        self._best = i
        if self.K == 1:
            return None
        if ahead is not None and ahead.i != i and state.is_twin(i, ahead.i, mu):
            ahead.best, ahead.i = swap_to_twin(ahead.U, ahead.i, i), i  # the same values against i
        gaps = ahead if ahead is not None and ahead.i == i else _RoundSweep(self, state, scale, mu, None, i).run()
        g, U = gaps.g, gaps.U
        j = gaps.best.result(U, self.rng)
        if check and self.calibration == "likelihood-ratio":
            if self.likelihood.certifies(np.array([i]), (i, j)):
                return None
        elif check:
            self.diagnostics["stat"] = float(U[j])  # the stopping statistic (fires at <= epsilon), as GIFA's
            if U[j] <= self.epsilon:
                return None
        k = int(corner_widths(g[i], state.diag[j], g[j], self._c_mu, self.k_mu)[1])
        return i, j, k

    @property
    def _c_mu(self) -> float:
        """c_mu, given or estimated at the end of the initial phase (every width needs it from then on)."""
        if self.c_mu is None:
            raise RuntimeError(f"{self.name}: c_mu is estimated at the end of the initial phase; it is not known yet")
        return self.c_mu

    @property
    def _recalibrates(self) -> bool:
        """The plug-in c_mu and S are re-estimated whenever the sample count doubles."""
        return self.calibration in ("self-normalized", "likelihood-ratio")

    # ------------------------------------------------------------------ the anytime certificate
    def _bounds_against(self, state: RidgeState, A: np.ndarray, mu: np.ndarray,
                        scale: float) -> tuple[np.ndarray, np.ndarray]:
        """B[k, j] = mu_j - mu_A[k] + scale nu_t(A[k], j) for every arm j (m x K), -inf at j = A[k]:
        the width calibrations' upper bounds on mu_j - mu_A[k] ([KW] eq. 9), and the rows of
        Z M^-1 Z^T of the arms of A they come from. O(m (K d + d^2))."""
        P, diag = state.P, state.diag
        G = (self.Z @ (P @ self.Z[A].T)).T  # rows of Z M^-1 Z^T for the arms of A: m x K
        rows = np.arange(len(A))
        nu2 = max_corner_sq(G[rows, A][:, None], diag[None, :], G, self._c_mu, self.k_mu)
        B = (mu[None, :] - mu[A][:, None]) + scale * np.sqrt(np.maximum(nu2, 0.0))
        B[rows, A] = -np.inf
        return B, G

    def _choose(self, i: int, j: int, k: int, state: RidgeState, counts: np.ndarray) -> int:
        """The selection rule for y = c1 x_i - c2 x_j: ratio (counts) or greedy (``state``'s design)."""
        c1, c2 = self._corners[k]
        y = c1 * self.Z[i] - c2 * self.Z[j]
        if self.design is not None:  # rule "ratio"
            return self.design.ratio_arm((i, j, k, self._generation), y, counts, self.rng)
        return greedy_arm(state, y, self.rng)

    def _plate_round(self):
        """One more well while tests are in flight: the stopping rule on recorded outcomes (once per
        new outcome), then the pair and the arm with a design that counts the tests in flight."""
        if self._stops_now():
            return None
        flight = self.in_flight
        view = self._plate.of(self.state, self.n_samples, flight)
        pair = self._pair(view, check=False)
        if pair is None:
            return self._stop()
        return self._choose(*pair, view, self.n + flight)

    def _max_corner(self, q_ii: float, q_jj: np.ndarray, q_ij: np.ndarray, fewer_ops: bool = False) -> np.ndarray:
        """Squared width max over the 4 corners for all j at once (the corner is found later for j_t only)."""
        return max_corner_sq(q_ii, q_jj, q_ij, self._c_mu, self.k_mu, fewer_ops)

    def _fit_summary(self) -> dict:
        return dict(
            tau=int(self.n_samples),
            n_lps=0 if self.design is None else self.design.n_solved,
            newton_iter_mean=self._mle_iters / max(self._mle_rounds, 1),
            newton_iter_max=self._mle_max,
            newton_rounds_over_10=self._mle_over10,
            lr_checks=self.likelihood.checks if self.calibration == "likelihood-ratio" else 0,
            newton_not_converged=self._mle_not_converged,
            separation_warnings=self._sep_warnings,
        )

    def _stop(self):
        self.diagnostics.update(self._fit_summary())
        return None

    def _diagnostics(self) -> dict:
        if "tau" in self.diagnostics:
            return dict(self.diagnostics)
        return {**self.diagnostics, **self._fit_summary()}  # capped run: the same summary, not stored


class _RoundSweep:
    """GLGapE's round over the arms, one block [s, e) at a time: the means mu = expit(Z theta) and
    their argmax (``eta``: Z theta given, True: arriving with each block, None: mu holds Z theta and
    becomes the means, in place), and for arm ``i`` (if not None) U(j) = mu_j - mu_i + scale(t) nu_t(i, j)
    and its argmax over j != i. Run by the round, or at large K by the rank-one update's sweep (the
    block of ``i``, the kept Gram row's arm, first), whose results the next round takes if ``i`` is
    still the best and the calibration has not moved."""

    def __init__(self, policy: GLGapE, state: RidgeState, scale: float, mu: np.ndarray, eta, i: int | None):
        self.policy, self.state, self.scale, self.c_mu = policy, state, scale, policy.c_mu
        self.mu, self.eta, self.i = mu, eta, i
        self.means = eta is not None or i is None
        self.top, self.best = BlockArgmax(), BlockArgmax()
        self.U = np.empty(policy.K if i is not None else 0)
        self.g = np.empty(0)  # row i of Z M^-1 Z^T, once the first block is seen

    def run(self) -> _RoundSweep:
        for s, e in self.state.source.bounds():
            self(s, e)
        return self

    def __call__(self, s: int, e: int, eta_now=None) -> None:
        large = self.state.source.large  # faster operations, other round-off
        if self.means:
            eta = eta_now if self.eta is True else self.eta
            mu_b = self.mu[s:e]
            (logistic_into if large else expit)(mu_b if eta is None else eta[s:e], out=mu_b)
            self.top.add(mu_b, s)
        i = self.i
        if i is None:
            return
        if not self.g.size:  # the first block holds i: its row entry and mean are final
            self.g = self.state.gram_row(i)
            self.q_ii, self.mu_i = self.g[i], self.mu[i]
        U_b = self.U[s:e]
        width = self.policy._max_corner(self.q_ii, self.state.diag[s:e], self.g[s:e], large)
        np.maximum(width, 0.0, out=width)
        np.sqrt(width, out=width)
        width *= self.scale
        np.subtract(self.mu[s:e], self.mu_i, out=U_b)
        U_b += width
        if s <= i < e:
            U_b[i - s] = -np.inf
        self.best.add(U_b, s)

"""Block Track-and-Stop for the logistic model, stopped by the likelihood-ratio confidence set.

Sampling: the blocks of ``linear.LinearTrackAndStop`` (a spanning first block of d tests, then
blocks fixed before their outcomes, built test by test to cover the directions x_i - x_j that
still need the most information), with the local Fisher information of the logistic model: a test
of arm k at the penalised MLE theta_hat brings mu'(x_k'theta_hat) x_k x_k', and the pair (i, j)
needs information in the direction mu'_i x_i - mu'_j x_j with margin mu_i - mu_j + epsilon (the
lower bound's local form, ``certainty.complexity``). At d <= PLUGIN_D a block is instead the plug-in
optimal allocation w*(theta_hat) of the exact Bernoulli-KL bound (``certainty.exact_logistic``, the lower
bound's w* at the estimate, no linearisation; the local form's where the pairs are too many) mixed with
1/(b + 1) of the spanning set (forced exploration) and rounded, at the largest block size: the counts then
follow the sum over blocks of n_b times the plug-in allocation, C-tracking's target (Garivier & Kaufmann
2016, Sec. 3.1, which mixes w*(theta_hat) with the uniform allocation likewise). The likelihood-ratio stop
collects exact Bernoulli evidence, so the exact w* is the allocation it rewards: near a mean of 1 the local
form's w* can need several times T* (docs/lower_bound.md, "Tracking the exact allocation").

Stopping and guarantee: the policy's stopping rule, ``rules.likelihood.WindowedLikelihoodRatio``, the
likelihood-ratio confidence set of ``lr_set`` (GLGapE's default calibration),

    C_t = {theta : L_t(theta) <= P_t + log(1/delta)},

L_t the negative log-likelihood of the outcomes so far and P_t the loss of the predictions made
before each outcome (``lr_set.RunningPredictor``: a Bayesian average over three Gaussian priors of
moderated Laplace predictives; each batch of outcomes told together is predicted from the outcomes
before it). exp(L_t(theta*) - P_t) is a non-negative martingale with mean 1 whatever the sampling
rule, so theta* stays in C_t at all times with probability >= 1 - delta (Ville's inequality;
Wasserman, Ramdas & Balakrishnan 2020; Emmenegger et al. 2023). The set is also restarted late, on
a grid of window starts fixed in advance and mixed with fixed weights (``lr_windows``): each
window's set drops the regret of the predictions before it, and every window's set holds theta* on
the same event of probability >= 1 - delta. The answer (the m largest fitted means; with m = 1 also
a few other arms whose fitted mean is within epsilon of the leader's, ``answer_candidates``) is returned
when, for every theta in one window's set, each arm of it is within epsilon of every other arm's
mean (``LikelihoodRatioSet.open_arms`` == 0): then it is epsilon-correct with probability
>= 1 - delta (on that event every certified arm is). Nothing else is assumed: outcomes 0/1 from the
logistic model on these features; no bound S on ||theta*||, no lower bound c_mu on mu'.

With epsilon > 0 the set gets (1 - WELLS_SHARE) delta and a compound's own wells the rest
(``rules.own_wells.LikelihoodOrOwnWells``): a compound whose own hit rate is shown to be at least
1 - epsilon is epsilon-good whatever the model (no hit rate exceeds 1), by a one-dimensional test with
no d log t term. ``_wells_block`` plans such wells for the leaders once they would need no more tests
than the run has made (on the CDK2 potency arms, best hit rate 0.99: about 100 wells instead of thousands
of tests for the set).

The certificate: the smallest epsilon for which a window's set certifies the current answer
(bisection on epsilon with the same test), or its own wells' lower bound, valid at any time for the
same reason.

What is not done here: a per-direction fixed-design bound for the logistic model (RAGE-GLM, Jun et
al. 2021) would remove the rest of the predictions' regret from the threshold; its conditions (a
burn-in depending on the unknown kappa) are not met by an algorithm that assumes no constant. Each
window's set still pays about (d - 1)/2 nats for fitting the nuisance directions (its minimum over
the alternative is a d-parameter fit, the predictions are not), so the stopping level stays above
log(1/delta) + (d - 1)/2 at any d. ``logistic_blocks.LikelihoodOrBlocks`` adds a per-direction
e-process over the blocks (each block's one-step estimate, its Taylor bias bounded over this set) at
half of delta; it is valid but does not pay at d = 5 or 10 (its bias bound inherits the set's width,
docs/lower_bound.md, "A per-direction logistic block rule"), so BLOCKS_MIN_D leaves it off.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from scipy.special import expit

from screenbai.bandits.certainty.exact_logistic import exact_characteristic_time
from screenbai.bandits.certainty.local_form import exact_pairs_affordable
from screenbai.bandits.core.params import HIT_RATE_EPSILON, LAMBDA_REG, like, pinned, run_state
from screenbai.bandits.core.registry import register
from screenbai.bandits.numerics.design import spread_order
from screenbai.bandits.numerics.glm import logistic_mle
from screenbai.bandits.numerics.linalg import pinv_psd
from screenbai.bandits.numerics.lr_set import forecast_level
from screenbai.bandits.rules.likelihood import WindowedLikelihoodRatio
from screenbai.bandits.rules.own_wells import LikelihoodOrOwnWells
from screenbai.bandits.tracking.linear import GROWTH, LinearTrackAndStop
from screenbai.bandits.tracking.logistic_blocks import LikelihoodOrBlocks

#: the greedy blocks (above PLUGIN_D) complete the information collected so far (False: each block repeats the
#: whole design; at d = 5, when greedy blocks were used there, completing saved: 639 tests against 836)
TRACK_CUMULATIVE = True
#: at this many dimensions or fewer each block is the plug-in optimal allocation w*(theta_hat) mixed with
#: 1/(b + 1) of the spanning set and rounded, at its largest size, instead of the greedy min-max block; w* is
#: the exact Bernoulli-KL bound's (``_allocation``). At d = 2 with the local form's w*: kw_synthetic seed 0,
#: 50 runs, median 462 tests against the greedy blocks' 608 (docs/lower_bound.md, "log-tas at small d"). At
#: d = 5 and 10 the local form's w* did not pay (681 against 675 at d = 5, seed 0), the exact one does: near a
#: mean of 1 the local form misjudges which tests inform the alternative (kw d = 5, seed 2: the local w* needs
#: 4.7 times the exact T*), and the exact w* halved the tests on kw d = 5 seed 2 and d = 10 seeds 0-1
#: (docs/lower_bound.md, "Tracking the exact allocation")
PLUGIN_D = 10
#: above PLUGIN_D dimensions log-tas plans a compound's own wells once they need at most this many times the tests
#: made so far (at or below, as many): there the likelihood-ratio set's level, about (d/2) log t nats, makes its
#: route long beside the wells' (d = 21, 30 paired runs: CDK2 potency arms, median 267 tests at 1, 208 at 2; EGFR,
#: median 3 186 at 1, 2 263 at 2, 17 % fewer tests in all); at d = 5 the set's route is often as short as the wells'
#: (kw_synthetic d = 5 seed 2, best hit rate 0.964, 30 runs: 12 % more tests at 2). docs/lower_bound.md, "Session 17"
WELLS_START_ABOVE_PLUGIN_D = 2.0
#: the exact allocation's solver for a block: at most this many cutting-plane steps and this relative gap
#: (certainty.exact_logistic; 20 steps bring T(w) within 4 % of T* on kw_synthetic d = 5 and 10, in 0.3-1 s)
EXACT_STEPS = 20
EXACT_TOL = 3e-2
#: above this many dimensions the likelihood-ratio set is also restarted late (lr_windows); at or below,
#: the full window alone, at weight 1 (with late windows it has weight lr_windows.FULL_WEIGHT). With the
#: exact allocation tracked, the late windows no longer pay at d = 5 (kw_synthetic, 50 runs each, the same
#: seeds, without them against with them: seed 0 592 tests against 645, seed 2 265 against 252;
#: docs/lower_bound.md, "Tracking the exact allocation")
LATE_D = 5
#: from this many dimensions on, the per-direction block evidence joins the likelihood-ratio set
#: (logistic_blocks.LikelihoodOrBlocks; None: never; docs/lower_bound.md)
BLOCKS_MIN_D: int | None = None
#: with epsilon > 0, the answer's own wells join the likelihood-ratio set (rules.own_wells; False: the set alone)
OWN_WELLS = True


#: the index status shows: rivals the likelihood-ratio test has not ruled out yet (fires at 0); an upper
#: bound (``LikelihoodRatioSet.open_arms`` stops counting at the first rival that stands), so it says so
RIVALS_NAME = (
    "rivals not yet ruled out by its likelihood-ratio test (counted up to the first one it cannot rule out, so the "
    "count falls only near the stop: watch the certified epsilon):"
)


@register(
    "log-tas",
    description="Block Track-and-Stop, logistic model: tracks the optimal allocation in blocks (the exact "
    "Bernoulli-KL one at d <= 10 with at most 200 pairs, the local form's otherwise), stopped by "
    "the likelihood-ratio confidence set; delta-correct (best arm, top-m, epsilon on the means) for 0/1 outcomes "
    "of a logistic model, with no bound S or c_mu.",
)
class LogisticTrackAndStop(LinearTrackAndStop):
    """Block Track-and-Stop (logistic model); see the module docstring.

    Parameters: m, delta, epsilon (on the means), growth (largest block as a fraction of the tests
    so far), lambda_reg (ridge penalty of the MLE that guides the design and the predictions; it
    does not enter the guarantee).
    """

    name = "log-tas"
    model = "logistic"
    binary_rewards = True
    epsilon: float = HIT_RATE_EPSILON
    sigma: float = pinned(0.5)
    #: the likelihood-ratio set is valid for any adapted order of tests: absorbed outcomes count in full
    absorbed_outcomes_count: ClassVar[bool] = True
    #: small blocks: each block's outcomes are predicted with the estimate from before it (P_t)
    growth: float = like(GROWTH, default=0.1)
    lambda_reg: float = LAMBDA_REG
    min_block: ClassVar[float] = 0.05
    #: block 2 sized by the greedy design like every later block (lin-tas takes it whole)
    first_design_full: ClassVar[bool] = False

    #: the sampling rule is lin-tas's with the logistic model's information; its own stopping rule only
    foreign_stopping_rules: ClassVar[bool] = False

    # the run's state (the likelihood-ratio set, rules/likelihood.py, is the base's ``stopping_rule``)
    _theta_pred: np.ndarray = run_state()  # the estimate that predicts the next block's outcomes
    _n_closed: int = run_state()
    _plan: np.ndarray = run_state()  # the rest of the current block, handed out one test at a time

    def _setup(self, features, p) -> None:
        super()._setup(features, p)
        self.lambda_reg = p.lambda_reg
        self._theta_pred = np.zeros(self.d_eff)
        self._n_closed = 0
        self._plan = np.empty(0, dtype=np.int64)  # the rest of the current block, handed out one test at a time
        self._spanned = False  # whether the tested arms span R^d' (``_spans``; not state: rechecked after a load)
        self.diagnostics.pop("threshold", None)  # the set's level is P_t + log(1/delta), not a constant
        self.diagnostics.update(stat=float(self.K - self.m), stat_fires_at=0.0,
                                stat_name=RIVALS_NAME)

    def _stopping_rule(self, p) -> WindowedLikelihoodRatio | LikelihoodOrBlocks | LikelihoodOrOwnWells:
        """The likelihood-ratio set of the module docstring, restarted late above LATE_D dimensions; above
        BLOCKS_MIN_D dimensions at a share of delta, OR the per-direction block evidence at the rest
        (logistic_blocks.LikelihoodOrBlocks); else, with epsilon > 0, OR the answer's own wells
        (rules.own_wells.LikelihoodOrOwnWells)."""
        late = self.d_eff > LATE_D
        if BLOCKS_MIN_D is not None and self.d_eff >= BLOCKS_MIN_D:
            return LikelihoodOrBlocks(self.Z, self.m, self.epsilon, self.delta, p.growth, late)
        if OWN_WELLS and 0.0 < self.epsilon < 1.0:
            start = WELLS_START_ABOVE_PLUGIN_D if self.d_eff > PLUGIN_D else 1.0
            return LikelihoodOrOwnWells(self.Z, self.m, self.epsilon, self.delta, p.growth, late, wells_start=start)
        return WindowedLikelihoodRatio(self.Z, self.m, self.epsilon, self.delta, p.growth, late)

    @property
    def likelihood(self) -> WindowedLikelihoodRatio:
        """The likelihood-ratio set (rules/likelihood.py): the stopping rule, or its first part."""
        rule = self.stopping_rule
        if isinstance(rule, (LikelihoodOrBlocks, LikelihoodOrOwnWells)):
            return rule.lr
        assert isinstance(rule, WindowedLikelihoodRatio)
        return rule

    @property
    def theta_hat(self) -> np.ndarray:
        """The current estimate (the penalised MLE that designs the blocks and predicts the outcomes)."""
        return self._theta_pred

    @classmethod
    def resolve_oracle(cls, key: str, instance):
        raise ValueError(f"{cls.__name__} has no oracle value for parameter {key!r}")

    def _after_load(self) -> None:
        super()._after_load()
        self._spanned = False

    # ------------------------------------------------------------------ estimates
    def _spans(self, pulled: np.ndarray) -> bool:
        """Whether the features of the tested arms ``pulled`` (this policy's, or a superset) span R^d':
        their rank is computed (O(K_+ d^2)) only until they do; from then on it is known, as the tested
        arms only grow (the counts never decrease)."""
        if not self._spanned:
            self._spanned = pulled.size >= self.d_eff and int(np.linalg.matrix_rank(self.Z[pulled])) == self.d_eff
        return self._spanned

    def _estimate(self, counts: np.ndarray, sums: np.ndarray) -> np.ndarray | None:
        pulled = np.flatnonzero(counts)
        if not self._spans(pulled):
            return None
        fit = logistic_mle(self.Z[pulled], counts[pulled], sums[pulled], self.lambda_reg, theta0=self._theta_pred)
        return fit.theta

    def _design_features(self, theta: np.ndarray) -> np.ndarray:
        eta = self.Z @ theta
        slope = expit(eta) * expit(-eta)
        return self.Z * np.sqrt(slope)[:, None]

    def _greedy_design(self) -> bool:
        """The greedy min-max blocks above PLUGIN_D dimensions, the rounded plug-in allocation at or below."""
        return self.d_eff > PLUGIN_D

    def _allocation(self, theta: np.ndarray, answer: tuple[int, ...]):
        """w*(theta_hat) of the exact Bernoulli-KL bound (``certainty.exact_logistic``, its pair problems solved
        approximately, which only costs tests), where its pairs are few enough (``exact_pairs_affordable``); else the
        local form's."""
        if not exact_pairs_affordable(self.K, self.m):
            return super()._allocation(theta, answer)
        try:
            return exact_characteristic_time(self.Z, theta, epsilon=self.epsilon, m=self.m, answer=answer,
                                             tol=EXACT_TOL, max_iter=EXACT_STEPS, strict=False)
        except RuntimeError:  # no allocation evaluated (values not finite at an extreme estimate): the local form's
            return super()._allocation(theta, answer)

    def _forecast(self, theta: np.ndarray, w: np.ndarray) -> float:
        """At d <= PLUGIN_D no forecast: the plug-in blocks take their largest size (the stop is tested at
        every outcome, so a block's size only sets how often the design is renewed). Above it, where the
        plug-in path serves only problems too large for the greedy block, lin-tas's forecast as before."""
        if self.d_eff > PLUGIN_D:
            return super()._forecast(theta, w)
        return 1e18  # as lin-tas's unbounded forecast (math.ceil of it stays finite)

    def _information_before(self, Zd: np.ndarray, counts: np.ndarray) -> np.ndarray | None:
        """The Fisher information of the tests so far at theta_hat: the likelihood-ratio set pools every
        outcome, so a block completes the information collected (tracking the cumulative allocation,
        as Track-and-Stop's C-tracking) instead of repeating the whole design."""
        return (Zd.T * counts) @ Zd if TRACK_CUMULATIVE else None

    def _needs(self, theta: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Directions and the Fisher information each still needs, in the lower bound's local form
        (certainty.complexity): y = mu'_i x_i - mu'_j x_j (the constraint mu_j - mu_i > epsilon
        linearised at theta_hat), margin g = mu_i - mu_j + epsilon floored at its standard deviation,
        need 2 (log(1/delta) + (d/2) log(1 + t/d) + 3/2) / g^2 (the likelihood-ratio set's level
        grows with the regret of the running predictions, about (d/2) log t)."""
        eta = self.Z @ theta
        mu = expit(eta)
        slope = mu * (1.0 - mu)
        answer = self._leaders(theta, np.random.default_rng(0))
        outside = np.ones(self.K, dtype=bool)
        outside[answer] = False
        Zd = self._design_features(theta)
        P = pinv_psd((Zd.T * counts) @ Zd)[0]
        t = float(counts.sum())
        level = forecast_level(t, self.d_eff, self.delta) + 1.5
        Ys, cs = [], []
        for i in answer:
            i = int(i)
            Y = slope[i] * self.Z[i] - slope[outside, None] * self.Z[outside]
            sd = np.sqrt(np.maximum(np.einsum("ij,ij->i", Y @ P, Y), 0.0))
            margin = np.maximum(mu[i] - mu[outside] + self.epsilon, np.maximum(sd, 1e-12))
            Ys.append(Y)
            cs.append(2.0 * level / margin**2)
        return np.vstack(Ys), np.concatenate(cs)

    def _wells_block(self) -> np.ndarray | None:
        """A block of own wells (rules.own_wells) for m arms, or None for the usual block.

        An arm with a fitted mean above 1 - epsilon could be certified by its own wells with no model, in
        about (log(1/alpha) + log G) / KL(mu_hat, 1 - epsilon) tests of it (fewer once started). Among
        the leaders and the arms already started, the m needing the fewest get wells once their total
        is no more than the tests made so far (the likelihood-ratio set, not stopped by then, would need
        about as many again), or twice that above PLUGIN_D dimensions (``WELLS_START_ABOVE_PLUGIN_D``: there the
        set's route is long), in a block of at most the usual largest size and of no more wells than are
        still needed beyond those planned and not yet back (a plate asked for after them gets the usual
        blocks, not wells the stop would not wait for). If a fitted mean was too high, the wells' outcomes
        lower it and the usual blocks resume: this spends at most about as many tests as the run had made
        (twice as many above PLUGIN_D)."""
        rule = self.stopping_rule
        if not isinstance(rule, LikelihoodOrOwnWells) or not self.n_samples or self._answer is not None:
            return None
        leaders = self._leaders(self._theta_pred, np.random.default_rng(self._n_closed))
        arms = np.unique(np.concatenate([leaders, np.asarray(rule.wells.started, dtype=np.int64)]))
        mu = expit(self.Z[arms] @ self._theta_pred)
        need = np.array([rule.wells.needed(int(a), float(p)) for a, p in zip(arms, mu)])
        pick = np.argsort(need, kind="stable")[: self.m]
        arms, need = arms[pick], need[pick]
        if not np.isfinite(need).all() or need.sum() > rule.wells_start * self.n_samples:
            return None
        in_flight = np.zeros(arms.size)
        for blk in self._open:
            at = np.minimum(np.searchsorted(blk["arms"], arms), max(blk["arms"].size - 1, 0))
            inside = blk["arms"].size > 0 and blk["arms"][at] == arms
            in_flight = in_flight + np.where(inside, blk["planned"][at] - blk["got"][at], 0)
        need = np.maximum(need - in_flight, 0.0)
        if need.sum() < 1.0:  # every well still needed is planned already
            return None
        size = max(1, min(int(np.ceil(need.sum())), max(self.d_eff, int(np.ceil(self.growth * self.n_samples)))))
        counts = np.zeros(self.K, dtype=np.int64)
        counts[arms] = np.ceil(size * need / need.sum()).astype(np.int64)
        rule.wells.start(arms)  # before any of these outcomes: they all count
        self._open_block(counts)
        return spread_order(counts)

    def _select(self):
        """One test at a time from the current block's plan (a new block when it is spent), so that
        each outcome is predicted with the estimate of every outcome before it (a smaller P_t)."""
        if not self._plan.size:
            arms = self._wells_block()
            arms = super()._select() if arms is None else arms
            if arms is None:
                return None
            self._plan = np.asarray(arms, dtype=np.int64)
            if isinstance(self.stopping_rule, LikelihoodOrBlocks):  # the block's design is fixed now
                self.stopping_rule.block_opened(self._whole(self._open[-1], "planned"))
        arm, self._plan = int(self._plan[0]), self._plan[1:]
        return arm

    # ------------------------------------------------------------------ outcomes and the stopping rule
    def _update(self, arms: np.ndarray, rewards: np.ndarray) -> None:
        # the outcomes are predicted from the outcomes before them (lr_set's P_t), then the predictor refitted
        rule = self.stopping_rule
        assert isinstance(rule, (WindowedLikelihoodRatio, LikelihoodOrBlocks, LikelihoodOrOwnWells))
        if self._absorbing:
            rule.absorb(arms, rewards)
        else:
            rule.observe(arms, rewards)
        pulled = np.flatnonzero(self.n)
        predictor = self.likelihood.predictor
        same = np.flatnonzero(predictor.lams == self.lambda_reg)  # the design's own fit, already made
        if same.size and self._spans(pulled):
            theta = predictor.theta[same[0]].copy()
        else:
            theta = self._estimate(self.n.astype(float), self.sums)
        if theta is not None:
            self._theta_pred = theta
        super()._update(arms, rewards)
        if not self._finished and theta is not None:
            # the set is valid at every outcome: tested between block ends too (_check_stop's schedule)
            answer = self._check_stop()
            if answer is not None:
                self._answer = answer
                self._finish(True)

    def _feed_rule(self, arms: np.ndarray, rewards: np.ndarray) -> None:
        """Nothing: ``_update`` has told the likelihood-ratio set already (before the refit)."""

    def _check_stop(self) -> np.ndarray | None:
        """The likelihood-ratio test (on its schedule, ``WindowedLikelihoodRatio.check``) of the m largest
        fitted means."""
        rule = self.stopping_rule
        assert isinstance(rule, (WindowedLikelihoodRatio, LikelihoodOrBlocks, LikelihoodOrOwnWells))
        return rule.check(self._leaders(self._theta_pred, np.random.default_rng(self._n_closed)))

    def _close_block(self, counts: np.ndarray, sums: np.ndarray) -> None:
        self._n_closed += 1
        if isinstance(self.stopping_rule, LikelihoodOrBlocks):
            self.stopping_rule.block_closed(counts, sums)
        self.diagnostics["blocks"] = self._n_closed

    # ------------------------------------------------------------------ answers
    def _recommend(self, rng: np.random.Generator):
        if self._answer is not None:
            return self._answer.copy()
        if not self.n_samples or self._estimate(self.n.astype(float), self.sums) is None:
            return super(LinearTrackAndStop, self)._recommend(rng)
        return self._leaders(self._theta_pred, rng)

    def _diagnostics(self) -> dict:
        return dict(self.diagnostics, blocks=self._n_closed)

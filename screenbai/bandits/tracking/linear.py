"""Block Track-and-Stop for the linear model: tests near the lower bound, delta-correct for any
sampling, a certificate at every block.

Sampling (Track-and-Stop, Garivier & Kaufmann 2016, in blocks). Block 1 is one test of each arm of
a spanning set (d tests, pivoted QR): the model is identified without a test per compound. Block
b >= 2 is fixed before any of its outcomes, from the least-squares estimate theta_hat of every
outcome recorded so far. Its target is the lower bound's: each direction y = x_i - x_j of the
stopping rule (i in the answer at theta_hat, j outside) needs information
2 (log(1/delta') + 3/2 - evidence so far) / margin^2 (margin y'theta_hat + epsilon floored at its
standard deviation); the block is built test by test (``greedy_block``: each test to the arm that
most lowers max_y need_y sigma^2 y'A^-1 y, the min-max form of the optimal allocation of
Soare et al. 2014 / Degenne & Koolen 2019, weighted by what each direction still lacks, like
Track-and-Stop's tracking of the cumulative allocation) until it would end the run if theta_hat
were right, with at least ``min_block`` (3 %) of the tests so far and at most ``growth`` (7 %) times them or 3 d
(block 2, the first one designed, always takes that largest size: ``first_design_full``), then
completed to span the arms (every block gives evidence in every direction: the forced exploration
of Track-and-Stop). Where that construction would cost too much (K |Y| d n_b above
``_GREEDY_WORK``), the block is the lower bound's optimal allocation w*(theta_hat)
(``certainty.complexity.characteristic_time``) mixed with 1/(b+1) of the spanning set, rounded
(Pukelsheim's efficient rounding after dropping arms that would get less than half a test) to the
forecast of the tests still needed. In a lab a block is handed out over as many plates as it
takes, in ``numerics.design.spread_order``'s order (every plate prefix follows the block's counts; arm after arm
put a plate on one compound); a new block starts as soon as the last one is handed out, its design from the outcomes
recorded by then.

Stopping and guarantee (``blocks.BlockEvidence``, the policy's stopping rule; another valid rule of the
linear model can replace it, ``rules.compose.with_stopping``). Each block's own least-squares estimate, combined
over blocks per direction x_i - x_j in a one-sided normal-mixture e-process, gives an anytime-valid one-sided test
per direction at level delta' = delta / (m (K - m)) (delta / (K - 1) for the best arm) with no
d log t term and no bound S on ||theta||. After each block closes, the answer (the m largest
least-squares predictions) is returned when every arm of it beats every arm outside it by more than
-epsilon at that level. On the event (probability >= 1 - delta) that none of the m (K - m) fixed
directions from a non-top-m arm to a top-m arm fails, the answer is correct: an arm i of the
answer with mu_i < mu_(m) - epsilon would leave a true top-m arm j outside, with
(x_i - x_j)'theta < -epsilon certified above -epsilon. So P(wrong answer) <= delta, whatever the
sampling rule, the block sizes or the plate schedule.

Assumptions (the guarantee's): outcomes r = x'theta + noise, the noise of each test sigma-sub-Gaussian
and independent of the earlier outcomes, sigma known (the parameter ``sigma``; 1/2 covers any 0/1
outcome); with plates, the order in which outcomes come back does not depend on their values.
Outcomes are assigned to blocks first-in first-out per arm: the k-th recorded outcome of an arm
goes to the oldest block still missing a test of that arm, so a block's outcomes are never seen
before its design is fixed.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from screenbai.bandits.certainty.complexity import characteristic_time
from screenbai.bandits.core.params import DELTA, EPSILON, SIGMA, Interval, M, param, run_state
from screenbai.bandits.core.parts import StoppingRule
from screenbai.bandits.core.policy import Policy
from screenbai.bandits.core.registry import noise_scale, register
from screenbai.bandits.numerics.design import round_design, spread_order
from screenbai.bandits.numerics.linalg import pinv_psd, project_if_deficient, spanning_arms
from screenbai.bandits.numerics.ties import top_m_preferring
from screenbai.bandits.tracking.blocks import BlockEvidence, union_level

#: directions the greedy block design balances (those that need the most information)
_GREEDY_DIRECTIONS = 64
#: the greedy block design is used while K |directions| d n_max stays below this (else the rounded plug-in allocation)
_GREEDY_WORK = 5e7

GROWTH = param(
    0.07,
    Interval(0.0, None, open=("low",)),
    "largest block, as a fraction of the tests so far (the forecast sets the size below it)",
)


def span_completion(Z: np.ndarray, support: np.ndarray, rtol: float = 1e-9) -> np.ndarray:
    """Arms to add to ``support`` so that the arms together span the rows of Z (greedy: the arm
    farthest from the span so far, one at a time; O(K d) per arm added).

    Every block's design spans the arms, so that every direction x_i - x_j is in its range and
    gets evidence from the block (a block that does not span gives none in the missing directions)."""
    if support.size:
        U, sv, _ = np.linalg.svd(Z[support].T, full_matrices=False)
        U = U[:, sv > rtol * sv[0]] if sv.size and sv[0] > 0 else U[:, :0]
    else:
        U = np.zeros((Z.shape[1], 0))
    R = Z - (Z @ U) @ U.T
    scale = float(np.max(np.einsum("ij,ij->i", Z, Z)))
    added: list[int] = []
    for _ in range(Z.shape[1] - U.shape[1]):
        norms = np.einsum("ij,ij->i", R, R)
        k = int(np.argmax(norms))
        if norms[k] <= rtol * scale:
            break
        u = R[k] / math.sqrt(norms[k])
        R -= np.outer(R @ u, u)
        added.append(k)
    return np.asarray(added, dtype=np.int64)


def greedy_block(
    Z: np.ndarray, Y: np.ndarray, c: np.ndarray, n_min: int, n_max: int, before: np.ndarray | None = None
) -> np.ndarray:
    """Per-arm counts of a block built one test at a time: each test goes to the arm that most lowers
    max_y c_y y'A^-1 y (A the block's design so far, from a negligible ridge, plus ``before``, the
    information already collected when the stopping rule pools it), until that maximum is at most 1
    (the block would finish the run) and n_min tests are placed, or n_max tests.

    The integer design a small block needs (a rounded continuous allocation spread over more arms
    than the block has tests wastes most of its information); O(|Y| K d) per test."""
    K, d = Z.shape
    ridge = 1e-8 * float(np.mean(np.einsum("ij,ij->i", Z, Z)))
    # B = Y A^-1 Z', h = diag(Y A^-1 Y'), q = diag(Z A^-1 Z'), kept by rank one (O(|Y| K + K d) per test)
    P: np.ndarray | None
    if before is None:
        B = (Y @ Z.T) / ridge
        h = np.einsum("ij,ij->i", Y, Y) / ridge
        q = np.einsum("ij,ij->i", Z, Z) / ridge
        ZZ = (Z @ Z.T) / ridge if K <= 4 * d else None
        P = None if ZZ is not None else np.eye(d) / ridge
    else:  # once per block, d x d
        P0 = np.asarray(np.linalg.inv(before + ridge * np.eye(d)), dtype=float)
        B = Y @ P0 @ Z.T
        h = np.einsum("ij,ij->i", Y @ P0, Y)
        q = np.einsum("ij,ij->i", Z @ P0, Z)
        ZZ = Z @ P0 @ Z.T if K <= 4 * d else None
        P = None if ZZ is not None else P0
    counts = np.zeros(K, dtype=np.int64)
    for step in range(int(n_max)):
        after = (c[:, None] * (h[:, None] - B * B / (1.0 + q)[None, :])).max(axis=0)
        k = int(np.argmin(after))
        counts[k] += 1
        f = 1.0 / (1.0 + q[k])
        yb = B[:, k].copy()
        if ZZ is not None:  # few arms: Z A^-1 z_k from the Gram matrix's column
            zb = ZZ[:, k].copy()
            ZZ -= f * np.outer(zb, zb)
        else:
            u = P @ Z[k]
            zb = Z @ u
            P -= f * np.outer(u, u)
        B -= f * np.outer(yb, zb)
        h -= f * yb * yb
        q -= f * zb * zb
        if step + 1 >= n_min and after[k] <= 1.0:
            break
    return counts


@register(
    "lin-tas",
    description="Block Track-and-Stop, linear model: tracks the lower bound's optimal allocation in blocks of fixed "
    "designs; delta-correct (best arm, top-m, epsilon-good) for sigma-sub-Gaussian noise of known sigma, "
    "no bound on ||theta|| needed.",
)
class LinearTrackAndStop(Policy):
    """Block Track-and-Stop (linear model); see the module docstring.

    Parameters: m, delta, epsilon (an arm within epsilon of the m-th best counts as correct), sigma
    (sub-Gaussian noise scale, assumed known; "oracle" in simulations), growth (largest block as a
    fraction of the tests so far).
    """

    name = "lin-tas"
    model = "linear"
    m: int = M
    delta: float = DELTA
    epsilon: float = EPSILON
    sigma: float = SIGMA
    growth: float = GROWTH
    #: the sampling rule works with any valid stopping rule of the linear model (``rules.compose.with_stopping``)
    foreign_stopping_rules: ClassVar[bool] = True
    # the run's state (the stopping rule, ``BlockEvidence`` by default, is the base's ``stopping_rule``)
    #: open blocks (handed out, not all outcomes in): the block's arms (sorted) and, per arm of it, planned and
    #: recorded counts and outcome sums (``_open_block``: a block's arms only, not K-vectors)
    _open: list[dict[str, np.ndarray]] = run_state()
    _n_opened: int = run_state()
    _last_size: int = run_state()
    _answer: np.ndarray | None = run_state()
    #: per arm, outcomes expected that no block planned (fly_unplanned)
    _unplanned: np.ndarray = run_state()
    #: outcomes told by ``absorb`` (a campaign's past at a change) count in the stopping rule: not here
    #: (they are no block's fixed design), only in the designs
    absorbed_outcomes_count: ClassVar[bool] = False
    #: smallest block, as a fraction of the tests so far (bounds the number of blocks by O(log t)).
    #: 0.03 with growth 0.07 (finer blocks overshoot the stop less; docs/lower_bound.md, "Measured")
    min_block: ClassVar[float] = 0.03
    #: the first designed block (block 2) takes its largest size (3 d tests, or ``growth`` times the tests
    #: so far if more) instead of stopping where it would end the run if theta_hat were right: sized from
    #: the spanning block's rough estimate it ended 17 of 100 runs on random_linear(K=400, d=20) seed 0,
    #: at full size 42 % of 200, with the point mass of the e-process (blocks.POINT_SHARE) too 54 %
    first_design_full: ClassVar[bool] = True

    def _setup(self, features, p) -> None:
        super()._setup(features, p)
        self.delta, self.epsilon, self.sigma, self.growth = p.delta, p.epsilon, p.sigma, p.growth
        self.Z = np.ascontiguousarray(project_if_deficient(self.X)[0])
        self.d_eff = self.Z.shape[1]
        self.log_level = union_level(self.delta, self.K, self.m)
        rule = self._stopping_rule(p)
        assert rule is not None, f"{self.name} needs a stopping rule"
        self.stopping_rule = rule.attach(self)
        self._spanner = spanning_arms(self.Z, pivot_order=True)
        # open blocks (handed out, not all outcomes in): planned and recorded counts, outcome sums per arm
        self._open = []
        self._n_opened = 0
        self._last_size = 0
        self._answer = None
        # per arm, outcomes expected that no block planned (fly_unplanned); _absorbing while absorb() tells them
        self._unplanned = np.zeros(self.K, dtype=np.int64)
        self._absorbing = False
        self.diagnostics.update(blocks=0, threshold=self.log_level)

    def _stopping_rule(self, p) -> StoppingRule | None:
        """The per-block evidence of the module docstring (blocks.BlockEvidence)."""
        return BlockEvidence(self.Z, self.sigma, self.epsilon, self.log_level, self.m, self.delta)

    @property
    def evidence(self) -> BlockEvidence | None:
        """The stopping rule when it is the block evidence (the designs weigh each direction by the
        evidence it has), else None."""
        rule = self.stopping_rule
        return rule if isinstance(rule, BlockEvidence) else None

    def _evidence_so_far(self, i: int, outside: np.ndarray) -> tuple[float, np.ndarray]:
        """(log(1/delta') of the directions from arm i to the arms ``outside``, the log e-value each
        has so far): from the block evidence, or (the union level, 0) under another stopping rule."""
        ev = self.evidence
        none = np.zeros(int(np.count_nonzero(outside)))
        if ev is None:
            return self.log_level, none
        return ev.level(i), (ev.log_evalue(i)[outside] if ev.n_blocks else none)

    @classmethod
    def resolve_oracle(cls, key: str, instance):
        if key == "sigma":
            return noise_scale(instance)
        raise ValueError(f"{cls.__name__} has no oracle value for parameter {key!r}")

    # ------------------------------------------------------------------ estimates
    def _estimate(self, counts: np.ndarray, sums: np.ndarray) -> np.ndarray | None:
        """Least-squares estimate from per-arm counts and sums, None while they do not span."""
        A = (self.Z.T * counts) @ self.Z
        P, null = pinv_psd(A)
        if null is not None:
            return None
        return P @ (self.Z.T @ sums)

    def _leaders(self, theta: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The m largest fitted means; of arms with the same features (the same mean), the most tested first."""
        return top_m_preferring(self.Z @ theta, self.n, self.m, rng)

    # ------------------------------------------------------------------ sampling
    def _design(self, b: int) -> np.ndarray:
        """Per-arm counts of block b (fixed before its outcomes)."""
        K = self.K
        counts = np.zeros(K, dtype=np.int64)
        if b == 1:
            counts[self._spanner] = 1
            return counts
        explore = np.zeros(K)
        explore[self._spanner] = 1.0 / self._spanner.size
        counts_f = self.n.astype(float)
        theta = self._estimate(counts_f, self.sums)
        done = int(self.n_samples + self.n_in_flight)
        floor = max(1, math.ceil(self.min_block * done))
        cap = max(floor, math.ceil(self.growth * done), 3 * self.d_eff)
        cap = min(cap, self.max_samples - done)
        floor = min(floor, cap)
        if b == 2 and self.first_design_full:
            floor = cap
        if theta is None:  # the spanning block not back yet (plates): explore
            return round_design(min(self._spanner.size, cap), explore, rng=self.rng)
        greedy = None
        # the greedy block's directions only where its work can be affordable: J.size >= 1 as soon as some arm is
        # outside the answer (K > m). At K = 1.58 M the directions and the design features (K x d each, 266 MB)
        # were computed for every block and thrown away, and held through the T* solve (the peak of `next`)
        if self._greedy_design() and (self.K * self.d_eff * cap <= _GREEDY_WORK or self.K <= self.m):
            Y, c = self._needs(theta, counts_f)
            Zd = self._design_features(theta)
            P = pinv_psd((Zd.T * counts_f) @ Zd)[0]
            J = np.argsort(-c * np.einsum("ij,ij->i", Y @ P, Y))[:_GREEDY_DIRECTIONS]
            if self.K * J.size * self.d_eff * cap <= _GREEDY_WORK:
                greedy = greedy_block(Zd, Y[J], c[J], floor, cap, self._information_before(Zd, counts_f))
            del Y, c, Zd, P
        if greedy is not None:
            counts = greedy
        else:
            lead = tuple(int(a) for a in self._leaders(theta, np.random.default_rng(0)))
            cx = self._allocation(theta, lead)
            wstar = np.asarray(cx.allocation, dtype=float)
            gamma = 1.0 / (b + 1.0)
            w = (1.0 - gamma) * wstar + gamma * explore if np.isfinite(cx.T_star) else explore
            n_b = int(min(max(math.ceil(self._forecast(theta, w)), floor), cap))
            keep = w >= 0.5 / n_b
            if not keep.any():
                keep = w >= w.max()
            w = np.where(keep, w, 0.0)
            n_b = min(max(n_b, int(keep.sum())), self.max_samples - done)
            counts = round_design(n_b, w / w.sum(), rng=self.rng)
        extra = span_completion(self.Z, np.flatnonzero(counts))
        counts[extra] += 1
        return counts

    def _allocation(self, theta: np.ndarray, answer: tuple[int, ...]):
        """The lower bound's optimal allocation w*(theta) for ``answer`` (``certainty.complexity``)."""
        return characteristic_time(
            self.Z, theta, model=self.model, sigma=self.sigma, epsilon=self.epsilon, m=self.m, answer=answer
        )

    def _greedy_design(self) -> bool:
        """Whether blocks are built test by test (``greedy_block``) where that is cheap enough; False: the
        rounded plug-in allocation w*(theta_hat) mixed with the spanning set at every size."""
        return True

    def _design_features(self, theta: np.ndarray) -> np.ndarray:
        """Rows whose outer products make a test's information (linear: the features)."""
        return self.Z

    def _information_before(self, Zd: np.ndarray, counts: np.ndarray) -> np.ndarray | None:
        """The information a new block's design starts from: none here (each block's evidence stands
        alone, so each block's own design must cover the directions)."""
        return None

    def _needs(self, theta: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The stopping rule's directions y = x_i - x_j (i in the answer at theta, j outside) and
        c_y = sigma^2 (information y still needs): 2 (level + 3/2 - evidence so far) / margin^2, the
        margin y'theta + epsilon floored at its standard deviation. A block whose design A has
        c_y y'A^-1 y <= 1 for every y would end the run if theta were right."""
        answer = self._leaders(theta, np.random.default_rng(0))
        outside = np.ones(self.K, dtype=bool)
        outside[answer] = False
        P = pinv_psd((self.Z.T * counts) @ self.Z)[0]
        pred = self.Z @ theta
        Ys, cs = [], []
        for i in answer:
            i = int(i)
            Y = self.Z[i] - self.Z[outside]
            sd = self.sigma * np.sqrt(np.maximum(np.einsum("ij,ij->i", Y @ P, Y), 0.0))
            margin = np.maximum(pred[i] - pred[outside] + self.epsilon, np.maximum(sd, 1e-12))
            level, have = self._evidence_so_far(i, outside)
            need = 2.0 * np.maximum(level + 1.5 - have, 0.25) / margin**2
            Ys.append(Y)
            cs.append(self.sigma**2 * need)
        return np.vstack(Ys), np.concatenate(cs)

    def _forecast(self, theta: np.ndarray, w: np.ndarray) -> float:
        """Tests still needed under allocation w if theta were the truth: for each direction of the
        stopping rule, (level - evidence so far) / (margin^2 / (2 sigma^2 ||y||^2_{A(w)^-1}))."""
        answer = self._leaders(theta, np.random.default_rng(0))
        outside = np.ones(self.K, dtype=bool)
        outside[answer] = False
        P, null = pinv_psd((self.Z.T * w) @ self.Z)
        pred = self.Z @ theta
        need = 0.0
        for i in answer:
            i = int(i)
            Y = self.Z[i] - self.Z[outside]
            h = np.einsum("ij,ij->i", Y @ P, Y)
            margin = np.maximum(pred[i] - pred[outside] + self.epsilon, 0.0)
            rate = margin**2 / (2.0 * self.sigma**2 * np.maximum(h, 1e-300))
            level, have = self._evidence_so_far(i, outside)
            gap = np.maximum(level - have, 0.0)
            with np.errstate(divide="ignore"):
                n = np.where(gap > 0, gap / np.where(rate > 0, rate, 1e-300), 0.0)
            need = max(need, float(n.max()))
        return need if math.isfinite(need) else 1e18

    def _select(self):
        if self._answer is not None:
            return None
        b = self._n_opened + 1
        counts = self._design(b)
        if counts.sum() == 0:
            return None
        self._open_block(counts)
        return spread_order(counts)  # each plate follows the block (arm after arm put a plate on one arm)

    def _open_block(self, counts: np.ndarray) -> None:
        """Hand out a block of per-arm ``counts``, fixed now (before any of its outcomes). It is kept on its own
        arms: at K = 1.58 M three K-vectors per open block took 2.4 GB of a campaign's `next` (59 blocks)."""
        self._n_opened += 1
        self._last_size = int(counts.sum())
        arms = np.flatnonzero(counts)
        self._open.append(
            {
                "arms": arms,
                "planned": np.asarray(counts, dtype=np.int64)[arms],
                "got": np.zeros(arms.size, dtype=np.int64),
                "sums": np.zeros(arms.size),
            }
        )

    def _whole(self, blk: dict[str, np.ndarray], key: str) -> np.ndarray:
        """An open block's ``planned`` counts or outcome ``sums`` as a K-vector (zero off the block's arms)."""
        out = np.zeros(self.K, dtype=blk[key].dtype)
        out[blk["arms"]] = blk[key]
        return out

    def _after_load(self) -> None:
        super()._after_load()
        # a state written before open blocks were kept on their arms: K-vectors of planned, got, sums
        for blk in self._open:
            if "arms" not in blk:
                arms = np.flatnonzero(blk["planned"])
                for key in ("planned", "got", "sums"):
                    blk[key] = np.asarray(blk[key])[arms]
                blk["arms"] = arms

    # ------------------------------------------------------------------ outcomes
    def fly_unplanned(self, arms: np.ndarray) -> None:
        """Mark tests in flight that no block planned: a campaign's replicate wells, the wells still in
        the lab when its compounds change (campaign.armset).  Their outcomes inform the estimates that
        design later blocks, never a block's evidence (a block's outcomes are those of its own fixed
        design, so the per-block argument of the module docstring is untouched); an outcome of an arm
        goes to the unplanned tests first, then to the blocks first-in first-out, an assignment that
        does not depend on the outcomes' values."""
        arms = np.asarray(arms, dtype=np.int64).reshape(-1)
        self._fly(arms)
        np.add.at(self._unplanned, arms, 1)

    def absorb(self, arms, rewards) -> None:
        """Outcomes of tests this policy did not choose, told as its first observations: a campaign
        whose compounds changed restarts its algorithm with every outcome recorded so far
        (campaign.armset.restart).  They are unplanned tests (``fly_unplanned``): the linear
        model's stopping rule uses only the blocks that follow (those outcomes were chosen
        adaptively, so they are no fixed design), its designs use them all."""
        arms = np.asarray(arms, dtype=np.int64).reshape(-1)
        self.fly_unplanned(arms)
        self._absorbing = True
        try:
            self.tell(arms, rewards)
        finally:
            self._absorbing = False

    def _update(self, arms: np.ndarray, rewards: np.ndarray) -> None:
        self._feed_rule(arms, rewards)
        if self._unplanned.any():
            take = np.zeros(arms.size, dtype=bool)
            for k, a in enumerate(arms.tolist()):  # a loop over the outcomes told, not over the arms
                if self._unplanned[a]:
                    self._unplanned[a] -= 1
                    take[k] = True
            arms, rewards = arms[~take], rewards[~take]
            if not arms.size:
                return
        if len(self._open) == 1:
            blk = self._open[0]
            at = np.minimum(np.searchsorted(blk["arms"], arms), max(blk["arms"].size - 1, 0))
            if not blk["arms"].size or (blk["arms"][at] != arms).any():
                raise RuntimeError("an outcome beyond the block's plan: the arms told were not the arms proposed")
            np.add.at(blk["got"], at, 1)
            np.add.at(blk["sums"], at, rewards)
            if (blk["got"] > blk["planned"]).any():
                raise RuntimeError("an outcome beyond the block's plan: the arms told were not the arms proposed")
        else:
            where = [dict(zip(blk["arms"].tolist(), range(blk["arms"].size))) for blk in self._open]
            for a, r in zip(arms.tolist(), rewards.tolist()):
                for blk, at_of in zip(self._open, where):  # first in, first out per arm
                    pos = at_of.get(a)
                    if pos is not None and blk["got"][pos] < blk["planned"][pos]:
                        blk["got"][pos] += 1
                        blk["sums"][pos] += r
                        break
                else:
                    raise RuntimeError(f"an outcome of arm {a} that no block planned")
        closed = False
        while self._open and (self._open[0]["got"] == self._open[0]["planned"]).all():
            blk = self._open.pop(0)
            self._close_block(self._whole(blk, "planned"), self._whole(blk, "sums"))
            closed = True
        if closed:
            answer = self._check_stop()
            if answer is not None:
                self._answer = answer
                self._finish(True)

    def _feed_rule(self, arms: np.ndarray, rewards: np.ndarray) -> None:
        """Every recorded outcome to the stopping rule (the block evidence takes only closed blocks)."""
        assert self.stopping_rule is not None
        self.stopping_rule.observe(arms, rewards)

    def _close_block(self, counts: np.ndarray, sums: np.ndarray) -> None:
        assert self.stopping_rule is not None
        self.stopping_rule.block_closed(counts, sums)

    def _check_stop(self) -> np.ndarray | None:
        """The answer when the stopping rule fires after a block closed, else None."""
        assert self.stopping_rule is not None
        return self.stopping_rule.check()

    # ------------------------------------------------------------------ answers
    def _recommend(self, rng: np.random.Generator):
        if self._answer is not None:
            return self._answer.copy()
        theta = self._estimate(self.n.astype(float), self.sums)
        if theta is None:
            return super()._recommend(rng)
        return self._leaders(theta, rng)

    def _diagnostics(self) -> dict[str, Any]:
        out = dict(self.diagnostics)
        out["blocks"] = self._n_opened - len(self._open)  # the closed blocks
        return out

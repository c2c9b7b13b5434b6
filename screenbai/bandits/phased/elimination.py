"""Phased elimination on fixed designs: the machinery RAGE (``linear.rage``, Fiez, Jain, Jamieson & Ratliff
2019, Algorithm 1) and RAGE-GLM (``logistic.rage_glm``, Jun, Jain, Mason & Nassif 2021) share, in one place.

Phase r keeps the undecided arms S_r and the accepted arms Acc; its design is the XY-optimal design over all
arms for Y(S_r) = {z_i - z_j : i, j in S_r} (``certainty.complexity.xy_design`` on the model's information
features, ``_design_features``), rounded to n_r tests (``numerics.design.round_design``), completed to span
the arms and rounded up to whole plates, all fixed before any of its outcomes. When its last outcome is in,
the model's ``_fit_phase`` gives the phase's estimate theta_r and a matrix P with each direction's width
c_r ||y||_P (c_r = ``_width_scale``), valid on an event of probability 1 - delta over all phases; then an arm
is rejected when at least m_r arms of S_r are certified above it, accepted when it is certified above at
least |S_r| - m_r of them, and the run stops when every comparison between the answer and the rest of S_r
is within epsilon (``_mean_gap_bound`` maps the linear bounds to the means). The proof that the answer is then
(epsilon, m)-correct on that event, and the certificate, are in ``linear.rage``'s docstring; they use only the
event and the order of the arms, so they hold for any model whose means increase with z'theta.

Cost: the design is over the |S_r| (|S_r| - 1) / 2 directions of S_r (memory O(|S_r|^2 d) while the phase's
design is computed); above ``MAX_PAIRS`` directions the design is the G-optimal design of the arms of S_r and
rho_r and the decisions are computed in row blocks (O(|S_r|^2 d) per phase, no pair held).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from screenbai.bandits.certainty.complexity import xy_design
from screenbai.bandits.core.params import (
    DELTA,
    EPSILON,
    NONNEGATIVE,
    POSITIVE,
    POSITIVE_INT,
    M,
    param,
    run_state,
)
from screenbai.bandits.core.parts import StoppingRule
from screenbai.bandits.core.policy import NO_ARMS, Policy
from screenbai.bandits.numerics.design import frank_wolfe, round_design, spread_order
from screenbai.bandits.numerics.linalg import project_if_deficient, spanning_arms
from screenbai.bandits.numerics.ties import top_m

#: above this many directions of S_r, the phase's design is the G-optimal design of S_r's arms
MAX_PAIRS = 200_000
#: the spanning arms join the XY design's directions scaled by this (the design stays invertible)
_SPAN_WEIGHT = 1e-2
#: rows per block when pair quantities are computed (|S_r| numbers per row)
_ROWS = 512


def pair_norms(Zs: np.ndarray, P: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """||z_i - z_j||^2_P for the arms i of ``rows`` (indices into Zs) against every row j of Zs."""
    G = Zs[rows] @ P @ Zs.T
    g = np.einsum("ij,ij->i", Zs @ P, Zs)
    return np.maximum(g[rows, None] + g[None, :] - 2.0 * G, 0.0)


def max_pair_norm(Zs: np.ndarray, P: np.ndarray) -> float:
    """max_{i, j} ||z_i - z_j||^2_P over the rows of Zs, in row blocks (O(n^2 d), O(n _ROWS) memory)."""
    out = 0.0
    for s in range(0, Zs.shape[0], _ROWS):
        out = max(out, float(pair_norms(Zs, P, np.arange(s, min(s + _ROWS, Zs.shape[0]))).max()))
    return out


class PhaseRule(StoppingRule):
    """The stopping rule of phased elimination (core/parts.py): the confidence bounds of the last closed
    phase, each direction's width ``policy._width_scale(last)`` times ||y||_P, mapped to the means by
    ``policy._mean_gap_bound`` (the linear predictor's own for RAGE). It reads the policy's last phase
    (``policy._last``) and its undecided arms; no state of its own. The certificate (``linear.rage``'s
    docstring): per arm i of the answer, max(0, max over j of S_{r+1} outside the answer of the bound on
    mu_j - mu_i'), i' = i for i in S_{r+1} and i' ranging over the answer's arms in S_{r+1} for accepted i."""

    name = "phase bounds"

    def certified_epsilon(self, answer: np.ndarray) -> np.ndarray:
        """Per arm of ``answer``, the certified epsilon of the last phase (inf before the first phase that
        decided)."""
        pol = self.policy
        answer = np.asarray(answer)
        if pol._last is None:
            return np.full(answer.size, math.inf)
        S = pol.active
        theta, P = pol._last["theta"], pol._last["P"]
        scale = pol._width_scale(pol._last)
        in_ans = np.isin(S, answer)
        inside, outside = S[in_ans], S[~in_ans]
        out = np.zeros(answer.size)
        if not outside.size or not inside.size:
            return out
        Z = pol.Z
        Zo = Z[outside]

        def ucb(i: int) -> float:  # max_j of the bound on mu_j - mu_i, j outside the answer in S
            Y = Zo - Z[i]
            h = np.maximum(np.einsum("ij,ij->i", Y @ P, Y), 0.0)
            return float(np.max(pol._mean_gap_bound(i, outside, Y @ theta + scale * np.sqrt(h))))

        per = {int(i): ucb(int(i)) for i in inside}
        worst = max(per.values())
        for k, a in enumerate(answer.tolist()):
            out[k] = max(0.0, per.get(int(a), worst))
        return out

    def threshold(self, t: float, delta: float) -> float:
        """About the evidence (in nats) a direction needs at the stop: margin^2 / (2 ||y||^2_{H^-1}) (H the
        information, A / sigma^2 in the linear model) must exceed ``evidence_factor`` L_r in the last phase
        alone, which holds about 3/4 of all tests (phase sizes grow four-fold): (4/3) evidence_factor L_r at the
        current phase and active set, at the level delta asked. Approximate: the overshoot of the phase sizes
        (up to 4) is left out."""
        pol = self.policy
        r = max(pol.phase, 1)
        return (4.0 / 3.0) * pol.evidence_factor * (pol.level(r, max(pol.active.size, 2))
                                                   + math.log(self.delta / delta))

    def model(self) -> tuple[str, tuple[str, ...]] | None:
        return self.policy._phase_model()


#: what a phased elimination's forecast leaves out (its ``forecast_caveat`` begins with it)
PHASE_LOSSES = ("this forecast of a phased elimination leaves out the phases' losses: the last phase may hold up to 4 "
                "times the tests the stop needs (the widths halve) and earlier phases' outcomes are not reused")


class PhasedElimination(Policy):
    """The phases of RAGE on fixed designs (module docstring); a model supplies ``_fit_phase``,
    ``_width_scale`` and, for bounds on the means that differ from the linear predictor's, ``_mean_gap_bound``.

    Parameters: m, delta, epsilon, eps_round (rounding slack of the phase size), width0 (target width of the
    first phase; any value keeps the guarantee), plate_size (phases rounded up to whole plates).
    """

    name = "phased-elimination"
    #: nats of evidence per nat of level a direction's width asks for (PhaseRule.threshold): 1 for sigma's
    #: Gaussian widths sigma sqrt(2 L ||y||^2_{A^-1}); RAGE-GLM's Theorem 1 asks W^2 / 2
    evidence_factor: ClassVar[float] = 1.0
    m: int = M
    delta: float = DELTA
    epsilon: float = EPSILON
    eps_round: float = param(0.1, NONNEGATIVE,
                             "rounding slack: a phase has 1 + eps_round times the tests its width needs")
    width0: float = param(0.25, POSITIVE, "target width of the first phase (halved each phase; Fiez et al.: 1/4)")
    plate_size: int | None = param(None, POSITIVE_INT,
                                   "round each phase up to whole plates of this many tests (None: no plates)",
                                   none=True)
    # the run's state
    phase: int = run_state()
    #: S_r, the undecided arms, and Acc, the arms accepted into the answer
    active: np.ndarray = run_state()
    accepted: np.ndarray = run_state()
    #: the open phase's design and its outcomes so far (per-arm counts and sums)
    planned: np.ndarray = run_state()
    phase_counts: np.ndarray = run_state()
    phase_sums: np.ndarray = run_state()
    #: the last closed phase: {"theta", "P", "level", "phase"} (what the decisions and the certificate use)
    _last: dict[str, Any] | None = run_state()
    _answer: np.ndarray | None = run_state()
    #: per arm, outcomes expected that no phase planned (``fly_unplanned``)
    _unplanned: np.ndarray = run_state()
    #: outcomes told by ``absorb`` (a campaign's past at a change) never enter a phase's estimate: the stopping
    #: rule counts only the phases designed after the change (campaign.state.changes words the guarantee so)
    absorbed_outcomes_count: ClassVar[bool] = False
    #: PhaseRule.threshold counts the last phase's evidence only (issue 19: say so where the forecast is printed)
    forecast_caveat: ClassVar[str] = f"{PHASE_LOSSES}, so runs cost more than it says (docs/lower_bound.md)"

    def _setup(self, features, p) -> None:
        super()._setup(features, p)
        self.Z = np.ascontiguousarray(project_if_deficient(self.X)[0])
        self.d_eff = self.Z.shape[1]
        self._spanner = spanning_arms(self.Z)
        self.phase = 0
        self.active = np.arange(self.K, dtype=np.int64)
        self.accepted = np.zeros(0, dtype=np.int64)
        self.planned = np.zeros(self.K, dtype=np.int64)
        self.phase_counts = np.zeros(self.K, dtype=np.int64)
        self.phase_sums = np.zeros(self.K)
        self._last = None
        self._answer = None
        self._unplanned = np.zeros(self.K, dtype=np.int64)
        self.stopping_rule = PhaseRule(self.epsilon, self.delta).attach(self)
        self.diagnostics.update(phases=0, phase_sizes=[], rho=[], active_sizes=[])

    # ------------------------------------------------------------------ the phase's design
    def level(self, r: int, n_active: int) -> float:
        """L_r = log(pi^2 r^2 |S_r| (|S_r| - 1) / (6 delta)) (module docstring)."""
        return math.log(math.pi**2 * r * r * max(n_active * (n_active - 1), 1) / (6.0 * self.delta))

    def _design_features(self) -> np.ndarray:
        """The features whose outer products make the information a test brings: z_k itself in the linear
        model (A(lambda) = sum_k lambda_k z_k z_k'); the logistic RAGE-GLM weighs them by sqrt(mu')."""
        return self.Z

    def design(self, S: np.ndarray) -> tuple[np.ndarray, float]:
        """(lambda_r over all K arms, rho_r = max_{y in Y(S)} ||y||^2_{A(lambda_r)^-1}), A built from
        ``_design_features``."""
        n = S.size
        Zd = self._design_features()
        if n * (n - 1) // 2 <= MAX_PAIRS:
            ii, jj = np.triu_indices(n, 1)
            Y = self.Z[S[ii]] - self.Z[S[jj]]
            norm = np.einsum("ij,ij->i", Y, Y)
            Y = Y[norm > 1e-24 * max(1.0, float(norm.max()))]
            if not Y.shape[0]:
                return np.full(self.K, 1.0 / self.K), 0.0
            # a few directions alone have their optimum at a singular A (e.g. one y: the weight on the arms
            # along y); small multiples of a spanning set keep it invertible, costing at most their share
            w, _, _ = xy_design(Zd, np.vstack([Y, _SPAN_WEIGHT * self.Z[self._spanner]]))
            A = (Zd.T * w) @ Zd
            return w, float(np.max(np.einsum("ij,ji->i", Y, np.linalg.solve(A, Y.T))))
        # many directions: the G-optimal design of S's arms (Kiefer-Wolfowitz), rho computed in blocks
        Zs = project_if_deficient(Zd[S])[0]
        w = np.zeros(self.K)
        w[S] = frank_wolfe(Zs)
        A = (Zd.T * w) @ Zd
        return w, max_pair_norm(self.Z[S], np.linalg.pinv(A))

    def target_width(self, r: int) -> float:
        """beta_r = width0 2^-(r-1), the width phase r is sized for (any rule of the past outcomes keeps the
        guarantee: the design stays fixed before the phase's outcomes)."""
        return self.width0 * 2.0 ** (-(r - 1))

    def phase_size(self, r: int, rho: float, n_active: int, w: np.ndarray | None = None) -> int:
        """n_r = ceil((1 + eps_round) c_r^2 rho_r / beta_r^2), beta_r = width0 2^-(r-1), at least d, with c_r the
        width scale at the phase's level (``_width_scale``: a direction's width is c_r ||y||_{A_r^-1} and
        A_r = n_r A(lambda_r), so every y of Y(S_r) gets at most beta_r); RAGE: 2 (1 + eps_round) sigma^2 rho_r
        L_r / beta_r^2."""
        beta = self.target_width(r)
        scale = self._width_scale({"level": self.level(r, n_active)})
        n = (1.0 + self.eps_round) * scale**2 * rho / beta**2
        return max(math.ceil(n), self.d_eff)

    def _plan(self) -> np.ndarray:
        """Per-arm counts of the next phase: lambda_r rounded to n_r tests, completed to span the arms (and by
        ``_complete``), rounded up to whole plates, cut at the budget left."""
        r = self.phase + 1
        S = self.active
        w, rho = self.design(S)
        n = self.phase_size(r, rho, S.size, w)
        counts = round_design(n, w, rng=self.rng)
        support = np.flatnonzero(counts)
        if np.linalg.matrix_rank(self.Z[support]) < self.d_eff:  # every direction must be estimable
            counts[self._spanner] += 1
        counts = self._complete(counts)
        total = int(counts.sum())
        if self.plate_size:
            extra = -total % self.plate_size
            if extra:
                counts += round_design(extra, w, rng=self.rng)
        room = self.max_samples - self.n_samples - self.n_in_flight
        if counts.sum() > room:  # the cap cuts the phase: its design is still fixed before its outcomes
            counts = round_design(room, counts / counts.sum(), rng=self.rng) if room > 0 else counts * 0
        self.diagnostics["rho"].append(float(rho))
        self.diagnostics["active_sizes"].append(int(S.size))
        return counts.astype(np.int64)

    def _complete(self, counts: np.ndarray) -> np.ndarray:
        """Tests a model needs beyond the rounded design, fixed before the phase's outcomes (none here)."""
        return counts

    # ------------------------------------------------------------------ ask / tell
    def _select(self):
        if self._answer is not None:
            return None
        if self.planned.sum():  # the phase's outcomes are not all in
            return NO_ARMS
        counts = self._plan()
        if not counts.sum():
            return None
        self.phase += 1
        self.planned = counts
        self.phase_counts = np.zeros(self.K, dtype=np.int64)
        self.phase_sums = np.zeros(self.K)
        self.diagnostics["phase_sizes"].append(int(counts.sum()))
        self.diagnostics["phases"] = self.phase
        return spread_order(counts)  # each plate follows the design (arm after arm, the first held one arm)

    # ------------------------------------------------------------------ outcomes no phase planned
    def fly_unplanned(self, arms: np.ndarray) -> None:
        """Mark tests in flight that no phase planned (a campaign's replicate wells, or wells still in the lab
        when its compounds change, campaign.state.armset): their outcomes never enter a phase's estimate (a
        phase's outcomes are those of its own fixed design), only what the model uses to plan
        (``_unplanned_outcomes``). An outcome of an arm goes to its unplanned tests first, then to the phase,
        an assignment that does not look at the outcomes' values."""
        arms = np.asarray(arms, dtype=np.int64).reshape(-1)
        self._fly(arms)
        np.add.at(self._unplanned, arms, 1)

    def absorb(self, arms, rewards) -> None:
        """Outcomes of tests this policy did not choose, told as its first observations: a campaign whose
        compounds changed restarts its algorithm with every outcome recorded so far (campaign.state.armset).
        Those outcomes were chosen by another design (or adaptively), so no phase's estimate may use them:
        they are unplanned tests (``fly_unplanned``), used only to plan the phases that follow. The open phase,
        planned when the policy was built and none of it handed out yet, is planned again after them."""
        arms = np.asarray(arms, dtype=np.int64).reshape(-1)
        if (self.planned.sum() and not self.phase_counts.any() and not self._n_flight and self._asked is None
                and self._queue.size == self.planned.sum()):
            self.phase -= 1  # the open phase, untouched: forget it, _advance plans it again after the past
            self.planned = np.zeros(self.K, dtype=np.int64)
            self._queue, self._batch_rest = NO_ARMS, 0
            for key in ("rho", "active_sizes", "phase_sizes", "size_terms"):
                if self.diagnostics.get(key):
                    self.diagnostics[key].pop()
            self.diagnostics["phases"] = self.phase
        self.fly_unplanned(arms)
        self.tell(arms, rewards)

    def _unplanned_outcomes(self, arms: np.ndarray, rewards: np.ndarray, batch_arms: np.ndarray,
                            batch_rewards: np.ndarray) -> None:
        """Outcomes of tests no phase planned (``fly_unplanned``), told with ``batch_*``, the phase's outcomes
        of the same ``tell``: nothing to do in the linear model (its designs do not use outcomes); RAGE-GLM
        adds them to the likelihood-ratio set its designs and slope floors use."""

    def _update(self, arms: np.ndarray, rewards: np.ndarray) -> None:
        if self._unplanned.any():  # each arm's first outcomes told are its unplanned tests
            order = np.argsort(arms, kind="stable")
            first = np.searchsorted(arms[order], arms[order], side="left")
            rank = np.empty(arms.size, dtype=np.int64)
            rank[order] = np.arange(arms.size) - first
            take = rank < self._unplanned[arms]
            if take.any():
                np.subtract.at(self._unplanned, arms[take], 1)
                self._unplanned_outcomes(arms[take], rewards[take], arms[~take], rewards[~take])
                arms, rewards = arms[~take], rewards[~take]
            if not arms.size:
                return
        self._record(arms, rewards)

    def _record(self, arms: np.ndarray, rewards: np.ndarray) -> None:
        """Outcomes of the open phase's design; its last one closes the phase."""
        np.add.at(self.phase_counts, arms, 1)
        np.add.at(self.phase_sums, arms, rewards)
        if (self.phase_counts > self.planned).any():
            raise RuntimeError("an outcome beyond the phase's design: the arms told were not the arms proposed")
        if self.planned.sum() and (self.phase_counts == self.planned).all():
            self._close_phase()

    def _fit_phase(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The closed phase's estimate theta_r and the matrix P of its widths (the width of y is
        ``_width_scale`` times ||y||_P), from that phase's outcomes only; None: no decision this phase."""
        raise NotImplementedError

    def _width_scale(self, last: dict[str, Any]) -> float:
        """The width of a direction y of the last phase is this times ||y||_P (``last`` holds its "level")."""
        raise NotImplementedError

    def _close_phase(self) -> None:
        """The phase's estimate, the decisions and the stopping rule (module docstring)."""
        r, S = self.phase, self.active
        fit = self._fit_phase()
        self.planned = np.zeros(self.K, dtype=np.int64)
        if fit is None:
            return
        theta, P = fit
        L = self.level(r, S.size)
        self._last = {"theta": theta, "P": P, "level": L, "phase": r}
        scale = self._width_scale(self._last)
        mu = self.Z[S] @ theta
        m_r = self.m - self.accepted.size
        better = np.zeros(S.size, dtype=np.int64)  # how many arms of S are certified better than each
        worse = np.zeros(S.size, dtype=np.int64)  # how many it is certified better than
        Zs = self.Z[S]
        for s in range(0, S.size, _ROWS):
            rows = np.arange(s, min(s + _ROWS, S.size))
            width = scale * np.sqrt(pair_norms(Zs, P, rows))
            diff = mu[None, :] - mu[rows, None]  # mu_j - mu_i, i in rows
            better[rows] = np.sum(diff - width > 0, axis=1)
            worse[rows] = np.sum(-diff - width > 0, axis=1)
        reject = better >= m_r
        accept = (worse >= S.size - m_r) & ~reject
        self.accepted = np.concatenate([self.accepted, S[accept]])
        self.active = S[~(reject | accept)]
        self.diagnostics["accepted"] = int(self.accepted.size)
        answer = self._answer_now(np.random.default_rng(r))
        if self.stopping_rule is not None and self.stopping_rule.stops(answer):  # every arm certified epsilon-good
            self._answer = answer

    # ------------------------------------------------------------------ answers and certificate
    def _answer_now(self, rng: np.random.Generator) -> np.ndarray:
        """Acc + the m_r arms of S with the largest predictions of the last phase."""
        m_r = self.m - self.accepted.size
        if m_r <= 0 or self._last is None:
            return self.accepted[: self.m].copy()
        pred = self.Z[self.active] @ self._last["theta"]
        return np.concatenate([self.accepted, self.active[top_m(pred, m_r, rng)]]).astype(np.int64)

    def _mean_gap_bound(self, i: int, js: np.ndarray, ucb: np.ndarray) -> np.ndarray:
        """An upper bound on mu_j - mu_i for the arms ``js`` from ``ucb``, the bound on (z_j - z_i)'theta of
        the last phase: the same in the linear model (RAGE-GLM maps it to the means)."""
        return ucb

    def _recommend(self, rng: np.random.Generator):
        if self._answer is not None:
            return self._answer.copy()
        if self._last is None:
            return super()._recommend(rng)
        return self._answer_now(rng)

    def _phase_model(self) -> tuple[str, tuple[str, ...]] | None:
        """The model the certificate holds under (PhaseRule.model); None: the policy's default."""
        return None

    def _diagnostics(self) -> dict[str, Any]:
        """The diagnostics, with the stopping statistic as a campaign's status reads it: ``stat``, the
        largest certified epsilon of the answer after the last phase (it stops at <= epsilon; nan before
        the first phase's outcomes are all in)."""
        out = dict(self.diagnostics)
        out["active"] = int(self.active.size)
        if self._answer is None and self.stopping_rule is not None:
            eps = self.stopping_rule.certified_epsilon(self._answer_now(np.random.default_rng(self.phase)))
            out["stat"] = math.nan if self._last is None or eps is None else float(eps.max(initial=0.0))
            out["stat_fires_at"] = self.epsilon
            out["stat_name"] = "the certified epsilon of its answer after the last phase is"
        return out

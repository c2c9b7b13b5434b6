"""RAGE: phased elimination on fixed XY-optimal designs (Fiez, Jain, Jamieson & Ratliff 2019,
"Sequential Experimental Design for Transductive Linear Bandits", Algorithm 1), for the
linear-Gaussian model with known sigma; best arm, top-m, epsilon >= 0, phases filling whole plates.

Phase r = 1, 2, ... keeps the undecided arms S_r (all arms at r = 1), the arms accepted into the answer
(Acc) and m_r = m - |Acc| places still to fill. With Y(S_r) = {z_i - z_j : i, j in S_r} (Alg. 1):

- the design (Alg. 1, the lambda_r line): lambda_r = argmin_lambda max_{y in Y(S_r)} ||y||^2_{A(lambda)^-1},
  rho_r its value, over all K arms (``certainty.complexity.xy_design``);
- its size (Alg. 1, the N_r line, with the known sigma and our level):
  n_r = ceil(2 (1 + eps_round) sigma^2 rho_r L_r / beta_r^2), beta_r = width0 2^-(r-1) the phase's target
  width (Fiez et al.: width0 = 1/4, i.e. beta_r = 2^-(r+1) and n_r = ceil(2 (1 + eps_round) 2^(2(r+1))
  sigma^2 rho_r L_r)), at least d; rounded to whole tests (``numerics.design.round_design``), completed
  to span the arms, and with ``plate_size`` rounded up to whole plates (the extra tests follow the design);
- the estimate: least squares on that phase's outcomes only, theta_r = A_r^-1 sum_t z_t r_t,
  A_r = sum_k n_{r,k} z_k z_k' (the integer design actually run);
- the level: L_r = log(pi^2 r^2 |S_r| (|S_r| - 1) / (6 delta)), one per directed pair of S_r;
- the width of a pair: w_r(i, j) = sigma sqrt(2 L_r ||z_i - z_j||^2_{A_r^-1}) (of the design actually
  run: at most beta_r sqrt((1 + eps_round) rho_r / (n_r max_y ||y||^2_{A_r^-1}))^-1, so beta_r when the
  rounding loses at most the factor 1 + eps_round, as Fiez et al.'s r(eps) guarantees);
  LCB_r(i > j) = (z_i - z_j)'theta_r - w_r(i, j) and UCB_r(j - i) = (z_j - z_i)'theta_r + w_r(i, j).

Decisions after the phase's last outcome (all on the same S_r, m_r, simultaneously):
  reject i in S_r when at least m_r arms j of S_r have LCB_r(j > i) > 0;
  accept i in S_r when LCB_r(i > j) > 0 for at least |S_r| - m_r arms j of S_r.
For m = 1 the rejection is Fiez et al.'s elimination of x when some x' has (x' - x)'theta_r above the
phase's width (Alg. 1's last line uses the fixed 2^-(r+2); we use each pair's own width, which is at most
beta_r: a threshold of 2^-(r+2) would be below the width 2^-(r+1) this n_r buys and would not be safe).
Then S_{r+1} = S_r without the decided arms, m_{r+1} = m_r - (number accepted), and the run stops with
the answer Acc + (the m_{r+1} arms of S_{r+1} with the largest z'theta_r) when every arm i of that
answer in S_{r+1} and every j of S_{r+1} outside it have UCB_r(j - i) <= epsilon (always true when
m_{r+1} = 0 or |S_{r+1}| = m_{r+1}).

delta-correctness. Phase r's design depends only on the outcomes of earlier phases, so given them
(z_i - z_j)'(theta_r - theta) is Gaussian (sigma-sub-Gaussian) with variance at most
sigma^2 ||z_i - z_j||^2_{A_r^-1} and P((z_i - z_j)'(theta_r - theta) > w_r(i, j)) <= exp(-L_r). Over the
|S_r| (|S_r| - 1) directed pairs of phase r and all phases, the event E that none fails has
P(not E) <= sum_r 6 delta / (pi^2 r^2) = delta. On E, with T a true top-m set (mu_k = z_k'theta): the
invariant Acc in T, T in Acc + S_r, |T & S_r| = m_r holds for every r. Rejecting i in T would leave m_r
arms of S_r truly better than i, all in T (everything better than a top-m arm is), so |T & S_r| >= m_r + 1;
accepting i not in T would leave |S_r| - m_r arms of S_r truly worse than i, all outside T, so
|S_r - T| >= |S_r| - m_r + 1: both impossible. At the stop, for i in the answer and j outside it,
mu_j - mu_i <= epsilon: directly when both are in S_{r+1}; otherwise through a k in S_{r+1} that the
count |T & S_{r+1}| = m_{r+1} provides (i accepted and j in T: some k of the answer in S_{r+1} is not in T,
mu_j - mu_i <= mu_j - mu_k <= UCB; i in S_{r+1} and j rejected: j not in T and, if i is not in T, some
k in T of S_{r+1} outside the answer has mu_j <= mu_k, mu_k - mu_i <= UCB). So on E the answer is
(epsilon, m)-correct (every arm of it within epsilon of every arm outside it): P(error) <= delta,
whatever the plate schedule (the estimate waits for the phase's last outcome; failed wells are tested
again). No bound S on ||theta|| enters: the design is fixed before the phase's outcomes. Assumptions:
outcomes r = x'theta + noise, the noise independent and sigma-sub-Gaussian with sigma known (1/2 covers
0/1 outcomes); with plates, the order in which outcomes return does not depend on their values.

The certificate (``PhaseRule``, the stopping rule) is the stopping rule's bound on the last phase: per arm i of the
current answer, max(0, max over j of S_{r+1} outside the answer of UCB_r(j - i')) with i' = i for i in
S_{r+1} and i' ranging over the answer's arms in S_{r+1} for accepted i (the argument above), valid at
any time on E. Each direction costs log(K^2 r^2 / delta) (the union over the phase's pairs), not d log t.

Cost: the design is over the |S_r| (|S_r| - 1) / 2 directions of S_r (memory O(|S_r|^2 d) while the
phase's design is computed: about 25 MB at |S_r| = 400, d = 20); above ``MAX_PAIRS`` directions the
design is the G-optimal design of the arms of S_r (max_y ||y||^2 <= 4 d, within the factor 4 d / rho_r
of the XY design), and rho_r and the decisions are computed in row blocks (O(|S_r|^2 d) per phase, no
pair held). Nothing is computed per test.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from screenbai.bandits.certainty.complexity import xy_design
from screenbai.bandits.core.params import (
    DELTA,
    EPSILON,
    NONNEGATIVE,
    POSITIVE,
    POSITIVE_INT,
    SIGMA,
    M,
    param,
    run_state,
)
from screenbai.bandits.core.parts import StoppingRule
from screenbai.bandits.core.policy import NO_ARMS, Policy
from screenbai.bandits.core.registry import noise_scale, register
from screenbai.bandits.numerics.design import frank_wolfe, round_design
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
    """RAGE's stopping rule (core/parts.py): the confidence bounds UCB_r of the last closed phase's
    least-squares estimate, at its level L_r (module docstring). It reads the policy's last phase
    (``policy._last``), its undecided arms and sigma; no state of its own."""

    name = "phase bounds"

    def certified_epsilon(self, answer: np.ndarray) -> np.ndarray:
        """Per arm of ``answer``, the certified epsilon of the last phase (module docstring; inf before
        the first phase's outcomes are all in)."""
        pol = self.policy
        answer = np.asarray(answer)
        if pol._last is None:
            return np.full(answer.size, math.inf)
        S = pol.active
        theta, P, L = pol._last["theta"], pol._last["P"], pol._last["level"]
        in_ans = np.isin(S, answer)
        inside, outside = S[in_ans], S[~in_ans]
        out = np.zeros(answer.size)
        if not outside.size or not inside.size:
            return out
        Z, sigma = pol.Z, pol.sigma
        Zo = Z[outside]

        def ucb(i: int) -> float:  # max_j UCB(j - i), j outside the answer in S
            Y = Zo - Z[i]
            h = np.maximum(np.einsum("ij,ij->i", Y @ P, Y), 0.0)
            return float(np.max(Y @ theta + sigma * np.sqrt(2.0 * L * h)))

        per = {int(i): ucb(int(i)) for i in inside}
        worst = max(per.values())
        for k, a in enumerate(answer.tolist()):
            out[k] = max(0.0, per.get(int(a), worst))
        return out

    def threshold(self, t: float, delta: float) -> float:
        """About the evidence (in nats) a direction needs at the stop: margin^2 / (2 sigma^2 ||y||^2_{A^-1})
        must exceed L_r in the last phase alone, which holds about 3/4 of all tests (phase sizes grow
        four-fold): (4/3) L_r at the current phase and active set, at the level delta asked. Approximate:
        the overshoot of the phase sizes (up to 4) is left out."""
        pol = self.policy
        r = max(pol.phase, 1)
        return (4.0 / 3.0) * (pol.level(r, max(pol.active.size, 2)) + math.log(self.delta / delta))


@register(
    "rage",
    description="RAGE (Fiez et al. 2019): phased elimination on fixed XY-optimal designs, whole plates per phase; "
    "delta-correct (best arm, top-m, epsilon-good) for sigma-sub-Gaussian noise of known sigma, no bound on ||theta||.",
)
class RAGE(Policy):
    """RAGE, phased elimination on XY-optimal designs (linear model); see the module docstring.

    Parameters: m, delta, epsilon, sigma (sub-Gaussian noise scale, assumed known; "oracle" in
    simulations), eps_round (rounding slack of the phase size), width0 (target width of the first phase,
    Fiez et al.'s 1/4; any value keeps the guarantee), plate_size (phases rounded up to whole plates).
    """

    name = "rage"
    m: int = M
    delta: float = DELTA
    epsilon: float = EPSILON
    sigma: float = SIGMA
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
        self.stopping_rule = PhaseRule(self.epsilon, self.delta).attach(self)
        self.diagnostics.update(phases=0, phase_sizes=[], rho=[], active_sizes=[])

    @classmethod
    def resolve_oracle(cls, key: str, instance):
        if key == "sigma":
            return noise_scale(instance)
        raise ValueError(f"{cls.__name__} has no oracle value for parameter {key!r}")

    # ------------------------------------------------------------------ the phase's design
    def level(self, r: int, n_active: int) -> float:
        """L_r = log(pi^2 r^2 |S_r| (|S_r| - 1) / (6 delta)) (module docstring)."""
        return math.log(math.pi**2 * r * r * max(n_active * (n_active - 1), 1) / (6.0 * self.delta))

    def design(self, S: np.ndarray) -> tuple[np.ndarray, float]:
        """(lambda_r over all K arms, rho_r = max_{y in Y(S)} ||y||^2_{A(lambda_r)^-1})."""
        n = S.size
        if n * (n - 1) // 2 <= MAX_PAIRS:
            ii, jj = np.triu_indices(n, 1)
            Y = self.Z[S[ii]] - self.Z[S[jj]]
            norm = np.einsum("ij,ij->i", Y, Y)
            Y = Y[norm > 1e-24 * max(1.0, float(norm.max()))]
            if not Y.shape[0]:
                return np.full(self.K, 1.0 / self.K), 0.0
            # a few directions alone have their optimum at a singular A (e.g. one y: the weight on the arms
            # along y); small multiples of a spanning set keep it invertible, costing at most their share
            w, _, _ = xy_design(self.Z, np.vstack([Y, _SPAN_WEIGHT * self.Z[self._spanner]]))
            A = (self.Z.T * w) @ self.Z
            return w, float(np.max(np.einsum("ij,ji->i", Y, np.linalg.solve(A, Y.T))))
        # many directions: the G-optimal design of S's arms (Kiefer-Wolfowitz), rho computed in blocks
        Zs = project_if_deficient(self.Z[S])[0]
        w = np.zeros(self.K)
        w[S] = frank_wolfe(Zs)
        A = (self.Z.T * w) @ self.Z
        return w, max_pair_norm(self.Z[S], np.linalg.pinv(A))

    def phase_size(self, r: int, rho: float, n_active: int) -> int:
        """n_r = ceil(2 (1 + eps_round) sigma^2 rho_r L_r / beta_r^2), beta_r = width0 2^-(r-1), at least d."""
        beta = self.width0 * 2.0 ** (-(r - 1))
        n = 2.0 * (1.0 + self.eps_round) * self.sigma**2 * rho * self.level(r, n_active) / beta**2
        return max(math.ceil(n), self.d_eff)

    def _plan(self) -> np.ndarray:
        """Per-arm counts of the next phase: lambda_r rounded to n_r tests, completed to span the arms,
        rounded up to whole plates, cut at the budget left."""
        r = self.phase + 1
        S = self.active
        w, rho = self.design(S)
        n = self.phase_size(r, rho, S.size)
        counts = round_design(n, w, rng=self.rng)
        support = np.flatnonzero(counts)
        if np.linalg.matrix_rank(self.Z[support]) < self.d_eff:  # every direction must be estimable
            counts[self._spanner] += 1
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
        return np.repeat(np.arange(self.K), counts)

    def _update(self, arms: np.ndarray, rewards: np.ndarray) -> None:
        np.add.at(self.phase_counts, arms, 1)
        np.add.at(self.phase_sums, arms, rewards)
        if (self.phase_counts > self.planned).any():
            raise RuntimeError("an outcome beyond the phase's design: the arms told were not the arms proposed")
        if self.planned.sum() and (self.phase_counts == self.planned).all():
            self._close_phase()

    def _close_phase(self) -> None:
        """The phase's estimate, the decisions and the stopping rule (module docstring)."""
        r, S = self.phase, self.active
        A = (self.Z.T * self.phase_counts) @ self.Z
        P = np.linalg.pinv(A)
        theta = P @ (self.Z.T @ self.phase_sums)
        self.planned = np.zeros(self.K, dtype=np.int64)
        if np.linalg.matrix_rank(A) < self.d_eff:  # a phase cut by the budget: no decision
            return
        L = self.level(r, S.size)
        self._last = {"theta": theta, "P": P, "level": L, "phase": r}
        mu = self.Z[S] @ theta
        m_r = self.m - self.accepted.size
        better = np.zeros(S.size, dtype=np.int64)  # how many arms of S are certified better than each
        worse = np.zeros(S.size, dtype=np.int64)  # how many it is certified better than
        Zs = self.Z[S]
        for s in range(0, S.size, _ROWS):
            rows = np.arange(s, min(s + _ROWS, S.size))
            width = self.sigma * np.sqrt(2.0 * L * pair_norms(Zs, P, rows))
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

    def _recommend(self, rng: np.random.Generator):
        if self._answer is not None:
            return self._answer.copy()
        if self._last is None:
            return super()._recommend(rng)
        return self._answer_now(rng)

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

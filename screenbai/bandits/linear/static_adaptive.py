"""[SLM14] phased and fully adaptive XY allocations (``"xy-adaptive"``, ``"xy-fully-adaptive"``).

XY-adaptive's phases are reward-independent XY-static sequences (``static_greedy``, cached); the fully
adaptive baseline chooses with the same greedy step (``GreedyState``) on the directions between the
arms that survive [SLM14] Prop. 2's elimination.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import cho_solve

from screenbai.bandits.certainty.certificate import certified_from_bounds, norm_bound_refuted
from screenbai.bandits.core.params import (
    ALLOCATION_SEED,
    LAMBDA_REG,
    S_BOUND,
    Interval,
    like,
    param,
    pinned,
    required,
    run_state,
)
from screenbai.bandits.core.parts import StoppingRule
from screenbai.bandits.core.policy import NO_ARMS
from screenbai.bandits.core.registry import register
from screenbai.bandits.linear.static import MONOTONE, PULL_BLOCK, RESTRICT_Y, SLMBase
from screenbai.bandits.linear.static_greedy import (
    AllocationSequence,
    GreedyState,
    all_pairs,
    allocation_sequence,
    star_pairs,
)
from screenbai.bandits.linear.static_rules import beaten, eq11_holds, eq11_width, ols_mu, pair_width2
from screenbai.bandits.numerics.ties import argmax_random


# ====================================================================== XY-adaptive (phased)
@register("xy-adaptive")
class XYAdaptive(SLMBase):
    """[SLM14] XY-adaptive: phases of XY-static allocation on the
    directions between surviving arms; each phase restarts from its own data (initial spanning pulls
    included), ends when max_y ||y||^2_{A^{-1}} <= alpha * (its value at the end of the previous phase),
    then discards dominated arms (Lemma 4 with c, strict <) and tests eq. 11.

    monotone: False (literal: the survivors are rebuilt from all of X, so discarded arms can come back)
    or True (survivors only shrink). restrict_y: as in xy-static (pairs with the previous phase's best).
    """

    name = "xy-adaptive"

    alpha: float = param(0.1, Interval(0.0, 1.0, open=("low", "high")), "phase shrink factor")
    monotone: bool = MONOTONE
    #: None: auto (the attribute holds the choice made)
    restrict_y: bool | None = RESTRICT_Y
    #: None: drawn from rng (the attribute holds the seed used, saved with the state)
    allocation_seed: int | None = like(ALLOCATION_SEED, state=True)

    # the run's state
    active: np.ndarray = run_state()  # the surviving arms (a mask)
    rho_prev: float = run_state()
    phase: int = run_state()
    _prev_best: int | None = run_state()
    t_phase: int = run_state()
    _t_handed: int = run_state()  # positions of this phase's sequence chosen so far
    phase_counts: np.ndarray = run_state()
    phase_sums: np.ndarray = run_state()

    def _setup(self, features, p) -> None:
        super()._setup(features, p)
        self.alpha = p.alpha
        self.monotone = p.monotone
        self.restrict_y = self._check_restrict(p.restrict_y, self.K)
        self.allocation_seed = int(self.rng.integers(2**63)) if p.allocation_seed is None else p.allocation_seed
        self.active = np.ones(self.K, dtype=bool)
        # rho^0 / n_0: the phase test compares with the previous phase's value (not rho / t twice)
        self.rho_prev = 1.0 / (self.d_eff * (self.d_eff + 1) + 1)
        self.phase = 0
        self._prev_best = None
        self._t_handed = 0  # positions of this phase's sequence chosen so far
        self._start_phase()
        self.diagnostics.update(phases=0, restricted_y=self.restrict_y, monotone=self.monotone)

    def _phase_directions(self):
        if self.restrict_y:
            if self._prev_best is None:  # first phase: no estimate yet, use the G-criterion directions
                return np.flatnonzero(self.active), None
            return star_pairs(self.active, self._prev_best)
        return all_pairs(self.active)

    def _phase_sequence(self) -> AllocationSequence:
        I, J = self._phase_directions()
        return allocation_sequence(self.Z, self.init_arms, I, J, seed=self.allocation_seed,
                                   stop_rule=("rho", self.alpha * self.rho_prev))

    def _after_load(self) -> None:
        self.seq = self._phase_sequence()

    def _start_phase(self) -> None:
        self.phase += 1
        self.seq = self._phase_sequence()
        self.t_phase = self._t_handed = 0
        self.phase_counts = np.zeros(self.K)
        self.phase_sums = np.zeros(self.K)

    def _end_phase(self):
        """Estimate on this phase's data, discard dominated arms, test eq. 11. Returns the best arm when done."""
        t = self.t_phase
        mu, chol = ols_mu(self.Z, self.phase_counts, self.phase_sums)
        G = self.Z @ cho_solve(chol, self.Z.T)
        dg = np.diag(G)
        lost = beaten(mu, lambda rows: eq11_width(pair_width2(dg[rows], dg, G[rows]), t, *self.rule_args))
        survivors = ~lost & (self.active if self.monotone else True)
        best = int(argmax_random(mu, self.rng))
        self.diagnostics["phases"] = self.phase
        self.diagnostics["last_phase_length"] = t
        if eq11_holds(mu, pair_width2(dg[best], dg, G[best]), best, t, *self.rule_args):  # eq. 11, x = Pi(theta_hat)
            return best
        if survivors.sum() == 1:
            return int(np.flatnonzero(survivors)[0])
        if not survivors.any():  # monotone only: every remaining arm was beaten by a discarded one
            survivors = self.active.copy()
        self.active = survivors
        self.rho_prev = self.seq.rho_end
        self._prev_best = best
        self._start_phase()
        return None

    def _select(self):
        seq, t = self.seq, self._t_handed
        if t >= seq.length and not seq.done:
            seq.extend(t + min(PULL_BLOCK, self.max_samples - self.n_samples))
        if seq.done and t >= seq.length:
            if self.n_in_flight:  # the phase ends with its last recorded outcome
                return NO_ARMS
            best = self._end_phase()
            if best is not None:
                self._final = {"best": best}
                return None
            return self._select()
        self._t_handed = t + 1
        return int(seq.arms[t])

    def _update(self, arms, rewards):
        for a, r in zip(arms, rewards):
            self.phase_counts[a] += 1
            self.phase_sums[a] += r
        self.t_phase += arms.size

    def _recommend(self, rng):
        if self._final is not None:
            return np.array([self._final["best"]])
        return self._ols_best(self.phase_counts, self.phase_sums, rng)

    def _design_outcomes(self) -> tuple[np.ndarray, np.ndarray, int]:
        """The current phase's outcomes: the certificate is [SLM14] Prop. 1 on them, as the phase's eq. 11
        test (each phase's design is fixed when it starts; inf until the phase's tests span)."""
        return self.phase_counts, self.phase_sums, self.t_phase

    def run(self, env):
        """Phase by phase: the phase sequence is fixed, so pull it as one block (same reward stream)."""
        if not self._fast_path_applies(env):
            return super().run(env)
        t = 0
        while True:
            seq = self.seq
            room = self.max_samples - t
            seq.extend(room + 1)
            n_phase = min(seq.length, room)
            arms = seq.arms[:n_phase].astype(np.int64)
            rewards = env.pull_sequence(arms)
            self.phase_counts = np.bincount(arms, minlength=self.K).astype(float)
            self.phase_sums = np.bincount(arms, weights=rewards, minlength=self.K).astype(float, copy=False)
            np.add.at(self.n, arms, 1)
            np.add.at(self.sums, arms, rewards)
            t += n_phase
            self.t_phase = self._t_handed = n_phase
            self.n_samples = t
            if not (seq.done and n_phase == seq.length) or t >= self.max_samples:  # budget spent
                self._finish(False)
                return self.result()
            best = self._end_phase()
            if best is not None:
                self._final = {"best": best}
                self._finish(True)
                return self.result()


# ====================================================================== fully adaptive baseline
@register("xy-fully-adaptive", S="oracle")
class XYFullyAdaptive(SLMBase):
    """The "fully adaptive XY" baseline of [SLM14] Fig. 4: the surviving set is recomputed
    after every pull from ridge estimates (ridge lambda = lambda_reg, [SLM14]'s eta) with the Prop. 2 width
    ||x - x'||_{(A^lambda)^{-1}} (sigma sqrt(d log((1 + n L^2/lambda)/delta)) + sqrt(lambda) S); data are never
    discarded; the next arm is the XY-greedy choice for the directions between survivors.
    Stops when one arm survives.

    S: bound on ||theta*|| ("oracle" resolves it from the instance). monotone / restrict_y as in xy-adaptive.
    """

    name = "xy-fully-adaptive"

    S: float = required(S_BOUND.constraint, S_BOUND.help, oracle=True)
    lambda_reg: float = LAMBDA_REG
    monotone: bool = MONOTONE
    #: None: auto (the attribute holds the choice made)
    restrict_y: bool | None = RESTRICT_Y
    confidence: str = pinned("pairs")
    renamed = {"eta": "lambda_reg"}
    state: GreedyState = run_state()
    active: np.ndarray = run_state()  # the surviving arms (a mask)
    _dir_key: tuple | None = run_state()

    def _setup(self, features, p) -> None:
        super()._setup(features, p)
        self.S, self.lambda_reg = p.S, p.lambda_reg
        self.monotone = p.monotone
        self.restrict_y = self._check_restrict(p.restrict_y, self.K)
        self.L2 = float(np.max(np.einsum("ij,ij->i", self.X, self.X)))
        self.state = GreedyState(self.Z, np.zeros(self.K), prior=self.lambda_reg)
        self.active = np.ones(self.K, dtype=bool)
        self._dir_key = None
        self._plate: tuple | None = None  # (n_samples, tests held, design with them) while a plate is chosen
        self.diagnostics.update(restricted_y=self.restrict_y, monotone=self.monotone)

    def _stopping_rule(self, p) -> EliminationRule:
        return EliminationRule(self.delta)

    def _after_load(self) -> None:
        self._plate = None

    def _plate_design(self) -> GreedyState:
        """The greedy state with the tests in flight pulled in (estimates keep the recorded one)."""
        flight = self.in_flight
        if self._plate is None or self._plate[0] != self.n_samples or (flight < self._plate[1]).any():
            view, held = self.state.copy(), np.zeros(self.K, dtype=np.int64)
        else:
            _, held, view = self._plate
        for a in np.flatnonzero(flight > held):
            for _ in range(int(flight[a] - held[a])):
                view.pull(int(a))
        self._plate = (self.n_samples, flight, view)
        return view

    def _width_scale(self, n: int) -> float:
        lam = self.lambda_reg
        return self.sigma * np.sqrt(self.d_eff * np.log((1.0 + n * self.L2 / lam) / self.delta)) + np.sqrt(lam) * self.S

    def _select(self):
        s, t = self.n_samples, self._handed
        if t < self.init_arms.size:
            self._handed = t + 1
            return int(self.init_arms[t])
        if s < self.init_arms.size:  # initial arms in flight
            return NO_ARMS
        mu = self._survivors()
        if mu is None:
            return None
        best = int(argmax_random(np.where(self.active, mu, -np.inf), self.rng)) if self.restrict_y else -1
        key = (self.active.tobytes(), best)
        if key != self._dir_key:
            I, J = star_pairs(self.active, best) if self.restrict_y else all_pairs(self.active)
            self.state.set_directions(I, J)
            self._dir_key = key
            self._plate = None
        self._handed = t + 1
        return (self._plate_design() if self.n_in_flight else self.state).choose(self.rng)

    def _survivors(self) -> np.ndarray | None:
        """The surviving arms from recorded outcomes; the estimated means, or None when one is left."""
        mu = self.state.M[: self.K] @ self.sums  # Z (lambda I + A)^{-1} Z^T sums = Z theta_hat
        survivors = ~beaten(mu, self._widths)
        self.active = survivors & self.active if self.monotone else survivors
        alive = np.flatnonzero(self.active)
        if alive.size == 1 or self._twins(alive, mu):
            # one arm left, or only arms with the same features (the same mean under the model, none of which
            # eliminates another): the most tested of them (ties: the first)
            self._final = {"best": int(alive[np.argmax(self.n[alive])])}
            return None
        return mu

    def _twins(self, alive: np.ndarray, mu: np.ndarray) -> bool:
        """Whether the surviving arms ``alive`` all have the same features (their estimated means agree to the
        bit first: O(|alive|) in the ordinary case)."""
        return bool((mu[alive] == mu[alive[0]]).all() and (self.Z[alive] == self.Z[alive[0]]).all())

    def _stops_now(self) -> bool:
        return self.n_samples >= self.init_arms.size and self._survivors() is None

    def _update(self, arms, rewards):
        for a in arms:
            self.state.pull(int(a))

    def _recommend(self, rng):
        if self._final is not None:
            return np.array([self._final["best"]])
        mu = self.state.M[: self.K] @ self.sums
        return np.array([argmax_random(np.where(self.active, mu, -np.inf), rng)])

    def _widths(self, rows: np.ndarray) -> np.ndarray:
        """Prop. 2's widths ||x_i - x_j||_{(A^lambda)^-1} (...) for the arms i of ``rows`` against every
        arm j, from recorded outcomes (the elimination and the certificate)."""
        dg = self.state.diag
        width2 = pair_width2(dg[rows], dg, self.state.M[rows][:, : self.K])
        return np.sqrt(width2) * self._width_scale(self.n_samples)


class EliminationRule(StoppingRule):
    """xy-fully-adaptive's stopping rule (core/parts.py): [SLM14] Prop. 2's set, the ridge estimate with the
    elimination's widths ||x_i - x_j||_{(A^lambda)^-1} (sigma sqrt(d log((1 + n L^2 / lambda) / delta)) +
    sqrt(lambda) S), valid for adaptive designs given S. It reads the policy's greedy state (ridge inverse),
    sums and widths (``policy._widths``); the policy eliminates with the same widths and stops when one arm
    survives. No state of its own."""

    name = "[SLM14] Prop. 2"

    def __init__(self, delta: float):
        super().__init__(0.0, delta)

    def certified_epsilon(self, answer: np.ndarray) -> np.ndarray:
        """eq. (1) of certainty/certificate.py: U(i, j) = mu_j - mu_i + width(i, j) at the ridge estimate. O(K)."""
        pol = self.policy
        A = np.asarray(answer)
        mu = pol.state.M[: pol.K] @ pol.sums
        U = mu[None, :] - mu[A][:, None] + pol._widths(A)
        U[np.arange(A.size), A] = -np.inf
        return certified_from_bounds(U, 1)

    def model(self) -> tuple[str, tuple[str, ...]]:
        pol = self.policy
        model, caveats = pol._model_description()
        V = pol.lambda_reg * np.eye(pol.d_eff) + (pol.Z.T * pol.n) @ pol.Z
        P = np.linalg.inv(V)  # once per certificate, O(K d^2 + d^3)
        low = norm_bound_refuted(P @ (pol.Z.T @ pol.sums), P, float(pol._width_scale(pol.n_samples)), pol.S)
        if low is not None:
            caveats = caveats + (f"the outcomes refute ||theta|| <= S = {pol.S:g} (every theta of the confidence "
                                 f"set has norm >= {low:.3g}): pass a larger S",)
        return f"{model}, ||theta|| <= S = {pol.S:g}", caveats

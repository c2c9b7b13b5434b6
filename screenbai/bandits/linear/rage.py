"""RAGE: phased elimination on fixed XY-optimal designs (Fiez, Jain, Jamieson & Ratliff 2019,
"Sequential Experimental Design for Transductive Linear Bandits", Algorithm 1), for the
linear-Gaussian model with known sigma; best arm, top-m, epsilon >= 0, phases filling whole plates.

Phase r = 1, 2, ... keeps the undecided arms S_r (all arms at r = 1), the arms accepted into the answer
(Acc) and m_r = m - |Acc| places still to fill. With Y(S_r) = {z_i - z_j : i, j in S_r} (Alg. 1):

- the design (Alg. 1, the lambda_r line): lambda_r = argmin_lambda max_{y in Y(S_r)} ||y||^2_{A(lambda)^-1},
  rho_r its value, over all K arms (``certainty.complexity.xy_design``);
- its size (Alg. 1, the N_r line, with the known sigma and our level):
  n_r = ceil(2 (1 + eps_round) sigma^2 rho_r L_r / beta_r^2), beta_r = max(width0, epsilon) 2^-(r-1) the
  phase's target width (Fiez et al., epsilon = 0: width0 = 1/4, i.e. beta_r = 2^-(r+1) and
  n_r = ceil(2 (1 + eps_round) 2^(2(r+1)) sigma^2 rho_r L_r)), at least d; rounded to whole tests
  (``numerics.design.round_design``), completed to span the arms, and with ``plate_size`` rounded up to whole
  plates (the extra tests follow the design). A first phase narrower than epsilon buys nothing: a phase whose
  widths are within epsilon always stops (below: the answer holds S_r's best-estimated arms, so
  (z_j - z_i)'theta_r <= 0 for i in it and j outside, and UCB_r(j - i) <= w_r(i, j) <= epsilon), so with
  epsilon above width0 the first phase is sized for epsilon (epsilon above the whole range of the means cost
  745 tests on soare:d=2 at width 1/4, d = 2 now; lin-tas stops after 8);
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

The certificate (``phased.elimination.PhaseRule``, the stopping rule) is the stopping rule's bound on the
last phase: per arm i of the current answer, max(0, max over j of S_{r+1} outside the answer of
UCB_r(j - i')) with i' = i for i in S_{r+1} and i' ranging over the answer's arms in S_{r+1} for accepted i
(the argument above), valid at any time on E. Each direction costs log(K^2 r^2 / delta) (the union over
the phase's pairs), not d log t.

The phases themselves (design, rounding, plates, decisions, certificate) are ``phased.elimination``'s,
shared with RAGE-GLM; this module adds the linear model: least squares, sigma's widths and the level.

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

from screenbai.bandits.core.params import SIGMA
from screenbai.bandits.core.registry import noise_scale, register
from screenbai.bandits.phased.elimination import MAX_PAIRS, PhasedElimination, max_pair_norm, pair_norms

__all__ = ["MAX_PAIRS", "RAGE", "max_pair_norm", "pair_norms"]


@register(
    "rage",
    description="RAGE (Fiez et al. 2019): phased elimination on fixed XY-optimal designs, whole plates per phase; "
    "delta-correct (best arm, top-m, epsilon-good) for sigma-sub-Gaussian noise of known sigma, no bound on ||theta||.",
)
class RAGE(PhasedElimination):
    """RAGE, phased elimination on XY-optimal designs (linear model); see the module docstring.

    Parameters: m, delta, epsilon, sigma (sub-Gaussian noise scale, assumed known; "oracle" in
    simulations), eps_round (rounding slack of the phase size), width0 (target width of the first phase,
    Fiez et al.'s 1/4, or epsilon when larger; any value keeps the guarantee), plate_size (phases rounded up
    to whole plates).
    """

    name = "rage"
    sigma: float = SIGMA

    @classmethod
    def resolve_oracle(cls, key: str, instance):
        if key == "sigma":
            return noise_scale(instance)
        raise ValueError(f"{cls.__name__} has no oracle value for parameter {key!r}")

    def target_width(self, r: int) -> float:
        """beta_r = max(width0, epsilon) 2^-(r-1): a phase at width epsilon already stops (module docstring), so
        the first is never sized narrower; the rule is fixed before any outcome, so the guarantee is kept."""
        return max(self.width0, self.epsilon) * 2.0 ** (-(r - 1))

    def _fit_phase(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The closed phase's estimate and the matrix P of its widths (width of y: ``_width_scale`` times
        ||y||_P): least squares on the phase's outcomes, P = A_r^-1; None when A_r is singular (a phase cut
        by the budget: no decision)."""
        A = (self.Z.T * self.phase_counts) @ self.Z
        if np.linalg.matrix_rank(A) < self.d_eff:
            return None
        P = np.linalg.pinv(A)
        return P @ (self.Z.T @ self.phase_sums), P

    def _width_scale(self, last: dict[str, Any]) -> float:
        """The width of a direction y of the last phase is this times ||y||_P: sigma sqrt(2 L_r)."""
        return self.sigma * math.sqrt(2.0 * last["level"])

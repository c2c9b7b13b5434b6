"""Top-m GLGapE: the m best arms of a logistic bandit, gap-based like m-LinGapE.

GLGapE ([KW]) names one arm.  A screen usually wants a short list, so this policy combines
m-LinGapE's gap-based top-m loop ([RKD21] Alg. 1 with LUCB-type b_t and stopping rule) with
GLGapE's logistic estimate and confidence widths.  Each adaptive round:

    theta <- penalised logistic MLE (GLGapE's fit)
    J     <- the m arms with the largest mu(x_a^T theta)
    B(i, j) = mu_i - mu_j + scale(t) * max_{c, c' in [c_mu, k_mu]} ||c x_i - c' x_j||_{M^-1}
              for j in J, i not in J (GLGapE's width, eq. 9 of [KW])
    (c, b) <- argmax B(i, j); stop and return J when B(c, b) <= epsilon
    pull the arm chosen by GLGapE's rule (L1 ratio or greedy) for y = c1 x_b - c2 x_c

The initial phase, calibration, MLE and width code are GLGapE's (this class only replaces its
round and its answer), so with m = 1 it makes exactly GLGapE's choices.

Guarantee.  With ``calibration="likelihood-ratio"`` (the default) it stops when the
likelihood-ratio confidence set (lr_set.py) rules out every pair (named arm, other arm): every
named arm is then within epsilon of every other arm for the true theta with probability
1 - delta, which makes the answer epsilon-correct; no assumption on c_mu or S.  With the width
calibrations: GIFA's theorem ([RKD21] Thm 1) makes any LUCB-type gap-based loop (epsilon, m,
delta)-PAC when its indices B(k, j) upper-bound mu_k - mu_j for all pairs at all times with
probability 1 - delta.  GLGapE's confidence set bounds the estimate in the M-norm, so with
``calibration="self-normalized"`` or ``"theory"`` (and valid c_mu, S) its widths cover every pair at
once: the same guarantee as GLGapE, for the top m.  Under the paper's calibrations the widths are
GLGapE's heuristic ones and so is the guarantee: measure the error rate (as for GLGapE).

Cost of a round: O(m (K d + d^2)) for the widths of the m columns of J, plus GLGapE's MLE.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from screenbai.bandits.core.params import M, run_state
from screenbai.bandits.core.registry import register
from screenbai.bandits.logistic.glgape import GLGapE, corner_widths
from screenbai.bandits.numerics.estimators import RidgeState
from screenbai.bandits.numerics.ties import argmax_random, top_m


@register("m-glgape")
class TopMGLGapE(GLGapE):
    """Top-m GLGapE: (epsilon, m, delta)-identification of the m best arms of a logistic bandit.

    Parameters
    ----------
    m : number of arms to name (1 <= m < K; an integer).  m = 1 is GLGapE.
    Every other parameter is GLGapE's (epsilon, delta, E, c_mu, k_mu, calibration, rule, ...).
    The answer is epsilon-correct when every named arm's mean is at least the m-th largest
    mean minus epsilon.
    """

    name = "m-glgape"
    m: int = M
    _top: np.ndarray | None = run_state()  # the current answer J(t)

    def _setup(self, features, p) -> None:
        super()._setup(features, p)  # sets and checks m (1 <= m < K)
        m = self.m
        self._top = None
        if "stat" in self.diagnostics:
            self.diagnostics["stat"] = float(self.K - m)
        self.diagnostics.update(m=m)

    def _pair(self, state: RidgeState, check: bool = True) -> tuple[int, int, int] | None:
        """(b_t, c_t, corner) from the estimate and the widths of ``state``'s design, or None when
        the stopping rule fires (``check``)."""
        t = self.n_samples + 1
        mu = expit(self.Z @ self.theta)
        J = top_m(mu, self.m, self.rng)
        self._top = J
        self._best = int(J[0])
        B, G = self._bounds_against(state, J, mu, self.width_scale(t))
        B[:, J] = -np.inf  # challengers are outside J
        k, c = divmod(argmax_random(B.ravel(), self.rng), self.K)
        b = int(J[k])
        if check and self.calibration == "likelihood-ratio":
            if self.likelihood.certifies(J, (b, int(c))):
                return None
        elif check and B[k, c] <= self.epsilon:
            return None
        return b, int(c), int(corner_widths(G[k, b], state.diag[c], G[k, c], self._c_mu, self.k_mu)[1])

    def _recommend(self, rng):
        if self._top is not None:
            return np.array(self._top)
        return super()._recommend(rng)

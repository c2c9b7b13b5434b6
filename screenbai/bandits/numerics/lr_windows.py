"""The likelihood-ratio set restarted late: a mixture of e-processes over a fixed grid of window starts.

``lr_set``'s set C_t = {theta : L_t(theta) <= P_t + log(1/delta)} pays in its level the regret of
every prediction since the first test, about (d/2) log t nats, and the early predictions, made from
few outcomes, cost the most. Restarting the product of likelihood ratios later drops them (with the
evidence of the outcomes before the restart). With starts and weights fixed before the run -- window
0 opens at the first test, window b = 1 .. B - 1 at the first batch boundary at or after
ceil(d rho^b) tests; weights pi_0 = FULL_WEIGHT, pi_b = (1 - FULL_WEIGHT) / (B - 1) --

    E_t^(b)(theta) = prod_{outcomes s in window b} q_s(y_s) / p_theta(y_s) = exp(L_t^(b)(theta) - P_t^(b))

is, under the true theta*, a non-negative martingale with mean 1 from its start: outcome s enters
window b when the window opened before s was seen, an event fixed before y_s (optional starting), and
q_s is fixed before y_s as in ``lr_set``. So M_t = sum_b pi_b E_t^(b)(theta*) is a non-negative
martingale with M_0 = 1, and by Ville's inequality, with probability at least 1 - delta, M_t < 1/delta
at every t; then for every b and t, theta* lies in

    C_t^(b) = {theta : L_t^(b)(theta) <= P_t^(b) + log(1 / (pi_b delta))}.

A stopping rule that returns an answer once any one C_t^(b) certifies it is therefore delta-correct,
whatever the sampling rule and whichever window certifies (each holds theta* on the same event).
The price is log(1/pi_b) nats of level (0.37 for the full window, 4.1 for a late one); the gain is the
regret of the predictions before the window, (d/2) log(t / start) nats, and it grows with d: measured
on kw_synthetic(K = 50, d = 10) log-tas stops after 1 901 tests (median of 5 runs) against 2 496 with
the full window alone, on CDK2's potency arms (d = 20) see docs/lower_bound.md. At d = 2, where the
regret is small, the full window decides and the half weight (FULL_WEIGHT was 0.5) cost about 7 % more tests, so
``late=False`` keeps the full window alone (log-tas does at d <= 2).

Each window keeps a sparse copy of the counts at its start (the pulled arms only), so the memory is
O(B min(t, K)), not O(B K).
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

#: window b > 0 opens at ceil(d RATIO^b) tests
RATIO = 1.5
#: number of windows, the full one included: the last late one opens at RATIO^19 d = 2 217 d tests (44 000 at
#: d = 20, 460 plates of 96; a longer run keeps testing its latest windows, it only opens no newer one)
COUNT = 20
#: weight of the full window (the rest is shared equally by the late ones). With COUNT = 20 a late window's
#: weight (1 - 0.69) / 19 = 0.0163 is above the 0.5 / 31 = 0.0161 of 32 windows at FULL_WEIGHT 0.5, and the
#: full window pays log(1/0.69) = 0.37 nats instead of log 2 = 0.69: every window's level is lower than with
#: 32 windows at 0.5 (the windows that open after 2 217 d tests, no run of the benchmark reaches), so a run
#: stops no later on the same outcomes. kw_synthetic d = 5 seed 0, where the full window decides 49 of 50
#: runs: docs/lower_bound.md
FULL_WEIGHT = 0.69
#: late windows tried at a stopping test: the most recent this many that opened before LATEST t tests (all of
#: them: trying more windows is free for validity, their weights are fixed; it was 6, and on kw_synthetic d = 5
#: seed 2 the 8th and 9th most recent windows (starts 38 and 26) certified the leader at 779 and 765 tests in 2
#: of 4 runs that stopped at 967 and 793; benchmarks/lr_slack.py --windows, docs/lower_bound.md)
RECENT = COUNT - 1
LATEST = 0.85


class LRWindows:
    """The window starts of one run and the sparse counts at each; ``windows`` gives, for each
    window tried, its counts, sums, prediction loss and extra level log(1/pi_b)."""

    def __init__(self, d: int, K: int, late: bool = True):
        """``late=False``: the full window alone, at weight 1 (lr_set's set itself)."""
        self.K = int(K)
        self.full_weight = FULL_WEIGHT if late else 1.0
        self.starts = [math.ceil(d * RATIO**b) for b in range(1, COUNT)] if late else []
        self.opened = 0  # planned starts passed so far
        #: per open late window: [tests at start, arm indices, counts, sums, prediction loss, log(1/pi)]
        self.snapshots: list[list] = []

    def before_batch(self, n_before: int, n: np.ndarray, sums: np.ndarray, arms: np.ndarray, rewards: np.ndarray,
                     pred_loss: float) -> None:
        """Open the windows whose start is reached at this batch boundary. ``n`` and ``sums`` already
        count the batch (``arms``, ``rewards``), ``pred_loss`` does not."""
        k = 0
        while self.opened < len(self.starts) and n_before >= self.starts[self.opened]:
            self.opened += 1
            k += 1
        if not k:
            return
        n0 = n - np.bincount(arms, minlength=self.K)
        s0 = sums - np.bincount(arms, weights=np.asarray(rewards, dtype=float), minlength=self.K)
        idx = np.flatnonzero(n0)
        weight = k * (1.0 - self.full_weight) / (COUNT - 1)  # starts passed together: one window, their weights
        self.snapshots.append([int(n_before), idx, n0[idx].astype(np.int64), s0[idx], float(pred_loss),
                               math.log(1.0 / weight)])

    def windows(self, n: np.ndarray, sums: np.ndarray, pred_loss: float,
                t: int) -> Iterator[tuple[int, np.ndarray, np.ndarray, float, float]]:
        """(start, counts, sums, prediction loss, log(1/pi)) of the full window, then of the most recent
        late windows that opened before LATEST t tests (latest first)."""
        yield 0, n, sums, pred_loss, math.log(1.0 / self.full_weight)
        late = [w for w in self.snapshots if w[0] <= LATEST * t]
        late = late[max(len(late) - RECENT, 0):]
        for start, idx, n0, s0, p0, log_inv in reversed(late):
            n_w, s_w = n.copy(), np.array(sums, dtype=float)
            n_w[idx] -= n0
            s_w[idx] -= s0
            yield start, n_w, s_w, pred_loss - p0, log_inv

    def state_dict(self) -> dict:
        return {"opened": self.opened, "snapshots": [list(w) for w in self.snapshots]}

    def load_state_dict(self, state: dict) -> None:
        self.opened = int(state["opened"])
        self.snapshots = [[int(w[0]), np.asarray(w[1], dtype=np.int64), np.asarray(w[2], dtype=np.int64),
                           np.asarray(w[3], dtype=float), float(w[4]), float(w[5])] for w in state["snapshots"]]

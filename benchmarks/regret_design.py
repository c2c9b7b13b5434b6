"""Would a design that spends fewer directions stop log-tas's likelihood-ratio set earlier? A model check.

The set {L_t <= P_t + log(1/delta)} certifies once the evidence against the nearest alternative, t / T(w), clears
log(1/delta) plus the predictions' regret, which for a Bayesian mixture over N(0, I / lambda) is about
(1/2) log det(I + t F(w) / lambda) + lambda |theta|^2 / 2 (Laplace; F(w) the Fisher information per test of
the allocation w). A design concentrated on fewer directions lowers the log det but raises T(w). This solves

    t / T(w) = log(1/delta) + (1/2) log det(I + t F(w) / lambda) + lambda |theta|^2 / 2

at the true theta for the exact Bernoulli-KL optimal allocation w* and for designs around it: w*^2 and w*^0.5
(renormalised: more and less concentrated), w* mixed with 1/5 of the uniform allocation, and w* kept on its d
largest weights. kw_synthetic(K = 50), epsilon = 0.1, delta = 0.05, lambda = 4, the best arm as the answer.

    python benchmarks/regret_design.py
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import expit

from screenbai.bandits.certainty.exact_logistic import exact_allocation_time, exact_characteristic_time
from screenbai.bandits.sim.generators import kw_synthetic

DELTA, EPSILON, LAM = 0.05, 0.1, 4.0
INSTANCES = ((5, 0), (5, 1), (5, 2), (10, 0), (10, 1), (10, 2))


def modelled_stop(X: np.ndarray, theta: np.ndarray, w: np.ndarray) -> tuple[float, float]:
    """(t solving the module docstring's equation, T(w) under the exact Bernoulli KL)."""
    T = exact_allocation_time(X, theta, w, epsilon=EPSILON)
    mu = expit(X @ theta)
    F = (X.T * (w * mu * (1.0 - mu))) @ X
    eye = np.eye(X.shape[1])

    def short(t: float) -> bool:
        level = math.log(1 / DELTA) + 0.5 * np.linalg.slogdet(eye + t * F / LAM)[1] + LAM * float(theta @ theta) / 2
        return t / T < level

    lo, hi = 1.0, 1e7
    for _ in range(80):  # bisection in log t
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if short(mid) else (lo, mid)
    return hi, T


def main() -> None:
    print("| kw_synthetic | T* (exact) | w* | w*^2 | w*^0.5 | 0.8 w* + 0.2 uniform | w* on its d largest |")
    print("|---|---|---|---|---|---|---|")
    for d, seed in INSTANCES:
        inst = kw_synthetic(K=50, d=d, seed=seed)
        X, theta = inst.features, inst.theta
        cx = exact_characteristic_time(X, theta, epsilon=EPSILON, answer=(int(np.argmax(X @ theta)),), tol=1e-2)
        w = np.asarray(cx.allocation, dtype=float)
        top = np.where(np.isin(np.arange(w.size), np.argsort(-w)[:d]), w, 0.0)
        designs = (w, w**2, np.sqrt(w), 0.8 * w + 0.2 / w.size, top)
        cells = []
        for v in designs:
            t, T = modelled_stop(X, theta, v / v.sum())
            cells.append(f"{t:,.0f} (T {T:.1f})")
        print(f"| d = {d}, seed {seed} | {cx.T_star:.1f} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()

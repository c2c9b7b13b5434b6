"""The forecast against actual stops: t solving t = T*(theta) beta(t, delta) with the true theta and
the likelihood-ratio set's approximate level (lr_set.forecast_level), beside the median stops measured
in docs/lower_bound.md (log-tas: benchmarks/tracking_ratios.py; GLGapE's default: issue 19's figures
and benchmarks/lower_bound.py), kw_synthetic(K = 50, seed 0), epsilon = 0.1, delta = 0.05.

    python benchmarks/forecast_check.py
"""

from __future__ import annotations

import numpy as np

from screenbai.bandits.certainty.complexity import characteristic_time
from screenbai.bandits.certainty.forecast import stopping_time
from screenbai.bandits.numerics.lr_set import forecast_level
from screenbai.bandits.sim.generators import kw_synthetic

# median tests at delta = 0.05 (docs/lower_bound.md, "The likelihood-ratio stop"): log-tas (200 / 100 /
# 20 runs at d = 2 / 5 / 10), GLGapE's default (20 runs), both with lr_set.RunningPredictor
MEASURED = {2: (529.5, 617), 5: (621, 690), 10: (2210, 1829)}


def main() -> None:
    print("| kw_synthetic d | T* | forecast | log-tas median (x forecast) | GLGapE median (x forecast) |")
    print("|---|---|---|---|---|")
    for d, (tas, glgape) in MEASURED.items():
        inst = kw_synthetic(K=50, d=d, seed=0)
        X, theta = inst.features, inst.theta
        best = int(np.argmax(X @ theta))
        T = characteristic_time(X, theta, model="logistic", sigma=0.5, epsilon=0.1, answer=(best,)).T_star
        t = stopping_time(T, lambda t, delta, p=X.shape[1]: forecast_level(t, p, delta), 0.05)
        print(f"| {d} | {T:.1f} | {t:,.0f} | {tas:,} ({tas / t:.2f}) | {glgape:,} ({glgape / t:.2f}) |")


if __name__ == "__main__":
    main()

"""The forecast by simulation (screenbai/bandits/certainty/simulated_forecast.py) against actual stops, many screens.

Per seed: K compounds with hit rates drawn from Beta(1, 3) (no model of the features), KL-LUCB (epsilon 0.1,
delta 0.05) in plates of ``--plate`` tests for ``--after`` plates; then the forecast as `status` makes it (rates
drawn from each compound's beta-binomial posterior, ``--runs`` copies of the policy run on to their stop) and the
screen itself run on to its stop. Printed per seed and in all: actual / forecast (median), the share within a
factor 2, and the share of stops inside the forecast's 10-90 % band, below it and above it.

    python benchmarks/simulated_forecast_check.py --seeds 40 --after 3
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from screenbai.bandits.certainty.simulated_forecast import quantiles, rate_draws, simulated_stops  # noqa: E402
from screenbai.bandits.core.registry import make_policy  # noqa: E402


def one_screen(seed: int, K: int, plate: int, after: int, runs: int) -> tuple[int, float, float, float]:
    rng = np.random.default_rng(seed)
    rates = rng.beta(1.0, 3.0, K)
    policy = make_policy("kl-lucb", np.eye(K), rng=seed, epsilon=0.1, delta=0.05)

    def one_plate() -> None:
        arms = policy.propose(plate)
        policy.tell(arms, (rng.random(arms.size) < rates[arms]).astype(float))

    for _ in range(after):
        if not policy.done:
            one_plate()
    own = np.random.default_rng(1000 + seed)  # the forecast's draws, apart from the screen's outcomes
    stops = simulated_stops(policy, rate_draws(policy.n, policy.sums, runs, own), plate, 100_000, own)
    median, low, high = quantiles(stops, [0.5, 0.1, 0.9])
    start = policy.n_samples
    while not policy.done:
        one_plate()
    return policy.n_samples - start, median, low, high


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=40)
    ap.add_argument("--compounds", type=int, default=40)
    ap.add_argument("--plate", type=int, default=40)
    ap.add_argument("--after", type=int, default=3, help="plates before the forecast")
    ap.add_argument("--runs", type=int, default=9, help="simulated runs per forecast (status: 9)")
    args = ap.parse_args()
    rows = []
    print("| seed | actual tests left | forecast | band |\n|---|---|---|---|")
    for seed in range(args.seeds):
        actual, median, low, high = one_screen(seed, args.compounds, args.plate, args.after, args.runs)
        rows.append((actual, median, low, high))
        print(f"| {seed} | {actual} | {median:.0f} | {low:.0f}-{high:.0f} |", flush=True)
    r = np.array(rows, dtype=float)
    ratio = r[:, 0] / r[:, 1]
    inside = np.mean((r[:, 0] >= r[:, 2]) & (r[:, 0] <= r[:, 3]))
    print(f"\nactual / forecast: median {np.median(ratio):.2f}; within a factor 2: "
          f"{np.mean((ratio >= 0.5) & (ratio <= 2)):.0%}; inside the band: {inside:.0%} (below "
          f"{np.mean(r[:, 0] < r[:, 2]):.0%}, above {np.mean(r[:, 0] > r[:, 3]):.0%}); {len(r)} screens")

if __name__ == "__main__":
    main()

"""Are GLGapE's plug-in constants conservative?  The check behind its guarantee where 500 runs cost too much.

GLGapE's "self-normalized" calibration (the default until the likelihood-ratio stopping rule, which
needs neither) holds with probability 1 - delta given a lower
bound c_mu on mu' and an upper bound S on ||theta*||.  By default both are plug-in estimates,
re-estimated whenever the number of tests doubles.  A full run at d = 10 takes a few hundred
thousand tests (minutes), so 500 runs per cell are out of reach on a small machine; this script
instead runs GLGapE up to a test cap and records, at every re-estimation, the plug-ins against the
instance's true values:

    c_mu  <= min_a mu'(x_a^T theta*)   (the oracle c_mu: the curvature over the arms)
    S     >= ||theta*||

A run whose plug-ins stay on the conservative side at every re-estimation keeps the theorem's
guarantee; the script prints how many re-estimations were not conservative, and by how much.

    python benchmarks/glgape_plugin_check.py --d 10 --seeds 0 1 --runs 50 --max-samples 20000
"""

from __future__ import annotations

import argparse

import numpy as np

from screenbai.bandits.core.runner import run
from screenbai.bandits.logistic.glgape import GLGapE
from screenbai.bandits.numerics.glm import c_mu_oracle
from screenbai.bandits.sim.generators import kw_synthetic


class PluginProbe(GLGapE):
    """GLGapE recording (tests, c_mu, S) at each calibration."""

    def _setup(self, features, p) -> None:
        super()._setup(features, p)
        self.seen: list[tuple[int, float, float]] = []

    def _calibrate(self):
        super()._calibrate()
        self.seen.append((int(self.n_samples), float(self.c_mu), float(self.width_scale.S)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--d", type=int, default=10)
    ap.add_argument("--K", type=int, default=50)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1], help="instance seeds (kw_synthetic)")
    ap.add_argument("--runs", type=int, default=50, help="runs per instance")
    ap.add_argument("--max-samples", type=int, default=20_000, help="tests per run (the run stops there)")
    ap.add_argument("--delta", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=2026, help="seed of the runs")
    args = ap.parse_args()
    for inst_seed in args.seeds:
        inst = kw_synthetic(K=args.K, d=args.d, seed=inst_seed)
        c_true, s_true = c_mu_oracle(inst.features, inst.theta), float(np.linalg.norm(inst.theta))
        rows = []
        for r, ss in enumerate(np.random.SeedSequence([args.seed, inst_seed]).spawn(args.runs)):
            policy_ss, env_ss = ss.spawn(2)
            policy = PluginProbe(
                inst.features,
                epsilon=0.1,
                delta=args.delta,
                max_samples=args.max_samples,
                rng=np.random.default_rng(policy_ss),
            )
            result = run(policy, inst.environment(np.random.default_rng(env_ss)))
            rows += [(r, t, c, s, result.stopped) for t, c, s in policy.seen]
        seen = np.array([(t, c, s) for _, t, c, s, _ in rows])
        bad_c, bad_s = seen[:, 1] > c_true, seen[:, 2] < s_true
        runs_bad = {r for (r, *_), bc, bs in zip(rows, bad_c, bad_s) if bc or bs}
        print(
            f"kw_synthetic(K={args.K},d={args.d},seed={inst_seed}): true c_mu {c_true:.4f}, ||theta*|| {s_true:.3f}; "
            f"{args.runs} runs up to {args.max_samples} tests, {len(seen)} re-estimations"
        )
        print(
            f"  c_mu plug-in: median {np.median(seen[:, 1]):.4f}, max {seen[:, 1].max():.4f}; "
            f"above the true c_mu in {int(bad_c.sum())} of {len(seen)}"
        )
        print(
            f"  S plug-in:    median {np.median(seen[:, 2]):.3f}, min {seen[:, 2].min():.3f}; "
            f"below ||theta*|| in {int(bad_s.sum())} of {len(seen)}"
        )
        print(f"  runs with any non-conservative plug-in: {len(runs_bad)} of {args.runs}")
        for lo, hi in zip([0, 100, 1000, 10_000], [100, 1000, 10_000, np.inf]):
            at = (seen[:, 0] >= lo) & (seen[:, 0] < hi)
            if at.any():
                print(
                    f"  tests in [{lo}, {hi}): {int(at.sum())} re-estimations, c_mu too high in "
                    f"{int((bad_c & at).sum())}, S too low in {int((bad_s & at).sum())}"
                )


if __name__ == "__main__":
    main()

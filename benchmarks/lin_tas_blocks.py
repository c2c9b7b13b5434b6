"""Where lin-tas's runs stop, block by block, and what its first designed block could do at best.

    python benchmarks/lin_tas_blocks.py --instance random0 --reps 200
    python benchmarks/lin_tas_blocks.py --instance random0 --reps 200 --point-share 0 --temperature 1
    python benchmarks/lin_tas_blocks.py --instance random0 --reps 200 --oracle --block2 50

Runs lin-tas at delta = 0.05 on benchmarks/tracking_ratios.py's instances and seeds (run r: policy
seed r, outcome seed 10 000 + r) and prints the median and mean tests, the errors and how many runs
stopped after each number of blocks. The options change the tuning for the study only: the point
mass's weight (tracking.blocks.POINT_SHARE, 0: the mixture alone), the union weights' temperature
(WEIGHTS_TEMPERATURE), ``--greedy-block2`` (block 2 sized like the later blocks, not at its cap);
``--oracle`` designs block 2 at the true theta (not an algorithm: the best that block can do) and
``--block2 N`` fixes its size.
"""

from __future__ import annotations

import argparse
from collections import Counter

import numpy as np
from tracking_ratios import setting

from screenbai.bandits import policy_for_instance
from screenbai.bandits.sim.instance import Environment
from screenbai.bandits.tracking import blocks, linear


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--instance", default="random0")
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--delta", type=float, default=0.05)
    ap.add_argument("--point-share", type=float, default=None)
    ap.add_argument("--temperature", type=float, default=None)
    ap.add_argument("--greedy-block2", action="store_true")
    ap.add_argument("--oracle", action="store_true")
    ap.add_argument("--block2", type=int, default=None)
    args = ap.parse_args(argv)
    if args.point_share is not None:
        blocks.POINT_SHARE = args.point_share
    if args.temperature is not None:
        blocks.WEIGHTS_TEMPERATURE = args.temperature
    inst, algo, params, _ = setting(args.instance, "")
    m = params.get("m", 1)
    kth = np.sort(inst.means)[::-1][m - 1]

    class Study(linear.LinearTrackAndStop):
        first_design_full = not args.greedy_block2

        def _estimate(self, counts, sums):
            if args.oracle and self._n_opened == 1:  # designing block 2
                return inst.theta
            return super()._estimate(counts, sums)

        def _design(self, b):
            if b == 2 and args.block2:
                growth, self.growth = self.growth, 0.0
                d_eff, self.d_eff = self.d_eff, args.block2 / 3.0
                try:
                    return super()._design(b)
                finally:
                    self.growth, self.d_eff = growth, d_eff
            return super()._design(b)

    tests, errors, nblocks = [], 0, Counter()
    for rep in range(args.seed, args.seed + args.reps):
        p = policy_for_instance(algo, inst, rng=rep, delta=args.delta, **params)
        p.__class__ = Study
        r = p.run(Environment(inst, rng=np.random.default_rng(10_000 + rep)))
        tests.append(r.n_samples)
        errors += bool((inst.means[list(r.recommendation)] < kth - 1e-12).any())
        nblocks[p.evidence.n_blocks] += 1
    print(f"{inst.name}: runs {args.reps}, median {np.median(tests):g}, mean {np.mean(tests):.1f}, errors {errors}, "
          f"runs stopped after b blocks: {dict(sorted(nblocks.items()))}")


if __name__ == "__main__":
    main()

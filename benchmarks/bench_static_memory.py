"""Peak memory and time of the static allocations' vectorised run (``runner.run``), and the bound the chunked
eq. 11 test keeps at the largest K a static allocation accepts.

    nice python benchmarks/bench_static_memory.py [--K 500] [--d 20] [--n 8192]

Runs g-allocation on random Gaussian features (K arms, dimension d) for n pulls (a budget it does not
reach: every data state is tested) and prints the peak of the memory numpy allocated during the run
(tracemalloc) and the wall time; then ``states_per_chunk`` and ``fast_path_bytes`` at K = 16 384.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np

from screenbai.bandits import make_policy
from screenbai.bandits.numerics.linalg import MAX_K_QUADRATIC
from screenbai.bandits.sim.instance import Instance


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--K", type=int, default=500)
    ap.add_argument("--d", type=int, default=20)
    ap.add_argument("--n", type=int, default=8192)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    X = rng.standard_normal((args.K, args.d))
    theta = 0.01 * rng.standard_normal(args.d)  # small gaps: no stop within n pulls
    inst = Instance(X, X @ theta, "gaussian", 1.0, theta)
    policy = make_policy("g-allocation", X, rng=0, allocation_seed=0, max_samples=args.n)
    policy.sequence.extend(args.n)  # the greedy sequence is generated before measuring (shared through a cache)
    env = inst.environment(np.random.default_rng(1))
    tracemalloc.start()
    t0 = time.perf_counter()
    result = policy.run(env)
    elapsed = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(f"g-allocation K = {args.K}, d = {args.d}, {result.n_samples} pulls (stopped: {result.stopped}): "
          f"peak {peak / 2**20:.1f} MiB, {elapsed:.2f} s")
    try:
        from screenbai.bandits.linear.static_rules import FAST_PATH_MAX_BYTES, fast_path_bytes, states_per_chunk
    except ImportError:  # before the chunked test
        return
    for d in sorted({args.d, 20}):
        print(f"K = {MAX_K_QUADRATIC}, d = {d}: {states_per_chunk(MAX_K_QUADRATIC, d)} states per chunk, "
              f"{fast_path_bytes(MAX_K_QUADRATIC, d) / 2**20:.0f} MiB <= cap {FAST_PATH_MAX_BYTES / 2**20:.0f} MiB "
              f"(one (4096, d, K) array: {4096 * d * MAX_K_QUADRATIC * 8 / 2**30:.1f} GiB)")


if __name__ == "__main__":
    main()

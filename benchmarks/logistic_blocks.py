"""log-tas with the per-direction logistic block evidence (tracking/logistic_blocks.py) against log-tas with the
likelihood-ratio set alone, at delta = 0.05, on benchmarks/lower_bound.py's instances.

    python benchmarks/logistic_blocks.py --instances kw_d10_s0 --reps 15
    python benchmarks/logistic_blocks.py --instances kw_d5_s0 --reps 15 --rule lr
    python benchmarks/logistic_blocks.py --instances kw_d5_s0 --reps 15 --whole-design
    python benchmarks/logistic_blocks.py --instances kw_d10_s0 --reps 1 --blocks
    python benchmarks/logistic_blocks.py --instances kw_d5_s0 kw_d10_s0 --reps 10 --oracle-d

Per instance and rule (``both``: LikelihoodOrBlocks, the LR set at delta/2 OR the block evidence at delta/2;
``lr``: the LR set at delta, today's default): runs, errors (epsilon-good answer or not), median and mean
tests, how many runs the block evidence stopped, and at each stop (``both``), for the leader's directions
x_i - x_j: the median over j of beta_b / sqrt(v_b) (the bias bound in noise standard deviations) in the
last three blocks, the block evidence's smallest log e-value over the rivals minus its level (how far it
was from stopping), and the full window's likelihood-ratio level minus its minimum (the nats the set's
width reflects). Seeds: policy rng = run index, outcomes rng = 1000 + run index.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import screenbai.bandits.tracking.logistic as log_tas
import screenbai.bandits.tracking.logistic_blocks as lb
from screenbai.bandits import policy_for_instance
from screenbai.bandits.sim.instance import Environment


def _at_stop(pol) -> dict:
    """The block evidence's state at the stop (module docstring)."""
    rule = pol.stopping_rule
    ev = rule.blocks
    i = int(pol._current_answer()[0])
    outside = np.arange(ev.K) != i
    ratios = []
    for b in range(max(ev.n_blocks - 3, 0), ev.n_blocks):
        c = ev._block(b)
        G = ev.X @ c.Q
        C = G[i] - G
        v = (C * C) @ c.wv
        beta = np.maximum(C, 0.0) @ c.wb_hi + np.maximum(-C, 0.0) @ c.wb_lo
        with np.errstate(all="ignore"):
            ratios.append(float(np.median((beta / np.sqrt(v))[outside])))
    deficit = float(np.min(ev.log_evalue(i)[outside]) - ev.level(i)) if ev.n_blocks else float("nan")
    sets = rule.lr._sets()
    width = float(sets[0].level - sets[0].f_min) if sets else float("nan")
    return {"bias_sd": float(np.mean(ratios)) if ratios else float("nan"), "deficit": deficit, "lr_nats": width}


def _per_block(pol, inst) -> None:
    """Per closed block (0-based) of one run, for the leader i's directions x_i - x_j: tests, median D_k, median
    over j of the one-sided and the two-sided bias bound in noise sd, directions used; then for the four
    rivals with the least evidence, the sd of the blocks' combined estimate against the sd of the pooled
    Fisher information of all tests at theta* (what the per-block combination keeps)."""
    from scipy.special import expit

    ev = pol.stopping_rule.blocks
    i = int(pol._current_answer()[0])
    outside = np.arange(ev.K) != i
    print(f"  level {ev.level(i):.2f}, margin {ev._margin(i):.3f}; block: tests, median D, bias/sd one-sided, "
          "two-sided, directions used")
    for b in range(ev.n_blocks):
        c = ev._block(b)
        G = ev.X @ c.Q
        C = G[i] - G
        v = (C * C) @ c.wv
        one = np.maximum(C, 0.0) @ c.wb_hi + np.maximum(-C, 0.0) @ c.wb_lo
        two = np.abs(C) @ np.maximum(c.wb_hi, c.wb_lo)
        ok = ev._direction_block(b, i)[2]
        with np.errstate(all="ignore"):
            r1, r2 = np.median((one / np.sqrt(v))[outside]), np.median((two / np.sqrt(v))[outside])
        blk = ev.blocks[b]
        print(f"  {b}: {int(blk['n'].sum())} {np.median(blk['D']):.2f} {r1:.2f} {r2:.2f} {int(ok[outside].sum())}")
    _, started, _, S, V, _, _ = ev._stats(i)
    raw = np.zeros(ev.K)  # the same blocks' combination without the bias bound subtracted
    for b in range(ev.n_blocks):
        c = ev._block(b)
        _, v, ok = ev._direction_block(b, i)
        ok &= started
        raw += np.where(ok, (c.pred[i] - c.pred) / np.where(ok, v, 1.0), 0.0)
    eta = pol.Z @ inst.theta
    H = (pol.Z.T * (pol.n * expit(eta) * expit(-eta))) @ pol.Z
    Hinv = np.linalg.pinv(H)
    le = ev.log_evalue(i)
    for j in np.argsort(np.where(outside, le, np.inf))[:4]:
        y = pol.Z[i] - pol.Z[j]
        sd = V[j] ** -0.5 if V[j] > 0 else float("inf")
        est = S[j] / V[j] if V[j] > 0 else float("nan")
        bare = raw[j] / V[j] if V[j] > 0 else float("nan")
        pooled = float(np.sqrt(y @ Hinv @ y))
        print(f"  rival {j}: log e {le[j]:.2f}; y'theta: truth {y @ inst.theta:.3f}, blocks' estimate {est:.3f} "
              f"(without the bias bound {bare:.3f}), its sd {sd:.3f}, sd of the pooled Fisher information {pooled:.3f}")


def main() -> None:
    from lower_bound import _specs

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--instances", nargs="+", default=["kw_d10_s0"])
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--rule", choices=("both", "lr"), default="both")
    ap.add_argument("--delta", type=float, default=0.05)
    ap.add_argument("--bias-sd", type=float, default=lb.BIAS_SD)
    ap.add_argument("--whole-design", action="store_true",
                    help="each block repeats the whole design (log-tas's TRACK_CUMULATIVE = False), as lin-tas's do")
    ap.add_argument("--blocks", action="store_true", help="print the per-block detail of the first run (rule both)")
    ap.add_argument("--oracle-d", action="store_true",
                    help="a diagnostic, not a valid rule: D_k = |x_k'(theta* - theta_ref)| from the truth (the bias "
                         "bound a perfect localisation would give)")
    args = ap.parse_args()
    log_tas.TRACK_CUMULATIVE = not args.whole_design
    log_tas.BLOCKS_MIN_D = 1 if args.rule == "both" else None
    lb.BIAS_SD = args.bias_sd
    specs = _specs()
    for name in args.instances:
        spec = specs[name]
        inst = spec.build()
        if args.oracle_d:
            truth = np.asarray(inst.theta, dtype=float)

            def opened(rule, counts, theta=truth, X=inst.features):
                if rule.Z.shape != X.shape or not np.allclose(rule.Z, X):
                    raise SystemExit("--oracle-d needs an instance whose features the policy uses unchanged")
                arms = np.flatnonzero(np.asarray(counts))
                ref = np.asarray(rule.policy.theta_hat, dtype=float)
                a, D = rule.Z[arms] @ ref, np.abs(rule.Z[arms] @ (theta - ref))
                rule.blocks.opened(counts, ref, a - D, a + D)

            lb.LikelihoodOrBlocks.block_opened = opened  # type: ignore[method-assign]
        t0 = time.time()
        tests, errors, by_blocks, stats = [], 0, 0, []
        for run in range(args.reps):
            pol = policy_for_instance("log-tas", inst, rng=run, epsilon=spec.epsilon, delta=args.delta)
            pol.run(Environment(inst, rng=np.random.default_rng(1000 + run)))
            answer = int(pol._current_answer()[0])
            errors += int(inst.means.max() - inst.means[answer] > spec.epsilon)
            tests.append(pol.n_samples)
            if args.rule == "both":
                by_blocks += pol.diagnostics.get("stopped_by") == "block evidence"
                stats.append(_at_stop(pol))
                if args.blocks and run == 0:
                    _per_block(pol, inst)
        label = args.rule + (" whole-design" if args.whole_design else "") + (" oracle-D" if args.oracle_d else "")
        line = (f"{name} rule={label} runs={args.reps} errors={errors} median={np.median(tests):g} "
                f"mean={np.mean(tests):.0f} stopped_by_blocks={by_blocks} seconds={time.time() - t0:.0f}")
        if stats:
            line += " " + " ".join(f"{k}={np.median([s[k] for s in stats]):.2f}" for k in stats[0])
        print(line, flush=True)


if __name__ == "__main__":
    main()

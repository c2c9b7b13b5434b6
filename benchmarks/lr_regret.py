"""Where the likelihood-ratio stop's cost goes: the regret of the running predictions at the stop.

    python benchmarks/lr_regret.py --dims 2 5 10 --reps 10 [--algorithm log-tas|glgape] [--out runs.csv]

Runs the algorithm (delta = 0.05, epsilon = 0.1) on kw_synthetic(K = 50, d, seed = 0) and records at
its stop: t, P_t (the loss of the predictions made before each outcome), L_t at the unpenalised
MLE, the regret P_t - L_t(MLE) (the part of the set's level log(1/delta) + regret beyond
log(1/delta)), (d/2) log(1 + t/d) (lr_set.forecast_level's approximation of it), the sampling
factor T(w_hat)/T* (w_hat the run's fraction of tests per arm, local Fisher form) and the stopping
factor t / (T(w_hat) log(1/(2.4 delta))). Then it replays other predictors on the run's own outcome
sequence, to the same t (cheap to compare; a better predictor would also stop earlier):
``plugin`` (the predictor before lr_set.RunningPredictor: the ridge MLE with lambda = 1,
q = (1 - w) mu(x'theta_{s-1}) + w/2, held at 0 until the tested arms span R^d) and
``bayes(lam)`` (RunningPredictor with the single prior N(0, I/lam)); and ``laplace(lam)``, the
Laplace value of the exact Bayes mixture's regret, L(theta_MAP) + lam/2 |theta_MAP|^2 +
(1/2) log det(I + H/lam) - L(MLE) (what a Bayesian predictor pays, about (d/2) log t).
Medians per d are printed.

    python benchmarks/lr_regret.py --optimal cdk2 --results <results/cdk2_potency> --reps 2

instead draws tests i.i.d. from the lower bound's optimal allocation w* (the best sampling possible)
on the CDK2 potency arms (benchmarks/tracking_ratios.py's instance; or kw2 / kw5 / kw10) and prints,
at a few t, RunningPredictor's regret against the truth, P_t - L_t(theta*), beside the evidence
t / T* that allocation collects: a likelihood-ratio stop needs t / T* >= log(1/delta) + that regret.
"""

from __future__ import annotations

import argparse
import math

import numpy as np
import pandas as pd
from scipy.special import expit

from screenbai.bandits import policy_for_instance
from screenbai.bandits.certainty.complexity import allocation_time, characteristic_time
from screenbai.bandits.numerics.glm import logistic_mle
from screenbai.bandits.numerics.lr_set import LikelihoodRatioSet
from screenbai.bandits.sim.generators import kw_synthetic
from screenbai.bandits.sim.instance import Environment


class _Recorder:
    """An environment that keeps the batches of (arms, outcomes) in the order they were told."""

    def __init__(self, env):
        self.env, self.batches = env, []

    def pull(self, arms):
        y = self.env.pull(arms)
        self.batches.append((np.asarray(arms).reshape(-1).copy(), np.asarray(y, dtype=float).reshape(-1).copy()))
        return y


def _counts(Z, batches):
    n, s = np.zeros(Z.shape[0]), np.zeros(Z.shape[0])
    for arms, ys in batches:
        np.add.at(n, arms, 1.0)
        np.add.at(s, arms, ys)
        yield n, s


def replay_plugin(Z, batches, lam=1.0) -> float:
    """P_t of the plug-in ridge MLE (the predictor lr_set used before RunningPredictor)."""
    from screenbai.bandits.numerics.lr_set import prediction_loss

    d = Z.shape[1]
    theta, loss, t = np.zeros(d), 0.0, 0
    for (arms, ys), (n, s) in zip(batches, _counts(Z, batches)):
        loss += prediction_loss(expit(Z[arms] @ theta), ys, t)
        t += arms.size
        pulled = np.flatnonzero(n)
        if pulled.size >= d and np.linalg.matrix_rank(Z[pulled]) == d:
            theta = logistic_mle(Z[pulled], n[pulled], s[pulled], lam, theta0=theta).theta
    return loss


def replay_running(Z, batches, precisions) -> float:
    from screenbai.bandits.numerics.lr_set import RunningPredictor

    pred, t = RunningPredictor(Z.shape[1], tuple(precisions)), 0
    for (arms, ys), (n, s) in zip(batches, _counts(Z, batches)):
        pred.observe(Z[arms], ys, t)
        t += arms.size
        pulled = np.flatnonzero(n)
        pred.refit(Z[pulled], n[pulled], s[pulled])
    return pred.loss


def laplace_regret(Z, n, s, lam, L_mle) -> float:
    pulled = np.flatnonzero(n)
    Zp, n, s = Z[pulled], n[pulled], s[pulled]
    th = logistic_mle(Zp, n, s, lam).theta
    eta = Zp @ th
    p = expit(eta)
    H = (Zp.T * (n * p * (1 - p))) @ Zp
    L = float(n @ np.logaddexp(0.0, eta) - s @ eta)
    return L + 0.5 * lam * th @ th + 0.5 * np.linalg.slogdet(np.eye(Z.shape[1]) + H / lam)[1] - L_mle


def regret_at_optimal_allocation(inst, reps: int, checkpoints=(200, 500, 1000, 1878, 3000)) -> list[dict]:
    from screenbai.bandits.numerics.lr_set import RunningPredictor, nll

    X, theta = inst.features, inst.theta
    c = characteristic_time(X, theta, model="logistic", sigma=0.5, epsilon=0.1)
    w = np.asarray(c.allocation, dtype=float)
    rng = np.random.default_rng(0)
    rows = []
    for rep in range(reps):
        n, s = np.zeros(X.shape[0]), np.zeros(X.shape[0])
        pred = RunningPredictor(X.shape[1])
        arms = rng.choice(X.shape[0], size=max(checkpoints), p=w / w.sum())
        ys = (rng.random(arms.size) < expit(X[arms] @ theta)).astype(float)
        for t, (a, y) in enumerate(zip(arms, ys), start=1):
            pred.observe(X[[a]], np.array([y]), t - 1)
            n[a] += 1
            s[a] += y
            pulled = np.flatnonzero(n)
            pred.refit(X[pulled], n[pulled], s[pulled])
            if t in checkpoints:
                L_true = nll(X[pulled], n[pulled], s[pulled], theta)
                rows.append({"rep": rep, "t": t, "regret_vs_truth": round(pred.loss - L_true, 2),
                             "evidence_t_over_Tstar": round(t / c.T_star, 1), "T_star": round(c.T_star, 2)})
                print(rows[-1], flush=True)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dims", type=int, nargs="+", default=[2, 5, 10])
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--algorithm", default="log-tas")
    ap.add_argument("--delta", type=float, default=0.05)
    ap.add_argument("--no-replay", action="store_true", help="only the figures at the stop")
    ap.add_argument("--optimal", default=None, help="cdk2, kw2, kw5 or kw10: the regret under i.i.d. w* sampling")
    ap.add_argument("--results", default="results/cdk2_potency")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    if args.optimal:
        from tracking_ratios import setting

        regret_at_optimal_allocation(setting(args.optimal, args.results)[0], args.reps)
        return
    rows = []
    for d in args.dims:
        inst = kw_synthetic(K=50, d=d, seed=0)
        Z = inst.features
        T_star = characteristic_time(Z, inst.theta, model="logistic", sigma=0.5, epsilon=0.1).T_star
        for rep in range(args.reps):
            p = policy_for_instance(args.algorithm, inst, rng=rep, delta=args.delta, epsilon=0.1)
            env = _Recorder(Environment(inst, rng=np.random.default_rng(10_000 + rep)))
            r = p.run(env)
            n, s = p.n.astype(float), p.sums.astype(float)
            pulled = np.flatnonzero(n)
            L_mle = LikelihoodRatioSet(Z[pulled], n[pulled], s[pulled], 0.0, np.zeros(d)).f_min
            predictor = getattr(p.stopping_rule, "predictor", None)  # log-tas: its rule keeps P_t; GLGapE: itself
            P_t = (p._predictor if predictor is None else predictor).loss
            t = r.n_samples
            T_w = allocation_time(Z, inst.theta, n / n.sum(), model="logistic", sigma=0.5, epsilon=0.1)
            row = {"d": d, "rep": rep, "tests": t, "P_t": P_t, "L_mle": L_mle, "regret": P_t - L_mle,
                   "half_d_log": 0.5 * d * math.log1p(t / d), "sampling": T_w / T_star,
                   "stopping": t / (T_w * math.log(1 / (2.4 * args.delta))),
                   "error": bool(inst.means[r.recommendation[0]] < inst.means.max() - 0.1)}
            if not args.no_replay:
                row["plugin"] = replay_plugin(Z, env.batches) - L_mle
                for lam in (1.0, 4.0, 16.0):
                    row[f"bayes({lam:g})"] = replay_running(Z, env.batches, (lam,)) - L_mle
                    row[f"laplace({lam:g})"] = laplace_regret(Z, n, s, lam, L_mle)
                row["running(1,4,16)"] = replay_running(Z, env.batches, (1.0, 4.0, 16.0)) - L_mle
            rows.append(row)
            print({k: round(v, 2) if isinstance(v, float) else v for k, v in row.items()}, flush=True)
    table = pd.DataFrame(rows)
    print(table.groupby("d").median(numeric_only=True).drop(columns="rep").round(2).to_string())
    if args.out:
        table.to_csv(args.out, index=False)


if __name__ == "__main__":
    main()

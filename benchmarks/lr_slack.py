"""How tight log-tas's likelihood-ratio stop is: the code's decision against an exact one, check by check.

    python benchmarks/lr_slack.py --instances kw_d5_s1 kw_d5_s2 kw_d10_s0 --reps 3 [--out checks.csv]

Runs log-tas (delta = 0.05, epsilon = 0.1) on kw_synthetic(K = 50, d, seed) and, at every check its
stopping rule runs (rules/likelihood.py, ``WindowedLikelihoodRatio.check``: every 1 % more tests, at
least d), for every window set C_t^(b) opened so far (``tried``: one of those the rule tries,
numerics/lr_windows.py) records:

- ``skip``: the quadratic pre-screen (``_surely_fails``) skips the window;
- ``code``: the set's own test says stop (``LikelihoodRatioSet.open_arms`` == 0, run even when skipped);
- ``exact``: no theta of C_t^(b) lies in Alt_i = {theta : some j has mu_j - mu_i > epsilon}, i the
  recommended arm, by an independent solver (``rival_value``): for each rival j the minimum of L over
  A_j = {x_i'theta = a < logit(1 - epsilon), x_j'theta >= h(a) = logit(mu(a) + epsilon)} (a convex
  problem whose minimum, when the MLE is outside A_j, lies on b = h(a): a 1-D search over a of the
  profile min L over {x_i'theta = a, x_j'theta = h(a)}, each a Newton solve on that (d - 2)-dim affine
  set, on a grid of 64 values of a then refined);
- ``glr``: min over j of that minimum minus L(MLE) (the exact GLR over Alt_i), and the level's
  distance above L(MLE), ``need`` = P_t^(b) + log(1/(pi_b delta)) - L(MLE).

At the run's stop it also prints t / T(w_hat) for the local Fisher form and the exact Bernoulli KL
(w_hat the run's proportions, at the true theta): what the evidence grows like.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import minimize_scalar
from scipy.special import expit, logit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from screenbai.bandits import policy_for_instance  # noqa: E402
from screenbai.bandits.certainty.complexity import allocation_time  # noqa: E402
from screenbai.bandits.certainty.exact_logistic import pair_infimum  # noqa: E402
from screenbai.bandits.numerics import lr_windows  # noqa: E402
from screenbai.bandits.numerics.lr_set import LikelihoodRatioSet  # noqa: E402
from screenbai.bandits.rules.likelihood import WindowedLikelihoodRatio  # noqa: E402
from screenbai.bandits.sim.generators import kw_synthetic  # noqa: E402
from screenbai.bandits.sim.instance import Environment  # noqa: E402


def _loss(Zp, n, s, theta) -> float:
    eta = Zp @ theta
    return float(n @ np.logaddexp(0.0, eta) - s @ eta)


def affine_min(Zp, n, s, C: np.ndarray, c: np.ndarray, start: np.ndarray) -> tuple[float, np.ndarray]:
    """min of L over {theta : C theta = c} (Newton in the null space of C, backtracking, to a Newton
    decrement of 1e-12; at most 200 steps: a value not converged is an upper end of the minimum)."""
    C = np.atleast_2d(C)
    theta = start + np.linalg.lstsq(C, c - C @ start, rcond=None)[0]
    _, sv, Vt = np.linalg.svd(C)
    N = Vt[(sv > 1e-12 * sv.max()).sum():].T  # basis of the null space
    f = _loss(Zp, n, s, theta)
    for _ in range(200):
        eta = Zp @ theta
        p = expit(eta)
        g = N.T @ (Zp.T @ (n * p - s))
        A = Zp @ N
        H = (A.T * (n * p * (1.0 - p))) @ A + 1e-14 * np.eye(N.shape[1])
        step = -np.linalg.solve(H, g)
        dec = -float(g @ step)
        if dec < 1e-12:
            break
        size = 1.0
        while size > 1e-12:
            cand = theta + size * (N @ step)
            fc = _loss(Zp, n, s, cand)
            if fc <= f - 1e-4 * size * dec:
                break
            size *= 0.5
        else:
            break
        theta, f = cand, fc
    return f, theta


def rival_value(Zp, n, s, theta_mle: np.ndarray, f_min: float, zi, zj, epsilon: float,
                level: float | None = None, a_lo: float = -8.0) -> float:
    """min of L over A_j = {mu(z_j'theta) - mu(z_i'theta) > epsilon} (see the module docstring). With
    ``level``, returns as soon as a value <= level is found (the rival stands)."""
    a_max = float(logit(1.0 - epsilon))
    a0, b0 = float(zi @ theta_mle), float(zj @ theta_mle)
    if a0 < a_max and expit(b0) - expit(a0) > epsilon:
        return f_min
    C = np.vstack([zi, zj])
    memo: dict[float, float] = {}
    start = [theta_mle]

    def F(a: float) -> float:
        if a not in memo:
            h = float(logit(expit(a) + epsilon))
            memo[a], th = affine_min(Zp, n, s, C, np.array([a, h]), start[0])
            start[0] = th
        return memo[a]

    grid = np.linspace(a_lo, a_max - 1e-3, 64)
    vals = []
    for a in grid:
        v = F(float(a))
        vals.append(v)
        if level is not None and v <= level:
            return v
    k = int(np.argmin(vals))
    lo, hi = grid[max(k - 1, 0)], grid[min(k + 1, grid.size - 1)]
    if hi > lo:
        res = minimize_scalar(F, bounds=(lo, hi), method="bounded", options={"xatol": 1e-7})
        return min(float(res.fun), min(vals))
    return float(min(vals))


def exact_decision(Zp, n, s, level, theta0, Z, i: int, epsilon: float, need_glr: bool):
    """(stop, first standing rival or -1, exact GLR over Alt_i or nan, f_min) for one window's set."""
    cs = LikelihoodRatioSet(Zp, n, s, level, theta0)  # its MLE only (lr_set's logistic_mle)
    if not cs.bounded:
        return False, -2, math.nan, math.nan
    th, f_min = cs.theta, cs.f_min
    order = np.argsort(-(Z @ th))
    order = order[order != i]
    first = -1
    best = math.inf
    for j in order:
        if first < 0:
            v = rival_value(Zp, n, s, th, f_min, Z[i], Z[j], epsilon, level=None if need_glr else level)
            if v <= level:
                first = int(j)
                if not need_glr:
                    break
        else:
            v = rival_value(Zp, n, s, th, f_min, Z[i], Z[j], epsilon)
        best = min(best, v)
    return first < 0, first, (best - f_min) if need_glr else math.nan, f_min


def _run_with_check(inst, rep: int, delta: float, epsilon: float, check):
    """Run log-tas (policy seed rep, outcomes seed 10 000 + rep) with ``WindowedLikelihoodRatio.check``
    replaced by ``check`` (which calls the original itself); the policy and its result."""
    orig = WindowedLikelihoodRatio.check
    WindowedLikelihoodRatio.check = check
    try:
        p = policy_for_instance("log-tas", inst, rng=rep, delta=delta, epsilon=epsilon)
        return p, p.run(Environment(inst, rng=np.random.default_rng(10_000 + rep)))
    finally:
        WindowedLikelihoodRatio.check = orig


def run_one(inst_name: str, rep: int, delta: float, epsilon: float, rows: list, glr_every: int) -> dict:
    d, seed = int(inst_name.split("_")[1][1:]), int(inst_name.split("_")[2][1:])
    inst = kw_synthetic(K=50, d=d, seed=seed)
    Z = inst.features
    orig = WindowedLikelihoodRatio.check
    count = [0]

    def check(self, answer=None):
        pol = self.policy
        if pol.n_samples >= self.next_check:
            ans = self.candidate() if answer is None else answer
            i = int(ans[0])
            eta = self.Z @ pol.theta_hat
            mu = expit(eta)
            slope = mu * (1.0 - mu)
            outside = np.ones(self.K, dtype=bool)
            outside[ans] = False
            jw = int(np.flatnonzero(outside)[np.argmax(eta[outside])])
            count[0] += 1
            tried = {w[0] for w in self._window_data()}
            recent, latest = lr_windows.RECENT, lr_windows.LATEST
            lr_windows.RECENT, lr_windows.LATEST = 10_000, 1.0  # every window opened so far
            try:
                every = list(self._window_data())
            finally:
                lr_windows.RECENT, lr_windows.LATEST = recent, latest
            for start, Zp, n, s, level, theta0 in every:
                skip = self._surely_fails(Zp, n, s, level, ans, outside, mu, slope, i, jw)
                cs = LikelihoodRatioSet(Zp, n, s, level, theta0)
                code = cs.bounded and cs.open_arms(self.Z, ans, self.epsilon) == 0
                need_glr = start == 0 and count[0] % glr_every == 0
                stop, first, glr, f_min = exact_decision(Zp, n, s, level, theta0, self.Z, i, self.epsilon, need_glr)
                rows.append({"instance": inst_name, "rep": rep, "t": int(pol.n_samples), "window": int(start),
                             "answer": i, "correct": bool(inst.means[i] >= inst.means.max() - epsilon),
                             "tried": start in tried, "skip": bool(skip), "code": bool(code), "exact": bool(stop),
                             "stands": first,
                             "glr": glr, "need": level - f_min})
        return orig(self, answer)

    p, r = _run_with_check(inst, rep, delta, epsilon, check)
    w = p.n / p.n.sum()
    rec = int(r.recommendation[0])  # the certified answer: both forms for it (not the easiest correct answer)
    T_loc = allocation_time(Z, inst.theta, w, model="logistic", sigma=0.5, epsilon=epsilon, answer=np.array([rec]))
    inf_exact = min(pair_infimum(Z, inst.theta, w, rec, j, epsilon)[0] for j in range(Z.shape[0]) if j != rec)
    return {"instance": inst_name, "rep": rep, "stop": int(r.n_samples), "answer": rec,
            "t_over_T_local": r.n_samples / T_loc, "t_over_T_exact": r.n_samples * inf_exact}


def run_choice(inst_name: str, rep: int, delta: float, epsilon: float, k: int) -> dict:
    """The first check at which the set's own test (``open_arms``) certifies each of the k arms with the
    largest fitted means (in any window tried), against the run's stop (which tests the largest alone)."""
    d, seed = int(inst_name.split("_")[1][1:]), int(inst_name.split("_")[2][1:])
    inst = kw_synthetic(K=50, d=d, seed=seed)
    orig = WindowedLikelihoodRatio.check
    first: dict[int, int] = {}

    def check(self, answer=None):
        pol = self.policy
        if pol.n_samples >= self.next_check and not first:
            top = np.argsort(-(self.Z @ pol.theta_hat))[:k]
            for _, Zp, n, s, level, theta0 in self._window_data():
                cs = LikelihoodRatioSet(Zp, n, s, level, theta0)
                for rank, a in enumerate(top):
                    if rank not in first and cs.bounded and cs.open_arms(self.Z, np.array([a]), self.epsilon) == 0:
                        first[rank] = int(pol.n_samples)
                        first[-1] = int(a)
        return orig(self, answer)

    p, r = _run_with_check(inst, rep, delta, epsilon, check)
    certified = [t for rank, t in first.items() if rank >= 0]
    return {"instance": inst_name, "rep": rep, "stop": int(r.n_samples), "first_any": min(certified, default=None),
            "first_rank": min((rank for rank in first if rank >= 0), key=lambda q: first[q], default=None),
            "arm": first.get(-1), "good": bool(inst.means[first[-1]] >= inst.means.max() - epsilon) if first else None}


def run_windows(inst_name: str, rep: int, delta: float, epsilon: float) -> dict:
    """The first check at which the set's own test certifies the leader in any window opened so far (not
    only the RECENT latest that opened before LATEST t, which the rule tries), against the run's stop."""
    d, seed = int(inst_name.split("_")[1][1:]), int(inst_name.split("_")[2][1:])
    inst = kw_synthetic(K=50, d=d, seed=seed)
    orig = WindowedLikelihoodRatio.check
    found: dict = {}

    def check(self, answer=None):
        pol = self.policy
        if pol.n_samples >= self.next_check and not found:
            ans = self.candidate() if answer is None else answer
            tried = [w[0] for w in self._window_data()]
            recent, latest = lr_windows.RECENT, lr_windows.LATEST
            lr_windows.RECENT, lr_windows.LATEST = 10_000, 1.0
            try:
                every = list(self._window_data())
            finally:
                lr_windows.RECENT, lr_windows.LATEST = recent, latest
            for start, Zp, n, s, level, theta0 in every:
                cs = LikelihoodRatioSet(Zp, n, s, level, theta0)
                if cs.bounded and cs.open_arms(self.Z, np.asarray(ans), self.epsilon) == 0:
                    late = sorted((w[0] for w in every if w[0] > 0), reverse=True)
                    found.update(t=int(pol.n_samples), start=int(start), tried=start in tried,
                                 recency=late.index(start) + 1 if start else 0)
                    break
        return orig(self, answer)

    p, r = _run_with_check(inst, rep, delta, epsilon, check)
    return {"instance": inst_name, "rep": rep, "stop": int(r.n_samples), **found}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--instances", nargs="+", default=["kw_d5_s1", "kw_d5_s2", "kw_d10_s0"])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--delta", type=float, default=0.05)
    ap.add_argument("--glr-every", type=int, default=5, help="the exact GLR (all rivals) at every this many checks")
    ap.add_argument("--out", default=None)
    ap.add_argument("--choice", type=int, default=0,
                    help="instead: when the set's own test certifies any of this many arms of largest fitted mean")
    ap.add_argument("--windows", action="store_true", help="instead: when any window certifies the leader")
    args = ap.parse_args(argv)
    if args.windows:
        for name in args.instances:
            for rep in range(args.reps):
                print(run_windows(name, rep, args.delta, 0.1), flush=True)
        return
    if args.choice:
        for name in args.instances:
            for rep in range(args.reps):
                print(run_choice(name, rep, args.delta, 0.1, args.choice), flush=True)
        return
    rows: list[dict] = []
    runs = []
    for name in args.instances:
        for rep in range(args.reps):
            t0 = time.perf_counter()
            runs.append(run_one(name, rep, args.delta, 0.1, rows, args.glr_every))
            df = pd.DataFrame([r for r in rows if r["instance"] == name and r["rep"] == rep])
            first_exact = df.loc[df["exact"] & df["tried"], "t"].min()
            first_exact_any = df.loc[df["exact"], "t"].min()
            first_code = df.loc[df["code"], "t"].min()
            first_unskipped = df.loc[df["code"] & ~df["skip"], "t"].min()
            print({**runs[-1], "first_exact": first_exact, "first_exact_any_window": first_exact_any,
                   "first_code": first_code,
                   "first_code_not_skipped": first_unskipped, "sec": round(time.perf_counter() - t0, 1)}, flush=True)
    if args.out:
        pd.DataFrame(rows).to_csv(args.out, index=False)
        pd.DataFrame(runs).to_csv(str(args.out).replace(".csv", "_runs.csv"), index=False)


if __name__ == "__main__":
    main()

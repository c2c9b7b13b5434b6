"""Where the unmet issue-19 targets come from: floors of the stopping rule, measured (docs/lower_bound.md,
"Why the d >= 10 targets are not met: measured floors").

For a logistic instance of benchmarks/lower_bound.py (kw_d10_s0, cdk2_potency, egfr_potency, ...), with
T*(theta*) and the optimal allocation w*(theta*) of the lower bound's local form
(``certainty.complexity``), epsilon = 0.1 on the means, LB = T* log(1/(2.4 delta)):

1. **Sampling oracle** (``--floors lr``): log-tas's own stopping rule (``rules.likelihood.
   WindowedLikelihoodRatio``: the likelihood-ratio set restarted late, the same schedule and test),
   fed by tests that track the TRUE w* (the arm with the largest w*_k (t + 1) - n_k, C-tracking with
   no estimate) instead of log-tas's plug-in blocks: sampling factor about 1, so tests / LB is the
   stopping factor alone. The answer tested is the arm with the largest fitted mean (as log-tas). With
   ``--exact`` the tests track the exact Bernoulli-KL bound's w*(theta*) instead (what log-tas tracks at
   d <= 10; ``certainty.exact_logistic``), and the summary adds the ratio to the exact LB. The late windows
   start above tracking.logistic.LATE_D dimensions, as in log-tas.
2. **The level at the stop, decomposed** (same runs; ``--floors lr``): for the window that certified
   (numerics/lr_windows.py), level - min L^(b) = log(1/delta) + log(1/pi_b) + [P^(b) - L^(b)(theta*)]
   + [L^(b)(theta*) - L^(b)(theta_mle)]: the predictions' regret against the truth and the nuisance
   part (what a d-parameter fit gains over the truth, about chi^2_d / 2), and the share of the tests
   the window holds (evidence dropped with the outcomes before it); against log(1/(2.4 delta)), the
   bound's factor. Beside it, the evidence the window holds, t_window / T* (the expected GLR of the
   binding direction at the truth), and the known-theta GLR of 4. on the window's outcomes (the
   smallest over the rivals). With ``--sampler log-tas`` the same decomposition at log-tas's own stops.
3. **One-look Gaussian union floor** (``--floors gauss``; no run): in the local Gaussian model at w*
   (the margins' estimates g_hat = g + Y dtheta, dtheta ~ N(0, (t H(w*, theta*))^-1)), the median over
   the noise of the smallest t at which EVERY rival's z-statistic g_hat_j / sd_j clears z: at
   z = Phi^-1(1 - delta / (K - 1)) (Bonferroni over the K - 1 fixed directions at uniform weights: by
   Neyman-Pearson no level-delta/(K-1) test of one direction is more powerful at a fixed t, and a
   sequential rule stopped by t is such a test), at z = sqrt(2 log((K - 1) / delta)) (Chernoff's form,
   which the sub-Gaussian / e-process proofs pay) and at z = Phi^-1(1 - delta) (no union at all).
   Monte Carlo over ``--draws`` draws of dtheta, bisection on t.
4. **Known-theta GLR** (``--floors glr``; same streams as 1, cheap): for each rival j the one-parameter
   family theta(lam) = theta* - lam H*^-1 y_j (the least favourable direction at the truth, H* = H(w*,
   theta*), y_j = mu'_i x_i - mu'_j x_j), the alternative {mu_j - mu_i > epsilon} along it, and
   GLR_j = min_{alt} L_t - min L_t along the line; stop when min_j GLR_j >= log(1/delta). An INVALID
   rule (it knows theta*'s other directions and uses no union, no anytime term): about the best any
   GLR-type stop can do at that sampling. Tested after every 0.5 % more tests. ``--glr-union``: the
   threshold log((K - 1)/delta) instead (a union over the rivals at uniform weights, nuisance still known).

    python benchmarks/stopping_floors.py --instances kw_d10_s0 --reps 20 --floors lr glr gauss
    python benchmarks/stopping_floors.py --instances cdk2_potency --reps 10 --out cdk2.csv
    python benchmarks/stopping_floors.py --instances kw_d10_s0 --sampler log-tas --reps 10 --floors lr
    python benchmarks/stopping_floors.py --instances kw_d5_s1 kw_d5_s2 --exact --reps 50 --floors lr

(CDK2 / EGFR: benchmarks/lower_bound.py's cached arms; EGFR needs SCREENBAI_SHARED_DATA once.)
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import expit, log_expit
from scipy.stats import norm

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from lower_bound import _specs  # noqa: E402  (the benchmark's instances)

from screenbai.bandits import policy_for_instance  # noqa: E402
from screenbai.bandits.certainty.complexity import allocation_time, characteristic_time, log_factor  # noqa: E402
from screenbai.bandits.numerics.lr_set import LikelihoodRatioSet, nll  # noqa: E402
from screenbai.bandits.rules.likelihood import WindowedLikelihoodRatio  # noqa: E402
from screenbai.bandits.sim.instance import Environment  # noqa: E402
from screenbai.bandits.tracking.logistic import LATE_D  # noqa: E402

EPSILON = 0.1


class _Owner:
    """The minimal owner a WindowedLikelihoodRatio reads: counts, sums, sample count, estimate, diagnostics."""

    def __init__(self, K: int, d: int):
        self.n = np.zeros(K, dtype=np.int64)
        self.sums = np.zeros(K)
        self.n_samples = 0
        self.theta_hat = np.zeros(d)
        self.diagnostics: dict = {}


class Problem:
    """The instance's truth, w* (the local form's, or with ``exact`` the exact bound's), and the local-form
    directions of the answer against every rival."""

    def __init__(self, inst, delta: float, exact: bool = False):
        self.inst, self.delta = inst, delta
        self.Z, self.theta = np.asarray(inst.features, float), np.asarray(inst.theta, float)
        self.K, self.d = self.Z.shape
        c = characteristic_time(self.Z, self.theta, model="logistic", sigma=0.5, epsilon=EPSILON)
        self.T_star, self.w = c.T_star, np.asarray(c.allocation, float) / np.sum(c.allocation)
        self.T_exact = math.nan
        if exact:
            ce = characteristic_time(self.Z, self.theta, model="logistic", epsilon=EPSILON, exact=True, tol=1e-2)
            self.T_exact, self.w = ce.T_star, np.asarray(ce.allocation, float) / np.sum(ce.allocation)
        self.answer = int(np.atleast_1d(c.answer)[0])
        self.LB = self.T_star * log_factor(delta)
        eta = self.Z @ self.theta
        self.mu = expit(eta)
        slope = self.mu * (1 - self.mu)
        self.rivals = np.delete(np.arange(self.K), self.answer)
        i = self.answer
        self.Y = slope[i] * self.Z[i] - slope[self.rivals, None] * self.Z[self.rivals]  # (K-1) x d
        self.g = self.mu[i] - self.mu[self.rivals] + EPSILON  # local margins
        self.H = (self.Z.T * (self.w * slope)) @ self.Z  # H(w*, theta*)
        self.U = np.linalg.solve(self.H, self.Y.T)  # d x (K-1): H*^-1 y_j
        self.good = self.mu >= self.mu.max() - EPSILON

    # ------------------------------------------------------------------ floor 3
    def gaussian_floor(self, z: float, draws: int, rng) -> float:
        """Median t (in tests) at which every rival's one-look z-statistic clears z, local Gaussian model."""
        C = np.linalg.cholesky(np.linalg.inv(self.H))
        E = rng.standard_normal((draws, self.d)) @ C.T @ self.Y.T  # Y dtheta at t = 1: (draws, K-1)
        sd1 = np.sqrt(np.einsum("ij,ji->i", self.Y, self.U))  # sd_j at t = 1

        def frac(t: float) -> float:
            zs = (self.g + E / math.sqrt(t)) / (sd1 / math.sqrt(t))
            return float(np.mean(zs.min(axis=1) >= z))

        lo, hi = 1e-3, 1.0
        while frac(hi) < 0.5:
            hi *= 2
        for _ in range(40):
            mid = math.sqrt(lo * hi)
            lo, hi = (lo, mid) if frac(mid) >= 0.5 else (mid, hi)
        return hi

    # ------------------------------------------------------------------ floor 4
    def glr_min(self, n: np.ndarray, s: np.ndarray) -> float:
        """min_j GLR_j of the known-theta one-parameter families (module docstring, 4.)."""
        pulled = np.flatnonzero(n)
        Zp, nn, ss = self.Z[pulled], n[pulled].astype(float), s[pulled]
        A = Zp @ self.theta  # P
        B = Zp @ self.U  # P x J
        i, J = self.answer, self.rivals
        ci, cj = self.Z[i] @ self.U, np.einsum("jd,dj->j", self.Z[J], self.U)  # d eta / d(-lam)
        ei, ej = self.Z[i] @ self.theta, self.Z[J] @ self.theta

        def alt(lam):  # mu_j - mu_i > epsilon at theta* - lam u_j
            return expit(ej - lam * cj) - expit(ei - lam * ci) > EPSILON

        # the boundary lam_b > 0 (bisection; the local gap falls at rate y'H^-1 y per unit lam)
        hi = np.full(J.size, 1.0)
        for _ in range(60):
            miss = ~alt(hi)
            if not miss.any():
                break
            hi[miss] *= 2
        lo = np.zeros(J.size)
        for _ in range(50):
            mid = 0.5 * (lo + hi)
            a = alt(mid)
            hi, lo = np.where(a, mid, hi), np.where(a, lo, mid)
        lam_b = hi

        def L(lam):  # L_t(theta* - lam u_j) for every j
            eta = A[:, None] - B * lam[None, :]
            return (nn[:, None] * -log_expit(-eta)).sum(0) - (ss[:, None] * eta).sum(0)

        lam = np.zeros(J.size)
        for _ in range(40):  # damped Newton on the convex 1-d losses
            eta = A[:, None] - B * lam[None, :]
            p = expit(eta)
            g1 = -(B * (nn[:, None] * p - ss[:, None])).sum(0)
            g2 = (B**2 * (nn * 1.0)[:, None] * p * (1 - p)).sum(0)
            step = -g1 / np.maximum(g2, 1e-12)
            step = np.clip(step, -1.0 - np.abs(lam), 1.0 + np.abs(lam))
            lam = lam + step
            if np.max(np.abs(step)) < 1e-9:
                break
        glr = np.where(lam >= lam_b, 0.0, L(lam_b) - L(lam))
        return float(np.maximum(glr, 0.0).min())


def _leader(Z, theta_hat) -> int:
    return int(np.argmax(Z @ theta_hat))


def _decompose(rule: WindowedLikelihoodRatio, owner, pb: Problem) -> dict:
    """The certifying window's level, split (module docstring, 2.)."""
    start = owner.diagnostics.get("window_start", 0.0)
    windows = rule.windows.windows(owner.n, owner.sums, rule.predictor.loss, owner.n_samples)
    _, n_w, s_w, P_w, log_inv = next(w for w in windows if w[0] == start)
    pulled = np.flatnonzero(n_w)
    Zp, nw, sw = pb.Z[pulled], n_w[pulled], s_w[pulled]
    L_min = LikelihoodRatioSet(Zp, nw, sw, 0.0, owner.theta_hat).f_min
    L_true = nll(Zp, nw, sw, pb.theta)
    return {"window_start": int(start), "window_share": float(nw.sum() / owner.n_samples),
            "log_1_delta": math.log(1 / pb.delta), "log_1_pi": float(log_inv),
            "regret_vs_truth": float(P_w - L_true), "nuisance_fit": float(L_true - L_min),
            "level_above_min": float(math.log(1 / pb.delta) + log_inv + P_w - L_min),
            "window_evidence": float(nw.sum() / pb.T_star),
            "known_glr_in_window": pb.glr_min(n_w, s_w)}


def oracle_run(pb: Problem, rep: int, floors: set, max_tests: int, union: bool = False) -> dict:
    """Tests tracking the true w*; log-tas's stopping rule (1, 2) and the known-theta GLR stop (4) on the stream."""
    rng = np.random.default_rng(20_000 + rep)
    owner = _Owner(pb.K, pb.d)
    rule = WindowedLikelihoodRatio(pb.Z, 1, EPSILON, pb.delta, 0.1, pb.d > LATE_D).attach(owner)
    t_lr = t_glr = None
    row: dict = {}
    thr = math.log((pb.K - 1 if union else 1) / pb.delta)
    next_glr = 0
    spanned = False
    while owner.n_samples < max_tests:
        t = owner.n_samples
        a = int(np.argmax(pb.w * (t + 1) - owner.n))
        y = float(rng.random() < pb.mu[a])
        owner.n[a] += 1
        owner.sums[a] += y
        owner.n_samples += 1
        if "lr" in floors and t_lr is None:
            rule.observe(np.array([a]), np.array([y]))
            pulled = np.flatnonzero(owner.n)
            if not spanned:
                spanned = pulled.size >= pb.d and np.linalg.matrix_rank(pb.Z[pulled]) == pb.d
            if spanned:
                owner.theta_hat = rule.predictor.theta[int(np.flatnonzero(rule.predictor.lams == 1.0)[0])].copy()
                ans = rule.check(np.array([_leader(pb.Z, owner.theta_hat)]))
                if ans is not None:
                    t_lr = owner.n_samples
                    row.update(lr_tests=t_lr, lr_error=not bool(pb.good[int(ans[0])]), **_decompose(rule, owner, pb))
        if "glr" in floors and t_glr is None and owner.n_samples >= next_glr:
            next_glr = owner.n_samples + max(1, int(0.005 * owner.n_samples))
            if pb.glr_min(owner.n, owner.sums) >= thr:
                t_glr = owner.n_samples
                row["glr_tests"] = t_glr
        if ("lr" not in floors or t_lr is not None) and ("glr" not in floors or t_glr is not None):
            break
    row["evidence_at_stop"] = row.get("lr_tests", math.nan) / pb.T_star
    row["sampling_factor"] = allocation_time(pb.Z, pb.theta, owner.n, model="logistic", sigma=0.5,
                                             epsilon=EPSILON) / pb.T_star
    if math.isfinite(pb.T_exact):
        row["sampling_factor_exact"] = allocation_time(pb.Z, pb.theta, owner.n, model="logistic", epsilon=EPSILON,
                                                       exact=True) / pb.T_exact
    row["capped"] = owner.n_samples >= max_tests
    return row


def logtas_run(pb: Problem, rep: int, max_tests: int) -> dict:
    """log-tas itself (its plug-in sampling) with the same decomposition at its stop."""
    p = policy_for_instance("log-tas", pb.inst, rng=rep, delta=pb.delta, epsilon=EPSILON, max_samples=max_tests)
    r = p.run(Environment(pb.inst, rng=np.random.default_rng(10_000 + rep)))
    row = {"lr_tests": r.n_samples, "lr_error": not bool(pb.good[int(r.recommendation[0])]),
           "sampling_factor": allocation_time(pb.Z, pb.theta, p.n, model="logistic", sigma=0.5,
                                              epsilon=EPSILON) / pb.T_star,
           "evidence_at_stop": r.n_samples / pb.T_star}
    owner = p
    row.update(_decompose(p.likelihood, owner, pb))
    return row


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--instances", nargs="+", default=["kw_d10_s0"])
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--delta", type=float, default=0.05)
    ap.add_argument("--floors", nargs="+", default=["lr", "glr", "gauss"], choices=["lr", "glr", "gauss"])
    ap.add_argument("--sampler", default="oracle", choices=["oracle", "log-tas"])
    ap.add_argument("--draws", type=int, default=4000, help="Monte Carlo draws of the Gaussian floor")
    ap.add_argument("--glr-union", action="store_true", help="known-theta GLR stop at log((K - 1)/delta)")
    ap.add_argument("--max-tests", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=0, help="runs use seeds seed .. seed + reps - 1")
    ap.add_argument("--exact", action="store_true", help="the sampling oracle tracks the exact bound's w*")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    specs = _specs()
    rows, summary = [], []
    for name in args.instances:
        pb = Problem(specs[name].build(), args.delta, exact=args.exact)
        head = {"instance": name, "K": pb.K, "d": pb.d, "T_star": round(pb.T_star, 3), "LB": round(pb.LB, 2)}
        if args.exact:
            head.update(T_star_exact=round(pb.T_exact, 3), LB_exact=round(pb.T_exact * log_factor(args.delta), 2))
        print(head, flush=True)
        if "gauss" in args.floors:
            rng = np.random.default_rng(1)
            for label, z in (("union_NP", norm.isf(args.delta / (pb.K - 1))),
                             ("union_chernoff", math.sqrt(2 * math.log((pb.K - 1) / args.delta))),
                             ("one_direction_NP", norm.isf(args.delta))):
                t = pb.gaussian_floor(z, args.draws, rng)
                summary.append({**head, "floor": f"gauss_{label}", "runs": 0, "median_tests": round(t, 1),
                                "ratio": round(t / pb.LB, 2), "z": round(z, 3),
                                "single_direction": round(z**2 / 2 / log_factor(args.delta), 2)})
                print(summary[-1], flush=True)
        run_floors = set(args.floors) - {"gauss"}
        if not run_floors:
            continue
        for rep in range(args.seed, args.seed + args.reps):
            t0 = time.process_time()
            if args.sampler == "oracle":
                row = oracle_run(pb, rep, run_floors, args.max_tests, args.glr_union)
            else:
                row = logtas_run(pb, rep, args.max_tests)
            row.update(head, rep=rep, sampler=args.sampler, cpu_s=round(time.process_time() - t0, 1))
            rows.append(row)
            print({k: round(v, 3) if isinstance(v, float) else v for k, v in row.items()}, flush=True)
            if args.out:
                pd.DataFrame(rows).to_csv(args.out, index=False)
        df = pd.DataFrame([r for r in rows if r["instance"] == name])
        for col, label in (("lr_tests", f"lr_{args.sampler}"), ("glr_tests", "known_theta_glr")):
            if col in df and df[col].notna().any():
                err = int(df["lr_error"].sum()) if col == "lr_tests" else 0
                med = float(df[col].median())
                summary.append({**head, "floor": label, "runs": int(df[col].notna().sum()), "errors": err,
                                "median_tests": med, "ratio": round(med / pb.LB, 2)})
                if args.exact:
                    summary[-1]["ratio_exact"] = round(med / head["LB_exact"], 2)
                print(summary[-1], flush=True)
        if "level_above_min" in df:
            cols = ["window_share", "log_1_pi", "regret_vs_truth", "nuisance_fit", "level_above_min",
                    "window_evidence", "known_glr_in_window", "evidence_at_stop", "sampling_factor"]
            cols += ["sampling_factor_exact"] if "sampling_factor_exact" in df else []
            print("medians at the stop:", df[cols].median().round(2).to_dict(), flush=True)
    print(pd.DataFrame(summary).to_string(index=False))
    if args.out:
        pd.DataFrame(rows).to_csv(args.out, index=False)
        pd.DataFrame(summary).to_csv(Path(args.out).with_suffix(".summary.csv"), index=False)


if __name__ == "__main__":
    main()

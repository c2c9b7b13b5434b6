"""Reproduce Kazerouni & Wein's synthetic study of GLGapE (spec 3.4, Appendix A.1).

    python benchmarks/reproduce_kw_synthetic.py            # 20 instances per point
    python benchmarks/reproduce_kw_synthetic.py --quick    # 5 instances per point, fewer points

Instances: ``kw_synthetic(K, d, seed)`` (theta* ~ N(0, I_d), features U[-1, 1]^d, logistic
Bernoulli rewards); one GLGapE run per instance (instance seed = replication index).  GLGapE uses
the reinterpreted calibration, lambda_reg = 1, the ratio (LP) rule, delta = 0.05 and the oracle
c_mu = min_a mu'(x_a^T theta*) unless stated; a second series uses the plug-in estimate (P9.3).
Sweeps: tau vs K (d = 10, eps = 0.1), tau vs d (K = 100, eps = 0.1), tau vs eps (K = 100,
d = 10).  Then the GapE comparison at K = 50, d = 10, eps = 0.1: GLGapE against UGapE with
Hoeffding widths on independent Bernoulli arms ("ugape", threshold="hoeffding").
Writes docs/reproduction/kw_synthetic.md and kw_synthetic.png.
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm import tqdm

from screenbai.bandits.core.runner import run_one
from screenbai.bandits.sim.generators import kw_synthetic

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "reproduction"
BASE = {"epsilon": 0.1, "delta": 0.05, "c_mu": "oracle", "calibration": "reinterpreted"}  # the paper's
MAX_SAMPLES = 2_000_000


def _task(args) -> dict:
    study, x, K, d, inst_seed, algorithm, params = args
    inst = kw_synthetic(K=K, d=d, seed=inst_seed)
    ss = np.random.SeedSequence(10_000).spawn(inst_seed + 1)[inst_seed]  # replication = instance seed
    rec = run_one(inst, algorithm, {**params, "max_samples": MAX_SAMPLES}, ss)
    rec.update(study=study, x=x, K=K, d=d, instance_seed=inst_seed)
    return rec


def build_tasks(quick: bool) -> list[tuple]:
    n_inst = 5 if quick else 20
    Ks = [20, 50, 100, 200] if quick else [20, 50, 100, 200, 400]
    ds = [2, 5, 10, 15] if quick else [2, 5, 10, 15, 20]
    epss = [0.05, 0.1, 0.2, 0.3] if quick else [0.05, 0.1, 0.15, 0.2, 0.3]
    tasks = []
    for s in range(n_inst):
        tasks += [("K", K, K, 10, s, "glgape", BASE) for K in Ks]
        tasks += [("d", d, 100, d, s, "glgape", BASE) for d in ds]
        tasks += [("eps", e, 100, 10, s, "glgape", {**BASE, "epsilon": e}) for e in epss]
        tasks += [("K_estimated_cmu", K, K, 10, s, "glgape", {**BASE, "c_mu": "estimate"}) for K in Ks]
    # GapE comparison (spec 3.4): GLGapE on every instance, UGapE-Hoeffding on a few (about 60k pulls each)
    n_gape = 3 if quick else 10
    for s in range(n_gape):
        tasks.append(("gape", "GLGapE", 50, 10, s, "glgape", BASE))
        ugape = {"epsilon": 0.1, "delta": 0.05, "threshold": "hoeffding"}
        tasks.append(("gape", "UGapE-hoeffding", 50, 10, s, "ugape", ugape))
    # longest first, so that the two workers finish together
    weight = {"ugape": 100}
    return sorted(tasks, key=lambda t: -weight.get(t[5], 1) * t[2] * t[3] / (t[6].get("epsilon", 0.1) / 0.1) ** 2)


def summarise(df: pd.DataFrame, study: str) -> pd.DataFrame:
    sub = df[df.study == study].copy()
    sub["x"] = pd.to_numeric(sub["x"])  # the x column also holds algorithm names (GapE study)
    g = sub.groupby("x", sort=True)
    return g.agg(
        instances=("samples", "size"),
        mean_tau=("samples", "mean"),
        median_tau=("samples", "median"),
        min_tau=("samples", "min"),
        max_tau=("samples", "max"),
        eps_correct=("correct", "mean"),
        not_stopped=("stopped", lambda s: int((~s.astype(bool)).sum())),
        mean_time_s=("wall_time_s", "mean"),
    ).reset_index()


def _fmt(t: pd.DataFrame) -> str:
    t = t.copy()
    for c in ("mean_tau", "median_tau"):
        t[c] = t[c].map(lambda v: f"{v:.0f}")
    t["eps_correct"] = t["eps_correct"].map(lambda v: f"{100 * v:.0f}%")
    t["mean_time_s"] = t["mean_time_s"].map(lambda v: f"{v:.2f}")
    return t.to_markdown(index=False)


def plot(df: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for ax, (study, label, title) in zip(
        axes,
        [("K", "K (number of arms)", "tau vs K (d = 10, eps = 0.1)"),
         ("d", "d (dimension)", "tau vs d (K = 100, eps = 0.1)"),
         ("eps", "epsilon", "tau vs eps (K = 100, d = 10)")],
    ):
        s = summarise(df, study)
        sub = df[df.study == study]
        sub = sub.assign(x=pd.to_numeric(sub["x"]))
        ax.scatter(sub.x, sub.samples, s=8, alpha=0.35, color="gray", label="one instance")
        ax.plot(s.x, s.mean_tau, "o-", color="C0", label="mean tau (oracle c_mu)")
        if study == "K":
            e = summarise(df, "K_estimated_cmu")
            ax.plot(e.x, e.mean_tau, "s--", color="C1", label="mean tau (estimated c_mu)")
            ax.set_xscale("log")
            ax.minorticks_off()
            ax.set_xticks(list(s.x), [str(int(v)) for v in s.x])
        ax.set_yscale("log")
        ax.set_xlabel(label)
        ax.set_ylabel("samples tau")
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def speed(n_runs: int = 3, K: int = 400, d: int = 20) -> pd.DataFrame:
    """Mean cost of a GLGapE round at K = 400, d = 20 over whole runs (target ~300 us), LP time apart."""
    from screenbai.bandits import policy_for_instance, run
    from screenbai.bandits.numerics.rules import L1Design

    original = L1Design.solve
    lp_seconds = [0.0]

    def timed_solve(self, y):
        t = time.perf_counter()
        try:
            return original(self, y)
        finally:
            lp_seconds[0] += time.perf_counter() - t

    rows = []
    L1Design.solve = timed_solve
    try:
        warm = kw_synthetic(K=50, d=10, seed=99)  # imports and first-call overheads out of the timings
        run(policy_for_instance("glgape", warm, c_mu="oracle", calibration="reinterpreted", rng=0), warm.environment(0))
        for rule in ("ratio", "greedy"):
            for s in range(n_runs):
                inst = kw_synthetic(K=K, d=d, seed=s)
                lp_seconds[0] = 0.0
                policy = policy_for_instance("glgape", inst, c_mu="oracle", calibration="reinterpreted", selection=rule,
                                            rng=s)
                t0 = time.perf_counter()
                res = run(policy, inst.environment(100 + s))
                total = time.perf_counter() - t0
                rows.append({
                    "rule": rule, "instance_seed": s, "tau": res.n_samples,
                    "us_per_round": 1e6 * total / res.n_samples,
                    "us_per_round_without_LP": 1e6 * (total - lp_seconds[0]) / res.n_samples,
                    "LPs": res.diagnostics["n_lps"],
                    "ms_per_LP": 1e3 * lp_seconds[0] / max(res.diagnostics["n_lps"], 1),
                    "newton_iter_per_round": res.diagnostics["newton_iter_mean"],
                })
    finally:
        L1Design.solve = original
    return pd.DataFrame(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="5 instances per point and fewer points")
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--report-only", action="store_true", help="rebuild the report from kw_synthetic_runs.csv")
    args = ap.parse_args()
    if args.report_only:
        df = pd.read_csv(OUT / "kw_synthetic_runs.csv")
        plot(df, OUT / "kw_synthetic.png")
        write_report(df, "--quick" in (OUT / "kw_synthetic.md").read_text().split("\n")[2], float("nan"))
        return
    tasks = build_tasks(args.quick)
    t0 = time.perf_counter()
    records = []
    with ProcessPoolExecutor(max_workers=args.n_jobs) as pool:
        futures = [pool.submit(_task, t) for t in tasks]
        for fut in tqdm(as_completed(futures), total=len(tasks), desc="kw_synthetic runs", unit="run"):
            records.append(fut.result())
    elapsed = time.perf_counter() - t0
    df = pd.DataFrame.from_records(records)
    OUT.mkdir(parents=True, exist_ok=True)
    df.drop(columns=["pulls"]).to_csv(OUT / "kw_synthetic_runs.csv", index=False)
    plot(df, OUT / "kw_synthetic.png")
    write_report(df, args.quick, elapsed)


def _speed_table() -> str:
    sp = speed()
    sp.to_csv(OUT / "kw_synthetic_speed.csv", index=False)
    table = sp.groupby("rule", sort=False).mean(numeric_only=True).drop(columns="instance_seed").reset_index()
    return table.to_markdown(index=False, floatfmt=".1f")


def write_report(df: pd.DataFrame, quick: bool, elapsed: float) -> None:
    n_inst = int(df[df.study == "K"].groupby("x").size().max())
    x_num = pd.to_numeric(df.x, errors="coerce")  # x mixes numbers and labels once read back from CSV
    k50 = df[(df.study == "K") & (x_num == 50)]
    k50e = df[(df.study == "K_estimated_cmu") & (x_num == 50)]
    gape = df[df.study == "gape"]
    gl = gape[gape.x == "GLGapE"]
    ug = gape[gape.x == "UGapE-hoeffding"]
    glg = df[df.algorithm == "glgape"]
    newton_over = int(glg.get("diag_newton_rounds_over_10", pd.Series(dtype=float)).fillna(0).sum())
    lines = [
        "# Kazerouni & Wein synthetic study: GLGapE (spec 3.4, Appendix A.1)",
        "",
        f"Command: `python benchmarks/reproduce_kw_synthetic.py{' --quick' if quick else ''}` "
        f"({n_inst} random instances per point, one run each; {len(df)} runs"
        + (f", {elapsed / 60:.1f} min on 2 workers). " if elapsed == elapsed else "). ")
        +
        "Per-run records: `kw_synthetic_runs.csv`.",
        "",
        "Setting: `kw_synthetic(K, d, seed)` (theta* ~ N(0, I_d), features U[-1, 1]^d, logistic Bernoulli rewards), "
        "GLGapE with the reinterpreted calibration (largest initial width = 1, spec 2.4.3), lambda_reg = 1, "
        "ratio (L1-LP) rule, E = min(K, 3d), delta = 0.05, oracle c_mu = min_a mu'(x_a^T theta*) unless marked "
        "'estimated' (P9.3 plug-in, frozen after the initial phase). tau includes the initial phase. "
        "'eps-correct' = fraction of runs whose answer is within epsilon of the best mean.",
        "",
        "![tau vs K, d, epsilon](kw_synthetic.png)",
        "",
        "## Headline: K = 50, d = 10, epsilon = 0.1",
        "",
        "| | mean tau | range | eps-correct |",
        "|---|---|---|---|",
        "| paper (one instance) | 436 | - | > 95% (all experiments) |",
        "| spec Appendix A.1 (20 instances, seeds 0-19) | 649 | 115 - 1855 | 20/20 |",
        f"| this package, oracle c_mu ({len(k50)} instances) | {k50.samples.mean():.0f} | "
        f"{k50.samples.min()} - {k50.samples.max()} | {int(k50.correct.sum())}/{len(k50)} |",
        f"| this package, estimated c_mu ({len(k50e)} instances) | {k50e.samples.mean():.0f} | "
        f"{k50e.samples.min()} - {k50e.samples.max()} | {int(k50e.correct.sum())}/{len(k50e)} |",
        "",
        "## GapE comparison (K = 50, d = 10, epsilon = 0.1)",
        "",
        "The paper reports GapE (independent Bernoulli arms) at about 60 000 pulls against 436 for GLGapE on one "
        "instance. "
        "GapE's configuration is not given; we use UGapE-c with Hoeffding widths sqrt(log(4Kt^3/delta)/(2T_k)) "
        "(`ugape`, `threshold=\"hoeffding\"`, spec 3.4 [D]), on the first instances of the study.",
        "",
        "| algorithm | instances | mean tau | range | eps-correct |",
        "|---|---|---|---|---|",
        "| paper GapE | 1 | ~60 000 | - | - |",
        "| paper GLGapE | 1 | 436 | - | - |",
    ]
    for name, sub in (("UGapE-Hoeffding (this package)", ug), ("GLGapE (this package)", gl)):
        if len(sub):
            lines.append(f"| {name} | {len(sub)} | {sub.samples.mean():.0f} | "
                         f"{sub.samples.min()} - {sub.samples.max()} | {int(sub.correct.sum())}/{len(sub)} |")
    if len(ug) and len(gl):
        ratio = (ug.set_index("instance_seed").samples / gl.set_index("instance_seed").samples).dropna()
        lines += ["", f"Per instance, UGapE-Hoeffding needed {ratio.min():.0f}x to {ratio.max():.0f}x more samples "
                  "than GLGapE (paper: ~140x)."]
    lines += ["", "## tau vs K (d = 10, epsilon = 0.1), oracle c_mu", "", _fmt(summarise(df, "K")), ""]
    lines += ["## tau vs K (d = 10, epsilon = 0.1), estimated c_mu (P9.3, frozen)", "",
              _fmt(summarise(df, "K_estimated_cmu")), ""]
    lines += ["## tau vs d (K = 100, epsilon = 0.1)", "", _fmt(summarise(df, "d")), ""]
    lines += ["## tau vs epsilon (K = 100, d = 10)", "", _fmt(summarise(df, "eps")), ""]
    lines += [
        "## Diagnostics",
        "",
        f"* GLGapE runs: {len(glg)}; not stopped within {MAX_SAMPLES} samples: "
        f"{int((~glg.stopped.astype(bool)).sum())}.",
        "* Rounds whose warm-started Newton fit needed more than 10 iterations (near separation, spec 1.4), "
        f"summed over all runs: {newton_over}.",
        f"* Mean number of LPs solved per run: {glg.diag_n_lps.mean():.0f} (cached by (i, j, corner)).",
        f"* Mean oracle c_mu over the K = 50 instances: {k50.diag_c_mu.mean():.4f}; "
        f"mean estimated c_mu: {k50e.diag_c_mu.mean():.4f}.",
        "",
        "## Speed: GLGapE rounds at K = 400, d = 20 (target about 300 us per round on average over a run)",
        "",
        "Mean over 3 instances (`kw_synthetic(400, 20, seed)`, oracle c_mu, eps = 0.1), whole runs, ask/tell and "
        "reward "
        "draws included; LP time measured separately (HiGHS through `scipy.optimize.linprog`, `rules.L1Design`). "
        "Timings taken while other jobs shared the 2 cores, so they are upper bounds.",
        "",
        _speed_table(),
        "",
        "The ~300 us target is not met. The LPs dominate a ratio-rule run (each HiGHS solve of the 2K-column LP "
        "takes ~7-12 ms on an idle core, ~75 distinct (i, j, corner) problems per run at this size); without them "
        "a round costs ~2.4 warm-started Newton iterations (O(K d^2 + d^3) each) plus the O(Kd + d^2) widths and "
        "update: ~350-400 us on a quiet machine (measured during development; the table above was measured "
        "under a load of ~10 on 2 cores). Remedies not done: `presolve=False` in `L1Design` (~40% faster LPs), "
        "a warm-started dual simplex on the fixed polytope {v : |X v| <= 1}, fewer Newton steps per round.",
        "",
    ]
    (OUT / "kw_synthetic.md").write_text("\n".join(lines) + "\n" + DISCUSSION_PLACEHOLDER)


DISCUSSION_PLACEHOLDER = """## How close, and why it differs

*Magnitude.* With the reinterpreted calibration and lambda_reg = 1, GLGapE needs a few hundred
samples at K = 50, d = 10, epsilon = 0.1, the same order as the paper's 436 (one unreported
instance) and as the spec's own prototype (Appendix A.1: mean 649, range 115-1855 over 20
instances). tau is heavy-tailed across instances (the range spans more than a factor 10), so the
mean of 20 instances has a standard error of roughly +-100 samples; our instances are not the
paper's (its instance, random seeds and c_mu are not reported) nor exactly A.1's (a different
random stream), so only the order of magnitude can be compared. The qualitative findings of the
paper hold: tau grows quickly with d, hardly with K (it even drops at large K: more arms give the
LP designs more useful directions and the calibration normalises the initial width), and falls
steeply as epsilon grows.

*Why it is not an exact reproduction.* (1) Eq. (34) as printed stops every run at tau = E (pitfall
P5, checked in `tests/test_glgape.py`); the numbers here use our reading "largest initial width =
1" (spec 2.4.3, A-K1), which is a calibration without a delta-guarantee (P10): accuracy is an
empirical outcome, reported above. At very small d (d = 2: E = 6 initial pulls) the calibrated
widths can be over-confident and accuracy may fall below the paper's 95% (full run: 18/20 correct
at d = 2, 19/20 at d = 5; 100% everywhere else). (2) The MLE is penalised
(lambda_reg = 1, A-K6); without it the estimate diverges after the initial phase (A.1: 30%
accuracy with lambda_reg = 0.01). (3) c_mu is "treated as given" in the paper; we use the oracle
min_a mu'(x_a^T theta*) and, separately, the plug-in estimate of P9.3. The two give nearly the same
tau (at K = 20 identical runs): when c_mu << k_mu = 1/4 the (k_mu, k_mu) corner usually attains
the maximum width, so c_mu drops out (P9.4). (4) The paper's GapE configuration is unknown (A-K10);
UGapE with Hoeffding widths needs tens of thousands of samples, the same order as the paper's
60 000, i.e. GLGapE's advantage of about two orders of magnitude is reproduced.
"""

if __name__ == "__main__":
    main()

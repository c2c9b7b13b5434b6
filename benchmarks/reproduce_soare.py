"""Reproduce [SLM14] Fig. 4 (samples vs d) and [XHS18] Table 1 (Soare instance, d = 5) (spec 3.1, 3.2).

    python benchmarks/reproduce_soare.py            # full (reduced) study, several hours of CPU at most
    python benchmarks/reproduce_soare.py --quick    # small version, a few minutes
    python benchmarks/reproduce_soare.py --only table1 --lingape-runs 10

Parts are cached in results/soare/*.json (delete them or pass --fresh to recompute) and the greedy
sequences in results/cache/*.npz, so the report can be rebuilt without rerunning everything.
Writes docs/reproduction/soare.md and docs/reproduction/soare.png.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from screenbai.bandits import replicate
from screenbai.bandits.linear import static_greedy
from screenbai.bandits.sim import generators as instances

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "results" / "soare"
CACHE = ROOT / "results" / "cache"
DOCS = ROOT / "docs" / "reproduction"

FIG4_ALGOS = ["g-allocation", "xy-static", "xy-adaptive", "xy-adaptive-monotone", "xy-oracle", "xy-fully-adaptive"]
VARIANTS = {"xy-adaptive-monotone": ("xy-adaptive", {"monotone": True})}
PAPER_T1 = {  # [XHS18] Table 1, pulls of e1..e5, x6 and total
    "xy-static": [1298590, 2546604, 2546666, 2546666, 2546666, 1273742, 12758934],
    "lingape": [2133, 428889, 19, 34, 33, 11, 431119],
    "xy-oracle": [13646, 2728606, 68, 68, 68, 1, 2742457],
}
LINGAPE = dict(selection="greedy", sigma=1.0, lambda_reg=1.0, S=2.0, delta=0.05, delta_eff="pairs")


def _records_path(name: str) -> Path:
    return OUT / f"{name}.json"


def _load(name: str):
    p = _records_path(name)
    return pd.read_json(p, orient="records") if p.exists() else None


def _save(name: str, df: pd.DataFrame) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    df.to_json(_records_path(name), orient="records")


def _prefetch_static(inst, algo, n):
    """Extend the cached static sequence to n pulls before forking, so workers do not each extend it."""
    from screenbai.bandits import policy_for_instance

    p = policy_for_instance(algo, inst)
    p.sequence.extend(int(n))


# ---------------------------------------------------------------------- part (a): Fig. 4
def fig4(d_list, omega, runs, runs_fa, n_jobs, fresh):
    name = f"fig4_omega{omega:g}"
    done = None if fresh else _load(name)
    have = set() if done is None else set(zip(done["d"], done["algorithm"]))
    frames = [] if done is None else [done]
    for d in d_list:
        inst = instances.soare(d=d, omega=omega)
        for algo in FIG4_ALGOS:
            if (d, algo) in have:
                continue

            t0 = time.perf_counter()
            label = algo
            algo, extra = VARIANTS.get(label, (label, {}))
            params = {"max_samples": 10**8, **extra}
            n = runs_fa if algo == "xy-fully-adaptive" else runs
            first = replicate(inst, algo, params, n_reps=1, seed=d, n_jobs=1)
            if algo in ("g-allocation", "xy-static"):
                _prefetch_static(inst, algo, 1.3 * first["samples"].iloc[0])
            parts = [first]
            if n > 1:
                parts.append(replicate(inst, algo, params, n_reps=n - 1, seed=d, start=1, n_jobs=n_jobs))
            df = pd.concat(parts, ignore_index=True)
            df["d"], df["omega"], df["algorithm"] = d, omega, label
            frames.append(df)
            print(f"d={d} {algo}: mean samples {df['samples'].mean():.4g}, "
                  f"errors {int((~df['correct']).sum())}/{len(df)}, "
                  f"{time.perf_counter() - t0:.0f}s", flush=True)
            _save(name, pd.concat(frames, ignore_index=True))
    return pd.concat(frames, ignore_index=True)


def fig4_claims(df: pd.DataFrame) -> list[tuple[str, bool, str]]:
    m = df.groupby(["d", "algorithm"])["samples"].mean().unstack()
    ds = list(m.index)
    out = []
    ratio_static = (m["xy-static"] / m["xy-oracle"]).round(2)
    ratio_g = (m["g-allocation"] / m["xy-oracle"]).round(2)
    out.append(("G and XY-static need more samples than the oracle at every d, increasingly so with d",
                bool((ratio_static > 1).all() and (ratio_g > 1).all() and np.all(np.diff(ratio_static.values) > 0)),
                f"XY-static/oracle {ratio_static.tolist()}, G/oracle {ratio_g.tolist()} for d = {ds}"))
    for ad in ("xy-adaptive", "xy-adaptive-monotone"):
        if ad not in m:
            continue
        ratio_ad = (m[ad] / m["xy-oracle"]).round(2)
        out.append((f"{ad} approaches the oracle (needs fewer samples than XY-static at every d)",
                    bool((m[ad] < m["xy-static"]).all()), f"{ad}/oracle {ratio_ad.tolist()}"))
        gap = m["xy-static"] - m[ad]
        out.append((f"the advantage of {ad} over XY-static (XY-static - {ad}) grows with d",
                    bool(np.all(np.diff(gap.values) > 0)), f"differences {[f'{v:.3g}' for v in gap]}"))
    ratio_fa = (m["xy-fully-adaptive"] / m["xy-oracle"]).round(2)
    out.append(("the fully adaptive version loses its advantage as d grows (its ratio to the oracle increases with d)",
                bool(ratio_fa.iloc[-1] > ratio_fa.iloc[0]), f"fully-adaptive/oracle {ratio_fa.tolist()}"))
    return out


def plot_fig4(df: pd.DataFrame, path: Path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    g = df.groupby(["algorithm", "d"])["samples"]
    mean, sd = g.mean(), g.std().fillna(0)
    for algo in FIG4_ALGOS:
        if algo not in mean.index.get_level_values(0):
            continue
        x = mean[algo].index.values
        ax.errorbar(x, mean[algo].values, yerr=sd[algo].values, marker="o", capsize=3, label=algo)
    ax.set_yscale("log")
    ax.set_xlabel("dimension d")
    ax.set_ylabel("samples to stop (mean, +- sd)")
    omega = df["omega"].iloc[0]
    ax.set_title(f"[SLM14] Fig. 4 style: Soare instance, omega = {omega:g}, delta = 0.05")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return fig


# ---------------------------------------------------------------------- part (b): Table 1
def table1(static_runs, oracle_runs, lingape_runs, n_jobs, fresh, only=None):
    inst = instances.soare(d=5, omega=0.01)
    CACHE.mkdir(parents=True, exist_ok=True)
    frames = {}
    jobs = [("xy-oracle", {}, oracle_runs), ("xy-oracle-arms", {"confidence": "arms"}, min(oracle_runs, 1)),
            ("xy-static", {}, static_runs), ("lingape", LINGAPE, lingape_runs)]
    for label, params, n in jobs:
        algo = "xy-oracle" if label == "xy-oracle-arms" else label
        if only is not None and label != only:
            continue
        name = f"table1_{label}"
        df = None if fresh else _load(name)
        if df is not None and len(df) >= n:
            frames[algo] = df
            continue
        if n <= 0:
            continue
        t0 = time.perf_counter()
        cache_file = CACHE / f"soare_d5_{label}.npz"
        if algo != "lingape":
            if cache_file.exists():
                static_greedy.load_cache(cache_file)
            first = replicate(inst, algo, {"max_samples": 10**8, **params}, n_reps=1, seed=5, n_jobs=1)
            if algo == "xy-static":
                _prefetch_static(inst, algo, 1.05 * first["samples"].iloc[0])
            static_greedy.save_cache(cache_file)
            parts = [first]
            if n > 1:
                parts.append(replicate(inst, algo, {"max_samples": 10**8, **params}, n_reps=n - 1, seed=5, start=1,
                                       n_jobs=n_jobs))
            df = pd.concat(parts, ignore_index=True)
        else:
            df = replicate(inst, algo, {**params, "S": 2.0, "max_samples": 2 * 10**7}, n_reps=n, seed=5, n_jobs=n_jobs,
                           progress=True)
        print(f"table1 {label}: {len(df)} runs, mean samples {df['samples'].mean():.4g}, "
              f"{time.perf_counter() - t0:.0f}s",
              flush=True)
        _save(name, df)
        frames[label] = df
    return frames


def table1_markdown(frames) -> str:
    lines = ["| algorithm | source | runs | e1 | e2 | e3 | e4 | e5 | x6 | total | correct |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for algo in ("xy-static", "lingape", "xy-oracle", "xy-oracle-arms"):
        if algo in PAPER_T1:
            p = PAPER_T1[algo]
            lines.append(f"| {algo} | [XHS18] Table 1 | n/a | " + " | ".join(f"{v:,}" for v in p) + " | - |")
        df = frames.get(algo)
        if df is None:
            lines.append(f"| {algo} | this package | 0 | (not run) | | | | | | | |")
            continue
        pulls = np.mean(np.stack(df["pulls"].map(np.asarray).values), axis=0)
        total = df["samples"].mean()
        sd = df["samples"].std() if len(df) > 1 else 0.0
        lines.append(f"| {algo} | this package (mean) | {len(df)} | " + " | ".join(f"{v:,.0f}" for v in pulls)
                     + f" | {total:,.0f} (sd {sd:,.0f}) | {int(df['correct'].sum())}/{len(df)} |")
    return "\n".join(lines)


# ---------------------------------------------------------------------- report
def write_report(fig_df, omega, frames, args, elapsed):
    DOCS.mkdir(parents=True, exist_ok=True)
    md = ["# [SLM14] static / phased allocations on the Soare instance: reproduction", ""]
    md.append("Generated by `python benchmarks/reproduce_soare.py` (defaults = the runs reported here; parts are "
              "cached in `results/soare/` and the greedy sequences in `results/cache/`, so the first run of each part "
              "is the slow one). Policies: `g-allocation`, `xy-static`, `xy-adaptive` (alpha = 0.1, literal "
              "re-admission), `xy-oracle` (eq. 4 stopping), `xy-fully-adaptive` (eta = 1, S = ||theta*||), all with "
              "delta = 0.05, sigma = 1 (c = 2 sqrt 2), N(0, 1) noise; `lingape` from `gifa.py` (greedy rule, R = 1, "
              "lambda = 1, S = 2, delta/K^2).")
    md.append("")
    if fig_df is not None and len(fig_df):
        md += ["## (a) [SLM14] Fig. 4 style: samples vs d", ""]
        md.append(f"**Reduced setting (say it plainly):** omega = {omega:g} instead of the paper's 0.01, and d in "
                  f"{sorted(fig_df['d'].unique().tolist())} instead of 2..10, with {args.runs} runs per point "
                  f"({args.runs_fa} for the round-by-round fully adaptive baseline) instead of 100. With omega = 0.01 "
                  "XY-static needs ~1.3e7 pulls at d = 5 (part (b)); the sample sizes scale roughly like 1/omega^2 "
                  "(||x_1 - x_{d+1}||^2 / Delta_min^2 ~ 1/omega^2), so the larger omega keeps the shape of the "
                  "comparison at a small fraction of the cost. Fig. 4 itself gives no numbers (figure only, spec 3.1), "
                  "so only the qualitative claims can be compared.")
        md.append("")
        tab = fig_df.groupby(["d", "algorithm"]).agg(mean=("samples", "mean"), sd=("samples", "std"),
                                                     errors=("correct", lambda c: int((~c.astype(bool)).sum())),
                                                     runs=("samples", "size")).reset_index()
        shown = [a for a in FIG4_ALGOS if a in tab["algorithm"].unique()]
        piv = tab.pivot(index="d", columns="algorithm", values="mean")[shown]
        md.append("Mean samples to stop (errors / runs in brackets):")
        md.append("")
        md.append("| d | " + " | ".join(piv.columns) + " |")
        md.append("|---|" + "---|" * len(piv.columns))
        for d, row in piv.iterrows():
            cells = []
            for a in piv.columns:
                r = tab[(tab["d"] == d) & (tab["algorithm"] == a)].iloc[0]
                cells.append(f"{row[a]:,.0f} ({r['errors']}/{r['runs']})")
            md.append(f"| {d} | " + " | ".join(cells) + " |")
        md.append("")
        md.append("![samples vs d](soare.png)")
        md.append("")
        md.append("Qualitative claims of [SLM14] (spec 3.1), checked on these numbers:")
        md.append("")
        for text, ok, detail in fig4_claims(fig_df):
            md.append(f"* {'HOLDS' if ok else 'DOES NOT HOLD'}: {text}. {detail}.")
        md.append("")
    md += ["## (b) [XHS18] Table 1: Soare instance, d = 5, omega = 0.01", ""]
    md.append(table1_markdown(frames))
    md.append("")
    md.append("The paper's caption lost d (spec A-X4; d = 5 from the six rows) and the number of runs behind "
              "Table 1 is not stated (the text says its Fig. 1 averages 10 repetitions).")
    md.append("")
    md.append(NOTES)
    (DOCS / "soare.md").write_text("\n".join(md) + "\n")


NOTES = """### How close, and why it differs

**XY-oracle (Table 1).** The closest match. Our allocation (14.4k / 2.88M / 73 / 73 / 73 / 0, total
2.90M, identical in every run because eq. 4 uses the true gaps) has the paper's shape (13.6k / 2.73M /
68 / 68 / 68 / 1, total 2.74M) and is 5.6 % larger. That is what one fewer factor K in the logarithm
gives (log(6 n^2 K^2 / (pi^2 delta)) = 35.8 at n = 2.8e6, K = 6, against 34.0 with K). With
`confidence="arms"` (log_n(K/delta), the per-arm bound of Prop. 1) the same allocation stops at
2,742,463 pulls, 13,645 / 2,728,611 / 69 / 69 / 69 / 0 (row `xy-oracle-arms`): the paper's 2,742,457
to within 6 pulls. So the paper's oracle used log_n(K/delta); the default keeps the spec's K^2. The one
pull of x6 in the paper is presumably its initialisation
(we initialise with one pull per arm of a pivoted-QR spanning set: e1..e5). Getting this shape required
a deviation [D]: the literal one-step minimax greedy on Y* stalls, because every direction x* - x
contains x*, so pulling x* always lowers all tied maxima by a vanishing amount and e3..e5 are never
pulled (on d = 4, omega = 0.2 it never stops; on d = 5, omega = 0.01 it stopped at 4.8M with 449k
pulls on e1 and 405k on x6). `xy-oracle` therefore counts scores within a relative 1e-3 as tied and
breaks such ties by the reduction of the directions at the maximum (`tie_rtol=1e-3`; `tie_rtol=0`
is the literal rule).

**LinGapE (Table 1).** Same pattern as the paper (> 99 % of the pulls on e2, a few thousand on e1,
tens on the others, always correct), with a mean total of about 0.74M over 10 seeds against the
paper's 0.43M for (apparently) one run. The run-to-run spread is large (sd 0.29M, range 0.38M-1.46M,
median 0.72M; > 99.4 % on e2 in every run),
and the spec author's own check (Appendix A.3) gave 0.48M-0.91M, so the paper's number is within the
spread but on its low side; the lost constants (lambda, S, the delta/K^2 convention, A-X1/A-X2) can
move it further. The qualitative claim "LinGapE beats even XY-oracle" holds by a factor ~4.

**XY-static (Table 1).** Three runs stopped at 13.96M, 14.22M and 20.90M pulls (mean 16.4M, all
correct) against the paper's 12.76M: the closest run is 9 % above it, about half of which is the
K vs K^2 in the log term discussed for the oracle; the stopping time of eq. 11 is random (it waits
for the noisy estimate of the 1e-4 gap between e1 and x6 to clear its width), hence the spread, and
we cannot tell how many runs the paper's number averages. Cost: the 1.4e7-step greedy sequence is
generated once (about 7 min on this shared, heavily loaded 2-core machine, ~30 us per greedy step)
and cached; a run with the cached sequence then takes about 25 s (the eq. 11 test vectorised over
blocks of 4096 rounds: batched Cholesky in d = 5 from cumulative counts and sums), e.g. the second
run above (14.2M pulls) took 25.6 s; the third had to extend the sequence by 6M steps (190 s). The paper
splits the e1 pulls between e1 and x6 (1.30M + 1.27M ~ one
e2 count); our greedy sends them all to e1 (x6 ~ e1, and our secondary tie-break prefers the arm that
most reduces the directions at the maximum, which is e1). The total is what the static allocation
is about, and the stopping rule is the same eq. 11.

**Fig. 4 (part a).** The static strategies (G and XY, nearly identical here) need more samples than
the oracle, and increasingly so with d, as [SLM14] says. The fully adaptive baseline is cheaper than
everything else at these sizes because its Prop. 2 width (sigma sqrt(d log(..)) + S) is much smaller
than the static width c sqrt(log_n(K^2/delta)) with c = 2 sqrt 2; its ratio to the oracle grows with d
(0.3 -> 0.7), which is the "sqrt(d) factor" effect the paper describes, but it has not yet overtaken
the oracle at d = 8. The literal XY-adaptive (discarded arms re-admitted, A-S3) is far worse than
XY-static and the gap grows with d: each phase re-admits e3..e_d (with the phase's few pulls of e1 their
gap to e1 is not yet resolved), so the next phase again spreads pulls over all pairs with a 10x
stricter target. This contradicts [SLM14]'s figure but matches [XHS18] §7.1, which reports that the
XY-adaptive it compared against "forgets" discarded arms and does no better than XY-static (and was
at least 5x worse in its other experiments). The monotone variant (option `monotone=True`) does
approach the oracle in the middle of the range (1.4x at d = 3, 2.3x at d = 4) but not at d = 2 or 8,
where its last phases, each restarting from scratch with a 10x stricter target, overshoot.
No run of any static or phased allocation returned a wrong arm (delta = 0.05)."""


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true",
                    help="small version (omega 0.3, d in 2..4, 5 runs, no omega=0.01 XY-static runs)")
    ap.add_argument("--only",
                    choices=["fig4", "table1", "lingape", "xy-static", "xy-oracle", "xy-oracle-arms", "report"],
                    default=None)
    ap.add_argument("--omega", type=float, default=None, help="omega for part (a) (default 0.2; quick 0.3)")
    ap.add_argument("--d", type=str, default=None, help="comma-separated d for part (a) (default 2,3,4,6,8)")
    ap.add_argument("--runs", type=int, default=None, help="runs per point in part (a) (default 10; quick 5)")
    ap.add_argument("--runs-fa", type=int, default=None,
                    help="runs per point for xy-fully-adaptive (default 5; quick 3)")
    ap.add_argument("--static-runs", type=int, default=None, help="XY-static runs in Table 1 (default 3; quick 0)")
    ap.add_argument("--oracle-runs", type=int, default=None, help="XY-oracle runs in Table 1 (default 10; quick 3)")
    ap.add_argument("--lingape-runs", type=int, default=None, help="LinGapE runs in Table 1 (default 10; quick 2)")
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--fresh", action="store_true", help="ignore cached parts in results/soare")
    args = ap.parse_args(argv)
    q = args.quick
    args.omega = args.omega if args.omega is not None else (0.3 if q else 0.2)
    d_list = [int(v) for v in args.d.split(",")] if args.d else ([2, 3, 4] if q else [2, 3, 4, 6, 8])
    args.runs = args.runs if args.runs is not None else (5 if q else 10)
    args.runs_fa = args.runs_fa if args.runs_fa is not None else (3 if q else 5)
    static_runs = args.static_runs if args.static_runs is not None else (0 if q else 3)
    oracle_runs = args.oracle_runs if args.oracle_runs is not None else (3 if q else 10)
    lingape_runs = args.lingape_runs if args.lingape_runs is not None else (2 if q else 10)
    t0 = time.perf_counter()
    fig_df = None
    if args.only in (None, "fig4"):
        fig_df = fig4(d_list, args.omega, args.runs, args.runs_fa, args.n_jobs, args.fresh)
    else:
        fig_df = _load(f"fig4_omega{args.omega:g}")
    only = args.only if args.only in ("lingape", "xy-static", "xy-oracle", "xy-oracle-arms") else None
    if args.only in (None, "table1", "lingape", "xy-static", "xy-oracle", "xy-oracle-arms"):
        table1(static_runs, oracle_runs, lingape_runs, args.n_jobs, args.fresh, only=only)
    frames = {a: _load(f"table1_{a}") for a in ("xy-static", "lingape", "xy-oracle", "xy-oracle-arms")}
    frames = {a: f for a, f in frames.items() if f is not None}
    if fig_df is not None and len(fig_df):
        plot_fig4(fig_df, DOCS / "soare.png")
    write_report(fig_df, args.omega, frames, args, time.perf_counter() - t0)
    print(f"wrote {DOCS / 'soare.md'}")


if __name__ == "__main__":
    main()

"""Reproduce Réda, Kaufmann & Delahaye-Duriez (AISTATS 2021) Fig. 1(a), 1(b) and Table 3 (spec 3.3).

Classic instances: (a) K = 4, d = 3, m = 2, omega = pi/6; (b) K = 3, d = 2, m = 1, omega = 0.1;
sigma = 1/2, epsilon = 0, delta = 0.05, Gaussian rewards.  Algorithms of spec 3.3 (LinGame is not
implemented here).  Threshold: the paper's heuristic sqrt(2 ln((ln t + 1)/delta)) by default (the
paper used it "whenever the empirical error stayed below delta"); ``--threshold theoretical`` uses
eq. (2) for the linear algorithms and the LUCB1 rate for the classical ones.

    python benchmarks/reproduce_reda.py            # 500 runs per setting (paper)
    python benchmarks/reproduce_reda.py --quick    # 40 runs per setting
    python benchmarks/reproduce_reda.py --from-records docs/reproduction/reda_records.csv

Writes docs/reproduction/reda.md, reda.png and reda_records.csv.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

from screenbai.bandits import replicate
from screenbai.bandits.sim.generators import reda_classic

OUT = Path(__file__).resolve().parents[1] / "docs" / "reproduction"

SETTINGS = {
    "1a": dict(instance=lambda: reda_classic(4, 2, omega=np.pi / 6), m=2, title="Fig. 1(a): K=4, d=3, m=2, omega=pi/6"),
    "1b": dict(instance=lambda: reda_classic(3, 1, omega=0.1), m=1, title="Fig. 1(b): K=3, d=2, m=1, omega=0.1"),
}

# (label, registry name, params, settings where the paper ran it, paper's Table 3 error per setting)
ALGORITHMS = [
    ("LUCB (largest var.)", "lucb", {}, ("1a",), {"1a": 0.0}),
    ("UGapE", "ugape", {}, ("1a",), {"1a": 0.0}),
    ("m-LinGapE (greedy)", "m-lingape", {"selection": "greedy"}, ("1a", "1b"), {"1a": 0.0, "1b": 0.044}),
    ("m-LinGapE (optimized)", "m-lingape", {"selection": "optimized"}, ("1a",), {"1a": 0.0}),
    ("LinGIFA (largest var.)", "lingifa", {"selection": "largest-variance"}, ("1a",), {"1a": 0.0}),
    ("LinGIFA (greedy)", "lingifa", {"selection": "greedy"}, ("1a", "1b"), {"1a": 0.0, "1b": 0.0}),
    ("LinGIFA (tau^LUCB, largest var.)", "lingifa", {"selection": "largest-variance", "stopping": "lucb"}, ("1a",),
     {"1a": 0.0}),
    ("LinGIFA (tau^LUCB, greedy)", "lingifa", {"selection": "greedy", "stopping": "lucb"}, ("1a",), {"1a": 0.0}),
    ("LinGIFA (individual indices)", "lingifa", {"selection": "greedy", "index": "individual"}, ("1a",), {"1a": 0.0}),
]


def run_all(n_runs: int, threshold: str, seed: int, n_jobs: int, max_samples: int) -> pd.DataFrame:
    frames = []
    for key, setting in SETTINGS.items():
        inst = setting["instance"]()
        for label, name, extra, where, _ in ALGORITHMS:
            if key not in where:
                continue
            params = {"m": setting["m"], "epsilon": 0.0, "delta": 0.05, "sigma": 0.5, "max_samples": max_samples,
                      **extra}
            if name in ("lucb", "ugape"):
                params["threshold"] = "heuristic" if threshold == "heuristic" else "lucb1"
            else:
                params.update(threshold=threshold, S="oracle")
            t0 = time.perf_counter()
            df = replicate(inst, name, params, n_reps=n_runs, seed=seed, n_jobs=n_jobs, progress=True)
            df["setting"], df["label"] = key, label
            frames.append(df)
            print(f"  {key} {label}: median {df['samples'].median():.0f}, error {1 - df['correct'].mean():.3f}, "
                  f"{time.perf_counter() - t0:.1f} s", flush=True)
    return pd.concat(frames, ignore_index=True)


def summary_table(records: pd.DataFrame) -> pd.DataFrame:
    rows = []
    paper = {label: err for label, _, _, _, err in ALGORITHMS}
    for (key, label), g in records.groupby(["setting", "label"], sort=False):
        stopped = g["stopped"].astype(bool)
        s = g.loc[stopped, "samples"]
        q = s.quantile([0.1, 0.25, 0.5, 0.75, 0.9])
        rows.append({
            "setting": key, "algorithm": label, "runs": len(g), "not stopped": int((~g["stopped"].astype(bool)).sum()),
            "mean": s.mean(), "q10": q[0.1], "q25": q[0.25], "median": q[0.5], "q75": q[0.75], "q90": q[0.9],
            "error": 1.0 - g.loc[stopped, "correct"].astype(bool).mean(),
            "paper error (Table 3)": paper[label].get(key, np.nan),
        })
    return pd.DataFrame(rows)


def plot(records: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = [k for k in SETTINGS if k in set(records["setting"])]
    widths = [max(2, records.loc[records.setting == k, "label"].nunique()) for k in keys]
    fig, axes = plt.subplots(1, len(keys), figsize=(4 + 1.1 * sum(widths), 5), gridspec_kw={"width_ratios": widths})
    axes = np.atleast_1d(axes)
    for ax, key in zip(axes, keys):
        sub = records[records.setting == key]
        labels = list(dict.fromkeys(sub["label"]))
        data = [sub.loc[sub.label == lab, "samples"].to_numpy() for lab in labels]
        ax.boxplot(data, showmeans=True)
        ax.set_xticks(range(1, len(labels) + 1), labels, rotation=40, ha="right", fontsize=8)
        ax.set_yscale("log")
        ax.set_ylabel("sample complexity")
        ax.set_title(SETTINGS[key]["title"], fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _fmt_table(df: pd.DataFrame) -> str:
    cols = list(df.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for _, r in df.iterrows():
        cells = []
        for c in cols:
            v = r[c]
            if isinstance(v, float):
                cells.append("–" if np.isnan(v) else (f"{v:.3f}" if c.startswith(("error", "paper")) else f"{v:.0f}"))
            else:
                cells.append(str(v))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_report(records: pd.DataFrame, meta: dict, path: Path, notes: str, theoretical=None) -> None:
    table = summary_table(records)
    text = [
        "# Réda et al. (2021), Fig. 1(a)-(b) and Table 3: Top-m identification on the classic instances",
        "",
        f"Command: `{meta['command']}`. Runs per algorithm and setting: {meta['runs']}; seed {meta['seed']}; "
        f"threshold: **{meta['threshold']}** "
        + ("(sqrt(2 ln((ln t + 1)/delta)) for every algorithm, as the paper did whenever the empirical error stayed "
           "below delta)." if meta["threshold"] == "heuristic"
           else "(eq. (2) for linear algorithms, LUCB1 rate for classical ones).")
        + f" Wall time {meta['wall_s']:.0f} s on 2 workers.",
        "",
        "Settings (spec 3.3): sigma = 1/2, epsilon = 0, delta = 0.05, Gaussian rewards; S = ||theta*|| = 1, "
        "L = max ||x_a||. "
        "m-LinGapE: V_0 = I and one pull per arm first; LinGIFA: V_0 = (sigma/20) I, no initialisation (spec 2.3 [D]); "
        "LUCB/UGapE: classical empirical means, one pull per arm first. LinGame (Degenne et al. 2020) is not "
        "implemented, "
        "so its row of Fig. 1(b) is missing.",
        "",
        "Sample complexity and empirical error over the runs that stopped (runs cut at max_samples = "
        f"{meta.get('max_samples', '?')} "
        "are counted in 'not stopped', spec P13); the paper's Table 3 error beside it. The paper's "
        "sample-complexity distributions are only in its figure (no numbers in the text).",
        "",
        _fmt_table(table),
        "",
        "![boxplots](reda.png)",
        "",
        *(_theoretical_section(*theoretical) if theoretical is not None else []),
        "## How close, and why it differs",
        "",
        notes,
        "",
    ]
    path.write_text("\n".join(text))


def _theoretical_section(records: pd.DataFrame, meta: dict) -> list[str]:
    return [
        "## Same experiment with the theoretically valid thresholds",
        "",
        f"`{meta['command']}` ({meta['runs']} runs per algorithm, seed {meta['seed']}, {meta['wall_s']:.0f} s): "
        "eq. (2) (self-consistent form, lambda0 as above) for the linear algorithms, the LUCB1 rate "
        "ln(5 K t^4 / (4 delta)) for LUCB/UGapE.",
        "",
        _fmt_table(summary_table(records)),
        "",
    ]


NOTES = """\
The paper gives its sample-complexity distributions only as a figure, so the comparison is with
its text and with Table 3.

* **Linear vs classical.** With features, the paired-index algorithms need 2.3 times (LinGIFA, largest
  variance) to 3.8 times (m-LinGapE, optimized) fewer samples than LUCB/UGapE on Fig. 1(a) (medians
  402-660 against about 1500). The paper
  says "linear bandit algorithms largely outperform their classical counterparts": reproduced.
* **Paired vs individual indices.** LinGIFA with individual indices needs about 6 times more samples
  than with paired ones (median about 2660 against 454). The paper: "noticeably better": reproduced.
* **Selection rules.** m-LinGapE greedy and optimized are within noise of each other (medians 418
  and 402). For LinGIFA, greedy beats largest variance (454 against 660). The paper: greedy and
  optimized are similar and "slightly better" than largest variance: reproduced.
* **Stopping rules.** LinGIFA with tau^LUCB and with tau^UGapE gives exactly the same runs here, not
  just the same distribution. This instance forces it: the two top arms both have mean 1, so while the
  algorithm runs, the index B[j', j] between the two members of J(t) is positive both ways. The m-th
  (2nd) largest index of a column j in J(t) is then the largest over the arms outside J(t), which is
  the tau^LUCB statistic. The paper says "almost no difference". Lemma 1 (tau^UGapE never later) is
  checked separately in tests/test_gifa.py.
* **Fig. 1(b).** m-LinGapE and LinGIFA (greedy) behave alike (medians 956 and 894). LinGame is not
  implemented, so the paper's main point there (both beat LinGame) is not checked.
* **Errors (Table 3).** 0 on Fig. 1(a), as in the paper. On Fig. 1(b), m-LinGapE greedy errs in 2 of
  500 runs (0.004) against 0.044 in the paper; LinGIFA greedy has no error (paper: 0). Every rate is
  below delta = 0.05, which is the paper's condition for using the heuristic threshold. The
  heuristic has no guarantee. Early stops show it: on Fig. 1(b), LinGIFA (V_0 = (sigma/20) I, no
  initialisation) sometimes stops after 2 samples, when one noisy draw of e_2 happens to push
  mu_hat_2 below mu_hat_1 by more than the small width. Our lower m-LinGapE error probably comes from
  the prior and initialisation conventions (spec P17: V_0 = I with one pull per arm here). The paper
  does not state the configuration it used, so this cannot be settled from the text.
* **One non-terminating run for LUCB and UGapE** (the same replication, counted in "not stopped" and
  left out of the statistics, spec P13). Arm 3 (mean cos(pi/6) = 0.87) drew its first two rewards
  about 2.8 sigma high. With the heuristic threshold its lower bound then stays above the upper
  bounds of arms 1 and 2, so it sits in J(t). It is never b_t or c_t again and is never re-sampled.
  Meanwhile the two truly best arms, tied at mean 1, are compared with epsilon = 0 forever.
  This is a real failure mode of the classical algorithms with the heuristic threshold on tied top
  arms, not a bug. The paper reports no such run, perhaps because it fell back to the LUCB1
  threshold for the classical algorithms ("otherwise ... the threshold of Kalyanakrishnan et al.").
* **Threshold.** The main table uses the heuristic for every algorithm, following the paper's text.
  The second table uses the valid thresholds; the spec notes that the paper's released result
  folders suggest these were used for the classic instances. With them, 200 runs per
  algorithm: no errors and no capped runs. The samples are 3.5 to 9 times higher (m-LinGapE greedy median 2936,
  LinGIFA greedy 2406, LUCB/UGapE 13886 on Fig. 1(a); 4534 and 3128 on Fig. 1(b)). The qualitative
  picture is unchanged: linear beats classical (now by 4.1 to 5.8 times), paired beats individual,
  and the stopping rules coincide. One difference: m-LinGapE optimized is slightly behind greedy
  (3316 against 2936). Fig. 1(b) m-LinGapE never errs with the valid threshold, so the paper's 0.044
  suggests it ran with the heuristic one there.
"""


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="40 runs per setting")
    ap.add_argument("--runs", type=int, default=500)
    ap.add_argument("--threshold", choices=("heuristic", "theoretical"), default="heuristic")
    ap.add_argument("--seed", type=int, default=2021)
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--max-samples", type=int, default=300_000, help="cap per run; capped runs are reported apart")
    ap.add_argument("--from-records", type=Path, help="rebuild the report from a saved records CSV")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    stem = "reda" if args.threshold == "heuristic" else "reda_theoretical"
    if args.from_records:
        records = pd.read_csv(args.from_records)
        meta = json.loads((args.from_records.with_suffix(".json")).read_text())
    else:
        runs = 40 if args.quick else args.runs
        t0 = time.perf_counter()
        records = run_all(runs, args.threshold, args.seed, args.n_jobs, args.max_samples)
        meta = {
            "command": "python benchmarks/reproduce_reda.py" + (" --quick" if args.quick else f" --runs {runs}")
            + (f" --threshold {args.threshold}" if args.threshold != "heuristic" else ""),
            "runs": runs, "seed": args.seed, "threshold": args.threshold, "wall_s": time.perf_counter() - t0,
            "max_samples": args.max_samples,
        }
        keep = ["setting", "label", "replication", "samples", "stopped", "correct"]
        records[keep].to_csv(args.out / f"{stem}_records.csv", index=False)
        (args.out / f"{stem}_records.json").write_text(json.dumps(meta, indent=1))
    if meta["threshold"] == "heuristic":
        plot(records, args.out / "reda.png")
        theo = args.out / "reda_theoretical_records.csv"
        extra = (pd.read_csv(theo), json.loads(theo.with_suffix(".json").read_text())) if theo.exists() else None
        write_report(records, meta, args.out / "reda.md", NOTES, extra)
    else:  # the theoretical run is reported inside reda.md when the heuristic records exist
        heur = args.out / "reda_records.csv"
        if heur.exists():
            main(["--from-records", str(heur), "--out", str(args.out)])
            return
    print(_fmt_table(summary_table(records)))


if __name__ == "__main__":
    main()

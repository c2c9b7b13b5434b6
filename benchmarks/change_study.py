"""The error guarantee after compounds are added and withdrawn mid-campaign, measured.

Each run is a whole simulated campaign through the campaign's own code (``Campaign.create``,
``next_plate``, ``record``, ``changes.add_compounds``, ``changes.withdraw``; SQLite file, replay
and restarts included), on the [KW] synthetic logistic instance (K = 20, d = 2, seed 0; 0/1
outcomes drawn from its cure rates) with GLGapE (epsilon = 0.1, delta = 0.1, its default
likelihood-ratio stopping rule), plates of 20 wells:

- while plate 2 is in the lab, one compound is added, built to be the best of all: its cure rate is
  epsilon + 0.02 above the runner-up of the library, so the runner-up is no longer an epsilon-good
  answer once the best compound is gone;
- after plate 3 is recorded, the library's best compound is withdrawn (out of stock).

The answer must then be the new compound (or another within epsilon of it).  An error is a final
recommendation whose cure rate is more than epsilon below the best of the compounds still in the
screen.  The error rate is reported with its one-sided 95 % Clopper-Pearson upper bound
(benchmarks/error_rates.py).  ``--baseline-runs N`` also runs N campaigns on the final set of
compounds without changes (the added compound in the library from the start, the withdrawn one
never in it): the error rate the same answer has when nothing changes.

    python benchmarks/change_study.py --runs 200          # writes docs/error_rates.md's block
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import expit, logit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from error_rates import DOCS, upper_bound  # noqa: E402  (the Clopper-Pearson bound, one home)

from screenbai.bandits.sim.generators import kw_synthetic  # noqa: E402
from screenbai.campaign import Campaign, Library  # noqa: E402
from screenbai.campaign.state.changes import add_compounds, withdraw  # noqa: E402
from screenbai.report import markdown_table, write_generated_block  # noqa: E402

EPSILON, DELTA, PLATE, CAP = 0.1, 0.1, 20, 40_000


def instance():
    """(features, cure rates) of the library and (features, cure rate) of the compound added."""
    inst = kw_synthetic(K=20, d=2, seed=0)
    X, theta, means = inst.features, inst.theta, inst.means
    order = np.argsort(-means)
    target = means[order[1]] + EPSILON + 0.02  # beyond epsilon from the runner-up
    x_new = X[order[1]] + (logit(target) - X[order[1]] @ theta) * theta / (theta @ theta)
    return X, means, x_new, float(expit(x_new @ theta)), int(order[0])


def library(X: np.ndarray, ids: list[str]) -> Library:
    compounds = pd.DataFrame({"compound_id": ids, "smiles": ["C"] * len(X)})
    compounds["input_smiles"] = compounds["smiles"]
    compounds["source_row"] = np.arange(2, len(X) + 2)
    rejected = pd.DataFrame(columns=["source_row", "compound_id", "smiles", "reason", "detail"])
    return Library(compounds, X, rejected, {"method": "given"}, {"path": "kw_synthetic", "kind": "study"})


def one_run(seed: int, change: bool, folder: Path) -> dict:
    X, means, x_new, mean_new, best = instance()
    rng = np.random.default_rng([seed, 7])
    ids = [f"C{i:02d}" for i in range(len(X))]
    truth = means.copy()
    if not change:  # the final set from the start
        keep = np.arange(len(X)) != best
        X, truth, ids = np.vstack([X[keep], x_new]), np.append(truth[keep], mean_new), [*np.asarray(ids)[keep], "NEW"]
    path = folder / f"run{seed}_{int(change)}.campaign"
    camp = Campaign.create(path, library(X, ids), "glgape", {"epsilon": EPSILON, "delta": DELTA}, seed=seed,
                           durable=False)
    camp.keep_progress = False  # the report's progress points: not needed here, and the costliest part of a record
    plates = 0
    try:
        while not camp.policy.done and int(camp.observations()[0].sum()) < CAP:
            plate = camp.next_plate(PLATE, force=True)
            plates += 1
            if change and plates == 2:  # synthesised while plate 2 is in the lab
                add_compounds(camp, ["NEW"], ["CC"], features=x_new[None, :])
                truth = np.append(truth, mean_new)
            values = (rng.random(len(plate)) < truth[list(plate.arms)]).astype(int)
            res = folder / "r.csv"
            res.write_text("plate_id,well,outcome\n" + "".join(
                f"{plate.plate_id},{w},{v}\n" for w, v in zip(plate.wells, values)))
            camp.record(res)
            if change and plates == 3:
                withdraw(camp, f"C{best:02d}", "out of stock")
        active = np.asarray(getattr(camp.policy, "arm_set", np.arange(camp.K)))
        answer = int(camp.policy.result().recommendation[0])
        tests = int(camp.observations()[0].sum())
        return {"seed": seed, "change": change, "tests": tests, "stopped": bool(camp.policy.done),
                "error": bool(truth[answer] < truth[active].max() - EPSILON), "answer": camp.compound_ids[answer]}
    finally:
        camp.close()
        path.unlink(missing_ok=True)


def summary(runs: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for change, g in runs.groupby("change", sort=False):
        errors, n = int(g["error"].sum()), len(g)
        rows.append({
            "campaign": "a compound added (plate 2), the best withdrawn (after plate 3)" if change
            else "no change: the final set of compounds from the start",
            "runs": n, "stopped": int(g["stopped"].sum()), "errors": errors, "error rate": errors / n,
            "95% upper bound": upper_bound(errors, n), "delta": DELTA,
            "tests, median": float(g["tests"].median()),
            "answer NEW": int((g["answer"] == "NEW").sum()),
        })
    return pd.DataFrame(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--baseline-runs", type=int, default=0, help="runs without the changes")
    ap.add_argument("--no-docs", action="store_true", help="print only")
    args = ap.parse_args()
    command = f"python benchmarks/change_study.py {' '.join(sys.argv[1:])}".rstrip()
    X, means, x_new, mean_new, best = instance()
    print(f"library best {means.max():.3f} (C{best:02d}, withdrawn), runner-up {np.sort(means)[-2]:.3f}, "
          f"added {mean_new:.3f}")
    start = time.time()
    out = []
    with tempfile.TemporaryDirectory(prefix="change-study-") as tmp:
        for change, n in ((True, args.runs), (False, args.baseline_runs)):
            for seed in range(n):
                out.append(one_run(seed, change, Path(tmp)))
    runs = pd.DataFrame(out)
    table = summary(runs)
    print(table.to_string(index=False))
    print(f"{time.time() - start:.0f} s")
    if not args.no_docs:
        write_generated_block(
            DOCS / "error_rates.md", "change_study",
            f"Written by `{command}` ({time.time() - start:.0f} s). The [KW] synthetic instance K = 20, d = 2, "
            f"seed 0: library best {means.max():.3f} (withdrawn after plate 3), runner-up {np.sort(means)[-2]:.3f}, "
            f"added compound {mean_new:.3f}; GLGapE, epsilon {EPSILON}, delta {DELTA}, plates of {PLATE}.\n\n"
            + markdown_table(table, ".3g"),
        )


if __name__ == "__main__":
    main()

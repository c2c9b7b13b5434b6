"""The forecast against actual stops.

log-tas / GLGapE (default): t solving t = T*(theta) beta(t, delta) with the true theta and the
likelihood-ratio set's approximate level (lr_set.forecast_level), beside the median stops measured in
docs/lower_bound.md (log-tas: benchmarks/tracking_ratios.py; GLGapE's default: issue 19's figures and
benchmarks/lower_bound.py), kw_synthetic(K = 50, seed 0), epsilon = 0.1, delta = 0.05.

lin-tas (``--lin-tas``): its own threshold (``BlockEvidence.threshold``, with the first designed block's point
mass) and the mixture's alone (``mixture_threshold``, the forecast before issue 19's fix), each from the true
theta, against the median of ``--reps`` runs measured here (delta = 0.05, epsilon = 0, the runner's seeds
0..reps-1), on Soare's instance (d = 2, omega = 0.1), Reda's K = 4, m = 2 and random_linear (K = 400, d = 20)
seeds 0-2.

log-tas with its own wells (``--log-tas``): the forecast from the true theta by the campaign's route
(certainty/forecast.py ``forecast`` with log-tas's ``stopping_threshold`` and, as ``shortcut``, its
``stopping_shortcut``: the own wells' tests for the true best compound), beside the likelihood-ratio set's
alone, against the median of ``--reps`` runs (epsilon = 0.1, delta = 0.05, the runner's seeds) on the CDK2
and EGFR potency arms (K = 400, d = 20; benchmarks/lower_bound.py's instances, cached under data/cache)
and kw_synthetic(K = 50, d = 10) seeds 0 and 2 (``--instances``: any of benchmarks/lower_bound.py's logistic
instances). Where the exact Bernoulli-KL bound is affordable (at most EXACT_MAX_PAIRS pairs), also the same
forecast with the exact T* (the allocation log-tas tracks at d <= 10) in place of the local form's.

    python benchmarks/forecast_check.py
    python benchmarks/forecast_check.py --lin-tas --reps 100 --jobs 2
    SCREENBAI_SHARED_DATA=/work/shared/data/chembl python benchmarks/forecast_check.py --log-tas --reps 10
    python benchmarks/forecast_check.py --log-tas --reps 20 --instances kw_d5_s0 kw_d5_s2 kw_d10_s0 kw_d10_s2

The campaign's forecast (``--campaign``): each instance's arms as a campaign library, the README's recipe
(log-tas, epsilon = 0.1, delta = 0.05) backtested with plates of ``--plate-size`` (Bernoulli outcomes of the true
means; campaign seeds 0..reps-1); after each plate count of ``--after``, ``status``'s forecast in total (tests
done + tests left), with T* from the exact Bernoulli-KL bound (the campaign's, where affordable) and from the
local form, against the tests the same run took to its stop (runs that stopped by then are left out):

    python benchmarks/forecast_check.py --campaign --after 1 4 --reps 10 --plate-size 24 --instances kw_d5_s2

With ``--keep DIR`` the stops and the campaigns are kept in DIR and read back by the next run with the same
folder: a change of the forecast alone is then measured on the same campaigns, in the time of ``status`` (empty
the folder when the policy changes: its runs would no longer be the code's).

The stop's law with theta known (``--law RUNS.pkl ...``): log-tas's stops saved by ``benchmarks/lower_bound.py
--save-runs`` (delta = 0.05; chunks of one instance joined) against the quantiles of ``certainty.forecast``'s law of
the stop, with T the records' exact T* times their exact sampling factor (docs/lower_bound_records.csv) and
log-tas's own threshold:

    python benchmarks/forecast_check.py --law a.pkl b.pkl
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from screenbai.bandits import policy_for_instance, replicate
from screenbai.bandits.certainty.complexity import characteristic_time
from screenbai.bandits.certainty.forecast import stopping_time
from screenbai.bandits.numerics.lr_set import forecast_level
from screenbai.bandits.sim.generators import kw_synthetic, random_linear, reda_classic, soare

# median tests at delta = 0.05 (docs/lower_bound.md, "The likelihood-ratio stop"): log-tas (200 / 100 /
# 20 runs at d = 2 / 5 / 10), GLGapE's default (20 runs), both with lr_set.RunningPredictor
MEASURED = {2: (529.5, 617), 5: (621, 690), 10: (2210, 1829)}


def logistic() -> None:
    print("| kw_synthetic d | T* | forecast | log-tas median (x forecast) | GLGapE median (x forecast) |")
    print("|---|---|---|---|---|")
    for d, (tas, glgape) in MEASURED.items():
        inst = kw_synthetic(K=50, d=d, seed=0)
        X, theta = inst.features, inst.theta
        best = int(np.argmax(X @ theta))
        T = characteristic_time(X, theta, model="logistic", sigma=0.5, epsilon=0.1, answer=(best,)).T_star
        t = stopping_time(T, lambda t, delta, p=X.shape[1]: forecast_level(t, p, delta), 0.05)
        print(f"| {d} | {T:.1f} | {t:,.0f} | {tas:,} ({tas / t:.2f}) | {glgape:,} ({glgape / t:.2f}) |")


LIN_TAS = {
    "soare(d=2, omega=0.1)": (lambda: soare(d=2, omega=0.1), {}),
    "reda_classic(K=4, m=2)": (lambda: reda_classic(K=4, m=2), {"m": 2}),
    **{f"random_linear seed {s}": ((lambda s=s: random_linear(seed=s)), {}) for s in range(3)},
}


def lin_tas(reps: int, jobs: int, delta: float = 0.05) -> None:
    print(f"| instance | T* | forecast before (mixture only) | forecast now (point mass) | median of {reps} runs | "
          "median / before | median / now |")
    print("|---|---|---|---|---|---|---|")
    for name, (make, params) in LIN_TAS.items():
        inst = make()
        X, theta, m = inst.features, inst.theta, int(params.get("m", 1))
        policy = policy_for_instance("lin-tas", inst, rng=0, delta=delta, **params)
        answer = tuple(int(a) for a in np.argsort(-(X @ theta), kind="stable")[:m])
        T = characteristic_time(X, theta, model="linear", sigma=float(policy.sigma), epsilon=0.0, m=m,
                                answer=answer).T_star
        before = stopping_time(T, policy.stopping_rule.mixture_threshold, delta)
        now = stopping_time(T, policy.stopping_threshold, delta)
        runs = replicate(inst, "lin-tas", {"delta": delta, "sigma": "oracle", **params}, n_reps=reps, seed=0,
                         n_jobs=jobs)
        med = float(np.median(runs["samples"]))
        print(f"| {name} | {T:.2f} | {before:,.0f} | {now:,.0f} | {med:,.1f} | {med / before:.2f} | {med / now:.2f} |")


LOG_TAS = ("cdk2_potency", "egfr_potency", "kw_d10_s0", "kw_d10_s2")


def log_tas(reps: int, jobs: int, instances=LOG_TAS, delta: float = 0.05, epsilon: float = 0.1) -> None:
    from lower_bound import _specs  # the benchmark's instances (the potency arms cached as .npz)
    from scipy.special import expit

    from screenbai.bandits.certainty.complexity import exact_pairs_affordable
    from screenbai.bandits.certainty.forecast import forecast

    specs = _specs()
    print(f"| instance | best mean | forecast, likelihood-ratio set alone | forecast, with the own wells | "
          f"median of {reps} runs (min-max) | correct | stopped by own wells | median / forecast | "
          "forecast with the exact T* | median / it |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in instances:
        inst = specs[name].build()
        X, theta = inst.features, inst.theta
        best = int(np.argmax(X @ theta))
        policy = policy_for_instance("log-tas", inst, rng=0, epsilon=epsilon, delta=delta)

        def shortcut(th, policy=policy, best=best, X=X):
            return policy.stopping_shortcut(np.array([best]), expit(X[[best]] @ th), 0.0)

        kw = dict(source="prior", model="logistic", epsilon=epsilon, m=1, answer=(best,))
        alone = forecast(X, theta, policy.stopping_threshold, delta, **kw).tests
        both = forecast(X, theta, policy.stopping_threshold, delta, shortcut=shortcut, **kw).tests
        exact = math.nan
        if exact_pairs_affordable(X.shape[0]):
            exact = forecast(X, theta, policy.stopping_threshold, delta, shortcut=shortcut, exact=True, tol=1e-2,
                             **kw).tests
        runs = replicate(inst, "log-tas", {"epsilon": epsilon, "delta": delta}, n_reps=reps, seed=0, n_jobs=jobs)
        samples = np.asarray(runs["samples"], dtype=float)
        med = float(np.median(samples))
        wells = int((runs["diag_stopped_by"] == "own wells").sum()) if "diag_stopped_by" in runs else 0
        print(f"| {name} | {float(inst.means.max()):.3f} | {alone:,.0f} | {both:,.0f} | {med:,.1f} "
              f"({samples.min():,.0f}-{samples.max():,.0f}) | {int(np.sum(runs['correct']))}/{reps} | "
              f"{wells}/{reps} | {med / both:.2f} | {exact:,.0f} | {med / exact:.2f} |", flush=True)


def _status_both(fc, path):
    """(tests so far, tests left by the exact-T* forecast, by the local form's, the campaign's band in plates
    left) of a saved campaign (the exact value nan where the campaign's forecast did not use the exact bound;
    None when no forecast is left)."""
    from screenbai.campaign import Campaign

    camp = Campaign.open(path)
    try:
        st = camp.status()
        if st.forecast_tests is None:
            return None
        ratio = fc.exact_ratio
        fc.exact_ratio = lambda *a, **k: None  # the local form's forecast, on the same outcomes
        try:
            local = camp.status().forecast_tests
        finally:
            fc.exact_ratio = ratio
    finally:
        camp.close()
    return st.tests, st.forecast_tests if st.forecast_bound == "exact" else math.nan, local, st.forecast_band_plates


def campaign_forecasts(reps: int, instances, plate_size: int, after, keep: str | None = None) -> None:
    """``keep``: a folder for the runs' stops and the campaigns after each plate, read back where there (so a
    change of the forecast alone is measured on the same campaigns in the time of its ``status`` calls)."""
    import importlib
    import json
    import tempfile
    from pathlib import Path

    import pandas as pd
    from lower_bound import _specs

    from screenbai.campaign.backtest import KnownOutcomes, run_backtest
    from screenbai.campaign.library import Library

    fc = importlib.import_module("screenbai.bandits.certainty.forecast")  # the module (the package exports a function)
    specs = _specs()
    params = {"epsilon": 0.1, "delta": 0.05}
    print("| instance | after plate | runs still going | their median tests to the stop | forecast total, exact T*: "
          "median | stop / it: median (range) | within 2 | local T*: median | stop / it: median (range) | within 2 | "
          "stop within status's band |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name in instances:
        inst = specs[name].build()
        K = inst.features.shape[0]
        compounds = pd.DataFrame({"compound_id": [f"A{k:03d}" for k in range(K)], "smiles": ["C"] * K})
        compounds["input_smiles"] = compounds["smiles"]
        compounds["source_row"] = np.arange(2, K + 2)
        rejected = pd.DataFrame(columns=["source_row", "compound_id", "smiles", "reason", "detail"])
        lib = Library(compounds, inst.features, rejected, {"method": "benchmark", "d": inst.features.shape[1]},
                      {"path": name, "kind": "benchmark"})
        known = KnownOutcomes(lib, inst.means, None, name, None, None)
        saved = None if keep is None else Path(keep) / f"{name}_plates{plate_size}_stops.json"
        stops = json.loads(saved.read_text()) if saved is not None and saved.exists() else {}
        for seed in range(reps):
            if str(seed) not in stops:
                stops[str(seed)] = run_backtest(known, "log-tas", params, seed=seed, plate_size=plate_size,
                                                max_tests=100_000).tests
        if saved is not None:
            saved.parent.mkdir(parents=True, exist_ok=True)
            saved.write_text(json.dumps(stops))
        for k in after:
            rows = []
            for seed in range(reps):
                with tempfile.TemporaryDirectory() as tmp:
                    folder = Path(tmp) if keep is None else Path(keep)
                    path = folder / f"{name}_plates{plate_size}_seed{seed}_after{k}.campaign"
                    if not path.exists():
                        run_backtest(known, "log-tas", params, seed=seed, plate_size=plate_size,
                                     max_tests=k * plate_size, campaign_path=path)
                    got = _status_both(fc, path)
                if got is not None:  # the run had not stopped by plate k
                    done, ex_left, lo_left, (low, high) = got
                    stop = stops[str(seed)]
                    inside = done + (low - 1) * plate_size < stop <= done + high * plate_size
                    rows.append((stop, done + ex_left, done + lo_left, inside))
            if not rows:
                print(f"| {name} | {k} | 0/{reps} | | | | | | | | |", flush=True)
                continue
            st_a, ex_a, lo_a, inside = (np.array(c, dtype=float) for c in zip(*rows))

            def cols(f, st_a=st_a):
                r = st_a / f
                return (f"{np.median(f):,.0f} | {np.median(r):.2f} ({r.min():.2f}-{r.max():.2f}) | "
                        f"{int(np.sum((r <= 2) & (r >= 0.5)))}/{r.size}")

            print(f"| {name} | {k} | {len(rows)}/{reps} | {np.median(st_a):,.0f} | {cols(ex_a)} | {cols(lo_a)} | "
                  f"{int(inside.sum())}/{len(rows)} |", flush=True)


def law_of_the_stop(files) -> None:
    import pandas as pd
    from lower_bound import _specs

    from screenbai.bandits.certainty.forecast import stop_quantiles

    records = pd.read_csv("docs/lower_bound_records.csv")
    runs: dict[str, dict[int, float]] = {}
    for f in files:
        for key, rec in pd.read_pickle(f):
            if key["algorithm"] == "log-tas" and key["delta"] == 0.05:
                runs.setdefault(key["instance_name"], {}).update(zip(rec["replication"], rec["samples"]))
    specs = _specs()
    print("| instance | runs | stops: 10 / 50 / 90 % | law: 10 / 50 / 90 % | stops inside the law's 80 % band |")
    print("|---|---|---|---|---|")
    for name in sorted(runs):
        stops = np.array(list(runs[name].values()), dtype=float)
        row = records[(records.instance == name) & (records.algorithm == "log-tas") & (records.delta == 0.05)].iloc[0]
        T = float(row.T_star_exact * row.sampling_factor_exact)
        beta = policy_for_instance("log-tas", specs[name].build(), rng=0, epsilon=0.1, delta=0.05).stopping_threshold
        law = stop_quantiles([T], [math.inf], beta, 0.05, [0.1, 0.5, 0.9])
        q = np.quantile(stops, [0.1, 0.5, 0.9])
        inside = np.mean((stops >= law[0]) & (stops <= law[2]))
        print(f"| {name} | {stops.size} | {' / '.join(f'{v:.0f}' for v in q)} | {' / '.join(f'{v:.0f}' for v in law)} "
              f"| {inside:.0%} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lin-tas", action="store_true", help="lin-tas's forecast against runs measured here")
    ap.add_argument("--log-tas", action="store_true", help="log-tas's forecast (with its own wells) against runs")
    ap.add_argument("--reps", type=int, default=100, help="runs per instance (--lin-tas, --log-tas, --campaign)")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes (--lin-tas, --log-tas)")
    ap.add_argument("--instances", nargs="+", default=list(LOG_TAS), help="--log-tas, --campaign: the instances")
    ap.add_argument("--campaign", action="store_true", help="the campaign's forecast after plates --after against "
                    "its stop")
    ap.add_argument("--after", nargs="+", type=int, default=[1], help="--campaign: the plates after which to forecast")
    ap.add_argument("--plate-size", type=int, default=24, help="--campaign: tests per plate")
    ap.add_argument("--keep", metavar="DIR", help="--campaign: keep the runs' stops and campaigns in DIR, and read "
                    "them back from there (a change of the forecast alone, measured on the same campaigns)")
    ap.add_argument("--law", nargs="+", metavar="RUNS.pkl", help="log-tas's saved runs against the stop's law")
    args = ap.parse_args()
    if args.law:
        law_of_the_stop(args.law)
    elif args.campaign:
        campaign_forecasts(args.reps, args.instances, args.plate_size, args.after, args.keep)
    elif args.log_tas:
        log_tas(args.reps, args.jobs, args.instances)
    elif args.lin_tas:
        lin_tas(args.reps, args.jobs)
    else:
        logistic()


if __name__ == "__main__":
    main()

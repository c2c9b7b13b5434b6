"""The screens themselves: arms from the ground truth's logistic fit, the K compounds of a screen,
its bandit instance, chunks of replications and their scoring (the declared compounds, both
errors), merged into the study's records."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from screenbai.bandits.sim.instance import epsilon_good, mth_best

from .plan import algorithm_params, load_algorithm_modules, replication_seed


def arm_columns(table: pd.DataFrame) -> list[str]:
    """Feature columns of an arms table (``x0 .. x{d}``; the last one is the intercept)."""
    cols = [c for c in table.columns if c.startswith("x") and c[1:].isdigit()]
    return sorted(cols, key=lambda c: int(c[1:]))


def draw_subset(library: pd.DataFrame, K: int, subset_seed: int) -> pd.DataFrame:
    """K compounds drawn without replacement, seeded by ``(subset_seed, K)``.

    Returns ``compound_id, smiles, activity_nM, arm`` (``arm`` = position 0..K-1, in library
    order) plus ``activity_rank`` (1 = most potent of the K).
    """
    n = len(library)
    if not 2 <= K <= n:
        raise ValueError(
            f"K = {K} compounds requested but the curated library has {n}; lower K in "
            f"screen.studies (at most {n})"
        )
    rng = np.random.default_rng(np.random.SeedSequence([int(subset_seed), int(K)]))
    idx = np.sort(rng.choice(n, size=K, replace=False))
    sub = library.iloc[idx][["compound_id", "smiles", "activity_nM"]].reset_index(drop=True)
    sub.insert(0, "arm", np.arange(K))
    sub["activity_rank"] = sub["activity_nM"].rank(method="min").astype(int)
    return sub


def build_instance(arms: pd.DataFrame, subset: pd.DataFrame, theta: Sequence[float], name: str):
    """Bernoulli logistic instance of the subset: features from ``arms``, means = cure rates."""
    from screenbai.bandits import Instance

    table = arms.set_index("compound_id").loc[subset["compound_id"]]
    X = table[arm_columns(arms)].to_numpy(dtype=float)
    theta_arr = np.asarray(theta, dtype=float)
    if theta_arr.size != X.shape[1]:
        raise ValueError(f"theta has {theta_arr.size} entries but the arms have {X.shape[1]} features")
    return Instance(
        X, table["mean"].to_numpy(dtype=float), reward="bernoulli", theta=theta_arr, link="logistic", name=name
    )


def ground_truth_arms(
    library: pd.DataFrame,
    features: pd.DataFrame,
    *,
    threshold_nM: float = 1e6,
    C: float = 1.0,
    random_state: int = 0,
) -> tuple[pd.DataFrame, dict]:
    """Arms of dimension d for the whole library and the fit that defines their true means.

    A compound is "cured" when ``activity_nM < threshold_nM`` (as in [KW]); a logistic
    regression on the PCA features gives every compound its cure rate ``mean``, with the 95 %
    Wald interval of that estimate (``mean_lo95``, ``mean_hi95``).  The arms table has
    ``compound_id, activity_nM, cured, mean, mean_lo95, mean_hi95, x0 .. x{d}`` (``x{d}`` = intercept);
    the fit dict has ``theta_full`` (d + 1 entries) and the class counts and fit quality.
    """
    if list(features["compound_id"]) != list(library["compound_id"]):
        raise ValueError("features and library list different compounds (re-run the pca rule)")
    X = features.drop(columns=["compound_id"]).to_numpy(dtype=float)
    from screenbai.chem.ground_truth import binarize, fit_ground_truth

    cured = np.asarray(binarize(library["activity_nM"].to_numpy(dtype=float), threshold_nM), dtype=bool)
    n_cured = int(cured.sum())
    if n_cured in (0, len(cured)):
        raise ValueError(
            f"all {len(cured)} compounds fall on one side of ground_truth.threshold_nM = {threshold_nM:g} "
            f"(activities {library['activity_nM'].min():.3g}-{library['activity_nM'].max():.3g} nM): "
            "no logistic ground truth can be fitted. Choose a threshold inside that range, or curate "
            "less strictly (e.g. curation.drop_flagged: false keeps values flagged as outside the typical range)."
        )
    gt = fit_ground_truth(X, cured, C=C, random_state=random_state)
    A = np.asarray(gt.arm_features(X), dtype=float)
    arms = pd.DataFrame(A, columns=[f"x{i}" for i in range(A.shape[1])])
    arms.insert(0, "compound_id", library["compound_id"].to_numpy())
    arms.insert(1, "activity_nM", library["activity_nM"].to_numpy(dtype=float))
    arms.insert(2, "cured", cured.astype(bool))
    arms.insert(3, "mean", np.asarray(gt.means, dtype=float))
    lo, hi = gt.cure_rate_interval(X, level=0.95)
    arms.insert(4, "mean_lo95", lo)
    arms.insert(5, "mean_hi95", hi)
    fit = {
        "d": int(X.shape[1]),
        "threshold_nM": float(threshold_nM),
        "C": float(C),
        "n_compounds": len(cured),
        "n_cured": n_cured,
        "n_not_cured": int(len(cured) - n_cured),
        "theta_full": [float(v) for v in np.asarray(gt.theta_full).ravel()],
        "mean_min": float(np.min(gt.means)),
        "mean_median": float(np.median(gt.means)),
        "mean_max": float(np.max(gt.means)),
        "metrics": _jsonable(gt_metrics(gt)),
    }
    return arms, fit


def gt_metrics(gt) -> dict:
    """The fit-quality attributes a GroundTruth exposes (accuracy, AUC, log-loss, ...)."""
    if hasattr(gt, "summary"):
        return dict(gt.summary())
    out = {}
    for key in ("accuracy", "balanced_accuracy", "roc_auc", "auc", "log_loss", "brier", "brier_score"):
        if hasattr(gt, key):
            out[key] = getattr(gt, key)
    return out


def _jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, np.ndarray)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating, float)):
        return None if not np.isfinite(obj) else float(obj)
    return obj


def merge_records(chunks: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Concatenate run chunks, ordered by algorithm label, d, K and replication."""
    records = pd.concat(list(chunks), ignore_index=True)
    dup = records.duplicated(["label", "d", "K", "replication"])
    if dup.any():
        raise ValueError(f"{int(dup.sum())} replications appear twice; chunks overlap")
    return records.sort_values(["label", "d", "K", "replication"], kind="stable").reset_index(drop=True)


def run_chunk(
    arms: pd.DataFrame,
    subset: pd.DataFrame,
    theta: Sequence[float],
    entry: Mapping[str, Any],
    *,
    d: int,
    K: int,
    seed: int,
    start: int,
    n_reps: int,
    max_samples: int = 10**6,
    modules: Sequence[str] = (),
    default_epsilon: float = 0.1,
) -> pd.DataFrame:
    """Replications ``start .. start + n_reps - 1`` of one algorithm on one (d, K) screen.

    One tidy row per replication: the runner's record (samples, stopped, pulls, ...) plus
    ``label, d, K`` and the declared compounds and errors of :func:`score_runs`.
    """
    from screenbai.bandits.core.runner import replicate

    load_algorithm_modules(modules)
    if len(subset) != K:
        raise ValueError(f"subset has {len(subset)} compounds, expected K = {K}")
    instance = build_instance(arms, subset, theta, name=f"d{d}_K{K}")
    params = algorithm_params(entry, K, max_samples)
    rep_seed = replication_seed(seed, d, K)
    try:
        rec = replicate(instance, entry["algorithm"], params, n_reps=n_reps, seed=rep_seed, start=start, n_jobs=1)
    except (ValueError, TypeError) as exc:
        raise _screen_error(entry, d, K, exc) from exc
    return score_runs(rec, instance.means, subset, entry, d=d, K=K, default_epsilon=default_epsilon)


def _screen_error(entry: Mapping[str, Any], d: int, K: int, exc: Exception) -> ValueError:
    """An algorithm's refusal of this screen's arms (a budget too small for the span the PCA gave, known only once
    it has run), naming the run's label, the screen and, for budget_per_arm, the config key to raise."""
    per_arm = entry.get("budget_per_arm")
    hint = (f"; the budget is budget_per_arm = {per_arm} times K = {K}: raise budget_per_arm of {entry['label']!r} "
            "in the config's algorithms" if per_arm is not None and "budget" in str(exc) else "")
    screen = f"algorithms: {entry['label']!r} ({entry['algorithm']}) on the screen d = {d}, K = {K}"
    return ValueError(f"{screen}: {exc}{hint}")


def judging_epsilon(entry: Mapping[str, Any], default: float = 0.1) -> float:
    """The epsilon an algorithm's answer is judged with: its own (given or its default), else ``default``.

    Fixed-budget algorithms have none; they are judged with ``default`` (the config's
    ``report.epsilon``), the same yardstick for every algorithm without one.
    """
    from screenbai.bandits.core.params import declared
    from screenbai.bandits.core.registry import get

    params = entry.get("params") or {}
    if params.get("epsilon") is not None:
        return float(params["epsilon"])
    reg = get(entry["algorithm"])
    own = reg.defaults.get("epsilon", getattr(declared(reg.cls).get("epsilon"), "default", None))
    if isinstance(own, (int, float)) and not isinstance(own, bool):
        return float(own)
    return float(default)


def score_runs(
    rec: pd.DataFrame,
    means: np.ndarray,
    subset: pd.DataFrame,
    entry: Mapping[str, Any],
    *,
    d: int,
    K: int,
    default_epsilon: float = 0.1,
) -> pd.DataFrame:
    """Add what a chemist reads to the runner's records: the declared compounds and both errors.

    Per run: the declared compounds (``declared_ids``; m of them for a top-m algorithm), their
    measured activity and rank among the K by activity (1 = most potent) and by true cure rate,
    the median of those ranks, and two errors with one definition each, used by every table and
    figure: ``exact_error`` (a declared compound is not among the m best cure rates) and
    ``eps_error`` (a declared compound's cure rate is more than ``epsilon`` below the m-th best).
    ``n_eps_good`` counts the compounds of the sample that epsilon makes correct answers.
    """
    mu = np.asarray(means, dtype=float)
    ids = subset["compound_id"].to_numpy()
    act = subset["activity_nM"].to_numpy(dtype=float)
    act_rank = subset["activity_rank"].to_numpy()
    mean_rank = pd.Series(-mu).rank(method="min").astype(int).to_numpy()
    declared = [np.asarray(r, dtype=int).reshape(-1) for r in rec["recommendation"]]
    m = int(declared[0].size)
    mu_m = mth_best(mu, m)
    eps = judging_epsilon(entry, default_epsilon)
    best = int(np.argmax(mu))
    rec = rec.copy()
    rec.insert(0, "label", entry["label"])
    rec.insert(1, "d", int(d))
    rec.insert(2, "K", int(K))
    rec["m"] = m
    rec["epsilon"] = eps
    rec["declared_arms"] = [[int(a) for a in arms] for arms in declared]
    rec["declared_ids"] = [[str(ids[a]) for a in arms] for arms in declared]
    rec["declared_activity_nM"] = [[float(act[a]) for a in arms] for arms in declared]
    rec["declared_activity_rank"] = [[int(act_rank[a]) for a in arms] for arms in declared]
    rec["declared_mean"] = [[float(mu[a]) for a in arms] for arms in declared]
    rec["declared_mean_rank"] = [[int(mean_rank[a]) for a in arms] for arms in declared]
    rec["declared_rank_median"] = [float(np.median(act_rank[arms])) for arms in declared]
    rec["exact_error"] = [bool(np.any(mu[arms] < mu_m)) for arms in declared]
    good = epsilon_good(mu, m, eps)  # the one judgement of correctness (bandits/sim/instance.py)
    rec["eps_error"] = [not bool(np.all(good[arms])) for arms in declared]
    rec["n_eps_good"] = int(np.sum(good))
    rec["best_mean"] = float(mu[best])
    rec["best_mean_id"] = str(ids[best])
    rec["best_activity_nM"] = float(act.min())
    rec["best_activity_id"] = str(ids[int(np.argmin(act))])
    rec["recommendation"] = rec["recommendation"].map(lambda r: [int(a) for a in r])
    rec["pulls"] = rec["pulls"].map(lambda p: [int(a) for a in p])
    return rec

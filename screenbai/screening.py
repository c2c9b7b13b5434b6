"""Screening glue for the workflow: data source with offline fallback, arms, subsets, run chunks.

The Snakemake rules call these functions (one per rule); the chemistry lives in
:mod:`screenbai.chem`, the algorithms in :mod:`screenbai.bandits`.

Arms (as in [KW]'s drug-design experiment): each compound of the library is an arm whose
features are its PCA coordinates **plus an intercept column**, so the logistic ground truth is
exactly ``mu = sigmoid(x^T theta)``: the PCA dimension ``d`` of the config gives bandits with
``d + 1`` features.  Each screen draws one fixed random subset of ``K`` compounds per
``(K, subset_seed)``, so "the compound declared best" can be compared with the best of the
sample, and replications re-run the algorithm on that subset with seeds from
``SeedSequence`` (common random numbers: the same seeds for every algorithm).
"""

from __future__ import annotations

import importlib
import logging
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

logger = logging.getLogger("screenbai.screening")

#: Where relative data paths are looked up after the repository root.
SHARED_DATA_ENV = "SCREENBAI_SHARED_DATA"
DEFAULT_SHARED_DATA = "../shared/data/chembl"

__all__ = [
    "acquire_activities",
    "arm_columns",
    "build_instance",
    "check_algorithms",
    "draw_subset",
    "ground_truth_arms",
    "merge_records",
    "reference_point",
    "replication_chunks",
    "replication_seed",
    "resolve_data_path",
    "run_chunk",
    "study_points",
]


# ---------------------------------------------------------------------------------- data source
def resolve_data_path(path: str | os.PathLike, repo_root: str | os.PathLike = ".") -> Path:
    """Find a data file: absolute, under ``repo_root``, or under ``$SCREENBAI_SHARED_DATA``.

    ``$VARS`` and ``~`` are expanded first.  ``$SCREENBAI_SHARED_DATA`` defaults to
    ``../shared/data/chembl`` relative to ``repo_root``.
    """
    raw = os.path.expanduser(os.path.expandvars(str(path)))
    p = Path(raw)
    if p.is_absolute():
        candidates = [p]
    else:
        shared = Path(os.path.expanduser(os.environ.get(SHARED_DATA_ENV, DEFAULT_SHARED_DATA)))
        if not shared.is_absolute():
            shared = Path(repo_root) / shared
        candidates = [Path(repo_root) / p, shared / p]
    for c in candidates:
        if c.is_file():
            return c.resolve()
    raise FileNotFoundError(
        f"data file {path!r} not found; looked at: {', '.join(str(c) for c in candidates)}. "
        f"Give an absolute path, a path relative to the repository root, or set "
        f"{SHARED_DATA_ENV} to the directory that holds it."
    )


def _with_resolved_path(source: Mapping[str, Any], repo_root) -> dict:
    cfg = {k: v for k, v in dict(source).items() if v is not None}
    if "path" in cfg:
        cfg["path"] = str(resolve_data_path(cfg["path"], repo_root))
    return cfg


def acquire_activities(
    source: Mapping[str, Any],
    fallback: Mapping[str, Any] | None = None,
    *,
    cache_dir: str | os.PathLike = "data/cache",
    repo_root: str | os.PathLike = ".",
) -> tuple[pd.DataFrame, dict]:
    """Load the raw activities of ``source``; fall back to a local file if ChEMBL is unreachable.

    Returns ``(raw, provenance)``; ``provenance`` records the source actually used
    (``used``: "source" or "offline_fallback"), its settings and, after a fallback, the error
    and a warning text that the report repeats.  Without a fallback the
    :class:`~screenbai.chem.acquire.ChemblUnavailableError` (whose message says how to point
    the config at a file) propagates.
    """
    from screenbai.chem.acquire import ChemblUnavailableError, load_activities

    cfg = _with_resolved_path(source, repo_root)
    provenance: dict[str, Any] = {"requested": dict(source), "used": "source", "settings": cfg}
    try:
        raw = load_activities(cfg, cache_dir=cache_dir)
    except ChemblUnavailableError as exc:
        if not fallback:
            raise
        fb = _with_resolved_path(fallback, repo_root)
        warning = (
            f"OFFLINE FALLBACK: ChEMBL target {source.get('target_chembl_id')} could not be "
            f"downloaded and no cache exists; using {fb.get('path')} ({fb.get('kind')}) instead. "
            "These results are NOT from the requested target."
        )
        logger.warning("%s Cause: %s", warning, exc)
        provenance.update(used="offline_fallback", settings=fb, error=str(exc), warning=warning)
        raw = load_activities(fb, cache_dir=cache_dir)
    provenance["n_rows"] = int(len(raw))
    return raw, provenance


# ---------------------------------------------------------------------------------- study plan
def _as_list(v) -> list[int]:
    return [int(x) for x in (v if isinstance(v, (list, tuple)) else [v])]


def study_points(studies: Mapping[str, Mapping[str, Any]]) -> list[tuple[int, int]]:
    """The distinct (d, K) pairs of all studies, sorted."""
    pts = {(d, K) for s in studies.values() for d in _as_list(s["d"]) for K in _as_list(s["K"])}
    return sorted(pts)


def reference_point(studies: Mapping[str, Mapping[str, Any]], override: Mapping[str, int] | None = None) -> tuple[int, int]:
    """The (d, K) screen shown in the pulls and structures figures.

    ``override`` (config ``report.reference``) if given, else the screen shared by the most
    studies (the crossing of a d-study and a K-study), the largest K on ties.
    """
    points = study_points(studies)
    if override:
        ref = (int(override["d"]), int(override["K"]))
        if ref not in points:
            raise ValueError(f"report.reference {ref} is not one of the screens (d, K): {points}")
        return ref
    count = {p: sum(p[0] in _as_list(s["d"]) and p[1] in _as_list(s["K"]) for s in studies.values()) for p in points}
    return max(points, key=lambda p: (count[p], p[1], p[0]))


def replication_chunks(replications: int, chunk_size: int) -> list[tuple[int, int]]:
    """(start, n) for each job's block of replications."""
    return [(s, min(chunk_size, replications - s)) for s in range(0, replications, chunk_size)]


def replication_seed(seed: int, d: int, K: int) -> int:
    """The replication seed of screen (d, K): same for every algorithm (common random numbers)."""
    return int(np.random.SeedSequence([int(seed), int(d), int(K)]).generate_state(1, np.uint32)[0])


def load_algorithm_modules(modules: Sequence[str] = ()) -> None:
    """Import extra modules whose ``@register`` decorators add algorithms to the registry."""
    for name in modules:
        importlib.import_module(name)


def check_algorithms(algorithms: Sequence[Mapping[str, Any]], modules: Sequence[str] = ()) -> None:
    """Fail early (before any job) on an unknown algorithm, a duplicate label or a bad parameter."""
    from screenbai.bandits.params import check, declared
    from screenbai.bandits.registry import available, get

    load_algorithm_modules(modules)
    labels = [a["label"] for a in algorithms]
    dup = sorted({x for x in labels if labels.count(x) > 1})
    if dup:
        raise ValueError(f"algorithms: label(s) {dup} used more than once; give each run its own label")
    for entry in algorithms:
        name = entry["algorithm"]
        try:
            reg = get(name)
        except KeyError:
            raise ValueError(
                f"algorithms: {entry['label']!r} asks for unknown algorithm {name!r}; "
                f"registered: {', '.join(available())}"
            ) from None
        params = dict(entry.get("params") or {})
        if entry.get("budget_per_arm") is not None:
            if "budget" not in declared(reg.cls):
                raise ValueError(
                    f"algorithms: {entry['label']!r} sets budget_per_arm but {name} has no 'budget' "
                    f"parameter (parameters: {', '.join(declared(reg.cls))})"
                )
            if "budget" in params:
                raise ValueError(f"algorithms: {entry['label']!r} sets both budget and budget_per_arm; keep one")
        check(reg.cls, {**reg.defaults, **params}, label=f"algorithms: {entry['label']!r}")


def algorithm_params(entry: Mapping[str, Any], K: int, max_samples: int) -> dict:
    """The keyword arguments of one run: config params, budget from budget_per_arm, safety cap."""
    params = dict(entry.get("params") or {})
    if entry.get("budget_per_arm") is not None:
        params["budget"] = int(math.ceil(float(entry["budget_per_arm"]) * K))
    params.setdefault("max_samples", int(max_samples))
    return params


# ---------------------------------------------------------------------------------- arms
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
    theta = np.asarray(theta, dtype=float)
    if theta.size != X.shape[1]:
        raise ValueError(f"theta has {theta.size} entries but the arms have {X.shape[1]} features")
    return Instance(
        X, table["mean"].to_numpy(dtype=float), reward="bernoulli", theta=theta, link="logistic", name=name
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
    regression on the PCA features gives every compound its cure rate ``mean``.  The arms
    table has ``compound_id, activity_nM, cured, mean, x0 .. x{d}`` (``x{d}`` = intercept);
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
    fit = {
        "d": int(X.shape[1]),
        "threshold_nM": float(threshold_nM),
        "C": float(C),
        "n_compounds": int(len(cured)),
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


# ---------------------------------------------------------------------------------- screening
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
) -> pd.DataFrame:
    """Replications ``start .. start + n_reps - 1`` of one algorithm on one (d, K) screen.

    One tidy row per replication: the runner's record (samples, stopped, correct, pulls, ...)
    plus ``label, d, K`` and the declared compound (``declared_id``, its measured activity, its
    rank among the K by activity and by true cure rate).
    """
    from screenbai.bandits.runner import replicate

    load_algorithm_modules(modules)
    if len(subset) != K:
        raise ValueError(f"subset has {len(subset)} compounds, expected K = {K}")
    instance = build_instance(arms, subset, theta, name=f"d{d}_K{K}")
    params = algorithm_params(entry, K, max_samples)
    rep_seed = replication_seed(seed, d, K)
    rec = replicate(instance, entry["algorithm"], params, n_reps=n_reps, seed=rep_seed, start=start, n_jobs=1)
    mu = instance.means
    mean_rank = pd.Series(-mu).rank(method="min").astype(int).to_numpy()
    best_arm = int(np.argmax(mu))
    declared = np.array([int(r[0]) for r in rec["recommendation"]])
    rec.insert(0, "label", entry["label"])
    rec.insert(1, "d", int(d))
    rec.insert(2, "K", int(K))
    rec["declared_arm"] = declared
    rec["declared_id"] = subset["compound_id"].to_numpy()[declared]
    rec["declared_activity_nM"] = subset["activity_nM"].to_numpy()[declared]
    rec["declared_activity_rank"] = subset["activity_rank"].to_numpy()[declared]
    rec["declared_mean"] = mu[declared]
    rec["declared_mean_rank"] = mean_rank[declared]
    rec["best_mean"] = float(mu[best_arm])
    rec["best_mean_id"] = subset["compound_id"].iat[best_arm]
    rec["best_activity_nM"] = float(subset["activity_nM"].min())
    rec["recommendation"] = rec["recommendation"].map(lambda r: [int(a) for a in r])
    rec["pulls"] = rec["pulls"].map(lambda p: [int(a) for a in p])
    return rec

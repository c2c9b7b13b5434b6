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
import re
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from . import ScreenbaiWarning

logger = logging.getLogger("screenbai.screening")

#: Where relative data paths are looked up after the repository root.
SHARED_DATA_ENV = "SCREENBAI_SHARED_DATA"
DEFAULT_SHARED_DATA = "../shared/data/chembl"

__all__ = [
    "ACTIVITY_TYPES",
    "acquire_activities",
    "activity_label_of",
    "activity_types_of",
    "arm_columns",
    "build_instance",
    "check_activity_types",
    "check_algorithms",
    "check_library_size",
    "clip_studies",
    "draw_subset",
    "format_activity",
    "format_concentration",
    "ground_truth_arms",
    "merge_records",
    "pchembl_of",
    "prepare_activities",
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
        raw = load_activities(cfg, cache_dir=Path(cache_dir))
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
        raw = load_activities(fb, cache_dir=Path(cache_dir))
    provenance["n_rows"] = len(raw)
    return raw, provenance


# ---------------------------------------------------------------------------------- activity types
#: Activity types known by name (any other ChEMBL ``standard_type`` may be declared too).
#: pChEMBL values are -log10(molar) of some potency measure; they are converted to nM.
ACTIVITY_TYPES = ("IC50", "Ki", "Kd", "EC50", "pChEMBL")
_CANONICAL = {t.lower(): t for t in ACTIVITY_TYPES}
_FLIP_RELATION = {">": "<", "<": ">", ">=": "<=", "<=": ">=", "=>": "=<", "=<": "=>", "≥": "≤", "≤": "≥"}


def _canonical(t: str) -> str:
    return _CANONICAL.get(str(t).strip().lower(), str(t).strip())


def _types_named_in(column: str) -> set[str]:
    """Known activity types a column name mentions as a word (``ki_nM`` -> {Ki})."""
    words = {w for w in re.split(r"[^a-z0-9]+", column.lower()) if w}
    return {t for key, t in _CANONICAL.items() if key in words}


def activity_types_of(config: Mapping[str, Any]) -> list[str]:
    """The activity type(s) a workflow config declares, checked for agreement; fails before any job.

    ``curation.activity_types`` if given, else the source's own declaration (``activity_types``
    of a ChEMBL download, ``activity_type`` of a table; IC50 by default).  A table whose
    activity column is named after another type (``ki_nM`` declared as IC50) and a curation
    that keeps a type the source does not declare are errors naming both.
    """
    source = config["source"]
    kind = source.get("kind")
    if kind == "table":
        from screenbai.chem.acquire import check_not_log_scale

        check_not_log_scale(source.get("activity_column"), source.get("activity_type"), "source")
        src_types = [_canonical(source.get("activity_type", "IC50"))]
        named = _types_named_in(str(source.get("activity_column", "")))
        if named and not named & set(src_types):
            raise ValueError(
                f"source.activity_column {source['activity_column']!r} names {'/'.join(sorted(named))} values "
                f"but source.activity_type is {src_types[0]!r}"
                f"{' (the default)' if 'activity_type' not in source else ''}; "
                f"declare the type the file holds, e.g. activity_type: {min(named)}"
            )
    elif kind == "chembl":
        src_types = [_canonical(t) for t in source.get("activity_types", ["IC50"])]
    else:
        src_types = []  # a ChEMBL export holds its types in its standard_type column
    cur = (config.get("curation") or {}).get("activity_types")
    types = [_canonical(t) for t in cur] if cur else (src_types or ["IC50"])
    if src_types and not set(types) & set(src_types):
        raise ValueError(
            f"curation.activity_types {types} keeps none of the types the source declares ({src_types}); "
            "give the same type(s) in both, or drop curation.activity_types to use the source's"
        )
    if "pChEMBL" in types and kind != "table":
        raise ValueError(
            "activity type pChEMBL is read from tables (kind: table, activity_type: pChEMBL); for ChEMBL "
            "downloads and exports choose the measured type(s), e.g. [IC50] or [Ki]"
        )
    if kind == "table":
        pchembl_of(source)  # its checks: units and pchembl_of agree with activity_type
    return types


def pchembl_of(source: Mapping[str, Any]) -> str | None:
    """The activity a table of pChEMBL values measures (``Ki`` for pKi values), or None when the
    source does not say.

    Said by ``source.pchembl_of`` (e.g. ``Ki``) or by the activity column's name (``pKi``,
    ``pIC50``, ``log_kd``).  Refused, naming the key: ``units`` with ``activity_type: pChEMBL``
    (pChEMBL values have no unit: a column in nM is a concentration, not a pChEMBL value),
    ``pchembl_of`` without ``activity_type: pChEMBL``, and a ``pchembl_of`` the column's name contradicts.
    """
    from screenbai.chem.acquire import _LOG_SCALE_NAME

    declared_type = _canonical(source.get("activity_type", "IC50"))
    given = source.get("pchembl_of")
    if declared_type != "pChEMBL":
        if given is not None:
            raise ValueError(
                f"source.pchembl_of = {given!r} is set but source.activity_type is {declared_type!r}: pchembl_of names "
                "the activity behind pChEMBL values; use it with activity_type: pChEMBL, or remove it"
            )
        return None
    if source.get("units") is not None:
        raise ValueError(
            f"source.units = {source['units']!r} contradicts source.activity_type: pChEMBL: pChEMBL values are "
            "-log10(molar) and have no unit. Remove source.units for pChEMBL values, or, if the column holds "
            f"concentrations in {source['units']}, declare their type instead (e.g. activity_type: Ki)"
        )
    column = str(source.get("activity_column") or "")
    named = {
        _canonical(m.group(2)) if _canonical(m.group(2)) != m.group(2) else m.group(2).upper()
        for w in re.split(r"[^a-z0-9]+", column.lower()) if w
        for m in [_LOG_SCALE_NAME.match(w)] if m and m.group(2)
    }
    if given is not None:
        given = _canonical(str(given))
        if given == "pChEMBL":
            raise ValueError("source.pchembl_of = 'pChEMBL': name the measured activity, e.g. pchembl_of: Ki")
        if named and given not in named:
            raise ValueError(
                f"source.pchembl_of = {given!r} but source.activity_column {column!r} names "
                f"{'/'.join(sorted(named))} values; make them agree"
            )
        return given
    return next(iter(named)) if len(named) == 1 else None


def activity_label_of(config: Mapping[str, Any]) -> str:
    """The activity every label, table and figure names: the declared type(s) (``IC50``, ``Ki/Kd``),
    or, for pChEMBL values whose source says what they measure (:func:`pchembl_of`), that activity
    (``Ki``: the values are converted to nM, so "Ki < 100 nM" is what the label means)."""
    types = activity_types_of(config)
    source = config["source"]
    if types == ["pChEMBL"] and source.get("kind") == "table":
        return pchembl_of(source) or "pChEMBL"
    return "/".join(types)


def check_activity_types(raw: pd.DataFrame, types: Sequence[str], where: str = "the data") -> dict[str, int]:
    """Compare the declared types with the ``standard_type`` values the data hold.

    Returns the row count per declared type found.  Raises ValueError naming both the declared
    types and what the data hold when none of the declared types is present.
    """
    held = (
        raw["standard_type"].astype("string").str.strip()
        if "standard_type" in raw.columns
        else pd.Series(dtype="string")
    )
    counts = held.fillna("(none)").value_counts()
    lower = {str(k).lower(): int(v) for k, v in counts.items()}
    found = {t: lower.get(t.lower(), 0) for t in types}
    if not any(found.values()):
        holds = ", ".join(f"{k} ({v} rows)" for k, v in counts.head(6).items()) or "no activity types"
        raise ValueError(
            f"the run declares activity type(s) {list(types)} but {where} holds {holds}: 0 of {len(raw)} rows "
            "would be kept. Declare the type the data hold (source.activity_type for a table, "
            "curation.activity_types otherwise)"
        )
    return found


def prepare_activities(raw: pd.DataFrame, types: Sequence[str], where: str = "the data") -> pd.DataFrame:
    """Raw rows ready for curation: declared types checked, pChEMBL values turned into nM.

    A pChEMBL value p is -log10(molar): p = 7 is 100 nM, so a "> 7" bound becomes "< 100 nM".
    Values outside 0-15 are not pChEMBL values (an error naming the first).
    """
    check_activity_types(raw, types, where)
    out = raw.copy()
    is_p = out["standard_type"].astype("string").str.strip().str.lower().eq("pchembl").fillna(False).to_numpy()
    if is_p.any():
        p = pd.to_numeric(out.loc[is_p, "standard_value"], errors="coerce")
        bad = p[(p < 0) | (p > 15)]
        if len(bad):
            raise ValueError(
                f"{where}: {len(bad)} declared pChEMBL value(s) lie outside 0-15 (first: {bad.iloc[0]!r} in row "
                f"{bad.index[0]}); pChEMBL is -log10(molar), typically 4-11. If the values are concentrations, "
                "declare their type (IC50, Ki, ...) and units instead"
            )
        nM = (10.0 ** (9.0 - p)).map(lambda v: f"{v:.12g}", na_action="ignore")
        out["standard_value"] = out["standard_value"].astype("object")
        out.loc[is_p, "standard_value"] = nM.where(p.notna(), out.loc[is_p, "standard_value"])
        out["standard_units"] = out["standard_units"].astype("object")
        out.loc[is_p, "standard_units"] = "nM"
        if "standard_relation" in out.columns:
            rel = out.loc[is_p, "standard_relation"].astype("object")
            out["standard_relation"] = out["standard_relation"].astype("object")
            out.loc[is_p, "standard_relation"] = rel.map(
                lambda r: _FLIP_RELATION.get(str(r).strip(), r) if isinstance(r, str) else r
            )
    return out


def format_concentration(value_nM: float) -> str:
    """A concentration in the unit a chemist reads: ``0.3 nM``, ``100 nM``, ``1 uM``, ``62 uM``, ``1 mM``
    (pM below 0.1 nM, M from 1 M; three significant digits)."""
    v = float(value_nM)
    if not math.isfinite(v) or v <= 0:
        return f"{v:g} nM"
    for scale, unit in ((1e9, "M"), (1e6, "mM"), (1e3, "uM"), (0.1, "nM")):
        if v >= scale * (1 - 5e-4):  # 999.9 nM reads 1 uM, not 1e+03 nM
            factor = 1.0 if unit == "nM" else scale
            return f"{float(f'{v / factor:.3g}'):g} {unit}"
    return f"{float(f'{v * 1e3:.3g}'):g} pM"


def format_activity(value_nM: float, label: str) -> str:
    """``IC50 12 nM`` / ``Ki 0.15 nM`` / ``IC50 62 uM``; pChEMBL as ``pChEMBL 7.92``."""
    if label == "pChEMBL":
        return f"pChEMBL {9.0 - math.log10(value_nM):.2f}"
    return f"{label} {format_concentration(value_nM)}"


class ClippedScreenWarning(ScreenbaiWarning, UserWarning):
    """A screen asked for more compounds than the library holds and runs on the whole library."""


def check_library_size(
    n_compounds: int, sizes: Sequence[int], where: str = "the curated library", *, clip: bool = False
) -> dict[str, Any] | None:
    """Screens of more compounds than the library holds: refused, naming its size (``clip`` False),
    or clipped to the library's size (``clip`` True, the config's ``screen.clip_K``, the default)
    with a warning naming the K asked and the K that runs.  Returns, when clipped,
    ``{"asked": [K, ...], "ran": n_compounds, "message": ...}`` (the report repeats the message),
    else None."""
    too_big = sorted(int(K) for K in sizes if K > n_compounds)
    if not too_big:
        return None
    asked = ", ".join(map(str, too_big))
    if not clip:
        raise ValueError(
            f"screen.studies asks for K = {asked} compounds but {where} has {n_compounds}; lower K to at most "
            f"{n_compounds} in screen.studies, or set screen.clip_K: true to screen the whole library instead"
        )
    message = (f"screen.studies asks for K = {asked} compounds but {where} has {n_compounds}: K = {n_compounds} "
               "runs instead (screen.clip_K: true, the default; set it to false to refuse such a K)")
    warnings.warn(message, ClippedScreenWarning, stacklevel=2)
    return {"asked": too_big, "ran": int(n_compounds), "message": message}


# ---------------------------------------------------------------------------------- study plan
def _as_list(v) -> list[int]:
    return [int(x) for x in (v if isinstance(v, (list, tuple)) else [v])]


def clip_studies(studies: Mapping[str, Mapping[str, Any]], n_compounds: int) -> dict[str, dict[str, Any]]:
    """The studies with every K above the library's size replaced by that size (config ``screen.clip_K``)."""
    out = {}
    for name, s in studies.items():
        Ks = sorted({min(K, int(n_compounds)) for K in _as_list(s["K"])})
        out[name] = {**s, "K": Ks if isinstance(s["K"], (list, tuple)) else Ks[0]}
    return out


def study_points(studies: Mapping[str, Mapping[str, Any]]) -> list[tuple[int, int]]:
    """The distinct (d, K) pairs of all studies, sorted."""
    pts = {(d, K) for s in studies.values() for d in _as_list(s["d"]) for K in _as_list(s["K"])}
    return sorted(pts)


def reference_point(
    studies: Mapping[str, Mapping[str, Any]], override: Mapping[str, int] | None = None
) -> tuple[int, int]:
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


def check_dimensions(dims: Sequence[int], n_bits: int) -> None:
    """Every PCA dimension d of the studies fits the fingerprints: at most ``featurize.n_bits`` components."""
    over = sorted(d for d in set(dims) if d > n_bits)
    if over:
        raise ValueError(
            f"screen.studies: d = {', '.join(map(str, over))} exceeds featurize.n_bits = {n_bits}: the PCA of "
            f"{n_bits}-bit fingerprints has at most {n_bits} components; lower d or raise featurize.n_bits"
        )


def replication_chunks(replications: int, chunk_size: int) -> list[tuple[int, int]]:
    """(start, n) for each job's block of replications."""
    return [(s, min(chunk_size, replications - s)) for s in range(0, replications, chunk_size)]


def replication_seed(seed: int, d: int, K: int) -> int:
    """The replication seed of screen (d, K): same for every algorithm (common random numbers)."""
    return int(np.random.SeedSequence([int(seed), int(d), int(K)]).generate_state(1, np.uint32)[0])


def load_algorithm_modules(modules: Sequence[str] = ()) -> None:
    """Import extra modules whose ``@register`` decorators add algorithms to the registry."""
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise ValueError(
                f"algorithm_modules: cannot import {name!r} ({exc}); install that module, or put the folder "
                "holding it on PYTHONPATH"
            ) from None


def check_algorithms(
    algorithms: Sequence[Mapping[str, Any]],
    modules: Sequence[str] = (),
    sizes: Sequence[int] = (),
    max_samples: int = 10**6,
) -> None:
    """Fail early (before any job) on an unknown algorithm, a duplicate label or a bad parameter.

    Keys and values (delta, epsilon, m, c_mu, ...) are checked against each algorithm's declared
    parameters (:mod:`screenbai.bandits.core.params`); what depends on the screen (m < K, a budget
    for K arms) by building every algorithm, with the parameters of each run, on a stand-in
    logistic instance of each screen size K in ``sizes`` ("oracle" values resolved from it), so
    every error a constructor raises surfaces here, naming the algorithm's label and K.
    """
    from screenbai.bandits.core.params import POSITIVE, check, declared
    from screenbai.bandits.core.registry import available, get

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
            if not POSITIVE.accepts(entry["budget_per_arm"]):
                raise ValueError(
                    f"algorithms: {entry['label']!r}: budget_per_arm={entry['budget_per_arm']!r} is not allowed; "
                    f"it must be {POSITIVE.describe()} (tests per compound)"
                )
        check(reg.cls, {**reg.defaults, **params}, label=f"algorithms: {entry['label']!r}")
        for K in sorted(set(sizes)):
            _check_values(entry, int(K), max_samples)


def _check_values(entry: Mapping[str, Any], K: int, max_samples: int) -> None:
    """Build the algorithm of ``entry`` for a K-arm stand-in instance: its own checks run."""
    import warnings

    from scipy.special import expit

    from screenbai.bandits import Instance
    from screenbai.bandits.core.registry import policy_for_instance

    rng = np.random.default_rng(0)
    X = np.hstack([rng.uniform(-1.0, 1.0, (K, 3)), np.ones((K, 1))])
    theta = np.array([1.0, -0.5, 0.25, -1.0])
    stand_in = Instance(X, expit(X @ theta), reward="bernoulli", theta=theta, link="logistic", name=f"K{K}")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            policy_for_instance(entry["algorithm"], stand_in, rng=0, **algorithm_params(entry, K, max_samples))
    except (ValueError, TypeError) as exc:
        raise ValueError(
            f"algorithms: {entry['label']!r} ({entry['algorithm']}) on the screens of K = {K} compounds: {exc}"
        ) from None


def check_regex(value: str | None, key: str) -> None:
    """A regular expression of the config compiles, or the error names the key and the value."""
    if value is None:
        return
    try:
        re.compile(value)
    except re.error as exc:
        raise ValueError(f"{key} = {value!r} is not a valid regular expression: {exc}") from None


def algorithm_params(entry: Mapping[str, Any], K: int, max_samples: int) -> dict:
    """The keyword arguments of one run: config params, budget from budget_per_arm, safety cap."""
    params = dict(entry.get("params") or {})
    if entry.get("budget_per_arm") is not None:
        params["budget"] = math.ceil(float(entry["budget_per_arm"]) * K)
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
    rec = replicate(instance, entry["algorithm"], params, n_reps=n_reps, seed=rep_seed, start=start, n_jobs=1)
    return score_runs(rec, instance.means, subset, entry, d=d, K=K, default_epsilon=default_epsilon)


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
    mu_m = float(np.sort(mu)[::-1][m - 1])
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
    rec["eps_error"] = [bool(np.any(mu[arms] < mu_m - eps - 1e-12)) for arms in declared]
    rec["n_eps_good"] = int(np.sum(mu >= mu_m - eps - 1e-12))
    rec["best_mean"] = float(mu[best])
    rec["best_mean_id"] = str(ids[best])
    rec["best_activity_nM"] = float(act.min())
    rec["best_activity_id"] = str(ids[int(np.argmin(act))])
    rec["recommendation"] = rec["recommendation"].map(lambda r: [int(a) for a in r])
    rec["pulls"] = rec["pulls"].map(lambda p: [int(a) for a in p])
    return rec

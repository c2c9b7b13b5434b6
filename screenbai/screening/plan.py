"""The study plan, checked before any job runs: screen sizes against the library, the (d, K) screens
of the studies and the reference one, PCA dimensions, replication chunks and seeds, and the
algorithms (registered, labelled once, their parameters valid on every screen)."""

from __future__ import annotations

import importlib
import math
import re
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from screenbai import ScreenbaiWarning


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


class OverparameterisedScreenWarning(ScreenbaiWarning, UserWarning):
    """A screen whose compounds are no more than its features (d + 1 with the intercept)."""


def overparameterised_note(points: Sequence[tuple[int, int]]) -> str | None:
    """What :func:`warn_overparameterised` says about ``points``, or None when every K is above d + 1: the text
    the workflow prints before any job (a ``warnings.warn`` from a Snakefile is dropped: Snakemake runs it with
    ``__name__`` None, and Python discards warnings attributed to such code)."""
    few = sorted((d, K) for d, K in points if K <= d + 1)
    if not few:
        return None
    return (
        f"screen.studies: the screen(s) {', '.join(f'd = {d}, K = {K}' for d, K in few)} have no more compounds "
        "than features + 1 (the intercept): a model of the features then fits every compound on its own, so "
        "the tests of one teach nothing of the others and cost as much as with no features; choose K well above "
        "d + 1 for a study of the features' worth"
    )


def warn_overparameterised(points: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Warn about the (d, K) screens whose K compounds are no more than the d + 1 parameters of a model of their
    features (with the intercept): such a model can fit any K hit rates, so one compound's tests teach nothing of
    the others and the algorithms pay as if the compounds had no features. Legal (a study of d may cross a small
    K), but rarely meant. Returns those screens."""
    note = overparameterised_note(points)
    if note:
        warnings.warn(note, OverparameterisedScreenWarning, stacklevel=2)
    return sorted((d, K) for d, K in points if K <= d + 1)


def check_dimensions(
    dims: Sequence[int], n_bits: int, n_compounds: int | None = None, where: str = "the curated library"
) -> None:
    """Every PCA dimension d of the studies fits the fingerprints: at most ``featurize.n_bits`` components,
    and, once the library is curated (``n_compounds``), at most one per compound."""
    over = sorted(d for d in set(dims) if d > n_bits)
    if over:
        raise ValueError(
            f"screen.studies: d = {', '.join(map(str, over))} exceeds featurize.n_bits = {n_bits}: the PCA of "
            f"{n_bits}-bit fingerprints has at most {n_bits} components; lower d or raise featurize.n_bits"
        )
    over = sorted(d for d in set(dims) if n_compounds is not None and d > n_compounds)
    if over:
        raise ValueError(
            f"screen.studies: d = {', '.join(map(str, over))} exceeds the {n_compounds} compounds of {where}: the "
            f"PCA of {n_compounds} compounds has at most {n_compounds} components; lower d in screen.studies to "
            f"at most {n_compounds}"
        )


def replication_chunks(replications: int, chunk_size: int) -> list[tuple[int, int]]:
    """(start, n) for each job's block of replications."""
    return [(s, min(chunk_size, replications - s)) for s in range(0, replications, chunk_size)]


def replication_chunk(replications: int, chunk_size: int, chunk: int | str) -> tuple[int, int]:
    """(start, n) of the screen's chunk ``chunk`` (the workflow's ``{chunk}`` wildcard, ``runs/.../chunk{chunk}``):
    a chunk the config's screen does not have is refused, naming how many it has."""
    chunks = replication_chunks(int(replications), int(chunk_size))
    k = int(chunk)
    if not 0 <= k < len(chunks):
        last = f", chunk0 to chunk{len(chunks) - 1}" if chunks else ""
        raise ValueError(
            f"screen chunk {chunk} (chunk{chunk}.parquet) is not in the plan: screen.replications = {replications} in "
            f"chunks of screen.chunk_size = {chunk_size} make {len(chunks)} chunk(s){last}; ask for one of those, "
            "or raise screen.replications in the config to run more"
        )
    return chunks[k]


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

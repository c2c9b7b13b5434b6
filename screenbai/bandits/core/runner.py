"""Run a policy against an environment, and replicate runs over seeds in parallel.

Reproducibility: replication r of a study with seed s always uses
``SeedSequence(s).spawn(n_reps)[r]``, split into one generator for the policy and one for the
environment, so results do not depend on the number of workers or on chunking.
"""

from __future__ import annotations

import json
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from typing import TYPE_CHECKING

import numpy as np
from threadpoolctl import threadpool_limits

from screenbai import ScreenbaiWarning
from screenbai.bandits.core.params import DEFAULT_MAX_SAMPLES, declared
from screenbai.bandits.core.policy import Result
from screenbai.bandits.core.registry import get, policy_for_instance
from screenbai.bandits.numerics.linalg import shared_rows
from screenbai.bandits.sim.instance import Instance
from screenbai.workers import worker_count

if TYPE_CHECKING:
    import pandas as pd


def run(policy, env) -> Result:
    """Drive one policy to completion against a simulated environment (``Policy.run``: the
    ask/tell loop, or the algorithm's vectorised path with the same result)."""
    return policy.run(env)


def _seeds(seed: int, n_reps: int, start: int = 0) -> list[np.random.SeedSequence]:
    return np.random.SeedSequence(seed).spawn(start + n_reps)[start:]


def run_one(instance: Instance, algorithm: str, params: dict, seed_seq: np.random.SeedSequence) -> dict:
    """One replication -> one tidy record."""
    policy_ss, env_ss = seed_seq.spawn(2)
    t0 = time.perf_counter()
    policy = policy_for_instance(algorithm, instance, rng=np.random.default_rng(policy_ss), **params)
    result = run(policy, instance.environment(np.random.default_rng(env_ss)))
    wall = time.perf_counter() - t0
    m = len(result.recommendation)
    # judge with the tolerance the policy actually used (its default when the caller gave none)
    eps = float(getattr(policy, "epsilon", 0.0) or 0.0)
    cert = policy.certificate()
    return {
        "algorithm": algorithm,
        "params": json.dumps(params, sort_keys=True, default=str),
        "replication": int(seed_seq.spawn_key[-1]),
        "samples": result.n_samples,
        "stopped": result.stopped,
        "recommendation": list(result.recommendation),
        "epsilon": eps,
        "correct": instance.is_correct(result.recommendation, epsilon=eps, m=m),
        # the anytime certificate at the end of the run (certainty/certificate.py): the largest epsilon
        # over the answer (NaN without a valid confidence set), whether the setting is guaranteed, and
        # the true gap it bounds, mu_(m) - min of the answer's means (the certificate's coverage)
        "certified_epsilon": float(cert.worst) if cert is not None else np.nan,
        "certified_guaranteed": bool(cert.guaranteed) if cert is not None else False,
        "true_gap": true_gap(instance.means, result.recommendation),
        "max_samples": int(policy.max_samples),
        "hit_cap": (not result.stopped) and result.n_samples >= policy.max_samples,
        "noise_scale": float(getattr(policy, "sigma", np.nan)) if noise_parameter(policy) else np.nan,
        "pulls": result.pulls.tolist(),
        "wall_time_s": wall,
        **{f"diag_{k}": v for k, v in result.diagnostics.items() if np.isscalar(v)},
    }


def true_gap(means: np.ndarray, answer) -> float:
    """mu_(m) - min over the answer of mu_i, at least 0 (m = the answer's size): the smallest epsilon
    for which every arm of the answer is epsilon-good."""
    answer = np.asarray(list(answer), dtype=np.int64)
    top = np.partition(means, means.size - answer.size)[means.size - answer.size]
    return float(max(0.0, top - means[answer].min()))


def _run_chunk(args) -> list[dict]:
    instance, algorithm, params, seed_seqs = args
    # The matrices are small (d x d, K x d): multithreaded BLAS only adds overhead, and with several
    # worker processes it oversubscribes the cores (a 20 x 400 triangular solve took 10 ms, not 50 us).
    with threadpool_limits(limits=1):
        return [run_one(instance, algorithm, params, ss) for ss in seed_seqs]


def replicate(
    instance: Instance,
    algorithm: str,
    params: dict | None = None,
    *,
    n_reps: int = 10,
    seed: int = 0,
    start: int = 0,
    n_jobs: int | None = 1,
    progress: bool = False,
) -> pd.DataFrame:
    """Replicate ``algorithm`` on ``instance``: replications start .. start + n_reps - 1 of ``seed``
    (a whole number >= 0), on ``n_jobs`` worker processes (-1 or None: one per core; the records
    do not depend on it).

    Returns one row per replication (algorithm, params, seed, replication, samples, stopped,
    recommendation, correct, pulls, wall_time_s, diagnostics), ordered by replication.
    """
    params = dict(params or {})
    if "rng" in params:
        raise ValueError(
            "params must not set rng: each run's generator comes from the study's seed (replicate(..., seed=...); "
            "on the command line --seed)"
        )
    seed = _whole("seed", seed, 0, "the study's seed")
    n_reps = _whole("n_reps", n_reps, 1, "the number of runs")
    start = _whole("start", start, 0, "the first replication's index")
    n_jobs = worker_count(n_jobs)
    check_rewards(instance, algorithm)
    warn_if_tied(instance, algorithm, params)
    warn_if_unrealizable(instance, algorithm)
    seqs = _seeds(seed, n_reps, start)
    n_jobs = min(n_jobs, n_reps)
    bar = _progress(n_reps, f"{algorithm} on {instance.name}", progress)
    records: list[dict] = []
    if n_jobs == 1:
        with threadpool_limits(limits=1):
            for ss in seqs:
                records.append(run_one(instance, algorithm, params, ss))
                bar.update(1)
    else:
        chunks = [seqs[i::n_jobs * 4] for i in range(n_jobs * 4) if seqs[i::n_jobs * 4]]
        with ProcessPoolExecutor(max_workers=n_jobs) as pool:
            for recs in pool.map(_run_chunk, [(instance, algorithm, params, c) for c in chunks]):
                records.extend(recs)
                bar.update(len(recs))
    bar.close()
    import pandas as pd  # here: `import screenbai.bandits` stays free of pandas (campaign commands start in < 1 s)

    df = pd.DataFrame.from_records(records).sort_values("replication", kind="stable").reset_index(drop=True)
    df.insert(2, "seed", seed)
    df.insert(0, "instance", instance.name)
    return df


def _as_number(value) -> float | None:
    """``value`` as a float when it is a real number (not a bool), else None."""
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        return float(value)
    return None


def _is_whole(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _whole(name: str, value, low: int, what: str) -> int:
    """``value`` as an int, or a ValueError naming the argument when it is not a whole number >= low."""
    if not _is_whole(value) or int(value) < low:
        raise ValueError(f"{name} ({what}) must be a whole number >= {low}; got {value!r}")
    return int(value)


def check_rewards(instance: Instance, algorithm: str) -> None:
    """Refuse, before any run, an algorithm modelling 0/1 outcomes on an instance whose rewards are not 0/1."""
    if not getattr(get(algorithm).cls, "binary_rewards", False):
        return
    if instance.reward == "bernoulli":
        return
    if instance.reward == "replay":
        assert instance.outcomes is not None  # checked by Instance for replay rewards
        if all(np.isin(o, (0.0, 1.0)).all() for o in instance.outcomes):
            return
        what = "recorded outcomes other than 0 and 1"
    else:
        what = f"{instance.reward} rewards"
    raise ValueError(
        f"{algorithm} models 0/1 outcomes (a logistic model), but instance {instance.name} has {what}; "
        "simulate it on an instance with Bernoulli rewards (means in [0, 1]; on the command line "
        "--reward bernoulli), or choose a linear algorithm (see `screenbai algorithms`)"
    )


class TieWarning(ScreenbaiWarning, UserWarning):
    """The best arms tie and epsilon = 0: fixed-confidence runs cannot stop."""


def warn_if_tied(instance: Instance, algorithm: str, params: dict) -> None:
    """Warn when epsilon = 0 and the m-th and (m+1)-th best arms tie: no fixed-confidence rule can
    separate them, so every run goes on to ``max_samples``."""
    entry = get(algorithm)
    values = {**entry.parameters(), **params}
    has_epsilon = "epsilon" in values  # an algorithm without one identifies the exact answer (epsilon = 0)
    epsilon, m_value = _as_number(values.get("epsilon", 0.0)), _as_number(values.get("m", 1))
    if epsilon is None or m_value is None or not m_value.is_integer() or m_value < 1:
        return  # values the policy's own check names
    if getattr(entry.cls, "fixed_budget", False) or epsilon > 0:
        return
    m = int(m_value)
    top = np.sort(instance.means)[::-1]
    tol = 1e-12 * max(1.0, abs(top[m - 1])) if m <= instance.K else 0.0
    if m < instance.K and top[m - 1] - top[m] <= tol:
        tied = np.flatnonzero(np.abs(instance.means - top[m - 1]) <= tol)
        X = instance.features
        if getattr(entry.cls, "models_features", True) and (X[tied] == X[tied[0]]).all():
            return  # twins: one arm to a model of the features, and either answer is correct
        cap = values.get("max_samples") or DEFAULT_MAX_SAMPLES
        way = ("pass epsilon > 0 (any arm within epsilon of the best is then a correct answer)" if has_epsilon else
               "choose an algorithm with an epsilon parameter and pass epsilon > 0 (see `screenbai algorithms`)")
        built_for = instance.meta.get("m")  # a top-m instance's own m (reda_classic): its top m arms tie by design
        mismatch = ""
        if built_for is not None and int(built_for) != m:
            has_m = "m" in declared(entry.cls)
            best = {k: "the best arm" if k == 1 else f"the best {k} arms" for k in (int(built_for), m)}
            mismatch = (f"the instance is built for {best[int(built_for)]} (m={built_for}), and {algorithm} looks for "
                        + (f"{best[m]} (m={m}{'' if 'm' in params else ', its default'}): " if has_m else
                           "the single best arm (it takes no m): "))
            way = (f"give it the instance's m (on the command line --param m={built_for}), or epsilon > 0" if has_m else
                   f"choose an algorithm for the best m arms with --param m={built_for} (`screenbai algorithms` lists "
                   "those that take m, e.g. m-lingape), or pass epsilon > 0")
        warnings.warn(
            f"{instance.name}: {mismatch}arms ranked {m} and {m + 1} have the same mean ({top[m - 1]:.6g}) and "
            f"epsilon = 0, so {algorithm} cannot tell them apart and every run will go on to its cap of "
            f"{cap} tests; {way}",
            TieWarning,
            stacklevel=3,
        )


class UnrealizableWarning(ScreenbaiWarning, UserWarning):
    """Arms with identical features have different true means: no model of the features fits them."""


def warn_if_unrealizable(instance: Instance, algorithm: str) -> None:
    """Warn when arms share their features but not their true mean (e.g. stereoisomers under a 2-D
    fingerprint with measured cure rates): an algorithm that estimates the means through the features
    sees them as one arm, may name the worse one, and its error guarantee does not hold."""
    if not getattr(get(algorithm).cls, "models_features", True):
        return
    shared, group = shared_rows(instance.features)
    if not shared.size:
        return
    mu = instance.means[shared]
    n_groups = int(group.max()) + 1
    low = np.full(n_groups, np.inf)
    high = np.full(n_groups, -np.inf)
    np.minimum.at(low, group, mu)
    np.maximum.at(high, group, mu)
    spread = high - low
    differ = np.flatnonzero(spread > 1e-12 * np.maximum(1.0, np.abs(high)))
    if not differ.size:
        return
    g = int(differ[np.argmax(spread[differ])])
    arms = shared[group == g]
    warnings.warn(
        f"{instance.name}: {differ.size} group(s) of arms have identical features but different true means "
        f"(e.g. arms {', '.join(map(str, arms[:5].tolist()))}: means {low[g]:.4g} to {high[g]:.4g}); {algorithm} "
        "estimates the means through the features, cannot tell such arms apart and may name the worse one, so "
        "its error guarantee does not hold here. Give such arms distinguishing features, or keep one of each group",
        UnrealizableWarning,
        stacklevel=3,
    )


def noise_parameter(policy) -> bool:
    """Whether the policy assumes a sub-Gaussian noise scale (``sigma``) that a simulation sets."""
    sigma = declared(type(policy)).get("sigma")
    return sigma is not None and sigma.oracle


def _noise_scale(grp: pd.DataFrame) -> str:
    """The noise scale (sigma) the policy assumed, or "-" for policies without one (e.g. GLGapE)."""
    values = sorted(set(grp["noise_scale"].dropna().astype(float))) if "noise_scale" in grp else []
    return ", ".join(f"{v:g}" for v in values) if values else "-"


def _progress(total: int, desc: str, enabled: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="run", disable=not enabled)


def _certificate_summary(grp: pd.DataFrame) -> dict:
    """Median certified epsilon over all runs (capped ones included: the certificate holds whenever
    it is read) and the runs whose answer's true gap exceeds it (at most about delta of them)."""
    if "certified_epsilon" not in grp or grp["certified_epsilon"].isna().all():
        return {"median_certified_epsilon": np.nan, "certificate_misses": np.nan}
    cert = grp["certified_epsilon"].astype(float)
    misses = int((grp["true_gap"].astype(float) > cert + 1e-12).sum()) if "true_gap" in grp else np.nan
    return {"median_certified_epsilon": float(cert.median()), "certificate_misses": misses}


def summarize(records: pd.DataFrame) -> pd.DataFrame:
    """Per algorithm: runs, non-terminated runs (and how many of them hit max_samples), median/mean
    samples and error rate of the runs that stopped (non-terminated runs are counted apart, never
    averaged in), mean time, the noise scale the policy assumed, and the anytime certificate's
    median certified epsilon and misses (runs whose answer's true gap exceeds it)."""
    rows = []
    for (inst, alg, params), grp in records.groupby(["instance", "algorithm", "params"], sort=False):
        done = grp[grp["stopped"].astype(bool)]
        rows.append({
            "instance": inst,
            "algorithm": alg,
            "params": params,
            "runs": len(grp),
            "not_stopped": len(grp) - len(done),
            "hit_cap": int(grp["hit_cap"].sum()) if "hit_cap" in grp else 0,
            "median_samples": float(done["samples"].median()) if len(done) else np.nan,
            "mean_samples": float(done["samples"].mean()) if len(done) else np.nan,
            "error_rate": 1.0 - float(done["correct"].mean()) if len(done) else np.nan,
            "mean_time_s": float(grp["wall_time_s"].mean()),
            "noise_scale": _noise_scale(grp),
            **_certificate_summary(grp),
        })
    return _summary_class()(rows)


def _summary_class():
    """The table :func:`summarize` returns: a DataFrame printed whole (``print(summarize(records))`` elides no
    column or row, whatever pandas' display options).  Made on first use: pandas is imported lazily."""
    cls = globals().get("Summary")
    if cls is None:
        import pandas as pd

        class Summary(pd.DataFrame):
            @property
            def _constructor(self):
                return Summary

            def __repr__(self) -> str:
                return self.to_string()

            __str__ = __repr__

        Summary.__module__, Summary.__qualname__ = __name__, "Summary"  # picklable as runner.Summary
        globals()["Summary"] = cls = Summary
    return cls

"""The report's tables, from the workflow's run records, and their markdown and HTML forms.

Every number has one definition, used by the tables and the figures alike (the run records of
:func:`screenbai.screening.score_runs` carry them):

* ``exact_error_rate``: stopped runs whose declared compounds are not all among the m best
  cure rates of the sample (m = 1: the declared compound is not the best);
* ``eps_error_rate``: stopped runs where a declared compound's cure rate is more than epsilon
  below the m-th best; when epsilon makes most of the sample a correct answer
  (``eps_good_fraction`` >= :data:`UNINFORMATIVE`), it says little, and the report says so;
* the declared compounds' measured potency: their rank among the K by measured activity
  (1 = most potent), its median over runs, and how often each compound was declared.

Runs that hit the safety cap (not stopped) are counted apart: they have no sample complexity.
The tests to stop are quoted and drawn as medians, their spread as the interquartile range.

Every algorithm's table row says whether its setting guarantees an error of at most delta (from the
parameters' declarations, :mod:`screenbai.guarantees`) and the error rate docs/error_rates.md
measured for that setting ("not measured" when it has none).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from screenbai.guarantees import Guarantee, guarantee_of, read_error_rates
from screenbai.textfiles import write_whole

_KEYS = ["label", "algorithm", "d", "K"]

#: Share of the sample within epsilon of the best above which the epsilon-error says little.
UNINFORMATIVE = 0.5


def _q(s: np.ndarray, q: float) -> float:
    return float(np.quantile(s, q)) if s.size else np.nan


def summarize_screens(records: pd.DataFrame) -> pd.DataFrame:
    """One row per (algorithm label, d, K): tests to stop, both error rates, declared potency.

    Sample statistics and error rates are over the runs that stopped (``not_stopped`` counts
    the others).  ``eps_good_fraction``: share of the K compounds that epsilon makes correct;
    ``median_declared_rank``: median over runs of the declared compounds' rank by measured
    activity among the K (1 = most potent), also as a percentage of K.
    """
    rows = []
    for key, g in records.groupby(_KEYS, sort=True):
        stopped = g[g["stopped"].astype(bool)]
        s = stopped["samples"].to_numpy(dtype=float)
        K = int(key[3])
        ranks = g["declared_rank_median"].to_numpy(dtype=float)
        declared_nM = np.concatenate([np.asarray(v, dtype=float) for v in g["declared_activity_nM"]])
        rows.append(
            {
                **dict(zip(_KEYS, key)),
                "m": int(g["m"].iloc[0]),
                "epsilon": float(g["epsilon"].iloc[0]),
                "runs": len(g),
                "not_stopped": int(len(g) - len(stopped)),
                "mean_samples": float(s.mean()) if s.size else np.nan,
                "sd_samples": float(s.std(ddof=1)) if s.size > 1 else np.nan,
                "median_samples": float(np.median(s)) if s.size else np.nan,
                "q10_samples": _q(s, 0.1),
                "q25_samples": _q(s, 0.25),
                "q75_samples": _q(s, 0.75),
                "q90_samples": _q(s, 0.9),
                "samples_per_compound": float(s.mean() / K) if s.size else np.nan,
                "exact_error_rate": float(stopped["exact_error"].astype(bool).mean()) if len(stopped) else np.nan,
                "eps_error_rate": float(stopped["eps_error"].astype(bool).mean()) if len(stopped) else np.nan,
                "eps_good_fraction": float(g["n_eps_good"].iloc[0]) / K,
                "median_declared_rank": float(np.median(ranks)),
                "median_declared_rank_pct": float(100.0 * np.median(ranks) / K),
                "median_declared_activity_nM": float(np.median(declared_nM)),
                "best_activity_nM": float(g["best_activity_nM"].iloc[0]),
                "distinct_declared": len({c for ids in g["declared_ids"] for c in ids}),
                "mean_samples_all": float(g["samples"].mean()),
                "median_samples_all": float(g["samples"].median()),
                "mean_wall_time_s": float(g["wall_time_s"].mean()),
                # the anytime certificate of the runs, when the records carry it
                **({"median_certified_epsilon": float(np.nanmedian(g["certified_epsilon"].to_numpy(dtype=float)))}
                   if "certified_epsilon" in g.columns and g["certified_epsilon"].notna().any() else {}),
                **({"certified_guaranteed": bool(g["certified_guaranteed"].astype(bool).all())}
                   if "certified_guaranteed" in g.columns else {}),
            }
        )
    return pd.DataFrame(rows)


def algorithm_guarantees(
    records: pd.DataFrame, algorithms: Sequence[Mapping[str, Any]] = (), error_rates: pd.DataFrame | None = None
) -> dict[str, Guarantee | None]:
    """Each algorithm label's :class:`~screenbai.guarantees.Guarantee`: from the parameters the runs
    used (the records' ``params``), else from the config entry of that label (``algorithms``);
    None for an algorithm that is not registered.  ``error_rates``: the error-rate records
    (default: docs/error_rates_records.csv)."""
    from screenbai.bandits.core.registry import available

    table = read_error_rates() if error_rates is None else error_rates
    entries = {a["label"]: a for a in algorithms}
    out: dict[str, Guarantee | None] = {}
    for label, g in records.groupby("label", sort=False):
        first = g.iloc[0]
        entry = entries.get(label, {})
        algorithm = str(first["algorithm"]) if "algorithm" in g.columns else entry.get("algorithm", "")
        params = first["params"] if "params" in g.columns else (entry.get("params") or {})
        out[label] = guarantee_of(algorithm, params, table) if algorithm.lower() in available() else None
    return out


def guarantee_tag(guarantee: Guarantee | None) -> str:
    """The short tag of an algorithm's guarantee ("error <= delta", ...) for tables and legends."""
    return guarantee.tag if guarantee is not None else "guarantee unknown"


def _measured_rate(guarantees: Mapping[str, Guarantee | None]) -> dict[str, str]:
    return {lab: g.measured_rate() if g is not None else "not measured" for lab, g in guarantees.items()}


def consensus(declared: pd.DataFrame, m: int = 1) -> tuple[bool, pd.DataFrame]:
    """Whether the runs agree on the m compounds declared most often (``declared``: the rows of one
    algorithm and screen of :func:`declared_compounds`), and those compounds: every compound
    declared at least as often as the m-th most often declared one.  More than m of them (a tie
    at the m-th place) means no consensus: the report lists them all instead of picking one."""
    if not len(declared):
        return False, declared
    counts = np.sort(declared["times_declared"].to_numpy())[::-1]
    top = declared[declared["times_declared"] >= counts[min(m, len(counts)) - 1]]
    return len(top) == m, top


def declared_compounds(records: pd.DataFrame, smiles: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Every compound declared on each screen, with how often it was declared and its potency.

    One row per (algorithm, d, K, compound), most often declared first: ``times_declared`` of
    ``runs``, measured activity and its rank among the K (1 = most potent), true cure rate and
    its rank, and the most potent compound of the sample for comparison.
    """
    rows = []
    for key, g in records.groupby(_KEYS, sort=True):
        seen: dict[str, dict] = {}
        for r in g.itertuples():
            for j, cid in enumerate(r.declared_ids):
                entry = seen.setdefault(cid, {
                    "compound_id": cid,
                    "times_declared": 0,
                    "activity_nM": float(r.declared_activity_nM[j]),
                    "activity_rank": int(r.declared_activity_rank[j]),
                    "cure_rate": float(r.declared_mean[j]),
                    "cure_rate_rank": int(r.declared_mean_rank[j]),
                })
                entry["times_declared"] += 1
        first = g.iloc[0]
        for entry in sorted(seen.values(), key=lambda e: (-e["times_declared"], e["activity_rank"])):
            rows.append({
                **dict(zip(_KEYS, key)),
                **entry,
                "runs": len(g),
                "smiles": (smiles or {}).get(entry["compound_id"]),
                "most_potent_id": first["best_activity_id"],
                "best_activity_nM": float(first["best_activity_nM"]),
            })
    return pd.DataFrame(rows)


#: the ground truth's fit metrics, named for what they measure: on the compounds the logistic model
#: was fitted on (in-sample, optimistic) or cross-validated (each compound predicted without it)
_FIT_METRICS = {
    "accuracy": "accuracy on the fitted compounds (in-sample)",
    "roc_auc": "AUC on the fitted compounds (in-sample)",
    "log_loss": "log-loss on the fitted compounds (in-sample)",
    "brier": "Brier on the fitted compounds (in-sample)",
    "cv_folds": "CV folds",
    "cv_roc_auc": "AUC cross-validated",
    "cv_log_loss": "log-loss cross-validated",
    "cv_brier": "Brier cross-validated",
    "intercept": "intercept (log-odds)",
    "C": "C (inverse L2 penalty of the fit)",
}
#: the fitted cure rates' spread, named for what they are (``mean`` is the bandit's word for a cure rate)
_CURE_RATES = {"mean_min": "cure rate min", "mean_median": "cure rate median", "mean_max": "cure rate max"}


def ground_truth_table(fits: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """Class balance and logistic-fit quality per PCA dimension d; the fit metrics say whether they
    are on the fitted compounds (in-sample) or cross-validated."""
    rows = []
    for f in fits:
        row = {k: f[k] for k in ("d", "threshold_nM", "n_compounds", "n_cured", "n_not_cured",
                                 "mean_min", "mean_median", "mean_max") if k in f}
        row.update({_FIT_METRICS.get(k, k): v for k, v in (f.get("metrics") or {}).items()
                    if (np.isscalar(v) or v is None) and k not in row and k != "n"})  # n: n_compounds again
        rows.append({_CURE_RATES.get(k, k): v for k, v in row.items()})
    return pd.DataFrame(rows).sort_values("d").reset_index(drop=True)


def name_activity_columns(df: pd.DataFrame, activity: str) -> pd.DataFrame:
    """Name the activity columns after the measured quantity (``activity_nM`` -> ``Ki_nM``)."""
    out = df.copy()
    for col in [c for c in out.columns if "activity_nM" in c]:
        if activity == "pChEMBL":
            out[col.replace("activity_nM", "pChEMBL")] = 9.0 - np.log10(out.pop(col).astype(float))
        else:
            out = out.rename(columns={col: col.replace("activity_nM", f"{activity}_nM")})
    return out.rename(columns={c: c.replace("activity_rank", f"{activity}_rank")
                               for c in out.columns if "activity_rank" in c})


def feature_twins(arms: pd.DataFrame) -> dict[str, list[tuple[str, float]]]:
    """Per compound whose feature vector another compound of ``arms`` shares (the ground truth's arms: features
    ``x0``, ``x1``, ... and ``activity_nM``), the others with their activity, in the arms' order. Stereoisomers
    share their Morgan fingerprint (it ignores stereochemistry), as may two compounds by a bit collision: every
    model of the features gives them the same cure rate, so an algorithm's answer stands for its whole group."""
    from screenbai.bandits.numerics.linalg import shared_rows

    cols = [c for c in arms.columns if re.fullmatch(r"x\d+", str(c))]
    if not cols or arms.empty:
        return {}
    rows, group = shared_rows(arms[cols].to_numpy(float))
    ids = arms["compound_id"].astype(str).to_numpy()
    activity = arms["activity_nM"].to_numpy(float) if "activity_nM" in arms else np.full(len(ids), np.nan)
    members: dict[int, list[int]] = {}
    for row, g in zip(rows.tolist(), group.tolist()):
        members.setdefault(g, []).append(row)
    return {ids[r]: [(ids[o], float(activity[o])) for o in same if o != r] for same in members.values() for r in same}


def report_tables(
    records: pd.DataFrame,
    *,
    library: pd.DataFrame,
    fits: Sequence[Mapping[str, Any]],
    reference: tuple[int, int],
    algorithms: Sequence[Mapping[str, Any]] = (),
    reference_arms: pd.DataFrame | None = None,
    error_rates: pd.DataFrame | None = None,
    twins: Mapping[str, Sequence[tuple[str, float]]] | None = None,
) -> dict[str, Any]:
    """The report's tables (``summary``, ``declared``, ``ground_truth``) and each label's
    ``guarantees``; the summary says each algorithm's guarantee and measured error rate, the declared
    compounds of the reference screen their cure rate's interval (from ``reference_arms``), and each declared
    compound the compounds with the same features (``twins``, from ``feature_twins``), in ``same_features_as``."""
    smiles = dict(zip(library["compound_id"], library["smiles"]))
    summary = summarize_screens(records)
    declared = declared_compounds(records, smiles)
    if twins:
        declared["same_features_as"] = declared["compound_id"].astype(str).map(
            lambda cid: "; ".join(f"{o} ({a:.3g} nM)" for o, a in twins.get(cid, ())))
    guarantees = algorithm_guarantees(records, algorithms, error_rates)
    summary.insert(1, "guarantee", summary["label"].map(lambda lab: guarantee_tag(guarantees.get(lab))))
    summary.insert(2, "measured_error_rate", summary["label"].map(_measured_rate(guarantees)))
    if reference_arms is not None and {"mean_lo95", "mean_hi95"} <= set(reference_arms.columns):
        interval = reference_arms.set_index("compound_id")[["mean_lo95", "mean_hi95"]]
        at_ref = declared["d"] == reference[0]
        for col, src in (("cure_rate_lo95", "mean_lo95"), ("cure_rate_hi95", "mean_hi95")):
            declared.loc[at_ref, col] = interval[src].reindex(declared.loc[at_ref, "compound_id"]).to_numpy()
    gt = ground_truth_table(fits)
    return {"summary": summary, "declared": declared, "ground_truth": gt, "guarantees": guarantees}


def markdown_table(df: pd.DataFrame, floatfmt: str = ".4g") -> str:
    """A GitHub markdown table (no extra dependency)."""
    def cell(v):
        if isinstance(v, (float, np.floating)):
            return "" if np.isnan(v) else format(float(v), floatfmt)
        return str(v)

    head = "| " + " | ".join(map(str, df.columns)) + " |"
    sep = "|" + "---|" * len(df.columns)
    body = ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join([head, sep, *body])


def write_generated_block(path: str | os.PathLike, name: str, content: str) -> None:
    """Put ``content`` between the lines ``<!-- name:begin -->`` and ``<!-- name:end -->`` of the text
    file ``path`` and leave everything else (the prose a person wrote around it) as it was.

    A file without these markers gets them, with the content, appended at its end (a missing file is
    created).  Markers that are unpaired, repeated or out of order are an error: nothing is written.
    """
    path = Path(path)
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    block = f"{begin}\n{content.strip()}\n{end}"
    lines = text.splitlines()
    at_begin = [i for i, line in enumerate(lines) if line.strip() == begin]
    at_end = [i for i, line in enumerate(lines) if line.strip() == end]
    if not at_begin and not at_end:
        text = (text.rstrip() + "\n\n" if text.strip() else "") + block + "\n"
    elif len(at_begin) == 1 and len(at_end) == 1 and at_begin[0] < at_end[0]:
        text = "\n".join(lines[: at_begin[0]] + [block] + lines[at_end[0] + 1 :]) + "\n"
    else:
        raise ValueError(
            f"{path}: the generated block {name!r} needs exactly one {begin!r} line before one {end!r} "
            f"line (found begin on lines {[i + 1 for i in at_begin]}, end on lines {[i + 1 for i in at_end]}); "
            "fix the markers by hand"
        )
    write_whole(path, text)


def html_table(df: pd.DataFrame, floatfmt: str = ".4g") -> str:
    return df.to_html(index=False, na_rep="", border=0, classes="screenbai",
                      float_format=lambda v: format(v, floatfmt), escape=True)

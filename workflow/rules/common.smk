# Config-derived constants and input functions (no rules here: snakemake --lint).

import json
import sys
from pathlib import Path

from screenbai.chem.ground_truth import LABEL_RULES
from screenbai.screening import (
    activity_label_of,
    activity_types_of,
    check_algorithms,
    check_dimensions,
    check_regex,
    check_sources,
    clip_studies,
    pchembl_of,
    replication_chunk,
    replication_chunks,
    reference_point,
    study_points,
    overparameterised_note,
)

R = f"results/{config['target_name']}"
SCREEN = config["screen"]
POINTS = study_points(SCREEN["studies"])
DIMS = sorted({d for d, _ in POINTS})
SIZES = sorted({K for _, K in POINTS})
CHUNKS = replication_chunks(SCREEN["replications"], SCREEN["chunk_size"])
ALGORITHMS = {a["label"]: a for a in config["algorithms"]}
MODULES = config.get("algorithm_modules", [])

# Fail before any job: unknown algorithm, duplicate label, a parameter the algorithm lacks or a
# value it refuses at any screen size; an activity type the source does not declare; a bad regex; a table's
# units that curation does not convert or that its column's header contradicts; a missing source.path (a
# missing offline_fallback.path is a warning: it is needed only offline); a PCA dimension larger than the
# fingerprints.
check_algorithms(config["algorithms"], MODULES, SIZES, SCREEN["max_samples"])
ACTIVITY_TYPES = activity_types_of(config)
# what labels, tables and figures name: the declared type(s), or the activity behind pChEMBL values
ACTIVITY = activity_label_of(config)
PCHEMBL_OF = pchembl_of(config["source"]) if config["source"].get("kind") == "table" else None
check_regex(config["curation"].get("assay_description_regex"), "curation.assay_description_regex")
check_dimensions(DIMS, config["featurize"]["n_bits"])
# a screen of K <= d + 1 compounds: legal, rarely meant; printed (a warnings.warn from here is never shown)
if overparameterised_note(POINTS):
    print(f"WARNING: {overparameterised_note(POINTS)}", file=sys.stderr)
CURATION = {k: v for k, v in config["curation"].items() if k != "activity_types"}
# the cure label: one of threshold_nM, threshold_pActivity, potent_fraction (default: the top 10 %)
LABEL = {k: config["ground_truth"][k] for k in LABEL_RULES if k in config["ground_truth"]}
if len(LABEL) > 1:
    raise ValueError(f"ground_truth: give one cure label, not {sorted(LABEL)}")
LABEL = LABEL or {"potent_fraction": 0.1}
for _note in check_sources(config, workflow.basedir):
    print(f"WARNING: {_note}", file=sys.stderr)
_SOURCE = config["source"]
TITLE = config["report"].get("title") or (
    f"{config['target_name']} ({_SOURCE.get('target_chembl_id') or Path(_SOURCE.get('path', '')).name}, {ACTIVITY}): "
    "which compounds to test, and how many tests it took"
)


wildcard_constraints:
    d=r"\d+",
    K=r"\d+",
    chunk=r"\d+",
    label=r"[a-z0-9][a-z0-9_.+-]*",


def screen_plan():
    """The studies, their (d, K) screens and the reference screen of the figures.

    With screen.clip_K, a K larger than the curated library becomes the library's size, read
    from the curate checkpoint once it has run; without it such a K is refused by curate.
    """
    if not SCREEN["clip_K"]:
        return SCREEN["studies"], POINTS, REFERENCE
    with open(checkpoints.curate.get().output.label) as fh:
        n = json.load(fh)["n_compounds"]
    studies = clip_studies(SCREEN["studies"], n)
    ref = config["report"].get("reference")
    ref = {**ref, "K": min(int(ref["K"]), n)} if ref else None
    return studies, study_points(studies), reference_point(studies, ref)


def chunk_runs(wildcards):
    """Every chunk of every algorithm on every (d, K) screen."""
    return [
        f"{R}/runs/{label}/d{d}_K{K}/chunk{c}.parquet"
        for label in ALGORITHMS
        for d, K in screen_plan()[1]
        for c in range(len(CHUNKS))
    ]


def report_studies(wildcards):
    return screen_plan()[0]


def report_reference(wildcards):
    return screen_plan()[2]


def reference_arms(wildcards):
    return f"{R}/ground_truth/arms_d{screen_plan()[2][0]}.parquet"


def reference_subset(wildcards):
    return f"{R}/subsets/K{screen_plan()[2][1]}.csv"


def algorithm_entry(wildcards):
    return ALGORITHMS[wildcards.label]


def chunk_start(wildcards):
    return replication_chunk(SCREEN["replications"], SCREEN["chunk_size"], wildcards.chunk)[0]


def chunk_size(wildcards):
    return replication_chunk(SCREEN["replications"], SCREEN["chunk_size"], wildcards.chunk)[1]


def ground_truth_fits(wildcards):
    return [f"{R}/ground_truth/fit_d{d}.json" for d in DIMS]


def subsets(wildcards):
    return [f"{R}/subsets/K{K}.csv" for K in SIZES]


def final_outputs():
    return [
        f"{R}/records.parquet",
        f"{R}/report/summary.md",
        f"{R}/report/summary.html",
        f"{R}/report/declared_structures.png",
    ]


REFERENCE = reference_point(SCREEN["studies"], config["report"].get("reference"))
STUDIES = list(SCREEN["studies"])

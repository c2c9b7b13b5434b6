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

activities.py (the data source and the declared activity types), plan.py (the study plan, checked
before any job), runs.py (arms, subsets, instances, replications and their scoring), schema.py (the
config against its schema, in words naming the key, the value and the fix).
"""

from .activities import (
    ACTIVITY_TYPES,
    DEFAULT_SHARED_DATA,
    HUMAN_MICROMOLAR,
    SHARED_DATA_ENV,
    acquire_activities,
    activity_label_of,
    activity_types_of,
    check_activity_types,
    check_sources,
    format_activity,
    format_concentration,
    pchembl_of,
    prepare_activities,
    resolve_data_path,
)
from .plan import (
    ClippedScreenWarning,
    OverparameterisedScreenWarning,
    algorithm_params,
    check_algorithms,
    check_dimensions,
    check_library_size,
    check_regex,
    clip_studies,
    load_algorithm_modules,
    overparameterised_note,
    reference_point,
    replication_chunk,
    replication_chunks,
    replication_seed,
    study_points,
    warn_overparameterised,
)
from .runs import (
    arm_columns,
    build_instance,
    draw_subset,
    ground_truth_arms,
    gt_metrics,
    judging_epsilon,
    merge_records,
    run_chunk,
    score_runs,
)

__all__ = [
    "ACTIVITY_TYPES",
    "ClippedScreenWarning",
    "DEFAULT_SHARED_DATA",
    "SHARED_DATA_ENV",
    "acquire_activities",
    "activity_label_of",
    "activity_types_of",
    "algorithm_params",
    "arm_columns",
    "build_instance",
    "check_activity_types",
    "check_algorithms",
    "check_dimensions",
    "warn_overparameterised",
    "overparameterised_note",
    "OverparameterisedScreenWarning",
    "check_library_size",
    "check_regex",
    "check_sources",
    "clip_studies",
    "draw_subset",
    "HUMAN_MICROMOLAR",
    "format_activity",
    "format_concentration",
    "ground_truth_arms",
    "gt_metrics",
    "judging_epsilon",
    "load_algorithm_modules",
    "merge_records",
    "pchembl_of",
    "prepare_activities",
    "reference_point",
    "replication_chunk",
    "replication_chunks",
    "replication_seed",
    "resolve_data_path",
    "run_chunk",
    "score_runs",
    "study_points",
]

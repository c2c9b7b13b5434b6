# Config-derived constants and input functions (no rules here: snakemake --lint).

from screenbai.screening import (
    check_algorithms,
    replication_chunks,
    reference_point,
    study_points,
)

R = f"results/{config['target_name']}"
SCREEN = config["screen"]
POINTS = study_points(SCREEN["studies"])
DIMS = sorted({d for d, _ in POINTS})
SIZES = sorted({K for _, K in POINTS})
CHUNKS = replication_chunks(SCREEN["replications"], SCREEN["chunk_size"])
ALGORITHMS = {a["label"]: a for a in config["algorithms"]}
MODULES = config.get("algorithm_modules", [])

# Fail before any job: unknown algorithm, duplicate label, parameter the algorithm lacks.
check_algorithms(config["algorithms"], MODULES)


wildcard_constraints:
    d=r"\d+",
    K=r"\d+",
    chunk=r"\d+",
    label=r"[a-z0-9][a-z0-9_.+-]*",


def chunk_runs(wildcards):
    """Every chunk of every algorithm on every (d, K) screen."""
    return [
        f"{R}/runs/{label}/d{d}_K{K}/chunk{c}.parquet"
        for label in ALGORITHMS
        for d, K in POINTS
        for c in range(len(CHUNKS))
    ]


def algorithm_entry(wildcards):
    return ALGORITHMS[wildcards.label]


def chunk_start(wildcards):
    return CHUNKS[int(wildcards.chunk)][0]


def chunk_size(wildcards):
    return CHUNKS[int(wildcards.chunk)][1]


def ground_truth_fits(wildcards):
    return [f"{R}/ground_truth/fit_d{d}.json" for d in DIMS]


def subsets(wildcards):
    return [f"{R}/subsets/K{K}.csv" for K in SIZES]


def final_outputs():
    return [
        f"{R}/records.parquet",
        f"{R}/report/summary.md",
        f"{R}/report/declared_structures.png",
    ]


REFERENCE = reference_point(SCREEN["studies"], config["report"].get("reference"))
STUDIES = list(SCREEN["studies"])

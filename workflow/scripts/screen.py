"""Rule screen: one chunk of replications of one algorithm on one (d, K) screen."""
from rule_setup import start

logger = start(snakemake)  # first: this repository's screenbai, the rule log

import json

import pandas as pd

from screenbai.screening import run_chunk

with open(snakemake.input.fit) as fh:
    fit = json.load(fh)
records = run_chunk(
    pd.read_parquet(snakemake.input.arms),
    pd.read_csv(snakemake.input.subset),
    fit["theta_full"],
    snakemake.params.entry,
    d=int(snakemake.wildcards.d),
    K=int(snakemake.wildcards.K),
    seed=snakemake.params.seed,
    start=snakemake.params.start,
    n_reps=snakemake.params.n_reps,
    max_samples=snakemake.params.max_samples,
    modules=snakemake.params.modules,
    default_epsilon=snakemake.params.epsilon,
)
records.to_parquet(snakemake.output.records, index=False)
logger.info("%d replications, mean samples %.1f", len(records), records["samples"].mean())

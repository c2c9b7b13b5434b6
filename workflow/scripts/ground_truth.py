"""Rule ground_truth: the cure label of the curate rule, the logistic fit, the arms of dimension d."""
from rule_setup import start

logger = start(snakemake)  # first: this repository's screenbai, the rule log

import json

import pandas as pd

from screenbai.screening import ground_truth_arms

with open(snakemake.input.label) as fh:
    label = json.load(fh)
arms, fit = ground_truth_arms(
    pd.read_parquet(snakemake.input.library),
    pd.read_parquet(snakemake.input.features),
    threshold_nM=label["threshold_nM"],
    C=snakemake.params.C,
    random_state=snakemake.params.random_state,
)
fit["label"] = label["description"]
arms.to_parquet(snakemake.output.arms, index=False)
with open(snakemake.output.fit, "w") as fh:
    json.dump(fit, fh, indent=2)

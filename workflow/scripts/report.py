"""Rule report: tables, figures and a markdown summary of the study."""
from rule_setup import start

logger = start(snakemake)  # first: this repository's screenbai, the rule log

import json

import pandas as pd

from screenbai.report import write_report

fits = []
for path in snakemake.input.fits:
    with open(path) as fh:
        fits.append(json.load(fh))
with open(snakemake.input.curation) as fh:
    curation = json.load(fh)
subset = pd.read_csv(snakemake.input.reference_subset)
means = pd.read_parquet(snakemake.input.reference_arms).set_index("compound_id").loc[subset["compound_id"], "mean"]
outputs = {k: snakemake.output[k] for k in ("summary", "declared", "ground_truth", "structures", "pulls", "markdown")}
outputs.update({f"study_{name}": path for name, path in zip(snakemake.params.studies, snakemake.output.studies)})
write_report(
    pd.read_parquet(snakemake.input.records),
    library=pd.read_parquet(snakemake.input.library),
    curation=curation,
    fits=fits,
    studies=snakemake.params.studies,
    reference=tuple(snakemake.params.reference),
    reference_means=means.to_numpy(),
    outputs=outputs,
    algorithms=snakemake.params.algorithms,
    title=snakemake.params.title,
    mols_per_row=snakemake.params.mols_per_row,
)

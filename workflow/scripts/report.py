"""Rule report: tables, figures and the summary page of the study (markdown and HTML)."""
from rule_setup import start

logger = start(snakemake)  # first: this repository's screenbai, the rule log

import json

import pandas as pd

from screenbai.report import write_report


def load(path):
    with open(path) as fh:
        return json.load(fh)


subset = pd.read_csv(snakemake.input.reference_subset)
arms = pd.read_parquet(snakemake.input.reference_arms).set_index("compound_id")
outputs = {k: snakemake.output[k] for k in ("summary", "declared", "ground_truth", "summary_html", "declared_html",
                                             "ground_truth_html", "structures", "pulls", "potency", "markdown",
                                             "page")}
outputs.update({f"study_{name}": path for name, path in zip(snakemake.params.studies, snakemake.output.studies)})
write_report(
    pd.read_parquet(snakemake.input.records),
    library=pd.read_parquet(snakemake.input.library),
    curation=load(snakemake.input.curation),
    label=load(snakemake.input.label),
    fits=[load(p) for p in snakemake.input.fits],
    studies=snakemake.params.studies,
    reference=tuple(snakemake.params.reference),
    reference_means=arms.loc[subset["compound_id"], "mean"].to_numpy(),
    reference_arms=arms.loc[subset["compound_id"]].reset_index(),
    arms=arms.reset_index(),
    error_rates=pd.read_csv(snakemake.input.error_rates),
    outputs=outputs,
    algorithms=snakemake.params.algorithms,
    title=snakemake.params.title,
    activity=snakemake.params.activity,
    mols_per_row=snakemake.params.mols_per_row,
)

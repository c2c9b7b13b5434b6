"""Rule ground_truth: binarise activity, fit the logistic model, write the arms of dimension d."""
import json
import logging

import pandas as pd

from screenbai.screening import ground_truth_arms

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, force=True,
                    format="%(asctime)s %(levelname)s %(name)s: %(message)s")
logging.captureWarnings(True)

arms, fit = ground_truth_arms(
    pd.read_parquet(snakemake.input.library),
    pd.read_parquet(snakemake.input.features),
    threshold_nM=snakemake.params.threshold_nM,
    C=snakemake.params.C,
    random_state=snakemake.params.random_state,
)
arms.to_parquet(snakemake.output.arms, index=False)
with open(snakemake.output.fit, "w") as fh:
    json.dump(fit, fh, indent=2)

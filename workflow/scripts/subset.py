"""Rule subset: the K compounds of a screen (seeded by subset_seed and K)."""
from rule_setup import start

logger = start(snakemake)  # first: this repository's screenbai, the rule log

import pandas as pd

from screenbai.screening import draw_subset

subset = draw_subset(pd.read_parquet(snakemake.input.library), int(snakemake.wildcards.K), snakemake.params.subset_seed)
subset.to_csv(snakemake.output.subset, index=False)

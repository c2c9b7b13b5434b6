"""Rule subset: the K compounds of a screen (seeded by subset_seed and K)."""
import logging

import pandas as pd

from screenbai.screening import draw_subset

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, force=True,
                    format="%(asctime)s %(levelname)s %(name)s: %(message)s")

subset = draw_subset(pd.read_parquet(snakemake.input.library), int(snakemake.wildcards.K), snakemake.params.subset_seed)
subset.to_csv(snakemake.output.subset, index=False)

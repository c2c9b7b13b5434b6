"""Rule aggregate: merge the chunks of every screen into one tidy table of runs."""
import logging

import pandas as pd

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, force=True,
                    format="%(asctime)s %(levelname)s %(name)s: %(message)s")

from screenbai.screening import merge_records

records = merge_records([pd.read_parquet(p) for p in snakemake.input.chunks])
records.to_parquet(snakemake.output.records, index=False)
logging.info("%d runs merged from %d chunks", len(records), len(snakemake.input.chunks))

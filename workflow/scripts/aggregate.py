"""Rule aggregate: merge the chunks of every screen into one tidy table of runs."""
from rule_setup import start

logger = start(snakemake)  # first: this repository's screenbai, the rule log

import pandas as pd

from screenbai.screening import merge_records

records = merge_records([pd.read_parquet(p) for p in snakemake.input.chunks])
records.to_parquet(snakemake.output.records, index=False)
logger.info("%d runs merged from %d chunks", len(records), len(snakemake.input.chunks))

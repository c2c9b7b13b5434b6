"""Rule curate: raw activities -> compound library + curation report (every dropped row)."""
from rule_setup import start

logger = start(snakemake)  # first: this repository's screenbai, the rule log

import json

import pandas as pd

from screenbai.chem.curate import curate_activities

raw = pd.read_parquet(snakemake.input.raw)
library, report = curate_activities(raw, **snakemake.params.curation)
library.to_parquet(snakemake.output.library, index=False)
with open(snakemake.input.provenance) as fh:
    provenance = json.load(fh)
content = json.loads(report.to_json())
content["source"] = provenance
with open(snakemake.output.report_json, "w") as fh:
    json.dump(content, fh, indent=2, default=str)
report.to_frame().to_csv(snakemake.output.counts, index=False)

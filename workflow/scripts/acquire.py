"""Rule acquire: raw activities from ChEMBL / an export / a table (offline fallback logged)."""
from rule_setup import start

logger = start(snakemake)  # first: this repository's screenbai, the rule log

import json

from screenbai.screening import acquire_activities

raw, provenance = acquire_activities(
    snakemake.params.source,
    snakemake.params.fallback,
    cache_dir=snakemake.params.cache_dir,
    repo_root=snakemake.params.repo_root,
)
raw.to_parquet(snakemake.output.raw, index=False)
with open(snakemake.output.provenance, "w") as fh:
    json.dump(provenance, fh, indent=2, default=str)

"""Rule acquire: raw activities from ChEMBL / an export / a table (offline fallback logged)."""
from rule_setup import start

logger = start(snakemake)  # first: this repository's screenbai, the rule log

import json
import sys

from screenbai.screening import acquire_activities

raw, provenance = acquire_activities(
    snakemake.params.source,
    snakemake.params.fallback,
    cache_dir=snakemake.params.cache_dir,
    repo_root=snakemake.params.repo_root,
)
if provenance["used"] == "offline_fallback":
    # the first job of the run: one line on the console, not only in the log and the report
    print(f"screenbai: {provenance['warning']}", file=sys.stderr, flush=True)
raw.to_parquet(snakemake.output.raw, index=False)
with open(snakemake.output.provenance, "w") as fh:
    json.dump(provenance, fh, indent=2, default=str)

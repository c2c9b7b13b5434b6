"""Rule acquire: raw activities from ChEMBL / an export / a table (offline fallback logged)."""
import json
import logging

from screenbai.screening import acquire_activities

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, force=True,
                    format="%(asctime)s %(levelname)s %(name)s: %(message)s")
logging.captureWarnings(True)

raw, provenance = acquire_activities(
    snakemake.params.source,
    snakemake.params.fallback,
    cache_dir=snakemake.params.cache_dir,
    repo_root=snakemake.params.repo_root,
)
raw.to_parquet(snakemake.output.raw, index=False)
with open(snakemake.output.provenance, "w") as fh:
    json.dump(provenance, fh, indent=2, default=str)

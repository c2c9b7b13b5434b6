"""Rule fingerprints: Morgan bit vectors of the library into a chunked store (radius, n_bits from the config)."""
from rule_setup import start

logger = start(snakemake)  # first: this repository's screenbai, the rule log

import pandas as pd

from screenbai.chem.fingerprint_store import build_fingerprint_store

library = pd.read_parquet(snakemake.input.library, columns=["smiles"])
store = build_fingerprint_store(library["smiles"].tolist(), snakemake.output.store, radius=snakemake.params.radius,
                                n_bits=snakemake.params.n_bits, n_jobs=snakemake.threads, progress=False)
logger.info("fingerprints: %d molecules x %d bits in %d chunks", store.n_molecules, store.n_bits, store.n_chunks)

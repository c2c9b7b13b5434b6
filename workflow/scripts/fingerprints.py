"""Rule fingerprints: Morgan bit vectors of the library (radius, n_bits from the config)."""
from rule_setup import start

logger = start(snakemake)  # first: this repository's screenbai, the rule log

import numpy as np
import pandas as pd

from screenbai.chem.featurize import morgan_fingerprints

library = pd.read_parquet(snakemake.input.library)
fps = morgan_fingerprints(library["smiles"].tolist(), radius=snakemake.params.radius, n_bits=snakemake.params.n_bits)
np.savez_compressed(snakemake.output.fingerprints, fingerprints=np.asarray(fps),
                    compound_id=library["compound_id"].to_numpy(dtype=str))
logger.info("fingerprints: %s", np.asarray(fps).shape)

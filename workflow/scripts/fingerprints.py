"""Rule fingerprints: Morgan bit vectors of the library (radius, n_bits from the config)."""
import logging

import numpy as np
import pandas as pd

from screenbai.chem.featurize import morgan_fingerprints

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, force=True,
                    format="%(asctime)s %(levelname)s %(name)s: %(message)s")

library = pd.read_parquet(snakemake.input.library)
fps = morgan_fingerprints(library["smiles"].tolist(), radius=snakemake.params.radius, n_bits=snakemake.params.n_bits)
np.savez_compressed(snakemake.output.fingerprints, fingerprints=np.asarray(fps),
                    compound_id=library["compound_id"].to_numpy(dtype=str))
logging.info("fingerprints: %s", np.asarray(fps).shape)

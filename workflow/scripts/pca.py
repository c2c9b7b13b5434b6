"""Rule pca: fingerprint store -> d principal components per compound.

Exactly scikit-learn's PCA of all fingerprints up to 50 000 compounds; above, fitted on a seeded
sample of 50 000 and applied chunk by chunk (screenbai.chem.fingerprint_store.store_pca).
"""
from rule_setup import start

logger = start(snakemake)  # first: this repository's screenbai, the rule log

import json

import numpy as np
import pandas as pd

from screenbai.chem.fingerprint_store import FingerprintStore, store_pca

d = int(snakemake.wildcards.d)
store = FingerprintStore(snakemake.input.store)
ids = pd.read_parquet(snakemake.input.library, columns=["compound_id"])["compound_id"].to_numpy(dtype=str)
if len(ids) != store.n_molecules:
    raise ValueError(f"{snakemake.input.store} holds {store.n_molecules} molecules but {snakemake.input.library} "
                     f"{len(ids)}: delete the store so that the fingerprints rule rebuilds it")
features, info = store_pca(store, d, random_state=snakemake.params.random_state, progress=False)
if info["n_invalid"]:  # curation drops unreadable structures, so this means a changed library file
    raise ValueError(f"{info['n_invalid']} structures of {snakemake.input.library} cannot be read by RDKit "
                     f"({info['invalid_by_reason']}): rerun the curate rule")
table = pd.DataFrame(np.asarray(features), columns=[f"pc{i + 1}" for i in range(d)])
table.insert(0, "compound_id", ids[info["row"]])
table.to_parquet(snakemake.output.features, index=False)
# the loadings (components, mean) and the row map are large and not needed downstream: keep the variance facts
facts = {k: v for k, v in info.items() if k not in ("components", "mean", "row")}
with open(snakemake.output.info, "w") as fh:
    json.dump(facts, fh, indent=2, default=lambda o: np.asarray(o).tolist())

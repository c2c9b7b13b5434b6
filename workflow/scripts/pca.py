"""Rule pca: fingerprints -> d principal components per compound."""
from rule_setup import start

logger = start(snakemake)  # first: this repository's screenbai, the rule log

import json

import numpy as np
import pandas as pd

from screenbai.chem.featurize import reduce_pca

d = int(snakemake.wildcards.d)
data = np.load(snakemake.input.fingerprints)
features, info = reduce_pca(data["fingerprints"], d, random_state=snakemake.params.random_state)
table = pd.DataFrame(np.asarray(features), columns=[f"pc{i + 1}" for i in range(d)])
table.insert(0, "compound_id", data["compound_id"])
table.to_parquet(snakemake.output.features, index=False)
# the loadings (components, mean) are large and not needed downstream: keep the variance facts
facts = {k: v for k, v in info.items() if k not in ("components", "mean")}
with open(snakemake.output.info, "w") as fh:
    json.dump(facts, fh, indent=2, default=lambda o: np.asarray(o).tolist())

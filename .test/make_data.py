"""Writes .test/data/ki_toy.csv: 72 drug-like compounds with Ki values from a hidden model.

Run from the repository root (`python .test/make_data.py`); the file is committed, and the
workflow's small test config (.test/config/config.yaml) screens it end to end.  Three rows
curation must drop (no SMILES, a censored value, a non-numeric value) are appended.
"""

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
from rdkit import Chem

CORES = ["c1ccc({R})cc1", "c1ccnc({R})c1", "O=C(N{R})c1ccccc1", "c1ccc2[nH]c({R})nc2c1",
         "Cc1cc({R})ncn1", "O=C1CCC({R})N1"]
SUBSTITUENTS = ["C", "CC", "OC", "Cl", "F", "N", "C(F)(F)F", "C(=O)O", "CCN", "OCC", "C#N", "S(C)(=O)=O"]


def make_table(seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    smiles = [Chem.MolToSmiles(Chem.MolFromSmiles(c.format(R=r))) for c, r in itertools.product(CORES, SUBSTITUENTS)]
    core = np.repeat(np.arange(len(CORES)), len(SUBSTITUENTS))
    sub = np.tile(np.arange(len(SUBSTITUENTS)), len(CORES))
    log_ki = -0.5 + 0.5 * core + 0.2 * sub + rng.normal(0, 0.4, len(smiles))  # log10 nM: ~0.3 nM .. 30 uM
    table = pd.DataFrame({"name": [f"MOL{i:03d}" for i in range(len(smiles))], "smiles": smiles,
                          "ki_nM": [f"{10 ** v:.4g}" for v in log_ki]})
    bad = pd.DataFrame({"name": ["BAD1", "BAD2", "BAD3"], "smiles": ["", "CCO", "CCN"],
                        "ki_nM": ["50", ">10000", "n.d."]})
    return pd.concat([table, bad], ignore_index=True)


if __name__ == "__main__":
    out = Path(__file__).parent / "data" / "ki_toy.csv"
    make_table().to_csv(out, index=False)
    print(f"wrote {out}")

"""Chemistry data pipeline: acquire, curate, featurize, ground truth (pure functions)."""

from screenbai.chem.acquire import (
    STANDARD_COLUMNS,
    ChemblUnavailableError,
    fetch_chembl_activities,
    load_activities,
    read_activity_table,
    read_chembl_export,
)
from screenbai.chem.curate import CurationReport, curate_activities, standardize_smiles
from screenbai.chem.featurize import morgan_fingerprints, reduce_pca
from screenbai.chem.ground_truth import GroundTruth, binarize, fit_ground_truth
from screenbai.chem.store import FingerprintStore, build_fingerprint_store, featurize_library, store_pca

__all__ = [
    "STANDARD_COLUMNS",
    "ChemblUnavailableError",
    "CurationReport",
    "FingerprintStore",
    "GroundTruth",
    "binarize",
    "build_fingerprint_store",
    "curate_activities",
    "fetch_chembl_activities",
    "featurize_library",
    "fit_ground_truth",
    "load_activities",
    "morgan_fingerprints",
    "read_activity_table",
    "read_chembl_export",
    "reduce_pca",
    "standardize_smiles",
    "store_pca",
]

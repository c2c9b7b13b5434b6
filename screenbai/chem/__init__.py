"""Chemistry data pipeline (pure functions): acquire.py (one config -> the reader of its kind),
chembl_web.py (the live ChEMBL web service, cached), tables.py (ChEMBL web exports, chemists'
CSV/TSV/SDF tables), units.py (units of activity values, read from a config or a column's header),
standardize.py (standardized structures and the key of a compound), curate.py, featurize.py,
fingerprint_store.py (chunked fingerprints of large libraries), ground_truth.py."""

from screenbai.chem.acquire import load_activities
from screenbai.chem.chembl_web import ChemblUnavailableError, fetch_chembl_activities
from screenbai.chem.curate import CurationReport, curate_activities
from screenbai.chem.featurize import morgan_fingerprints, reduce_pca
from screenbai.chem.fingerprint_store import FingerprintStore, build_fingerprint_store, featurize_library, store_pca
from screenbai.chem.ground_truth import GroundTruth, binarize, fit_ground_truth
from screenbai.chem.standardize import standardize_smiles
from screenbai.chem.tables import STANDARD_COLUMNS, read_activity_table, read_chembl_export

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

"""A campaign's library: structures without activities, standardized and featurized.

Inputs (``kind``):

* ``table``: CSV/TSV (delimiter sniffed, gzip allowed) or SDF, with the id and SMILES columns
  named by the caller (SDF: the record's structure and title line by default);
* ``chembl-export``: a ChEMBL web-interface export (';'-separated; one row per activity, so a
  molecule appears once per measurement and is kept once);
* ``featurized``: the workflow's featurized library, ``features/pca_d{d}.parquet`` (or
  ``ground_truth/arms_d{d}.parquet``); the SMILES come from the run's ``library.parquet``.

Structures are standardized with :func:`screenbai.chem.standardize.standardize_smiles` and featurized
with the workflow's Morgan + PCA code (:mod:`screenbai.chem.featurize`); the arm features are the
PCA scores plus an intercept column, as the workflow's arms.  Every input row that does not become
an arm is reported with its reason; two ids with the same structure are never merged (the first
is kept, the second is reported as a duplicate structure).
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

logger = logging.getLogger("screenbai.campaign")

KINDS = ("auto", "table", "chembl-export", "featurized")
#: the CDK2 study's featurizer (config/config.yaml; d = 20 is its reference screen)
DEFAULT_RADIUS, DEFAULT_N_BITS, DEFAULT_D = 4, 1024, 20
#: libraries larger than this are featurized chunk by chunk on all cores
CHUNKED_ABOVE = 50_000
#: a principal component explaining less of the variance than this is rounding noise, not a direction
EMPTY_COMPONENT = 1e-12


@dataclass
class Library:
    """Arms of a campaign: ``compounds`` (compound_id, smiles, input_smiles, source_row, in arm
    order), ``features`` (K x (d + 1), last column the intercept), the input rows not used
    (``rejected``: source_row, compound_id, smiles, reason, detail), and how it was made."""

    compounds: Any
    features: np.ndarray
    rejected: Any
    featurizer: dict
    provenance: dict
    arrays: dict = field(default_factory=dict)

    def n_sharing_features(self) -> int:
        """How many compounds have the same feature vector as another one (stereoisomers, E/Z
        isomers, isotopologues: the Morgan fingerprint ignores them), so the screen cannot tell them apart."""
        from screenbai.bandits.numerics.linalg import shared_rows

        return int(shared_rows(self.features)[0].size)

    def rejected_counts(self) -> dict[str, int]:
        return {str(k): int(v) for k, v in self.rejected["reason"].value_counts().sort_index().items()}


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _is_sdf(path: Path) -> bool:
    """An SD file by its name (.sdf, .sdf.gz, .sd)."""
    return ".sdf" in "".join(path.suffixes).lower() or path.suffix.lower() == ".sd"


def _detect_kind(path: Path) -> str:
    from screenbai.chem.tables import is_chembl_export

    if path.suffix.lower() == ".parquet":
        return "featurized"
    if _is_sdf(path):
        return "table"
    return "chembl-export" if is_chembl_export(path) else "table"


def _read_rows(path: Path, kind: str, id_column: str | None, smiles_column: str | None):
    """Input rows as a frame: source_row (the line in the file, or the SDF record), compound_id, input_smiles."""
    import pandas as pd

    from screenbai.chem.tables import read_chembl_export, read_structure_table

    if kind == "chembl-export":
        raw = read_chembl_export(path)
        frame = pd.DataFrame(
            {
                "source_row": raw.attrs["source_lines"],
                "compound_id": raw["molecule_chembl_id"].astype(object),
                "input_smiles": raw["canonical_smiles"].astype(object),
            }
        )
        # one row per activity: keep each (molecule, structure) once
        n_rows = len(frame)
        frame = frame.drop_duplicates(["compound_id", "input_smiles"], keep="first").reset_index(drop=True)
        return frame, {"activity_rows": n_rows, "distinct_molecule_rows": len(frame)}
    frame = read_structure_table(path, id_column=id_column, smiles_column=smiles_column)
    return frame.rename(columns={"smiles": "input_smiles"}), {"rows": len(frame)}


def _blank(v) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v)) or not str(v).strip()


def curate_structures(frame, *, n_jobs: int | None = 1, progress: bool = False):
    """Standardize (on ``n_jobs`` processes, -1 or None for one per core; the same result whatever their number;
    ``progress``: a bar on stderr); return (kept, rejected).  Reasons: missing id, missing SMILES, unparseable
    SMILES, text after the SMILES, standardization failed, duplicate id (same id, another structure), repeated compound
    (same id, same structure: one arm), duplicate structure (another id, same structure, or a tautomer of it:
    the same standard InChIKey; which rows are one compound is :func:`screenbai.chem.standardize.same_compound`, as
    in curation: stereo RDKit cannot hold, an allene's axis, is kept by the SMILES as written)."""
    import pandas as pd

    from screenbai.chem.standardize import (
        same_compound,
        standardize_smiles,
        stereo_as_written,
        stereo_as_written_note,
    )

    rejected: list[dict] = []

    def reject(row, reason, detail=""):
        rejected.append(
            {
                "source_row": int(row.source_row),
                "compound_id": None if _blank(row.compound_id) else str(row.compound_id),
                "smiles": None if _blank(row.input_smiles) else str(row.input_smiles),
                "reason": reason,
                "detail": detail,
            }
        )

    frame = frame.reset_index(drop=True)
    std = standardize_smiles(
        [None if _blank(s) else str(s) for s in frame["input_smiles"]], n_jobs=n_jobs, progress=progress
    )
    kept = []
    by_id: dict[str, str] = {}
    by_key: dict[str, str] = {}
    row_of: dict[str, int] = {}
    smiles_of: dict[str, str] = {}
    as_written: list[str] = []
    for row, smiles, inchikey, key, error in zip(
        frame.itertuples(index=False), std["smiles"], std["inchikey"], std["key"], std["error"]
    ):
        if not _blank(getattr(row, "problem", None)):  # the reader could not give a structure
            reject(row, str(row.problem))
            continue
        if _blank(row.compound_id):
            reject(row, "missing id")
            continue
        cid = str(row.compound_id).strip()
        if error is not None:
            reject(row, error)
            continue
        # the racemate ('|&1:1|') is not its drawn enantiomer; '|o1:1|' under two ids may be the two enantiomers;
        # CC=[C@]=CC and CC=[C@@]=CC are both CC=C=CC to RDKit: one compound per SMILES as written
        ident = same_compound(key, smiles, cid)
        if cid in by_id:
            if by_id[cid] != ident:
                reject(row, "duplicate id", f"id {cid} already used for another structure (row {row_of[cid]})")
            else:  # the same compound listed twice: one arm
                reject(row, "repeated compound", f"same id and structure as row {row_of[cid]}")
            continue
        if ident in by_key:
            first = by_key[ident]
            # the standard InChIKey also joins tautomers (2-hydroxypyridine, 2-pyridone): one compound in solution
            if stereo_as_written(key):
                reject(row, "duplicate structure", f"the same SMILES as written as {first}, whose stereo RDKit cannot "
                       "hold (an allene's axis): kept apart from its stereoisomers, not from itself")
                continue
            what = ("same standardized structure" if smiles == smiles_of[first]
                    else f"a tautomer of {first}'s structure ({smiles_of[first]}; one compound in solution)")
            reject(row, "duplicate structure", f"{what}, standard InChIKey {inchikey}, as {first}")
            continue
        by_id[cid], by_key[ident], row_of[cid], smiles_of[cid] = ident, cid, int(row.source_row), smiles
        if stereo_as_written(key):
            as_written.append(str(row.input_smiles))
        kept.append(
            {
                "compound_id": cid,
                "smiles": smiles,
                "input_smiles": str(row.input_smiles),
                "source_row": int(row.source_row),
            }
        )
    if as_written:
        logger.warning("%s", stereo_as_written_note(as_written))
    columns = ["source_row", "compound_id", "smiles", "reason", "detail"]
    return pd.DataFrame(kept), pd.DataFrame(rejected, columns=columns)


def featurize_structures(
    smiles, *, radius: int, n_bits: int, d: int, n_jobs: int | None = None
) -> tuple[np.ndarray, dict, dict]:
    """Morgan fingerprints -> PCA(d) -> append the intercept: (features, settings, loadings).

    Above ``CHUNKED_ABOVE`` structures the chunked featurizer of :mod:`screenbai.chem.fingerprint_store` runs
    (``n_jobs`` processes, default all cores; bounded memory; its fingerprint store is a temporary cache, the
    campaign file keeps the features); below, the in-memory functions (the same scores).
    """
    smiles = list(smiles)
    if len(smiles) > CHUNKED_ABOVE:
        import tempfile

        from screenbai.chem.fingerprint_store import featurize_library

        with tempfile.TemporaryDirectory(prefix="screenbai-fingerprints-") as tmp:
            scores, info = featurize_library(smiles, tmp, int(d), radius=radius, n_bits=n_bits, n_jobs=n_jobs)
        if len(info["row"]) != len(smiles):  # the structures were standardized: RDKit reads them all
            raise ValueError(f"{len(smiles) - len(info['row'])} standardized structures could not be featurized")
    else:
        from screenbai.chem.featurize import morgan_fingerprints, reduce_pca

        scores, info = reduce_pca(morgan_fingerprints(smiles, radius=radius, n_bits=n_bits), int(d))
    features = np.hstack([scores, np.ones((scores.shape[0], 1))])
    settings = {
        "method": "morgan+pca",
        "radius": int(radius),
        "n_bits": int(n_bits),
        "d": int(d),
        "intercept": True,
        "pca_svd_solver": info["svd_solver"],
        "explained_variance_ratio_total": info["explained_variance_ratio_total"],
        "explained_variance_ratio": [float(v) for v in info["explained_variance_ratio"]],
    }
    return features, settings, {"pca_components": info["components"], "pca_mean": info["mean"]}


def _featurized(path: Path, library_path: str | None):
    import pandas as pd

    table = pd.read_parquet(path)
    if "compound_id" not in table.columns:
        raise ValueError(f"{path}: a featurized library needs a compound_id column; columns are {list(table.columns)}")
    repeated = sorted(set(table["compound_id"][table["compound_id"].duplicated()].astype(str)))
    if repeated:
        raise ValueError(
            f"{path}: compound_id {', '.join(map(repr, repeated[:5]))} appear(s) on more than one row; "
            "each arm needs its own id"
        )
    pcs = sorted([c for c in table.columns if c.startswith("pc") and c[2:].isdigit()], key=lambda c: int(c[2:]))
    xs = sorted([c for c in table.columns if c.startswith("x") and c[1:].isdigit()], key=lambda c: int(c[1:]))
    if pcs:
        X = np.hstack([table[pcs].to_numpy(float), np.ones((len(table), 1))])
    elif xs:  # the ground-truth arms table: intercept already last
        X = table[xs].to_numpy(float)
    else:
        raise ValueError(f"{path}: no feature columns (pc1.. or x0..); columns are {list(table.columns)}")
    candidates = (
        [Path(library_path)]
        if library_path
        else [path.parent.parent / "library.parquet", path.parent / "library.parquet"]
    )
    lib_file = next((c for c in candidates if c.is_file()), None)
    if lib_file is None:
        raise FileNotFoundError(
            f"{path}: the SMILES of a featurized library come from the workflow's library.parquet; "
            f"looked at {', '.join(map(str, candidates))}; give it with --library-file"
        )
    lib = pd.read_parquet(lib_file)[["compound_id", "smiles"]].set_index("compound_id")
    missing = [c for c in table["compound_id"] if c not in lib.index]
    if missing:
        raise ValueError(f"{path}: {len(missing)} compound(s) are not in {lib_file}, e.g. {missing[0]!r}")
    compounds = pd.DataFrame(
        {
            "compound_id": table["compound_id"].astype(str).to_numpy(),
            "smiles": lib.loc[table["compound_id"], "smiles"].to_numpy(),
        }
    )
    compounds["input_smiles"] = compounds["smiles"]
    compounds["source_row"] = np.arange(1, len(compounds) + 1)
    settings = {
        "method": "workflow features",
        "features_file": str(path.resolve()),
        "library_file": str(lib_file.resolve()),
        "d": int(X.shape[1] - 1),
        "intercept": True,
    }
    info_file = path.with_suffix(".json")
    if info_file.is_file():
        import json

        settings["workflow_pca"] = json.loads(info_file.read_text())
    rejected = pd.DataFrame(columns=["source_row", "compound_id", "smiles", "reason", "detail"])
    return compounds, X, rejected, settings


def import_library(
    path: str | Path,
    *,
    kind: str = "auto",
    id_column: str | None = None,
    smiles_column: str | None = None,
    radius: int = DEFAULT_RADIUS,
    n_bits: int = DEFAULT_N_BITS,
    d: int = DEFAULT_D,
    library_file: str | None = None,
    stage: Callable[[str], None] | None = None,
    n_jobs: int | None = None,
) -> Library:
    """Read, standardize and featurize a library of structures (no activities needed); ``stage`` is told what
    starts (``init`` says it on stderr: these steps take a minute on a few thousand structures); ``n_jobs``
    worker processes standardize and fingerprint it (-1 or None: one per core; the library is the same whatever
    their number)."""
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(
            f"library file {path} is a folder; give the library file itself (CSV/TSV/SDF, a ChEMBL export, or the "
            "workflow's features/pca_d{d}.parquet)"
        )
    if not path.is_file():
        raise FileNotFoundError(f"library file {path} does not exist")
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}; got {kind!r}")
    kind = _detect_kind(path) if kind == "auto" else kind
    provenance: dict[str, Any] = {
        "path": str(path.resolve()),
        "kind": kind,
        "sha256": file_sha256(path),
        "bytes": path.stat().st_size,
    }
    if kind == "featurized":
        compounds, X, rejected, settings = _featurized(path, library_file)
        provenance["rows"] = len(compounds)
        arrays: dict[str, np.ndarray] = {}
    else:
        if stage is not None:
            stage(f"reading {path.name}")
        frame, counts = _read_rows(path, kind, id_column, smiles_column)
        provenance.update(counts)
        provenance["id_column"], provenance["smiles_column"] = id_column, smiles_column
        return build_library(frame, provenance, radius=radius, n_bits=n_bits, d=d, stage=stage, n_jobs=n_jobs)
    return _finish(compounds, X, rejected, settings, provenance, arrays)


def build_library(
    frame,
    provenance: dict,
    *,
    radius: int = DEFAULT_RADIUS,
    n_bits: int = DEFAULT_N_BITS,
    d: int = DEFAULT_D,
    stage: Callable[[str], None] | None = None,
    n_jobs: int | None = None,
) -> Library:
    """Standardize and featurize rows (source_row, compound_id, input_smiles) into a Library on ``n_jobs`` worker
    processes (-1 or None: one per core; the same Library whatever their number); ``stage`` is told what starts.
    Above one chunk of structures a progress bar on stderr follows the standardization."""
    from screenbai.chem.standardize import CHUNK_SIZE
    from screenbai.workers import worker_count

    n_jobs = worker_count(n_jobs, "jobs")
    where = provenance.get("path", "library")
    if stage is not None:
        stage(f"standardizing {len(frame):,} structures (RDKit)")
    compounds, rejected = curate_structures(frame, n_jobs=n_jobs, progress=len(frame) > CHUNK_SIZE)
    if len(compounds) < 2:
        first = "; ".join(f"row {r.source_row}: {r.reason}" + (f" ({r.detail})" if r.detail else "")
                          for r in rejected.head(3).itertuples(index=False))
        raise ValueError(
            f"{where}: only {len(compounds)} usable structure(s) out of {len(frame)} rows; a campaign needs at "
            f"least 2 (rejected: {rejected['reason'].value_counts().to_dict()}; the first: {first})"
        )
    if int(n_bits) < 1 or int(radius) < 0:
        raise ValueError(f"fingerprints need --bits >= 1 and --radius >= 0; got bits = {n_bits}, radius = {radius}")
    d_max = min(len(compounds) - 1, int(n_bits))  # n points centred on their mean span at most n - 1 directions
    if not 1 <= int(d) <= d_max:
        raise ValueError(f"d = {d} principal components (--d): choose 1 <= d <= {d_max} for {len(compounds)} compounds")
    if stage is not None:
        stage(f"fingerprints of {len(compounds):,} compounds and {d} principal components")
    X, settings, arrays = featurize_structures(compounds["smiles"], radius=radius, n_bits=n_bits, d=d, n_jobs=n_jobs)
    _refuse_empty_components(settings, len(compounds))
    return _finish(compounds, X, rejected, settings, provenance, arrays)


def _refuse_empty_components(settings: dict, n_compounds: int) -> None:
    """Refuse principal components along which the fingerprints do not vary: their scores are rounding noise
    (1e-15) and their direction arbitrary, so a compound added later would get an arbitrary value on them."""
    ratios = settings.get("explained_variance_ratio") or []
    spanned = sum(r > EMPTY_COMPONENT for r in ratios)
    if spanned < len(ratios):
        raise ValueError(
            f"d = {len(ratios)} principal components, and the fingerprints of these {n_compounds} compounds vary "
            f"along only {spanned} (compounds with the same fingerprint, such as stereoisomers, count once): the "
            f"other {len(ratios) - spanned} would be rounding noise; choose --d {spanned} or fewer"
        )


def _finish(compounds, X, rejected, settings, provenance, arrays) -> Library:
    provenance["n_compounds"] = len(compounds)
    provenance["rejected"] = {str(k): int(v) for k, v in rejected["reason"].value_counts().sort_index().items()}
    logger.info("library %s: %d compounds, %d rows rejected", provenance.get("path"), len(compounds), len(rejected))
    return Library(
        compounds.reset_index(drop=True), np.ascontiguousarray(X, dtype=float), rejected, settings, provenance, arrays
    )


def features_meaning(featurizer: dict) -> str:
    """What a library's feature columns are, in words (``init`` prints it beside their number)."""
    method, d = featurizer.get("method", "?"), featurizer.get("d")
    if method == "morgan+pca" and d is not None:
        what = f"{method}: {d} principal components of the Morgan fingerprints"
    else:
        what = f"{method}: {d} columns" if d is not None else str(method)
    return what + (" and a constant" if featurizer.get("intercept") else "")


def library_from_args(args, stage: Callable[[str], None] | None = None) -> Library:
    """``import_library`` with the library options that ``init`` and ``backtest`` share. A CSV/TSV whose id or
    SMILES column is not given gets the options that name them in its error (the table's reader names the
    columns, not the command's options)."""
    from screenbai.chem.tables import ColumnsNotNamed
    from screenbai.workers import worker_count

    n_jobs = worker_count(getattr(args, "jobs", None), "--jobs")  # before minutes of reading
    try:
        return import_library(
            args.library,
            kind=args.kind,
            id_column=args.id_column,
            smiles_column=args.smiles_column,
            radius=args.radius,
            n_bits=args.bits,
            d=args.d,
            library_file=args.library_file,
            stage=stage,
            n_jobs=n_jobs,
        )
    except ColumnsNotNamed as exc:
        raise ValueError(
            f"{exc}: give them with --id-column COLUMN --smiles-column COLUMN (a table with SMILES alone needs a "
            "column of compound ids added: the ids name the compounds on the plate files and in the results)"
        ) from None

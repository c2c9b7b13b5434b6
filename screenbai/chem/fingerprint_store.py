"""Featurizing a library of any size: fingerprints in chunks on all cores, PCA chunk by chunk.

:func:`build_fingerprint_store` writes Morgan fingerprints, chunk by chunk, into a directory
(a *store*): one ``.npy`` of packed bits per chunk (memory-mappable), one small JSON per chunk
(its size, a hash of its SMILES, the SMILES RDKit could not read and why) and a
``manifest.json``. Chunks are computed by a pool of worker processes; a chunk's files appear
only once it is complete, so an interrupted run picks up where it stopped, and a chunk whose
SMILES changed since is refused rather than silently reused.

:func:`store_pca` fits the PCA of :func:`screenbai.chem.featurize.reduce_pca` on a seeded sample
of the store's rows (on all of them when the library is small: then the result is exactly the
in-memory one) and projects the store chunk by chunk. Memory stays bounded by a few chunks and
the sample, apart from the returned ``(n, d)`` features.

:func:`featurize_library` does both. Invalid SMILES are not fatal here (unlike
:func:`~screenbai.chem.featurize.morgan_fingerprints`): they are left out of the features and
reported, each with its row and reason.
"""

from __future__ import annotations

import hashlib
import json
import logging
import multiprocessing
import os
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from screenbai.chem.featurize import reduce_pca, smiles_problem
from screenbai.textfiles import write_whole, written_whole_bytes
from screenbai.workers import worker_count

logger = logging.getLogger("screenbai.chem")

__all__ = ["FingerprintStore", "build_fingerprint_store", "featurize_library", "store_pca"]

FORMAT = "screenbai-fingerprint-store/1"
MANIFEST = "manifest.json"


# --------------------------------------------------------------------------- the store on disk
class FingerprintStore:
    """Read access to a directory written by :func:`build_fingerprint_store`.

    Attributes
    ----------
    path : Path
    radius, n_bits, chunk_size : int
    n_molecules : int
        Rows of the source library (valid or not), in source order.
    n_chunks : int
    """

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        manifest_file = self.path / MANIFEST
        if not manifest_file.is_file():
            raise FileNotFoundError(f"{manifest_file} not found: build the store with build_fingerprint_store first")
        self.manifest = json.loads(manifest_file.read_text())
        if not self.manifest.get("complete"):
            raise ValueError(
                f"fingerprint store {self.path} is incomplete (an interrupted run?): rerun "
                "build_fingerprint_store with the same source and directory to finish it"
            )
        self.radius = int(self.manifest["radius"])
        self.n_bits = int(self.manifest["n_bits"])
        self.chunk_size = int(self.manifest["chunk_size"])
        self.n_molecules = int(self.manifest["n_molecules"])
        self.n_chunks = int(self.manifest["n_chunks"])
        self._meta = [json.loads(_meta_path(self.path, i).read_text()) for i in range(self.n_chunks)]
        self._offsets = np.concatenate([[0], np.cumsum([m["n"] for m in self._meta])]).astype(np.int64)

    def __len__(self) -> int:
        return self.n_molecules

    def packed_chunk(self, i: int) -> np.ndarray:
        """Chunk ``i`` as stored: ``(n_i, ceil(n_bits / 8))`` uint8, memory-mapped."""
        return np.load(_bits_path(self.path, i), mmap_mode="r")

    def chunk(self, i: int) -> np.ndarray:
        """Chunk ``i`` as 0/1 ``uint8`` bits, ``(n_i, n_bits)`` (rows of invalid SMILES are zero)."""
        return np.unpackbits(self.packed_chunk(i), axis=1, count=self.n_bits)

    def chunk_valid(self, i: int) -> np.ndarray:
        """Boolean mask of the rows of chunk ``i`` whose SMILES RDKit could read."""
        valid = np.ones(self._meta[i]["n"], dtype=bool)
        bad = [row - int(self._offsets[i]) for row, _, _ in self._meta[i]["invalid"]]
        valid[bad] = False
        return valid

    def valid_mask(self) -> np.ndarray:
        """Boolean mask over all ``n_molecules`` rows."""
        return (
            np.concatenate([self.chunk_valid(i) for i in range(self.n_chunks)]) if self.n_chunks else np.ones(0, bool)
        )

    def invalid(self) -> pd.DataFrame:
        """Every SMILES that could not be read: ``row`` (0-based, in the source), ``smiles``, ``reason``."""
        rows = [entry for m in self._meta for entry in m["invalid"]]
        return pd.DataFrame(rows, columns=["row", "smiles", "reason"]).astype({"row": np.int64})

    def invalid_by_reason(self) -> dict[str, int]:
        return dict(Counter(reason for m in self._meta for _, _, reason in m["invalid"]))

    def rows(self, index: np.ndarray) -> np.ndarray:
        """Fingerprint bits of the given source rows (sorted or not), ``(len(index), n_bits)`` uint8."""
        index = np.asarray(index, dtype=np.int64)
        out = np.empty((len(index), self.n_bits), dtype=np.uint8)
        which = np.searchsorted(self._offsets, index, side="right") - 1
        for i in np.unique(which):
            sel = np.flatnonzero(which == i)
            packed = self.packed_chunk(int(i))[index[sel] - self._offsets[i]]
            out[sel] = np.unpackbits(packed, axis=1, count=self.n_bits)
        return out

    def to_array(self) -> np.ndarray:
        """All fingerprints in memory, ``(n_molecules, n_bits)`` uint8 (small libraries only)."""
        if self.n_chunks == 0:
            return np.zeros((0, self.n_bits), dtype=np.uint8)
        return np.concatenate([self.chunk(i) for i in range(self.n_chunks)])


def _bits_path(directory: Path, i: int) -> Path:
    return directory / f"chunk{i:06d}.npy"


def _meta_path(directory: Path, i: int) -> Path:
    return directory / f"chunk{i:06d}.json"


def _digest(smiles: Sequence[Any]) -> str:
    return hashlib.sha256("\n".join("" if s is None else str(s) for s in smiles).encode()).hexdigest()


# --------------------------------------------------------------------------- reading the source
def _smiles_column(columns: Sequence[str], requested: str | None, source: Path) -> str:
    if requested is not None:
        if requested not in columns:
            raise ValueError(f"{source}: no column {requested!r} (columns: {list(columns)}); pass smiles_column=")
        return requested
    found = [c for c in columns if str(c).lower() in ("smiles", "canonical_smiles")]
    if not found:
        raise ValueError(f"{source}: no SMILES column among {list(columns)}; name it with smiles_column=")
    return found[0]


def _source_chunks(source: Any, chunk_size: int, smiles_column: str | None) -> tuple[Iterator[list[Any]], int | None]:
    """An iterator over lists of SMILES (``chunk_size`` each, the last shorter) and the row count if known."""
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if not path.is_file():
            raise FileNotFoundError(f"library file {path} not found")
        name = path.name.lower()
        if name.endswith(".parquet"):
            import pyarrow.parquet as pq

            pf = pq.ParquetFile(path)
            column = _smiles_column(pf.schema_arrow.names, smiles_column, path)
            batches = (b.column(0).to_pylist() for b in pf.iter_batches(batch_size=chunk_size, columns=[column]))
            return batches, pf.metadata.num_rows
        if name.endswith((".csv", ".csv.gz", ".tsv", ".tsv.gz", ".txt", ".txt.gz")):
            sep = "\t" if ".tsv" in name else ","
            header = pd.read_csv(path, sep=sep, nrows=0).columns
            column = _smiles_column(list(header), smiles_column, path)
            # empty cells stay "" (reported as empty), no "NA" -> NaN guessing
            reader = pd.read_csv(path, sep=sep, usecols=[column], dtype=str, keep_default_na=False,
                                 na_filter=False, chunksize=chunk_size)
            return (frame[column].tolist() for frame in reader), None
        raise ValueError(f"{path}: unknown library format; use .csv, .tsv (optionally .gz) or .parquet")
    smiles = list(source)
    return (smiles[i:i + chunk_size] for i in range(0, len(smiles), chunk_size)), len(smiles)


# --------------------------------------------------------------------------- the workers
_GENERATORS: dict[tuple[int, int], Any] = {}


def _fingerprint_chunk(task: tuple[str, int, int, list[Any], int, int]) -> tuple[int, int, int]:
    """Fingerprint one chunk and write its two files (bits first, then the JSON that marks it done)."""
    from rdkit import Chem
    from rdkit.Chem import rdFingerprintGenerator
    from rdkit.rdBase import BlockLogs

    directory, i, first_row, smiles, radius, n_bits = task
    key = (radius, n_bits)
    if key not in _GENERATORS:
        _GENERATORS[key] = rdFingerprintGenerator.GetMorganGenerator(radius=radius, fpSize=n_bits)
    generator = _GENERATORS[key]
    bits = np.zeros((len(smiles), n_bits), dtype=np.uint8)
    invalid = []
    with BlockLogs():
        for j, s in enumerate(smiles):
            mol = Chem.MolFromSmiles(s) if isinstance(s, str) and s.strip() else None
            if mol is None:
                invalid.append([first_row + j, s if isinstance(s, str) else None, smiles_problem(s) or "rdkit error"])
                continue
            bits[j] = generator.GetFingerprintAsNumPy(mol)
    path = Path(directory)
    with written_whole_bytes(_bits_path(path, i)) as fh:
        np.save(fh, np.packbits(bits, axis=1))
    meta = {"n": len(smiles), "first_row": first_row, "sha256": _digest(smiles), "invalid": invalid}
    write_whole(_meta_path(path, i), json.dumps(meta))
    return i, len(smiles), len(invalid)


def _chunk_done(directory: Path, i: int, smiles: Sequence[Any]) -> bool:
    meta_file = _meta_path(directory, i)
    if not (meta_file.is_file() and _bits_path(directory, i).is_file()):
        return False
    meta = json.loads(meta_file.read_text())
    if meta["n"] != len(smiles) or meta["sha256"] != _digest(smiles):
        raise ValueError(
            f"fingerprint store {directory}: chunk {i} was computed from other SMILES than rows "
            f"{meta['first_row']}..{meta['first_row'] + meta['n'] - 1} of this library; use a fresh directory "
            "(or delete this one) for a different library"
        )
    return True


# --------------------------------------------------------------------------- building
def build_fingerprint_store(
    source: str | os.PathLike[str] | Sequence[str],
    directory: str | os.PathLike[str],
    *,
    radius: int = 4,
    n_bits: int = 1024,
    chunk_size: int = 10_000,
    n_jobs: int | None = None,
    smiles_column: str | None = None,
    progress: bool = True,
) -> FingerprintStore:
    """Morgan fingerprints of a library, in chunks on ``n_jobs`` processes, into ``directory``.

    Parameters
    ----------
    source : path or sequence of str
        A ``.csv``/``.tsv`` (optionally gzipped) or ``.parquet`` file with a SMILES column (read in
        chunks, never whole), or the SMILES themselves.
    directory : path
        The store; created if missing. If it holds the chunks of an interrupted run on the same
        source and parameters, only the missing chunks are computed.
    radius, n_bits : int
        As :func:`screenbai.chem.featurize.morgan_fingerprints` (same bits).
    chunk_size : int
        Molecules per chunk (per file and per task); memory grows with it, not with the library.
    n_jobs : int, optional
        Worker processes (default: all cores). Results do not depend on it.
    smiles_column : str, optional
        Column of a file source (default: the one named ``smiles``, any case).
    progress : bool
        Show a progress bar (tqdm) over molecules.

    Returns
    -------
    FingerprintStore

    Raises
    ------
    ValueError
        Bad parameters; a store built with other parameters or from another library in
        ``directory`` (the message says which chunk and what to do).
    """
    from tqdm.auto import tqdm

    radius, n_bits, chunk_size = int(radius), int(n_bits), int(chunk_size)
    if radius < 0 or n_bits < 1 or chunk_size < 1:
        raise ValueError(f"radius={radius}, n_bits={n_bits}, chunk_size={chunk_size}: need >= 0, >= 1, >= 1")
    n_jobs = worker_count(n_jobs)
    from rdkit import __version__ as rdkit_version

    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)
    params = {"format": FORMAT, "radius": radius, "n_bits": n_bits, "chunk_size": chunk_size,
              "fingerprint": "RDKit Morgan (rdFingerprintGenerator), packed bits (numpy.packbits, axis=1)",
              "rdkit": rdkit_version}
    manifest_file = path / MANIFEST
    if manifest_file.is_file():
        old = json.loads(manifest_file.read_text())
        differ = {k: (old.get(k), v) for k, v in params.items() if k != "rdkit" and old.get(k) != v}
        if differ:
            raise ValueError(
                f"fingerprint store {path} was built with other parameters "
                f"({', '.join(f'{k}: {a!r} there, {b!r} asked' for k, (a, b) in differ.items())}); "
                "use another directory or delete it"
            )
    write_whole(manifest_file, json.dumps({**params, "complete": False}, indent=2))

    chunks, total = _source_chunks(source, chunk_size, smiles_column)
    bar = tqdm(total=total, unit="mol", desc="fingerprints", disable=not progress, smoothing=0.05)
    n_molecules = n_chunks = reused = 0
    pool = multiprocessing.get_context("fork").Pool(n_jobs) if n_jobs > 1 else None
    pending: list[Any] = []

    def collect(block: bool) -> None:
        while pending and (block or pending[0].ready()):
            _, n, _ = pending.pop(0).get()
            bar.update(n)

    try:
        for i, smiles in enumerate(chunks):
            task = (str(path), i, n_molecules, smiles, radius, n_bits)
            n_molecules += len(smiles)
            n_chunks += 1
            if _chunk_done(path, i, smiles):
                reused += 1
                bar.update(len(smiles))
                continue
            if pool is None:
                _fingerprint_chunk(task)
                bar.update(len(smiles))
                continue
            pending.append(pool.apply_async(_fingerprint_chunk, (task,)))
            collect(block=False)
            # bounded queue: memory holds a few chunks, never the whole library
            while len(pending) >= 2 * n_jobs:
                pending[0].wait()
                collect(block=False)
        collect(block=True)
    finally:
        if pool is not None:
            pool.terminate()
            pool.join()
        bar.close()
    stale = _meta_path(path, n_chunks)
    if stale.is_file():
        raise ValueError(f"fingerprint store {path} has more chunks than this library ({stale.name}): "
                         "it belongs to another library; use a fresh directory")
    store_meta = [json.loads(_meta_path(path, i).read_text()) for i in range(n_chunks)]
    by_reason = Counter(reason for m in store_meta for _, _, reason in m["invalid"])
    manifest = {**params, "complete": True, "n_molecules": n_molecules, "n_chunks": n_chunks,
                "n_invalid": sum(by_reason.values()), "invalid_by_reason": dict(by_reason)}
    write_whole(manifest_file, json.dumps(manifest, indent=2))
    if reused:
        logger.info("fingerprint store %s: %d of %d chunks reused from an earlier run", path, reused, n_chunks)
    if by_reason:
        logger.warning("%d of %d SMILES could not be read and are left out: %s", manifest["n_invalid"],
                       n_molecules, dict(by_reason))
    return FingerprintStore(path)


# --------------------------------------------------------------------------- PCA chunk by chunk
def store_pca(
    store: FingerprintStore,
    d: int,
    *,
    sample_size: int = 50_000,
    random_state: int = 0,
    progress: bool = True,
) -> tuple[np.ndarray, dict[str, Any]]:
    """PCA scores of the store's valid molecules, fitted on a seeded sample, projected chunk by chunk.

    With at most ``sample_size`` valid molecules the fit uses all of them and the scores are
    exactly those of :func:`screenbai.chem.featurize.reduce_pca` on the in-memory fingerprints.
    Above that, the components come from ``sample_size`` rows drawn without replacement with
    ``numpy.random.default_rng(random_state)`` (the same rows for the same store and seed).

    Returns
    -------
    features : numpy.ndarray
        ``(n_valid, d)`` float64, in source order (invalid SMILES left out).
    info : dict
        That of :func:`reduce_pca` (variance explained, ``components``, ``mean``), plus
        ``row`` (the source row of each feature row), ``sample_size`` (rows the PCA was fitted
        on), ``n_invalid`` and ``invalid_by_reason``.
    """
    from threadpoolctl import threadpool_limits
    from tqdm.auto import tqdm

    if int(sample_size) < 1:
        raise ValueError(f"sample_size={sample_size} must be >= 1")
    valid = store.valid_mask()
    rows = np.flatnonzero(valid)
    n_valid = len(rows)
    if n_valid <= sample_size:
        features, info = reduce_pca(store.rows(rows), d, random_state=random_state)
    else:
        rng = np.random.default_rng(random_state)
        sample = np.sort(rng.choice(rows, size=int(sample_size), replace=False))
        _, info = reduce_pca(store.rows(sample), d, random_state=random_state)
        components_t = np.ascontiguousarray(info["components"].T)
        shift = info["mean"] @ components_t
        features = np.empty((n_valid, int(d)), dtype=np.float64)
        done = 0
        with threadpool_limits(limits=1, user_api="blas"), \
                tqdm(total=n_valid, unit="mol", desc=f"PCA d={d}", disable=not progress) as bar:
            for i in range(store.n_chunks):
                bits = store.chunk(i)[store.chunk_valid(i)]
                # (x - mean) @ C.T without a centered float copy of the chunk
                features[done:done + len(bits)] = bits.astype(np.float64) @ components_t - shift
                done += len(bits)
                bar.update(len(bits))
    info.update(row=rows, sample_size=min(n_valid, int(sample_size)), n_invalid=store.n_molecules - n_valid,
                invalid_by_reason=store.invalid_by_reason())
    return features, info


def featurize_library(
    source: str | os.PathLike[str] | Sequence[str],
    directory: str | os.PathLike[str],
    d: int,
    *,
    radius: int = 4,
    n_bits: int = 1024,
    chunk_size: int = 10_000,
    n_jobs: int | None = None,
    sample_size: int = 50_000,
    random_state: int = 0,
    smiles_column: str | None = None,
    progress: bool = True,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Library -> ``(n_valid, d)`` PCA features, through a resumable fingerprint store in ``directory``.

    :func:`build_fingerprint_store` then :func:`store_pca` (see both for the parameters).
    ``info["row"]`` maps feature rows to source rows; ``info["invalid"]`` lists every SMILES left
    out, with its row and reason.
    """
    store = build_fingerprint_store(source, directory, radius=radius, n_bits=n_bits, chunk_size=chunk_size,
                                    n_jobs=n_jobs, smiles_column=smiles_column, progress=progress)
    features, info = store_pca(store, d, sample_size=sample_size, random_state=random_state, progress=progress)
    info["invalid"] = store.invalid()
    return features, info

"""Featurize a whole screening library (default: the 1.58 M MOSES molecules) and measure it.

Usage::

    python benchmarks/bench_featurize_scale.py [--library PATH] [--store DIR] [--d 20] [--n-jobs 2]

Prints wall time per stage and the peak resident memory of the whole process tree (this process
plus its workers, sampled every 0.1 s from /proc; pages the forked workers share with the parent
are counted twice, so the figure errs high). Linux only. The store goes to a fresh temporary
directory unless ``--store`` is given (then a second run resumes / reuses it).
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from screenbai.chem.fingerprint_store import build_fingerprint_store, store_pca  # noqa: E402 (after the sys.path line)

SHARED = Path(os.environ.get("SCREENBAI_SHARED_DATA", REPO.parent / "shared" / "data"))
MOSES = SHARED / "moses" / "moses_train_smiles.csv.gz"


def _tree_rss(pid: int) -> int:
    """Resident bytes of ``pid`` and all its descendants."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/statm") as fh:
                total += int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as fh:
                    todo.extend(int(c) for c in fh.read().split())
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total


class PeakMemory:
    """Samples the process tree's RSS in a background thread."""

    def __init__(self, interval: float = 0.1):
        self.interval, self.peak, self._stop = interval, 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, _tree_rss(os.getpid()))
            self._stop.wait(self.interval)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _tree_rss(os.getpid()))


def _cpu_seconds() -> float:
    """User + system CPU of this process and its finished children (the pool's workers)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--library", default=str(MOSES), help="SMILES file (.csv[.gz], .tsv[.gz], .parquet)")
    ap.add_argument("--store", default=None, help="store directory (default: a fresh temporary one)")
    ap.add_argument("--d", type=int, default=20, help="PCA components")
    ap.add_argument("--n-jobs", type=int, default=os.cpu_count(), help="worker processes")
    ap.add_argument("--chunk-size", type=int, default=10_000, help="molecules per chunk")
    ap.add_argument("--sample-size", type=int, default=50_000, help="rows the PCA is fitted on")
    args = ap.parse_args()
    if not Path(args.library).is_file():
        print(f"library not found: {args.library} (set SCREENBAI_SHARED_DATA)", file=sys.stderr)
        return 1
    tmp = None if args.store else tempfile.TemporaryDirectory(prefix="screenbai_store_")
    store_dir = args.store or tmp.name  # type: ignore[union-attr]
    load0 = os.getloadavg()[0]
    cpu0 = _cpu_seconds()
    with PeakMemory() as mem:
        t0 = time.perf_counter()
        store = build_fingerprint_store(args.library, store_dir, n_jobs=args.n_jobs, chunk_size=args.chunk_size)
        t1 = time.perf_counter()
        features, info = store_pca(store, args.d, sample_size=args.sample_size)
        t2 = time.perf_counter()
    cpu = _cpu_seconds() - cpu0
    disk = sum(f.stat().st_size for f in Path(store_dir).iterdir())
    print(f"screenbai featurize-at-scale benchmark: Python {platform.python_version()}, {os.cpu_count()} CPUs, "
          f"{args.n_jobs} workers, load average {load0:.1f} at start, {os.getloadavg()[0]:.1f} at end")
    print(f"library            {args.library}")
    print(f"molecules          {store.n_molecules:,} ({info['n_invalid']:,} invalid: {info['invalid_by_reason']})")
    print(f"fingerprints       {t1 - t0:7.1f} s wall  (Morgan r={store.radius}, {store.n_bits} bits, "
          f"{store.n_chunks} chunks of {store.chunk_size:,}; store {disk / 2**20:.0f} MiB on disk)")
    print(f"PCA d={args.d:<3d}          {t2 - t1:7.1f} s wall  (fitted on {info['sample_size']:,} sampled rows, "
          f"explains {100 * info['explained_variance_ratio_total']:.1f}% of the variance)")
    print(f"total              {t2 - t0:7.1f} s wall")
    print(f"CPU time           {cpu:7.1f} s (parent + workers): {cpu / args.n_jobs:.1f} s wall on "
          f"{args.n_jobs} otherwise idle cores")
    print(f"features           {features.shape} float64 = {features.nbytes / 2**20:.0f} MiB")
    print(f"peak RSS (tree)    {mem.peak / 2**30:.2f} GiB  (sampled every 0.1 s; shared pages counted per process)")
    self_max = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    child_max = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20
    print(f"peak RSS (rusage)  parent {self_max:.2f} GiB, largest worker {child_max:.2f} GiB")
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())

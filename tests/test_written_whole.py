"""Every file a command or the workflow writes for people or programs is written whole (screenbai/textfiles.py): a
write that fails midway (a full disk, a kill, an error while rendering) leaves the file as it was, and no temporary
file behind. One test per kind of writer: text (SVG, HTML, Markdown, manifests), CSV tables, zip (the xlsx
workbook), matplotlib figures, PIL images (structures), numpy arrays."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from screenbai import textfiles
from screenbai.campaign.views import export, hits, page
from screenbai.chem.fingerprint_store import MANIFEST, build_fingerprint_store
from screenbai.report.tables import write_generated_block
from screenbai.textfiles import write_whole

OLD = "the last whole file\n"


class _Cut:
    """A file that takes a part of the first write, then fails as a full disk does."""

    def __init__(self, fh):
        self._fh = fh

    def write(self, data):
        self._fh.write(data[: max(1, len(data) // 2)])
        raise OSError(errno.ENOSPC, "No space left on device")

    def __getattr__(self, name):
        return getattr(self._fh, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return self._fh.__exit__(*exc)


@pytest.fixture
def disk_full(monkeypatch):
    """Writes through screenbai.textfiles of a file whose name contains the given text fail midway."""

    def cut(name: str) -> None:
        def fake_open(file, mode="r", *args, **kwargs):
            fh = open(file, mode, *args, **kwargs)
            return _Cut(fh) if "w" in mode and name in Path(file).name else fh

        monkeypatch.setattr(textfiles, "open", fake_open, raising=False)

    return cut


def _old(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(OLD)
    return path


def _left_as_it_was(path: Path) -> None:
    assert path.read_text() == OLD
    assert sorted(p.name for p in path.parent.iterdir() if p.name.startswith(".")) == []  # no temporary file


def _svg_tests(path):
    page.tests_figure(np.array([3.0, 5.0]), np.array([1.0, 2.0]), ["A", "B"], {1}, True, path)


def _svg_leader(path):
    page.leader_figure([(1, 10, ["A"], False), (2, 20, ["B"], True)], path)


def _svg_progress(path):
    points = [
        {"step": 1, "tests": 10, "in_contention": 5, "certified_epsilon": 0.5},
        {"step": 2, "tests": 20, "in_contention": 2, "certified_epsilon": 0.1},
    ]
    page.progress_figure(points, path)


def _wells_csv(path):
    export.write_wells_csv([{"plate_id": "P001", "well": "A01"}] * 50, path, ["plate_id", "well"])


def _xlsx(path):
    export.write_xlsx({"compounds": [["id", "tests"]] + [[f"C{i}", i] for i in range(200)]}, path)


def _generated_block(path):
    write_generated_block(path, "records", "| a | b |\n|---|---|\n| 1 | 2 |")


def _structures(path):
    page.structures_image(["CCO", "c1ccccc1"], ["a", "b"], path)


WRITERS = [
    pytest.param(_svg_tests, "tests.svg", id="svg-tests"),
    pytest.param(_svg_leader, "leader.svg", id="svg-leader"),
    pytest.param(_svg_progress, "progress.svg", id="svg-progress"),
    pytest.param(_wells_csv, "wells.csv", id="csv-wells"),
    pytest.param(_xlsx, "cdk2.xlsx", id="zip-xlsx"),
    pytest.param(_generated_block, "README.md", id="markdown-generated-block"),
    pytest.param(_structures, "structures.png", id="png-structures"),
    pytest.param(lambda p: write_whole(p, b"\x89PNG" + bytes(1000)), "raw.bin", id="bytes"),
]


@pytest.mark.parametrize(("write", "name"), WRITERS)
def test_a_write_failing_midway_leaves_the_old_file(tmp_path, disk_full, write, name):
    """Before, these wrote in place: the failure left half a file (an SVG a browser cannot draw, a workbook
    Excel calls damaged, a README cut short), or a '.tmp' workbook behind."""
    path = _old(tmp_path / "out" / name)
    disk_full(name)
    with pytest.raises(OSError, match="No space left"):
        write(path)
    _left_as_it_was(path)


def test_the_html_report_failing_midway_leaves_the_old_page(tmp_path, disk_full):
    from campaign_util import synthetic_library

    from screenbai.campaign import Campaign

    camp = Campaign.create(tmp_path / "c.campaign", synthetic_library(K=12, d=2), "lucb", {"delta": 0.05})
    try:
        out = tmp_path / "report"
        index = _old(out / "index.html")
        disk_full("index.html")
        with pytest.raises(OSError, match="No space left"):
            page.write_report(camp, out)
        _left_as_it_was(index)
        one = _old(tmp_path / "one" / "report.html")
        disk_full("report.html")
        with pytest.raises(OSError, match="No space left"):
            export.self_contained_report(camp, one)
        _left_as_it_was(one)
    finally:
        camp.close()


def test_a_figure_whose_rendering_fails_leaves_the_old_png(tmp_path, monkeypatch):
    """hit_recovery.png (and the workflow report's figures, saved the same way): matplotlib raising after its
    first bytes leaves the last whole figure."""

    class Breaks:
        def savefig(self, fh, format=None, **kwargs):
            assert format == "png"
            fh.write(b"\x89PNG\r\n\x1a\n")
            raise RuntimeError("renderer failed")

    monkeypatch.setattr(hits, "hit_figure", lambda result: Breaks())
    path = _old(tmp_path / "bt" / "hit_recovery.png")
    with pytest.raises(RuntimeError, match="renderer failed"):
        hits.curve_figure(SimpleNamespace(), path)
    _left_as_it_was(path)


def test_a_fingerprint_manifest_failing_midway_leaves_the_old_one(tmp_path, disk_full):
    """The store's manifest says whether the store is complete: a cut one made the next run fail on its JSON."""
    store = tmp_path / "store"
    smiles = ["CCO", "CCN", "c1ccccc1", "CC(=O)O"]
    build_fingerprint_store(smiles, store, chunk_size=2, n_jobs=1, progress=False)
    manifest = (store / MANIFEST).read_text()
    disk_full(MANIFEST)
    with pytest.raises(OSError, match="No space left"):
        build_fingerprint_store(smiles, store, chunk_size=2, n_jobs=1, progress=False)
    assert (store / MANIFEST).read_text() == manifest
    assert not [p.name for p in store.iterdir() if p.name.endswith(".tmp")]
    disk_full("chunk000001.npy")  # a chunk's bits (np.save): the old chunk stays, the run fails
    (store / MANIFEST).unlink()
    before = (store / "chunk000001.npy").read_bytes()
    (store / "chunk000001.json").unlink()  # the chunk is computed again
    with pytest.raises(OSError, match="No space left"):
        build_fingerprint_store(smiles, store, chunk_size=2, n_jobs=1, progress=False)
    assert (store / "chunk000001.npy").read_bytes() == before
    assert not [p.name for p in store.iterdir() if p.name.endswith(".tmp")]


def test_the_temporary_file_of_a_writer_killed_outright_is_removed_by_the_next_write(tmp_path):
    """A SIGKILL runs no cleanup: its '.NAME.PID.tmp' stays until the next write of NAME, which removes it (a
    running writer's is left alone)."""
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = tmp_path / f".t.csv.{int(gone.stdout)}.tmp"
    alive = tmp_path / f".t.csv.{os.getppid()}.tmp"
    dead.write_text("half")
    alive.write_text("being written")
    write_whole(tmp_path / "t.csv", "a,b\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([alive.name, "t.csv"])

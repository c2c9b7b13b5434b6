"""Shared pytest fixtures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def shared_chembl_dir() -> Path:
    """Directory of the staged ChEMBL files (env ``SCREENBAI_SHARED_DATA`` or ``<repo>/../shared/data/chembl``)."""
    path = Path(os.environ.get("SCREENBAI_SHARED_DATA", REPO_ROOT.parent / "shared" / "data" / "chembl"))
    if not path.is_dir():
        pytest.skip(f"shared ChEMBL data not found at {path}; set SCREENBAI_SHARED_DATA to the directory")
    return path

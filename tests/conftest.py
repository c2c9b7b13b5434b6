"""Shared pytest fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def cdk2_export() -> Path:
    """The ChEMBL web export shipped with screenbai (data/README.md): no test skips for want of data."""
    path = REPO_ROOT / "data" / "cdk2_chembl301_webexport_raw.csv.gz"
    assert path.is_file(), f"{path} is part of the repository; restore it with git checkout"
    return path


@pytest.fixture()
def camp(tmp_path):
    """A new campaign (campaign_util.new_campaign: GLGapE on synthetic compounds, c.campaign in the test's folder)
    with its first plate P001 of 8 wells proposed, closed after the test: the results files' tests start from it. A
    test module's own ``camp`` fixture takes its place there."""
    from campaign_util import new_campaign

    c = new_campaign(tmp_path / "c.campaign")
    c.next_plate(8)
    yield c
    c.close()


def pytest_collection_modifyitems(config, items):
    """The grouped tests (the workflow's toy run, several minutes on one worker) are handed out first: started
    last, they would leave the other worker idle at the end of the run. A stable sort: the rest keep their order."""
    items.sort(key=lambda item: item.get_closest_marker("xdist_group") is None)

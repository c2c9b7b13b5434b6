"""The two pinned environments agree: the pip lock (constraints.txt) and the workflow's conda
environment (workflow/envs/screenbai.yaml) pin the same release of every package they share, so a
`--sdm conda` run uses what the tests ran with."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]

# conda-forge names that differ from the PyPI names of the lock
CONDA_TO_PYPI = {"matplotlib-base": "matplotlib", "chembl_webresource_client": "chembl-webresource-client"}


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _lock() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" in line:
            name, version = line.split("==", 1)
            pins[_canonical(name)] = version.strip()
    return pins


def _conda() -> dict[str, str]:
    env = yaml.safe_load((ROOT / "workflow" / "envs" / "screenbai.yaml").read_text())
    pins = {}
    for spec in env["dependencies"]:
        name, _, version = str(spec).partition("=")
        pins[_canonical(CONDA_TO_PYPI.get(name, name))] = version
    return pins


def test_every_conda_pin_is_the_locked_release():
    lock, conda = _lock(), _conda()
    shared = sorted(set(lock) & set(conda))
    assert len(shared) >= 10, f"the comparison found too few shared packages: {shared}"
    differ = {name: (conda[name], lock[name]) for name in shared if conda[name] != lock[name]}
    assert not differ, f"workflow/envs/screenbai.yaml (conda, lock) disagree: {differ}; pin the lock's release"


def test_every_runtime_package_of_the_conda_env_is_locked():
    lock, conda = _lock(), _conda()
    missing = sorted(set(conda) - set(lock) - {"python"})
    assert not missing, f"pinned in workflow/envs/screenbai.yaml but not in constraints.txt: {missing}"

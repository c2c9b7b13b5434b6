"""The layers are a checked rule: the import-linter contracts of pyproject.toml ([tool.importlinter]), run by
`lint-imports` in .ci/run.

`lint-imports` runs on a copy of screenbai/ in a temporary folder: as it is, every contract is kept; with
one import added where the layers forbid it (an import upwards, a circle, inside a function or at the top),
the contract that forbids it breaks and names the import.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")  # installed with screenbai[test]

LAYERS = "The layers, from the command line down to the numerics"
CORE = "Inside bandits.core: runner/persistence, registry/policy, params/state/cache"
CAMPAIGN_CLI = "The campaign command line is on top: only the screenbai command imports it"
CAMPAIGN = "A campaign in layers: commands, the Campaign object, views, its file, the lab"
FAMILIES = "The policy families are independent (budget's baselines build on linear's GIFA)"
CHEM = "Chemistry knows nothing of bandits, screens or campaigns"
NO_CIRCLE = "No circle between sibling modules"


@pytest.fixture(scope="module")
def copy(tmp_path_factory) -> Path:
    """screenbai/ and pyproject.toml, copied: the tests add imports to the copy, never to the package."""
    root = tmp_path_factory.mktemp("layers")
    shutil.copytree(REPO / "screenbai", root / "screenbai", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    return root


def lint(root: Path) -> tuple[int, dict[str, str], str]:
    """Run lint-imports on the copy: (exit code, contract name -> KEPT/BROKEN, the whole output)."""
    assert LINT_IMPORTS.is_file(), f"{LINT_IMPORTS} not found: install the test extra, pip install -e '.[test]'"
    # the copy first on the path, so that grimp reads it, not the installed package
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", str(root / "pyproject.toml")],
        cwd=root, env=env, capture_output=True, text=True, timeout=120,
    )
    out = proc.stdout + proc.stderr
    verdicts = dict(re.findall(r"^(.+?) (KEPT|BROKEN)\b", out, flags=re.MULTILINE))
    return proc.returncode, verdicts, out


def test_the_package_keeps_every_contract(copy):
    code, verdicts, out = lint(copy)
    assert code == 0, out
    assert verdicts == dict.fromkeys([LAYERS, CORE, CAMPAIGN_CLI, CAMPAIGN, FAMILIES, CHEM, NO_CIRCLE], "KEPT"), out


# (file of the copy, the import added at its end, the contracts it breaks, what lint-imports names)
BAD_IMPORTS = [
    pytest.param("bandits/numerics/linalg.py", "def _late():\n    from screenbai.bandits.core import registry\n",
                 {LAYERS, NO_CIRCLE}, "screenbai.bandits.numerics.linalg -> screenbai.bandits.core.registry",
                 id="numerics->core"),
    # (through gifa, policy.py would reach registry.py, and logistic, which imports core, linear)
    pytest.param("bandits/core/policy.py", "from screenbai.bandits.linear import gifa\n",
                 {LAYERS, CORE, FAMILIES, NO_CIRCLE}, "screenbai.bandits.core.policy -> screenbai.bandits.linear.gifa",
                 id="core->policy family"),
    pytest.param("bandits/certainty/certificate.py", "def _late():\n    from screenbai.bandits.core import policy\n",
                 {LAYERS, NO_CIRCLE}, "screenbai.bandits.certainty.certificate -> screenbai.bandits.core.policy",
                 id="certainty->core"),
    pytest.param("campaign/__init__.py", "def _late():\n    from screenbai import cli\n",
                 {LAYERS, NO_CIRCLE}, "screenbai.campaign -> screenbai.cli", id="campaign->cli"),
    pytest.param("campaign/__init__.py", "def _late():\n    from screenbai.campaign import cli\n",
                 {CAMPAIGN_CLI}, "screenbai.campaign -> screenbai.campaign.cli", id="campaign->campaign cli"),
    # inside the campaign: what it shows does not drive it; the backtest and the lab's commands stand apart
    pytest.param("campaign/views/page.py", "def _late():\n    from screenbai.campaign.campaign import Campaign\n",
                 {CAMPAIGN, NO_CIRCLE}, "screenbai.campaign.views.page -> screenbai.campaign.campaign",
                 id="campaign views->Campaign"),
    pytest.param("campaign/backtest.py", "def _late():\n    from screenbai.campaign import labcli\n",
                 {CAMPAIGN}, "screenbai.campaign.backtest -> screenbai.campaign.labcli", id="backtest->labcli"),
    pytest.param("bandits/logistic/__init__.py", "from screenbai.bandits.tracking import blocks\n",
                 {FAMILIES}, "screenbai.bandits.logistic -> screenbai.bandits.tracking.blocks",
                 id="logistic->tracking"),
    pytest.param("chem/__init__.py", "def _late():\n    from screenbai.bandits.numerics import glm\n",
                 {CHEM}, "screenbai.chem -> screenbai.bandits.numerics.glm", id="chem->bandits"),
    # the circles this layout removed: params.py took DEFAULT_MAX_SAMPLES from policy.py, which imports params;
    # policy.py took name_of and get from registry.py (saving), which imports the policies
    pytest.param("bandits/core/params.py", "def _late():\n    from screenbai.bandits.core import policy\n",
                 {CORE, NO_CIRCLE}, "screenbai.bandits.core.params -> screenbai.bandits.core.policy",
                 id="circle params<->policy"),
    pytest.param("bandits/core/policy.py", "def _late():\n    from screenbai.bandits.core.registry import name_of\n",
                 {CORE}, "screenbai.bandits.core.policy -> screenbai.bandits.core.registry", id="policy->registry"),
    pytest.param("bandits/core/state.py", "def _late():\n    from screenbai.bandits.core import persistence\n",
                 {CORE, NO_CIRCLE}, "screenbai.bandits.core.state -> screenbai.bandits.core.persistence",
                 id="state->persistence"),
]


@pytest.mark.parametrize(("path", "code", "contracts", "named"), BAD_IMPORTS)
def test_an_import_against_the_layers_breaks_its_contract(copy, path, code, contracts, named):
    module = copy / "screenbai" / path
    before = module.read_text()
    module.write_text(before + "\n\n" + code)
    try:
        status, verdicts, out = lint(copy)
    finally:
        module.write_text(before)
    assert status != 0, out
    assert {name for name, verdict in verdicts.items() if verdict == "BROKEN"} == contracts, out
    assert named in out, out


#: issue 21's size rules: a module holds one idea, a folder shows one family
MAX_MODULE_LINES = 700
MAX_FOLDER_MODULES = 12


def test_no_module_too_long_and_no_folder_too_crowded():
    """No module of screenbai/ over MAX_MODULE_LINES lines, no folder of more than MAX_FOLDER_MODULES
    modules (``__init__.py`` not counted): split a module or a folder by its ideas when it grows past them."""
    long = {str(p.relative_to(REPO)): n for p in (REPO / "screenbai").rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines: {long}"
    crowded = {str(d.relative_to(REPO)): n for d in (REPO / "screenbai").rglob("*") if d.is_dir()
               if (n := sum(1 for p in d.glob("*.py") if p.name != "__init__.py")) > MAX_FOLDER_MODULES}
    assert not crowded, f"folders of more than {MAX_FOLDER_MODULES} modules: {crowded}"

"""The main job runs anywhere (issue 17, section 2): offline, with no cache, from the repository alone.

The CDK2 configs fall back to the ChEMBL export shipped in data/ (not to a folder beside the
repository), and the run says so in one console line when it starts.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from screenbai.screening import resolve_data_path

REPO = Path(__file__).resolve().parents[1]
EMBEDDED = REPO / "data" / "cdk2_chembl301_webexport_raw.csv.gz"


@pytest.mark.parametrize("config", ["config.yaml", "cdk2_potency.yaml"])
def test_cdk2_configs_fall_back_to_the_shipped_export(config, monkeypatch, tmp_path):
    monkeypatch.setenv("SCREENBAI_SHARED_DATA", str(tmp_path / "nowhere"))  # no folder beside the repository
    fallback = yaml.safe_load((REPO / "config" / config).read_text())["offline_fallback"]
    assert resolve_data_path(fallback["path"], REPO) == EMBEDDED.resolve()


def test_a_copied_cdk2_config_for_another_target_refuses_the_cdk2_fallback(monkeypatch, tmp_path):
    """The README's recipe (copy cdk2_potency.yaml, change the source) offline: it screened CDK2 for CHEMBL203
    with exit 0; the CDK2 configs themselves still fall back to their CHEMBL301 export."""
    from screenbai.chem import acquire
    from screenbai.screening import acquire_activities, check_sources

    def unreachable(*args, **kwargs):
        raise acquire.ChemblUnavailableError("ChEMBL could not be reached")

    monkeypatch.setattr(acquire, "fetch_chembl_activities", unreachable)
    config = yaml.safe_load((REPO / "config" / "cdk2_potency.yaml").read_text())
    raw, provenance = acquire_activities(config["source"], config["offline_fallback"], cache_dir=tmp_path,
                                         repo_root=REPO)
    assert provenance["used"] == "offline_fallback" and len(raw) == 7107
    config["source"]["target_chembl_id"] = "CHEMBL203"
    assert "the fallback was chosen for another target" in check_sources(config, REPO)[0]  # said when it starts
    with pytest.raises(ValueError, match=r"holds target CHEMBL301 \(7107 rows\), not the requested "
                                         r"source.target_chembl_id CHEMBL203 \(offline_fallback.stands_in_for is "
                                         r"CHEMBL2094128\)"):
        acquire_activities(config["source"], config["offline_fallback"], cache_dir=tmp_path, repo_root=REPO)


@pytest.mark.slow
def test_offline_run_uses_the_shipped_export_and_says_so_on_the_console(tmp_path, monkeypatch):
    """The main job's acquire rule (its first job) with ChEMBL unreachable and an empty cache."""
    for var in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"):
        monkeypatch.setenv(var, "http://127.0.0.1:9")  # nothing listens there: ChEMBL cannot be reached
    monkeypatch.setenv("NO_PROXY", "")
    monkeypatch.setenv("SCREENBAI_SHARED_DATA", str(tmp_path / "nowhere"))
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config["source"]["timeout"] = 2
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    target = f"results/{config['target_name']}/raw/provenance.json"
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory", str(tmp_path),
         "--configfile", str(tmp_path / "config.yaml"), "--cores", "1", target],
        capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    console = [line for line in (proc.stdout + proc.stderr).splitlines() if "OFFLINE FALLBACK" in line]
    assert len(console) == 1, console
    assert console[0].startswith("screenbai: OFFLINE FALLBACK") and str(EMBEDDED.resolve()) in console[0]
    provenance = json.loads((tmp_path / target).read_text())
    assert provenance["used"] == "offline_fallback" and provenance["n_rows"] == 7107

"""``init`` says on stderr what it is doing as each long step starts: on the CDK2 export (4 866 structures) it
ran 26 s of wall clock (40 s under load) before its first line, with nothing to tell a lab it was working."""

from __future__ import annotations

import re

from test_campaign_cli import SMILES, init, library_csv  # noqa: F401 (the fixture)


def test_init_says_each_step_on_stderr_and_keeps_stdout_for_its_results(tmp_path, library_csv, capsys):  # noqa: F811
    assert init(tmp_path / "s.campaign", library_csv, "--param", "epsilon=0.2") == 0
    out, err = capsys.readouterr()
    steps = [line for line in err.splitlines() if line.startswith("init: ")]
    # the time since init began, "at": "(16 s)" read as the step's duration
    assert [re.sub(r" \.\.\. \(at \d+ s\)$", "", s) for s in steps] == [
        "init: reading lib.csv",
        f"init: standardizing {len(SMILES) + 1} structures (RDKit)",
        f"init: fingerprints of {len(SMILES)} compounds and 3 principal components",
        "init: writing the campaign file",
        "init: forecasting the cost from a prior (draws of the prior and of runs)",
    ], err
    assert "init: " not in out and f"created {tmp_path / 's.campaign'}" in out

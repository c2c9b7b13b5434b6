"""The screenbai command: summaries that reflect the runs, and errors that say what to do."""

import numpy as np
import pandas as pd
import pytest

from screenbai.cli import main


def test_algorithms_lists_the_registered_names(capsys):
    assert main(["algorithms"]) == 0
    out = capsys.readouterr().out
    for name in ("m-lingape", "glgape", "gse-log", "xy-static"):
        assert name in out


def test_simulate_named_instance_writes_records(tmp_path, capsys):
    out_file = tmp_path / "runs.csv"
    code = main([
        "simulate", "m-lingape", "--instance", "reda_classic:K=4,m=2", "--param", "m=2",
        "--reps", "6", "--seed", "3", "--no-progress", "--out", str(out_file),
    ])
    assert code == 0
    records = pd.read_csv(out_file)
    assert len(records) == 6 and records["correct"].all()
    line = next(l for l in capsys.readouterr().out.splitlines() if "m-lingape" in l)
    numbers = []
    for token in line.split():
        try:
            numbers.append(float(token))
        except ValueError:
            pass
    # the printed summary is the one of the written records: runs, median and mean samples
    assert 6 in numbers
    assert records["samples"].median() in numbers
    assert any(abs(x - records["samples"].mean()) < 0.01 for x in numbers)


def test_simulate_features_file(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(8, 3))
    theta = np.array([1.0, -0.5, 0.25])
    table = pd.DataFrame(X, columns=["f1", "f2", "f3"]).assign(mean=X @ theta, compound=[f"c{i}" for i in range(8)])
    path = tmp_path / "arms.csv"
    table.to_csv(path, index=False)
    out_file = tmp_path / "runs.csv"
    code = main(["simulate", "gse-lin", "--features", str(path), "--feature-columns", "f*", "--param", "budget=400",
                 "--sigma", "0.1", "--reps", "4", "--no-progress", "--out", str(out_file)])
    assert code == 0
    records = pd.read_csv(out_file)
    assert (records["samples"] == 400).all()
    assert (records["recommendation"] == f"[{int(np.argmax(X @ theta))}]").mean() >= 0.75


def test_errors_name_the_problem(tmp_path, capsys):
    assert main(["simulate", "no-such-algo", "--instance", "soare:d=2", "--no-progress"]) == 2
    assert "unknown algorithm 'no-such-algo'" in capsys.readouterr().err
    assert main(["simulate", "m-lingape", "--instance", "soare:d=2", "--param", "delta=1.5", "--no-progress"]) == 2
    assert "1.5" in capsys.readouterr().err
    path = tmp_path / "arms.csv"
    pd.DataFrame({"f1": [0.0, 1.0], "f2": [1.0, 0.0]}).to_csv(path, index=False)
    assert main(["simulate", "gse-lin", "--features", str(path), "--param", "budget=10"]) == 2
    assert "column 'mean' (the arms' true means) is not in" in capsys.readouterr().err
    assert main(["simulate", "gse-lin", "--instance", "soare:d=2", "--param", "budget"]) == 2
    assert "--param 'budget': expected KEY=VALUE" in capsys.readouterr().err


def test_a_malformed_param_is_a_usage_error_naming_it(tmp_path, capsys):
    """`--param m2` exited with 1 (a SystemExit with a message) where every other usage error exits with 2; a
    malformed or repeated --param is now one, naming the value typed and the form expected, in every command that
    takes --param; a bad value of a well-formed one (m=abc) was already, named by the algorithm."""
    bad = {"m2": "--param 'm2': expected KEY=VALUE", "=3": "--param '=3': expected KEY=VALUE",
           "m=abc": "m='abc' is not allowed; m (number of best arms to identify (m < K)) must be an integer >= 1"}
    commands = (["simulate", "m-lingape", "--instance", "soare:d=2", "--no-progress"],
                ["campaign", "init", str(tmp_path / "x.campaign"), "--library", str(tmp_path / "none.csv")],
                ["campaign", "backtest", "--library", str(tmp_path / "none.csv"), "--out", str(tmp_path / "bt")])
    for command in commands:
        for param, said in bad.items():
            assert main([*command, "--param", param]) == 2, (command, param)
            assert said in capsys.readouterr().err, (command, param)
        assert main([*command, "--param", "delta=0.1", "--param", "delta=0.2"]) == 2
        assert "--param delta is given twice (delta=0.1 and 'delta=0.2')" in capsys.readouterr().err
    assert main(["campaign", "restart", str(tmp_path / "no.campaign"), "--algorithm", "kl-lucb", "--param", "m2"]) == 2
    assert "--param 'm2': expected KEY=VALUE" in capsys.readouterr().err  # said before the file is looked for
    assert not (tmp_path / "x.campaign").exists() and not (tmp_path / "bt").exists()


def test_simulate_names_the_instance_s_m_beside_the_algorithm_s(capsys):
    """`simulate m-lingape --instance reda_classic:K=4,m=2` without --param m=2 ran every run to its cap, warned of
    tied arms but not of the m it was built for; the warning names both m and the flag."""
    assert main(["simulate", "m-lingape", "--instance", "reda_classic:K=4,m=2", "--param", "max_samples=200",
                 "--reps", "1", "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert ("warning: reda_classic(K=4,m=2,omega=0.5236): the instance is built for the best 2 arms (m=2), and "
            "m-lingape looks for the best arm (m=1, its default)") in err
    assert "give it the instance's m (on the command line --param m=2)" in err


def test_version_flag(capsys):
    from screenbai import __version__
    from screenbai.cli import main

    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out.strip() == f"screenbai {__version__}"


def test_python_dash_m_screenbai_is_the_command():
    """`python -m screenbai` runs the command (where the console script is not on PATH), with its exit code."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from screenbai import __version__

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    done = subprocess.run(
        [sys.executable, "-m", "screenbai", "--version"], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"screenbai {__version__}"
    bad = subprocess.run(
        [sys.executable, "-m", "screenbai", "simulate", "glgape", "--instance", "nonesuch"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert bad.returncode == 2 and "nonesuch" in bad.stderr


def test_algorithms_lists_each_declared_parameter_with_its_default(capsys):
    from screenbai.bandits.core.params import REQUIRED, declared
    from screenbai.bandits.core.registry import available
    from screenbai.cli import main

    assert main(["algorithms"]) == 0
    lines = capsys.readouterr().out.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("linucb "):
            params = lines[i + 1]
    for name, p in declared(available()["linucb"].cls).items():
        assert (name if p.default is REQUIRED else f"{name}={p.default!r}") in params
    assert "alpha=1.0" in params and "lambda_reg=1.0" in params and "alpha_ucb" not in params


def test_feature_columns_are_chosen_explicitly_and_the_rest_reported(tmp_path, capsys):
    """An id, activity or label column used to become a feature silently."""
    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, size=(6, 2))
    table = pd.DataFrame({"compound_id": np.arange(100, 106), "x0": X[:, 0], "x1": X[:, 1],
                          "activity_nM": rng.uniform(1, 1e4, 6), "cured": [1, 0, 1, 0, 0, 1], "mean": X @ [1.0, 0.5]})
    path = tmp_path / "arms.csv"
    table.to_csv(path, index=False)
    out = tmp_path / "runs.csv"
    assert main(["simulate", "gse-lin", "--features", str(path), "--param", "budget=60", "--reps", "1",
                 "--no-progress", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "features: 2 column(s)" in err and "x0, x1" in err
    assert "not used: compound_id, activity_nM, cured" in err
    pulls = pd.read_csv(out)["pulls"]
    assert len(eval(pulls[0])) == 6
    # a table without the workflow's x-columns needs --feature-columns
    table.rename(columns={"x0": "fa", "x1": "fb"}).to_csv(path, index=False)
    assert main(["simulate", "gse-lin", "--features", str(path), "--param", "budget=60", "--no-progress"]) == 2
    assert "name the feature columns with --feature-columns" in capsys.readouterr().err
    assert main(["simulate", "gse-lin", "--features", str(path), "--feature-columns", "fa,fz", "--no-progress"]) == 2
    assert "error: --feature-columns names 'fz', which is not a column" in capsys.readouterr().err
    assert main(["simulate", "gse-lin", "--features", str(path), "--feature-columns", "g*", "--no-progress"]) == 2
    assert "--feature-columns 'g*': no column of" in capsys.readouterr().err
    assert main(["simulate", "gse-lin", "--features", str(path), "--feature-columns", "fa,fb", "--param", "budget=60",
                 "--reps", "2", "--no-progress", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "features: 2 column(s)" in captured.err and "fa, fb" in captured.err
    assert "not used: compound_id, activity_nM, cured" in captured.err
    records = pd.read_csv(out)
    assert records["samples"].tolist() == [60, 60] and [sum(eval(p)) for p in records["pulls"]] == [60, 60]
    # the printed summary row is the one of the written records: runs, samples, error rate
    header, row = (l.split() for l in captured.out.splitlines()[:2])
    summary = dict(zip(header, row))
    assert (summary["algorithm"], summary["runs"], summary["median_samples"]) == ("gse-lin", "2", "60.0")
    assert float(summary["error_rate"]) == 1.0 - records["correct"].mean()


def test_bad_values_name_the_parameter_and_out_is_checked_first(tmp_path, capsys):
    assert main(["simulate", "m-lingape", "--instance", "soare:d=2", "--param", "delta=abc", "--no-progress"]) == 2
    assert "m-lingape (MLinGapE): delta='abc' is not allowed" in capsys.readouterr().err  # the name typed, first
    assert main(["simulate", "m-lingape", "--instance", "soare:d=abc", "--no-progress"]) == 2
    assert "parameter d must be a whole number (default 2); got 'abc'" in capsys.readouterr().err
    assert main(["simulate", "m-lingape", "--instance", "soare:dim=3", "--no-progress"]) == 2
    assert "no parameter 'dim'; parameters: d, omega, sigma" in capsys.readouterr().err
    # usage errors exit 2 as argparse's do (they exited 1), naming the value and what to do
    out = tmp_path / "missing" / "r.csv"
    assert main(["simulate", "lucb", "--instance", "canonical:d=3,gap=1", "--out", str(out)]) == 2
    assert f"error: --out {out}: folder {out.parent} does not exist; create it first" in capsys.readouterr().err
    assert main(["simulate", "lucb", "--instance", "canonical:d=3,gap=1", "--out", str(tmp_path / "r.xlsx")]) == 2
    err = capsys.readouterr().err
    assert f"--out {tmp_path / 'r.xlsx'}: the suffix must be .csv or .parquet; got '.xlsx'" in err
    assert "give a file name ending in .csv or .parquet" in err
    none = tmp_path / "none.csv"
    assert main(["simulate", "lucb", "--features", str(none), "--no-progress"]) == 2
    assert f"error: --features {none}: the file does not exist; check the path" in capsys.readouterr().err
    assert main(["simulate", "lucb", "--features", str(tmp_path / "X.npy"), "--means", str(tmp_path / "m.npy")]) == 2
    assert f"--features {tmp_path / 'X.npy'}: the file does not exist" in capsys.readouterr().err
    np.save(tmp_path / "X.npy", np.eye(2))
    assert main(["simulate", "lucb", "--features", str(tmp_path / "X.npy"), "--means", str(tmp_path / "m.npy")]) == 2
    assert f"--means {tmp_path / 'm.npy'}: the file does not exist" in capsys.readouterr().err
    args = ["simulate", "gse-lin", "--instance", "canonical:d=16,gap=1", "--param", "budget=20", "--no-progress"]
    assert main(args) == 2
    assert "smallest valid budget is 64" in capsys.readouterr().err


def test_summary_reports_capped_runs_and_the_noise_scale(capsys):
    assert main(["simulate", "lucb", "--instance", "canonical:d=3,gap=0", "--param", "max_samples=200",
                 "--reps", "2", "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert "2 of 2 run(s) hit the cap of 200 tests" in captured.out
    assert "warning: canonical(d=3,gap=0): arms ranked 1 and 2 have the same mean" in captured.err
    assert "noise_scale" in captured.out


@pytest.mark.parametrize(
    "params, tag, said",
    [
        (["S=2"], "error <= delta", "guarantee: guaranteed: error at most delta = 0.05 if the outcomes' means are "
         "linear in the features, the noise sub-Gaussian with scale at most sigma = 1, ||theta*|| <= S = 2"),
        (["S=0.5"], "not proven here", "NOT PROVEN ON THIS INSTANCE: S = 0.5 is below ||theta*|| = 2 on this instance"),
        (["S=2", "sigma=0.1"], "not proven here",
         "NOT PROVEN ON THIS INSTANCE: sigma = 0.1 is below the Gaussian noise's sd, 1, on this instance"),
        (["S=2", "threshold=heuristic"], "no guarantee",
         "guarantee: NO ERROR GUARANTEE: threshold='heuristic' voids it"),
        (["budget=300"], "fixed budget", "guarantee: fixed budget: no error bound at a chosen delta"),
    ],
)
def test_simulate_says_what_the_setting_guarantees_on_this_instance(tmp_path, capsys, params, tag, said):
    """The summary and the records name the setting's guarantee and its assumptions, and say when the
    simulated instance (its theta and noise known) breaks one: Soare's instance has ||theta*|| = 2 and
    noise sd 1 (the summary said nothing, and the records called such certificates guaranteed)."""
    algorithm = "gse-lin" if params == ["budget=300"] else "m-lingape" if "threshold=heuristic" in params else "lingape"
    out_file = tmp_path / "runs.csv"
    argv = ["simulate", algorithm, "--instance", "soare:d=3,omega=0.3", "--reps", "2", "--no-progress",
            "--out", str(out_file)]
    for p in params:
        argv += ["--param", p]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert said in text, text
    assert ("NOT PROVEN ON THIS INSTANCE" in text) == (tag == "not proven here")
    records = pd.read_csv(out_file)
    assert (records["guarantee"] == tag).all()
    if tag != "error <= delta":  # a certificate is guaranteed only where the setting and its assumptions hold
        assert not records["certified_guaranteed"].any()


def test_simulate_flags_a_linear_model_on_logistic_means(capsys):
    """lin-tas on a logistic instance: its error is not bounded by delta there, and the summary says why."""
    assert main(["simulate", "lin-tas", "--instance", "kw_synthetic:K=10,d=2,seed=1", "--reps", "1",
                 "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "NOT PROVEN ON THIS INSTANCE: the means are not a linear function of the features" in text


def test_the_algorithm_list_says_what_each_default_setting_guarantees_and_under_which_model(capsys):
    """`screenbai algorithms` named only the settings that void a guarantee; a fixed-budget algorithm and the
    model (sigma, S, logistic, no model) of a guaranteed one were not said where the algorithms are offered."""
    assert main(["algorithms"]) == 0
    blocks, name = {}, None
    for line in capsys.readouterr().out.splitlines():  # an algorithm's name starts its block of wrapped lines
        if not line.startswith(" "):
            name = line.split()[0]
        blocks[name] = blocks.get(name, "") + " " + " ".join(line.split())
    for name, said in [
        ("gse-log", "fixed budget: no error bound at a chosen delta"),
        ("lingape", "guaranteed: error at most delta = 0.05 if the outcomes' means are linear in the features, "
                    "the noise sub-Gaussian with scale at most sigma = 1, ||theta*|| <= S = 1"),
        ("log-tas", "guaranteed: error at most delta = 0.05 if the 0/1 outcomes follow a logistic model"),
        ("kl-lucb", "guaranteed: error at most delta = 0.05 if each arm's 0/1 outcomes are independent draws of its "
                    "own rate (no model of the features)"),
    ]:
        block = blocks[name]
        nxt = block.index("guarantee at the defaults:")
        assert block[nxt:].startswith(f"guarantee at the defaults: {said}"), (name, block[nxt:nxt + 200])

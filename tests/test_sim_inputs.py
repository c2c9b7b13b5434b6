"""Unusual and bad inputs to the simulation API (policies, replicate, save/load): each either gives
the right answer or a clear error naming the value and what to do, never a silently wrong result."""

from __future__ import annotations

import numpy as np
import pytest

from screenbai.bandits import Instance, make_policy, replicate


def _linear_instance(scale: float) -> Instance:
    rng = np.random.default_rng(0)
    X = rng.uniform(-1.0, 1.0, (10, 3))
    theta = np.array([1.0, 0.5, -0.3])
    return Instance(X * scale, X @ theta, "gaussian", 1.0, theta=theta / scale, name=f"scale{scale:g}")


# ---------------------------------------------------------------------- feature scale and the ridge penalty
@pytest.mark.parametrize(
    "name,params",
    [
        ("lingape", {}),
        ("m-lingape", {}),
        ("lingifa", {}),
        ("xy-fully-adaptive", {"S": 1.0}),
        ("linucb", {"budget": 100}),
        ("fb-lingape", {"budget": 100}),
        ("ucb-glm", {"budget": 100}),
    ],
)
def test_features_too_large_for_the_ridge_penalty_are_refused(name, params):
    # at norm ~1e8 with lambda_reg = 1 the rank-one inverse updates lose every digit: LinGapE stopped
    # after 10 tests and erred in 8 % of runs at delta = 0.05, xy-fully-adaptive in 95 %
    X = _linear_instance(1e8).features
    with pytest.raises(ValueError, match=r"lambda_reg = .*Divide the features by a common factor"):
        make_policy(name, X, **params)
    make_policy(name, X, **params, lambda_reg=1e7)  # what the message advises is accepted


def test_features_of_moderate_scale_keep_their_answers():
    # scale 1e3 (||x||^2 / lambda ~ 2e6) is accepted and still delta-correct
    rec = replicate(_linear_instance(1e3), "lingape", {}, n_reps=20, seed=0)
    assert rec["stopped"].all() and rec["correct"].all()


# ---------------------------------------------------------------------- replicate's own arguments
@pytest.mark.parametrize(
    "kwargs,name",
    [
        ({"seed": "abc"}, "seed"),
        ({"seed": 1.5}, "seed"),
        ({"seed": -1}, "seed"),
        ({"n_reps": 2.5}, "n_reps"),
        ({"start": -1}, "start"),  # gave one record for two runs, numbered as the last of the spawned streams
        ({"n_jobs": 0}, "n_jobs"),
        ({"n_jobs": -2}, "n_jobs"),
        ({"n_jobs": "two"}, "n_jobs"),
    ],
)
def test_replicate_names_a_bad_argument(kwargs, name):
    with pytest.raises(ValueError, match=rf"^{name} \(.*must be a whole number >= \d; got"):
        replicate(_linear_instance(1.0), "lingape", {}, **{"n_reps": 2, **kwargs})


def test_n_jobs_minus_one_uses_every_core_with_the_same_records():
    inst = _linear_instance(1.0)
    one = replicate(inst, "lingape", {}, n_reps=3, seed=4, n_jobs=1)
    every = replicate(inst, "lingape", {}, n_reps=3, seed=4, n_jobs=-1)
    assert one["samples"].tolist() == every["samples"].tolist()


@pytest.mark.parametrize("rng", ["abc", 1.5, -1])
def test_a_bad_rng_is_named(rng):
    with pytest.raises(ValueError, match="rng must be a numpy Generator, a seed"):
        make_policy("lingape", np.eye(3), rng=rng)


@pytest.mark.parametrize("name,params", [("glgape", {}), ("gse-log", {"budget": 100}), ("ucb-glm", {"budget": 50})])
def test_a_logistic_algorithm_on_gaussian_rewards_is_refused_before_any_run(name, params):
    # it failed in the middle of the first run, listing the Gaussian rewards it was told
    with pytest.raises(ValueError, match=rf"{name} models 0/1 outcomes .* has gaussian rewards; .*--reward bernoulli"):
        replicate(_linear_instance(1.0), name, params, n_reps=1)
    inst = _linear_instance(1.0)
    replay = Instance(inst.features, inst.means.clip(0, 1), "replay", outcomes=[np.array([0.0, 0.5])] * inst.K)
    with pytest.raises(ValueError, match="recorded outcomes other than 0 and 1"):
        replicate(replay, name, params, n_reps=1)


# ---------------------------------------------------------------------- save / load across releases
def _rewrite_document(path, edit) -> None:
    import json

    with np.load(path) as npz:
        arrays = {k: npz[k] for k in npz.files}
    doc = json.loads(str(arrays["__document__"]))
    edit(doc)
    arrays["__document__"] = np.array(json.dumps(doc))
    np.savez(path, **arrays)


def test_a_saved_policy_keeps_a_default_that_a_later_release_changed(tmp_path):
    from screenbai.bandits import load_policy, save_policy

    X = _linear_instance(1.0).features
    policy = make_policy("glgape", X, epsilon=0.2, rng=0)
    for _ in range(3):
        arms = policy.ask()
        policy.tell(arms, np.ones(arms.size))
    path = save_policy(policy, tmp_path / "p.npz")
    assert load_policy(path, X).calibration == policy.calibration  # same release: nothing to say

    # as if the file had been written when the default calibration was 'self-normalized' (it changed
    # to 'likelihood-ratio'): the policy was silently rebuilt with the new default. The state is one of
    # a self-normalized run (its stopping rule keeps other fields), the calibration a default, not named.
    old = make_policy("glgape", X, epsilon=0.2, calibration="self-normalized", rng=0)
    for _ in range(3):
        arms = old.ask()
        old.tell(arms, np.ones(arms.size))
    path = save_policy(old, tmp_path / "old.npz")

    def as_default(doc):
        doc["params"].pop("calibration")
        doc["defaults"].update(calibration="self-normalized")

    _rewrite_document(path, as_default)
    with pytest.warns(UserWarning, match=r"default calibration='likelihood-ratio' differs .* keeps 'self-normalized'"):
        restored = load_policy(path, X)
    assert restored.calibration == "self-normalized"
    assert restored.epsilon == 0.2  # named parameters as saved

    _rewrite_document(path, lambda doc: doc["defaults"].update(retired_option=3))
    with (pytest.warns(UserWarning, match="no longer has the parameter 'retired_option'"),
          pytest.warns(UserWarning, match="keeps 'self-normalized'")):  # still said
        load_policy(path, X)


# ---------------------------------------------------------------------- the command line
def test_rng_in_params_is_refused_with_the_way_to_seed():
    with pytest.raises(ValueError, match="params must not set rng.*seed"):
        replicate(_linear_instance(1.0), "lingape", {"rng": 5}, n_reps=1)


@pytest.mark.parametrize(
    "extra,flag",
    [
        (["--sigma", "0.1"], "--sigma 0.1"),  # soare kept its own sigma = 1 without a word
        (["--means-column", "activity"], "--means-column activity"),
        (["--reward", "bernoulli"], "--reward bernoulli"),
        (["--means", "mu.npy"], "--means mu.npy"),
    ],
)
def test_options_of_a_features_file_are_refused_with_a_named_instance(extra, flag, capsys):
    """A usage error: exit 2 (it was 1), naming the option and its value."""
    from screenbai.cli import main

    argv = ["simulate", "lingape", "--instance", "soare:d=2,omega=0.5", "--reps", "1", "--no-progress", *extra]
    assert main(argv) == 2
    assert f"error: {flag} describes a --features instance and would be ignored" in capsys.readouterr().err


def test_sigma_with_bernoulli_rewards_is_refused(tmp_path, capsys):
    import pandas as pd

    from screenbai.cli import main

    path = tmp_path / "arms.csv"
    pd.DataFrame({"x0": [0.1, 0.5, 0.9], "x1": [1.0, 1.0, 1.0], "mean": [0.2, 0.5, 0.8]}).to_csv(path, index=False)
    assert main(["simulate", "lingape", "--features", str(path), "--reward", "bernoulli", "--sigma", "0.1",
                 "--reps", "1"]) == 2
    assert "--sigma sets Gaussian noise" in capsys.readouterr().err


def test_a_warning_is_printed_before_the_runs(monkeypatch, capsys):
    # tied best arms: the warning that every run goes to its cap came only after all runs had ended
    from screenbai.bandits.core import runner
    from screenbai.cli import main

    def no_run(*args, **kwargs):
        raise RuntimeError("the runs started")

    monkeypatch.setattr(runner, "run_one", no_run)
    with pytest.raises(RuntimeError, match="the runs started"):
        main(["simulate", "lucb", "--instance", "canonical:d=3,gap=0", "--reps", "1", "--no-progress"])
    assert "warning: canonical(d=3,gap=0): arms ranked 1 and 2 have the same mean" in capsys.readouterr().err


# ---------------------------------------------------------------------- named instances
@pytest.mark.parametrize(
    "spec,message",
    [
        ("kw_synthetic:K=5,d=-2", "d must be a whole number >= 1; got -2"),  # was numpy's "negative dimensions"
        ("kw_synthetic:seed=-1", "seed must be a whole number >= 0; got -1"),  # was "expected non-negative integer"
        ("akg_adaptive:K=4,noise_var=-1", "noise_var must be a finite number > 0; got -1"),  # was "sigma ... nan"
        ("akg_adaptive:K=2", "needs K >= 3"),
        ("canonical:d=1", "needs d >= 2"),
        ("soare:d=2,omega=1e400", "omega must be a finite number; got inf"),
    ],
)
def test_named_instances_name_a_bad_argument(spec, message):
    from screenbai.bandits.sim.generators import parse_instance

    with pytest.raises(ValueError, match=message):
        parse_instance(spec)


def test_instance_builders_check_their_arguments_from_python_too():
    from screenbai.bandits.sim.generators import akg_sphere, kw_synthetic

    with pytest.raises(ValueError, match="instance 'akg_sphere': K must be a whole number >= 2; got 1"):
        akg_sphere(K=1)
    assert kw_synthetic(K=5, d=2, seed=np.int64(1)).K == 5


def test_asked_arms_told_back_as_floats_are_accepted():
    # arms read back from a table come as floats: tell() failed with numpy's IndexError
    policy = make_policy("lingape", np.eye(3), rng=0)
    arms = policy.ask()
    policy.tell(arms.astype(float), np.zeros(arms.size))
    assert policy.n_samples == arms.size and policy.n.tolist() == np.bincount(arms, minlength=3).tolist()


# ---------------------------------------------------------------------- every parameter, odd values
@pytest.mark.parametrize("name", ["lingape", "lucb", "m-lingape", "glgape"])
@pytest.mark.parametrize("key,value", [("epsilon", "x"), ("m", "x"), ("m", float("nan"))])
def test_replicate_leaves_bad_values_to_the_policy_that_names_them(name, key, value):
    # the tie check converted epsilon and m first: "could not convert string to float: 'x'"
    inst = _linear_instance(1.0) if name != "glgape" else _logistic_instance()
    with pytest.raises((ValueError, TypeError), match=rf"\b{key}\b"):
        replicate(inst, name, {key: value}, n_reps=1)


def _logistic_instance() -> Instance:
    from screenbai.bandits.sim.generators import kw_synthetic

    return kw_synthetic(K=8, d=3, seed=1)


@pytest.mark.parametrize("name", ["uniform", "gse-lin", "gse-log", "linucb", "fb-lingape"])
def test_a_budget_above_the_safety_cap_is_refused(name):
    # budget = 1e300 hung GSE (rounding an astronomical design) or overflowed ("int too large to convert")
    X = _linear_instance(1.0).features
    with pytest.raises(ValueError, match=r"budget = 10000000 exceeds max_samples = 1000000.*lower the budget or raise"):
        make_policy(name, X, budget=10**7)
    with pytest.raises(ValueError, match=r"budget=1e\+300 is not allowed"):
        make_policy(name, X, budget=1e300)
    with pytest.raises(ValueError, match="budget = 5001 exceeds max_samples = 5000"):
        make_policy(name, X, budget=5001, max_samples=5000)


@pytest.mark.parametrize(
    "name,params", [("xy-adaptive", {}), ("glgape", {}), ("lingape", {}), ("gse-lin", {"budget": 100})]
)
def test_an_astronomical_cap_is_refused_by_name(name, params):
    # max_samples = 1e300 failed deep in numpy ("Maximum allowed dimension exceeded")
    X = _linear_instance(1.0).features
    with pytest.raises(ValueError, match=r"max_samples=1e\+300 is not allowed.*\[1, 1e\+15\]"):
        make_policy(name, X, max_samples=1e300, **params)
    assert make_policy(name, X, max_samples=10**15, **params).max_samples == 10**15


def test_options_a_features_file_of_the_other_kind_would_ignore_are_refused(tmp_path, capsys):
    import pandas as pd

    from screenbai.cli import main

    table, matrix, means = tmp_path / "arms.csv", tmp_path / "X.npy", tmp_path / "mu.npy"
    pd.DataFrame({"x0": [0.1, 0.5, 0.9], "mean": [0.2, 0.5, 0.8]}).to_csv(table, index=False)
    np.save(matrix, np.eye(3))
    np.save(means, np.array([0.2, 0.5, 0.8]))
    assert main(["simulate", "lingape", "--features", str(table), "--means", str(means), "--reps", "1"]) == 2
    assert f"error: --means {means} would be ignored with a table" in capsys.readouterr().err
    assert main(["simulate", "lingape", "--features", str(matrix), "--means", str(means), "--means-column", "mu"]) == 2
    assert "error: --means-column mu would be ignored with a .npy" in capsys.readouterr().err


def test_saving_into_a_missing_folder_names_the_folder(tmp_path):
    # the error named the temporary file "s.npz.tmp.npz"
    from screenbai.bandits import save_policy

    with pytest.raises(FileNotFoundError, match=r"cannot write .*s\.npz: folder .*missing does not exist"):
        save_policy(make_policy("lingape", np.eye(3)), tmp_path / "missing" / "s.npz")


# ---------------------------------------------------------------------- instances no model of the features fits
def test_identical_features_with_different_means_are_reported():
    # e.g. two stereoisomers with one 2-D fingerprint and different measured cure rates: ran without a word
    from screenbai.bandits.core.runner import UnrealizableWarning

    X = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0], [0.5, 0.5]])
    inst = Instance(X, [0.1, 0.2, 0.9, 0.3], "gaussian", 1.0, name="stereo")
    with pytest.warns(UnrealizableWarning, match=r"1 group\(s\) .* arms 1, 2: means 0.2 to 0.9"):
        replicate(inst, "lingape", {}, n_reps=1)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", UnrealizableWarning)
        replicate(inst, "lucb", {"max_samples": 2000}, n_reps=1)  # arm by arm: nothing to report
        same = Instance(X, [0.1, 0.2, 0.2, 0.3], "gaussian", 1.0, name="same")
        replicate(same, "lingape", {"max_samples": 20000}, n_reps=1)  # identical arms, identical means


# ---------------------------------------------------------------------- screenbai's warnings fail the tests
def test_every_warning_of_screenbai_derives_from_screenbai_warning():
    """pyproject's filterwarnings turns ScreenbaiWarning into an error in the tests, whatever frame a
    warning is attributed to (a renamed parameter's warning points at the caller): so every
    warnings.warn of the package must raise a subclass of it."""
    import ast
    import builtins
    import importlib
    from pathlib import Path

    import screenbai

    root = Path(screenbai.__file__).parent
    calls = []
    for path in sorted(root.rglob("*.py")):
        module = ".".join(path.relative_to(root.parent).with_suffix("").parts).removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and ast.unparse(node.func) in ("warnings.warn", "warn"):
                category = node.args[1] if len(node.args) > 1 else next(
                    (k.value for k in node.keywords if k.arg == "category"), None)
                assert isinstance(category, ast.Name), f"{path}:{node.lineno}: warn() without a named category"
                cls = getattr(importlib.import_module(module), category.id, None) or getattr(builtins, category.id)
                assert issubclass(cls, screenbai.ScreenbaiWarning), f"{path}:{node.lineno}: {cls.__name__}"
                calls.append(cls.__name__)
    assert len(calls) >= 6  # the scan found them (params, runner, design)


def test_an_unexpected_warning_of_screenbai_fails_the_test():
    from screenbai.bandits.core.params import RenamedParameterWarning

    with pytest.raises(RenamedParameterWarning, match="'R' is now called 'sigma'"):
        make_policy("lingape", np.eye(3), R=0.5)
    with pytest.warns(DeprecationWarning, match="'R' is now called 'sigma'"):  # expected: a warning
        make_policy("lingape", np.eye(3), R=0.5)


def test_a_warning_of_another_library_stays_a_warning():
    import types
    import warnings

    other = types.ModuleType("otherlib")
    exec("import warnings\ndef old():\n    warnings.warn('old() is deprecated', DeprecationWarning)\n", vars(other))
    with warnings.catch_warnings(record=True) as seen:  # the test run's filters, recorded
        other.old()
    assert [str(w.message) for w in seen] == ["old() is deprecated"]


# ---------------------------------------------------------------------- edge-case instances (probe C)
def test_log_tas_on_equal_hit_rates_runs_to_its_cap_without_a_division_by_zero():
    # three one-hot compounds of the same hit rate: after the first plate (one test each) two estimated
    # rates tied to the last bit, the exact bound's LP value was 0 and log-tas died on 1 / 0
    from screenbai.bandits.certainty.exact_logistic import exact_characteristic_time

    theta = np.array([0.40105813754154696, 0.40105813754154707, -0.401058137541547])
    got = exact_characteristic_time(np.eye(3), theta, answer=(1,), strict=False, tol=0.03, max_iter=20)
    assert got.T_star == np.inf and got.lower == np.inf
    inst = Instance(np.eye(3), np.full(3, 0.5), "bernoulli", 0.5, np.zeros(3), link="logistic", name="equal")
    policy = make_policy("log-tas", inst.features, rng=1, max_samples=60)
    result = policy.run(inst.environment(2))
    assert not result.stopped and result.n_samples == 60


@pytest.mark.parametrize(
    "features,message",
    [
        (np.array([[1 + 1j, 0.0], [0.0, 1.0]]), r"complex.*arm 0, column 0"),
        ([[1.0, 0.0], [0.0]], r"features must be a K x d table of numbers.*rows of different lengths"),
        ([[1.0, "x"], [0.0, 1.0]], r"features must be a K x d table of numbers.*'x'"),
    ],
)
def test_features_that_are_not_a_table_of_real_numbers_are_named(features, message):
    # complex features lost their imaginary part with only numpy's ComplexWarning; a ragged list or a text
    # cell gave numpy's "inhomogeneous shape" / "could not convert string to float" without naming the features
    with pytest.raises(ValueError, match=message):
        make_policy("lingape", features)


def test_a_dataframe_with_a_text_column_is_named_by_its_column():
    import pandas as pd

    frame = pd.DataFrame({"x0": [1.0, 0.0, 0.5], "smiles": ["C", "CC", "CCC"]})
    with pytest.raises(ValueError, match=r"column 'smiles'.*not numbers"):
        make_policy("rage", frame)
    assert make_policy("rage", frame[["x0"]]).X.shape == (3, 1)  # a numeric frame, and int features, are fine
    assert make_policy("rage", np.array([[1, 0], [0, 1], [1, 1]])).X.dtype == np.float64


@pytest.mark.parametrize(
    "name,params",
    [("lingape", {}), ("m-lingape", {}), ("lingifa", {}), ("xy-fully-adaptive", {"S": 1.0}),
     ("linucb", {"budget": 100}), ("fb-lingape", {"budget": 100}), ("ucb-glm", {"budget": 100})],
)
def test_features_too_small_for_the_ridge_penalty_are_refused(name, params):
    # features of norm ~1e-6 with lambda_reg = 1: a test of an arm adds ||x||^2 = 1e-12 to the design, so the
    # penalty outweighs 10^12 tests and the widths never shrink: LinGapE ran to its cap of 10^6 tests without
    # a word (on means 1, 0.3, 0.1, sigma = 1), and LinGIFA's capped run certified an arm 0.7 below the best
    # to within 2e-5 (under ||theta|| <= S = 1, which those means refute and nothing said)
    X = _linear_instance(1e-6).features
    with pytest.raises(ValueError, match=r"lambda_reg = .*Multiply the features by a common factor"):
        make_policy(name, X, **params)
    make_policy(name, X, **params, lambda_reg=1e-12)  # what the message advises is accepted
    with pytest.raises(ValueError, match=r"all arm features are zero"):
        make_policy(name, np.zeros((3, 2)), **params)


def test_xy_fully_adaptive_stops_when_the_survivors_are_twins():
    # two compounds with the same features lead (the same mean under the model: either is a correct answer);
    # its elimination never removes one twin for the other, so it ran to its cap although its own certificate
    # said epsilon = 0 (LinGapE, lin-tas, RAGE and xy-adaptive stop on this instance)
    X = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    inst = Instance(X, X @ np.array([1.0, 0.2]), "gaussian", 1.0, np.array([1.0, 0.2]), name="twins")
    policy = make_policy("xy-fully-adaptive", X, S=1.1, rng=1, max_samples=5000)
    result = policy.run(inst.environment(2))
    assert result.stopped and result.n_samples < 5000 and result.best in (0, 1)
    assert result.diagnostics["certified_epsilon"] == [0.0]

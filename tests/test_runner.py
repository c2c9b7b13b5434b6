"""Run records and summaries: judged with the policy's own epsilon, the instance's noise scale,
runs that hit the sample cap reported, and a warning when tied best arms make stopping impossible."""

import numpy as np
import pandas as pd
import pytest

from screenbai.bandits import policy_for_instance, replicate
from screenbai.bandits.core.params import DEFAULT_MAX_SAMPLES
from screenbai.bandits.core.runner import TieWarning, summarize
from screenbai.bandits.sim.generators import canonical, kw_synthetic, reda_classic, soare


def test_records_judge_with_the_epsilon_the_policy_used():
    """GLGapE's default epsilon is 0.1; records used to judge its answers with epsilon = 0."""
    inst = kw_synthetic(K=50, d=2, seed=0)  # flat: many arms within 0.1 of the best
    df = replicate(inst, "glgape", {"calibration": "reinterpreted"}, n_reps=10, seed=0)
    assert (df["epsilon"] == 0.1).all()
    exact = [inst.is_correct(r, epsilon=0.0) for r in df["recommendation"]]
    within = [inst.is_correct(r, epsilon=0.1) for r in df["recommendation"]]
    assert sum(exact) <= 5 < sum(within)  # the two judgements differ on these runs
    assert df["correct"].tolist() == within


def test_simulation_assumes_the_instance_noise_scale_unless_overridden():
    inst = soare(d=2, omega=0.1)  # sigma = 1; m-LinGapE's own default is 0.5
    assert policy_for_instance("m-lingape", inst).sigma == 1.0
    assert policy_for_instance("lingape", inst).sigma == 1.0  # LinGapE calls it R
    assert policy_for_instance("m-lingape", inst, sigma=0.25).sigma == 0.25
    assert policy_for_instance("xy-static", soare(d=2, sigma=0.3)).sigma == 0.3  # registry default 1.0 overridden
    df = replicate(inst, "m-lingape", {"threshold": "heuristic"}, n_reps=2, seed=0)
    assert (df["noise_scale"] == 1.0).all()
    assert summarize(df)["noise_scale"].iloc[0] == "1"


def test_default_sample_cap_is_finite_and_runs_hitting_it_are_reported():
    assert DEFAULT_MAX_SAMPLES <= 10**6
    inst = canonical(d=3, gap=0.0)
    with pytest.warns(TieWarning, match=r"arms ranked 1 and 2 have the same mean .* epsilon = 0"):
        df = replicate(inst, "lucb", {"max_samples": 300}, n_reps=3, seed=0)
    assert df["hit_cap"].all() and (df["max_samples"] == 300).all() and not df["stopped"].any()
    row = summarize(df).iloc[0]
    assert row["hit_cap"] == 3 and row["not_stopped"] == 3 and np.isnan(row["error_rate"])


def test_no_tie_warning_when_epsilon_positive_or_arms_differ(recwarn):
    replicate(canonical(d=3, gap=0.0), "lucb", {"max_samples": 300, "epsilon": 0.1}, n_reps=1)
    replicate(canonical(d=3, gap=2.0, sigma=0.1), "lucb", {}, n_reps=1)
    assert not [w for w in recwarn if issubclass(w.category, TieWarning)]


def test_a_run_for_another_m_than_the_instance_s_names_both(recwarn):
    """m-LinGapE (m = 1 by default) on reda_classic built for m = 2, whose top two arms tie, ran to its cap with a
    warning of tied arms that did not say why: the warning now names the instance's m, the algorithm's and the
    setting to give; an algorithm without m is told to choose one that takes it."""
    inst = reda_classic(K=4, m=2)
    with pytest.warns(TieWarning, match=r"the instance is built for the best 2 arms \(m=2\), and m-lingape looks for "
                      r"the best arm \(m=1, its default\): arms ranked 1 and 2 .* --param m=2\), or epsilon > 0"):
        replicate(inst, "m-lingape", {"max_samples": 200}, n_reps=1)
    with pytest.warns(TieWarning, match=r"lingape looks for the single best arm \(it takes no m\).* choose an "
                      r"algorithm for the best m arms with --param m=2"):
        replicate(inst, "lingape", {"max_samples": 200}, n_reps=1)
    with pytest.warns(TieWarning, match=r"built for the best arm \(m=1\), and m-lingape looks for the best 3 arms "
                      r"\(m=3\): arms ranked 3 and 4"):
        replicate(reda_classic(K=5, m=1), "m-lingape", {"m": 3, "max_samples": 200}, n_reps=1)
    recwarn.clear()
    replicate(inst, "m-lingape", {"m": 2}, n_reps=1)  # the instance's own m: no tie, no warning
    assert not [w for w in recwarn if issubclass(w.category, TieWarning)]
    with pytest.warns(TieWarning) as seen:  # a tie on an instance without an m of its own: as before
        replicate(canonical(d=3, gap=0.0), "lucb", {"max_samples": 100}, n_reps=1)
    assert "built for" not in str(seen[0].message) and "pass epsilon > 0" in str(seen[0].message)


def test_summary_separates_capped_from_stopped_runs():
    records = pd.DataFrame({
        "instance": "i", "algorithm": "a", "params": "{}", "samples": [10, 20, 300], "stopped": [True, True, False],
        "correct": [True, False, False], "hit_cap": [False, False, True], "wall_time_s": 0.0, "noise_scale": 0.5,
    })
    row = summarize(records).iloc[0]
    assert row["hit_cap"] == 1 and row["median_samples"] == 15 and row["error_rate"] == 0.5


def test_no_tie_warning_for_twins_a_model_of_the_features_tells_apart_from_nothing(recwarn):
    # the two best compounds share their features: a model of the features sees one arm, either answer is
    # correct, and LinGapE stopped after 169 tests; the warning said every run would go on to its cap
    from screenbai.bandits import Instance

    X = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    inst = Instance(X, np.array([1.0, 1.0, 0.2]), "gaussian", 1.0, name="twins")
    df = replicate(inst, "lingape", {"max_samples": 3000}, n_reps=1, seed=0)
    assert df["stopped"].all()
    assert not [w for w in recwarn if issubclass(w.category, TieWarning)]
    with pytest.warns(TieWarning, match=r"arms ranked 1 and 2"):  # no model of the features: it cannot stop
        replicate(inst, "lucb", {"max_samples": 300}, n_reps=1, seed=0)


def test_tie_warning_for_an_algorithm_without_epsilon():
    # xy-static has no epsilon (it identifies the exact best): on tied best arms it runs to its cap, and the
    # warning (keyed on an epsilon parameter) said nothing
    with pytest.warns(TieWarning, match=r"choose an algorithm with an epsilon parameter"):
        df = replicate(canonical(d=3, gap=0.0), "xy-static", {"max_samples": 300}, n_reps=1, seed=0)
    assert not df["stopped"].any()

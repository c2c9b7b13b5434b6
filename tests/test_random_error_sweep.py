"""benchmarks/random_error_sweep.py: its instances sit where it says (the (epsilon, m) boundary), its
Clopper-Pearson bounds are the exact ones, and its judgement refuses answers of the wrong size."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import random_error_sweep as sweep  # noqa: E402

sys.path.pop(0)


@pytest.mark.parametrize("family", ["linear", "logistic"])
@pytest.mark.parametrize("m", [1, 2])
@pytest.mark.parametrize("epsilon", [0.0, 0.05, 0.1])
def test_instances_sit_at_the_boundary(family, m, epsilon):
    for index in range(3):
        drawn = sweep.draw(family, m, epsilon, index, seed=7)
        inst = drawn.instance
        mu = np.sort(inst.means)[::-1]
        assert 3 <= inst.K <= 12 and 2 <= inst.d <= 5
        gap = mu[m - 1] - mu[m]
        if epsilon > 0:
            assert 0.5 * epsilon - 1e-9 <= gap <= 2 * epsilon + 1e-9
        else:
            assert gap > 0.01
        # the arms below the runner-up keep away from the boundary mu_(m) - epsilon
        assert np.all(mu[m + 1 :] < min(mu[m], mu[m - 1] - epsilon) - 0.005)
        if family == "logistic":
            assert inst.means.min() >= 0.02 - 1e-9 and inst.means.max() <= 0.98 + 1e-9
            assert np.allclose(inst.means, 1 / (1 + np.exp(-inst.features @ inst.theta)))
        else:
            assert np.allclose(inst.means, inst.features @ inst.theta) and inst.sigma in (0.5, 1.0)
        assert sweep.draw(family, m, epsilon, index, seed=7).describe == drawn.describe  # seeded


def test_clopper_pearson_bounds():
    assert sweep.cp_bounds(0, 100) == (0.0, pytest.approx(1 - 0.05 ** (1 / 100)))
    lower, upper = sweep.cp_bounds(100, 100)
    assert upper == 1.0 and lower == pytest.approx(0.05 ** (1 / 100))
    lower, upper = sweep.cp_bounds(30, 100)  # exact binomial tails at the bounds
    from scipy.stats import binom

    assert binom.sf(29, 100, lower) == pytest.approx(0.05) and binom.cdf(30, 100, upper) == pytest.approx(0.05)


def test_judge_wants_m_distinct_good_arms():
    drawn = sweep.draw("linear", 2, 0.0, 0, seed=7)
    top = list(np.argsort(-drawn.instance.means)[:2])
    rec = pd.DataFrame(
        {"recommendation": [top, top[:1], [top[0], top[0]], [top[0], int(np.argmin(drawn.instance.means))]]}
    )
    assert sweep.judge(drawn, rec).tolist() == [True, False, False, False]

"""The certificate of every compound's own wells, under no model (screenbai/bandits/certainty/no_model.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import betaln

from screenbai.bandits.certainty.no_model import anytime_intervals, no_model_certificate


@pytest.mark.parametrize("S,n", [(0, 5), (3, 10), (10, 10), (50, 100), (1, 400), (399, 400), (0, 1)])
def test_the_interval_is_where_the_jeffreys_mixture_stays_below_its_level(S, n):
    """Against a grid of 400 001 points: the ends are where E_n(p) = B(S + 1/2, F + 1/2) / (B(1/2, 1/2) p^S
    (1 - p)^F) crosses 1/alpha."""
    alpha = 0.01
    lo, hi = anytime_intervals(np.array([S]), np.array([n]), alpha)
    p = np.linspace(0.0, 1.0, 400_001)[1:-1]
    F = n - S
    log_e = betaln(S + 0.5, F + 0.5) - betaln(0.5, 0.5) - (S * np.log(p) + F * np.log1p(-p))
    inside = p[log_e < math.log(1 / alpha)]
    step = p[1] - p[0]
    assert abs(float(lo[0]) - (0.0 if S == 0 else inside.min())) < 2 * step
    assert abs(float(hi[0]) - (1.0 if F == 0 else inside.max())) < 2 * step
    assert lo[0] <= S / n <= hi[0]


def test_an_untested_compound_spans_every_hit_rate_and_bad_counts_are_refused():
    lo, hi = anytime_intervals(np.array([0, 2]), np.array([0, 4]), 0.05)
    assert (lo[0], hi[0]) == (0.0, 1.0) and 0 < lo[1] < 0.5 < hi[1] < 1
    with pytest.raises(ValueError, match="successes <= tests"):
        anytime_intervals(np.array([3]), np.array([2]), 0.05)
    with pytest.raises(ValueError, match="alpha"):
        anytime_intervals(np.array([1]), np.array([2]), 0.0)


def _violations(rule: str, runs: int = 400, steps: int = 600, seed: int = 0) -> int:
    """Runs (out of ``runs``) in which some arm's hit rate left its interval at some look, sampling adaptively:
    each step tests the arm whose interval reaches highest (the optimism a bandit uses), the intervals read after
    every 5 tests. ``rule``: "anytime" (this module, alpha = delta / K) or "wilson" (a fixed-n 95 % interval per
    arm at delta / K, read at every look: not anytime)."""
    means = np.array([0.3, 0.5, 0.55, 0.6])
    K, delta = means.size, 0.1
    rng = np.random.default_rng(seed)
    draws = rng.random((runs, K, steps)) < means[None, :, None]
    S = np.zeros((runs, K))
    n = np.zeros((runs, K))
    bad = np.zeros(runs, dtype=bool)
    z = 2.4977  # the normal quantile at 1 - delta / (2 K) = 0.9875
    rows = np.arange(runs)
    for t in range(steps):
        if rule == "anytime":
            lo, hi = anytime_intervals(S.ravel(), n.ravel(), delta / K)
            lo, hi = lo.reshape(runs, K), hi.reshape(runs, K)
        else:
            p = np.divide(S + z * z / 2, n + z * z)
            half = z * np.sqrt(np.maximum(S * (n - S), 0) / np.maximum(n, 1) + z * z / 4) / (n + z * z)
            lo, hi = p - half, p + half
        if t % 5 == 0:
            bad |= ((means[None, :] < lo - 1e-12) | (means[None, :] > hi + 1e-12)).any(axis=1)
        arm = np.argmax(hi + 1e-9 * rng.random((runs, K)), axis=1)
        k = n[rows, arm].astype(int)
        S[rows, arm] += draws[rows, arm, np.minimum(k, steps - 1)]
        n[rows, arm] += 1
    return int(bad.sum())


@pytest.mark.slow
def test_the_intervals_hold_for_every_arm_at_every_look_under_adaptive_sampling():
    """delta = 0.1 over 400 runs: at most 40 runs expected to break an interval (+ 3 sd of a binomial: 58). The
    anytime intervals break in far fewer (they are conservative); the same sampling with fixed-n Wilson intervals
    at the same per-arm level, read at every look, breaks in more than the bound: the test can tell them apart."""
    anytime = _violations("anytime")
    assert anytime <= 58
    assert _violations("wilson") > 58


def test_the_certificate_is_the_largest_rival_upper_end_minus_the_answer_s_lower_end():
    S = np.array([95, 40, 10, 0])
    n = np.array([100, 100, 20, 0])
    lo, hi = anytime_intervals(S, n, 0.05 / 4)
    cert = no_model_certificate(S, n, [0], 0.05)
    # the untested compound may have any hit rate up to 1
    assert cert.epsilon[0] == pytest.approx(1.0 - lo[0])
    # among the tested three only: the largest upper end of a rival is compound 2's
    lo3, hi3 = anytime_intervals(S[:3], n[:3], 0.05 / 3)
    cert3 = no_model_certificate(S, n, [0], 0.05, compared=[0, 1, 2])
    assert cert3.epsilon[0] == pytest.approx(max(hi3[1], hi3[2]) - lo3[0])
    assert "all 3 compounds compared at once" in cert3.model and cert3.guaranteed and cert3.delta == 0.05
    # a clear winner with many tests is certified to within a small gap; the certificate is never negative
    big = no_model_certificate(np.array([950, 100]), np.array([1000, 1000]), [0], 0.05)
    assert big.epsilon[0] == 0.0
    # top-2: the 2nd largest of hi_j - lo_i over the rivals
    cert2 = no_model_certificate(S[:3], n[:3], [0, 1], 0.05, m=2)
    assert cert2.epsilon[1] == pytest.approx(max(0.0, sorted([hi3[0], hi3[2]])[0] - lo3[1]))
    with pytest.raises(ValueError, match="not among the arms compared"):
        no_model_certificate(S, n, [3], 0.05, compared=[0, 1])

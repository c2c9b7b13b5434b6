"""Per-direction block evidence for the logistic model (screenbai.bandits.tracking.logistic_blocks): the
Taylor remainder and sub-Gaussian bounds it rests on, the coverage of its one-sided bounds with a badly
placed reference (which a rule without the bias bound fails), and log-tas with it: saved state, pickling."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from policy_util import run_steps
from scipy.special import expit

import screenbai.bandits.tracking.logistic as log_tas
import screenbai.bandits.tracking.logistic_blocks as lb
from screenbai.bandits import load_policy, policy_for_instance, save_policy
from screenbai.bandits.numerics.glm import dmu
from screenbai.bandits.sim.generators import kw_synthetic
from screenbai.bandits.sim.instance import Environment


def test_remainder_bound_is_the_maximum_over_the_interval():
    """Against a fine grid, including intervals that hold the interior critical point u = -2a."""
    rng = np.random.default_rng(0)
    a = rng.uniform(-4, 4, 200)
    D = rng.uniform(0.0, 6.0, 200)
    got = lb.remainder_bound(a, D)
    lo, hi = lb.remainder_range(a, D)
    for k in range(a.size):
        u = np.linspace(-D[k], D[k], 20001)
        signed = expit(a[k] + u) - expit(a[k]) - dmu(a[k]) * u
        r = np.abs(signed).max()
        assert got[k] >= r - 1e-12
        assert got[k] <= r + 1e-6  # exact, not only safe
        assert lo[k] <= signed.min() + 1e-12 and hi[k] >= signed.max() - 1e-12
        assert lo[k] >= signed.min() - 1e-6 and hi[k] <= signed.max() + 1e-6
    interior = np.abs(2 * a) <= D
    assert interior.sum() > 20  # the critical point is exercised
    assert np.isinf(lb.remainder_bound(np.array([0.3]), np.array([np.inf]))).all()
    # at most max|mu''| / 2 D^2 = D^2 / (12 sqrt 3)
    assert (got <= D**2 / (12 * np.sqrt(3)) + 1e-12).all()


def test_subgaussian_proxy_bounds_the_bernoulli_mgf_and_the_variance_does_not():
    """log E exp(s (X - p)) <= s^2 sigma^2 / 2 for every s with the Kearns-Saul proxy (maximised over the
    interval of logits), and the plain variance p (1 - p) violates it (so the check has teeth)."""
    s = np.linspace(-30, 30, 601)
    for lo, hi in [(-3.0, -2.0), (-0.5, 0.7), (1.0, 4.0), (-6.0, -5.5)]:
        sig2 = float(lb.subgaussian_proxy(np.array([lo]), np.array([hi]))[0])
        for a in np.linspace(lo, hi, 7):
            p = expit(a)
            logmgf = np.log(p * np.exp(s * (1 - p)) + (1 - p) * np.exp(-s * p))
            assert (logmgf <= s * s * sig2 / 2 + 1e-9).all()
        p = expit(lo)
        logmgf = np.log(p * np.exp(s * (1 - p)) + (1 - p) * np.exp(-s * p))
        assert (logmgf > s * s * p * (1 - p) / 2 + 1e-6).any()
    assert lb.subgaussian_proxy(np.array([-1.0]), np.array([2.0]))[0] == pytest.approx(0.25)


def _coverage(reps: int, seed: int = 0) -> float:
    """Blocks of a fixed design on 4 arms in R^2, each linearised at a reference 1.2 logits away from theta*
    along a fixed direction (D_k the exact distance: a valid range); the fraction of runs in which some
    one-sided bound LCB(x_i - x_j) ever exceeds (x_i - x_j)'theta* (level log 10 per direction)."""
    X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [1.0, -1.0]])
    theta = np.array([1.2, -0.4])
    ref = theta + np.array([1.2, 1.2])
    counts = np.full(4, 150)
    a = X @ ref
    D = np.abs(X @ (ref - theta))
    rng = np.random.default_rng(seed)
    p = expit(X @ theta)
    crossed = 0
    for _ in range(reps):
        ev = lb.LogisticBlockEvidence(X, epsilon=0.0, log_level=np.log(10.0))
        hit = False
        for _b in range(6):
            ev.opened(counts, ref, a - D, a + D)
            ev.close(counts, rng.binomial(counts, p).astype(float))
            for i in range(4):
                low = ev.lcb(i)
                truth = X[i] @ theta - X @ theta
                low[i] = -np.inf
                hit |= bool((low > truth + 1e-12).any())
        crossed += hit
    return crossed / reps


@pytest.mark.parametrize("broken", [False, True])
def test_block_bounds_cover_with_a_biased_reference_and_fail_without_the_bias_bound(monkeypatch, broken):
    """Every block is used (BIAS_SD = inf) so the bias bound alone keeps the bounds valid: with it, at most
    the union's 12 directions x 0.1 (in fact far below); with the bias bound set to 0, the reference's
    linearisation error pushes the bounds past the truth in most runs."""
    monkeypatch.setattr(lb, "BIAS_SD", np.inf)
    if broken:
        monkeypatch.setattr(lb, "remainder_range", lambda a, D: (np.zeros_like(np.asarray(a, dtype=float)),) * 2)
    rate = _coverage(60)
    if broken:
        assert rate > 0.5
    else:
        assert rate <= 0.1


def _block_policy(monkeypatch, seed=3):
    monkeypatch.setattr(log_tas, "BLOCKS_MIN_D", 3)
    inst = kw_synthetic(K=10, d=3, seed=1)
    return inst, policy_for_instance("log-tas", inst, rng=seed, epsilon=0.1, delta=0.2)


@pytest.mark.slow
def test_log_tas_with_block_evidence_saves_restores_and_pickles(monkeypatch, tmp_path):
    """Interrupted after 120 tests and restored (from a file and from a pickle), 120 tests later the run is
    where the uninterrupted one is: the same tests, blocks, block bounds and certificate."""
    inst, ref = _block_policy(monkeypatch)
    env = Environment(inst, rng=np.random.default_rng(7))
    run_steps(ref, env, 240)
    inst, pol = _block_policy(monkeypatch)
    env = Environment(inst, rng=np.random.default_rng(7))
    run_steps(pol, env, 120)
    rule = pol.stopping_rule
    assert isinstance(rule, lb.LikelihoodOrBlocks) and rule.blocks.n_blocks >= 3
    again = load_policy(save_policy(pol, tmp_path / "p"), inst.features)
    copied = pickle.loads(pickle.dumps(pol))
    state = pickle.dumps(env)
    i = int(ref._current_answer()[0])
    for p in (again, copied):
        run_steps(p, pickle.loads(state), 120)
        assert p.n_samples == ref.n_samples
        assert np.array_equal(p.n, ref.n)
        assert p.stopping_rule.blocks.n_blocks == ref.stopping_rule.blocks.n_blocks
        assert np.allclose(p.stopping_rule.blocks.lcb(i), ref.stopping_rule.blocks.lcb(i))
        assert np.allclose(p.certificate().epsilon, ref.certificate().epsilon)

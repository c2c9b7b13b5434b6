"""A forecast by simulation, for an algorithm that states no stopping threshold (KL-LUCB, LUCB, UGapE): copies of
the policy run on from its current state to their stop, plate by plate, on hit rates drawn from what the outcomes
so far say of them.

``forecast.py`` plugs an estimate into the lower bound and the algorithm's threshold; without a threshold there
is nothing to plug into, but the algorithm itself can be run. What it is run on: each compound's hit rate drawn
from its posterior under a hierarchical beta-binomial model of the library (``rate_draws``): the compounds' rates
taken as draws of one Beta(a, b), and per run (a, b) drawn from their posterior given the outcomes so far
(``hyper_posterior``), so a compound with few or no tests gets the spread of the library's rates, not a flat
guess, and one with many tests its own. It uses no model of the features, so for an algorithm that has one the
draws ignore what it would extrapolate. The stop's law is the mixture over the draws, each with the run's own
chance; the forecast is its median and the band its quantiles (``quantiles``: each one a simulated stop). Seeded:
the same state gives the same forecast. A draw whose copy has not stopped after ``cap`` more tests counts as a stop
beyond the cap (inf).

Cost: one simulated run per draw, at the algorithm's per-test cost (KL-LUCB 0.1 to 0.15 ms a test at K = 40, and
0.1 ms at K = 4 866 in plates of 352, 0.2 to 0.3 ms before its intervals were remembered per count and a round looked
only at the compound just proposed; this shared 2-core machine at load 1-3, 28 Nov 2026); the cap bounds it.
Meant for algorithms that treat each compound on its own: for one with a model of the features, draws that ignore
the features are not the truth it assumes (and LinGIFA or XY-adaptive take 0.4 to 9 s a test at K = 4 866), so the
campaign does not offer it there.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable

import numpy as np
from scipy.special import betaln

#: the grid of the library's Beta(a, b) in mean a / (a + b) and concentration a + b (log-spaced), over which
#: ``hyper_posterior`` weighs them
GRID_MEANS = np.linspace(0.005, 0.995, 100)
GRID_CONCENTRATIONS = np.exp(np.linspace(math.log(0.1), math.log(1000.0), 60))


def hyper_posterior(n: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(a, b, weights) over a grid of the library's Beta: the posterior of its mean and concentration given ``s`` hits
    in ``n`` tests per compound (the beta-binomial marginal likelihood; flat in the mean and the log concentration
    over the grid). Drawing (a, b) from it, not fixing the most likely pair, matters early: with one test per
    compound the likelihood says nothing of the concentration, and the most likely pair's forecasts were 3 times
    too short (docs/certificate.md)."""
    mean, conc = np.meshgrid(GRID_MEANS, GRID_CONCENTRATIONS, indexing="ij")
    a, b = (mean * conc).ravel(), ((1 - mean) * conc).ravel()
    n, s = np.asarray(n, dtype=float), np.asarray(s, dtype=float)
    tested = n > 0
    pairs, count = np.unique(np.stack([n[tested], s[tested]], axis=1), axis=0, return_counts=True)
    log_like = np.zeros(a.size)
    for (tests, hits), c in zip(pairs, count):  # one term per distinct (tests, hits): few, whatever K
        log_like += c * (betaln(a + hits, b + tests - hits) - betaln(a, b))
    weights = np.exp(log_like - log_like.max())
    return a, b, weights / weights.sum()


def rate_draws(n: np.ndarray, s: np.ndarray, draws: int, rng: np.random.Generator) -> np.ndarray:
    """``draws`` x K hit rates: per draw the library's (a, b) from ``hyper_posterior``, then each compound's rate
    from its Beta(a + s, b + n - s) posterior."""
    a, b, weights = hyper_posterior(n, s)
    pick = rng.choice(a.size, size=int(draws), p=weights)
    n, s = np.asarray(n, dtype=float), np.asarray(s, dtype=float)
    return rng.beta(a[pick, None] + s, b[pick, None] + n - s)


def simulated_stops(policy, rates: np.ndarray, plate_size: int, cap: int, rng: np.random.Generator,
                    propose: Callable | None = None, enough_capped: int | None = None) -> np.ndarray:
    """Per row of ``rates`` (draws x K, the policy's arms), the tests a copy of ``policy`` records from now until it
    stops: its tests in flight first get their outcomes, then it proposes plates (``propose(copy, plate_size)``, the
    arms of a plate's wells; default ``copy.propose(plate_size)``) whose 0/1 outcomes are drawn at those rates. inf
    where it has not stopped after ``cap`` tests (or proposes nothing more). Once ``enough_capped`` runs have reached
    the cap the rest are not run and count as inf too (with half the runs capped the median is past the cap
    whatever they give: the forecast then says only that). ``policy`` itself is left as it was (each draw runs on a
    deep copy)."""
    propose = propose or (lambda sim, size: sim.propose(size))
    stops = np.full(len(rates), math.inf)
    for i, p in enumerate(np.asarray(rates, dtype=float)):
        if enough_capped is not None and np.isinf(stops[:i]).sum() >= enough_capped:
            break
        sim = copy.deepcopy(policy)
        flying = np.repeat(np.arange(sim.K), sim.in_flight)
        start = int(sim.n_samples)
        if flying.size:
            sim.tell(flying, (rng.random(flying.size) < p[flying]).astype(float))
        while not sim.done and sim.n_samples - start < cap:
            arms = np.asarray(propose(sim, int(plate_size)), dtype=np.int64).reshape(-1)
            if not arms.size:
                break
            sim.tell(arms, (rng.random(arms.size) < p[arms]).astype(float))
        if sim.done:
            stops[i] = sim.n_samples - start
    return stops


def quantiles(stops: np.ndarray, levels) -> list[float]:
    """The ``levels`` quantiles of the simulated stops, each one of them (inf where it falls on a run past the cap):
    the inverse of their empirical distribution, no interpolation (which an inf would turn into nan)."""
    return [float(q) for q in np.quantile(np.asarray(stops, dtype=float), levels, method="inverted_cdf")]

"""A model-free certificate from a compound's own wells, and log-tas's stopping rule that adds it.

With epsilon on the means (GLGapE's convention) an arm i whose mean mu_i is at least 1 - epsilon is
epsilon-good whatever the other arms are: no mean exceeds 1, so none beats mu_i by more than epsilon.
And whether mu_i >= 1 - epsilon is a question about arm i's own outcomes alone: a test of one Bernoulli
mean, with no model, no features and no nuisance parameter, so its threshold has no d log t term. On
potency arms the best compounds are actives with mu near 1 (0.99 on the CDK2 arms, IC50 < 100 nM,
epsilon 0.1): about 100 of their own wells certify one of them, where the likelihood-ratio set of the
logistic model, whose level carries the regret of a d-parameter fit, needs thousands of tests.

**The e-process** (``log_evidence``). For p0 in (0, 1) and a fixed grid q_1 < ... < q_G in (0, 1) with
weights 1/G, the outcomes y_1, y_2, ... of arm i since its start (S successes, F failures) give

    E(p0) = (1/G) sum_{k : q_k > p0} (q_k / p0)^S ((1 - q_k) / (1 - p0))^F.

Each factor of a component has conditional mean mu q_k / p0 + (1 - mu)(1 - q_k) / (1 - p0) <= 1 when
mu <= p0 < q_k (linear in mu, equal to 1 at mu = p0), whatever chose the test (the arm may be tested
any time, by any rule that does not see the outcome first): E(p0) is a non-negative supermartingale
with E_0 <= 1 under mu_i <= p0, and P(sup_t E_t(p0) >= 1/alpha) <= alpha (Ville's inequality; the
method of mixtures, Robbins 1970; as a betting e-process, Waudby-Smith & Ramdas 2023). The grid is
fixed from epsilon before any outcome: q_k = 1 - epsilon r^k (r = GRID_RATIO, G = GRID_SIZE), so for a
mean 0.99 at epsilon 0.1 a component is within a few % of the best constant bet.

**A lower confidence bound** (``lower_bound``). For data with empirical mean p_hat, each component
decreases in p0 on (0, p_hat] (the log of one has p0-derivative F / (1 - p0) - S / p0 <= 0 there) and
components drop out as p0 passes their q_k; for p0 >= p_hat every term is <= 1/G (p_hat maximises the
Bernoulli likelihood), so E(p0) < 1/alpha. So {p0 : E(p0) >= 1/alpha} = (0, c] for one c, found by
bisection, and mu_i <= c only if E(mu_i) >= 1/alpha: c is a lower confidence bound for mu_i at level
alpha, at all times at once.

**Which arms, at which level** (``OwnWells``). An arm's test starts when the policy first plans wells
for it (log-tas's ``_wells_block``), and counts only outcomes after that. The k-th arm started (k = 0,
1, ...) is tested at level alpha_k = delta_w / ((k + 1)(k + 2)): the weights sum to 1 whatever the order,
and each is fixed before the arm's first counted outcome. A wrong answer certified this way needs an
arm with mu_i < 1 - epsilon whose e-process crossed 1/alpha_k: probability at most delta_w.

**The combined rule** (``LikelihoodOrOwnWells``): the likelihood-ratio set of ``rules.likelihood`` at
delta_1 = (1 - WELLS_SHARE) delta OR the own wells at delta_w = WELLS_SHARE delta. P(error) <= delta_1 +
delta_w = delta (a union bound over the two failure events). The set's level rises by log(1/(1 -
WELLS_SHARE)) = 0.105 nats, about 1 % of tests where the own wells never fire.
"""

from __future__ import annotations

import math

import numpy as np

from screenbai.bandits.core.parts import StoppingRule
from screenbai.bandits.rules.likelihood import LikelihoodOr

#: the share of delta the own wells get (the likelihood-ratio set keeps the rest)
WELLS_SHARE = 0.1
#: the alternatives of the mixture: q_k = 1 - epsilon GRID_RATIO^k, k = 1..GRID_SIZE
GRID_RATIO = 0.6
GRID_SIZE = 8
#: bisection steps of the lower confidence bound
_LCB_STEPS = 30
#: one draw of an arm's wells (``OwnWells.needed_drawn``) simulates at most DRAW_TIMES times their expected count
#: (``needed``) and DRAW_FLOOR more: a path not certified by then counts as never (a fit too high: log-tas's usual
#: blocks resume). Where that count exceeds DRAW_MOST_EXPECTED (a mean near the bar, some 10 plates of 96 wells) the
#: draw is the expected count itself: such a route is far off, and drawing it cost 10 ms a draw (status draws 200)
DRAW_TIMES = 4
DRAW_FLOOR = 64
DRAW_MOST_EXPECTED = 1000.0


def grid(epsilon: float) -> np.ndarray:
    """The mixture's alternatives q_1 < ... < q_G, fixed by epsilon before any outcome."""
    return 1.0 - epsilon * GRID_RATIO ** np.arange(1, GRID_SIZE + 1, dtype=float)


def _components(S: float, F: float, p0: float, q: np.ndarray) -> np.ndarray:
    """The log-likelihood ratios S log(q_k / p0) + F log((1 - q_k) / (1 - p0)) of the components with q_k > p0."""
    q = q[q > p0]
    return S * np.log(q / p0) + F * np.log((1.0 - q) / (1.0 - p0))


def log_evidence(S: float, F: float, p0: float, q: np.ndarray) -> float:
    """log E(p0) of the module docstring for S successes and F failures (-inf when no q_k exceeds p0)."""
    terms = _components(S, F, p0, q)
    if not terms.size:
        return -math.inf
    top = float(terms.max())
    return top + math.log(float(np.exp(terms - top).sum())) - math.log(GRID_SIZE)


def best_component(S: float, F: float, p0: float, q: np.ndarray) -> float:
    """The largest of the components' log-likelihood ratios (-inf when no q_k exceeds p0): log E(p0) is at least
    this minus log G, so the e-process crosses a level once this reaches level + log G."""
    terms = _components(S, F, p0, q)
    return float(terms.max()) if terms.size else -math.inf


def lower_bound(S: float, F: float, log_level: float, q: np.ndarray) -> float:
    """The smallest c with log E(p0) < log_level for every p0 > c: a lower confidence bound on the mean
    (module docstring); 0 when nothing is certified."""
    n = S + F
    if n <= 0 or S <= 0:
        return 0.0
    hi = S / n  # E(p) < 1/alpha from the empirical mean on
    if log_evidence(S, F, 1e-12, q) < log_level:
        return 0.0
    lo = 1e-12
    for _ in range(_LCB_STEPS):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if log_evidence(S, F, mid, q) >= log_level else (lo, mid)
    return lo


class OwnWells(StoppingRule):
    """Per arm started, its own outcomes since its start and the e-process of the module docstring.

    State: the arms in the order started, and per started arm its tests and successes since its start.
    """

    name = "own wells"
    state_fields = ("started", "tests", "successes")

    def __init__(self, epsilon: float, delta: float):
        super().__init__(epsilon, delta)
        if not 0.0 < epsilon < 1.0:
            raise ValueError(f"the own wells need 0 < epsilon < 1 (the bar is a mean of 1 - epsilon); got {epsilon}")
        self.q = grid(epsilon)
        self.started: list[int] = []
        self.tests = np.zeros(0)
        self.successes = np.zeros(0)
        self._slot: dict[int, int] = {}

    def reset_caches(self) -> None:
        self.started = [int(a) for a in self.started]
        self.tests = np.asarray(self.tests, dtype=float)
        self.successes = np.asarray(self.successes, dtype=float)
        self._slot = {a: k for k, a in enumerate(self.started)}

    def start(self, arms) -> None:
        """Start counting the outcomes of ``arms`` (those not started yet), in the order given."""
        for a in np.asarray(arms, dtype=np.int64).reshape(-1).tolist():
            if a not in self._slot:
                self._slot[a] = len(self.started)
                self.started.append(a)
                self.tests = np.append(self.tests, 0.0)
                self.successes = np.append(self.successes, 0.0)

    def observe(self, arms: np.ndarray, rewards: np.ndarray) -> None:
        if not self.started:
            return
        for a, r in zip(np.asarray(arms).reshape(-1).tolist(), np.asarray(rewards).reshape(-1).tolist()):
            k = self._slot.get(int(a))  # a loop over the outcomes told, not over the arms
            if k is not None:
                self.tests[k] += 1.0
                self.successes[k] += float(r)

    def log_level(self, k: int) -> float:
        """log(1/alpha_k) for the k-th arm started."""
        return math.log((k + 1.0) * (k + 2.0) / self.delta)

    def has_started(self, arm: int) -> bool:
        return int(arm) in self._slot

    def needed(self, arm: int, mean: float) -> float:
        """Tests of ``arm`` still needed for its own wells to certify it if its mean were ``mean`` (inf
        when mean <= 1 - epsilon): the mixture's best component gains about KL(mean, 1 - epsilon) per test
        and starts at weight 1/G, so it needs (log(1/alpha) + log G - B) / KL tests more (alpha the arm's
        level, or the next arm's if it has not started; B the best component's log-ratio on the arm's outcomes
        so far, ``best_component``, 0 before any). Counted by evidence, not by tests: an arm whose wells hit
        less often than ``mean`` says still needs more (by tests alone, 205 hits in 211 wells of a compound
        fitted at 0.99 read "none needed" while its e-process was short of the level, and the wells ended)."""
        p0 = 1.0 - self.epsilon
        if not mean > p0:
            return math.inf
        k = self._slot.get(int(arm))
        level = self.log_level(len(self.started) if k is None else k)
        gained = 0.0 if k is None else best_component(float(self.successes[k]),
                                                      float(self.tests[k] - self.successes[k]), p0, self.q)
        return max((level + math.log(GRID_SIZE) - gained) / bernoulli_kl(mean, p0), 0.0)

    def _need(self, S: float, n: float, level: float, mean: float) -> float:
        """``needed`` for an arm with S hits in n wells so far at log level ``level``."""
        gained = best_component(S, n - S, 1.0 - self.epsilon, self.q) if n else 0.0
        return max((level + math.log(GRID_SIZE) - gained) / bernoulli_kl(mean, 1.0 - self.epsilon), 0.0)

    def _state(self, arms) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per arm of ``arms``: hits and wells so far, and its log level (an arm not started gets the next ones)."""
        S, n, level, fresh = [], [], [], len(self.started)
        for a in np.ravel(arms).tolist():
            k = self._slot.get(int(a))
            if k is None:
                k, fresh = fresh, fresh + 1
            S.append(0.0 if k >= len(self.started) else float(self.successes[k]))
            n.append(0.0 if k >= len(self.started) else float(self.tests[k]))
            level.append(self.log_level(k))
        return np.array(S), np.array(n), np.array(level)

    def _path(self, S0: float, n0: float, level: float, mean: float, count: int,
              rng: np.random.Generator) -> tuple[int | None, float, float]:
        """``count`` more outcomes drawn at ``mean`` after S0 hits in n0 wells: (the outcome, 1-based, at which the
        e-process first reaches ``level``, or None; hits and wells after them all)."""
        p0 = 1.0 - self.epsilon
        win, loss = np.log(self.q / p0), np.log((1.0 - self.q) / (1.0 - p0))  # every q_k exceeds p0 (``grid``)
        S = S0 + np.cumsum(rng.random(count) < mean)
        terms = S[:, None] * win + (n0 + np.arange(1, count + 1) - S)[:, None] * loss
        top = terms.max(axis=1)
        near = np.flatnonzero(top >= level)  # log E <= its best component: the mixture only where that passes
        if near.size:
            mix = top[near] + np.log(np.exp(terms[near] - top[near, None]).sum(axis=1)) - math.log(GRID_SIZE)
            crossed = near[mix >= level]
            if crossed.size:
                return int(crossed[0]) + 1, float(S[-1]), n0 + count
        return None, float(S[-1]), n0 + count

    def needed_drawn(self, arm: int, mean: float, rng: np.random.Generator) -> float:
        """One draw of the tests of ``arm`` still needed for its own wells to certify it if its mean were ``mean``:
        its future outcomes drawn at that rate, one at a time from its outcomes so far, until its e-process (the
        mixture the stop reads, not ``needed``'s best component) reaches its level. ``needed`` counts the expected
        evidence; this draw is its spread, the run's own chance (a lucky run of hits certifies sooner). inf when
        mean <= 1 - epsilon or no crossing within DRAW_TIMES ``needed`` + DRAW_FLOOR outcomes; ``needed`` itself above
        DRAW_MOST_EXPECTED. Paths in chunks of twice ``needed``."""
        if not mean > 1.0 - self.epsilon:
            return math.inf
        (S0,), (n0,), (level,) = self._state([arm])
        if n0 and log_evidence(S0, n0 - S0, 1.0 - self.epsilon, self.q) >= level:
            return 0.0
        expected = self._need(S0, n0, level, mean)
        if expected > DRAW_MOST_EXPECTED:
            return expected
        most = DRAW_TIMES * math.ceil(expected) + DRAW_FLOOR
        chunk, taken = min(max(2 * math.ceil(expected), DRAW_FLOOR), most), 0
        while chunk > 0:
            hit, S0, n0 = self._path(S0, n0, level, mean, chunk, rng)
            if hit is not None:
                return float(taken + hit)
            taken += chunk
            chunk = min(2 * chunk, most - taken)
        return math.inf

    def plates_drawn(self, arms, means, plate: int, rng: np.random.Generator) -> float:
        """One draw of the plates of wells still needed to certify every arm of ``arms`` if their means were
        ``means``, as log-tas plans them (``_wells_block``): each plate gets the wells still needed at the expected
        evidence (``needed`` from the outcomes so far), their outcomes are drawn at ``means``, an arm is certified
        once its e-process reaches its level (the stop read at the plate where the last one is), and a plate whose
        wells leave an arm short is followed by one with the
        wells it then needs (one miss costs an arm with 87 hits in 88 wells, fitted at 0.99, about 4 nats: a plate
        more, README's recipe on CDK2, seed 57 after plate 2). inf where a mean is at or below 1 - epsilon or the
        wells pass DRAW_TIMES ``needed`` + DRAW_FLOOR uncertified; the expected count's plates where ``needed``
        exceeds DRAW_MOST_EXPECTED (as ``LikelihoodOrOwnWells.shortcut_tests`` without ``rng``)."""
        means = np.ravel(np.asarray(means, dtype=float))
        if not (means > 1.0 - self.epsilon).all():
            return math.inf
        S, n, level = self._state(arms)
        done = np.array([bool(k) and log_evidence(s, k - s, 1.0 - self.epsilon, self.q) >= v
                         for s, k, v in zip(S, n, level)])
        need = np.array([self._need(*args) for args in zip(S, n, level, means)])
        expected = float(need[~done].sum())
        if expected > DRAW_MOST_EXPECTED:
            return float(math.ceil(expected / plate - 1e-9))
        most, spent, plates = DRAW_TIMES * math.ceil(expected) + DRAW_FLOOR, 0, 0
        while not done.all():
            wells, share = 0, 0.0
            for i in np.flatnonzero(~done):
                count = max(math.ceil(self._need(S[i], n[i], level[i], means[i]) - 1e-9), 1)
                hit, S[i], n[i] = self._path(S[i], n[i], level[i], means[i], count, rng)
                done[i], wells = hit is not None, wells + count
                share = max(share, 1.0 if hit is None else hit / count)
            # the arms' wells are spread over the plan (spread_order): certified that far into it, read at that plate
            plates += math.ceil(share * wells / plate - 1e-9)
            spent += wells
            if spent > most and not done.all():
                return math.inf
        return float(plates)

    def log_evidence(self, arm: int) -> float:
        """log E(1 - epsilon) of an arm (-inf if not started)."""
        k = self._slot.get(int(arm))
        if k is None:
            return -math.inf
        S, n = float(self.successes[k]), float(self.tests[k])
        return log_evidence(S, n - S, 1.0 - self.epsilon, self.q)

    def stops(self, answer: np.ndarray) -> bool:
        answer = np.asarray(answer).reshape(-1)
        return all(int(a) in self._slot and self.log_evidence(int(a)) >= self.log_level(self._slot[int(a)])
                   for a in answer)

    def certified_arms(self) -> np.ndarray:
        """The started arms whose e-process crossed its level, in the order started."""
        return np.array([a for k, a in enumerate(self.started) if self.log_evidence(a) >= self.log_level(k)],
                        dtype=np.int64)

    def lower_bounds(self, answer: np.ndarray) -> np.ndarray:
        """Per arm of ``answer``, a lower confidence bound on its mean from its own wells (0: none)."""
        out = np.zeros(np.asarray(answer).size)
        for pos, a in enumerate(np.asarray(answer).reshape(-1).tolist()):
            k = self._slot.get(int(a))
            if k is not None:
                S, n = float(self.successes[k]), float(self.tests[k])
                out[pos] = lower_bound(S, n - S, self.log_level(k), self.q)
        return out

    def certified_epsilon(self, answer: np.ndarray) -> np.ndarray:
        """1 - (lower bound of the mean): each arm is within that of any other arm's mean (inf where its
        wells certify nothing yet)."""
        lcb = self.lower_bounds(answer)
        return np.where(lcb > 0.0, 1.0 - lcb, math.inf)

    def model(self) -> tuple[str, tuple[str, ...]]:
        return ("no model: the compound's own wells alone (0/1 outcomes, independent given the compound; no "
                "hit rate exceeds 1, so a compound whose own rate is at least 1 - epsilon is epsilon-good)", ())


def bernoulli_kl(p: float, q: float) -> float:
    """KL(Bernoulli(p) || Bernoulli(q))."""
    p = min(max(p, 1e-12), 1.0 - 1e-12)
    return p * math.log(p / q) + (1.0 - p) * math.log((1.0 - p) / (1.0 - q))


class LikelihoodOrOwnWells(LikelihoodOr):
    """log-tas's stopping rule at epsilon > 0: the likelihood-ratio set at (1 - WELLS_SHARE) delta OR the
    answer's own wells at WELLS_SHARE delta (module docstring). State: both rules'."""

    name = "likelihood ratio or own wells"
    state_fields = ("lr", "wells")
    own_wells_route = True

    def __init__(self, Z: np.ndarray, m: int, epsilon: float, delta: float, growth: float, late: bool,
                 wells_share: float = WELLS_SHARE, wells_start: float = 1.0):
        """``wells_start``: the policy plans a compound's own wells once they need at most this many times the
        tests made so far (log-tas's ``_wells_block``; ``shortcut_tests`` forecasts the same route)."""
        if not 0.0 < wells_share < 1.0:
            raise ValueError(f"wells_share must be in (0, 1) (the own wells' share of delta); got {wells_share}")
        if not wells_start >= 1.0:
            raise ValueError(f"wells_start must be at least 1; got {wells_start}")
        super().__init__(Z, m, epsilon, delta, growth, late, 1.0 - wells_share)
        self.wells = OwnWells(epsilon, wells_share * delta)
        self.wells_start = float(wells_start)

    @property
    def second(self) -> StoppingRule:
        return self.wells

    def check(self, answer: np.ndarray | None = None) -> np.ndarray | None:
        """m arms certified by their own wells if there are (whether or not they lead the fit: each is
        epsilon-good), else the likelihood-ratio test of ``answer`` on its schedule."""
        certified = self.wells.certified_arms()
        if certified.size >= self.lr.m:
            self.policy.diagnostics["stopped_by"] = "own wells"
            return certified[: self.lr.m]
        answer = self.candidate() if answer is None else np.asarray(answer)
        out = self.lr.check(answer)
        if out is not None:
            self.policy.diagnostics["stopped_by"] = "likelihood ratio"
        return out

    def stops(self, answer: np.ndarray) -> bool:
        return self.wells.stops(answer) or self.lr.stops(answer)

    def certified_epsilon(self, answer: np.ndarray) -> np.ndarray | None:
        a = self.lr.certified_epsilon(answer)
        b = self.wells.certified_epsilon(np.asarray(answer))
        if a is None:  # the set says nothing yet: the wells' bounds alone, if they say anything
            return b if np.isfinite(b).any() else None
        return np.minimum(a, b)

    def model(self) -> tuple[str, tuple[str, ...]] | None:
        """While the current answer is certified by its own wells: no model (the wells' own statement);
        else None, the policy's logistic model, under which the likelihood-ratio set holds."""
        if self.policy is not None and self.wells.stops(self.policy._current_answer()):
            return self.wells.model()
        return None

    def threshold(self, t: float, delta: float) -> float:
        """The likelihood-ratio set's (the wells' test has no threshold on the evidence of directions)."""
        return self.lr.threshold(t, self.lr_share * delta)

    def shortcut_tests(self, answer: np.ndarray, means: np.ndarray, done: float, plate: int | None = None,
                       rng: np.random.Generator | None = None) -> float:
        """The own wells' route (log-tas's ``_wells_block``): wells for the answer once they need no more than
        ``wells_start`` times the tests made, so (tests made when they start) + (wells needed); inf if an arm
        of the answer has a mean <= 1 - epsilon. In plates of ``plate`` tests the route is whole plates: the
        wells start on the first plate planned once enough tests are made (the tests made grow a plate at a
        time), fill at most a plate each, and the stop is read when a plate's outcomes are in. (Counted in
        tests, after plate 1 of the README's recipe on CDK2 the route read 1-2 plates left where the runs whose
        wells passed took 3: wells needing more than the 96 tests made cannot start on plate 2.) With ``rng`` the
        wells needed are one draw of their outcomes (the run's own chance, for a forecast's band: in plates
        ``OwnWells.plates_drawn``, a plate of the wells still needed at a time, else ``OwnWells.needed_drawn``), their
        start still the expected count's, as the policy plans it; without, the expected count (``needed``)."""
        need = np.array([self.wells.needed(int(a), float(mu)) for a, mu in zip(np.ravel(answer), np.ravel(means))])
        if not np.isfinite(need).all():
            return math.inf
        started = all(self.wells.has_started(a) for a in np.ravel(answer))
        start = done if started else max(done, float(need.sum()) / self.wells_start)
        wells = float(need.sum())
        if plate is None:
            if rng is not None:
                wells = float(sum(self.wells.needed_drawn(int(a), float(mu), rng)
                                  for a, mu in zip(np.ravel(answer), np.ravel(means))))
            return start + wells
        plates = (math.ceil(wells / plate - 1e-9) if rng is None
                  else self.wells.plates_drawn(np.ravel(answer), np.ravel(means), plate, rng))
        return done + plate * (math.ceil((start - done) / plate - 1e-9) + plates)

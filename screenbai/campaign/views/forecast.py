"""The cost forecast of a campaign: tests and plates until its stopping rule fires, from the outcomes so far
(``status``) or from a prior before any outcome (``init``), with what other (epsilon, delta) would cost."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from screenbai.campaign.lab.assay import logistic_on_hits, models_features

#: the standard normal's 97.5 % quantile (two-sided 95 % intervals)
Z95 = 1.959963984540054
#: draws of theta for the band of the forecast in ``status`` (each a T* solve: about 0.4 s at K = 4 866, d = 21)
FORECAST_DRAWS = 5
#: the share of runs the forecast's band should hold (``status`` and ``init``)
BAND_LEVEL = 0.8
#: further draws of theta for the band's own wells' route alone (a few scalar operations each, no T* solve): the
#: chance that the estimate's leader fails its wells, weighed by the posterior's mass (docs/lower_bound.md, Session 25)
ROUTE_DRAWS = 200


def forecast_left(camp, policy) -> tuple[float, float, float, float, str, list[str]] | None:
    """(tests, plates, plates at the band's low end, at its high end, the form of T*: "exact" or "local", the untested
    compounds the point rests on) left until the stopping rule fires: the median of the stop's law, given no stop so far
    (where the evidence, growing like t / T*(theta_hat), first passes the algorithm's own threshold
    ``Policy.stopping_threshold(t, delta)``: certainty/forecast.py, LOWER_BOUND.md "Certificate and forecast"; T* the
    exact Bernoulli-KL bound's for the logistic model where affordable; the tests so far counted at their own rate),
    theta_hat the model's estimate from the outcomes so far; the band the BAND_LEVEL interval of the stop over the
    estimate and FORECAST_DRAWS draws of theta from its normal approximation N(theta_hat, H^-1) (H the information of
    the outcomes so far: Fisher's for the logistic model, V / sigma^2 for the linear one), each with the run's own
    chance, and for the second route (log-tas's own wells) ROUTE_DRAWS more draws from the same normal, each with its
    wells' outcomes drawn at its hit rates (seeded, so the same outcomes give the same band). Where the point is the
    second route's (log-tas's own wells) and its wells go first to compounds with no outcome yet, their ids: that point
    rests on the model's extrapolation to them, and it runs longer where they prove below the bar (docs/lower_bound.md,
    "Session 15"). An algorithm with no model of the features that states no threshold is forecast by simulation
    (``_simulated``, the form "simulation"). None for one with a model and no threshold, a fixed budget, or before any
    outcome; infinite tests and plates where the rule would never fire at theta_hat (``never_stops`` says why)."""
    from screenbai.bandits.certainty.forecast import forecast, whole_plates

    inner = getattr(policy, "inner", policy)
    beta = inner.stopping_threshold
    delta = float(getattr(inner, "delta", 0.05))
    if policy.done:
        return None
    if beta(1.0, delta) is None:
        return _simulated(camp, policy)
    active = np.asarray(getattr(policy, "arm_set", np.arange(camp.K)))
    n, s, s2, _ = camp.observations()
    n, s, s2 = n[active], s[active], s2[active]
    if n.sum() == 0:
        return None
    X = camp.features[active]
    if camp.binary and logistic_on_hits(camp.algorithm):
        from scipy.special import expit

        from screenbai.bandits.numerics.glm import logistic_mle

        theta, model, sigma = logistic_mle(X, n, s, 1.0).theta, "logistic", 0.5
        eta = X @ theta
        H = (X.T * (n * expit(eta) * expit(-eta))) @ X + np.eye(X.shape[1])
    else:  # the algorithm's own model: linear, also on 0/1 outcomes (LinGapE, lin-tas, RAGE)
        V = (X.T * n) @ X + np.eye(X.shape[1])
        theta = np.linalg.solve(V, X.T @ s)
        model, sigma = "linear", float(getattr(inner, "sigma", 0.5 if camp.binary else 1.0))
        H = V / sigma**2
    per_plate = plate_tests(camp, camp.layout)
    done = float(n.sum())
    m = int(getattr(inner, "m", 1))
    answer = top_answer(X, theta, m)
    route = _shortcut(inner, X, model, done, per_plate, pick=theta)
    cov = np.linalg.inv(H)
    # the route draws' wells with their own outcomes drawn (seeded): a lucky run of hits certifies sooner
    drawn = _shortcut(inner, X, model, done, per_plate, pick=theta, rng=np.random.default_rng(2))
    route_thetas = np.random.default_rng(1).multivariate_normal(theta, cov, size=ROUTE_DRAWS, method="eigh")
    f = forecast(
        X,
        theta,
        beta,
        delta,
        source="outcomes",
        plate_size=per_plate,
        model=model,
        sigma=sigma,
        epsilon=float(getattr(inner, "epsilon", 0.0)),
        m=m,
        answer=answer,
        cov=cov,
        route_thetas=route_thetas,
        route_shortcut=drawn,
        n_draws=FORECAST_DRAWS,
        level=BAND_LEVEL,
        rng=np.random.default_rng(0),
        shortcut=route,
        exact=True,
        counts=n,
    )
    if not math.isfinite(f.tests):  # the rule would never fire at theta_hat: said so (``never_stops``), not hidden
        return (math.inf, math.inf, math.inf, math.inf, f.bound, [])

    def plates(tests: float) -> float:
        return whole_plates(max(tests - done, 0.0), per_plate)

    left = max(f.tests - done, 0.0)
    # the band holds the point in whole plates too (a point at the end of a plate may round past the band's end)
    point = plates(f.tests)
    untested = _untested_start(answer, route(theta), f.tests, n)
    return (
        left,
        point,
        min(plates(f.low), point),
        max(plates(f.high), point),
        f.bound,
        [str(camp.compound_ids[int(active[a])]) for a in untested],
    )


#: simulated runs of a forecast by simulation (an algorithm with no threshold: ``_simulated``), and the tests each may
#: take past the tests recorded before it counts as not stopped (KL-LUCB: 1 to 1.5 s per capped run at K = 40, about
#: 1 s at K = 4 866; at most half the runs reach the cap, SIMULATED_RUNS // 2 + 1, before the median is known to be
#: past it)
SIMULATED_RUNS = 9
SIMULATED_CAP = 10_000


def _simulated(camp, policy) -> tuple[float, float, float, float, str, list[str]] | None:
    """``forecast_left`` for a fixed-confidence algorithm with no model of the features that states no threshold
    (KL-LUCB, LUCB, UGapE), on 0/1 outcomes: SIMULATED_RUNS copies of it run on from its current state, plate by
    plate, on hit rates drawn from each compound's beta-binomial posterior (bandits/certainty/simulated_forecast.py);
    the median stop and the BAND_LEVEL interval, "simulation" in place of the form of T*. None for a fixed budget, a
    continuous readout or before any outcome."""
    from screenbai.bandits.certainty.forecast import whole_plates
    from screenbai.bandits.certainty.simulated_forecast import rate_draws

    inner = getattr(policy, "inner", policy)
    if not _simulable(camp, inner):
        return None
    active = np.asarray(getattr(policy, "arm_set", np.arange(camp.K)))
    n, s, _, _ = camp.observations()
    if n.sum() == 0:
        return None
    rng = np.random.default_rng(0)
    (point, low, high), per_plate = _simulate(camp, inner, rate_draws(n[active], s[active], SIMULATED_RUNS, rng), rng)

    def plates(tests: float) -> float:
        return whole_plates(tests, per_plate)

    return point, plates(point), plates(low), plates(high), "simulation", []


def _simulable(camp, inner) -> bool:
    """Whether the campaign's algorithm is forecast by simulation: fixed confidence, no threshold stated, no model of
    the features, 0/1 outcomes."""
    return (
        not getattr(inner, "fixed_budget", False)
        and getattr(inner, "stopping_rule", None) is not None
        and camp.binary
        and not models_features(camp.algorithm)
    )


def _simulate(camp, inner, rates: np.ndarray, rng: np.random.Generator) -> tuple[list[float], int]:
    """((median, band's low end, high end) of the tests until the stop over copies of ``inner`` run on ``rates``
    (one row per run), in the plates `next` proposes; the tests of such a plate)."""
    from screenbai.bandits.certainty.simulated_forecast import quantiles, simulated_stops

    from ..state.armset import ArmSetPolicy
    from ..state.replay import propose_wells

    layout = camp.layout  # the plates `next` proposes: a full plate, or the size asked for last
    proposed = plate_compounds(camp, layout)
    replicates = layout.replicates if layout is not None else 1

    def plate(sim, size: int) -> np.ndarray:  # as `next` fills a plate, replicate wells included
        return propose_wells(ArmSetPolicy(sim, np.arange(sim.K), sim.K), size, replicates)

    stops = simulated_stops(
        inner, rates, proposed, SIMULATED_CAP, rng, propose=plate, enough_capped=len(rates) // 2 + 1
    )
    return quantiles(stops, [0.5, (1 - BAND_LEVEL) / 2, (1 + BAND_LEVEL) / 2]), max(plate_tests(camp, layout), 1)


def _untested_start(answer, cap: float, point: float, n: np.ndarray) -> list[int]:
    """The compounds of ``answer`` (the estimate's leaders) with no outcome yet (``n``: tests per compound), where
    the point forecast is the second route's ``cap`` at the estimate (their wells); else none."""
    if not (math.isfinite(cap) and point >= cap - 1e-6):
        return []
    return [int(a) for a in answer if n[a] == 0]


def _shortcut(inner, X: np.ndarray, model: str, done: float, plate: int, pick: np.ndarray | None = None,
              rng: np.random.Generator | None = None):
    """theta -> the tests in all after which the algorithm's second stopping route would stop if theta were the
    truth (``Policy.stopping_shortcut``: log-tas's own wells, in whole plates of ``plate`` tests), for
    ``forecast``'s ``shortcut``.

    ``pick``: the estimate the algorithm chooses by (``status``). The wells go to its leaders, whatever theta says;
    under a draw of theta that puts them below the bar their wells fail: the wells planned for them at the estimate's
    rates are lost, and the route starts again on theta's own leaders (after plate 1 of the README's recipe on CDK2,
    seeds 3, 6 and 7 lost one or two plates so, which a band over each draw's own leader did not show).

    ``rng``: each call is one draw of the route, the wells' outcomes drawn at theta's rates (``stopping_shortcut``'s
    ``rng``; the wells planned for the chosen compounds before they fail stay the estimate's expected count)."""
    from scipy.special import expit

    m = int(getattr(inner, "m", 1))

    def means(answer: np.ndarray, theta: np.ndarray) -> np.ndarray:
        eta = X[answer] @ theta
        return expit(eta) if model == "logistic" else eta

    if pick is not None:  # the chosen compounds, and when their wells would end at the estimate's rates
        chosen = np.asarray(top_answer(X, pick, m))
        planned = inner.stopping_shortcut(chosen, means(chosen, pick), done, plate)

    def tests(theta: np.ndarray) -> float:
        if pick is None:
            own = np.asarray(top_answer(X, theta, m))
            return inner.stopping_shortcut(own, means(own, theta), done, plate, rng=rng)
        first = inner.stopping_shortcut(chosen, means(chosen, theta), done, plate, rng=rng)
        if math.isfinite(first) or not math.isfinite(planned):
            return first  # the chosen compounds pass the bar under theta, or get no wells at all: no pass over X
        own = np.asarray(top_answer(X, theta, m))
        return inner.stopping_shortcut(own, means(own, theta), planned, plate, rng=rng)  # wells fail: theta's own

    return tests


def _take_shortcuts(camp, inner, X: np.ndarray, model: str, theta: np.ndarray, rows: list[dict], plate: int) -> None:
    """The cost table's rows take the stopping rule's second route too (log-tas's own wells), as the headline
    forecast does: without it the row of the campaign's own (epsilon, delta) read 3,220 tests beside a forecast
    of 317. The route depends on epsilon and delta, so each other row asks the algorithm built with them. Each
    row keeps the first route's forecast too (``set_tests``), which is what the row costs if no compound's wells
    pass the bar: in whole plates the wells often cost the same for every row, and the rows differ only there."""
    from screenbai.bandits import make_policy

    if not math.isfinite(_shortcut(inner, X, model, 0.0, plate)(theta)):
        return  # no second route (or none under this theta): the rows stand
    own = (float(getattr(inner, "epsilon", 0.0)), float(getattr(inner, "delta", 0.05)))
    for r in rows:
        if (r["epsilon"], r["delta"]) == own:
            other = inner
        else:
            params = {**camp.meta["params"], "epsilon": r["epsilon"], "delta": r["delta"]}
            other = make_policy(camp.algorithm, X, rng=0, **params)
        wells = float(_shortcut(other, X, model, 0.0, plate)(theta))
        if wells < r["tests"]:
            r["set_tests"], r["tests"] = r["tests"], wells


def top_answer(X: np.ndarray, theta: np.ndarray, m: int) -> tuple[int, ...]:
    """The answer a forecast plans for: the m best compounds under theta. Its T* is the lower bound's
    for that answer (the bound maximises over every epsilon-good answer, at K = 5 000 some 30 times the
    cost; for the forecast the leader's is the one that matters)."""
    return tuple(int(a) for a in first_of_stable_sort(-(X @ theta), m))


def first_of_stable_sort(v: np.ndarray, m: int) -> np.ndarray:
    """``np.argsort(v, kind="stable")[:m]`` (ties in index order) by a partition and a sort of m values: the
    forecast's route takes the top of each of its 200 draws, and a sort of all K (0.27 s at K = 1.58 M) made 56 s of
    a 2-minute ``status``."""
    if m <= 0 or m >= v.size:
        return np.argsort(v, kind="stable")[: max(m, 0)]
    t = np.partition(v, m - 1)[m - 1]  # the m-th smallest value
    if np.isnan(t):  # NaNs sort last: the sort decides among them
        return np.argsort(v, kind="stable")[:m]
    less = np.flatnonzero(v < t)
    pick = np.concatenate([less, np.flatnonzero(v == t)[: m - less.size]])  # ties at t: the lowest indices
    pick.sort()
    return pick[np.argsort(v[pick], kind="stable")]


def usual_plate(camp) -> int:
    row = camp._con.execute("SELECT requested FROM plates ORDER BY step DESC LIMIT 1").fetchone()
    return int(row[0]) if row else 96


def plate_compounds(camp, layout) -> int:
    """Compounds on a plate as `next` proposes it: the format's compound wells over its replicates, or without a
    format the size asked for last (96 before any plate); at most every compound once, as `next` refuses a larger
    plate without --force (a library of 8 compounds: 8 compounds a plate)."""
    return min(usual_plate(camp) if layout is None else layout.compounds_per_plate, camp.K)


def plate_tests(camp, layout) -> int:
    """Tests on a plate as `next` proposes it: ``plate_compounds`` times the layout's replicates."""
    return plate_compounds(camp, layout) * (1 if layout is None else layout.replicates)


#: the prior of the cost forecast at ``init``: hit-rate logits x'theta spread with this standard
#: deviation over the library (hit rates between about 0.12 and 0.88 for 95 % of the compounds)
PRIOR_LOGIT_SD = 1.0
#: ... the same hit rates for an algorithm that models hits linearly (rage, lin-tas on 0/1 outcomes): their
#: standard deviation under the logistic prior above (about 0.2)
PRIOR_RATE_SD = 0.2
PRIOR_DRAWS = 5


def _prior_simulated(camp, inner, seed: int) -> list[str]:
    """``prior_cost`` by simulation (``_simulable``): SIMULATED_RUNS copies of the algorithm run from the start on hit
    rates drawn from the prior, each compound's logit N(0, PRIOR_LOGIT_SD^2) on its own (no model of the features)."""
    from scipy.special import expit

    from screenbai.bandits.certainty.forecast import whole_plates

    rng = np.random.default_rng(seed)
    rates = expit(rng.normal(0.0, PRIOR_LOGIT_SD, size=(SIMULATED_RUNS, inner.K)))
    (point, low, high), per_plate = _simulate(camp, inner, rates, rng)
    spread = (
        f"hit rates between {expit(-Z95 * PRIOR_LOGIT_SD):.2f} and {expit(Z95 * PRIOR_LOGIT_SD):.2f} for 95 % "
        "of the compounds, each on its own"
    )
    settings = f"{camp.algorithm} (epsilon = {float(getattr(inner, 'epsilon', 0.0)):g}, delta = {inner.delta:g})"
    head = (
        f"cost forecast from a prior (a guess before any outcome, {spread}; `status` forecasts from the outcomes "
        f"once a plate is recorded), over {SIMULATED_RUNS} runs of {settings} simulated from the start:"
    )
    if not math.isfinite(point):
        return [
            f"{head} more than {SIMULATED_CAP:,} tests (most runs had not stopped by then: it tests every "
            f"compound at least once, {inner.K:,} here, and a close race at the top costs many more)"
        ]
    return [
        f"{head} it stops after about {point:,.0f} tests ({whole_plates(point, per_plate):,.0f} plates of "
        f"{per_plate}), between {low:,.0f} and {_count(high)} tests in {BAND_LEVEL * 100:.0f} % of runs"
    ]


def _count(tests: float) -> str:
    """A number of tests for a sentence: "no end in sight" when the forecast is unbounded."""
    return f"{tests:,.0f}" if math.isfinite(tests) else "no end in sight"


def never_stops(camp, epsilon: float, at: str = "the prior's median draw") -> str:
    """Why a forecast is unbounded (from a prior, or ``at`` the model fitted to the outcomes), and the way on: at
    epsilon = 0 two compounds with the same features (stereoisomers: Morgan fingerprints ignore stereochemistry) have
    the same mean under any model of the features, so neither is ever shown the better."""
    from screenbai.bandits.numerics.linalg import shared_rows

    twins = int(shared_rows(camp.features)[0].size)  # compounds whose feature vector another compound shares
    why = (
        f"{twins:,} compounds share their features with another (e.g. stereoisomers), so under any model of the "
        "features they have the same mean and neither can be shown the better"
        if twins and epsilon == 0.0
        else f"some rival cannot be told from the answer within epsilon at {at}"
    )
    return (
        f"would not stop: {why}; an epsilon above 0 bounds it (e.g. --param epsilon=0.1, in the units of the outcome)"
    )


def prior_cost(camp, *, draws: int = PRIOR_DRAWS, seed: int = 0) -> list[str]:
    """What the screen will cost, said at ``init`` before any outcome: the forecast of tests and plates
    until the stopping rule fires (certainty/forecast.py) for theta drawn from a prior, theta ~ N(0, s^2 I)
    with s set so that x'theta has standard deviation PRIOR_LOGIT_SD over the library, and what other
    (epsilon, delta) would cost at the median draw. A guess, labelled so: ``status`` replaces it by the
    forecast from outcomes after the first plate. By simulation for an algorithm with no model of the features
    that states no threshold (``_prior_simulated``); a line saying there is none for other algorithms without one."""
    from screenbai.bandits.certainty.local_form import shared_features

    policy = camp.policy
    inner = getattr(policy, "inner", policy)
    delta = float(getattr(inner, "delta", 0.05))
    if inner.stopping_threshold(1.0, delta) is None:
        if _simulable(camp, inner):
            return _prior_simulated(camp, inner, seed)
        return [
            f"cost forecast: {camp.algorithm} states no stopping threshold (a fixed budget, or a rule "
            "without one); status gives what it certifies as the plates come back"
        ]
    X = np.ascontiguousarray(camp.features, dtype=float)
    model = "logistic" if camp.binary and logistic_on_hits(camp.algorithm) else "linear"
    sigma = 0.5 if model == "logistic" else float(getattr(inner, "sigma", 0.5 if camp.binary else 1.0))
    # the spread of x'theta over the library, on the model's own scale: logits of hit rates, hit rates, or the
    # readout itself (its units unknown before any outcome: as large as one test's noise, the sigma declared)
    spread_sd = PRIOR_LOGIT_SD if model == "logistic" else PRIOR_RATE_SD if camp.binary else sigma
    scale = spread_sd / max(float(np.sqrt(np.mean(np.sum(X * X, axis=1)))), 1e-12)
    rng = np.random.default_rng(seed)
    thetas = rng.normal(0.0, scale, size=(draws, X.shape[1]))
    epsilon, m = float(getattr(inner, "epsilon", 0.0)), int(getattr(inner, "m", 1))
    per_plate = plate_tests(camp, camp.layout)
    kw: dict[str, Any] = {"model": model, "sigma": sigma, "m": m}
    with shared_features(X):  # one projection of the features for the draws, the point and the table's solves
        return _prior_lines(camp, inner, X, thetas, model, sigma, epsilon, m, per_plate, delta, spread_sd, kw)


def _prior_lines(camp, inner, X, thetas, model, sigma, epsilon, m, per_plate, delta, spread_sd, kw) -> list[str]:
    """``prior_cost``'s forecasts and their lines, for the prior's draws ``thetas``."""
    from scipy.special import expit

    from screenbai.bandits.certainty.forecast import BOUNDS, cost_table, forecast, stop_quantiles, whole_plates

    from ..lab.assay import Readout, told_amount

    shortcut = _shortcut(inner, X, model, 0.0, per_plate)
    runs = [
        forecast(
            X,
            th,
            inner.stopping_threshold,
            delta,
            source="prior",
            plate_size=per_plate,
            epsilon=epsilon,
            answer=top_answer(X, th, m),
            shortcut=shortcut,
            **kw,
        )
        for th in thetas
    ]
    order = np.argsort([f.tests for f in runs], kind="stable")
    mid = int(order[len(order) // 2])  # the median draw: its forecast is the point, and its table
    # T* of the exact Bernoulli-KL bound where affordable: one solve, at the median draw, and every draw's local
    # T* scaled by its ratio to the local one there (as status's band; a solve per draw would take 5 times longer)
    # the median draw's local T* is runs[mid]'s (the same solve: not made again, here nor in the table below)
    point = forecast(
        X,
        thetas[mid],
        inner.stopping_threshold,
        delta,
        source="prior",
        plate_size=per_plate,
        epsilon=epsilon,
        answer=top_answer(X, thetas[mid], m),
        shortcut=shortcut,
        exact=True,
        local_T=runs[mid].T_star,
        **kw,
    )
    ratio = point.T_star / runs[mid].T_star if point.bound == "exact" else 1.0
    low, high = stop_quantiles(
        [f.T_star * ratio for f in runs],
        [shortcut(th) for th in thetas],
        inner.stopping_threshold,
        delta,
        [(1 - BAND_LEVEL) / 2, (1 + BAND_LEVEL) / 2],
    )
    tests = point.tests

    def plates(t: float) -> str:
        n = "unbounded" if not math.isfinite(t) else f"{whole_plates(t, per_plate):,.0f}"
        return f"{n} plate{'' if n == '1' else 's'}"

    readout = camp.meta.get("readout")
    unit = f" {Readout.from_dict(readout).unit}" if readout and Readout.from_dict(readout).unit else ""
    unit = " log10 units" if readout and Readout.from_dict(readout).scale == "log10" else unit
    spread = (
        f"hit rates between {expit(-Z95 * PRIOR_LOGIT_SD):.2f} and {expit(Z95 * PRIOR_LOGIT_SD):.2f} for 95 % of the "
        "compounds"
        if model == "logistic"
        else f"hit rates spread with sd {PRIOR_RATE_SD:g} over the library"
        if camp.binary
        else f"mean outcomes spread with sd {spread_sd:g}{unit} over the library, as much as one test's noise, sigma "
        f"= {told_amount(sigma, Readout.from_dict(readout) if readout else None)}"
    )
    other = max(epsilon, 0.05) * 2  # a looser epsilon; on hit rates below 1 (at 1 every compound is correct)
    other = other if not camp.binary or other < 1 else epsilon / 2
    rows = cost_table(
        X,
        thetas[mid],
        inner.stopping_threshold,
        epsilons=sorted({epsilon, other}),
        deltas=sorted({delta, 0.1, 0.01}),
        source="prior",
        plate_size=per_plate,
        answer=top_answer(X, thetas[mid], m),
        exact=True,
        known={epsilon: runs[mid].T_star},
        **kw,
    )
    _take_shortcuts(camp, inner, X, model, thetas[mid], rows, per_plate)
    own = next((r for r in rows if (r["epsilon"], r["delta"]) == (epsilon, delta) and "set_tests" in r), None)
    wells = "a compound's own wells" if m == 1 else f"the own wells of each of {m} compounds"  # the rule needs all m
    aim = f"epsilon = {epsilon:g}, delta = {delta:g}" + ("" if m == 1 else f", to name the {m} best")
    route = (
        ""
        if own is None or tests > own["tests"] + 0.5
        else (
            f", counting on {wells} showing a hit rate of at least {1 - epsilon:g} (without them about "
            f"{own['set_tests']:,.0f} tests, {plates(own['set_tests'])})"
        )
    )
    # in plates the own wells' route is often the same whole plates for every draw: one number, not "704 and 704"
    span = (
        f"{low:,.0f} tests in {BAND_LEVEL * 100:.0f} % of runs"
        if math.isfinite(high) and round(low) == round(high)
        else f"between {low:,.0f} and {high:,.0f} tests in {BAND_LEVEL * 100:.0f} % of runs"
        if math.isfinite(high)
        else f"{low:,.0f} tests or more in {(1 + BAND_LEVEL) / 2 * 100:.0f} % of runs (at least one in "
        f"{round(2 / (1 - BAND_LEVEL))} never stops)"
    )
    if not math.isfinite(tests):
        lines = [f"cost forecast from a prior: {camp.algorithm} ({aim}) {never_stops(camp, epsilon)}"]
    else:
        lines = [
            f"cost forecast from a prior (a guess before any outcome, {spread}; `status` forecasts from the outcomes "
            f"once a plate is recorded): {camp.algorithm} ({aim}) stops after about "
            f"{tests:,.0f} tests ({plates(tests)} of {per_plate}){route}, "
            f"{span} over "
            f"{len(runs)} draws of the prior and the run's own chance, with T* from {BOUNDS[point.bound]}. It assumes "
            "the tests are spread as well as they can be: with 2 to 10 "
            "features simulated runs needed 0.7 to 1.8 times such a forecast, and more with more features (this "
            f"library has {X.shape[1]}; docs/lower_bound.md)",
        ]
    if getattr(inner, "forecast_caveat", ""):
        lines.append(f"note: {inner.forecast_caveat}")

    def row(r: dict) -> str:
        cost = f"{r['tests']:,.0f} tests ({plates(r['tests'])})" if math.isfinite(r["tests"]) else "no end in sight"
        said = f"epsilon {r['epsilon']:g} and delta {r['delta']:g}: {cost}"
        if "set_tests" not in r:
            return said
        return (
            f"{said}, or {r['set_tests']:,.0f} ({plates(r['set_tests'])}) if "
            + ("no compound's own wells reach" if m == 1 else f"the own wells of {m} compounds do not all reach")
            + f" {1 - r['epsilon']:g}"
        )

    if any("set_tests" in r for r in rows):
        lines.append(
            f"other settings (the first figure counts on {wells} showing a hit rate of at "
            "least 1 - epsilon, as the forecast above does; the second is the model's route without them):"
        )
    else:
        lines.append("other settings:")
    return lines + ["  " + row(r) for r in rows]  # one line a setting, to read down as a table

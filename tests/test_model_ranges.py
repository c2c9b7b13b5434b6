"""The model's ranges status shows: each listed compound's hit rate over the stopping rule's likelihood-ratio set
(numerics/lr_range.py, campaign/views/model_ranges.py), checked against a dense grid of theta at d = 2, against
the true hit rates of a simulated campaign, and in status's text and JSON."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from campaign_util import Assay, new_campaign, write_results
from scipy.special import expit

from screenbai.bandits.numerics.linalg import cholesky_solve
from screenbai.bandits.numerics.lr_range import ETA_CAP, RANGE_TOL, hit_rate_ranges, predictor_range, upper_end
from screenbai.bandits.numerics.lr_set import LikelihoodRatioSet, _onto_plane, _plane_search, nll
from screenbai.campaign.views.estimates import model_estimates
from screenbai.campaign.views.model_ranges import model_ranges, range_text


def _grid(X, n, s, level, box, m=1001):
    """The points of an m x m grid of ``box`` (per coordinate) with L(theta) <= level, the grid's spacing, and
    whether the set touches the box's edge (then the box is too small)."""
    t0 = np.linspace(*box[0], m)
    t1 = np.linspace(*box[1], m)
    T = np.stack(np.meshgrid(t0, t1, indexing="ij"), axis=-1).reshape(-1, 2)
    eta = T @ X.T
    L = np.logaddexp(0.0, eta) @ n - eta @ s
    inside = (L <= level).reshape(m, m)
    edge = inside[0].any() or inside[-1].any() or inside[:, 0].any() or inside[:, -1].any()
    step = max((box[0][1] - box[0][0]), (box[1][1] - box[1][0])) / (m - 1)
    return T[inside.ravel()], step, edge


def test_the_range_matches_a_dense_grid_of_theta_at_d2():
    """A skewed set (rates 0.05 to 1 along one feature): the range of x'theta over C_t, for the tested arms and an
    extrapolation, holds the grid's range (safe) and is within the grid's spacing of it (tight). The quadratic
    model's ends (a Wald-like interval at the set's level) miss it by more than that here."""
    X = np.array([[1.0, -1.0], [1.0, 0.0], [1.0, 1.0], [1.0, 2.0]])
    n = np.array([20.0, 20.0, 20.0, 5.0])
    s = np.array([1.0, 5.0, 12.0, 5.0])
    cs0 = LikelihoodRatioSet(X, n, s, 1e9, np.zeros(2))
    level = cs0.f_min + 4.0
    cs = LikelihoodRatioSet(X, n, s, level, np.zeros(2))
    assert cs.bounded and not cs.empty
    box = [(cs.theta[0] - 3.0, cs.theta[0] + 3.0), (cs.theta[1] - 3.0, cs.theta[1] + 3.0)]
    points, step, edge = _grid(X, n, s, level, box)
    assert not edge
    quad_missed = 0
    for x in [*X, np.array([1.0, 4.0]), np.array([0.0, 1.0])]:
        lo_g, hi_g = (points @ x).min(), (points @ x).max()
        lo, hi = predictor_range([cs], x)
        slack = step * np.abs(x).sum()  # a grid point within this of every point of the set
        assert lo <= lo_g + 1e-12 and hi >= hi_g - 1e-12, (x, lo, lo_g, hi, hi_g)  # safe
        assert lo >= lo_g - slack - RANGE_TOL and hi <= hi_g + slack + RANGE_TOL, (x, lo, lo_g, hi, hi_g)  # tight
        # the quadratic model's ends at the same level
        sd = math.sqrt(float(x @ np.linalg.solve(cs.chol @ cs.chol.T, x)))
        half = math.sqrt(2.0 * (level - cs.f_min)) * sd
        quad_missed += abs(float(x @ cs.theta) + half - hi_g) > slack + RANGE_TOL
    assert quad_missed >= 3
    # the hit rates: the ends through mu
    (r,) = hit_rate_ranges([cs], X[:1])
    lo, hi = predictor_range([cs], X[0])
    assert r == pytest.approx((expit(lo), expit(hi)))


def test_each_end_is_within_the_tolerance_of_a_point_of_the_set_at_d4():
    """At d = 4 (no grid): safe by the plane tests, and tight: a point of C_t lies within 2 RANGE_TOL of each end
    (found by the plane search, its likelihood checked), on a set as wide as a campaign's (30 nats above the
    minimum, outer radius 52)."""
    rng = np.random.default_rng(4)
    X = np.hstack([rng.normal(size=(10, 3)), np.ones((10, 1))])
    theta = rng.normal(size=4) * 1.5
    n = rng.integers(5, 60, 10).astype(float)
    s = rng.binomial(n.astype(int), expit(X @ theta)).astype(float)
    f_min = LikelihoodRatioSet(X, n, s, 1e9, np.zeros(4)).f_min
    cs = LikelihoodRatioSet(X, n, s, f_min + 30.0, np.zeros(4))
    assert cs.bounded and cs.rho > 50
    for x in X:
        lo, hi = predictor_range([cs], x)
        for w, end in ((x, hi), (-x, -lo)):
            g = end - 2 * RANGE_TOL
            start = _onto_plane(cs.theta, w, cholesky_solve(cs.chol, w), g)
            ruled, p = _plane_search(cs.Zp, cs.n, cs.s, w, start, cs.level)
            assert not ruled and nll(X, n, s, p) <= cs.level and w @ p >= g - 1e-9


def test_separable_outcomes_leave_one_end_open_and_the_other_matches_the_grid():
    """Arm 0 never a hit, its own direction untouched by the other arm: no minimiser, C_t unbounded towards a rate
    0 for arm 0 (its lower end -inf), its upper end finite and as on the grid; intersecting with a second set
    keeps the larger lower end and the smaller upper end; an empty set gives None."""
    X = np.array([[1.0, 0.0], [1.0, 1.0]])
    n = np.array([10.0, 10.0])
    s = np.array([0.0, 5.0])
    level = 10.0 * math.log(2.0) + 3.0  # inf L = 10 log 2 (arm 1 at 1/2, arm 0's loss -> 0)
    cs = LikelihoodRatioSet(X, n, s, level, np.zeros(2))
    assert not cs.bounded
    x = X[0]
    lo, hi = predictor_range([cs], x)
    assert lo == -math.inf
    points, step, _ = _grid(X, n, s, level, [(-30.0, 5.0), (-5.0, 30.0)], m=1401)
    hi_g = (points @ x).max()
    assert hi_g - step * 2 - RANGE_TOL <= hi and hi >= hi_g - 1e-12
    assert hi <= hi_g + 2 * step + RANGE_TOL
    assert hit_rate_ranges([cs], X[:1])[0][0] == 0.0
    # an empty set (level below the minimum): no range
    Xb = np.array([[1.0, -1.0], [1.0, 1.0]])
    nb, sb = np.array([10.0, 10.0]), np.array([3.0, 6.0])
    empty = LikelihoodRatioSet(Xb, nb, sb, 0.0, np.zeros(2))
    assert empty.empty and predictor_range([empty], Xb[0]) is None
    # two sets: the intersection of their ranges
    wide = LikelihoodRatioSet(Xb, nb, sb, 30.0, np.zeros(2))
    narrow = LikelihoodRatioSet(Xb, nb, sb, 15.0, np.zeros(2))
    both = predictor_range([wide, narrow], Xb[0])
    assert both == pytest.approx(predictor_range([narrow], Xb[0]))
    assert predictor_range([], Xb[0]) == (-math.inf, math.inf)


def test_a_step_out_past_the_cap_still_finds_the_end_below_it():
    """Separable outcomes, the surrogate centre far out (x'theta 13) with a wide first step (84): the step-out
    leapt from 13 - 84 to past -ETA_CAP and gave up, so a compound with 77 hits in 77 wells read a range of
    [0.000, 1.000] (a finished CDK2 campaign of the README's recipe, level 389). One feature: C_t is
    {theta: 77 log(1 + e^-10 theta) <= level}, the lower end of 10 theta exactly -log(e^(level/77) - 1)."""
    X = np.array([[10.0]])
    level = 389.0
    cs = LikelihoodRatioSet(X, np.array([77.0]), np.array([77.0]), level, np.zeros(1))
    assert not cs.bounded
    w = X[0]
    assert float(w @ cs.theta) - math.sqrt(float(w @ cholesky_solve(cs.chol, w))) < -ETA_CAP  # the leap
    exact = -math.log(math.expm1(level / 77.0))  # -5.0455
    lo, hi = predictor_range([cs], X[0])
    assert hi == math.inf
    assert exact - RANGE_TOL <= lo <= exact  # safe and tight
    assert range_text(*hit_rate_ranges([cs], X)[0]) == "[0.006, 1.000]"


def test_range_text_rounds_outwards():
    assert range_text(0.12345, 0.45612) == "[0.123, 0.457]"
    assert range_text(0.0, 1.0) == "[0.000, 1.000]"
    assert range_text(0.5, 0.5) == "[0.500, 0.500]"


def _run(tmp_path, algorithm, params, plates, seed, assay_seed):
    camp = new_campaign(tmp_path / "c.campaign", algorithm, params, K=30, d=3, seed=seed)
    assay = Assay(camp.features, seed=assay_seed)
    for k in range(plates):
        if camp.policy.done:
            break
        plate = camp.next_plate(20)
        camp.record(write_results(tmp_path / f"r{k}.csv", plate, assay(plate.arms)))
    return camp, assay


@pytest.mark.slow  # 6 s: ten plates of log-tas
def test_the_ranges_hold_the_true_hit_rates_where_the_wald_intervals_do_not(tmp_path):
    """log-tas on a library whose hit rates follow the logistic model on its features (known theta, seeded): every
    compound's true hit rate lies in its range over the rule's sets (as status computes them), while the Wald
    interval at the fit, status's model interval before, misses most of them. status shows the recommendation's
    range, in the text and the JSON (``model_range``, ``model_range_delta``)."""
    camp, assay = _run(tmp_path, "log-tas", {"epsilon": 0.1, "delta": 0.05}, 10, seed=4, assay_seed=14)
    ranges, delta = model_ranges(camp.policy, np.arange(camp.K))
    lo, hi = np.array([r[0] for r in ranges]), np.array([r[1] for r in ranges])
    mu = assay.means
    assert delta == 0.05
    assert np.all((lo <= mu) & (mu <= hi))
    assert np.median(hi - lo) < 0.5  # not the empty statement [0, 1]
    n, s, s2, _ = camp.observations()
    _, w_lo, w_hi = model_estimates(camp.features, n, s, s2, binary=True)
    assert int(((mu < w_lo) | (mu > w_hi)).sum()) >= 10
    st = camp.status()
    a = camp.compound_ids.index(st.recommendation[0].compound_id)
    assert st.recommendation[0].model_range == pytest.approx(ranges[a])
    out = json.loads(json.dumps(st.to_dict()))
    assert out["model_range_delta"] == 0.05
    first = out["recommendation"][0]
    assert first["model_range"] == pytest.approx(list(ranges[a])) and len(first["model_ci"]) == 2
    text = st.text()
    assert "valid at any stop, under the logistic model on these features, at the campaign's delta = 0.05" in text
    assert f"range {range_text(*ranges[a])}" in text
    camp.close()


@pytest.mark.parametrize(
    "algorithm, params",
    [("lingape", {"epsilon": 0.1, "delta": 0.05}), ("glgape", {"epsilon": 0.1, "calibration": "reinterpreted"})],
)
def test_without_a_likelihood_ratio_set_the_wald_interval_stays_and_is_said_descriptive(tmp_path, algorithm, params):
    camp, _ = _run(tmp_path, algorithm, params, 2, seed=1, assay_seed=2)
    st = camp.status()
    out = json.loads(json.dumps(st.to_dict()))
    assert out["model_range_delta"] is None and out["recommendation"][0]["model_range"] is None
    assert "the model's intervals are descriptive: a Wald interval at its fit, not valid at any stop" in st.text()
    assert "valid at any stop, under the logistic model" not in st.text()
    camp.close()


def test_rage_glm_ranges_leave_out_the_open_phase(tmp_path):
    """RAGE-GLM predicts a phase's outcomes (its P_t) when the phase closes: its set is of the outcomes in P_t only,
    so a set with the open phase's outcomes but not their prediction loss (too small a level) is never used."""
    camp, _ = _run(tmp_path, "rage-glm", {"epsilon": 0.1, "delta": 0.05}, 3, seed=1, assay_seed=2)
    inner = getattr(camp.policy, "inner", camp.policy)
    sets = inner.stopping_rule.lr_sets()
    in_pt = inner.n - (inner.phase_counts if inner.planned.any() else 0)
    assert sum(float(cs.n.sum()) for cs in sets) == float(in_pt.sum())
    assert inner.phase_counts.sum() > 0 and in_pt.sum() < inner.n.sum()  # an open phase with outcomes
    camp.close()


@pytest.mark.slow  # 7 s: six plates of log-tas and a restart
def test_after_a_withdrawal_the_range_is_of_the_compound_itself(tmp_path):
    """After compounds are withdrawn the algorithm works on the active ones under its own numbers (state/armset.py):
    status took the campaign's arm number as the algorithm's (an IndexError past the active count, else another
    compound's features). The range is that of the compound's own features over the rule's sets."""
    from screenbai.campaign.state.changes import withdraw

    camp, _ = _run(tmp_path, "log-tas", {"epsilon": 0.1, "delta": 0.05}, 6, seed=2, assay_seed=3)
    withdraw(camp, [f"CPD{k:04d}" for k in range(0, 12)], "shortlist")
    st = camp.status()
    inner = camp.policy.inner
    a = camp.compound_ids.index(st.recommendation[0].compound_id)
    assert a >= 12 and camp.policy.to_local(np.array([a]))[0] != a
    assert np.allclose(inner.Z[camp.policy.to_local(np.array([a]))[0]], camp.features[a])
    (expected,) = hit_rate_ranges(inner.stopping_rule.lr_sets(), camp.features[[a]])
    assert st.recommendation[0].model_range == pytest.approx(expected)
    camp.close()


def test_the_sets_own_range_ends_are_near_the_exact_ones(tmp_path):
    """LikelihoodRatioSet._range_end (the certificate's, the stopping tests' and RAGE-GLM's range ends) and
    lr_range.upper_end (status's) are safe outer ends, near each other and near the truth. On this GLGapE campaign
    (every tested compound's prediction saturates far out) two faults made them loose: _range_end bisected [the
    quadratic end, the outer radius], and a plane search far out gave up (its Newton step ran to 1e12, see
    _plane_search), which counts as reached; a compound's lower end read -734 where a converged plane test rules out
    everything below -62 (rangeV's reproduction: -33.4 for a true -8.28)."""
    camp, _ = _run(tmp_path, "glgape", {"epsilon": 0.1, "delta": 0.05}, 15, seed=1, assay_seed=2)
    inner = getattr(camp.policy, "inner", camp.policy)
    (cs,) = inner.stopping_rule.lr_sets()
    for x in inner.Z:
        centre = float(x @ cs.theta)
        for lower in (True, False):
            exact = -upper_end(cs, -x) if lower else upper_end(cs, x)
            end = cs._range_end(x, lower=lower)
            assert (end <= exact + 1e-9) if lower else (end >= exact - 1e-9)  # both outer: the coarser outside
            assert abs(end - exact) <= 0.02 * abs(exact - centre) + 2 * RANGE_TOL  # 8 bisections after the step-out
            # and the end is near the set: a point of C_t lies within 2 % of the distance from the centre
            g = exact + (0.02 * abs(exact - centre) + 2 * RANGE_TOL) * (1.0 if lower else -1.0)
            w = -x if lower else x
            Hinv_w = cholesky_solve(cs.chol, w)
            reached, point = _plane_search(
                cs.Zp, cs.n, cs.s, w, _onto_plane(cs.theta, w, Hinv_w, -g if lower else g), cs.level
            )
            assert not reached and nll(cs.Zp, cs.n, cs.s, point) <= cs.level


def test_a_pair_bound_on_separable_outcomes_is_near_the_sup(tmp_path):
    """On separable outcomes (8 plates of GLGapE, every tested compound's prediction saturating) the set has no
    minimiser and a plane's infimum lies hundreds out in the linear predictors. With each plane-search step capped at
    10 in them (commit 7908638) the search ran out of its 60 Newton steps at 603 and the pair test counted as not
    ruled out: the certificate's pair bound of compound 4 against the answer rose from 0.765 to 0.958 and status's
    certified epsilon from 0.889 to 0.958 on the same outcomes. The cap now doubles after each full capped step.
    The bound stays safe: a point of C_t found by a constrained optimiser has a gap just below it."""
    from scipy.optimize import minimize

    camp, _ = _run(tmp_path, "glgape", {"epsilon": 0.1, "delta": 0.05}, 8, seed=1, assay_seed=2)
    inner = getattr(camp.policy, "inner", camp.policy)
    (cs,) = inner.stopping_rule.lr_sets()
    Z, (i,) = inner.Z, inner._current_answer()
    assert not cs.bounded and i == 19
    bound = cs._pair_bound(Z[i], Z[4], -math.inf, math.inf, 1.0)
    gap = lambda t: float(expit(Z[4] @ t) - expit(Z[i] @ t))  # noqa: E731
    inside = {"type": "ineq", "fun": lambda t: cs.level - nll(cs.Zp, cs.n, cs.s, t)}
    witness = minimize(lambda t: -gap(t), cs.theta, method="SLSQP", constraints=[inside], options={"maxiter": 2000}).x
    assert nll(cs.Zp, cs.n, cs.s, witness) <= cs.level + 1e-9
    assert gap(witness) - 1e-6 <= bound <= gap(witness) + 0.02  # safe, and within 0.02 of the sup (was 0.958)
    assert camp.status().to_dict()["certified_epsilon"] <= 0.9  # 0.889 before 7908638, 0.958 with the fixed cap
    camp.close()


def test_the_ranges_note_points_up_to_the_model_check_status_prints_before_them(tmp_path):
    """status prints the model check among the certainty lines and the recommendation's table last; the ranges'
    note said "the model check below rejects this model", pointing at nothing below it (seen in status and in the
    report's status text of a finished log-tas campaign whose model the check rejected)."""
    import dataclasses

    camp = new_campaign(tmp_path / "c.campaign", "log-tas", {"epsilon": 0.3}, K=20, d=2, seed=1)
    st = camp.status()
    camp.close()
    check = {
        "n_tests": 700,
        "n_arms": 22,
        "rejected": True,
        "tests": [{"name": "x"}],
        "p_value": 1e-4,
        "note": None,
        "warning": "WARNING: misfit.",
    }
    text = dataclasses.replace(st, model_check=check, model_range_delta=0.05).text()
    note = "the model check above rejects this model: treat them as unproven"
    assert note in text and "the model check below rejects this model" not in text
    assert text.index("model check: WARNING: misfit.") < text.index(note)


def test_the_export_gives_the_recommended_range_status_shows_beside_the_wald_interval(tmp_path):
    """status and the report give the recommendation's range over the likelihood-ratio set; the export's only
    interval, model_low/model_high, was the Wald interval at the fit, unlabelled (a finished CDK2 campaign:
    [0.966, 0.987] in the CSV against [0.862, 1.000] in status). The CSV now carries the range beside it, and the
    workbook's campaign sheet says which is which."""
    import csv
    import zipfile

    from screenbai.campaign.views.export import export

    camp, _ = _run(tmp_path, "log-tas", {"epsilon": 0.1, "delta": 0.05}, 3, seed=4, assay_seed=14)
    st = camp.status()
    written = export(camp, tmp_path)
    camp.close()
    with open(written[0], newline="") as fh:
        rows = list(csv.DictReader(fh))
    first = rows[0]
    assert first["compound_id"] == st.recommendation[0].compound_id
    lo, hi = st.recommendation[0].model_range
    assert float(first["model_range_low"]) == pytest.approx(lo)
    assert float(first["model_range_high"]) == pytest.approx(hi)
    assert (float(first["model_low"]), float(first["model_high"])) != pytest.approx((lo, hi))  # the Wald one stays
    assert all(r["model_range_low"] == "" for r in rows[1:])  # only the compounds status ranges
    sheet = zipfile.ZipFile(written[2]).read("xl/worksheets/sheet3.xml").decode()
    assert "a Wald interval at the fit, descriptive" in sheet and "true together, at any stop" in sheet


def test_the_export_s_model_check_does_not_call_an_own_wells_certificate_unproven(tmp_path):
    """A finished log-tas campaign certified by its leader's own wells, whose model the check rejected: status said
    the certificate stands, the export's campaign sheet said "certificate proven: yes" and, in the model check's
    cell, "The certificate and the stopping rule's guarantee assume this model: treat them as unproven"."""
    import dataclasses

    from screenbai.bandits.certainty.model_check import MODEL_ASSUMED
    from screenbai.campaign.views.export import model_check_text

    camp = new_campaign(tmp_path / "c.campaign", "log-tas", {"epsilon": 0.3}, K=20, d=2, seed=1)
    st = camp.status()
    camp.close()
    check = {"n_tests": 700, "n_arms": 22, "rejected": True, "tests": [{"name": "x"}], "p_value": 1e-4}
    rejected = dataclasses.replace(st, model_check={**check, "warning": f"WARNING: misfit. {MODEL_ASSUMED}"})
    wells = dataclasses.replace(rejected, certificate={"model": "no model: the compound's own wells alone"})
    assert MODEL_ASSUMED not in model_check_text(wells)
    assert "rests on the compound's own wells, not on this model, and stands" in model_check_text(wells)
    on_model = dataclasses.replace(rejected, certificate={"model": "the logistic model on these features"})
    assert model_check_text(on_model) == f"WARNING: misfit. {MODEL_ASSUMED}"


def test_the_report_s_range_column_says_unproven_where_the_model_check_rejects_the_model(tmp_path):
    """status's ranges note says "the model check above rejects this model: treat them as unproven"; the report's
    recommendation table headed the same ranges "valid at any stop under the model" with no word of it."""
    import dataclasses

    from screenbai.campaign.views.page import write_report

    camp, _ = _run(tmp_path, "log-tas", {"epsilon": 0.1, "delta": 0.05}, 2, seed=4, assay_seed=14)
    st = camp.status()
    assert st.model_range_delta == 0.05
    head = "model estimate [range, valid at any stop under the model, delta = 0.05"
    page = write_report(camp, tmp_path / "plain", status=st).read_text()
    assert f"{head}]" in page and "the model check rejects the model: unproven" not in page
    check = {**(st.model_check or {}), "rejected": True, "n_tests": 40, "warning": "WARNING: misfit."}
    page = write_report(camp, tmp_path / "rejected", status=dataclasses.replace(st, model_check=check)).read_text()
    camp.close()
    assert f"{head}; the model check rejects the model: unproven]" in page

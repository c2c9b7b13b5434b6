"""Cure labels and the logistic ground truth (Bernoulli arm means)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit

from screenbai.chem.ground_truth import GroundTruth, binarize, fit_ground_truth


def test_binarize_is_strict_and_validated():
    np.testing.assert_array_equal(binarize([10.0, 999_999.0, 1e6, 2e6]), [True, True, False, False])
    np.testing.assert_array_equal(binarize([10.0, 100.0], threshold_nM=50), [True, False])
    with pytest.raises(ValueError, match="non-finite"):
        binarize([1.0, np.nan])
    with pytest.raises(ValueError, match="threshold_nM"):
        binarize([1.0], threshold_nM=0)


@pytest.fixture(scope="module")
def synthetic():
    rng = np.random.default_rng(2024)
    n, theta, b = 3000, np.array([3.0, -2.0, 0.0]), 0.5
    X = rng.normal(size=(n, 3))
    p = expit(X @ theta + b)
    y = rng.random(n) < p
    return X, y, theta, b, p


def test_recovers_known_logistic_model(synthetic):
    X, y, theta, b, p = synthetic
    gt = fit_ground_truth(X, y, C=1e4)
    assert isinstance(gt, GroundTruth)
    assert np.sign(gt.theta[:2]).tolist() == [1.0, -1.0]
    np.testing.assert_allclose(gt.theta, theta, atol=0.3)
    assert gt.intercept == pytest.approx(b, abs=0.2)
    assert gt.roc_auc > 0.9 and gt.accuracy > 0.8
    assert np.mean(np.abs(gt.means - p)) < 0.03
    assert gt.n_cured + gt.n_not_cured == len(y) and gt.n_cured == int(y.sum())
    assert 0 < gt.brier < 0.25 and 0 < gt.log_loss < np.log(2)
    with pytest.raises(ValueError, match="read-only"):
        gt.means[0] = 0.5


def test_arm_features_absorb_intercept(synthetic):
    X, y, *_ = synthetic
    gt = fit_ground_truth(X, y)
    A = gt.arm_features(X)
    assert A.shape == (len(X), 4) and np.all(A[:, -1] == 1.0)
    assert gt.theta_full.shape == (4,) and gt.theta_full[-1] == gt.intercept
    np.testing.assert_allclose(expit(A @ gt.theta_full), gt.means, rtol=1e-10)
    np.testing.assert_allclose(gt.predict_means(X[:5]), gt.means[:5])
    with pytest.raises(ValueError, match=r"shape \(n, 3\)"):
        gt.arm_features(X[:, :2])


def test_regularisation_shrinks_and_is_deterministic(synthetic):
    X, y, *_ = synthetic
    strong = fit_ground_truth(X, y, C=1e-3)
    weak = fit_ground_truth(X, y, C=1e4)
    assert np.linalg.norm(strong.theta) < np.linalg.norm(weak.theta)
    again = fit_ground_truth(X, y, C=1e-3)
    np.testing.assert_array_equal(strong.means, again.means)


def test_single_class_is_explained():
    X = np.random.default_rng(0).normal(size=(20, 2))
    cured = binarize(np.full(20, 50.0), threshold_nM=1e6)
    with pytest.raises(ValueError, match=r"no non-cured.*threshold_nM"):
        fit_ground_truth(X, cured)
    with pytest.raises(ValueError, match=r"no cured.*threshold_nM"):
        fit_ground_truth(X, ~cured)
    with pytest.raises(ValueError, match="must match"):
        fit_ground_truth(X, cured[:5])


# ---------------------------------------------------------------------- cure labels
def test_cure_threshold_three_rules_and_the_class_balance():
    from screenbai.chem.ground_truth import cure_threshold

    a = np.array([0.3, 5.0, 40.0, 90.0, 150.0, 2e3, 7e4, 1e6])
    lab = cure_threshold(a, threshold_nM=100.0, activity_label="Ki")
    assert lab["n_cured"] == 4 and lab["n_not_cured"] == 4 and lab["description"] == "Ki < 100 nM"
    assert lab["threshold_pActivity"] == pytest.approx(7.0)
    lab = cure_threshold(a, threshold_pActivity=8.0)
    assert lab["threshold_nM"] == pytest.approx(10.0) and lab["n_cured"] == 2
    lab = cure_threshold(a, potent_fraction=0.25)
    assert lab["n_cured"] == 2 and 5.0 < lab["threshold_nM"] < 40.0  # the most potent 2 of 8
    assert lab["threshold_nM"] == pytest.approx(np.sqrt(5.0 * 40.0))


def test_cure_threshold_refuses_one_class_and_ambiguous_rules():
    from screenbai.chem.ground_truth import cure_threshold

    a = np.array([0.3, 5.0, 40.0])
    with pytest.raises(ValueError, match=r"all 3 compounds cure \(IC50 0.3 - 40 nM\).*potent_fraction"):
        cure_threshold(a, threshold_nM=1e6, activity_label="IC50")
    with pytest.raises(ValueError, match="all 3 compounds do not cure"):
        cure_threshold(a, threshold_pActivity=11)
    with pytest.raises(ValueError, match="exactly one of"):
        cure_threshold(a, threshold_nM=10, potent_fraction=0.1)
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        cure_threshold(a, potent_fraction=1.0)


def test_potent_fraction_with_tied_activities_cuts_between_different_values():
    """Censored values kept as 10 000 nM tie: 'the most potent 50 %' cured 4 of 20 (20 %) while saying
    50 %, and with two tied groups a fraction of 0.1 left one class."""
    from screenbai.chem.ground_truth import cure_threshold

    lab = cure_threshold([1.0, 2.0, 3.0, 4.0] + [1e4] * 16, potent_fraction=0.5)
    assert lab["n_cured"] == 4 and lab["threshold_nM"] == pytest.approx(200.0)
    assert lab["description"].startswith("the most potent 20% of the library (activity < 200 nM); 50% was asked")
    assert "16 compounds share 1e+04 nM" in lab["description"]
    lab = cure_threshold([5.0] * 10 + [7.0] * 10, potent_fraction=0.1)  # one class before
    assert lab["n_cured"] == 10 and 5.0 < lab["threshold_nM"] < 7.0
    lab = cure_threshold(np.arange(1.0, 11.0), potent_fraction=0.3)  # no tie: as before
    assert lab["n_cured"] == 3 and lab["description"] == "the most potent 30% of the library (activity < 3.46 nM)"


def test_equal_activities_are_named_as_the_reason_no_label_splits_them():
    """Every value censored '>10000' kept as 10 000 nM: the message told a user of potent_fraction to choose
    potent_fraction, or a threshold inside the range 1e+04 - 1e+04 nM."""
    from screenbai.chem.ground_truth import cure_threshold

    for rule in ({"potent_fraction": 0.1}, {"threshold_nM": 100.0}, {"threshold_nM": 1e5}):
        same = r"all 12 compounds have the same IC50, 1e\+04 nM, so no cure label"
        with pytest.raises(ValueError, match=same) as info:
            cure_threshold([1e4] * 12, activity_label="IC50", **rule)
        assert "censored" in str(info.value) and "potent_fraction (e.g. 0.1)" not in str(info.value)
    with pytest.raises(ValueError, match="all 1 compounds have the same activity"):
        cure_threshold([50.0], potent_fraction=0.5)


# ---------------------------------------------------------------------- in-sample and cross-validated
def test_cross_validated_metrics_expose_an_overfitted_ground_truth():
    """Random labels on 40 features of 80 compounds: in-sample the fit looks excellent (AUC near 1),
    cross-validated it is a coin (AUC near 0.5, log-loss above log 2)."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(80, 40))
    y = rng.random(80) < 0.5
    gt = fit_ground_truth(X, y, C=100.0)
    assert gt.roc_auc > 0.95  # on the fitted compounds
    assert gt.cv_folds == 5 and 0.3 < gt.cv_roc_auc < 0.7 and gt.cv_log_loss > np.log(2)
    assert gt.cv_brier > gt.brier + 0.1
    s = gt.summary()
    assert s["cv_roc_auc"] == gt.cv_roc_auc and s["roc_auc"] == gt.roc_auc


def test_cross_validation_with_a_tiny_minority_class_and_when_off(synthetic):
    X, y, *_ = synthetic
    gt = fit_ground_truth(X, y)  # a learnable model: CV close to in-sample
    assert gt.cv_folds == 5 and abs(gt.cv_roc_auc - gt.roc_auc) < 0.02
    y3 = np.zeros(len(y), dtype=bool)
    y3[:3] = True  # 3 cures: 3 folds at most
    assert fit_ground_truth(X, y3).cv_folds == 3
    y1 = np.zeros(len(y), dtype=bool)
    y1[0] = True
    one = fit_ground_truth(X, y1)
    assert one.cv_folds == 0 and np.isnan(one.cv_roc_auc)
    assert fit_ground_truth(X, y, cv_folds=0).cv_folds == 0


def test_cure_rate_interval_covers_the_true_rate(synthetic):
    X, y, theta, b, p = synthetic
    gt = fit_ground_truth(X, y, C=1e4)
    lo, hi = gt.cure_rate_interval(X, level=0.95)
    assert np.all((lo <= gt.means) & (gt.means <= hi)) and np.all((lo > 0) & (hi < 1))
    cover = np.mean((lo <= p) & (p <= hi))
    assert 0.85 < cover <= 1.0  # a Wald interval of a well-specified model: about 95 %
    lo50, hi50 = gt.cure_rate_interval(X, level=0.5)
    assert np.all(hi50 - lo50 <= hi - lo + 1e-12) and np.mean((lo50 <= p) & (p <= hi50)) < 0.75
    with pytest.raises(ValueError, match="level"):
        gt.cure_rate_interval(X, level=95)


def test_a_label_leaving_one_class_names_the_config_key_and_its_range():
    """The message said "choose a threshold inside that range" without the key it is set by."""
    from screenbai.chem.ground_truth import cure_threshold

    with pytest.raises(ValueError) as info:
        cure_threshold([10.0, 100.0, 1000.0], threshold_nM=1e6)
    msg = str(info.value)
    assert "ground_truth.threshold_nM between 10 and 1e+03" in msg
    assert "ground_truth.threshold_pActivity between 6 and 8" in msg

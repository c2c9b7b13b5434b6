"""Ground truth for the drug-design bandit: cure labels and logistic cure rates.

Following Kazerouni & Wein (CDK2 study): a compound "cures" when its activity is below a
threshold (IC50 < 1e6 nM); a logistic regression of the label on the PCA features gives
each compound's true cure rate, which is the Bernoulli mean of its arm.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import expit

logger = logging.getLogger("screenbai.chem")

__all__ = ["GroundTruth", "binarize", "cure_threshold", "fit_ground_truth"]

#: The ways to say which compounds "cure" (exactly one is given).
LABEL_RULES = ("threshold_nM", "threshold_pActivity", "potent_fraction")


def binarize(activity_nM: Any, threshold_nM: float = 1e6) -> np.ndarray:
    """Cure labels: ``activity_nM < threshold_nM`` (bool array).

    Raises
    ------
    ValueError
        If an activity is missing/non-finite or the threshold is not positive.
    """
    a = np.asarray(activity_nM, dtype=np.float64)
    if not np.isfinite(threshold_nM) or threshold_nM <= 0:
        raise ValueError(f"threshold_nM={threshold_nM!r} must be a positive number of nM")
    bad = np.flatnonzero(~np.isfinite(a))
    if bad.size:
        raise ValueError(f"activity_nM has {bad.size} missing/non-finite values (first at index {bad[0]})")
    return a < threshold_nM


def cure_threshold(
    activity_nM: Any,
    *,
    threshold_nM: float | None = None,
    threshold_pActivity: float | None = None,
    potent_fraction: float | None = None,
    activity_label: str = "activity",
) -> dict[str, Any]:
    """The activity threshold (nM) of the cure label, from exactly one of three rules.

    ``threshold_nM``: cure when the activity is below this value (the paper: IC50 < 1e6 nM).
    ``threshold_pActivity``: cure when ``pActivity = 9 - log10(activity_nM)`` is above it
    (pActivity 7 = 100 nM).  ``potent_fraction``: the most potent fraction of the library cures
    (0.1: the top 10 %), whatever the target's potency range; the threshold is the geometric
    mean of the two activities on either side of the cut.

    Returns the threshold (``threshold_nM``, ``threshold_pActivity``), the rule in words (with
    ``activity_label``, e.g. "Ki", for the measured quantity) and the class counts.  Raises ValueError, with the
    activity range, when the threshold leaves a
    single class (no logistic ground truth can be fitted).
    """
    a = np.asarray(activity_nM, dtype=np.float64)
    given = {k: v for k, v in (("threshold_nM", threshold_nM), ("threshold_pActivity", threshold_pActivity),
                               ("potent_fraction", potent_fraction)) if v is not None}
    if len(given) != 1:
        raise ValueError(f"give exactly one of {', '.join(LABEL_RULES)} for the cure label; got {given or 'none'}")
    if a.size == 0 or not np.all(np.isfinite(a)) or np.any(a <= 0):
        raise ValueError("activities must be positive finite numbers (nM), at least one")
    (rule, value), = given.items()
    value = float(value)
    if rule == "threshold_nM":
        if not (np.isfinite(value) and value > 0):
            raise ValueError(f"threshold_nM = {value!r} must be a positive number of nM")
        thr, words = value, f"{activity_label} < {value:g} nM"
    elif rule == "threshold_pActivity":
        if not np.isfinite(value):
            raise ValueError(f"threshold_pActivity = {value!r} must be a number (pActivity 7 = 100 nM)")
        thr = 10.0 ** (9.0 - value)
        words = f"p{activity_label} > {value:g} ({activity_label} < {thr:.3g} nM)"
    else:
        if not 0.0 < value < 1.0:
            raise ValueError(
                f"potent_fraction = {value!r} must lie strictly between 0 and 1 (0.1 = the most potent 10 %)"
            )
        s = np.sort(a)
        k = min(max(round(value * a.size), 1), a.size - 1) if a.size > 1 else 1
        # the cut must fall between two different activities: with ties at the k-th (e.g. censored
        # values kept as 10 000 nM) the nearest cut that separates them, and the words say so
        cuts = np.flatnonzero(s[1:] > s[:-1]) + 1
        j = int(cuts[np.argmin(np.abs(cuts - k))]) if cuts.size else k
        thr = float(np.sqrt(s[j - 1] * s[j])) if a.size > 1 else float(s[0]) * 2.0
        share = value if j == k else j / a.size
        words = f"the most potent {share:.0%} of the library ({activity_label} < {thr:.3g} nM)"
        if j != k:
            words += f"; {value:.0%} was asked, but {int((s == s[k]).sum())} compounds share {s[k]:.3g} nM at that cut"
    cured = a < thr
    n_cured = int(cured.sum())
    if n_cured in (0, a.size):
        side = "cure" if n_cured == a.size else "do not cure"
        raise ValueError(
            f"with the cure label {words}, all {a.size} compounds {side} ({activity_label} {a.min():.3g} - "
            f"{a.max():.3g} nM): no logistic ground truth can be fitted from a single class. Choose a "
            f"threshold inside that range, or the label ground_truth.potent_fraction (e.g. 0.1), which "
            "leaves both classes whenever two activities differ"
        )
    return {
        "rule": rule,
        "value": value,
        "description": words,
        "threshold_nM": float(thr),
        "threshold_pActivity": float(9.0 - np.log10(thr)),
        "n_compounds": int(a.size),
        "n_cured": n_cured,
        "n_not_cured": int(a.size - n_cured),
    }


@dataclass(frozen=True, eq=False)
class GroundTruth:
    """A fitted logistic ground truth.

    Attributes
    ----------
    theta : ndarray (d,)
        Coefficients on the features.
    intercept : float
        Intercept of the logistic model.
    means : ndarray (n,)
        True cure rates ``sigmoid(features @ theta + intercept)`` = Bernoulli arm means.
    n_cured, n_not_cured : int
        Label counts.
    accuracy, roc_auc, log_loss, brier : float
        In-sample fit quality (``roc_auc`` is NaN if a class is absent).
    C : float
        Inverse regularisation strength used.

    Notes
    -----
    The linear/logistic bandits have no intercept.  Give them
    ``arm_features(features)`` (a constant 1 column appended) with ``theta_full``
    (``theta`` then ``intercept``): ``means == sigmoid(arm_features(X) @ theta_full)``.
    """

    theta: np.ndarray
    intercept: float
    means: np.ndarray
    n_cured: int
    n_not_cured: int
    accuracy: float
    roc_auc: float
    log_loss: float
    brier: float
    C: float = 1.0

    @property
    def theta_full(self) -> np.ndarray:
        """``(d + 1,)`` coefficients for :meth:`arm_features` (intercept last)."""
        return np.append(self.theta, self.intercept)

    def arm_features(self, features: np.ndarray) -> np.ndarray:
        """Features with a constant 1 column appended, shape ``(n, d + 1)``."""
        X = np.asarray(features, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.theta.shape[0]:
            raise ValueError(f"features must have shape (n, {self.theta.shape[0]}), got {X.shape}")
        return np.hstack([X, np.ones((X.shape[0], 1))])

    def predict_means(self, features: np.ndarray) -> np.ndarray:
        """Cure rates for (new) feature rows."""
        return expit(self.arm_features(features) @ self.theta_full)

    def summary(self) -> dict[str, Any]:
        """Scalars for logs and reports."""
        return {
            "d": int(self.theta.shape[0]),
            "n": int(self.means.shape[0]),
            "n_cured": self.n_cured,
            "n_not_cured": self.n_not_cured,
            "intercept": self.intercept,
            "accuracy": self.accuracy,
            "roc_auc": self.roc_auc,
            "log_loss": self.log_loss,
            "brier": self.brier,
            "mean_min": float(self.means.min()),
            "mean_max": float(self.means.max()),
            "C": self.C,
        }


def fit_ground_truth(features: np.ndarray, cured: Any, *, C: float = 1.0, random_state: int = 0) -> GroundTruth:
    """Fit ``P(cure | x) = sigmoid(x @ theta + intercept)`` by L2 logistic regression.

    Parameters
    ----------
    features : array (n, d)
        E.g. PCA scores from :func:`screenbai.chem.featurize.reduce_pca`.
    cured : array (n,) of bool
        Labels from :func:`binarize`.
    C : float
        Inverse L2 regularisation strength (scikit-learn convention, default 1).
    random_state : int
        Passed to scikit-learn.

    Returns
    -------
    GroundTruth

    Raises
    ------
    ValueError
        Shape mismatch, or only one class present (change ``threshold_nM``).
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import brier_score_loss, log_loss, roc_auc_score

    X = np.asarray(features, dtype=np.float64)
    y = np.asarray(cured).astype(bool)
    if X.ndim != 2 or y.ndim != 1 or X.shape[0] != y.shape[0]:
        raise ValueError(f"features (n, d) and cured (n,) must match; got {X.shape} and {y.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError("features contain NaN or infinite values")
    n_cured = int(y.sum())
    n_not = int(y.size - n_cured)
    if n_cured == 0 or n_not == 0:
        which = "no cured (positive)" if n_cured == 0 else "no non-cured (negative)"
        raise ValueError(
            f"the labels have {which} compounds ({n_cured} cured, {n_not} not cured of {y.size}): "
            "a logistic ground truth needs both classes; change `threshold_nM` in binarize() "
            "so that some compounds fall on each side"
        )
    model = LogisticRegression(C=C, solver="lbfgs", max_iter=10_000, random_state=random_state)
    model.fit(X, y)
    means = model.predict_proba(X)[:, 1].astype(np.float64)
    theta = model.coef_[0].astype(np.float64).copy()
    for arr in (means, theta):
        arr.setflags(write=False)  # the ground truth is frozen, arrays included
    gt = GroundTruth(
        theta=theta,
        intercept=float(model.intercept_[0]),
        means=means,
        n_cured=n_cured,
        n_not_cured=n_not,
        accuracy=float(np.mean((means >= 0.5) == y)),
        roc_auc=float(roc_auc_score(y, means)),
        log_loss=float(log_loss(y, means, labels=[False, True])),
        brier=float(brier_score_loss(y, means)),
        C=float(C),
    )
    logger.info("ground truth: %s", gt.summary())
    return gt

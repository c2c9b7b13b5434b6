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
    # pChEMBL values of an unnamed measure: the label is "pChEMBL > 7 (activity < 100 nM)", never
    # "pChEMBL < 100 nM" (the workflow names the measure, e.g. Ki, when the source says which)
    p_label = "pChEMBL" if activity_label == "pChEMBL" else f"p{activity_label}"
    if activity_label == "pChEMBL":
        activity_label = "activity"
    if rule == "threshold_nM":
        if not (np.isfinite(value) and value > 0):
            raise ValueError(f"threshold_nM = {value!r} must be a positive number of nM")
        thr, words = value, f"{activity_label} < {value:g} nM"
        if p_label == "pChEMBL":
            words = f"pChEMBL > {9.0 - np.log10(value):.3g} ({words})"
    elif rule == "threshold_pActivity":
        if not np.isfinite(value):
            raise ValueError(f"threshold_pActivity = {value!r} must be a number (pActivity 7 = 100 nM)")
        thr = 10.0 ** (9.0 - value)
        words = f"{p_label} > {value:g} ({activity_label} < {thr:.3g} nM)"
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
    if n_cured in (0, a.size) and a.min() == a.max():
        # no threshold and no potent_fraction splits equal activities: the usual advice would send the user round
        raise ValueError(
            f"all {a.size} compounds have the same {activity_label}, {a[0]:.3g} nM, so no cure label can split them "
            f"into two classes ({words}: all {'cure' if n_cured else 'do not cure'}) and no logistic ground truth "
            "can be fitted. The library needs compounds of different activities: are the values censored bounds "
            "('>10000') kept as values (curation.censored: keep_as_value), or one compound only?"
        )
    if n_cured in (0, a.size):
        side = "cure" if n_cured == a.size else "do not cure"
        raise ValueError(
            f"with the cure label {words}, all {a.size} compounds {side} ({activity_label} {a.min():.3g} - "
            f"{a.max():.3g} nM): no logistic ground truth can be fitted from a single class. Set "
            f"ground_truth.threshold_nM between {a.min():.3g} and {a.max():.3g} (or ground_truth.threshold_pActivity "
            f"between {9.0 - np.log10(a.max()):.3g} and {9.0 - np.log10(a.min()):.3g}), or use the label "
            "ground_truth.potent_fraction (e.g. 0.1), which leaves both classes whenever two activities differ"
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
        Fit quality **on the fitted compounds (in-sample)**: optimistic, the model has seen them.
    C : float
        Inverse regularisation strength used.
    cv_folds : int
        Folds of the cross-validation (stratified, shuffled); 0 when it was not run (fewer than
        two compounds in the smaller class, or ``cv_folds=0`` asked).
    cv_roc_auc, cv_log_loss, cv_brier : float
        The same metrics cross-validated: each compound is predicted by a model fitted without
        it (NaN when ``cv_folds`` is 0).
    covariance : ndarray (d + 1, d + 1) or None
        Approximate covariance of ``theta_full`` (inverse Hessian of the penalised negative
        log-likelihood at the fit, the Laplace / Wald approximation); gives
        :meth:`cure_rate_interval`.

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
    cv_folds: int = 0
    cv_roc_auc: float = float("nan")
    cv_log_loss: float = float("nan")
    cv_brier: float = float("nan")
    covariance: np.ndarray | None = None

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

    def cure_rate_interval(self, features: np.ndarray, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
        """Wald interval of each row's cure rate: ``sigmoid(a^T theta +- z sqrt(a^T Sigma a))``,
        ``a`` the row with its intercept 1, ``Sigma`` :attr:`covariance`, ``z`` the normal quantile
        of ``(1 + level) / 2``.  The interval of the logit is symmetric; mapped through the sigmoid
        it stays inside (0, 1)."""
        from scipy.stats import norm

        if self.covariance is None:
            raise ValueError("this ground truth has no covariance (fitted without it): no interval")
        if not 0.0 < level < 1.0:
            raise ValueError(f"level = {level!r} must lie strictly between 0 and 1 (0.95 = a 95 % interval)")
        A = self.arm_features(features)
        eta = A @ self.theta_full
        half = norm.ppf(0.5 + level / 2.0) * np.sqrt(np.einsum("ij,jk,ik->i", A, self.covariance, A))
        return expit(eta - half), expit(eta + half)

    def summary(self) -> dict[str, Any]:
        """Scalars for logs and reports: the fit quality on the fitted compounds (``accuracy``,
        ``roc_auc``, ``log_loss``, ``brier``: in-sample) and cross-validated (``cv_*``)."""
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
            "cv_folds": self.cv_folds,
            "cv_roc_auc": self.cv_roc_auc,
            "cv_log_loss": self.cv_log_loss,
            "cv_brier": self.cv_brier,
            "mean_min": float(self.means.min()),
            "mean_max": float(self.means.max()),
            "C": self.C,
        }


def _cross_validated(X: np.ndarray, y: np.ndarray, C: float, folds: int, random_state: int) -> dict[str, Any]:
    """Stratified ``folds``-fold cross-validation of the L2 logistic regression: out-of-fold cure
    rates of every compound, scored by AUC, log-loss and Brier score.  Fewer folds when the smaller
    class has fewer compounds than ``folds``; none (NaN) below two."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import brier_score_loss, log_loss, roc_auc_score
    from sklearn.model_selection import StratifiedKFold

    k = min(int(folds), int(y.sum()), int(y.size - y.sum()))
    if k < 2:
        return {"cv_folds": 0, "cv_roc_auc": float("nan"), "cv_log_loss": float("nan"), "cv_brier": float("nan")}
    oof = np.empty(y.size)
    for train, test in StratifiedKFold(n_splits=k, shuffle=True, random_state=random_state).split(X, y):
        model = LogisticRegression(C=C, solver="lbfgs", max_iter=10_000, random_state=random_state)
        oof[test] = model.fit(X[train], y[train]).predict_proba(X[test])[:, 1]
    return {
        "cv_folds": k,
        "cv_roc_auc": float(roc_auc_score(y, oof)),
        "cv_log_loss": float(log_loss(y, oof, labels=[False, True])),
        "cv_brier": float(brier_score_loss(y, oof)),
    }


def _covariance(X: np.ndarray, means: np.ndarray, C: float) -> np.ndarray:
    """Inverse Hessian of sum_i logloss_i + ||theta||^2 / (2 C) (scikit-learn's objective divided by C;
    the intercept is not penalised) at the fit: the Laplace approximation of the coefficients' covariance."""
    A = np.hstack([X, np.ones((X.shape[0], 1))])
    w = means * (1.0 - means)
    H = (A * w[:, None]).T @ A
    H[np.arange(X.shape[1]), np.arange(X.shape[1])] += 1.0 / C
    return np.linalg.pinv(H, hermitian=True)


def fit_ground_truth(
    features: np.ndarray, cured: Any, *, C: float = 1.0, random_state: int = 0, cv_folds: int = 5
) -> GroundTruth:
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
        Passed to scikit-learn (and the cross-validation's shuffle).
    cv_folds : int
        Folds of the cross-validated metrics (0: none); the in-sample metrics are always computed.

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
    covariance = _covariance(X, means, float(C))
    for arr in (means, theta, covariance):
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
        covariance=covariance,
        **(_cross_validated(X, y, float(C), cv_folds, random_state) if cv_folds else {}),
    )
    logger.info("ground truth: %s", gt.summary())
    return gt

"""The anytime certificate: how close to the best the current answer is, certainly.

Definition (../shared/spec/LOWER_BOUND.md, "Certificate and forecast"). A policy whose confidence
set C_t is valid (theta* lies in C_t at all times t at once with probability at least 1 - delta)
certifies, for each arm i of its current answer A (m arms), the smallest epsilon >= 0 with

    mu_i(theta) >= mu_(m)(theta) - epsilon    for every theta in C_t,

mu_(m)(theta) the m-th largest mean under theta (m = 1: the best mean). That is
epsilon_cert(i) = max(0, sup_{theta in C_t} (mu_(m)(theta) - mu_i(theta))). Because C_t holds
at all times at once, the statement "mu_i >= mu_(m) - epsilon_cert(i)" is true with probability
1 - delta whenever it is read: after any plate, and when the lab stops for budget.

How it is computed. The policies' stopping rules (core/parts.py; ``Policy.certificate`` asks the
rule) bound each pair from above, U(i, j) >= sup_{C_t} (mu_j - mu_i)
(the bounds their stopping rules compare with epsilon), and

    epsilon_cert(i) = max(0, m-th largest over j != i of U(i, j))                        (1)

(for m = 1 the largest: epsilon_cert(i) = max(0, max_j U(i, j)), the identity
mu_{i*} - mu_i <= U(i, i*) on the good event). (1) is a valid upper bound: if the m-th largest
U(i, j) is at most e, then for every theta in C_t at most m - 1 arms j have mu_j > mu_i + e, so
mu_(m) <= mu_i + e. It is never above the bound of the arms outside the answer,
max_{j not in A} U(i, j) (m - 1 other arms of A cannot hold m values above it), so when a
LUCB-type stopping rule (max_{i in A, j not in A} U(i, j) <= epsilon) or a UGapE-type one
(max_{i in A} m-th largest_{j != i} U(i, j) <= epsilon) fires, every epsilon_cert(i) <= epsilon.
For 0/1 outcomes (means in [0, 1]) epsilon_cert is at most 1 (a true, empty statement).

The truth of the certificate rests on the model (``Certificate.model``) and on the assumptions
listed there; ``guaranteed`` is False when the parameters void the error guarantee (declared in
``params.py``, e.g. a heuristic threshold) or the policy names a further caveat (e.g. constants
estimated rather than known). ``screenbai.bandits.certainty.model_check`` tests the model on the
outcomes collected.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np


def certified_from_bounds(U: np.ndarray, m: int) -> np.ndarray:
    """epsilon_cert of eq. (1) for each row of ``U`` (rows: the answer's arms; U[k, j] an upper bound
    on mu_j - mu_{A[k]}, -inf at j = A[k]): max(0, m-th largest of the row). O(K) per row."""
    U = np.atleast_2d(np.asarray(U, dtype=float))
    K = U.shape[1]
    if not 1 <= m < K:
        raise ValueError(f"m must satisfy 1 <= m < K = {K}; got {m}")
    top = U.max(axis=1) if m == 1 else np.partition(U, K - m, axis=1)[:, K - m]
    return np.maximum(top, 0.0)


def norm_bound_refuted(theta_hat: np.ndarray, P: np.ndarray, radius: float, S: float) -> float | None:
    """Whether the outcomes refute an assumed bound ||theta*|| <= S at the confidence set's level.

    The set {theta : ||theta - theta_hat||_{P^-1} <= radius} (P = V^-1) holds theta* with probability
    1 - delta when ||theta*|| <= S; its smallest norm is at least ||theta_hat|| - radius sqrt(lambda_max(P)).
    When that exceeds S, either the bound is false or the rare event happened: the lower bound is
    returned (else None). O(d^3)."""
    low = float(np.linalg.norm(theta_hat)) - radius * math.sqrt(max(float(np.linalg.eigvalsh(P)[-1]), 0.0))
    return low if low > S else None


def ordinal(k: int) -> str:
    suffix = "th" if 10 <= k % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(k % 10, "th")
    return f"{k}{suffix}"


def _percent(delta: float) -> str:
    return f"{100.0 * (1.0 - delta):.4g} %"


#: a certified epsilon on hit rates at least this large says nothing: no gap in hit rate exceeds 1, and above it
#: the sentence's epsilon, rounded up to two figures (epsilon_text), prints as "1" (a certificate's sentence says
#: "not certified yet", status "none yet", its JSON null)
VACUOUS_HIT_RATE_GAP = 0.99

@dataclass(frozen=True)
class Certificate:
    """The certificate of a policy's current answer (see the module docstring).

    arms: the answer (arm indices, in the recommendation's order).
    epsilon: per arm, the smallest epsilon >= 0 for which it is certified epsilon-good at level
        delta (inf: nothing certified yet, e.g. the outcomes do not yet identify the model).
    delta: the level; the statement holds with probability at least 1 - delta, at all times at once.
    guaranteed: False when the setting carries no guarantee (``caveats`` say why): the numbers
        are then computed the same way but nothing proves them.
    model: the model the certificate holds under, in words (with its assumed constants).
    m: size of the answer; the statement is against the m-th best mean.
    n_samples: the outcomes it rests on.
    quantity: what the means are ("cure rate" for 0/1 outcomes, "mean outcome" otherwise).
    vacuous_at: an epsilon this large says nothing (VACUOUS_HIT_RATE_GAP for 0/1 outcomes).
    """

    arms: tuple[int, ...]
    epsilon: tuple[float, ...]
    delta: float
    guaranteed: bool
    model: str
    m: int = 1
    n_samples: int = 0
    quantity: str = "mean outcome"
    caveats: tuple[str, ...] = field(default=())
    vacuous_at: float = math.inf

    @property
    def worst(self) -> float:
        """The largest epsilon over the answer: the whole answer is certified epsilon-good at it."""
        return max(self.epsilon) if self.epsilon else math.nan

    def per_arm(self) -> dict[int, float]:
        return dict(zip(self.arms, self.epsilon))

    def sentence(self, names=None, quantity: str | None = None) -> list[str]:
        """One sentence per arm of the answer, e.g. "CPD-123: within 0.17 of the best cure rate,
        95 % confidence, under the logistic model on these features". ``names``: the arms' names
        (indexable by arm index, e.g. the compound ids; default "arm k")."""
        what = quantity or self.quantity
        best = f"the best {what}" if self.m == 1 else f"the {ordinal(self.m)} best {what}"
        tail = f"{_percent(self.delta)} confidence, under {self.model}"
        if not self.guaranteed:
            tail += " (NO GUARANTEE: " + "; ".join(self.caveats or ("this setting has none",)) + ")"
        out = []
        for a, eps in zip(self.arms, self.epsilon):
            name = f"arm {a}" if names is None else str(names[a])
            if not math.isfinite(eps) or eps >= self.vacuous_at:
                out.append(f"{name}: not certified yet (the outcomes so far leave every ranking possible under "
                           f"{self.model})")
            elif eps == 0.0:
                claim = "the best" if self.m == 1 else f"among the {self.m} best"
                out.append(f"{name}: {claim} {what} (ties included), {tail}")
            else:
                out.append(f"{name}: within {epsilon_text(eps)} of {best}, {tail}")
        return out

    def to_dict(self, names=None, quantity: str | None = None) -> dict:
        """Plain JSON data: per compound (``names``) or arm its epsilon (None for inf), the level,
        whether guaranteed, the model, caveats and the sentences (about ``quantity``, see ``sentence``)."""
        keys = [str(a) if names is None else str(names[a]) for a in self.arms]
        return {
            "epsilon": {k: (float(e) if math.isfinite(e) else None) for k, e in zip(keys, self.epsilon)},
            "worst": float(self.worst) if math.isfinite(self.worst) else None,
            "delta": float(self.delta),
            "confidence": 1.0 - float(self.delta),
            "guaranteed": bool(self.guaranteed),
            "model": self.model,
            "caveats": list(self.caveats),
            "m": int(self.m),
            "n_samples": int(self.n_samples),
            "sentences": self.sentence(names, quantity),
        }


def epsilon_text(epsilon: float, digits: int = 2) -> str:
    """A certified epsilon in ``digits`` significant figures, rounded UP: the statement "within 0.31 of the best"
    must hold, and a bound of 0.3031 read "within 0.3" (more than is certified) beside "the stopping rule fires
    once it is at most epsilon = 0.3", a rule that had not fired."""
    e = float(epsilon)
    if not math.isfinite(e) or e <= 0.0:
        return f"{e:g}"
    scale = 10.0 ** (math.floor(math.log10(e)) - digits + 1)
    up = math.ceil(e / scale - 1e-9) * scale
    up = up if up >= e else up + scale  # round-off of the division never leaves the text below the bound
    return f"{up:.0f}" if up >= 10.0**digits else f"{up:.{digits}g}"


def certify(policy) -> Certificate | None:
    """The certificate of ``policy``'s current answer, or None when it has no valid confidence set
    (fixed-budget algorithms). What the campaign (``status``, ``report``) and the workflow call."""
    return policy.certificate()


def certifies(epsilon: float, binary: bool) -> bool:
    """Whether a certified epsilon says anything: finite (inf: none of the answer certified yet) and, on hit rates
    (``binary``), below VACUOUS_HIT_RATE_GAP. Where it does not, the campaign's status, its JSON, the export and the
    progress plot, and :func:`certainty_summary`, all say nothing is certified yet."""
    return math.isfinite(epsilon) and not (binary and epsilon >= VACUOUS_HIT_RATE_GAP)


def certificate_json(policy, names=None, quantity: str | None = None) -> dict | None:
    """``certify(policy).to_dict(names, quantity)``, or None: the value of the status JSON key
    ``certificate``."""
    cert = certify(policy)
    return None if cert is None else cert.to_dict(names, quantity)


def certainty_summary(policy, names=None, observations=None, level: float = 0.05,
                      quantity: str | None = None) -> dict:
    """What the campaign's ``status`` and ``report`` show next to the answer, as plain JSON data:

    * ``certified_epsilon``: the largest certified epsilon over the answer, as the status JSON key of that name:
      None without a valid confidence set and while it certifies nothing (``certifies``);
    * ``certificate``: ``certificate_json(policy, names)``, the whole certificate (None without a valid
      confidence set);
    * ``model_check``: the test of fit of the model the certificate rests on (model_check.py), with
      its ``warning`` text when the model is rejected at ``level``; None for policies with no model
      of the features, and for the linear model when no sums of squares are given.

    ``observations``: (per-arm tests, sums, sums of squared outcomes) of every outcome collected, e.g.
    ``camp.observations()[:3]``; default the policy's recorded counts and sums (enough for 0/1 outcomes).
    ``quantity``: what the sentences call the means (default "cure rate" / "mean outcome").
    """
    cert = certify(policy)
    worst = None if cert is None else float(cert.worst)
    return {"certified_epsilon": worst if worst is not None and certifies(worst, policy.binary_rewards) else None,
            "certificate": None if cert is None else cert.to_dict(names, quantity),
            "model_check": model_check_json(policy, names, observations, level)}


def model_check_json(policy, names=None, observations=None, level: float = 0.05) -> dict | None:
    """The test of fit of the model the certificate rests on (model_check.py) as plain JSON data, with
    its ``warning`` when rejected at ``level``; None for policies with no model of the features, and
    for the linear model without sums of squares. ``observations`` as for :func:`certainty_summary`."""
    from screenbai.bandits.certainty.model_check import check_linear, check_logistic

    n, sums, sums_sq = (policy.n, policy.sums, None) if observations is None else observations[:3]
    if not policy.models_features:
        return None
    if policy.binary_rewards:
        return check_logistic(policy.X, n, sums, level=level).to_dict(names)
    if sums_sq is None:
        return None
    sigma = float(getattr(policy, "sigma", 1.0))
    return check_linear(policy.X, n, sums, sums_sq, sigma, level=level).to_dict(names)

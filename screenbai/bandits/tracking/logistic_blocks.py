"""Per-direction evidence for the logistic model from blocks of fixed design: log-tas's second stopping
rule, next to the likelihood-ratio set (``rules.likelihood``), each at a share of delta.

The linear model's construction (``blocks.BlockEvidence``, whose module docstring this one follows) needs,
per block b and direction y, an estimate of y'theta* whose error given the blocks before is sub-Gaussian
with a known variance proxy, up to a bias bounded before the block's outcomes. For 0/1 outcomes of
a logistic model (mu the sigmoid):

**The one-step estimate.** When block b's design is fixed (per-arm counts n_k on its support S_b), so is
a reference theta_ref (log-tas's estimate from the outcomes told before the block) and the
likelihood-ratio set C_{t_b} of those outcomes at level delta_1 (``rules.likelihood``: theta* lies in
every C_t at once with probability >= 1 - delta_1). With a_k = x_k'theta_ref, w_k = mu'(a_k),
H_b = sum_{k in S_b} n_k w_k x_k x_k' and s_k the block's successes on arm k,

    theta_b = theta_ref + H_b^+ sum_k x_k (s_k - n_k mu(a_k)).                                   (1)

Write s_k = n_k p_k + e_k, p_k = mu(x_k'theta*), e_k the sum of the n_k centred outcomes, and
Delta = theta* - theta_ref. Taylor's theorem gives n_k (p_k - mu(a_k)) = n_k w_k x_k'Delta + n_k r_k with
r_k = mu(a_k + x_k'Delta) - mu(a_k) - w_k x_k'Delta, so sum_k x_k (s_k - n_k mu(a_k)) = H_b Delta +
sum_k x_k (e_k + n_k r_k). For y in the range of H_b, y'H_b^+ H_b = y', hence with c_k = y'H_b^+ x_k

    y'theta_b - y'theta* = sum_k c_k e_k + sum_k c_k n_k r_k.                                    (2)

**The bias** (the second sum). Let D_k = max over theta in C_{t_b} of |x_k'(theta - theta_ref)| (the range
of x_k'theta over the set, ``LikelihoodRatioSet._range_end``, safe outer ends; the intersection of the
windows' sets, which all hold theta* on the same event). On theta* in C_{t_b}, |x_k'Delta| <= D_k, so r_k lies
in [r_lo,k, r_hi,k], the range of r(u) = mu(a_k + u) - mu(a_k) - mu'(a_k) u over |u| <= D_k (``remainder_range``:
exact, as r'(u) = mu'(a_k + u) - mu'(a_k) vanishes only at u = 0 and u = -2 a_k, mu' being even and unimodal;
|r| <= (max|mu''| / 2) D_k^2 = D_k^2 / (12 sqrt 3)). The test below is one-sided (it needs only an upper
bound on the bias), so bias <= beta_b(y) = sum_k n_k (c_k^+ r_hi,k + c_k^- (-r_lo,k)), c^+ and c^- the
positive and negative parts: an arm whose remainder has one sign on its range (mu convex or concave there)
adds nothing for half of the signs of c_k.

**The noise** (the first sum): given the past and the design, the outcomes of arm k are independent
Bernoulli(p_k), and Bernoulli(p) centred is sub-Gaussian with variance proxy
sigma^2(p) = (1/2 - p) / log((1 - p) / p) (1/4 at p = 1/2; Kearns & Saul 1998, Lemma 1; optimal:
Berend & Kontorovich 2013, Thm 2.1). In the logit a = logit(p), sigma^2 = tanh(a/2) / (2a), even in a and
falling in |a|; on theta* in C_{t_b}, x_k'theta* lies in [a_k - D_k, a_k + D_k], so sigma^2(p_k) <= s2_k, its
value at the point of that interval nearest 0 (``subgaussian_proxy``). The noise is then sub-Gaussian
with variance proxy v_b(y) = sum_k c_k^2 n_k s2_k.

**The e-process and its validity.** theta_ref, S_b, n, D, s2 and hence c, beta_b(y), v_b(y) are fixed
before block b's outcomes. Let I_b = 1[theta* in C_{t_b}] (also fixed before them). For lam >= 0 the factor
exp(lam I_b (y'theta_b - beta_b(y) - y'theta*) / v_b - lam^2 I_b / (2 v_b)) has conditional mean <= 1: where
I_b = 0 it is 1; where I_b = 1 the exponent is at most lam (noise) / v_b - lam^2 / (2 v_b) (the bias minus
beta_b is <= 0 and lam >= 0), and the noise's sub-Gaussian bound applies. So the centred estimates
y'theta_b - beta_b(y) with variances v_b(y), fed to ``BlockEvidence``'s one-sided mixture (and point mass,
start block, union weights), give for every fixed direction y a process whose indicator-weighted version is
a supermartingale of mean <= 1; on the event E_1 = {theta* in C_t for all t} it is the process computed.
By Ville's inequality and the union over the m (K - m) fixed directions (BlockEvidence's union_level at
delta_2): P(a wrong answer certified by this rule) <= P(not E_1) + delta_2 <= delta_1 + delta_2. A block
(or a direction of it) whose bias bound is large next to its noise (beta_b(y) > BIAS_SD sqrt(v_b(y)),
decided from the quantities above, before the outcomes) is left out: a predictable choice, so the
argument is unchanged; such a block would only pull the evidence down.

**Means, epsilon > 0.** y = x_i - x_j: arm i's mean beats arm j's by more than -epsilon when
y'theta* > -g with g = min over a in the range of x_i'theta over C_t (at delta_1, the check's time: on E_1 it
holds theta*) of logit(mu(a) + epsilon) - a (``lr_set.epsilon_margin``, smallest at the a nearest
logit((1 - epsilon) / 2)). The certificate maps the one-sided bound y'theta* >= LCB(y) to the means with
``numerics.glm.mean_gap_bound`` (mu_j - mu_i over x_i'theta in its range and (x_j - x_i)'theta <= -LCB).

**The combined rule** (``LikelihoodOrBlocks``): stop when the likelihood-ratio set at delta_1 certifies the
answer OR this evidence does at delta_2; both statements hold on E_1 and E_2 (no e-process crosses), so
the answer is epsilon-correct with probability >= 1 - delta_1 - delta_2 = 1 - delta. The certificate is
the smaller of the two rules' (each valid on the same event).

Cost: at a block's opening, two range ends over each window's set per arm of the design (a few Newton
solves each); at its close, one d x d pseudo-inverse; per leader and block O(K d |S_b|).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import expit, logit

from screenbai.bandits.core.parts import StoppingRule
from screenbai.bandits.numerics.glm import dmu, mean_gap_bound
from screenbai.bandits.numerics.linalg import pinv_psd
from screenbai.bandits.numerics.lr_set import LikelihoodRatioSet, epsilon_margin
from screenbai.bandits.rules.likelihood import LikelihoodOr, WindowedLikelihoodRatio
from screenbai.bandits.tracking.blocks import _RANGE_RTOL, BlockEvidence, union_level

#: a direction of a block counts only when its bias bound is at most this many noise standard deviations
BIAS_SD = 1.0
#: bisection steps of each range end of x_k'theta over a window's set (0: the outer or the quadratic end)
RANGE_STEPS = 2
#: share of delta given to the likelihood-ratio set (delta_1); the block evidence gets the rest (delta_2)
LR_SHARE = 0.5


def remainder_range(a: np.ndarray, D: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(min, max) over |u| <= D of the signed remainder r(u) = mu(a + u) - mu(a) - mu'(a) u (-inf, inf where D
    is infinite): attained at u = +-D, u = 0 (r = 0) or the critical point u = -2a when it lies within D
    (module docstring)."""
    a = np.asarray(a, dtype=float)
    D = np.asarray(D, dtype=float)
    fin = np.isfinite(D)
    Df = np.where(fin, D, 0.0)
    mu, w = expit(a), dmu(a)

    def r(u):
        return expit(a + u) - mu - w * u

    crit = np.where(np.abs(2.0 * a) <= Df, r(-2.0 * a), 0.0)
    lo = np.minimum.reduce([r(Df), r(-Df), crit, np.zeros_like(a)])
    hi = np.maximum.reduce([r(Df), r(-Df), crit, np.zeros_like(a)])
    return np.where(fin, lo, -np.inf), np.where(fin, hi, np.inf)


def remainder_bound(a: np.ndarray, D: np.ndarray) -> np.ndarray:
    """max over |u| <= D of |mu(a + u) - mu(a) - mu'(a) u| (``remainder_range``; inf where D is)."""
    lo, hi = remainder_range(a, D)
    return np.maximum(-lo, hi)


def subgaussian_proxy(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The largest Kearns-Saul variance proxy tanh(a/2) / (2a) of a Bernoulli(mu(a)) over a in [lo, hi]
    (at the point nearest 0; 1/4 at a = 0)."""
    a = np.abs(np.clip(0.0, lo, hi))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(a > 1e-8, np.tanh(a / 2.0) / (2.0 * np.maximum(a, 1e-300)), 0.25)


def ranges_over(sets: list[LikelihoodRatioSet], Xa: np.ndarray,
                steps: int = RANGE_STEPS) -> tuple[np.ndarray, np.ndarray]:
    """Outer ends (lo, hi) of the range of x'theta over the intersection of the bounded, non-empty ``sets``
    for each row x of Xa (-inf, inf where there is none)."""
    lo, hi = np.full(Xa.shape[0], -np.inf), np.full(Xa.shape[0], np.inf)
    for cs in sets:
        if not cs.bounded or cs.empty:
            continue
        for k, x in enumerate(Xa):
            lo[k] = max(lo[k], cs._range_end(x, lower=True, steps=steps))
            hi[k] = min(hi[k], cs._range_end(x, lower=False, steps=steps))
    return lo, hi


class _LogisticBlock:
    """One closed block's derived quantities: X theta_b, P X_S' (c_k = y'P x_k), n_k s2_k, n_k max r_k and
    n_k (-min r_k) (the remainder's range, ``remainder_range``), X N
    (N a basis of H_b's null space), H_b, and the reference's predictions X theta_ref."""

    __slots__ = ("pred", "Q", "wv", "wb_hi", "wb_lo", "XN", "H", "ref_pred", "Pbar")

    def __init__(self, X: np.ndarray, blk: dict, Hbar: np.ndarray | None):
        S = blk["arms"]
        XS = X[S]
        ref = blk["ref"]
        a = XS @ ref
        n = blk["n"]
        self.H = (XS.T * (n * dmu(a))) @ XS
        P, null = pinv_psd(self.H)
        theta = ref + P @ (XS.T @ (blk["s"] - n * expit(a)))  # eq. (1)
        self.pred = X @ theta
        self.Q = P @ XS.T
        self.wv = n * blk["s2"]
        r_lo, r_hi = remainder_range(a, blk["D"])
        self.wb_hi, self.wb_lo = n * r_hi, n * -r_lo
        self.XN = None if null is None else X @ null
        self.ref_pred = X @ ref
        self.Pbar = None if Hbar is None else pinv_psd(Hbar)[0]


class LogisticBlockEvidence(BlockEvidence):
    """``BlockEvidence`` with each block's logistic one-step estimate, its bias bound and its noise's
    variance proxy (module docstring). Blocks are announced when their design is fixed (``opened``: the
    reference, the arms' ranges over the likelihood-ratio set) and closed with their outcomes (``close``).

    State (plain data): ``blocks`` (closed: ref, arms, n, s, D, s2), ``pending`` (opened, not closed: ref,
    arms, D, s2), ``shift``.
    """

    name = "logistic block evidence"

    def __init__(self, X: np.ndarray, epsilon: float, log_level: float, m: int = 1, delta: float | None = None):
        super().__init__(X, 1.0, epsilon, log_level, m, delta)
        self.blocks: list[dict] = []
        self.pending: list[dict] = []
        #: where the margin of a leader's directions comes from (the likelihood-ratio set at delta_1)
        self.lr: WindowedLikelihoodRatio | None = None

    def _reset_cache(self) -> None:
        super()._reset_cache()
        self._cache: list[_LogisticBlock] = []
        self._margins: dict[int, float] = {}
        self._margin_at = -1

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict:
        return {"blocks": [dict(b) for b in self.blocks], "pending": [dict(b) for b in self.pending],
                "shift": self.shift.copy()}

    def load_state_dict(self, state: dict) -> None:
        def blk(b):
            out = {k: np.array(v, dtype=float) for k, v in b.items()}
            out["arms"] = np.asarray(b["arms"], dtype=np.int64)
            return out

        self.blocks = [blk(b) for b in state["blocks"]]
        self.pending = [blk(b) for b in state["pending"]]
        self.shift = np.array(state["shift"], dtype=float)
        self._reset_cache()

    @property
    def n_blocks(self) -> int:
        return len(self.blocks)

    # ------------------------------------------------------------------ blocks
    def opened(self, counts: np.ndarray, ref: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> None:
        """A block's design is fixed: ``counts`` per arm, ``ref`` the estimate from the outcomes before it,
        ``lo``, ``hi`` (one entry per arm of the design, in arm order) outer ends of the range of x_k'theta
        over the likelihood-ratio set of those outcomes at delta_1 (``ranges_over``; -inf, inf: none, the
        block brings no evidence). D_k and s2_k from them (module docstring)."""
        arms = np.flatnonzero(np.asarray(counts))
        a = self.X[arms] @ ref
        D = np.maximum(np.maximum(np.asarray(hi, dtype=float) - a, a - np.asarray(lo, dtype=float)), 0.0)
        self.pending.append({"ref": np.array(ref, dtype=float), "arms": arms, "D": D,
                             "s2": subgaussian_proxy(a - D, a + D)})

    def close(self, counts: np.ndarray, sums: np.ndarray) -> None:
        """The oldest opened block is complete (per-arm counts and successes, length K)."""
        if not self.pending:
            raise RuntimeError("a block closed that was never opened (LogisticBlockEvidence.opened)")
        blk = self.pending.pop(0)
        counts = np.asarray(counts)
        if not np.array_equal(np.flatnonzero(counts), blk["arms"]):
            raise RuntimeError("the closed block's arms are not those of the oldest block opened")
        blk["n"] = counts[blk["arms"]].astype(float)
        blk["s"] = np.asarray(sums, dtype=float)[blk["arms"]]
        self.blocks.append(blk)
        if len(self.blocks) == 1 and self.K - self.m > 8:
            self._set_weights()

    def _block(self, b: int) -> _LogisticBlock:  # type: ignore[override]
        while len(self._cache) <= b:
            k = len(self._cache)
            Hbar = None if k == 0 else sum((c.H for c in self._cache), np.zeros((self.d, self.d)))
            self._cache.append(_LogisticBlock(self.X, self.blocks[k], Hbar))
        return self._cache[b]

    def _first_estimate(self) -> tuple[np.ndarray, np.ndarray]:
        c = self._block(0)
        return c.pred, self._diag(c.Q, self.blocks[0])

    def _diag(self, Q: np.ndarray, blk: dict) -> np.ndarray:
        """diag of the variance proxies of the arms' own estimates x'theta_b: sum_k (x'P x_k)^2 n_k s2_k."""
        G = self.X @ Q
        return (G * G) @ (blk["n"] * blk["s2"])

    def _direction_block(self, b: int, i: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        c = self._block(b)
        G = self.X @ c.Q
        C = G[i] - G  # c_k of y_j = x_i - x_j, one row per j
        v = (C * C) @ c.wv
        # the bias sum_k c_k n_k r_k is at most sum_k n_k (c_k^+ max r_k + c_k^- (-min r_k)) (one-sided: only
        # an upper bound is subtracted)
        Cp, Cm = np.maximum(C, 0.0), np.maximum(-C, 0.0)
        fin = np.isfinite(c.wb_hi) & np.isfinite(c.wb_lo)
        beta = Cp[:, fin] @ c.wb_hi[fin] + Cm[:, fin] @ c.wb_lo[fin]
        if not fin.all():  # an arm with no range over the set: no bound where it enters
            beta = np.where((C[:, ~fin] != 0).any(axis=1), np.inf, beta)
        ok = (v > 0) & np.isfinite(beta)
        with np.errstate(invalid="ignore"):  # BIAS_SD = inf at v = 0 (ok is False there already)
            ok &= ~(beta > BIAS_SD * np.sqrt(np.maximum(v, 0.0)))
        if c.XN is not None:
            out = c.XN[i] - c.XN
            norm = np.einsum("ij,ij->i", self.X[i] - self.X, self.X[i] - self.X)
            ok &= np.einsum("ij,ij->i", out, out) <= _RANGE_RTOL**2 * norm
        est = np.where(ok, c.pred[i] - c.pred - np.where(ok, beta, 0.0), 0.0)
        return est, v, ok

    def _direction_prior(self, b: int, i: int) -> tuple[np.ndarray, np.ndarray] | None:
        c = self._block(b)
        if c.Pbar is None:
            return None
        X = self.X
        XP = X @ c.Pbar
        diag = np.einsum("ij,ij->i", XP, X)
        return c.ref_pred[i] - c.ref_pred, np.maximum(diag[i] - 2.0 * (XP @ X[i]) + diag, 0.0)

    def _start_margin(self, b: int, i: int) -> float:
        """epsilon on the means as a margin on the logit at block b's reference (tuning only)."""
        if self.epsilon <= 0:
            return 0.0
        g = epsilon_margin(float(self.X[i] @ self.blocks[b]["ref"]), self.epsilon)
        return g if math.isfinite(g) else 10.0

    def _range(self, i: int) -> tuple[float, float]:
        """The range of x_i'theta over the intersection of the likelihood-ratio sets now (at delta_1)."""
        lo, hi = -math.inf, math.inf
        if self.lr is not None:
            for cs in self.lr._sets():
                if cs.empty:
                    continue
                lo = max(lo, cs._range_end(self.X[i], lower=True))
                hi = min(hi, cs._range_end(self.X[i], lower=False))
        return lo, hi

    def _margin(self, i: int) -> float:
        """g with y'theta > -g => mu_i - mu_j > -epsilon for every a = x_i'theta in its range over the
        likelihood-ratio sets (module docstring); 0 at epsilon = 0. Cached per outcome count."""
        if self.epsilon <= 0:
            return 0.0
        t = -1 if self.policy is None else int(self.policy.n_samples)
        if t != self._margin_at:
            self._margins, self._margin_at = {}, t
        if i not in self._margins:
            lo, hi = self._range(i)
            if not lo <= hi:
                self._margins[i] = 0.0
            else:
                b0 = float(logit((1.0 - self.epsilon) / 2.0)) if self.epsilon < 1.0 else -math.inf
                g = epsilon_margin(min(max(b0, lo), hi), self.epsilon)
                self._margins[i] = g if math.isfinite(g) else 1e6
        return self._margins[i]

    def certified_epsilon(self, answer: np.ndarray) -> np.ndarray | None:
        """Per arm i of the answer: max(0, max_{j outside} of the largest mu_j - mu_i with x_i'theta in its
        range and (x_j - x_i)'theta <= -LCB(x_i - x_j)) (``mean_gap_bound``; inf-free: means in [0, 1])."""
        if not self.blocks:
            return None
        outside = np.ones(self.K, dtype=bool)
        outside[answer] = False
        out = np.empty(len(answer))
        for k, i in enumerate(answer):
            lo, hi = self._range(int(i))
            if not (math.isfinite(lo) and math.isfinite(hi)):
                out[k] = 1.0
                continue
            u = np.minimum(-self.lcb(int(i))[outside], 1e6)
            U = mean_gap_bound(u, lo, hi, np.full(u.size, np.inf))
            out[k] = min(1.0, max(0.0, float(np.max(U)) if U.size else 0.0))
        return out

    def candidate(self) -> np.ndarray:
        return self.policy._current_answer()

    def pooled(self) -> np.ndarray:
        return np.asarray(self.policy.theta_hat)


class LikelihoodOrBlocks(LikelihoodOr):
    """log-tas's stopping rule: the likelihood-ratio set (``rules.likelihood.WindowedLikelihoodRatio``) at
    delta_1 = LR_SHARE delta OR the per-direction block evidence (``LogisticBlockEvidence``) at
    delta_2 = delta - delta_1; delta-correct (module docstring, "The combined rule").
    State: both rules' and the number of blocks last tested."""

    name = "likelihood ratio or block evidence"
    state_fields = ("lr", "blocks", "tested_blocks")

    def __init__(self, Z: np.ndarray, m: int, epsilon: float, delta: float, growth: float, late: bool,
                 lr_share: float = LR_SHARE):
        super().__init__(Z, m, epsilon, delta, growth, late, lr_share)
        self.Z = Z
        self.K, self.d = Z.shape
        self.m = int(m)
        d2 = (1.0 - lr_share) * delta
        self.blocks = LogisticBlockEvidence(Z, epsilon, union_level(d2, self.K, self.m), self.m, d2)
        self.blocks.lr = self.lr
        self.tested_blocks = 0

    @property
    def second(self) -> StoppingRule:
        return self.blocks

    def block_opened(self, counts: np.ndarray) -> None:
        """Block's design fixed: its reference (the policy's estimate) and the sets of the outcomes so far."""
        lo, hi = ranges_over(self.lr._sets(), self.Z[np.flatnonzero(np.asarray(counts))])
        self.blocks.opened(counts, np.asarray(self.policy.theta_hat, dtype=float), lo, hi)

    def block_closed(self, counts: np.ndarray, sums: np.ndarray) -> None:
        self.blocks.close(counts, sums)

    def check(self, answer: np.ndarray | None = None) -> np.ndarray | None:
        """The likelihood-ratio test on its schedule, then the block evidence once per closed block."""
        answer = self.candidate() if answer is None else answer
        out = self.lr.check(answer)
        if out is not None:
            self.policy.diagnostics["stopped_by"] = "likelihood ratio"
            return out
        if self.blocks.n_blocks > self.tested_blocks:
            self.tested_blocks = self.blocks.n_blocks
            if self.blocks.stops(answer):
                self.policy.diagnostics["stopped_by"] = "block evidence"
                return answer
        return None

    def stops(self, answer: np.ndarray) -> bool:
        return self.lr.stops(answer) or (self.blocks.n_blocks > 0 and self.blocks.stops(np.asarray(answer)))

    def certified_epsilon(self, answer: np.ndarray) -> np.ndarray | None:
        a = self.lr.certified_epsilon(answer)
        b = self.blocks.certified_epsilon(np.asarray(answer))
        if a is None or b is None:
            return b if a is None else a
        return np.minimum(a, b)

    def threshold(self, t: float, delta: float) -> float:
        """The smaller of the two rules' thresholds, each at its share of delta."""
        lr = self.lr.threshold(t, self.lr_share * delta)
        bl = self.blocks.threshold(t, (1.0 - self.lr_share) * delta)
        return min(lr, bl)

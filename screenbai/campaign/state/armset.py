"""The compounds a campaign's algorithm chooses among, when that set changes mid-campaign.

A campaign numbers its compounds once (arm 0, 1, ... in the order they entered the file: the
library at ``init``, then each batch added later).  The algorithm works on the *active* compounds
only: all of them until one is withdrawn or new ones are added.  :class:`ArmSetPolicy` wraps the
algorithm's policy (built on the active compounds' features, local indices ``0..K_active-1``) and
speaks campaign arms to the rest of the campaign: ``propose`` returns campaign arms, ``tell`` and
``cancel`` take them, ``result()`` names campaign arms.  Without a change the map is the identity
and the wrapper only forwards.

A change (compounds added, one withdrawn) restarts the algorithm on the new active set, with the
outcomes recorded so far as its first observations (:func:`restart`).  Why the error guarantee
survives this for the fixed-confidence algorithms: their confidence sets (self-normalized or
likelihood-ratio bounds, [KW] eq. 3-4, [RKD21] Prop. 1) hold simultaneously for every number of
tests and for any order of tests chosen from past outcomes (the tests form an adapted sequence);
the outcomes recorded before the change were chosen that way, so the restarted algorithm's
stopping rule, with its union bound over the new number of compounds, errs with probability at
most delta (measured for GLGapE by benchmarks/change_study.py: docs/error_rates.md, "After a change").
The block Track-and-Stop algorithms take the past through their ``absorb`` (tests no
block of theirs planned): ``log-tas``'s likelihood-ratio set is valid for any adapted order, so the
past counts in full (predicted in growing chunks, each from the outcomes before it, so that its
level does not grow by the past's size); ``lin-tas``'s per-block evidence needs each block's design
fixed before its outcomes, so the past guides its designs only and its stopping rule counts the
blocks it designs after the change.  Fixed-budget algorithms (GSE) plan their stages for a fixed
set of arms: a change is refused for them.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from screenbai.bandits.core.policy import Result


class ArmSetPolicy:
    """A policy on the active compounds, addressed with campaign arm numbers (see module doc)."""

    def __init__(self, inner, active: np.ndarray, n_total: int):
        self.inner = inner
        self.arm_set = np.asarray(active, dtype=np.int64)
        self.n_arms_total = int(n_total)
        self._local = np.full(self.n_arms_total, -1, dtype=np.int64)
        self._local[self.arm_set] = np.arange(self.arm_set.size)
        self.identity = self.arm_set.size == self.n_arms_total and bool(
            (self.arm_set == np.arange(self.n_arms_total)).all()
        )

    # ---------------------------------------------------------------- maps
    def to_local(self, arms: np.ndarray) -> np.ndarray:
        return arms if self.identity else self._local[arms]

    def to_global(self, local: np.ndarray) -> np.ndarray:
        return local if self.identity else self.arm_set[local]

    def is_active(self, arms: np.ndarray) -> np.ndarray:
        return self._local[arms] >= 0

    # ---------------------------------------------------------------- protocol
    @property
    def done(self) -> bool:
        return bool(self.inner.done)

    def propose(self, n: int) -> np.ndarray:
        return self.to_global(np.asarray(self.inner.propose(int(n)), dtype=np.int64).reshape(-1))

    def fly(self, arms: np.ndarray) -> None:
        """Mark more tests of ``arms`` in flight (replicate wells of a proposed compound)."""
        if arms.size:  # a block algorithm (lin-tas, log-tas) keeps them apart from its blocks' designs
            getattr(self.inner, "fly_unplanned", self.inner._fly)(self.to_local(arms))

    def tell(self, arms: np.ndarray, values: np.ndarray) -> None:
        """Outcomes of campaign arms; those of compounds no longer active are not the algorithm's."""
        keep = self.is_active(arms)
        if keep.any():
            self.inner.tell(self.to_local(arms[keep]), values[keep])

    def cancel(self, arms: np.ndarray) -> None:
        keep = self.is_active(arms)
        if keep.any():
            self.inner.cancel(self.to_local(arms[keep]))

    def result(self) -> Result:
        res = self.inner.result()
        if self.identity:
            return res
        pulls = np.zeros(self.n_arms_total, dtype=np.int64)
        pulls[self.arm_set] = res.pulls
        return Result(
            tuple(int(self.arm_set[a]) for a in res.recommendation), res.n_samples, pulls, res.stopped, res.diagnostics
        )

    def certificate(self):
        """The algorithm's certificate of its answer, naming campaign arms (None without one)."""
        fn = getattr(self.inner, "certificate", None)
        cert = fn() if callable(fn) else None
        if cert is None or self.identity:
            return cert
        return dataclasses.replace(cert, arms=tuple(int(self.arm_set[a]) for a in cert.arms))

    def state_dict(self) -> dict:
        return self.inner.state_dict()

    def load_state_dict(self, state: dict) -> None:
        self.inner.load_state_dict(state)

    def __getattr__(self, name):  # epsilon, budget, fixed_budget, recheck, ...: the algorithm's
        if name == "inner":  # not set yet (a copy being built): no recursion
            raise AttributeError(name)
        return getattr(self.inner, name)


def restart(inner, active: np.ndarray, n_total: int, recorded, in_flight) -> ArmSetPolicy:
    """The policy ``inner`` (fresh, built on the active compounds) with the campaign's past.

    ``recorded``: (arm, value) of every outcome recorded so far, in the order recorded (failed
    wells excluded); ``in_flight``: the arms of the wells still in the lab.  The outcomes of active
    compounds are told as the algorithm's first observations, in one batch; the wells in the lab are
    marked in flight so that their results can be told when they come back.
    """
    policy = ArmSetPolicy(inner, active, n_total)
    arms = np.asarray([a for a, _ in recorded], dtype=np.int64)
    values = np.asarray([v for _, v in recorded], dtype=float)
    keep = policy.is_active(arms) if arms.size else np.zeros(0, dtype=bool)
    if keep.any():
        local = policy.to_local(arms[keep])
        if hasattr(inner, "absorb"):  # block algorithms: outcomes no block of theirs planned
            inner.absorb(local, values[keep])
        else:
            inner._fly(local)
            inner.tell(local, values[keep])
    flying = np.asarray(in_flight, dtype=np.int64)
    if flying.size:  # even when the stopping rule fired on the past: their results are cancelled then
        policy.fly(flying[policy.is_active(flying)])
    return policy

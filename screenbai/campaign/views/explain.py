"""Why these wells: the rule that chose each well of a plate, in words, for the plate file.

Written when the plate is proposed (table ``well_notes``) and into the plate file's ``why``
column; ``role`` says compound, positive control or negative control.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..lab import assay
from .estimates import read_back

#: what each family's adaptive rule does, in one line
RULES = {
    "glgape": (
        "GLGapE's rule: the test that most narrows the comparison between the current leader and its closest "
        "rival (a weak compound is chosen when its features point in that direction, not for its own rate)"
    ),
    "lingape": (
        "the gap rule: the test that most narrows the comparison between the current leader and its closest "
        "rival (a weak compound is chosen when its features point in that direction, not for its own rate)"
    ),
    "gse": "GSE's stage design: tests spread over the compounds still in the race, planned before the stage",
    "kl-lucb": (
        "KL-LUCB's rule: of the leader whose interval of its own hit rate reaches lowest and the rival whose "
        "interval reaches highest, the less certain (each compound's own wells; a compound never tested first)"
    ),
    "lucb": "LUCB's rule: the leader and its most uncertain rival",
    "ucb": "an upper-confidence-bound rule (optimistic about untested compounds)",
    "g-allocation": "the G-optimal design: the test that most reduces the largest uncertainty",
    "tas": (
        "block Track-and-Stop: a block of tests spread as the fewest tests that could settle the comparisons "
        "between the leader and its rivals would be under the current estimates (the lower bound's allocation; "
        "with many features, aimed at the comparisons that still lack the most evidence)"
    ),
    "rage-glm": (
        "RAGE-GLM's phase design: tests spread by the XY-optimal design over the compounds still undecided, each "
        "test weighted by the information it brings at the current estimate (mu'), fixed before the phase (its "
        "estimate uses that phase's outcomes only)"
    ),
    "rage": (
        "RAGE's phase design: tests spread by the XY-optimal design over the compounds still undecided, fixed "
        "before the phase (its estimate uses that phase's outcomes only)"
    ),
}


def rule_of(algorithm: str) -> str:
    name = algorithm.lower()
    for key in ("glgape", "lingape", "lingifa", "gse", "kl-lucb", "lucb", "ucb", "g-allocation", "tas", "rage-glm",
                "rage"):
        if key in name:
            return RULES.get(key, RULES["lingape"])
    return f"{algorithm}'s selection rule"


def why_chosen(camp, policy) -> Callable[[int, int, int], str]:
    """A function (arm, position on the plate, compounds on the plate) -> the reason, from the state
    before the plate is proposed: the algorithm's initial design, a failed well's retest, a replicate,
    or its adaptive rule (with the compound's tests so far)."""
    inner = getattr(policy, "inner", policy)
    queue = getattr(inner, "_queue", np.empty(0))
    retests = max(int(np.size(queue)) - int(getattr(inner, "_batch_rest", 0)), 0)
    # a model's first tests are its initial design; an algorithm of each compound's own wells has none (KL-LUCB)
    initial = int(getattr(inner, "n_samples", 0)) == 0 and assay.models_features(camp.algorithm)
    n, s, _, failed = camp.observations()
    back = read_back(camp)  # a readout told negated or as log10 (an IC50) is said on its own scale
    mean = "geometric mean" if camp.readout is not None and camp.readout.scale == "log10" else "mean outcome"
    rule = rule_of(camp.algorithm)

    def why(arm: int, k: int, n_distinct: int) -> str:
        if k >= n_distinct:
            return f"replicate {k // n_distinct + 1} of this compound on this plate"
        if k < retests:
            return "retest: an earlier well of this compound failed"
        before = "never tested" if n[arm] == 0 else f"tested {int(n[arm])} times, " + (
            f"{int(round(s[arm]))} hit(s)" if camp.binary else f"{mean} {back(s[arm] / n[arm]):.3g}")
        if initial:
            return f"initial design: first tests spread over the feature space to fit the model ({before})"
        return f"{rule}; {before}"

    return why


def plate_rows(camp, plate) -> tuple[list[tuple[str, str, str]], dict[str, list[str]]]:
    """(well, compound id, smiles) of every well of ``plate`` in well order, controls included, and
    the extra columns role and why (empty for plates made before they were recorded)."""
    notes = dict(camp._con.execute("SELECT well, why FROM well_notes WHERE plate_id = ?", (plate.plate_id,)))
    controls = camp._con.execute("SELECT well, kind FROM controls WHERE plate_id = ?", (plate.plate_id,)).fetchall()
    rows = [(w, c, s, "compound", notes.get(w, "")) for w, c, s in zip(plate.wells, plate.compound_ids, plate.smiles)]
    for well, kind in controls:
        arm = assay.POSITIVE if kind == "positive" else assay.NEGATIVE
        rows.append((well, assay.CONTROL_IDS[arm], "", f"{kind} control", "control well of the plate layout"))
    if controls:
        rows.sort(key=lambda r: _order(r[0]))
    return [r[:3] for r in rows], {"role": [r[3] for r in rows], "why": [r[4] for r in rows]}


def _order(well: str) -> tuple[int, int]:
    letters = "".join(ch for ch in well if ch.isalpha())
    digits = "".join(ch for ch in well if ch.isdigit())
    r = 0
    for ch in letters:
        r = r * 26 + (ord(ch) - 64)
    return r, int(digits or 0)

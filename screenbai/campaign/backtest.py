"""Backtest: a whole campaign against known outcomes, plate by plate, through the real code path.

Each plate is proposed by :meth:`Campaign.next_plate`, its outcomes are looked up in the table
of known outcomes and written to a results file, and that file is recorded with
:meth:`Campaign.record` (validation included), exactly as in the lab.  Known outcomes are either
ChEMBL activities binarised at a threshold (a compound is a hit when its activity is below it;
every test of a compound returns its label) or cure rates, e.g. the workflow's ground-truth arms
(each test is a Bernoulli draw with the compound's rate).

Reported: tests and plates until the algorithm stops, the recommended compounds' measured potency
and rank, and the hit-recovery curve (share of the top-k compounds tested at least once against
tests spent) beside random screening (expected share, tests drawn uniformly with replacement) and
one-shot screening (one diverse set of as many distinct compounds, chosen at once by farthest-point
sampling of the features).
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..streams import say
from ..textfiles import written_whole
from .backtest_file import check_before_truth, draw, open_or_create, record_plate, replay_assay, settings
from .library import (
    DEFAULT_D,
    DEFAULT_N_BITS,
    DEFAULT_RADIUS,
    Library,
    _detect_kind,
    _is_sdf,
    build_library,
    file_sha256,
    import_library,
    library_from_args,
)
from .state.store import CampaignError
from .state.writer import writing
from .views.certified import best_first
from .views.estimates import model_estimates
from .views.hits import curve_figure, farthest_point_order, hit_recovery
from .views.hits import hit_figure as hit_figure  # where the tests and users found it


@dataclass
class KnownOutcomes:
    """A library and, per arm, the probability that a test is positive (0/1 for binarised labels)."""

    library: Library
    rate: np.ndarray
    #: the measured activity as a ranking (lower is better: an IC50 in nM, or minus a percent inhibition)
    potency_nM: np.ndarray | None
    description: str
    #: how to print a compound's measured activity: the raw values, their name and unit
    activity: np.ndarray | None = None
    activity_label: str = "nM"


def outcomes_from_activities(
    path,
    *,
    threshold_nM: float,
    id_column: str | None = None,
    smiles_column: str | None = None,
    activity_column: str | None = None,
    radius: int = DEFAULT_RADIUS,
    n_bits: int = DEFAULT_N_BITS,
    d: int = DEFAULT_D,
    noise_log10: float = 0.0,
) -> KnownOutcomes:
    """ChEMBL export (or an activity table) -> curated library, a hit when the measured activity
    is below the threshold (nM); with ``noise_log10`` > 0 each test measures it with noise (see
    :func:`hit_probability`).

    Curation is the workflow's (IC50 rows, units to nM, censored values dropped, duplicates merged
    by InChIKey with the median in log space; flagged rows kept as in the CDK2 study).
    """
    import pandas as pd

    from screenbai.chem.curate import curate_activities
    from screenbai.chem.tables import read_activity_table, read_chembl_export

    path = Path(path)

    if _detect_kind(path) == "chembl-export" and activity_column is None:
        raw = read_chembl_export(path)
    else:
        if activity_column is None:
            raise ValueError(f"{path}: name the activity column (nM) with --activity-column")
        raw = read_activity_table(
            path, smiles_column=smiles_column, activity_column=activity_column, id_column=id_column
        )
    curated, report = curate_activities(raw, drop_flagged=False)
    frame = pd.DataFrame(
        {
            "source_row": np.arange(1, len(curated) + 1),
            "compound_id": curated["compound_id"],
            "input_smiles": curated["smiles"],
        }
    )
    provenance = {
        "path": str(path.resolve()),
        "kind": "activities",
        "sha256": file_sha256(path),
        "activity_rows": int(report.n_input),
        "curation_dropped": report.dropped,
    }
    lib = build_library(frame, provenance, radius=radius, n_bits=n_bits, d=d)
    potency = curated.set_index("compound_id").loc[lib.compounds["compound_id"], "activity_nM"].to_numpy(float)
    rate = hit_probability(potency, float(threshold_nM), "below", noise_log10)
    if potency.min() >= float(threshold_nM) or potency.max() < float(threshold_nM):
        raise ValueError(
            f"every compound is {'a hit' if rate[0] else 'inactive'} at threshold {threshold_nM:g} nM; "
            f"choose a threshold inside {potency.min():.3g}-{potency.max():.3g} nM"
        )
    return KnownOutcomes(
        lib,
        rate,
        potency,
        f"{path.name}: hit = IC50 < {threshold_nM:g} nM ({int((potency < threshold_nM).sum())} of {rate.size} "
        f"compounds){_noise_words(noise_log10)}",
    )


def _refuse_values(path: Path, names: list[str], values: np.ndarray, column: str, bad: np.ndarray, what: str,
                   way: str) -> None:
    """Refuse a truth table whose values of the library's compounds are not ``what``, naming the first ones."""
    k = np.flatnonzero(bad)
    if k.size:
        first = ", ".join(f"{names[i]} ({values[i]:g})" for i in k[:5]) + (", ..." if k.size > 5 else "")
        raise ValueError(f"{path}: the values of {column} must be {what}; {k.size} compound(s) are not: {first}; "
                         f"correct them or delete their rows, {way}")


def hit_probability(activity: np.ndarray, threshold: float, direction: str, noise_log10: float) -> np.ndarray:
    """P(a test is a hit) when each test measures log10(activity) with Gaussian noise of sd
    ``noise_log10`` (an assay's replicate spread; 0: every test returns the compound's label):
    Phi((log10 threshold - log10 activity) / sd) for a hit below the threshold (IC50), the mirror
    image above it (percent inhibition is then compared on its own scale, not in log10)."""
    from scipy.special import ndtr

    a = np.asarray(activity, dtype=float)
    below = direction == "below"
    if noise_log10 <= 0:
        return ((a < threshold) if below else (a > threshold)).astype(float)
    if below:
        if (a <= 0).any() or threshold <= 0:
            raise ValueError("a hit below a threshold in log10 units needs activities and threshold > 0 (e.g. nM)")
        z = (np.log10(threshold) - np.log10(a)) / noise_log10
    else:
        z = (a - threshold) / noise_log10
    return ndtr(z)


def _noise_words(noise: float, direction: str = "below") -> str:
    """How each simulated test is drawn, with the noise's unit (``hit_probability``): log10 units of the activity
    for a hit below a threshold (sd 0.3: a factor 2), the readout's own scale above one."""
    if noise <= 0:
        return ", each test returns the label"
    if direction == "below":
        return f", each test drawn with noise (sd {noise:g} in log10 units, a factor {10 ** noise:.2g})"
    return f", each test drawn with noise (sd {noise:g} in the readout's units)"


def outcomes_from_table(
    library: Library,
    path,
    *,
    id_column: str | None = None,
    rate_column: str | None = None,
    activity_column: str | None = None,
    threshold: float | None = None,
    direction: str = "below",
    noise: float = 0.3,
) -> KnownOutcomes:
    """What a lab has: a CSV/TSV with a compound id and a measured activity or a hit rate, for the
    structures of ``library`` (featurized as a campaign's).  The compounds of the library without a
    value are left out (they cannot be tested); values without a compound are reported.

    A hit rate (in [0, 1]) is each test's probability; an activity is turned into one by
    :func:`hit_probability` (``noise``: sd of each test's measurement, in log10 units below a
    threshold, in the activity's units above one)."""
    import pandas as pd

    path = Path(path)
    sep = "\t" if path.suffix.lower() in (".tsv", ".tab") else None
    table = pd.read_csv(path, sep=sep, engine="python", dtype={id_column: str} if id_column else None)
    cols = list(table.columns)
    if id_column is None:  # a known name, else the first column that is not a number (a two-column file)
        id_column = next((c for c in cols if c.lower() in ("compound_id", "id", "molecule_chembl_id")), None) or next(
            (c for c in cols if not pd.api.types.is_numeric_dtype(table[c])), None
        )
    if id_column is None or id_column not in cols:
        raise ValueError(f"{path}: name the compound id column with --truth-id-column; columns are {cols}")
    value_column = rate_column or activity_column
    if value_column is None:
        others = [c for c in cols if c != id_column]
        numeric = others if len(others) == 1 else [c for c in others if pd.api.types.is_numeric_dtype(table[c])]
        if len(numeric) != 1:
            raise ValueError(
                f"{path}: name the value column with --rate-column (hit rates) or --activity-column; columns are {cols}"
            )
        value_column = numeric[0]
        if not pd.to_numeric(table[value_column], errors="coerce").between(0, 1).all():
            activity_column = value_column
        else:
            rate_column = value_column
    if value_column not in cols:
        raise ValueError(f"{path}: no column {value_column!r}; columns are {cols}")
    values = pd.to_numeric(table[value_column], errors="coerce")
    bad = (values.isna() & table[value_column].notna()) | np.isinf(values)  # 'inf' made a sure hit or a sure miss
    if bad.any():
        k = int(np.flatnonzero(bad.to_numpy())[0])
        raise ValueError(f"{path}: line {k + 2}: {value_column} = {table[value_column].iloc[k]!r} is not a number "
                         "(a finite value; a qualified one such as '<10' or '>10000' is not a measurement): write the "
                         "measured value, or delete the row (or empty the cell) to leave the compound out")
    ids = table[id_column].astype(str).str.strip()
    dup = ids[ids.duplicated(keep=False)]
    if len(dup):
        lines = " and ".join(str(int(i) + 2) for i in np.flatnonzero((ids == dup.iloc[0]).to_numpy()))
        raise ValueError(f"{path}: compound {dup.iloc[0]!r} appears on more than one row (lines {lines}); give one "
                         "value per compound (e.g. the median of its measurements)")
    truth = dict(zip(ids, values))
    lib_ids = [str(c) for c in library.compounds["compound_id"]]
    keep = np.asarray([c in truth and not np.isnan(truth[c]) for c in lib_ids])
    if keep.sum() < 2:
        raise ValueError(
            f"{path}: only {int(keep.sum())} compound(s) of the library have a value in {value_column!r}; "
            "check that --truth-id-column names the same ids as the library's id column"
        )
    unknown = len(set(truth) - set(lib_ids))
    sub = library.compounds[keep].reset_index(drop=True)
    lib = Library(
        sub, library.features[keep], library.rejected, library.featurizer, dict(library.provenance), library.arrays
    )
    v = np.asarray([truth[c] for c in sub["compound_id"].astype(str)], dtype=float)
    left = f"; {int((~keep).sum())} library compounds without a value left out" if (~keep).any() else ""
    left += f"; {unknown} values of compounds not in the library ignored" if unknown else ""
    names = list(sub["compound_id"].astype(str))
    if rate_column:
        _refuse_values(path, names, v, rate_column, ~((v >= 0) & (v <= 1)), "hit rates, in [0, 1]",
                       "or give the column as --activity-column if it holds activities")
        return KnownOutcomes(lib, v, None, f"{path.name}: Bernoulli tests with rate = {rate_column}{left}")
    if threshold is None:
        raise ValueError("an activity needs the hit threshold: --threshold VALUE (and --hit-above if larger is a hit)")
    if direction == "below":  # a concentration (an IC50 in nM), compared in log10 units
        _refuse_values(path, names, v, value_column, v <= 0, "concentrations (a hit below --threshold), above 0",
                       "or give --hit-above if larger is a hit")
    rate = hit_probability(v, float(threshold), direction, noise)
    sign = "<" if direction == "below" else ">"
    hits = int(((v < threshold) if direction == "below" else (v > threshold)).sum())
    return KnownOutcomes(
        lib,
        rate,
        v if direction == "below" else -v,
        activity=v,
        activity_label=f"{value_column}",
        description=f"{path.name}: hit = {value_column} {sign} {threshold:g} ({hits} of {v.size} compounds)"
        + _noise_words(noise, direction)
        + left,
    )


def outcomes_from_rates(path, *, rate_column: str, library_file: str | None = None) -> KnownOutcomes:
    """The workflow's ground-truth arms (``arms_d{d}.parquet``): features as stored, rate = ``rate_column``."""
    import pandas as pd

    lib = import_library(path, kind="featurized", library_file=library_file)
    table = pd.read_parquet(path).set_index("compound_id")
    if rate_column not in table.columns:
        raise ValueError(f"{path}: no column {rate_column!r}; columns are {list(table.columns)}")
    ids = lib.compounds["compound_id"]
    rate = table.loc[ids, rate_column].to_numpy(float)
    if not ((rate >= 0) & (rate <= 1)).all():
        raise ValueError(f"{path}: {rate_column} must hold rates in [0, 1]")
    potency = table.loc[ids, "activity_nM"].to_numpy(float) if "activity_nM" in table.columns else None
    return KnownOutcomes(lib, rate, potency, f"{Path(path).name}: Bernoulli tests with rate = {rate_column}")


def restrict_to_library(known: KnownOutcomes, library: Library) -> KnownOutcomes:
    """``known`` for the compounds of ``library`` (matched by compound id), with the library's own
    structures and features: the truth's compounds outside the library are dropped, and said."""
    truth_ids = [str(c) for c in known.library.compounds["compound_id"]]
    at = {c: k for k, c in enumerate(truth_ids)}
    lib_ids = [str(c) for c in library.compounds["compound_id"]]
    keep = np.asarray([c in at for c in lib_ids])
    if keep.sum() < 2:
        raise ValueError(
            f"only {int(keep.sum())} compound(s) of the library have a known outcome in the truth; check that "
            "both name compounds by the same id (e.g. ChEMBL ids)"
        )
    rows = np.asarray([at[c] for c, k in zip(lib_ids, keep) if k])
    sub = library.compounds[keep].reset_index(drop=True)
    lib = Library(
        sub, library.features[keep], library.rejected, library.featurizer, dict(library.provenance), library.arrays
    )
    left = f"; {int((~keep).sum())} library compounds without a value left out" if (~keep).any() else ""
    dropped = len(truth_ids) - len(rows)
    left += f"; {dropped} values of compounds not in the library ignored" if dropped else ""
    return KnownOutcomes(
        lib,
        known.rate[rows],
        None if known.potency_nM is None else known.potency_nM[rows],
        known.description + left,
        None if known.activity is None else known.activity[rows],
        known.activity_label,
    )


@dataclass
class BacktestResult:
    tests: int
    plates: int
    stopped: bool
    finished: bool
    recommendation: list[dict]
    curve: dict = field(repr=False, default_factory=dict)
    top_k: int = 10
    description: str = ""
    labels: bool = False  # known outcomes are 0/1 labels (binarised activities), not rates
    #: the answer judged as the error rates judge it (``judge``): the epsilon (the algorithm's own, 0 without one),
    #: the answer's size m, the true m-th best hit rate and whether every recommended compound is within epsilon of it
    epsilon: float = 0.0
    m: int = 1
    mth_best: float = float("nan")
    correct: bool | None = None  # None: not judged (a result made without ``run_backtest``)
    epsilon_own: bool = True  # the algorithm has an epsilon (else it is judged at 0: the best itself)
    #: what the setting promises (screenbai.guarantees), and the assumptions of it the known rates break
    guarantee: str = ""
    not_proven: list[str] = field(default_factory=list)

    def text(self) -> str:
        from .views.estimates import rate_text

        end = (
            ("the stopping rule fired" if self.stopped else "the algorithm finished")
            if self.finished
            else "the test cap was reached"
        )
        plates = f"{self.plates} plate{'' if self.plates == 1 else 's'}"
        lines = [f"backtest on {self.description}", f"{end} after {self.tests:,} tests on {plates}"]
        for r in self.recommendation:
            pot = (
                ""
                if r["activity_nM"] is None
                else f", measured {_measured(r)} ({_rank(r['potency_rank'], r['potency_rank_tied_to'], r['K'])})"
            )
            if self.labels:
                what = "a hit" if r["rate"] == 1 else "not a hit"
            else:
                what = f"true hit rate {rate_text(r['rate'])} ({_rank(r['rate_rank'], r['rate_rank_tied_to'], r['K'])})"
            lines.append(f"recommended {r['compound_id']}: {what}{pot}")
        if self.correct is not None:
            lines.append(self.verdict())
        if self.guarantee:
            lines.append(f"guarantee: {self.guarantee}")
        if self.not_proven:
            lines.append(
                f"NOT PROVEN ON THESE RATES: {'; '.join(self.not_proven)}; the guarantee does not hold here: "
                "the chance of a wrong answer is not bounded by delta, and a correct one proves nothing of it"
            )
        c = self.curve
        lines.append(
            f"share of the top-{self.top_k} compounds tested at least once by the end: campaign "
            f"{c['campaign'][-1]:.2f}, random {c['random'][-1]:.2f} (expected), one-shot {c['one_shot'][-1]:.2f} "
            "(a best-arm campaign tests few compounds many times, to certify one: it need not test many top ones)"
        )
        return "\n".join(lines)

    def verdict(self) -> str:
        """Whether the answer is correct as the algorithm's error rate counts it (``judge``), in one line."""
        from screenbai.bandits.certainty.certificate import ordinal

        from .views.estimates import rate_text

        best = "best" if self.m == 1 else f"{ordinal(self.m)} best"
        mth = rate_text(self.mth_best)
        if self.epsilon > 0:
            rule = f"within epsilon = {self.epsilon:g} (the algorithm's) of the true {best}, {mth}"
        else:  # the best itself (the m best), ties included
            why = "epsilon = 0, the algorithm's" if self.epsilon_own else "the algorithm has no epsilon"
            rule = (f"the true best, {mth}" if self.m == 1 else f"at least the true {best}, {mth}") + (
                f" ({why}: ties included)")
        if self.correct:
            who = "the recommended compound's" if len(self.recommendation) == 1 else "every recommended compound's"
            return f"correct: {who} true hit rate is {rule}"
        wrong = [r for r in self.recommendation if not r["within_epsilon"]]
        if not wrong:
            return "WRONG: no compound recommended"
        # near 1 both rates read "> 0.999": the gap is said, and with epsilon 0 that any gap counts
        tiny = [r for r in wrong if rate_text(r["rate"]) == mth]
        names = ", ".join(
            f"{r['compound_id']} ({rate_text(r['rate'])}"
            + (f", {self.mth_best - r['rate']:.2g} below it" if r in tiny else "")
            + ")"
            for r in wrong
        )
        hint = (
            "; with epsilon = 0 a gap of any size is an error: give the epsilon you can accept (--param epsilon=0.1) "
            "to count an answer that close as correct"
            if tiny and self.epsilon == 0
            else ""
        )
        return f"WRONG: the true hit rate of {names} is not {rule}{hint}"


def judge(rate: np.ndarray, recommendation, epsilon: float) -> tuple[np.ndarray, float]:
    """Per recommended compound, whether it is epsilon-good against the true m-th best hit rate (m: the answer's
    size), and that rate: the judgement of the algorithms' error rates (``bandits.sim.instance.epsilon_good``)."""
    from screenbai.bandits.sim.instance import epsilon_good, mth_best

    arms = np.asarray(recommendation, dtype=np.int64).reshape(-1)
    m = max(int(arms.size), 1)
    return epsilon_good(rate, m, epsilon)[arms], mth_best(rate, m)


_FOLDER_PREFIX = "screenbai-backtest-"  # + the pid of the backtest that owns the folder


def _remove_orphaned_folders() -> None:
    """Remove the temporary folders of backtests killed outright (``kill -9``: no cleanup could run).

    A folder is named after its backtest's process id; one whose process no longer exists is an orphan.
    (``kill`` and Ctrl-C unwind normally: the command turns SIGTERM into an exit, see ``screenbai.cli``.)
    """
    for folder in Path(tempfile.gettempdir()).glob(f"{_FOLDER_PREFIX}*-*"):
        pid = folder.name[len(_FOLDER_PREFIX):].split("-", 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(folder, ignore_errors=True)
        except OSError:  # alive, another user's
            continue


def run_backtest(
    known: KnownOutcomes,
    algorithm: str,
    params: dict,
    *,
    seed: int = 0,
    plate_size: int = 96,
    max_tests: int = 20000,
    top_k: int = 10,
    campaign_path=None,
    progress: bool = False,
) -> BacktestResult:
    lib = known.library
    K = lib.features.shape[0]
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 1]))  # the assay's own stream
    _remove_orphaned_folders()
    with (
        tempfile.TemporaryDirectory(prefix=f"{_FOLDER_PREFIX}{os.getpid()}-") as tmp,
        writing(campaign_path) if campaign_path else contextlib.nullcontext(),  # one backtest at a time on a file
    ):
        path = Path(campaign_path) if campaign_path else Path(tmp) / "backtest.campaign"
        # a file kept (--campaign-out) is continued when it exists: the same command after a kill ends as if never
        # killed (backtest_file)
        camp = open_or_create(path, known, algorithm, params, seed,
                              settings(known, algorithm, params, seed, plate_size, max_tests))
        bar = None
        try:
            camp.keep_progress = False  # no progress plot for a simulation: records as fast as before it
            tested_order, plates = replay_assay(camp, rng, known.rate, Path(tmp))
            if progress:
                from tqdm import tqdm

                bar = tqdm(total=max_tests, initial=len(tested_order), unit="test", desc=f"backtest {algorithm}")
            while len(tested_order) < max_tests and not camp.policy.done:
                try:
                    plate = camp.next_plate(min(plate_size, max_tests - len(tested_order)), force=True)
                except CampaignError:
                    break
                record_plate(camp, Path(tmp), plate, draw(rng, known.rate, plate.arms))
                tested_order.extend(plate.arms)
                plates += 1
                if bar is not None:
                    bar.update(len(plate.arms))
            policy = camp.policy
            finished = bool(policy.done)
            res = policy.result()
            # judged with the tolerance the algorithm used (its default when none was given), as the simulation
            # runner judges its runs (bandits/core/runner.py); 0 for an algorithm without one
            own = getattr(getattr(policy, "inner", policy), "epsilon", None)
            epsilon = float(own or 0.0)
            n, s, s2, _ = camp.observations()  # the answer listed as status lists it: best first by the model
            answer = best_first(res.recommendation, model_estimates(camp.features, n, s, s2, binary=camp.binary)[0])
        finally:
            if bar is not None:
                bar.close()
            camp.close()
    score = -known.potency_nM if known.potency_nM is not None else known.rate
    top = np.argsort(-score, kind="stable")[:top_k]
    curve = hit_recovery(
        np.asarray(tested_order, dtype=np.int64), top, K, farthest_point_order(lib.features, len(tested_order))
    )
    good, mth = judge(known.rate, answer, epsilon)
    rec = []
    for a, within in zip(answer, good):
        r_lo, r_hi = tied_ranks(known.rate, a)
        p_lo, p_hi = (None, None) if known.potency_nM is None else tied_ranks(-known.potency_nM, a)
        shown = known.activity if known.activity is not None else known.potency_nM
        rec.append(
            {
                "compound_id": str(lib.compounds["compound_id"][a]),
                "smiles": str(lib.compounds["smiles"][a]),
                "rate": float(known.rate[a]),
                "rate_rank": r_lo,
                "rate_rank_tied_to": r_hi,
                "K": K,
                "activity_nM": None if shown is None else float(shown[a]),
                "activity_label": known.activity_label,
                "potency_rank": p_lo,
                "potency_rank_tied_to": p_hi,
                "within_epsilon": bool(within),
            }
        )
    labels = bool(np.isin(known.rate, (0.0, 1.0)).all())
    from screenbai.bandits.sim.instance import Instance
    from screenbai.guarantees import assumptions_failing, guarantee_of

    truth = Instance(lib.features, known.rate, reward="bernoulli", link="logistic")  # the rates each test draws
    return BacktestResult(
        len(tested_order), plates, bool(res.stopped), finished, rec, curve, top_k, known.description, labels,
        epsilon=epsilon, m=max(len(rec), 1), mth_best=mth, correct=bool(rec) and bool(np.all(good)),
        epsilon_own=own is not None, guarantee=guarantee_of(algorithm, params, look_up=False).promise(),
        not_proven=assumptions_failing(algorithm, params, truth),
    )


def tied_ranks(score: np.ndarray, a: int) -> tuple[int, int]:
    """The ranks (1 = the highest score) that compound ``a`` shares with the compounds of equal score:
    (best, worst); equal when it has no tie."""
    x = score[a]
    return int((score > x).sum()) + 1, int((score >= x).sum())


def _rank(lo: int, hi: int, K: int) -> str:
    return f"rank {lo} of {K:,}" if lo == hi else f"tied for ranks {lo}-{hi} of {K:,}: {hi - lo + 1} compounds equal"


def _measured(r: dict) -> str:
    label = r.get("activity_label", "nM")
    return f"{r['activity_nM']:.3g} nM" if label == "nM" else f"{label} {r['activity_nM']:.3g}"


def backtest_from_args(args, params: dict) -> int:
    from .state.creation import check_settings

    if getattr(args, "outcome", "binary") != "binary":  # it was taken and ignored: a binary run, said as one
        raise ValueError(
            f"--outcome {args.outcome}: the backtest simulates 0/1 outcomes only (each test a hit or not, drawn from "
            "the compound's hit rate at --threshold), so it runs binary algorithms (log-tas, glgape, kl-lucb, ...); "
            "drop --outcome, and rehearse a continuous campaign with `screenbai simulate --reward gaussian`"
        )
    # before the truth is read and featurized: a bad number must not cost that first
    for name, value in (("--plate-size", args.plate_size), ("--max-tests", args.max_tests), ("--top-k", args.top_k)):
        if value < 1:
            raise ValueError(f"{name} must be at least 1; got {value}")
    hit_above = bool(getattr(args, "hit_above", False))
    noise = float(getattr(args, "noise", 0.0))
    if not args.rate_column and not hit_above and not args.threshold > 0:
        raise ValueError(f"--threshold is an activity in nM and must be > 0; got {args.threshold:g}")
    if not noise >= 0:
        raise ValueError(f"--noise must be >= 0; got {noise:g}")
    check_settings(args.algorithm, params, args.seed, "binary")
    if args.campaign_out:  # a file of another backtest refused before the truth is read and featurized
        check_before_truth(args.campaign_out, args.algorithm, params, args.seed, args.plate_size, args.max_tests)
    if args.activity_column and not hit_above:
        from screenbai.chem.tables import check_not_log_scale

        try:  # the curated route reads concentrations: a pIC50 of 8 would be 8 nM, the best compounds the weakest
            check_not_log_scale(args.activity_column, None, "")
        except ValueError:
            raise ValueError(
                f"--activity-column {args.activity_column!r} names logarithmic values (pIC50, pKi, ...), and without "
                "--hit-above the activity is read as a concentration in nM; give --hit-above with --threshold on its "
                "own scale (e.g. --threshold 8 for IC50 < 10 nM), or a column of concentrations in nM"
            ) from None
    truth = args.truth or args.library
    separate = args.truth is not None and Path(args.truth).resolve() != Path(args.library).resolve()
    truth_kind = _detect_kind(Path(truth))
    sdf = _is_sdf(Path(truth))
    if args.rate_column and (sdf or truth_kind == "chembl-export"):
        raise ValueError(
            f"{truth}: --rate-column {args.rate_column!r} reads hit rates from a CSV/TSV table or the workflow's "
            f"arms parquet, not from {'an SDF' if sdf else 'a ChEMBL export'}; give the rates in a CSV/TSV with --truth"
        )
    if hit_above and truth_kind != "table":
        raise ValueError(f"{truth}: --hit-above compares a readout on its own scale (larger is a hit), and this file's "
                         "activities are IC50s (lower is better); drop --hit-above, or give the readout in a CSV/TSV "
                         "with --truth")
    if truth_kind == "table" and (separate or args.rate_column or hit_above):
        # what a lab has: compound id and a measured value, for the structures of --library (or in its own file);
        # a readout where larger is a hit is compared on its own scale there, not curated as an IC50
        lib = library_from_args(args)
        known = outcomes_from_table(
            lib,
            truth,
            id_column=args.truth_id_column or (None if separate else args.id_column),
            rate_column=args.rate_column,
            activity_column=args.activity_column,
            threshold=args.threshold,
            direction="above" if hit_above else "below",
            noise=noise,
        )
    elif args.rate_column:
        known = outcomes_from_rates(truth, rate_column=args.rate_column, library_file=args.library_file)
    else:
        known = outcomes_from_activities(
            truth,
            threshold_nM=args.threshold,
            id_column=args.truth_id_column or args.id_column,
            smiles_column=args.smiles_column,
            activity_column=args.activity_column,
            radius=args.radius,
            n_bits=args.bits,
            d=args.d,
            noise_log10=noise,
        )
        if separate:  # a ChEMBL export as the truth: its curated activities, for the structures of --library
            known = restrict_to_library(
                known,
                library_from_args(args),
            )
    result = run_backtest(
        known,
        args.algorithm,
        params,
        seed=args.seed,
        plate_size=args.plate_size,
        max_tests=args.max_tests,
        top_k=args.top_k,
        campaign_path=args.campaign_out,
        progress=True,
    )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    data = {
        "algorithm": args.algorithm,
        "params": params,
        "seed": args.seed,
        "plate_size": args.plate_size,
        "tests": result.tests,
        "plates": result.plates,
        "stopped": result.stopped,
        "finished": result.finished,
        "recommendation": result.recommendation,
        # the answer judged as the algorithms' error rates judge it (BacktestResult.verdict)
        "m": result.m,
        "epsilon": result.epsilon,
        "mth_best_rate": result.mth_best,
        "correct": result.correct,
        "guarantee": result.guarantee,
        "not_proven": result.not_proven,
        "top_k": result.top_k,
        "description": result.description,
    }
    with written_whole(out / "backtest.json") as fh:  # whole or not at all: a killed backtest leaves no cut JSON
        fh.write(json.dumps(data, indent=2))
    with written_whole(out / "hit_recovery.csv") as fh:
        w = csv.writer(fh)
        w.writerow(["tests", "campaign", "random", "one_shot"])
        c = result.curve
        w.writerows(zip(c["tests"], c["campaign"], c["random"], c["one_shot"]))
    curve_figure(result, out / "hit_recovery.png")
    say(result.text())
    say(f"written: {out / 'backtest.json'}, {out / 'hit_recovery.csv'}, {out / 'hit_recovery.png'}")
    return 0

"""A backtest's campaign file (``--campaign-out``): made, or continued after a kill.

Running the same ``campaign backtest`` command again after it was killed goes on from the last step the file
holds and ends as a run never interrupted would have (the same plates, stop, answer and files). That is exact
because the campaign file is the policy's only state (each plate and each results file one SQLite transaction: a
kill leaves the last whole step) and the assay's draws are one random stream, seeded by the backtest's seed and
drawn plate by plate in the plates' order: drawn again over the plates in the file, it stands where it stood.
A plate proposed but not recorded when the backtest was killed is recorded with the outcomes it would have had.

The file holds the settings the backtest began with (meta key ``backtest``): a command with other settings or
other known outcomes, a campaign file not made by a backtest, or a file whose recorded outcomes are not the
ones this backtest draws is refused, naming the file and what to do, never continued into a mix.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import sys
from pathlib import Path

import numpy as np

from ..textfiles import written_whole
from .campaign import Campaign, Plate
from .state.store import CampaignError

#: the campaign file's meta key of the backtest's settings
KEY = "backtest"

#: how a setting is named in a refusal
_WORDS = {
    "algorithm": "--algorithm",
    "params": "--param",
    "seed": "--seed",
    "plate_size": "--plate-size",
    "max_tests": "--max-tests",
    "truth": "the known outcomes",
    "truth_sha256": "the known outcomes' hit rates or the library's compounds and features (checksum)",
}


def settings(known, algorithm: str, params: dict, seed: int, plate_size: int, max_tests: int) -> dict:
    """What decides a backtest's plates and outcomes, as stored in its campaign file (JSON values)."""
    lib = known.library
    h = hashlib.sha256(np.ascontiguousarray(known.rate, dtype=np.float64).tobytes())
    h.update("\n".join(str(c) for c in lib.compounds["compound_id"]).encode())
    h.update(np.ascontiguousarray(lib.features, dtype=np.float64).tobytes())
    return json.loads(
        json.dumps(
            {
                "algorithm": algorithm,
                "params": params,
                "seed": int(seed),
                "plate_size": int(plate_size),
                "max_tests": int(max_tests),
                "truth": known.description,
                "truth_sha256": h.hexdigest(),
            }
        )
    )


def results_text(plate: Plate, values: np.ndarray) -> str:
    """The results file of ``plate`` with the outcomes ``values``, as the backtest writes and records it."""
    buf = io.StringIO(newline="")
    w = csv.writer(buf)
    w.writerow(["plate_id", "well", "compound_id", "outcome"])
    w.writerows(zip([plate.plate_id] * len(plate.arms), plate.wells, plate.compound_ids, values))
    return buf.getvalue()


def record_plate(camp: Campaign, folder: Path, plate: Plate, values: np.ndarray) -> None:
    """Write the plate's results file into ``folder`` and record it, as a lab would."""
    results = Path(folder) / f"{plate.plate_id}_results.csv"
    with written_whole(results) as fh:
        fh.write(results_text(plate, values))
    camp.record(results)


def draw(rng: np.random.Generator, rate: np.ndarray, arms) -> np.ndarray:
    """The assay's 0/1 outcomes of the wells ``arms``: each a hit with its compound's rate."""
    arms = np.asarray(arms)
    return (rng.random(arms.size) < rate[arms]).astype(int)


def open_or_create(path, known, algorithm: str, params: dict, seed: int, backtest: dict) -> Campaign:
    """The backtest's campaign file ``path``: created (with ``backtest``, its :func:`settings`) when absent, else
    opened after checking it is this backtest's (refused otherwise, naming what differs)."""
    path = Path(path)
    if path.is_dir():
        raise ValueError(
            f"--campaign-out {path} is a folder; give the campaign file's name, e.g. {path / 'backtest.campaign'}"
        )
    if not path.exists():
        return Campaign.create(
            path,
            known.library,
            algorithm,
            params,
            seed=seed,
            outcome="binary",
            note=known.description,
            durable=False,
            meta={KEY: backtest},
        )
    camp = Campaign.open(path, durable=False)
    try:
        _refuse_another(camp, backtest)
    except BaseException:
        camp.close()
        raise
    return camp


def check_before_truth(path, algorithm: str, params: dict, seed: int, plate_size: int, max_tests: int) -> None:
    """Refuse an existing ``--campaign-out`` of another backtest before the truth is read and featurized (minutes
    for a large library); the truth itself is checked when the file is opened (:func:`open_or_create`)."""
    path = Path(path)
    if not path.is_file():
        return
    given = {"algorithm": algorithm, "params": params, "seed": seed, "plate_size": plate_size, "max_tests": max_tests}
    with Campaign.open(path, durable=False) as camp:
        _refuse_another(camp, json.loads(json.dumps(given)))


def _refuse_another(camp: Campaign, backtest: dict) -> None:
    """Refuse the campaign file ``camp`` unless it is a backtest's begun with the settings ``backtest`` (those
    given: a part of :func:`settings`), naming what differs."""
    path = camp.path
    stored = camp.meta.get(KEY)
    if stored is None:
        raise CampaignError(
            f"--campaign-out {path} exists and is not a backtest's campaign file (made by `campaign init`, or by "
            "a backtest of a version that could not continue one): a backtest continues only its own file; "
            f"give another --campaign-out, or delete {path} to start the backtest over"
        )
    differ = [k for k in backtest if stored.get(k) != backtest[k]]
    if differ:
        said = "; ".join(f"{_WORDS.get(k, k)}: {stored.get(k)!r} there, {backtest[k]!r} now" for k in differ)
        raise CampaignError(
            f"--campaign-out {path} holds a backtest begun with other settings ({said}); run the command it was "
            f"begun with to continue it, or give another --campaign-out (or delete {path}) to start a new one"
        )


def replay_assay(camp: Campaign, rng: np.random.Generator, rate: np.ndarray, folder: Path) -> tuple[list[int], int]:
    """Bring a continued backtest to where it was killed: draw the outcomes of the plates in the file, in their
    order (the stream then stands where the uninterrupted run has it), check them against the results files
    recorded, and record the plate proposed but not recorded. Returns the arms tested, in the plates' order, and the
    number of plates."""
    plate_ids = [d["plate_id"] for _, _, kind, d in camp.events() if kind == "plate"]
    if not plate_ids:
        return [], 0
    recorded = {d["file"]: d["sha256"] for _, _, kind, d in camp.events() if kind == "record"}
    open_wells = camp.open_wells()
    tested: list[int] = []
    for plate_id in plate_ids:
        plate = camp.plate(plate_id)
        values = draw(rng, rate, plate.arms)
        name = f"{plate_id}_results.csv"
        if plate_id in open_wells and open_wells[plate_id] == len(plate.wells) and name not in recorded:
            record_plate(camp, folder, plate, values)  # killed between the plate and its results
        elif recorded.get(name) != hashlib.sha256(results_text(plate, values).encode()).hexdigest():
            raise CampaignError(
                f"--campaign-out {camp.path}: plate {plate_id}'s recorded outcomes are not the ones this backtest "
                "draws (its results were recorded by hand, or the file was changed); give another --campaign-out, "
                f"or delete {camp.path} to start the backtest over"
            )
        tested.extend(plate.arms)
    print(
        f"continuing the backtest in {camp.path}: {len(plate_ids)} plate(s), {len(tested):,} tests already in it",
        file=sys.stderr,
    )
    return tested, len(plate_ids)

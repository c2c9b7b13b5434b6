"""A screen whose model is wrong, handed over to KL-LUCB: what it costs and whether the answer holds.

K compounds from MOSES (real structures, the featurizer of `campaign init`) get hit rates that ignore their
features (drawn from Beta(1, 3)). The README's recipe runs log-tas in plates until `status`'s model check
rejects its model, then `campaign restart --algorithm kl-lucb` hands the screen over and KL-LUCB runs to its
stop; per seed it prints the tests of each part, the answer's true rate against the best, and the certified
epsilon. Without the hand-over log-tas did not stop in 20 000 tests on such a screen (docs/certificate.md).

KL-LUCB states no stopping threshold; `status` forecasts it by simulation (certainty/simulated_forecast.py). After
``--forecast-after`` of KL-LUCB's plates the forecast of the tests left and its band are taken from `status`, and
set against the tests the screen then took to its stop ("ratio": actual / forecast; "in band": the plates it took
inside the forecast's 80 % band).

    python benchmarks/model_free_handover.py --seeds 0 1 2 3 4          # K = 40, plates of 96
    SCREENBAI_SHARED_DATA=/path/to/shared/data python benchmarks/model_free_handover.py

Everything goes through the `screenbai` command and the Campaign object, as a lab's screen would.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import gzip
import io
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from screenbai.campaign import Campaign  # noqa: E402
from screenbai.cli import main as screenbai  # noqa: E402

SHARED = Path(os.environ.get("SCREENBAI_SHARED_DATA", REPO.parent / "shared" / "data"))
MOSES = SHARED / "moses" / "moses_train_smiles.csv.gz"


def _quiet(argv: list[str]) -> int:
    with contextlib.redirect_stdout(io.StringIO()):
        return screenbai(argv)


def _plates(path: Path, folder: Path, rates: np.ndarray, rng, size: int, cap: int, until_rejected: bool) -> str:
    """Plates of ``size`` until the campaign is done, the model check rejects (``until_rejected``) or ``cap``
    plates; the outcomes drawn from ``rates`` by compound index. Returns why it ended."""
    for _ in range(cap):
        with Campaign.open(path) as camp:
            if camp.policy.done:
                return "stopped"
            plate = camp.next_plate(size, force=True)
            values = [int(rng.random() < rates[camp.compound_ids.index(c)]) for c in plate.compound_ids]
            results = folder / f"{plate.plate_id}.csv"
            with open(results, "w", newline="") as fh:
                w = csv.writer(fh)
                w.writerow(["plate_id", "well", "outcome"])
                w.writerows([plate.plate_id, well, v] for well, v in zip(plate.wells, values))
            camp.record(results)
            check = camp.status().model_check if until_rejected else None
            if check and check.get("rejected"):
                return "model rejected"
    return "cap"


def one_screen(seed: int, smiles: list[str], size: int, cap: int, forecast_after: int = 1) -> dict:
    rng = np.random.default_rng(seed)
    rates = rng.beta(1.0, 3.0, len(smiles))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        lib = folder / "library.csv"
        lib.write_text("id,smiles\n" + "".join(f"M{i:03d},{s}\n" for i, s in enumerate(smiles)))
        path = folder / "screen.campaign"
        assert _quiet(["campaign", "init", str(path), "--library", str(lib), "--id-column", "id", "--smiles-column",
                       "smiles", "--d", "5", "--param", "epsilon=0.1", "--param", "delta=0.05",
                       "--seed", str(seed)]) == 0
        first = _plates(path, folder, rates, rng, size, cap, until_rejected=True)
        with Campaign.open(path) as camp:
            before = int(camp.observations()[0].sum())
        if first == "model rejected":
            handover = ["campaign", "restart", str(path), "--algorithm", "kl-lucb", "--reason", "model rejected"]
            assert _quiet(handover) == 0
            second = _plates(path, folder, rates, rng, size, forecast_after, until_rejected=False)
            with Campaign.open(path) as camp:
                then = camp.status()
            if second == "cap":
                second = _plates(path, folder, rates, rng, size, cap, until_rejected=False)
        else:
            second, then = "-", None
        with Campaign.open(path) as camp:
            st = camp.status()
            answer = int(st.recommendation[0].compound_id[1:])
            row = {"seed": seed, "log-tas ended": first, "log-tas tests": before, "kl-lucb ended": second,
                   "kl-lucb tests": st.tests - before, "answer rate": float(rates[answer]),
                   "best rate": float(rates.max()), "correct": bool(rates[answer] >= rates.max() - 0.1),
                   "certified epsilon": st.certified_epsilon}
        if then is not None and then.forecast_tests is not None and not then.done:
            left = st.tests - then.tests
            low, high = then.forecast_band_plates
            row.update({"forecast left": then.forecast_tests, "band (plates)": f"{low:.0f}-{high:.0f}",
                        "actual left": left, "ratio": left / then.forecast_tests,
                        "in band": bool(low <= -(-left // size) <= high)})
        return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, nargs="*", default=[0, 1, 2])
    ap.add_argument("--compounds", type=int, default=40, help="compounds from the head of MOSES's training set")
    ap.add_argument("--plate-size", type=int, default=96)
    ap.add_argument("--cap", type=int, default=300, help="plates at most in each part")
    ap.add_argument("--forecast-after", type=int, default=1, help="KL-LUCB's plates before its forecast is taken")
    args = ap.parse_args()
    if not MOSES.exists():
        raise SystemExit(f"{MOSES} not found: set SCREENBAI_SHARED_DATA to the folder holding moses/")
    with gzip.open(MOSES, "rt") as fh:
        smiles = [line.split(",")[0].strip() for line in fh.readlines()[1 : args.compounds + 1]]
    rows = [one_screen(s, smiles, args.plate_size, args.cap, args.forecast_after) for s in args.seeds]
    keys = list(max(rows, key=len))
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for r in rows:
        cells = [r.get(k, "-") for k in keys]
        print("| " + " | ".join(f"{v:.3g}" if isinstance(v, float) else str(v) for v in cells) + " |", flush=True)


if __name__ == "__main__":
    main()

"""The README's campaign recipe, backtested: `status`'s forecast after plates 1, 2, 3, 5 against each run's stop.

The recipe (docs/lower_bound.md, "The README's recipe, backtested"): log-tas (campaign's default), epsilon = 0.1,
delta = 0.05, plates of 96, Bernoulli outcomes of the workflow's fitted truth. For each seed the full run to its stop
and the campaign after plate k (the same run cut at k plates: `--max-tests 96 k`), read with ``status``: the
forecast total in plates (k + ``forecast_plates``), its band (k + ``forecast_band_plates``), whether the stop lies
inside the band, and whether it is within a factor 2 of the point. The truth is made by the workflow:

    snakemake results/cdk2_potency/ground_truth/arms_d20.parquet --cores 1 --configfile config/cdk2_potency.yaml
    snakemake results/egfr/ground_truth/arms_d20.parquet --cores 1 --configfile config/egfr.yaml
    nice -n 10 python benchmarks/recipe_forecast.py --target cdk2_potency --seeds 1-40 --after 1 2 3 5 --keep DIR

With ``--keep DIR`` the stops and the campaigns are kept and read back (a change of the forecast alone is then
measured on the same campaigns, in the time of ``status``: empty DIR when the policy changes).
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
from pathlib import Path

PLATE = 96


def seeds_of(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        a, _, b = part.partition("-")
        out += list(range(int(a), int(b or a) + 1))
    return out


def main() -> None:
    from screenbai.campaign import Campaign
    from screenbai.campaign.backtest import outcomes_from_rates, run_backtest

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target", default="cdk2_potency", help="results/TARGET/ground_truth/arms_d20.parquet")
    ap.add_argument("--seeds", default="1-20", help="campaign seeds, e.g. 1-40 or 41-60")
    ap.add_argument("--after", nargs="+", type=int, default=[1], help="plates after which to read the forecast")
    ap.add_argument("--keep", metavar="DIR", help="keep (and read back) the stops and campaigns here")
    ap.add_argument("--json", metavar="FILE", help="write the rows as JSON")
    args = ap.parse_args()
    R = Path("results") / args.target
    known = outcomes_from_rates(R / "ground_truth" / "arms_d20.parquet", rate_column="mean",
                                library_file=str(R / "library.parquet"))
    params = {"epsilon": 0.1, "delta": 0.05}
    folder = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="recipe_forecast-"))
    folder.mkdir(parents=True, exist_ok=True)
    stops_file = folder / f"{args.target}_stops.json"
    stops = json.loads(stops_file.read_text()) if stops_file.exists() else {}
    rows = []
    print("| seed | stop (plates) | " + " | ".join(f"after {k}: point [band] in/2x" for k in args.after) + " |")
    print("|---|---|" + "---|" * len(args.after))
    for seed in seeds_of(args.seeds):
        if str(seed) not in stops:
            res = run_backtest(known, "log-tas", params, seed=seed, plate_size=PLATE, max_tests=100 * PLATE)
            stops[str(seed)] = [res.tests, res.plates, bool(res.stopped)]
            stops_file.write_text(json.dumps(stops))
        tests, plates, stopped = stops[str(seed)]
        cells = []
        for k in args.after:
            if plates <= k:
                cells.append("stopped")
                continue
            path = folder / f"{args.target}_seed{seed}_after{k}.campaign"
            if not path.exists():
                run_backtest(known, "log-tas", params, seed=seed, plate_size=PLATE, max_tests=k * PLATE,
                             campaign_path=path)
            camp = Campaign.open(path)
            try:
                st = camp.status()
            finally:
                camp.close()
            if st.forecast_plates is None:
                cells.append("none")
                continue
            point = k + st.forecast_plates
            low, high = (k + v for v in st.forecast_band_plates)
            inside = low <= plates <= high
            within2 = point / 2 <= plates <= 2 * point if math.isfinite(point) else False
            rows.append({"seed": seed, "after": k, "stop": plates, "stop_tests": tests, "point": point,
                         "low": low, "high": high, "inside": inside, "within2": within2})
            cells.append(f"{point:.0f} [{low:.0f}, {high:.0f}] {'in' if inside else 'OUT'}/{'y' if within2 else 'N'}")
        print(f"| {seed} | {plates} | " + " | ".join(cells) + " |", flush=True)
    for k in args.after:
        sel = [r for r in rows if r["after"] == k]
        if sel:
            print(f"after plate {k}: {len(sel)} runs going, within 2x {sum(r['within2'] for r in sel)}, "
                  f"inside the band {sum(r['inside'] for r in sel)}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()

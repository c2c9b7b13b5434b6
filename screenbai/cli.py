"""The ``screenbai`` command: simulate an algorithm on a named instance or on features from a file.

Examples
--------
    screenbai algorithms
    screenbai simulate m-lingape --instance reda_classic:K=4,m=2 --param m=2 --reps 100 --jobs 2
    screenbai simulate glgape --features arms.csv --means-column cure_rate --reward bernoulli \
        --param epsilon=0.1 --param c_mu=oracle --reps 20
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np


def _value(text: str):
    """Parse a --param value: JSON when it parses (numbers, true/false, lists), else a string."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _params(pairs: list[str]) -> dict:
    params = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        if not eq or not key:
            raise SystemExit(f"error: --param {pair!r} must look like key=value (e.g. --param delta=0.05)")
        params[key.strip()] = _value(value.strip())
    return params


def _instance_from_file(args):
    import pandas as pd

    from .bandits.instance import Instance

    path = Path(args.features)
    if not path.exists():
        raise SystemExit(f"error: features file {path} does not exist")
    if path.suffix == ".npy":
        X = np.load(path)
        if args.means is None:
            raise SystemExit("error: a .npy feature file needs --means FILE.npy with one true mean per arm")
        means = np.load(args.means)
    else:
        table = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
        if args.means_column not in table.columns:
            raise SystemExit(
                f"error: column {args.means_column!r} (the arms' true means) is not in {path}; "
                f"columns are {list(table.columns)}; choose one with --means-column"
            )
        means = table.pop(args.means_column).to_numpy(float)
        drop = [c for c in table.columns if not pd.api.types.is_numeric_dtype(table[c])]
        X = table.drop(columns=drop).to_numpy(float)
    return Instance(X, means, args.reward, args.sigma, name=path.stem)


def main(argv: list[str] | None = None) -> int:
    from . import __version__

    parser = argparse.ArgumentParser(
        prog="screenbai", description=__doc__.split("\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    sub.add_parser("algorithms", help="list the registered algorithms and their parameters with defaults")
    sub.add_parser("instances", help="list the named synthetic instances")

    sim = sub.add_parser(
        "simulate",
        help="replicate an algorithm on an instance and print a summary",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    sim.add_argument("algorithm", help="a registered name (see `screenbai algorithms`)")
    src = sim.add_mutually_exclusive_group(required=True)
    src.add_argument("--instance", help="a named instance (see `screenbai instances`), e.g. soare:d=5 or "
                     "kw_synthetic:K=50,d=10,seed=3")
    src.add_argument("--features", help="CSV/Parquet of arm features (numeric columns) or .npy matrix")
    sim.add_argument("--means", help="with a .npy feature file: .npy of true means (one per arm)")
    sim.add_argument("--means-column", default="mean", help="column of true means in the feature table")
    sim.add_argument("--reward", default="gaussian", choices=["gaussian", "bernoulli"],
                     help="reward model of the simulated environment")
    sim.add_argument("--sigma", type=float, default=1.0, help="Gaussian noise standard deviation")
    sim.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                     help="algorithm parameter, repeatable (values parsed as JSON, else kept as text)")
    sim.add_argument("--reps", type=int, default=20, help="number of independent runs")
    sim.add_argument("--seed", type=int, default=0, help="study seed (run r uses its r-th spawned stream)")
    sim.add_argument("--jobs", type=int, default=1, help="worker processes (results do not depend on it)")
    sim.add_argument("--out", help="write the per-run records here (.csv or .parquet)")
    sim.add_argument("--no-progress", action="store_true", help="hide the progress bar")

    from .campaign.cli import add_parser as add_campaign_parser

    add_campaign_parser(sub)

    args = parser.parse_args(argv)
    if args.command == "campaign":
        from .campaign.cli import run as run_campaign

        return run_campaign(args)
    from .bandits import registry

    if args.command == "algorithms":
        from .bandits.params import REQUIRED

        for name, entry in registry.available().items():
            params = ", ".join(k if v is REQUIRED else f"{k}={v!r}" for k, v in entry.parameters().items())
            print(f"{name:22s} {entry.description}\n{'':22s} {params}")
        return 0
    if args.command == "instances":
        from .bandits.instances import NAMED

        for name, fn in NAMED.items():
            print(f"{name:14s} {(fn.__doc__ or '').strip().splitlines()[0]}")
        return 0

    from .bandits.instances import parse_instance
    from .bandits.runner import replicate, summarize

    try:
        instance = parse_instance(args.instance) if args.instance else _instance_from_file(args)
        records = replicate(
            instance, args.algorithm, _params(args.param), n_reps=args.reps, seed=args.seed,
            n_jobs=args.jobs, progress=not args.no_progress,
        )
    except (ValueError, KeyError, TypeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    import pandas as pd  # here, not at the top: `screenbai campaign` commands start faster without it

    summary = summarize(records)
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        print(summary.drop(columns=["params"]).to_string(index=False))
    if args.out:
        out = Path(args.out)
        (records.to_parquet if out.suffix == ".parquet" else records.to_csv)(out, index=False)
        print(f"records written to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

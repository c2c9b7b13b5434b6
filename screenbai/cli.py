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
import contextlib
import signal
import sys
import textwrap
import threading
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from . import __version__
from .bandits.core import registry
from .bandits.core.params import REQUIRED, declared
from .bandits.core.runner import replicate, summarize
from .bandits.sim.generators import NAMED, parse_instance
from .bandits.sim.instance import Instance
from .campaign.cli import add_parser as add_campaign_parser
from .campaign.cli import run as run_campaign
from .cliargs import HelpFormatter, parse_params
from .guarantees import guarantee_of
from .streams import results_stdout, say
from .textfiles import written_whole, written_whole_bytes

if TYPE_CHECKING:
    import pandas as pd


class UsageError(ValueError):
    """A command line of ``simulate`` that cannot run as given: exit 2 with the message, as argparse's errors and
    the other usage errors do (a SystemExit with a message exited 1)."""


def _feature_columns(table: pd.DataFrame, spec: str | None, path: Path) -> list[str]:
    """The feature columns: ``spec`` (comma-separated names, or a prefix ending in "*"), else the
    workflow's ``x0, x1, ...`` columns.  Never every numeric column: an id, an activity or a label
    column would silently become a feature."""
    import pandas as pd  # here, not at the top: pandas (and screening, which imports it) load in 0.6 s

    from .screening import arm_columns

    if spec:
        names = [c.strip() for c in spec.split(",") if c.strip()]
        cols: list[str] = []
        for name in names:
            if name.endswith("*"):
                hits = [c for c in table.columns if str(c).startswith(name[:-1])]
                if not hits:
                    raise UsageError(
                        f"--feature-columns {name!r}: no column of {path} starts with {name[:-1]!r}; columns are "
                        f"{list(table.columns)}"
                    )
                cols += hits
            elif name in table.columns:
                cols.append(name)
            else:
                raise UsageError(
                    f"--feature-columns names {name!r}, which is not a column of {path}; give column names of it "
                    "(comma-separated) or a prefix ending in *; "
                    f"columns are {list(table.columns)}"
                )
    else:
        cols = arm_columns(table)
        if not cols:
            raise UsageError(
                f"{path} has no columns x0, x1, ... (the features the workflow writes); name the feature "
                f"columns with --feature-columns (e.g. --feature-columns 'fp_*' or --feature-columns a,b,c); "
                f"columns are {list(table.columns)}"
            )
    text = [c for c in cols if not pd.api.types.is_numeric_dtype(table[c])]
    if text:
        raise UsageError(f"feature column(s) {text} of {path} are not numeric; name the numeric feature columns with "
                         "--feature-columns")
    return cols


def _instance_from_file(args):
    import pandas as pd  # for start-up speed, as above

    path = Path(args.features)
    if not path.exists():
        raise UsageError(f"--features {path}: the file does not exist; check the path, or simulate a named instance "
                         "with --instance (see `screenbai instances`)")
    if path.suffix == ".npy":
        X = np.load(path)
        if args.means is None:
            raise UsageError("a .npy feature file needs --means FILE.npy with one true mean per arm")
        if not Path(args.means).is_file():
            raise UsageError(f"--means {args.means}: the file does not exist; give the .npy of the arms' true means")
        means = np.load(args.means)
    else:
        try:
            table = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
        except (ValueError, OSError, UnicodeDecodeError) as exc:  # empty, not a table, not text
            kind = "Parquet" if path.suffix == ".parquet" else "CSV"
            raise UsageError(
                f"features file {path} could not be read as a {kind} table ({exc}); "
                "give a table with one row per arm, the features in columns x0, x1, ... "
                f"(or --feature-columns) and the true means in column {args.means_column!r}"
            ) from None
        if table.empty:
            raise UsageError(f"features file {path} has no rows (one row per arm is needed)")
        if args.means_column not in table.columns:
            raise UsageError(
                f"column {args.means_column!r} (the arms' true means) is not in {path}; "
                f"columns are {list(table.columns)}; choose one with --means-column"
            )
        means = table[args.means_column].to_numpy(float)
        cols = _feature_columns(table, args.feature_columns, path)
        if args.means_column in cols:
            raise UsageError(f"the means column {args.means_column!r} cannot also be a feature column; leave it out of "
                             "--feature-columns")
        X = table[cols].to_numpy(float)
        unused = [c for c in table.columns if c not in cols and c != args.means_column]
        print(
            f"features: {len(cols)} column(s) of {path} ({_short(cols)}); means: {args.means_column!r}; "
            f"not used: {_short(unused) if unused else 'none'}",
            file=sys.stderr,
        )
    return Instance(X, means, args.reward, args.sigma, name=path.stem)


def _print_warning(message, category, filename, lineno, file=None, line=None) -> None:
    print(f"warning: {message}", file=sys.stderr, flush=True)


_FILE_OPTIONS = {"means": "--means", "means_column": "--means-column", "feature_columns": "--feature-columns",
                 "reward": "--reward", "sigma": "--sigma"}


def _check_file_options(args) -> None:
    """Options that describe a --features instance are refused where they would be ignored."""
    if args.instance:
        given = [f"{flag} {getattr(args, key)}" for key, flag in _FILE_OPTIONS.items()
                 if getattr(args, key) is not None]
        if given:
            raise UsageError(
                f"{', '.join(given)} {'describes' if len(given) == 1 else 'describe'} a --features instance "
                "and would be ignored with --instance; leave it out: "
                "a named instance takes its own parameters, e.g. --instance soare:d=2,sigma=0.5 "
                "(see `screenbai instances`)"
            )
        return
    npy = Path(args.features).suffix == ".npy"
    ignored = ["--means-column", "--feature-columns"] if npy else ["--means"]
    given = [f"{flag} {getattr(args, key)}" for key, flag in _FILE_OPTIONS.items()
             if flag in ignored and getattr(args, key) is not None]
    if given:
        raise UsageError(
            f"{', '.join(given)} would be ignored with a {'.npy' if npy else 'table'} features file: "
            + ("a .npy matrix takes its means from --means FILE.npy" if npy else
               "a table takes its means from a column (--means-column)") + "; leave it out"
        )
    if args.reward == "bernoulli" and args.sigma is not None:
        raise UsageError(
            "--sigma sets Gaussian noise; with --reward bernoulli the outcomes are 0/1 draws of the means "
            "and --sigma would be ignored; leave it out"
        )
    args.reward = args.reward or "gaussian"
    args.sigma = 1.0 if args.sigma is None else args.sigma
    args.means_column = args.means_column or "mean"


def _short(cols: list, n: int = 6) -> str:
    cols = [str(c) for c in cols]
    return ", ".join(cols) if len(cols) <= n else ", ".join(cols[:n]) + f", ... ({len(cols)} in all)"


def _check_out(out: str | None) -> None:
    """Before any run: the records must have somewhere to go."""
    if not out:
        return
    path = Path(out)
    if path.suffix not in (".csv", ".parquet"):
        raise UsageError(f"--out {out}: the suffix must be .csv or .parquet; got {path.suffix or 'none'!r}; give a "
                         "file name ending in .csv or .parquet")
    if not path.parent.is_dir():
        raise UsageError(f"--out {out}: folder {path.parent} does not exist; create it first, or choose another "
                         "--out")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="screenbai",
        description="Best-arm identification for compound screening: simulate an algorithm on a named instance or "
        "on features from a file, or run a real screen (campaign).",
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    sub.add_parser("algorithms", help="list the registered algorithms and their parameters with defaults",
                   formatter_class=HelpFormatter)
    sub.add_parser("instances", help="list the named synthetic instances", formatter_class=HelpFormatter)

    sim = sub.add_parser(
        "simulate",
        help="replicate an algorithm on an instance and print a summary",
        description="Replicate an algorithm on an instance and print a summary: tests to stop (median, mean), "
        "error rate, time per run.",
        formatter_class=HelpFormatter,
    )
    sim.add_argument("algorithm", help="a registered name (see `screenbai algorithms`)")
    src = sim.add_mutually_exclusive_group(required=True)
    src.add_argument("--instance", help="a named instance (see `screenbai instances`), e.g. soare:d=5 or "
                     "kw_synthetic:K=50,d=10,seed=3")
    src.add_argument("--features", help="CSV/Parquet table of arms (features in columns x0, x1, ... as the "
                     "workflow writes them, or chosen with --feature-columns) or .npy matrix")
    sim.add_argument("--feature-columns", help="feature columns of the --features table: comma-separated names, "
                     "or a prefix ending in * (default: x0, x1, ...)")
    sim.add_argument("--means", help="with a .npy feature file: .npy of true means (one per arm)")
    sim.add_argument("--means-column", help="column of true means in the feature table (default: mean)")
    sim.add_argument("--reward", choices=["gaussian", "bernoulli"],
                     help="reward model of a --features instance (default: gaussian)")
    sim.add_argument("--sigma", type=float, help="Gaussian noise standard deviation of a --features instance "
                     "(default: 1; policies assume the instance's scale unless --param sigma=... is given)")
    sim.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                     help="algorithm parameter, repeatable (values parsed as JSON, else kept as text)")
    sim.add_argument("--reps", type=int, default=20, help="number of independent runs")
    sim.add_argument("--seed", type=int, default=0, help="study seed (run r uses its r-th spawned stream)")
    sim.add_argument("--jobs", type=int, default=1, help="worker processes, -1 for one per core (results do not "
                     "depend on it)")
    sim.add_argument("--out", help="write the per-run records here (.csv or .parquet)")
    sim.add_argument("--no-progress", action="store_true", help="hide the progress bar")

    add_campaign_parser(sub)

    args = parser.parse_args(argv)
    # the results go to a stream only we write: a dependency printing on stdout (Python or C) lands on stderr
    try:
        with _terminate_unwinds(), results_stdout():
            return _run(args)
    except BrokenPipeError:  # the reader went away (`screenbai ... | head`): stop without a traceback
        return 128 + 13


@contextlib.contextmanager
def _terminate_unwinds():
    """Inside the block a ``kill`` (SIGTERM) ends the command as Ctrl-C does: cleanup code runs (a
    backtest's temporary folder is removed, the campaign file closed) instead of the process vanishing."""

    def stop(signum, frame):
        raise SystemExit(128 + signum)

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


def _run(args) -> int:
    """Run the parsed command; its output goes through :func:`screenbai.streams.say`."""
    if args.command == "campaign":
        return run_campaign(args)
    if args.command == "algorithms":
        for name, entry in registry.available().items():
            listed = ", ".join(k if v is REQUIRED else f"{k}={v!r}" for k, v in entry.parameters().items())
            say(textwrap.fill(entry.description, 118, initial_indent=f"{name:22s} ", subsequent_indent=" " * 23))
            say(f"{'':22s} {listed}")
            for key, p in declared(entry.cls).items():  # settings without an error guarantee, said where offered
                if p.no_guarantee:
                    say(f"{'':22s} {key}: {p.help}")
            # what the defaults promise, and under which model (screenbai.guarantees: one home with the reports)
            promise = guarantee_of(name, {}, look_up=False).promise()
            say(textwrap.fill(f"guarantee at the defaults: {promise}", 118, initial_indent=" " * 23,
                              subsequent_indent=" " * 25))
        return 0
    if args.command == "instances":
        for name, fn in NAMED.items():
            say(f"{name:14s} {(fn.__doc__ or '').strip().splitlines()[0]}")
        return 0

    try:
        _check_out(args.out)
        _check_file_options(args)
        params = parse_params(args.param)  # a malformed --param before a features file is read
        instance = parse_instance(args.instance) if args.instance else _instance_from_file(args)
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            # printed when raised, before the runs (a warning about tied arms came after hours of capped runs)
            warnings.showwarning = _print_warning
            records = replicate(
                instance, args.algorithm, params, n_reps=args.reps, seed=args.seed,
                n_jobs=args.jobs, progress=not args.no_progress,
            )
    except (ValueError, KeyError, TypeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    import pandas as pd  # here, not at the top: `screenbai campaign` commands start faster without it

    from .guarantees import assumptions_failing, for_instance

    # what the setting promises, and whether this instance (its truth known) meets the promise's assumptions
    promised = guarantee_of(args.algorithm, for_instance(args.algorithm, params, instance))
    broken = assumptions_failing(args.algorithm, params, instance)
    tag = "not proven here" if broken and promised.kind == "guaranteed" else promised.tag
    records["guarantee"] = tag
    if broken:  # the certificate rests on the same assumptions
        records["certified_guaranteed"] = False
    summary = summarize(records)
    summary["guarantee"] = tag
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        say(summary.drop(columns=["params"]).to_string(index=False))
    say(f"guarantee: {promised.promise()}")
    if broken:
        say(f"NOT PROVEN ON THIS INSTANCE: {'; '.join(broken)}; the error (and the certificate) of these runs is not "
            "bounded by delta")
    capped = int(summary["hit_cap"].sum())
    if capped:
        say(
            f"{capped} of {len(records)} run(s) hit the cap of {int(records['max_samples'].max())} tests "
            "(max_samples) without stopping; they are counted in not_stopped and left out of the samples and "
            "error columns; raise the cap with --param max_samples=N, or give epsilon > 0"
        )
    say("noise_scale: the noise scale the policy assumed (the instance's own unless --param sigma=... is given)")
    if summary["median_certified_epsilon"].notna().any():
        say("median_certified_epsilon: the epsilon each run's answer is certified epsilon-good at, at its end (at "
            "confidence 1 - delta, whenever read, under the model and assumptions of the guarantee above); "
            "certificate_misses: runs whose answer's true gap exceeds it (at most about delta of them when the "
            "setting is guaranteed and its assumptions hold)")
    if args.out:
        out = Path(args.out)
        if out.suffix == ".parquet":
            with written_whole_bytes(out) as fh:
                records.to_parquet(fh, index=False)
        else:
            with written_whole(out) as fh:
                records.to_csv(fh, index=False)
        say(f"records written to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

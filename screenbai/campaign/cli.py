"""``screenbai campaign ...``: a thin shell over :class:`screenbai.campaign.Campaign`.

screenbai campaign init cdk2.campaign --library export.csv.gz --param epsilon=0.1      # log-tas (0/1 outcomes)
screenbai campaign next cdk2.campaign --plate-size 96          # writes P001.csv
screenbai campaign record cdk2.campaign P001.csv                # the same file, outcomes filled in
screenbai campaign status cdk2.campaign
screenbai campaign report cdk2.campaign --out cdk2_report/
screenbai campaign repair cdk2.campaign                         # rebuild the policy snapshots from the log
screenbai campaign backtest --library export.csv.gz --activity-column standard_value ...
screenbai campaign add / withdraw / restart / format / export ... # labcli.py: the lab's side
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import sqlite3
import sys
from pathlib import Path

from ..cliargs import HelpFormatter, parse_params
from ..streams import results, say

#: unusual values (recorded with a warning) shown on stderr by `record`; the campaign's log keeps them all
MAX_SHOWN = 10


def add_parser(sub) -> None:
    """Register ``campaign`` and its subcommands on the main command's subparsers."""
    from .lab.assay import DEFAULT_MIN_Z

    camp = sub.add_parser(
        "campaign",
        help="run a real screen: plates, lab results, status, report, backtest",
        description=(
            "Run a real screen: the next plate, the lab's results, status, report, backtest; "
            "all state in one campaign file."
        ),
    )
    cs = camp.add_subparsers(dest="campaign_command", required=True)

    def file_arg(p):
        p.add_argument("campaign", help="the campaign file (one SQLite database)")

    def library_args(p):
        p.add_argument(
            "--library",
            required=True,
            help="structures: CSV/TSV/SDF, a ChEMBL web export (';'-separated), or the workflow's "
            "features/pca_d{d}.parquet",
        )
        p.add_argument(
            "--kind",
            default="auto",
            choices=["auto", "table", "chembl-export", "featurized"],
            help="how to read --library (auto: from the file name and columns)",
        )
        p.add_argument("--id-column", help="compound id column of a CSV/TSV (SDF: the title line by default)")
        p.add_argument("--smiles-column", help="SMILES column of a CSV/TSV (SDF: the record's structure by default)")
        p.add_argument("--library-file", help="with a featurized library: the workflow's library.parquet (SMILES)")
        p.add_argument("--radius", type=int, default=4, help="Morgan radius (CDK2 study: 4)")
        p.add_argument("--bits", type=int, default=1024, help="fingerprint bits (CDK2 study: 1024)")
        p.add_argument("--d", type=int, default=20, help="PCA dimensions (CDK2 study reference: 20)")
        p.add_argument("--jobs", type=int, default=-1, help="worker processes that standardize and fingerprint the "
                       "structures, -1 for one per core (the default; the library is the same whatever their number)")

    def algorithm_args(p):
        p.add_argument(
            "--algorithm",
            default=None,
            help="a registered name (`screenbai algorithms`); default: log-tas for binary outcomes, lin-tas for "
            "continuous ones (wrong at most delta of the time, and the fewest tests measured: docs/lower_bound.md)",
        )
        p.add_argument(
            "--param",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="algorithm parameter (repeatable), e.g. --param epsilon=0.1 --param delta=0.05: name a compound "
            "whose hit rate is within 0.1 of the best one's, wrong at most 5 %% of the time",
        )
        p.add_argument("--seed", type=int, default=0, help="the policy's random seed")
        p.add_argument(
            "--outcome",
            default="binary",
            choices=["binary", "continuous"],
            help="binary (0/1: a hit or not) or continuous outcomes (the readout itself; linear algorithms only)",
        )

    def layout_args(p, change: bool = False):
        """The plate options: init's (with their defaults), or format's (``change``: only the options given change
        the campaign's layout, the others keep their current values)."""
        g = p.add_argument_group("plates" + ("" if change else " (changed later with `screenbai campaign format`)"))
        g.add_argument(
            "--plate-format",
            help="96, 384, 1536 (or 6..48) wells, or ROWSxCOLS such as 8x12; wells are named A01..H12, A01..P24"
            + ("" if change else "; without it, `next` proposes plates of its --plate-size wells (96 by default) "
               "without controls"),
        )
        g.add_argument(
            "--controls",
            default=None if change else "edge",
            choices=["edge", "none"],
            help="edge: positive controls in the first column, negative in the last"
            + (" (a new --plate-format keeps the current scheme where it is edge or none)" if change else ""),
        )
        g.add_argument("--positive-controls", help="positive control wells instead, e.g. A01,B01 or A01:H01")
        g.add_argument("--negative-controls", help="negative control wells instead, e.g. A12:H12")
        if change:
            g.add_argument("--empty-edge", action=argparse.BooleanOptionalAction, default=None,
                           help="leave the other wells of the outer ring empty (--no-empty-edge: fill them)")
        else:
            g.add_argument("--empty-edge", action="store_true", help="leave the other wells of the outer ring empty")
        g.add_argument("--replicates", type=int, default=None if change else 1, help="wells per compound on a plate")

    p = cs.add_parser("init", help="create a campaign file from a library of structures")
    file_arg(p)
    library_args(p)
    algorithm_args(p)
    layout_args(p)
    g = p.add_argument_group("readout (what the lab writes in the outcome column)")
    g.add_argument(
        "--readout",
        help="the assay's raw readout, e.g. 'percent inhibition', fluorescence, IC50 (without it: 0/1, or the "
        "value the algorithm models with --outcome continuous)",
    )
    g.add_argument("--unit", default="", help="its unit, e.g. %%, RFU, nM")
    g.add_argument("--hit-above", type=float, help="a hit when the readout is at or above this value")
    g.add_argument("--hit-below", type=float, help="a hit when the readout is at or below this value (e.g. IC50)")
    g.add_argument("--min-z", type=float, default=DEFAULT_MIN_Z,
                   help="a plate's controls fail when its Z'-factor is below this (needs --readout; for a "
                   "concentration, an IC50, Z' of log10 of the values, as potency controls are compared)")
    p.add_argument(
        "--rejected-out",
        help="write the rejected input rows (row, id, SMILES, reason) to this CSV; without it they go to "
        "<campaign>_rejected.csv beside the campaign file (the first 20 are also printed)",
    )

    p = cs.add_parser("next", help="propose the next plate, record it as pending and write its file")
    file_arg(p)
    p.add_argument(
        "--plate-size",
        type=int,
        default=None,
        help="wells to propose (with a plate format: at most this many compounds; default: a full plate, "
        "or 96 wells without a format)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="accept a plate larger than the library (a full plate of the plate format included: compounds "
        "repeated) or than the largest plate format (1536 wells)",
    )
    p.add_argument("--out", help="plate file to write (default: <plate id>.csv next to the campaign file)")

    p = cs.add_parser("plate", help="write the file of an existing plate again")
    file_arg(p)
    p.add_argument("plate_id", help="the plate to write, e.g. P001")
    p.add_argument("--out", help="plate file to write (default: <plate id>.csv next to the campaign file)")

    p = cs.add_parser("record", help="validate a results file and record it (all or nothing)")
    file_arg(p)
    p.add_argument("results", help="CSV/TSV with plate_id, well (or compound_id), outcome; or a plate reader's grid "
                   "(a header of column numbers 1, 2, ..., then one line per row A, B, ...) with --plate")
    p.add_argument("--plate", help="the plate of a file that names none: a plate reader's grid, or a list of "
                   "wells without a plate_id column (e.g. P002)")
    p.add_argument("--outcome-column", help="the column of outcomes, where the header has several that could be "
                   "(a reader's Signal and Result, RFU and Value ...)")
    p.add_argument("--accept", action="store_true", help="a plate failing its controls: keep its outcomes")
    p.add_argument(
        "--discard-plate",
        action="store_true",
        help="a plate failing its controls: count its compound wells as failed (tested again); raw values kept",
    )
    p.add_argument("--replace", metavar="PLATE", help="a plate recorded from the wrong file: this file's results "
                   "replace its own (the log keeps what was replaced); only before `next` proposes another plate, "
                   "unless --restart")
    p.add_argument(
        "--restart",
        action="store_true",
        help="with --replace, after a later plate was proposed (or the compound set changed): the algorithm then "
        "restarts on every outcome recorded, the right ones in place of the wrong (as `restart` does); plates in the "
        "lab stay open",
    )

    p = cs.add_parser("add", help="add compounds (newly synthesised) to a running campaign")
    file_arg(p)
    p.add_argument("library", help="CSV/TSV/SDF of the new structures (id and SMILES)")
    p.add_argument("--id-column", help="compound id column of a CSV/TSV")
    p.add_argument("--smiles-column", help="SMILES column of a CSV/TSV")

    p = cs.add_parser("withdraw", help="withdraw compounds (e.g. out of stock, or all but a shortlist): no longer "
                      "proposed or recommended; one step for them all")
    file_arg(p)
    p.add_argument("compound_ids", nargs="*", metavar="compound_id",
                   help="the compounds to withdraw: their ids in the library (the plate files' compound_id)")
    p.add_argument("--from", dest="id_file", metavar="FILE",
                   help="a CSV/TSV listing the compounds to withdraw (e.g. rows kept from the export), in addition")
    p.add_argument("--id-column", default="compound_id", help="--from: the column of compound ids (compound_id)")
    p.add_argument("--reason", default="", help="why, for the log (e.g. 'out of stock')")

    p = cs.add_parser(
        "restart",
        help="restart the algorithm on every outcome recorded (when this screenbai no longer replays the campaign; "
        "one it replays has nothing to restart, said and nothing written), or hand the screen to another algorithm "
        "(--algorithm)",
    )
    file_arg(p)
    p.add_argument("--reason", default="", help="why, for the log (e.g. 'screenbai upgraded')")
    p.add_argument(
        "--algorithm",
        dest="new_algorithm",  # not init's --algorithm, which run() fills in with the default
        default=None,
        help="another algorithm takes over from every outcome recorded, e.g. kl-lucb, which needs no model of "
        "the features, when the model check rejects the model (`screenbai algorithms`); epsilon, delta and m "
        "stay as they were unless --param says otherwise",
    )
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="a setting of the algorithm taking over (repeatable), as for init")

    p = cs.add_parser("format", help="change the plate format, controls, empty edge or replicates of the next plates "
                      "(what is not named stays as it is)")
    file_arg(p)
    layout_args(p, change=True)

    p = cs.add_parser("export", help="per compound: tests, hits, estimate with interval, certified status (in the "
                      "CSV an id or SMILES starting like a formula, =, +, -, @, is written behind a ' so that a "
                      "spreadsheet shows it as text)")
    file_arg(p)
    p.add_argument(
        "--out",
        help="folder for <campaign>.csv, <campaign>.xlsx and <campaign>_report.html "
        "(default: beside the campaign file)",
    )

    p = cs.add_parser("status", help="tests used, plates in the lab, recommendation, stopping rule")
    file_arg(p)
    p.add_argument("--json", action="store_true", help="print the status as JSON")

    p = cs.add_parser("report", help="write an HTML report with figures")
    file_arg(p)
    p.add_argument("--out", help="output directory (default: <campaign>_report)")

    p = cs.add_parser(
        "repair",
        help="rebuild the policy snapshots and leader history from the event log (a damaged snapshot, an "
        "older campaign file)",
    )
    file_arg(p)

    p = cs.add_parser("backtest", help="run a whole campaign against known outcomes, plate by plate")
    library_args(p)
    algorithm_args(p)
    p.add_argument(
        "--truth",
        help="known outcomes (default: the library file itself): a CSV/TSV with the compound id and a measured "
        "activity (--activity-column, hit at --threshold) or hit rate (--rate-column) for --library's structures",
    )
    p.add_argument("--truth-id-column", default=None, help="compound id column of --truth (default: --id-column)")
    p.add_argument("--activity-column", help="activity (e.g. IC50 in nM; lower is better) to binarise at --threshold")
    p.add_argument("--threshold", type=float, default=1000.0, help="a compound is a hit when activity < threshold")
    p.add_argument("--rate-column", help="instead: the hit rate of each compound, the chance that a test is a hit "
                   "(e.g. the workflow's arms 'mean')")
    p.add_argument(
        "--hit-above",
        action="store_true",
        help="a hit when the activity is above --threshold (e.g. percent inhibition), not below (IC50)",
    )
    p.add_argument(
        "--noise",
        type=float,
        default=0.3,
        help="sd of each test's measurement: log10 units for a hit below the threshold (0.3: a factor 2), the "
        "activity's units with --hit-above; 0: every test returns the compound's label",
    )
    p.add_argument("--plate-size", type=int, default=96, help="wells per simulated plate")
    p.add_argument(
        "--max-tests", type=int, default=20000,
        help="stop the backtest after this many tests, even if the algorithm has not stopped (the output says which)",
    )
    p.add_argument("--top-k", type=int, default=10, help="hit recovery: share of the top-k compounds tested")
    p.add_argument(
        "--campaign-out",
        help="keep the backtest's campaign file here (default: a temporary file); the same command run again after a "
        "kill continues it, and ends as if never killed",
    )
    p.add_argument(
        "--out",
        required=True,
        help="output folder for the table and figure (named: nothing lands in the current folder by surprise)",
    )
    for parser in (camp, *cs.choices.values()):  # every option's default in --help, once
        parser.formatter_class = HelpFormatter


def run(args) -> int:
    from threadpoolctl import threadpool_limits

    from .lab.results import ResultsError
    from .state.replay import ReplayMismatch
    from .state.store import CampaignError, CampaignFileError, file_error
    from .state.writer import stepping

    try:
        # one BLAS thread: the matrices are small (d x d, K x d), and threads fighting over a busy
        # machine's cores made a 10 000 x 21 SVD 20 times slower
        with threadpool_limits(limits=1, user_api="blas"):
            if getattr(args, "algorithm", "") is None:  # init, backtest without --algorithm
                from .state.creation import default_algorithm

                binary = args.campaign_command == "backtest" or args.outcome == "binary"
                args.algorithm = default_algorithm("binary" if binary else "continuous")
            # a command of one step beside others, never while a backtest writes the file (state/writer.py)
            steps = args.campaign_command in _STEPS and getattr(args, "campaign", None)
            with stepping(args.campaign) if steps else contextlib.nullcontext():
                code = _COMMANDS[args.campaign_command](args)
            results().flush()  # a closed pipe shows here, not at exit
            return code
    except BrokenPipeError:
        # the reader went away (`... | head -1`): every command prints after its change is committed,
        # so the change stands; not an error.  What is still buffered for the closed pipe goes nowhere.
        try:
            fd = results().fileno()
        except (AttributeError, OSError, ValueError):  # not a file (pytest's capsys)
            fd = None
        if fd is not None and fd != sys.stderr.fileno():
            os.dup2(os.open(os.devnull, os.O_WRONLY), fd)
        return 0
    except ResultsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except sqlite3.Error as exc:  # not caught where the file is known: name it here
        where = getattr(args, "campaign", None) or getattr(args, "campaign_out", None) or "the campaign file"
        print(f"error: {file_error(exc, where)}", file=sys.stderr)
        return 2
    except (
        CampaignError,
        CampaignFileError,
        ReplayMismatch,
        ValueError,
        KeyError,
        TypeError,
        OSError,  # a path that cannot be read or written: its message names it
    ) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def init_guarantee(camp) -> str:
    """What the campaign's algorithm and settings promise (screenbai.guarantees, as status says it), a continuous
    readout's sigma with its units."""
    from ..guarantees import guarantee_of
    from .lab.assay import with_sigma_unit

    sigma = getattr(getattr(camp.policy, "inner", camp.policy), "sigma", None)
    promise = guarantee_of(camp.algorithm, camp.meta["params"], look_up=False).promise()
    return with_sigma_unit(promise, None if camp.binary or sigma is None else float(sigma), camp.readout)


def _stages(command: str):
    """What a long command is doing, said on stderr as each step starts, with the time since the command began
    (``init`` on a few thousand structures takes a minute and said nothing until it was done), written "at 16 s":
    a bare "(16 s)" after the step read as the step's own duration."""
    import time

    started = time.monotonic()

    def stage(what: str) -> None:
        print(f"{command}: {what} ... (at {time.monotonic() - started:.0f} s)", file=sys.stderr, flush=True)

    return stage


def _init(args) -> int:
    from .campaign import Campaign
    from .lab.assay import told_amount
    from .labcli import lab_settings, report_rejected, whole_plate_budget
    from .library import features_meaning, library_from_args
    from .state.creation import check_settings

    check_settings(args.algorithm, parse_params(args.param), args.seed, args.outcome)  # before featurizing
    layout, readout = lab_settings(args)  # before featurizing too
    if Path(args.campaign).exists():
        raise ValueError(f"{args.campaign} already exists; choose another campaign file or delete it first")
    if args.rejected_out and not Path(args.rejected_out).parent.is_dir():
        raise ValueError(f"--rejected-out {args.rejected_out}: folder {Path(args.rejected_out).parent} does not exist")
    stage = _stages("init")
    lib = library_from_args(args, stage)
    params = whole_plate_budget(args.algorithm, parse_params(args.param), lib.features.shape[0], layout)
    stage("writing the campaign file")
    camp = Campaign.create(
        args.campaign, lib, args.algorithm, params, seed=args.seed, outcome=args.outcome, layout=layout, readout=readout
    )
    say(
        f"created {args.campaign}: {camp.K:,} compounds, {camp.features.shape[1]} features "
        f"({features_meaning(lib.featurizer)}), {camp.algorithm} with {camp.meta['params'] or 'default parameters'}"
    )
    say(f"guarantee: {init_guarantee(camp)}")  # what the chosen setting promises, under which model
    twins = lib.n_sharing_features()
    if twins:
        say(
            f"{twins:,} compounds share their features with another one (stereoisomers or isotopologues, which the "
            "fingerprint does not see, or bit collisions); the model cannot tell them apart, and status names them "
            "beside a recommendation"
        )
    report_rejected(lib, args)
    if layout is not None:
        say(f"plates: {layout.describe()}")
    readout = camp.readout  # as the campaign keeps it: a continuous concentration on the log10 scale
    sigma = getattr(getattr(camp.policy, "inner", camp.policy), "sigma", None)
    if readout is not None:  # a binary model's sentence says the hit rule; a continuous one its sigma, with its units
        model = readout.model(camp.binary, camp.algorithm, None if camp.binary or sigma is None else float(sigma))
        say(f"readout: {readout.label()}" + ("" if readout.rule() in model else f", {readout.rule()}") + f"; {model}")
    if not camp.binary and sigma is not None and "sigma" not in camp.meta["params"]:
        unit = "the readout's units" if readout is None else readout.told_units()
        say(
            f"noise scale: sigma = {told_amount(float(sigma), readout)}, {camp.algorithm}'s default, not declared: "
            "the error guarantee holds only "
            f"if each test's noise is at most sigma, in {unit}; declare it with --param sigma=... (e.g. the "
            "spread of replicate wells on a pilot plate; status shows the control wells' spread). The forecast below "
            "counts on it too: its tests grow like (sigma / epsilon)^2"
        )
    inner = getattr(camp.policy, "inner", camp.policy)
    if not camp.binary and hasattr(inner, "epsilon"):
        unit = readout.unit if readout is not None and readout.unit and readout.scale == "linear" else ""
        what = "the readout's units" if readout is None else readout.told_units()
        say(f"epsilon = {float(inner.epsilon):g}{(' ' + unit) if unit else ''}: on a continuous readout it is in "
            f"{what}: a compound within epsilon of the best mean counts as correct"
            + ("; epsilon = 0 asks for the best itself, whatever the cost (two compounds with the same features "
               "never separate)" if float(inner.epsilon) == 0.0 else ""))
    from .views.forecast import prior_cost

    stage("forecasting the cost from a prior (draws of the prior and of runs)")
    for line in prior_cost(camp):
        say(line)
    camp.close()
    return 0


def _next(args) -> int:
    from .campaign import Campaign
    from .lab.plates import DEFAULT_PLATE_SIZE, check_plate_path
    from .state.store import CampaignError

    def out(plate_id):
        return Path(args.out) if args.out else Path(args.campaign).with_name(f"{plate_id}.csv")

    with Campaign.open(args.campaign) as camp:
        camp.check_writable("recording a new plate")  # before the plate file's folder is checked
        size = args.plate_size if args.plate_size is not None or camp.layout is not None else DEFAULT_PLATE_SIZE
        default = camp.layout.compounds_per_plate if size is None else size
        if args.plate_size is None and default > camp.K:  # the default plate is no typo: capped, not refused
            size = camp.K
            print(f"note: plates of {camp.K:,} wells, as many as the library has compounds (the default plate, "
                  f"{default:,}, is larger; --plate-size to choose, with --force above {camp.K:,})", file=sys.stderr)
        # a `next` killed between committing its plate and writing its file: run again, it writes that plate's
        # file instead of proposing another, so the campaign goes on as if it had not been interrupted
        interrupted = camp.interrupted_plate()
        if interrupted is not None:
            print(
                f"note: plate {interrupted} was proposed by a `next` that stopped before writing its file; its file "
                "is written now and no other plate is proposed (run `next` again for another plate)",
                file=sys.stderr,
            )
            plate = camp.plate(interrupted)
        else:
            n_plates = camp._con.execute("SELECT COUNT(*) FROM plates").fetchone()[0]
            check_plate_path(out(f"P{n_plates + 1:03d}"))  # before the plate is committed
            # the plate id is known once the plate is committed (another `next` may run at the same time)
            plate = camp.next_plate(size, force=args.force, file_follows=True)
        try:
            if interrupted is not None and out(interrupted).exists():  # written whole (renamed into place) before
                camp.forget_unwritten(interrupted)  # the stop: it may hold the lab's outcomes already, kept as it is
                plate = dataclasses.replace(plate, path=out(interrupted))
            else:
                plate = camp.write_plate(plate.plate_id, out(plate.plate_id))
        except (OSError, ValueError) as exc:
            raise CampaignError(
                f"plate {plate.plate_id} is recorded as in the lab but its file {out(plate.plate_id)} could not be "
                f"written ({exc}); free space or choose another folder, then write it with "
                f"`screenbai campaign plate {args.campaign} {plate.plate_id} --out FILE`"
            ) from exc
        layout, readout = camp.layout, camp.readout
        what = "0/1" if readout is None and camp.binary else "a number" if readout is None else readout.label()
        algorithm = camp.algorithm
    n_controls = 0 if layout is None else len(layout.positive) + len(layout.negative)
    controls = f" + {n_controls} control well{'' if n_controls == 1 else 's'}" if n_controls else ""
    n_compounds = len(set(plate.arms))
    say(
        f"plate {plate.plate_id}: {len(plate)} well{'' if len(plate) == 1 else 's'} ({n_compounds} "
        f"compound{'' if n_compounds == 1 else 's'}){controls} written to {plate.path}"
    )
    _say_empty_wells(plate, size, layout, algorithm)
    say(
        f"fill in its 'outcome' column ({what}, or empty / 'failed' for a failed well; the 'why' column says which "
        f"rule chose each well) and run `screenbai campaign record {args.campaign} {plate.path}`"
    )
    return 0


def _say_empty_wells(plate, size: int | None, layout, algorithm: str) -> None:
    """Say when the algorithm proposed fewer wells than the plate asked for (GLGapE's initial design: 18 wells of a
    96-well plate), so that the lab knows the other wells stay empty on purpose."""
    if layout is not None:
        asked = min(size or layout.compounds_per_plate, layout.compounds_per_plate) * layout.replicates
    else:
        asked = int(size or 0)
    if len(plate) >= asked:
        return
    say(
        f"note: {asked - len(plate)} of the {asked} compound wells asked for stay empty: {algorithm} proposed "
        f"{len(plate)} for now (the 'why' column says by which rule); it chooses the next ones from their outcomes"
    )


def _plate(args) -> int:
    from .campaign import Campaign

    with Campaign.open(args.campaign) as camp:
        plate_id = camp.plate_id(args.plate_id)  # p001 is P001, written to P001.csv
        plate = camp.write_plate(plate_id, args.out or Path(args.campaign).with_name(f"{plate_id}.csv"))
    say(f"plate {plate.plate_id}: {len(plate)} well{'' if len(plate) == 1 else 's'} written to {plate.path}")
    return 0


def _record(args) -> int:
    from .campaign import Campaign
    from .lab import censored

    with Campaign.open(args.campaign) as camp:
        rec = camp.record(args.results, accept=args.accept, discard=args.discard_plate, plate=args.plate,
                          outcome_column=args.outcome_column, replace=args.replace, restart=args.restart)
        left = camp.open_wells()
        left_here = {p: camp.open_well_names(p) for p in rec.plates if p in left}
        scale = "" if camp.readout is None else camp.readout.z_scale()  # of log10 IC50 where the model takes it so
        finished = camp.policy.done
    for note in rec.warnings[:MAX_SHOWN]:
        print(f"warning: {note}", file=sys.stderr)
    if len(rec.warnings) > MAX_SHOWN:
        print(f"warning: ... and {len(rec.warnings) - MAX_SHOWN} more such values", file=sys.stderr)
    if rec.warnings:
        print(f"warning: {len(rec.warnings)} unusual value(s) recorded as written, all in the campaign's log (the "
              "report's events); check them against the lab's record", file=sys.stderr)
    if args.replace:
        say(f"plate {args.replace}: its results recorded before are replaced by {rec.file}'s; the log's record event "
            "lists the values replaced (key replaces)"
            + ("; the algorithm restarted on every outcome recorded (a restart event after it)" * args.restart))
    for plate_id, (z, decision) in rec.qc.items():
        zt = "n/a" if z is None else f"{z:.2f}{scale}"
        say(f"plate {plate_id}: controls Z' = {zt} ({decision})")
    say(
        f"recorded {rec.n_outcomes} outcome(s)"
        + (f" and {rec.n_failed} failed well(s) (back in the queue)" if rec.n_failed else "")
        + f" from {rec.file} on plate(s) {', '.join(rec.plates or rec.qc)}"
    )
    if rec.censored:
        say(censored.summary_line(rec.censored))
    for plate_id, wells in left_here.items():
        say(open_wells_text(plate_id, wells, rec.file))
    if left:
        say("still awaiting results: " + ", ".join(f"{p} ({n} well{'' if n == 1 else 's'})" for p, n in left.items()))
    say(next_step_text(args.campaign, finished, bool(left)))
    return 0


def next_step_text(campaign, finished: bool, awaiting: bool) -> str:
    """What to do after a results file: the run's end is said where it happens (the chemist learnt it only from
    `next` failing), else where to look and what to ask for next."""
    if finished:
        return (
            f"the run has finished (the stopping rule fired, or the budget is spent): no more plates; "
            f"`screenbai campaign status {campaign}` gives the final recommendation and what it certifies, "
            f"`screenbai campaign export {campaign}` writes it out for the team"
        )
    return (
        f"next: `screenbai campaign status {campaign}` says where the screen stands; "
        + ("record the plates awaiting results when they come back, or ask" if awaiting else "ask")
        + f" for the next plate with `screenbai campaign next {campaign}`"
    )


def open_wells_text(plate_id: str, wells: list[tuple[str, str]], file: str, shown: int = 10) -> str:
    """What a results file that covers part of a plate left open, and what to do: a lost row is the usual
    cause (a plate recorded in parts is allowed, so this is said, not refused)."""
    named = ", ".join(f"{w} ({c})" for w, c in wells[:shown]) + (f" ... and {len(wells) - shown} more"
                                                                 if len(wells) > shown else "")
    return (
        f"plate {plate_id}: {len(wells)} well(s) not in {file}, still open: {named}. If a row was lost, record "
        "a file with it; if the well failed, record it with outcome 'failed' (its compound comes back on a "
        "later plate); if the rest of the plate comes later, record that file then"
    )


def _status(args) -> int:
    from .campaign import Campaign

    with Campaign.open(args.campaign) as camp:
        status = camp.status()
    say(json.dumps(status.to_dict(), indent=2) if args.json else status.text())
    return 0


def _repair(args) -> int:
    from .campaign import Campaign

    say(f"{args.campaign}: {Campaign.repair(args.campaign)}")
    return 0


def _report(args) -> int:
    from .campaign import Campaign
    from .views.page import write_report

    out = Path(args.out or f"{Path(args.campaign).with_suffix('')}_report")
    with Campaign.open(args.campaign) as camp:
        page = write_report(camp, out)
    say(f"report written to {page}")
    return 0


def _backtest(args) -> int:
    from .backtest import backtest_from_args

    return backtest_from_args(args, parse_params(args.param))


#: the commands that write a campaign file in one step (each one SQLite transaction)
_STEPS = ("next", "plate", "record", "repair", "add", "withdraw", "restart", "format")
_COMMANDS = {
    "init": _init,
    "next": _next,
    "plate": _plate,
    "record": _record,
    "status": _status,
    "report": _report,
    "repair": _repair,
    "backtest": _backtest,
    "add": lambda args: _lab("add", args),
    "withdraw": lambda args: _lab("withdraw", args),
    "restart": lambda args: _lab("restart", args),
    "format": lambda args: _lab("format", args),
    "export": lambda args: _lab("export", args),
}


def _lab(command: str, args) -> int:
    from . import labcli

    return labcli.COMMANDS[command](args)

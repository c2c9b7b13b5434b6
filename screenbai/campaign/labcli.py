"""The lab's side of ``screenbai campaign``: plate formats and readouts at ``init``, the rejected
rows, GSE's stages in whole plates, and the ``add``, ``withdraw``, ``format`` and ``export``
commands (see :mod:`screenbai.campaign.cli` for the others)."""

from __future__ import annotations

import math
from pathlib import Path

from ..streams import say
from ..textfiles import written_whole
from .lab.assay import DEFAULT_MIN_Z, Readout, check_min_z
from .lab.layout import PlateLayout, edge_controls

#: rejected input rows printed by ``init`` (all are written to the CSV)
SHOWN_REJECTED = 20


def layout_from_args(args) -> PlateLayout | None:
    if args.plate_format is None:
        if args.positive_controls or args.negative_controls or args.empty_edge or args.replicates != 1:
            raise ValueError("plate controls, --empty-edge and --replicates need a --plate-format (e.g. 96 or 384)")
        return None
    return PlateLayout.build(
        args.plate_format,
        controls=args.controls,
        positive=args.positive_controls,
        negative=args.negative_controls,
        empty_edge=args.empty_edge,
        replicates=args.replicates,
    )


def lab_settings(args) -> tuple[PlateLayout | None, Readout | None]:
    """The plate layout and readout of ``init``'s arguments, checked before the library is read."""
    layout = layout_from_args(args)
    readout = None
    if args.readout is not None:
        readout = Readout.build(
            args.readout, unit=args.unit, hit_above=args.hit_above, hit_below=args.hit_below, min_z=args.min_z
        )
        if args.outcome == "binary" and readout.cutoff is None:
            raise ValueError(
                f"--readout {args.readout!r} with binary outcomes needs the hit cutoff: --hit-above VALUE or "
                "--hit-below VALUE (or --outcome continuous to model the readout itself)"
            )
        _check_potency_direction(readout, args.outcome)
        if args.min_z != DEFAULT_MIN_Z and (layout is None or not (layout.positive and layout.negative)):
            # Z' compares the control wells: a bound without them would be kept and never used
            raise ValueError(
                f"--min-z {args.min_z:g} bounds the Z'-factor of a plate's control wells, and these plates have none; "
                "give a --plate-format with controls (--controls edge, the default, or --positive-controls and "
                "--negative-controls), or drop --min-z"
            )
    elif args.hit_above is not None or args.hit_below is not None:
        raise ValueError("--hit-above / --hit-below need --readout NAME (what the lab measures)")
    else:
        check_min_z(args.min_z)  # as with --readout
        if args.min_z != DEFAULT_MIN_Z:  # the bound is kept with the readout: without one it would be lost
            raise ValueError(
                f"--min-z {args.min_z:g} needs --readout NAME (what the lab measures, kept with its bound); without "
                f"one the plates' controls are checked against Z' >= {DEFAULT_MIN_Z:g}"
            )
    return layout, readout


def _check_potency_direction(readout: Readout, outcome: str) -> None:
    """An IC50, a Ki ... is lower for a more potent compound: a continuous one needs the way to be said (the
    algorithm looks for the largest value, the weakest compound, unless --hit-below negates it), and a hit above
    a cutoff is said to be the weaker compounds."""
    if not readout.is_potency:
        return
    if outcome == "continuous" and readout.cutoff is None:
        raise ValueError(
            f"--readout {readout.name!r} with --outcome continuous: {readout.name} is lower for a more potent "
            f"compound, and without a direction the algorithm would look for the largest {readout.name}, the weakest "
            "compound; give --hit-below CUTOFF (lower is better; the export counts the wells at or below the cutoff as "
            f"hits), or --hit-above CUTOFF if the largest {readout.name} is what you want"
        )
    if readout.direction == "above":
        say(
            f"note: {readout.rule()}: the hits are the weaker compounds ({readout.name} is lower for a more potent "
            f"one); if you meant potency, delete the campaign file and init again with --hit-below {readout.cutoff:g}"
        )


def whole_plate_budget(algorithm: str, params: dict, K: int, layout: PlateLayout | None) -> dict:
    """GSE's stages in whole plates: a fixed-budget GSE's budget is rounded up so that every stage
    (budget / stages tests) is a whole number of plates (said on the terminal): plates of the plate
    format's compound wells, or without a format of ``next``'s default plate (DEFAULT_PLATE_SIZE
    wells; a library smaller than that has no default plate, and its budget is kept)."""
    from screenbai.bandits.budget.gse import GSE, n_stages
    from screenbai.bandits.core.params import declared
    from screenbai.bandits.core.registry import get

    from .lab.plates import DEFAULT_PLATE_SIZE

    entry = get(algorithm)
    if not issubclass(entry.cls, GSE) or "budget" not in params or (layout is None and K < DEFAULT_PLATE_SIZE):
        return params
    eta = params.get("eta", entry.defaults.get("eta", declared(entry.cls)["eta"].default))
    s = n_stages(K, float(eta))
    cap = DEFAULT_PLATE_SIZE if layout is None else layout.capacity
    budget = int(params["budget"])
    per_stage = max(1, math.ceil(budget / s / cap)) * cap
    if per_stage * s != budget:
        plates = (
            f"plate(s) of {cap} compound wells"
            if layout is not None
            else f"plate(s) of {cap} wells (`next`'s default plate size, for a campaign without --plate-format: "
            f"give `next` no --plate-size, or one that divides {per_stage})"
        )
        say(
            f"budget {budget:,} rounded to {per_stage * s:,}: each of {entry.name}'s {s} stages is then "
            f"{per_stage // cap} whole {plates}, no partial plate"
        )
    return {**params, "budget": per_stage * s}


def report_rejected(lib, args) -> None:
    """Print the rejected input rows (the first ``SHOWN_REJECTED``) and write them all beside the
    campaign file (or to --rejected-out)."""
    if not len(lib.rejected):
        return
    say(f"{len(lib.rejected):,} input rows not used:")
    for reason, count in lib.rejected_counts().items():
        say(f"  {reason:28s} {count:6,d}")
    out = Path(args.rejected_out) if args.rejected_out else _beside(args.campaign, "_rejected.csv")
    with written_whole(out) as fh:  # a killed init leaves no cut table
        rejected_table(lib.rejected).to_csv(fh, index=False)
    shown = lib.rejected.head(SHOWN_REJECTED)
    for row in shown.itertuples(index=False):
        say(f"  {_rejected_row(row)}")
    more = len(lib.rejected) - len(shown)
    say(f"  {'... and ' + format(more, ',') + ' more; ' if more > 0 else ''}all written to {out}")


def rejected_table(rejected):
    """The rejected rows as written for a spreadsheet: a text cell starting like a formula (a SMILES or an id
    '=HYPERLINK(...)', most likely in rows refused as unparseable) behind a single quote
    (:func:`~screenbai.textfiles.formula_safe`); the row numbers stay numbers."""
    from screenbai.textfiles import formula_safe

    table = rejected.copy()
    for col in ("compound_id", "smiles", "reason", "detail"):
        table[col] = [formula_safe(v) if isinstance(v, str) else v for v in table[col]]
    return table


def _rejected_row(row) -> str:
    """A rejected input row (source_row, compound_id, smiles, reason, detail) in one line."""
    detail = f" ({row.detail})" if isinstance(row.detail, str) and row.detail else ""
    cid = row.compound_id if isinstance(row.compound_id, str) and row.compound_id else "(no id)"
    smiles = row.smiles if isinstance(row.smiles, str) and row.smiles else "(no SMILES)"
    return f"row {row.source_row}: {cid} {smiles}: {row.reason}{detail}"


def _beside(campaign, suffix: str) -> Path:
    path = Path(campaign)
    return path.with_name(path.stem + suffix)


# ------------------------------------------------------------------------------------ commands
def _add(args) -> int:
    from .campaign import Campaign
    from .state.changes import add_compounds, guarantee_after_change, read_new_compounds

    with Campaign.open(args.campaign) as camp:
        kept, rejected = read_new_compounds(
            camp, args.library, id_column=args.id_column, smiles_column=args.smiles_column
        )
        for row in rejected.itertuples(index=False):
            say(f"not added: {_rejected_row(row)}")
        if not len(kept):
            raise ValueError(
                f"{args.library}: no new compound to add ({len(rejected)} row(s) not usable, listed above)"
            )
        arms = add_compounds(
            camp,
            list(kept["compound_id"]),
            list(kept["smiles"]),
            input_smiles=list(kept["input_smiles"]),
            source=str(args.library),
        )
        say(f"added {len(arms)} compound(s) to {args.campaign}: now {len(camp.policy.arm_set):,} in the screen")
        say(f"guarantee: {guarantee_after_change(camp)}")
    return 0


def _withdraw(args) -> int:
    from .campaign import Campaign
    from .state.changes import guarantee_after_change, read_compound_ids, withdraw

    ids = list(args.compound_ids) + (read_compound_ids(args.id_file, args.id_column) if args.id_file else [])
    if not ids:
        raise ValueError("name the compounds to withdraw (their ids), or give --from FILE listing them")
    with Campaign.open(args.campaign) as camp:
        withdraw(camp, ids, args.reason)
        which = ids[0] if len(ids) == 1 else f"{len(ids):,} compounds"
        say(
            f"withdrew {which}: no longer proposed or recommended; {len(camp.policy.arm_set):,} compounds remain in "
            "the screen (wells of withdrawn compounds still in the lab are recorded but not counted)"
        )
        say(f"guarantee: {guarantee_after_change(camp)}")
    return 0


def _restart(args) -> int:
    from ..cliargs import parse_params
    from .campaign import Campaign
    from .state.changes import guarantee_after_change, needs_restart, restart_algorithm

    params = parse_params(args.param)  # a malformed --param before the file is opened
    with Campaign.open(args.campaign) as camp:
        if not args.new_algorithm and not params and not needs_restart(camp):  # as `format` to the same layout
            say(f"nothing to restart: this screenbai replays {args.campaign} as it ran, and `next` carries on from it; "
                "nothing was written (to hand the screen to another algorithm, give --algorithm NAME)")
            return 0
        before = camp.algorithm
        restart_algorithm(camp, args.reason, args.new_algorithm, params)
        n = int(camp.observations()[0].sum())
        what = (f"{before} handed over to {camp.algorithm}, which starts from" if args.new_algorithm else
                f"{camp.algorithm} restarted on")
        say(f"{what} the {n:,} outcomes recorded in {args.campaign}; `next` proposes from it")
        say(f"guarantee: {guarantee_after_change(camp)}")
    return 0


def changed_layout(current: PlateLayout | None, args) -> PlateLayout:
    """``format``'s new layout: the options given change ``current``, the others keep their values. On the same grid
    the control wells not named stay where they are; a new grid keeps the controls' scheme (edge or none), and control
    wells of another shape must be given again for it."""
    given = {k: getattr(args, k) for k in ("plate_format", "controls", "positive_controls", "negative_controls",
                                           "empty_edge", "replicates") if getattr(args, k) is not None}
    now = "none (plates of `next`'s --plate-size wells, no controls)" if current is None else current.describe()
    if not given:
        raise ValueError(f"format: name what changes (--plate-format, --controls, --positive-controls, "
                         f"--negative-controls, --empty-edge or --no-empty-edge, --replicates); the layout now: {now}")
    if current is None:
        if "plate_format" not in given:
            raise ValueError("format: this campaign has no plate format yet; give one with --plate-format (e.g. 96)")
        return PlateLayout.build(given["plate_format"], controls=given.get("controls", "edge"),
                                 positive=given.get("positive_controls"), negative=given.get("negative_controls"),
                                 empty_edge=given.get("empty_edge", False), replicates=given.get("replicates", 1))
    controls, positive, negative = given.get("controls"), given.get("positive_controls"), given.get("negative_controls")
    if controls is None:
        if "plate_format" not in given:  # the same grid: the wells not named stay
            positive = positive if positive is not None else ",".join(current.positive)
            negative = negative if negative is not None else ",".join(current.negative)
            controls = "none"
        else:
            edge_pos, edge_neg = edge_controls(current.rows, current.cols)
            scheme = ("none" if not (current.positive or current.negative) else
                      "edge" if (current.positive, current.negative) == (edge_pos, edge_neg) else None)
            if scheme is None and (positive is None or negative is None):
                raise ValueError(f"format: the control wells now ({_well_list(current.positive)} positive, "
                                 f"{_well_list(current.negative)} negative) are not the edge columns; give them for "
                                 "the new plate format with --positive-controls and --negative-controls (or --controls "
                                 "edge or none)")
            controls = scheme or "none"
    return PlateLayout.build(
        given.get("plate_format") or f"{current.rows}x{current.cols}",
        controls=controls,
        positive=positive or None,
        negative=negative or None,
        empty_edge=given.get("empty_edge", current.empty_edge),
        replicates=given.get("replicates", current.replicates),
    )


def _well_list(wells) -> str:
    return ",".join(wells) if len(wells) <= 4 else f"{wells[0]}..{wells[-1]}"


def _format(args) -> int:
    from .campaign import Campaign
    from .state.changes import set_layout

    with Campaign.open(args.campaign) as camp:
        before = camp.layout
        layout = changed_layout(before, args)
        if before is not None and layout.to_dict() == before.to_dict():  # logged, status listed it as a change
            say(f"no change: the next plates of {args.campaign} are already {layout.describe()}; nothing was written")
            return 0
        set_layout(camp, layout)
    if before is not None:
        say(f"the plates so far: {before.describe()}")
    say(f"next plates of {args.campaign}: {layout.describe()}")
    say("plates already in the lab keep their layout; the error guarantee does not depend on the plate format")
    return 0


def _export(args) -> int:
    from .campaign import Campaign
    from .views.export import export

    with Campaign.open(args.campaign) as camp:
        out = Path(args.out) if args.out else Path(args.campaign).parent
        files = export(camp, out)
    for f in files:
        say(f"written: {f}")
    return 0


COMMANDS = {"add": _add, "withdraw": _withdraw, "restart": _restart, "format": _format, "export": _export}

"""What ``status`` says of the plates' controls and the spread of wells: each plate's Z' and the pooled spreads of
control and replicate wells, each line naming the scale it is on (split from status.py).

A concentration's spreads are of log10 of the values, as a chemist reads a concentration's spread (by factors), and
so is its Z' (``Readout.z_on_log10``). The scales differ for a concentration of a campaign made before Z' of log10
whose model does not take it as log10 (binary, or continuous made before log10): its Z' is of the raw values, the
one ``record`` computed and decided the plate by (``lab.assay.check_controls``), kept as recorded.
"""

from __future__ import annotations

import math

from ..lab.assay import DEFAULT_MIN_Z, Readout, pooled_deviations


def disagreeing_pairs(rows) -> tuple[int, int]:
    """(pairs of wells that disagree, pairs) over rows (key, key, 0/1 outcome) grouped by their two keys: a group of
    n wells with h hits holds n (n - 1) / 2 pairs, h (n - h) of them one hit and one not."""
    groups: dict[tuple, list[float]] = {}
    for a, b, value in rows:
        groups.setdefault((a, b), []).append(float(value))
    split = pairs = 0
    for values in groups.values():
        n, h = len(values), int(sum(v == 1.0 for v in values))
        split, pairs = split + h * (n - h), pairs + n * (n - 1) // 2
    return split, pairs


def spreads(camp, readout: Readout | None) -> dict:
    """``Status``'s control and replicate spreads (pooled within-plate sd, discarded plates left out), the scale
    they are on and the scale of the plates' Z', with the campaign's bound on Z'. 0/1 outcomes (a binary campaign
    without a declared readout: the lab writes hit or not) have no spread worth an sd: how often two wells of one
    compound (of one kind of control) on one plate disagree is given instead (``*_disagree``: [pairs that
    disagree, pairs]), and the sds are None."""
    # a concentration's wells spread by factors: its spreads are taken on log10 of the values (above 0, lab/results)
    log = readout is not None and readout.is_concentration
    controls = camp._con.execute(
        "SELECT plate_id, kind, raw FROM readouts WHERE kind != 'compound' AND raw IS NOT NULL AND discarded = 0"
    ).fetchall()
    replicates = camp._con.execute(
        "SELECT r.plate_id, w.arm, r.raw FROM readouts r JOIN wells w USING (plate_id, well) "
        "WHERE r.kind = 'compound' AND r.raw IS NOT NULL AND r.discarded = 0 "
        "AND NOT EXISTS (SELECT 1 FROM censored c WHERE c.plate_id = r.plate_id AND c.well = r.well)"  # "> 10000"
    ).fetchall()
    hits = camp.binary and readout is None  # the raw values are the 0/1 outcomes themselves
    ss, dof = (0.0, 0) if hits else pooled_deviations(controls, log)
    rep_ss, rep_dof = (0.0, 0) if hits else pooled_deviations(replicates, log)
    control_split, replicate_split = disagreeing_pairs(controls), disagreeing_pairs(replicates)
    return {
        "min_z": readout.min_z if readout is not None else DEFAULT_MIN_Z,
        "control_sd": math.sqrt(ss / dof) if dof else None,
        "replicate_sd": math.sqrt(rep_ss / rep_dof) if rep_dof else None,
        "control_disagree": list(control_split) if hits and control_split[1] else None,
        "replicate_disagree": list(replicate_split) if hits and replicate_split[1] else None,
        "spread_scale": "log10" if log else "linear",
        # as check_controls took it: of log10 for a concentration (raw in campaigns made before, Readout.z_log)
        "z_scale": "log10" if readout is not None and readout.z_on_log10 else "linear",
    }


def control_lines(view) -> list[str]:
    """The lines of a ``Status`` (``view``) on its plates' Z' and its spreads, each naming its scale."""
    out = []
    unit = f", in {view.unit}" if view.unit else " (the raw readout's units)"
    raw_z = view.z_scale != "log10" and view.spread_scale == "log10"  # the two on different scales: say so
    if view.z_scale == "log10":  # as Readout.z_scale
        model = "the scale the model uses" if view.geometric else "as potency controls are compared"
        where = f"of log10 values, {model}"
    elif raw_z:
        where = f"of the raw values{unit}, not of their log10 as the spreads below"
    else:
        where = ""
    for plate_id, z, decision in view.plate_qc:
        if decision not in ("pass", "too few controls") and z is None:  # no gap between the kinds, or too few values
            why = ("its positive and negative controls read alike" if plate_id in view.plate_qc_alike
                   else "too few control values recorded")
            out.append(f"plate {plate_id}: controls FAILED (no Z': {why}), {decision} by the lab")
        elif decision not in ("pass", "too few controls"):
            # a Z' within the bound failed another check of record's: controls the wrong way round, or all far off the
            # earlier plates' (a file in another unit); "FAILED (Z' = 0.88)" alone read as a Z' failure
            other = "" if z < view.min_z else (
                "; Z' passes, the plate failed record's other checks: positive controls on the non-hit side of the "
                "negative ones, or both far off the earlier plates' (another unit?)")
            out.append(f"plate {plate_id}: controls FAILED (Z' = {z:.2f}{' ' * bool(where)}{where}{other}), "
                       f"{decision} by the lab")
    passed = [z for _, z, d in view.plate_qc if d == "pass"]
    if passed:
        out.append(
            f"controls: {len(passed)} plate(s) passed, Z' from {min(passed):.2f} to {max(passed):.2f} "
            f"({where}{'; ' * bool(where)}each Z' >= {view.min_z:g}, the campaign's bound)"
        )

    def sd(value: float) -> str:
        if view.spread_scale == "log10":  # a concentration: in log10 units, and as the factor they make
            return f"sd {value:.2f} log10 units (a factor {10 ** value:.2g}){unit}"
        return f"sd {value:.3g}{unit}"

    if view.control_sd is not None:
        out.append(f"spread of the control wells (within a plate): {sd(view.control_sd)}")
    if view.control_disagree:
        out.append(f"control wells of one kind on one plate: {_split(*view.control_disagree)}")
    if view.replicate_disagree:
        out.append(f"replicate wells (a compound twice or more on one plate): {_split(*view.replicate_disagree)}")
    if view.replicate_sd is not None:
        if view.outcome == "binary":
            sigma = ""
        elif view.spread_scale == "log10" and not view.geometric:  # a continuous IC50 the model takes raw
            sigma = (f" (a factor, not the units of this campaign's sigma: its model takes the raw values{unit}, "
                     "as campaigns made before log10 did)")
        else:
            sigma = " (the noise a linear model's sigma stands for)"
        out.append(f"spread of replicate wells (a compound twice or more on one plate): {sd(view.replicate_sd)}{sigma}")
    return out


def _split(disagree: int, pairs: int) -> str:
    """How often two wells that should read alike, on 0/1 outcomes, do not."""
    return (f"{disagree:,} of {pairs:,} pair{'s' * (pairs != 1)} disagree ({100 * disagree / pairs:.0f} %: one a hit, "
            "the other not)")

"""``screenbai campaign export``: the campaign per compound, as CSV and an Excel workbook, and the
report as one self-contained HTML file.

Per well (``<stem>_wells.csv`` and the workbook's "wells" sheet: :func:`well_table`): every well of every plate,
controls included, with the raw readout, what the algorithm was told, its state and the file that recorded it.

Per compound (the recommendation first, then the compounds in contention, behind and withdrawn, each by the model's
estimate): id, SMILES, whether it is in the screen (or withdrawn), tests (recorded outcomes), failed wells, hits
(0/1 outcomes, or raw readouts past the cutoff declared at init), the mean raw readout (its column named with the
readout and unit declared at init: ``mean_readout (percent inhibition in %)``, or ``geomean_readout (IC50 in nM)``
for a concentration, averaged on the log scale), the observed rate with its 95 % Wilson interval, the model's
estimate with its 95 % Wald interval at the fit (the shared model of the features; descriptive, not valid at any
stop), for the recommended compounds the range over the stopping rule's likelihood-ratio set that ``status`` shows
(``model_range_low``/``_high``: empty where the rule holds no such set; the workbook's campaign sheet says which is
which), and its status: recommended (with the certified epsilon when the algorithm gives one), in contention (its
interval reaches the leader's: the model's, or for an algorithm with no model of the features each compound's own
wells'), behind (its upper bound is below the leader's lower bound; for a top-m answer, ``--param m=5``, "behind
the 5 recommended": below the lowest lower bound of the five), withdrawn.

The workbook is written with the standard library (Office Open XML, one sheet per table, numbers
as numbers); it opens in Excel, LibreOffice and pandas. Its text cells are inline strings, which a
spreadsheet never runs as formulas; in the CSV a text cell (id, SMILES, status) that starts like a formula
(=, +, -, @, tab, CR) is written behind a single quote, and floats in 10 significant digits (:func:`csv_cell`).
"""

from __future__ import annotations

import base64
import csv
import math
import re
import tempfile
import zipfile
from pathlib import Path
from xml.sax.saxutils import escape

import numpy as np

from screenbai.textfiles import formula_safe, write_whole, written_whole, written_whole_bytes

from ..lab.censored import settles

COLUMNS = (
    "compound_id",
    "smiles",
    "in_screen",
    "tests",
    "failed_wells",
    "hits",
    "mean_readout",
    "observed_rate",
    "observed_low",
    "observed_high",
    "model_estimate",
    "model_low",
    "model_high",
    "model_range_low",
    "model_range_high",
    "status",
    "certified_epsilon",
)


def compound_table(camp) -> list[dict]:
    """One row per compound (see the module doc), in the campaign's compound order."""
    from screenbai.bandits.certainty.certificate import certifies

    from .estimates import as_read, contention_intervals, model_estimates, own_intervals, read_back

    policy = camp.policy
    res = policy.result()
    n, s, s2, _ = camp.observations()
    failed = np.zeros(camp.K, dtype=np.int64)
    for arm, cnt in camp._con.execute("SELECT arm, COUNT(*) FROM outcomes WHERE value IS NULL GROUP BY arm"):
        failed[arm] = cnt
    back = read_back(camp)  # a readout told negated or as log10 (an IC50) is written on its own scale
    told = model_estimates(camp.features, n, s, s2, binary=camp.binary)
    est, model_lo, model_hi = as_read(back, *told)
    lo, hi = contention_intervals(camp, n, s, s2, told)  # in contention or behind: as status counts them
    # the observed rate's (or mean's) interval
    own_mean, own_lo, own_hi = as_read(back, s / np.maximum(n, 1), *own_intervals(n, s, s2, binary=camp.binary))
    readout = camp.readout
    hits = np.full(camp.K, np.nan)
    mean_raw = np.full(camp.K, np.nan)
    raw_rows = camp._con.execute(
        "SELECT w.arm, r.raw, c.relation FROM readouts r JOIN wells w USING (plate_id, well) LEFT JOIN censored c "
        "USING (plate_id, well) WHERE r.kind = 'compound' AND r.raw IS NOT NULL AND r.discarded = 0"
    ).fetchall()
    if readout is not None and raw_rows:
        arms = np.asarray([a for a, _, _ in raw_rows], dtype=np.int64)
        raw = np.asarray([v for _, v, _ in raw_rows], dtype=float)
        bound = np.asarray([rel is not None for _, _, rel in raw_rows], dtype=bool)  # "> 10000": no reading to average
        # a concentration's replicates spread by factors: their geometric mean (results files refuse values at or
        # below 0; a file recorded before that refusal keeps them, left out of the mean)
        kept = (raw > 0 if readout.is_concentration else np.ones(raw.size, dtype=bool)) & ~bound
        scale = np.log10(raw[kept]) if readout.is_concentration else raw
        cnt = np.bincount(arms[kept], minlength=camp.K)
        mean_raw = np.where(cnt > 0, np.bincount(arms[kept], weights=scale, minlength=camp.K) / np.maximum(cnt, 1),
                            np.nan)
        mean_raw = 10.0**mean_raw if readout.is_concentration else mean_raw
        if readout.cutoff is not None:  # a censored value is the hit it settled (lab/censored.py), not its limit's
            exact = readout.is_hit(raw)
            hit = [bool(settles(readout, rel, v)) if rel else h for (_, v, rel), h in zip(raw_rows, exact)]
            hits = np.bincount(arms, weights=np.asarray(hit, dtype=float), minlength=camp.K)
    elif camp.binary:
        hits = s.copy()
    active = np.zeros(camp.K, dtype=bool)
    active[getattr(policy, "arm_set", np.arange(camp.K))] = True
    cert = policy.certificate() if callable(getattr(policy, "certificate", None)) else None
    certified = {} if cert is None else cert.per_arm()
    recommended = set(res.recommendation)
    m = len(recommended)
    # behind: below the leader's lower bound, or for a top-m answer below the lowest of the m (as status counts)
    bar = min(lo[a] for a in recommended) if recommended else None
    behind = "behind the leader" if m == 1 else f"behind the {m} recommended"
    ranked = bar is not None and n.sum() > 0  # once, not per compound: O(K) each, O(K^2) in all (hours at 1.58 M)
    rows = []
    for a in range(camp.K):
        if not active[a]:
            status = "withdrawn"
        elif a in recommended:
            status = "recommended" + ((" (final" if policy.done else " (current leader") if m == 1 else
                                      f" ({'final' if policy.done else 'current'} top {m}")
            if n[a] == 0:  # e.g. lin-tas stopped after its first plate on the model's extrapolation
                status += ("; never tested: rests on the model alone, confirm it in the lab before acting on it)"
                           if policy.done else "; not tested yet)")
            else:
                status += ")"
        elif ranked and hi[a] < bar:
            status = behind
        else:
            status = "in contention"
        obs = obs_lo = obs_hi = None
        if n[a] > 0:
            obs = float(own_mean[a])
            if math.isfinite(own_lo[a]) and math.isfinite(own_hi[a]):  # a readout's interval needs two wells
                obs_lo, obs_hi = float(own_lo[a]), float(own_hi[a])
        eps = certified.get(a)
        rows.append(
            {
                "compound_id": camp.compound_ids[a],
                "smiles": camp.smiles[a],
                "in_screen": bool(active[a]),
                "tests": int(n[a]),
                "failed_wells": int(failed[a]),
                "hits": None if math.isnan(hits[a]) else int(round(hits[a])),
                "mean_readout": None if math.isnan(mean_raw[a]) else float(mean_raw[a]),
                "observed_rate": obs,
                "observed_low": obs_lo,
                "observed_high": obs_hi,
                "model_estimate": float(est[a]),
                "model_low": float(model_lo[a]),
                "model_high": float(model_hi[a]),
                "model_range_low": None,  # the recommended compounds' range, as status gives it (export fills it)
                "model_range_high": None,
                "status": status,
                "certified_epsilon": None if eps is None or not certifies(eps, camp.binary) else float(eps),
            }
        )
    return rows


def header(readout) -> list[str]:
    """The column names as written: ``mean_readout`` carries the readout's name and unit declared at init,
    e.g. ``mean_readout (percent inhibition in %)`` (a bare number could be read in any unit), and is
    ``geomean_readout (IC50 in nM)`` for a concentration, whose wells are averaged on the log scale."""
    if readout is None:
        return list(COLUMNS)
    what = " in ".join(t for t in (readout.name, readout.unit) if t)  # no comma: a header cut at commas stays whole
    mean = "geomean_readout" if readout.is_concentration else "mean_readout"  # a concentration's geometric mean
    return [f"{mean} ({what})" if c == "mean_readout" and what else c for c in COLUMNS]


def handover_order(rows: list[dict], sign: float = 1.0) -> list[dict]:
    """The rows as a colleague reads them: the recommendation first, then the compounds in contention, those
    behind the leader and the withdrawn ones, each group by the model's estimate (best first: the lowest for a
    readout where lower is better, ``sign`` -1), ties in the campaign's compound order."""
    rank = {"recommended": 0, "in contention": 1, "behind": 2, "withdrawn": 3}
    return sorted(rows, key=lambda r: (rank.get(r["status"].split(" (")[0].split(" the ")[0], 4),
                                       -sign * r["model_estimate"]))


#: the CSV's text columns, protected from a spreadsheet's formulas (numbers are not: -1.5 stays a number)
TEXT_COLUMNS = ("compound_id", "smiles", "status")


def csv_cell(key: str, value) -> object:
    """A value as the CSV writes it: a text column's cell that a spreadsheet would run as a formula (an id such as
    '=HYPERLINK(...)') behind a single quote (:func:`~screenbai.textfiles.formula_safe`); a float in 10 significant
    digits: the arithmetic's last bits ('60.10000000000001', a mean of 60.1s) are noise, and no readout, rate or
    interval is known to 10 digits (the workbook keeps every digit, numbers stored as numbers)."""
    if value is None:
        return ""
    if key in TEXT_COLUMNS and isinstance(value, str):
        return formula_safe(value)
    if isinstance(value, float):
        return f"{value:.10g}"
    return value


def write_csv(rows: list[dict], path: Path, names: list[str] | None = None) -> Path:
    """``rows`` (keys :data:`COLUMNS`) under the header ``names`` (default: the keys; see :func:`header`), each
    value as :func:`csv_cell` writes it."""
    with written_whole(path) as fh:  # a killed export leaves the last whole file, never a cut one
        w = csv.writer(fh)
        w.writerow(names or COLUMNS)
        for r in rows:
            w.writerow([csv_cell(k, r[k]) for k in COLUMNS])
    return path


# ------------------------------------------------------------------------------------------- wells
WELL_COLUMNS = ("plate_id", "well", "role", "compound_id", "readout", "outcome", "state", "file", "recorded_at",
                "plate_z_prime")
#: what each state of a well means, for the export's reader
WELL_STATES = {
    "recorded": "its outcome counts",
    "failed": "no reading (empty or 'failed'): its compound was proposed again",
    "discarded": "the plate's controls failed and the lab discarded it: its compound was proposed again",
    "open": "no results recorded yet",
}


def _well_order(well: str) -> tuple:
    """A01 .. H12, then AA01 .. AF48 after Z (a 1536-well plate's rows), not in the order of the text."""
    m = re.fullmatch(r"([A-Z]+)(\d+)", well)
    return (0, "", 0, well) if m is None else (len(m.group(1)), m.group(1), int(m.group(2)), well)


def well_table(camp) -> list[dict]:
    """One row per well of every plate, plates in the order proposed and wells in plate order: its role, its
    compound, the raw readout as the lab wrote it, the outcome the algorithm was told (a hit 1 / 0, or the value),
    its state (:data:`WELL_STATES`), the results file that recorded it and when, and the plate's Z' (the last one
    ``record`` computed, from all its control wells recorded)."""
    con = camp._con
    ids = camp.compound_ids
    z = {p: zp for p, zp in con.execute("SELECT q.plate_id, q.z_prime FROM plate_qc q JOIN records r "
                                        "USING (record_id) ORDER BY r.step")}
    order = {p: k for k, (p,) in enumerate(con.execute("SELECT plate_id FROM plates ORDER BY step"))}
    rows = []
    for plate_id, well, arm, told, has_outcome, raw, discarded, file, at in con.execute(
        "SELECT w.plate_id, w.well, w.arm, o.value, o.id IS NOT NULL, COALESCE(c.typed, r.raw), r.discarded, rec.file, "
        "rec.recorded_at FROM wells w LEFT JOIN outcomes o USING (plate_id, well) LEFT JOIN readouts r "
        "USING (plate_id, well) LEFT JOIN censored c USING (plate_id, well) "
        "LEFT JOIN records rec ON rec.record_id = o.record_id"
    ):  # a censored value as the lab typed it ("> 10000"), never its limit alone
        state = "open" if not has_outcome else "discarded" if discarded else "failed" if told is None else "recorded"
        rows.append([plate_id, well, "compound", ids[arm], raw, told, state, file, at])
    for plate_id, well, kind, raw, discarded, file, at in con.execute(
        "SELECT c.plate_id, c.well, c.kind, r.raw, r.discarded, rec.file, rec.recorded_at FROM controls c "
        "LEFT JOIN readouts r USING (plate_id, well) LEFT JOIN records rec ON rec.record_id = r.record_id"
    ):
        state = "open" if file is None else "discarded" if discarded else "failed" if raw is None else "recorded"
        rows.append([plate_id, well, f"{kind} control", None, raw, None, state, file, at])
    rows.sort(key=lambda r: (order.get(r[0], len(order)), r[0], _well_order(r[1])))
    return [dict(zip(WELL_COLUMNS, [*r, z.get(r[0])])) for r in rows]


def well_header(readout) -> list[str]:
    """:data:`WELL_COLUMNS` as written: ``readout`` carries the readout's name and unit (``readout (IC50 in nM)``),
    ``outcome`` what the algorithm was told of it."""
    names = list(WELL_COLUMNS)
    if readout is not None:
        what = " in ".join(t for t in (readout.name, readout.unit) if t)
        names[names.index("readout")] = f"readout ({what})" if what else "readout"
        if readout.is_concentration:  # the scale of the plate's Z' (Readout.z_scale): log10, or raw in files before
            names[-1] = f"plate_z_prime ({'of log10' if readout.z_on_log10 else 'of the raw values, not log10'})"
    return names


def write_wells_csv(rows: list[dict], path: Path, names: list[str]) -> Path:
    """The well table as CSV: its text cells (ids, file names) protected from a spreadsheet's formulas."""
    with written_whole(path) as fh:
        w = csv.writer(fh)
        w.writerow(names)
        for r in rows:
            w.writerow([formula_safe(v) if isinstance(v, str) else csv_cell(k, r[k]) for k, v in r.items()])
    return path


# ------------------------------------------------------------------------------------------- xlsx
def _col(k: int) -> str:
    letters = ""
    k += 1
    while k:
        k, r = divmod(k - 1, 26)
        letters = chr(65 + r) + letters
    return letters


def _cell(ref: str, value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return f'<c r="{ref}" t="b"><v>{int(value)}</v></c>'
    if isinstance(value, (int, float, np.integer, np.floating)) and math.isfinite(float(value)):
        return f'<c r="{ref}"><v>{value!r}</v></c>' if isinstance(value, float) else f'<c r="{ref}"><v>{value}</v></c>'
    text = escape(str(value))
    return f'<c r="{ref}" t="inlineStr"><is><t xml:space="preserve">{text}</t></is></c>'


#: rows per worksheet in Excel (2^20, the header included): a longer sheet is not loaded completely
XLSX_MAX_ROWS = 1_048_576
#: rows of a sheet's XML written to the zip at a time (the whole sheet of 10^6 compounds is about 1 GB of text)
XLSX_CHUNK_ROWS = 10_000
_SHEET_HEAD = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
    '<sheetViews><sheetView workbookViewId="0"><pane ySplit="1" topLeftCell="A2" state="frozen"/>'
    "</sheetView></sheetViews><sheetData>"
)
_SHEET_TAIL = "</sheetData></worksheet>"


def _sheet_pieces(rows: list[list]):
    """A worksheet's XML in pieces of XLSX_CHUNK_ROWS rows (joined, ``_sheet``'s text)."""
    yield _SHEET_HEAD
    letters = [_col(j) for j in range(max((len(r) for r in rows), default=0))]  # once, not per cell
    for start in range(0, len(rows), XLSX_CHUNK_ROWS):
        body = []
        for i, row in enumerate(rows[start : start + XLSX_CHUNK_ROWS], start=start + 1):
            cells = "".join(_cell(f"{letters[j]}{i}", v) for j, v in enumerate(row))
            body.append(f'<row r="{i}">{cells}</row>')
        yield "".join(body)
    yield _SHEET_TAIL


def _sheet(rows: list[list]) -> str:
    return "".join(_sheet_pieces(rows))


def split_sheets(sheets: dict[str, list[list]]) -> dict[str, list[list]]:
    """Sheets longer than XLSX_MAX_ROWS (their first row the header) cut into sheets "name", "name (2)", ... of at
    most that many rows, each under the header: a library of 1.58 M compounds in one sheet is cut at 1 048 576 rows
    when Excel opens it."""
    out: dict[str, list[list]] = {}
    for name, rows in sheets.items():
        if len(rows) <= XLSX_MAX_ROWS:
            out[name] = rows
            continue
        per = XLSX_MAX_ROWS - 1
        for k, start in enumerate(range(1, len(rows), per), start=1):
            out[name if k == 1 else f"{name} ({k})"] = [rows[0], *rows[start : start + per]]
    return out


#: the date written on the workbook's parts (zip's earliest): an export depends on the campaign alone
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)


def _part(name: str) -> zipfile.ZipInfo:
    """A workbook part dated _ZIP_DATE, deflated."""
    info = zipfile.ZipInfo(name, date_time=_ZIP_DATE)
    info.compress_type = zipfile.ZIP_DEFLATED
    return info


def write_xlsx(sheets: dict[str, list[list]], path: Path) -> Path:
    """A workbook with one sheet per entry (name -> rows, the first the header; a sheet longer than Excel's
    XLSX_MAX_ROWS split by ``split_sheets``), each sheet streamed into the zip (``_sheet_pieces``)."""
    sheets = split_sheets(sheets)
    names = list(sheets)
    ct = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        '<Default Extension="xml" ContentType="application/xml"/>'
        '<Override PartName="/xl/workbook.xml" '
        'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
        + "".join(
            f'<Override PartName="/xl/worksheets/sheet{k}.xml" '
            'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>'
            for k in range(1, len(names) + 1)
        )
        + "</Types>"
    )
    rels = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        '<Relationship Id="rId1" '
        'Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" '
        'Target="xl/workbook.xml"/></Relationships>'
    )
    workbook = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        '<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" '
        'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets>'
        + "".join(f'<sheet name="{escape(n[:31])}" sheetId="{k}" r:id="rId{k}"/>' for k, n in enumerate(names, start=1))
        + "</sheets></workbook>"
    )
    wb_rels = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        + "".join(
            f'<Relationship Id="rId{k}" '
            'Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" '
            f'Target="worksheets/sheet{k}.xml"/>'
            for k in range(1, len(names) + 1)
        )
        + "</Relationships>"
    )
    parts = {
        "[Content_Types].xml": ct,
        "_rels/.rels": rels,
        "xl/workbook.xml": workbook,
        "xl/_rels/workbook.xml.rels": wb_rels,
    }
    with written_whole_bytes(path) as out, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        # a fixed date on every part: the same campaign exports the same bytes (zip stamps each part with the time
        # it was written otherwise, so two exports differed and a checksum of the hand-over could not match)
        for name, text in parts.items():
            z.writestr(_part(name), text)
        for k, n in enumerate(names, start=1):
            with z.open(_part(f"xl/worksheets/sheet{k}.xml"), "w") as fh:
                for piece in _sheet_pieces(sheets[n]):
                    fh.write(piece.encode("utf-8"))
    return path


# ------------------------------------------------------------------------------------------- html
def self_contained_report(camp, path: Path, status=None) -> Path:
    """The campaign report (``screenbai campaign report``) as one HTML file, its images inlined (``status``: the
    campaign's ``Status`` if already computed, as for ``write_report``)."""
    from .page import write_report

    with tempfile.TemporaryDirectory(prefix="screenbai-report-") as tmp:
        page = Path(write_report(camp, Path(tmp) / "report", status))
        text = page.read_text(encoding="utf-8")

        def inline(m: re.Match) -> str:
            f = page.parent / m.group(2)
            if not f.is_file():
                return m.group(0)
            mime = "image/png" if f.suffix.lower() == ".png" else "image/svg+xml"
            return f'{m.group(1)}="data:{mime};base64,{base64.b64encode(f.read_bytes()).decode()}"'

        text = re.sub(r'(src|href)="([^":/]+\.(?:png|svg))"', inline, text)
    write_whole(path, text)
    return path


def unproven_because(status) -> str:
    """Why the status's certificate is not proven, in a few words ("" when it is, or there is none)."""
    if status.certificate_proven is not False:
        return ""
    if status.model_check and status.model_check.get("rejected"):
        return "the model check rejects its model"
    return "the setting has no error guarantee"


def model_check_text(status) -> str:
    """The model check's verdict in one cell: its warning when it rejects the model (saying the certificate stands
    where the compound's own wells certify it, as status does)."""
    mc = status.model_check
    if mc is None:
        return "none (no model of the features, or no sums of squares to test it)"
    if mc.get("rejected"):
        return status.model_check_warning()
    if not mc.get("tests"):
        return f"not possible yet ({mc.get('note', '')})"
    return f"no misfit detected in {mc['n_tests']:,} outcomes (p = {mc['p_value']:.2g}; few outcomes detect little)"


def export(camp, out_dir: Path) -> list[Path]:
    """Write <stem>.csv, <stem>.xlsx and <stem>_report.html into ``out_dir`` (stem: the campaign file's)."""
    from .estimates import readout_sign

    out_dir = Path(out_dir)
    if not out_dir.is_dir():
        raise ValueError(f"export folder {out_dir} does not exist; create it or choose --out")
    stem = camp.path.stem
    rows = handover_order(compound_table(camp), readout_sign(camp))
    status = camp.status()
    unproven = unproven_because(status)
    ranges = {c.compound_id: c.model_range for c in status.recommendation if c.model_range is not None}
    for r in rows:  # the range status and the report show, beside the Wald interval every compound gets
        if r["compound_id"] in ranges and r["status"].startswith("recommended"):
            r["model_range_low"], r["model_range_high"] = (float(v) for v in ranges[r["compound_id"]])
    if unproven:  # the certified epsilon beside the recommendation says it is not proven, and why
        for r in rows:
            if r["certified_epsilon"] is not None and r["status"].endswith(")"):
                r["status"] = f"{r['status'][:-1]}; certified epsilon not proven: {unproven})"
    summary = [
        ["item", "value"],
        ["campaign", str(camp.path)],
        ["algorithm", f"{camp.algorithm} {camp.meta['params']}"],
        ["guarantee", status.guarantee],
        ["plates done", status.plates_done],
        ["tests", status.tests],
        ["recommendation", ", ".join(c.compound_id for c in status.recommendation)],
        ["finished", status.done],
        ["certified epsilon", status.certified_epsilon],
        ["certificate holds under", None if status.certificate is None else status.certificate.get("model")],
        ["certificate proven", {True: "yes", False: f"no: {unproven}", None: "no certificate"}[
            status.certificate_proven]],
        ["model check", model_check_text(status)],
        ["compounds in contention", status.in_contention],
        ["model", status.model],
        ["model_low, model_high", "every compound's 95 % interval of the model's estimate: a Wald interval at the "
         "fit, descriptive (true at a fixed number of tests, on average; not at any stop)"],
        ["model_range_low, model_range_high", (
            f"the recommended compounds' range over the stopping rule's likelihood-ratio set, as status and the report "
            f"give it: true together, at any stop, under the model, at delta = {status.model_range_delta:g}"
            if status.model_range_delta is not None else
            "empty: this algorithm's stopping rule holds no likelihood-ratio set (see model_low, model_high)")],
    ]
    readout = camp.readout
    if readout is not None:
        summary.append(["readout", f"{readout.name}" + (f" ({readout.unit})" if readout.unit else "")
                        + (f"; {status.readout}" if status.readout else "")])
    names = header(readout)
    csv_path = write_csv(rows, out_dir / f"{stem}.csv", names)
    wells, well_names = well_table(camp), well_header(readout)
    wells_path = write_wells_csv(wells, out_dir / f"{stem}_wells.csv", well_names)
    xlsx_path = write_xlsx(
        {
            "compounds": [names] + [[r[c] for c in COLUMNS] for r in rows],
            "wells": [well_names] + [list(r.values()) for r in wells],
            "campaign": summary + [[f"well state: {k}", v] for k, v in WELL_STATES.items()],
        },
        out_dir / f"{stem}.xlsx",
    )
    html_path = self_contained_report(camp, out_dir / f"{stem}_report.html", status)  # one status: one forecast
    return [csv_path, wells_path, xlsx_path, html_path]

"""The campaign's HTML page: leader over time, tests per compound (SVG), recommended structures (PNG), provenance."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from screenbai.bandits.certainty.certificate import certifies, ordinal
from screenbai.campaign.lab.assay import models_features
from screenbai.textfiles import image_saved, write_whole

# The two charts are drawn as SVG by hand: importing matplotlib and rendering two PNGs cost 0.6 s
# of CPU, more than the rest of the command, and a bar chart and a step line need no more than this.
_FONT = 'font-family="sans-serif"'
_CHAR = 0.6  # average glyph width as a share of the font size, to size the label margin


#: a list longer than this is shown by its length and its first items (a plate's 96 arms)
_SHOWN_ITEMS = 6


def readable(value) -> str:
    """A log event's detail or a settings dict as a person reads it: ``key: value; ...``, nested dicts in
    parentheses, long lists by their length and first items, floats to 4 significant digits (the stored JSON is in
    the campaign file; this is the page's rendering of it)."""
    if isinstance(value, (dict, list, tuple)) and not value:
        return "none"
    if isinstance(value, dict):
        return "; ".join(f"{k}: {'(' + readable(v) + ')' if isinstance(v, dict) and v else readable(v)}"
                         for k, v in value.items())
    if isinstance(value, (list, tuple)):
        items = [readable(v) for v in value[:_SHOWN_ITEMS]]
        if len(value) > _SHOWN_ITEMS:
            return f"{len(value):,} values: {', '.join(items)}, ..."
        return "[" + ", ".join(items) + "]"
    if isinstance(value, float):
        return f"{value:.4g}"
    return "none" if value is None else str(value)


def _nice_ticks(hi: float, n: int = 5, *, whole: bool = False) -> list[float]:
    """Ticks 0, step, 2 step, ... covering [0, hi], the step 1, 2 or 5 times a power of ten (at least 1 when
    ``whole``: counts such as results files have no tick at 0.2)."""
    if hi <= 0:
        return [0.0, 1.0]
    raw = hi / n
    mag = 10.0 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    if whole:
        step = max(step, 1.0)
    return [i * step for i in range(int(math.ceil(hi / step - 1e-9)) + 1)]


def _text(x: float, y: float, text: str, size: int = 11, anchor: str = "start", extra: str = "") -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" {_FONT} {extra}>'
        f"{html.escape(text)}</text>"
    )


def _chart(labels: list[str], title: str, xlabel: str, x_hi: float, row: float, draw) -> str:
    """An SVG chart with one row per label (top to bottom) and an x axis from 0 to x_hi.

    ``draw(x, y)`` returns the marks, given the maps from a value to a pixel column (x) and from a
    row index to its centre pixel (y).
    """
    left = 12 + _CHAR * 11 * max(len(s) for s in labels)
    top, bottom, right, width = 30, 42, 20, 760
    height = top + row * len(labels) + bottom
    ticks = _nice_ticks(x_hi)
    span = ticks[-1] or 1.0

    def x(v):
        return left + (width - left - right) * float(v) / span

    def y(i):
        return top + row * (i + 0.5)

    axis_y = top + row * len(labels)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height:.0f}" '
        f'viewBox="0 0 {width} {height:.0f}">',
        '<rect width="100%" height="100%" fill="white"/>',
        _text(width / 2, 18, title, 12, "middle"),
    ]
    for t in ticks:
        out.append(f'<line x1="{x(t):.1f}" x2="{x(t):.1f}" y1="{top}" y2="{axis_y}" stroke="#ddd"/>')
        out.append(_text(x(t), axis_y + 15, f"{t:g}", 10, "middle"))
    out.append(_text((left + width - right) / 2, axis_y + 34, xlabel, 11, "middle"))
    for i, label in enumerate(labels):
        out.append(_text(left - 6, y(i) + 4, label, 10, "end"))
    out.append(draw(x, y))
    out.append(
        f'<rect x="{left}" y="{top}" width="{width - left - right}" height="{axis_y - top}" fill="none" stroke="#444"/>'
    )
    out.append("</svg>")
    return "\n".join(out)


def leader_figure(history, path: Path) -> Path | None:
    """Tests spent (x) against the compound leading after each results file (one row per compound); for a top-m
    answer every one of the m, a dot per results file where it is among them (the first alone was whichever the
    answer listed first)."""
    if not history:
        return None
    m = max(len(h[2]) for h in history)
    leaders = [h[2][0] for h in history]
    row_of = {c: i for i, c in enumerate(dict.fromkeys(c for h in history for c in h[2]))}
    tests = [h[1] for h in history]
    done = [h[1] for h in history if h[3]]

    def draw(x, y):
        pts = [(x(t), y(row_of[c])) for t, c in zip(tests, leaders)]
        marks = []
        if m == 1:
            steps = [pts[0]]
            for (_, y0), (x1, y1) in zip(pts, pts[1:]):  # hold the leader until the next results file
                steps += [(x1, y0), (x1, y1)]
            marks.append('<polyline fill="none" stroke="#1f77b4" stroke-width="1.5" points="'
                         + " ".join(f"{a:.1f},{b:.1f}" for a, b in steps) + '"/>')
        else:  # each of the m: a dot per results file it is among them, joined while it stays
            pts = [(x(h[1]), y(row_of[c])) for h in history for c in h[2]]
            for h0, h1 in zip(history, history[1:]):
                marks += [f'<line x1="{x(h0[1]):.1f}" x2="{x(h1[1]):.1f}" y1="{y(row_of[c]):.1f}" '
                          f'y2="{y(row_of[c]):.1f}" stroke="#1f77b4" stroke-width="1.5"/>'
                          for c in h0[2] if c in h1[2]]
        marks += [f'<circle cx="{a:.1f}" cy="{b:.1f}" r="3" fill="#1f77b4"/>' for a, b in pts]
        if done:
            xs = x(done[0])
            marks.append(
                f'<line x1="{xs:.1f}" x2="{xs:.1f}" y1="{y(-0.5)}" y2="{y(len(row_of) - 0.5)}" '
                'stroke="#d62728" stroke-dasharray="5,3"/>'
            )
            marks.append(  # below the axis, on the axis title's line (which is centred): clear of the rows
                _text(xs, y(len(row_of) - 0.5) + 34, f"stopped after {done[0]} tests", 10, "end", 'fill="#d62728"')
            )
        return "\n".join(marks)

    title = ("compound recommended after each results file" if m == 1 else
             f"the {m} compounds recommended after each results file")
    svg = _chart(list(row_of), title, "tests recorded", max(tests), 24, draw)
    write_whole(path, svg)
    return path


def tests_figure(
    n: np.ndarray, s: np.ndarray, ids: list[str], recommended: set[int], binary: bool, path: Path, top: int = 30
) -> Path | None:
    """The most tested compounds (bars: tests, dark part: successes for binary assays)."""
    tested = np.flatnonzero(n > 0)
    if tested.size == 0:
        return None
    order = tested[np.argsort(-n[tested], kind="stable")][:top]

    def draw(x, y):
        marks = []
        for i, a in enumerate(order):
            color = "#d62728" if a in recommended else "#7f7f7f"
            y0 = y(i) - 7
            marks.append(
                f'<rect class="tests" x="{x(0):.1f}" y="{y0:.1f}" width="{x(n[a]) - x(0):.1f}" '
                f'height="14" fill="{color}" fill-opacity="0.45"/>'
            )
            if binary:
                marks.append(
                    f'<rect class="positive" x="{x(0):.1f}" y="{y0:.1f}" width="{x(s[a]) - x(0):.1f}" '
                    f'height="14" fill="{color}"/>'
                )
        return "\n".join(marks)

    title = (
        f"tests per compound: the {order.size} most tested of {tested.size} tested "
        f"(red: recommended{'; dark: positive outcomes' if binary else ''})"
    )
    svg = _chart([ids[a] for a in order], title, "tests", float(n[order[0]]), 20, draw)
    write_whole(path, svg)
    return path


def _panel(top: float, height: float, title: str, xs: list[float], ys: list[float | None], x_hi: float,
            width: int = 760, left: float = 70, right: float = 20, y_hi: float | None = None,
            extra=None, marks: Sequence[tuple[float, str]] = (), label_marks: bool = False) -> list[str]:
    """One small line chart (points joined, a missing value breaks the line) in a band of an SVG,
    x from 0 to ``x_hi``, y from 0 to ``y_hi`` (default: the largest value); ``extra(x, y)`` adds marks;
    ``marks``: (x, label) of grey vertical lines across the band (the label written when ``label_marks``).
    With no value and no ``y_hi`` the frame holds a note, no scale (an axis up to 1e-12 read as data)."""
    known = [v for v in ys if v is not None]
    inner_top, inner_h = top + 18, height - 18
    frame = (f'<rect x="{left}" y="{inner_top:.1f}" width="{width - left - right}" height="{inner_h:.1f}" '
             'fill="none" stroke="#444"/>')
    lines = []
    for at, label in marks:
        xm = left + (width - left - right) * float(at) / (x_hi or 1.0)
        lines.append(f'<line x1="{xm:.1f}" x2="{xm:.1f}" y1="{inner_top:.1f}" y2="{inner_top + inner_h:.1f}" '
                     'stroke="#888" stroke-dasharray="2,3"/>'
                     + (_text(xm + 3, inner_top + 11, label, 9, "start", 'fill="#555"') if label_marks else ""))
    if not known and not y_hi:
        return [_text(left, top + 12, title, 11), *lines, frame,
                _text((left + width - right) / 2, inner_top + inner_h / 2 + 4, "no point to draw", 11, "middle",
                      'fill="#888"')]
    ticks = _nice_ticks(max([y_hi or 0.0, *known]), 3)
    span = ticks[-1] or 1.0

    def x(v):
        return left + (width - left - right) * float(v) / (x_hi or 1.0)

    def y(v):
        return inner_top + inner_h * (1.0 - float(v) / span)

    out = [_text(left, top + 12, title, 11), *lines]  # the change marks under the data
    for t in ticks:
        out.append(f'<line x1="{left}" x2="{width - right}" y1="{y(t):.1f}" y2="{y(t):.1f}" stroke="#ddd"/>')
        out.append(_text(left - 6, y(t) + 4, f"{t:g}", 10, "end"))
    run: list[str] = []
    for xv, yv in [*zip(xs, ys), (None, None)]:
        if yv is None:
            if len(run) > 1:
                out.append(f'<polyline fill="none" stroke="#1f77b4" stroke-width="1.5" points="{" ".join(run)}"/>')
            run = []
            continue
        run.append(f"{x(xv):.1f},{y(yv):.1f}")
        out.append(f'<circle cx="{x(xv):.1f}" cy="{y(yv):.1f}" r="2.5" fill="#1f77b4"/>')
    if extra is not None:
        out.append(extra(x, y))
    out.append(frame)
    return out


def change_marks(points: list[dict], events: list[tuple[int, str, str, dict]]) -> list[tuple[float, str]]:
    """Where the campaign changed between results files, for the progress plot: (x, label) of each compound added,
    compound withdrawn, restart (a hand-over to another algorithm named) and plate format changed (``events``:
    ``Campaign.events()``), x halfway between the results files recorded before and after it."""
    out = []
    for step, _at, kind, d in events:
        if kind == "add":
            label = f"+{len(d['compounds'])} compound(s)"
        elif kind == "withdraw":
            ids = d["compounds"]
            label = f"{ids[0]} withdrawn" if len(ids) == 1 else f"-{len(ids)} compounds"
        elif kind == "restart":
            label = f"handed to {d['algorithm']}" if "algorithm" in d else "restarted"
        elif kind == "layout":
            label = "plate format"
        else:
            continue
        out.append((sum(p["step"] < step for p in points) + 0.5, label))
    return out


def progress_figure(points: list[dict], path: Path, *, epsilon: float | None = None,
                    forecast_plates: float | None = None, forecast_tests: float | None = None,
                    binary: bool = True, changes: Sequence[tuple[float, str]] = (), m: int = 1) -> Path | None:
    """The screen converging, one point per results file (``Campaign.progress_history``): tests
    recorded (and the forecast of plates left, dashed), compounds still in contention, and the
    certified epsilon (with the epsilon the stopping rule aims at; ``m``: the answer's size); ``changes``
    (``change_marks``) as grey dashed lines, named in the top panel.  Points a file made before the history kept
    them lacks are left out (``campaign repair`` fills them in)."""
    if not points:
        return None
    n = len(points)
    xs = [float(i + 1) for i in range(n)]
    tests = [float(p["tests"]) for p in points]
    ahead = (forecast_plates if forecast_plates is not None and forecast_tests is not None
             and math.isfinite(forecast_plates) and math.isfinite(forecast_tests) else None)
    x_hi = n + max(ahead or 0.0, 0.5)  # room after the last point (it sat on the frame without a forecast)
    contention = [None if p["in_contention"] is None else float(p["in_contention"]) for p in points]
    # inf (nothing certified yet) and, for cure rates, about 1 (the trivial bound) are not drawn
    certified = [
        None if e is None or not certifies(e, binary) else float(e) for e in (p["certified_epsilon"] for p in points)
    ]
    width, band, left = 760, 150, 70

    def forecast_marks(x, y):
        if ahead is None or forecast_tests is None:
            return ""
        end_x, end_y = n + ahead, tests[-1] + forecast_tests
        return (
            f'<line x1="{x(n):.1f}" y1="{y(tests[-1]):.1f}" x2="{x(end_x):.1f}" y2="{y(end_y):.1f}" '
            'stroke="#ff7f0e" stroke-width="1.5" stroke-dasharray="5,3"/>'
            + _text(x(end_x) - 4, y(end_y) - 6, f"forecast: about {ahead:.0f} more plate(s)", 10, "end",
                    'fill="#ff7f0e"')  # above the line's end, its highest point
        )

    def target(x, y):
        if epsilon is None or not epsilon > 0:
            return ""
        label = f"the stopping rule's epsilon = {epsilon:g}"
        wide, line = _CHAR * 10 * len(label), y(epsilon)
        # the curve's points and segments, sampled in pixels: the label goes where none falls (at the right end, above
        # the line, the last segment of a finished run crossed it on its way below the epsilon)
        drawn = [(x(a), y(b)) for a, b in zip(xs, certified) if b is not None]
        path = [(x0 + (x1 - x0) * t / 20, y0 + (y1 - y0) * t / 20)
                for (x0, y0), (x1, y1) in zip(drawn, drawn[1:]) for t in range(21)] + drawn
        places = [(x(x_hi) - 4, line - 4, "end"), (x(0) + 4, line - 4, "start"), (x(0) + 4, line + 13, "start"),
                  (x(x_hi) - 4, line + 13, "end")]

        def free(place):
            at, base, anchor = place
            x0 = at - wide if anchor == "end" else at
            return not any(x0 - 3 <= px <= x0 + wide + 3 and base - 13 <= py <= base + 4 for px, py in path)

        at, base, anchor = next((p for p in places if free(p)), places[0])
        return (
            f'<line x1="{x(0):.1f}" x2="{x(x_hi):.1f}" y1="{line:.1f}" y2="{line:.1f}" '
            'stroke="#d62728" stroke-dasharray="5,3"/>'
            + _text(at, base, label, 10, anchor, 'fill="#d62728"')
        )

    # None in the history: not kept (a backtest's file, or one made before the history kept them: the contention
    # count is None too), which is not "nothing certified yet" (a backtest's answer certified at 0.085 read so); or
    # kept beside a contention count: the algorithm then gave no certificate (a fixed budget, GSE), not "not kept"
    unkept = sum(p["certified_epsilon"] is None and p["in_contention"] is None for p in points)
    none_given = sum(p["certified_epsilon"] is None and p["in_contention"] is not None for p in points)
    not_yet = sum(v is None for v in certified) - unkept - none_given
    unkept_c = sum(v is None for v in contention)
    repair = "`campaign repair` adds them"
    panels: list[tuple] = [
        ("tests recorded", tests, forecast_marks,
         1.15 * max(tests[-1] + (forecast_tests if ahead is not None and forecast_tests else 0.0), 1.0)),
        ("compounds still in contention (their 95% interval reaches "
         + ("the leader's)" if m == 1 else f"the lowest lower bound of the {m} recommended)")
         + (f"; no point kept ({unkept_c} file(s): {repair})" if unkept_c else ""), contention, None, None),
        (
            ("certified epsilon (the leader is at most this far below the best)" if m == 1 else
             f"certified epsilon (each of the {m} recommended is at most this far below the {ordinal(m)} best)")
            + (f"; no point: nothing certified yet ({not_yet} file(s))" if not_yet else "")
            + (f"; none: the algorithm gives no certificate ({none_given} file(s))" if none_given else "")
            + (f"; not kept ({unkept} file(s))" if unkept else ""),
            certified,
            target,
            # room above the stopping rule's epsilon: at the top of the scale its dashed line lay on the frame
            1.15 * max([epsilon or 0.0, *[v for v in certified if v is not None]]) or None,
        ),
    ]
    height = 20 + band * len(panels) + 40
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}">',
        '<rect width="100%" height="100%" fill="white"/>',
    ]
    for k, (title, ys, extra, y_hi) in enumerate(panels):
        out += _panel(10 + band * k, band - 30, title, xs, ys, x_hi, width, left, y_hi=y_hi, extra=extra,
                      marks=changes, label_marks=k == 0)
    axis_y = 10 + band * len(panels) - 12
    x_ticks = _nice_ticks(x_hi, 8, whole=True)
    for t in x_ticks:
        if t <= x_hi:
            xp = left + (width - left - 20) * t / (x_hi or 1.0)
            out.append(_text(xp, axis_y + 6, f"{t:g}", 10, "middle"))
    label = "results files recorded (one per plate, as a lab records them)"
    out.append(_text((left + width - 20) / 2, axis_y + 24, label, 11, "middle"))
    out.append("</svg>")
    write_whole(path, "\n".join(out))
    return path


def structures_image(smiles: list[str], legends: list[str], path: Path) -> Path | None:
    from rdkit import Chem
    from rdkit.Chem import Draw

    mols = [Chem.MolFromSmiles(s) for s in smiles]
    keep = [(m, lg) for m, lg in zip(mols, legends) if m is not None]
    if not keep:
        return None
    img = Draw.MolsToGridImage(
        [m for m, _ in keep], legends=[lg for _, lg in keep], molsPerRow=min(4, len(keep)), subImgSize=(300, 260)
    )
    image_saved(img, path)
    return path


def write_report(camp, out_dir, status=None) -> Path:
    """Write ``index.html`` and its PNGs into ``out_dir``; return the page's path. ``status``: the campaign's
    ``Status`` if already computed (the export's: its forecast costs O(K d^2) per T*, seconds to minutes at
    K = 10^6), else computed here."""
    from .estimates import rate_text
    from .model_ranges import range_text
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    st = camp.status() if status is None else status
    n, s, _, _ = camp.observations()
    policy = camp.policy
    at = {c: k for k, c in enumerate(camp.compound_ids)}
    rec = [at[c.compound_id] for c in st.recommendation]  # in the table's order (a top-m answer: best first)
    history = camp.history()
    inner = getattr(policy, "inner", policy)
    figs = {
        "progress": progress_figure(
            camp.progress_history(),
            out / "progress.svg",
            changes=change_marks(camp.progress_history(), camp.events()),
            epsilon=getattr(inner, "epsilon", None),
            forecast_plates=st.forecast_plates,
            forecast_tests=st.forecast_tests,
            binary=camp.binary,
            m=st.m,
        ),
        "leader": leader_figure(history, out / "leader_over_time.svg"),
        "tests": tests_figure(n, s, camp.compound_ids, set(rec), camp.binary, out / "tests_per_compound.svg"),
        "structures": structures_image(
            [camp.smiles[a] for a in rec],
            [f"{camp.compound_ids[a]} ({int(n[a])} tests)" for a in rec],
            out / "recommended_structures.png",
        ),
    }
    meta = camp.meta
    prov = meta.get("provenance", {})
    feat = meta.get("featurizer", {})
    rejected = camp.rejected()
    esc = html.escape

    def img(key, alt):
        p = figs[key]
        return f'<img src="{p.name}" alt="{esc(alt)}">' if p else f"<p><em>{esc(alt)}: nothing recorded yet.</em></p>"

    fmt = rate_text if camp.binary else (lambda v: f"{v:.3g}")

    def interval(value, ci):
        return "-" if value is None else esc(f"{fmt(value)} [{fmt(ci[0])}, {fmt(ci[1])}]")

    def exact(v):  # an observed rate of 0 or 1 is exact (every test a hit), not "> 0.999"
        return f"{v:g}" if v in (0.0, 1.0) else fmt(v)

    def observed(c):
        if c.observed is None or c.observed_ci is None:
            return "-"
        if not camp.binary:
            return interval(c.observed, c.observed_ci)
        lo, hi = c.observed_ci
        return esc(f"{c.total:.0f} of {c.tests} hits: {exact(c.observed)} [{exact(lo)}, {exact(hi)}]")

    def table(header, rows):
        head = "".join(f"<th>{esc(h)}</th>" for h in header)
        body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
        return f"<table><tr>{head}</tr>{body}</table>"

    ranged = st.model_range_delta is not None  # the range over the rule's likelihood-ratio set (model_ranges.py)

    def model_cell(c):
        if not ranged:
            return interval(c.model, c.model_ci)
        return esc(f"{fmt(c.model)} " + (range_text(*c.model_range) if c.model_range is not None else "[none]"))

    recommendation = table(
        ["compound", "SMILES", "tests",
         f"model estimate [range, valid at any stop under the model, delta = {st.model_range_delta:g}"
         + ("; the model check rejects the model: unproven]" if st.model_check and st.model_check.get("rejected")
            else "]") if ranged else
         "model estimate [95%, descriptive]" if models_features(camp.algorithm) else
         f"fit of the features [95%] (descriptive: {camp.algorithm} uses no model of them)", "observed [95%]"],
        [
            (
                esc(c.compound_id),
                f"<code>{esc(c.smiles)}</code>",
                c.tests,
                model_cell(c),
                observed(c) if c.tests else
                ("<b>never tested</b>: the model alone; confirm it in the lab" if st.done else "not tested yet"),
            )
            for c in st.recommendation
        ],
    )
    counts: dict[str, int] = {}
    for r in rejected:
        counts[r[3]] = counts.get(r[3], 0) + 1
    rejected_counts = table(["reason", "rows"], [(esc(k), f"{v:,}") for k, v in sorted(counts.items())])
    rejected_rows = ""
    if rejected:
        rows = [
            (r[0], esc(str(r[1])), f"<code>{esc(str(r[2]))}</code>", esc(r[3]), esc(r[4] or "")) for r in rejected[:200]
        ]
        rejected_rows = (
            "<details><summary>the rows (first 200)</summary>"
            + table(["row", "id", "SMILES", "reason", "detail"], rows)
            + "</details>"
        )
    read = {k: v for k, v in prov.items() if k not in ("path", "kind", "sha256", "n_compounds")}
    settings = {k: v for k, v in feat.items() if k != "explained_variance_ratio"}
    provenance = table(
        ["", ""],
        [
            ("source file", f"<code>{esc(str(prov.get('path')))}</code> ({esc(str(prov.get('kind')))})"),
            ("SHA-256", f"<code>{esc(str(prov.get('sha256')))}</code>"),
            ("read", esc(readable(read))),
            ("compounds (arms)", f"{camp.K:,}"),
            ("featurizer", esc(readable(settings))),
            ("algorithm", f"{esc(camp.algorithm)} ({esc(readable(meta['params']) or 'default parameters')}), "
                          f"seed {meta['seed']}"),
            ("created", f"{esc(str(meta.get('created_at')))} with screenbai {esc(str(meta.get('screenbai_version')))}"),
        ],
    )
    log = table(
        ["step", "time (UTC)", "event", "detail"],
        [(step, esc(at), esc(kind), esc(readable(d))) for step, at, kind, d in camp.events()[-40:]],
    )
    certainty = []  # the certificate's sentences, the model check beside them, the forecast (Status.certainty_lines)
    for line in st.certainty_lines():
        if line.startswith("  "):
            certainty.append(f'<p class="sentence">{esc(line.strip())}</p>')
        elif "WARNING" in line:
            certainty.append(f'<p class="warning">{esc(line)}</p>')
        else:
            certainty.append(f"<p>{esc(line)}</p>")
    style = (
        "body{font-family:sans-serif;max-width:60em;margin:1em auto;padding:0 1em;color:#222}"
        "table{border-collapse:collapse;margin:0.5em 0}"
        "td,th{border:1px solid #ccc;padding:2px 6px;font-size:90%;text-align:left}"
        "pre{background:#f5f5f5;padding:0.6em;white-space:pre-wrap}img{max-width:100%}code{font-size:85%}"
        ".sentence{font-size:115%;font-weight:bold;border-left:4px solid #1f77b4;padding-left:0.5em}"
        ".warning{color:#b00;font-weight:bold}"
    )
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>screenbai campaign {esc(camp.path.name)}</title>
<style>{style}</style></head>
<body>
<h1>Campaign {esc(camp.path.name)}</h1>
<h2>What the outcomes certify</h2>
{"".join(certainty)}
<h2>Recommendation</h2>
{recommendation}
{img("structures", "recommended structures")}
<h2>Progress</h2>
{img("progress", "progress per results file")}
<h2>{"Leader" if st.m == 1 else f"The {st.m} recommended"} over time</h2>
{img("leader", "leader over time")}
<h2>Tests per compound</h2>
{img("tests", "tests per compound")}
<h2>Status</h2>
<p>As <code>screenbai campaign status</code> prints it:</p>
<pre>{esc(st.text())}</pre>
<h2>Library provenance</h2>
{provenance}
<h3>Input rows not used ({len(rejected):,})</h3>
{rejected_counts}
{rejected_rows}
<h2>Log (last 40 events)</h2>
{log}
</body></html>
"""
    path = out / "index.html"
    write_whole(path, page)
    return path

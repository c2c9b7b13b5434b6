"""The campaign's HTML page: leader over time, tests per compound, recommended structures, provenance."""

from __future__ import annotations

import html
import json
from pathlib import Path

import numpy as np


def _figure(width: float, height: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=110)
    FigureCanvasAgg(fig)
    return fig


def leader_figure(history, path: Path) -> Path | None:
    """Tests spent (x) against the compound leading after each results file (one row per compound)."""
    if not history:
        return None
    leaders = [h[2][0] for h in history]
    order = list(dict.fromkeys(leaders))
    fig = _figure(7.5, 1.2 + 0.32 * len(order))
    ax = fig.add_subplot()
    tests = [h[1] for h in history]
    ax.step(tests, [order.index(x) for x in leaders], where="post", color="tab:blue")
    ax.scatter(tests, [order.index(x) for x in leaders], s=14, color="tab:blue", zorder=3)
    done = [h[1] for h in history if h[3]]
    if done:
        ax.axvline(done[0], color="tab:red", ls="--", lw=1, label=f"stopped after {done[0]} tests")
        ax.legend(loc="lower right", fontsize=8)
    ax.set_yticks(range(len(order)), order, fontsize=8)
    ax.set_ylim(-0.6, len(order) - 0.4)
    ax.set_xlabel("tests recorded")
    ax.set_title("compound recommended after each results file", fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    return path


def tests_figure(
    n: np.ndarray, s: np.ndarray, ids: list[str], recommended: set[int], binary: bool, path: Path, top: int = 30
) -> Path | None:
    """The most tested compounds (bars: tests, dark part: successes for binary assays)."""
    tested = np.flatnonzero(n > 0)
    if tested.size == 0:
        return None
    order = tested[np.argsort(-n[tested], kind="stable")][:top]
    fig = _figure(7.5, 1.4 + 0.22 * order.size)
    ax = fig.add_subplot()
    y = np.arange(order.size)[::-1]
    colors = ["tab:red" if a in recommended else "tab:gray" for a in order]
    ax.barh(y, n[order], color=colors, alpha=0.45, label="tests")
    if binary:
        ax.barh(y, s[order], color=colors, label="positive outcomes")
    ax.set_yticks(y, [ids[a] for a in order], fontsize=7)
    ax.set_xlabel("tests")
    ax.set_title(
        f"tests per compound: the {order.size} most tested of {tested.size} tested "
        f"(red: recommended{'; dark: positive outcomes' if binary else ''})",
        fontsize=9,
    )
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
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
    img.save(str(path))
    return path


def write_report(camp, out_dir) -> Path:
    """Write ``index.html`` and its PNGs into ``out_dir``; return the page's path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    st = camp.status()
    n, s, _, _ = camp.observations()
    policy = camp.policy
    rec = list(policy.result().recommendation)
    history = camp.history()
    figs = {
        "leader": leader_figure(history, out / "leader_over_time.png"),
        "tests": tests_figure(n, s, camp.compound_ids, set(rec), camp.binary, out / "tests_per_compound.png"),
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

    def interval(value, ci):
        return "-" if value is None else f"{value:.3g} [{ci[0]:.3g}, {ci[1]:.3g}]"

    def table(header, rows):
        head = "".join(f"<th>{esc(h)}</th>" for h in header)
        body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
        return f"<table><tr>{head}</tr>{body}</table>"

    recommendation = table(
        ["compound", "SMILES", "tests", "model estimate [95%]", "observed [95%]"],
        [
            (
                esc(c.compound_id),
                f"<code>{esc(c.smiles)}</code>",
                c.tests,
                interval(c.model, c.model_ci),
                interval(c.observed, c.observed_ci),
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
            ("read", f"<code>{esc(json.dumps(read))}</code>"),
            ("compounds (arms)", f"{camp.K:,}"),
            ("featurizer", f"<code>{esc(json.dumps(settings))}</code>"),
            ("algorithm", f"{esc(camp.algorithm)} {esc(json.dumps(meta['params']))}, seed {meta['seed']}"),
            ("created", f"{esc(str(meta.get('created_at')))} with screenbai {esc(str(meta.get('screenbai_version')))}"),
        ],
    )
    log = table(
        ["step", "time (UTC)", "event", "detail"],
        [(step, esc(at), esc(kind), f"<code>{esc(json.dumps(d))}</code>") for step, at, kind, d in camp.events()[-40:]],
    )
    style = (
        "body{font-family:sans-serif;max-width:60em;margin:1em auto;padding:0 1em;color:#222}"
        "table{border-collapse:collapse;margin:0.5em 0}"
        "td,th{border:1px solid #ccc;padding:2px 6px;font-size:90%;text-align:left}"
        "pre{background:#f5f5f5;padding:0.6em;white-space:pre-wrap}img{max-width:100%}code{font-size:85%}"
    )
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>screenbai campaign {esc(camp.path.name)}</title>
<style>{style}</style></head>
<body>
<h1>Campaign {esc(camp.path.name)}</h1>
<pre>{esc(st.text())}</pre>
<h2>Recommendation</h2>
{recommendation}
{img("structures", "recommended structures")}
<h2>Leader over time</h2>
{img("leader", "leader over time")}
<h2>Tests per compound</h2>
{img("tests", "tests per compound")}
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
    path.write_text(page, encoding="utf-8")
    return path

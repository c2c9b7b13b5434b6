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


def tests_figure(n: np.ndarray, s: np.ndarray, ids: list[str], recommended: set[int], binary: bool, path: Path,
                 top: int = 30) -> Path | None:
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
    ax.set_title(f"tests per compound: the {order.size} most tested of {tested.size} tested "
                 f"(red: recommended{'; dark: positive outcomes' if binary else ''})", fontsize=9)
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
    img = Draw.MolsToGridImage([m for m, _ in keep], legends=[lg for _, lg in keep], molsPerRow=min(4, len(keep)),
                               subImgSize=(300, 260))
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
            [f"{camp.compound_ids[a]} ({int(n[a])} tests)" for a in rec], out / "recommended_structures.png"),
    }
    meta = camp.meta
    prov = meta.get("provenance", {})
    feat = meta.get("featurizer", {})
    rejected = camp.rejected()
    esc = html.escape

    def img(key, alt):
        p = figs[key]
        return f'<img src="{p.name}" alt="{esc(alt)}">' if p else f"<p><em>{esc(alt)}: nothing recorded yet.</em></p>"

    rows = "".join(
        f"<tr><td>{esc(c.compound_id)}</td><td><code>{esc(c.smiles)}</code></td><td>{c.tests}</td>"
        f"<td>{c.model:.3g} [{c.model_ci[0]:.3g}, {c.model_ci[1]:.3g}]</td>"
        f"<td>{'-' if c.observed is None else f'{c.observed:.3g} [{c.observed_ci[0]:.3g}, {c.observed_ci[1]:.3g}]'}</td></tr>"
        for c in st.recommendation
    )
    counts: dict[str, int] = {}
    for r in rejected:
        counts[r[3]] = counts.get(r[3], 0) + 1
    rej_rows = "".join(f"<tr><td>{esc(k)}</td><td>{v:,}</td></tr>" for k, v in sorted(counts.items()))
    rej_list = "".join(
        f"<tr><td>{r[0]}</td><td>{esc(str(r[1]))}</td><td><code>{esc(str(r[2]))}</code></td><td>{esc(r[3])}</td>"
        f"<td>{esc(r[4] or '')}</td></tr>" for r in rejected[:200]
    )
    events = camp.events()
    ev_rows = "".join(
        f"<tr><td>{step}</td><td>{esc(at)}</td><td>{esc(kind)}</td><td><code>{esc(json.dumps(d))}</code></td></tr>"
        for step, at, kind, d in events[-40:]
    )
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>screenbai campaign {esc(camp.path.name)}</title>
<style>body{{font-family:sans-serif;max-width:60em;margin:1em auto;padding:0 1em;color:#222}}
table{{border-collapse:collapse;margin:0.5em 0}}td,th{{border:1px solid #ccc;padding:2px 6px;font-size:90%;text-align:left}}
pre{{background:#f5f5f5;padding:0.6em;white-space:pre-wrap}}img{{max-width:100%}}code{{font-size:85%}}</style></head>
<body>
<h1>Campaign {esc(camp.path.name)}</h1>
<pre>{esc(st.text())}</pre>
<h2>Recommendation</h2>
<table><tr><th>compound</th><th>SMILES</th><th>tests</th><th>model estimate [95%]</th><th>observed [95%]</th></tr>{rows}</table>
{img("structures", "recommended structures")}
<h2>Leader over time</h2>
{img("leader", "leader over time")}
<h2>Tests per compound</h2>
{img("tests", "tests per compound")}
<h2>Library provenance</h2>
<table>
<tr><th>source file</th><td><code>{esc(str(prov.get("path")))}</code> ({esc(str(prov.get("kind")))})</td></tr>
<tr><th>SHA-256</th><td><code>{esc(str(prov.get("sha256")))}</code></td></tr>
<tr><th>read</th><td><code>{esc(json.dumps({k: v for k, v in prov.items() if k not in ("path", "kind", "sha256", "n_compounds")}))}</code></td></tr>
<tr><th>compounds (arms)</th><td>{camp.K:,}</td></tr>
<tr><th>featurizer</th><td><code>{esc(json.dumps({k: v for k, v in feat.items() if k != "explained_variance_ratio"}))}</code></td></tr>
<tr><th>algorithm</th><td>{esc(camp.algorithm)} {esc(json.dumps(meta["params"]))}, seed {meta["seed"]}</td></tr>
<tr><th>created</th><td>{esc(str(meta.get("created_at")))} with screenbai {esc(str(meta.get("screenbai_version")))}</td></tr>
</table>
<h3>Input rows not used ({len(rejected):,})</h3>
<table><tr><th>reason</th><th>rows</th></tr>{rej_rows}</table>
{"<details><summary>the rows (first 200)</summary><table><tr><th>row</th><th>id</th><th>SMILES</th><th>reason</th><th>detail</th></tr>" + rej_list + "</table></details>" if rejected else ""}
<h2>Log (last 40 events)</h2>
<table><tr><th>step</th><th>time (UTC)</th><th>event</th><th>detail</th></tr>{ev_rows}</table>
</body></html>
"""
    path = out / "index.html"
    path.write_text(page, encoding="utf-8")
    return path

"""The backtest's hit-recovery view (split from backtest.py): the share of the top compounds tested at least once
against tests spent, for the campaign, random screening and a one-shot diverse set (farthest-point sampling), and
its figure."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from screenbai.textfiles import figure_saved


def farthest_point_order(X: np.ndarray, n: int) -> np.ndarray:
    """n distinct rows, each the farthest (Euclidean) from those already chosen; starts nearest the centroid."""
    n = min(int(n), X.shape[0])
    first = int(np.argmin(((X - X.mean(0)) ** 2).sum(1)))
    chosen = [first]
    dist = ((X - X[first]) ** 2).sum(1)
    for _ in range(n - 1):
        nxt = int(np.argmax(dist))
        chosen.append(nxt)
        dist = np.minimum(dist, ((X - X[nxt]) ** 2).sum(1))
    return np.asarray(chosen, dtype=np.int64)


def hit_recovery(tested: np.ndarray, top: np.ndarray, K: int, one_shot: np.ndarray) -> dict:
    """Share of ``top`` tested at least once after each test: campaign, random (expected), one-shot."""
    t = np.arange(1, tested.size + 1)
    is_top = np.zeros(K, dtype=bool)
    is_top[top] = True
    first = np.zeros(K, dtype=bool)
    new = np.zeros(tested.size, dtype=bool)
    for i, a in enumerate(tested):  # first time each compound is tested
        if not first[a]:
            first[a] = new[i] = True
    campaign = np.cumsum(new & is_top[tested]) / top.size
    random = 1.0 - (1.0 - 1.0 / K) ** t
    shot = np.cumsum(is_top[one_shot]) / top.size
    shot = np.concatenate([shot, np.full(max(0, t.size - shot.size), shot[-1] if shot.size else 0.0)])
    return {"tests": t.tolist(), "campaign": campaign.tolist(), "random": random.tolist(), "one_shot": shot.tolist()}


def curve_figure(result, path: Path) -> Path:
    """``hit_recovery.png``: the figure of ``hit_figure``, saved."""
    return figure_saved(hit_figure(result), path)


def hit_figure(result):
    """The hit-recovery curves (campaign, random, one-shot) of ``result`` (a ``backtest.BacktestResult``: its curve,
    top_k and description) against tests spent; the title (the
    backtest's description, often over 150 characters) wrapped to the figure's width."""
    import textwrap

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    c = result.curve
    fig = Figure(figsize=(6.5, 4.0), dpi=110)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.plot(c["tests"], c["campaign"], label="campaign (adaptive)", color="tab:blue")
    ax.plot(c["tests"], c["random"], label="random screening (expected)", color="tab:gray", ls="--")
    ax.plot(c["tests"], c["one_shot"], label="one-shot diverse set", color="tab:green", ls=":")
    ax.set_xlabel("tests spent")
    ax.set_ylabel(f"share of the top-{result.top_k} compounds tested")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(textwrap.fill(f"hit recovery: {result.description}", 90), fontsize=8)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig

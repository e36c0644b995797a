"""PNG for `npufit bench --compare --plot`: latency distribution per entry, and throughput bars.

Uses matplotlib's object API with the Agg canvas (no pyplot, no display, no global backend switch).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..util.io import atomic_path


def plot_comparison(cmp, path: str | os.PathLike) -> Path:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    labels = [e.label for e in cmp.entries]
    samples = [_samples(e.result) for e in cmp.entries]
    tput = [e.result.throughput_ips or 0.0 for e in cmp.entries]
    height = max(3.0, 0.55 * len(labels) + 1.6)
    fig = Figure(figsize=(12, height), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    ax1, ax2 = fig.subplots(1, 2, gridspec_kw={"width_ratios": [3, 2]})
    y = np.arange(len(labels))

    # box = p25..p75, whiskers = p1..p99 (outliers beyond are dots); the diamond marks the mean
    ax1.boxplot(
        samples,
        positions=y,
        vert=False,
        whis=(1, 99),
        widths=0.6,
        showfliers=True,
        flierprops={"marker": ".", "markersize": 2, "alpha": 0.4},
        medianprops={"color": "#d64545"},
    )
    ax1.scatter([s.mean() for s in samples], y, marker="D", s=18, color="#1f4e79", zorder=3, label="mean")
    lo, hi = min(float(s.min()) for s in samples), max(float(s.max()) for s in samples)
    if lo > 0 and hi / lo > 20:  # runtimes an order of magnitude apart: a linear axis would flatten the fast ones
        ax1.set_xscale("log")
    ax1.set_yticks(y, labels)
    ax1.invert_yaxis()
    ax1.set_xlabel("latency per inference call (ms)")
    ax1.set_title("latency distribution (box p25-p75, whiskers p1-p99, red = p50)")
    ax1.legend(loc="lower right", fontsize=8)
    ax1.grid(axis="x", alpha=0.3)

    colors = ["#9aa0a6" if lab == cmp.baseline else "#2e9d57" for lab in labels]
    bars = ax2.barh(y, tput, color=colors)
    base_t = cmp.base().result.throughput_ips or 0.0
    for bar, t in zip(bars, tput):
        ratio = f"  {t / base_t:.2f}x" if base_t else ""
        ax2.text(bar.get_width(), bar.get_y() + bar.get_height() / 2, f" {t:,.1f}{ratio}", va="center", fontsize=8)
    ax2.set_yticks(y, labels)
    ax2.invert_yaxis()
    ax2.set_xlabel("throughput (inferences/s, batch-aware)")
    ax2.set_title(f"throughput (grey = baseline {cmp.baseline})")
    ax2.set_xlim(0, max(tput + [1e-9]) * 1.35)
    ax2.grid(axis="x", alpha=0.3)
    boundaries = sorted({e.result.boundary for e in cmp.entries})
    fig.suptitle(f"npufit bench --compare  (boundary: {', '.join(boundaries)})", fontsize=10)

    dst = Path(path)
    with atomic_path(dst, suffix=".png") as tmp:
        fig.savefig(tmp, format="png")
    return dst


def _samples(r) -> np.ndarray:
    """The latency samples of a result, else its median, else its mean (a vendor tool's own figure)."""
    one = r.latency_ms.get("p50", r.latency_ms.get("mean"))
    return np.asarray(r.samples_ms or ([one] if one is not None else []), dtype=np.float64)

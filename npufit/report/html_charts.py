"""Small inline-SVG charts for the HTML report (bars, lines): crisp at any zoom, no plotting library, no network."""

from __future__ import annotations

import math
from html import escape

from .style import clip_words, num

PALETTE = ("#3867d6", "#20bf6b", "#fa8231", "#8854d0", "#eb3b5a", "#0fb9b1", "#f7b731", "#4b6584")


def _nice_max(v: float) -> float:
    if v <= 0:
        return 1.0
    e = 10 ** math.floor(math.log10(v))
    for m in (1, 2, 2.5, 5, 10):
        if v <= m * e:
            return m * e
    return 10 * e


CHAR_PX = 7.2  # width of one character of the 12 px chart text (DejaVu Sans), for sizing label columns


def bar_chart(
    items: list[tuple[str, float]], unit: str = "", title: str = "", colors: list[str] | None = None, width: int = 620
) -> str:
    """Horizontal bars, one per (label, value); the value is written at the bar's end, inside the chart: the label
    and value columns are sized from their longest text, labels longer than a third of the chart cut between words."""
    items = [(lbl, float(v)) for lbl, v in items if v is not None and math.isfinite(float(v))]
    if not items:
        return ""
    max_label = int(width / 3 / CHAR_PX)
    labels = [clip_words(lbl, max_label) for lbl, _ in items]
    values = [num(v, unit) for _, v in items]
    row, top = 24, 28 if title else 8
    label_w = int(CHAR_PX * max(len(x) for x in labels)) + 12
    value_w = int(CHAR_PX * max(len(x) for x in values)) + 10
    vmax = _nice_max(max(v for _, v in items))
    plot_w = width - label_w - value_w
    h = top + row * len(items) + 8
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{width}" height="{h}" viewBox="0 0 {width} {h}">'
    ]
    if title:
        out.append(f'<text x="0" y="16" class="ctitle">{escape(title)}</text>')
    for i, ((lbl, v), short, val) in enumerate(zip(items, labels, values)):
        y = top + i * row
        w = max(1.0, plot_w * v / vmax)
        c = (colors or PALETTE)[i % len(colors or PALETTE)]
        out.append(
            f'<text x="{label_w - 6}" y="{y + 15}" class="blabel">{escape(short)}<title>{escape(lbl)}</title></text>'
            f'<rect x="{label_w}" y="{y + 3}" width="{w:.1f}" height="{row - 8}" fill="{c}" rx="2">'
            f"<title>{escape(lbl)}: {escape(val)}</title></rect>"
            f'<text x="{label_w + w + 5:.1f}" y="{y + 15}" class="bval">{escape(val)}</text>'
        )
    out.append("</svg>")
    return "".join(out)


def line_chart(
    series: dict[str, list[tuple[float, float]]],
    xlabel: str = "",
    ylabel: str = "",
    title: str = "",
    width: int = 420,
    height: int = 220,
    log_y: bool = False,
) -> str:
    """Polylines with markers and a legend; y may be log-scaled (loss curves span decades)."""
    pts = [(x, y) for s in series.values() for x, y in s if y is not None and math.isfinite(y) and (y > 0 or not log_y)]
    if not pts:
        return ""
    ml, mr, mt, mb = 56, 12, 26 if title else 10, 38
    pw, ph = width - ml - mr, height - mt - mb
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    x0, x1 = min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1
    f = (lambda v: math.log10(v)) if log_y else (lambda v: v)
    y0, y1 = f(min(ys)), f(max(ys))
    if y1 - y0 < 1e-12:
        y0, y1 = y0 - 0.5, y1 + 0.5
    pad = (y1 - y0) * 0.08
    y0, y1 = y0 - pad, y1 + pad

    def px(x: float) -> float:
        return ml + pw * (x - x0) / (x1 - x0)

    def py(y: float) -> float:
        return mt + ph * (1 - (f(y) - y0) / (y1 - y0))

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}">'
    ]
    if title:
        out.append(f'<text x="{ml}" y="16" class="ctitle">{escape(title)}</text>')
    out.append(f'<rect x="{ml}" y="{mt}" width="{pw}" height="{ph}" class="plotbg"/>')
    for k in range(5):  # y grid with labels
        yv = y0 + (y1 - y0) * k / 4
        yy = mt + ph * (1 - k / 4)
        lab = 10**yv if log_y else yv
        out.append(
            f'<line x1="{ml}" x2="{ml + pw}" y1="{yy:.1f}" y2="{yy:.1f}" class="grid"/>'
            f'<text x="{ml - 4}" y="{yy + 4:.1f}" class="tick" text-anchor="end">{num(lab)}</text>'
        )
    for xv in sorted(set(xs)):
        out.append(f'<text x="{px(xv):.1f}" y="{mt + ph + 14}" class="tick" text-anchor="middle">{xv:g}</text>')
    out.append(
        f'<text x="{ml + pw / 2}" y="{height - 4}" class="axis" text-anchor="middle">{escape(xlabel)}</text>'
        f'<text x="12" y="{mt + ph / 2}" class="axis" text-anchor="middle" '
        f'transform="rotate(-90 12 {mt + ph / 2})">{escape(ylabel)}</text>'
    )
    for i, (name, s) in enumerate(series.items()):
        c = PALETTE[i % len(PALETTE)]
        good = [(x, y) for x, y in s if y is not None and math.isfinite(y) and (y > 0 or not log_y)]
        if not good:
            continue
        dash = ' stroke-dasharray="5 3"' if "val" in name else ""
        path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in good)
        out.append(f'<polyline points="{path}" fill="none" stroke="{c}" stroke-width="2"{dash}/>')
        out += [
            f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{c}">'
            f"<title>{escape(name)} @ {x:g}: {num(y)}</title></circle>"
            for x, y in good
        ]
        ly = mt + 6 + 14 * i
        out.append(
            f'<line x1="{ml + pw - 110}" x2="{ml + pw - 92}" y1="{ly + 4}" y2="{ly + 4}" '
            f'stroke="{c}" stroke-width="2"{dash}/>'
            f'<text x="{ml + pw - 88}" y="{ly + 8}" class="tick">{escape(name)}</text>'
        )
    out.append("</svg>")
    return "".join(out)

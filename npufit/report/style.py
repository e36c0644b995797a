"""Shared vocabulary for renderers: verdict colours and symbols, and the one set of number and text formatters
(every page writes 23,500 and 6,411, never 2.35e+04 beside 6411; MACs as 3.18 G; text cut between words)."""

from __future__ import annotations

import math

VERDICT_STYLE = {"npu": "green", "cpu": "yellow", "unsupported": "bold red", "folded": "dim"}
VERDICT_MARK = {"npu": "✅", "cpu": "🟡", "unsupported": "❌", "folded": "·"}
VERDICT_COLOR_HEX = {"npu": "#2e9d57", "cpu": "#d9a400", "unsupported": "#d64545", "folded": "#9aa0a6"}


def human_bytes(n: int | float | None) -> str:
    if n is None:
        return "?"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def human_count(n: int | float | None) -> str:
    """Counts such as MACs: 3.18 G, 412.00 M, 4.61 k, 980."""
    if n is None:
        return "?"
    for unit, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= div:
            return f"{n / div:.2f} {unit}"
    return f"{n:.0f}"


def num(v: float | int | None, unit: str = "") -> str:
    """One formatter for measured values: thousands separators from 100 up (23,500; 6,411), three significant
    digits below, trailing zeros kept so a column reads alike (42.7, 59.0, 3.14, 0.0123), scientific only under
    0.001 (1.2e-07); "-" for a missing value or NaN."""
    if v is None or isinstance(v, bool) or not isinstance(v, (int, float)) or math.isnan(v):
        return "-"
    if math.isinf(v):
        text = "∞" if v > 0 else "-∞"
    elif isinstance(v, int) or abs(v) >= 99.95:
        text = f"{round(v):,}"
    elif v == 0:
        text = "0"
    elif abs(v) >= 0.001:
        text = f"{v:#.3g}"
    else:
        text = f"{v:.1e}"
    return f"{text} {unit}" if unit else text


def clip_words(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters at a word boundary, with an ellipsis; never inside a word unless the
    first word alone is longer than the limit."""
    text = " ".join(str(text).split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space >= limit // 3:
        cut = cut[:space]
    return cut.rstrip(" ,;:·-—(") + "…"


def clip_path(name: str, limit: int) -> str:
    """A node name such as /model.22/dfl/Reshape_1 cut from the left at a separator: …/dfl/Reshape_1."""
    if len(name) <= limit:
        return name
    for sep in ("/", ".", "_"):
        parts = name.split(sep)
        for i in range(1, len(parts)):
            tail = "…" + sep + sep.join(parts[i:])
            if len(tail) <= limit:
                return tail
    return "…" + name[-(limit - 1) :]


def shape_str(shape) -> str:
    if shape is None:
        return "?"
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"

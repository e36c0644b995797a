"""Shared vocabulary for renderers: verdict colours and symbols, byte/number formatting."""

from __future__ import annotations

VERDICT_STYLE = {"npu": "green", "cpu": "yellow", "unsupported": "bold red", "folded": "dim"}
VERDICT_MARK = {"npu": "✅", "cpu": "🟡", "unsupported": "❌", "folded": "·"}
VERDICT_COLOR_HEX = {"npu": "#2e9d57", "cpu": "#d9a400", "unsupported": "#d64545", "folded": "#9aa0a6"}


def human_bytes(n: int | None) -> str:
    if n is None:
        return "?"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def human_count(n: int | float | None) -> str:
    if n is None:
        return "?"
    for unit, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= div:
            return f"{n / div:.2f}{unit}"
    return f"{n:.0f}"


def shape_str(shape) -> str:
    if shape is None:
        return "?"
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"

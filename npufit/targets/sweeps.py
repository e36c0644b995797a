"""Rule bounds read from the compiler sweeps: tiny graphs over op x attributes x shapes compiled by the real compilers
(calibration/sweep.py, records docs/calibration/sweep/<target>.json).

`python -m calibration.bounds` reads each bound off its sweep record (the largest value that ran on the NPU, checked
against those that did not) and writes them to records/sweep-bounds.json, package data, which this module reads: a
profile's limit is `value(target, name)`, never a number typed in, and the condition's evidence is the sweep cases
the bound was read from (`evidence`), so leave-one-source-out scoring keeps it (no real-world source is needed to know
it). tests/test_calibration_bounds.py derives the file again from the records and compares."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from .calibration import Evidence

FILE = Path(__file__).with_name("records") / "sweep-bounds.json"


@cache
def _bounds() -> dict[str, dict[str, dict[str, Any]]]:
    return json.loads(FILE.read_text())["bounds"]


def bound(target: str, name: str) -> dict[str, Any]:
    """The bound as written: value, cases, how it was read, record and compiler."""
    return _bounds()[target][name]


def recorded(target: str) -> bool:
    """Whether a sweep record of the target gives any bound."""
    return bool(_bounds().get(target))


def has(target: str, name: str) -> bool:
    """Whether the target's own sweep record gives this bound."""
    return name in _bounds().get(target, {})


def value(target: str, name: str) -> Any:
    return bound(target, name)["value"]


def evidence(target: str, name: str) -> Evidence:
    """The sweep cases a bound was read from: evidence outside every corpus family and real-world source."""
    return Evidence((), tuple(bound(target, name)["cases"]))


def source(target: str) -> str:
    """The profile source text for a target's sweep, in plain words."""
    b = next(iter(_bounds()[target].values()))
    return (
        f"measured: {b['compiler']} on small test graphs, one pattern each over its attributes and shapes "
        f"({b['record']}); each limit is read from that record by `python -m calibration.bounds`"
    )

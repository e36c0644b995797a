"""`npufit bench --compare a.json b.json ...`: ratios to a baseline, plus what makes two numbers incomparable."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import __version__
from ..errors import NpufitError
from ..report.console import console_to_string
from ..util.readers import read_json
from .environment import COMPARABLE_KEYS
from .plot import plot_comparison
from .render import fmt_ms, md_table
from .result import SCHEMA, BenchResult, RuntimeResult

COMPARE_SCHEMA = "npufit.bench-compare/1"
COLUMNS = (
    "entry",
    "boundary",
    "batch",
    "p50 ms",
    "p99 ms",
    "mean ms",
    "inf/s",
    "p50 vs base",
    "speed-up",
    "inf/s vs base",
)


@dataclass
class Entry:
    label: str
    file: str
    result: RuntimeResult
    bench: BenchResult


@dataclass
class Comparison:
    entries: list[Entry]
    baseline: str
    caveats: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    plot: str | None = None

    def base(self) -> Entry:
        return next(e for e in self.entries if e.label == self.baseline)

    def rows(self) -> list[dict[str, Any]]:
        b = self.base().result
        bp50 = b.latency_ms.get("p50")  # a vendor tool's own figures may hold a mean only (hailortcli benchmark)
        out = []
        for e in self.entries:
            r = e.result
            p50 = r.latency_ms.get("p50")
            out.append(
                {
                    "entry": e.label,
                    "file": e.file,
                    "runtime": r.runtime,
                    "boundary": r.boundary,
                    "batch": r.batch,
                    "p50_ms": p50,
                    "p99_ms": r.latency_ms.get("p99"),
                    "mean_ms": r.latency_ms.get("mean"),
                    "throughput_ips": r.throughput_ips,
                    "p50_ratio": p50 / bp50 if p50 and bp50 else None,
                    "speedup": bp50 / p50 if p50 and bp50 else None,
                    "throughput_ratio": r.throughput_ips / b.throughput_ips if b.throughput_ips else None,
                }
            )
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": COMPARE_SCHEMA,
            "npufit_version": __version__,
            "baseline": self.baseline,
            "rows": self.rows(),
            "caveats": self.caveats,
            "skipped": self.skipped,
            "plot": self.plot,
        }

    def _table_rows(self) -> list[list[str]]:
        def ratio(v):
            return "-" if v is None else f"{v:.2f}x"

        return [
            [
                r["entry"] + (" (base)" if r["entry"] == self.baseline else ""),
                r["boundary"],
                str(r["batch"]),
                fmt_ms(r["p50_ms"]),
                fmt_ms(r["p99_ms"]),
                fmt_ms(r["mean_ms"]),
                f"{r['throughput_ips']:,.1f}",
                ratio(r["p50_ratio"]),
                ratio(r["speedup"]),
                ratio(r["throughput_ratio"]),
            ]
            for r in self.rows()
        ]

    def render(self, fmt: str = "table") -> str:
        if fmt == "json":
            return json.dumps(self.to_dict(), indent=2)
        notes = [f"caveat: {c}" for c in self.caveats] + [f"not compared: {s}" for s in self.skipped]
        if self.plot:
            notes.append(f"plot: {self.plot}")
        if fmt == "markdown":
            return (
                "\n".join(
                    ["## npufit bench --compare", "", md_table(COLUMNS, self._table_rows()), ""]
                    + [f"- {n}" for n in notes]
                )
                + "\n"
            )
        from rich.table import Table
        from rich.text import Text

        def draw(con):
            t = Table(title=f"baseline: {self.baseline}  (p50 vs base < 1 = faster than base)", show_edge=False)
            for c in COLUMNS:
                t.add_column(c, justify="left" if c in ("entry", "boundary") else "right")
            for row in self._table_rows():
                t.add_row(*row)
            con.print(t)
            for n in notes:
                con.print(Text(n, style="yellow" if n.startswith("caveat") else "dim"))

        return console_to_string(draw, width=150)


def load_result(path: str | os.PathLike) -> BenchResult:
    p = Path(path)
    d = read_json(p, "bench result (an 'npufit bench --output' file)")
    if not isinstance(d, dict) or d.get("schema") != SCHEMA:
        raise NpufitError(
            f"{p}: not an npufit bench result (schema is {d.get('schema') if isinstance(d, dict) else None!r}, "
            f"expected '{SCHEMA}')"
        )
    for k in ("model", "protocol", "environment"):
        if not isinstance(d.get(k, {}), dict):
            raise NpufitError(f"{p}: bench result field '{k}' is not an object")
    rows = d.get("results", [])
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise NpufitError(f"{p}: bench result field 'results' is not a list of objects")
    for i, r in enumerate(rows):
        bad = _mistyped(r)
        if bad:
            raise NpufitError(f"{p}: bench result field 'results[{i}].{bad}' is missing or has the wrong type")
    return BenchResult.from_dict(d)


_TYPES = {"str": (str,), "int": (int,), "float": (int, float), "None": (type(None),), "dict": (dict,), "list": (list,)}


def _mistyped(r: dict[str, Any]) -> str | None:
    """The first field of a runtime entry whose value does not have its declared type (a hand-edited file)."""
    for name, f in RuntimeResult.__dataclass_fields__.items():
        if name not in r:
            if name in ("runtime", "status"):
                return name
            continue
        allowed = tuple(t for part in str(f.type).split("|") for t in _TYPES.get(part.strip().split("[")[0], (object,)))
        v = r[name]
        if not isinstance(v, allowed) or isinstance(v, bool) and bool not in allowed:
            return name
        inner = v.values() if isinstance(v, dict) and name == "latency_ms" else v if name == "samples_ms" else ()
        if any(not isinstance(x, (int, float)) or isinstance(x, bool) for x in inner):
            return name
    if r.get("status") == "ok":  # what a comparison row computes with
        # npufit's own runs hold every LATENCY_KEYS entry; a vendor tool's own figures may hold a mean only
        if not ({"p50", "p99", "mean"} <= set(r.get("latency_ms", {})) or r.get("details", {}).get("vendor_figures")):
            return "latency_ms"
        if not isinstance(r.get("throughput_ips"), (int, float)) or isinstance(r.get("throughput_ips"), bool):
            return "throughput_ips"
    return None


def compare_results(
    files: list[str | os.PathLike], baseline: str | None = None, plot: str | os.PathLike | None = None
) -> Comparison:
    if not files:
        raise NpufitError("--compare needs at least one result file")
    loaded = [(str(f), load_result(f)) for f in files]
    measured = [(f, b, r) for f, b in loaded for r in b.results if r.ok]
    skipped = [f"{Path(f).name}:{r.runtime} ({r.status}: {r.reason})" for f, b in loaded for r in b.results if not r.ok]
    if not measured:
        raise NpufitError("none of the result files holds a measured runtime")
    unique = len({r.runtime for _, _, r in measured}) == len(measured)
    entries = [Entry(r.runtime if unique else f"{Path(f).stem}:{r.runtime}", f, r, b) for f, b, r in measured]
    base = _pick_baseline(entries, baseline)
    cmp = Comparison(entries, base.label, _caveats(entries), skipped)
    if plot:
        cmp.plot = str(plot_comparison(cmp, plot))
    return cmp


def _pick_baseline(entries: list[Entry], name: str | None) -> Entry:
    if not name:
        return entries[0]
    for match in (
        lambda e: e.label == name,
        lambda e: e.result.runtime == name,
        lambda e: Path(e.file).stem == name or Path(e.file).name == name,
    ):
        hit = [e for e in entries if match(e)]
        if hit:
            return hit[0]
    raise NpufitError(f"--baseline '{name}' matches no entry (entries: {', '.join(e.label for e in entries)})")


def _caveats(entries: list[Entry]) -> list[str]:
    """Reasons a ratio between two entries may not mean what it seems."""
    out = []

    def differ(what: str, values: dict[str, Any]) -> None:
        if len({json.dumps(v, sort_keys=True, default=str) for v in values.values()}) > 1:
            shown = "; ".join(f"{k}: {v}" for k, v in values.items())
            out.append(f"{what} differ ({shown})")

    differ("models (sha256)", {e.label: str(e.bench.model.get("sha256", ""))[:12] for e in entries})
    differ("measurement boundaries", {e.label: e.result.boundary for e in entries})
    differ("batch sizes", {e.label: e.result.batch for e in entries})
    differ("input policies", {e.label: "fresh" if e.bench.protocol.get("fresh_inputs") else "reused" for e in entries})
    for key in COMPARABLE_KEYS:
        differ(f"machines ({key})", {e.label: e.bench.environment.get(key) for e in entries})
    for e in entries:
        noisy = [w for w in e.result.warnings if w.startswith("noisy") or w.startswith("busy")]
        if noisy:
            out.append(f"{e.label} was measured on a noisy machine: {noisy[0]}")
    return out

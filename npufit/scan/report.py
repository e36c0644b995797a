"""ScanReport: the rows of a scan as a terminal table, JSON, JSON Lines, CSV or one HTML page."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from typing import Any

from .. import __version__
from ..report.console import console_to_string
from ..report.html import badge, cards, esc, page, table
from ..report.html_reasons import more
from ..util.jsonutil import dumps
from ..vocab import JUDGE

SCHEMA = "npufit.scan/1"
CSV_COLUMNS = (
    "model",
    "target",
    "status",
    "nodes",
    "coverage_nodes_pct",
    "coverage_macs_pct",
    "npu_partitions",
    "host_partitions",
    "boundaries",
    "boundary_bytes",
    "npu",
    "cpu",
    "unsupported",
    "folded",
    "fully_npu",
    "top_reasons",
    "error",
    "sha256",
    "cached",
    "placement",
)


@dataclass
class ScanReport:
    rows: list[dict[str, Any]]  # one per model x target, models sorted by path, targets in the order asked
    targets: list[str]
    judge: str = JUDGE
    run: dict[str, Any] = field(default_factory=dict)  # executor, jobs, models, checked, from_cache, seconds

    def __repr__(self) -> str:
        return (
            f"<ScanReport {len(self.rows)} rows: {len({r.get('model') for r in self.rows})} models x "
            f"{', '.join(self.targets)}>"
        )

    def summary(self) -> dict[str, Any]:
        ok = [r for r in self.rows if r["status"] == "ok"]
        by_status: dict[str, int] = {}
        for r in self.rows:
            by_status[r["status"]] = by_status.get(r["status"], 0) + 1
        per_target = {}
        for t in self.targets:
            cov = [r["coverage_nodes_pct"] for r in ok if r["target"] == t]
            per_target[t] = {
                "rows": sum(r["target"] == t for r in self.rows),
                "fully_npu": sum(1 for r in ok if r["target"] == t and r["fully_npu"]),
                "mean_coverage_nodes_pct": round(sum(cov) / len(cov), 2) if cov else None,
            }
        return {
            "models": len({r["model"] for r in self.rows}),
            "targets": list(self.targets),
            "rows": len(self.rows),
            "status": by_status,
            "per_target": per_target,
        }

    def worst_coverage(self) -> float | None:
        """Lowest NPU coverage (by nodes) of any row; a row that could not be checked counts as 0."""
        if not self.rows:
            return None
        return min((r["coverage_nodes_pct"] if r["status"] == "ok" else 0.0) for r in self.rows)

    def below(self, pct: float) -> list[dict[str, Any]]:
        return [r for r in self.rows if r["status"] != "ok" or r["coverage_nodes_pct"] < pct]

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "npufit_version": __version__,
            "judge": self.judge,
            "summary": self.summary(),
            "rows": self.rows,
            "run": self.run,
        }

    # -- rendering ----------------------------------------------------------------------------------
    def render(self, fmt: str = "table") -> str:
        if fmt == "json":
            return dumps(self.to_dict(), None)
        if fmt == "jsonl":
            return "\n".join(dumps(r, None) for r in self.rows)
        if fmt == "csv":
            return self._csv()
        if fmt == "html":
            return self._html()
        return self._text()

    def _flat(self, r: dict[str, Any]) -> dict[str, Any]:
        c = r.get("counts") or {}
        return {
            **{k: r.get(k) for k in CSV_COLUMNS},
            "npu": c.get("npu"),
            "cpu": c.get("cpu"),
            "unsupported": c.get("unsupported"),
            "folded": c.get("folded"),
            "top_reasons": "; ".join(f"{x['rule']} ({x['nodes']})" for x in r.get("top_reasons", [])),
        }

    def _csv(self) -> str:
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=CSV_COLUMNS, lineterminator="\n")
        w.writeheader()
        for r in self.rows:
            w.writerow({k: ("" if v is None else v) for k, v in self._flat(r).items()})
        return buf.getvalue()

    def _names(self) -> dict[str, str]:
        """Model paths relative to the folder they share: tables stay readable for deep zoo layouts."""
        import os

        models = sorted({r["model"] for r in self.rows})
        try:
            root = os.path.commonpath([os.path.dirname(m) for m in models]) if models else ""
        except ValueError:  # mixed drives / relative and absolute
            root = ""
        return {m: os.path.relpath(m, root) if root else m for m in models}

    def _cells(self, r: dict[str, Any]) -> list[str]:
        if r["status"] != "ok":
            return [r["target"], r["status"], "-", "-", "-", "-", r["error"][:80]]
        top = r["top_reasons"][0]["rule"] + f" ({r['top_reasons'][0]['nodes']})" if r["top_reasons"] else "-"
        return [
            r["target"],
            "ok",
            f"{r['coverage_nodes_pct']:.1f}%",
            f"{r['npu_partitions']}/{r['host_partitions']}",
            str(r["boundaries"]),
            str(r["counts"].get("unsupported", 0) + r["counts"].get("cpu", 0)),
            top,
        ]

    HEADERS = ["target", "status", "coverage", "parts npu/host", "boundaries", "off-NPU nodes", "top reason"]

    def _text(self) -> str:
        from rich.table import Table

        def draw(con) -> None:
            t = Table(
                title=f"npufit scan: {self.run.get('models', 0)} models x {len(self.targets)} targets", show_lines=False
            )
            t.add_column("model", overflow="fold")
            for h in self.HEADERS:
                t.add_column(h, justify="right" if h in ("coverage", "boundaries", "off-NPU nodes") else "left")
            last, names = None, self._names()
            for r in self.rows:
                name = names[r["model"]] if r["model"] != last else ""
                last = r["model"]
                t.add_row(name, *self._cells(r))
            con.print(t)
            run = self.run
            con.print(
                f"{run.get('checked', 0)} checked, {run.get('from_cache', 0)} from cache, executor "
                f"{run.get('executor')} "
                f"({run.get('jobs')} workers), {run.get('seconds', 0):.1f} s"
            )
            if run.get("placement"):
                con.print(f"placement {run['placement']}")

        return console_to_string(draw)

    def _html(self) -> str:
        s = self.summary()
        body = cards(
            [
                ("models", str(s["models"])),
                ("targets", str(len(self.targets))),
                *((f"{t}: fully on NPU", f"{v['fully_npu']}/{v['rows']}") for t, v in s["per_target"].items()),
            ]
        )
        names = self._names()
        rows = [
            [
                f'<span title="{esc(r["model"])}">{esc(names[r["model"]])}</span>',
                esc(r["target"]),
                badge(
                    "npu"
                    if r["status"] == "ok" and r["fully_npu"]
                    else ("cpu" if r["status"] == "ok" else "unsupported")
                )
                + " "
                + esc(r["status"]),
                *(esc(c) for c in self._cells(r)[2:-1]),
                more(r["error"], 80) if r["status"] != "ok" else esc(self._cells(r)[-1]),
            ]
            for r in self.rows
        ]
        body += table(
            ["model", "target", "status", *self.HEADERS[2:]], rows, table_id="scan", num_cols=(3, 5, 6), filterable=True
        )
        return page("npufit scan", esc(f"{s['models']} models x {len(self.targets)} targets, judge {self.judge}"), body)

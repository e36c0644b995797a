"""One model × many targets: a node × target verdict grid and one summary line per target.

`npufit check MODEL --target all` (or a comma-separated list). The graph is loaded once; every
target judges the same Graph.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .. import __version__
from ..errors import NpufitError
from ..graph import Graph
from ..report.console import Renderable
from ..report.style import VERDICT_MARK, VERDICT_STYLE
from ..targets import get_profile
from ..targets.base import Verdict
from ..util.progress import track
from ..vocab import JUDGE
from .engine import _model_info, check_graph, refuses_format
from .result import CheckReport

SCHEMA = "npufit.check_grid/1"
MAX_ROWS = 60


def target_summary(report: CheckReport) -> dict[str, Any]:
    """The numbers a person compares across targets (also used by `npufit compare`)."""
    s = report.summary()
    led = report.extra.get("qdq_ledger")
    return {
        "target": report.target["name"],
        "title": report.target["title"],
        "coverage_nodes_pct": s["coverage_nodes_pct"],
        "coverage_macs_pct": s["coverage_macs_pct"],
        "npu_partitions": s["npu_partitions"],
        "host_partitions": s["host_partitions"],
        "boundaries": s["boundaries"],
        "boundary_bytes": s["boundary_bytes"],
        "counts": s["counts"],
        "extra_qdq_ops": led["totals"]["extra_ops"] if led else 0,
        "fully_npu": s["fully_npu"],
    }


@dataclass
class GridReport(Renderable):
    model: dict[str, Any]
    reports: dict[str, CheckReport] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)  # target -> why it cannot judge this model

    def __repr__(self) -> str:
        cov = ", ".join(f"{t} {r.coverage_nodes:.1f}%" for t, r in list(self.reports.items())[:6])
        more = f", … (+{len(self.reports) - 6})" if len(self.reports) > 6 else ""
        return f"<GridReport {self.model.get('file', '?')}: {cov}{more}>"

    def rows(self, all_nodes: bool = False) -> list[dict[str, Any]]:
        first = next(iter(self.reports.values()), None)
        if first is None:
            return []
        per_target = {t: {n.name: n for n in r.nodes} for t, r in self.reports.items()}
        out = []
        for n in first.nodes:
            if n.parent is not None:
                continue
            verdicts = {t: per_target[t][n.name].verdict.value for t in self.reports}
            if not all_nodes and all(v in ("npu", "folded") for v in verdicts.values()):
                continue
            out.append({"node": n.name, "op": n.op_type, "verdicts": verdicts})
        return out

    def summaries(self) -> list[dict[str, Any]]:
        return [target_summary(r) for r in self.reports.values()]

    def to_dict(self) -> dict[str, Any]:

        return {
            "schema": SCHEMA,
            "npufit_version": __version__,
            "model": self.model,
            "targets": self.summaries(),
            "grid": self.rows(all_nodes=True),
            "reports": {t: r.to_dict() for t, r in self.reports.items()},
            "skipped": dict(self.skipped),
        }

    def _print(self, con) -> None:
        from rich.table import Table
        from rich.text import Text

        con.print(
            Text.assemble(
                ("npufit check ", "bold"), (self.model["file"], "bold cyan"), f"  →  {len(self.reports)} targets"
            )
        )
        tab = Table(title="per target", title_justify="left", show_edge=False)
        for col in (
            "target",
            "coverage (nodes)",
            "coverage (MACs)",
            "npu/host partitions",
            "boundaries",
            "extra Q/DQ ops",
            "status",
        ):
            tab.add_column(col)
        for s in self.summaries():
            c = s["counts"]
            status = (
                Text("all NPU", style="green")
                if s["fully_npu"]
                else Text(
                    f"cpu {c['cpu']}, unsupported {c['unsupported']}",
                    style="bold red" if c["unsupported"] else "yellow",
                )
            )
            tab.add_row(
                s["target"],
                f"{s['coverage_nodes_pct']:.1f}%",
                f"{s['coverage_macs_pct']:.1f}%",
                f"{s['npu_partitions']}/{s['host_partitions']}",
                str(s["boundaries"]),
                f"{s['extra_qdq_ops']:,}",
                status,
            )
        con.print(tab)
        for t, why in self.skipped.items():
            con.print(Text(f"skipped {t}: {why}", style="dim"))
        rows = self.rows()
        if not rows:
            con.print(Text("every node runs on the NPU of every target (or is folded)", style="green"))
            return
        labels = {t: _label(t) for t in self.reports}
        short = {"npu": "npu", "cpu": "cpu", "unsupported": "✗", "folded": "·"}  # 12 targets must fit one screen
        grid = Table(title="nodes not on the NPU of at least one target", title_justify="left", show_edge=False)
        # one column per target only when node and op names still fit beside them; else one "off the NPU on" column
        wide = 24 + 12 + sum(len(v) + 3 for v in labels.values()) <= con.width
        grid.add_column("node", overflow="fold", min_width=12, max_width=40, ratio=None if wide else 2)
        grid.add_column("op", min_width=6, no_wrap=True)
        if wide:
            for t in self.reports:
                grid.add_column(labels[t], no_wrap=True)
        else:
            grid.add_column("not on the NPU of (cpu = CPU fallback, ✗ = unsupported)", overflow="fold", ratio=3)
        for r in rows[:MAX_ROWS]:
            if wide:
                grid.add_row(
                    r["node"], r["op"], *[Text(short[v], style=VERDICT_STYLE[v]) for v in r["verdicts"].values()]
                )
            else:
                off = [
                    Text.assemble(f"{labels[t]} ", (short[v], VERDICT_STYLE[v]))
                    for t, v in r["verdicts"].items()
                    if v not in ("npu", "folded")
                ]
                grid.add_row(r["node"], r["op"], Text(", ").join(off))
        con.print(grid)
        if len(rows) > MAX_ROWS:
            con.print(Text(f"… {len(rows) - MAX_ROWS} more rows (see --format json)", style="dim"))

    def _markdown(self) -> str:

        out = [
            f"# npufit check: `{self.model['file']}` on {len(self.reports)} targets",
            "",
            "| target | coverage (nodes) | coverage (MACs) | NPU/host partitions | boundaries | extra Q/DQ ops "
            "| fully NPU |",
            "|---|---:|---:|---:|---:|---:|---|",
        ]
        for s in self.summaries():
            out.append(
                f"| {s['target']} | {s['coverage_nodes_pct']:.1f}% | {s['coverage_macs_pct']:.1f}% "
                f"| {s['npu_partitions']}/{s['host_partitions']} | "
                f"{s['boundaries']} | {s['extra_qdq_ops']:,} | {'yes' if s['fully_npu'] else 'no'} |"
            )
        rows = self.rows()
        if rows:
            names = list(self.reports)
            out += [
                "",
                "## Nodes not on the NPU of at least one target",
                "",
                "| node | op | " + " | ".join(names) + " |",
                "|---|---|" + "---|" * len(names),
            ]
            for r in rows:
                out.append(
                    f"| `{r['node']}` | {r['op']} | "
                    + " | ".join(f"{VERDICT_MARK[v]} {v}" for v in r["verdicts"].values())
                    + " |"
                )
        return "\n".join(out) + "\n"


def _label(target: str) -> str:
    """The profile's short column label (12 targets must fit one screen)."""

    return get_profile(target).short


def check_grid(graph: Graph, targets: list[str], judge: str = JUDGE) -> GridReport:
    """Judge one loaded graph against every target in `targets` (names)."""

    grid = GridReport(model=_model_info(graph))
    for name in track(targets, "checking targets", total=len(targets)):
        profile = get_profile(name)
        why_not = refuses_format(graph, profile)
        if why_not:
            grid.skipped[name] = why_not
            continue
        grid.reports[name] = check_graph(graph, profile, judge)
    if not grid.reports:
        raise NpufitError(next(iter(grid.skipped.values())) if grid.skipped else "no target to check")
    return grid


__all__ = ["GridReport", "check_grid", "target_summary", "Verdict"]

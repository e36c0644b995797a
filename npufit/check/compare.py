"""Several models (variants) × one target: seed 001's comparison table, one row per model.

Columns: total ops, ops by type, NPU/CPU partitions (TVM's "functions"), NPU %, extra Q/DQ ops, status.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import __version__
from ..errors import NpufitError
from ..graph import Graph, load, require_shapes
from ..graph.quant import QDQ_OPS
from ..report.console import Renderable
from ..targets import get_profile
from ..targets.base import Verdict
from ..util.progress import track
from ..vocab import JUDGE
from .engine import check_graph
from .grid import target_summary
from .result import CheckReport

SCHEMA = "npufit.compare/1"
TOP_OPS = 5


def model_row(report: CheckReport) -> dict[str, Any]:
    s = target_summary(report)
    ops = Counter(n.op_type for n in report.running)
    led = report.extra.get("qdq_ledger")
    c = s["counts"]
    qdq = (led or {}).get("qdq") or {
        "quantize": 0,
        "dequantize": 0,
        "dequantize_weights": 0,
        "dequantize_activations": 0,
    }
    folded_qdq = sum(
        1 for n in report.nodes if n.parent is None and n.verdict == Verdict.FOLDED and n.op_type in QDQ_OPS
    )
    status = (
        "all on NPU"
        if s["fully_npu"]
        else (f"fails: {c['unsupported']} unsupported" if c["unsupported"] else f"{c['cpu']} ops on CPU")
    )
    return {
        "model": report.model["file"],
        "path": report.model["path"],
        "total_ops": len(report.running),
        "ops_by_type": dict(ops.most_common()),
        "npu_partitions": s["npu_partitions"],
        "cpu_partitions": s["host_partitions"],
        "npu_pct": s["coverage_nodes_pct"],
        "npu_macs_pct": s["coverage_macs_pct"],
        "extra_qdq_ops": s["extra_qdq_ops"],
        "qdq": qdq,
        "qdq_folded": {"weights": qdq["dequantize_weights"], "model_io": folded_qdq - qdq["dequantize_weights"]},
        "islands": led["totals"]["islands"] if led else 0,
        "ledger": led["by_op"] if led else [],
        # whose placement the row is: the compiler's where one ran, else npufit's prediction
        "placement": (report.extra.get("placement") or {}).get("source", "predicted"),
        "status": status,
        "fully_npu": s["fully_npu"],
    }


@dataclass
class CompareReport(Renderable):
    target: dict[str, Any]
    reports: list[CheckReport] = field(default_factory=list)

    def __repr__(self) -> str:
        cov = ", ".join(f"{r.model.get('file', '?')} {r.coverage_nodes:.1f}%" for r in self.reports[:4])
        more = f", … (+{len(self.reports) - 4})" if len(self.reports) > 4 else ""
        return f"<CompareReport {self.target.get('name', '?')}: {cov}{more}>"

    @property
    def rows(self) -> list[dict[str, Any]]:
        return [model_row(r) for r in self.reports]

    def best(self) -> str | None:
        rows = self.rows
        if not rows:
            return None
        return min(
            rows,
            key=lambda r: (
                not r["fully_npu"],
                -r["npu_pct"],
                r["extra_qdq_ops"],
                r["npu_partitions"] + r["cpu_partitions"],
            ),
        )["model"]

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "npufit_version": __version__,
            "target": self.target,
            "best": self.best(),
            "models": self.rows,
        }

    @staticmethod
    def _ops_cell(row, sep=", ") -> str:
        items = list(row["ops_by_type"].items())
        text = sep.join(f"{op} {n}" for op, n in items[:TOP_OPS])
        text += f"{sep}… +{len(items) - TOP_OPS}" if len(items) > TOP_OPS else ""
        # Q/DQ nodes that never run on the target are not counted above; quantize's totals include them
        f = row["qdq_folded"]
        parts = ([f"{f['weights']} DequantizeLinear on weights"] if f["weights"] else []) + (
            [f"{f['model_io']} Q/DQ at the model I/O"] if f["model_io"] else []
        )
        return text + (f"{sep}(+{' and '.join(parts)}, folded)" if parts else "")

    def _print(self, con) -> None:
        from rich.table import Table
        from rich.text import Text

        con.print(
            Text.assemble(
                ("npufit compare ", "bold"), f"{len(self.reports)} models  →  ", (self.target["title"], "bold")
            )
        )
        tab = Table(show_edge=False, show_lines=True)
        for col in ("model", "total ops", "ops by type", "NPU/CPU partitions", "NPU %", "extra Q/DQ ops", "status"):
            tab.add_column(col, overflow="fold")
        best = self.best()
        for r in self.rows:
            style = "green" if r["fully_npu"] else ("bold red" if r["status"].startswith("fails") else "yellow")
            tab.add_row(
                Text(
                    r["model"] + (" ★" if r["model"] == best and len(self.reports) > 1 else ""),
                    style="bold" if r["model"] == best else "",
                ),
                str(r["total_ops"]),
                self._ops_cell(r, "\n"),
                f"{r['npu_partitions']}/{r['cpu_partitions']}",
                f"{r['npu_pct']:.1f}%",
                f"{r['extra_qdq_ops']:,}",
                Text(r["status"], style=style),
            )
        con.print(tab)
        sources = sorted({r["placement"] for r in self.rows})
        con.print(Text(f"placement: {' and '.join(sources)} (per model in the JSON output)", style="dim"))
        for r in self.rows:
            for g in r["ledger"]:
                con.print(
                    f"{r['model']}: {g['ops']} × {g['count']} = {g['count']} × {g['ops_each']} = "
                    f"{g['total_ops']:,} ops "
                    f"(dequantize → {g['ops']} → quantize, on {g['device']})"
                )

    def _markdown(self) -> str:
        out = [
            f"# npufit compare → {self.target['title']}",
            "",
            "| model | total ops | ops by type | NPU/CPU partitions | NPU % | extra Q/DQ ops | status |",
            "|---|---:|---|---:|---:|---:|---|",
        ]
        best = self.best()
        for r in self.rows:
            name = f"**{r['model']}**" if r["model"] == best and len(self.reports) > 1 else r["model"]
            out.append(
                f"| {name} | {r['total_ops']} | {self._ops_cell(r)} | "
                f"{r['npu_partitions']}/{r['cpu_partitions']} | {r['npu_pct']:.1f}% | "
                f"{r['extra_qdq_ops']:,} | {r['status']} |"
            )
        notes = [
            f"- `{r['model']}`: {g['ops']} × {g['count']} → {g['count']} × {g['ops_each']} = "
            f"{g['total_ops']:,} ops (on {g['device']})"
            for r in self.rows
            for g in r["ledger"]
        ]
        if notes:
            out += ["", "Float islands (dequantize → op → quantize):", ""] + notes
        return "\n".join(out) + "\n"


def compare(
    models: list[str | os.PathLike | Graph],
    target: str,
    input_shapes=None,
    judge: str = JUDGE,
    placer=None,
) -> CompareReport:
    """Check every model against one target: one row per model (variants of one network side by side). Model files are
    only read.

    The library side of `npufit compare MODEL MODEL ... --target T`.

    Parameters
    ----------
    models : list of str, os.PathLike or Graph
        The models to compare.
    target : str
        The one target they are judged for.
    input_shapes : dict or str, optional
        Pin dynamic inputs, {"images": (1, 3, 640, 640)} or "images=1,3,640,640"; each model gets those that fit it.
    judge : str
        How a float model is judged ("auto", "int8", "float"), as in `npufit.check`.
    placer : callable, optional
        placer(model, target, input_shapes, judge) -> CheckReport: the placement every verb reads
        (npufit.placement.place, which `npufit.compare` passes in: the compiler's where one runs here); None: the
        prediction.

    Returns
    -------
    CompareReport
        Per model: ops, NPU/CPU partitions, NPU share, extra Q/DQ ops, status; `.render(...)`, `.to_dict()`.

    Example
    -------
    >>> import npufit
    >>> c = npufit.compare(["det_relu_int8.onnx", "det_lrelu_int8.onnx"], "ethos-n78")
    >>> c  # doctest: +SKIP
    <CompareReport ethos-n78: det_relu_int8.onnx 90.6%, det_lrelu_int8.onnx 58.0%>
    """
    if not models:
        raise NpufitError("compare needs at least one model")
    profile = get_profile(target)
    out = CompareReport(target={"name": profile.name, "title": profile.title})
    names = set()
    for m in track(list(models), "checking models", total=len(models)):
        # one --input-shape for every variant: it pins the models it fits (an input of that name and rank)
        graph = m if isinstance(m, Graph) else load(m, input_shapes, strict=False)
        require_shapes(graph, "compare ranks the models by their coverage")
        rep = (
            check_graph(graph, profile, judge)
            if placer is None
            else placer(graph, profile, graph.input_shapes or None, judge)
        )
        if rep.model["file"] in names:  # same file name in two folders: keep rows distinguishable
            rep.model["file"] = str(Path(rep.model["path"]))
        names.add(rep.model["file"])
        out.reports.append(rep)
    return out

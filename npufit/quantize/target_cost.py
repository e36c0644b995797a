"""What the quantized graph costs on a target: `check` of the QDQ output, summarized from its Q/DQ ledger
(float islands such as a dequantize → LeakyRelu → quantize, and conversions at NPU↔host edges).

The node counts are those of the model's own nodes (the quantizer's Q/DQ ops are counted apart, as conversion
ops): the same nodes, in the same int8 form, that `check --judge int8` judges on the float model."""

from __future__ import annotations

import os
from typing import Any

from ..check import predict
from ..graph import Graph, load
from ..graph.quant import QDQ_OPS
from ..targets import resolve_targets


def target_costs(qdq: str | os.PathLike | Graph, targets: str, placer=None) -> list[dict[str, Any]]:
    """One row per target: coverage, partitions and the ledger totals of the quantized model (a file or its Graph).

    placer: placer(model, target) -> CheckReport, the placement every verb reads (npufit.placement.place, passed
    in by `npufit.quantize`: the compiler's where one runs here); None: npufit's prediction."""
    graph = qdq if isinstance(qdq, Graph) else load(qdq)
    rows = []
    for name in resolve_targets(targets):
        rep = predict(graph, name) if placer is None else placer(qdq, name)
        led = rep.extra.get("qdq_ledger") or {}
        totals = led.get("totals", {})
        s = rep.summary()
        counts = model_node_counts(rep)
        running = counts["npu"] + counts["cpu"] + counts["unsupported"]
        rows.append(
            {
                "target": name,
                "nodes": counts,  # the model's own nodes by verdict: check --judge int8's counts of the float model
                "coverage_nodes_pct": round(100.0 * counts["npu"] / running, 2) if running else 100.0,
                "npu_partitions": s["npu_partitions"],
                "host_partitions": s["host_partitions"],
                "float_islands": totals.get("islands", 0),
                "host_float_islands": totals.get("host_islands", 0),
                "extra_qdq_ops": totals.get("dequantize_ops", 0) + totals.get("quantize_ops", 0),
                "extra_ops": totals.get("extra_ops", 0),
                "bytes_converted": totals.get("bytes_converted", 0),
                "by_op": led.get("by_op", []),
                "placement": (rep.extra.get("placement") or {}).get(
                    "headline", "placement predicted by npufit's rules"
                ),
            }
        )
    return rows


def model_node_counts(report) -> dict[str, int]:
    """Verdicts of the model's top-level nodes other than quantize/dequantize."""
    counts = {"npu": 0, "cpu": 0, "unsupported": 0, "folded": 0}
    for n in report.nodes:
        if n.parent is None and n.op_type not in QDQ_OPS:
            counts[n.verdict.value] += 1
    return counts


def describe(row: dict[str, Any]) -> str:
    c = row.get("nodes")
    nodes = (
        f"{c['npu']} NPU / {c['cpu'] + c['unsupported']} host of the model's nodes ({row['coverage_nodes_pct']:.1f}%)"
        if c
        else f"{row['coverage_nodes_pct']:.1f}% of nodes on the NPU"
    )
    host = [g for g in row["by_op"] if g.get("device") == "host"]
    isl = ", ".join(f"{g['ops']} × {g['count']}" for g in host) or "none"
    return (
        f"{nodes}; {row['npu_partitions']} NPU / {row['host_partitions']} host partitions with the Q/DQ ops; "
        f"float islands on the host: {isl}; {row['extra_ops']} extra conversion ops per inference "
        f"({row['bytes_converted']:,} bytes converted)" + (f"; {row['placement']}" if row.get("placement") else "")
    )

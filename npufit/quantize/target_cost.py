"""What the quantized graph costs on a target: `check` of the QDQ output, summarized from its Q/DQ ledger
(float islands such as seed 001's dequantize → LeakyRelu → quantize, and conversions at NPU↔host edges)."""

from __future__ import annotations

import os
from typing import Any

from ..graph import Graph


def target_costs(qdq: str | os.PathLike | Graph, targets: str, placer=None) -> list[dict[str, Any]]:
    """One row per target: coverage, partitions and the ledger totals of the quantized model (a file or its Graph).

    placer: placer(model, target) -> CheckReport, the placement every verb reads (npufit.placement.place, passed
    in by `npufit.quantize`: the compiler's where one runs here); None: npufit's prediction."""
    from ..check import predict
    from ..graph import load
    from ..targets import resolve_targets

    graph = qdq if isinstance(qdq, Graph) else load(qdq)
    rows = []
    for name in resolve_targets(targets):
        rep = predict(graph, name) if placer is None else placer(qdq, name)
        led = rep.extra.get("qdq_ledger") or {}
        totals = led.get("totals", {})
        s = rep.summary()
        rows.append(
            {
                "target": name,
                "coverage_nodes_pct": s["coverage_nodes_pct"],
                "npu_partitions": s["npu_partitions"],
                "host_partitions": s["host_partitions"],
                "float_islands": totals.get("islands", 0),
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


def describe(row: dict[str, Any]) -> str:
    isl = ", ".join(f"{g['ops']} × {g['count']}" for g in row["by_op"]) or "none"
    return (
        f"{row['coverage_nodes_pct']:.1f}% of nodes on the NPU, {row['npu_partitions']} NPU / {row['host_partitions']} host "
        f"partitions; float islands: {isl}; {row['extra_ops']} extra conversion ops per inference "
        f"({row['bytes_converted']:,} bytes converted)" + (f"; {row['placement']}" if row.get("placement") else "")
    )

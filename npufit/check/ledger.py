"""The Q/DQ overhead ledger: what each NPU↔host boundary and each float island costs in conversion ops.

Seed 001 counted it by hand: "402 LeakyReLU × 3 = 1,206 extra ops" — every int8 LeakyReLU imported as
dequantize → leaky_relu → quantize. The ledger lists, per target:
- float islands: the float ops, the dequantize/quantize around them (in the model, or inserted by the
  target's importer), the bytes converted, and where they run;
- boundaries: tensors crossing NPU↔host and the layout conversion a target inserts (rk3588: NC1HWC2↔NCHW);
- model I/O conversions: the quantize of a float input and the dequantize of each float output.
`extra_ops` counts the conversion ops that run at inference time (host islands, crossings, host I/O).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..graph import Graph, quant
from ..targets.base import Profile, Verdict

SCHEMA = "npufit.qdq_ledger/1"


@dataclass
class QdqLedger:
    target: str
    quant_form: str
    islands: list[dict[str, Any]] = field(default_factory=list)
    boundaries: list[dict[str, Any]] = field(default_factory=list)
    io: list[dict[str, Any]] = field(default_factory=list)
    qdq: dict[str, int] = field(default_factory=dict)  # quant.qdq_counts: the numbers quantize and compare print

    @property
    def totals(self) -> dict[str, Any]:
        host_isl = [i for i in self.islands if i["device"] == "host"]
        dq = sum(i["dequantize_ops"] for i in host_isl) + sum(
            1 for x in self.io if x["op"] == "dequantize" and x["device"] == "host"
        )
        q = sum(i["quantize_ops"] for i in host_isl) + sum(
            1 for x in self.io if x["op"] == "quantize" and x["device"] == "host"
        )
        tr = sum(b["transpose_ops"] for b in self.boundaries)
        return {
            "islands": len(self.islands),
            "host_islands": len(host_isl),
            "island_ops": sum(i["ops"] for i in self.islands),
            "dequantize_ops": dq,
            "quantize_ops": q,
            "transpose_ops": tr,
            "extra_ops": dq + q + tr,
            "bytes_converted": sum(i["bytes_dequantized"] + i["bytes_float"] for i in host_isl)
            + sum(b["bytes"] * b["transpose_ops"] for b in self.boundaries)
            + sum(x["bytes"] for x in self.io if x["device"] == "host"),
        }

    def by_op(self) -> list[dict[str, Any]]:
        """Seed-style lines: one per island op type ('LeakyRelu × 6: dequantize → LeakyRelu → quantize')."""
        groups: dict[str, list[dict]] = {}
        for isl in self.islands:
            groups.setdefault(" → ".join(isl["op_types"]), []).append(isl)
        out = []
        for ops, items in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            per = items[0]["ops"]
            out.append(
                {
                    "ops": ops,
                    "count": len(items),
                    "ops_each": per,
                    "total_ops": sum(i["ops"] for i in items),
                    "qdq_ops": sum(i["dequantize_ops"] + i["quantize_ops"] for i in items),
                    "device": Counter(i["device"] for i in items).most_common(1)[0][0],
                }
            )
        return out

    def headline(self) -> str:
        t = self.totals
        if not self.islands and not t["extra_ops"]:
            return "no float islands and no conversion ops at NPU↔host boundaries"
        parts = []
        for g in self.by_op():
            parts.append(
                f"{g['ops']} × {g['count']} island{'s' if g['count'] != 1 else ''} (dequantize → {g['ops']} → "
                "quantize, "
                f"{g['count']} × {g['ops_each']} = {g['total_ops']:,} ops, on {g['device']})"
            )
        parts.append(
            f"{t['extra_ops']:,} extra conversion ops at run time ({t['dequantize_ops']} dequantize, "
            f"{t['quantize_ops']} quantize, "
            f"{t['transpose_ops']} layout)"
        )
        return "; ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "target": self.target,
            "quant_form": self.quant_form,
            "qdq": self.qdq,
            "totals": self.totals,
            "by_op": self.by_op(),
            "islands": self.islands,
            "boundaries": self.boundaries,
            "io": self.io,
        }


def _float_predicate(profile: Profile):
    ops = profile.limits.get("float_ops")
    if not ops:
        return None
    ops = frozenset(ops)
    key = profile.op_key or (lambda n: n.key)
    return lambda n: key(n) in ops


def build_ledger(graph: Graph, profile: Profile, report) -> QdqLedger:
    led = QdqLedger(profile.name, quant.judged_quant_form(graph), qdq=quant.qdq_counts(graph))
    isls = quant.islands(graph, _float_predicate(profile), skip=graph.folded)
    io = [n for n in graph.top_nodes if _io(n)] if graph.has_any(quant.QDQ_OPS) else []  # _io: Q/DQ nodes only
    device = {}
    if isls or io:  # a float model judged as int8 has neither: no device table over all its nodes
        verdict = {n.name: n.verdict for n in report.nodes}
        device = {
            name: ("npu" if v == Verdict.NPU else "folded" if v == Verdict.FOLDED else "host")
            for name, v in verdict.items()
        }
    for isl in isls:
        devs = {device.get(n, "host") for n in isl.nodes}
        d = isl.to_dict()
        d["device"] = "host" if "host" in devs else "npu"
        led.islands.append(d)
    layout = profile.limits.get("boundary_layout")
    for b in report.boundaries:
        if "model" in b.src or "model" in b.dst:
            continue  # model inputs/outputs are the I/O section
        led.boundaries.append(
            {
                "tensor": b.tensor,
                "direction": b.direction,
                "bytes": b.bytes or 0,
                "dtype": b.dtype,
                "transpose_ops": 1 if layout else 0,
                "layout": layout or "",
            }
        )
    for n in io:
        t = n.inputs[0] if quant.is_quantize(n) else n.outputs[0]
        led.io.append(
            {
                "node": n.name,
                "op": "quantize" if quant.is_quantize(n) else "dequantize",
                "tensor": t,
                "bytes": graph.tensor(t).nbytes or 0,
                "device": device.get(n.name, "host"),
            }
        )
    return led


def _io(n) -> bool:
    g = n.graph
    if quant.is_quantize(n):
        return bool(n.inputs) and n.inputs[0] in g.input_names
    return quant.is_dequantize(n) and not quant.is_weight_dequantize(n) and any(o in g.output_names for o in n.outputs)


def attach_ledger(report, graph: Graph, profile: Profile) -> QdqLedger | None:
    """Add the ledger to report.extra (JSON + terminal/markdown sections). Float models get none."""
    if not quant.is_quantized(graph):
        return None
    led = build_ledger(graph, profile, report)
    report.extra["qdq_ledger"] = led.to_dict()
    report.extra.setdefault("_terminal_sections", []).append(lambda con, rep: _terminal(con, led))
    report.extra.setdefault("_markdown_sections", []).append(lambda rep: render_markdown(led))
    return led


def _terminal(con, led: QdqLedger) -> None:
    from rich.table import Table
    from rich.text import Text

    con.print(Text.assemble(("Q/DQ ledger: ", "bold"), led.headline()))
    if led.qdq:
        con.print(f"in the model: {quant.describe_qdq(led.qdq)}")
    if not led.islands:
        return
    tab = Table(title="float islands (int8 → float → int8)", title_justify="left", show_edge=False)
    for col in ("ops", "device", "dequantize", "quantize", "ops total", "bytes converted"):
        tab.add_column(col)
    for isl in led.islands[:20]:
        tab.add_row(
            " → ".join(isl["op_types"]),
            isl["device"],
            str(isl["dequantize_ops"]),
            str(isl["quantize_ops"]),
            str(isl["ops"]),
            f"{isl['bytes_dequantized'] + isl['bytes_float']:,}",
        )
    con.print(tab)
    if len(led.islands) > 20:
        con.print(Text(f"… {len(led.islands) - 20} more (see --format json)", style="dim"))


def render_markdown(led: QdqLedger) -> str:
    t = led.totals
    out = [
        "## Q/DQ ledger",
        "",
        led.headline(),
        "",
        *([f"- in the model: {quant.describe_qdq(led.qdq)}"] if led.qdq else []),
        f"- islands: {t['islands']} ({t['host_islands']} on the host), {t['island_ops']:,} ops inside them",
        f"- extra conversion ops: {t['extra_ops']:,} (dequantize {t['dequantize_ops']}, quantize {t['quantize_ops']}, "
        f"layout {t['transpose_ops']})",
        f"- bytes converted per inference: {t['bytes_converted']:,}",
    ]
    if led.islands:
        out += [
            "",
            "| ops | device | dequantize | quantize | ops total | bytes converted |",
            "|---|---|---:|---:|---:|---:|",
        ]
        for isl in led.islands:
            out.append(
                f"| {' → '.join(isl['op_types'])} | {isl['device']} | {isl['dequantize_ops']} | {isl['quantize_ops']} "
                f"| {isl['ops']} | "
                f"{isl['bytes_dequantized'] + isl['bytes_float']:,} |"
            )
    return "\n".join(out)

"""CheckReport -> a terminal view a person reads at a glance (rich tables, colour when a TTY)."""

from __future__ import annotations

from collections import Counter

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..util.commands import fix_command
from ..util.shapes import needed_lines
from .console import console_to_string  # noqa: F401  (re-exported: other renderers import it from here)
from .style import VERDICT_STYLE, human_bytes, human_count, shape_str

MAX_BOUNDARIES = 20
MAX_PARTITIONS = 16


def render_text(report, all_nodes: bool = False) -> str:
    return console_to_string(lambda con: print_report(con, report, all_nodes))


def print_report(con: Console, report, all_nodes: bool = False) -> None:
    s = report.summary()
    t = report.target
    con.print(
        Text.assemble(("npufit check ", "bold"), (report.model["file"], "bold cyan"), "  →  ", (t["title"], "bold"))
    )
    placed = report.extra.get("placement") or {}
    if placed.get("headline"):  # measured by the compiler, or predicted and why (npufit.placement)
        con.print(Text(placed["headline"], style="bold" if placed.get("source") == "measured" else "yellow"))
    c = s["counts"]
    for note in report.model.get("shape_notes") or ():
        con.print(Text(f"note: {note}", style="dim"))
    if s["shapes_needed"]:  # every figure would rest on a guess: the headline asks for the shape instead
        for line in needed_lines(s["shapes_needed"]):
            con.print(Text(line, style="bold yellow"))
        return
    shape_hints = [w for w in report.warnings if "--input-shape" in w]
    for w in shape_hints:
        con.print(Text(f"warning: {w}", style="bold yellow"))
    macs = (
        (
            (f"{s['coverage_macs_pct']:.1f}%", "bold"),
            f" of MACs ({human_count(s['macs_npu'])}/{human_count(s['macs_total'])})   ",
        )
        if s["macs_total"]
        else ("no MACs   ",)
    )
    line = Text.assemble(
        ("coverage ", "bold"),
        (f"{s['coverage_nodes_pct']:.1f}%", "bold green" if report.fully_npu else "bold yellow"),
        " of nodes, ",
        *macs,
        (f"npu {c['npu']}", VERDICT_STYLE["npu"]),
        "  ",
        (f"cpu {c['cpu']}", VERDICT_STYLE["cpu"]),
        "  ",
        (f"unsupported {c['unsupported']}", VERDICT_STYLE["unsupported"]),
        "  ",
        (f"folded {c['folded']}", VERDICT_STYLE["folded"]),
    )
    con.print(line)
    b = s.get("subgraph_counts") or {}
    if sum(b.values()):
        con.print(
            Text(
                f"inside If/Loop/Scan bodies (carried by their control-flow node above): npu {b['npu']}, cpu "
                f"{b['cpu']}, "
                f"unsupported {b['unsupported']}, folded {b['folded']}",
                style="dim",
            )
        )
    con.print(
        f"partitions: {s['npu_partitions']} NPU, {s['host_partitions']} host   boundaries: {s['boundaries']} "
        f"({human_bytes(s['boundary_bytes'])} crossing)"
    )
    for note in t.get("notes", []):
        con.print(Text(f"note: {note}", style="dim"))
    _op_summary(con, report)
    _node_table(con, report, all_nodes)
    _partitions(con, report)
    _boundaries(con, report)
    _prefix(con, report)
    extra_sections = report.extra.get("_terminal_sections", [])
    for section in extra_sections:
        section(con, report)
    fixes = report.fix_rules()
    if fixes:
        con.print(
            Text.assemble(
                ("suggested: ", "bold"),
                fix_command(report.model["path"], t["name"], fixes, report.model.get("input_shapes")),
            )
        )
    for w in report.warnings:
        if w not in shape_hints:
            con.print(Text(f"warning: {w}", style="yellow"))


def _op_summary(con: Console, report) -> None:
    by_op: dict[str, Counter] = {}
    for n in report.nodes:
        by_op.setdefault(n.op_type, Counter())[n.verdict.value] += 1
    running = {op: c for op, c in by_op.items() if c["npu"] + c["cpu"] + c["unsupported"]}
    tab = Table(title="ops by verdict", title_justify="left", show_edge=False, pad_edge=False)
    tab.add_column("op")
    for v in ("npu", "cpu", "unsupported", "folded"):
        tab.add_column(v, justify="right", style=VERDICT_STYLE[v])
    order = sorted(
        running.items(), key=lambda kv: (-(kv[1]["unsupported"] + kv[1]["cpu"]), -sum(kv[1].values()), kv[0])
    )
    for op, cnt in order:
        tab.add_row(op, *[str(cnt[v]) if cnt[v] else "" for v in ("npu", "cpu", "unsupported", "folded")])
    con.print(tab)
    only_folded = sorted(((op, c["folded"]) for op, c in by_op.items() if op not in running), key=lambda x: -x[1])
    if only_folded:
        con.print(
            Text(
                "folded at compile time (run nowhere): " + ", ".join(f"{op}×{k}" for op, k in only_folded), style="dim"
            )
        )


def _generic(hint: str) -> bool:
    return "no CPU fallback inside" in hint  # said once in the header notes, not on every row


def _node_table(con: Console, report, all_nodes: bool) -> None:
    if all_nodes:
        _all_nodes_table(con, report)
        return
    if not report.failing:
        con.print(Text("every node runs on the NPU (or is folded at compile time)", style="green"))
        return
    # One row per (verdict, op, rules): a model with 40 identical TopK/Transpose failures reads as one line.
    groups: dict[tuple, list] = {}
    for n in report.failing:
        key = (n.verdict.value, n.op_type, tuple(r.rule for r in n.reasons))
        groups.setdefault(key, []).append(n)
    tab = Table(
        title="why not on the NPU (one row per op and rule; --all-nodes lists every node)",
        title_justify="left",
        show_lines=True,
    )
    tab.add_column("verdict")
    tab.add_column("op")
    tab.add_column("#", justify="right")
    tab.add_column("nodes", overflow="fold", max_width=30)
    tab.add_column(Text("why [rule]"), overflow="fold", ratio=4)
    tab.add_column("fix", overflow="fold", ratio=3)
    order = sorted(groups.items(), key=lambda kv: (kv[0][0] != "unsupported", -len(kv[1]), kv[0][1]))
    for (verdict, op, _), nodes in order:
        first = nodes[0]
        why = "\n".join(f"{r.sentence()} [{r.rule}]" for r in first.reasons)
        fix = "\n".join(f for f in dict.fromkeys(f for r in first.reasons for f in r.fix) if not _generic(f))
        names = ", ".join(n.name for n in nodes[:3]) + (f", … (+{len(nodes) - 3})" if len(nodes) > 3 else "")
        tab.add_row(Text(verdict, style=VERDICT_STYLE[verdict]), op, str(len(nodes)), Text(names), Text(why), Text(fix))
    con.print(tab)
    _explain_hint(con, report)


def explain_hint(report) -> str:
    """The line that says where the evidence behind a reason is (one rule id of the report as the example)."""
    first = next((r.rule for n in report.failing for r in n.reasons if r.rule in report.evidence), None)
    return f"the evidence behind a rule: npufit explain {first}" if first else ""


def _explain_hint(con: Console, report) -> None:
    line = explain_hint(report)
    if line:
        con.print(Text(line, style="dim"))


def _all_nodes_table(con: Console, report) -> None:
    tab = Table(title="nodes", title_justify="left", show_lines=True)
    tab.add_column("node", overflow="fold", max_width=36)
    tab.add_column("op")
    tab.add_column("verdict")
    tab.add_column(Text("why [rule]"), overflow="fold")
    tab.add_column("fix", overflow="fold")
    for n in report.nodes:
        why = "\n".join(f"{r.sentence()} [{r.rule}]" for r in n.reasons) or (
            "folded at compile time" if n.verdict.value == "folded" else ""
        )
        fix = "\n".join(f for f in dict.fromkeys(f for r in n.reasons for f in r.fix) if not _generic(f))
        tab.add_row(
            Text(n.name), n.op_type, Text(n.verdict.value, style=VERDICT_STYLE[n.verdict.value]), Text(why), Text(fix)
        )
    con.print(tab)
    _explain_hint(con, report)


def _partitions(con: Console, report) -> None:
    if not report.partitions:
        return
    tab = Table(title="partitions (execution order)", title_justify="left", show_edge=False)
    for col in ("#", "device", "nodes", "MACs", "ops", "first → last"):
        tab.add_column(col)
    for p in report.partitions[:MAX_PARTITIONS]:
        ops = Counter(report.node(n).op_type for n in p.nodes)
        top = ", ".join(f"{o}×{k}" if k > 1 else o for o, k in ops.most_common(4)) + (" …" if len(ops) > 4 else "")
        tab.add_row(
            str(p.id),
            Text(p.device, style="green" if p.device == "npu" else "yellow"),
            str(len(p.nodes)),
            human_count(p.macs),
            top,
            f"{p.nodes[0]} → {p.nodes[-1]}" if len(p.nodes) > 1 else p.nodes[0],
        )
    con.print(tab)
    if len(report.partitions) > MAX_PARTITIONS:
        con.print(Text(f"… {len(report.partitions) - MAX_PARTITIONS} more partitions (see --format json)", style="dim"))


def _boundaries(con: Console, report) -> None:
    if not report.boundaries:
        return
    tab = Table(title="tensors crossing NPU↔host", title_justify="left", show_edge=False)
    for col in ("tensor", "direction", "from → to", "shape", "dtype", "bytes"):
        tab.add_column(col, overflow="fold")
    for b in report.boundaries[:MAX_BOUNDARIES]:
        tab.add_row(
            b.tensor, b.direction, f"{b.src} → {b.dst}", shape_str(b.shape), b.dtype or "?", human_bytes(b.bytes)
        )
    con.print(tab)
    if len(report.boundaries) > MAX_BOUNDARIES:
        con.print(Text(f"… {len(report.boundaries) - MAX_BOUNDARIES} more (see --format json)", style="dim"))


def _prefix(con: Console, report) -> None:
    p = report.prefix
    if p["covers_whole_model"]:
        con.print(Text("the whole model is one NPU-runnable graph", style="green"))
        return
    if not p["node_count"]:
        con.print(Text("no NPU-runnable prefix: the first running node is not NPU-supported", style="yellow"))
        return
    macs = f", {p['macs_pct']:.1f}% of MACs" if p.get("macs_pct") is not None else ""
    con.print(Text.assemble(("largest NPU prefix: ", "bold"), f"{p['node_count']} nodes{macs}"))
    con.print(f"  --start-node-names {' '.join(p['start_nodes']) or '(inputs)'}")
    con.print(f"  --end-node-names {' '.join(p['end_nodes'])}")

"""CheckReport -> Markdown (for PRs, issues and docs)."""

from __future__ import annotations

from collections import Counter

from ..util.commands import fix_command
from ..util.shapes import needed_lines
from .check_terminal import explain_hint
from .style import VERDICT_MARK, human_bytes, human_count, shape_str


def _cell(s: str) -> str:
    return str(s).replace("|", "\\|").replace("\n", "<br>")


def render_markdown(report, all_nodes: bool = False) -> str:
    s, t = report.summary(), report.target
    c = s["counts"]
    out = [f"# npufit check: `{report.model['file']}` → {t['title']}", ""]
    placed = (report.extra.get("placement") or {}).get("headline")
    if placed:  # measured by the compiler, or predicted and why (npufit.placement)
        out.append(f"- **{placed}**")
    out += [f"- note: {note}" for note in report.model.get("shape_notes") or ()]
    if s["shapes_needed"]:  # every figure would rest on a guess: the headline asks for the shape instead
        return "\n".join(out + [f"- **{line}**" for line in needed_lines(s["shapes_needed"])]) + "\n"
    macs = (
        f"{s['coverage_macs_pct']:.1f}% of MACs ({human_count(s['macs_npu'])} / {human_count(s['macs_total'])})"
        if s["macs_total"]
        else "no MACs"
    )
    out.append(f"- **coverage**: {s['coverage_nodes_pct']:.1f}% of nodes, {macs}")
    out.append(f"- **verdicts**: npu {c['npu']}, cpu {c['cpu']}, unsupported {c['unsupported']}, folded {c['folded']}")
    out.append(
        f"- **partitions**: {s['npu_partitions']} NPU, {s['host_partitions']} host; **boundaries**: {s['boundaries']} "
        f"({human_bytes(s['boundary_bytes'])})"
    )
    for note in t.get("notes", []):
        out.append(f"- note: {note}")
    out += ["", "## Ops", "", "| op | npu | cpu | unsupported | folded |", "|---|---:|---:|---:|---:|"]
    by_op: dict[str, Counter] = {}
    for n in report.nodes:
        by_op.setdefault(n.op_type, Counter())[n.verdict.value] += 1
    for op, cnt in sorted(by_op.items(), key=lambda kv: (-(kv[1]["unsupported"] + kv[1]["cpu"]), kv[0])):
        out.append(f"| {op} | " + " | ".join(str(cnt[v] or "") for v in ("npu", "cpu", "unsupported", "folded")) + " |")
    rows = report.nodes if all_nodes else report.failing
    out += ["", "## Nodes" if all_nodes else "## Nodes not on the NPU", ""]
    if rows:
        out += ["| node | op | verdict | why | rule | fix |", "|---|---|---|---|---|---|"]
        for n in rows:
            why = "<br>".join(_cell(r.sentence()) for r in n.reasons)
            rules = "<br>".join(f"`{r.rule}`" for r in n.reasons)
            fix = "<br>".join(_cell(f) for f in dict.fromkeys(f for r in n.reasons for f in r.fix))
            out.append(
                f"| `{_cell(n.name)}` | {n.op_type} | {VERDICT_MARK[n.verdict.value]} {n.verdict.value} | "
                f"{why} | {rules} | {fix} |"
            )
        hint = explain_hint(report)
        if hint:
            out += ["", f"{hint[0].upper()}{hint[1:].split(': ')[0]}: `{hint.split(': ', 1)[1]}`"]
    else:
        out.append("Every node runs on the NPU (or is folded at compile time).")
    if report.partitions:
        out += ["", "## Partitions", "", "| # | device | nodes | MACs | first → last |", "|---|---|---:|---:|---|"]
        for p in report.partitions:
            out.append(
                f"| {p.id} | {p.device} | {len(p.nodes)} | {human_count(p.macs)} | `{_cell(p.nodes[0])}` → "
                f"`{_cell(p.nodes[-1])}` |"
            )
    if report.boundaries:
        out += [
            "",
            "## Tensors crossing NPU↔host",
            "",
            "| tensor | direction | from → to | shape | dtype | bytes |",
            "|---|---|---|---|---|---:|",
        ]
        for b in report.boundaries:
            out.append(
                f"| `{_cell(b.tensor)}` | {b.direction} | {b.src} → {b.dst} | {shape_str(b.shape)} | "
                f"{b.dtype} | {b.bytes if b.bytes is not None else '?'} |"
            )
    p = report.prefix
    out += ["", "## Largest NPU-runnable prefix", ""]
    if p["covers_whole_model"]:
        out.append("The whole model is NPU-runnable.")
    else:
        out.append(
            f"{p['node_count']} nodes" + (f", {p['macs_pct']:.1f}% of MACs" if p.get("macs_pct") is not None else "")
        )
        out.append("")
        out.append(f"- start nodes: {', '.join(f'`{x}`' for x in p['start_nodes']) or '(model inputs)'}")
        out.append(f"- end nodes: {', '.join(f'`{x}`' for x in p['end_nodes']) or '—'}")
    fixes = report.fix_rules()
    if fixes:
        cmd = fix_command(report.model["path"], t["name"], fixes, report.model.get("input_shapes"))
        out += ["", f"Suggested: `{cmd}`"]
    for section in report.extra.get("_markdown_sections", []):
        out += ["", section(report)]
    if report.warnings:
        out += ["", "## Warnings", ""] + [f"- {w}" for w in report.warnings]
    return "\n".join(out) + "\n"

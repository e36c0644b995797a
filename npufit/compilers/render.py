"""CompileResult -> terminal text / Markdown (JSON is CompileResult.to_dict)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: CompileResult's methods import this module
    from .base import CompileResult


def _fmt(v, unit="") -> str:
    if v is None:
        return "n/a"
    if isinstance(v, float):
        return f"{v:.4g}{unit}"
    return f"{v}{unit}"


def _head(r: CompileResult) -> list[str]:
    s = r.summary()
    ran = bool(r.timings) or r.wall_s is not None
    version = r.compiler_version or ("version unknown" if ran else "not run")
    state = ("OK" if r.ok else "FAILED") if ran else ("script written" if r.ok else "NOT RUN")
    lines = [
        f"{r.compiler} ({version}) -> {r.target}: {state}",
        f"  model     {r.model}",
        f"  artifact  {r.artifact or '-'}",
        f"  command   {r.command}",
        f"  log       {r.log_path}",
        f"  wall {_fmt(r.wall_s, ' s')}, peak memory {_fmt(r.peak_rss_mb, ' MB')} (compiler process)",
        f"  placement{'' if ran else ' (predicted: the parse region, not compiled)'}: {s['npu']} npu, {s['cpu']} cpu, "
        f"{s['folded']} folded of {s['nodes']} nodes",
    ]
    if r.error:
        lines.append(f"  error: {r.error}")
    if r.next_step:
        lines.append(f"  next: {r.next_step}")
    for k, v in r.metrics.items():
        if not isinstance(v, (dict, list)):
            lines.append(f"  {k}: {_fmt(v)}")
        elif isinstance(v, dict) and v and len(v) <= 8:
            lines.append(f"  {k}: " + ", ".join(f"{a}={_fmt(b)}" for a, b in v.items()))
    for rt in r.retries:
        lines.append(f"  retried with disable_rules={rt['disable_rules']} after {rt.get('error')}")
    lines += [f"  note: {n}" for n in r.notes]
    return lines


def render_text(r: CompileResult, all_nodes: bool = False) -> str:
    lines = _head(r)
    rows = r.placement if all_nodes else r.cpu_nodes
    if rows:
        lines.append("")
        lines.append("CPU placement:" if not all_nodes else "Placement:")
        w = max(len(p.node) for p in rows)
        for p in rows:
            lines.append(f"  {p.node:<{w}}  {p.op:<18} {p.device:<6} {p.reason}")
    if r.comparison is not None:
        lines += [""] + comparison_lines(r.comparison)
    return "\n".join(lines) + "\n"


def comparison_lines(c) -> list[str]:
    s = c.scores()
    out = [
        f"Prediction ({c.profile or c.target}) vs {c.compiler}:",
        f"  compiler put {s['compiler_cpu_nodes']} node(s) on the CPU; npufit predicted {s['predicted_off_npu']} off the NPU",
        f"  CPU-fallback recall {_fmt(s['cpu_fallback_recall'])}  precision {_fmt(s['cpu_fallback_precision'])}"
        f"  (tp {s['tp']}, fp {s['fp']}, fn {s['fn']}; plain agreement {_fmt(s['agreement'])} is not the score)",
    ]
    for d in c.disagreements:
        rule = ", ".join(x["rule"] for x in d.rules) or "no rule fired"
        what = "missed: compiler ran it on the CPU" if d.kind == "fn" else "false alarm: compiler kept it on the NPU"
        out.append(
            f"  - {d.node} ({d.op}): npufit {d.predicted}, compiler {d.actual} [{what}; npufit rule: {rule}]"
            + (f" — {d.compiler_reason}" if d.compiler_reason else "")
        )
    return out


def render_markdown(r: CompileResult, all_nodes: bool = False) -> str:
    out = ["# Compile: " + f"{r.compiler} -> {r.target}", "", "```", *_head(r), "```", ""]
    rows = r.placement if all_nodes else r.cpu_nodes
    if rows:
        out += ["| node | op | device | how | reason |", "|---|---|---|---|---|"]
        out += [f"| `{p.node}` | {p.op} | {p.device} | {p.how} | {p.reason} |" for p in rows]
    if r.comparison is not None:
        out += ["", "## Prediction vs compiler", "", *comparison_lines(r.comparison)]
    return "\n".join(out) + "\n"

"""CompileResult -> terminal text / Markdown (JSON is CompileResult.to_dict)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: CompileResult's methods import this module
    from .base import CompileResult


import math
import re
from collections import Counter
from pathlib import Path

_TENSOR_NAME = re.compile(r" \([^()\s]+\)")  # "(conv0)": the tensor a compiler's reason names, one per node
MAX_CPU_ROWS = 20  # a longer CPU list is shown one line per op and reason (--all-nodes lists every node)
# metrics shown in another unit beside them (one unit per figure): Vela reports seconds, npufit shows milliseconds
_SHOWN_ELSEWHERE = ("inference_time_s",)


def _fmt(v, unit="") -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "n/a"
    if isinstance(v, float):
        return f"{v:,.0f}{unit}" if abs(v) >= 1000 else f"{v:.4g}{unit}"
    return f"{v}{unit}"


def _shown(v) -> bool:
    """A figure worth a line: not missing, not NaN (a compiler's "nan" means it has no estimate)."""
    return v is not None and not (isinstance(v, float) and not math.isfinite(v))


def verdict_line(r: CompileResult, float_on_int8_only: bool = False) -> str:
    """What the compile means, in one line, before any detail."""
    name = Path(r.model).name
    s = r.summary()
    if float_on_int8_only:
        return (
            f"float model: 0% of operators on the NPU of {r.target}, which runs int8 only — give it an int8 model: a "
            f"full-integer TFLite export, or the ONNX model with calibration data (npufit compile MODEL.onnx --target "
            f"{r.target} --calibration DATA)"
        )
    ran = bool(r.timings) or r.wall_s is not None
    if not r.ok:
        why = (r.error or "see the log").strip().splitlines()[0][:200]
        return f"{name}: {r.compiler} failed for {r.target}: {why}"
    running = s["npu"] + s["cpu"]
    pct = f"{100.0 * s['npu'] / running:.0f}%" if running else "no node"
    script = "; a script to compile it written" if r.outputs.get("script") else ""
    where = "on the NPU" if ran else f"predicted on the NPU (not compiled here{script})"
    line = f"{name} on {r.target}: {pct} of running nodes {where} ({s['npu']} npu, {s['cpu']} cpu)"
    if r.random_calibrated:
        line += "; calibrated on random data: not for deployment"
    return line


def _head(r: CompileResult) -> list[str]:
    s = r.summary()
    ran = bool(r.timings) or r.wall_s is not None
    version = r.compiler_version or ("version unknown" if ran else "not run")
    state = ("OK" if r.ok else "FAILED") if ran else ("script written" if r.ok else "NOT RUN")
    lines = [f"{r.verdict}"] if r.verdict else []
    lines += [f"WARNING: {w}" for w in r.warnings]
    lines += [
        f"{r.compiler} ({version}) -> {r.target}: {state}",
        f"  model     {r.model}",
        f"  artifact  {r.artifact or '-'}",
        f"  command   {r.command}",
        f"  log       {r.log_path}",
        f"  wall {_fmt(r.wall_s, ' s')}, peak memory {_fmt(r.peak_rss_mb, ' MB')} (compiler process)",
        f"  placement{'' if ran else ' (predicted: the parse region, not compiled)'}: {s['npu']} npu, {s['cpu']} cpu, "
        f"{s['folded']} folded of {s['nodes']} nodes",
    ]
    if r.error and not (r.verdict and r.error.strip() in r.verdict):  # a one-line cause is said once, in the verdict
        lines.append(f"  error: {r.error}")
    if r.next_step:
        lines.append(f"  next: {r.next_step}")
    for k, v in r.metrics.items():
        if k in _SHOWN_ELSEWHERE:
            continue
        if not isinstance(v, (dict, list)):
            if _shown(v):
                lines.append(f"  {k}: {_fmt(v)}")
        elif isinstance(v, dict) and v and len(v) <= 8:
            lines.append(f"  {k}: " + ", ".join(f"{a}={_fmt(b)}" for a, b in v.items() if _shown(b)))
    for rt in r.retries:
        lines.append(f"  retried with disable_rules={rt['disable_rules']} after {rt.get('error')}")
    lines += [f"  note: {n}" for n in r.notes]
    return lines


def _cpu_groups(rows) -> list[str]:
    """A long CPU list, one line per (op, reason): 232 float operators read as a handful of lines."""
    groups = Counter((p.op, _TENSOR_NAME.sub("", p.reason)) for p in rows)
    return [f"  {op} ×{k}: {reason}" if k > 1 else f"  {op}: {reason}" for (op, reason), k in groups.most_common()]


def render_text(r: CompileResult, all_nodes: bool = False) -> str:
    lines = _head(r)
    rows = r.placement if all_nodes else r.cpu_nodes
    if rows and not all_nodes and len(rows) > MAX_CPU_ROWS:
        lines += ["", f"CPU placement ({len(rows)} nodes, by op; --all-nodes lists each):", *_cpu_groups(rows)]
    elif rows:
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
        f"  compiler put {s['compiler_cpu_nodes']} node(s) on the CPU; "
        f"npufit predicted {s['predicted_off_npu']} off the NPU",
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
    out = ["# Compile: " + f"{r.compiler} -> {r.target}", ""]
    out += [f"**{r.verdict}**", ""] if r.verdict else []
    out += ["```", *_head(r)[1 if r.verdict else 0 :], "```", ""]
    rows = r.placement if all_nodes else r.cpu_nodes
    if rows:
        out += ["| node | op | device | how | reason |", "|---|---|---|---|---|"]
        out += [f"| `{p.node}` | {p.op} | {p.device} | {p.how} | {p.reason} |" for p in rows]
    if r.comparison is not None:
        out += ["", "## Prediction vs compiler", "", *comparison_lines(r.comparison)]
    return "\n".join(out) + "\n"

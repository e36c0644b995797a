"""The end-of-run summary: a branch x step status matrix, the failures with their reasons, and the
compile time/memory table that seed 004 kept by hand. Terminal (rich), Markdown and JSON."""

from __future__ import annotations

import io
import json
from typing import TYPE_CHECKING

from ..report.style import human_bytes

if TYPE_CHECKING:
    from .runner import CellResult, PipelineRun

_SHORT = {
    "ran": "ok",
    "cached": "cached",
    "kept": "kept",
    "failed": "FAILED",
    "skipped": "skip",
    "rejected": "rejected",
}


def matrix_rows(run: "PipelineRun") -> tuple[list[str], list[tuple[str, str, dict[str, "CellResult"]]]]:
    """(steps present, [(model, target/runtime, {step: result})]) in config order."""
    steps = [s for s in run.config.steps if s != "report"]
    rows: dict[tuple[str, str], dict] = {}
    for r in run.results:
        c = r.cell
        if c.step == "report":
            continue
        rows.setdefault((c.model, c.target or c.runtime or "-"), {})[c.step] = r
    return steps, [(m, t, cells) for (m, t), cells in rows.items()]


def compile_rows(run: "PipelineRun") -> list[dict]:
    """Every compile cell; time and memory only where it compiled (a skipped or failed cell has no result)."""
    out = []
    for r in run.results:
        if r.cell.step != "compile":
            continue
        m = r.record.result
        out.append(
            {
                "model": r.cell.model,
                "target": r.cell.target,
                "status": r.record.status,
                "action": r.action,
                "model_bytes": m.model_bytes if m else None,
                "wall_s": m.wall_s if m else None,
                "peak_rss_mb": m.peak_rss_mb if m else None,
                "message": r.record.message,
            }
        )
    return out


def quantize_rows(run: "PipelineRun") -> list[dict]:
    """int8 accuracy per model x target from the quantize steps' results (the summary of quantize.json)."""
    out = []
    for r in run.results:
        q = r.record.result
        if r.cell.step != "quantize" or q is None:
            continue
        out.append(
            {
                "model": r.cell.model,
                "target": r.cell.target,
                "sqnr_db": q.min_output_sqnr_db,
                "cosine": q.min_output_cosine,
                "calibration": q.calibration_samples,
                "holdout": q.holdout_samples,
                "message": r.record.message,
            }
        )
    return out


def _sqnr(q: dict) -> str:
    v = q["sqnr_db"]
    return (
        "exact"
        if v is None and q["cosine"] is not None
        else (f"{v:.1f} dB" if isinstance(v, (int, float)) else str(v or "-"))
    )


def _cell_text(r: "CellResult | None") -> str:
    if r is None:
        return ""
    if r.action in ("ran", "failed", "rejected"):
        return f"{_SHORT[r.action]} {r.record.seconds:.1f}s"
    return _SHORT[r.action]


def render_summary(run: "PipelineRun", fmt: str = "table") -> str:
    if fmt == "json":
        return json.dumps(run.to_dict(), indent=2, default=str)
    if fmt == "markdown":
        return _markdown(run)
    return _terminal(run)


def _counts_line(run: "PipelineRun") -> str:
    c = run.counts
    parts = [f"{v} {k}" for k, v in c.items() if v]
    return f"{len(run.results)} steps in {run.seconds:.1f} s: " + ", ".join(parts)


def _time(c: dict) -> str:
    return f"{c['wall_s']:.1f} s" if c["wall_s"] is not None else "-"


def _mem(c: dict) -> str:
    return f"{c['peak_rss_mb']:.0f} MiB" if c["peak_rss_mb"] is not None else "-"


def _notes(run: "PipelineRun") -> list[tuple[str, str, str]]:
    """(cell, action, message) for every cell that did not simply succeed, root causes first."""
    out = []
    for r in run.results:
        if r.action in ("failed", "rejected") or (r.action == "skipped" and "blocked by" not in r.record.message):
            out.append((r.cell.id, r.action, r.record.message))
    return out


def _terminal(run: "PipelineRun") -> str:
    from rich.console import Console
    from rich.table import Table

    buf = io.StringIO()
    con = Console(file=buf, width=140, force_terminal=False, color_system=None)
    steps, rows = matrix_rows(run)
    t = Table(title=f"pipeline {run.config.name}", title_justify="left")
    t.add_column("model")
    t.add_column("target / runtime")
    for s in steps:
        t.add_column(s)
    for m, tr, cells in rows:
        t.add_row(m, tr, *[_cell_text(cells.get(s)) for s in steps])
    con.print(t)
    comp = compile_rows(run)
    if comp:
        ct = Table(title="compile time and memory", title_justify="left")
        for h in ("model", "target", "model size", "compile time", "peak memory", "status"):
            ct.add_column(h)
        for c in comp:
            ct.add_row(
                c["model"],
                c["target"],
                human_bytes(c["model_bytes"]) if c["model_bytes"] else "-",
                _time(c),
                _mem(c),
                c["message"][:70] or c["status"],
            )
        con.print(ct)
    quant = quantize_rows(run)
    if quant:
        qt = Table(title="int8 vs float on held-back samples (worst output)", title_justify="left")
        for h in ("model", "target", "SQNR", "cosine", "calibration / held-back"):
            qt.add_column(h)
        for q in quant:
            qt.add_row(
                q["model"],
                q["target"],
                _sqnr(q),
                f"{q['cosine']:.5f}" if q["cosine"] is not None else "-",
                f"{q['calibration']} / {q['holdout']}",
            )
        con.print(qt)
    notes = _notes(run)
    if notes:
        con.print("Why some branches stopped:")
        for cid, action, msg in notes:
            con.print(f"  {cid}: {msg}", soft_wrap=True)
    con.print(_counts_line(run))
    return buf.getvalue()


def _markdown(run: "PipelineRun") -> str:
    steps, rows = matrix_rows(run)
    lines = [
        f"### pipeline {run.config.name}",
        "",
        "| model | target / runtime | " + " | ".join(steps) + " |",
        "|---|---|" + "---|" * len(steps),
    ]
    for m, tr, cells in rows:
        lines.append(f"| {m} | {tr} | " + " | ".join(_cell_text(cells.get(s)) for s in steps) + " |")
    comp = compile_rows(run)
    if comp:
        lines += [
            "",
            "| model | target | model size | compile time | peak memory | status |",
            "|---|---|---:|---:|---:|---|",
        ]
        for c in comp:
            lines.append(
                f"| {c['model']} | {c['target']} | {human_bytes(c['model_bytes']) if c['model_bytes'] else '-'} | "
                f"{_time(c)} | {_mem(c)} | {c['message'] or c['status']} |"
            )
    quant = quantize_rows(run)
    if quant:
        lines += [
            "",
            "| model | target | int8 vs float SQNR | cosine | calibration / held-back |",
            "|---|---|---:|---:|---:|",
        ]
        lines += [
            f"| {q['model']} | {q['target']} | {_sqnr(q)} | {q['cosine'] if q['cosine'] is not None else '-'} | "
            f"{q['calibration']} / {q['holdout']} |"
            for q in quant
        ]
    notes = _notes(run)
    if notes:
        lines += ["", "Why some branches stopped:", ""] + [f"- `{cid}`: {msg}" for cid, _, msg in notes]
    lines += ["", _counts_line(run)]
    return "\n".join(lines) + "\n"

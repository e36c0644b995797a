"""`npufit split --format html` and `npufit bench --format html`: one self-contained page per result, in plain
words (labelled tables, one number format, repeated skip rows shown once)."""

from __future__ import annotations

from typing import Any

from .html import badge, cards, environment_section, esc, fields_html, graph_block, kv_table, page, table
from .html_charts import bar_chart
from .html_fields import label, rows, value
from .html_reasons import more
from .style import human_bytes, human_count, num


def _device(dev: str | None) -> str:
    return badge("npu").replace(">npu<", ">NPU<") if dev == "npu" else badge("cpu").replace(">cpu<", ">host<")


def _tensors(items: list, arrow: str, key: str) -> str:
    """Stage inputs (name ← stage) or outputs (name → stages), one per line."""
    out = []
    for i in items:
        if isinstance(i, dict):
            other = i.get(key)
            other = ", ".join(other) if isinstance(other, list) else other
            out.append(esc(i.get("name")) + (f' <span class="note">{arrow} {esc(other)}</span>' if other else ""))
        else:
            out.append(esc(i))
    return "<br>".join(out)


def _verification_table(v: dict[str, Any]) -> str:
    """Per output: the largest absolute and relative differences under each ONNX Runtime setting checked."""
    opt = (v.get("optimized") or {}).get("per_output", {})
    rows_ = [
        [
            esc(k),
            num(d.get("max_abs")),
            num(d.get("max_rel")),
            num(opt.get(k, {}).get("max_abs")),
            num(opt.get(k, {}).get("max_rel")),
        ]
        for k, d in v.get("per_output", {}).items()
    ]
    return '<p class="note">Largest difference between the stages run in a chain and the original model:</p>' + table(
        [
            "output",
            "absolute (optimizations off)",
            "relative (optimizations off)",
            "absolute (all optimizations)",
            "relative (all optimizations)",
        ],
        rows_,
        num_cols=range(1, 5),
    )


def split_summary(d: dict[str, Any]) -> str:
    """Cards (stages, MACs on the NPU, latency, crossings, verified), why this cut, and the stages table."""
    plan = d.get("plan", {})
    stages, cost, v = plan.get("stages", []), plan.get("cost", {}), plan.get("verification")
    n_npu = sum(1 for s in stages if s.get("device") == "npu")
    pct = cost.get("npu_macs_pct")
    return (
        cards(
            [
                ("stages", f"{len(stages)} ({n_npu} NPU, {len(stages) - n_npu} host)"),
                ("MACs on the NPU", f"{pct:.1f}%" if isinstance(pct, (int, float)) else "-"),
                ("estimated latency", num(cost.get("est_ms"), "ms")),
                (
                    "tensors crossing NPU ↔ host",
                    f"{cost.get('boundaries', 0):,} ({human_bytes(cost.get('bytes_crossing'))})",
                ),
                ("verified", ("outputs match" if v["equivalent"] else "outputs differ") if v else "not verified"),
            ]
        )
        + (f"<p>{more(d['why'])}</p>" if d.get("why") else "")
        + "<h4>Stages, in the order they run</h4>"
        + table(
            ["stage", "runs on", "file", "nodes", "MACs", "inputs (from)", "outputs (to)"],
            [
                [
                    esc(s.get("name")),
                    _device(s.get("device")),
                    esc(s.get("file")),
                    f"{s['node_count']:,}" if isinstance(s.get("node_count"), int) else "-",
                    esc(human_count(s.get("macs"))),
                    _tensors(s.get("inputs", []), "←", "from"),
                    _tensors(s.get("outputs", []), "→", "to"),
                ]
                for s in stages
            ],
            num_cols=(3, 4),
        )
    )


def split_candidates(d: dict[str, Any], select_with: list[str] | None = None) -> str:
    """The ranked candidate cuts in plain words; the options that pick each again where known."""
    cands = d.get("candidates", [])
    if not cands:
        return ""
    picks = list(select_with or [])
    crow = [
        [
            f"{c.get('rank', i + 1)}" + (' <span class="badge v-npu">chosen</span>' if c.get("chosen") else ""),
            esc(c.get("label")),
            num(c.get("est_ms"), "ms"),
            value(c.get("npu_macs_pct"), "npu_macs_pct"),
            f"{c.get('boundaries', 0):,}",
            esc(human_bytes(c.get("bytes_crossing"))),
            f"{c.get('npu_stages', 0)} NPU + {c.get('host_stages', 0)} host",
            *([f"<code>{esc(picks[i])}</code>" if i < len(picks) else ""] if picks else []),
        ]
        for i, c in enumerate(cands)
    ]
    heads = ["rank", "cut", "estimated latency", "MACs on the NPU", "tensors crossing", "bytes crossing", "stages"]
    return f'<p class="note">Ranked by {esc(d.get("ranking", ""))}.</p>' + table(
        heads + (["pick it with"] if picks else []), crow, num_cols=(2, 3, 4, 5)
    )


def split_verification(d: dict[str, Any], sentence: str = "") -> str:
    v = d.get("plan", {}).get("verification")
    if not v:
        return ""
    return (
        f'<p class="{"ok" if v["equivalent"] else "warn"}">{esc(sentence)}</p>' if sentence else ""
    ) + _verification_table(v)


def render_split_html(
    d: dict[str, Any],
    stage_view: dict[str, Any] | None = None,
    verification: tuple[str, list[list[str]]] | None = None,
    select_with: list[str] | None = None,
) -> str:
    """d: SplitResult.to_dict(); stage_view: SplitResult.stage_view() (the graph coloured by stage);
    verification: SplitResult.verification_view(); select_with: SplitResult.select_view() (passed in: renderers sit
    below split in the layer order)."""
    plan = d.get("plan", {})
    stages = plan.get("stages", [])
    src, tgt = plan.get("source", {}), plan.get("target", {})
    body = '<section id="summary"><h2>The plan</h2>' + split_summary(d) + "</section>"
    if stage_view is not None:
        body += (
            '<section id="graph"><h2>Graph by stage '
            '<span class="note">(✂ marks the tensors that cross NPU ↔ host)</span></h2>'
            + graph_block(stage_view, "split")[0]
            + "</section>"
        )
    if plan.get("verification"):
        body += (
            '<section id="verification"><h2>Verification</h2>'
            + split_verification(d, verification[0] if verification else "")
            + "</section>"
        )
    if d.get("candidates"):
        body += '<section id="candidates"><h2>Candidate cuts</h2>' + split_candidates(d, select_with) + "</section>"
    details = [
        ("model", esc(src.get("path") or src.get("file"))),
        ("SHA-256 of the model", f"<code>{esc(src.get('sha256'))}</code>"),
        ("target", esc(tgt.get("title") or tgt.get("name"))),
        ("mode", esc(plan.get("mode"))),
        ("options", esc(", ".join(f"{k} = {x}" for k, x in (plan.get("options") or {}).items()) or "none")),
        ("output folder", esc(d.get("output_dir"))),
        *((f"time: {k}", x) for k, x in rows(d.get("timings") or {})),
    ]
    for s in stages:
        for vendor, cmds in (s.get("vendor") or {}).items():
            for k, cmd in (cmds or {}).items():
                details.append((f"{s.get('name')}: {label(k)} ({vendor})", f"<code>{esc(cmd)}</code>"))
    body += '<section id="plan"><h2>Plan details</h2>' + kv_table(details)
    if plan.get("warnings"):
        body += (
            "<h3>Warnings</h3><ul>" + "".join(f'<li class="warn">{more(w)}</li>' for w in plan["warnings"]) + "</ul>"
        )
    body += "</section>"
    return page(
        f"npufit split: {src.get('file', '')} → {tgt.get('name', '')}",
        f"{esc(src.get('file', ''))} · target {esc(tgt.get('title') or tgt.get('name', ''))} "
        f"· mode {esc(plan.get('mode', ''))}",
        body,
    )


def collapse_rows(items: list[tuple[tuple, str]]) -> list[tuple[tuple, list[str]]]:
    """(key, name) pairs -> (key, names) in first-seen order: rows that say the same thing are shown once
    ("ort-cuda: skipped … × 8")."""
    out: dict[tuple, list[str]] = {}
    for key, name in items:
        out.setdefault(key, []).append(name)
    return list(out.items())


def times(names: list[str]) -> str:
    """`a` or `a, b × 2` for the name column of a collapsed row."""
    return esc(", ".join(dict.fromkeys(names))) + (
        f' <span class="times">× {len(names)}</span>' if len(names) > 1 else ""
    )


def render_bench_html(d: dict[str, Any]) -> str:
    rows_, lat, tput, other = [], [], [], []
    for r in d.get("results", []):
        L = r.get("latency_ms") or {}
        name = r.get("runtime", "?")
        if r.get("status") != "ok":
            other.append(((r.get("status"), r.get("reason") or ""), name))
            continue
        if L:
            lat.append((name, L.get("p50", 0.0)))
            tput.append((name, r.get("throughput_ips") or 0.0))
        rows_.append(
            [
                esc(name),
                '<span class="st-ok">ok</span>',
                esc(r.get("boundary")),
                *[num(L.get(k)) for k in ("p50", "p90", "p99", "mean", "max")],
                num(r.get("throughput_ips")),
                num(r.get("cold_ms")),
                more(r.get("reason") or "", 160),
            ]
        )
    for (status, reason), names in collapse_rows(other):
        rows_.append(
            [times(names), f'<span class="st-{esc(status)}">{esc(status)}</span>', "", *["-"] * 7, more(reason, 160)]
        )
    body = (
        '<section id="results"><h2>Latency and throughput</h2>'
        + table(
            [
                "runtime",
                "status",
                "what the time includes",
                "p50 ms",
                "p90 ms",
                "p99 ms",
                "mean ms",
                "max ms",
                "inferences/s",
                "first call ms",
                "note",
            ],
            rows_,
            num_cols=range(3, 10),
        )
        + '<div class="grid2">'
        + bar_chart(lat, "ms", "p50 latency (lower is better)")
        + bar_chart(tput, "inferences/s", "throughput (higher is better)")
        + "</div></section>"
    )
    body += '<section id="protocol"><h2>How it was measured</h2>' + fields_html(d.get("protocol") or {})
    if d.get("inputs"):
        body += f"<p>Inputs: {esc(d['inputs'])}</p>"
    body += "</section>"
    warns = list(d.get("warnings", [])) + [
        f"{r.get('runtime')}: {w}" for r in d.get("results", []) for w in r.get("warnings", [])
    ]
    if warns:
        body += "<section><h2>Warnings</h2><ul>" + "".join(f"<li>{more(w)}</li>" for w in warns) + "</ul></section>"
    body += environment_section(d.get("environment") or {})
    model = d.get("model", {})
    name = (model.get("file") or model.get("path", "")) if isinstance(model, dict) else str(model)
    return page(f"npufit bench: {name}", esc(name), body)

"""`npufit split --format html` and `npufit bench --format html`: one self-contained page per result."""

from __future__ import annotations

from typing import Any

from .html import badge, environment_section, esc, page, table
from .html_charts import bar_chart
from .html_results import generic


def render_split_html(
    d: dict[str, Any], stage_view: dict[str, Any] | None = None, verification: tuple[str, list[list[str]]] | None = None
) -> str:
    """d: SplitResult.to_dict(); stage_view: SplitResult.stage_view() (the graph coloured by stage);
    verification: SplitResult.verification_view() (passed in: renderers sit below split in the layer order)."""
    from .html import graph_block

    plan = d.get("plan", {})
    stages = plan.get("stages", [])
    rows = []
    for s in stages:
        dev = badge("npu") if s.get("device") == "npu" else badge("cpu").replace(">cpu<", ">host<")
        ins = ", ".join(
            f"{i.get('name')} ← {i.get('from')}" if isinstance(i, dict) else str(i) for i in s.get("inputs", [])
        )
        outs = ", ".join(i.get("name") if isinstance(i, dict) else str(i) for i in s.get("outputs", []))
        rows.append([esc(s.get("name")), dev, esc(s.get("file")), esc(ins), esc(outs)])
    body = (
        '<section id="stages"><h2>Stages (execution order)</h2>'
        + table(["stage", "device", "file", "inputs", "outputs"], rows)
        + (f"<p>{esc(d['why'])}</p>" if d.get("why") else "")
        + "</section>"
    )
    if stage_view is not None:
        body += (
            '<section id="graph"><h2>Graph by stage (✂ marks the tensors that cross NPU ↔ host)</h2>'
            + graph_block(stage_view, "split")[0]
            + "</section>"
        )
    v = plan.get("verification")
    if v and verification:
        sentence, vrows = verification
        body += (
            '<section id="verification"><h2>Verification</h2>'
            + f'<p class="{"ok" if v["equivalent"] else "warn"}">{esc(sentence)}</p>'
            + table(
                [
                    "output",
                    "max abs (optimizations off)",
                    "max rel (optimizations off)",
                    "max abs (ORT_ENABLE_ALL)",
                    "max rel (ORT_ENABLE_ALL)",
                ],
                [[esc(c) for c in r] for r in vrows],
                num_cols=range(1, 5),
            )
            + "</section>"
        )
    cands = d.get("candidates", [])
    if cands:
        body += (
            f'<section id="candidates"><h2>Candidate cuts</h2><p class="note">{esc(d.get("ranking", ""))}</p>'
            + generic({"candidates": cands})
            + "</section>"
        )
    body += '<section id="plan"><h2>Plan details and verification</h2>' + generic(plan) + "</section>"
    src = plan.get("source", {}).get("file", "")
    tgt = plan.get("target", {}).get("name", "")
    return page(
        f"npufit split: {src} → {tgt}", f"{esc(src)} · target {esc(tgt)} · mode {esc(plan.get('mode', ''))}", body
    )


def render_bench_html(d: dict[str, Any]) -> str:
    rows, lat, tput = [], [], []
    for r in d.get("results", []):
        L = r.get("latency_ms") or {}
        name = r.get("runtime", "?")
        if r.get("status") == "ok" and L:
            lat.append((name, L.get("p50", 0.0)))
            tput.append((name, r.get("throughput_ips") or 0.0))
        rows.append(
            [
                esc(name),
                esc(r.get("status")),
                esc(r.get("boundary")),
                *[f"{L[k]:.4g}" if k in L else "-" for k in ("p50", "p90", "p99", "mean", "max")],
                f"{r['throughput_ips']:.4g}" if r.get("throughput_ips") else "-",
                esc(r.get("reason") or ""),
            ]
        )
    body = (
        '<section id="results"><h2>Latency and throughput</h2>'
        + table(
            ["runtime", "status", "boundary", "p50 ms", "p90 ms", "p99 ms", "mean ms", "max ms", "inf/s", "note"],
            rows,
            num_cols=range(3, 9),
        )
        + '<div class="grid2">'
        + bar_chart(lat, "ms", "p50 latency (lower is better)")
        + bar_chart(tput, "inf/s", "throughput (higher is better)")
        + "</div></section>"
    )
    body += (
        '<section id="protocol"><h2>Protocol</h2>'
        + generic({"protocol": d.get("protocol"), "inputs": d.get("inputs")})
        + "</section>"
    )
    if d.get("warnings") or any(r.get("warnings") for r in d.get("results", [])):
        warns = list(d.get("warnings", [])) + [
            f"{r.get('runtime')}: {w}" for r in d.get("results", []) for w in r.get("warnings", [])
        ]
        body += "<section><h2>Warnings</h2><ul>" + "".join(f"<li>{esc(w)}</li>" for w in warns) + "</ul></section>"
    body += environment_section(d.get("environment") or {})
    model = d.get("model", {})
    name = model.get("file") or model.get("path", "") if isinstance(model, dict) else str(model)
    return page(f"npufit bench: {name}", esc(name), body)

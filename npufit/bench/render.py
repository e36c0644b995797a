"""BenchResult -> terminal table and Markdown (the same rows for both)."""

from __future__ import annotations

from ..report.console import console_to_string
from ..report.style import human_bytes

COLUMNS = (
    "runtime",
    "boundary",
    "batch",
    "n",
    "p50 ms",
    "p90 ms",
    "p99 ms",
    "mean ± std ms",
    "min ms",
    "max ms",
    "inf/s",
    "cold ms",
    "build s",
    "peak mem (+added)",
)

STAGE_COLUMNS = ("stage", "device (ran on)", "p50 ms", "mean ms", "share of chain p50")


def fmt_ms(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:.3f}" if v < 10 else f"{v:.2f}" if v < 100 else f"{v:.1f}"


def result_row(r) -> list[str]:
    lat = r.latency_ms
    return [
        r.runtime,
        r.boundary,
        str(r.batch),
        str(r.iterations),
        fmt_ms(lat.get("p50")),  # a vendor tool's own figures may hold a mean only (hailortcli benchmark)
        fmt_ms(lat.get("p90")),
        fmt_ms(lat.get("p99")),
        f"{fmt_ms(lat.get('mean'))} ± {fmt_ms(lat.get('std'))}",
        fmt_ms(lat.get("min")),
        fmt_ms(lat.get("max")),
        f"{r.throughput_ips:,.1f}" if r.throughput_ips is not None else "-",
        fmt_ms(r.cold_ms),
        f"{r.build_s:.3f}" if r.build_s is not None else "-",
        _mem(r.memory),
    ]


def _mem(m: dict) -> str:
    """Peak RSS, and in brackets how much of it this runtime added over the RSS before it was built."""
    peak, before = m.get("peak_bytes"), m.get("rss_before_bytes")
    if not peak:
        return "-"
    return f"{human_bytes(peak)} (+{human_bytes(max(peak - before, 0))})" if before else human_bytes(peak)


def header_lines(res) -> list[str]:
    m, p, e = res.model, res.protocol, res.environment
    loop = f"{p['iterations']} iterations" if p.get("iterations") else f"{p.get('duration_s')} s"
    lines = [
        f"model: {m.get('path')}  sha256 {str(m.get('sha256', ''))[:16]}",
        f"protocol: {p.get('warmup')} warm-up + {loop}, batch {p.get('batch') or 1}, threads "
        f"{p.get('threads') or 'runtime default'}; inputs {p.get('inputs')}; source {res.inputs}",
        f"machine: {e.get('cpu_model')} ({e.get('cpu_logical_cores')} logical cores)"
        + (f", GPU {e['gpu']} driver {e['gpus'][0]['driver']}" if e.get("gpu") else ", no GPU"),
    ]
    return lines


def stage_rows(r) -> list[list[str]]:
    return [
        [
            s["name"],
            f"{s.get('device', '?')} ({s.get('ran_on', '?')})",
            fmt_ms(s["p50_ms"]),
            fmt_ms(s["mean_ms"]),
            f"{s['share_pct']:.1f}%",
        ]
        for s in r.stages
    ]


def _notes(res) -> list[str]:
    out = []
    for b in sorted({r.boundary for r in res.measured}):
        text = next(r.boundary_text for r in res.measured if r.boundary == b)
        out.append(f"boundary {b}: {text}")
    return out


def render_text(res) -> str:
    from rich.table import Table
    from rich.text import Text

    def draw(con):
        con.print(Text("npufit bench", style="bold"))
        for line in header_lines(res):
            con.print(line)
        if res.measured:
            t = Table(show_edge=False, pad_edge=False)
            for c in COLUMNS:
                t.add_column(c, justify="left" if c in ("runtime", "boundary") else "right")
            for r in res.measured:
                t.add_row(*result_row(r))
            con.print(t)
        for r in res.measured:
            if r.stages:
                st = Table(title=f"{r.runtime}: per-stage medians", show_edge=False, pad_edge=False)
                for c in STAGE_COLUMNS:
                    st.add_column(c, justify="left" if c in STAGE_COLUMNS[:2] else "right")
                for row in stage_rows(r):
                    st.add_row(*row)
                con.print(st)
        for r in res.results:
            if not r.ok:
                con.print(
                    Text(f"{r.status} {r.runtime}: {r.reason}", style="yellow" if r.status == "skipped" else "red")
                )
        for n in _notes(res):
            con.print(Text(n, style="dim"))
        for r in res.measured:
            for w in r.warnings:
                con.print(Text(f"warning ({r.runtime}): {w}", style="yellow"))
        for w in res.warnings:
            con.print(Text(f"warning: {w}", style="yellow"))

    return console_to_string(draw, width=160)


def md_table(columns, rows) -> str:
    out = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    out += ["| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |" for row in rows]
    return "\n".join(out)


def render_markdown(res) -> str:
    parts = ["## npufit bench", ""] + [f"- {line}" for line in header_lines(res)] + [""]
    if res.measured:
        parts += [md_table(COLUMNS, [result_row(r) for r in res.measured]), ""]
    for r in res.measured:
        if r.stages:
            parts += [f"**{r.runtime}: per-stage medians**", "", md_table(STAGE_COLUMNS, stage_rows(r)), ""]
    parts += [f"- {r.status} `{r.runtime}`: {r.reason}" for r in res.results if not r.ok]
    parts += [f"- {n}" for n in _notes(res)]
    parts += [f"- warning ({r.runtime}): {w}" for r in res.measured for w in r.warnings]
    parts += [f"- warning: {w}" for w in res.warnings]
    return "\n".join(parts).rstrip() + "\n"

"""Self-contained HTML: one file, inline CSS/JS/SVG, images as data URIs, nothing fetched when viewed.

`render_check_html(report)` is `npufit check --format html`; `npufit report` is html_results.build_report.
The page shell, table helper and the check sections here are shared by both.
"""

from __future__ import annotations

import base64
import os
from html import escape
from typing import Any, Iterable

from ..util.environment import environment
from ..util.readers import read_bytes_capped
from ..util.shapes import needed_lines
from .html_assets import CSS, JS
from .html_fields import label, rows, value
from .html_graph import graph_view, legend_html
from .html_reasons import fix_html, more, problem_groups, why_html
from .style import clip_path, human_bytes, human_count, shape_str


def esc(v: Any) -> str:
    return escape("" if v is None else str(v))


def table(
    headers: list[str],
    rows: Iterable[list[str]],
    table_id: str = "",
    num_cols: Iterable[int] = (),
    filterable: bool = False,
    cls: str = "",
) -> str:
    """Cells are HTML already (escape text with esc()); num_cols are right-aligned. Wide tables scroll sideways
    inside their own box instead of pushing the page wider."""
    nums = set(num_cols)
    rows = list(rows)
    if not rows:
        return '<p class="note">(none)</p>'
    head = "".join(f'<th class="num">{h}</th>' if i in nums else f"<th>{h}</th>" for i, h in enumerate(headers))
    body = "".join(
        "<tr>"
        + "".join(f'<td class="num">{c}</td>' if i in nums else f"<td>{c}</td>" for i, c in enumerate(r))
        + "</tr>"
        for r in rows
    )
    tid = f' id="{esc(table_id)}"' if table_id else ""
    tcls = f' class="{esc(cls)}"' if cls else ""
    flt = (
        f'<input class="filter" type="search" placeholder="filter rows…" data-table="{esc(table_id)}">'
        if filterable and table_id and len(rows) > 8
        else ""
    )
    thead = f"<thead><tr>{head}</tr></thead>" if any(headers) else ""
    return f'{flt}<div class="tablewrap"><table{tid}{tcls}>{thead}<tbody>{body}</tbody></table></div>'


def kv_table(pairs: Iterable[tuple[str, str]]) -> str:
    """Label / value rows (values are HTML already): plain words on the left, never raw field names."""
    return table(["", ""], ([esc(k), v] for k, v in pairs), cls="kv")


def cards(items: list[tuple[str, str]]) -> str:
    return (
        '<div class="cards">'
        + "".join(f'<div class="card"><div class="v">{v}</div><div class="k">{esc(k)}</div></div>' for k, v in items)
        + "</div>"
    )


def badge(verdict: str) -> str:
    return f'<span class="badge v-{esc(verdict)}">{esc(verdict)}</span>'


EMBED_MAX_BYTES = 32 << 20  # one embedded chart or overlay; a bigger file is a sign something is wrong


def data_uri(path: str | os.PathLike, mime: str = "image/png") -> str:
    return f"data:{mime};base64," + base64.b64encode(read_bytes_capped(path, EMBED_MAX_BYTES, "embedded file")).decode(
        "ascii"
    )


def page(title: str, subtitle: str, body: str, nav: list[tuple[str, str]] | None = None) -> str:
    links = "".join(f'<a href="#{esc(a)}">{esc(t)}</a>' for a, t in nav or [])
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{esc(title)}</title><style>{CSS}</style><script>{JS}</script></head><body>"
        f'<header><h1>{esc(title)}</h1><div class="sub">{subtitle}</div>'
        f"{f'<nav>{links}</nav>' if links else ''}</header>"
        f'<main>{body}<pre id="js-errors" class="err"></pre></main></body></html>\n'
    )


# -- a single check ------------------------------------------------------------------------------------------
def graph_block(d: dict[str, Any], anchor: str) -> tuple[str, dict[str, str]]:
    """The legend and the graph view (toolbar, graph, side panel) of a check-shaped dict (check report or split
    view); and node name -> the id of its element in the graph, for jump links."""
    html, ids = graph_view(d, f"g-{anchor}", f"{d['model'].get('file', '')} on {d['target']['name']}")
    return legend_html() + html, ids


def problem_table(d: dict[str, Any], anchor: str, ids: dict[str, str]) -> str:
    """Every off-NPU node, grouped by shared reasons: the nodes (each a jump link into the graph), op, verdict, why
    and how to fix, with the full text of each reason (long ones open on click)."""
    groups = problem_groups(d)
    tgt = d["target"]["name"]
    model = d["model"].get("path") or d["model"].get("file", "")
    rows = []
    for g in groups:
        links = [
            f'<a href="#{esc(ids[n])}">{esc(clip_path(n, 48))}</a>' if n in ids else esc(clip_path(n, 48))
            for n in g["nodes"]
        ]
        shown = "<br>".join(links[:6])
        if len(links) > 6:
            shown += f"<details><summary>{len(links) - 6:,} more</summary>{'<br>'.join(links[6:])}</details>"
        count = f'<span class="times">× {len(links):,}</span><br>' if len(links) > 1 else ""
        rows.append(
            [
                f'<span class="nodes">{count}{shown}</span>',
                esc(g["op"]),
                badge(g["verdict"]),
                why_html(g),
                fix_html(g, tgt, model, d["model"].get("input_shapes")),
            ]
        )
    n = sum(len(g["nodes"]) for g in groups)
    return f"<h4>Nodes off the NPU ({n:,})</h4>" + table(
        ["nodes", "op", "verdict", "why", "how to fix"], rows, f"fail-{anchor}", filterable=True
    )


def check_sections(d: dict[str, Any], anchor: str = "check", heading: str = "") -> str:
    """Coverage cards, the graph, failing nodes with reasons and fixes, partitions, boundaries, warnings."""
    s = d["summary"]
    c = s["counts"]
    out = [f"<h3>{esc(heading)}</h3>" if heading else ""]
    placed = (d.get("placement") or {}).get("headline")
    if isinstance(placed, str):  # whose placement the figures are: the compiler's, or npufit's prediction and why
        out.append(f'<p class="placement">{esc(placed)}</p>')
    if s.get("shapes_needed"):  # every figure would rest on a guess: the headline asks for the shape instead
        return "".join(out) + "".join(
            f"<p><strong>{esc(line)}</strong></p>" for line in needed_lines(s["shapes_needed"])
        )
    out.append(
        cards(
            [
                ("nodes on the NPU", f"{s['coverage_nodes_pct']:.1f}%"),
                ("MACs on the NPU", f"{s['coverage_macs_pct']:.1f}%"),
                (
                    "NPU / CPU / unsupported nodes",
                    f"{c.get('npu', 0):,} / {c.get('cpu', 0):,} / {c.get('unsupported', 0):,}",
                ),
                ("NPU / host partitions", f"{s['npu_partitions']:,} / {s['host_partitions']:,}"),
                ("cut points", f"{s['boundaries']:,} ({human_bytes(s['boundary_bytes'])})"),
                (
                    "NPU prefix",
                    f"{d['prefix'].get('node_count', 0):,} nodes"
                    + (f", {d['prefix']['macs_pct']:.0f}% MACs" if d["prefix"].get("macs_pct") is not None else ""),
                ),
            ]
        )
    )
    graph, ids = graph_block(d, anchor)
    out.append(
        '<h4>Graph <span class="note">(constants and shape arithmetic left out; click a node for its details, '
        f"a folded chain to open it)</span></h4>{graph}"
    )
    out.append(problem_table(d, anchor, ids))
    out.append("<h4>Partitions</h4>")
    out.append(
        table(
            ["partition", "device", "nodes", "MACs", "inputs", "outputs"],
            [
                [
                    esc(p["id"]),
                    badge("npu").replace(">npu<", ">NPU<")
                    if p["device"] == "npu"
                    else badge("cpu").replace(">cpu<", ">host<"),
                    f"{p['node_count']:,}",
                    esc(human_count(p["macs"])),
                    _names(p["inputs"]),
                    _names(p["outputs"]),
                ]
                for p in d["partitions"]
            ],
            num_cols=(2, 3),
        )
    )
    if d["boundaries"]:
        out.append("<h4>Cut points (tensors crossing NPU ↔ host)</h4>")
        out.append(
            table(
                ["tensor", "shape", "type", "size", "from", "to", "direction"],
                [
                    [
                        esc(b["tensor"]),
                        esc(shape_str(b["shape"])),
                        esc(b["dtype"]),
                        esc(human_bytes(b["bytes"])),
                        esc(b["from"]),
                        esc(b["to"]),
                        esc(b["direction"]).replace("-&gt;", "→"),
                    ]
                    for b in d["boundaries"]
                ],
                num_cols=(3,),
            )
        )
    if d["prefix"].get("end_nodes"):
        out.append(
            f"<p>Largest NPU prefix: starts at <code>{esc(', '.join(d['prefix']['start_nodes']))}</code>, "
            f"ends at <code>{esc(', '.join(d['prefix']['end_nodes']))}</code></p>"
        )
    if d.get("warnings"):
        out.append(
            "<h4>Warnings</h4><ul>" + "".join(f'<li class="warn">{more(w)}</li>' for w in d["warnings"]) + "</ul>"
        )
    return "".join(out)


def _names(names: list[str], first: int = 6) -> str:
    """A list of tensor names: the first few, the rest behind a click."""
    shown = esc(", ".join(names[:first]))
    if len(names) > first:
        rest = esc(", ".join(names[first:]))
        shown += f'<details class="more"><summary>, … ({len(names) - first:,} more)</summary>, {rest}</details>'
    return shown


def records_table(records: list[dict[str, Any]], limit: int = 40) -> str:
    """A list of records as one table with labelled columns (scalar fields only; first `limit` rows)."""
    cols = [
        c
        for c in dict.fromkeys(k for r in records for k in r)
        if all(not isinstance(r.get(c), (dict, list)) for r in records)
    ]
    nums = [
        i
        for i, c in enumerate(cols)
        if any(isinstance(r.get(c), (int, float)) and not isinstance(r.get(c), bool) for r in records)
    ]
    body = [[value(r.get(c), c) for c in cols] for r in records[:limit]]
    rest = (
        f'<p class="note">… {len(records) - limit:,} more rows in the JSON result.</p>' if len(records) > limit else ""
    )
    return table([escape(label(c)) for c in cols], body, num_cols=nums) + rest


def fields_html(d: dict[str, Any] | None, skip: tuple[str, ...] = ()) -> str:
    """A result as a label / value table, then each list of records as its own titled table."""
    if not d:
        return ""
    out = [kv_table(rows(d, skip))]
    for k, v in d.items():
        if k not in skip and isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            out.append(f"<h5>{escape(label(k))}</h5>{records_table(v)}")
    return "".join(out)


def environment_section(env: dict[str, Any]) -> str:
    return '<section id="environment"><h2>Environment</h2>' + fields_html(env) + "</section>"


def render_check_html(report) -> str:
    """`npufit check --format html`: one page for one model on one target."""
    d = report.to_dict() if hasattr(report, "to_dict") else report
    tgt = d["target"]
    sub = (
        f"{esc(d['model'].get('file', ''))} on {esc(tgt.get('title') or tgt['name'])} "
        f"· npufit {esc(d.get('npufit_version', ''))}"
    )
    body = f'<section id="check"><h2>Placement</h2>{check_sections(d, "check")}</section>' + environment_section(
        environment()
    )
    return page(f"npufit check: {d['model'].get('file', '')} → {tgt['name']}", sub, body)

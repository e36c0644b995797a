"""Self-contained HTML: one file, inline CSS/JS/SVG, images as data URIs, nothing fetched when viewed.

`render_check_html(report)` is `npufit check --format html`; `npufit report` is html_results.build_report.
The page shell, table helper and the check sections here are shared by both.
"""

from __future__ import annotations

import base64
import os
from html import escape
from typing import Any, Iterable

from .html_graph import graph_views, legend_html
from .style import human_bytes, human_count, shape_str

CSS = """
:root{--fg:#1f2933;--muted:#616e7c;--line:#e4e7eb;--bg:#f5f7fa;--card:#fff;--accent:#3867d6}
*{box-sizing:border-box}body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
header{background:#1f2933;color:#fff;padding:18px 28px}header h1{margin:0;font-size:22px}header .sub{color:#cbd2d9;margin-top:4px}
main{padding:18px 28px;max-width:1500px}section{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:16px 20px;margin:0 0 18px}
h2{font-size:18px;margin:0 0 10px}h3{font-size:15px;margin:16px 0 8px}h4{font-size:14px;margin:12px 0 6px;color:var(--muted)}
table{border-collapse:collapse;margin:6px 0 10px;font-size:13px}th,td{border-bottom:1px solid var(--line);padding:5px 10px;text-align:left;vertical-align:top}
th{background:#f0f4f8;font-weight:600;position:sticky;top:0}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
.cards{display:flex;flex-wrap:wrap;gap:10px;margin:6px 0 12px}.card{border:1px solid var(--line);border-radius:6px;padding:8px 14px;min-width:120px;background:#fbfcfd}
.card .v{font-size:20px;font-weight:650}.card .k{color:var(--muted);font-size:12px}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;font-weight:600;color:#fff}
.v-npu{--c:#2e9d57}.v-cpu{--c:#d9a400}.v-unsupported{--c:#d64545}.v-folded{--c:#9aa0a6}.badge.v-npu,.badge.v-cpu,.badge.v-unsupported,.badge.v-folded{background:var(--c)}
.st-ok,.st-ran{color:#2e9d57;font-weight:600}.st-failed{color:#d64545;font-weight:600}.st-skipped{color:#b7791f}.st-rejected{color:#8854d0;font-weight:600}.st-cached,.st-kept{color:#3867d6}
.graphbox{overflow:auto;max-height:720px;border:1px solid var(--line);border-radius:6px;background:#fcfdfe}
svg.graph .edge{fill:none;stroke:#9aa5b1;stroke-width:1.3}svg.graph .edge.cut{stroke:#d64545;stroke-width:2.4;stroke-dasharray:6 4}
svg.graph .node rect{stroke:#1f2933;stroke-opacity:.25}svg.graph .node.v-io rect{fill:#e8ecef}svg.graph text{text-anchor:middle;font-size:11px}
svg.graph .op{font-weight:650}svg.graph .nm{font-size:9px;opacity:.85}svg.graph .cut-mark circle{fill:#fff;stroke:#d64545;stroke-width:2}
svg.graph .cut-mark text{fill:#d64545;font-size:12px}svg.graph .node:hover rect{stroke-opacity:1;stroke-width:2}
.legend{margin:6px 0;color:var(--muted)}.chip{display:inline-block;width:12px;height:12px;border-radius:3px;margin:0 4px 0 10px;vertical-align:-1px}
.cutchip{color:#d64545;margin-left:12px}svg.chart text{font-size:11px;fill:#3e4c59}svg.chart .ctitle{font-weight:650;font-size:12px}
svg.chart .blabel{text-anchor:end}svg.chart .plotbg{fill:#fbfcfd;stroke:#e4e7eb}svg.chart .grid{stroke:#e4e7eb}
.note{color:var(--muted)}.warn{color:#b7791f}.err{color:#d64545}code{background:#f0f4f8;padding:0 4px;border-radius:3px}
details>summary{cursor:pointer;font-weight:600;margin:6px 0}.filter{margin:4px 0 6px;padding:4px 8px;border:1px solid var(--line);border-radius:4px;width:260px}
.zoom button,.views button{margin-right:4px}.views button.on{font-weight:700}svg.graph .node.group{cursor:pointer}
svg.graph .node.group rect{stroke-dasharray:4 2;stroke-opacity:.8}svg.graph .node.flash rect{stroke:#1f6feb;stroke-width:4;stroke-opacity:1}
svg.graph .bandlabel{text-anchor:start;font-size:9px;fill:#52606d}.grid2{display:flex;flex-wrap:wrap;gap:18px}nav a{margin-right:14px;color:#cbd2d9}
"""

JS = """
window.__npufitErrors=[];window.addEventListener('error',function(e){window.__npufitErrors.push(String(e.message));
 var p=document.getElementById('js-errors');if(p){p.textContent=window.__npufitErrors.join('\\n');}});
document.addEventListener('DOMContentLoaded',function(){
 document.querySelectorAll('input.filter').forEach(function(inp){
  var t=document.getElementById(inp.dataset.table);if(!t)return;
  inp.addEventListener('input',function(){var q=inp.value.toLowerCase();
   t.querySelectorAll('tbody tr').forEach(function(r){r.style.display=r.textContent.toLowerCase().indexOf(q)>=0?'':'none';});});});
 function scale(svg,s){if(!svg.dataset.w){svg.dataset.w=svg.getAttribute('width');svg.dataset.h=svg.getAttribute('height');}
  svg.dataset.s=s;svg.setAttribute('width',svg.dataset.w*s);svg.setAttribute('height',svg.dataset.h*s);}
 function fit(svg){var box=svg.parentNode;if(!box.clientWidth)return;
  scale(svg,Math.max(0.25,Math.min(1,box.clientWidth/svg.dataset.w,(box.clientHeight||700)/svg.dataset.h)));}
 function firstProblem(svg){var n=svg.querySelector('.node.v-unsupported,.node.v-cpu');if(!n)return;var box=svg.parentNode;
  var r=n.getBoundingClientRect(),b=box.getBoundingClientRect();box.scrollTop+=r.top-b.top-box.clientHeight/3;box.scrollLeft+=r.left-b.left-box.clientWidth/3;}
 function show(views,which,node){views.querySelectorAll('.gview').forEach(function(v){v.hidden=v.dataset.view!==which;});
  views.querySelectorAll('.views button').forEach(function(b){b.classList.toggle('on',b.dataset.show===which);});
  var svg=views.querySelector('.gview[data-view="'+which+'"] svg');if(!svg)return;if(!svg.dataset.s){scale(svg,1);fit(svg);}
  var t=node?svg.querySelector('[data-node="'+CSS.escape(node)+'"]'):null;
  if(t){t.classList.add('flash');t.scrollIntoView({block:'center',inline:'center'});}else{firstProblem(svg);}}
 document.querySelectorAll('.gviews').forEach(function(views){
  views.querySelectorAll('.views button').forEach(function(b){b.addEventListener('click',function(){show(views,b.dataset.show);});});
  views.querySelectorAll('.node.group').forEach(function(g){g.addEventListener('click',function(){show(views,'full',g.dataset.node);});});
  var first=views.querySelector('.gview:not([hidden])');if(first)show(views,first.dataset.view);});
 document.querySelectorAll('.zoom').forEach(function(z){
  var views=z.nextElementSibling;if(!views)return;
  z.querySelectorAll('button').forEach(function(b){b.addEventListener('click',function(){
   var svg=views.querySelector('.gview:not([hidden]) svg');if(!svg)return;
   if(b.dataset.z==='fit'){fit(svg);}else{scale(svg,Math.max(0.1,Math.min(4,(svg.dataset.s||1)*(b.dataset.z==='in'?1.25:0.8))));}});});});
 document.body.setAttribute('data-ready','1');
});
"""


def esc(v: Any) -> str:
    return escape("" if v is None else str(v))


def table(
    headers: list[str],
    rows: Iterable[list[str]],
    table_id: str = "",
    num_cols: Iterable[int] = (),
    filterable: bool = False,
) -> str:
    """Cells are HTML already (escape text with esc()); num_cols are right-aligned."""
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
    flt = (
        f'<input class="filter" type="search" placeholder="filter rows…" data-table="{esc(table_id)}">'
        if filterable and table_id and len(rows) > 8
        else ""
    )
    return f"{flt}<table{tid}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


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
    from ..util.readers import read_bytes_capped

    return f"data:{mime};base64," + base64.b64encode(read_bytes_capped(path, EMBED_MAX_BYTES, "embedded file")).decode(
        "ascii"
    )


def page(title: str, subtitle: str, body: str, nav: list[tuple[str, str]] | None = None) -> str:
    links = "".join(f'<a href="#{esc(a)}">{esc(t)}</a>' for a, t in nav or [])
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{esc(title)}</title><style>{CSS}</style><script>{JS}</script></head><body>"
        f'<header><h1>{esc(title)}</h1><div class="sub">{subtitle}</div>{f"<nav>{links}</nav>" if links else ""}</header>'
        f'<main>{body}<pre id="js-errors" class="err"></pre></main></body></html>\n'
    )


# -- a single check ------------------------------------------------------------------------------------------
def graph_block(d: dict[str, Any], anchor: str) -> str:
    """The legend, zoom buttons and the graph SVG of a check-shaped dict (check report or split stage view)."""
    gid = f"g-{anchor}"
    views = graph_views(d, gid, f"{d['model'].get('file', '')} on {d['target']['name']}")
    return (
        f'{legend_html()}<div class="zoom" data-graph="{esc(gid)}"><button data-z="in">zoom +</button>'
        f'<button data-z="out">zoom −</button><button data-z="fit">fit</button></div>{views}'
    )


def check_sections(d: dict[str, Any], anchor: str = "check", heading: str = "") -> str:
    """Coverage cards, the graph, failing nodes with reasons and fixes, partitions, boundaries, warnings."""
    s, tgt = d["summary"], d["target"]
    c = s["counts"]
    out = [f"<h3>{esc(heading)}</h3>" if heading else ""]
    out.append(
        cards(
            [
                ("nodes on the NPU", f"{s['coverage_nodes_pct']:.1f}%"),
                ("MACs on the NPU", f"{s['coverage_macs_pct']:.1f}%"),
                ("npu / cpu / unsupported", f"{c.get('npu', 0)} / {c.get('cpu', 0)} / {c.get('unsupported', 0)}"),
                ("NPU / host partitions", f"{s['npu_partitions']} / {s['host_partitions']}"),
                ("boundary tensors", f"{s['boundaries']} ({human_bytes(s['boundary_bytes'])})"),
                (
                    "NPU prefix",
                    f"{d['prefix'].get('node_count', 0)} nodes"
                    + (f", {d['prefix']['macs_pct']:.0f}% MACs" if d["prefix"].get("macs_pct") is not None else ""),
                ),
            ]
        )
    )
    out.append(f"<h4>Graph (folded nodes hidden; hover a node for its reasons)</h4>{graph_block(d, anchor)}")
    failing = [n for n in d["nodes"] if n["verdict"] in ("cpu", "unsupported")]
    out.append(f"<h4>Nodes off the NPU ({len(failing)})</h4>")
    rows = []
    for n in failing:
        reasons = "<br>".join(
            esc(r["text"]) + (f' <span class="note">({esc(r["detail"])})</span>' if r.get("detail") else "")
            for r in n["reasons"]
        )
        fixes = [f for r in n["reasons"] for f in r.get("fix", [])]
        rules = sorted({f for r in n["reasons"] for f in r.get("fix_rules", [])})
        fix_html = "<br>".join(esc(f) for f in dict.fromkeys(fixes))
        if rules:
            fix_html += f"<br><code>npufit fix --target {esc(tgt['name'])} --rules {esc(','.join(rules))}</code>"
        rows.append(
            [
                esc(n["name"]),
                esc(n["op_type"]),
                badge(n["verdict"]),
                reasons or '<span class="note">-</span>',
                fix_html,
                esc(n.get("partition", "")),
            ]
        )
    out.append(
        table(["node", "op", "verdict", "why", "how to fix", "partition"], rows, f"fail-{anchor}", filterable=True)
    )
    out.append("<h4>Partitions</h4>")
    out.append(
        table(
            ["id", "device", "nodes", "MACs", "inputs", "outputs"],
            [
                [
                    esc(p["id"]),
                    badge("npu") if p["device"] == "npu" else badge("cpu").replace(">cpu<", ">host<"),
                    esc(p["node_count"]),
                    esc(human_count(p["macs"])),
                    esc(", ".join(p["inputs"][:6])),
                    esc(", ".join(p["outputs"][:6])),
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
                ["tensor", "shape", "dtype", "bytes", "from", "to", "direction"],
                [
                    [
                        esc(b["tensor"]),
                        esc(shape_str(b["shape"])),
                        esc(b["dtype"]),
                        esc(human_bytes(b["bytes"])),
                        esc(b["from"]),
                        esc(b["to"]),
                        esc(b["direction"]),
                    ]
                    for b in d["boundaries"]
                ],
                num_cols=(3,),
            )
        )
    if d["prefix"].get("end_nodes"):
        out.append(
            f"<p>Largest NPU prefix: start nodes <code>{esc(','.join(d['prefix']['start_nodes']))}</code>, "
            f"end nodes <code>{esc(','.join(d['prefix']['end_nodes']))}</code></p>"
        )
    if d.get("warnings"):
        out.append(
            "<h4>Warnings</h4><ul>" + "".join(f'<li class="warn">{esc(w)}</li>' for w in d["warnings"]) + "</ul>"
        )
    return "".join(out)


def environment_section(env: dict[str, Any]) -> str:
    rows = [[esc(k), esc(v)] for k, v in env.items() if k not in ("packages", "gpus")]
    rows.append(["GPUs", esc("; ".join(env.get("gpus") or []) or "none")])
    rows += [[esc(k), esc(v)] for k, v in (env.get("packages") or {}).items()]
    return '<section id="environment"><h2>Environment</h2>' + table(["", ""], rows) + "</section>"


def render_check_html(report) -> str:
    """`npufit check --format html`: one page for one model on one target."""
    from ..util.environment import environment

    d = report.to_dict() if hasattr(report, "to_dict") else report
    tgt = d["target"]
    sub = f"{esc(d['model'].get('file', ''))} on {esc(tgt.get('title') or tgt['name'])} · npufit {esc(d.get('npufit_version', ''))}"
    body = f'<section id="check"><h2>Placement</h2>{check_sections(d, "check")}</section>' + environment_section(
        environment()
    )
    return page(f"npufit check: {d['model'].get('file', '')} → {tgt['name']}", sub, body)

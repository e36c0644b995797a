"""The model graph as an inline SVG: a layered DAG drawn from a check report, coloured by verdict.

Layout (no JS, no Graphviz): a node's layer is its longest-path depth from the inputs; within a layer,
nodes are ordered by the mean position of their neighbours (two down/up barycenter sweeps, the classic
Sugiyama heuristic) to keep edges short. Folded nodes (constants, shape arithmetic) are left out: no
device runs them. Edges where execution moves between the NPU and the host are drawn red and dashed
with a scissors mark: those are the cut points a split makes.
"""
from __future__ import annotations

from html import escape
from typing import Any

from .style import VERDICT_COLOR_HEX

W, H, GX, GY, PAD = 138, 36, 16, 46, 24
TEXT_ON = {"npu": "#ffffff", "unsupported": "#ffffff", "cpu": "#1d1d1d", "folded": "#1d1d1d", "io": "#1d1d1d"}
MAX_NODES = 1500


def _short(s: str, n: int) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


def _layout(names: list[str], preds: dict[str, list[str]], succs: dict[str, list[str]]) -> dict[str, tuple[int, int]]:
    """name -> (layer, slot)."""
    depth: dict[str, int] = {}
    for n in names:  # names are in topological order
        depth[n] = max((depth[p] + 1 for p in preds[n] if p in depth), default=0)
    layers: dict[int, list[str]] = {}
    for n in names:
        layers.setdefault(depth[n], []).append(n)
    pos = {n: i for layer in layers.values() for i, n in enumerate(layer)}

    def sweep(order: list[int], nbrs: dict[str, list[str]]) -> None:
        for d in order:
            layer = layers[d]
            def bary(n: str) -> float:
                ps = [pos[p] for p in nbrs[n] if p in pos]
                return sum(ps) / len(ps) if ps else pos[n]
            layer.sort(key=bary)
            for i, n in enumerate(layer):
                pos[n] = i

    keys = sorted(layers)
    for _ in range(2):
        sweep(keys[1:], preds)
        sweep(list(reversed(keys[:-1])), succs)
    return {n: (depth[n], pos[n]) for n in names}


def graph_svg(check: dict[str, Any], title: str = "") -> str:
    """check: CheckReport.to_dict(). Returns an <svg> element (plus a note when the graph was truncated)."""
    nodes = [n for n in check["nodes"] if not n.get("parent") and n["verdict"] != "folded"]
    note = ""
    if len(nodes) > MAX_NODES:
        note = f'<p class="note">Graph truncated: the first {MAX_NODES} of {len(nodes)} running nodes are drawn.</p>'
        nodes = nodes[:MAX_NODES]
    info: dict[str, dict] = {n["name"]: n for n in nodes}
    device = {p["id"]: p["device"] for p in check.get("partitions", [])}
    producer = {t: n["name"] for n in nodes for t in n.get("outputs", []) if t}
    preds: dict[str, list[str]] = {}
    succs: dict[str, list[str]] = {}
    edges: list[tuple[str, str, str]] = []
    names: list[str] = []
    for t in check["model"].get("inputs", []):
        io = f"in:{t['name']}"
        info[io] = {"name": t["name"], "op_type": "input", "verdict": "io", "shape": t.get("shape")}
        producer.setdefault(t["name"], io)
        names.append(io)
    names += [n["name"] for n in nodes]
    for t in check["model"].get("outputs", []):
        io = f"out:{t['name']}"
        info[io] = {"name": t["name"], "op_type": "output", "verdict": "io", "shape": t.get("shape"), "inputs": [t["name"]]}
        names.append(io)
    for n in names:
        preds.setdefault(n, [])
        succs.setdefault(n, [])
    for n in names:
        for t in info[n].get("inputs", []) if not n.startswith("in:") else []:
            p = producer.get(t)
            if p and p != n and p not in preds[n]:
                preds[n].append(p)
                succs[p].append(n)
                edges.append((p, n, t))
    place = _layout(names, preds, succs)
    layer_sizes: dict[int, int] = {}
    for d, _ in place.values():
        layer_sizes[d] = layer_sizes.get(d, 0) + 1
    width = max(layer_sizes.values(), default=1) * (W + GX) - GX + 2 * PAD
    height = (max(layer_sizes, default=0) + 1) * (H + GY) - GY + 2 * PAD
    xy = {}
    for n, (d, i) in place.items():
        row_w = layer_sizes[d] * (W + GX) - GX
        xy[n] = ((width - row_w) / 2 + i * (W + GX), PAD + d * (H + GY))
    boundary = {b["tensor"]: b for b in check.get("boundaries", [])}

    def dev(n: str) -> str | None:
        part = info[n].get("partition")
        return device.get(part) if part is not None else None

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="graph" width="{width:.0f}" height="{height:.0f}" '
           f'viewBox="0 0 {width:.0f} {height:.0f}" role="img" aria-label="{escape(title or "model graph")}">',
           '<defs><marker id="arrow" viewBox="0 0 8 8" refX="8" refY="4" markerWidth="7" markerHeight="7" orient="auto">'
           '<path d="M0,0 L8,4 L0,8 z" fill="#7b8794"/></marker></defs>']
    cuts = []
    for src, dst, tensor in edges:
        (x1, y1), (x2, y2) = xy[src], xy[dst]
        sx, sy, tx, ty = x1 + W / 2, y1 + H, x2 + W / 2, y2
        cy = (sy + ty) / 2
        is_cut = dev(src) is not None and dev(dst) is not None and dev(src) != dev(dst)
        cls = "edge cut" if is_cut else "edge"
        out.append(f'<path class="{cls}" d="M{sx:.1f},{sy:.1f} C{sx:.1f},{cy:.1f} {tx:.1f},{cy:.1f} {tx:.1f},{ty:.1f}" '
                   f'marker-end="url(#arrow)"><title>{escape(tensor)}</title></path>')
        if is_cut:
            b = boundary.get(tensor, {})
            tip = f"cut: {tensor} {b.get('shape') or ''} {b.get('bytes') or ''} bytes ({dev(src)} -> {dev(dst)})"
            cuts.append(f'<g class="cut-mark"><circle cx="{(sx + tx) / 2:.1f}" cy="{cy:.1f}" r="9"/>'
                        f'<text x="{(sx + tx) / 2:.1f}" y="{cy + 4:.1f}">✂</text><title>{escape(tip)}</title></g>')
    out += cuts
    for n in names:
        x, y = xy[n]
        d = info[n]
        v = d["verdict"]
        fill = VERDICT_COLOR_HEX.get(v, "#e8ecef")
        tip = [d["name"], f"{d['op_type']} — {v if v != 'io' else 'model ' + d['op_type']}"]
        if d.get("partition") is not None:
            tip.append(f"partition {d['partition']} ({dev(n)})")
        for r in d.get("reasons", []):
            tip.append(f"• {r['text']}" + (f" ({r['detail']})" if r.get("detail") else ""))
        rx = 17 if v == "io" else 5
        label = d["op_type"] if v != "io" else d["name"]
        sub = d["name"] if v != "io" else ("[" + ",".join(str(s) for s in (d.get("shape") or [])) + "]")
        out.append(f'<g class="node v-{v}" data-node="{escape(d["name"])}"><title>{escape(chr(10).join(tip))}</title>'
                   f'<rect x="{x:.1f}" y="{y:.1f}" width="{W}" height="{H}" rx="{rx}" fill="{fill}"/>'
                   f'<text x="{x + W / 2:.1f}" y="{y + 15:.1f}" fill="{TEXT_ON.get(v, "#fff")}" class="op">{escape(_short(label, 20))}</text>'
                   f'<text x="{x + W / 2:.1f}" y="{y + 29:.1f}" fill="{TEXT_ON.get(v, "#fff")}" class="nm">{escape(_short(sub, 24))}</text></g>')
    out.append("</svg>")
    return note + "".join(out)


def legend_html() -> str:
    items = [("npu", "runs on the NPU"), ("cpu", "falls back to the host CPU"), ("unsupported", "unsupported: must be cut away or rewritten")]
    chips = "".join(f'<span class="chip" style="background:{VERDICT_COLOR_HEX[v]}"></span>{escape(t)} ' for v, t in items)
    return f'<div class="legend">{chips}<span class="cutchip">✂</span> cut point (NPU ↔ host)</div>'

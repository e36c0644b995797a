"""The model graph as inline SVG: a layered DAG drawn from a check report, coloured by verdict.

Two views of one graph. The overview collapses every straight chain of nodes that share a partition into one box
("Conv ×3 · Relu ×3, 6 nodes"), so a whole detector fits the page and a red node is never hundreds of rows down;
clicking a box opens the full view at its first node. Layout (no JS library, no Graphviz): a node's layer is its
longest-path depth; an edge that skips layers gets a thin placeholder in each layer it crosses (Sugiyama's dummy
nodes), so it is routed through the gaps instead of across the boxes; within a layer, nodes are ordered by the mean
position of their neighbours (barycenter sweeps). Each partition is a tinted band behind its nodes. Folded nodes
(constants, shape arithmetic) are left out: no device runs them. Edges where execution moves between the NPU and
the host are red and dashed with a scissors mark: the cut points a split makes.
"""

from __future__ import annotations

from collections import Counter
from html import escape
from typing import Any

from .style import VERDICT_COLOR_HEX

W, H, GX, GY, PAD, DW = 138, 36, 16, 46, 24, 10  # box size, gaps, margin, width of an edge's placeholder
TEXT_ON = {"npu": "#ffffff", "unsupported": "#ffffff", "cpu": "#1d1d1d", "folded": "#1d1d1d", "io": "#1d1d1d"}
BAND = {"npu": "#2e9d57", "host": "#d9a400"}
MAX_NODES = 1500
_WORST = {"io": 0, "npu": 1, "folded": 1, "cpu": 2, "unsupported": 3}


def _short(s: str, n: int) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


class _Graph:
    """Boxes (nodes, model inputs/outputs, or collapsed chains) and the edges between them, in topological order."""

    def __init__(self, check: dict[str, Any], nodes: list[dict]):
        self.info: dict[str, dict] = {n["name"]: n for n in nodes}
        self.device = {p["id"]: p["device"] for p in check.get("partitions", [])}
        producer = {t: n["name"] for n in nodes for t in n.get("outputs", []) if t}
        self.names: list[str] = []
        for t in check["model"].get("inputs", []):
            io = f"in:{t['name']}"
            self.info[io] = {"name": t["name"], "op_type": "input", "verdict": "io", "shape": t.get("shape")}
            producer.setdefault(t["name"], io)
            self.names.append(io)
        self.names += [n["name"] for n in nodes]
        for t in check["model"].get("outputs", []):
            io = f"out:{t['name']}"
            self.info[io] = {
                "name": t["name"],
                "op_type": "output",
                "verdict": "io",
                "shape": t.get("shape"),
                "inputs": [t["name"]],
            }
            self.names.append(io)
        self.preds: dict[str, list[str]] = {n: [] for n in self.names}
        self.succs: dict[str, list[str]] = {n: [] for n in self.names}
        self.edges: list[tuple[str, str, str]] = []
        for n in self.names:
            for t in self.info[n].get("inputs", []) if not n.startswith("in:") else []:
                p = producer.get(t)
                if p and p != n and p not in self.preds[n]:
                    self.preds[n].append(p)
                    self.succs[p].append(n)
                    self.edges.append((p, n, t))

    def dev(self, n: str) -> str | None:
        part = self.info[n].get("partition")
        return self.device.get(part) if part is not None else None

    def collapsed(self) -> "_Graph":
        """Straight chains (one producer, one consumer, same partition) merged into one box each."""
        group: dict[str, str] = {}
        members: dict[str, list[str]] = {}
        for n in self.names:
            ps = self.preds[n]
            p = ps[0] if len(ps) == 1 else None
            if (
                p is not None
                and self.info[n]["verdict"] != "io"
                and self.info[p]["verdict"] != "io"
                and len(self.succs[p]) == 1
                and self.info[n].get("partition") == self.info[p].get("partition")
            ):
                group[n] = group[p]
                members[group[p]].append(n)
            else:
                group[n] = n
                members[n] = [n]
        g = _Graph.__new__(_Graph)
        g.device = self.device
        g.names = [n for n in self.names if group[n] == n]
        g.info = {}
        for head in g.names:
            ms = members[head]
            if len(ms) == 1:
                g.info[head] = self.info[head]
                continue
            ops = Counter(self.info[m]["op_type"] for m in ms)
            label = " · ".join(f"{op} ×{k}" if k > 1 else op for op, k in ops.most_common(2)) + (
                " …" if len(ops) > 2 else ""
            )
            worst = max((self.info[m]["verdict"] for m in ms), key=_WORST.__getitem__)
            g.info[head] = {
                "name": head,
                "op_type": label,
                "verdict": worst,
                "partition": self.info[head].get("partition"),
                "members": ms,
                "sub": f"{len(ms)} nodes",
            }
        g.preds = {n: [] for n in g.names}
        g.succs = {n: [] for n in g.names}
        g.edges = []
        for src, dst, t in self.edges:
            a, b = group[src], group[dst]
            if a != b and a not in g.preds[b]:
                g.preds[b].append(a)
                g.succs[a].append(b)
                g.edges.append((a, b, t))
        return g


def _layout(g: _Graph) -> tuple[dict[str, tuple[int, int]], dict[tuple[str, str], list[str]], dict[int, list[str]]]:
    """(box -> (layer, slot), edge -> its placeholder ids, layer -> slot order incl. placeholders)."""
    depth: dict[str, int] = {}
    for n in g.names:  # topological order
        depth[n] = max((depth[p] + 1 for p in g.preds[n] if p in depth), default=0)
    layers: dict[int, list[str]] = {}
    for n in g.names:
        layers.setdefault(depth[n], []).append(n)
    up: dict[str, list[str]] = {n: list(g.preds[n]) for n in g.names}
    down: dict[str, list[str]] = {n: list(g.succs[n]) for n in g.names}
    dummies: dict[tuple[str, str], list[str]] = {}
    for src, dst, _ in g.edges:
        span = range(depth[src] + 1, depth[dst])
        if not span or (src, dst) in dummies:
            continue
        chain = [f"\0{src}\0{dst}\0{d}" for d in span]
        dummies[(src, dst)] = chain
        path = [src, *chain, dst]
        for d, item in zip(span, chain):
            layers[d].append(item)
        for a, b in zip(path, path[1:]):
            down.setdefault(a, []).append(b)
            up.setdefault(b, []).append(a)
    pos = {n: i for layer in layers.values() for i, n in enumerate(layer)}

    def sweep(order: list[int], nbrs: dict[str, list[str]]) -> None:
        for d in order:
            layer = layers[d]
            bary = {}
            for n in layer:
                ps = [pos[p] for p in nbrs.get(n, ()) if p in pos]
                bary[n] = sum(ps) / len(ps) if ps else pos[n]
            layer.sort(key=bary.__getitem__)
            for i, n in enumerate(layer):
                pos[n] = i

    keys = sorted(layers)
    for _ in range(2):
        sweep(keys[1:], up)
        sweep(list(reversed(keys[:-1])), down)
    return {n: (depth[n], pos[n]) for n in g.names}, dummies, layers


def _svg(g: _Graph, title: str, view: str, boundary: dict[str, dict]) -> str:
    place, dummies, layers = _layout(g)
    widths = {
        d: sum(DW if s.startswith("\0") else W for s in items) + GX * (len(items) - 1) for d, items in layers.items()
    }
    width = max(widths.values(), default=W) + 2 * PAD
    height = (max(layers, default=0) + 1) * (H + GY) - GY + 2 * PAD
    xy: dict[str, tuple[float, float]] = {}  # left/top of a box, or the centre line of a placeholder
    for d, items in layers.items():
        x = (width - widths[d]) / 2
        for s in items:
            w = DW if s.startswith("\0") else W
            xy[s] = (x + (w / 2 if w == DW else 0), PAD + d * (H + GY))
            x += w + GX
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="graph" data-view="{view}" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" role="img" aria-label="{escape(title or "model graph")}">',
        '<defs><marker id="arrow" viewBox="0 0 8 8" refX="8" refY="4" markerWidth="7" markerHeight="7" orient="auto">'
        '<path d="M0,0 L8,4 L0,8 z" fill="#7b8794"/></marker></defs>',
    ]
    labelled: set = set()
    for n in g.names:  # partition bands first: under everything else
        part = g.info[n].get("partition")
        dev = g.dev(n)
        if dev is None:
            continue
        x, y = xy[n]
        out.append(
            f'<rect class="band" x="{x - GX / 2:.1f}" y="{y - GY / 2 + 3:.1f}" width="{W + GX}" height="{H + GY - 6}" '
            f'fill="{BAND.get(dev, "#9aa5b1")}" fill-opacity="{0.08 if part % 2 else 0.14}"/>'
        )
        if part not in labelled:
            labelled.add(part)
            out.append(
                f'<text class="bandlabel" x="{x - GX / 2 + 2:.1f}" y="{y - GY / 2 + 13:.1f}">P{part} {dev}</text>'
            )
    cuts = []
    for src, dst, tensor in g.edges:
        sx, sy = xy[src][0] + W / 2, xy[src][1] + H
        tx, ty = xy[dst][0] + W / 2, xy[dst][1]
        pts = [(sx, sy)]
        for dmy in dummies.get((src, dst), []):
            cx, top = xy[dmy]
            pts += [(cx, top), (cx, top + H)]
        pts.append((tx, ty))
        d = f"M{pts[0][0]:.1f},{pts[0][1]:.1f}"
        for i in range(1, len(pts)):
            (ax, ay), (bx, by) = pts[i - 1], pts[i]
            if i % 2:  # between layers: a smooth S
                cy = (ay + by) / 2
                d += f" C{ax:.1f},{cy:.1f} {bx:.1f},{cy:.1f} {bx:.1f},{by:.1f}"
            else:  # through a placeholder: straight down the gap
                d += f" L{bx:.1f},{by:.1f}"
        is_cut = g.dev(src) is not None and g.dev(dst) is not None and g.dev(src) != g.dev(dst)
        out.append(
            f'<path class="{"edge cut" if is_cut else "edge"}" d="{d}" marker-end="url(#arrow)"><title>{escape(tensor)}</title></path>'
        )
        if is_cut:
            mx, my = (pts[0][0] + pts[1][0]) / 2, (pts[0][1] + pts[1][1]) / 2
            b = boundary.get(tensor, {})
            tip = f"cut: {tensor} {b.get('shape') or ''} {b.get('bytes') or ''} bytes ({g.dev(src)} -> {g.dev(dst)})"
            cuts.append(
                f'<g class="cut-mark"><circle cx="{mx:.1f}" cy="{my:.1f}" r="9"/>'
                f'<text x="{mx:.1f}" y="{my + 4:.1f}">✂</text><title>{escape(tip)}</title></g>'
            )
    out += cuts
    for n in g.names:
        x, y = xy[n]
        d = g.info[n]
        v = d["verdict"]
        fill = VERDICT_COLOR_HEX.get(v, "#e8ecef")
        tip = [d["name"], f"{d['op_type']} — {v if v != 'io' else 'model ' + d['op_type']}"]
        if d.get("partition") is not None:
            tip.append(f"partition {d['partition']} ({g.dev(n)})")
        if d.get("members"):
            tip.append(
                f"{len(d['members'])} nodes in a chain (click to see them): "
                + ", ".join(d["members"][:12])
                + (" …" if len(d["members"]) > 12 else "")
            )
        for r in d.get("reasons", []):
            tip.append(f"• {r['text']}" + (f" ({r['detail']})" if r.get("detail") else ""))
        rx = 17 if v == "io" else 5
        label = d["op_type"] if v != "io" else d["name"]
        sub = d.get("sub") or (d["name"] if v != "io" else "[" + ",".join(str(s) for s in (d.get("shape") or [])) + "]")
        cls = f"node v-{v}" + (" group" if d.get("members") else "")
        out.append(
            f'<g class="{cls}" data-node="{escape(d["name"])}"><title>{escape(chr(10).join(tip))}</title>'
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{W}" height="{H}" rx="{rx}" fill="{fill}"/>'
            f'<text x="{x + W / 2:.1f}" y="{y + 15:.1f}" fill="{TEXT_ON.get(v, "#fff")}" class="op">{escape(_short(label, 22))}</text>'
            f'<text x="{x + W / 2:.1f}" y="{y + 29:.1f}" fill="{TEXT_ON.get(v, "#fff")}" class="nm">{escape(_short(sub, 24))}</text></g>'
        )
    out.append("</svg>")
    return "".join(out)


def graph_svg(check: dict[str, Any], title: str = "", collapse: bool = False) -> str:
    """check: CheckReport.to_dict() (or a split stage view). The full graph, or with `collapse` the overview with
    straight chains merged. Returns an <svg> element (plus a note when the graph was truncated)."""
    nodes = [n for n in check["nodes"] if not n.get("parent") and n["verdict"] != "folded"]
    note = ""
    if len(nodes) > MAX_NODES and not collapse:
        note = f'<p class="note">Graph truncated: the first {MAX_NODES} of {len(nodes)} running nodes are drawn.</p>'
        nodes = nodes[:MAX_NODES]
    g = _Graph(check, nodes)
    if collapse:
        g = g.collapsed()
        if len(g.names) > MAX_NODES:
            return f'<p class="note">The overview has {len(g.names)} boxes, more than the {MAX_NODES} drawn; see the tables.</p>'
    boundary = {b["tensor"]: b for b in check.get("boundaries", [])}
    return note + _svg(g, title, "overview" if collapse else "full", boundary)


def graph_views(check: dict[str, Any], gid: str, title: str = "") -> str:
    """Overview and full graph with the buttons that switch between them (full only when nothing collapses)."""
    full = graph_svg(check, title).replace('class="graph"', f'class="graph" id="{escape(gid)}"', 1)
    running = [n for n in check["nodes"] if not n.get("parent") and n["verdict"] != "folded"]
    overview = graph_svg(check, title, collapse=True) if running else ""
    if not overview or overview.count('class="node') >= full.count('class="node'):
        return f'<div class="gviews" data-graph="{escape(gid)}"><div class="graphbox gview" data-view="full">{full}</div></div>'
    overview = overview.replace('class="graph"', f'class="graph" id="{escape(gid)}-overview"', 1)
    return (
        f'<div class="gviews" data-graph="{escape(gid)}"><div class="views"><button data-show="overview" class="on">overview '
        f'(chains collapsed; click a box to open it)</button><button data-show="full">all nodes</button></div>'
        f'<div class="graphbox gview" data-view="overview">{overview}</div>'
        f'<div class="graphbox gview" data-view="full" hidden>{full}</div></div>'
    )


def legend_html() -> str:
    items = [
        ("npu", "runs on the NPU"),
        ("cpu", "falls back to the host CPU"),
        ("unsupported", "unsupported: must be cut away or rewritten"),
    ]
    chips = "".join(
        f'<span class="chip" style="background:{VERDICT_COLOR_HEX[v]}"></span>{escape(t)} ' for v, t in items
    )
    return (
        f'<div class="legend">{chips}<span class="cutchip">✂</span> cut point (NPU ↔ host) '
        f'<span class="chip" style="background:{BAND["npu"]};opacity:.3"></span>NPU partition band '
        f'<span class="chip" style="background:{BAND["host"]};opacity:.3"></span>host partition band</div>'
    )

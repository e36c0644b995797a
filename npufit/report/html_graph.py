"""The model graph as an interactive view: inline SVG laid out here, a side panel with the selected node's reasons
(readable in a screenshot or on a tablet, no hover needed), a problem list with jump links, search, zoom, and a
little JS (html_assets.GRAPH_JS) that opens on the first off-NPU node at 100 % (labels of 10 px and more).

Layout (no JS library, no Graphviz): a box's layer is its longest-path depth (a reader of a broadcast tensor moves
down next to its own consumer: FANOUT); an edge that skips up to LONG_SPAN layers gets a thin placeholder in each
layer it crosses (Sugiyama's dummy nodes), so it is routed through the gaps instead of across the boxes, a longer
one is a labelled stub at its consumer; within a layer, boxes are ordered by the mean position of their neighbours
(barycenter sweeps). Each partition is a tinted band behind its boxes. Folded nodes (constants, shape arithmetic)
are left out: no device runs them. Edges where execution moves between the NPU and the host are red and dashed with
a scissors mark.

Chains: on graphs of FOLD_MIN_NODES running nodes or more, runs of NPU nodes of one partition are folded into one
box (a straight chain, and a side node whose producer also feeds its consumer, as the Sigmoid of a SiLU): a
detector's backbone becomes a few dozen boxes, while every off-NPU node keeps a box of its own. A folded box opens
in place into the list of its nodes; the layers below move down (the JS re-lays the rows, never the columns).
"""

from __future__ import annotations

import json
from html import escape
from typing import Any, Sequence

from .html_reasons import OFF_NPU, VERDICT_WORDS, fix_html, problem_groups, why_html
from .style import VERDICT_COLOR_HEX, clip_path, clip_words, shape_str

W, H, GX, GY, PAD, DW, RH = 176, 38, 18, 46, 24, 10, 17  # box, gaps, margin, placeholder width, member row height
OP_CHARS, NAME_CHARS, ROW_CHARS, STUB_CHARS = (
    20,
    27,
    27,
    22,
)  # what fits a box at 12 px bold / 10 px (DejaVu Sans widths)
TEXT_ON = {"npu": "#ffffff", "unsupported": "#ffffff", "cpu": "#1d1d1d", "folded": "#1d1d1d", "io": "#1d1d1d"}
BAND = {"npu": "#2e9d57", "host": "#d9a400"}
FANOUT = 4  # a producer read by this many boxes or more: its readers are laid out by their consumers
LONG_SPAN = 8  # an edge across more layers is drawn as a labelled stub at its consumer ("↑ from …"), not routed
FOLD_MIN_NODES = 60  # fold chains from this many running nodes on
FOLD_MAX = 40  # nodes in one folded box: an opened box stays a readable list
MAX_DRAWN = 6000  # nodes drawn (as boxes or rows of folded boxes); beyond, the tables still list every node
PANEL_LIST_MAX = 300  # problem links in the side panel; the table below lists them all


class _Graph:
    """Boxes (nodes, model inputs/outputs, or folded runs) and the edges between them, in topological order."""

    def __init__(self, check: dict[str, Any], nodes: list[dict]):
        self.info: dict[str, dict] = {n["name"]: n for n in nodes}
        self.members: dict[str, list[str]] = {}
        self.device = {p["id"]: p["device"] for p in check.get("partitions", [])}
        producer = {t: n["name"] for n in nodes for t in n.get("outputs", []) if t}
        self.producer = producer  # tensor -> node name (a model input: "in:NAME")
        self.names: list[str] = []
        for t in check["model"].get("inputs", []):
            io = f"in:{t['name']}"
            self.info[io] = {"name": t["name"], "op_type": "input", "verdict": "io", "shape": t.get("shape")}
            producer.setdefault(t["name"], io)
            self.names.append(io)
        self.names += [n["name"] for n in nodes]
        for t in check["model"].get("outputs", []):
            io = f"out:{t['name']}"
            self.info[io] = {"name": t["name"], "op_type": "output", "verdict": "io", "shape": t.get("shape")}
            self.info[io]["inputs"] = [t["name"]]
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

    def fold(self) -> None:
        """Merge runs of NPU nodes of one partition (see the module doc) into their first node, in place.
        Merging a node into its only producer cannot make a cycle: no other path leads from that producer to it."""
        members = {n: [n] for n in self.names}
        preds = {n: dict.fromkeys(self.preds[n]) for n in self.names}
        succs = {n: dict.fromkeys(self.succs[n]) for n in self.names}
        order = {n: i for i, n in enumerate(self.names)}

        def foldable(a: str, b: str) -> bool:
            ia, ib = self.info[a], self.info[b]
            return (
                ia["verdict"] == ib["verdict"] == "npu"
                and ia.get("partition") == ib.get("partition")
                and len(members[a]) + len(members[b]) <= FOLD_MAX
            )

        for _ in range(4):  # a side node folded in one pass can open a straight chain for the next
            changed = False
            for n in list(self.names):
                if n not in members or len(preds[n]) != 1:
                    continue
                p = next(iter(preds[n]))
                side = len(succs[n]) == 1 and next(iter(succs[n])) in succs[p]
                if (len(succs[p]) == 1 or side) and foldable(p, n):
                    members[p] += members.pop(n)
                    del succs[p][n]
                    for s in succs.pop(n):
                        del preds[s][n]
                        preds[s][p] = None
                        succs[p][s] = None
                    del preds[n]
                    changed = True
            if not changed:
                break
        self.names = [n for n in self.names if n in members]
        self.preds = {n: list(preds[n]) for n in self.names}
        self.succs = {n: list(succs[n]) for n in self.names}
        owner = {m: n for n, ms in members.items() for m in ms}
        seen: set[tuple[str, str]] = set()
        edges = []
        for src, dst, t in self.edges:
            a, b = owner[src], owner[dst]
            if a != b and (a, b) not in seen:
                seen.add((a, b))
                edges.append((a, b, t))
        self.edges = edges
        self.members = {n: sorted(ms, key=order.__getitem__) for n, ms in members.items() if len(ms) > 1}


def _layout(g: _Graph) -> tuple[dict[str, int], dict[str, float], dict[tuple[str, str], list[float]], float]:
    """(box -> layer, box -> left x, edge -> x of its placeholders, width)."""
    depth: dict[str, int] = {}
    for n in g.names:  # topological order
        depth[n] = max((depth[p] + 1 for p in g.preds[n] if p in depth), default=0)
    # A second model input, or one of many consumers of a broadcast tensor (a DETR's encoder memory read by every
    # decoder layer), moves down next to its own consumer: else all of them crowd the layer under their producer.
    for n in reversed(g.names):
        if g.succs[n] and all(len(g.succs[p]) >= FANOUT for p in g.preds[n]):
            depth[n] = max(depth[n], min(depth[s] for s in g.succs[n]) - 1)
    layers: dict[int, list[str]] = {}
    for n in g.names:
        layers.setdefault(depth[n], []).append(n)
    up: dict[str, list[str]] = {n: list(g.preds[n]) for n in g.names}
    down: dict[str, list[str]] = {n: list(g.succs[n]) for n in g.names}
    dummies: dict[tuple[str, str], list[str]] = {}
    for src, dst, _ in g.edges:
        span = range(depth[src] + 1, depth[dst])
        if not span or len(span) > LONG_SPAN or (src, dst) in dummies:
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
    widths = {
        d: sum(DW if s.startswith("\0") else W for s in items) + GX * (len(items) - 1) for d, items in layers.items()
    }
    width = max(widths.values(), default=W) + 2 * PAD
    x: dict[str, float] = {}  # left of a box, or the centre line of a placeholder
    for d, items in layers.items():
        left = (width - widths[d]) / 2
        for s in items:
            w = DW if s.startswith("\0") else W
            x[s] = left + (w / 2 if w == DW else 0)
            left += w + GX
    return depth, x, {e: [x[s] for s in chain] for e, chain in dummies.items()}, width


def _path(pts: Sequence[tuple[float, float]]) -> str:
    """Between layers a smooth S, through a placeholder straight down the gap (html_assets.GRAPH_JS redraws the
    same curve after a folded box opens)."""
    d = f"M{pts[0][0]:.1f},{pts[0][1]:.1f}"
    for i in range(1, len(pts)):
        (ax, ay), (bx, by) = pts[i - 1], pts[i]
        if i % 2:
            cy = (ay + by) / 2
            d += f" C{ax:.1f},{cy:.1f} {bx:.1f},{cy:.1f} {bx:.1f},{by:.1f}"
        else:
            d += f" L{bx:.1f},{by:.1f}"
    return d


def _ops_label(ops: list[str]) -> str:
    """Distinct ops of a folded box in order, as many whole names as fit, then how many more: Conv, Sigmoid +2."""
    for k in range(len(ops), 0, -1):
        text = ", ".join(ops[:k]) + (f" +{len(ops) - k}" if k < len(ops) else "")
        if len(text) <= OP_CHARS:
            return text
    return clip_words(ops[0], OP_CHARS - 3) + f" +{len(ops) - 1}"


Far = tuple[str, str, str, str, bool]  # (link target id, producer name, producer op, tensor, crosses NPU <-> host)


def _stubs(far: list[Far]) -> str:
    """Inputs from far above (an edge across more than LONG_SPAN layers): a short arrow into the box with the
    producer's name, a link to it."""
    out = []
    for k, (href, name, op, tensor, cut) in enumerate(far[:3]):
        x = W - 14 - 10 * k
        head = name.rpartition("/")[0]  # exporters name a node scope/Op: a long one is known by its scope
        short = head if head and op and len(name) > STUB_CHARS else name  # "…/layers.29/final_layer_norm"
        cls = "far cut" if cut else "far"
        out.append(
            f'<a class="{cls}" href="#{href}"><title>{escape(f"input {tensor} from {name}, further up")}</title>'
            f'<path class="edge{" cut" if cut else ""}" d="M{x},{-GY / 2 + 4:.0f} L{x},0" marker-end="url(#arrow)"/>'
            f'<text class="farlabel" x="{x - 5}" y="{-6 - 12 * k}">'
            f"{'✂ ' if cut else ''}↑ {escape(clip_path(short, STUB_CHARS))}</text></a>"
        )
    return "".join(out)


def _box(
    g: _Graph, n: str, bid: str, x: float, layer: int, why: dict[str, int], band_label: str, far: list[Far]
) -> str:
    d, v = g.info[n], g.info[n]["verdict"]
    ms = g.members.get(n)
    dev = g.dev(n)
    fg = TEXT_ON.get(v, "#fff")
    y = PAD + layer * (H + GY)
    if ms:
        label = _ops_label(list(dict.fromkeys(g.info[m]["op_type"] for m in ms)))
        sub = f"{len(ms)} nodes · open ▾"
    elif v == "io":
        label, sub = clip_path(d["name"], OP_CHARS), shape_str(d.get("shape"))
    else:
        label, sub = clip_words(d["op_type"], OP_CHARS), clip_path(d["name"], NAME_CHARS)
    cls = f"node v-{v}" + (" group" if ms else "") + (" problem" if v in OFF_NPU else "")
    attrs = f'class="{cls}" id="{bid}" data-l="{layer}" data-x="{x:.1f}" transform="translate({x:.1f},{y:.1f})"'
    if not ms:
        name = d["name"]
        attrs += (
            f' data-node="{escape(name)}" data-op="{escape(d["op_type"] if v != "io" else "model " + d["op_type"])}"'
        )
    else:
        attrs += f' data-group="{len(ms)}"'
    if d.get("partition") is not None:
        attrs += f' data-p="{escape(str(d["partition"]))}" data-dev="{escape(dev or "")}"'
    if n in why:
        attrs += f' data-r="{why[n]}"'
    if v == "io" and d.get("shape") is not None:
        attrs += f' data-shape="{escape(shape_str(d["shape"]))}"'
    tip = d["name"] if not ms else f"{len(ms)} nodes on the NPU: " + ", ".join(ms[:8]) + (" …" if len(ms) > 8 else "")
    out = [f"<g {attrs}><title>{escape(tip)}</title>"]
    if dev is not None:
        shade = 0.08 if isinstance(d.get("partition"), int) and d["partition"] % 2 else 0.14
        out.append(
            f'<rect class="band" x="{-GX / 2:.0f}" y="{-GY / 2 + 3:.0f}" width="{W + GX}" height="{H + GY - 6}" '
            f'fill="{BAND.get(dev, "#9aa5b1")}" fill-opacity="{shade}"/>'
        )
        if band_label:
            out.append(
                f'<text class="bandlabel" x="{-GX / 2 + 3:.0f}" y="{-GY / 2 + 14:.0f}">{escape(band_label)}</text>'
            )
    out.append(_stubs(far))
    out.append(
        f'<rect class="box" width="{W}" height="{H}" rx="{17 if v == "io" else 5}" '
        f'fill="{VERDICT_COLOR_HEX.get(v, "#e8ecef")}"/>'
        f'<text class="op" x="{W / 2:.0f}" y="16" fill="{fg}">{escape(label)}</text>'
        f'<text class="nm" x="{W / 2:.0f}" y="31" fill="{fg}">{escape(sub)}</text>'
    )
    if ms:
        rows = []
        for k, m in enumerate(ms):
            op = g.info[m]["op_type"]
            rows.append(
                f'<g class="row" id="{bid}-{k}" data-node="{escape(m)}" data-op="{escape(op)}" '
                f'transform="translate(0,{H + k * RH})"><rect width="{W}" height="{RH}"/>'
                f'<text x="6" y="12"><tspan class="rop">{escape(clip_words(op, 12))}</tspan> '
                f"{escape(clip_path(m, ROW_CHARS - min(len(op), 12)))}</text></g>"
            )
        out.append(f'<g class="rows">{"".join(rows)}</g>')
    out.append("</g>")
    return "".join(out)


def graph_svg(check: dict[str, Any], gid: str, title: str = "", why: dict[str, int] | None = None) -> str:
    """check: CheckReport.to_dict() (or a split stage view); gid: a page-unique id prefix. An <svg> of every running
    node, with runs of NPU nodes folded on large graphs (plus a note when boxes had to be left out)."""
    return _render(check, gid, title, why or {})[0]


def _render(check: dict[str, Any], gid: str, title: str, why: dict[str, int]) -> tuple[str, dict[str, str]]:
    """(the svg, node name -> id of the element that draws it: its box, or its row in a folded box)."""
    nodes = [n for n in check["nodes"] if not n.get("parent") and n["verdict"] != "folded"]
    g = _Graph(check, nodes)
    if len(nodes) >= FOLD_MIN_NODES:
        g.fold()
    note, drawn, cut = "", 0, len(g.names)
    for i, n in enumerate(g.names):
        drawn += len(g.members.get(n, ())) or 1
        if drawn > MAX_DRAWN:
            cut = i
            break
    if cut < len(g.names):
        note = (
            f'<p class="note">Graph truncated: the first {cut:,} of {len(g.names):,} boxes are drawn '
            f"({MAX_DRAWN:,} nodes); the tables list every node.</p>"
        )
        keep = set(g.names[:cut])
        g.names = g.names[:cut]
        g.edges = [e for e in g.edges if e[0] in keep and e[1] in keep]
        g.preds = {n: [p for p in g.preds[n] if p in keep] for n in g.names}
        g.succs = {n: [s for s in g.succs[n] if s in keep] for n in g.names}
    layer, x, dummies, width = _layout(g)
    height = (max(layer.values(), default=0) + 1) * (H + GY) - GY + 2 * PAD
    ids = {n: f"{gid}-b{i}" for i, n in enumerate(g.names)}
    where = {g.info[n]["name"]: ids[n] for n in g.names if n not in g.members and g.info[n]["verdict"] != "io"}
    where.update({m: f"{ids[n]}-{k}" for n in g.names for k, m in enumerate(g.members.get(n, ()))})
    top = {n: PAD + layer[n] * (H + GY) for n in g.names}
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="graph" id="{escape(gid)}" '
        f'width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" data-w="{width:.0f}" data-geo="{W},{H},{GX},{GY},{PAD},{RH}" '
        f'role="img" aria-label="{escape(title or "model graph")}">',
        '<defs><marker id="arrow" viewBox="0 0 8 8" refX="8" refY="4" markerWidth="7" markerHeight="7" orient="auto">'
        '<path d="M0,0 L8,4 L0,8 z" fill="#7b8794"/></marker></defs>',
    ]
    boundary = {b["tensor"]: b for b in check.get("boundaries", [])}
    marks = []
    far: dict[str, list[Far]] = {}
    for k, (src, dst, tensor) in enumerate(g.edges):
        is_cut = g.dev(src) is not None and g.dev(dst) is not None and g.dev(src) != g.dev(dst)
        if layer[dst] - layer[src] - 1 > LONG_SPAN:
            p = g.producer.get(tensor, src)
            name = g.info[p]["name"] if p in g.info else p
            op = g.info[p]["op_type"] if p in g.info and g.info[p]["verdict"] != "io" else ""
            far.setdefault(dst, []).append((where.get(name, ids[src]), name, op, tensor, is_cut))
            continue
        pts = [(x[src] + W / 2, top[src] + H)]
        for i, dx in enumerate(dummies.get((src, dst), [])):
            ly = PAD + (layer[src] + 1 + i) * (H + GY)
            pts += [(dx, ly), (dx, ly + H)]
        pts.append((x[dst] + W / 2, top[dst]))
        data = f'data-s="{ids[src]}" data-t="{ids[dst]}"'
        if dummies.get((src, dst)):
            data += f' data-d="{" ".join(f"{v:.1f}" for v in dummies[(src, dst)])}"'
        if is_cut:
            data += f' data-m="{gid}-m{k}"'
            b = boundary.get(tensor, {})
            size = f", {b['bytes']:,} bytes" if isinstance(b.get("bytes"), int) else ""
            shape = shape_str(b["shape"]) if b.get("shape") else ""
            tip = f"cut: {tensor} {shape}{size} ({g.dev(src)} → {g.dev(dst)})"
            mx, my = (pts[0][0] + pts[1][0]) / 2, (pts[0][1] + pts[1][1]) / 2
            marks.append(
                f'<g class="cut-mark" id="{gid}-m{k}" transform="translate({mx:.1f},{my:.1f})"><circle r="9"/>'
                f'<text y="4">✂</text><title>{escape(tip)}</title></g>'
            )
        out.append(
            f'<path class="{"edge cut" if is_cut else "edge"}" {data} d="{_path(pts)}" marker-end="url(#arrow)">'
            f"<title>{escape(tensor)}</title></path>"
        )
    out += marks
    labelled: set = set()
    for n in g.names:
        part, dev = g.info[n].get("partition"), g.dev(n)
        label = ""
        if dev is not None and part not in labelled:
            labelled.add(part)
            label = f"partition {part}"
        out.append(_box(g, n, ids[n], x[n], layer[n], why, label, far.get(n, [])))
    out.append("</svg>")
    return note + "".join(out), where


def _panel(check: dict[str, Any], gid: str, groups: list[dict], ids: dict[str, str]) -> str:
    """The side panel: the selected node (the first problem until one is chosen) with its reasons, then every
    problem as a jump link. Rendered whole here, so it reads the same with JS off."""
    tgt = check["target"]["name"]
    model = check["model"].get("path") or check["model"].get("file", "")
    shapes = check["model"].get("input_shapes")
    info = {n["name"]: n for n in check["nodes"]}
    order = {name: i for i, name in enumerate(info)}
    problems = sorted((name for grp in groups for name in grp["nodes"]), key=order.__getitem__)
    first = problems[0] if problems else None
    if first:
        n = info[first]
        head = (
            f'<p class="sel-name">{escape(first)}</p><p><b>{escape(n["op_type"])}</b> · '
            f'<span class="verdict v-{escape(n["verdict"])}">{escape(VERDICT_WORDS[n["verdict"]])}</span>'
            + (f" · partition {escape(str(n['partition']))}" if n.get("partition") is not None else "")
            + "</p>"
        )
    else:
        running = sum(1 for n in check["nodes"] if n["verdict"] == "npu" and not n.get("parent"))
        head = f"<p>All {running:,} running nodes run on the NPU.</p>"
    grp_of = {name: grp["key"] for grp in groups for name in grp["nodes"]}
    blocks = "".join(
        f'<div class="why-block" data-r="{grp["key"]}"{"" if first and grp_of[first] == grp["key"] else " hidden"}>'
        f"<h5>Why</h5>{why_html(grp)}"
        + (f"<h5>How to fix</h5>{fix_html(grp, tgt, model, shapes)}" if grp["fixes"] or grp["rules"] else "")
        + "</div>"
        for grp in groups
    )
    links = "".join(
        f'<li><a class="go v-{escape(info[p]["verdict"])}" href="#{ids[p]}">{escape(info[p]["op_type"])} '
        f'<span class="nm">{escape(clip_path(p, 40))}</span></a></li>'
        for p in problems[:PANEL_LIST_MAX]
        if p in ids
    )
    rest = len(problems) - PANEL_LIST_MAX
    plist = (
        f'<h5>Off the NPU ({len(problems):,})</h5><ol class="plist">{links}</ol>'
        + (f'<p class="note">… {rest:,} more in the table below.</p>' if rest > 0 else "")
        if problems
        else ""
    )
    return (
        f'<aside class="gpanel" id="{gid}-panel" aria-live="polite" '
        f'data-verdicts="{escape(json.dumps(VERDICT_WORDS))}">'
        f'<div class="sel">{head}</div>'
        f'<div class="sel-extra"></div>{blocks}{plist}</aside>'
    )


def graph_view(check: dict[str, Any], gid: str, title: str = "") -> tuple[str, dict[str, str]]:
    """The toolbar (search, problems, zoom, chains), the graph and its side panel; and node name -> element id."""
    groups = problem_groups(check)
    why = {name: grp["key"] for grp in groups for name in grp["nodes"]}
    svg, ids = _render(check, gid, title, why)
    button = '<button type="button" data-act="{}"{}>{}</button>'.format
    tools = (
        '<div class="gtools" role="toolbar" aria-label="graph tools"><input type="search" class="gsearch" '
        'placeholder="find a node or op (Enter: next)" aria-label="find a node or op"><span class="gcount"></span>'
        + button("prev", ' title="previous match"', "◀")
        + button("next", ' title="next match"', "▶")
        + (button("first", "", "first problem") if groups else "")
        + '<span class="gap"></span>'
        + button("out", ' title="zoom out"', "−")
        + button("100", ' class="zlabel" title="actual size"', "100%")
        + button("in", ' title="zoom in"', "+")
        + button("fit", "", "whole graph")
        + (
            button("open-all", "", "open all chains") + button("close-all", "", "fold chains")
            if " group" in svg
            else ""
        )
        + "</div>"
    )
    return (
        f'<div class="gview" data-graph="{escape(gid)}">{tools}<div class="gwrap">'
        f'<div class="graphbox" tabindex="0">{svg}</div>{_panel(check, gid, groups, ids)}</div></div>'
    ), ids


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
        f'<div class="legend">{chips}<span class="chip dashed"></span>folded chain of NPU nodes (click to open) '
        f'<span class="cutchip">✂</span> cut point (NPU ↔ host) '
        f'<span class="chip" style="background:{BAND["npu"]};opacity:.3"></span>NPU partition '
        f'<span class="chip" style="background:{BAND["host"]};opacity:.3"></span>host partition</div>'
    )

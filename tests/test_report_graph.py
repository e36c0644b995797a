"""The HTML graph view on real-sized models (a 233-node YOLOv8n-style detector and a ~3,000-node DETR-style one,
built in tests/report_models.py): runs of NPU nodes folded into boxes that open in place, every off-NPU node in a
box of its own, long edges as labelled stubs; and in headless Chromium, the page opens on the first off-NPU node at
100 % with labels of 10 px or more, no label wider than its box, the reasons in the side panel without hover,
search finding a node (inside a folded box too), and the jump links bringing a node into view."""

from __future__ import annotations

import re
from html import unescape

import numpy as np
import pytest

from npufit import check
from npufit.cli import main
from npufit.report import html_graph
from npufit.report.html_graph import FOLD_MAX, W, graph_svg, graph_view

from .browser import probe, screenshot
from .report_models import detr_like, yolov8n_like


@pytest.fixture(scope="module")
def yolo(tmp_path_factory):
    folder = tmp_path_factory.mktemp("yolo")
    model = yolov8n_like(folder / "yolov8n.onnx")
    page = folder / "check.html"
    assert main(["check", str(model), "-t", "hailo8", "--format", "html", "--output", str(page)]) == 0
    return check(model, "hailo8").to_dict(), page


@pytest.fixture(scope="module")
def detr(tmp_path_factory):
    folder = tmp_path_factory.mktemp("detr")
    model = detr_like(folder / "detr.onnx", enc=30, dec=32)
    page = folder / "check.html"
    assert main(["check", str(model), "-t", "hailo8", "--format", "html", "--output", str(page)]) == 0
    return check(model, "hailo8").to_dict(), page


def _off(d):
    return [n["name"] for n in d["nodes"] if n["verdict"] in ("cpu", "unsupported") and not n.get("parent")]


def _boxes(svg: str) -> list[tuple[str, str]]:
    """(class, the box's whole markup) of every top-level box."""
    return [
        (m.group(1), m.group(0))
        for m in re.finditer(r'<g class="(node[^"]*)".*?<rect class="box".*?(?=<g class="node|</svg>)', svg)
    ]


@pytest.mark.parametrize("which", ["yolo", "detr"])
def test_npu_runs_fold_into_boxes_and_problems_keep_their_own(which, request):
    d, _ = request.getfixturevalue(which)
    running = [n for n in d["nodes"] if n["verdict"] != "folded" and not n.get("parent")]
    assert len(running) == (233 if which == "yolo" else pytest.approx(3000, rel=0.05))
    svg = graph_svg(d, "g")
    boxes = _boxes(svg)
    groups = [b for c, b in boxes if " group" in c]
    # a folded graph: far fewer boxes than nodes, yet every running node is drawn (as a box or a row of one)
    assert len(boxes) < len(running) / 3 and groups
    drawn = {unescape(x) for x in re.findall(r'data-node="([^"]*)"', svg)}
    assert {n["name"] for n in running} <= drawn
    for b in groups:  # only NPU nodes of one partition fold, at most FOLD_MAX of them
        rows = re.findall(r'<g class="row"[^>]*data-node="([^"]*)"', b)
        assert 2 <= len(rows) <= FOLD_MAX and re.search(rf"{len(rows)} nodes", b)
        parts = {next(n.get("partition") for n in running if n["name"] == unescape(r)) for r in rows}
        assert len(parts) == 1
        assert all(next(n["verdict"] for n in running if n["name"] == unescape(r)) == "npu" for r in rows)
    off = _off(d)
    assert off and all(f'data-node="{name}"' in svg for name in off)
    problem_boxes = [b for c, b in boxes if "problem" in c]
    assert len(problem_boxes) == len(off)  # one box each, never folded into a chain
    # the graph stays narrow enough to read: readers of a broadcast tensor sit by their own consumers
    assert int(re.search(r'data-w="(\d+)"', svg).group(1)) < 2500


def test_small_graphs_are_not_folded_and_long_edges_become_stubs(yolo, detr):
    d, _ = yolo
    head = {**d, "nodes": d["nodes"][-40:]}  # the detector head alone: below the folding threshold
    svg = graph_svg(head, "g")
    assert " group" not in svg and svg.count('<g class="node') >= 40
    full = graph_svg(detr[0], "g")  # the encoder memory, read by every decoder layer
    # an edge across more than LONG_SPAN layers is not routed through the whole graph: a stub names its producer
    stubs = re.findall(r'<a class="far[^"]*" href="#(g-[^"]+)">.*?<text class="farlabel"[^>]*>([^<]+)</text>', full)
    assert len(stubs) >= 32 and all(f'id="{target}"' in full for target, _ in stubs)
    assert any("final_layer_norm" in text for _, text in stubs)


def test_panel_and_problem_table_read_without_js(yolo):
    d, page = yolo
    html = page.read_text()
    first = _off(d)[0]
    panel = re.search(r'<aside class="gpanel".*?</aside>', html, re.S).group(0)
    # the first problem's name and its reasons, not hidden, before any script ran
    assert f'<p class="sel-name">{first}</p>' in panel
    shown = re.search(r'<div class="why-block" data-r="\d+">(.*?)</div>', panel, re.S).group(1)
    reason = next(n for n in d["nodes"] if n["name"] == first)["reasons"][0]
    assert reason["rule"] in shown and unescape(re.sub(r"<[^>]+>", "", shown)).count(reason["text"][:60]) >= 1
    # every problem link (panel and table) points at an element of the graph
    ids = set(re.findall(r' id="([^"]+)"', html))
    links = re.findall(r'<a (?:class="go[^"]*" )?href="#(g-check-[^"]+)"', html)
    assert len(links) >= 2 * len(_off(d)) and set(links) <= ids
    # toolbar and filters are for scripts only: hidden until the page's script marks <html class="js">
    assert ".gtools{display:none" in html and ".js .gtools{display:flex}" in html


PROBE = r"""
var W=+svg.dataset.geo.split(',')[0];
out.first=selected(); out.firstProblem=svg.querySelector('.node.problem').dataset.node;
var f=labelsInView(); out.minFont=Math.min.apply(null,f); out.labels=f.length;
out.overflow=[];svg.querySelectorAll('g.node > text, g.row text').forEach(function(t){
 if(t.getBBox().width>W-4)out.overflow.push(t.textContent);});
type(QUERY); out.search=selected(); out.count=view.querySelector('.gcount').textContent;
type(MEMBER); out.member=selected(); out.memberOpen=svg.querySelectorAll('.node.group.open').length;
out.memberOverflow=[];svg.querySelectorAll('.node.open g.row text').forEach(function(t){
 if(t.getBBox().width>W-4)out.memberOverflow.push(t.textContent);});
var links=view.querySelectorAll('.plist a');links[links.length-1].click();out.last=selected();
window.scrollTo(0,document.body.scrollHeight);
document.querySelector('table[id^=fail] a[href^="#"]').click();out.table=selected();out.graphOnScreen=onScreen(box);
"""


def _check_page(d, page, tmp_path, query, member):
    off = _off(d)
    steps = PROBE.replace("QUERY", repr(query)).replace("MEMBER", repr(member))
    out = probe(page, steps, tmp_path)
    # opens on the first off-NPU node, inside the visible part of the graph, at a readable size
    assert out["first"]["node"] == out["firstProblem"] == off[0] and out["first"]["inView"]
    assert out["minFont"] >= 10 and out["labels"] >= 10
    assert out["overflow"] == [] and out["memberOverflow"] == []
    # its reasons are in the panel, no hover needed
    reason = next(n for n in d["nodes"] if n["name"] == off[0])["reasons"][0]
    assert off[0] in out["first"]["panel"]
    # search: a node by name (or op), brought into view and shown in the panel
    assert out["search"]["node"].endswith(query) and out["search"]["inView"] and out["count"].endswith("of 1")
    # a node folded into a chain: the chain opens and the node is shown
    assert out["member"]["node"] == member and out["member"]["inView"] and out["memberOpen"] >= 1
    # jump links: the last problem of the panel list, and the first row of the table (page scrolled away)
    assert out["last"]["node"] == off[-1] and out["last"]["inView"]
    assert out["table"]["node"] == off[0] and out["table"]["inView"] and out["graphOnScreen"]
    return reason


def _red_pixels(shot) -> int:
    from PIL import Image

    px = np.asarray(Image.open(shot).convert("RGB")).astype(int)
    return int(((abs(px[..., 0] - 0xD6) < 12) & (abs(px[..., 1] - 0x45) < 12) & (abs(px[..., 2] - 0x45) < 12)).sum())


def test_yolov8n_page_in_chromium(yolo, tmp_path):
    d, page = yolo
    _check_page(d, page, tmp_path, "dfl/Softmax", "/model.2/m.0/cv1/conv/Conv")
    # the first screen shows the red box of the first problem (a 176 x 38 px box at 100 %)
    shot = screenshot(page, tmp_path / "yolov8n.png")
    assert _red_pixels(shot) > 4000
    opened = screenshot(page, tmp_path / "yolov8n-search.png", steps="type('/model.4/m.1/cv2/act/Mul');")
    assert opened.stat().st_size > 50_000


def test_detr_page_in_chromium(detr, tmp_path):
    d, page = detr
    assert page.stat().st_size < 3_000_000  # one file for a 3,000-node model, graph and tables included
    _check_page(d, page, tmp_path, "layers.29/GridSample", "/encoder/layers.12/ffn/act/Erf")
    shot = screenshot(page, tmp_path / "detr.png")
    assert _red_pixels(shot) > 4000


def test_graph_view_ids_are_unique_per_graph(yolo):
    d, _ = yolo
    a, ids_a = graph_view(d, "g-one")
    b, ids_b = graph_view(d, "g-two")
    assert set(ids_a.values()).isdisjoint(ids_b.values())
    assert len(re.findall(r' id="([^"]+)"', a)) == len(set(re.findall(r' id="([^"]+)"', a)))
    assert html_graph.OP_CHARS * 8 < W  # the label budget fits the box at 12 px bold


def test_huge_graph_is_drawn_in_part_with_every_link_live(tmp_path):
    """Past MAX_DRAWN nodes the graph stops with a note; the tables still list every problem, and no link points
    at a node that was not drawn."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    n, nodes, x = html_graph.MAX_DRAWN + 2000, [], "x"
    for i in range(n):
        mod = i % 500 == 250  # Hailo-8 cannot run Mod: a problem every 500 nodes, the last ones past the cut
        nodes.append(
            helper.make_node(
                "Mod" if mod else "Relu",
                [x, "two"] if mod else [x],
                [f"t{i}"],
                name=f"/b{i // 100}/n{i}",
                **({"fmod": 1} if mod else {}),
            )
        )
        x = f"t{i}"
    g = helper.make_graph(
        nodes,
        "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 4, 4])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, 4, 4, 4])],
        [numpy_helper.from_array(np.array(2.0, np.float32), "two")],
    )
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(tmp_path / "chain.onnx"))
    page = tmp_path / "check.html"
    assert main(["check", str(tmp_path / "chain.onnx"), "-t", "hailo8", "--format", "html", "-o", str(page)]) == 0
    html = page.read_text()
    assert "Graph truncated" in html
    drawn = set(re.findall(r'data-node="([^"]+)"', html))
    assert html_graph.MAX_DRAWN - FOLD_MAX <= len(drawn) <= html_graph.MAX_DRAWN
    ids = set(re.findall(r' id="([^"]+)"', html))
    assert set(re.findall(r'href="#(g-check-[^"]+)"', html)) <= ids
    problems = [f"/b{i // 100}/n{i}" for i in range(n) if i % 500 == 250]
    table = html[html.index('id="fail-check"') :]
    assert all(p in table for p in problems)  # every one listed, the drawn ones as links

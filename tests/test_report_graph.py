"""The HTML graph view: an overview with straight chains collapsed (a deep model fits the page and its red node is
on screen), partition bands, edges routed around boxes, click to expand; rendered in headless Chromium."""
from __future__ import annotations

import re
import subprocess

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from npufit import check
from npufit.report.html_graph import graph_svg, graph_views

from .test_report_html import _chromium


def _deep(path, depth=40):
    """40 Conv/Relu blocks with a long skip connection, then a GridSample Hailo-8 cannot run."""
    inits, nodes, x, skip = [], [], "x", None
    for i in range(depth):
        inits.append(numpy_helper.from_array(np.full((8, 8, 3, 3), 0.01, np.float32), f"w{i}"))
        nodes += [helper.make_node("Conv", [x, f"w{i}"], [f"c{i}"], name=f"conv{i}", pads=[1] * 4),
                  helper.make_node("Relu", [f"c{i}"], [f"r{i}"], name=f"relu{i}")]
        x = f"r{i}"
        skip = x if i == depth // 4 else skip
    nodes += [helper.make_node("Add", [x, skip], ["a"], name="add_skip"),
              helper.make_node("GridSample", ["a", "grid"], ["y"], name="gridsample")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 16, 16]),
                                       helper.make_tensor_value_info("grid", TensorProto.FLOAT, [1, 16, 16, 2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 16, 16])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def test_overview_collapses_chains_bands_partitions_and_routes_long_edges(tmp_path):
    d = check(_deep(tmp_path / "deep.onnx"), "hailo8").to_dict()
    full, overview = graph_svg(d), graph_svg(d, collapse=True)
    assert full.count('class="node') == 2 + 82 + 1  # inputs, every running node, the output
    assert overview.count('class="node') < 10 and 'class="node v-npu group"' in overview
    group = re.search(r'<g class="node v-npu group" data-node="([^"]+)"><title>([^<]+)', overview)
    assert group and "nodes in a chain" in group.group(2)
    assert overview.count('class="band"') >= 3 and "P1 host" in overview  # partition bands with their labels
    # the skip edge and the second input span several layers: routed through placeholders (straight L segments)
    assert any(" L" in p for p in re.findall(r'<path class="edge[^"]*" d="([^"]+)"', overview))
    views = graph_views(d, "g-x")
    assert 'data-show="overview"' in views and 'data-view="full" hidden' in views


def test_deep_model_shows_its_unsupported_node_on_the_first_screen(tmp_path):
    from PIL import Image

    exe = _chromium()
    model = _deep(tmp_path / "deep.onnx")
    html = tmp_path / "check.html"
    from npufit.cli import main

    assert main(["check", str(model), "-t", "hailo8", "--format", "html", "--output", str(html)]) == 0
    shot = tmp_path / "shot.png"
    base = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--disable-background-networking",
            f"--user-data-dir={tmp_path / 'profile'}"]
    r = subprocess.run(base + ["--window-size=1400,1000", f"--screenshot={shot}", html.as_uri()], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    px = np.asarray(Image.open(shot).convert("RGB")).astype(int)
    red = (abs(px[..., 0] - 0xD6) < 12) & (abs(px[..., 1] - 0x45) < 12) & (abs(px[..., 2] - 0x45) < 12)
    # the GridSample box (138x36 px) is drawn in the first screen; before, it sat ~6,000 px down the scrolled graph
    assert red.sum() > 3000, int(red.sum())

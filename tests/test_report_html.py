"""The HTML report: self-contained, the graph coloured by verdict with cut points, the Model Explorer overlay,
and a real render in headless Chromium (installed with apt-get where missing, else skipped with the reason)."""
from __future__ import annotations

import json
from html import unescape
import re
import subprocess

import pytest

from npufit import check
from npufit.cli import main
from npufit.report.html import render_check_html
from npufit.report.model_explorer import node_data, write_node_data

from .browser import chromium
from .pipeline_helpers import conv_relu_onnx, npu_cut_npu_onnx, write_tiny


def _assert_self_contained(html: str) -> None:
    # nothing fetched when viewed: no external scripts, styles, images or fonts
    assert not re.search(r'(src|href)="(https?:)?//', html)
    assert "@import" not in html and "url(http" not in html


def test_check_html_draws_graph_with_verdicts_and_cut_points(tmp_path):
    model = npu_cut_npu_onnx(tmp_path / "cut.onnx")
    report = check(model, "hailo8")
    html = render_check_html(report)
    _assert_self_contained(html)
    assert html.startswith("<!DOCTYPE html>") and "<svg" in html
    for name in ("conv_in", "mod_mid", "conv_out"):
        assert f'data-node="{name}"' in html
    assert 'class="node v-npu"' in html and 'class="node v-unsupported problem"' in html
    assert html.count('class="edge cut"') == 2  # NPU -> host before Mod, host -> NPU after it
    assert "✂" in html and "Mod" in html
    assert "Hailo" in html and "npufit split --target hailo8" in html  # the fix hint for a node with no fallback
    # the CLI verb writes the same page
    out = tmp_path / "check.html"
    assert main(["check", str(model), "--target", "hailo8", "--format", "html", "--output", str(out)]) == 0
    assert 'class="edge cut"' in out.read_text()


def test_model_explorer_overlay(tmp_path):
    model = npu_cut_npu_onnx(tmp_path / "cut.onnx")
    report = check(model, "hailo8")
    path = write_node_data(report, tmp_path / "overlay.json", model)
    data = json.loads(path.read_text())
    assert list(data) == ["cutnet"]  # Model Explorer's graph id is the ONNX graph name
    res = data["cutnet"]["results"]
    assert res["conv_in"]["value"] == 1 and res["mod_mid"]["value"] == 3
    assert res["conv_in"]["bgColor"].startswith("#") and res["conv_in"]["bgColor"] != res["mod_mid"]["bgColor"]
    assert [t["value"] for t in data["cutnet"]["thresholds"]] == [0, 1, 2, 3]
    assert node_data(report.to_dict(), "g")["g"]["results"].keys() == res.keys()


# -- the full report in a real browser ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def results(tmp_path_factory):
    pytest.importorskip("torch")
    from npufit.pipeline import run_pipeline

    folder = tmp_path_factory.mktemp("report")
    cut = npu_cut_npu_onnx(folder / "cutnet.onnx")
    y = write_tiny(folder, extra_models=f"  - {{name: cutnet, onnx: {cut.name}}}\n",
                   extra_steps="  split: {}\n  bench: {iterations: 5, warmup: 1}\n", runtimes="ort-cpu, ort-cuda")
    run = run_pipeline(y, output_dir=folder / "out", quiet=True)
    assert run.result("report").record.status == "ok"
    return folder / "out"


def test_report_cli_writes_one_self_contained_file(results, tmp_path):
    out = tmp_path / "r.html"
    assert main(["report", str(results), "--output", str(out)]) == 0
    html = out.read_text()
    _assert_self_contained(html)
    for section in ('id="overview"', 'id="placement"', 'id="training"', 'id="m-gru"', 'id="m-cutnet"', 'id="bench"', 'id="environment"'):
        assert section in html
    assert html.count("<svg") >= 6  # 3 graphs + 2 loss curves + bench bars
    assert "rejected for hailo8" in html  # the RNN's split verdict is shown, with its reason
    assert "data:application/json;base64," in html  # Model Explorer overlays embedded for download
    assert main(["report", str(tmp_path)]) == 2  # not a results folder: one clear error


def test_report_says_things_once_and_cuts_text_between_words(results):
    from .test_report_verbs_html import _assert_plain, visible_text

    html = (results / "report.html").read_text()
    text = visible_text(html)
    cells = {c["cell"]: c for c in json.loads((results / "pipeline.json").read_text())["cells"]}
    skipped = [c for k, c in cells.items() if k.startswith("bench/") and k.endswith("/ort-cuda") and c["status"] == "skipped"]
    if len(skipped) == 3:  # no CUDA here: the same skip of three models is one row in the grid, the stops and the bench
        msg = skipped[0]["message"]
        assert text.count(msg) == 2 and len(re.findall(r"gru, tcn, cutnet\s+× 3", text)) == 3
    # a long message shows its first words and opens to the full text: never cut inside a word
    shortened = re.findall(r'<details class="more"><summary>([^<]*)</summary>([^<]*)</details>', html)
    assert shortened
    for short, full in shortened:
        head = unescape(short).removesuffix("…")
        assert unescape(short).endswith("…") and unescape(full).startswith(head)
        assert unescape(full)[len(head)] in " ,;:.)-—/"
    _assert_plain(html)


def test_report_renders_in_headless_chromium(results, tmp_path):
    exe = chromium()
    html = results / "report.html"
    base = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--allow-file-access-from-files",
            f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run(base + ["--virtual-time-budget=3000", "--enable-logging=stderr", "--v=0", "--dump-dom", html.as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    page = dom.stdout
    assert 'data-ready="1"' in page  # our DOMContentLoaded handler ran to its end
    assert re.search(r'<pre id="js-errors" class="err"></pre>', page)  # window.onerror caught nothing
    assert "Uncaught" not in dom.stderr and "SyntaxError" not in dom.stderr
    assert '<svg xmlns="http://www.w3.org/2000/svg" class="graph"' in page and 'class="node v-unsupported problem' in page
    assert page.count("<table") >= 8
    shot = tmp_path / "report.png"
    r = subprocess.run(base + ["--window-size=1400,2200", f"--screenshot={shot}", html.as_uri()], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and shot.stat().st_size > 50_000  # a real rendering, not a blank page

"""`split --format html` and `bench --format html` write one self-contained page in plain words: labelled tables
(no raw field names, no Python values, no JSON dump), one number format, identical skip rows shown once, and chart
labels that stay inside their chart (measured in headless Chromium)."""

from __future__ import annotations

import re
import subprocess
import sys
from html import unescape

import onnx

from npufit.report.html_verbs import render_bench_html
from tests.onnx_builders import branchy_model

from .browser import probe

RAW = (
    "npu_macs_pct",
    "est_ms",
    "bytes_crossing",
    "node_count",
    "throughput_ips",
    "latency_ms",
    "peak_rss_mb",
    "True",
    "False",
    "None",
    "{'",
    "[{",
)  # field names, Python values, a dict dump


def _npufit(*args):
    return subprocess.run([sys.executable, "-m", "npufit", *map(str, args)], capture_output=True, text=True)


def visible_text(page: str) -> str:
    """What a reader sees: the page without style, script, tags and attributes."""
    body = re.sub(r"<(style|script)\b.*?</\1>", " ", page, flags=re.S)
    return unescape(re.sub(r"<[^>]+>", " ", body))


def _assert_plain(page: str) -> None:
    text = visible_text(page)
    leaks = [w for w in RAW if re.search(rf"(?<![\w-]){re.escape(w)}(?![\w-])", text)]
    assert leaks == [], leaks
    assert not re.search(r"\de\+\d", text)  # 23,500, never 2.35e+04 (tiny differences may read 1.2e-07)
    big = re.findall(r"(?<![\w.,/-])\d{5,}(?![\w.,])", re.sub(r"\b[0-9a-f]{64}\b", "", text))
    assert big == [], big  # 3.18 G MACs, 6,411 inferences/s: never a bare 3179352384


def test_split_page_in_plain_words(tmp_path):
    m = tmp_path / "branchy.onnx"
    onnx.save_model(branchy_model(), str(m))
    out = tmp_path / "split.html"
    r = _npufit(
        "split", m, "--target", "hailo8", "--output-dir", tmp_path / "plan", "--format", "html", "--output", out
    )
    assert r.returncode == 0, r.stderr
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html")
    assert not any(f'{a}="{p}' in page for a in ("src", "href") for p in ("http:", "https:", "//"))  # self-contained
    for heading in ("The plan", "Stages, in the order they run", "Candidate cuts", "Plan details", "Verification"):
        assert f">{heading}<" in page
    assert "stage0" in page and "runs on" in page and "MACs on the NPU" in page and "pick it with" in page
    assert re.search(r'<span class="badge v-npu">chosen</span>', page)  # not "chosen True"
    # the graph coloured by stage with its cut marks, and what was verified under which ONNX Runtime settings
    assert 'id="g-split"' in page and "cut-mark" in page and 'data-node="' in page
    assert "graph optimizations off: bit-identical" in page and "all optimizations" in page
    _assert_plain(page)


def test_bench_page_numbers_skips_and_charts(tmp_path):
    m = tmp_path / "branchy.onnx"
    onnx.save_model(branchy_model(), str(m))
    r = _npufit("bench", m, "--runtime", "ort-cpu,openvino", "--iterations", "20", "--warmup", "2", "--format", "html")
    assert r.returncode == 0, r.stderr
    assert "Latency and throughput" in r.stdout and "ort-cpu" in r.stdout and "<svg" in r.stdout
    assert "How it was measured" in r.stdout and "timed runs" in r.stdout
    _assert_plain(r.stdout)
    # the renderer given a real result plus the same skip eight times: one row for the eight
    import json

    j = _npufit("bench", m, "--runtime", "ort-cpu", "--iterations", "20", "--warmup", "2", "--format", "json")
    d = json.loads(j.stdout)
    ok = d["results"][0]
    ok["throughput_ips"], ok["latency_ms"]["p50"] = 23500.4, 0.0425  # magnitudes that used to print as 2.35e+04
    skip = {"runtime": "ort-cuda", "status": "skipped", "reason": "no GPU: this machine has no CUDA device"}
    d["results"] += [dict(skip) for _ in range(8)]
    page = render_bench_html(d)
    text = visible_text(page)
    assert text.count("no GPU: this machine has no CUDA device") == 1 and re.search(r"ort-cuda\s+× 8", text)
    assert "23,500" in text and "2.35e" not in text and "0.0425" in text
    path = tmp_path / "bench.html"
    path.write_text(page)
    # every label and value of the bar charts lies inside its chart
    out = probe(
        path,
        "out.outside=[];document.querySelectorAll('svg.chart').forEach(function(s){var b=s.getBoundingClientRect();"
        "s.querySelectorAll('text').forEach(function(t){var r=t.getBoundingClientRect();"
        "if(r.left<b.left-0.5||r.right>b.right+0.5)out.outside.push(t.textContent);});});"
        "out.charts=document.querySelectorAll('svg.chart').length;",
        tmp_path,
    )
    assert out["charts"] == 2 and out["outside"] == []

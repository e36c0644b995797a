"""`split --format html` and `bench --format html` write one self-contained page with the result tables."""
from __future__ import annotations

import subprocess
import sys

import onnx

from tests.onnx_builders import branchy_model


def _npufit(*args):
    return subprocess.run([sys.executable, "-m", "npufit", *map(str, args)], capture_output=True, text=True)


def test_split_and_bench_html(tmp_path):
    m = tmp_path / "branchy.onnx"
    onnx.save_model(branchy_model(), str(m))
    out = tmp_path / "split.html"
    r = _npufit("split", m, "--target", "hailo8", "--output-dir", tmp_path / "plan", "--format", "html", "--output", out)
    assert r.returncode == 0, r.stderr
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html") or page.lstrip().lower().startswith("<!doctype html")
    assert "Stages (execution order)" in page and "stage0" in page
    assert not any(f'{a}="{p}' in page for a in ("src", "href") for p in ("http:", "https:", "//"))  # self-contained
    # the graph coloured by stage with its cut marks, and what was verified under which ORT settings
    assert 'id="g-split"' in page and "cut-mark" in page and 'data-node="' in page
    assert "Verification" in page and "graph optimizations off: bit-identical" in page and "ORT_ENABLE_ALL" in page
    r = _npufit("bench", m, "--runtime", "ort-cpu", "--iterations", "20", "--warmup", "2", "--format", "html")
    assert r.returncode == 0, r.stderr
    assert "Latency and throughput" in r.stdout and "ort-cpu" in r.stdout and "<svg" in r.stdout

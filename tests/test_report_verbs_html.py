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
    assert "Stages (execution order)" in page and "stage0" in page and "http://" not in page and "https://" not in page
    r = _npufit("bench", m, "--runtime", "ort-cpu", "--iterations", "20", "--warmup", "2", "--format", "html")
    assert r.returncode == 0, r.stderr
    assert "Latency and throughput" in r.stdout and "ort-cpu" in r.stdout and "<svg" in r.stdout

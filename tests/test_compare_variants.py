"""`npufit compare`: seed 001's table, one row per model variant."""
from __future__ import annotations

import json

import pytest

from npufit.check.compare import compare
from npufit.cli import main

from .quant_builders import quantized_detector


@pytest.fixture(scope="module")
def det(tmp_path_factory):
    d = tmp_path_factory.mktemp("cmp")
    return [quantized_detector(a, d) for a in ("relu", "leakyrelu")]


def test_compare_rows(det):
    rep = compare(det, "ethos-n78")
    relu, leaky = rep.rows
    assert relu["model"] == "detector_relu_int8.onnx" and relu["npu_partitions"] == 1 and relu["cpu_partitions"] == 3
    assert leaky["npu_partitions"] > relu["npu_partitions"] and leaky["npu_pct"] < relu["npu_pct"]
    assert leaky["ops_by_type"]["LeakyRelu"] == 6 and leaky["extra_qdq_ops"] == 15 and relu["extra_qdq_ops"] == 3
    assert rep.best() == "detector_relu_int8.onnx"
    d = rep.to_dict()
    assert d["schema"] == "npufit.compare/1" and d["best"] == "detector_relu_int8.onnx"


def test_compare_cli_formats(det, capsys, tmp_path):
    # the ethos-n78 profile's prediction models TVM's flow (seed 001's table); by default the Ethos-N support
    # library judges where it is built, which runs the LeakyReLU islands on the NPU
    assert main(["compare", *det, "--target", "ethos-n78", "--predict"]) == 0
    out = capsys.readouterr().out
    for col in ("total ops", "ops by type", "NPU/CPU partitions", "NPU %", "extra Q/DQ ops", "status"):
        assert col in out
    assert "LeakyRelu × 6 = 6 × 3 = 18 ops" in out
    assert main(["compare", *det, "--target", "ethos-n78", "--format", "markdown", "--predict"]) == 0
    md = capsys.readouterr().out
    assert "| **detector_relu_int8.onnx** | 32 |" in md and "| 7/9 | 58.0% | 15 | 21 ops on CPU |" in md
    out_file = tmp_path / "c.json"
    assert main(["compare", *det, "-t", "ethos-u55-256", "-f", "json", "-o", str(out_file)]) == 0
    rows = json.loads(out_file.read_text())["models"]
    assert [r["status"] for r in rows] == ["all on NPU", "all on NPU"]


def test_compare_bad_input(tmp_path, capsys):
    bad = tmp_path / "x.onnx"
    bad.write_bytes(b"nope")
    assert main(["compare", str(bad), "--target", "ethos-n78"]) == 2
    assert capsys.readouterr().err.count("\n") == 1

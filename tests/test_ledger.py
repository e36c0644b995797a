"""The Q/DQ overhead ledger on seed 001's two detector variants."""
from __future__ import annotations

import json

import pytest

from npufit import check

from .quant_builders import quantized_detector


@pytest.fixture(scope="module")
def det(tmp_path_factory):
    d = tmp_path_factory.mktemp("ledger")
    return {a: quantized_detector(a, d) for a in ("relu", "leakyrelu")}


def test_ethos_n78_leaky_relu_islands_and_partitions(det):
    # the TVM flow's placement, npufit's prediction (the support library's own compile keeps LeakyReLU on the NPU)
    relu, leaky = check(det["relu"], "ethos-n78", measure="never"), check(det["leakyrelu"], "ethos-n78", measure="never")
    led_r, led_l = relu.extra["qdq_ledger"], leaky.extra["qdq_ledger"]
    assert led_r["totals"]["islands"] == 0
    (group,) = led_l["by_op"]
    assert group == {"ops": "LeakyRelu", "count": 6, "ops_each": 3, "total_ops": 18, "qdq_ops": 12, "device": "host"}
    assert led_l["totals"]["extra_ops"] == 12 + 3  # islands + the model's input quantize and 2 output dequantizes
    assert led_r["totals"]["extra_ops"] == 3
    s_r, s_l = relu.summary(), leaky.summary()
    assert s_l["npu_partitions"] + s_l["host_partitions"] > s_r["npu_partitions"] + s_r["host_partitions"]
    assert s_l["npu_partitions"] > s_r["npu_partitions"] == 1
    text = leaky.render("table")
    assert "LeakyRelu × 6 islands (dequantize → LeakyRelu → quantize, 6 × 3 = 18 ops, on host)" in text
    assert "## Q/DQ ledger" in leaky.render("markdown")
    assert json.loads(leaky.to_json())["qdq_ledger"]["schema"] == "npufit.qdq_ledger/1"


def test_ethos_u55_both_variants_fully_npu(det):
    for v in ("relu", "leakyrelu"):
        r = check(det[v], "ethos-u55-256", measure="never")
        assert r.fully_npu, [(n.name, n.reasons) for n in r.failing]
        assert r.extra["qdq_ledger"]["totals"]["islands"] == 0


def test_rk3588_boundaries_cost_a_layout_conversion(tmp_path):
    from onnx import helper

    from .onnx_builders import model, vi

    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"], name="q0"), helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"], name="dq0"),
             helper.make_node("Relu", ["xd"], ["r"], name="relu"), helper.make_node("QuantizeLinear", ["r", "s", "z"], ["rq"], name="q1"),
             helper.make_node("DequantizeLinear", ["rq", "s", "z"], ["rd"], name="dq1"), helper.make_node("Exp", ["rd"], ["e"], name="exp"),
             helper.make_node("QuantizeLinear", ["e", "s", "z"], ["eq"], name="q2"), helper.make_node("DequantizeLinear", ["eq", "s", "z"], ["ed"], name="dq2"),
             helper.make_node("Relu", ["ed"], ["y"], name="relu2")]
    import numpy as np
    from onnx import numpy_helper
    inits = [numpy_helper.from_array(np.array(0.1, np.float32), "s"), numpy_helper.from_array(np.array(0, np.int8), "z")]
    p = tmp_path / "m.onnx"
    p.write_bytes(model(nodes, [vi("x", [1, 4, 8, 8])], [vi("y", [1, 4, 8, 8])], inits).SerializeToString())
    led = check(p, "rk3588", measure="never").extra["qdq_ledger"]
    assert led["totals"]["transpose_ops"] == len(led["boundaries"]) >= 2
    assert all(b["layout"] == "NC1HWC2" for b in led["boundaries"])


def test_float_model_has_no_ledger_unless_judged_as_int8(tmp_path):
    """A float model judged as float has no Q/DQ; on an int8-only target it is judged (by default) as its int8
    conversion, whose ledger predicts the islands the converter will make."""
    from npufit.zoo.detector import export

    p = tmp_path / "f.onnx"
    export("relu", p)
    assert "qdq_ledger" not in check(p, "ethos-n78", judge="float", measure="never").extra
    assert "qdq_ledger" not in check(p, "hailo8").extra
    assert check(p, "ethos-n78", measure="never").extra["qdq_ledger"]["quant_form"] == "int8"

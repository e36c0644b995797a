"""Quantized-graph understanding: int8 kernel or float island, in QDQ, QOperator and TFLite int8."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import helper, numpy_helper

from npufit.graph import load, quant

from .onnx_builders import model, vi
from .quant_builders import int8_conv_leaky, qdq_op, quantized_detector


@pytest.fixture(scope="module")
def det(tmp_path_factory):
    d = tmp_path_factory.mktemp("qdet")
    return {a: load(quantized_detector(a, d)) for a in ("relu", "leakyrelu")}


def test_graph_forms(det, tmp_path):
    assert quant.graph_quant_form(det["relu"]) == "qdq"
    p = tmp_path / "m.tflite"
    p.write_bytes(int8_conv_leaky())
    assert quant.graph_quant_form(load(p)) == "int8"


def test_qdq_conv_is_int8_and_leaky_relu_island_depends_on_target(det):
    g = det["leakyrelu"]
    conv = next(n for n in g.nodes if n.op_type == "Conv")
    leaky = next(n for n in g.nodes if n.op_type == "LeakyRelu")
    assert quant.exec_dtype(conv) == "int8" and quant.executes_in_int8(conv)
    assert not quant.is_float_island(leaky)  # a converter with an int8 LeakyReLU kernel fuses the wrapper
    assert quant.is_float_island(leaky, {"LeakyRelu"})  # an importer with only a float kernel keeps DQ -> op -> Q
    isl = quant.islands(g, {"LeakyRelu"})
    assert len(isl) == 6 and all(i.ops == 3 and i.dq_count == 1 and i.q_count == 1 for i in isl)
    assert isl[0].bytes_dequantized > 0 and isl[0].bytes_float == 2 * 4 * isl[0].bytes_dequantized


def test_qdq_absorbed_vs_standalone(det):
    g = det["leakyrelu"]
    q_in = g.node("images_QuantizeLinear")
    assert not quant.absorbed(q_in)  # float model input -> int8: a real runtime op
    dq_island = next(p for n in g.nodes if n.op_type == "LeakyRelu" for p in quant.dq_producers(n))
    assert quant.absorbed(dq_island)
    assert not quant.absorbed(dq_island, {"LeakyRelu"})


def test_qoperator_form(tmp_path):
    w = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.int8), "w")
    s = [numpy_helper.from_array(np.array(0.1, np.float32), n) for n in ("xs", "ws", "ys")]
    z = [numpy_helper.from_array(np.array(0, np.int8), n) for n in ("xz", "wz", "yz")]
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"], name="qconv", pads=[1, 1, 1, 1])
    m = model([node], [vi("x", [1, 3, 8, 8], 3)], [vi("y", [1, 4, 8, 8], 3)], [w] + s + z)
    p = tmp_path / "q.onnx"
    p.write_bytes(m.SerializeToString())
    g = load(p)
    assert quant.graph_quant_form(g) == "qoperator"
    assert quant.exec_dtype(g.node("qconv")) == "int8" and quant.executes_in_int8(g.node("qconv"))


def test_tflite_explicit_island(tmp_path):
    p = tmp_path / "i.tflite"
    p.write_bytes(int8_conv_leaky(explicit_island=True))
    g = load(p)
    leaky = next(n for n in g.nodes if n.op_type == "LEAKY_RELU")
    assert quant.exec_dtype(leaky) == "float32" and quant.is_float_island(leaky)
    (isl,) = quant.islands(g)
    assert isl.dequantize == ["DEQUANTIZE_1"] and isl.quantize == ["QUANTIZE_3"] and not isl.implicit


def test_float_model_has_no_islands(tmp_path):
    m = qdq_op("Relu", [1, 4, 8, 8], [1, 4, 8, 8])
    p = tmp_path / "r.onnx"
    p.write_bytes(m.SerializeToString())
    assert quant.islands(load(p)) == []

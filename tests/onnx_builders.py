"""Tiny ONNX graphs built with onnx.helper for engine/loader tests."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def conv_weight(name: str, cout: int, cin: int, k: int = 3, seed: int = 0):
    rng = np.random.default_rng(seed)
    return numpy_helper.from_array(rng.standard_normal((cout, cin, k, k)).astype(np.float32), name)


def model(nodes, inputs, outputs, inits=(), opset: int = 13, domains=()):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, 1) for d in domains]
    m = helper.make_model(g, opset_imports=opsets, producer_name="npufit-tests")
    m.ir_version = 8
    return m


def vi(name: str, shape, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


def branchy_model() -> onnx.ModelProto:
    """conv -> relu -> [TopK island] -> conv, with a skip connection across the island and two outputs."""
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Mod", ["r1", "m"], ["mod"], name="mod", fmod=1),
        helper.make_node("Add", ["mod", "r1"], ["a1"], name="add_skip"),
        helper.make_node("Conv", ["a1", "w2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["y"], name="relu2"),
        helper.make_node("Sigmoid", ["r1"], ["aux"], name="sig_aux"),
    ]
    inits = [conv_weight("w1", 8, 3), conv_weight("w2", 8, 8, seed=1), numpy_helper.from_array(np.array(3.0, np.float32), "m")]
    return model(nodes, [vi("x", [1, 3, 16, 16])], [vi("y", [1, 8, 16, 16]), vi("aux", [1, 8, 16, 16])], inits)

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


def zoo_model(i: int) -> onnx.ModelProto:
    """The i-th model of a generated zoo: conv blocks whose depth, width and odd ops vary with i, so that
    coverage, partitions and reasons differ between models and targets (scan tests and benchmarks)."""
    c, hw = 4 + 4 * (i % 3), 8 + 4 * (i % 2)
    nodes, inits, cur = [], [], "x"
    for b in range(2 + i % 4):
        w = f"w{b}"
        inits.append(conv_weight(w, c, c, seed=i * 7 + b))
        nodes.append(helper.make_node("Conv", [cur, w], [f"c{b}"], name=f"conv{b}", pads=[1, 1, 1, 1]))
        nodes.append(helper.make_node("Relu", [f"c{b}"], [f"r{b}"], name=f"relu{b}"))
        cur = f"r{b}"
        if (i + b) % 5 == 0:  # an op few NPUs run
            inits.append(numpy_helper.from_array(np.array(3.0, np.float32), f"m{b}"))
            nodes.append(helper.make_node("Mod", [cur, f"m{b}"], [f"mod{b}"], name=f"mod{b}", fmod=1))
            cur = f"mod{b}"
        if (i + b) % 7 == 3:  # a rank-3 reshape (a layout several targets reject)
            inits.append(numpy_helper.from_array(np.array([1, c, hw * hw], np.int64), f"s{b}"))
            inits.append(numpy_helper.from_array(np.array([1, c, hw, hw], np.int64), f"t{b}"))
            nodes.append(helper.make_node("Reshape", [cur, f"s{b}"], [f"flat{b}"], name=f"flat{b}"))
            nodes.append(helper.make_node("Softmax", [f"flat{b}"], [f"sm{b}"], name=f"softmax{b}", axis=-1))
            nodes.append(helper.make_node("Reshape", [f"sm{b}", f"t{b}"], [f"back{b}"], name=f"back{b}"))
            cur = f"back{b}"
    nodes.append(helper.make_node("GlobalAveragePool", [cur], ["y"], name="gap"))
    return model(nodes, [vi("x", [1, c, hw, hw])], [vi("y", [1, c, 1, 1])], inits, opset=13 + i % 5)


def write_zoo(folder, n: int) -> list:
    """n generated models in folder/family_k/model_i.onnx (nested, as real zoos are); returns their paths."""
    from pathlib import Path

    paths = []
    for i in range(n):
        p = Path(folder) / f"family_{i % 3}" / f"model_{i:03d}.onnx"
        p.parent.mkdir(parents=True, exist_ok=True)
        onnx.save_model(zoo_model(i), str(p))
        paths.append(p)
    return paths

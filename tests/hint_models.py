"""Small ONNX models for the hint-precondition and plain-words tests (built with onnx.helper, nothing committed)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def topk_model(path: Path, k: int, opset: int = 13) -> Path:
    """x [1,8,1,512] -> 1x1 Conv -> TopK(k) over the last axis (a detector's top-k of its anchors, k = 1 a
    classifier's argmax): the values and the indices are outputs."""
    rng = np.random.default_rng(0)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 1, 512])
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], "conv", kernel_shape=[1, 1]),
        helper.make_node("TopK", ["c", "k"], ["values", "indices"], "topk", axis=3),
    ]
    inits = [
        numpy_helper.from_array(rng.standard_normal((8, 8, 1, 1)).astype(np.float32), "w"),
        numpy_helper.from_array(np.array([k], dtype=np.int64), "k"),
    ]
    outs = [
        helper.make_tensor_value_info("values", TensorProto.FLOAT, [1, 8, 1, k]),
        helper.make_tensor_value_info("indices", TensorProto.INT64, [1, 8, 1, k]),
    ]
    m = helper.make_model(helper.make_graph(nodes, "topk", [x], outs, inits), opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.save(m, str(path))
    return Path(path)


def float_conv_model(path: Path) -> Path:
    """x [1,3,16,16] -> 3x3 Conv -> Relu: a float model every int8-only target needs quantized."""
    rng = np.random.default_rng(0)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 16, 16])
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], "conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["y"], "relu"),
    ]
    inits = [
        numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "w"),
        numpy_helper.from_array(np.zeros(8, np.float32), "b"),
    ]
    m = helper.make_model(helper.make_graph(nodes, "conv", [x], [y], inits), opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, str(path))
    return Path(path)

"""Small CNNs for the quantize tests, built with onnx.helper (no torch export, no committed binaries)."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from .onnx_builders import model, vi

OUTLIER_TENSOR = "outlier"  # the activation the broken variant injects the outlier channel into
OUTLIER_CHANNEL = 5


def _w(rng, cout, cin, k):
    return (rng.standard_normal((cout, cin, k, k)) / np.sqrt(cin * k * k)).astype(np.float32)


def small_cnn(broken: bool = False, size: int = 32, seed: int = 0) -> onnx.ModelProto:
    """conv-relu x3 -> global pool -> gemm (logits) plus a 1x1-conv feature head (two outputs).

    broken=True adds a constant Add after the second block that lifts one channel by 500 (an activation whose
    int8 range is set by that one channel), and zeroes the next conv's weights for it, so the float model
    computes exactly what the clean one does while the quantized one crushes every other channel.
    """
    rng = np.random.default_rng(seed)
    w1, w2, w3 = _w(rng, 8, 3, 3), _w(rng, 16, 8, 3), _w(rng, 16, 16, 3)
    b1, b2, b3 = (rng.standard_normal(c).astype(np.float32) * 0.1 for c in (8, 16, 16))
    wh = _w(rng, 4, 16, 1)
    fc = (rng.standard_normal((10, 16)) / 4).astype(np.float32)
    fcb = np.zeros(10, np.float32)
    x2 = "r2"
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], name="conv2", pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
    ]
    inits = []
    if broken:
        lift = np.zeros((1, 16, 1, 1), np.float32)
        lift[0, OUTLIER_CHANNEL] = 500.0
        w3 = w3.copy()
        w3[:, OUTLIER_CHANNEL] = 0.0
        nodes.append(helper.make_node("Add", ["r2", "lift"], [OUTLIER_TENSOR], name="inject_outlier"))
        inits.append(numpy_helper.from_array(lift, "lift"))
        x2 = OUTLIER_TENSOR
    nodes += [
        helper.make_node("Conv", [x2, "w3", "b3"], ["c3"], name="conv3", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c3"], ["r3"], name="relu3"),
        helper.make_node("Conv", ["r3", "wh"], ["features"], name="head"),
        helper.make_node("GlobalAveragePool", ["r3"], ["gap"], name="gap"),
        helper.make_node("Flatten", ["gap"], ["flat"], name="flatten"),
        helper.make_node("Gemm", ["flat", "fc", "fcb"], ["logits"], name="fc", transB=1),
    ]
    inits += [numpy_helper.from_array(a, n) for a, n in
              ((w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2"), (w3, "w3"), (b3, "b3"), (wh, "wh"), (fc, "fc"), (fcb, "fcb"))]
    half = size // 2
    return model(nodes, [vi("x", [1, 3, size, size])], [vi("logits", [1, 10]), vi("features", [1, 4, half, half])], inits)


def save(m: onnx.ModelProto, path) -> str:
    onnx.save_model(m, str(path))
    return str(path)

"""rk3588: one passing and one failing node per rule family, with the reason sentence (float ONNX, as RKNN takes it)."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import numpy_helper

from .quant_builders import float_op
from .target_cases import judge

T = "rk3588"


def conv(k=3, s=1, d=1, group=1, cin=8, cout=8, hw=32, pad=None):
    p = pad if pad is not None else (k // 2) * d
    o = (hw + 2 * p - d * (k - 1) - 1) // s + 1
    w = numpy_helper.from_array(np.ones((cout, cin // group, k, k), np.float32), "w")
    return float_op("Conv", [1, cin, hw, hw], [1, cout, o, o], dict(kernel_shape=[k, k], strides=[s, s], dilations=[d, d], pads=[p] * 4, group=group), inits=[w])


def c(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


CASES = [  # (rule id, passing, failing, words, failing verdict)
    ("conv.kernel", conv(k=7), conv(k=33, pad=0, hw=40), "convolution kernels must be 1..31 (depthwise 1..8)", "cpu"),
    ("conv.kernel", conv(k=7, group=8), conv(k=9, group=8), "(depthwise 1..8)", "cpu"),
    ("conv.stride", conv(s=2), conv(s=8, k=3, pad=1), "convolution stride must be 1..7", "cpu"),
    ("conv.pads", conv(k=3), conv(k=3, pad=16), "convolution pads must each be 0..15", "cpu"),
    ("pool.limits", float_op("MaxPool", [1, 8, 16, 16], [1, 8, 8, 8], dict(kernel_shape=[2, 2], strides=[2, 2])),
     float_op("MaxPool", [1, 8, 16, 16], [1, 8, 2, 2], dict(kernel_shape=[8, 8], strides=[8, 8])), "pooling: kernel ≤ 7", "cpu"),
    ("pool.ceil_mode", float_op("MaxPool", [1, 8, 16, 16], [1, 8, 8, 8], dict(kernel_shape=[2, 2], strides=[2, 2])),
     float_op("MaxPool", [1, 8, 15, 15], [1, 8, 8, 8], dict(kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1)), "only ceil_mode=0", "cpu"),
    ("resize.config", float_op("Resize", [1, 8, 4, 4], [1, 8, 8, 8], dict(mode="nearest"), inits=[c("roi", np.zeros(0, np.float32)), c("sc", np.array([1, 1, 2, 2], np.float32))]),
     float_op("Resize", [1, 8, 4, 4], [1, 8, 6, 6], dict(mode="nearest"), inits=[c("roi", np.zeros(0, np.float32)), c("sc", np.array([1, 1, 1.5, 1.5], np.float32))]),
     "integer H/W scale factors 2..8", "cpu"),
    ("softmax.axis", float_op("Softmax", [1, 8, 4, 4], [1, 8, 4, 4], dict(axis=1)), float_op("Softmax", [1, 8, 4, 4], [1, 8, 4, 4], dict(axis=2)),
     "Softmax runs on the NPU along axis 1 or 3 only", "cpu"),
    ("slice.steps", float_op("Slice", [1, 8, 4, 4], [1, 4, 4, 4], inits=[c("st", [0]), c("en", [4]), c("ax", [1]), c("sp", [1])]),
     float_op("Slice", [1, 8, 4, 4], [1, 4, 4, 4], inits=[c("st", [0]), c("en", [8]), c("ax", [1]), c("sp", [2])]), "Slice steps must all be 1", "cpu"),
    ("pow.exponent", float_op("Pow", [1, 8, 4, 4], [1, 8, 4, 4], inits=[c("e", np.array(2.0, np.float32))]),
     float_op("Pow", [1, 8, 4, 4], [1, 8, 4, 4], inits=[c("e", np.array(1.7, np.float32))]), "constant exponent in 0.0, 1.0, 2.0, 3.0, 0.5, -0.5", "cpu"),
    ("transpose.perm", float_op("Transpose", [1, 8, 16, 16], [1, 16, 16, 8], dict(perm=[0, 2, 3, 1])),
     float_op("Transpose", [1, 8, 15, 15], [1, 15, 15, 8], dict(perm=[0, 2, 3, 1])), "h·w % 8 == 0", "cpu"),
    ("matmul.k", float_op("MatMul", [1, 4, 64], [1, 4, 8], inits=[c("b", np.ones((64, 8), np.float32))]),
     float_op("MatMul", [1, 4, 9000], [1, 4, 8], inits=[c("b", np.ones((9000, 8), np.float32))]), "MatMul (exMatMul) needs K ≤ 8192", "cpu"),
    ("axis.range", float_op("Concat", [[1, 8, 4, 4], [1, 8, 4, 4]], [1, 16, 4, 4], dict(axis=1), n_inputs=2),
     float_op("Concat", [[1, 2, 3, 4, 5], [1, 2, 3, 4, 5]], [1, 2, 3, 4, 10], dict(axis=4), n_inputs=2), "the axis must be 0..3", "cpu"),
    ("rank", float_op("Relu", [1, 8, 4, 4], [1, 8, 4, 4]), float_op("Relu", [1, 2, 3, 4, 5], [1, 2, 3, 4, 5]), "more than 4 dimensions run on the CPU", "cpu"),
]


@pytest.mark.parametrize("rid,good,bad,words,verdict", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_rule_family(rid, good, bad, words, verdict):
    v, reasons = judge(good, T)
    assert v == "npu", reasons
    v, reasons = judge(bad, T)
    assert v == verdict and f"{T}.{rid}" in reasons, reasons
    assert words in reasons[f"{T}.{rid}"]


def test_cpu_kernels_and_converter_rejections():
    v, reasons = judge(float_op("ReduceMax", [1, 8, 4, 4], [1, 8, 1, 1], dict(axes=[2, 3])), T)
    assert v == "cpu" and "RK3588 NPU operator list: the RKNN runtime runs its CPU kernel" in reasons[f"{T}.op.ReduceMax"]
    v, reasons = judge(float_op("GatherND", [1, 8, 4, 4], [1, 4, 4], inits=[c("i", np.zeros((1, 1), np.int64))]), T)
    assert v == "unsupported" and "not supported by the RKNN-Toolkit2 converter" in reasons[f"{T}.op.GatherND"]
    v, reasons = judge(float_op("Xyz", [1, 8], [1, 8]), T)
    assert v == "unsupported" and "not in RKNN-Toolkit2's ONNX operator list" in reasons[f"{T}.op.unknown"]


def test_global_pooling_of_any_size_runs_on_npu():
    # Expectation changed (was: > 7x7 -> cpu, rule rk3588.global_pool.size from the R-PDF): RKNN-Toolkit2 2.5.0
    # split 20x20, 64x64 and 160x160 global average/max pooling into NPU conv/pool tiles (RKNN-C, simulator cosine 1.0).
    for op in ("GlobalAveragePool", "GlobalMaxPool"):
        assert judge(float_op(op, [1, 8, 64, 64], [1, 8, 1, 1]), T) == ("npu", {})


def test_silu_is_fused():
    from onnx import helper

    from .onnx_builders import model, vi

    m = model([helper.make_node("Sigmoid", ["x"], ["s"], name="sig"), helper.make_node("Mul", ["x", "s"], ["y"], name="op")],
              [vi("x", [1, 8, 4, 4])], [vi("y", [1, 8, 4, 4])])
    assert judge(m, T) == ("npu", {})
    assert judge(m, "ethos-n78")[0] == "cpu"  # var × var multiply has no Ethos-N pattern

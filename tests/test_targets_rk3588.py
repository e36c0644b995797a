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
    # depthwise, stride and pooling limits as measured by `npufit probe --compiler rknn` (PROBE-R), not the R-PDF's 8 / 7 / 7
    ("conv.kernel", conv(k=7), conv(k=33, pad=0, hw=40), "convolution kernels must be 1..31", "cpu"),
    ("conv.kernel", conv(k=31, group=8, hw=40), conv(k=33, group=8, pad=0, hw=40), "depthwise too: 3..31 measured", "cpu"),
    ("conv.stride", conv(s=16, k=3, pad=1), conv(s=17, k=3, pad=1, hw=64), "convolution stride must be 1..16", "cpu"),
    ("conv.pads", conv(k=3), conv(k=3, pad=16), "convolution pads must each be 0..15", "cpu"),
    ("pool.limits", float_op("MaxPool", [1, 8, 64, 64], [1, 8, 1, 1], dict(kernel_shape=[64, 64], strides=[2, 2])),
     float_op("MaxPool", [1, 8, 130, 130], [1, 8, 2, 2], dict(kernel_shape=[65, 65], strides=[2, 2])), "pooling: kernel ≤ 64", "cpu"),
    ("pool.auto_pad", float_op("MaxPool", [1, 8, 15, 15], [1, 8, 8, 8], dict(kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1)),
     float_op("MaxPool", [1, 8, 15, 15], [1, 8, 8, 8], dict(kernel_shape=[2, 2], strides=[2, 2], auto_pad="SAME_UPPER")), "only auto_pad=NOTSET", "cpu"),
    ("resize.config", float_op("Resize", [1, 8, 4, 4], [1, 8, 8, 8], dict(mode="nearest"), inits=[c("roi", np.zeros(0, np.float32)), c("sc", np.array([1, 1, 2, 2], np.float32))]),
     float_op("Resize", [1, 8, 4, 4], [1, 8, 6, 6], dict(mode="linear"), inits=[c("roi", np.zeros(0, np.float32)), c("sc", np.array([1, 1, 1.5, 1.5], np.float32))]),
     "integer H/W scale factors 2..8", "cpu"),
    ("softmax.axis", float_op("Softmax", [1, 8, 4, 4], [1, 8, 4, 4], dict(axis=1)), float_op("Softmax", [1, 8, 4, 4], [1, 8, 4, 4], dict(axis=2)),
     "Softmax runs on the NPU along axis 1 or 3", "cpu"),
    ("slice.steps", float_op("Slice", [1, 8, 4, 4], [1, 4, 4, 4], inits=[c("st", [0]), c("en", [4]), c("ax", [1]), c("sp", [1])]),
     # a step other than 1 runs on the NPU only inside a space-to-depth reorg (CAL-R: swinv2, cases); alone, on the CPU
     float_op("Slice", [1, 8, 4, 4], [1, 8, 4, 4], inits=[c("st", [-1]), c("en", [-9]), c("ax", [1]), c("sp", [-1])]),
     "runs on the NPU only inside a space-to-depth reorg", "cpu"),
    ("pow.exponent", float_op("Pow", [1, 8, 4, 4], [1, 8, 4, 4], inits=[c("e", np.array(2.0, np.float32))]),
     float_op("Pow", [1, 8, 4, 4], [1, 8, 4, 4], inits=[c("e", np.array(1.7, np.float32))]), "constant exponent in 0.0, 1.0, 2.0, 3.0, 0.5, -0.5", "cpu"),
    ("matmul.k", float_op("MatMul", [1, 4, 64], [1, 4, 8], inits=[c("b", np.ones((64, 8), np.float32))]),
     float_op("MatMul", [1, 4, 9000], [1, 4, 8], inits=[c("b", np.ones((9000, 8), np.float32))]), "MatMul (exMatMul) needs K ≤ 8192", "cpu"),
    ("axis.range", float_op("Concat", [[1, 8, 4, 4], [1, 8, 4, 4]], [1, 16, 4, 4], dict(axis=1), n_inputs=2),
     float_op("Concat", [[1, 2, 3, 4, 5], [1, 2, 3, 4, 5]], [1, 2, 3, 4, 10], dict(axis=4), n_inputs=2), "the axis must be 0..3", "cpu"),
    ("rank", float_op("Relu", [1, 8, 4, 4], [1, 8, 4, 4]), float_op("Relu", [1, 2, 3, 4, 5], [1, 2, 3, 4, 5]), "more than 4 dimensions run on the CPU", "cpu"),
    # measured by the probe (PROBE-R): which Tile / GatherElements / 5-D Slice / 6-D Transpose stay on the NPU
    ("tile.axes", float_op("Tile", [1, 8, 4, 4], [1, 16, 4, 4], inits=[c("r", np.array([1, 2, 1, 1], np.int64))]),
     float_op("Tile", [1, 8, 4, 4], [2, 8, 4, 4], inits=[c("r", np.array([2, 1, 1, 1], np.int64))]), "repeating the batch or two axes", "cpu"),
    ("tile.axes", float_op("Tile", [1, 8, 4, 4], [1, 8, 8, 4], inits=[c("r", np.array([1, 1, 2, 1], np.int64))]),
     float_op("Tile", [1, 8, 4, 4], [1, 8, 8, 8], inits=[c("r", np.array([1, 1, 2, 2], np.int64))]), "tile 2 axes", "cpu"),
    ("gather_elements.indices", float_op("GatherElements", [1, 8, 16, 16], [1, 8, 4, 16], dict(axis=2), inits=[c("i", np.zeros((1, 8, 4, 16), np.int64))]),
     float_op("GatherElements", [1, 8, 16, 16], [1, 8, 4, 4], dict(axis=2), inits=[c("i", np.zeros((1, 8, 4, 4), np.int64))]),
     "differ from the data [1, 8, 16, 16] on axis 3", "cpu"),
    ("gather_elements.indices", float_op("GatherElements", [1, 336, 4], [1, 20, 4], dict(axis=1), inits=[c("i", np.zeros((1, 20, 4), np.int64))]),
     float_op("GatherElements", [[1, 336, 4], [1, 20, 4]], [1, 20, 4], dict(axis=1), n_inputs=2), "computed at run time", "cpu"),  # RT-DETR's
    ("rank", float_op("Slice", [1, 2, 4, 16, 16], [1, 1, 4, 16, 16], inits=[c("st", [1]), c("en", [2]), c("ax", [1])]),
     float_op("Slice", [1, 2, 4, 16, 16], [1, 2, 2, 16, 16], inits=[c("st", [2]), c("en", [4]), c("ax", [2])]), "(rank 5)", "cpu"),
    ("rank", float_op("Transpose", [1, 2, 3, 4, 5], [1, 2, 3, 5, 4], dict(perm=[0, 1, 2, 4, 3])),
     float_op("Transpose", [1, 2, 3, 4, 5, 6], [1, 2, 3, 4, 6, 5], dict(perm=[0, 1, 2, 3, 5, 4])), "(rank 6)", "cpu"),
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
    assert judge(m, "ethos-n78")[0] == "npu"  # the Ethos-N support library multiplies equal-shape activations (N-LIB)


def test_rk3588_is_not_an_int8_only_target():
    """RKNN builds float16 too: a float model is judged as float (no 'runs int8 only' warning, no int8 Div rule);
    the pipeline, which always builds int8, still judges the int8 model."""
    from npufit.targets import get_profile
    from npufit.targets.base import Executes

    assert get_profile(T).executes is Executes.FP16_INT8
    assert get_profile("ethos-u55-256").executes is Executes.INT8 and get_profile("ethos-n78").executes is Executes.INT8
    assert get_profile("hailo8").executes is Executes.QUANTIZES_ITSELF


def test_ops_the_probe_moved():
    """npufit probe --compiler rknn (PROBE-R) contradicted the R-PDF / R-OP lists for these ops."""
    from npufit.targets import get_profile

    ops = get_profile(T).ops
    for op in ("InstanceNormalization", "DepthToSpace", "Sqrt", "Abs", "Neg"):  # documented CPU or unknown; ran on the NPU
        assert ops[op].status.value == "npu" and ops[op].source == "PROBE-R", op
    for op in ("Selu", "Reciprocal"):  # R-OP does not list them; the converter took them as CPU layers
        assert ops[op].status.value == "cpu" and ops[op].source == "PROBE-R", op
    for op in ("Exp", "Log", "Floor", "Sin"):  # the probe agreed with the R-PDF
        assert ops[op].status.value == "cpu" and ops[op].source == "R-PDF", op
    assert "docs/probe/rk3588-matrix.md" in get_profile(T).sources["PROBE-R"]
    nearest = float_op("Resize", [1, 8, 4, 4], [1, 8, 6, 6], dict(mode="nearest"),
                       inits=[c("roi", np.zeros(0, np.float32)), c("sc", np.array([1, 1, 1.5, 1.5], np.float32))])
    assert judge(nearest, T) == ("npu", {})


@pytest.mark.parametrize("channels,size,verdict", [(8, 1, "npu"), (16, 1, "npu"), (12, 1, "cpu"), (4, 2, "cpu"), (6, 2, "cpu")])
def test_output_flatten_of_an_npu_tensor(channels, size, verdict):
    """PROBE-R flatten_output / flatten_output_1x1: conv -> Flatten as the model output."""
    from onnx import helper

    from .onnx_builders import model, vi

    w = c("w", np.ones((channels, 8, 1, 1), np.float32))
    nodes = [helper.make_node("Conv", ["x", "w"], ["f"], name="conv"), helper.make_node("Flatten", ["f"], ["y"], name="op", axis=1)]
    m = model(nodes, [vi("x", [1, 8, size, size])], [vi("y", [1, channels * size * size])], [w])
    v, reasons = judge(m, T)
    assert v == verdict, reasons


def test_large_transposes_stay_on_the_npu():
    """Expectation changed (was: R-PDF per-permutation size limits, rule rk3588.transpose.perm): the probe's
    transpose_*_size sweeps ran [0,1,3,2], [0,2,3,1] and [0,3,1,2] on the NPU up to 8x256x256 (PROBE-R)."""
    for perm in ([0, 1, 3, 2], [0, 2, 3, 1], [0, 3, 1, 2]):
        x = [1, 8, 256, 256]
        assert judge(float_op("Transpose", x, [x[p] for p in perm], dict(perm=perm)), T) == ("npu", {}), perm

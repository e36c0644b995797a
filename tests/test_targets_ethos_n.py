"""ethos-n78: one passing and one failing node per rule family, with the reason sentence."""
from __future__ import annotations

import numpy as np
import pytest

from .quant_builders import float_op, qdq_op
from .target_cases import judge

T = "ethos-n78"
W = np.random.default_rng(0).standard_normal


def conv(k=3, s=1, d=1, group=1, cin=8, cout=16, hw=16):
    o = (hw + 2 * (k // 2) * d - d * (k - 1) - 1) // s + 1
    return qdq_op("Conv", [1, cin, hw, hw], [1, cout, o, o], dict(kernel_shape=[k, k], strides=[s, s], dilations=[d, d], pads=[(k // 2) * d] * 4, group=group),
                  weight=W((cout, cin // group, k, k)).astype(np.float32))


CASES = [  # (rule id, passing model, failing model, words of the sentence)
    ("conv.kernel", conv(k=3), conv(k=4), "kernel height and width must each be one of 1, 2, 3, 5, 7, 9"),
    ("conv.stride", conv(s=2), conv(s=3), "stride must be equal in H and W and one of 1, 2"),
    ("conv.dilation", conv(), conv(d=2), "dilated convolution is not offloaded"),
    ("depthwise.multiplier", conv(group=8, cin=8, cout=8), conv(group=8, cin=8, cout=16), "channel multiplier must be 1"),
    ("maxpool.config", qdq_op("MaxPool", [1, 8, 16, 16], [1, 8, 8, 8], dict(kernel_shape=[2, 2], strides=[2, 2])),
     qdq_op("MaxPool", [1, 8, 16, 16], [1, 8, 4, 4], dict(kernel_shape=[4, 4], strides=[4, 4])), "max pooling supports 1x1/2x2/3x3 with stride 2"),
    ("avgpool.config", qdq_op("AveragePool", [1, 8, 16, 16], [1, 8, 16, 16], dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1])),
     qdq_op("AveragePool", [1, 8, 16, 16], [1, 8, 8, 8], dict(kernel_shape=[2, 2], strides=[2, 2])), "average pooling supports only 3x3 stride 1 SAME"),
    ("mean.size", qdq_op("GlobalAveragePool", [1, 8, 7, 7], [1, 8, 1, 1]), qdq_op("GlobalAveragePool", [1, 8, 10, 10], [1, 8, 1, 1]),
     "mean over H,W supports only 7x7 or 8x8 inputs"),
    ("mul.constant", qdq_op("Mul", [1, 8, 4, 4], [1, 8, 4, 4], n_inputs=2),  # activation x activation: the library multiplies
     qdq_op("Mul", [1, 8, 4, 4], [1, 8, 4, 4], extra_inputs=[("c", np.ones((1, 8, 4, 4), np.float32))]),
     "a multiplication by a constant needs a scalar or a per-channel [C] constant"),
    ("add.constant", qdq_op("Add", [1, 8, 4, 4], [1, 8, 4, 4], n_inputs=2),
     qdq_op("Add", [1, 8, 4, 4], [1, 8, 4, 4], extra_inputs=[("c", np.ones((1, 8, 4, 4), np.float32))]), "scalar or a per-channel [C] constant"),
    ("sigmoid.qparams", qdq_op("Sigmoid", [1, 8, 4, 4], [1, 8, 4, 4], out_scale=1 / 256, out_zp=-128),
     qdq_op("Sigmoid", [1, 8, 4, 4], [1, 8, 4, 4]), "sigmoid offloads (qnn_sigmoid) only when its output quantization is scale 1/256"),
    ("tanh.qparams", qdq_op("Tanh", [1, 8, 4, 4], [1, 8, 4, 4], out_scale=1 / 128), qdq_op("Tanh", [1, 8, 4, 4], [1, 8, 4, 4]),
     "tanh offloads (qnn_tanh) only when its output quantization is scale 1/128"),
    ("concat.axis", qdq_op("Concat", [[1, 8, 4, 4], [1, 16, 4, 4]], [1, 24, 4, 4], dict(axis=1), n_inputs=2),  # any channel count (N-LIB)
     qdq_op("Concat", [[1, 8, 4, 4], [1, 8, 4, 4]], [2, 8, 4, 4], dict(axis=0), n_inputs=2), "cannot run along the batch axis"),
    ("maxpool.config", qdq_op("MaxPool", [1, 8, 17, 17], [1, 8, 8, 8], dict(kernel_shape=[3, 3], strides=[2, 2])),
     qdq_op("MaxPool", [1, 8, 16, 16], [1, 8, 7, 7], dict(kernel_shape=[3, 3], strides=[2, 2])), "VALID 3x3/2 only on odd input sizes"),
    ("slice.unit_stride", qdq_op("Slice", [1, 16, 4, 4], [1, 8, 4, 4], extra_inputs=[
        ("st", np.array([0], np.int64)), ("en", np.array([8], np.int64)), ("ax", np.array([1], np.int64))]),
     qdq_op("Slice", [1, 16, 4, 4], [1, 8, 2, 4], extra_inputs=[
         ("st", np.array([0, 0], np.int64)), ("en", np.array([8, 2], np.int64)), ("ax", np.array([1, 2], np.int64))]),
     "unit steps along one axis"),
    ("resize.scale", qdq_op("Resize", [1, 8, 4, 4], [1, 8, 8, 8], dict(mode="nearest"), extra_inputs=[("roi", np.zeros(0, np.float32)), ("sc", np.array([1, 1, 2, 2], np.float32))]),
     qdq_op("Resize", [1, 8, 4, 4], [1, 8, 16, 16], dict(mode="nearest"), extra_inputs=[("roi", np.zeros(0, np.float32)), ("sc", np.array([1, 1, 4, 4], np.float32))]),
     "output height/width = 2n or 2n−1"),
    ("depth_to_space.block", qdq_op("DepthToSpace", [1, 16, 4, 4], [1, 4, 8, 8], dict(blocksize=2)),
     qdq_op("DepthToSpace", [1, 36, 4, 4], [1, 4, 12, 12], dict(blocksize=3)), "block size 2"),
    ("batch", conv(), qdq_op("Relu", [2, 8, 4, 4], [2, 8, 4, 4]), "batch size must be 1"),
    ("rank", qdq_op("Relu", [1, 8, 4, 4], [1, 8, 4, 4]), qdq_op("Relu", [1, 2, 3, 4, 5], [1, 2, 3, 4, 5]), "at most 4 dimensions"),
    ("dtype", qdq_op("Relu", [1, 8, 4, 4], [1, 8, 4, 4]), float_op("Relu", [1, 8, 4, 4], [1, 8, 4, 4]), "must be int8 or uint8"),
]


@pytest.mark.parametrize("rid,good,bad,words", CASES, ids=[c[0] for c in CASES])
def test_rule_family(rid, good, bad, words):
    v, reasons = judge(good, T)
    assert v == "npu", reasons
    v, reasons = judge(bad, T, mode="float" if rid.endswith("dtype") else "auto")  # the float graph itself
    assert v == "cpu" and f"{T}.{rid}" in reasons, reasons
    assert words in reasons[f"{T}.{rid}"]


def test_leaky_relu_island_runs_on_host():
    v, reasons = judge(qdq_op("LeakyRelu", [1, 8, 4, 4], [1, 8, 4, 4], dict(alpha=0.1)), T)
    assert v == "cpu" and "dequantize → leaky_relu → quantize" in reasons[f"{T}.leaky_relu.island"]
    v, reasons = judge(qdq_op("LeakyRelu", [1, 8, 4, 4], [1, 8, 4, 4], dict(alpha=0.1)), T, node="dq_in0")
    assert v == "cpu" and "bounds a host float island" in reasons[f"{T}.qdq.standalone"]
    v, _ = judge(conv(), T, node="dq_in0")  # the dequantize feeding an int8 conv is part of qnn_conv2d
    assert v == "npu"


def test_transpose_runs_on_the_npu():  # N-LIB: the library transposes 4-D tensors (TVM's pattern table has none)
    v, reasons = judge(qdq_op("Transpose", [1, 8, 4, 4], [1, 4, 4, 8], dict(perm=[0, 2, 3, 1])), T)
    assert v == "npu", reasons


@pytest.mark.parametrize("op,shape,attrs,text", [
    ("Softmax", [1, 8, 4, 4], dict(axis=1), "softmax has no Ethos-N pattern"),
    ("Exp", [1, 8, 4, 4], {}, "has no operation in the Ethos-N support library"),
])
def test_host_ops(op, shape, attrs, text):
    out = [shape[i] for i in attrs.get("perm", range(len(shape)))]
    v, reasons = judge(qdq_op(op, shape, out, attrs), T)
    assert v == "cpu" and any(text in s for s in reasons.values()), reasons

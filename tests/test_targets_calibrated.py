"""The rk3588 conditions fitted to the calibration records (CAL-R), each on a tiny graph: the measured side and the
side that stays on the CPU; and the leave-one-family-out switch that turns a condition off."""
from __future__ import annotations

import copy

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from npufit.check import check_graph
from npufit.graph.onnx_loader import build_graph
from npufit.targets import get_profile

from .onnx_builders import model, vi

T = "rk3588"


def _verdict(m, fit_families=None, node="op"):
    import onnx

    m = onnx.shape_inference.infer_shapes(m)
    g = build_graph(m, "test.onnx", {"ai.onnx": m.opset_import[0].version}, [])
    prof = get_profile(T)
    if fit_families is not None:
        prof = copy.copy(prof)
        prof.limits = {**prof.limits, "fit_families": tuple(fit_families)}
    return check_graph(g, prof).node(node).verdict.value


def _after_relu(op, shape, out_shape, attrs=None, inits=(), extra_inputs=()):
    """x -> Relu (an NPU op) -> op: the op's data comes from the NPU, as in the corpus models."""
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node(op, ["r", *extra_inputs], ["y"], name="op", **(attrs or {}))]
    return model(nodes, [vi("x", shape)], [vi("y", out_shape)], list(inits))


def _i64(name, v):
    return numpy_helper.from_array(np.array(v, np.int64), name)


def test_6d_transpose_keeping_the_innermost_axis_runs_on_the_npu():
    # swinv2's window partition: [1, 8, 4, 8, 4, 16] perm 0,1,3,2,4,5 -> NPU (CAL-R)
    keep = _after_relu("Transpose", [1, 8, 4, 8, 4, 16], [1, 8, 8, 4, 4, 16], dict(perm=[0, 1, 3, 2, 4, 5]))
    assert _verdict(keep) == "npu"
    # pixel_unshuffle moves the innermost axis (PROBE-R: CPU); six axes > 1 (hiera's second unroll: CPU)
    moves = _after_relu("Transpose", [1, 8, 8, 2, 8, 2], [1, 8, 2, 2, 8, 8], dict(perm=[0, 1, 3, 5, 2, 4]))
    assert _verdict(moves) == "cpu"
    six = _after_relu("Transpose", [4, 4, 2, 4, 2, 16], [4, 2, 2, 4, 4, 16], dict(perm=[0, 2, 4, 1, 3, 5]))
    assert _verdict(six) == "cpu"
    # fitted from transformer records only: off when transformers are held out
    assert _verdict(keep, fit_families=("cnn", "detector", "audio-rnn")) == "cpu"


def test_rank5_ops_on_npu_tensors_but_not_on_a_5d_model_input():
    m = _after_relu("Sigmoid", [1, 3, 17, 17, 9], [1, 3, 17, 17, 9])
    assert _verdict(m) == "npu"
    direct = model([helper.make_node("Sigmoid", ["x"], ["y"], name="op")], [vi("x", [1, 3, 17, 17, 9])], [vi("y", [1, 3, 17, 17, 9])])
    assert _verdict(direct) == "cpu"
    six = _after_relu("Sigmoid", [1, 3, 17, 17, 9, 2], [1, 3, 17, 17, 9, 2])
    assert _verdict(six) == "cpu"
    # shown by three families: holding one out keeps it
    assert _verdict(m, fit_families=("cnn", "transformer", "audio-rnn")) == "npu"
    assert _verdict(m, fit_families=("cnn",)) == "cpu"


def test_last_axis_softmax_and_positive_slice_steps():
    sm = _after_relu("Softmax", [2, 4, 4], [2, 4, 4], dict(axis=-1))
    assert _verdict(sm) == "npu"
    assert _verdict(_after_relu("Softmax", [1, 8, 4, 4], [1, 8, 4, 4], dict(axis=2))) == "cpu"
    step2 = _after_relu("Slice", [1, 16, 16, 16], [1, 8, 16, 16], inits=[_i64("st", [0]), _i64("en", [16]), _i64("ax", [1]), _i64("sp", [2])],
                        extra_inputs=("st", "en", "ax", "sp"))
    assert _verdict(step2) == "npu"
    assert _verdict(step2, fit_families=("cnn", "detector", "audio-rnn")) == "cpu"


def test_3d_pad_at_the_end_of_axis_1_runs_on_the_cpu():
    def pad(pads):
        return _after_relu("Pad", [1, 15, 16], [1, 16, 16], inits=[_i64("p", pads)], extra_inputs=("p",))

    assert _verdict(pad([0, 0, 0, 0, 1, 0])) == "cpu"  # mobilebert, sew
    assert _verdict(pad([0, 1, 0, 0, 0, 0])) == "npu"  # mobilebert's other pad


def test_reduce_l2_einsum_and_scatter_nd():
    l2 = _after_relu("ReduceL2", [1, 8, 8, 64], [1, 1, 1, 64], dict(keepdims=1), inits=[_i64("a", [1, 2])], extra_inputs=("a",))
    m = copy.deepcopy(l2)
    m.opset_import[0].version = 18
    assert _verdict(m) == "npu"
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("Einsum", ["r", "k"], ["y"], name="op", equation="bhlk,bhtk->bhlt")]
    ein = model(nodes, [vi("x", [1, 2, 16, 8]), vi("k", [1, 2, 16, 8])], [vi("y", [1, 2, 16, 16])], opset=13)
    assert _verdict(ein) == "npu"
    assert _verdict(ein, fit_families=("cnn",)) == "unsupported"
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"), helper.make_node("ScatterND", ["r", "i", "u"], ["y"], name="op")]
    inits = [_i64("i", [[[0]]])]
    sc = model(nodes, [vi("x", [1, 20, 4]), vi("u", [1, 1, 20, 4])], [vi("y", [1, 20, 4])], inits)
    assert _verdict(sc) == "npu"
    rt = model(nodes, [vi("x", [1, 20, 4]), vi("u", [1, 1, 20, 4]), vi("i", [1, 1, 1], TensorProto.INT64)], [vi("y", [1, 20, 4])])
    assert _verdict(rt) == "cpu"

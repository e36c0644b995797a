"""The rk3588 conditions fitted to the calibration records (CAL-R), each on a tiny graph: the measured side and the
side that stays on the CPU; and the leave-one-family-out switches that turn a condition off (fit_families; fit_cases
False drops the evidence of the synthetic case record too)."""
from __future__ import annotations

import copy

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from npufit.check import check_graph
from npufit.graph.onnx_loader import build_graph
from npufit.targets import get_profile

from .onnx_builders import model, vi

T = "rk3588"


def _verdict(m, fit_families=None, node="op", fit_cases=True):
    import onnx

    m = onnx.shape_inference.infer_shapes(m)
    g = build_graph(m, "test.onnx", {"ai.onnx": m.opset_import[0].version}, [])
    prof = get_profile(T)
    if fit_families is not None:
        prof = copy.copy(prof)
        prof.limits = {**prof.limits, "fit_families": tuple(fit_families), "fit_cases": fit_cases}
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
    # pixel_unshuffle moves the innermost axis (PROBE-R: CPU); a 7x7 window moves an odd axis back (cases: CPU)
    moves = _after_relu("Transpose", [1, 8, 8, 2, 8, 2], [1, 8, 2, 2, 8, 8], dict(perm=[0, 1, 3, 5, 2, 4]))
    assert _verdict(moves) == "cpu"
    odd = _after_relu("Transpose", [1, 2, 7, 2, 7, 16], [1, 2, 2, 7, 7, 16], dict(perm=[0, 1, 3, 2, 4, 5]))
    assert _verdict(odd) == "cpu"
    # six axes > 1 ran on the NPU in the cases ([2, 4, 2, 4, 2, 16] ...); an odd count of windows moves forward: NPU
    six = _after_relu("Transpose", [2, 4, 2, 4, 2, 16], [2, 2, 2, 4, 4, 16], dict(perm=[0, 2, 4, 1, 3, 5]))
    assert _verdict(six) == "npu"
    three = _after_relu("Transpose", [1, 3, 4, 3, 4, 16], [1, 3, 3, 4, 4, 16], dict(perm=[0, 1, 3, 2, 4, 5]))
    assert _verdict(three) == "npu"
    # transformer records and the case record show it: holding transformers out keeps it; dropping the cases too leaves
    # RANK6_LAYOUT (the detector/audio-rnn 5-D evidence one rank up), which keeps a transpose that keeps the innermost
    # axis, not one that moves it, and without those families too it is off
    assert _verdict(keep, fit_families=("cnn", "detector", "audio-rnn")) == "npu"
    assert _verdict(keep, fit_families=("cnn", "detector", "audio-rnn"), fit_cases=False) == "npu"
    assert _verdict(moves, fit_families=("cnn", "detector", "audio-rnn"), fit_cases=False) == "cpu"
    assert _verdict(keep, fit_families=("cnn",), fit_cases=False) == "cpu"


def test_6d_split_on_any_axis_and_depth_to_space_block_sizes():
    split = _after_relu("Split", [2, 4, 2, 4, 16, 3], [2, 4, 2, 4, 16, 1], dict(axis=5, num_outputs=3), )
    split.graph.node[1].output.extend(["y1", "y2"])
    split.opset_import[0].version = 18
    assert _verdict(split) == "npu"
    assert _verdict(split, fit_families=("cnn",), fit_cases=False) == "cpu"
    d2s3 = _after_relu("DepthToSpace", [1, 9, 8, 8], [1, 1, 24, 24], dict(blocksize=3))
    assert _verdict(d2s3) == "cpu"  # espcn, cases x3 and x6
    assert _verdict(_after_relu("DepthToSpace", [1, 16, 8, 8], [1, 1, 32, 32], dict(blocksize=4))) == "npu"
    # without the evidence: PROBE-R's x2 alone, DepthToSpace on the NPU
    assert _verdict(d2s3, fit_families=("transformer",), fit_cases=False) == "npu"


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
    assert _verdict(step2) == "cpu"  # a lone strided slice (cases slice-step2-c ...)


def _focus(phases):
    """YOLOv5's Focus: step-2 slices of H and W at `phases`, concatenated on the channels."""
    nodes, inits = [helper.make_node("Relu", ["x"], ["r"], name="relu")], [_i64("en", [1 << 30, 1 << 30]), _i64("ax", [2, 3]),
                                                                          _i64("sp", [2, 2])]
    for i, (a, b) in enumerate(phases):
        inits.append(_i64(f"st{i}", [a, b]))
        nodes.append(helper.make_node("Slice", ["r", f"st{i}", "en", "ax", "sp"], [f"s{i}"], name=f"op{i}" if i else "op"))
    nodes.append(helper.make_node("Concat", [f"s{i}" for i in range(len(phases))], ["y"], name="cat", axis=1))
    return model(nodes, [vi("x", [1, 8, 16, 16])], [vi("y", [1, 8 * len(phases), 8, 8])], inits)


def test_strided_slices_run_on_the_npu_as_a_space_to_depth_reorg():
    full = _focus([(0, 0), (1, 0), (0, 1), (1, 1)])
    assert _verdict(full) == "npu" and _verdict(full, node="op3") == "npu"
    assert _verdict(_focus([(0, 0), (1, 1)])) == "cpu"  # two of four phases (cases: CPU)
    assert _verdict(_focus([(0, 0), (1, 0), (0, 1), (0, 1)])) == "cpu"  # a phase twice, one missing
    assert _verdict(full, fit_families=("cnn", "detector", "audio-rnn"), fit_cases=False) == "cpu"


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
    assert _verdict(ein, fit_families=("cnn",)) == "npu"  # the case record shows every form measured
    assert _verdict(ein, fit_families=("cnn",), fit_cases=False) == "unsupported"
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"), helper.make_node("ScatterND", ["r", "i", "u"], ["y"], name="op")]
    inits = [_i64("i", [[[0]]])]
    sc = model(nodes, [vi("x", [1, 20, 4]), vi("u", [1, 1, 20, 4])], [vi("y", [1, 20, 4])], inits)
    assert _verdict(sc) == "npu"
    rt = model(nodes, [vi("x", [1, 20, 4]), vi("u", [1, 1, 20, 4]), vi("i", [1, 1, 1], TensorProto.INT64)], [vi("y", [1, 20, 4])])
    assert _verdict(rt) == "cpu"


def test_noops_the_toolkit_deletes_whatever_their_dtype():
    # clip_text's int64 input_ids Reshape to the same shape, and its index Add of a constant zero: deleted (CAL-R)
    def int64(op, out_shape, inits, extra):
        nodes = [helper.make_node(op, ["x", *extra], ["y"], name="op")]
        return model(nodes, [vi("x", [1, 16], TensorProto.INT64)], [vi("y", out_shape, TensorProto.INT64)], inits)

    same = int64("Reshape", [1, 16], [_i64("s", [1, 16])], ("s",))
    assert _verdict(same) == "npu"
    assert _verdict(int64("Reshape", [16], [_i64("s", [16])], ("s",))) == "cpu"  # a real int64 reshape
    assert _verdict(int64("Add", [1, 16], [_i64("z", [0])], ("z",))) == "npu"
    assert _verdict(int64("Add", [1, 16], [_i64("z", [1])], ("z",))) == "cpu"
    assert _verdict(int64("Add", [2, 16], [_i64("z", np.zeros((2, 1), np.int64))], ("z",))) == "cpu"  # broadcasts: not a no-op
    assert _verdict(same, fit_families=("cnn",)) == "cpu"


def test_gather_by_indices_computed_at_run_time_runs_on_the_cpu():
    def gather(const):
        nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"), helper.make_node("Gather", ["r", "i"], ["y"], name="op", axis=0)]
        inputs = [vi("x", [16, 32])] + ([] if const else [vi("i", [1], TensorProto.INT64)])
        return model(nodes, inputs, [vi("y", [1, 32])], [_i64("i", [3])] if const else [])

    assert _verdict(gather(const=True)) == "npu"
    assert _verdict(gather(const=False)) == "cpu"  # corpus 11 of 11, case gather-runtime-index
    assert _verdict(gather(const=False), fit_families=("cnn",)) == "cpu"  # the case record still shows it
    assert _verdict(gather(const=False), fit_families=("cnn",), fit_cases=False) == "npu"


def test_a_second_scatter_nd_over_the_first_ones_cells():
    # conditional_detr's box update writes [..., :2] of [1, 20, 4] twice, the second time with values that do not read
    # the first write: CPU (CAL-R, cases scatternd-overlap-*); values read from the first write, an innermost axis of
    # 8, or a whole overwrite (folded away): not the CPU
    def pair(inner, cols, reads):
        cells = [[[[0, r, c] for c in cols] for r in range(20)]]
        upd = [1, 20, len(cols)]
        nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
                 helper.make_node("ScatterND", ["r", "i", "u"], ["s"], name="first")]
        if reads:
            nodes.append(helper.make_node("Slice", ["s", "st", "en", "ax"], ["u2"], name="read"))
        nodes.append(helper.make_node("ScatterND", ["s", "i", "u2" if reads else "v"], ["y"], name="op"))
        inits = [_i64("i", cells), _i64("st", [cols[0]]), _i64("en", [cols[-1] + 1]), _i64("ax", [2])]
        ins = [vi("x", [1, 20, inner]), vi("u", upd)] + ([] if reads else [vi("v", upd)])
        return model(nodes, ins, [vi("y", [1, 20, inner])], inits)

    assert _verdict(pair(4, [0, 1], False)) == "cpu"
    assert _verdict(pair(4, [0, 1], False), node="first") == "npu"
    assert _verdict(pair(4, [0, 1], True)) == "npu"
    assert _verdict(pair(8, [0, 1], False)) == "npu"
    assert _verdict(pair(4, [0, 1, 2, 3], False)) == "npu"
    # the detector records and the cases show it: held out with the cases dropped, every ScatterND goes to the CPU
    assert _verdict(pair(4, [0, 1], True), fit_families=("cnn",), fit_cases=False) == "cpu"


def test_a_5d_reshape_that_splits_the_innermost_axis():
    # wavlm's gated position bias [1, 2, 99, 8] -> [1, 2, 99, 2, 4]: CPU in int8, NPU in float16 (CAL-R, cases
    # split-last-*). rockchip.py does not call the condition yet, so it is judged here as the op rule would call it.
    import onnx

    from npufit.graph import quant
    from npufit.targets.rockchip import reshapes

    def why(x, y, int8):
        m = _after_relu("Reshape", x, y, inits=[_i64("s", y)], extra_inputs=("s",))
        m = onnx.shape_inference.infer_shapes(m)
        g = build_graph(m, "test.onnx", {"ai.onnx": m.opset_import[0].version}, [])
        with quant.judging_as_int8(int8):
            return reshapes.split_innermost(g.node("op"), get_profile(T).limits)

    assert why([1, 2, 99, 8], [1, 2, 99, 2, 4], True)  # int8: neither 8 nor 99 a multiple of 16, k = 4
    assert why([1, 2, 99, 8], [1, 2, 99, 2, 4], False) is None  # float16: W = 8
    assert why([1, 2, 96, 8], [1, 2, 96, 2, 4], True) is None  # T = 96
    assert why([1, 2, 99, 16], [1, 2, 99, 2, 8], True) is None  # k = 8
    assert why([1, 2, 99, 12], [1, 2, 99, 3, 4], False)  # float16: W = 12, k = 4
    assert why([1, 2, 99, 8], [1, 2, 99, 8, 1], True) is None  # no split: k = 1

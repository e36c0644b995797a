"""The rk3588 conditions of the second sweep round (calibration/rknn_sweep2.py, cases in
docs/calibration/rk3588-cases.json), each on a tiny graph: both sides, and the fallback without the case evidence
(fit_cases False), and RK3576 where they are scoped to RK3588."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from npufit.check import check_graph
from npufit.graph.onnx_loader import build_graph
from npufit.targets import get_profile

from .onnx_builders import model, vi
from .test_targets_calibrated import _after_relu, _i64, _verdict as _rk3588

OFF = dict(fit_families=("cnn", "transformer", "detector", "audio-rnn"), fit_cases=False)


def _verdict(m, target="rk3588", **kw):
    if target == "rk3588":
        return _rk3588(m, **kw)
    import onnx

    m = onnx.shape_inference.infer_shapes(m)
    g = build_graph(m, "test.onnx", {"ai.onnx": m.opset_import[0].version}, [])
    return check_graph(g, get_profile(target)).node(kw.get("node", "op")).verdict.value


def _int_op(op, dtype, to):
    """x -> Relu -> Cast to an integer type -> op (+ a constant) -> Cast back to float."""
    k = numpy_helper.from_array(np.array(1, np.int32 if dtype == TensorProto.INT32 else np.int64), "k")
    body = [helper.make_node(op, ["i", "k"], ["o"], name="op")] if op != "Transpose" else [
        helper.make_node("Transpose", ["i"], ["o"], name="op", perm=[0, 1, 3, 2])]
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"), helper.make_node("Cast", ["r"], ["i"], name="cast_i", to=dtype),
             *body, helper.make_node("Cast", ["o"], ["y"], name="cast_f", to=to)]
    return model(nodes, [vi("x", [1, 8, 4, 4])], [vi("y", [1, 8, 4, 4])], [k] if op != "Transpose" else [])


def test_int32_add_and_integer_transpose_run_on_the_npu_int64_arithmetic_on_the_cpu():
    i32, i64, f32 = TensorProto.INT32, TensorProto.INT64, TensorProto.FLOAT
    assert _verdict(_int_op("Add", i32, f32)) == "npu"  # intdata-cast-int32-add
    assert _verdict(_int_op("Sub", i32, f32)) == "npu"
    assert _verdict(_int_op("Add", i64, f32)) == "cpu"  # intdata-cast-int64-add
    assert _verdict(_int_op("Mul", i32, f32)) == "cpu"  # intdata-cast-int32-mul
    assert _verdict(_int_op("Transpose", i64, f32)) == "npu"  # intdata-cast-int64-transpose
    assert _verdict(_int_op("Add", i32, f32), node="cast_f") == "npu"  # int32 -> float Cast (intdata-cast-int32-cast)
    assert _verdict(_int_op("Add", i32, f32), node="cast_i") == "cpu"  # float -> int32
    assert _verdict(_int_op("Add", i64, f32), node="cast_f") == "cpu"  # int64 -> float
    assert _verdict(_int_op("Add", i32, f32), **OFF) == "cpu"
    assert _verdict(_int_op("Transpose", i64, f32), target="rk3576") == "cpu"  # measured on RK3588 only


def _gelu(pre_op, half_first=False):
    """x -> Relu -> x / sqrt2 (or x * 1/sqrt2) -> Erf -> + 1 -> * x -> * 0.5 (or (0.5 * x) * (..))."""
    c = [numpy_helper.from_array(np.array(v, np.float32), n) for n, v in
         (("s", np.sqrt(2.0) if pre_op == "Div" else 1 / np.sqrt(2.0)), ("one", 1.0), ("half", 0.5))]
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"), helper.make_node(pre_op, ["r", "s"], ["d"], name="pre"),
             helper.make_node("Erf", ["d"], ["e"], name="op"), helper.make_node("Add", ["e", "one"], ["a"], name="add")]
    if half_first:
        nodes += [helper.make_node("Mul", ["r", "half"], ["h"], name="h"), helper.make_node("Mul", ["h", "a"], ["y"], name="m")]
    else:
        nodes += [helper.make_node("Mul", ["r", "a"], ["m"], name="m"), helper.make_node("Mul", ["m", "half"], ["y"], name="h")]
    return model(nodes, [vi("x", [1, 8, 4, 4])], [vi("y", [1, 8, 4, 4])], c)


def test_exact_gelu_fuses_with_the_div_form_only():
    assert _verdict(_gelu("Div")) == "npu"  # erf-gelu
    assert _verdict(_gelu("Div", half_first=True)) == "npu"  # erf-gelu-half-first
    assert _verdict(_gelu("Mul")) == "cpu"  # erf-gelu-mul (rk3576, rk3566, rv1106 too)
    assert _verdict(_gelu("Mul"), target="rk3576") == "cpu"


def _gather(idx, axis=2):
    ind = _i64("ind", idx)
    shape = list(np.take(np.zeros([1, 8, 8, 8]), np.array(idx), axis=axis).shape)
    return _after_relu("Gather", [1, 8, 8, 8], shape, dict(axis=axis), inits=[ind], extra_inputs=("ind",))


def test_gather_by_constant_2d_indices_runs_on_the_npu():
    assert _verdict(_gather([[0, 1], [3, 2]], 3)) == "npu"  # gather-nchw-ax3-2d (a 5-D result)
    assert _verdict(_gather([0, 2, 3])) == "npu"
    assert _verdict(_gather([[0, 1], [3, 2]], 3), **OFF) == "cpu"
    assert _verdict(_gather([[0, 1], [3, 2]], 3), target="rk3576") == "cpu"


def _pad3(mode, pads, producer="Conv"):
    w = numpy_helper.from_array(np.ones((8, 8, 1), np.float32), "w")
    p = _i64("p", pads)
    first = (helper.make_node("Conv", ["x", "w"], ["r"], name="pre", kernel_shape=[1]) if producer == "Conv"
             else helper.make_node("Relu", ["x"], ["r"], name="pre"))
    nodes = [first, helper.make_node("Pad", ["r", "p"], ["y"], name="op", mode=mode)]
    out = [1, 8 + pads[1] + pads[4], 16 + pads[2] + pads[5]]
    return model(nodes, [vi("x", [1, 8, 16])], [vi("y", out)], [w, p] if producer == "Conv" else [p])


def test_3d_pads_edge_on_the_npu_reflect_and_edge_at_the_end_of_axis_1_on_the_cpu():
    assert _verdict(_pad3("edge", [0, 0, 2, 0, 0, 2])) == "npu"  # pad3-edge-t-both
    assert _verdict(_pad3("reflect", [0, 0, 0, 0, 2, 0])) == "cpu"  # pad3-reflect-c-end
    assert _verdict(_pad3("edge", [0, 0, 0, 0, 2, 0])) == "cpu"  # pad3-edge-c-end
    assert _verdict(_pad3("constant", [0, 0, 0, 0, 2, 0])) == "npu"  # pad3-constant-c-end: a Conv produced it
    assert _verdict(_pad3("constant", [0, 0, 0, 0, 2, 0], "Relu")) == "cpu"  # the corpus's PAD3 condition
    assert _verdict(_pad3("edge", [0, 0, 2, 0, 0, 2]), **OFF) == "cpu"
    assert _verdict(_pad3("edge", [0, 0, 2, 0, 0, 2]), target="rk3576") == "cpu"

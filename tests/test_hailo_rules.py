"""Hailo rules and the shared composite matchers on hand-built ONNX graphs: forms the torch cases do not
produce (opset-18 axes inputs, negative axes, Pow-form GELU, Mul-form LayerNorm, no-op Expand, Split outputs)."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from npufit import check
from npufit.targets import patterns
from tests.onnx_builders import model, vi


def _c(name, value, dtype=np.float32):
    return numpy_helper.from_array(np.array(value, dtype=dtype), name)


def _check(tmp_path, m: onnx.ModelProto, target="hailo8"):
    p = tmp_path / "m.onnx"
    onnx.save(m, p)
    return check(p, target)


def _rules(report, node):
    n = report.node(node)
    return n.verdict.value, [r.rule for r in n.reasons]


def test_reducemax_axes_as_input_opset18(tmp_path):
    nodes = [helper.make_node("ReduceMax", ["x", "ax"], ["y"], name="rm_spatial", keepdims=1),
             helper.make_node("ReduceMax", ["x", "ax1"], ["z"], name="rm_channel", keepdims=1)]
    m = model(nodes, [vi("x", [1, 8, 16, 16])], [vi("y", None), vi("z", None)],
              [_c("ax", [-2], np.int64), _c("ax1", [1], np.int64)], opset=18)
    r = _check(tmp_path, m)
    assert _rules(r, "rm_spatial") == ("unsupported", ["hailo8.reducemax.axis"])
    assert _rules(r, "rm_channel") == ("npu", [])


def _gelu_erf(x, out, p):
    return [helper.make_node("Div", [x, "sqrt2"], [p + "d"], name=p + "div"),
            helper.make_node("Erf", [p + "d"], [p + "e"], name=p + "erf"),
            helper.make_node("Add", [p + "e", "one"], [p + "a"], name=p + "add"),
            helper.make_node("Mul", [x, p + "a"], [p + "m"], name=p + "mul"),
            helper.make_node("Mul", [p + "m", "half"], [out], name=p + "mul2")]


def test_gelu_composite_claims_its_erf_but_a_lone_erf_is_flagged(tmp_path):
    nodes = _gelu_erf("x", "g", "gelu/") + [helper.make_node("Erf", ["g"], ["y"], name="lone_erf")]
    inits = [_c("sqrt2", 2 ** 0.5), _c("one", 1.0), _c("half", 0.5)]
    r = _check(tmp_path, model(nodes, [vi("x", [1, 8, 4, 4])], [vi("y", [1, 8, 4, 4])], inits))
    assert r.node("gelu/erf").verdict.value == "npu" and r.node("gelu/erf").composite == "hailo8.gelu"
    verdict, rules = _rules(r, "lone_erf")
    assert verdict == "unsupported" and rules == ["hailo8.op.Erf"]
    assert "gelu_tanh" in r.node("lone_erf").reasons[0].fix_rules


def test_gelu_with_wrong_constant_is_not_a_gelu(tmp_path):
    nodes = _gelu_erf("x", "y", "g/")
    inits = [_c("sqrt2", 3.0), _c("one", 1.0), _c("half", 0.5)]  # x/3 is not GELU's x/sqrt(2)
    r = _check(tmp_path, model(nodes, [vi("x", [1, 8, 4, 4])], [vi("y", [1, 8, 4, 4])], inits))
    assert r.node("g/erf").verdict.value == "unsupported" and r.node("g/erf").composite is None


def test_gelu_tanh_with_pow_cube():
    nodes = [helper.make_node("Pow", ["x", "three"], ["c"], name="pow"),
             helper.make_node("Mul", ["c", "k"], ["ck"], name="mulk"),
             helper.make_node("Add", ["x", "ck"], ["i"], name="inner"),
             helper.make_node("Mul", ["i", "s"], ["si"], name="scale"),
             helper.make_node("Tanh", ["si"], ["t"], name="tanh"),
             helper.make_node("Add", ["t", "one"], ["t1"], name="add1"),
             helper.make_node("Mul", ["t1", "half"], ["h"], name="half_mul"),
             helper.make_node("Mul", ["h", "x"], ["y"], name="xmul")]
    inits = [_c("three", 3.0), _c("k", 0.044715), _c("s", (2 / np.pi) ** 0.5), _c("one", 1.0), _c("half", 0.5)]
    from npufit.graph.onnx_loader import build_graph

    g = build_graph(model(nodes, [vi("x", [1, 8])], [vi("y", [1, 8])], inits), "mem", {"ai.onnx": 13}, [])
    (match,) = patterns.match_gelu_tanh(g)
    assert [n.name for n in match.nodes] == ["pow", "mulk", "inner", "scale", "tanh", "add1", "half_mul", "xmul"]


def test_layernorm_with_mul_square_and_no_affine():
    nodes = [helper.make_node("ReduceMean", ["x"], ["m"], name="mean", axes=[-1]),
             helper.make_node("Sub", ["x", "m"], ["d"], name="sub"),
             helper.make_node("Mul", ["d", "d"], ["d2"], name="sq"),
             helper.make_node("ReduceMean", ["d2"], ["v"], name="var", axes=[-1]),
             helper.make_node("Add", ["v", "eps"], ["ve"], name="eps"),
             helper.make_node("Sqrt", ["ve"], ["s"], name="sqrt"),
             helper.make_node("Div", ["d", "s"], ["y"], name="div")]
    from npufit.graph.onnx_loader import build_graph

    g = build_graph(model(nodes, [vi("x", [1, 16, 32])], [vi("y", [1, 16, 32])], [_c("eps", 1e-5)]), "mem", {"ai.onnx": 13}, [])
    (match,) = patterns.match_layernorm(g)
    assert len(match.nodes) == 7 and "axes [2]" in match.detail


def test_mean_flatten_matmul_composite_and_lone_mean(tmp_path):
    w = numpy_helper.from_array(np.ones((8, 4), np.float32), "w")
    nodes = [helper.make_node("ReduceMean", ["x"], ["m"], name="mean", axes=[2, 3], keepdims=1),
             helper.make_node("Flatten", ["m"], ["f"], name="flat", axis=1),
             helper.make_node("MatMul", ["f", "w"], ["y"], name="fc"),
             helper.make_node("ReduceMean", ["x"], ["z"], name="lone_mean", axes=[1], keepdims=1)]
    r = _check(tmp_path, model(nodes, [vi("x", [1, 8, 4, 4])], [vi("y", [1, 4]), vi("z", [1, 1, 4, 4])], [w]))
    for name in ("mean", "flat", "fc"):
        verdict, rules = _rules(r, name)
        assert verdict == "unsupported" and rules[0] == "hailo8.mean_linear"
    assert "mean_to_global_pool" in r.node("fc").reasons[0].fix_rules
    assert _rules(r, "lone_mean") == ("npu", [])


def test_concat_negative_batch_axis_and_transpose_perms(tmp_path):
    nodes = [helper.make_node("Concat", ["x", "x"], ["c"], name="cat_batch", axis=-4),
             helper.make_node("Transpose", ["x"], ["t1"], name="t_0213", perm=[0, 2, 1, 3]),
             helper.make_node("Transpose", ["x"], ["t2"], name="t_0312", perm=[0, 3, 1, 2])]
    r = _check(tmp_path, model(nodes, [vi("x", [1, 8, 4, 4])], [vi("c", None), vi("t1", None), vi("t2", None)]))
    assert _rules(r, "cat_batch") == ("unsupported", ["hailo8.concat.batch"])
    assert _rules(r, "t_0213") == ("unsupported", ["hailo8.transpose.perm"])
    assert _rules(r, "t_0312") == ("npu", [])


def test_dynamic_input_is_flagged(tmp_path):
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    r = _check(tmp_path, model(nodes, [vi("x", [1, 8, "h", 4])], [vi("y", None)]))
    verdict, rules = _rules(r, "relu")
    assert verdict == "unsupported" and rules == ["hailo8.input.static_shape"]
    # a dynamic batch alone is pinned to 1 (the shape policy), with a note: the input is then static
    r = _check(tmp_path, model(nodes, [vi("x", ["batch", 8, 4, 4])], [vi("y", None)]))
    assert _rules(r, "relu") == ("npu", []) and r.model["input_shapes"] == {"x": [1, 8, 4, 4]}
    assert "dynamic batch 'batch' pinned to 1" in r.model["shape_notes"][0]


def test_noop_expand_passes_real_broadcast_fails(tmp_path):
    nodes = [helper.make_node("Expand", ["x", "ones"], ["a"], name="noop"),
             helper.make_node("Expand", ["x1", "wide"], ["b"], name="bcast")]
    inits = [_c("ones", [1, 1, 1, 1], np.int64), _c("wide", [1, 8, 4, 4], np.int64)]
    r = _check(tmp_path, model(nodes, [vi("x", [1, 8, 4, 4]), vi("x1", [1, 1, 4, 4])], [vi("a", None), vi("b", None)], inits))
    assert _rules(r, "noop") == ("npu", [])
    verdict, rules = _rules(r, "bcast")
    assert verdict == "unsupported" and rules == ["hailo8.expand.broadcast"]
    assert "[1, 1, 4, 4] -> [1, 8, 4, 4]" in r.node("bcast").reasons[0].detail


def test_split_as_model_output_and_rank3_constant_operand(tmp_path):
    nodes = [helper.make_node("Split", ["x"], ["s0", "s1"], name="split", axis=1),
             helper.make_node("Relu", ["s1"], ["r"], name="relu"),
             helper.make_node("Add", ["t", "pos"], ["p"], name="add_pos")]
    pos = numpy_helper.from_array(np.zeros((1, 2, 6), np.float32), "pos")
    r = _check(tmp_path, model(nodes, [vi("x", [1, 8, 4, 4]), vi("t", [1, 2, 6])],
                               [vi("s0", None), vi("r", None), vi("p", None)], [pos]))
    assert _rules(r, "split") == ("unsupported", ["hailo8.split.output"])
    verdict, rules = _rules(r, "add_pos")
    assert verdict == "unsupported" and "hailo8.eltwise.const_layout" in rules


def test_unknown_op_is_unsupported_with_reason(tmp_path):
    nodes = [helper.make_node("Softplus", ["x"], ["y"], name="sp")]
    r = _check(tmp_path, model(nodes, [vi("x", [1, 8, 4, 4])], [vi("y", None)]), "hailo8l")
    n = r.node("sp")
    assert n.verdict.value == "unsupported" and n.reasons[0].rule == "hailo8l.op.unknown"
    assert "Softplus is not in the Hailo operator table" in n.reasons[0].text


def test_rank3_constant_passes_on_tokens_and_fails_on_channel_first_bins(tmp_path):
    """H-YOLO: a [1,2,8400]-style constant on a conv map flattened to [N, C, H*W] is rejected; the Zoo's vit/detr add
    [1, T, C] position embeddings to token sequences (here after an embedding lookup) on chip."""
    from onnx import TensorProto

    table = numpy_helper.from_array(np.zeros((10, 6), np.float32), "table")
    pos = numpy_helper.from_array(np.ones((1, 4, 6), np.float32), "pos")
    anchors = numpy_helper.from_array(np.ones((1, 2, 16), np.float32), "anchors")
    nodes = [helper.make_node("Gather", ["table", "ids"], ["emb"], name="lookup", axis=0),
             helper.make_node("Add", ["emb", "pos"], ["tok"], name="add_pos"),
             helper.make_node("Reshape", ["x", "shape"], ["bins"], name="flat"),
             helper.make_node("Sub", ["anchors", "bins"], ["d"], name="sub_anchor"),
             helper.make_node("Gather", ["tok", "zero"], ["cls"], name="cls_token", axis=1)]
    inits = [table, pos, anchors, _c("shape", [1, 2, 16], np.int64), _c("zero", 0, np.int64)]
    ids = helper.make_tensor_value_info("ids", TensorProto.INT64, [1, 4])
    r = _check(tmp_path, model(nodes, [ids, vi("x", [1, 2, 4, 4])], [vi("d", None), vi("cls", None)], inits))
    assert _rules(r, "add_pos") == ("npu", [])
    assert "hailo8.eltwise.const_layout" in _rules(r, "sub_anchor")[1]
    # embedding lookup: host side (run-time int64 indices are also integer index math)
    assert _rules(r, "lookup") == ("unsupported", ["hailo8.dtype.index_math", "hailo8.gather.position"])
    assert _rules(r, "cls_token") == ("npu", [])  # x[:, 0]: one constant position on the token axis


def test_attention_shuffles_are_npu_and_the_same_shuffles_without_attention_are_not(tmp_path):
    """Head split [1,T,C] -> [1,T,h,d] -> Transpose [0,2,1,3] feeding Q.K^T (Zoo vit/deit/detr, H-MZ) is npu; the same
    reshape + transpose feeding a Softmax and a Conv (the YOLO DFL, H-YOLO) is not."""
    perm = [0, 2, 1, 3]
    nodes = [helper.make_node("Reshape", ["q", "hs"], ["q4"], name="q_split"),
             helper.make_node("Transpose", ["q4"], ["qt"], name="q_t", perm=perm),
             helper.make_node("Reshape", ["k", "hs"], ["k4"], name="k_split"),
             helper.make_node("Transpose", ["k4"], ["kt"], name="k_t", perm=[0, 2, 3, 1]),
             helper.make_node("MatMul", ["qt", "kt"], ["s"], name="qk"),
             helper.make_node("Reshape", ["bins", "dfl"], ["b4"], name="dfl_reshape"),
             helper.make_node("Transpose", ["b4"], ["bt"], name="dfl_t", perm=perm),
             helper.make_node("Softmax", ["bt"], ["bs"], name="dfl_softmax", axis=1)]
    inits = [_c("hs", [1, 8, 2, 4], np.int64), _c("dfl", [1, 4, 16, 8], np.int64)]
    r = _check(tmp_path, model(nodes, [vi("q", [1, 8, 8]), vi("k", [1, 8, 8]), vi("bins", [1, 64, 8])],
                               [vi("s", None), vi("bs", None)], inits))
    for name in ("q_split", "q_t", "k_split", "k_t", "qk"):
        assert _rules(r, name) == ("npu", []), name
    assert r.node("q_t").composite == "hailo8.attention"
    assert _rules(r, "dfl_reshape")[0] == "unsupported" and _rules(r, "dfl_t") == ("unsupported", ["hailo8.transpose.perm"])

"""Ethos-U verdicts for ONNX nodes that npufit's converter writes as no op or as another op than the standard view
(npufit/targets/ethos_u/converted.py; CAL-V records). Each model is a small graph none of the corpus models is; the
check is held against the converter's real output and, where it is cheap, against the real Vela compile."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from npufit import check
from npufit.graph import load

U55, U85 = "ethos-u55-256", "ethos-u85-256"


def _save(tmp_path, nodes, inputs, outputs, inits, name="m.onnx"):
    g = helper.make_graph(nodes, "g", inputs, outputs, inits)
    p = tmp_path / name
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), p)
    return p


def _verdicts(p, target):
    # the rules (Vela's own placement of the conversion is read by _vela below)
    rep = check(load(p), target, measure="never")
    return {n.name: (n.verdict.value, [r.rule for r in n.reasons]) for n in rep.nodes if n.parent is None}


def _tflite_ops(p, tmp_path):
    from npufit.convert import convert

    res = convert(p, tmp_path / "m_int8.tflite", verify=None)
    return [o["op"] for o in res.ops]


def _vela(p, target, tmp_path):
    from npufit.compilers import compile_model
    from npufit.compilers.vela import vela_version

    if vela_version() is None:
        pytest.skip("Vela is not installed")
    pytest.importorskip("ai_edge_litert.interpreter")
    r = compile_model(p, target, out_dir=tmp_path / f"out-{target}")
    assert r.ok, r.error
    return {pl.node: pl.device for pl in r.placement}


# -- a mean over the channels of an HxW map -----------------------------------------------------------------------------

def _channel_layernorm(tmp_path, hw=8):
    """Conv -> x - ReduceMean(x, axis 1): the channel LayerNorm of ViTDet's residual blocks."""
    w = numpy_helper.from_array(np.random.default_rng(0).normal(size=(16, 3, 1, 1)).astype(np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
             helper.make_node("ReduceMean", ["c"], ["m"], name="mean", axes=[1], keepdims=1),
             helper.make_node("Sub", ["c", "m"], ["y"], name="sub")]
    return _save(tmp_path, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, hw, hw])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, hw, hw])], [w])


def test_a_channel_mean_of_a_map_is_the_converters_conv(tmp_path):
    p = _channel_layernorm(tmp_path)
    # before: MEAN over depth with h, w and c all > 1 (mean.limits) on both generations
    assert _verdicts(p, U55)["mean"] == ("npu", [])
    assert _verdicts(p, U85)["mean"] == ("npu", [])
    ops = _tflite_ops(p, tmp_path)
    assert "MEAN" not in ops and ops.count("CONV_2D") == 2  # the model's conv and the mean's 1x1 conv
    assert _vela(p, U55, tmp_path)["mean"] == "npu"


def test_a_tflite_depth_mean_keeps_the_vela_rule():
    from npufit.targets.converter_facts import depth_reduce_as_conv

    assert depth_reduce_as_conv("MEAN", [1, 8, 8, 16], [3])
    assert not depth_reduce_as_conv("MEAN", [1, 1, 8, 16], [3])  # one of h, w is 1: Vela's MEAN takes it
    assert not depth_reduce_as_conv("REDUCE_MAX", [1, 8, 8, 16], [3])


# -- a gather of a table that a size-decided If computes from constants ------------------------------------------------

def _if_table_gather(tmp_path, branch_reads_x=False):
    """If (width == 4) table else -table, gathered by a constant 2-D index, added to x: ViTDet's relative-position
    table (resized when its size differs) picked by a constant index."""
    src = "x2" if branch_reads_x else "table"
    then_g = helper.make_graph([helper.make_node("Identity", [src], ["a"])], "then", [],
                               [helper.make_tensor_value_info("a", TensorProto.FLOAT, None)])
    else_g = helper.make_graph([helper.make_node("Neg", [src], ["b"])], "else", [],
                               [helper.make_tensor_value_info("b", TensorProto.FLOAT, None)])
    inits = [numpy_helper.from_array(np.arange(16, dtype=np.float32).reshape(4, 4), "table"),
             numpy_helper.from_array(np.array([[2, 0], [1, 3]], np.int64), "idx"),
             numpy_helper.from_array(np.array(3, np.int64), "three"), numpy_helper.from_array(np.array(4, np.int64), "four"),
             numpy_helper.from_array(np.array([4, 4], np.int64), "shape44")]
    nodes = [helper.make_node("Shape", ["x"], ["shape"], name="shape"),
             helper.make_node("Gather", ["shape", "three"], ["width"], name="width"),
             helper.make_node("Equal", ["width", "four"], ["cond"], name="cond"),
             helper.make_node("Reshape", ["x", "shape44"], ["x2"], name="x2"),
             helper.make_node("If", ["cond"], ["rel"], name="branch", then_branch=then_g, else_branch=else_g),
             helper.make_node("Gather", ["rel", "idx"], ["picked"], name="pick", axis=0),
             helper.make_node("Add", ["x", "picked"], ["y"], name="add")]
    return _save(tmp_path, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 2, 4])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 2, 4])], inits)


def test_a_gather_of_a_constant_if_table_is_folded_by_the_converter(tmp_path):
    p = _if_table_gather(tmp_path)
    v = _verdicts(p, U55)
    # before: GATHER is not in the U55's list (op.unknown), though the converter folds it
    assert v["pick"][0] == "folded" and v["branch"][0] == "folded", v
    assert v["add"][0] == "npu"
    assert "GATHER" not in _tflite_ops(p, tmp_path)
    assert _vela(p, U55, tmp_path)["pick"] != "cpu"


def test_a_gather_of_an_if_that_reads_the_input_stays_a_gather(tmp_path):
    p = _if_table_gather(tmp_path, branch_reads_x=True)
    v = _verdicts(p, U55)
    assert v["pick"][0] == "cpu" and "ethos-u55-256.op.unknown" in v["pick"][1], v


# -- integer position arithmetic and the ArgMax of bools ---------------------------------------------------------------

def _text_pooling(tmp_path):
    """CLIP's end-of-text pooling on int64 ids: ids -> int32 -> int64 casts and a same-shape Reshape (aliases), the first
    position where ids == 5 (Equal -> Cast -> ArgMax), + a constant offset (int64 Add) and a position scale (int32 Mul),
    then the row of the embedded tokens at that position."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.normal(size=(10, 8)).astype(np.float32), "table"),
             numpy_helper.from_array(np.array([1, 6], np.int64), "shape16"),
             numpy_helper.from_array(np.array(5, np.int64), "eot"), numpy_helper.from_array(np.array([0], np.int64), "offset"),
             numpy_helper.from_array(np.array([6, 8], np.int64), "flat"), numpy_helper.from_array(np.array([1], np.int32), "one")]
    nodes = [helper.make_node("Reshape", ["ids", "shape16"], ["r"], name="reshape"),
             helper.make_node("Cast", ["r"], ["r32"], name="to32", to=TensorProto.INT32),
             helper.make_node("Cast", ["r32"], ["r64"], name="to64", to=TensorProto.INT64),
             helper.make_node("Equal", ["r64", "eot"], ["is_eot"], name="equal"),
             helper.make_node("Cast", ["is_eot"], ["eot32"], name="bool_to_int", to=TensorProto.INT32),
             helper.make_node("ArgMax", ["eot32"], ["pos"], name="argmax", axis=-1, keepdims=0),
             helper.make_node("Cast", ["pos"], ["pos32"], name="pos32", to=TensorProto.INT32),
             helper.make_node("Mul", ["pos32", "one"], ["pos_s"], name="mul"),
             helper.make_node("Cast", ["pos_s"], ["pos64"], name="pos64", to=TensorProto.INT64),
             helper.make_node("Add", ["pos64", "offset"], ["row"], name="add"),
             helper.make_node("Gather", ["table", "ids"], ["emb"], name="embed"),
             helper.make_node("Reshape", ["emb", "flat"], ["rows"], name="rows"),
             helper.make_node("Gather", ["rows", "row"], ["y"], name="pool", axis=0)]
    return _save(tmp_path, nodes, [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, 6])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])], inits)


def test_integer_index_arithmetic_is_judged_as_the_int32_ops_the_converter_writes(tmp_path):
    p = _text_pooling(tmp_path)
    u55 = _verdicts(p, U55)
    # aliases: no op (before: 64-bit feature maps and CAST, not in the U55's list)
    for name in ("reshape", "to32", "to64", "pos32", "pos64", "bool_to_int"):
        assert u55[name][0] == "folded", (name, u55[name])
    # int32 ADD / MUL: Vela's int32 exceptions (before: fmap.64bit and fmap.32bit)
    assert u55["add"] == ("npu", []) and u55["mul"] == ("npu", [])
    # the ArgMax of bools carries the converter's CAST to int8: CPU on the U55, NPU on the U85 (CAST listed)
    assert u55["argmax"][0] == "cpu" and "ethos-u55-256.argmax.bool_cast" in u55["argmax"][1]
    assert _verdicts(p, U85)["argmax"] == ("npu", [])
    ops = _tflite_ops(p, tmp_path)
    assert ops.count("CAST") == 2 and "ARG_MAX" in ops  # bools -> int8 for ARG_MAX, and the unread bool -> int32
    got = _vela(p, U55, tmp_path)
    assert got["argmax"] == "cpu" and got["add"] == "npu" and got["mul"] == "npu", got


def test_a_bool_alias_keeps_the_device_of_the_mask_ops_around_it(tmp_path):
    inits = [numpy_helper.from_array(np.array(0, np.int64), "pad")]
    nodes = [helper.make_node("Equal", ["ids", "pad"], ["m"], name="equal"),
             helper.make_node("Cast", ["m"], ["m2"], name="cast", to=TensorProto.BOOL),
             helper.make_node("Not", ["m2"], ["y"], name="not")]
    p = _save(tmp_path, nodes, [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, 6])],
              [helper.make_tensor_value_info("y", TensorProto.BOOL, [1, 6])], inits)
    assert _verdicts(p, U55)["cast"][0] == "cpu"  # clip_text's and roberta's bool Cast: CPU in the U55 record


# -- GatherElements ----------------------------------------------------------------------------------------------------

def test_gather_elements_is_judged_as_the_converters_gather(tmp_path):
    """RoBERTa's buffered token-type ids picked by position: GatherElements along axis 1 of [1, 64] -> GATHER axis 1,
    batch_dims 0, which the U85 keeps on the CPU (Vela's output keeps that GATHER as a CPU op)."""
    inits = [numpy_helper.from_array(np.zeros((1, 64), np.int64), "buffer")]
    nodes = [helper.make_node("GatherElements", ["buffer", "pos"], ["y"], name="op", axis=1)]
    p = _save(tmp_path, nodes, [helper.make_tensor_value_info("pos", TensorProto.INT64, [1, 16])],
              [helper.make_tensor_value_info("y", TensorProto.INT64, [1, 16])], inits)
    v = _verdicts(p, U85)["op"]
    assert v[0] == "cpu" and v[1] == ["ethos-u85-256.gather.axis"], v  # before: op.unknown (GATHER_ND)

"""A small generator of hostile MODEL inputs (hostile-input issue, parts 2-5): every case is a few hundred
bytes built here with onnx.helper or the TFLite writer, never a committed binary.

`build(name, folder)` writes one case into `folder` and returns the model path; `CASES` names them all.
A FIFO case creates a named pipe that nobody writes to: opening it for reading blocks forever, so npufit must
refuse it before opening.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
BIG = 1 << 30  # elements: 4 GiB as float32, far past any fold budget


def _model(nodes, inputs, outputs, inits=(), opset=OPSET, check=True, **kw) -> onnx.ModelProto:
    m = helper.make_model(helper.make_graph(nodes, "g", inputs, outputs, list(inits), **kw),
                          opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    if check:
        onnx.checker.check_model(m)
    return m


def _vi(name, dims, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, dims)


def _i64(name, values):
    return numpy_helper.from_array(np.asarray(values, dtype=np.int64), name)


def _save(m: onnx.ModelProto, folder: Path, name: str = "model.onnx") -> Path:
    p = folder / name
    p.write_bytes(m.SerializeToString())
    return p


def _with_add(extra_nodes, extra_out: str, inits=()) -> onnx.ModelProto:
    """x[1,4] + (something folded from constants) -> y: a real input so every verb has work to do."""
    nodes = [*extra_nodes, helper.make_node("Add", ["x", extra_out], ["y"], name="add")]
    return _model(nodes, [_vi("x", [1, 4])], [_vi("y", [1, 4])], inits, check=False)


# -- memory bombs: a tiny model whose constant folding would materialise gigabytes ---------------------------
def bomb_constant_of_shape(folder: Path) -> Path:
    n = [helper.make_node("ConstantOfShape", ["s"], ["big"], name="cos",
                          value=helper.make_tensor("v", TensorProto.FLOAT, [1], [1.0])),
         helper.make_node("ReduceSum", ["big"], ["r"], name="sum", keepdims=0)]
    return _save(_with_add(n, "r", [_i64("s", [BIG])]), folder)


def bomb_expand(folder: Path) -> Path:
    n = [helper.make_node("Expand", ["one", "s"], ["big"], name="expand"),
         helper.make_node("ReduceMax", ["big"], ["r"], name="max", keepdims=0)]
    one = numpy_helper.from_array(np.ones([1], np.float32), "one")
    return _save(_with_add(n, "r", [one, _i64("s", [1 << 15, 1 << 15])]), folder)


def bomb_range(folder: Path) -> Path:
    f = lambda n, v: numpy_helper.from_array(np.asarray(v, np.float32), n)  # noqa: E731
    n = [helper.make_node("Range", ["a", "b", "d"], ["big"], name="range"),
         helper.make_node("ReduceMin", ["big"], ["r"], name="min", keepdims=0)]
    return _save(_with_add(n, "r", [f("a", 0.0), f("b", float(BIG)), f("d", 1.0)]), folder)


def bomb_tile(folder: Path) -> Path:
    n = [helper.make_node("Tile", ["one", "reps"], ["big"], name="tile"),
         helper.make_node("ReduceMean", ["big"], ["r"], name="mean", keepdims=0)]
    one = numpy_helper.from_array(np.ones([1, 1], np.float32), "one")
    return _save(_with_add(n, "r", [one, _i64("reps", [1 << 15, 1 << 15])]), folder)


def bomb_pad(folder: Path) -> Path:
    n = [helper.make_node("Pad", ["one", "pads"], ["big"], name="pad"),
         helper.make_node("ReduceSum", ["big"], ["r"], name="sum", keepdims=0)]
    one = numpy_helper.from_array(np.ones([1, 1], np.float32), "one")
    return _save(_with_add(n, "r", [one, _i64("pads", [0, 0, 1 << 15, 1 << 15])]), folder)


def bomb_resize(folder: Path) -> Path:
    f = numpy_helper.from_array(np.asarray([1.0, 1.0, 32768.0, 32768.0], np.float32), "scales")
    one = numpy_helper.from_array(np.ones([1, 1, 1, 1], np.float32), "one")
    n = [helper.make_node("Resize", ["one", "", "scales"], ["big"], name="resize"),
         helper.make_node("ReduceSum", ["big"], ["r"], name="sum", keepdims=0)]
    return _save(_with_add(n, "r", [one, f]), folder)


def bomb_matmul(folder: Path) -> Path:
    # two folded 64k-element vectors (each small enough to keep) whose outer product has 2^32 elements
    fill = helper.make_tensor("v", TensorProto.FLOAT, [1], [1.0])
    n = [helper.make_node("ConstantOfShape", ["sc"], ["col"], name="col", value=fill),
         helper.make_node("ConstantOfShape", ["sr"], ["row"], name="row", value=fill),
         helper.make_node("MatMul", ["col", "row"], ["big"], name="outer"),
         helper.make_node("ReduceSum", ["big"], ["r"], name="sum", keepdims=0)]
    return _save(_with_add(n, "r", [_i64("sc", [1 << 16, 1]), _i64("sr", [1, 1 << 16])]), folder)


def concat_20000(folder: Path) -> Path:
    """20,000 inputs of one Concat (60 KB of protobuf)."""
    x = _vi("x", [1, 1])
    n = [helper.make_node("Concat", ["x"] * 20000, ["y"], name="cat", axis=1)]
    return _save(_model(n, [x], [_vi("y", [1, 20000])], check=False), folder)


# -- graph structure ---------------------------------------------------------------------------------------
def cyclic(folder: Path) -> Path:
    n = [helper.make_node("Add", ["x", "b"], ["a"], name="n1"),
         helper.make_node("Relu", ["a"], ["b"], name="n2"),
         helper.make_node("Identity", ["a"], ["y"], name="n3")]
    return _save(_model(n, [_vi("x", [1, 4])], [_vi("y", [1, 4])], check=False), folder)


def loop_no_trip_count(folder: Path) -> Path:
    """Loop with no trip count and a condition that stays true: ONNX Runtime runs it forever."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep_going"),
         helper.make_node("Add", ["v_in", "one"], ["v_out"], name="inc")],
        "body", [_vi("i", [], TensorProto.INT64), _vi("cond_in", [], TensorProto.BOOL), _vi("v_in", [1, 4])],
        [_vi("cond_out", [], TensorProto.BOOL), _vi("v_out", [1, 4])],
        [numpy_helper.from_array(np.ones([1, 4], np.float32), "one")])
    cond = numpy_helper.from_array(np.array(True), "cond")
    n = [helper.make_node("Loop", ["", "cond", "x"], ["v"], name="forever", body=body),
         helper.make_node("Relu", ["v"], ["y"], name="relu")]
    return _save(_model(n, [_vi("x", [1, 4])], [_vi("y", [1, 4])], [cond]), folder)


def loop_data_dependent(folder: Path) -> Path:
    """A Loop whose body computes its condition (v > -1 while v only grows): endless on every input, but only running
    it shows that; the verification time limit (--verify-timeout) stops it."""
    body = helper.make_graph(
        [helper.make_node("Add", ["v_in", "one"], ["v_out"], name="inc"),
         helper.make_node("ReduceMin", ["v_out"], ["low"], name="low", keepdims=0),
         helper.make_node("Greater", ["low", "minus_one"], ["cond_out"], name="still_positive")],
        "body", [_vi("i", [], TensorProto.INT64), _vi("cond_in", [], TensorProto.BOOL), _vi("v_in", [1, 4])],
        [_vi("cond_out", [], TensorProto.BOOL), _vi("v_out", [1, 4])],
        [numpy_helper.from_array(np.ones([1, 4], np.float32), "one"),
         numpy_helper.from_array(np.array(-1.0, np.float32), "minus_one")])
    cond = numpy_helper.from_array(np.array(True), "cond")
    n = [helper.make_node("Abs", ["x"], ["ax"], name="abs"),
         helper.make_node("Loop", ["", "cond", "ax"], ["v"], name="counting", body=body),
         helper.make_node("Relu", ["v"], ["y"], name="relu")]
    return _save(_model(n, [_vi("x", [1, 4])], [_vi("y", [1, 4])], [cond]), folder)


def loop_huge_trip_count(folder: Path) -> Path:
    """A Loop with a trip count of 2^62 and a condition the body passes through: no end in sight."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep_going"),
         helper.make_node("Add", ["v_in", "one"], ["v_out"], name="inc")],
        "body", [_vi("i", [], TensorProto.INT64), _vi("cond_in", [], TensorProto.BOOL), _vi("v_in", [1, 4])],
        [_vi("cond_out", [], TensorProto.BOOL), _vi("v_out", [1, 4])],
        [numpy_helper.from_array(np.ones([1, 4], np.float32), "one")])
    n = [helper.make_node("Loop", ["trips", "", "x"], ["v"], name="long", body=body),
         helper.make_node("Relu", ["v"], ["y"], name="relu")]
    return _save(_model(n, [_vi("x", [1, 4])], [_vi("y", [1, 4])], [_i64("trips", 1 << 62)]), folder)


def huge_dims(folder: Path) -> Path:
    n = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    return _save(_model(n, [_vi("x", [1, 1 << 40])], [_vi("y", [1, 1 << 40])]), folder)


def int64_max_dims(folder: Path) -> Path:
    n = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    big = (1 << 63) - 1
    return _save(_model(n, [_vi("x", [1, big])], [_vi("y", [1, big])]), folder)


def input_3gb(folder: Path) -> Path:
    """One input of 3 GiB (float32 [1, 3, 16384, 16384]): a valid model whose every run needs gigabytes."""
    shape = [1, 3, 16384, 16384]
    n = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    return _save(_model(n, [_vi("x", shape)], [_vi("y", shape)]), folder)


CHAIN_NODES = 300_000


def chain(folder: Path, nodes: int = CHAIN_NODES) -> Path:
    """A chain of `nodes` cheap unary nodes on a [1, 4] tensor (about 10 MB of protobuf)."""
    g = onnx.GraphProto(name="g")
    ops = ("Relu", "Sigmoid", "Neg", "Abs")
    prev = "x"
    for i in range(nodes):
        out = "y" if i == nodes - 1 else f"t{i}"
        g.node.add(op_type=ops[i % 4], input=[prev], output=[out], name=f"n{i}")
        prev = out
    g.input.append(_vi("x", [1, 4]))
    g.output.append(_vi("y", [1, 4]))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)])
    m.ir_version = 8
    return _save(m, folder)


def chain_300k(folder: Path) -> Path:
    return chain(folder, CHAIN_NODES)


def sequence_output(folder: Path) -> Path:
    n = [helper.make_node("SequenceConstruct", ["x", "x"], ["y"], name="seq")]
    y = helper.make_tensor_sequence_value_info("y", TensorProto.FLOAT, [1, 4])
    return _save(_model(n, [_vi("x", [1, 4])], [y]), folder)


def ansi_names(folder: Path) -> Path:
    evil = "\x1b[2J\x1b[31mPWNED"
    n = [helper.make_node("Relu", ["x"], [evil], name=evil),
         helper.make_node("Erf", [evil], ["y"], name=evil + "2")]
    return _save(_model(n, [_vi("x", [1, 4])], [_vi("y", [1, 4])]), folder)


# -- text fields that are not UTF-8 (proto2 hands them back as bytes) -----------------------------------------
def _not_utf8(m: onnx.ModelProto, marker: str, folder: Path) -> Path:
    """Save `m` with the first ASCII `marker` in it turned into bytes that are not UTF-8, same length."""
    data = m.SerializeToString()
    assert marker.encode() in data
    p = folder / "model.onnx"
    p.write_bytes(data.replace(marker.encode(), b"\xff" + marker.encode()[1:], 1))
    return p


def non_utf8_op_type(folder: Path) -> Path:
    n = [helper.make_node("Relu", ["x"], ["y"], name="r")]
    n[0].op_type = "QRelu"
    return _not_utf8(_model(n, [_vi("x", [1, 4])], [_vi("y", [1, 4])], check=False), "QRelu", folder)


def non_utf8_dim_param(folder: Path) -> Path:
    n = [helper.make_node("Relu", ["x"], ["y"], name="r")]
    return _not_utf8(_model(n, [_vi("x", ["NBATCH", 4])], [_vi("y", ["NBATCH", 4])], check=False), "NBATCH", folder)


def non_utf8_tensor_name(folder: Path) -> Path:
    """Deep in the model: the name of the tensor held by a Constant's TENSOR attribute."""
    t = numpy_helper.from_array(np.ones([1, 4], np.float32), "KCONSTVAL")
    n = [helper.make_node("Constant", [], ["k"], name="c", value=t), helper.make_node("Add", ["x", "k"], ["y"], name="add")]
    return _not_utf8(_model(n, [_vi("x", [1, 4])], [_vi("y", [1, 4])], check=False), "KCONSTVAL", folder)


# -- models the ONNX checker or Runtime rejects -------------------------------------------------------------
def undefined_tensor(folder: Path) -> Path:
    n = [helper.make_node("Add", ["x", "nowhere"], ["y"], name="add")]
    return _save(_model(n, [_vi("x", [1, 4])], [_vi("y", [1, 4])], check=False), folder)


def duplicate_names(folder: Path) -> Path:
    n = [helper.make_node("Relu", ["x"], ["y"], name="a"), helper.make_node("Sigmoid", ["x"], ["y"], name="b")]
    return _save(_model(n, [_vi("x", [1, 4])], [_vi("y", [1, 4])], check=False), folder)


def wrong_attribute_type(folder: Path) -> Path:
    n = [helper.make_node("Softmax", ["x"], ["y"], name="sm")]
    n[0].attribute.append(helper.make_attribute("axis", "minus one"))  # a string where an int belongs
    return _save(_model(n, [_vi("x", [1, 4])], [_vi("y", [1, 4])], check=False), folder)


def empty_op_type(folder: Path) -> Path:
    n = [helper.make_node("Relu", ["x"], ["y"], name="r")]
    n[0].op_type = ""
    return _save(_model(n, [_vi("x", [1, 4])], [_vi("y", [1, 4])], check=False), folder)


def bfloat16_weights(folder: Path) -> Path:
    w = helper.make_tensor("w", TensorProto.BFLOAT16, [1, 4], [1.0, 2.0, 3.0, 4.0])
    n = [helper.make_node("Cast", ["w"], ["wf"], name="cast", to=TensorProto.FLOAT),
         helper.make_node("Add", ["x", "wf"], ["y"], name="add")]
    return _save(_model(n, [_vi("x", [1, 4])], [_vi("y", [1, 4])], [w]), folder)


def wrong_raw_length(folder: Path) -> Path:
    w = numpy_helper.from_array(np.ones([1, 4], np.float32), "w")
    w.raw_data = w.raw_data[:6]  # 6 bytes for 4 float32
    n = [helper.make_node("Add", ["x", "w"], ["y"], name="add")]
    return _save(_model(n, [_vi("x", [1, 4])], [_vi("y", [1, 4])], [w], check=False), folder)


# -- external data ------------------------------------------------------------------------------------------
def _external(folder: Path, location: str, offset: int | None = None, length: int | None = None) -> Path:
    w = numpy_helper.from_array(np.ones([1, 4], np.float32), "w")
    w.ClearField("raw_data")
    w.data_location = TensorProto.EXTERNAL
    w.external_data.add(key="location", value=location)
    if offset is not None:
        w.external_data.add(key="offset", value=str(offset))
    if length is not None:
        w.external_data.add(key="length", value=str(length))
    n = [helper.make_node("Add", ["x", "w"], ["y"], name="add")]
    return _save(_model(n, [_vi("x", [1, 4])], [_vi("y", [1, 4])], [w], check=False), folder)


def ext_missing(folder: Path) -> Path:
    return _external(folder, "weights.bin")


def ext_folder(folder: Path) -> Path:
    (folder / "weights.bin").mkdir()
    return _external(folder, "weights.bin")


def ext_fifo(folder: Path) -> Path:
    os.mkfifo(folder / "weights.bin")
    return _external(folder, "weights.bin")


def ext_url(folder: Path) -> Path:
    return _external(folder, "http://example.invalid/weights.bin")


def ext_backslash(folder: Path) -> Path:
    """A Windows-style traversal: on Windows '..\\' leaves the folder; on Linux it names a file that is not there."""
    return _external(folder, "..\\..\\..\\etc\\passwd")


def ext_past_eof(folder: Path) -> Path:
    (folder / "weights.bin").write_bytes(b"\0" * 16)
    return _external(folder, "weights.bin", offset=4096, length=16)


def ext_negative_offset(folder: Path) -> Path:
    (folder / "weights.bin").write_bytes(b"\0" * 16)
    return _external(folder, "weights.bin", offset=-8, length=16)


def ext_nul(folder: Path) -> Path:
    return _external(folder, "weights\x00.bin")


def ext_long(folder: Path) -> Path:
    return _external(folder, "w" * 5000 + ".bin")


def ext_in_function_body(folder: Path) -> Path:
    """A traversal hidden in a Constant inside a model-local function body."""
    t = numpy_helper.from_array(np.ones([1, 4], np.float32), "c")
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    t.external_data.add(key="location", value="../../../etc/passwd")
    fn = helper.make_function("local", "AddConst", ["a"], ["b"],
                              [helper.make_node("Constant", [], ["k"], value=t), helper.make_node("Add", ["a", "k"], ["b"])],
                              [helper.make_opsetid("", OPSET)])
    n = [helper.make_node("AddConst", ["x"], ["y"], name="f", domain="local")]
    m = helper.make_model(helper.make_graph(n, "g", [_vi("x", [1, 4])], [_vi("y", [1, 4])]), functions=[fn],
                          opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid("local", 1)])
    m.ir_version = 8
    return _save(m, folder)


def ext_in_sparse_initializer(folder: Path) -> Path:
    vals = numpy_helper.from_array(np.ones([2], np.float32), "w")
    vals.ClearField("raw_data")
    vals.data_location = TensorProto.EXTERNAL
    vals.external_data.add(key="location", value="../outside.bin")
    idx = numpy_helper.from_array(np.array([0, 3], np.int64), "w_idx")
    sp = helper.make_sparse_tensor(vals, idx, [1, 4])
    n = [helper.make_node("Add", ["x", "w"], ["y"], name="add")]
    g = helper.make_graph(n, "g", [_vi("x", [1, 4])], [_vi("y", [1, 4])], sparse_initializer=[sp])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)])
    m.ir_version = 8
    return _save(m, folder)


def ext_in_tensors_attribute(folder: Path) -> Path:
    t = numpy_helper.from_array(np.ones([1, 4], np.float32), "c")
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    t.external_data.add(key="location", value="../outside.bin")
    node = helper.make_node("Relu", ["x"], ["y"], name="relu")
    node.attribute.append(helper.make_attribute("stash", [t]))  # a TENSORS attribute
    return _save(_model([node], [_vi("x", [1, 4])], [_vi("y", [1, 4])], check=False), folder)


# -- the file itself ---------------------------------------------------------------------------------------
def fifo_model(folder: Path) -> Path:
    p = folder / "model.onnx"
    os.mkfifo(p)
    return p


def fifo_tflite(folder: Path) -> Path:
    p = folder / "model.tflite"
    os.mkfifo(p)
    return p


# -- TFLite ---------------------------------------------------------------------------------------------------
def _tflite(folder: Path, tamper: Callable | None = None) -> Path:
    from npufit.convert.tflite_writer import TFLiteBuilder

    b = TFLiteBuilder()
    x = b.tensor("x", (1, 4), "float32")
    a = b.tensor("a", (1, 4), "float32")
    y = b.tensor("y", (1, 4), "float32")
    b.op("RELU", [x], [a])
    b.op("LOGISTIC", [a], [y])
    b.io([x], [y])
    if tamper:
        tamper(b)
    p = folder / "model.tflite"
    p.write_bytes(b.build())
    return p


def tflite_cycle(folder: Path) -> Path:
    def cycle(b):
        b.ops[0].inputs = [b.ops[1].outputs[0]]  # RELU reads LOGISTIC's output, which reads RELU's
    return _tflite(folder, cycle)


def tflite_bad_tensor_index(folder: Path) -> Path:
    def bad(b):
        b.ops[1].inputs = [999]
    return _tflite(folder, bad)


def tflite_unreadable(folder: Path) -> Path:
    p = _tflite(folder)
    p.chmod(0)
    return p


def tflite_truncated(folder: Path) -> Path:
    p = _tflite(folder)
    p.write_bytes(p.read_bytes()[:40])
    return p


CASES: dict[str, Callable[[Path], Path]] = {f.__name__: f for f in [
    bomb_constant_of_shape, bomb_expand, bomb_range, bomb_tile, bomb_pad, bomb_resize, bomb_matmul, concat_20000,
    cyclic, loop_no_trip_count, loop_data_dependent, loop_huge_trip_count,
    huge_dims, int64_max_dims, input_3gb, chain_300k, sequence_output, ansi_names,
    non_utf8_op_type, non_utf8_dim_param, non_utf8_tensor_name,
    undefined_tensor, duplicate_names, wrong_attribute_type, empty_op_type, bfloat16_weights, wrong_raw_length,
    ext_missing, ext_folder, ext_fifo, ext_url, ext_backslash, ext_past_eof, ext_negative_offset, ext_nul, ext_long,
    ext_in_function_body, ext_in_sparse_initializer, ext_in_tensors_attribute,
    fifo_model, fifo_tflite, tflite_cycle, tflite_bad_tensor_index, tflite_unreadable, tflite_truncated]}


def build(name: str, folder: Path) -> Path:
    return CASES[name](folder)

"""The validation front door's single walk over a model's tensors, and the text check on the file's own bytes."""
from __future__ import annotations

import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from npufit.errors import BadModelError
from npufit.graph import validate
from npufit.graph.onnx_prepare import read_onnx
from tests.hostile import model_cases as mc


def _external(name: str) -> TensorProto:
    t = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=[2])
    t.data_location = TensorProto.EXTERNAL
    t.external_data.add(key="location", value="w.bin")
    return t


def _bad_length(name: str) -> TensorProto:
    t = numpy_helper.from_array(np.ones([4], np.float32), name)
    t.raw_data = t.raw_data[:8]  # 2 floats for a shape of 4
    return t


def _branch(name: str, init: TensorProto) -> onnx.GraphProto:
    return helper.make_graph([helper.make_node("Add", ["x", init.name], [f"{name}_y"], name=f"{name}_add")], name, [],
                             [helper.make_tensor_value_info(f"{name}_y", TensorProto.FLOAT, [4])], [init])


def _if_model(then_init: TensorProto, else_init: TensorProto, with_function: bool = False) -> onnx.ModelProto:
    node = helper.make_node("If", ["c"], ["y"], name="if", then_branch=_branch("then", then_init),
                            else_branch=_branch("else", else_init))
    g = helper.make_graph([node], "main", [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                                           helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
                          [numpy_helper.from_array(np.ones([3], np.float32), "top"), _bad_length("top_bad")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)])
    if with_function:
        body = [helper.make_node("Constant", [], ["k"], value=_external("in_function"))]
        m.functions.append(helper.make_function("local", "F", [], ["k"], body, [helper.make_opsetid("", 17)]))
    return m


def test_one_scan_finds_what_the_separate_walks_found():
    m = _if_model(_external("in_then"), _bad_length("in_else"), with_function=True)
    scan = validate.scan_tensors(m)
    # external tensors from subgraphs and function bodies, in the order the guard reports them
    assert [t.name for t in scan.external] == ["in_then", "in_function"]
    assert [t.name for t in scan.external] == [t.name for t in validate.all_tensors(m) if t.data_location == TensorProto.EXTERNAL]
    # the graphs whose inputs/outputs the checker needs shaped: main and both branches (in attribute order,
    # make_node sorts by name), no function body
    assert [g.name for g in scan.graphs] == ["main", "else", "then"]
    # the first raw_data of the wrong length, in all_tensors order: the main graph's before the else branch's
    t, have, need = scan.bad_length
    assert (t.name, have, need) == ("top_bad", 8, 16)


def test_raw_length_in_a_subgraph_is_refused(tmp_path):
    """Where the ONNX checker cannot run (the model is newer than this onnx), the scan still catches it."""
    m = _if_model(numpy_helper.from_array(np.ones([4], np.float32), "in_then"), _bad_length("in_else"))
    del m.graph.initializer[1]  # only the else branch's tensor is wrong
    m.opset_import[0].version = onnx.defs.onnx_opset_version() + 1
    p = tmp_path / "m.onnx"
    onnx.save(m, str(p))
    with pytest.raises(BadModelError, match=re.escape("tensor 'in_else' holds 8 bytes of data but its shape [4] and type need 16")):
        read_onnx(p)


def test_text_check_parses_the_bytes_it_is_given(tmp_path):
    """With the file's bytes at hand the fast pass parses those (no re-serialized copy), and still names the field."""
    clean = onnx.load(str(mc.build("ansi_names", tmp_path)), load_external_data=False)
    d = tmp_path / "bad"
    d.mkdir()
    p = mc.build("non_utf8_op_type", d)
    wire = p.read_bytes()
    bad = onnx.ModelProto.FromString(wire)
    assert validate._all_text(clean, clean.SerializeToString())
    assert not validate._all_text(clean, wire)  # judged by the bytes, not by the parsed object
    with pytest.raises(BadModelError, match=re.escape("graph.node[0].op_type")):
        validate.check_text(bad, p, wire)
    validate.check_text(clean, tmp_path, clean.SerializeToString())

"""Loader: bad input gives one clear error; unusual-but-valid models load; weights stay on disk."""
from __future__ import annotations

import hashlib

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from npufit.errors import BadModelError, NpufitError
from npufit.graph import load, parse_input_shapes
from tests.onnx_builders import branchy_model, model, vi


def test_missing_file(tmp_path):
    with pytest.raises(BadModelError, match="no such file"):
        load(tmp_path / "nope.onnx")


def test_directory(tmp_path):
    with pytest.raises(BadModelError, match="is a folder"):
        load(tmp_path)


@pytest.mark.parametrize("content", [b"", b"\x00\x01garbage\xff" * 10, b"hello, I am a text file\n"])
def test_corrupt_or_non_onnx(tmp_path, content):
    p = tmp_path / "bad.onnx"
    p.write_bytes(content)
    with pytest.raises(BadModelError):
        load(p)


def test_truncated(tmp_path):
    p = tmp_path / "t.onnx"
    data = branchy_model().SerializeToString()
    p.write_bytes(data[: len(data) // 2])
    with pytest.raises(BadModelError):
        load(p)


def _external_model(tmp_path, location: str):
    m = branchy_model()
    onnx.save_model(m, str(tmp_path / "ext.onnx"), save_as_external_data=True, location="ext.data", size_threshold=16)
    m2 = onnx.load(str(tmp_path / "ext.onnx"), load_external_data=False)
    for t in m2.graph.initializer:
        for kv in t.external_data:
            if kv.key == "location":
                kv.value = location
    p = tmp_path / "evil.onnx"
    onnx.save_model(m2, str(p))
    return p


def test_external_data_loads_without_reading_weights(tmp_path):
    onnx.save_model(branchy_model(), str(tmp_path / "ext.onnx"), save_as_external_data=True, location="ext.data", size_threshold=16)
    data = tmp_path / "ext.data"  # there and long enough (a model without its weights is refused), never read:
    data.write_bytes(b"\xff" * data.stat().st_size)  # its bytes replaced, the shapes are all check takes
    g = load(tmp_path / "ext.onnx")
    assert g.tensor("w1").shape == (8, 3, 3, 3) and g.tensor("w1").value is None


@pytest.mark.parametrize("loc", ["../outside.data", "/etc/passwd", "sub/../../x.data"])
def test_external_data_path_traversal_refused(tmp_path, loc):
    p = _external_model(tmp_path, loc)
    with pytest.raises(BadModelError, match="outside the model folder|relative path"):
        load(p)


def test_input_file_never_modified(tmp_path):
    from npufit import check

    p = tmp_path / "m.onnx"
    onnx.save_model(branchy_model(), str(p))
    before = hashlib.sha256(p.read_bytes()).hexdigest()
    check(p, "hailo8", input_shapes={"x": (1, 3, 8, 8)})
    assert hashlib.sha256(p.read_bytes()).hexdigest() == before


def test_dynamic_dims_reported_and_pinned(tmp_path):
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="r")]
    m = model(nodes, [vi("x", ["batch", 3, "h", "w"])], [vi("y", None)])
    p = tmp_path / "dyn.onnx"
    onnx.save_model(m, str(p))
    g = load(p)
    assert [n.to_dict() for n in g.shapes_needed] == [
        {"input": "x", "shape": ["batch", 3, "h", "w"], "example": [1, 3, 640, 640]}
    ]
    g2 = load(p, parse_input_shapes(["x=1,3,32,32"]))
    assert g2.tensor("y").shape == (1, 3, 32, 32) and not g2.warnings


def test_bad_input_shape_spec():
    with pytest.raises(NpufitError, match="NAME=D0"):
        parse_input_shapes(["1,3,224"])


def test_unknown_input_name(tmp_path):
    p = tmp_path / "m.onnx"
    onnx.save_model(branchy_model(), str(p))
    with pytest.raises(BadModelError, match="no input 'nope'"):
        load(p, {"nope": (1,)})


def test_custom_domain_gets_a_verdict(tmp_path):
    from npufit import check

    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("MyOp", ["r"], ["y"], name="custom", domain="com.acme")]
    m = model(nodes, [vi("x", [1, 4])], [vi("y", [1, 4])], domains=["com.acme"])
    p = tmp_path / "c.onnx"
    onnx.save_model(m, str(p))
    rep = check(p, "hailo8")
    n = rep.node("custom")
    assert n.verdict.value == "unsupported" and "custom-domain" in n.reasons[0].text


def test_subgraph_nodes_are_judged(tmp_path):
    from npufit import check

    then_g = helper.make_graph([helper.make_node("TopK", ["x", "k"], ["tv", "ti"], name="inner_topk")], "then", [],
                               [vi("tv", [1, 1])], [numpy_helper.from_array(np.array([1], np.int64), "k")])
    else_g = helper.make_graph([helper.make_node("Relu", ["x"], ["ev"], name="inner_relu")], "else", [], [vi("ev", [1, 4])])
    nodes = [helper.make_node("If", ["cond"], ["y"], name="if", then_branch=then_g, else_branch=else_g)]
    m = model(nodes, [vi("x", [1, 4]), vi("cond", [], TensorProto.BOOL)], [vi("y", None)])
    p = tmp_path / "if.onnx"
    onnx.save_model(m, str(p))
    rep = check(p, "hailo8")
    inner = rep.node("inner_topk")
    assert inner is not None and inner.parent == "if" and inner.verdict.value == "unsupported"
    assert rep.node("if").verdict.value == "unsupported"


def test_folding_of_shape_arithmetic(tmp_path):
    # flatten as exported by torch: Shape -> Gather -> Unsqueeze -> Concat -> Reshape
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("Shape", ["r"], ["s"], name="shape"),
        helper.make_node("Gather", ["s", "i0"], ["b"], name="gather", axis=0),
        helper.make_node("Unsqueeze", ["b", "ax"], ["bu"], name="unsq"),
        helper.make_node("Concat", ["bu", "m1"], ["newshape"], name="concat", axis=0),
        helper.make_node("Reshape", ["r", "newshape"], ["y"], name="reshape"),
    ]
    inits = [numpy_helper.from_array(np.array(0, np.int64), "i0"), numpy_helper.from_array(np.array([0], np.int64), "ax"),
             numpy_helper.from_array(np.array([-1], np.int64), "m1")]
    p = tmp_path / "f.onnx"
    onnx.save_model(model(nodes, [vi("x", [1, 2, 3, 4])], [vi("y", None)], inits), str(p))
    g = load(p)
    assert g.folded == {"shape", "gather", "unsq", "concat"}
    assert g.tensor("newshape").value.tolist() == [1, -1]
    assert g.tensor("y").shape == (1, 24)

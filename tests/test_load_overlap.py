"""The check loader builds nodes and maps while shape inference runs in a forked child (big models, issue 18): the
Graph, its warnings and the check report equal the serial load's; a rejected model gives the checker's one line; a
child that dies is replaced by inference here; models with subgraphs load serially. The node threshold is lowered
(the `forks` fixture) so that small models take the forked path."""
from __future__ import annotations

import os
import signal

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from npufit.check.engine import check_graph
from npufit.errors import BadModelError
from npufit.graph import onnx_prepare
from npufit.graph.onnx_loader import load_onnx
from npufit.graph.onnx_prepare import infer, infer_beside, pin_inputs, read_onnx, strip_weights
from npufit.targets import get_profile
from tests.onnx_builders import branchy_model, model, vi, zoo_model
from tests.test_forked_checker import _children, _save, _serial, forks, own_threads  # noqa: F401  (fixtures)


def _facts(g) -> tuple:
    tensors = {k: (t.shape, t.dtype, t.is_const, t.is_initializer, None if t.value is None else t.value.tolist())
               for k, t in g.tensors.items()}
    return [(n.name, n.op_type, n.inputs, n.outputs) for n in g.nodes], tensors, g.warnings, g.folded, g.input_names


def _same_as_serial(monkeypatch, path, **kw):
    overlapped = load_onnx(path, **kw)
    serial = _serial(monkeypatch, load_onnx, path, **kw)
    assert _facts(overlapped) == _facts(serial)
    for target in ("hailo8", "ethos-u55-256", "rk3588"):
        profile = get_profile(target)
        assert check_graph(overlapped, profile).render("json") == check_graph(serial, profile).render("json")
    return overlapped


def _overlaps(path, **kw) -> bool:
    prep = read_onnx(path, pin_inputs(kw.get("input_shapes")), strip_weights, infer_beside)
    try:
        return prep.overlap is not None
    finally:
        if prep.overlap is not None:
            prep.overlap.finish()


def test_overlapped_load_equals_the_serial_one(tmp_path, monkeypatch, forks):
    for k, m in enumerate([branchy_model(), *(zoo_model(i) for i in range(0, 15, 4))]):
        path = _save(m, tmp_path, f"m{k}.onnx")
        assert _overlaps(path)
        _same_as_serial(monkeypatch, path)
    g = _same_as_serial(monkeypatch, _save(branchy_model(), tmp_path), input_shapes={"x": (1, 3, 16, 16)})
    assert g.tensor("x").shape == (1, 3, 16, 16)
    assert len(forks) >= 10 and not _children()


def test_failed_inference_and_unshaped_inputs_warn_as_serially(tmp_path, monkeypatch, forks):
    # a dynamic input: what the shape policy asks for; a Reshape to a computed shape: folding and refinement run
    # after the child
    shape = numpy_helper.from_array(np.array([1, -1], np.int64), "shape")
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Reshape", ["r", "shape"], ["y"])]
    path = _save(model(nodes, [vi("x", ["n", 4, "k"])], [vi("y", ["n", 16])], [shape]), tmp_path)
    assert _overlaps(path)
    g = _same_as_serial(monkeypatch, path)
    assert [n.name for n in g.shapes_needed] == ["x"]
    real = onnx_prepare.infer_shapes

    def fails(m):  # inference breaks (in the child, or here): the model as given, and a warning that says so
        return m, "InferenceError: broken on purpose"

    monkeypatch.setattr(onnx_prepare, "infer_shapes", fails)
    g = _same_as_serial(monkeypatch, path)
    assert "shape inference failed (InferenceError: broken on purpose); shapes may be incomplete" in g.warnings
    monkeypatch.setattr(onnx_prepare, "infer_shapes", real)


def test_rejected_model_gives_the_checkers_line(tmp_path, monkeypatch, forks):
    bad = model([helper.make_node("Relu", ["x", "x"], ["y"], name="relu")], [vi("x", [2])], [vi("y", [2])])
    path = _save(bad, tmp_path)
    with pytest.raises(BadModelError) as serial:
        _serial(monkeypatch, load_onnx, path)
    with pytest.raises(BadModelError) as beside:
        load_onnx(path)
    assert str(beside.value) == str(serial.value) and "the ONNX checker rejects this model" in str(serial.value)
    assert not _children()


def test_killed_inference_child_falls_back(tmp_path, monkeypatch, forks):
    parent, real = os.getpid(), onnx_prepare._inferred_types

    def dies_in_child(m):
        if os.getpid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(m)

    monkeypatch.setattr(onnx_prepare, "_inferred_types", dies_in_child)
    _same_as_serial(monkeypatch, _save(branchy_model(), tmp_path))
    assert not _children()


def test_subgraphs_and_other_verbs_load_serially(tmp_path, forks):
    then = helper.make_graph([helper.make_node("Relu", ["x"], ["t"])], "then", [], [vi("t", [2])])
    other = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [], [vi("e", [2])])
    cond = numpy_helper.from_array(np.array(True), "c")
    m = model([helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)], [vi("x", [2])], [vi("y", [2])],
              [cond])
    assert not _overlaps(_save(m, tmp_path, "if.onnx"))
    path = _save(branchy_model(), tmp_path)
    assert read_onnx(path, strip_weights, infer).overlap is None  # only the check loader asks for it
    assert read_onnx(path, infer_beside).overlap is None  # weights kept: the child would copy their pages


def test_fork_threshold_from_the_environment(tmp_path, monkeypatch, own_threads):  # noqa: F811
    path = _save(branchy_model(), tmp_path)
    monkeypatch.delenv("NPUFIT_SERIAL_CHECKER", raising=False)
    assert not _overlaps(path)  # 7 nodes, below FORK_CHECKER_MIN_NODES
    monkeypatch.setenv("NPUFIT_FORK_MIN_NODES", "1")
    assert _overlaps(path)
    monkeypatch.setenv("NPUFIT_SERIAL_CHECKER", "1")
    assert not _overlaps(path)

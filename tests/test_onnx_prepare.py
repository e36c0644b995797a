"""One way for every verb to read an ONNX model (graph/onnx_prepare.py): read and validate, then small loaders
that compose (pin input shapes, strip weights, infer shapes); no other module reads a user's model or runs shape
inference by itself (the scan reads npufit/ with `ast`), and a combination that makes no sense cannot be asked for."""
from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from npufit.errors import BadModelError, NpufitError
from npufit.graph.onnx_prepare import (from_proto, infer, infer_beside, infer_shapes, pin_inputs, read_onnx,
                                      strip_weights)
from tests.onnx_builders import branchy_model, model, vi

PKG = Path(__file__).resolve().parents[1] / "npufit"
HOME = "graph/onnx_prepare.py"

# onnx's entry points that read a model file (or its weights) or infer shapes
READERS = {"onnx.load", "onnx.load_model", "onnx.load_from_string", "onnx.load_model_from_string",
           "onnx.external_data_helper.load_external_data_for_model", "onnx.shape_inference.infer_shapes",
           "onnx.shape_inference.infer_shapes_path"}
# Where a direct call is right, and why. Each entry must still hold such a call (a stale exception fails too).
EXCEPTIONS = {
    # npufit's own intermediates in quantize's private temp folder (written by ONNX Runtime's quantizer from the
    # float copy read_onnx loaded), not the user's file: they need no validation front door and no inference
    "quantize/__init__.py": "reads the quantizer's own QDQ and float files in its private temp folder",
    "quantize/quantizer.py": "reads the float copy it saved in its private temp folder",
    # a label for the Model Explorer overlay: the graph's name only, any failure falls back to 'main_graph'
    "report/model_explorer.py": "reads only the graph's name for a label",
}


def _aliases(tree: ast.Module) -> dict[str, str]:
    """Local name -> the dotted onnx name it stands for (import onnx as o, from onnx import shape_inference...)."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "onnx" or a.name.startswith("onnx."):
                    out[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and (node.module == "onnx" or node.module.startswith("onnx.")):
            for a in node.names:
                out[a.asname or a.name] = f"{node.module}.{a.name}"
    return out


def _dotted(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def _direct_calls(path: Path, root: Path = PKG) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    aliases = _aliases(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and (name := _dotted(node.func)):
            head, _, rest = name.partition(".")
            full = aliases.get(head, head) + ("." + rest if rest else "")
            if full in READERS:
                found.append(f"{path.relative_to(root)}:{node.lineno} {full}")
    return found


def test_only_the_preparation_module_reads_models_and_infers_shapes():
    hits = {str(p.relative_to(PKG)): _direct_calls(p) for p in sorted(PKG.rglob("*.py"))}
    assert hits[HOME], "the scan lost sight of the preparation module's own calls"
    stray = [h for f, calls in hits.items() if f != HOME and f not in EXCEPTIONS for h in calls]
    assert not stray, "read or infer through npufit.graph.onnx_prepare (read_onnx / infer_shapes):\n" + "\n".join(stray)
    stale = [f for f in EXCEPTIONS if not hits.get(f)]
    assert not stale, f"exceptions without a direct call any more: {stale}"


def test_the_scan_sees_aliased_calls(tmp_path):
    src = tmp_path / "m.py"
    src.write_text("import onnx as o\nfrom onnx.shape_inference import infer_shapes as inf\nfrom onnx import load\n"
                   "o.load('a')\ninf(m)\nload('b')\no.shape_inference.infer_shapes(m)\n")
    calls = _direct_calls(src, tmp_path)
    assert [c.split(" ")[1] for c in calls] == ["onnx.load", "onnx.shape_inference.infer_shapes", "onnx.load",
                                                "onnx.shape_inference.infer_shapes"]


def test_no_private_imports_from_the_loader():
    """split/extract once imported three of the loader's private helpers: what other modules need is public."""
    bad = []
    for p in sorted(PKG.rglob("*.py")):
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").endswith(("onnx_loader", "onnx_prepare")):
                bad += [f"{p.relative_to(PKG)}: {a.name}" for a in node.names if a.name.startswith("_")]
    assert not bad, bad


# -- what the loaders do -------------------------------------------------------------------------------------
def _external(tmp_path) -> Path:
    p = tmp_path / "ext.onnx"
    onnx.save_model(branchy_model(), str(p), save_as_external_data=True, location="ext.data", size_threshold=16)
    return p


def test_weights_keep_strip_load(tmp_path):
    p = _external(tmp_path)
    keep = read_onnx(p, infer).model
    load = read_onnx(p, infer, external_data="loaded").model
    w_keep = next(t for t in keep.graph.initializer if t.name == "w1")
    w_load = next(t for t in load.graph.initializer if t.name == "w1")
    assert w_keep.data_location == TensorProto.EXTERNAL and not w_keep.raw_data  # left on disk
    assert w_load.data_location == TensorProto.DEFAULT
    np.testing.assert_array_equal(numpy_helper.to_array(w_load), numpy_helper.to_array(
        next(t for t in branchy_model().graph.initializer if t.name == "w1")))
    # embedded weights: "strip" drops the bytes before inference and keeps those rules may read
    q = tmp_path / "emb.onnx"
    onnx.save_model(branchy_model(), str(q))
    strip = read_onnx(q, strip_weights, infer)
    w_strip = next(t for t in strip.model.graph.initializer if t.name == "w1")
    assert not w_strip.raw_data and "w1" in strip.kept
    assert strip.kept["w1"][0] == next(t for t in branchy_model().graph.initializer if t.name == "w1").raw_data
    # shapes inferred in every mode
    for prep in (read_onnx(p, infer), strip):
        assert any(v.name == "c1" for v in prep.model.graph.value_info)
    assert not any(v.name == "c1" for v in read_onnx(p).model.graph.value_info)


@pytest.mark.parametrize(
    "loaders, external_data",
    [((strip_weights, infer_beside), "on_disk"), ((infer,), "on_disk"), ((), "loaded")],
    ids=["check", "run", "rewrite"],
)
def test_missing_external_data_is_refused_for_every_verb(tmp_path, loaders, external_data):
    """Checking too: a model read without its weights is judged as another model (hostile-input issue)."""
    p = _external(tmp_path)
    (tmp_path / "ext.data").unlink()
    with pytest.raises(BadModelError, match="external data missing or too short: ext.data"):
        read_onnx(p, *loaders, external_data=external_data)


def test_in_memory_model_is_never_changed():
    m = model([helper.make_node("Relu", ["x"], ["y"], name="r")], [vi("x", ["batch", 8])], [vi("y", ["batch", 8])])
    m.graph.initializer.append(numpy_helper.from_array(np.ones((64, 64), np.float32), "unused"))
    before = m.SerializeToString()
    prep = from_proto(m, pin_inputs({"x": (2, 8)}), strip_weights, infer, name="<mem>")
    assert m.SerializeToString() == before
    assert prep.path == "<mem>" and prep.opsets["ai.onnx"] == m.opset_import[0].version
    y = next(o for o in prep.model.graph.output if o.name == "y")
    assert [d.dim_value for d in y.type.tensor_type.shape.dim] == [2, 8]
    assert from_proto(m, infer).model is not m and from_proto(m).model is m  # copied only when changed


def test_only_dynamic_dims_can_be_pinned_when_asked(tmp_path):
    p = tmp_path / "m.onnx"
    onnx.save_model(model([helper.make_node("Relu", ["x"], ["y"], name="r")], [vi("x", ["batch", 8])],
                          [vi("y", ["batch", 8])]), str(p))
    pinned = read_onnx(p, pin_inputs({"x": (2, 4)}), infer).model
    assert pinned.graph.input[0].type.tensor_type.shape.dim[1].dim_value == 4
    with pytest.raises(NpufitError, match="dim 1 is fixed to 8"):
        read_onnx(p, pin_inputs({"x": (2, 4)}, only_dynamic=True), infer)
    with pytest.raises(NpufitError, match="has rank 2, got 3 dims"):
        read_onnx(p, pin_inputs({"x": (2, 8, 1)}, only_dynamic=True))
    with pytest.raises(BadModelError, match="no input 'z'"):
        read_onnx(p, pin_inputs({"z": (1,)}))


def test_failed_inference_is_a_warning_not_an_error():
    m = model([helper.make_node("Add", ["x", "c"], ["y"], name="add")], [vi("x", [1, 8]), vi("c", [1, 8])], [vi("y", [1, 8])])
    m.graph.initializer.append(helper.make_tensor("c", TensorProto.INT64, [2], [1, 2]))  # the input says float
    out, error = infer_shapes(m)
    assert out is m and error.startswith("InferenceError: ") and "elem type differs" in error
    prep = from_proto(m, infer)
    assert prep.shape_warnings == [f"shape inference failed ({error}); shapes may be incomplete"]
    assert prep.warnings == prep.file_warnings + prep.shape_warnings


def test_combinations_that_make_no_sense_cannot_be_asked_for(tmp_path):
    """What the old flag bag caught late (or not at all): a file's data options on an in-memory model, a loader after
    shape inference, two inferences. Refused before anything is read (the path does not even exist)."""
    m = model([helper.make_node("Relu", ["x"], ["y"], name="r")], [vi("x", ["batch", 8])], [vi("y", ["batch", 8])])
    with pytest.raises(TypeError):
        from_proto(m, external_data="loaded")  # an in-memory model has no folder to read weights from
    missing = tmp_path / "no-such.onnx"
    with pytest.raises(ValueError, match="shape inference is the last loader"):
        read_onnx(missing, infer, strip_weights)
    with pytest.raises(ValueError, match="shape inference is the last loader"):
        read_onnx(missing, infer_beside, pin_inputs({"x": (1, 8)}))
    with pytest.raises(ValueError, match="shape inference is the last loader"):
        from_proto(m, infer, infer)
    with pytest.raises(ValueError, match="external_data must be one of"):
        read_onnx(missing, external_data="yes")
    with pytest.raises(BadModelError):  # a legal chain reaches the file
        read_onnx(missing, pin_inputs({"x": (1, 8)}), infer)

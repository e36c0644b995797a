"""Tiny pipelines for the pipeline/report tests: 1 epoch, a few windows, hidden size 4 (seconds, not minutes)."""
from __future__ import annotations

from pathlib import Path

import onnx
from onnx import TensorProto, helper, numpy_helper
import numpy as np

TINY = """version: 1
name: tiny
data: {{length: 240, seq_len: 8, features: 3}}
models:
  - {{name: gru, arch: gru, hidden: {gru_hidden}}}
  - {{name: tcn, arch: tcn, hidden: {tcn_hidden}}}
{extra_models}targets: [{targets}]
runtimes: [{runtimes}]
steps:
  train: {{epochs: 1, max_windows: 32}}
  export: {{}}
  check: {{}}
{extra_steps}  report: {{}}
"""


def write_tiny(folder: Path, gru_hidden: int = 4, tcn_hidden: int = 4, extra_models: str = "", targets: str = "hailo8",
               extra_steps: str = "  bench: {iterations: 5, warmup: 1}\n", runtimes: str = "ort-cpu") -> Path:
    p = folder / "tiny.yaml"
    p.write_text(TINY.format(gru_hidden=gru_hidden, tcn_hidden=tcn_hidden, extra_models=extra_models, targets=targets,
                             extra_steps=extra_steps, runtimes=runtimes))
    return p


def conv_relu_onnx(path: Path) -> Path:
    """Conv -> Relu -> Conv: every node runs on hailo8 (a model that needs no split)."""
    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w1")
    w2 = numpy_helper.from_array(rng.standard_normal((2, 4, 1, 1)).astype(np.float32), "w2")
    g = helper.make_graph(
        [helper.make_node("Conv", ["x", "w1"], ["a"], name="conv1", pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["a"], ["b"], name="relu1"),
         helper.make_node("Conv", ["b", "w2"], ["y"], name="conv2")],
        "convnet", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 8, 8])], [w1, w2])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, str(path))
    return path


def npu_cut_npu_onnx(path: Path) -> Path:
    """Conv -> TopK-free unsupported op (GridSample-like: Mod) -> Conv: two NPU parts around a host node."""
    rng = np.random.default_rng(1)
    w1 = numpy_helper.from_array(rng.standard_normal((3, 3, 1, 1)).astype(np.float32), "w1")
    w2 = numpy_helper.from_array(rng.standard_normal((3, 3, 1, 1)).astype(np.float32), "w2")
    two = numpy_helper.from_array(np.array(2.0, dtype=np.float32), "two")
    g = helper.make_graph(
        [helper.make_node("Conv", ["x", "w1"], ["a"], name="conv_in"),
         helper.make_node("Mod", ["a", "two"], ["b"], name="mod_mid", fmod=1),
         helper.make_node("Conv", ["b", "w2"], ["y"], name="conv_out")],
        "cutnet", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 4, 4])], [w1, w2, two])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, str(path))
    return path


def private_copy(folder: Path, tmp_path: Path) -> Path:
    """A test's own copy of a pipeline folder a module fixture ran once (yaml, results, cache records; times kept):
    a test that edits, re-runs or tampers with it never changes what another test reads, in any order."""
    import shutil

    dst = tmp_path / folder.name
    shutil.copytree(folder, dst, symlinks=True)
    return dst

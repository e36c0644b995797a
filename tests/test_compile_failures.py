"""Compiler failures with a next step: the vendor's one-line cause, shown once, and the command that avoids it.

The RKNN test runs the real toolkit (its own env) on a small model with an If node, which RKNN-Toolkit2 refuses
("will cause the graph to be a dynamic graph"), then runs the command npufit prints and compiles its NPU stage.
The parsers are also fed the failure texts each toolchain writes (Vela's `Error:` line, the Ethos-N support
library's exception text), with a model whose node the text names."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from npufit.envs import env_status

needs_rknn = pytest.mark.skipif(not env_status("rknn")["installed"],
                                reason="RKNN-Toolkit2 env missing: run 'npufit env install rknn' (~1 min, ~1.4 GB)")
ROOT = Path(__file__).resolve().parents[1]


def _if_model(path: Path) -> Path:
    """conv -> relu -> sum > 0 ? sigmoid(relu) : tanh(relu): the branches read 'r' from the outer graph."""
    def branch(name, op):
        out = helper.make_tensor_value_info(f"{name}_out", TensorProto.FLOAT, [1, 4, 8, 8])
        return helper.make_graph([helper.make_node(op, ["r"], [f"{name}_out"], name=f"{name}_op")], name, [], [out])

    w = numpy_helper.from_array(np.full([4, 4, 3, 3], 0.1, np.float32), "w")
    zero = numpy_helper.from_array(np.array(0.0, np.float32), "zero")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("ReduceSum", ["r"], ["s"], name="sum", keepdims=0),
             helper.make_node("Greater", ["s", "zero"], ["cond"], name="gt"),
             helper.make_node("If", ["cond"], ["y"], name="branch", then_branch=branch("then", "Sigmoid"),
                              else_branch=branch("else", "Tanh"))]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], [w, zero])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, str(path))
    return path


def _npufit(*argv, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NPUFIT_NO_PROGRESS": "1"}
    return subprocess.run([sys.executable, "-m", "npufit", *map(str, argv)], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)


@needs_rknn
def test_rknn_if_failure_shows_its_cause_once_and_a_command_that_avoids_it(tmp_path):
    model = _if_model(tmp_path / "gate.onnx")
    r = _npufit("compile", model.name, "--target", "rk3588", "--out-dir", "c", cwd=tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    cause = "The If('branch') will cause the graph to be a dynamic graph"
    assert r.stdout.count(cause) == 1, r.stdout  # the toolkit logs it four times and its traceback twice
    assert "Traceback" not in r.stdout and 'File "rknn/' not in r.stdout, r.stdout
    assert "the rk3588 compile failed" in r.stderr and "Traceback" not in r.stderr
    nxt = next(ln for ln in r.stdout.splitlines() if ln.strip().startswith("next:"))
    split_cmd, compile_cmd = nxt.split("next:", 1)[1].split(" (the part before ")[0], nxt.split(", then ", 1)[1]
    assert "--mode explicit --end-nodes" in split_cmd and "'branch'" in nxt
    # the command works: the split verifies, and its NPU stage compiles on the real toolkit
    s = _npufit(*shlex.split(split_cmd)[1:], cwd=tmp_path)
    assert s.returncode == 0, s.stdout + s.stderr
    c = _npufit(*shlex.split(compile_cmd)[1:], "--out-dir", "c2", cwd=tmp_path)
    assert c.returncode == 0 and "-> rk3588: OK" in c.stdout, c.stdout + c.stderr


def test_rknn_cause_is_its_error_line_not_the_banner_or_traceback():
    from npufit.compilers.failure import rknn_cause

    log = ("I rknn-toolkit2 version: 2.5.0\nD fold_constant ...\n"
           "\x1b[1;31mE\x1b[0m \x1b[1;31mbuild: The If('branch') will cause the graph to be a dynamic graph!\n"
           "\x1b[1;31mE\x1b[0m \x1b[1;31mrknn-toolkit2 version: 2.5.0\x1b[0m\n"
           "\x1b[1;31mE\x1b[0m \x1b[1;31mbuild: Traceback (most recent call last):\n"
           "ValueError: The If('branch') will cause the graph to be a dynamic graph!\n")
    assert rknn_cause(log) == "The If('branch') will cause the graph to be a dynamic graph!"
    crash = "Traceback (most recent call last):\n  File \"x.py\", line 1\nKeyError: 'conv_3'\n"
    assert rknn_cause("I loading\n", crash) == "KeyError: 'conv_3'"


def _two_convs(path: Path) -> Path:
    w = numpy_helper.from_array(np.full([4, 4, 1, 1], 0.1, np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["a"], name="conv_a"),
             helper.make_node("Conv", ["a", "w"], ["y"], name="conv_b")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, str(path))
    return path


@pytest.mark.parametrize("parse, text, cause", [
    ("vela_cause", "Warning: something\nError: Operator 'conv_b' has an unsupported stride\n  more detail\n",
     "Operator 'conv_b' has an unsupported stride"),
    ("first_line_cause", "Error: Internal compiler error: tensor \"a\" does not fit in SRAM",
     "Error: Internal compiler error: tensor \"a\" does not fit in SRAM"),
], ids=["vela", "ethos-n"])
def test_vela_and_ethos_n_causes_name_the_node_and_the_split_before_it(tmp_path, parse, text, cause):
    from npufit.compilers import failure
    from npufit.graph import load

    model = _two_convs(tmp_path / "two.onnx")
    got = getattr(failure, parse)(text)
    assert got == cause
    f = failure.explain(got, model, "ethos-u55-256", load(model))
    # Vela's text names the node; the Ethos-N text names a tensor, 'a', which conv_a makes
    node, cut = ("conv_b", "--mode explicit --end-nodes a") if parse == "vela_cause" else ("conv_a", "--mode prefix")
    assert f.node == node
    assert f.next_step.startswith(f"npufit split {model} --target ethos-u55-256 {cut} -d {tmp_path / 'two_split'}")


def test_no_node_named_no_command_invented(tmp_path):
    from npufit.compilers.failure import explain
    from npufit.graph import load

    model = _two_convs(tmp_path / "two.onnx")
    f = explain("Out of SRAM", model, "ethos-u55-256", load(model))
    assert f.node is None and f.next_step is None


def test_a_node_npufit_can_rewrite_gets_the_fix_rule_not_a_split(tmp_path):
    """A Conv1d the toolchain chokes on: npufit's check knows the rewrite (conv1d_to_conv2d), so that is the way out."""
    from npufit.compilers.failure import explain
    from npufit.graph import load

    w = numpy_helper.from_array(np.full([8, 4, 3], 0.1, np.float32), "w")
    g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], name="temporal", pads=[1, 1])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 64])], [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 11)])
    m.ir_version = 8
    model = tmp_path / "tcn.onnx"
    onnx.save(m, str(model))
    f = explain("Conv 'temporal' timed out in the allocator", model, "hailo8", load(model))
    assert f.node == "temporal"
    fixed = tmp_path / "tcn_fixed.onnx"  # beside the model, so that the pair runs as pasted from any folder
    assert f.next_step == (f"npufit fix {model} --target hailo8 --rules conv1d_to_conv2d -o {fixed}, "
                           f"then npufit compile {fixed} --target hailo8")

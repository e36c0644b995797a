"""Every command npufit prints for a user to run next runs as pasted: the same model path, input shapes and target,
and an output where the verb needs one (each is run here in a fresh process, from the user's working folder)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import npufit
from npufit.cli import main

from .report_models import yolov8n_like

ROOT = Path(__file__).resolve().parent.parent


def _paste(cmd: str, cwd: Path) -> subprocess.CompletedProcess:
    """Run a printed `npufit ...` line as a user would (the `npufit` command is this checkout's `python -m npufit`)."""
    argv = shlex.split(cmd)
    assert argv[0] == "npufit", cmd
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NPUFIT_NO_PROGRESS": "1"}
    return subprocess.run(
        [sys.executable, "-m", "npufit", *argv[1:]], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


def _ok(cmd: str, cwd: Path) -> None:
    r = _paste(cmd, cwd)
    assert r.returncode == 0, f"{cmd}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"


def _topk_model(path: Path) -> Path:
    """Conv -> Relu -> TopK(k=1) -> Conv on a dynamic batch: TopK is off Hailo-8, and a rewrite (ArgMax) exists."""
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array((rng.standard_normal((8, 3, 3, 3)) * 0.1).astype(np.float32), "w"),
        numpy_helper.from_array((rng.standard_normal((4, 1, 1, 1)) * 0.1).astype(np.float32), "w2"),
        numpy_helper.from_array(np.array([1], np.int64), "k"),
    ]
    nodes = [
        helper.make_node("Conv", ["images", "w"], ["c"], name="conv", pads=[1] * 4),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("TopK", ["r", "k"], ["v", "i"], name="topk", axis=1),
        helper.make_node("Conv", ["v", "w2"], ["y"], name="conv2"),
    ]
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, ["N", 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        inits,
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, str(path))
    return path


@pytest.fixture
def work(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # commands name files as the user gave them: relative to the working folder
    return tmp_path


def test_check_and_split_suggest_a_fix_that_runs(work, capsys):
    _topk_model(work / "topk.onnx")
    assert main(["check", "topk.onnx", "-t", "hailo8", "-f", "markdown"]) == 0
    suggested = re.search(r"Suggested: `([^`]+)`", capsys.readouterr().out)[1]
    assert suggested.startswith("npufit fix topk.onnx --target hailo8 --rules topk1_to_argmax -o ")
    _ok(suggested, work)
    res = npufit.split("topk.onnx", "hailo8", "plan")
    hint = next(w for w in res.plan.warnings if "npufit fix" in w)
    cmd = re.search(r"(npufit fix .*?) \(or split --mode auto", hint)[1]
    assert "-o " in cmd
    (work / "topk_fixed.onnx").unlink()  # the check's suggestion wrote it: the hint must write it again
    _ok(cmd, work)


def test_fix_footer_split_runs_as_pasted(work):
    src = yolov8n_like(work / "det.onnx", size=64)
    m = onnx.load(str(src))
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"  # a dynamic batch, as exports have
    onnx.save(m, str(src))
    for kw in ({"output": "det_fixed.onnx"}, {"dry_run": True}):
        res = npufit.fix("det.onnx", "hailo8", **kw)
        cmd = re.search(r"run them on the host: (npufit split .*)$", res.render("table"), re.M)[1]
        assert "--output-dir" in cmd
        _ok(cmd, work)


def test_a_missing_input_shape_is_asked_with_a_command_that_runs(work, capsys):
    w = numpy_helper.from_array(np.full((4, 3, 3, 3), 0.1, np.float32), "w")
    g = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["y"], name="conv", pads=[1] * 4)],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, "h", "w"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, "h", "w"])],
        [w],
    )
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(work / "dyn.onnx"))
    for argv in (["check", "dyn.onnx", "-t", "hailo8"], ["split", "dyn.onnx", "-t", "ethos-n78", "-d", "plan"]):
        assert main(argv) == 2
        cmd = capsys.readouterr().err.split("e.g.: ", 1)[1].strip()
        assert cmd == shlex.join(["npufit", *argv, "--input-shape", "x=1,3,640,640"])
        _ok(cmd, work)
    # a plan is run at the shape it was split for; another shape gets the split that makes it
    assert main(["run", "plan", "--input-shape", "x=1,3,64,64"]) == 2
    cmd = capsys.readouterr().err.split("split again for that shape: ", 1)[1].strip()
    _ok(cmd, work)

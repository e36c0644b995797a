"""Progress on long steps: a bar with ETA for loops, a spinner for one long call (a vendor compiler); only on a
terminal, and never with --quiet. Run through a pseudo-terminal, as a user's shell would."""
from __future__ import annotations

import os
import pty
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def _model(path):
    w = numpy_helper.from_array(np.ones((8, 3, 3, 3), np.float32) * 0.1, "w")
    g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1] * 4),
                           helper.make_node("Relu", ["c"], ["y"], name="relu")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 16, 16])], [w])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return path


def _on_tty(*argv, cwd) -> str:
    """stderr of `npufit ARGV` when it is a terminal."""
    master, slave = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k != "NPUFIT_NO_PROGRESS"}
    p = subprocess.Popen([sys.executable, "-m", "npufit", *map(str, argv)], cwd=cwd, stdout=subprocess.DEVNULL,
                         stderr=slave, stdin=subprocess.DEVNULL, env=env)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed its end
            break
        if not data:
            break
        chunks.append(data)
    p.wait(timeout=300)
    os.close(master)
    return b"".join(chunks).decode("utf-8", "replace")


def test_loops_show_a_bar_with_eta_and_quiet_turns_it_off(tmp_path):
    m = _model(tmp_path / "m.onnx")
    shown = _on_tty("check", m, "--target", "hailo8,rk3588,ethos-u55-256", cwd=tmp_path)
    assert "checking targets" in shown and "eta" in shown
    quiet = _on_tty("--quiet", "check", m, "--target", "hailo8,rk3588,ethos-u55-256", cwd=tmp_path)
    assert "checking targets" not in quiet


def test_a_vendor_compiler_call_shows_a_spinner_with_elapsed_time(tmp_path):
    m = _model(tmp_path / "m.onnx")
    shown = _on_tty("compile", m, "--target", "ethos-u55-256", "--out-dir", tmp_path / "out", cwd=tmp_path)
    assert "running vela" in shown


def test_quantize_says_which_phase_of_the_quantizer_runs(tmp_path):
    """ONNX Runtime's quantizer prepares the calibration graph (minutes on thousands of nodes), pulls the samples, then
    writes the Q/DQ graph: one spinner line names each phase (its first and its last drawing are certain; the
    sample counts between them show as fast as the terminal is redrawn)."""
    m = _model(tmp_path / "m.onnx")
    shown = _on_tty("quantize", m, "-o", tmp_path / "q.onnx", "-c", "random", "--samples", "4", "--holdout", "0",
                    cwd=tmp_path)
    assert "quantizing: ONNX Runtime prepares the calibration graph" in shown, shown[-2000:]
    assert "quantizing: ONNX Runtime writes the Q/DQ graph" in shown, shown[-2000:]

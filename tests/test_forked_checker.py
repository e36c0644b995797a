"""The ONNX checker in a forked child beside shape inference (big models, issue 18): the same warnings, Graph and
one-line refusals as the serial path; a child that dies is replaced by the serial check; no child outlives the read.
The real checker and inference run throughout; the node threshold is lowered so that small models take the fork."""
from __future__ import annotations

import os
import signal
import threading
import time

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from npufit.errors import BadModelError
from npufit.graph import onnx_prepare, validate
from npufit.graph.onnx_loader import graph_from
from npufit.graph.onnx_prepare import infer, pin_inputs, read_onnx, strip_weights
from npufit.util import forked
from tests.hostile.harness import assert_sane, assert_untouched, run_verb, snapshot
from tests.onnx_builders import branchy_model, model, vi


_EARLIER: set[int] = set()  # child processes an earlier test of the session left running (not ours to count)


@pytest.fixture
def own_threads(monkeypatch):
    """Threads an earlier test left in this process (ONNX Runtime verification's idle watchdog) do not count
    against forking: only those this test starts. The same for child processes (`_children`)."""
    real_count, left = threading.active_count, threading.active_count() - 1
    monkeypatch.setattr(threading, "active_count", lambda: real_count() - left)
    _EARLIER.clear()
    _EARLIER.update(_children())


@pytest.fixture
def forks(monkeypatch, own_threads):
    """Every model forks its checker (threshold 1); the list counts the forks made."""
    made = []
    real_fork = os.fork

    def counting_fork():
        pid = real_fork()
        if pid:
            made.append(pid)
        return pid

    monkeypatch.setattr(validate, "FORK_CHECKER_MIN_NODES", 1)
    monkeypatch.setattr(os, "fork", counting_fork)
    monkeypatch.delenv("NPUFIT_SERIAL_CHECKER", raising=False)
    return made


def _children() -> list[int]:
    """Processes whose parent is this one (zombies included), but for those earlier tests left (own_threads)."""
    me, out = os.getpid(), []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid == me and int(d) not in _EARLIER:
                out.append(int(d))
    return out


def _save(m: onnx.ModelProto, tmp_path, name: str = "m.onnx") -> str:
    p = tmp_path / name
    onnx.save_model(m, str(p))
    return str(p)


def _checked(path, input_shapes=None):
    """What check reads, with plain inference (the checker may still run in a child beside it)."""
    return read_onnx(path, pin_inputs(input_shapes), strip_weights, infer)


def _serial(monkeypatch, fn, *args, **kw):
    with monkeypatch.context() as m:
        m.setenv("NPUFIT_SERIAL_CHECKER", "1")
        return fn(*args, **kw)


def _summary(prep) -> tuple:
    """What a check sees of a prepared model: its bytes, warnings, opsets, kept weights, and the Graph built from it."""
    g = graph_from(prep)
    return (prep.model.SerializeToString(deterministic=True), prep.file_warnings, prep.shape_warnings, prep.opsets,
            sorted(prep.kept), [(n.name, n.op_type, list(n.inputs), list(n.outputs)) for n in g.nodes],
            {k: (t.shape, t.dtype, t.is_const) for k, t in g.tensors.items()}, g.warnings)


def _rejection(monkeypatch, path: str, **kw) -> str:
    with pytest.raises(BadModelError) as serial:
        _serial(monkeypatch, _checked, path, **kw)
    with pytest.raises(BadModelError) as beside:
        _checked(path, **kw)
    assert str(beside.value) == str(serial.value)
    assert beside.value.exit_code == 2
    return str(serial.value)


def _recursive_function_model() -> onnx.ModelProto:
    """A model-local function that calls itself: the checker rejects it and shape inference fails on it too."""
    ops = [helper.make_opsetid("", 17), helper.make_opsetid("local", 1)]
    f = helper.make_function("local", "F", ["a"], ["b"], [helper.make_node("F", ["a"], ["b"], domain="local")], ops)
    g = helper.make_graph([helper.make_node("F", ["x"], ["y"], domain="local")], "g", [vi("x", [2])], [vi("y", [2])])
    m = helper.make_model(g, opset_imports=ops, functions=[f])
    m.ir_version = 8
    assert onnx_prepare.infer_shapes(m)[1] is not None
    return m


def test_valid_model_same_prepared_model_and_graph(tmp_path, monkeypatch, forks):
    path = _save(branchy_model(), tmp_path)
    want = _summary(_serial(monkeypatch, _checked, path))
    assert not forks
    assert _summary(_checked(path)) == want
    assert len(forks) == 1 and not _children()
    shapes = {"x": (1, 3, 16, 16)}
    assert _summary(_checked(path, input_shapes=shapes)) == \
        _summary(_serial(monkeypatch, _checked, path, input_shapes=shapes))
    # a newer opset than onnx knows: its warning first, as when the checker ran first
    newer = model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [2])], [vi("y", [2])],
                  opset=onnx.defs.onnx_opset_version() + 1)
    p2 = _save(newer, tmp_path, "newer.onnx")
    assert read_onnx(p2, infer).file_warnings == _serial(monkeypatch, read_onnx, p2, infer).file_warnings
    assert len(read_onnx(p2, infer).file_warnings) == 2


def test_rejected_model_same_line(tmp_path, monkeypatch, forks):
    bad = model([helper.make_node("Relu", ["x", "x"], ["y"], name="relu")], [vi("x", [2])], [vi("y", [2])])
    line = _rejection(monkeypatch, _save(bad, tmp_path))
    assert "the ONNX checker rejects this model" in line and forks
    # inference fails on it as well: the checker's line, not a prepared model with a shape warning
    line = _rejection(monkeypatch, _save(_recursive_function_model(), tmp_path, "rec.onnx"))
    assert "Cycle detected" in line
    # a step after the read fails first (an --input-shape for no such input): the checker's line still wins
    line = _rejection(monkeypatch, _save(bad, tmp_path), input_shapes={"nope": (1,)})
    assert "the ONNX checker rejects this model" in line
    assert not _children()


def test_killed_child_falls_back_to_the_serial_check(tmp_path, monkeypatch, forks):
    parent, real = os.getpid(), validate._check_bytes

    def dies_in_child(*args):
        if os.getpid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(*args)

    monkeypatch.setattr(validate, "_check_bytes", dies_in_child)
    path = _save(branchy_model(), tmp_path)
    want = _summary(_serial(monkeypatch, _checked, path))
    assert _summary(_checked(path)) == want
    bad = model([helper.make_node("Relu", ["x", "x"], ["y"], name="relu")], [vi("x", [2])], [vi("y", [2])])
    assert "rejects this model" in _rejection(monkeypatch, _save(bad, tmp_path, "bad.onnx"))
    assert len(forks) == 2 and not _children()


def test_serial_when_a_thread_runs_or_asked_or_small_or_external(tmp_path, monkeypatch, forks):
    path = _save(branchy_model(), tmp_path)
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        _checked(path)
    finally:
        stop.set()
        t.join()
    _serial(monkeypatch, _checked, path)
    read_onnx(path)  # nothing to overlap
    w = numpy_helper.from_array(np.ones((8, 3, 3, 3), np.float32), "w")
    ext = model([helper.make_node("Conv", ["x", "w"], ["y"])], [vi("x", [1, 3, 8, 8])], [vi("y", [1, 8, 6, 6])], [w])
    onnx.save_model(ext, str(tmp_path / "ext.onnx"), save_as_external_data=True, size_threshold=0, location="ext.bin")
    _checked(tmp_path / "ext.onnx")
    with monkeypatch.context() as m:
        m.setattr(validate, "FORK_CHECKER_MIN_NODES", 8)  # branchy_model has 7 nodes
        _checked(path)
    assert not forks


@pytest.mark.parametrize("error", [RuntimeError, KeyboardInterrupt])
def test_error_beside_the_child(tmp_path, monkeypatch, forks, error):
    """A step beside the running child fails: a rejected model's line wins over an error, Ctrl-C stops the child."""
    def broken_inference(m):
        raise error("inference broke")

    monkeypatch.setattr(onnx_prepare, "infer_shapes", broken_inference)
    bad = model([helper.make_node("Relu", ["x", "x"], ["y"], name="relu")], [vi("x", [2])], [vi("y", [2])])
    with pytest.raises(BadModelError if error is RuntimeError else KeyboardInterrupt) as raised:
        _checked(_save(bad, tmp_path, "bad.onnx"))
    assert ("rejects this model" in str(raised.value)) == (error is RuntimeError)
    with pytest.raises(error):
        _checked(_save(branchy_model(), tmp_path))
    assert len(forks) == 2 and not _children()


# -- the helper itself -----------------------------------------------------------------------------------------
def _dies_in_child(parent: int) -> str:
    if os.getpid() != parent:
        os.kill(os.getpid(), signal.SIGKILL)
    return "here"


def test_forked_result_exception_and_fallbacks(own_threads):
    assert forked.start(pow, 2, 10).result() == 1024
    with pytest.raises(ValueError, match="invalid literal"):
        forked.start(int, "x").result()
    lock = forked.start(threading.Lock).result()  # a lock does not pickle: the child gives no answer, run here
    assert lock.acquire(blocking=False)
    assert forked.start(_dies_in_child, os.getpid()).result() == "here"
    forked.start(time.sleep, 600).cancel()  # killed, not waited for
    assert not _children()


def _relu_chain(n: int, bad: bool) -> onnx.ModelProto:
    """n Relus in a chain; bad: the last one has two inputs, which the checker rejects."""
    nodes = [helper.make_node("Relu", [f"t{i}"], [f"t{i + 1}"]) for i in range(n)]
    if bad:
        nodes[-1].input.append("t0")
    return model(nodes, [vi("t0", [1, 4])], [vi(f"t{n}", [1, 4])])


@pytest.mark.parametrize("bad", [False, True])
def test_cli_on_a_big_model_same_as_serial(tmp_path, bad):
    """The real CLI at the real threshold: the same report, or the same one-line refusal (exit 2), as the serial path."""
    path = _save(_relu_chain(validate.FORK_CHECKER_MIN_NODES, bad), tmp_path)
    before = snapshot(tmp_path)
    argv = ["check", path, "-t", "hailo8", "--format", "json"]
    beside, serial = run_verb(argv, tmp_path), run_verb(argv, tmp_path, env={"NPUFIT_SERIAL_CHECKER": "1"})
    assert_sane(beside, allow_ok=not bad, needle="the ONNX checker rejects this model" if bad else None)
    assert (beside.rc, beside.stdout, beside.stderr) == (serial.rc, serial.stdout, serial.stderr)
    assert_untouched(before, tmp_path)


def test_child_dies_with_its_parent(tmp_path):
    """A parent killed while its child runs (a scan worker at its timeout) leaves no orphan working for nobody."""
    import subprocess
    import sys

    code = ("import sys, time; from npufit.util import forked; job = forked.start(time.sleep, 600); "
            "print(job._pid, flush=True); time.sleep(600)")
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    parent.kill()
    parent.wait()
    for _ in range(200):  # the kernel signals the child at once; give a loaded machine up to 20 s
        try:
            with open(f"/proc/{child}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    break
        except FileNotFoundError:
            break
        time.sleep(0.1)
    else:
        os.kill(child, signal.SIGKILL)
        pytest.fail("the forked child outlived its parent")

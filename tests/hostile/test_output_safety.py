"""Output safety (hostile-input issue, part 1) and terminal escaping (part 4), through the real CLI.

Every case asserts the three things a user relies on: a clear one-line refusal (exit 2), the input and any
unrelated file byte-identical afterwards, and nothing npufit-made left behind."""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from npufit.cli import main
from npufit.errors import NpufitError
from npufit.util.io import OWNED_MARK, atomic_dir, check_output_file, clean_stale, private_tempdir

DEAD_PID = 4_000_000  # above pid_max on Linux: never a live process


def _model(path: Path, names=("conv", "relu")) -> Path:
    import numpy as np

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])
    from onnx import numpy_helper

    w = numpy_helper.from_array(np.linspace(-1, 1, 108, dtype=np.float32).reshape(4, 3, 3, 3), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name=names[0], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["y"], name=names[1])]
    m = helper.make_model(helper.make_graph(nodes, "g", [x], [y], [w]), opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(m, str(path))
    return path


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _cli(capsys, *argv) -> tuple[int, str, str]:
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def _one_line_refusal(rc: int, err: str, needle: str) -> None:
    assert rc == 2, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("npufit: error:") and needle in lines[0], err
    assert "Traceback" not in err


def test_split_into_the_models_own_folder_deletes_nothing(tmp_path, capsys):
    x = tmp_path / "X"
    x.mkdir()
    model = _model(x / "mymodel.onnx")
    (x / "notes.txt").write_text("my notes")
    (x / "plan.json").write_text(json.dumps({"stages": [{"file": "stage1_npu.onnx"}]}))  # an older plan lives here
    before = _snapshot(x)
    rc, _, err = _cli(capsys, "split", model, "-t", "hailo8", "-d", x)
    _one_line_refusal(rc, err, "contains the input mymodel.onnx")
    assert _snapshot(x) == before
    assert sorted(os.listdir(tmp_path)) == ["X"]  # no temp folder beside it either


def test_split_of_a_stage_into_its_own_plan_folder_is_refused(tmp_path, capsys):
    model = _model(tmp_path / "m.onnx")
    plan = tmp_path / "plan"
    rc, _, err = _cli(capsys, "split", model, "-t", "hailo8", "-d", plan)
    assert rc == 0, err
    stage = next(plan.glob("*.onnx"))
    before = _snapshot(plan)
    rc, _, err = _cli(capsys, "split", stage, "-t", "hailo8", "-d", plan)
    _one_line_refusal(rc, err, f"contains the input {stage.name}")
    assert _snapshot(plan) == before


def test_split_replaces_only_its_own_plan_and_keeps_user_files(tmp_path, capsys):
    model = _model(tmp_path / "m.onnx")
    plan = tmp_path / "plan"
    for _ in range(2):  # a plan folder npufit wrote is replaced on the next run
        rc, _, err = _cli(capsys, "split", model, "-t", "hailo8", "-d", plan)
        assert rc == 0, err
    marker = json.loads((plan / OWNED_MARK).read_text())
    assert marker["owner"] == "npufit" and "plan.json" in marker["entries"]
    assert stat.S_IMODE(plan.stat().st_mode) == 0o777 & ~_umask()  # not 0700 like a private temp folder
    (plan / "notes.txt").write_text("added by the user")
    before = _snapshot(plan)
    rc, _, err = _cli(capsys, "split", model, "-t", "hailo8", "-d", plan)
    _one_line_refusal(rc, err, "holds files npufit did not write (notes.txt)")
    assert _snapshot(plan) == before
    assert (tmp_path / "m.onnx").exists()


def test_legacy_plan_folder_without_marker_is_adopted_only_when_it_holds_just_the_plan(tmp_path, capsys):
    model = _model(tmp_path / "m.onnx")
    plan = tmp_path / "plan"
    assert _cli(capsys, "split", model, "-t", "hailo8", "-d", plan)[0] == 0
    (plan / OWNED_MARK).unlink()  # as written by an older npufit
    rc, _, err = _cli(capsys, "split", model, "-t", "hailo8", "-d", plan)
    assert rc == 0, err


def test_output_file_is_never_a_device_fifo_folder_link_or_the_input(tmp_path, capsys):
    model = _model(tmp_path / "m.onnx")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    folder = tmp_path / "folder"
    folder.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    link = tmp_path / "link.json"
    link.symlink_to(victim)
    for out, needle in [(fifo, "is a named pipe"), (folder, "is a folder"), (link, "is a symbolic link"),
                        (model, "is an input of this run")]:
        before = _snapshot(tmp_path)
        rc, _, err = _cli(capsys, "check", model, "-t", "hailo8", "-f", "json", "-o", out)
        _one_line_refusal(rc, err, needle)
        assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and os.path.islink(link) and victim.read_text() == "keep me"
        assert _snapshot(tmp_path) == before
    for dev in ("/dev/null", "/dev/full"):  # checked without writing: a regression here must not break the machine
        with pytest.raises(NpufitError, match="is a device"):
            check_output_file(dev)


def test_an_input_read_earlier_in_the_process_and_gone_since_frees_its_inode(tmp_path, capsys):
    """Was: in one long process (the test suite, a pipeline), a model read and later replaced or deleted kept its
    inode number on the refusal list; the file system gave that number to a new file (pipeline.json), whose next
    write was refused as 'an input of this run'. A hard link left behind when the read path is removed plays the new
    file here: the same inode number under another path, which the file system may reuse at any time."""
    from npufit.util.io import note_input, one_run

    model = _model(tmp_path / "m.onnx")
    other = tmp_path / "pipeline.json"
    with one_run():  # a long run (a pipeline) that read m.onnx earlier
        note_input(model)
        os.link(model, other)
        with pytest.raises(NpufitError, match="is an input of this run"):
            check_output_file(other)  # still readable as m.onnx: it stays an input under any name
        model.unlink()  # the input is gone: its inode number belongs to `other` only
        assert check_output_file(other) == other


def test_fix_output_onto_external_data_of_the_input_is_refused(tmp_path, capsys):
    m = onnx.load(str(_model(tmp_path / "src.onnx")))
    onnx.save_model(m, str(tmp_path / "big.onnx"), save_as_external_data=True, location="weights.bin", size_threshold=0)
    assert (tmp_path / "weights.bin").is_file()
    before = _snapshot(tmp_path)
    rc, _, err = _cli(capsys, "fix", tmp_path / "big.onnx", "-t", "hailo8", "-o", tmp_path / "weights.bin")
    _one_line_refusal(rc, err, "is an input of this run")
    assert _snapshot(tmp_path) == before


def test_temp_files_of_killed_runs_are_removed_on_the_next_run(tmp_path, capsys):
    model = _model(tmp_path / "m.onnx")
    dead_file = tmp_path / f".report.json.npufit-tmp-{DEAD_PID}-abc.json"
    dead_dir = tmp_path / f".plan.npufit-tmp-{DEAD_PID}-xyz"
    live_file = tmp_path / f".report.json.npufit-tmp-{os.getpid()}-abc.json"  # a running writer's: kept
    for p in (dead_file, live_file):
        p.write_text("partial")
    dead_dir.mkdir()
    (dead_dir / "stage1.onnx").write_bytes(b"\0" * 100)
    assert _cli(capsys, "check", model, "-t", "hailo8", "-f", "json", "-o", tmp_path / "report.json")[0] == 0
    assert _cli(capsys, "split", model, "-t", "hailo8", "-d", tmp_path / "plan")[0] == 0
    assert not dead_file.exists() and not dead_dir.exists() and live_file.exists()
    json.loads((tmp_path / "report.json").read_text())


def test_a_failed_folder_output_leaves_nothing(tmp_path):
    dst = tmp_path / "out"
    with pytest.raises(RuntimeError):
        with atomic_dir(dst, "test") as tmp:
            (tmp / "half.onnx").write_bytes(b"x")
            raise RuntimeError("killed half way")
    assert os.listdir(tmp_path) == []


def test_sigterm_removes_private_temp_folders(tmp_path):
    """A verb stopped by SIGTERM (timeout, CI cancel) unwinds: its scratch folder in TMPDIR is gone."""
    code = ("import os, signal, sys\n"
            "from npufit.util.io import private_tempdir\n"
            "from npufit.cli import _exit_on_sigterm\n"
            "_exit_on_sigterm()\n"
            "try:\n"
            "    with private_tempdir('probe') as d:\n"
            "        (d / 'case.onnx').write_bytes(b'x')\n"
            "        os.kill(os.getpid(), signal.SIGTERM)\n"
            "except KeyboardInterrupt:\n"
            "    sys.exit(130)\n")
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 130, p.stderr
    assert os.listdir(tmp_path) == []


def test_private_tempdir_removes_what_a_killed_run_left(tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    stale = tmp_path / f".npufit-quantize.npufit-tmp-{DEAD_PID}-q1"
    stale.mkdir()
    (stale / "calib.onnx").write_bytes(b"\0" * 64)
    foreign = tmp_path / "npufit-quantize-notours"
    foreign.mkdir()
    with private_tempdir("quantize") as d:
        assert d.is_dir() and not stale.exists()
    assert os.listdir(tmp_path) == ["npufit-quantize-notours"]
    assert clean_stale(tmp_path) == []


def test_pipeline_refuses_a_foreign_results_folder(tmp_path, capsys):
    busy = tmp_path / "results"
    busy.mkdir()
    (busy / "thesis.tex").write_text("years of work")
    yaml = Path(__file__).parents[2] / "examples" / "timeseries.yaml"
    rc, _, err = _cli(capsys, "pipeline", "run", yaml, "--output-dir", busy)
    _one_line_refusal(rc, err, "holds files npufit did not write (thesis.tex)")
    assert os.listdir(busy) == ["thesis.tex"]


def test_names_never_reach_the_terminal_raw(tmp_path, capsys):
    model = _model(tmp_path / "m.onnx", names=("\x1b[2J\x1b[31mPWNED", "relu\x1b]0;title\x07\u202e"))
    for fmt in ("table", "json", "markdown"):
        rc, out, err = _cli(capsys, "check", model, "-t", "hailo8", "-f", fmt)
        assert rc == 0, err
        assert "\x1b" not in out + err and "\x07" not in out and "\u202e" not in out
    assert "\\u001b[2J" in _cli(capsys, "check", model, "-t", "hailo8")[1]
    data = json.loads(_cli(capsys, "check", model, "-t", "hailo8", "-f", "json")[1])
    assert any(n["name"] == "\x1b[2J\x1b[31mPWNED" for n in data["nodes"])  # JSON keeps the name, escaped
    rc, _, err = _cli(capsys, "check", tmp_path / "no\x1b[2Jsuch.onnx", "-t", "hailo8")
    _one_line_refusal(rc, err, "no\\u001b[2Jsuch.onnx")


def _umask() -> int:
    u = os.umask(0)
    os.umask(u)
    return u

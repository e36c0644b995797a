"""npufit.placement: the installed compiler is the judge where it runs here (real Vela 5.2.0 for Ethos-U), the
prediction elsewhere, said in words; one placement per run that every count of the report is computed from."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from npufit.convert.tflite_writer import TFLiteBuilder
from npufit.errors import NpufitError

from .tflite_models import conv_stem, streaming_wakeword

pytest.importorskip("ethosu.vela", reason="ethos-u-vela is not installed (pip install ethos-u-vela==5.2.0)")


def _wakeword(path):
    b = TFLiteBuilder()
    x, y = streaming_wakeword(b)
    b.io([x], [y])
    path.write_bytes(b.build())
    return path


def _transpose(path, shape, perm):
    """int8 input -> TRANSPOSE(perm): what a standard converter leaves at the end of a YOLO head."""
    b = TFLiteBuilder()
    x = b.tensor("input", shape, "int8", scale=0.02, zero_point=0)
    p = b.tensor("perm", (len(perm),), "int32", data=np.array(perm))
    y = b.tensor("out", tuple(shape[i] for i in perm), "int8", scale=0.02, zero_point=0)
    b.op("TRANSPOSE", [x, p], [y], "TransposeOptions")
    b.io([x], [y])
    path.write_bytes(b.build())
    return path


def _nchw_transpose(path):
    """conv -> TRANSPOSE [0,3,1,2]: Vela's library checks put it on the CPU, its compile on the NPU."""
    b = TFLiteBuilder()
    x, y = conv_stem(b)
    perm = b.tensor("perm", (4,), "int32", data=np.array([0, 3, 1, 2]))
    out = b.tensor("nchw", (1, 8, 16, 16), "int8", scale=0.05, zero_point=-128)
    b.op("TRANSPOSE", [y, perm], [out], "TransposeOptions")
    b.io([x], [out])
    path.write_bytes(b.build())
    return path


@pytest.fixture(autouse=True)
def _fresh_memo():
    from npufit.placement import clear_memo

    clear_memo()
    yield
    clear_memo()


def test_streaming_wakeword_two_subgraphs_measured_right(tmp_path):
    """Vela's per-layer CSV describes only the CALL_ONCE initialiser here; its output file holds one `ethos-u`
    operator plus the CPU operators, and that is what the placement reads: 9 NPU / 7 CPU, as predicted."""
    from npufit import check
    from npufit.compilers import compile_model

    m = _wakeword(tmp_path / "ww.tflite")
    rep = check(m, "ethos-u55-256")
    pl = rep.extra["placement"]
    assert pl["source"] == "measured" and pl["compiler"] == "vela" and pl["compiler_version"] == "5.2.0"
    assert pl["headline"].startswith("placement measured by Vela 5.2.0 (compile, ")
    assert rep.counts == {"npu": 9, "cpu": 7, "unsupported": 0, "folded": 0}
    cpu_ops = sorted(n.op_type for n in rep.nodes if n.verdict.value == "cpu")
    assert cpu_ops == ["ASSIGN_VARIABLE"] * 2 + ["CALL_ONCE"] + ["READ_VARIABLE"] * 2 + ["VAR_HANDLE"] * 2
    assert all(n.source == "measured:vela 5.2.0" for n in rep.nodes) and pl["disagreements"] == []
    # the compile verb reads the same file the same way, and its counts agree with each other
    res = compile_model(m, "ethos-u55-256", out_dir=tmp_path / "out")
    assert res.summary() == {"nodes": 16, "npu": 9, "cpu": 7, "folded": 0}
    assert res.metrics["cpu_operators"] == 7 and res.metrics["npu_operators"] == 9
    assert "9 npu, 7 cpu, 0 folded of 16 nodes" in res.render()


def test_transpose_out_of_regor_range_is_cpu_measured_and_predicted(tmp_path):
    """Vela 5.2.0 (Regor): 'Transpose with permutation 3, 1, 2, 0 has shape out of range: 400, 2, 400, 1'."""
    from npufit import check
    from npufit.check.engine import predict

    bad = _transpose(tmp_path / "bad.tflite", (400, 2, 400, 1), (3, 1, 2, 0))
    rep = check(bad, "ethos-u55-256")
    (node,) = rep.nodes
    assert rep.extra["placement"]["source"] == "measured" and node.verdict.value == "cpu"
    assert "has shape out of range: 400, 2, 400, 1" in node.compiler_reason
    assert node.predicted.value == "cpu" and [r.rule for r in node.reasons] == ["ethos-u55-256.transpose.reshuffle"]
    assert rep.extra["placement"]["disagreements"] == []
    # the edges of the rule, measured: 256*256 fits 2^16; a leading 1 with the last three axes permuted has no
    # product limit; the U85 has neither limit
    ok = _transpose(tmp_path / "ok.tflite", (256, 2, 256, 1), (3, 1, 2, 0))
    nhwc = _transpose(tmp_path / "nhwc.tflite", (1, 400, 400, 2), (0, 3, 1, 2))
    for m in (ok, nhwc):
        assert check(m, "ethos-u55-256").nodes[0].verdict.value == "npu"
        assert predict(m, "ethos-u55-256").nodes[0].verdict.value == "npu"
    assert predict(bad, "ethos-u85-256").nodes[0].verdict.value == "npu"


def test_predicted_placement_says_so_and_why(tmp_path):
    from npufit import check

    m = _transpose(tmp_path / "t.tflite", (400, 2, 400, 1), (3, 1, 2, 0))
    never = check(m, "ethos-u55-256", measure="never")
    assert never.extra["placement"]["source"] == "predicted" and "--predict" in never.extra["placement"]["headline"]
    assert never.nodes[0].source == "" and never.to_dict()["nodes"][0]["source"] == (
        "predicted:ethos-u55-256.transpose.reshuffle"
    )
    onnx = tmp_path / "m.onnx"
    _small_onnx(onnx)
    hailo = check(onnx, "hailo8")
    assert hailo.extra["placement"]["headline"].startswith(
        "placement predicted by npufit's rules: no compiler for hailo8 runs here"
    )
    with pytest.raises(NpufitError, match="no compiler for hailo8 runs here"):
        check(onnx, "hailo8", measure="required")


def test_measured_and_predicted_differ_listed_and_recorded(tmp_path):
    """Vela's library checks put an NCHW transpose on the CPU that npufit predicts on the NPU: the difference is
    listed with both explanations and appended to a calibration record."""
    from npufit.placement import place

    m = _nchw_transpose(tmp_path / "t.tflite")
    rec = tmp_path / "calib" / "record.json"
    rec.parent.mkdir()
    rep = place(m, "ethos-u55-256", measure="required", measure_judge="vela-checks", record=rec)
    pl = rep.extra["placement"]
    assert pl["judge"] == "vela-checks" and "operator checks" in pl["headline"]
    (d,) = pl["disagreements"]
    assert d["op"] == "TRANSPOSE" and d["predicted"] == "npu" and d["measured"] == "cpu"
    assert d["npufit_explanation"] and "permutation" in d["compiler_reason"]
    t = next(n for n in rep.nodes if n.op_type == "TRANSPOSE")
    assert t.verdict.value == "cpu" and t.reasons[-1].text == d["compiler_reason"]  # the why-table shows the compiler
    assert rep.summary()["host_partitions"] == 1 and rep.summary()["npu_partitions"] == 1  # structure follows
    r = json.loads(rec.read_text())
    assert r["schema"] == "npufit.calibration.measured/1" and r["target"] == "ethos-u55-256"
    entry = r["models"]["t.tflite"]
    assert entry["placement"] == "nc" and entry["cpu"] == {t.name: "TRANSPOSE"} and entry["disagreements"] == [d]
    text = rep.render("table")
    assert "prediction and measurement differ on 1 node(s)" in text and "compiler: Vela" in text


def test_one_placement_per_run(tmp_path, monkeypatch):
    """The same model, target, shapes and judge are measured once per process; another judge is another answer."""
    from npufit.compilers import measure as measure_mod
    from npufit.placement import place

    calls = []
    real = measure_mod.measure
    monkeypatch.setattr(measure_mod, "measure", lambda *a, **k: calls.append(a[2].name) or real(*a, **k))
    m = _wakeword(tmp_path / "ww.tflite")
    a = place(m, "ethos-u55-256")
    b = place(str(m), "ethos-u55-256")
    assert len(calls) == 1 and a.summary() == b.summary() and a is not b
    b.model["file"] = "renamed"  # a caller's changes stay its own
    assert place(m, "ethos-u55-256").model["file"] == "ww.tflite" and len(calls) == 1
    place(m, "ethos-u65-256")
    assert calls == ["ethos-u55-256", "ethos-u65-256"]
    m.write_bytes(m.read_bytes() + b"\0")  # another file content is another model
    place(m, "ethos-u55-256")
    assert len(calls) == 3


def test_a_compiler_past_its_time_limit_leaves_the_prediction_marked(tmp_path):
    from npufit.placement import place

    m = _wakeword(tmp_path / "ww.tflite")
    rep = place(m, "ethos-u55-256", timeout_s=0.01)
    pl = rep.extra["placement"]
    assert pl["source"] == "predicted" and "ran past the 0.01 s limit (--measure-timeout)" in pl["headline"]
    assert rep.counts["cpu"] == 7 and all(n.source == "" for n in rep.nodes)


def test_cli_check_measured_by_default_predict_and_measure_flags(tmp_path):
    m = _transpose(tmp_path / "t.tflite", (400, 2, 400, 1), (3, 1, 2, 0))
    run = lambda *a: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "npufit", "check", str(m), "--target", "ethos-u55-256", *a],
        capture_output=True,
        text=True,
        timeout=300,
    )
    r = run()
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[1].startswith("placement measured by Vela 5.2.0 (compile, ")
    p = run("--predict", "--format", "json")
    assert json.loads(p.stdout)["placement"]["source"] == "predicted"
    both = run("--predict", "--measure")
    assert both.returncode == 2 and "not allowed with" in both.stderr
    o = tmp_path / "m.onnx"
    _small_onnx(o)
    req = subprocess.run(
        [sys.executable, "-m", "npufit", "check", str(o), "--target", "hailo8", "--measure"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert req.returncode == 2 and "no compiler for hailo8 runs here" in req.stderr and "Traceback" not in req.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx", "t.tflite"]  # compiles ran in temporary folders


def _small_onnx(path):
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.random.default_rng(0).normal(size=(8, 3, 3, 3)).astype(np.float32), "w")
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["y"], name="relu"),
    ]
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 16, 16])],
        [w],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    path.write_bytes(m.SerializeToString())
    return path

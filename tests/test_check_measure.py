"""`check` is measured by the real compiler where it runs here, with npufit's prediction beside it node by node and
every difference flagged; `--measure JUDGE` asks for a judge and requires it. Real Vela 5.2.0 and the real
RKNN-Toolkit2 env; skipped with the reason when the tool is missing."""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from npufit import check  # the library API: the placement (measured where a compiler runs)
from npufit.convert.tflite_writer import TFLiteBuilder

from .tflite_models import conv_stem

pytest.importorskip("ethosu.vela", reason="ethos-u-vela is not installed (pip install ethos-u-vela==5.2.0)")


def _tflite(path, bad_pool=True, transpose=False):
    """int8 TFLite: conv -> average pool 9x9 SAME (Vela: kernel out of range) [-> NHWC->NCHW transpose]."""
    b = TFLiteBuilder()
    x, y = conv_stem(b)
    k = 9 if bad_pool else 3
    q = b.tensor("avg", (1, 16, 16, 8), "int8", scale=0.05, zero_point=-128)
    b.op("AVERAGE_POOL_2D", [y], [q], "Pool2DOptions", padding="SAME", stride_w=1, stride_h=1, filter_width=k, filter_height=k)
    out = q
    if transpose:
        perm = b.tensor("perm", (4,), "int32", data=np.array([0, 3, 1, 2]))
        out = b.tensor("nchw", (1, 8, 16, 16), "int8", scale=0.05, zero_point=-128)
        b.op("TRANSPOSE", [q, perm], [out], "TransposeOptions")
    b.io([x], [out])
    path.write_bytes(b.build())
    return path


def _node(report, op):
    return next(n for n in report.nodes if n.op_type == op)


def test_vela_checks_judge_a_tflite_model_with_vela_reason_text(tmp_path):
    m = _tflite(tmp_path / "pool.tflite")
    before = hashlib.sha256(m.read_bytes()).hexdigest()
    r = check(m, "ethos-u55-256", measure="vela-checks")
    pl = r.extra["placement"]
    assert pl["judge"] == "vela-checks" and pl["compiler"] == "vela" and pl["compiler_version"] == "5.2.0"
    pool = _node(r, "AVERAGE_POOL_2D")
    assert pool.verdict.value == "cpu" and pool.compiler_reason.startswith("Vela: ") and "9" in pool.compiler_reason
    assert _node(r, "CONV_2D").verdict.value == "npu"
    # npufit's own verdict and explanation stand beside the measurement; a difference is listed
    differs = pool.predicted.value not in ("cpu", "unsupported")
    assert differs == any(d["node"] == pool.name for d in pl["disagreements"])
    assert differs or pool.reasons
    assert hashlib.sha256(m.read_bytes()).hexdigest() == before and sorted(p.name for p in tmp_path.iterdir()) == ["pool.tflite"]


def test_vela_checks_and_the_compile_disagree_on_an_nchw_transpose(tmp_path):
    """Measured with Vela 5.2.0: its library checks (the legacy core's) put TRANSPOSE [0,3,1,2] of [1,16,16,8] on the
    CPU; the compile (the Regor core Vela 5.2.0 uses) runs it on the NPU. Each judge is labelled; the default is the
    compile."""
    m = _tflite(tmp_path / "t.tflite", bad_pool=False, transpose=True)
    lib = _node(check(m, "ethos-u55-256", measure="vela-checks"), "TRANSPOSE")
    comp = check(m, "ethos-u55-256", measure="compile")
    assert comp.extra["placement"]["judge"] == "compile"
    assert lib.verdict.value == "cpu" and "permutation" in lib.compiler_reason
    assert {n.verdict.value for n in comp.nodes} == {"npu"}
    auto = check(m, "ethos-u55-256")
    assert auto.extra["placement"]["judge"] == "compile" and _node(auto, "TRANSPOSE").verdict.value == "npu"


def _onnx_with_exp(path):
    w = numpy_helper.from_array(np.random.default_rng(0).normal(size=(8, 3, 3, 3)).astype(np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("Exp", ["r"], ["y"], name="exp")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 16, 16])], [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    path.write_bytes(m.SerializeToString())
    return path


def test_cli_measure_compile_on_onnx_for_ethos_u(tmp_path):
    m = _onnx_with_exp(tmp_path / "exp.onnx")
    r = subprocess.run([sys.executable, "-m", "npufit", "check", str(m), "--target", "ethos-u55-256", "--measure", "--format",
                        "json"], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["placement"]["judge"] == "compile" and d["placement"]["source"] == "measured"
    measured = {n["name"] for n in d["nodes"] if n["source"].startswith("measured:vela ")}
    assert measured >= {"conv", "relu", "exp"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exp.onnx"]  # the compile ran in a temporary folder


def test_cli_table_flags_differences_and_absent_compiler_is_one_line(tmp_path):
    m = _tflite(tmp_path / "pool.tflite")
    r = subprocess.run([sys.executable, "-m", "npufit", "check", str(m), "--target", "ethos-u55-256", "--measure"],
                       capture_output=True, text=True, timeout=300, env={"COLUMNS": "250", **__import__("os").environ})
    assert r.returncode == 0, r.stderr
    assert "placement measured by Vela 5.2.0 (compile" in r.stdout
    o = _onnx_with_exp(tmp_path / "exp.onnx")
    h = subprocess.run([sys.executable, "-m", "npufit", "check", str(o), "--target", "hailo8"],
                       capture_output=True, text=True, timeout=300)
    assert h.returncode == 0
    lines = [ln for ln in h.stdout.splitlines() if "placement predicted" in ln]
    assert len(lines) == 1 and "no compiler for hailo8 runs here" in lines[0]
    bad = subprocess.run([sys.executable, "-m", "npufit", "check", str(o), "--target", "hailo8,rk3588", "--measure"],
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "one target" in bad.stderr and "Traceback" not in bad.stderr


def test_unknown_judge_is_one_clear_error(tmp_path):
    from npufit.errors import NpufitError

    m = _onnx_with_exp(tmp_path / "exp.onnx")
    with pytest.raises(NpufitError, match="unknown --measure"):
        check(m, "ethos-u55-256", measure="sometimes")
    with pytest.raises(NpufitError, match="does not judge this onnx model on ethos-u55-256"):
        check(m, "ethos-u55-256", measure="vela-checks")


def test_rknn_measure_flags_where_prediction_and_toolkit_differ(tmp_path):
    from npufit.envs import env_status

    if not env_status("rknn")["installed"]:
        pytest.skip("RKNN-Toolkit2 env is not installed (npufit env install rknn)")
    m = _onnx_with_exp(tmp_path / "exp.onnx")
    r = check(m, "rk3588")
    pl = r.extra["placement"]
    assert pl["judge"] == "compile" and pl["compiler"] == "rknn-toolkit2" and pl["compiler_version"]
    assert pl["headline"].startswith("placement measured by RKNN-Toolkit2 2.5.0 (compile, ")
    exp = _node(r, "Exp")
    assert exp.verdict.value == "cpu" and "Exp" in exp.compiler_reason  # RKNN-Toolkit2 2.5.0 runs Exp on its CPU
    assert _node(r, "Conv").verdict.value == "npu"
    listed = {d["node"] for d in pl["disagreements"]}
    for n in r.nodes:
        off = n.predicted.value in ("cpu", "unsupported")
        assert (n.name in listed) == (off != (n.verdict.value == "cpu"))
    md = r.render("markdown")
    assert "placement measured by RKNN-Toolkit2" in md


def test_pipeline_check_step_measures_when_asked(tmp_path):
    from npufit.pipeline import load_config

    _onnx_with_exp(tmp_path / "exp.onnx")
    y = tmp_path / "p.yaml"
    y.write_text("version: 1\nname: m\nmodels:\n  - name: e\n    onnx: exp.onnx\ntargets: [ethos-u55-256]\n"
                 "steps:\n  export: {}\n  check: {measure: compile}\n")
    assert load_config(y).settings("check")["measure"] == "compile"
    bad = y.read_text().replace("measure: compile", "measure: sometimes")
    (tmp_path / "bad.yaml").write_text(bad)
    with pytest.raises(Exception, match="measure"):
        load_config(tmp_path / "bad.yaml")
    r = subprocess.run([sys.executable, "-m", "npufit", "pipeline", "run", str(y), "--output-dir", str(tmp_path / "out")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    rep = json.loads(next((tmp_path / "out").rglob("check.json")).read_text())
    assert rep["placement"]["judge"] == "compile"
    assert {n["name"] for n in rep["nodes"] if n["source"].startswith("measured:")} >= {"conv", "exp"}

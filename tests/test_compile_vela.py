"""Vela (ethos-u-vela, real) on int8 TFLite models built in the test with npufit.convert.tflite_writer."""
import hashlib

import numpy as np
import pytest

from npufit.compilers import compile_model, status
from npufit.convert.tflite_writer import TFLiteBuilder
from .tflite_models import conv_stem, stateful_conv

pytest.importorskip("ethosu.vela", reason="ethos-u-vela is not installed (pip install ethos-u-vela==5.2.0)")


def _cnn(path, bad_pool=False, s2d=False):
    b = TFLiteBuilder()
    x, y = conv_stem(b)
    last, hw, c = y, 16, 8
    if s2d:
        z = b.tensor("s2d", (1, 8, 8, 32), "int8", scale=0.05, zero_point=-128)
        b.op("SPACE_TO_DEPTH", [last], [z], "SpaceToDepthOptions", block_size=2)
        last, hw, c = z, 8, 32
    k = 9 if bad_pool else 3  # Vela: SAME average pooling takes kernels up to 8x8
    q = b.tensor("avg", (1, hw, hw, c), "int8", scale=0.05, zero_point=-128)
    b.op("AVERAGE_POOL_2D", [last], [q], "Pool2DOptions", padding="SAME", stride_w=1, stride_h=1, filter_width=k, filter_height=k)
    p = b.tensor("pool", (1, 1, 1, c), "int8", scale=0.05, zero_point=-128)
    b.op("AVERAGE_POOL_2D", [q], [p], "Pool2DOptions", padding="VALID", stride_w=1, stride_h=1, filter_width=hw, filter_height=hw)
    b.io([x], [p])
    path.write_bytes(b.build())
    return path


def test_vela_small_cnn_all_on_npu(tmp_path):
    m = _cnn(tmp_path / "cnn.tflite")
    before = hashlib.sha256(m.read_bytes()).hexdigest()
    r = compile_model(m, "ethos-u55-256", out_dir=tmp_path / "out")
    assert r.ok and r.compiler == "vela" and r.compiler_version
    assert [p.device for p in r.placement] == ["npu", "npu", "npu"]
    assert r.metrics["cycles_total"] > 0 and r.metrics["inference_time_ms"] > 0 and r.metrics["sram_used_kib"] > 0
    assert (tmp_path / "out" / "vela" / "cnn_vela.tflite").exists() and r.artifact.endswith("cnn_vela.tflite")
    assert r.wall_s > 0 and r.peak_rss_mb and r.peak_rss_mb > 10 and "--verbose-performance" in r.command
    assert "Network summary" in r.log_text
    assert hashlib.sha256(m.read_bytes()).hexdigest() == before  # the user's file is never touched
    d = r.to_dict()
    assert d["schema"] == "npufit.compile/1" and d["summary"]["npu"] == 3


def test_vela_rejected_ops_are_cpu_with_vela_reason(tmp_path):
    m = _cnn(tmp_path / "bad.tflite", bad_pool=True, s2d=True)
    r = compile_model(m, "ethos-u85-512", out_dir=tmp_path / "out", compare_prediction=True)
    # Vela names layers by their output tensor; placement is reported under npufit's own TFLite operator names
    by = {p.node: p for p in r.placement}
    assert by["AVERAGE_POOL_2D_2"].device == "cpu" and "kernel width: 9 out of range" in by["AVERAGE_POOL_2D_2"].reason
    assert by["SPACE_TO_DEPTH_1"].device == "cpu" and "Unsupported opType" in by["SPACE_TO_DEPTH_1"].reason
    assert by["CONV_2D_0"].device == "npu" and by["AVERAGE_POOL_2D_3"].device == "npu"
    # so --compare-prediction compares every operator (it compared nothing before: names never met)
    cmp = r.comparison.to_dict()
    assert len(cmp["nodes"]) == 4 and cmp["scores"]["tp"] == 2 and cmp["scores"]["cpu_fallback_recall"] == 1.0
    assert r.metrics["cpu_operators"] == 2
    text = r.render("table")
    assert "kernel width: 9 out of range" in text


def test_stateful_model_placement_matches_vela_operator_by_operator(tmp_path):
    """A streaming model's ASSIGN_VARIABLE has no output tensor: Vela names it after its operator index, and it stays
    on the CPU with the other variable ops while the conv, add and pool run on the NPU."""
    b = TFLiteBuilder()
    x, out = stateful_conv(b)
    b.io([x], [out])
    m = tmp_path / "stateful.tflite"
    m.write_bytes(b.build())
    r = compile_model(m, "ethos-u55-256", out_dir=tmp_path / "out", compare_prediction=True)
    dev = {p.op: p.device for p in r.placement}
    assert dev == {"CONV_2D": "npu", "VAR_HANDLE": "cpu", "READ_VARIABLE": "cpu", "ADD": "npu",
                   "ASSIGN_VARIABLE": "cpu", "AVERAGE_POOL_2D": "npu"}
    assert r.metrics["cpu_operators"] == sum(d == "cpu" for d in dev.values())
    scores = r.comparison.to_dict()["scores"]
    assert (scores["tp"], scores["fp"], scores["fn"]) == (3, 0, 0)


def test_unknown_accelerator_config_is_one_clear_error(tmp_path):
    from npufit.errors import NpufitError

    m = _cnn(tmp_path / "cnn.tflite")
    with pytest.raises(NpufitError, match="no compiler drives target"):
        compile_model(m, "ethos-u55-999")


def test_status_lists_every_compiler_with_install_command():
    rows = {r["name"]: r for r in status()}
    assert set(rows) == {"vela", "rknn-toolkit2", "hailo-dfc", "ethos-n-support-library"}
    assert rows["vela"]["available"] and rows["vela"]["version"] == "5.2.0"
    assert all(r["install"] for r in rows.values())

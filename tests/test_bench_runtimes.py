"""npufit bench on real runtimes (ONNX Runtime CPU, OpenVINO CPU, a split plan); GPU ones skip with a reason."""
from __future__ import annotations

import hashlib
import importlib.util
import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

import npufit
from npufit.bench import SCHEMA, bench
from npufit.errors import NpufitError
from npufit.runtimes import RUNTIMES, parse_runtimes, status

PCTS = ("min", "p50", "p90", "p95", "p99", "max")


def conv_model(path, batch="N", tail_op="Sigmoid"):
    """Conv-Relu-Conv-Relu-<tail>-GlobalMean on 3x32x32; batch 'N' is a dynamic first dimension."""
    rng = np.random.default_rng(0)
    w1 = nh.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "W1")
    w2 = nh.from_array(rng.standard_normal((8, 8, 3, 3)).astype(np.float32), "W2")
    nodes = [h.make_node("Conv", ["x", "W1"], ["c1"], pads=[1, 1, 1, 1]), h.make_node("Relu", ["c1"], ["r1"]),
             h.make_node("Conv", ["r1", "W2"], ["c2"], pads=[1, 1, 1, 1]), h.make_node("Relu", ["c2"], ["r2"]),
             h.make_node(tail_op, ["r2"], ["e"]), h.make_node("ReduceMean", ["e"], ["y"], axes=[2, 3], keepdims=0)]
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", TP.FLOAT, [batch, 3, 32, 32])],
                     [h.make_tensor_value_info("y", TP.FLOAT, [batch, 8])], [w1, w2])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, str(path))
    return path


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return conv_model(tmp_path_factory.mktemp("bench") / "conv.onnx")


def assert_measured(r, iterations):
    assert r["status"] == "ok", r.get("reason")
    lat = r["latency_ms"]
    values = [lat[k] for k in PCTS]
    assert values == sorted(values) and values[0] > 0, values
    assert lat["min"] <= lat["mean"] <= lat["max"] and lat["std"] >= 0
    assert r["iterations"] == iterations == len(r["samples_ms"])
    assert np.median(r["samples_ms"]) == pytest.approx(lat["p50"], abs=1e-6)
    assert r["throughput_ips"] == pytest.approx(r["batch"] * 1000.0 / lat["mean"], rel=1e-4)
    assert r["cold_ms"] > 0 and r["build_s"] > 0
    assert r["memory"]["peak_bytes"] >= r["memory"]["rss_after_bytes"] > 0
    assert r["boundary"] == "host-to-host" and "host memory" in r["boundary_text"]


def test_ort_cpu_and_openvino_schema_and_ordered_percentiles(model):
    if importlib.util.find_spec("openvino") is None:
        pytest.skip("openvino is not installed (pip install openvino)")
    before = model.read_bytes()
    res = bench(model, "ort-cpu,openvino", iterations=60, warmup=3)
    d = json.loads(res.to_json())
    assert d["schema"] == SCHEMA == "npufit.bench/1"
    assert d["model"]["sha256"] == hashlib.sha256(before).hexdigest()
    assert model.read_bytes() == before  # the input model is never modified
    env = d["environment"]
    for key in ("cpu_model", "cpu_logical_cores", "npufit_version", "runtime_versions", "gpu", "python"):
        assert key in env
    assert env["runtime_versions"]["ort-cpu"] and env["runtime_versions"]["openvino"]
    assert d["protocol"]["iterations"] == 60 and "reused" in d["protocol"]["inputs"]
    by = {r["runtime"]: r for r in d["results"]}
    assert_measured(by["ort-cpu"], 60)
    assert_measured(by["openvino"], 60)
    assert by["ort-cpu"]["details"]["providers"] == ["CPUExecutionProvider"]
    assert by["openvino"]["details"]["precision"] == "f32"
    md = res.render("markdown")
    assert "| ort-cpu | host-to-host |" in md and "| openvino | host-to-host |" in md


def test_batch_fills_dynamic_dimension_and_scales_throughput(model, tmp_path):
    res = bench(model, "ort-cpu", batch=4, iterations=20, warmup=1)
    r = res.results[0]
    assert r.batch == 4 and r.throughput_ips == pytest.approx(4000.0 / r.latency_ms["mean"], rel=1e-4)
    static = conv_model(tmp_path / "static.onnx", batch=1)
    with pytest.raises(NpufitError, match="static batch of 1"):
        bench(static, "ort-cpu", batch=4, iterations=5)


def test_duration_mode_stops_on_time(model):
    res = bench(model, "ort-cpu", duration=0.25, warmup=2)
    r = res.results[0]
    assert r.ok and r.iterations >= 1 and r.samples_ms
    assert res.protocol["iterations"] is None and res.protocol["duration_s"] == 0.25
    # every call but the last ended before the deadline (the loop stops on the first call past it), whatever the
    # machine's load; the exact stopping rule is tested on a fake clock (test_bench_protocol)
    assert sum(sorted(r.samples_ms)[:-1]) <= 250


def test_npz_inputs_and_fresh_pool(model, tmp_path):
    x = np.random.default_rng(1).standard_normal((3, 2, 3, 32, 32)).astype(np.float32)  # 3 samples, batch 2
    npz = tmp_path / "in.npz"
    np.savez(npz, x=x)
    res = bench(model, "ort-cpu", inputs=npz, fresh_inputs=True, iterations=9, warmup=0)
    assert res.results[0].batch == 2 and "3 samples" in res.inputs and "fresh" in res.protocol["inputs"]
    np.savez(npz, wrong=x)
    with pytest.raises(NpufitError, match="no array for model input"):
        bench(model, "ort-cpu", inputs=npz, iterations=5)
    np.savez(npz, x=x[:, :, :2])
    with pytest.raises(NpufitError, match="dimension 1 is 2"):
        bench(model, "ort-cpu", inputs=npz, iterations=5)


def test_absent_runtimes_are_skipped_with_a_reason(model):
    import onnxruntime as ort

    res = bench(model, "ort-cpu,ort-cuda,tensorrt,hailort", iterations=10, warmup=0)
    by = {r.runtime: r for r in res.results}
    assert by["ort-cpu"].ok
    assert by["hailort"].status == "skipped" and ".hef" in by["hailort"].reason
    if "CUDAExecutionProvider" not in ort.get_available_providers():
        assert by["ort-cuda"].status == "skipped" and "CUDAExecutionProvider" in by["ort-cuda"].reason
    if importlib.util.find_spec("tensorrt") is None:
        assert by["tensorrt"].status == "skipped" and "tensorrt is not installed" in by["tensorrt"].reason
    assert "skipped hailort" in res.render("table")


def test_rknn_simulator_is_not_a_benchmark_and_status_lists_runtimes():
    with pytest.raises(NpufitError, match="not a benchmark"):
        parse_runtimes("ort-cpu,rknn")
    with pytest.raises(NpufitError, match="unknown runtime 'foo'"):
        parse_runtimes("foo")
    rows = {r["name"]: r for r in status()}
    assert set(RUNTIMES) <= set(rows)
    for r in rows.values():
        assert set(r) >= {"name", "available", "version", "enables", "install"}
    assert rows["ort-cpu"]["available"] is True
    assert rows["rknn-simulator"]["available"] is False and "NOT a benchmark" in rows["rknn-simulator"]["enables"]


def test_split_plan_benched_end_to_end_with_stage_medians(tmp_path):
    src = conv_model(tmp_path / "m.onnx", batch=1, tail_op="Erf")  # Erf is host-only on Hailo: two stages
    plan = tmp_path / "plan"
    npufit.split(src, "hailo8", output_dir=plan)
    res = bench(plan, iterations=40, warmup=2)
    r = res.results[0]
    assert r.runtime == "chain" and r.ok and r.boundary == "end-to-end-chain"
    assert res.model["kind"] == "plan" and "plan.json" in res.model["files"]
    names = [s["name"] for s in r.stages]
    assert names[-1] == "(outside stages)" and len(names) >= 3
    devices = {s["device"] for s in r.stages[:-1]}
    assert devices == {"npu", "host"}
    assert all(s["samples"] == 40 for s in r.stages[:-1])
    # stages run inside each timed call: their means add up to at most the chain's mean (medians do not add up)
    assert sum(s["mean_ms"] for s in r.stages[:-1]) <= r.latency_ms["mean"] * (1 + 1e-9)
    assert any("NPU stages ran on onnxruntime-cpu" in w for w in r.warnings) or "hailo_platform" in str(r.details)


def _cuda_available() -> bool:
    try:
        import onnxruntime as ort
    except ImportError:
        return False
    return "CUDAExecutionProvider" in ort.get_available_providers()


@pytest.mark.vendor
@pytest.mark.skipif(not _cuda_available(), reason="needs onnxruntime-gpu with a CUDA device (not in this environment)")
@pytest.mark.parametrize("boundary", ["host-to-host", "compute-only"])
def test_ort_cuda_both_boundaries(model, boundary):
    res = bench(model, "ort-cuda", boundary=boundary, iterations=30, warmup=3)
    r = res.results[0]
    assert r.ok and r.boundary == boundary and r.details["providers"][0] == "CUDAExecutionProvider"


@pytest.mark.vendor
@pytest.mark.skipif(importlib.util.find_spec("tensorrt") is None, reason="needs TensorRT and an NVIDIA GPU "
                                                                        "(not in this environment)")
@pytest.mark.parametrize("boundary", ["host-to-host", "compute-only"])
def test_native_tensorrt_both_boundaries(model, boundary):
    res = bench(model, "tensorrt", boundary=boundary, iterations=30, warmup=3)
    r = res.results[0]
    assert r.ok, r.reason
    assert r.boundary == boundary and r.build_s > 0


def test_compute_only_boundary_on_cpu_is_stated_not_faked(model):
    res = bench(model, "ort-cpu", boundary="compute-only", iterations=10, warmup=0)
    r = res.results[0]
    assert r.ok and r.boundary == "host-to-host" and "no host<->device copies" in r.details["note"]
    with pytest.raises(NpufitError, match="unknown boundary"):
        bench(model, "ort-cpu", boundary="kernel-only", iterations=5)

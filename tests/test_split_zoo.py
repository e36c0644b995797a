"""npufit split / run on real architectures: RT-DETR from transformers (opset 17) and an LSTM regressor."""
from __future__ import annotations

import numpy as np
import onnx
import pytest

import npufit
from npufit import check
from npufit.split import load_plan
from npufit.targets.base import Verdict
from npufit.verify.compare import make_session, run_onnx

pytest.importorskip("torch", reason="the zoo models are exported with torch")


def _running(plan_dir, stage):
    return {n.name for n in onnx.load(str(plan_dir / stage.file), load_external_data=False).graph.node}


def _run_matches_original(plan_dir, model, feeds, tmp_path):
    npz = tmp_path / "in.npz"
    np.savez(npz, **feeds)
    res = npufit.run(plan_dir, str(npz), output=tmp_path / "out.npz", compare_original=model)
    assert res.comparison["equivalent"] and res.comparison["max_abs"] == 0.0
    ref = run_onnx(make_session(model), feeds)
    with np.load(tmp_path / "out.npz") as z:
        for k, v in ref.items():
            assert np.array_equal(z[k], v), k
    return res


@pytest.fixture(scope="module")
def rtdetr_path(tmp_path_factory):
    pytest.importorskip("transformers", reason="RT-DETR is built from a transformers config")
    from npufit.zoo import hf

    p = tmp_path_factory.mktemp("rtdetr") / "rtdetr.onnx"
    hf.rtdetr(p, opset=17)
    return p


def test_rtdetr_prefix(rtdetr_path, tmp_path):
    out = tmp_path / "plan"
    npufit.split(rtdetr_path, "hailo8", out, mode="prefix")
    plan = load_plan(out)
    assert plan.verification["equivalent"] and plan.verification["max_abs"] == 0.0
    assert plan.verification["samples"] >= 3
    npu = plan.stages[0]
    assert npu.device == "npu" and all(s.device == "host" for s in plan.stages[1:])
    rep = check(rtdetr_path, "hailo8")
    running = [n for n in rep.nodes if n.verdict != Verdict.FOLDED and n.parent is None]
    backbone = {n.name for n in running if "/backbone/" in n.name}
    encoder = {n.name for n in running if "/encoder/aifi" in n.name}
    blocking = {n.name for n in running if n.op_type in ("TopK", "GatherElements", "GridSample")}
    assert backbone and encoder and blocking
    assert backbone | encoder <= _running(out, npu)  # the backbone and the encoder's attention run on the NPU
    host_nodes = set().union(*(_running(out, s) for s in plan.stages[1:]))
    assert blocking <= host_nodes  # the decoder's TopK, GatherElements, GridSample run on the host
    assert npu.end_node_names and npu.vendor["hailo"]["parse_original"].startswith("hailo parser onnx rtdetr.onnx")
    feeds = {"images": np.random.default_rng(3).standard_normal((1, 3, 128, 128)).astype(np.float32)}
    res = _run_matches_original(out, rtdetr_path, feeds, tmp_path)
    assert res.device_of_stage[npu.name] == "onnxruntime-cpu"


@pytest.mark.parametrize("mode", ["prefix", "segments"])
def test_lstm(tmp_path, mode):
    from npufit.zoo import timeseries

    model = tmp_path / "lstm.onnx"
    timeseries.export("lstm", model)
    out = tmp_path / mode
    npufit.split(model, "hailo8", out, mode=mode, min_nodes=1)
    plan = load_plan(out)
    assert plan.verification["equivalent"] and plan.verification["max_abs"] == 0.0
    rep = check(model, "hailo8")
    lstm = [n.name for n in rep.nodes if n.op_type == "LSTM"]
    assert lstm and rep.node(lstm[0]).verdict != Verdict.NPU
    stage_of = {n: s for s in plan.stages for n in _running(out, s)}
    assert stage_of[lstm[0]].device == "host"
    if mode == "segments":  # with --min-nodes 1 every running node sits where its verdict says
        for n in rep.nodes:
            if n.verdict != Verdict.FOLDED and n.parent is None:
                assert stage_of[n.name].device == ("npu" if n.verdict == Verdict.NPU else "host"), n.name
    feeds = {"series": np.random.default_rng(5).standard_normal((1, 32, 4)).astype(np.float32)}
    _run_matches_original(out, model, feeds, tmp_path)

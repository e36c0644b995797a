"""Acceptance: quantize a small CNN (random and .npz calibration), check the QDQ output and the accuracy report."""
from __future__ import annotations

import hashlib

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import npufit
from npufit.errors import NpufitError
from npufit.quantize import split_samples

from .quantize_models import OUTLIER_TENSOR, save, small_cnn


def _digest(path) -> str:
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


@pytest.fixture(scope="module")
def cnn(tmp_path_factory):
    d = tmp_path_factory.mktemp("qcnn")
    return save(small_cnn(), d / "cnn.onnx")


@pytest.fixture(scope="module")
def npz(tmp_path_factory, cnn):
    # images with structure (smooth + noise), not the N(0,1) the random source draws
    rng = np.random.default_rng(7)
    base = rng.random((60, 3, 1, 1)).astype(np.float32)
    x = base + 0.3 * rng.standard_normal((60, 3, 32, 32)).astype(np.float32)
    path = tmp_path_factory.mktemp("qnpz") / "calib.npz"
    np.savez(path, x=x)
    return path


def _assert_valid_qdq(path):
    m = onnx.load(str(path))
    onnx.checker.check_model(m)
    ops = [n.op_type for n in m.graph.node]
    assert "QuantizeLinear" in ops and "DequantizeLinear" in ops
    # weights are stored as int8 initializers behind a DequantizeLinear
    assert any(t.data_type == onnx.TensorProto.INT8 for t in m.graph.initializer)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    out = sess.run(None, {"x": np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)})
    assert [o.shape for o in out] == [(1, 10), (1, 4, 16, 16)]
    return m


@pytest.mark.parametrize("source", ["random", "npz"])
def test_small_cnn_quantizes_with_good_accuracy(cnn, npz, tmp_path, source):
    before = _digest(cnn)
    out = tmp_path / "q.onnx"
    calib = "random" if source == "random" else npz
    r = npufit.quantize(cnn, out, calib, samples=40, holdout=8)
    assert _digest(cnn) == before  # the input is never modified
    m = _assert_valid_qdq(out)
    assert r.calibration["used"] == 40 and r.calibration["holdout"] == 8
    assert {o.name for o in r.accuracy.outputs} == {"logits", "features"}
    for o in r.accuracy.outputs:
        assert o.cosine >= 0.98, (o.name, o.cosine)
        assert o.sqnr_db > 20
    # one row per quantized activation: every activation QuantizeLinear in the output is a row
    inits = {t.name for t in m.graph.initializer}
    act_q = [n for n in m.graph.node if n.op_type == "QuantizeLinear" and n.input[0] not in inits]
    assert len(r.accuracy.layers) == len(act_q) == r.qdq["activations"]
    wrapped = {n.input[0] for n in act_q} | {"logits", "features"}  # ORT renames what feeds a graph output
    assert {l.name for l in r.accuracy.layers} <= wrapped
    assert {"x", "r1", "r2", "r3", "logits", "features"} <= {l.name for l in r.accuracy.layers}
    assert all(l.diagnosis == "ok" for l in r.accuracy.layers)
    if source == "random":
        assert any("random" in w for w in r.warnings)
    else:
        assert not r.warnings
    d = r.to_dict()
    assert d["schema"] == "npufit.quantize/1" and len(d["accuracy"]["layers"]) == len(act_q)
    # nothing of ORT's temp files lands next to the model
    assert sorted(p.name for p in out.parent.iterdir()) == ["q.onnx"]


def test_outlier_channel_is_ranked_worst_and_downstream_is_inherited(tmp_path):
    src = save(small_cnn(broken=True), tmp_path / "broken.onnx")
    r = npufit.quantize(src, tmp_path / "q.onnx", "random", samples=40, holdout=8, worst=20)
    acc = r.accuracy
    worst = acc.layer(acc.worst[0])
    assert worst.name == OUTLIER_TENSOR and worst.rank == 1
    assert worst.diagnosis == "born here"
    # the tensor SQNR alone would hide it (the outlier channel dominates the power); the median channel does not
    assert worst.single.sqnr_db > 30 and worst.single.channel_sqnr_db < 10
    assert "16-bit" in worst.suggestion and "channel" in worst.suggestion
    r3 = acc.layer("r3")
    assert r3.diagnosis == "inherited" and r3.single_score > 25 and r3.entire_score < 10
    assert f"worst layer upstream is '{OUTLIER_TENSOR}'" in r3.suggestion
    # the damage reaches the outputs, which the clean model does not show
    assert min(o.cosine for o in acc.outputs) < 0.98


def test_exclude_keeps_a_node_in_float(cnn, tmp_path):
    r = npufit.quantize(cnn, tmp_path / "q.onnx", "random", samples=8, holdout=2, exclude=["conv3"])
    m = onnx.load(str(tmp_path / "q.onnx"))
    conv3 = next(n for n in m.graph.node if n.name == "conv3")
    assert conv3.input[1] == "w3"  # float weight, no DequantizeLinear in front
    assert r.settings["exclude"] == ["conv3"]
    with pytest.raises(NpufitError, match="no node named 'nope'"):
        npufit.quantize(cnn, tmp_path / "q2.onnx", "random", samples=4, holdout=1, exclude=["nope"])


@pytest.mark.parametrize("method", ["entropy", "percentile"])
def test_methods_per_channel_and_uint8(cnn, tmp_path, method):
    r = npufit.quantize(cnn, tmp_path / "q.onnx", "random", samples=16, holdout=4, method=method,
                        per_channel=True, activations="uint8")
    m = onnx.load(str(tmp_path / "q.onnx"))
    zps = {t.name: t.data_type for t in m.graph.initializer}
    act_q = [n for n in m.graph.node if n.op_type == "QuantizeLinear" and n.input[0] not in zps]
    assert act_q and all(zps[n.input[2]] == onnx.TensorProto.UINT8 for n in act_q)
    w_scale = next(t for t in m.graph.initializer if t.name == "w2_scale")
    assert list(w_scale.dims) == [16]  # per-channel weight scales
    assert r.settings["method"] == method and r.settings["per_channel"]
    assert min(o.cosine for o in r.accuracy.outputs) >= 0.98


def test_holdout_is_disjoint_from_calibration():
    w: list[str] = []
    assert split_samples(100, 40, 10, w) == (40, 10)  # calibrate on 0..39, hold back 90..99
    assert split_samples(30, 100, 10, w) == (20, 10)
    assert split_samples(5, 100, 10, w) == (4, 1) and "holding back 1" in w[-1]
    assert split_samples(5, 100, 0, w) == (5, 0)
    with pytest.raises(NpufitError, match="1 sample"):
        split_samples(1, 100, 10, w)


def test_holdout_zero_skips_the_report_and_renders(cnn, tmp_path):
    r = npufit.quantize(cnn, tmp_path / "q.onnx", "random", samples=4, holdout=0)
    assert r.accuracy is None and r.to_dict()["accuracy"] is None
    assert "no accuracy report" in r.render("table")
    assert r.render("markdown").startswith("# npufit quantize")


def test_metrics_channel_median_and_nonfinite():
    from npufit.quantize.accuracy import _Acc

    rng = np.random.default_rng(0)
    ref = rng.random((1, 8, 4, 4)).astype(np.float32)
    ref[0, 3] += 1000.0
    crushed = ref.copy()
    crushed[0, [c for c in range(8) if c != 3]] = 0.0  # every channel but the outlier lost
    a = _Acc()
    a.add(ref, crushed)
    assert a.sqnr_db > 35 and a.channel_sqnr_db < 1 and a.channel_ratio > 500
    b = _Acc()
    bad = ref.copy()
    bad[0, 0, 0, 0] = np.inf
    b.add(ref, bad)
    assert b.nonfinite == 1 and b.sqnr_db == -np.inf

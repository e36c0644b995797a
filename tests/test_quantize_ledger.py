"""Seed 001 on the quantized graph: LeakyReLU leaves dequantize → LeakyRelu → quantize islands on Ethos-N78,
ReLU (fused into the conv by the quantizer) leaves none. The ledger comes from `check` (npufit.check.ledger)."""
from __future__ import annotations

import pytest

import npufit
from npufit import check

pytest.importorskip("torch", reason="the seed-001 detector is exported from PyTorch")


@pytest.fixture(scope="module")
def quantized(tmp_path_factory):
    from npufit.zoo import detector

    d = tmp_path_factory.mktemp("seed001")
    out = {}
    for act in ("relu", "leakyrelu"):
        detector.export(act, d / f"{act}.onnx")
        # the TVM flow's placement (npufit's prediction): the support library's own compile, where its env is
        # installed, keeps LeakyReLU on the NPU (see test_leakyrelu_islands_stay_on_the_npu_when_measured)
        out[act] = npufit.quantize(d / f"{act}.onnx", d / f"{act}_int8.onnx", "random", samples=8, holdout=2,
                                   target="ethos-n78", measure="never")
    return d, out


def test_leakyrelu_pays_extra_qdq_on_ethos_n78(quantized):
    d, reports = quantized
    led = {
        act: check(d / f"{act}_int8.onnx", "ethos-n78", measure="never").extra["qdq_ledger"]
        for act in ("relu", "leakyrelu")
    }
    leaky, relu = led["leakyrelu"], led["relu"]
    assert relu["totals"]["islands"] == 0
    by_op = {g["ops"]: g for g in leaky["by_op"]}
    assert by_op["LeakyRelu"]["count"] == 6  # one island per LeakyReLU of the detector
    assert by_op["LeakyRelu"]["qdq_ops"] == 12  # each: dequantize → LeakyRelu → quantize
    assert leaky["totals"]["extra_ops"] > relu["totals"]["extra_ops"]
    # quantize reports the same cost itself (--target)
    cost = {a: r.extra["target_cost"][0] for a, r in reports.items()}
    assert cost["leakyrelu"]["float_islands"] == 6 and cost["relu"]["float_islands"] == 0
    assert cost["leakyrelu"]["extra_qdq_ops"] > cost["relu"]["extra_qdq_ops"]
    assert "LeakyRelu × 6" in reports["leakyrelu"].render("table")
    # and the quantizer itself shows why: 6 more quantized activations (the LeakyReLU outputs ReLU fuses away)
    assert reports["leakyrelu"].qdq["activations"] - reports["relu"].qdq["activations"] == 6


def test_leakyrelu_islands_stay_on_the_npu_when_measured(quantized):
    """Arm's Ethos-N support library compiles the LeakyReLU islands onto the NPU: measured, they cost no host
    conversions, and the prediction's different answer is listed node by node."""
    from npufit.envs import env_status

    if not env_status("ethos-n")["installed"]:
        pytest.skip("the Ethos-N support library env is not installed (npufit env install ethos-n)")
    d, _ = quantized
    rep = check(d / "leakyrelu_int8.onnx", "ethos-n78")
    placed = rep.extra["placement"]
    assert placed["source"] == "measured"
    totals = rep.extra["qdq_ledger"]["totals"]
    assert totals["islands"] == 6 and totals["host_islands"] == 0 and totals["extra_ops"] == 0
    assert "/stem/stem.2/LeakyRelu" in {x["node"] for x in placed["disagreements"]}

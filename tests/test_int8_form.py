"""One int8 form: the model `quantize --target T` writes is the model `check --judge int8` judged for T.

On a YOLOv8-style SiLU detector, ONNX Runtime's default quantizer left Sub/Div in float and calibrated each Sigmoid's
output range, where the int8 form every converter writes (and check assumes) fixes it at scale 1/256, zero point
-128: Ethos-N78 then ran all 58 Sigmoids on the host (97 % of nodes by check, 22 % by quantize's own report)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

import npufit
from npufit.check.engine import predict
from npufit.graph import load
from npufit.graph.quant import QDQ_OPS, fixed_output_qparams
from npufit.quantize.target_cost import describe

from .report_models import yolov8n_like

TARGETS = ("ethos-n78", "ethos-u55-256", "rk3588")


@pytest.fixture(scope="module")
def detector(tmp_path_factory):
    d = tmp_path_factory.mktemp("int8form")
    src = yolov8n_like(d / "yolo.onnx", size=64)
    # npufit's int8 form against npufit's own judgment: the prediction on both sides (measure="never")
    report = npufit.quantize(
        src, d / "yolo.int8.onnx", "random", samples=4, holdout=0, target=",".join(TARGETS), measure="never"
    )
    return src, d / "yolo.int8.onnx", report


def _verdicts(report) -> dict[str, str]:
    return {n.name: n.verdict.value for n in report.nodes if n.parent is None and n.op_type not in QDQ_OPS}


@pytest.mark.parametrize("target", TARGETS)
def test_quantize_target_cost_counts_are_check_judge_int8_counts(detector, target):
    src, qdq, report = detector
    judged = npufit.check(src, target, judge="int8", measure="never")
    row = next(r for r in report.extra["target_cost"] if r["target"] == target)
    assert row["nodes"] == judged.summary()["counts"]
    assert row["coverage_nodes_pct"] == pytest.approx(judged.summary()["coverage_nodes_pct"], abs=0.01)
    # node by node: the written file, checked as it is, places every node where the float model was judged
    written = _verdicts(predict(load(qdq), target))
    assert written == _verdicts(judged)


def test_ethos_n78_runs_the_sigmoids_of_the_written_model(detector):
    _, qdq, report = detector
    row = next(r for r in report.extra["target_cost"] if r["target"] == "ethos-n78")
    sig = Counter(n.verdict.value for n in predict(load(qdq), "ethos-n78").nodes if n.op_type == "Sigmoid")
    assert sig == {"npu": 58}  # before: 58 on the host, each a dequantize -> sigmoid -> quantize island
    assert "float islands on the host: Softmax × 1;" in describe(row)  # the DFL softmax has no Ethos-N pattern
    assert row["coverage_nodes_pct"] > 95


def test_fixed_output_qparams_are_written(detector):
    _, qdq, _ = detector
    m = onnx.load(str(qdq))
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    producer = {o: n for n in m.graph.node for o in n.output}
    wrapped = {
        producer[n.input[0]].op_type for n in m.graph.node if n.op_type == "QuantizeLinear" and n.input[0] in producer
    }
    assert {"Sub", "Div", "Softmax"} <= wrapped  # every op with float activations, not ONNX Runtime's default list
    scale, zp = fixed_output_qparams("Sigmoid")
    for n in m.graph.node:
        if n.op_type == "QuantizeLinear" and n.input[0] in producer and producer[n.input[0]].op_type == "Sigmoid":
            assert float(inits[n.input[1]]) == pytest.approx(scale) and int(inits[n.input[2]]) == zp
    assert np.dtype(inits[next(n.input[2] for n in m.graph.node if n.op_type == "QuantizeLinear")].dtype) == np.int8

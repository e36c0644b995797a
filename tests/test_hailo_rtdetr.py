"""A real RT-DETR (transformers RTDetrForObjectDetection, small config, random weights,
offline, opset 17) checked against hailo8: backbone convolutions run on the NPU, the decoder's
TopK / GridSample / GatherElements are flagged, and the partitions are listed."""
from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def rtdetr_report(tmp_path_factory):
    from npufit import check
    from npufit.zoo.hf import rtdetr

    path = tmp_path_factory.mktemp("rtdetr") / "rtdetr.onnx"
    rtdetr(path, opset=17)
    return check(path, "hailo8")


def test_backbone_convolutions_are_npu(rtdetr_report):
    convs = [n for n in rtdetr_report.nodes if n.op_type == "Conv" and "/backbone/" in n.name]
    assert len(convs) >= 10
    assert all(n.verdict.value == "npu" for n in convs), [(n.name, n.verdict.value) for n in convs if n.verdict.value != "npu"]


@pytest.mark.parametrize("op,rule", [("TopK", "hailo8.op.TopK"), ("GridSample", "hailo8.op.GridSample"),
                                     ("GatherElements", "hailo8.op.GatherElements")])
def test_detection_head_ops_are_flagged(rtdetr_report, op, rule):
    nodes = [n for n in rtdetr_report.nodes if n.op_type == op]
    assert nodes, f"RT-DETR export has no {op}"
    for n in nodes:
        assert n.verdict.value == "unsupported"
        assert rule in [r.rule for r in n.reasons]


def test_partitions_and_cut_points_are_listed(rtdetr_report):
    parts = rtdetr_report.partitions
    assert any(p.device == "npu" for p in parts) and any(p.device == "host" for p in parts)
    assert rtdetr_report.boundaries, "NPU<->host boundary tensors must be listed"
    prefix = rtdetr_report.prefix
    # the largest NPU prefix covers the backbone and the hybrid encoder (its AIFI attention is the form the Model Zoo
    # compiles in DETR's encoder, H-MZ) and ends before the decoder's TopK / GridSample / GatherElements
    assert prefix["end_nodes"] and not any("/backbone/" in n or "/encoder/" in n for n in prefix["end_nodes"])
    attention = [n for n in rtdetr_report.nodes if "/encoder/aifi" in n.name and n.op_type in ("MatMul", "Softmax", "Transpose")]
    assert attention and all(n.verdict.value == "npu" for n in attention)
    backbone = {n.name for n in rtdetr_report.nodes if "/backbone/" in n.name and n.verdict.value == "npu"}
    assert backbone and backbone <= {n.name for n in rtdetr_report.nodes if n.partition is not None}
    d = json.loads(rtdetr_report.to_json())
    assert d["partitions"] and d["summary"]["npu_partitions"] >= 1 and d["summary"]["host_partitions"] >= 1
    assert 0 < d["summary"]["coverage_nodes_pct"] < 100

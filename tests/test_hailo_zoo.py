"""The Hailo Model Zoo compiles its transformer, DETR and YOLO networks for Hailo-8 with no cut
before its end nodes (reference/hailo_model_zoo_cut_points.md). Small rebuilds of those architectures
(npufit/zoo/hailo_zoo.py, opset 11) must come out `npu` up to the matching nodes, while what the Zoo cuts after
them (YOLO DFL and anchor decode) stays flagged; and docs/targets/hailo8.md shows today's verdicts."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from npufit import check  # noqa: E402
from npufit.zoo import hailo_zoo  # noqa: E402

pytestmark = pytest.mark.slow
WHOLE = (
    "vit",
    "deit",
    "vit_pose",
    "detr_r18",
    "detr_r50",
    "yolov8",
    "yolov5",
    "yolov5_c3tr",
    "palm_detection_lite",
    "hand_landmark_lite",
)


@pytest.fixture(scope="module")
def built(tmp_path_factory, monkeypatch_module):
    d = tmp_path_factory.mktemp("hailo-zoo")
    return d, {z.name: hailo_zoo.evaluate(z, d) for z in hailo_zoo.ZOO}


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    mp.setenv("HF_HUB_OFFLINE", "1")
    yield mp
    mp.undo()


@pytest.mark.parametrize("name", WHOLE)
def test_zoo_network_is_npu_up_to_the_zoo_end_nodes(built, name):
    row = built[1][name]
    assert row["nodes_to_end"] > 10
    assert row["npu_to_end"] == row["nodes_to_end"], (
        f"{name}: cut before the Zoo's end nodes by {row['off_npu_to_end']}"
    )


def test_transformer_blocks_are_one_npu_partition(built):
    d = built[0]
    for name in ("vit", "deit", "vit_pose", "detr_r18"):
        report = check(d / f"{name}.onnx", "hailo8")
        assert len(report.partitions) == 1 and report.partitions[0].device == "npu", name
        claimed = {n.composite for n in report.nodes if n.composite}
        assert {"hailo8.attention", "hailo8.tokens"} <= claimed, (name, claimed)


def test_what_the_zoo_cuts_after_the_end_nodes_stays_flagged(built):
    d = built[0]
    v8 = check(d / "yolov8.onnx", "hailo8")
    dfl = [n for n in v8.nodes if n.op_type == "Reshape" and n.verdict.value == "unsupported"]
    assert dfl and all(
        n.reasons[0].rule == "hailo8.shuffle.rank3" for n in dfl
    )  # H-YOLO: DFL UnsupportedShuffleLayerError
    anchors = [n for n in v8.nodes if n.op_type in ("Sub", "Add") and n.verdict.value == "unsupported"]
    assert anchors and all("hailo8.eltwise.const_layout" in [r.rule for r in n.reasons] for n in anchors)
    v5 = check(d / "yolov5.onnx", "hailo8")
    five_d = [n for n in v5.nodes if n.op_type == "Transpose" and n.verdict.value == "unsupported"]
    assert five_d and all("hailo8.tensor.max_rank" in [r.rule for r in n.reasons] for n in five_d)


def test_levit_attention_runs_on_the_npu(built):
    report = check(built[0] / "levit.onnx", "hailo8")
    att = [n for n in report.nodes if n.op_type in ("MatMul", "Softmax", "Transpose") and n.verdict.value != "folded"]
    assert att and all(n.verdict.value == "npu" for n in att), [n.name for n in att if n.verdict.value != "npu"]


def test_levit_is_one_npu_partition(built):
    """LeViT's reshape_as chains leave shapes unknown after one shape-inference pass; the loader refines them to the
    fixpoint (levit256's depth, four blocks a stage, takes 34 rounds), and then the whole network is npu (the Zoo
    compiles levit256 whole)."""
    report = check(built[0] / "levit.onnx", "hailo8")
    assert [n.name for n in report.nodes if n.verdict.value not in ("npu", "folded")] == []
    assert len(report.partitions) == 1


def test_tflite_networks_are_judged_as_tflite_and_their_heads_are_cut_where_the_zoo_cuts(built):
    """The Zoo compiles MediaPipe's TFLite palm detector up to its four head convolutions (the RESHAPEs to anchors
    failed to parse in a public run: UnsupportedShuffleLayerError) and the hand landmark model whole."""
    d = built[0]
    palm = check(d / "palm_detection_lite.tflite", "hailo8")
    assert palm.model["format"] == "tflite"
    assert {n.op_type for n in palm.failing} == {"RESHAPE"}
    assert all(n.reasons[0].rule == "hailo8.shuffle.rank3" for n in palm.failing)
    hand = check(d / "hand_landmark_lite.tflite", "hailo8")
    assert not hand.failing and len(hand.partitions) == 1


def test_c3tr_attention_is_one_npu_region_up_to_the_detect_convs(built):
    """YOLOv5's C3TR runs nn.MultiheadAttention sequence-first at batch 1 (flatten(2).permute(2, 0, 1)); the Zoo
    compiles yolov5s_c3tr, so every attention node is npu and only the head's 5-D reshapes are flagged."""
    report = check(built[0] / "yolov5_c3tr.onnx", "hailo8")
    tr = [n for n in report.nodes if n.name.startswith("/tr/") and n.verdict.value != "folded"]
    assert tr and all(n.verdict.value == "npu" for n in tr), [(n.name, n.reasons[0].rule) for n in tr if n.reasons]
    assert {n.reasons[0].rule for n in report.failing} == {"hailo8.tensor.max_rank"}


def test_record_shown_in_the_docs_is_fresh(built):
    rec = json.loads(hailo_zoo.RECORD.read_text())
    assert rec["networks"] == [built[1][z.name] for z in hailo_zoo.ZOO], (
        "stale: run `python -m npufit.zoo.hailo_zoo` and `npufit targets --write-docs docs/targets`"
    )

"""RK3566 and RV1106 read the detection-head bounds of their own compiler sweeps (docs/calibration/sweep/<soc>.json,
derived by calibration/bounds.py) and inherit RK3588's other sweep bounds: each rule on a tiny graph built the way
YOLOv8 writes its head, on both sides of the bound, against RK3588's verdict and with the sweep's evidence switched
off, so each assertion fails without the rule."""

from __future__ import annotations

import copy

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from npufit.check import check_graph
from npufit.graph.onnx_loader import build_graph
from npufit.targets import get_profile, sweeps
from npufit.targets.rockchip import bounded

from .target_cases import judge

NO_SWEEP = dict(fit_families=("cnn", "transformer", "detector", "audio-rnn"), fit_cases=False)


def _w(name, shape):
    return numpy_helper.from_array(np.random.default_rng(0).standard_normal(shape).astype(np.float32) * 0.1, name)


def _i64(name, v):
    return numpy_helper.from_array(np.asarray(v, np.int64), name)


def _head(c: int, k: int, sizes, tail: str):
    """Per scale an input [1, 16, s, s] -> 1x1 conv to C channels -> [1, C, s*s]; the scales joined on the anchor axis,
    split into [1, k, C / k, A] ("split"), then: "dfl" Transpose -> Softmax -> conv, as YOLOv8's DFL; "conv" a 1x1
    conv; "keypoints" a pose head's decode (Slice, scale and Sigmoid, Concat on axis 2) merged back into rows
    ("merge") and viewed as 4-D for a conv."""
    nodes, inits, inputs, flats = [], [], [], []
    a = sum(s * s for s in sizes)
    for i, s in enumerate(sizes):
        inputs.append(helper.make_tensor_value_info(f"x{i}", TensorProto.FLOAT, [1, 16, s, s]))
        inits += [_w(f"w{i}", (c, 16, 1, 1)), _i64(f"f{i}_s", [1, c, s * s])]
        nodes += [
            helper.make_node("Conv", [f"x{i}", f"w{i}"], [f"c{i}"], name=f"conv{i}"),
            helper.make_node("Reshape", [f"c{i}", f"f{i}_s"], [f"f{i}"], name=f"flat{i}"),
        ]
        flats.append(f"f{i}")
    inits.append(_i64("split_s", [1, k, c // k, a]))
    nodes += [
        helper.make_node("Concat", flats, ["cat"], name="concat", axis=2),
        helper.make_node("Reshape", ["cat", "split_s"], ["split"], name="split"),
    ]
    if tail == "dfl":
        inits.append(_w("dfl_w", (1, c // k, 1, 1)))
        nodes += [
            helper.make_node("Transpose", ["split"], ["tr"], name="transpose", perm=[0, 2, 1, 3]),
            helper.make_node("Softmax", ["tr"], ["sm"], name="softmax", axis=1),
            helper.make_node("Conv", ["sm", "dfl_w"], ["y"], name="post"),
        ]
        out = [1, 1, k, a]
    elif tail == "conv":
        inits.append(_w("post_w", (8, k, 1, 1)))
        nodes.append(helper.make_node("Conv", ["split", "post_w"], ["y"], name="post"))
        out = [1, 8, c // k, a]
    else:
        inits += [_i64("s0", [0]), _i64("s2", [2]), _i64("s3", [3]), _i64("ax", [2])]
        inits += [numpy_helper.from_array(np.asarray(2.0, np.float32), "two"), _i64("merge_s", [1, c, a])]
        inits += [_i64("back_s", [1, c, 1, a]), _w("post_w", (8, c, 1, 1))]
        nodes += [
            helper.make_node("Slice", ["split", "s0", "s2", "ax"], ["xy"], name="xy"),
            helper.make_node("Slice", ["split", "s2", "s3", "ax"], ["vis"], name="vis"),
            helper.make_node("Mul", ["xy", "two"], ["xy2"], name="scale"),
            helper.make_node("Sigmoid", ["vis"], ["vis_s"], name="sigmoid"),
            helper.make_node("Concat", ["xy2", "vis_s"], ["kp"], name="keypoints", axis=2),
            helper.make_node("Reshape", ["kp", "merge_s"], ["rows"], name="merge"),
            helper.make_node("Reshape", ["rows", "back_s"], ["back"], name="back"),
            helper.make_node("Conv", ["back", "post_w"], ["y"], name="post"),
        ]
        out = [1, 8, 1, a]
    g = helper.make_graph(nodes, "head", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def test_each_soc_reads_its_own_sweep_bounds_and_inherits_rk3588s_others():
    assert bounded.at("rk3566", "head_split") == "rk3566" and bounded.at("rv1106", "dfl_split") == "rv1106"
    assert bounded.at("rk3566", "split_rows") == "rk3588" and bounded.at("rk3588", "split_rows") == "rk3588"
    own = bounded.limits("rk3566")
    assert own == bounded.limits("rk3588")  # rk3566's record derives none of RK3588's bounds (yet)
    assert bounded.soc_limits("rk3588") == {}  # RK3588's heads are bounded by row alignment instead
    assert bounded.soc_limits("rv1106")["head_split_hw"] == sweeps.value("rv1106", "head_split")
    assert "head_split_t_hw" not in bounded.soc_limits("rv1106")  # its Transpose-read splits never ran on the CPU


def test_the_dfl_split_and_its_transpose_run_on_the_cpu_on_rk3566_and_the_npu_on_rk3588():
    # YOLOv8's DFL at 640: [1, 64, 8400] joined from three scales -> [1, 4, 16, 8400] -> Transpose -> Softmax.
    # rk3566's sweep ran every such split, and every Transpose of it, on the CPU (so did its real YOLO builds)
    m = _head(64, 4, (80, 40, 20), "dfl")
    assert judge(m, "rk3588", "split")[0] == "npu" and judge(m, "rk3588", "transpose")[0] == "npu"
    v, why = judge(m, "rk3566", "split")
    assert v == "cpu" and {"rk3566.reshape.dfl_split", "rk3566.reshape.head_split_t"} <= set(why), why
    v, why = judge(m, "rk3566", "transpose")
    assert v == "cpu" and "rk3566.transpose.head_split" in why, why
    # rv1106's sweep: the DFL split on the NPU up to a 525-anchor head (8400 cells), on the CPU from 2100 anchors
    v, why = judge(m, "rv1106", "split")
    assert v == "cpu" and "rv1106.reshape.dfl_split" in why, why
    assert judge(_head(64, 4, (20, 10, 5), "dfl"), "rv1106", "split")[0] == "npu"


def test_without_the_sweeps_evidence_the_head_rules_stay_silent():
    m = onnx.shape_inference.infer_shapes(_head(64, 4, (80, 40, 20), "dfl"))
    g = build_graph(m, "test.onnx", {"ai.onnx": 17}, [])
    prof = copy.copy(get_profile("rk3566"))
    prof.limits = {**prof.limits, **NO_SWEEP}
    rep = check_graph(g, prof)
    assert rep.node("split").verdict.value == "npu" and rep.node("transpose").verdict.value == "npu"


def test_a_pose_heads_split_and_merge_follow_each_socs_map_bound():
    # a pose head's keypoints [1, 51, A] -> [1, 17, 3, A], decoded and merged back into [1, 51, A]
    big, small = _head(51, 17, (80, 40, 20), "keypoints"), _head(51, 17, (40, 20, 10), "keypoints")
    assert judge(big, "rk3588", "merge")[0] == "npu"
    for soc in ("rk3566", "rv1106"):
        v, why = judge(big, soc, "merge")
        assert v == "cpu" and f"{soc}.reshape.head_merge" in why, (soc, why)
        v, why = judge(big, soc, "split")
        assert v == "cpu" and f"{soc}.reshape.head_split" in why, (soc, why)
    # at a 320 input (2100 anchors, 6300 cells): rv1106's sweep ran the split on the NPU, rk3566's on the CPU
    assert judge(small, "rv1106", "split")[0] == "npu"
    assert judge(small, "rk3566", "split")[0] == "cpu"
    # a split a conv reads, at 640: the CPU on both
    conv = _head(51, 17, (80, 40, 20), "conv")
    assert judge(conv, "rv1106", "split")[0] == "cpu" and judge(conv, "rk3566", "split")[0] == "cpu"


def test_rk3566_runs_a_5d_qkv_split_on_the_cpu_when_the_head_width_is_unaligned():
    # PP-OCRv4's recognizer: [1, 40, 360] -> [1, 40, 3, 8, 15] -> Transpose(2, 0, 3, 1, 4); rk3566's attention sweep
    # ran that Transpose on the CPU at a head width of 15 and on the NPU at 8, 12, 16 and 64; rk3588 and rv1106 ran
    # every width on the NPU
    from calibration.sweep import qkv5d

    ocr, vit = qkv5d("timm", 8, 15), qkv5d("timm", 4, 16, (8, 8))
    v, why = judge(ocr, "rk3566", "qkv_transpose")
    assert v == "cpu" and "rk3566.transpose.qkv_view" in why, why
    assert judge(vit, "rk3566", "qkv_transpose")[0] == "npu"
    assert judge(ocr, "rk3588", "qkv_transpose")[0] == "npu" and judge(ocr, "rv1106", "qkv_transpose")[0] == "npu"
    m = onnx.shape_inference.infer_shapes(ocr)
    prof = copy.copy(get_profile("rk3566"))
    prof.limits = {**prof.limits, **NO_SWEEP}
    assert check_graph(build_graph(m, "t.onnx", {"ai.onnx": 17}, []), prof).node("qkv_transpose").verdict.value == "npu"

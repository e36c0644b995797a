"""The rk3588 conditions the attribute sweeps measured (calibration/rknn_sweep.py, cases in
docs/calibration/rk3588-cases.json), each on a tiny graph: the side that ran on the NPU, the side that ran on the CPU,
and the corpus-only fallback when the case evidence is dropped (fit_cases False)."""
from __future__ import annotations

import numpy as np
from onnx import helper, numpy_helper

from .onnx_builders import model, vi
from .test_targets_calibrated import _after_relu, _i64, _verdict


def _resize(ctm, out_hw, mode="linear"):
    scales = numpy_helper.from_array(np.array([1, 1, out_hw / 8, out_hw / 8], np.float32), "sc")
    return _after_relu("Resize", [1, 8, 8, 8], [1, 8, out_hw, out_hw], dict(mode=mode, coordinate_transformation_mode=ctm),
                       inits=[scales], extra_inputs=("", "sc"))


def test_linear_resize_align_corners_on_the_cpu_asymmetric_and_halving_on_the_npu():
    assert _verdict(_resize("align_corners", 16)) == "cpu"  # resize-linear-align_corners-x2
    assert _verdict(_resize("asymmetric", 16)) == "npu"  # resize-linear-asymmetric-x2
    assert _verdict(_resize("half_pixel", 4)) == "npu"  # resize-linear-half_pixel-x0.5
    assert _verdict(_resize("half_pixel", 12)) == "cpu"  # x1.5
    assert _verdict(_resize("align_corners", 16, "nearest")) == "npu"
    # without the cases: the 2.3.2 document's list (align_corners on the NPU, asymmetric and downscales on the CPU)
    off = dict(fit_families=("cnn", "transformer", "detector", "audio-rnn"), fit_cases=False)
    assert _verdict(_resize("align_corners", 16), **off) == "npu"
    assert _verdict(_resize("half_pixel", 4), **off) == "cpu"


def _avg(pads, cip, ceil=0, out=16):
    return _after_relu("AveragePool", [1, 8, 16, 16], [1, 8, out, out],
                       dict(kernel_shape=[3, 3], strides=[1, 1] if out == 16 else [2, 2], pads=pads, count_include_pad=cip,
                            ceil_mode=ceil))


def test_average_pooling_that_excludes_padding_runs_on_the_cpu():
    assert _verdict(_avg([1, 1, 1, 1], 0)) == "cpu"  # PoolFormer's pooling token mixer form (pool-avg-k3s1p1-cip0)
    assert _verdict(_avg([1, 1, 1, 1], 1)) == "npu"
    assert _verdict(_avg([0, 0, 0, 0], 0, out=7)) == "npu"  # no padding
    assert _verdict(_avg([0, 0, 0, 0], 0, ceil=1, out=8)) == "cpu"  # a ceil_mode partial window (pool-avg-k3s2p0-ceil-cip0)
    assert _verdict(_avg([1, 1, 1, 1], 0), fit_families=("cnn",), fit_cases=False) == "npu"


def _flip(shape, axis, perm=None):
    inits = [_i64("st", [-1]), _i64("en", [-(2 ** 62)]), _i64("ax", [axis]), _i64("sp", [-1])]
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu")]
    src = "r"
    if perm is not None:
        nodes.append(helper.make_node("Transpose", ["r"], ["t"], name="t", perm=perm))
        src = "t"
    out = [shape[p] for p in perm] if perm is not None else shape
    nodes.append(helper.make_node("Slice", [src, "st", "en", "ax", "sp"], ["y"], name="op"))
    return model(nodes, [vi("x", shape)], [vi("y", out)], inits)


def test_reversing_the_axis_that_holds_the_innermost_data_runs_on_the_npu():
    assert _verdict(_flip([1, 8, 8, 8], 3)) == "npu"  # slice-nchw-ax3-sm1
    assert _verdict(_flip([1, 8, 8, 8], 1)) == "cpu"  # slice-nchw-ax1-sm1
    assert _verdict(_flip([1, 8, 8, 8], 2, [0, 2, 3, 1])) == "npu"  # [1, H, W, C]'s W: slice-nhwc-ax2-sm1
    assert _verdict(_flip([1, 8, 8, 8], 3, [0, 2, 3, 1])) == "cpu"  # its C: slice-nhwc-ax3-sm1
    assert _verdict(_flip([1, 8, 8, 8], 3), fit_families=("cnn",), fit_cases=False) == "cpu"


def test_a_4d_patch_unfold_that_splits_the_innermost_axis():
    # the sweep's unfold [1, C, H, W] -> [C*H/2, 2, W/2, 2]: float16 W = H = 4 on the CPU, 8 on the NPU
    assert _verdict(_after_relu("Reshape", [1, 16, 4, 4], [32, 2, 2, 2], inits=[_i64("s", [32, 2, 2, 2])],
                                extra_inputs=("s",))) == "cpu"
    assert _verdict(_after_relu("Reshape", [1, 16, 8, 8], [64, 2, 4, 2], inits=[_i64("s", [64, 2, 4, 2])],
                                extra_inputs=("s",))) == "npu"
    # ... and the merge back to [1, C, H, W]
    assert _verdict(_after_relu("Reshape", [32, 2, 2, 2], [1, 16, 4, 4], inits=[_i64("s", [1, 16, 4, 4])],
                                extra_inputs=("s",))) == "cpu"


def _grid_slice(first):
    """[1, 64, 16] tokens -> `first` (MatMul by a constant, or a Transpose) -> Reshape [1, 8, 8, 16] -> Slice ::2 of H, W."""
    w = numpy_helper.from_array(np.eye(16, dtype=np.float32), "w")
    inits = [w, _i64("g", [1, 8, 8, 16]), _i64("st", [0, 0]), _i64("en", [8, 8]), _i64("ax", [1, 2]), _i64("sp", [2, 2])]
    mid = (helper.make_node("MatMul", ["r", "w"], ["m"], name="mm") if first == "MatMul"
           else helper.make_node("Transpose", ["r"], ["m"], name="t", perm=[0, 1, 2]))
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"), mid,
             helper.make_node("Reshape", ["m", "g"], ["gr"], name="grid"),
             helper.make_node("Slice", ["gr", "st", "en", "ax", "sp"], ["y"], name="op")]
    return model(nodes, [vi("x", [1, 64, 16])], [vi("y", [1, 4, 4, 16])], inits)


def test_a_strided_slice_of_a_grid_reshaped_from_a_matmul_runs_on_the_npu():
    assert _verdict(_grid_slice("MatMul")) == "npu"  # slice-grid-linear-ax12-s2
    assert _verdict(_grid_slice("Transpose")) == "cpu"  # slice-grid-ax12-s2 (conv tokens through a Transpose)
    assert _verdict(_grid_slice("MatMul"), fit_families=("cnn",), fit_cases=False) == "cpu"

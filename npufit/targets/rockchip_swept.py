"""RK3588 conditions measured by the attribute sweeps (source CAL-R: benchmarks/calibration/rknn_sweep.py, cases merged
into docs/calibration/rk3588-cases.json; the deciding cases also compiled for rk3576, rk3566, rv1106 into
docs/calibration/<soc>-cases.json). Each condition names its cases (cal.Evidence); rockchip_fitted.EVIDENCE lists them
with the corpus-fitted ones, and tests/test_calibration_records.py checks every cited case is recorded."""
from __future__ import annotations

from . import calibration as cal, common

Ev = cal.Evidence

# The sweep cases are float16, and int8 for the deciding ones: conv 1x1 -> the op -> conv 1x1, every attribute
# combination on both sides of each condition. They rest on cases alone (no corpus family shows them), so the
# corpus-only LOFO score falls back to the 2.3.2 document where they are held out.
_RESIZE_LINEAR = tuple(f"resize-linear-{m}-{t}" for m in ("half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel")
                       for t in ("x2", "x4", "x1.5", "x0.5", "sizes-x2"))
# linear Resize: align_corners ran on the CPU at every scale (2, 4, 1.5, 0.5, 2 given as sizes, 8x8 and 16x16 inputs,
# 6x10 by 4); half_pixel, pytorch_half_pixel and asymmetric ran on the NPU at 2, 4 and 0.5, on the CPU at 1.5 (nearest
# ran on the NPU in all 20 of its cases, every mode and scale)
RESIZE_LINEAR = Ev((), _RESIZE_LINEAR + ("resize-linear-align_corners-x2-c32-16x16", "resize-linear-align_corners-sizes-x4-c16-6x10",
                                         "resize-linear-half_pixel-x2-c32-16x16", "resize-linear-half_pixel-sizes-x4-c16-6x10",
                                         "int8-resize-linear-align_corners-x2", "int8-resize-linear-asymmetric-x2"))
DOC_LINEAR_MODES = ("half_pixel", "pytorch_half_pixel", "align_corners")  # the 2.3.2 document's, without the sweep
# AveragePool with count_include_pad=0 over padding ran on the CPU: kernels 2, 3, 5, 7, strides 1 and 2, symmetric and
# asymmetric pads, and a ceil_mode partial window with no pads; the same pools with count_include_pad=1, and
# count_include_pad=0 without pads (k2s2, k3s1), ran on the NPU, as every MaxPool did
AVGPOOL_EXCLUDE_PAD = Ev((), tuple(f"pool-avg-{c}" for c in (
    "k3s1p1-cip0", "k3s1p1-cip1", "k3s2p1-cip0", "k3s2p1-cip1", "k5s1p2-cip0", "k5s1p2-cip1", "k7s1p3-cip0", "k7s1p3-cip1",
    "k2s2p0-cip0", "k3s1p0-cip0", "k2s1p0011-cip0", "k2s1p0011-cip1", "k3s2p1100-cip0", "k3s2p1100-cip1", "k3s2p0-ceil-cip0",
    "k3s2p1-ceil-cip0", "k3s2p0-ceil-cip1", "k3s2p1-ceil-cip1", "k3s1p1-cip0-c64-14x14", "k3s1p1-cip0-c16-7x7",
    "k3s1p1-cip1-c64-14x14", "k3s1p1-cip1-c16-7x7")) + ("int8-pool-avg-k3s1p1-cip0", "int8-pool-avg-k3s2p0-ceil-cip0"))
# a Slice that reverses one whole axis (step -1, torch.flip) ran on the NPU when that axis holds the innermost data:
# the last axis of the conv's NCHW output or of a [1, C, H*W] view of it, or the axis a Transpose before the Slice
# brought there from the innermost ([1, H, W, C]'s W, [1, H*W, C]'s tokens); the reversal of any other axis, and every
# step 2 (one axis or two, on 4-D and 3-D views, from start 0 or 1), ran on the CPU
# After a MatMul, a 3-D [1, N, C] result reversed along N ran on the NPU and along C on the CPU: the toolkit runs the
# MatMul with C as channels, so N holds the innermost data (slice-tokens-linear-ax1-sm1, -ax2-sm1)
SLICE_FLIP = Ev((), tuple(f"slice-{v}-ax{a}-sm1" for v, n in (("nchw", 4), ("nhwc", 4), ("tokens", 3), ("flat", 3), ("tokens-linear", 3))
                          for a in range(1, n)) + ("int8-slice-nchw-ax3-sm1", "int8-slice-nhwc-ax2-sm1"))
# A strided Slice (step 2, one or two axes, start 0 or 1, also int8) of a 4-D grid that a Reshape made of a MatMul's
# [1, N, C] output ran on the NPU; the same Slice of a grid reshaped from Transposed conv tokens, or of the MatMul's 3-D
# output itself, ran on the CPU. Why the MatMul's output layout decides is not known; the condition is the sweep's
SLICE_MATMUL_GRID = Ev((), tuple(f"slice-grid{v}-{t}" for v in ("", "-linear") for t in (
    "ax1-s2", "ax2-s2", "ax12-s2", "ax12-s2-off1", "ax3-s2", "ax12-s2-c32-14x14")) + (
    "slice-tokens-linear-ax1-s2", "slice-tokens-linear-ax2-s2", "int8-slice-grid-linear-ax12-s2", "int8-slice-grid-ax12-s2"))


def resize_linear_mode(ctm: str, lim) -> bool:
    """Whether a linear Resize with this coordinate_transformation_mode can run on the NPU (RESIZE_LINEAR)."""
    return ctm in (lim["resize_linear_modes"] if cal.fitted(lim, RESIZE_LINEAR) else DOC_LINEAR_MODES)


def resize_down(factor: int, lim) -> bool:
    """A linear downscale by an integer factor in resize_down_scales ran on the NPU (RESIZE_LINEAR: x0.5)."""
    return factor in lim["resize_down_scales"] and cal.fitted(lim, RESIZE_LINEAR)


def avgpool_exclude_pad(node, lim) -> str | None:
    """AveragePool with count_include_pad=0 whose windows reach into padding (explicit pads, or a ceil_mode partial
    window): the CPU (AVGPOOL_EXCLUDE_PAD)."""
    from .rockchip_socs import ceil_pool

    if int(node.attr("count_include_pad", 0) or 0) or not cal.fitted(lim, AVGPOOL_EXCLUDE_PAD):
        return None
    if any(int(x) for x in (node.attr("pads") or [])):
        return "count_include_pad=0 with pads"
    if not lim["avgpool_ceil_window_cpu"]:
        return None
    return "count_include_pad=0 with a ceil_mode partial window" if ceil_pool(node, lim) else None


def slice_flip(node, lim) -> bool:
    """A Slice reversing one whole axis that holds the innermost data, seen through a Transpose before it (SLICE_FLIP)."""
    x = node.input_shape(0)
    starts, ends, steps = (common.const_ints(node, i) for i in (1, 2, 4))
    axes = common.const_ints(node, 3) if node.inputs[3] else [0]
    if not lim["slice_flip_npu"] or not cal.fitted(lim, SLICE_FLIP):
        return False
    if not x or None in (starts, ends, steps, axes) or len(steps) != 1 or steps[0] != -1:
        return False
    a, n = common.norm_axis(axes[0], len(x)), x[common.norm_axis(axes[0], len(x))]
    if not isinstance(n, int) or not (starts[0] >= n - 1 or starts[0] == -1) or ends[0] > -n - 1:
        return False  # not the whole axis
    src = node.graph.producer(node.inputs[0])
    if src is not None and src.op_type == "Transpose":
        perm = common.transpose_perm(src)
        a = perm[a] if perm and a < len(perm) else a
    if src is not None and src.op_type == "MatMul" and len(x) == 3:
        return a == 1  # the MatMul's C is its channel axis: N holds the innermost data
    return a == len(x) - 1


def strided_matmul_grid(node, lim) -> bool:
    """A strided Slice (positive steps) of a 4-D tensor that a Reshape made of a MatMul's output (SLICE_MATMUL_GRID)."""
    if not lim["slice_matmul_grid_npu"] or not cal.fitted(lim, SLICE_MATMUL_GRID) or len(node.input_shape(0) or ()) != 4:
        return False
    steps = common.const_ints(node, 4)
    src = node.graph.producer(node.inputs[0])
    if not steps or any(sp < 1 for sp in steps) or src is None or src.op_type != "Reshape":
        return False
    mm = node.graph.producer(src.inputs[0]) if src.inputs and src.inputs[0] else None
    return mm is not None and mm.op_type == "MatMul"

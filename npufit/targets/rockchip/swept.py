"""RK3588 conditions measured by the attribute sweeps (source CAL-R: benchmarks/calibration/rknn_sweep.py and
rknn_sweep2.py, cases merged into docs/calibration/rk3588-cases.json; the deciding cases also compiled for rk3576,
rk3566, rv1106 into docs/calibration/<soc>-cases.json). Each condition names its cases (cal.Evidence); fitted.EVIDENCE
lists them with the corpus-fitted ones, and tests/test_calibration_records.py checks every cited case is recorded."""

from __future__ import annotations

from ...graph import Graph, NodeView, quant
from .. import calibration as cal
from .. import common, patterns
from ..base import CompositeMatch, Limits

Ev = cal.Evidence

# The sweep cases are float16, and int8 for the deciding ones: conv 1x1 -> the op -> conv 1x1, every attribute
# combination on both sides of each condition. They rest on cases alone (no corpus family shows them), so the
# corpus-only LOFO score falls back to the 2.3.2 document where they are held out.
_RESIZE_LINEAR = tuple(
    f"resize-linear-{m}-{t}"
    for m in ("half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel")
    for t in ("x2", "x4", "x1.5", "x0.5", "sizes-x2")
)
# linear Resize: align_corners ran on the CPU at every scale (2, 4, 1.5, 0.5, 2 given as sizes, 8x8 and 16x16 inputs,
# 6x10 by 4); half_pixel, pytorch_half_pixel and asymmetric ran on the NPU at 2, 4 and 0.5, on the CPU at 1.5 (nearest
# ran on the NPU in all 20 of its cases, every mode and scale)
RESIZE_LINEAR = Ev(
    (),
    _RESIZE_LINEAR
    + (
        "resize-linear-align_corners-x2-c32-16x16",
        "resize-linear-align_corners-sizes-x4-c16-6x10",
        "resize-linear-half_pixel-x2-c32-16x16",
        "resize-linear-half_pixel-sizes-x4-c16-6x10",
        "int8-resize-linear-align_corners-x2",
        "int8-resize-linear-asymmetric-x2",
    ),
)
DOC_LINEAR_MODES = ("half_pixel", "pytorch_half_pixel", "align_corners")  # the 2.3.2 document's, without the sweep
# AveragePool with count_include_pad=0 over padding ran on the CPU: kernels 2, 3, 5, 7, strides 1 and 2, symmetric and
# asymmetric pads, and a ceil_mode partial window with no pads; the same pools with count_include_pad=1, and
# count_include_pad=0 without pads (k2s2, k3s1), ran on the NPU, as every MaxPool did
AVGPOOL_EXCLUDE_PAD = Ev(
    (),
    tuple(
        f"pool-avg-{c}"
        for c in (
            "k3s1p1-cip0",
            "k3s1p1-cip1",
            "k3s2p1-cip0",
            "k3s2p1-cip1",
            "k5s1p2-cip0",
            "k5s1p2-cip1",
            "k7s1p3-cip0",
            "k7s1p3-cip1",
            "k2s2p0-cip0",
            "k3s1p0-cip0",
            "k2s1p0011-cip0",
            "k2s1p0011-cip1",
            "k3s2p1100-cip0",
            "k3s2p1100-cip1",
            "k3s2p0-ceil-cip0",
            "k3s2p1-ceil-cip0",
            "k3s2p0-ceil-cip1",
            "k3s2p1-ceil-cip1",
            "k3s1p1-cip0-c64-14x14",
            "k3s1p1-cip0-c16-7x7",
            "k3s1p1-cip1-c64-14x14",
            "k3s1p1-cip1-c16-7x7",
        )
    )
    + ("int8-pool-avg-k3s1p1-cip0", "int8-pool-avg-k3s2p0-ceil-cip0"),
)
# a Slice that reverses one whole axis (step -1, torch.flip) ran on the NPU when that axis holds the innermost data:
# the last axis of the conv's NCHW output or of a [1, C, H*W] view of it, or the axis a Transpose before the Slice
# brought there from the innermost ([1, H, W, C]'s W, [1, H*W, C]'s tokens); the reversal of any other axis, and every
# step 2 (one axis or two, on 4-D and 3-D views, from start 0 or 1), ran on the CPU
# After a MatMul, a 3-D [1, N, C] result reversed along N ran on the NPU and along C on the CPU: the toolkit runs the
# MatMul with C as channels, so N holds the innermost data (slice-tokens-linear-ax1-sm1, -ax2-sm1)
SLICE_FLIP = Ev(
    (),
    tuple(
        f"slice-{v}-ax{a}-sm1"
        for v, n in (("nchw", 4), ("nhwc", 4), ("tokens", 3), ("flat", 3), ("tokens-linear", 3))
        for a in range(1, n)
    )
    + ("int8-slice-nchw-ax3-sm1", "int8-slice-nhwc-ax2-sm1"),
)
# A strided Slice (step 2, one or two axes, start 0 or 1, also int8) of a 4-D grid that a Reshape made of a MatMul's
# [1, N, C] output ran on the NPU; the same Slice of a grid reshaped from Transposed conv tokens, or of the MatMul's 3-D
# output itself, ran on the CPU. Why the MatMul's output layout decides is not known; the condition is the sweep's
SLICE_MATMUL_GRID = Ev(
    (),
    tuple(
        f"slice-grid{v}-{t}"
        for v in ("", "-linear")
        for t in ("ax1-s2", "ax2-s2", "ax12-s2", "ax12-s2-off1", "ax3-s2", "ax12-s2-c32-14x14")
    )
    + (
        "slice-tokens-linear-ax1-s2",
        "slice-tokens-linear-ax2-s2",
        "int8-slice-grid-linear-ax12-s2",
        "int8-slice-grid-ax12-s2",
    ),
)


def resize_linear_mode(ctm: str, lim: Limits) -> bool:
    """Whether a linear Resize with this coordinate_transformation_mode can run on the NPU (RESIZE_LINEAR)."""
    return ctm in (lim["resize_linear_modes"] if cal.fitted(lim, RESIZE_LINEAR) else DOC_LINEAR_MODES)


def resize_down(factor: int, lim: Limits) -> bool:
    """A linear downscale by an integer factor in resize_down_scales ran on the NPU (RESIZE_LINEAR: x0.5)."""
    return factor in lim["resize_down_scales"] and cal.fitted(lim, RESIZE_LINEAR)


def avgpool_exclude_pad(node: NodeView, lim: Limits) -> str | None:
    """AveragePool with count_include_pad=0 whose windows reach into padding (explicit pads, or a ceil_mode partial
    window): the CPU (AVGPOOL_EXCLUDE_PAD)."""
    if int(node.attr("count_include_pad", 0) or 0) or not cal.fitted(lim, AVGPOOL_EXCLUDE_PAD):
        return None
    if any(int(x) for x in (node.attr("pads") or [])):
        return "count_include_pad=0 with pads"
    if not lim["avgpool_ceil_window_cpu"]:
        return None
    return "count_include_pad=0 with a ceil_mode partial window" if ceil_pool(node, lim) else None


def ceil_pool(node: NodeView, lim: Limits) -> str | None:
    """ceil_mode=1 that changes the output size (an extra, partial window at the edge)."""
    x, y = node.input_shape(0), node.output_shape(0)
    if (
        not int(node.attr("ceil_mode", 0) or 0)
        or not x
        or not y
        or not all(isinstance(d, int) for d in list(x[2:]) + list(y[2:]))
    ):
        return None
    k, st = list(node.attr("kernel_shape") or []), list(node.attr("strides") or [1] * len(x[2:]))
    p = list(node.attr("pads") or [0] * 2 * len(k))
    floor = [(x[2 + i] + p[i] + p[i + len(k)] - k[i]) // st[i] + 1 for i in range(len(k))]
    return None if list(y[2:]) == floor else f"ceil_mode=1 gives {list(y[2:])} where floor gives {floor}"


def slice_flip(node: NodeView, lim: Limits) -> bool:
    """A Slice reversing one whole axis that holds the innermost data, seen through a Transpose before it
    (SLICE_FLIP)."""
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


def strided_matmul_grid(node: NodeView, lim: Limits) -> bool:
    """A strided Slice (positive steps) of a 4-D tensor that a Reshape made of a MatMul's output (SLICE_MATMUL_GRID)."""
    if (
        not lim["slice_matmul_grid_npu"]
        or not cal.fitted(lim, SLICE_MATMUL_GRID)
        or len(node.input_shape(0) or ()) != 4
    ):
        return False
    steps = common.const_ints(node, 4)
    src = node.graph.producer(node.inputs[0])
    if not steps or any(sp < 1 for sp in steps) or src is None or src.op_type != "Reshape":
        return False
    mm = node.graph.producer(src.inputs[0]) if src.inputs and src.inputs[0] else None
    return mm is not None and mm.op_type == "MatMul"


# -- second round (rknn_sweep2.py) -------------------------------------------------------------------------------------
# Static shape arithmetic (Shape -> Gather -> Unsqueeze -> Mul -> Concat -> Reshape; Shape -> Cast -> Div -> Ceil -> Mul
# -> Sub -> Cast -> Concat -> Pad; ConstantOfShape of a Shape) was folded by rknn.build, as npufit's folding judges it
# (shapechain-* cases). On integer data computed at run time, the dtype decides:
# an int32 Add or Sub of a constant ran on the NPU, int64 on the CPU; an integer Mul ran on the CPU in both
INT32_ADD = Ev(
    (),
    (
        "intdata-argmax-int32-add",
        "intdata-cast-int32-add",
        "intdata-cast-int32-sub",
        "intdata-argmax-int64-add",
        "intdata-cast-int64-add",
        "intdata-cast-int64-sub",
        "intdata-cast-int32-mul",
        "intdata-cast-int64-mul",
        "int8-intdata-argmax-int64-add",
        "int8-intdata-cast-int64-add",
    ),
)
# a Transpose of int64 and of int32 data ran on the NPU
INT_TRANSPOSE = Ev((), ("intdata-cast-int64-transpose", "intdata-cast-int32-transpose"))
# a Cast from int32 to float ran on the NPU; float -> int32 / int64, int64 -> int32 and int64 -> float on the CPU
CAST_INT32_FLOAT = Ev(
    (), ("intdata-argmax-int32-cast", "intdata-cast-int32-cast", "intdata-argmax-int64-cast", "intdata-cast-int64-cast")
)
# exact GELU: x / sqrt 2 -> Erf -> + 1 -> * x -> * 0.5, and 0.5 * x first, fused (Erf on the NPU); the same with a Mul
# by
# 1 / sqrt 2 for the Div, Erf -> + 1 alone, and a standalone or scaled Erf ran it on the CPU
GELU_DIV = Ev(
    (),
    (
        "erf-gelu",
        "erf-gelu-mul",
        "erf-gelu-half-first",
        "erf-erf-add",
        "erf-tokens-gelu",
        "erf-alone",
        "erf-scaled",
        "erf-tokens-alone",
        "int8-erf-gelu",
        "int8-erf-alone",
    ),
)
# a Gather by constant 2-D indices ran on the NPU on axes 2 and 3 of a 4-D tensor and 1 and 2 of 3-D tokens, as scalar
# and 1-D indices did on every axis; a Gather by a TopK's indices (computed at run time) ran on the CPU
GATHER_2D = Ev(
    (),
    tuple(
        f"gather-{v}-ax{a}-{t}"
        for v, axes in (("nchw", (1, 2, 3)), ("tokens", (1, 2)))
        for a in axes
        for t in ("scalar", "1d", "2d")
        if (v, a, t) != ("nchw", 1, "2d")
    )
    + ("gather-topk-queries", "gather-topk-queries-2d", "int8-gather-nchw-ax2-2d", "int8-gather-tokens-ax1-1d"),
)

_INTS = ("int32", "int64")


def int_on_npu(node: NodeView, d: str, lim: Limits) -> bool:
    """An integer op that ran on the NPU: an int32 Add / Sub (INT32_ADD), a Transpose of integer data
    (INT_TRANSPOSE)."""
    if d not in _INTS:
        return False
    if node.op_type == "Transpose":
        return lim["int_transpose_npu"] and cal.fitted(lim, INT_TRANSPOSE)
    return d == "int32" and node.op_type in lim["int32_npu_ops"] and cal.fitted(lim, INT32_ADD)


def cast_on_npu(node: NodeView, lim: Limits) -> bool:
    """A Cast from int32 to a float type (CAST_INT32_FLOAT)."""
    return (
        node.input_dtype(0) == "int32"
        and node.output_dtype(0) in quant.FLOAT_DTYPES
        and node.output_dtype(0) in lim["cast_int32_npu_to"]
        and cal.fitted(lim, CAST_INT32_FLOAT)
    )


def gather_rank2(node: NodeView, lim: Limits) -> bool:
    """Indices of rank 2 (GATHER_2D; computed ones go to the CPU by gather_indices)."""
    return cal.fitted(lim, GATHER_2D)


def match_gelu_div(graph: Graph) -> list[CompositeMatch]:
    """The exact GELU as rknn.build fuses it (GELU_DIV): Div by sqrt 2 -> Erf -> Add 1, then x * (..) * 0.5 in either
    order, or (0.5 * x) * (..); with a Mul by 1 / sqrt 2 for the Div the Erf ran on the CPU."""
    out = [m for m in patterns.match_gelu_erf(graph) if m.nodes[0].op_type == "Div"]
    done = {m.nodes[1].name for m in out}
    for erf in patterns._anchors(graph, "Erf"):
        if erf.name in done:
            continue
        pre = patterns.producer_op(graph, erf.inputs[0], ("Div",))
        if pre is None or len(graph.consumers(pre.outputs[0])) != 1 or graph.tensor(pre.inputs[0]).is_const:
            continue
        x = pre.inputs[0]
        if not common.close(patterns.scalar_operand(pre, x), 2**0.5):
            continue
        add = patterns.sole_consumer(graph, erf, ("Add",))
        mul = patterns.sole_consumer(graph, add, ("Mul",)) if add is not None else None
        if mul is None or not common.close(patterns.scalar_operand(add, erf.outputs[0]), 1.0):
            continue
        other = mul.inputs[1 - mul.inputs.index(add.outputs[0])]
        half = patterns.producer_op(graph, other, ("Mul",))
        if half is None or x not in half.inputs or not common.close(patterns.scalar_operand(half, x), 0.5):
            continue
        out.append(CompositeMatch((pre, erf, add, half, mul), "GELU (erf form)"))
    return out


# Pad of a 3-D [1, C, T] tensor between two 1-D convs: constant, reflect and edge at the start, the end or both ends of
# T, and at the start of C, ran on the NPU (edge too, which the 2.3.2 document does not list); reflect and edge at the
# end of C ran on the CPU, constant there on the NPU (the corpus's constant end-of-axis-1 pads, PAD3, on the CPU, had no
# Conv producing their tensor)
PAD3_SWEEP = Ev(
    (),
    tuple(
        f"pad3-{m}-{t}"
        for m in ("constant", "reflect", "edge")
        for t in ("t-start", "t-end", "t-both", "c-end", "c-start", "t-both-c8-t256")
    )
    + ("int8-pad3-reflect-t-both", "int8-pad3-constant-t-end"),
)


def pad_mode_npu(mode: str, lim: Limits) -> bool:
    """An edge Pad ran on the NPU (PAD3_SWEEP); constant and reflect are the document's."""
    return mode in ("constant", "reflect") or (mode in lim["pad_npu_modes"] and cal.fitted(lim, PAD3_SWEEP))


def pad3_end(node: NodeView, mode: str, lim: Limits, corpus_why: str | None) -> str | None:
    """A 3-D Pad at the end of axis 1: reflect / edge on the CPU (PAD3_SWEEP); constant as the corpus's PAD3 condition
    says (`corpus_why`) unless a Conv produced the tensor, whose axis 1 is then its channel axis (PAD3_SWEEP)."""
    if not cal.fitted(lim, PAD3_SWEEP) or not lim["pad3_end_sweep"]:
        return corpus_why
    src = node.graph.producer(node.inputs[0]) if node.inputs and node.inputs[0] else None
    if mode == "constant":
        return None if src is not None and src.op_type == "Conv" else corpus_why
    x = node.input_shape(0)
    pads = common.const_ints(node, 1) if len(node.inputs) > 1 and node.inputs[1] else None
    if x and len(x) == 3 and pads and len(pads) == 6 and pads[4]:
        return f"{mode} pad at the end of axis 1 of a 3-D tensor"
    return None


EVIDENCE = {k: v for k, v in globals().items() if isinstance(v, cal.Evidence)}

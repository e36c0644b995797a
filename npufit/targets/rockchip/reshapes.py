"""Reshapes that split the innermost axis (source CAL-R: rknn-toolkit2 2.5.0 builds of the calibration corpus and of
the split-last, patch unfold / fold and reshape-chain cases of docs/calibration/rk3588-cases.json): when such a
Reshape runs on the CPU. Its evidence is in EVIDENCE with the other fitted conditions (fitted.py)."""

from __future__ import annotations

from ...graph import NodeView, quant
from .. import calibration as cal
from .. import common
from ..base import Limits

Ev = cal.Evidence


def from_npu(node: NodeView) -> bool:
    """The node reads no model input directly: its data came from NPU ops."""
    return not any(t in node.graph.input_names for t in node.inputs if t)


# Reshape splitting the innermost axis: wavlm's gated position bias [1, 2, 99, 8] -> [1, 2, 99, 2, 4] ran
# on the CPU in the int8 build and on the NPU in the float16 build (audio-rnn); 27 cases (rknn_cases.py split-last-*,
# T = 8..100, W = 4..24, both builds) bound it: the NPU unless the split's innermost part is under 8 elements and
# neither W nor T is a multiple of 16 bytes' worth of elements (int8: 16, float16: 8). The sweep's patch unfold / fold
# (rknn_sweep.py, MobileViT-style, both builds) shows the same bound on 4-D -> 4-D splits that fold H into the batch
# and on the merges back, and its reshape chains show the toolkit folding a split that an element-wise op with a
# constant separates from its inverse
SPLIT_INNERMOST = Ev(
    ("audio-rnn",),
    tuple(
        f"int8-split-last-{c}"
        for c in (
            "2x4",
            "4x4",
            "2x8",
            "6x4",
            "3x8",
            "2x7",
            "2x9",
            "2x2",
            "3x6",
            "2x12",
            "2x4-no-linear",
            "t96-2x4",
            "t64-2x4",
            "t16-2x6",
            "t8-2x4",
            "t24-2x4",
            "t100-2x4",
        )
    )
    + tuple(f"split-last-{c}" for c in ("2x4", "2x2", "3x4", "4x2", "2x5", "2x9", "3x6", "2x10", "t96-3x4", "t8-2x2"))
    + tuple(
        f"{b}reshape-unfold-{c}"
        for b, c in (
            ("", "fold-p2-c16-8x8"),
            ("", "fold-p2-c32-8x8"),
            ("", "fold-p2-c8-16x16"),
            ("", "fold-p2-c16-4x4"),
            ("", "p2-c16-8x8"),
            ("", "p2-c32-8x8"),
            ("", "fold-p4-c16-8x8"),
            ("int8-", "fold-p2-c16-8x8"),
            ("int8-", "fold-p2-c32-8x8"),
            ("int8-", "fold-p2-c8-16x16"),
            ("int8-", "p2-c16-8x8"),
        )
    )
    + (
        "reshape-4to4-batch-ch",
        "reshape-4to5-split-w",
        "reshape-4to6-split-hw",
        "reshape-4to5-batch",
        "reshape-4to6-split-c-hw",
        "int8-reshape-4to4-batch-ch",
        "int8-reshape-4to6-split-hw",
    ),
)


EVIDENCE = {k: v for k, v in globals().items() if isinstance(v, cal.Evidence)}


def _inner_split(x, y) -> tuple[int, int] | None:
    """(W, k) when `y` splits the innermost axis W of `x` into trailing axes that end in k (1 < k < W; trailing size-1
    axes of `y` left out), else None."""
    y = list(y)
    while len(y) > 1 and y[-1] == 1:
        y.pop()
    w, k = x[-1], y[-1]
    if not 1 < k < w or w % k:
        return None
    n = 1
    for d in reversed(y):
        n *= d
        if n >= w:
            return (w, k) if n == w else None
    return None


def _pure_merge(x, y) -> bool:
    """`x` -> `y` only merges trailing axes of `x` into the innermost axis of `y`, the other axes kept (size-1 axes
    aside). The fold merges of the sweep also move data between outer axes; a pure merge ran on the NPU in
    RT-DETR's deformable attention ([1, 2, 20, 3, 4] -> [2, 1, 20, 12], float16:
    tests/test_compile_rk3588_agreement.py's real compile), so SPLIT_INNERMOST is not applied to it."""
    n, i = 1, len(x)
    while i > 0 and n < y[-1]:
        i -= 1
        n *= x[i]
    return n == y[-1] and [d for d in x[:i] if d != 1] == [d for d in y[:-1] if d != 1]


def _folds_around_const(node: NodeView) -> bool:
    """A Reshape on either side of an element-wise op with a constant operand, whose other side restores the shape:
    rknn.build folds the pair into the op (sweep cases reshape-4to4-batch-ch, -4to6-split-hw: int8 and float16)."""
    g = node.graph

    def const_op(n):
        return n is not None and n.op_type in ("Add", "Sub", "Mul", "Div") and len(common.activation_inputs(n)) == 1

    outs = g.consumers(node.outputs[0]) if node.outputs and node.outputs[0] else []
    if len(outs) == 1 and const_op(outs[0]):
        after = g.consumers(outs[0].outputs[0])
        if (
            len(after) == 1
            and after[0].op_type == "Reshape"
            and list(after[0].output_shape(0) or ()) == list(node.input_shape(0) or [None])
        ):
            return True
    op = g.producer(node.inputs[0]) if node.inputs and node.inputs[0] else None
    before = g.producer(op.inputs[0]) if const_op(op) and op.inputs[0] else None
    return (
        before is not None
        and before.op_type == "Reshape"
        and list(before.input_shape(0) or ()) == list(node.output_shape(0) or [None])
    )


def split_innermost(node: NodeView, lim: Limits) -> str | None:
    """A Reshape that splits the innermost axis W of a 4-D NPU tensor [.., T, W] into parts ending in k (or, the other
    way, merges such parts into the innermost W of a 4-D result) runs on the CPU when k < 8 and neither W nor T is a
    multiple of 16 bytes of elements (8 in float16, 16 in int8) (SPLIT_INNERMOST). wavlm-like 4-D -> 5-D splits: int8
    [.., 99, 8] -> [.., 99, 2, 4] on the CPU, [.., 96 or 64, 8] and [.., 99, 16] as 4x4 on the NPU, [.., 99, 24] as 6x4
    on the CPU and as 3x8 on the NPU; float16 [.., 99, 8] as 2x4 on the NPU, [.., 99, 12] as 3x4 on the CPU. The patch
    unfold / fold of the sweep ([1, C, H, W] <-> [C*H/2, 2, W/2, 2]): float16 W = H = 4 and int8 W = H = 8 on the CPU,
    float16 8 and int8 16 on the NPU. Two sweep reshapes disagree (allowances): the p=4 fold's [1, 16, 4, 16] ->
    [32, 2, 4, 4] ran on the CPU (W = 16), the 4x4 unfold's merge [32, 2, 2, 2] -> [1, 16, 4, 4] on the NPU."""
    x, y = node.input_shape(0), node.output_shape(0)
    if (
        node.op_type != "Reshape"
        or not x
        or not y
        or not from_npu(node)
        or not all(isinstance(d, int) for d in list(x) + list(y))
    ):
        return None
    if len(x) == 4 and (s := _inner_split(x, y)) is not None:
        w, k, t = s[0], s[1], x[-2]
    elif len(y) == 4 and (s := _inner_split(y, x)) is not None and not _pure_merge(x, y):
        w, k, t = s[0], s[1], y[-2]
    else:
        return None
    if k >= lim["split_min_inner"] or not cal.fitted(lim, SPLIT_INNERMOST) or _folds_around_const(node):
        return None
    row = lim["split_row_bytes"] // (1 if quant.exec_dtype(node) in ("int8", "uint8") else 2)
    if w % row == 0 or t % row == 0:
        return None
    return f"splits the innermost {w} into parts of {k}: neither {w} nor {t} is a multiple of {row}"

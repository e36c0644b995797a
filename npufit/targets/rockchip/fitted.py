"""RK3588 conditions fitted to measured compiles (source CAL-R: rknn-toolkit2 2.5.0 builds of the calibration corpus,
records docs/calibration/rk3588-{fp16,int8}-op*.json, and of the synthetic cases of docs/calibration/rk3588-cases.json,
benchmarks/calibration/rknn_cases.py).

Each condition names its evidence (cal.Evidence): the corpus families whose records show it, and the cases that show
it on graphs outside every family. Leave-one-family-out scoring switches off what only the held-out family showed
(see targets/calibration.py); tests/test_calibration_records.py checks that every cited case is recorded and that
the profile agrees with each one. The last section holds the no-ops and rewrites rknn.build applies (RKNN-C, CAL-R)."""

from __future__ import annotations

import math

import numpy as np

from ...graph import Graph, NodeView
from .. import calibration as cal
from .. import common
from ..base import Limits
from . import reshapes, swept
from .reshapes import from_npu

Ev = cal.Evidence

# Rank 5 on the NPU: every 5-D op whose data came from another op (not straight from a model input) ran there, in three
# families: yolov5_anchor's anchor decode on [1, 3, 17, 17, 9] (Sigmoid, Slice, Pow, Mul, Concat on axis 4; detector),
# hiera's 5-D attention (Mul, MatMul, Softmax; transformer), wavlm's gated relative position bias (ReduceSum;
# audio-rnn).
# A 5-D model input stays on the CPU (PROBE-R slice_axis4_5d: axes 2-4), and so does rank 6 (RKNN-C: RT-DETR's 6-D Mul).
RANK5 = Ev(("detector", "transformer", "audio-rnn"))
# 6-D transposes that keep the innermost axis: swinv2/swin2sr window partitions, hiera's unroll (transformer) and 21
# cases (rknn_cases.py: windows 2-8, 8-32 channels, one to six axes > 1; the innermost axis moved, as PROBE-R's
# pixel_unshuffle, on the CPU). 19 of the 21 agree with _transpose6; the other two are allowances.
TRANSPOSE6 = Ev(
    ("transformer",),
    (
        "transpose6-swin-4x4",
        "transpose6-swin-2x8",
        "transpose6-swin-7x7",
        "transpose6-unroll-5axes",
        "transpose6-unroll-lead4",
        "transpose6-unroll-6axes",
        "transpose6-swin-6axes",
        "transpose6-swin-7x7-c16",
        "transpose6-swin-7x7-c32",
        "transpose6-swin-8x8-c24",
        "transpose6-swin-6x6-c16",
        "transpose6-swin-5x5-c16",
        "transpose6-swin-5x5-c8",
        "transpose6-swin-3win",
        "transpose6-hiera-lead4",
        "transpose6-hiera-lead16",
        "transpose6-hiera-lead4-b",
        "transpose6-hiera-lead8-c8",
        "transpose6-swin-4x4-c12",
        "transpose6-moves-innermost",
        "transpose6-moves-innermost-b",
    ),
)
# 6-D Split: hiera's q/k/v split (transformer) and four cases, along the outermost, an inner and the innermost axis
SPLIT6 = Ev(("transformer",), ("split6-outermost", "split6-outermost-lead1", "split6-inner", "split6-innermost"))
# RANK5's 5-D evidence carried one rank up, to the layout ops only: a Split, and a Transpose that keeps the innermost
# axis
# (PROBE-R's 6-D pixel_unshuffle, which moves it, ran on the CPU, and so did RKNN-C's 6-D Mul). This is the condition a
# fit without the 6-D records and cases would make; TRANSPOSE6 and SPLIT6 refine it where their evidence is used, so it
# decides only when both are held out (benchmarks/calibration/score.py, "LOFO corpus-only" of the transformer family).
RANK6_LAYOUT = Ev(RANK5.families)
SOFTMAX_LAST = Ev(("transformer", "detector"))
# step slices: swinv2's patch merging (transformer); cases: YOLOv5's Focus and Swin's merging (NPU), lone strided
# slices and two of four phases (CPU)
SLICE_PHASES = Ev(
    ("transformer",),
    (
        "slice-step2-hw",
        "slice-step2-c",
        "slice-step3-w",
        "slice-step4-h",
        "slice-focus-nchw",
        "slice-merge-nhwc",
        "slice-merge-nhwc-2phases",
        "slice-focus-nchw-2phases",
    ),
)
REDUCE_L2 = Ev(("cnn", "transformer"))
EINSUM = Ev(
    ("transformer",),
    ("einsum-attention", "einsum-relpos", "einsum-channels", "einsum-batched", "einsum-ellipsis", "einsum-3operands"),
)
UNIT_SQUEEZE = Ev(("cnn", "transformer"))
SCATTER_ND = Ev(("detector",), ("scatternd-once", "scatternd-chained"))
# a second ScatterND over the first one's cells: conditional_detr's box update writes [..., :2] of [1, 20, 4] twice, the
# second time with values that do not read the first write, and that one ran on the CPU (detector); the cases show it
# on 3-D and 4-D tensors with an innermost axis of 4 (same and partly overlapping cells), and show the NPU where the
# values read the first write, where the innermost axis has 8 or 16 elements, and where the cells do not overlap;
# dab_detr's pair that overwrites the whole [1, 1, 20, 4] was folded away, as the cases that do so
SCATTER_OVERWRITE = Ev(
    ("detector",),
    (
        "scatternd-same-region",
        "scatternd-overlap-3d-inner4",
        "scatternd-overlap-3d-inner4-reads",
        "scatternd-overlap-4d-inner4",
        "scatternd-overlap-conv-w4",
        "scatternd-overlap-conv-w4-reads",
        "scatternd-overlap-3d-inner8",
        "scatternd-overlap-4d-inner16",
        "scatternd-partial-3d-inner4",
        "scatternd-partial-3d-inner4-reads",
        "scatternd-apart-3d-inner4",
        "scatternd-apart-3d-inner4-reads",
        "scatternd-apart-3d-inner8",
        "scatternd-whole-3d-inner4",
        "scatternd-whole-4d-inner4",
    ),
)
SCATTER_MIN_INNER = 8  # an innermost axis of this many elements kept the second write on the NPU
PAD3 = Ev(("transformer", "audio-rnn"))
INT8_DIV = Ev(("cnn", "transformer"))
DEPTH_TO_SPACE = Ev(
    ("cnn",),
    (
        "d2s-x3-to1-output",
        "d2s-x2-to1-output",
        "d2s-x3-to8-output",
        "d2s-x3-to1-conv",
        "d2s-x2-to8-output",
        "d2s-x4-to2-conv",
        "d2s-x6-to1-conv",
        "d2s-x8-to1-conv",
    ),
)

# Gather by indices computed at run time: 11 of 11 in the corpus ran on the CPU (embedding lookups, roberta's position
# ids, clip_text's end-of-text pooling by an ArgMax index; transformer); cases: the same by constant index on the NPU
GATHER_RUNTIME = Ev(("transformer",), ("gather-const-index", "gather-runtime-index"))

# no-ops rknn.build deletes ('remove_invalid_reshape', 'remove_invalid_add', 'bypass_two_reshape' in its log): a
# Reshape to
# the shape it already has had no layer in all 19 such activation Reshapes of the fp16 corpus (hubert, sew, unispeech,
# wavlm: audio-rnn; conditional_detr, dab_detr: detector; clip_text: transformer); an Add of a constant zero that does
# not broadcast had none where no MatMul took it in as a bias (layer-norm Adds of hubert, sew, wavlm, unispeech, ast;
# dab_detr's box head; beit's attention bias; clip_text's int64 index offset)
NOOP_RESHAPE = Ev(("audio-rnn", "detector", "transformer"))
NOOP_ADD = Ev(("audio-rnn", "detector", "transformer"))

# every condition's evidence, with the attribute sweeps' (swept.py) and the Reshape splits' (reshapes.py)
EVIDENCE = {
    **{k: v for k, v in globals().items() if isinstance(v, cal.Evidence)},
    **swept.EVIDENCE,
    **reshapes.EVIDENCE,
}


def rank5_from_npu(node: NodeView, r: int, lim: Limits) -> bool:
    """A rank-5 op that reads no model input directly (the corpus's 5-D tensors all came from NPU ops)."""
    return r == lim["rank_from_npu"] and cal.fitted(lim, RANK5) and from_npu(node)


def split_high_rank(node: NodeView, r: int, lim: Limits) -> bool:
    """A 5-D or 6-D Split of an NPU tensor ran on the NPU, along any axis (SPLIT6; RANK6_LAYOUT without it)."""
    return (
        node.op_type == "Split"
        and lim["rank_from_npu"] <= r <= lim["rank_split_max"]
        and (cal.fitted(lim, SPLIT6) or cal.fitted(lim, RANK6_LAYOUT))
        and from_npu(node)
    )


def _transpose6(node: NodeView) -> bool:
    """A transpose that keeps the innermost axis of size > 1 in place and moves no odd-sized axis to a later position:
    Swin's window partition with 4x4, 6x6 and 8x8 windows ran on the NPU, 7x7 (16, 24 and 32 channels) and 5x5
    (16 channels) on the CPU, where the window axis moves past the count of windows; an odd count of windows, which
    moves forward, stayed on the NPU (transpose6-swin-3win). The toolkit rewrites Reshape -> Transpose -> Reshape into
    one 'exWindow' op, and its log does not say what decides: a 5x5 window of 8 channels ran on the NPU and hiera's
    [4, 4, 2, 4, 2, 16] unroll on the CPU, against this condition (allowances in tests/test_calibration_records.py)."""
    x, perm = node.input_shape(0), common.transpose_perm(node)
    t = cal.transpose_keeps_innermost(x, perm)
    if t is None or not t[1]:
        return False
    keep = [a for a in perm if x[a] != 1]
    pos = {a: i for i, a in enumerate(keep)}
    order = sorted(keep)
    return all(x[a] % 2 == 0 for a in keep if pos[a] > order.index(a))


def rank_exempt(node: NodeView, r: int, lim: Limits) -> bool:
    """Ops that ran on the NPU above rank 4 (the profile's other exemptions are in rockchip._rank_exempt)."""
    if node.op_type == "Transpose":
        if r > lim["rank_transpose_max"]:
            return False
        if cal.fitted(lim, TRANSPOSE6):
            return _transpose6(node)
        t = cal.transpose_keeps_innermost(node.input_shape(0), common.transpose_perm(node))
        return t is not None and t[1] and from_npu(node) and cal.fitted(lim, RANK6_LAYOUT)
    return rank5_from_npu(node, r, lim) or split_high_rank(node, r, lim)


def softmax_last_axis(node: NodeView, r, a: int, lim: Limits) -> bool:
    """A softmax over the last axis of a tensor with at most softmax_last_axes (4) axes of size > 1 ran on the NPU:
    hiera's 5-D attention
    and siglip_vision's [2, 1, 64] pooling head (transformer; the toolkit drops size-1 axes), table_transformer's plain
    3-D [2, 4, 4] / [2, 20, 4] attention (detector)."""
    u = cal.nonunit(node.input_shape(0))
    if not r or a != r - 1 or u is None or len(u) > lim["softmax_last_axes"]:
        return False
    return cal.fitted(lim, SOFTMAX_LAST)


def _strided(node: NodeView) -> dict[int, tuple[int, int]] | None:
    """{axis: (start, step)} of a Slice with a step other than 1 that runs to the end of each sliced axis."""
    if node is None or node.op_type != "Slice" or len(node.inputs) < 5 or not node.inputs[4]:
        return None
    x = node.input_shape(0)
    starts, ends, steps = common.const_ints(node, 1), common.const_ints(node, 2), common.const_ints(node, 4)
    axes = common.const_ints(node, 3) if node.inputs[3] else list(range(len(starts or ())))
    if not x or None in (starts, ends, steps, axes) or all(s == 1 for s in steps):
        return None
    out = {}
    for a, st, en, sp in zip(axes, starts, ends, steps):
        a = common.norm_axis(a, len(x))
        if not isinstance(x[a], int) or sp < 1 or not 0 <= st < sp or en < x[a]:
            return None
        out[a] = (st, sp)
    return out


def _phase(tensor: str, graph: Graph) -> tuple[str, dict] | None:
    """(source tensor, {axis: (start, step)}) of a chain of strided Slices producing `tensor`."""
    phase: dict = {}
    node = graph.producer(tensor)
    while (s := _strided(node)) is not None:
        phase.update(s)
        tensor = node.inputs[0]
        node = graph.producer(tensor)
    return (tensor, phase) if phase else None


def space_to_depth(node: NodeView, lim: Limits) -> bool:
    """A strided Slice whose phases are all concatenated again (a space-to-depth reorg: YOLOv5's Focus on NCHW,
    Swin's patch merging on [1, H, W, C]) ran on the NPU; a lone strided slice, or two of four phases, on the CPU."""
    if not cal.fitted(lim, SLICE_PHASES):
        return False
    g, todo, cats = node.graph, [node], {}
    while todo:  # down through the chained strided slices to the one Concat they all feed
        cur = todo.pop()
        for c in g.consumers(cur.outputs[0]):
            if _strided(c) is not None:
                todo.append(c)
            elif c.op_type == "Concat":
                cats[c.name] = c
            else:
                return False
    if len(cats) != 1:
        return False
    phases = [_phase(t, g) for t in next(iter(cats.values())).inputs]
    if any(p is None for p in phases) or len({p[0] for p in phases}) != 1:
        return False
    steps = [{a: sp for a, (_st, sp) in p[1].items()} for p in phases]
    if any(s != steps[0] for s in steps):
        return False
    seen = {tuple(sorted((a, st) for a, (st, _sp) in p[1].items())) for p in phases}
    return len(seen) == len(phases) == math.prod(steps[0].values())


def reduce_l2(node: NodeView, lim: Limits) -> str | None:
    """(convnextv2's GRN, swinv2's and swin2sr's cosine attention; cnn, transformer): every ReduceL2 ran on the
    NPU in float16 and int8 builds, though the 2.3.2 document lists it as a CPU op."""
    return None if cal.fitted(lim, REDUCE_L2) else "ReduceL2 is in the document's CPU op list"


def einsum(node: NodeView, lim: Limits) -> str | None:
    """cvt's attention 'bhlk,bhtk->bhlt' (transformer) and six cases (two and three operands, an ellipsis, relative
    position 'bhwc,hkc->bhwk', 'nchw,kc->nkhw'): the toolkit converts every Einsum measured and runs it on the NPU.
    Without that evidence the 2.3.2 operator list, which has no Einsum, says the converter rejects it."""
    if cal.fitted(lim, EINSUM):
        return None
    return f"equation '{node.attr('equation', '')}' is not in the 2.3.2 operator list"


def unit_channel_squeeze(x, y, lim: Limits) -> bool:
    """glpn's depth map [1, 1, 64, 64] -> [1, 64, 64] (cnn) and siglip_vision's pooled [1, 1, 32] -> [1, 32]
    (transformer):
    an output reshape that only drops size-1 axes of a one-channel tensor whose innermost dimension is on the 8-grid ran
    on the NPU; RKNN-C's RT-DETR [1, 1, 20, 4] -> [1, 20, 4] (innermost 4) and PROBE-R's [1, 12, 1, 1] -> [1, 12] did
    not."""
    return (
        len(x) >= 3
        and x[1] == 1
        and y
        and y[-1] % lim["output_align"] == 0
        and cal.nonunit(x) == cal.nonunit(y)
        and cal.fitted(lim, UNIT_SQUEEZE)
    )


def scatter_nd(node: NodeView, lim: Limits) -> str | None:
    """conditional_detr's and dab_detr's box updates (detector) and two cases (one update, two in a row on one tensor):
    ScatterNDs with constant indices ran on the NPU, except a second write over the first one's cells
    (SCATTER_OVERWRITE)."""
    if not (node.is_const(1) and cal.fitted(lim, SCATTER_ND)):
        return "indices computed at run time"
    return _overwrite(node) if cal.fitted(lim, SCATTER_OVERWRITE) else None


def _cells(node: NodeView) -> tuple[int, set] | None:
    """(index depth, the set of index tuples) a ScatterND with constant indices writes."""
    idx = common.const_array(node, 1)
    if idx is None or idx.ndim < 1 or not idx.shape[-1]:
        return None
    k = idx.shape[-1]
    return k, {tuple(r) for r in idx.reshape(-1, k).tolist()}


def _reads(tensor: str, node: NodeView, graph: Graph) -> bool:
    """Whether `tensor`'s values are computed from `node`'s output: a walk up its producers, each visited once (a Shape
    reads no values, and the export's index plumbing reads the scattered tensor's shape only)."""
    seen, todo = set(), [tensor]
    while todo:
        p = graph.producer(todo.pop())
        if p is None or p.name in seen or p.op_type == "Shape":
            continue
        if p.name == node.name:
            return True
        seen.add(p.name)
        todo += [t for t in p.inputs if t]
    return False


def _overwrite(node: NodeView) -> str | None:
    """A ScatterND on another one's output that writes some of the same cells again, with values not computed from
    that output, on a tensor whose innermost axis is under SCATTER_MIN_INNER elements and which it does not overwrite
    whole: the CPU (SCATTER_OVERWRITE)."""
    g, x = node.graph, node.input_shape(0)
    first = g.producer(node.inputs[0]) if node.inputs and node.inputs[0] else None
    if (
        first is None
        or first.op_type != "ScatterND"
        or not x
        or not isinstance(x[-1], int)
        or x[-1] >= SCATTER_MIN_INNER
    ):
        return None
    mine, theirs = _cells(node), _cells(first)
    if mine is None or theirs is None or mine[0] != theirs[0] or not mine[1] & theirs[1]:
        return None
    if not all(isinstance(d, int) for d in x[: mine[0]]) or len(mine[1]) == math.prod(x[: mine[0]]):
        return None  # a whole overwrite is folded away
    if len(node.inputs) < 3 or _reads(node.inputs[2], first, g):
        return None
    return f"writes cells of [.., {x[-1]}] the ScatterND before it wrote, with values not read from it"


def pad_rank3_axis1(node: NodeView, lim: Limits) -> str | None:
    """mobilebert's embedding pad (transformer) and sew's output pad (audio-rnn): a constant Pad at the end of axis 1
    of a
    3-D tensor ran on the CPU; mobilebert's pad at the start of axis 1 and tcn's causal pads along the last axis
    (audio-rnn) ran on the NPU."""
    x = node.input_shape(0)
    pads = common.const_ints(node, 1) if len(node.inputs) > 1 and node.inputs[1] else None
    if not x or len(x) != 3 or not pads or len(pads) != 6 or not pads[4]:
        return None
    return "pads the end of axis 1 of a 3-D tensor" if cal.fitted(lim, PAD3) else None


def int8_div(node: NodeView, lim: Limits) -> bool:
    """Every Div of the int8 builds ran on the NPU: 101 of them, by constants and by computed tensors (attention
    scaling,
    GRN, normalisations) in 26 cnn and transformer models, none on the CPU (rk3588-int8-op17.json)."""
    return cal.fitted(lim, INT8_DIV)


def depth_to_space(node: NodeView, lim: Limits) -> str | None:
    """espcn's x3 pixel shuffle (cnn) ran on the CPU; in the cases x2, x4 and x8 ran on the NPU, x3 and x6 on the CPU,
    into a model output or a conv, to 1 or 8 channels (PROBE-R's pixel_shuffle: x2 on the NPU)."""
    b = int(node.attr("blocksize", 0))
    if b in lim["d2s_blocks"] or not cal.fitted(lim, DEPTH_TO_SPACE):
        return None
    return f"block size {b}"


def gather_indices(node: NodeView, lim: Limits) -> str | None:
    """A Gather whose indices are computed at run time (not constants) runs on the CPU (GATHER_RUNTIME)."""
    if node.is_const(1) or not cal.fitted(lim, GATHER_RUNTIME):
        return None
    return "indices computed at run time"


# -- ops rknn.build deletes or rewrites (RKNN-C: its log on benchmarks/compile_rk3588.py's models; CAL-R) ----------


def noop_expand(node: NodeView) -> bool:
    """An Expand whose broadcast leaves its input shape unchanged: rknn.build deletes it
    ('remove_invalid_expand', RKNN-C: RT-DETR's int64 Expand of the TopK indices to [1, 1, 1])."""
    if node.op_type != "Expand":
        return False
    x, shape = node.input_shape(0), common.const_ints(node, 1)
    if not x or shape is None or not all(isinstance(d, int) for d in x):
        return False
    try:
        return tuple(np.broadcast_shapes(tuple(x), tuple(shape))) == tuple(x)
    except ValueError:
        return False


def mul_add_to_bn(node: NodeView) -> bool:
    """x * c followed by + c2 / - c2 (constants): rknn.build turns the pair into one BatchNormalization and
    reshapes it to 4-D ('replace_mul_add_by_bn', RKNN-C: RT-DETR's 6-D sampling-grid 2*x-1 ran on the NPU)."""
    if node.op_type != "Mul" or len(common.activation_inputs(node)) != 1:
        return False
    outs = [c for o in node.outputs if o for c in node.graph.consumers(o)]
    return len(outs) == 1 and outs[0].op_type in ("Add", "Sub") and len(common.activation_inputs(outs[0])) == 1


def noop_cast(node: NodeView) -> bool:
    """A Cast to the dtype it already has: rknn.build deletes it ('remove_invalid_cast', RKNN-C: BERT's bool->bool mask
    Cast)."""
    return common.noop_cast(node)


_NOOP_OPS = frozenset({"Reshape", "Add", "Sub"})


def noop(node: NodeView, lim: Limits) -> bool:
    """A Reshape to the shape it already has, or an Add/Sub of a constant zero that does not broadcast: rknn.build
    deletes
    it, whatever its dtype and wherever it stands (NOOP_RESHAPE, NOOP_ADD)."""
    if node.op_type not in _NOOP_OPS:  # asked of every node by the dtype rule: the op first, shapes after
        return False
    x, y = node.input_shape(0), node.output_shape(0)
    if x is None or y is None or not all(isinstance(d, int) for d in x) or list(x) != list(y):
        return False
    if node.op_type == "Reshape":
        return cal.fitted(lim, NOOP_RESHAPE)
    if node.op_type not in ("Add", "Sub") or len(node.inputs) != 2:
        return False
    zero = [i for i in (0, 1) if (v := common.const_array(node, i)) is not None and v.size and not v.any()]
    keep = 0 if zero == [1] else 1 if zero == [0] and node.op_type == "Add" else None
    return keep is not None and list(node.input_shape(keep) or ()) == list(y) and cal.fitted(lim, NOOP_ADD)

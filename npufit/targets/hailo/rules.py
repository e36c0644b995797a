"""Hailo rule functions and Rule objects (shared by hailo8 and hailo8l; ids carry the profile name).

Each check reads its numbers from Profile.limits, so the sentence the user sees is formatted
from the same limits it checks. A check returns None when the node passes, else a short detail.

The "shuffle" rule (Reshape/Flatten/Transpose) is designed from the evidence of targets.md §1c:
every reported UnsupportedShuffleLayerError involves either a 5-D tensor (head reshapes, unfold),
a rank-3 tensor ([N, C, H*W] from flatten(2), [B, T, C] -> [B, T, h, d] head splits, the DFL
reshape [1, 64, 8400] -> [1, 4, 16, 8400]) or the transpose perm [0, 2, 1, 3]; while seed 000's
4-D permute, 4-D reshape, conv -> Flatten -> Linear and squeeze(-1).squeeze(-1) all compiled.
So: rank-4 <-> rank-4/2 reshuffles pass, rank-3 ones fail unless they only add or drop size-1 axes.
"""
from __future__ import annotations

import numpy as np

from ...graph import NodeView
from ..base import Limits, Rule, RuleMaker, Verdict
from .tokens import features_last
from .. import common
from ..common import (batch_preserved, concat_axis, const_ints, dynamic_inputs, is_size1_reshape, keepdims, norm_axis,
                     rank, reduce_axes, slice_axes, transpose_perm)

UNSUP = Verdict.UNSUPPORTED

# -- checks -----------------------------------------------------------------------------------------

def static_inputs(node: NodeView, lim: Limits) -> str | None:
    dyn = dynamic_inputs(node)
    return f"reads {dyn[0]} {node.graph.tensor(dyn[0]).shape_str()}" if dyn else None


def max_rank(node: NodeView, lim: Limits) -> str | None:
    r = common.max_rank(node)
    return f"has a rank-{r} tensor" if r > lim["max_rank"] else None


def conv_rank(node: NodeView, lim: Limits) -> str | None:
    r = rank(node)
    if r is None or r == lim["conv_rank"]:
        return None
    d = r - (lim["conv_rank"] - lim["conv_dims"])  # spatial axes of the input
    kind = f"Conv{d}d" if d in (1, 3) else f"rank-{r}"
    return f"got a rank-{r} input {node.input(0).shape_str()} ({kind})"


def shuffle_rank3(node: NodeView, lim: Limits) -> str | None:
    if is_size1_reshape(node):
        return None  # only inserts/removes size-1 axes: a layout no-op the parser accepts (seed 000 squeeze)
    i, o = node.input(0), node.output(0)
    for label, t in (("input", i), ("output", o)):
        if t is not None and t.rank in lim["shuffle_bad_ranks"]:
            return f"{label} {t.shape_str()} is rank-{t.rank} ({node.input(0).shape_str()} -> {node.output(0).shape_str()})"
    return None


def shuffle_batch(node: NodeView, lim: Limits) -> str | None:
    if node.op_type == "Transpose":
        perm = transpose_perm(node)
        return f"perm {perm} moves the batch axis" if perm and perm[0] != 0 else None
    kept = batch_preserved(node)
    return None if kept in (None, True) else f"batch {node.input_shape(0)[0]} -> {node.output_shape(0)[0]}"


def transpose_perm_rule(node: NodeView, lim: Limits) -> str | None:
    perm = transpose_perm(node)
    return f"perm {perm}" if perm is not None and list(perm) in [list(p) for p in lim["transpose_rejected_perms"]] else None


def concat_batch(node: NodeView, lim: Limits) -> str | None:
    a = concat_axis(node)
    return "axis 0 (batch)" if a == 0 and (rank(node, output=True) or 0) > 1 else None


def _feature_only(axes: list[int] | None, lim: Limits, what: str) -> str | None:
    if axes is None:
        return None
    bad = [a for a in axes if a not in lim["feature_axes"]]
    return f"{what} axes {axes}" if bad else None


def slice_axis(node: NodeView, lim: Limits) -> str | None:
    axes = slice_axes(node)
    r = rank(node)
    res = _feature_only(axes, lim, "slices")
    return f"{res} of a rank-{r} tensor" if res and r else res


def tile_batch(node: NodeView, lim: Limits) -> str | None:
    reps = const_ints(node, 1)
    return f"repeats {reps}" if reps and reps[0] != 1 else None


def expand_noop(node: NodeView, lim: Limits) -> str | None:
    shape, target = node.input_shape(0), const_ints(node, 1)
    if target is None or shape is None or not all(isinstance(d, int) for d in shape):
        return "broadcast shape unknown"
    try:
        out = np.broadcast_shapes(tuple(shape), tuple(target))
    except ValueError:
        return f"shape {target}"
    return None if tuple(out) == tuple(shape) else f"broadcasts {list(shape)} -> {list(out)}"


def reduce_keepdims(node: NodeView, lim: Limits) -> str | None:
    k = int(keepdims(node))
    return f"keepdims={k}" if k != lim["reduce_keepdims"] else None


def reduce_features(node: NodeView, lim: Limits) -> str | None:
    return _feature_only(reduce_axes(node), lim, "reduces over")


def argmax_axis(node: NodeView, lim: Limits) -> str | None:
    a = node.attr("axis", 0)
    return _feature_only([norm_axis(int(a), rank(node))], lim, "arg-max over")


def resize_mode(node: NodeView, lim: Limits) -> str | None:
    mode = node.attr("mode", "nearest")
    return f"mode '{mode}'" if mode not in lim["resize_modes"] else None


def split_output(node: NodeView, lim: Limits) -> str | None:
    outs = set(node.graph.output_names)
    hit = [o for o in node.outputs if o in outs]
    return f"output '{hit[0]}' is a model output" if hit else None


def layernorm_rank(node: NodeView, lim: Limits) -> str | None:
    r = rank(node)
    return f"rank-{r} input" if r is not None and r < lim["layernorm_min_rank"] else None


def eltwise_const_layout(node: NodeView, lim: Limits) -> str | None:
    for i in range(2):
        t = node.input(i)
        if t is None or not t.is_const or t.shape is None:
            continue
        big = [d for d in t.shape if d != 1]
        other = node.inputs[1 - i] if len(node.inputs) > 1 else None
        if t.rank == lim["eltwise_const_rank"] and len(big) >= 2 and not (other and features_last(node.graph, other)):
            return f"constant operand {t.shape_str()}"
    return None


def gather_position(node: NodeView, lim: Limits) -> str | None:
    idx = node.const_value(1)
    if idx is None:
        return "indices are computed at run time (a lookup)"
    if node.input(0) is not None and node.input(0).is_const:
        return "gathers from a constant table"
    if idx.size > lim["gather_max_indices"]:
        return f"{idx.size} indices"
    r = rank(node)
    return "over the batch axis" if norm_axis(int(node.attr("axis", 0)), r) == 0 else None


def cast_noop(node: NodeView, lim: Limits) -> str | None:
    src, dst = node.input_dtype(0), node.output_dtype(0)
    return None if src is not None and src == dst else f"{src} -> {dst}"


# -- rules ------------------------------------------------------------------------------------------

SHUFFLE_FIX = ("keep tensors 4-D [N,C,H,W] around reshapes (express heads/bins through channels, use SpaceToDepth)",
               "or end the Hailo graph before this node (the parser's recommended end node) and run the rest on the host")


def graph_rules(p: str) -> tuple[Rule, ...]:
    r = RuleMaker(p, UNSUP)
    return (
        r('input.static_shape', "All model inputs must have a static shape: the Hailo parser tolerates no dynamic axis", static_inputs, ("pin the shape (npufit check --input-shape NAME=1,3,H,W) and re-export with fixed sizes",), "H-MISC", gate=common.dynamic_inputs_gate),
        r('tensor.max_rank', "Hailo lays tensors out as NHWC: tensors above rank {max_rank} fail (UnsupportedShuffleLayerError "
             "on 5-D reshapes/transposes, Tensor.unfold)", max_rank, SHUFFLE_FIX, "H-Y26", gate=common.max_rank_gate),
    )


def op_rules(p: str) -> dict[str, tuple[Rule, ...]]:
    r = RuleMaker(p, UNSUP)
    conv = r('conv.rank', "Convolutions run as {conv_dims}-D convolutions on rank-{conv_rank} NCHW tensors; nn.Conv1d (rank-3 input) "
                "timed out in the Dataflow Compiler", conv_rank, ("rewrite nn.Conv1d as nn.Conv2d with kernel (1, k) on an [N, C, 1, L] tensor (seed 000)",), "seed 000", ("conv1d_to_conv2d",))
    shuffle = (
        r('shuffle.rank3', "Reshape/Flatten/Transpose reading or writing a rank-{shuffle_bad_ranks[0]} tensor outside a recognised "
             "transformer form has no NHWC mapping in the Hailo parser (UnsupportedShuffleLayerError on YOLO heads' [N, C, H*W] "
             "bins and the DFL reshape, H-YOLO; on a Keras MHA head reshape, H-OCR). Evidence conflicts: the Model Zoo compiles "
             "vit/deit/levit/detr with the same ops inside attention and patch embedding (H-MZ), so those forms are judged by "
             "the composites " f"{p}.attention and {p}.tokens" " instead; adding or dropping size-1 axes is fine (seed 000 squeeze)", shuffle_rank3, SHUFFLE_FIX, "H-YOLO"),
        r('shuffle.batch', "Ops that move or resize the batch axis are rejected by the Hailo parser", shuffle_batch, ("keep batch as axis 0 with size 1; do batch rearrangements on the host",), "H-VIT"),
    )
    transpose = shuffle + (
        r('transpose.perm', "Transpose perms {transpose_rejected_perms} fail with UnsupportedShuffleLayerError outside "
             "attention (YOLO DFL transpose, H-YOLO; H-Y26). Evidence conflicts: the same perm splits and merges heads inside "
             "the attention blocks the Model Zoo compiles (vit/deit/levit/detr, H-MZ), judged by " f"{p}.attention and {p}.tokens" "; "
             "seed 000's {max_rank}-D permute (0, 2, 3, 1) compiled", transpose_perm_rule, SHUFFLE_FIX, "H-Y26"),
    )
    feature_fix = ("move the reduced/sliced axis to the channel axis (Transpose before it) or do it on the host",)
    return {
        "Conv": (conv,), "ConvTranspose": (conv,),
        "Reshape": shuffle, "Flatten": shuffle, "Transpose": transpose,
        "Concat": (r('concat.batch', "Concat over the batch axis is rejected (UnsupportedConcatLayerError: concat over axis "
                        "batch)", concat_batch, ("concatenate over channels, or on the host",), "H10-C"),),
        "Slice": (r('slice.axis', "Slice is supported on the feature (channel) axis {feature_axes} only", slice_axis, ("swap axes so the slice is on the channel axis, or do it on the host (seed 002)",), "seed 002"),),
        "Expand": (r('expand.broadcast', "Expand is rejected (UnexpectedNodeError: Expand) unless it is a no-op that the "
                        "parser's onnx-simplifier retry removes", expand_noop, ("materialise the broadcast as a constant at a fixed shape (npufit fix fold_constants), or broadcast "
                         "implicitly in the element-wise op that consumes it",), "H-BERT", ("fold_constants", "remove_identity")),),
        "Tile": (r('tile.batch', "Tile over the batch axis is rejected (becomes a concat over axis batch)", tile_batch, ("move the batch replication to host post-processing or change the model (seed 002)",
                       "when the input is constant, fold it at a fixed shape"), "seed 002", ("fold_constants",)),),
        "ReduceMax": (
            r('reducemax.keepdims', "ReduceMax is supported only with keepdims={reduce_keepdims} (\"Reduce max is only supported on the "
                 "features axis, and with keepdim=True\")", reduce_keepdims, ("export with keepdim=True and Squeeze afterwards (seed 002)",), "seed 002", ("reduce_keepdims",)),
            r('reducemax.axis', "ReduceMax is supported only over the feature (channel) axis {feature_axes}", reduce_features, feature_fix + ("or use MaxPool over the spatial axes",), "H-Y26"),
        ),
        "ReduceSum": (r('reducesum.axis', "ReduceSum is supported over the feature (channel) axis {feature_axes} only", reduce_features, feature_fix, "H10-A"),),
        "ArgMax": (r('argmax.axis', "ArgMax is supported over the feature (channel) axis {feature_axes} (segmentation heads)", argmax_axis, feature_fix, "H-MZ"),),
        "Resize": (r('resize.mode', "Resize is supported in modes {resize_modes}", resize_mode, ("use nearest or bilinear interpolation",), "H-T332"),),
        "Split": (r('split.output', "A Split output cannot be a model output (\"output shape is ambiguous\")", split_output, ("use separate Slice nodes, or add a layer after the split",), "H10-A"),),
        "LayerNormalization": (r('layernorm.rank', "LayerNormalization needs a rank >= {layernorm_min_rank} input (rank-2 "
                                    "inputs crash the parser's NHWC conversion)", layernorm_rank, ("keep the batch axis (rank >= 3) or export at opset < 17 to get the decomposed form",), "H10-D", ("opset_convert",)),),
        "Gather": (r('gather.position', "Gather runs only as a one-position slice: constant indices (at most "
                        "{gather_max_indices}) on a non-batch axis of an activation, e.g. the class token x[:, 0] before the "
                        "vit/deit classifier (Model Zoo end nodes after it, inferred from the node numbering). Embedding lookups "
                        "(UnsupportedGatherLayerError, H-BERT), batch-axis gathers (H-VIT) and run-time indices (\"Can't find "
                        "index\", H-Y26) are rejected", gather_position, ("do the lookup on the host (Zoo text encoders start after the embeddings)",
                         "or use a Slice on the channel axis"), "H-MZ"),),
        "Cast": (r('cast.noop', "Only a Cast to the dtype the tensor already has is accepted: the parser's onnx-simplifier "
                      "retry removes it (HF eager attention exports two around Softmax); no public evidence of a real dtype "
                      "conversion inside a HEF (the Dataflow Compiler quantizes the float graph itself)", cast_noop, ("remove the conversion from the model, or do it on the host",), "H-I98"),),
        **{op: (r('eltwise.const_layout', "An element-wise constant operand must broadcast in NHWC layout; rank-{eltwise_const_rank} constants "
                     "with two non-unit axes are rejected on channel-first [N, C, L] tensors (\"constant shape (1,2,8400) not "
                     "broadcastable\", YOLO anchors, H-YOLO) and accepted on token sequences [N, T, C] (the position embeddings "
                     "of the Zoo's vit/deit/detr, H-MZ)", eltwise_const_layout, ("make the constant 4-D [1,C,1,1]/[1,C,H,W] or apply it on the host",), "H-YOLO"),)
           for op in ("Add", "Sub", "Mul", "Div")},
    }


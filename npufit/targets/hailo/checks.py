"""Hailo checks (shared by hailo8 and hailo8l; the rule tables are in rules.py).

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

from ...graph import Graph, NodeView
from .. import common
from ..base import Limits, Verdict
from ..common import (
    batch_preserved,
    concat_axis,
    const_ints,
    dynamic_inputs,
    norm_axis,
    rank,
)
from ..tflite_map import is_tflite
from . import layout
from .tokens import features_last

UNSUP = Verdict.UNSUPPORTED

# -- checks -----------------------------------------------------------------------------------------


def static_inputs(node: NodeView, lim: Limits) -> str | None:
    dyn = dynamic_inputs(node)
    return f"reads {dyn[0]} {node.graph.tensor(dyn[0]).shape_str()}" if dyn else None


def max_rank(node: NodeView, lim: Limits) -> str | None:
    r = common.max_rank(node)
    return f"has a rank-{r} tensor" if r > lim["max_rank"] else None


def conv_rank(node: NodeView, lim: Limits) -> str | None:
    r = layout.data_rank(node)
    if r is None or r == lim["conv_rank"]:
        return None
    d = r - (lim["conv_rank"] - lim["conv_dims"])  # spatial axes of the input
    kind = f"Conv{d}d" if d in (1, 3) else f"rank-{r}"
    return f"got a rank-{r} input {node.input(layout.data_input(node)).shape_str()} ({kind})"


def shuffle_rank3(node: NodeView, lim: Limits) -> str | None:
    if layout.is_relabel(node):
        return None  # only inserts/removes/moves size-1 axes: a layout no-op the parser accepts (seed 000 squeeze)
    i, o = node.input(0), node.output(0)
    for label, t in (("input", i), ("output", o)):
        if t is not None and t.rank in lim["shuffle_bad_ranks"]:
            shapes = f"{node.input(0).shape_str()} -> {node.output(0).shape_str()}"
            return f"{label} {t.shape_str()} is rank-{t.rank} ({shapes})"
    return None


def shuffle_batch(node: NodeView, lim: Limits) -> str | None:
    if node.op_type == "Transpose":
        perm = layout.perm(node)
        if not perm or perm[0] == 0:
            return None
        # a batch of 1 moved among the axes of a rank-3 token tensor relabels them ([1, T, C] <-> [T, 1, C]: the
        # sequence-first attention the Zoo's yolov5s_c3tr compiles); a rank-4 map whose batch axis moves is refused
        if len(perm) <= 3 and layout.is_relabel(node):
            return None
        return f"perm {perm} moves the batch axis"
    kept = batch_preserved(node)
    return None if kept in (None, True) else f"batch {node.input_shape(0)[0]} -> {node.output_shape(0)[0]}"


def transpose_perm_rule(node: NodeView, lim: Limits) -> str | None:
    perm = layout.perm(node)
    if perm is None or list(perm) not in [list(p) for p in lim["transpose_rejected_perms"]]:
        return None
    return None if layout.is_relabel(node) else f"perm {perm}"


def concat_batch(node: NodeView, lim: Limits) -> str | None:
    a = concat_axis(node)
    return "axis 0 (batch)" if a == 0 and (rank(node, output=True) or 0) > 1 else None


def _feature_only(node: NodeView, axes: list[int] | None, lim: Limits, what: str) -> str | None:
    if axes is None:
        return None
    feature = layout.feature_axes(node, lim)
    bad = [a for a in axes if a not in feature]
    return f"{what} axes {axes}" if bad else None


def slice_axis(node: NodeView, lim: Limits) -> str | None:
    axes = layout.sliced_axes(node)
    r = rank(node)
    res = _feature_only(node, axes, lim, "slices")
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
    k = int(layout.keepdims(node))
    return f"keepdims={k}" if k != lim["reduce_keepdims"] else None


def reduce_features(node: NodeView, lim: Limits) -> str | None:
    return _feature_only(node, layout.reduced_axes(node), lim, "reduces over")


def argmax_axis(node: NodeView, lim: Limits) -> str | None:
    a = layout.argmax_axis(node)
    return None if a is None else _feature_only(node, [a], lim, "arg-max over")


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
    if is_tflite(node):
        return None  # NHWC already: a rank-3 tensor keeps its features last, as the parser lays it out
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


# integer and boolean tensors: sizes, indices, masks. Activations the Dataflow Compiler quantizes are float in the
# parsed graph (the 8/16-bit integers of a pre-quantized model are another rule's matter)
INDEX_DTYPES = frozenset(("int64", "int32", "uint64", "uint32", "bool"))


def index_math_gate(graph: Graph, lim: Limits) -> bool:
    """Rule.gate of index_math: only a graph with an integer or boolean tensor computed at run time has a node that
    reads one."""
    return any(t.dtype in INDEX_DTYPES and not t.is_const for t in graph.tensors.values())


# ops that only lay out the indices an ArgMax wrote (the ArgMax rewrite of a TopK over another axis transposes them
# back): the indices are the on-chip ArgMax's output, not arithmetic on integers
_INDEX_LAYOUT = ("Transpose", "Squeeze", "Unsqueeze", "Reshape", "Flatten", "Identity")


def _argmax_indices(graph: Graph, tensor: str, depth: int = 4) -> bool:
    for _ in range(depth):
        p = graph.producer(tensor)
        if p is None:
            return False
        if p.op_type == "ArgMax":
            return True
        if p.op_type not in _INDEX_LAYOUT:
            return False
        tensor = p.inputs[0]
    return False


def index_math(node: NodeView, lim: Limits) -> str | None:
    graph = node.graph
    tensors = graph.tensors
    for name in node.inputs:
        t = tensors.get(name) if name else None
        if t is None or t.is_const or t.dtype not in INDEX_DTYPES:
            continue
        if node.op_type in _INDEX_LAYOUT and _argmax_indices(graph, name):
            continue
        return f"reads {t.dtype} {name} {t.shape_str()}"
    return None


def topk_k1(node: NodeView, lim: Limits) -> str | None:
    """Fails (with the ArgMax rewrite as its fix) only where TopK keeps one element: k > 1 is not an ArgMax."""
    k = const_ints(node, 1)
    return "k=1" if k == [1] else None

"""Small reusable helpers for rule functions: ranks, static shapes, axes, constant operands.

Every target module reads nodes through these, so axis normalisation and opset differences
(e.g. Reduce* axes as an attribute before opset 18, as an input from 18) live in one place.
Helpers return None when they cannot know (no shape, non-constant operand); rules decide
what "unknown" means for their target.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..graph import Graph, NodeView, TensorInfo, facts, quant
from .base import GateFn, Limits

FEATURE_AXIS = 1  # ONNX is channel-first: NCHW / [N, C, L] / [N, C]

# `npufit fix` cleanups every target gets (rule names in npufit.rewrite.registry); profiles add what they need
REWRITE_COMMON = (
    "remove_identity",
    "fold_constants",
    "fold_batchnorm",
    "conv1d_to_conv2d",
    "merge_reshapes",
    "mean_to_global_pool",
)


def rank(node: NodeView, i: int = 0, output: bool = False) -> int | None:
    t = node.output(i) if output else node.input(i)
    return None if t is None else t.rank


def ranks(node: NodeView) -> list[int]:
    """Known ranks of every non-constant input and every output."""
    tensors = node.graph.tensors  # read directly: this runs for every node of every check
    out = []
    for name in node.inputs:
        t = tensors.get(name) if name else None
        if t is not None and not t.is_const and t.shape is not None:
            out.append(len(t.shape))
    for name in node.outputs:
        t = tensors.get(name) if name else None
        if t is not None and t.shape is not None:
            out.append(len(t.shape))
    return out


def max_rank(node: NodeView) -> int:
    """max(ranks(node), default=0), read from a table the graph builds once: rank rules run on every node of
    every check (hailo8's and hailo8l's alike in `--target all`), and a node's ranks do not change after loading."""
    graph = node.graph
    table = graph.max_rank_table
    if table is None:
        table = graph.max_rank_table = rank_table(graph)
    return table[node.index]


def max_rank_gate(graph: Graph, lim: Limits) -> bool:
    """Rule.gate of the rank rules, which fail only on a node whose max_rank is above lim["max_rank"]. A node's
    ranks are those of tensors in the table: when no tensor is above the limit (most graphs), no node is, and the
    per-node table is not built."""
    limit = lim["max_rank"]
    for t in graph.tensors.values():
        s = t.shape
        if s is not None and len(s) > limit:
            break
    else:
        return False
    table = graph.max_rank_table
    if table is None:
        table = graph.max_rank_table = rank_table(graph)
    return max(table, default=0) > lim["max_rank"]


def rank_table(graph: Graph) -> list[int]:
    """Per node (by index): the highest known rank among its non-constant inputs and its outputs; 0 when none is
    known. One loop with the node's tensors read inline (half the cost of ranks() per node)."""
    get = graph.tensors.get
    table: list[int] = []
    add = table.append
    for n in graph.nodes:
        m = 0
        for name in n.inputs:
            t = get(name) if name else None
            if t is not None and not t.is_const:
                s = t.shape
                if s is not None and len(s) > m:
                    m = len(s)
        for name in n.outputs:
            t = get(name) if name else None
            if t is not None:
                s = t.shape
                if s is not None and len(s) > m:
                    m = len(s)
        add(m)
    return table


def is_static(t: TensorInfo | None) -> bool:
    return bool(t is not None and t.is_static)


@facts.per_graph
def any_dynamic_tail(graph: Graph) -> bool:
    """Whether some tensor of the graph has a known shape with an axis after the first that is not a static size:
    a rule that looks for such inputs on every node need not look in a graph that has none (most graphs)."""
    for t in graph.tensors.values():
        s = t.shape
        if s:
            for d in s[1:]:  # a plain loop: no generator per tensor (a 100k-node graph has ~200k tensors)
                if not isinstance(d, int) or d < 0:
                    return True
    return False


def dynamic_tail_gate(graph: Graph, lim: Limits) -> bool:
    """Rule.gate of the rules whose first test is any_dynamic_tail(graph)."""
    return any_dynamic_tail(graph)


def ops_gate(*op_types: str) -> GateFn:
    """Rule.gate of a rule that fails only where the graph holds one of these op types (e.g. a mask's Where)."""
    ops = frozenset(op_types)

    def gate(graph: Graph, lim: Limits) -> bool:
        return graph.has_any(ops)

    return gate


def tflite_gate(graph: Graph, lim: Limits) -> bool:
    """Rule.gate of the rules that read TFLite tensors only (their first test: the graph's format)."""
    return graph.format == "tflite"


def dynamic_inputs_gate(graph: Graph, lim: Limits) -> bool:
    """Rule.gate of the rules that look at dynamic_inputs(node): no node reads one when every model input is static."""
    get = graph.tensors.get
    return any((t := get(name)) is None or not t.is_static for name in graph.input_names)


def dynamic_inputs(node: NodeView) -> list[str]:
    """Model inputs read by this node whose shape is not fully static."""
    graph_inputs = node.graph.input_set
    if graph_inputs.isdisjoint(node.inputs):
        return []
    return [t for t in node.inputs if t and t in graph_inputs and not node.graph.tensor(t).is_static]


def norm_axis(axis: int, r: int | None) -> int:
    """Negative axis -> positive (unchanged when the rank is unknown)."""
    return axis + r if (axis < 0 and r is not None) else axis


def norm_axes(axes: Sequence[int], r: int | None) -> list[int]:
    return sorted(norm_axis(int(a), r) for a in axes)


def reduce_axes(node: NodeView, rank_hint: int | None = None) -> list[int] | None:
    """Axes of a Reduce* node, normalised; all axes when none are given; None if not constant.
    rank_hint: the input rank when shape inference could not give it (e.g. same as another node's)."""
    r = rank(node)
    r = rank_hint if r is None else r
    axes = node.attr("axes")
    if axes is None and len(node.inputs) > 1 and node.inputs[1]:
        v = node.const_value(1)
        if v is None:
            return None
        axes = [int(a) for a in np.asarray(v).reshape(-1)]
    if axes is None or len(axes) == 0:
        if node.attr("noop_with_empty_axes", 0):
            return []
        return None if r is None else list(range(r))
    return norm_axes(axes, r)


def keepdims(node: NodeView) -> bool:
    return bool(node.attr("keepdims", 1))


def const_array(node: NodeView, i: int) -> np.ndarray | None:
    """Value of input i when it is a known constant (initializer, Constant, folded)."""
    t = node.input(i)
    if t is None or not t.is_const:
        return None
    return None if t.value is None else np.asarray(t.value)


def const_scalar(node: NodeView, i: int) -> float | None:
    v = const_array(node, i)
    if v is None or v.size != 1:
        return None
    return float(v.reshape(-1)[0])


def const_ints(node: NodeView, i: int) -> list[int] | None:
    v = const_array(node, i)
    return None if v is None else [int(x) for x in v.reshape(-1)]


def is_const_input(node: NodeView, i: int) -> bool:
    t = node.input(i)
    return bool(t is not None and t.is_const)


activation_inputs = quant.activation_inputs  # indices of the inputs computed at run time (one definition)


def close(value: float | None, target: float, rel: float = 1e-3) -> bool:
    return value is not None and abs(value - target) <= rel * max(1.0, abs(target))


def slice_axes(node: NodeView) -> list[int] | None:
    """Axes a Slice node cuts (opset 10+: 'axes' input; opset 1-9: attribute), normalised."""
    r = rank(node)
    if node.attr("axes") is not None:
        return norm_axes(node.attr("axes"), r)
    if node.attr("starts") is not None:  # opset < 10 without axes: leading axes
        return list(range(len(node.attr("starts"))))
    if len(node.inputs) > 3 and node.inputs[3]:
        v = const_ints(node, 3)
        return None if v is None else norm_axes(v, r)
    starts = node.input(1)
    if starts is not None and starts.shape and isinstance(starts.shape[0], int):
        return list(range(starts.shape[0]))
    return None


def transpose_perm(node: NodeView) -> list[int] | None:
    p = node.attr("perm")
    if p is not None:
        return [int(x) for x in p]
    r = rank(node)
    return None if r is None else list(reversed(range(r)))


def concat_axis(node: NodeView) -> int | None:
    a = node.attr("axis")
    if a is None:
        return None
    r = rank(node, output=True)
    return norm_axis(int(a), r)


def is_size1_reshape(node: NodeView) -> bool:
    """True when input and output differ only by axes of size 1 (a layout no-op: squeeze/unsqueeze)."""
    i, o = node.input(0), node.output(0)
    if i is None or o is None or not i.is_static or not o.is_static:
        return False
    return [d for d in i.shape if d != 1] == [d for d in o.shape if d != 1]  # type: ignore[union-attr]


def batch_preserved(node: NodeView) -> bool | None:
    """Does the output keep the input's batch (axis 0) as its axis 0? None when shapes are unknown."""
    i, o = node.input_shape(0), node.output_shape(0)
    if not i or not o or not isinstance(i[0], int) or not isinstance(o[0], int):
        return None
    return i[0] == o[0]


def noop_cast(node: NodeView) -> bool:
    """A Cast to the dtype its input already has (toolchains delete it)."""
    return node.op_type == "Cast" and node.input_dtype(0) is not None and node.input_dtype(0) == node.output_dtype(0)


def graph_output(node: NodeView) -> list[str]:
    outs = node.graph.output_names  # membership only (a model has few outputs; a local view answers this)
    return [o for o in node.outputs if o and o in outs]


class Choices(tuple):
    """A tuple of allowed values that reads as 'a, b, c' in rule sentences, or 'none' when empty (limits stay data).

    A format spec spells each value through a pattern and joins them, so a sentence can quote a limit in its own
    words: "{scales:#x|or}" -> "2x, 4x or 8x", "{kernels:#x#|/}" -> "1x1/2x2/3x3", "{scales:..}" -> "2..8"."""

    def __str__(self) -> str:
        return ", ".join(str(x) for x in self) or "none"

    def __format__(self, spec: str) -> str:
        if spec == "..":
            return f"{min(self)}..{max(self)}"
        if "|" not in spec:
            return format(str(self), spec)
        item, join = spec.split("|", 1)
        words = [item.replace("#", str(x)) for x in self]
        if join != "or" or len(words) < 2:
            return join.join(words)
        return ", ".join(words[:-1]) + " or " + words[-1]


# -- preconditions of fix hints (base.Hint): a hint is shown only on the nodes it helps ---------------------------


def topk_k(node: NodeView) -> int | None:
    """TopK's k when it is a constant (input 1; the attribute before opset 10), else None."""
    if node.op_type not in ("TopK", "TOPK_V2"):
        return None
    k = node.attr("k") if len(node.inputs) < 2 else const_scalar(node, 1)
    return None if k is None else int(k)


def topk_k_is_one(node: NodeView) -> bool:
    """`npufit fix`'s topk1_to_argmax rewrites exactly these (it refuses any other k)."""
    return topk_k(node) == 1


def topk_k_above_one(node: NodeView) -> bool:
    return topk_k(node) != 1


def float_feature_maps(node: NodeView) -> bool:
    """A run-time input or output of the node is floating point: quantizing the model changes that (a resource
    variable or a bool tensor of an int8 model it does not)."""
    names = [node.inputs[i] for i in activation_inputs(node)] + [o for o in node.outputs if o]
    return any(node.graph.tensor(n).dtype in quant.FLOAT_DTYPES for n in names if n)


def no_float_feature_maps(node: NodeView) -> bool:
    return not float_feature_maps(node)


# shown for a dtype rule broken by a tensor quantizing does not change (an int8 model's index, bool or variable)
NON_NUMERIC_HINT = (
    "this tensor is neither float nor int8 (an index, a bool, a resource variable): quantizing does not change it; "
    "remove the op from the deployed graph (freeze variables into constants) or let it run on the host"
)

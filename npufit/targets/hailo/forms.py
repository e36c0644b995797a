"""Matchers for two transformer forms the Hailo profile judges as a whole: RMSNorm (recognised like LayerNorm) and
the rotary position embedding (RoPE) of DINOv3 / Llama-style attention (a parser risk).

Both are found from graph structure (op types, constants, what feeds what), never from node names.
"""

from __future__ import annotations

from ...graph import Graph, NodeView
from ..base import CompositeMatch
from ..common import close, const_scalar, reduce_axes
from ..patterns import _affine_tail, _anchors, _live, other_input, scalar_operand, sole_consumer


def _square_of(graph: Graph, node: NodeView | None) -> str | None:
    """x when node is x ** 2 (Pow by 2, or Mul(x, x)); else None."""
    if node is None or not _live(graph, node):
        return None
    if node.op_type == "Pow" and close(const_scalar(node, 1), 2.0):
        return node.inputs[0]
    if node.op_type == "Mul" and node.inputs[0] == node.inputs[1]:
        return node.inputs[0]
    return None


def _scale_by_inverse(graph: Graph, sqrt: NodeView, x: str) -> list[NodeView] | None:
    """After sqrt(mean(x^2) + eps): x / s, or x * (1 / s) with Reciprocal or Div(1, s)."""
    nxt = sole_consumer(graph, sqrt)
    if nxt is None:
        return None
    if nxt.op_type == "Div" and nxt.inputs[0] == x and nxt.inputs[1] == sqrt.outputs[0]:
        return [nxt]
    inverse = nxt.op_type == "Reciprocal" or (
        nxt.op_type == "Div" and nxt.inputs[1] == sqrt.outputs[0] and close(const_scalar(nxt, 0), 1.0)
    )
    if not inverse:
        return None
    mul = sole_consumer(graph, nxt, ("Mul",))
    if mul is None or set(mul.inputs[:2]) != {x, nxt.outputs[0]}:
        return None
    return [nxt, mul]


def match_rmsnorm(graph: Graph) -> list[CompositeMatch]:
    """x * 1/sqrt(mean(x^2, one axis) + eps) [* gamma]: RMSNorm (T5, Llama, the DEIMv2 decoder), with Pow 2 or
    Mul(x, x), an optional eps, and Div / Reciprocal / Div(1, .) for the inverse."""
    out = []
    for mean in _anchors(graph, "ReduceMean"):
        sq = graph.producer(mean.inputs[0])
        x = _square_of(graph, sq)
        axes = reduce_axes(mean)
        if x is None or axes is None or len(axes) != 1 or len(graph.consumers(sq.outputs[0])) != 1:
            continue
        nodes = [sq, mean]
        node = mean
        eps = sole_consumer(graph, mean, ("Add",))
        if eps is not None and scalar_operand(eps, mean.outputs[0]) is not None:
            nodes.append(eps)
            node = eps
        sqrt = sole_consumer(graph, node, ("Sqrt",))
        scale = _scale_by_inverse(graph, sqrt, x) if sqrt is not None else None
        if scale is None:
            continue
        nodes += [sqrt, *scale]
        affine = _affine_tail(graph, scale[-1])
        nodes += affine
        out.append(
            CompositeMatch(
                tuple(nodes),
                f"RMSNorm over axis {axes[0]} of {graph.tensor(x).shape_str()}" + (" with scale" if affine else ""),
            )
        )
    return out


def _half_slice(graph: Graph, node: NodeView | None) -> tuple[str, int] | None:
    """(sliced tensor, which half: 0 or 1) when node slices the first or second half of its input's last axis."""
    if node is None or node.op_type != "Slice" or not _live(graph, node):
        return None
    i, o = node.input(0), node.output(0)
    if i is None or o is None or not (i.is_static and o.is_static) or i.rank != o.rank or not i.rank:
        return None
    d = i.shape[-1]
    if d % 2 or list(o.shape) != [*i.shape[:-1], d // 2]:  # type: ignore[operator]  # static: int dims
        return None
    start = node.const_value(1)
    if start is None:
        return None
    s = int(start.reshape(-1)[0])
    return (node.inputs[0], 0 if s == 0 else 1) if s in (0, d // 2, -(d // 2)) else None  # type: ignore[operator]


def match_rope(graph: Graph) -> list[CompositeMatch]:
    """Rotary position embedding, the rotate-half form: x * cos + concat(-x2, x1) * sin, where x1 and x2 are the
    two halves of x's last axis and cos/sin are tables (DINOv3, Llama-style attention)."""
    out = []
    for neg in _anchors(graph, "Neg"):
        second = _half_slice(graph, graph.producer(neg.inputs[0]))
        if second is None or second[1] != 1:
            continue
        x = second[0]
        cat = sole_consumer(graph, neg, ("Concat",))
        if cat is None or len(cat.inputs) != 2 or cat.inputs[0] != neg.outputs[0]:
            continue
        first = _half_slice(graph, graph.producer(cat.inputs[1]))
        if first is None or first != (x, 0):
            continue
        nodes = [graph.producer(neg.inputs[0]), neg, graph.producer(cat.inputs[1]), cat]
        rot = sole_consumer(graph, cat, ("Mul",))
        if rot is not None:
            nodes.append(rot)
            add = sole_consumer(graph, rot, ("Add",))
            if add is not None:
                j = other_input(add, rot.outputs[0])
                straight = graph.producer(add.inputs[j]) if j is not None else None
                if straight is not None and straight.op_type == "Mul" and x in straight.inputs[:2]:
                    nodes += [straight, add]
        out.append(CompositeMatch(tuple(nodes), f"rotary position embedding on {graph.tensor(x).shape_str()}"))
    return out

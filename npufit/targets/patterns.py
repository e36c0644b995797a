"""Reusable composite matchers over a Graph (the forms exporters really produce).

PyTorch's TorchScript exporter decomposes LayerNorm (opset < 17) and GELU into primitive ops;
vendor parsers recognise those chains as one layer. A matcher walks producer/consumer links
from an anchor op and returns CompositeMatch objects; a target wraps it in a `Composite` with
its own verdict. Matchers ignore folded nodes and never claim a node twice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..graph import Graph, NodeView
from .base import CompositeMatch
from .common import activation_inputs, close, const_scalar, keepdims, rank, reduce_axes

SQRT2 = 2**0.5
SQRT_2_OVER_PI = (2 / 3.141592653589793) ** 0.5


# -- walking helpers --------------------------------------------------------------------------


def _live(graph: Graph, node: NodeView | None) -> bool:
    return node is not None and node.name not in graph.folded


def sole_consumer(graph: Graph, node: NodeView, op_types: Iterable[str] | None = None) -> NodeView | None:
    """The only consumer of node's first output (optionally restricted to op types)."""
    cons = graph.consumers(node.outputs[0]) if node.outputs else []
    if len(cons) != 1:
        return None
    c = cons[0]
    return c if (op_types is None or c.op_type in op_types) and _live(graph, c) else None


def consumers_of(graph: Graph, node: NodeView, op_type: str) -> list[NodeView]:
    return (
        [c for c in graph.consumers(node.outputs[0]) if c.op_type == op_type and _live(graph, c)]
        if node.outputs
        else []
    )


def other_input(node: NodeView, tensor: str) -> int | None:
    """Index of the binary node's input that is not `tensor` (None when both are `tensor`)."""
    for i, t in enumerate(node.inputs[:2]):
        if t != tensor:
            return i
    return None


def scalar_operand(node: NodeView, tensor: str) -> float | None:
    """The constant scalar a binary node combines with `tensor`."""
    i = other_input(node, tensor)
    return None if i is None else const_scalar(node, i)


def producer_op(graph: Graph, tensor: str, op_types: Iterable[str]) -> NodeView | None:
    p = graph.producer(tensor)
    return p if p is not None and p.op_type in op_types and _live(graph, p) else None


def _anchors(graph: Graph, op_type: str) -> list[NodeView]:
    folded = graph.folded
    return [n for n in graph.nodes_of(op_type) if n.domain in ("", "ai.onnx") and n.name not in folded]


def _scaled_gelu_tail(graph: Graph, start: NodeView, x: str) -> list[NodeView] | None:
    """After 1 + f(x): the two Muls that form x * (...) * 0.5, in either order."""
    m1 = sole_consumer(graph, start, ("Mul",))
    if m1 is None:
        return None
    m2 = sole_consumer(graph, m1, ("Mul",))
    if m2 is None:
        return None
    seen_x = x in m1.inputs or x in m2.inputs
    half = scalar_operand(m1, start.outputs[0]) if x not in m1.inputs else scalar_operand(m2, m1.outputs[0])
    if not seen_x or not close(half, 0.5):
        return None
    return [m1, m2]


# -- matchers -----------------------------------------------------------------------------------


def match_gelu_erf(graph: Graph) -> list[CompositeMatch]:
    """x * 0.5 * (1 + erf(x / sqrt 2)): Div(or Mul 1/sqrt2) -> Erf -> Add(1) -> Mul(x) -> Mul(0.5)."""
    out = []
    for erf in _anchors(graph, "Erf"):
        pre = producer_op(graph, erf.inputs[0], ("Div", "Mul"))
        if pre is None or len(graph.consumers(pre.outputs[0])) != 1:
            continue
        x = next((t for t in pre.inputs[:2] if not graph.tensor(t).is_const), None)
        s = scalar_operand(pre, x) if x else None
        if x is None or not (close(s, SQRT2) if pre.op_type == "Div" else close(s, 1 / SQRT2)):
            continue
        add = sole_consumer(graph, erf, ("Add",))
        if add is None or not close(scalar_operand(add, erf.outputs[0]), 1.0):
            continue
        tail = _scaled_gelu_tail(graph, add, x)
        if tail:
            out.append(CompositeMatch((pre, erf, add, *tail), "GELU (erf form)"))
    return out


def match_gelu_tanh(graph: Graph) -> list[CompositeMatch]:
    """0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))) with x^3 as Mul(Mul(x,x),x) or Pow(x,3)."""
    out = []
    for tanh in _anchors(graph, "Tanh"):
        scale = producer_op(graph, tanh.inputs[0], ("Mul",))
        if scale is None:
            continue
        inner_t = next((t for t in scale.inputs[:2] if not graph.tensor(t).is_const), None)
        if inner_t is None or not close(scalar_operand(scale, inner_t), SQRT_2_OVER_PI):
            continue
        inner = producer_op(graph, inner_t, ("Add",))
        if inner is None:
            continue
        cubic_nodes = None
        for xi in range(2):
            x, other = inner.inputs[xi], inner.inputs[1 - xi]
            coef = producer_op(graph, other, ("Mul",))
            if coef is None:
                continue
            cube_t = next((t for t in coef.inputs[:2] if not graph.tensor(t).is_const), None)
            if cube_t is None or not close(scalar_operand(coef, cube_t), 0.044715):
                continue
            cube = _cube_of(graph, cube_t, x)
            if cube is not None:
                cubic_nodes = (x, [*cube, coef])
                break
        if cubic_nodes is None:
            continue
        x, head = cubic_nodes
        add1 = sole_consumer(graph, tanh, ("Add",))
        if add1 is None or not close(scalar_operand(add1, tanh.outputs[0]), 1.0):
            continue
        tail = _scaled_gelu_tail(graph, add1, x)
        if tail:
            out.append(CompositeMatch((*head, inner, scale, tanh, add1, *tail), "GELU (tanh approximation)"))
    return out


def _cube_of(graph: Graph, t: str, x: str) -> list[NodeView] | None:
    p = producer_op(graph, t, ("Mul", "Pow"))
    if p is None:
        return None
    if p.op_type == "Pow":
        return [p] if p.inputs[0] == x and close(const_scalar(p, 1), 3.0) else None
    if x not in p.inputs[:2]:
        return None
    sq_t = p.inputs[1] if p.inputs[0] == x else p.inputs[0]
    sq = producer_op(graph, sq_t, ("Mul", "Pow"))
    if sq is None:
        return None
    if sq.op_type == "Mul" and list(sq.inputs[:2]) == [x, x]:
        return [sq, p]
    if sq.op_type == "Pow" and sq.inputs[0] == x and close(const_scalar(sq, 1), 2.0):
        return [sq, p]
    return None


def norm_denominator(node: NodeView) -> bool:
    """A Sqrt that is a normalization's denominator: the mean of squares (a variance, or RMSNorm's mean square) plus
    a constant epsilon, and whose result only divides (LayerNorm, RMSNorm, InstanceNorm as exporters decompose them).
    Compilers that fuse the normalization compute it inside the fused layer."""
    g = node.graph
    if node.op_type != "Sqrt":
        return False
    eps = g.producer(node.inputs[0])
    if eps is None or eps.op_type != "Add":
        return False
    var = next((p for t in eps.inputs if (p := g.producer(t)) is not None and p.op_type == "ReduceMean"), None)
    if var is None or scalar_operand(eps, var.outputs[0]) is None:
        return False
    cons = g.consumers(node.outputs[0])
    return bool(cons) and all(c.op_type == "Div" and c.inputs[1] == node.outputs[0] for c in cons)


def match_layernorm(graph: Graph) -> list[CompositeMatch]:
    """ReduceMean -> Sub -> Pow 2 (or Mul d*d) -> ReduceMean -> Add eps -> Sqrt -> Div [-> Mul gamma -> Add beta]."""
    out = []
    for mean in _anchors(graph, "ReduceMean"):
        x = mean.inputs[0]
        sub = next(
            (c for c in consumers_of(graph, mean, "Sub") if c.inputs[0] == x and c.inputs[1] == mean.outputs[0]), None
        )
        if sub is None:
            continue
        d = sub.outputs[0]
        sq = next(
            (
                c
                for c in graph.consumers(d)
                if _live(graph, c)
                and (
                    (c.op_type == "Pow" and c.inputs[0] == d and close(const_scalar(c, 1), 2.0))
                    or (c.op_type == "Mul" and list(c.inputs[:2]) == [d, d])
                )
            ),
            None,
        )
        if sq is None:
            continue
        var = sole_consumer(graph, sq, ("ReduceMean",))
        if var is None or reduce_axes(var, rank(mean)) != reduce_axes(mean):
            continue
        eps = sole_consumer(graph, var, ("Add",))
        if eps is None or scalar_operand(eps, var.outputs[0]) is None:
            continue
        sqrt = sole_consumer(graph, eps, ("Sqrt",))
        if sqrt is None:
            continue
        div = sole_consumer(graph, sqrt, ("Div",))
        if div is None or div.inputs[0] != d:
            continue
        nodes = [mean, sub, sq, var, eps, sqrt, div]
        affine = _affine_tail(graph, div)
        nodes += affine
        axes = reduce_axes(mean)
        out.append(CompositeMatch(tuple(nodes), f"LayerNorm over axes {axes}" + (" with affine" if affine else "")))
    return out


def _affine_tail(graph: Graph, node: NodeView) -> list[NodeView]:
    tail = []
    mul = sole_consumer(graph, node, ("Mul",))
    if mul is not None and len(activation_inputs(mul)) == 1:
        tail.append(mul)
        node = mul
    add = sole_consumer(graph, node, ("Add",))
    if add is not None and len(activation_inputs(add)) == 1:
        tail.append(add)
    return tail


def _gated(graph: Graph, gate_op: str) -> list[CompositeMatch]:
    out = []
    for g in _anchors(graph, gate_op):
        x = g.inputs[0]
        mul = next((c for c in consumers_of(graph, g, "Mul") if set(c.inputs[:2]) == {x, g.outputs[0]}), None)
        if mul is not None and len(graph.consumers(g.outputs[0])) == 1:
            out.append(CompositeMatch((g, mul), f"x * {gate_op.lower()}(x)"))
    return out


def match_silu(graph: Graph) -> list[CompositeMatch]:
    """SiLU / Swish as x * sigmoid(x)."""
    return _gated(graph, "Sigmoid")


def match_hardswish(graph: Graph) -> list[CompositeMatch]:
    """HardSwish as x * hardsigmoid(x) (the opset < 14 export)."""
    return _gated(graph, "HardSigmoid")


RESHAPES = ("Reshape", "Flatten", "Squeeze", "Unsqueeze")


def match_mean_linear(graph: Graph) -> list[CompositeMatch]:
    """ReduceMean over some dims -> [Reshape/Flatten/Squeeze]* -> Gemm/MatMul with constant weights."""
    out = []
    for mean in _anchors(graph, "ReduceMean"):
        chain, cur = [mean], mean
        while True:
            nxt = sole_consumer(graph, cur)
            if nxt is None:
                break
            if nxt.op_type in RESHAPES:
                chain.append(nxt)
                cur = nxt
                continue
            if (
                nxt.op_type in ("Gemm", "MatMul")
                and nxt.inputs[0] == cur.outputs[0]
                and graph.tensor(nxt.inputs[1]).is_const
            ):
                chain.append(nxt)
                axes = reduce_axes(mean)
                out.append(
                    CompositeMatch(
                        tuple(chain),
                        f"mean over axes {axes}, keepdims={int(keepdims(mean))}, then "
                        f"{'+'.join(n.op_type for n in chain[1:])}",
                    )
                )
            break
    return out


MATCHERS: dict[str, Callable[[Graph], list[CompositeMatch]]] = {
    "layernorm": match_layernorm,
    "gelu_erf": match_gelu_erf,
    "gelu_tanh": match_gelu_tanh,
    "silu": match_silu,
    "hardswish": match_hardswish,
    "mean_linear": match_mean_linear,
}

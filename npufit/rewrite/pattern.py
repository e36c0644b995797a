"""Base class for our onnxscript pattern rules, and the layout tidy-ups several rules share.

Rules bind the matched node's output (`_outputs=["out"]`) and read the node itself
(`out.producer()`), so optional inputs (Conv bias) and attributes are handled in plain Python.
`check` returns a MatchResult with a reason on refusal: tests assert those reasons.
"""

from __future__ import annotations

import itertools

import numpy as np
import onnx_ir as ir
from onnxscript.rewriter.pattern import MatchResult, RewriteRuleClassBase

from .base import RuleContext
from .irutil import const, normalize_axes, rank_of, reduce_axes, shape_of, squeeze

_uid = itertools.count()


class NodeRule(RewriteRuleClassBase):
    """A pattern rule that knows the model opset and target (RuleContext)."""

    def __init__(self, ctx: RuleContext, name: str):
        super().__init__(name=name)
        self.ctx = ctx

    def rule(self):  # type: ignore[override]  # onnxscript's classmethod builds a fresh instance; ours carries ctx
        from onnxscript.rewriter.pattern import RewriteRule

        return RewriteRule(self.pattern, self.rewrite, self.check, name=self.name)

    @property
    def opset(self) -> int:
        return self.ctx.opset

    @staticmethod
    def refuse(reason: str) -> MatchResult:
        return MatchResult().fail(reason)

    @staticmethod
    def initializer(op, array: np.ndarray, base: str) -> ir.Value:
        """A new initializer with a name no other tensor has."""
        return op.initializer(ir.tensor(np.ascontiguousarray(array)), name=f"{base}__npufit{next(_uid)}")


def expand_h(op, x, opset: int, **kw):
    """[N,C,L] -> [N,C,1,L]. Reshape with 0 = "copy this dim" works for dynamic N and L, and Reshape is
    the shuffle op every NPU parser recognises (Unsqueeze is less widely listed)."""
    del opset
    return op.Reshape(x, op.Constant(value=ir.tensor(np.array([0, 0, 1, -1], dtype=np.int64))), **kw)


def on_channel_axis(op, x, axis: int, r: int, keep: bool, opset: int, make):
    """Reduce a rank-3/4 tensor over one axis by moving that axis to the channel axis (1) of a 4-D tensor:
    [N,A,B] -> [N,A,1,B]; Transpose exchanging the axis with 1 (its own inverse); make(op, t) reduces over axis 1
    with keepdims=1; Transpose back; Squeeze to the original result rank. Same values, same first-index ties."""
    t, a4 = (x, axis) if r == 4 else (expand_h(op, x, opset), 1 if axis == 1 else 3)
    perm = None
    if a4 != 1:
        perm = [0, 1, 2, 3]
        perm[1], perm[a4] = a4, 1
        t = op.Transpose(t, perm=perm)
    y = make(op, t)
    if perm is not None:
        y = op.Transpose(y, perm=perm)
    drop = ([] if r == 4 else [2]) + ([] if keep else [a4])
    return squeeze(op, y, sorted(drop), opset) if drop else y


# -- shared tidy-ups: remove the Squeeze -> ... -> expand pairs that per-node rewrites leave behind ---------

UNARY_ELEMENTWISE = (
    "Relu",
    "LeakyRelu",
    "Sigmoid",
    "Tanh",
    "Elu",
    "Selu",
    "HardSigmoid",
    "HardSwish",
    "Softplus",
    "Neg",
    "Abs",
    "Exp",
    "Erf",
    "Celu",
    "Mish",
    "Gelu",
    "Floor",
    "Ceil",
    "Sqrt",
    "Reciprocal",
)
BINARY_ELEMENTWISE = ("Add", "Sub", "Mul", "Div", "PRelu", "Max", "Min", "Pow")


def _squeezed_axes(value: ir.Value) -> tuple[ir.Value, list[int]] | None:
    """If `value` comes from a Squeeze with constant axes: (its input, normalized axes)."""
    node = value.producer()
    if node is None or node.op_type != "Squeeze" or node.domain not in ("", "ai.onnx"):
        return None
    axes, r = reduce_axes(node), rank_of(node.inputs[0])
    if not axes or r is None:
        return None
    return node.inputs[0], normalize_axes(axes, r)


class CancelSqueezeExpand(NodeRule):
    """Reshape([0,0,1,-1]) or Unsqueeze([2]) of Squeeze([2]) of a rank-4 tensor gives that tensor back."""

    def pattern(self, op, x, shape_or_axes):
        return op.Reshape(op.Squeeze(x, _allow_other_inputs=True), shape_or_axes, _outputs=["out"])

    def check(self, context, x, shape_or_axes, out, **_):
        sq = out.producer().inputs[0]
        info = _squeezed_axes(sq)
        if info is None or info[1] != [2] or rank_of(x) != 4:
            return self.refuse("not a Squeeze of axis 2 on a rank-4 tensor")
        s = const(shape_or_axes)
        if s is None or [int(v) for v in s] != [0, 0, 1, -1]:
            return self.refuse("Reshape is not the [0,0,1,-1] re-expansion")
        if out.producer().attributes.get("allowzero") is not None and out.producer().attributes["allowzero"].as_int():
            return self.refuse("allowzero=1 changes what 0 means")
        return True

    def rewrite(self, op, x, **_):
        return x


class SinkSqueezeUnary(NodeRule):
    """f(Squeeze(x)) -> Squeeze(f(x)) for element-wise f: moves the rank change toward the next one."""

    def __init__(self, ctx, op_type: str):
        super().__init__(ctx, f"sink_squeeze_{op_type}")
        self.op_type = op_type

    def pattern(self, op, x):
        return getattr(op, self.op_type)(op.Squeeze(x, _allow_other_inputs=True), _outputs=["out"])

    def check(self, context, x, out, **_):
        node = out.producer()
        if len(node.outputs) > 1 and node.outputs[1].uses():
            return self.refuse("second output (Dropout mask) is used")
        return _squeezed_axes(node.inputs[0]) is not None or self.refuse("Squeeze axes are not constant")

    def rewrite(self, op, x, out, **_):
        node = out.producer()
        sq = node.inputs[0].producer()
        y = getattr(op, self.op_type)(x, *node.inputs[1:], **dict(node.attributes.items()))
        return op.Squeeze(y, *sq.inputs[1:], **dict(sq.attributes.items()))


class SinkSqueezeBinary(NodeRule):
    """g(Squeeze(a), b) -> Squeeze(g(a, b')) where b' is b re-expanded (another Squeeze of the same axes
    is undone; a constant gets the axis inserted so it broadcasts exactly as before)."""

    def __init__(self, ctx, op_type: str, squeezed_first: bool):
        super().__init__(ctx, f"sink_squeeze_{op_type}_{int(squeezed_first)}")
        self.op_type, self.first = op_type, squeezed_first

    def pattern(self, op, x, other):
        sq = op.Squeeze(x, _allow_other_inputs=True)
        args = (sq, other) if self.first else (other, sq)
        return getattr(op, self.op_type)(*args, _outputs=["out"])

    def _other_plan(self, x, other):
        info = _squeezed_axes(other)
        r_out = rank_of(x)
        if info is not None and r_out is not None:
            return ("squeezed", info[0]) if rank_of(info[0]) == r_out else None
        c = const(other)
        return None if c is None else ("const", c)

    def check(self, context, x, other, out, **_):
        node = out.producer()
        info = _squeezed_axes(node.inputs[0 if self.first else 1])
        if info is None:
            return self.refuse("Squeeze axes are not constant")
        oinfo = _squeezed_axes(other)
        if oinfo is not None and oinfo[1] != info[1]:
            return self.refuse("the other operand is squeezed on different axes")
        plan = self._other_plan(x, other)
        if plan is None:
            return self.refuse("the other operand is neither constant nor squeezed the same way")
        if plan[0] == "const" and len(info[1]) != 1:
            return self.refuse("constant re-broadcast is only done for one squeezed axis")
        return True

    def rewrite(self, op, x, other, out, **_):
        node = out.producer()
        sq = node.inputs[0 if self.first else 1].producer()
        axes = _squeezed_axes(sq.outputs[0])[1]
        kind, val = self._other_plan(x, other)
        if kind == "const":
            r_big = rank_of(x)
            for a in axes:  # insert each removed axis where it falls in the constant's right-aligned dims
                pos = a - (r_big - (val.ndim + 1))
                if 0 <= pos <= val.ndim:
                    val = np.expand_dims(val, pos)
            val = self.initializer(op, val, other.name or "const")
        args = (x, val) if self.first else (val, x)
        y = getattr(op, self.op_type)(*args, **dict(node.attributes.items()))
        return op.Squeeze(y, *sq.inputs[1:], **dict(sq.attributes.items()))


def split_squeeze_fanout(model: ir.Model) -> None:
    """Give every consumer of a Squeeze its own copy, so each branch can sink and cancel it on its own
    (pattern matching refuses to remove a node whose output is also read elsewhere). CSE re-merges leftovers."""
    graph = model.graph
    for node in list(graph):
        if node.op_type != "Squeeze" or node.domain not in ("", "ai.onnx"):
            continue
        out = node.outputs[0]
        uses = list(out.uses())
        if len(uses) < 2 or out.is_graph_output():
            continue
        for use in uses[1:]:
            clone = ir.Node(
                node.domain,
                node.op_type,
                list(node.inputs),
                attributes=list(node.attributes.values()),
                num_outputs=1,
                name=f"{node.name}_copy{next(_uid)}",
            )
            clone.outputs[0].shape, clone.outputs[0].type = out.shape, out.type
            graph.insert_after(node, clone)
            use.node.replace_input_with(use.idx, clone.outputs[0])


def layout_cleanup(ctx: RuleContext) -> list:
    rules = [CancelSqueezeExpand(ctx, "cancel_squeeze_expand").rule()]
    rules += [SinkSqueezeUnary(ctx, t).rule() for t in UNARY_ELEMENTWISE]
    rules += [SinkSqueezeBinary(ctx, t, f).rule() for t in BINARY_ELEMENTWISE for f in (True, False)]
    return rules


def static_dims(value: ir.Value) -> tuple[int, ...] | None:
    s = shape_of(value)
    return s if s is not None and all(isinstance(d, int) for d in s) else None

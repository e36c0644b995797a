"""linear_to_conv1x1: Gemm/MatMul with a constant weight on a rank-2 or rank-4 activation -> 1x1 Conv.

Seed 000: "a very large Linear can be made NPU-friendly as a 1x1 convolution". Rank-2 [N,K] becomes
[N,K,1,1] -> Conv -> Flatten; rank-4 [N,C,H,K] @ W is a 1x1 Conv over K after moving K to the channel
axis (Transpose in and out).
"""

from __future__ import annotations

import numpy as np

from ..base import RewriteRule, RuleContext
from ..irutil import attr_int, const, rank_of
from ..pattern import NodeRule

NAME = "linear_to_conv1x1"


def _gemm_weights(node):
    """(W[M,K], bias[M] | None) of a Gemm, or a refusal reason."""
    if attr_int(node, "transA", 0):
        return "transA=1"
    b = const(node.inputs[1])
    if b is None or b.ndim != 2:
        return "the weight is not a constant matrix (activation x activation)"
    alpha = node.attributes.get("alpha")
    beta = node.attributes.get("beta")
    alpha = 1.0 if alpha is None else float(alpha.as_float())
    beta = 1.0 if beta is None else float(beta.as_float())
    w = b if attr_int(node, "transB", 0) else b.T
    c = None
    if len(node.inputs) > 2 and node.inputs[2] is not None:
        c = const(node.inputs[2])
        if c is None:
            return "the bias is not constant"
        if c.size not in (1, w.shape[0]):
            return "the bias is not a per-output-channel vector"
        c = np.broadcast_to(c.reshape(-1), (w.shape[0],)) * beta
    w = w * alpha if alpha != 1.0 else w
    return w.astype(b.dtype), (None if c is None else c.astype(b.dtype))


class GemmToConv(NodeRule):
    def pattern(self, op, a, b):
        return op.Gemm(a, b, _allow_other_inputs=True, _outputs=["out"])

    def check(self, context, a, b, out, **_):
        if rank_of(a) != 2:
            return self.refuse("activation rank is not 2")
        plan = _gemm_weights(out.producer())
        return self.refuse(plan) if isinstance(plan, str) else True

    def rewrite(self, op, a, b, out, **_):
        w, c = _gemm_weights(out.producer())
        return _conv_rank2(self, op, a, w, c, b.name)


class MatMulToConv(NodeRule):
    def pattern(self, op, a, b):
        return op.MatMul(a, b, _outputs=["out"])

    def check(self, context, a, b, out, **_):
        wb = const(b)
        if wb is None or wb.ndim != 2:
            return self.refuse("the weight is not a constant matrix (activation x activation)")
        if rank_of(a) not in (2, 4):
            return self.refuse("activation rank is not 2 or 4")
        return True

    def rewrite(self, op, a, b, out, **_):
        w = const(b).T
        if rank_of(a) == 2:
            return _conv_rank2(self, op, a, w, None, b.name)
        w4 = self.initializer(op, w[:, :, None, None], b.name or "w")
        y = op.Conv(op.Transpose(a, perm=[0, 3, 1, 2]), w4, kernel_shape=[1, 1])
        return op.Transpose(y, perm=[0, 2, 3, 1])


def _conv_rank2(rule: NodeRule, op, a, w, c, base):
    w4 = rule.initializer(op, w[:, :, None, None], base or "w")
    x4 = op.Reshape(a, op.Constant(value=_ints([0, -1, 1, 1])))
    args = [x4, w4] + ([rule.initializer(op, c, (base or "w") + "_bias")] if c is not None else [])
    return op.Flatten(op.Conv(*args, kernel_shape=[1, 1]), axis=1)


def _ints(v):
    import onnx_ir as ir

    return ir.tensor(np.array(v, dtype=np.int64))


def _patterns(ctx: RuleContext) -> list:
    return [GemmToConv(ctx, f"{NAME}_gemm").rule(), MatMulToConv(ctx, f"{NAME}_matmul").rule()]


RULE = RewriteRule(
    name=NAME,
    summary="Gemm/MatMul with a constant weight on a rank-2 activation -> Reshape [N,K,1,1] + 1x1 Conv + Flatten; "
    "rank-4 MatMul -> Transpose + 1x1 Conv + Transpose",
    exact=True,
    ops=("Gemm", "MatMul"),
    patterns=_patterns,
    notes="refuses activation x activation products, transA=1, non-vector biases, activation ranks other than 2/4",
)

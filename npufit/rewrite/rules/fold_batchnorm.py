"""fold_batchnorm: Conv -> BatchNormalization (inference, constant statistics) -> one Conv with scaled weights.

W' = W * s (per output channel), B' = (B - mean) * s + beta with s = gamma / sqrt(var + eps); computed
in float64 and stored in the weight dtype, so the result differs from the original only by rounding.
"""

from __future__ import annotations

import numpy as np

from ..base import RewriteRule, RuleContext
from ..irutil import attr_int, const
from ..pattern import NodeRule

NAME = "fold_batchnorm"


class FoldBN(NodeRule):
    def pattern(self, op, x, w, scale, bias, mean, var):
        y = op.Conv(x, w, _allow_other_inputs=True)
        return op.BatchNormalization(y, scale, bias, mean, var, _outputs=["out"])

    def check(self, context, x, w, scale, bias, mean, var, out, **_):
        bn = out.producer()
        if attr_int(bn, "training_mode", 0):
            return self.refuse("BatchNormalization runs in training mode")
        vals = [const(v) for v in (w, scale, bias, mean, var)]
        if any(v is None for v in vals):
            return self.refuse("the Conv weight or the BatchNormalization statistics are not constant")
        conv = bn.inputs[0].producer()
        if len(conv.inputs) > 2 and conv.inputs[2] is not None and const(conv.inputs[2]) is None:
            return self.refuse("the Conv bias is not constant")
        if vals[0].shape[0] != vals[1].size:
            return self.refuse("channel counts of Conv and BatchNormalization differ")
        return True

    def rewrite(self, op, x, w, scale, bias, mean, var, out, **_):
        bn = out.producer()
        conv = bn.inputs[0].producer()
        a = bn.attributes.get("epsilon")
        eps = 1e-5 if a is None else float(a.as_float())
        wv = const(w)
        g, b, m, v = (const(t).astype(np.float64).reshape(-1) for t in (scale, bias, mean, var))
        s = g / np.sqrt(v + eps)
        cb = (
            const(conv.inputs[2]).astype(np.float64)
            if len(conv.inputs) > 2 and conv.inputs[2] is not None
            else np.zeros_like(m)
        )
        w2 = (wv.astype(np.float64) * s.reshape((-1,) + (1,) * (wv.ndim - 1))).astype(wv.dtype)
        b2 = ((cb - m) * s + b).astype(wv.dtype)
        attrs = dict(conv.attributes.items())
        return op.Conv(
            x, self.initializer(op, w2, w.name or "w"), self.initializer(op, b2, (w.name or "w") + "_bias"), **attrs
        )


def _patterns(ctx: RuleContext) -> list:
    return [FoldBN(ctx, NAME).rule()]


RULE = RewriteRule(
    name=NAME,
    summary="Conv -> BatchNormalization (inference, constant stats) -> one Conv with folded weights and bias",
    exact=True,
    ops=("BatchNormalization",),
    patterns=_patterns,
    notes="refuses training-mode BN, non-constant weights or statistics, and a Conv output read by other nodes",
)

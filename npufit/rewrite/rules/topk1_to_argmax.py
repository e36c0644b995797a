"""topk1_to_argmax: TopK with k=1 -> ArgMax (indices) + ReduceMax (values); ArgMin + ReduceMin for largest=0.

Seed 002 (DEIMv2 on Hailo-8): "TopK: k=1 is converted to ArgMax". Semantics match: TopK returns
the lower index first among equal values, and ArgMax with select_last_index=0 returns the first
occurrence; both give int64 indices and keep the reduced axis with size 1. The sorted attribute
is irrelevant for one element.
"""

from __future__ import annotations

from ..base import RewriteRule, RuleContext
from ..irutil import attr_int, const, normalize_axes, rank_of, reduce
from ..pattern import NodeRule, on_channel_axis

NAME = "topk1_to_argmax"


class TopK1(NodeRule):
    def pattern(self, op, x, k):
        return op.TopK(x, k, _outputs=["values", "indices"])

    def check(self, context, x, k, values, **_):
        kv = const(k)
        if kv is None:
            return self.refuse("k is not a constant")
        if kv.size != 1 or int(kv.reshape(-1)[0]) != 1:
            return self.refuse(
                f"k={int(kv.reshape(-1)[0]) if kv.size == 1 else kv.tolist()}: ArgMax only gives the top-1 element"
            )
        return True

    def rewrite(self, op, x, k, values, **_):
        node = values.producer()
        axis, largest = attr_int(node, "axis", -1), attr_int(node, "largest", 1)
        red, arg = ("ReduceMax", "ArgMax") if largest else ("ReduceMin", "ArgMin")
        r = rank_of(x)
        a = normalize_axes([axis], r)[0] if r else axis
        if self.ctx.options.get("channel_axis") and r in (3, 4) and a != 1:
            # the target reduces only over channels: same layout trick as reduce_keepdims
            vals = on_channel_axis(op, x, a, r, True, self.opset, lambda o, t: reduce(o, red, t, [1], 1, self.opset))
            idx = on_channel_axis(op, x, a, r, True, self.opset, lambda o, t: getattr(o, arg)(t, axis=1, keepdims=1))
            return vals, idx
        return reduce(op, red, x, [axis], 1, self.opset), getattr(op, arg)(x, axis=axis, keepdims=1)


def _patterns(ctx: RuleContext) -> list:
    return [TopK1(ctx, NAME).rule()]


RULE = RewriteRule(
    name=NAME,
    summary="TopK k=1 -> ArgMax (indices, int64, first index on ties) + ReduceMax (values); ArgMin/ReduceMin when "
    "largest=0; with channel_axis (hailo) both run over the channel axis of a 4-D tensor",
    exact=True,
    ops=("TopK",),
    patterns=_patterns,
    notes="refuses k != 1 and non-constant k (keep those on the host: npufit split); the values branch is removed when "
    "unused",
)

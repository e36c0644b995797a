"""reduce_keepdims: ReduceMax/ReduceMin with keepdims=0 -> keepdims=1 + Squeeze; on targets that only reduce
over the channel axis (Hailo: "Reduce max is only supported on the features axis, and with keepdim=True"),
a single-axis reduction over H or W of a rank-4 tensor is moved to the channel axis with two Transposes.

Seed 002 (DEIMv2 on Hailo-8): ReduceMax(keepdims=0) was one of the parser failures.
"""

from __future__ import annotations

from ..base import RewriteRule, RuleContext
from ..irutil import attr_int, normalize_axes, rank_of, reduce, reduce_axes, squeeze
from ..pattern import NodeRule, on_channel_axis

NAME = "reduce_keepdims"


def _plan(node, x, channel_axis: bool):
    """(axes, keepdims, swap) or a refusal reason. swap: the axis to exchange with the channel axis."""
    if attr_int(node, "noop_with_empty_axes", 0):
        return "noop_with_empty_axes=1"
    axes, r = reduce_axes(node), rank_of(x)
    if axes is None:
        return "axes are not constant"
    if r is None:
        return "input rank unknown"
    axes = normalize_axes(axes, r) if axes else list(range(r))
    keep = attr_int(node, "keepdims", 1)
    move = channel_axis and r in (3, 4) and len(axes) == 1 and axes != [1]
    if keep and not move:
        return "already keepdims=1" + (" on the channel axis" if axes == [1] else "")
    return axes, keep, move


class KeepdimsReduce(NodeRule):
    def __init__(self, ctx: RuleContext, op_type: str):
        super().__init__(ctx, f"{NAME}_{op_type}")
        self.op_type = op_type

    @property
    def channel_axis(self) -> bool:
        return bool(self.ctx.options.get("channel_axis"))

    def pattern(self, op, x):
        return getattr(op, self.op_type)(x, _allow_other_inputs=True, _outputs=["out"])

    def check(self, context, x, out, **_):
        plan = _plan(out.producer(), x, self.channel_axis)
        return self.refuse(plan) if isinstance(plan, str) else True

    def rewrite(self, op, x, out, **_):
        axes, keep, move = _plan(out.producer(), x, self.channel_axis)
        if move:
            return on_channel_axis(
                op,
                x,
                axes[0],
                rank_of(x),
                bool(keep),
                self.opset,
                lambda o, t: reduce(o, self.op_type, t, [1], 1, self.opset),
            )
        y = reduce(op, self.op_type, x, axes, 1, self.opset)
        return y if keep else squeeze(op, y, axes, self.opset)


def _patterns(ctx: RuleContext) -> list:
    return [KeepdimsReduce(ctx, t).rule() for t in ("ReduceMax", "ReduceMin")]


RULE = RewriteRule(
    name=NAME,
    summary="ReduceMax/ReduceMin keepdims=0 -> keepdims=1 + Squeeze; with the target option channel_axis (hailo), a "
    "single-axis reduction of a rank-3/4 tensor -> 4-D + Transpose + reduce over channels + Transpose + Squeeze",
    exact=True,
    ops=("ReduceMax", "ReduceMin"),
    patterns=_patterns,
    notes="refuses non-constant axes, unknown ranks, noop_with_empty_axes=1, and reductions already in the target's "
    "form",
)

"""conv1d_to_conv2d: rank-3 Conv (nn.Conv1d) -> Reshape to [N,C,1,L] + Conv with a (1,k) kernel + Squeeze.

Seed 000: Conv1d times out in the Hailo compiler; Conv2d with a (1,k) kernel compiles. Chains of
Conv1d/activations keep the 4-D layout: the shared tidy-ups sink each Squeeze through element-wise
ops and cancel it against the next Conv's re-expansion.
"""

from __future__ import annotations

from ..base import RewriteRule, RuleContext
from ..irutil import attr_ints, const, rank_of, squeeze
from ..pattern import NodeRule, expand_h, layout_cleanup, split_squeeze_fanout

NAME = "conv1d_to_conv2d"


class Conv1dToConv2d(NodeRule):
    def pattern(self, op, x, w):
        return op.Conv(x, w, _allow_other_inputs=True, _outputs=["out"])

    def check(self, context, x, w, out, **_):
        if rank_of(x) != 3 and rank_of(w) != 3:
            return self.refuse("not a 1-D convolution (input and weight are not rank-3)")
        if rank_of(w) != 3:
            return self.refuse("weight rank unknown")
        return True

    def rewrite(self, op, x, w, out, **_):
        node = out.producer()
        wv = const(w)
        w4 = self.initializer(op, wv[:, :, None, :], w.name or "w") if wv is not None else expand_h(op, w, self.opset)
        attrs = {}
        for name, pad_h in (("kernel_shape", 1), ("strides", 1), ("dilations", 1)):
            v = attr_ints(node, name)
            if v is not None:
                attrs[name] = [pad_h, *v]
        pads = attr_ints(node, "pads")
        if pads is not None:
            attrs["pads"] = [0, pads[0], 0, pads[1]]
        for name in ("group", "auto_pad"):
            if name in node.attributes:
                attrs[name] = node.attributes[name]
        bias = node.inputs[2:3] if len(node.inputs) > 2 and node.inputs[2] is not None else []
        y = op.Conv(expand_h(op, x, self.opset), w4, *bias, **attrs)
        return squeeze(op, y, [2], self.opset)


def _patterns(ctx: RuleContext) -> list:
    return [Conv1dToConv2d(ctx, NAME).rule()]


RULE = RewriteRule(
    name=NAME,
    summary="rank-3 Conv (Conv1d) -> Reshape [N,C,1,L] + Conv with kernel (1,k) + Squeeze; chains stay 4-D",
    exact=True,
    ops=("Conv",),
    patterns=_patterns,
    cleanup=layout_cleanup,
    prepare_cleanup=split_squeeze_fanout,
    notes="fires on any Conv whose weight is rank-3; a non-constant weight is reshaped in the graph",
)

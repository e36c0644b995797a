"""merge_reshapes: a chain of layout-only ops (Reshape/Flatten/Squeeze/Unsqueeze) feeding a Reshape -> one Reshape
to the final static shape.

A reshape never moves data, so only the last shape matters. Seed 000's `flatten(2)` before a Conv1d leaves, after
conv1d_to_conv2d, Reshape [N,C,H*W] -> Reshape [N,C,1,H*W] -> Conv: the rank-3 intermediate is what Hailo cuts
(rank-3 tensors between convolutions), while the merged rank-4 Reshape feeds the Conv directly.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from ..base import RewriteRule, RuleContext
from ..pattern import NodeRule, static_dims

NAME = "merge_reshapes"
LAYOUT_OPS = ("Reshape", "Flatten", "Squeeze", "Unsqueeze")


class MergeIntoReshape(NodeRule):
    def __init__(self, ctx: RuleContext, first: str):
        super().__init__(ctx, f"{NAME}_{first}")
        self.first = first

    def pattern(self, op, x, shape):
        mid = getattr(op, self.first)(x, _allow_other_inputs=True, _outputs=["mid"])
        return op.Reshape(mid, shape, _allow_other_attributes=True, _outputs=["out"])

    def check(self, context, x, shape, mid, out, **_):
        if static_dims(out) is None:
            return self.refuse("the final shape is not static (pin dynamic inputs with --input-shape)")
        if static_dims(x) is None:
            return self.refuse("the chain's input shape is not static")
        return True

    def rewrite(self, op, x, shape, mid, out, **_):
        final = np.array(static_dims(out), dtype=np.int64)
        return op.Reshape(x, op.Constant(value=ir.tensor(final)))


def _patterns(ctx: RuleContext) -> list:
    return [MergeIntoReshape(ctx, first).rule() for first in LAYOUT_OPS]


RULE = RewriteRule(
    name=NAME,
    summary="Reshape/Flatten/Squeeze/Unsqueeze -> Reshape chains -> one Reshape to the final static shape",
    exact=True,
    ops=("Reshape",),
    patterns=_patterns,
    notes="needs static input and output shapes; the intermediate op stays when something else reads it",
)

"""remove_identity: Identity and inference-mode Dropout are no-ops; some parsers still choke on them."""

from __future__ import annotations

from ..base import RewriteRule, RuleContext
from ..irutil import const
from ..pattern import NodeRule

NAME = "remove_identity"


class DropNoop(NodeRule):
    def __init__(self, ctx: RuleContext, op_type: str, n_out: int = 1):
        super().__init__(ctx, f"{NAME}_{op_type}{n_out}")
        self.op_type, self.n_out = op_type, n_out

    def pattern(self, op, x):
        return getattr(op, self.op_type)(x, _allow_other_inputs=True, _outputs=["out", "mask"][: self.n_out])

    def check(self, context, x, out, mask=None, **_):
        node = out.producer()
        if mask is not None and (mask.uses() or mask.is_graph_output()):
            return self.refuse("the Dropout mask output is used")
        if self.op_type == "Dropout" and len(node.inputs) > 2 and node.inputs[2] is not None:
            t = const(node.inputs[2])
            if t is None or bool(t.reshape(-1)[0]):
                return self.refuse("training_mode is not a constant false")
        if out.is_graph_output() and (x.is_graph_input() or x.is_graph_output() or x.const_value is not None):
            return self.refuse("its output is a graph output fed directly by a graph input, output or initializer")
        return True

    def rewrite(self, op, x, out, mask=None, **_):
        return x if mask is None else (x, None)


def _patterns(ctx: RuleContext) -> list:
    return [DropNoop(ctx, "Identity").rule(), DropNoop(ctx, "Dropout").rule(), DropNoop(ctx, "Dropout", 2).rule()]


RULE = RewriteRule(
    name=NAME,
    summary="Identity and inference-mode Dropout (mask unused) -> their input",
    exact=True,
    ops=("Identity", "Dropout"),
    patterns=_patterns,
    notes="keeps an Identity that connects a graph input or initializer straight to a graph output",
)

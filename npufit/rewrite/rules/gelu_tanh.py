"""gelu_tanh (APPROXIMATE): Erf-based GELU -> tanh form 0.5*x*(1 + tanh(sqrt(2/pi)*(x + 0.044715*x^3))).

Erf is rejected by the Hailo parser outside the exporter's own GELU pattern ("Unexpected activation
... op=Erf") and runs on the CPU on RK3588; Tanh runs on every NPU here. The two forms differ by up
to ~5e-4 per activation, so this rule runs only with --allow-approx and fix reports the measured error.
"""

from __future__ import annotations

import math

import numpy as np
import onnx_ir as ir

from ..base import RewriteRule, RuleContext
from ..irutil import const, dtype_of
from ..pattern import NodeRule

NAME = "gelu_tanh"
SQRT2 = math.sqrt(2.0)


def _scalar(v, want: float) -> bool:
    c = const(v)
    return c is not None and c.size == 1 and abs(float(c.reshape(-1)[0]) - want) <= 1e-5 * abs(want)


class _GeluBase(NodeRule):
    def rewrite(self, op, x, **_):
        dt = dtype_of(x) or np.dtype(np.float32)

        def c(v):
            return op.Constant(value=ir.tensor(np.array(v, dtype=dt)))

        inner = op.Mul(op.Add(x, op.Mul(op.Mul(op.Mul(x, x), x), c(0.044715))), c(math.sqrt(2.0 / math.pi)))
        return op.Mul(op.Mul(x, op.Add(op.Tanh(inner), c(1.0))), c(0.5))


class ErfGeluDiv(_GeluBase):
    """torch.onnx export of F.gelu: Mul(Mul(x, Add(Erf(Div(x, sqrt2)), 1)), 0.5)."""

    def pattern(self, op, x, k, one, half):
        return op.Mul(op.Mul(x, op.Add(op.Erf(op.Div(x, k)), one)), half)

    def check(self, context, x, k, one, half, **_):
        ok = _scalar(k, SQRT2) and _scalar(one, 1.0) and _scalar(half, 0.5)
        return ok or self.refuse("constants are not sqrt(2), 1 and 0.5: not an exact-GELU pattern")


class ErfGeluMul(_GeluBase):
    """Keras/TF style: Mul(Mul(x, 0.5), Add(Erf(Mul(x, 1/sqrt2)), 1))."""

    def pattern(self, op, x, k, one, half):
        return op.Mul(op.Mul(x, half), op.Add(op.Erf(op.Mul(x, k)), one))

    def check(self, context, x, k, one, half, **_):
        ok = _scalar(k, 1.0 / SQRT2) and _scalar(one, 1.0) and _scalar(half, 0.5)
        return ok or self.refuse("constants are not 1/sqrt(2), 1 and 0.5: not an exact-GELU pattern")


class GeluOp(NodeRule):
    """ONNX Gelu (opset 20) with approximate='none' -> approximate='tanh'."""

    def pattern(self, op, x):
        return op.Gelu(x, _outputs=["out"])

    def check(self, context, x, out, **_):
        a = out.producer().attributes.get("approximate")
        return (a is None or a.as_string() == "none") or self.refuse("already approximate='tanh'")

    def rewrite(self, op, x, out, **_):
        return op.Gelu(x, approximate="tanh")


def _patterns(ctx: RuleContext) -> list:
    rules = []
    for cls in (ErfGeluDiv, ErfGeluMul):
        rules.extend(cls(ctx, NAME).rule().commute())  # operand order of Add/Mul varies between exporters
    return rules + [GeluOp(ctx, f"{NAME}_op").rule()]


RULE = RewriteRule(
    name=NAME,
    summary="APPROXIMATE: Erf-based GELU (torch/Keras export patterns, ONNX Gelu) -> tanh-form GELU",
    exact=False,
    ops=("Erf", "Gelu"),
    patterns=_patterns,
    notes="max deviation of the activation itself is ~5e-4; runs only with --allow-approx",
)

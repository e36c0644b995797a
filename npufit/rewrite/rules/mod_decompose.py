"""mod_decompose: Mod -> Div/Mul/Sub (+Floor/Abs/Sign for floats, +Where for Python-style integer mod).

ONNX semantics, reproduced exactly:
- float (fmod must be 1, C fmod, sign of the dividend): a - b * trunc(a / b), trunc(q) = Sign(q) * Floor(Abs(q));
- integer, fmod=1 (C %): a - b * Div(a, b), ONNX integer Div truncates toward zero;
- integer, fmod=0 (Python %, sign of the divisor): r = a - b * Div(a, b); r + b where r != 0 and sign(r) != sign(b).
Seed 002 (DEIMv2 on Hailo-8): "Mod operation is unsupported".
"""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from ..base import RewriteRule, RuleContext
from ..irutil import attr_int, dtype_of
from ..pattern import NodeRule

NAME = "mod_decompose"


class ModDecompose(NodeRule):
    def pattern(self, op, a, b):
        return op.Mod(a, b, _outputs=["out"])

    def check(self, context, a, b, out, **_):
        dt = dtype_of(a)
        if dt is None:
            return self.refuse("input dtype unknown")
        if np.issubdtype(dt, np.floating) and not attr_int(out.producer(), "fmod", 0):
            return self.refuse("float Mod with fmod=0 is invalid ONNX")
        if not (np.issubdtype(dt, np.floating) or np.issubdtype(dt, np.integer)):
            return self.refuse(f"dtype {dt} is neither float nor integer")
        return True

    def rewrite(self, op, a, b, out, **_):
        dt = dtype_of(a)
        if np.issubdtype(dt, np.floating):
            q = op.Div(a, b)
            trunc = op.Mul(op.Sign(q), op.Floor(op.Abs(q)))
            return op.Sub(a, op.Mul(b, trunc))
        r = op.Sub(a, op.Mul(b, op.Div(a, b)))
        if attr_int(out.producer(), "fmod", 0):
            return r
        zero = op.Constant(value=ir.tensor(np.zeros((), dtype=dt)))
        differ = op.Xor(op.Less(r, zero), op.Less(b, zero))
        fix = op.And(op.Not(op.Equal(r, zero)), differ)
        return op.Where(fix, op.Add(r, b), r)


def _patterns(ctx: RuleContext) -> list:
    return [ModDecompose(ctx, NAME).rule()]


RULE = RewriteRule(
    name=NAME,
    summary="Mod -> Div/Mul/Sub with Sign/Floor/Abs (float, fmod=1) or Where (integer, fmod=0): ONNX semantics exactly",
    exact=True,
    ops=("Mod",),
    patterns=_patterns,
    notes="float: equal to fmod unless a/b rounds across an integer (|a/b| near 2^24); integer division by zero is "
    "undefined in both forms",
)

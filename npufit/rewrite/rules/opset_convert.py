"""opset_convert: convert the model to the opset a target officially supports (Hailo: 8 and 11) with
onnx.version_converter. Verified with ONNX Runtime like every other rule."""
from __future__ import annotations

import onnx_ir as ir

from ..base import RewriteRule, RuleContext, RuleNotApplicable
from ..irutil import opset_of

NAME = "opset_convert"


def _run(model: ir.Model, ctx: RuleContext) -> tuple[ir.Model, int]:
    target = ctx.options.get("opset")
    if not target:
        raise RuleNotApplicable(f"{ctx.target or 'this target'} names no opset to convert to")
    current = opset_of(model)
    accepted = tuple(ctx.options.get("accepted", ())) or (int(target),)
    if current in accepted:
        return model, 0
    import onnx
    from onnx import version_converter

    proto = ir.serde.serialize_model(model)
    try:
        converted = version_converter.convert_version(proto, int(target))
        onnx.checker.check_model(converted)
    except Exception as e:  # an op without an adapter (LayerNormalization to < 17, ...)
        msg = str(e).strip().splitlines()[-1][:200] if str(e).strip() else type(e).__name__
        raise RuleNotApplicable(f"onnx.version_converter cannot convert opset {current} -> {target}: {msg}") from None
    return ir.serde.deserialize_model(converted), 1


RULE = RewriteRule(
    name=NAME,
    summary="convert to the target's supported opset (hailo8: 11) with onnx.version_converter",
    exact=True,
    ops=(),
    run=_run,
    notes="does nothing when the opset is already accepted; reports the converter's error when an op has no adapter",
)

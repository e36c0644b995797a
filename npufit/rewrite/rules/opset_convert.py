"""opset_convert: convert the model to the opset a target officially supports (Hailo: 8 and 11).

First onnx.version_converter; it has few down-conversion adapters (e.g. none for Mul 14 -> 13), so
when it refuses, a conservative downgrade follows: axes inputs that became attributes (Squeeze,
Unsqueeze, ReduceSum < 13, Reduce* < 18, Split < 13) go back to attributes when constant, every other
node is kept as it is, and the result must pass onnx.checker with full shape inference at the new
opset. Like every rule, fix then verifies it numerically with ONNX Runtime.
"""

from __future__ import annotations

import re

import numpy as np
import onnx
import onnx_ir as ir
from onnx import helper, numpy_helper

from ..base import RewriteRule, RuleContext, RuleNotApplicable, remove_unused
from ..irutil import opset_of

NAME = "opset_convert"
AXES_INPUT_SINCE = {
    "Squeeze": 13,
    "Unsqueeze": 13,
    "ReduceSum": 13,
    "Split": 13,
    "ReduceMax": 18,
    "ReduceMin": 18,
    "ReduceMean": 18,
    "ReduceProd": 18,
    "ReduceL1": 18,
    "ReduceL2": 18,
    "ReduceLogSum": 18,
    "ReduceLogSumExp": 18,
    "ReduceSumSquare": 18,
}


def _run(model: ir.Model, ctx: RuleContext) -> tuple[ir.Model, int]:
    target = ctx.options.get("opset")
    if not target:
        raise RuleNotApplicable(f"{ctx.target or 'this target'} names no opset to convert to")
    current, target = opset_of(model), int(target)
    accepted = tuple(ctx.options.get("accepted", ())) or (target,)
    if current in accepted:
        return model, 0
    proto = ir.serde.serialize_model(model)
    try:
        converted = onnx.version_converter.convert_version(proto, target)
        onnx.checker.check_model(converted, full_check=True)
    except Exception as e:
        first = _message(e)
        if target > current:
            raise RuleNotApplicable(f"cannot convert opset {current} -> {target}: {first}") from None
        converted = _downgrade(proto, current, target, first)
    out = ir.serde.deserialize_model(converted)
    remove_unused(out)  # Constant nodes that held axes
    return out, 1


_NO_ADAPTER = re.compile(r"No Adapter (?:From|To) Version \$?(\d+) for (\w+)")
_BAD_NODE = re.compile(r"Bad node spec for node\. Name: (.*?) OpType: (\w+)")


def _message(e: Exception) -> str:
    """ONNX's C++ message in plain words ("No Adapter From Version $14 for Mul" is the converter's)."""
    msg = str(e).strip() or type(e).__name__
    m = _NO_ADAPTER.search(msg)
    if m:
        return f"ONNX's version converter cannot take {m[2]} from opset {m[1]} down"
    m = _BAD_NODE.search(msg)
    if m:
        return f"{m[2]} '{m[1]}' is not valid there"
    return msg.splitlines()[-1].split("failed: ")[-1][:200]  # drop the C++ source location


def _downgrade(proto: onnx.ModelProto, current: int, target: int, why: str) -> onnx.ModelProto:
    m = onnx.ModelProto()
    m.CopyFrom(proto)
    consts = {t.name: t for t in m.graph.initializer}
    consts.update(
        {
            n.output[0]: n.attribute[0].t
            for n in m.graph.node
            if n.op_type == "Constant" and n.attribute and n.attribute[0].name == "value"
        }
    )
    for node in m.graph.node:
        if node.domain not in ("", "ai.onnx"):
            continue
        try:
            onnx.defs.get_schema(node.op_type, target, "")
        except onnx.defs.SchemaError:
            raise RuleNotApplicable(f"{node.op_type} does not exist in opset {target} ({why})") from None
        since = AXES_INPUT_SINCE.get(node.op_type)
        if since and current >= since > target and len(node.input) > 1 and node.input[1]:
            src = consts.get(node.input[1])
            if src is None:
                raise RuleNotApplicable(
                    f"{node.op_type} '{node.name}' has non-constant axes; opset {target} needs them as an attribute"
                )
            vals = [int(v) for v in np.atleast_1d(numpy_helper.to_array(src))]
            node.attribute.append(helper.make_attribute("split" if node.op_type == "Split" else "axes", vals))
            del node.input[1]
    for o in m.opset_import:
        if o.domain in ("", "ai.onnx"):
            o.version = target
    try:
        onnx.checker.check_model(m, full_check=True)
    except Exception as e:
        raise RuleNotApplicable(
            f"cannot convert opset {current} -> {target}: {why}, and relabelling the model as opset {target} is not "
            f"valid ONNX ({_message(e)})"
        ) from None
    return m


RULE = RewriteRule(
    name=NAME,
    summary="convert to the target's supported opset (hailo8: 11) with onnx.version_converter, else a checked "
    "conservative downgrade (axes inputs -> attributes)",
    exact=True,
    ops=(),
    run=_run,
    keep_when_neutral=True,  # the target asks for this opset even when no verdict changes
    notes="does nothing when the opset is already accepted; reports why when an op cannot exist at the target opset",
)

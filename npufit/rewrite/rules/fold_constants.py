"""fold_constants: evaluate nodes whose inputs are all known at export time (shape arithmetic on static
shapes, Tile/Expand/ConstantOfShape/Where/Range on constants) and store their results as initializers.

Hailo rejects Expand, ConstantOfShape and Where nodes even when their result is a constant; the
folded model carries the values instead. Uses onnxscript's constant folder (ONNX reference kernels).
"""

from __future__ import annotations

import onnx_ir as ir

from ..base import RewriteRule, RuleContext, infer_ir_shapes, remove_unused

NAME = "fold_constants"
OUTPUT_LIMIT = 1 << 22  # elements: folding a huge Expand would bloat the file more than it helps
INPUT_LIMIT = 1 << 22
ALWAYS = {"ConstantOfShape", "Tile", "Expand", "Where", "Range"}  # onnxscript skips some of these by default


def _count(model: ir.Model) -> int:
    return sum(1 for n in model.graph.all_nodes() if n.op_type != "Constant")


def _run(model: ir.Model, ctx: RuleContext) -> tuple[ir.Model, int]:
    import logging

    before = _count(model)
    infer_ir_shapes(model)
    log = logging.getLogger("onnxscript.optimizer._constant_folding")
    level, log.level = log.level, logging.ERROR  # its "Evaluation failed" warnings are about nodes it leaves alone
    try:
        _fold(model)
    finally:
        log.setLevel(level)

    remove_unused(model)
    return model, max(0, before - _count(model))


def _fold(model: ir.Model) -> None:
    from onnxscript.optimizer import fold_constants

    fold_constants(
        model,
        onnx_shape_inference=True,
        input_size_limit=INPUT_LIMIT,
        output_size_limit=OUTPUT_LIMIT,
        should_fold=lambda node: (
            True
            if node.op_type in ALWAYS and all(v is None or v.const_value is not None for v in node.inputs)
            else None
        ),
    )


RULE = RewriteRule(
    name=NAME,
    summary="nodes computable from constants and static shapes (Shape/Gather/Concat chains, Tile, Expand, "
    "ConstantOfShape, Where, Range) -> initializers",
    exact=True,
    ops=("Shape", "Gather", "Concat", "Unsqueeze", "Tile", "Expand", "ConstantOfShape", "Where", "Range", "Cast"),
    run=_run,
    notes=f"outputs above {OUTPUT_LIMIT} elements stay nodes; dynamic shapes stay dynamic",
)

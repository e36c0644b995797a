"""Small opset-aware helpers shared by the rule files (reading constants and axes, building
Squeeze/Unsqueeze/Reduce in the form the model's opset expects)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx_ir as ir

REDUCE_AXES_AS_INPUT = {"ReduceSum": 13}  # other Reduce* ops take axes as an input from opset 18


def const(value: ir.Value | None) -> np.ndarray | None:
    """The constant behind a value (initializer or Constant node), else None."""
    if value is None:
        return None
    t = value.const_value
    if t is None:
        prod = value.producer()
        if prod is not None and prod.op_type == "Constant" and prod.domain in ("", "ai.onnx"):
            attr = prod.attributes.get("value")
            if attr is not None:
                t = attr.as_tensor()
    if t is None:
        return None
    try:
        return t.numpy()
    except Exception:  # external data not loaded, exotic dtype
        return None


def shape_of(value: ir.Value | None) -> tuple | None:
    """Static dims as ints, symbolic/unknown dims as None; None when the rank is unknown."""
    if value is None or value.shape is None:
        return None
    return tuple(d if isinstance(d, int) else None for d in value.shape)


def rank_of(value: ir.Value | None) -> int | None:
    s = shape_of(value)
    return None if s is None else len(s)


def dtype_of(value: ir.Value | None) -> np.dtype | None:
    if value is None or value.type is None:
        return None
    try:
        return value.dtype.numpy()
    except Exception:
        return None


def attr_int(node: ir.Node, name: str, default: int) -> int:
    a = node.attributes.get(name)
    return default if a is None else int(a.as_int())


def attr_ints(node: ir.Node, name: str) -> list[int] | None:
    a = node.attributes.get(name)
    return None if a is None else [int(x) for x in a.as_ints()]


def reduce_axes(node: ir.Node) -> list[int] | None:
    """Axes of a Reduce*/Squeeze/Unsqueeze node, from the attribute or the constant second input.
    Returns [] for 'all axes' (no axes given) and None when the axes are not constant."""
    axes = attr_ints(node, "axes")
    if axes is not None:
        return axes
    if len(node.inputs) > 1 and node.inputs[1] is not None:
        v = const(node.inputs[1])
        return None if v is None else [int(x) for x in np.atleast_1d(v)]
    return []


def normalize_axes(axes: Sequence[int], rank: int) -> list[int]:
    return sorted(a + rank if a < 0 else a for a in axes)


def ints_const(op, values: Sequence[int]) -> ir.Value:
    return op.Constant(value=ir.tensor(np.array(list(values), dtype=np.int64)))


def squeeze(op, x, axes: Sequence[int], opset: int, **kw):
    if opset >= 13:
        return op.Squeeze(x, ints_const(op, axes), **kw)
    return op.Squeeze(x, axes=list(axes), **kw)


def unsqueeze(op, x, axes: Sequence[int], opset: int, **kw):
    if opset >= 13:
        return op.Unsqueeze(x, ints_const(op, axes), **kw)
    return op.Unsqueeze(x, axes=list(axes), **kw)


def reduce(op, op_type: str, x, axes: Sequence[int], keepdims: int, opset: int, **kw):
    if opset >= REDUCE_AXES_AS_INPUT.get(op_type, 18):
        return getattr(op, op_type)(x, ints_const(op, axes), keepdims=keepdims, **kw)
    return getattr(op, op_type)(x, axes=list(axes), keepdims=keepdims, **kw)


def opset_of(model: ir.Model) -> int:
    return int(model.opset_imports.get("", model.opset_imports.get("ai.onnx", 0)) or 0)

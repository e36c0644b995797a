"""Decisions of npufit's ONNX -> int8 TFLite converter (npufit/convert) that the Ethos-U rules predict from.

The converter decides with these functions and the Ethos-U rules (ethos_u/converted.py) read the same answers, so
the judged op is the op the converter writes. They live here, below both packages, because targets may not import
convert (tests/test_layers.py). Pure functions of dtypes, shapes and graph structure; no converter state."""
from __future__ import annotations

from collections.abc import Callable, Sequence


def carried_dtype(onnx_dtype: str | None) -> str | None:
    """The TFLite type an ONNX integer / bool tensor is carried in (int64 narrowed to int32, TFLite's index type);
    None for float (the int8 path)."""
    if onnx_dtype is None or onnx_dtype.startswith(("float", "bfloat")):
        return None
    return "bool" if onnx_dtype == "bool" else "int32"


def depth_reduce_as_conv(tfl_op: str, shape: Sequence, axes: Sequence[int]) -> bool:
    """A MEAN / SUM over the channels alone of a 4-D NHWC map with H and W > 1 (`shape`, `axes` in TFLite's NHWC
    order) is written as a 1x1 CONV_2D with one output channel: Vela has no depth reduction there."""
    return tfl_op in ("MEAN", "SUM") and len(shape) == 4 and list(axes) == [3] \
        and all(isinstance(d, int) for d in shape[1:3]) and min(shape[1:3]) > 1


def mean_as_rows(tfl_op: str, shape: Sequence, axes: Sequence[int]) -> bool:
    """A MEAN over a trailing run of axes of a tensor in ONNX order (`axes` sorted) that Vela 5.2.0's semantic check
    rejects ("Reduction over depth is only supported if any of h,w,c == 1"; at most 4-D) is written as RESHAPE to
    [rows, 1, reduced] -> MEAN over axis 2 -> RESHAPE: the same mean, with a 1 Vela accepts (e.g. a LayerNorm over
    the features of [4, 16, 16] tokens, a mean over H and W of a [1, 64, 2, 2] NCHW map)."""
    r = len(shape)
    if tfl_op != "MEAN" or r < 3 or not axes or list(axes) != list(range(r - len(axes), r)) \
            or not all(isinstance(d, int) and d > 0 for d in shape):
        return False
    if r > 4:
        return True
    return not any(d == 1 for d in (shape if r == 3 else shape[1:]))


def gather_elements_as_gather(data_shape: Sequence, idx_shape: Sequence, axis: int) -> bool:
    """GatherElements whose data and indices are 1 on every axis but `axis` (a per-position lookup at batch 1) is
    written as RESHAPE of the indices + GATHER along `axis` (batch_dims 0)."""
    if not data_shape or not idx_shape or len(data_shape) != len(idx_shape):
        return False
    axis %= len(data_shape)
    return all(d == 1 for k, d in enumerate(data_shape) if k != axis) and all(d == 1 for k, d in enumerate(idx_shape) if k != axis)


def bool_cast_source(graph, name: str, dtype: Callable[[str], str | None]) -> str | None:
    """The bool tensor that integer tensor `name` was cast from (its values are 0 / 1), else None. `dtype` gives a
    tensor's carried type (carried_dtype of its ONNX type, or the converter's own record of it)."""
    p = graph.producer(name)
    if p is not None and p.op_type == "Cast" and dtype(name) == "int32" and dtype(p.inputs[0]) == "bool":
        return p.inputs[0]
    return None


def argmax_of_bool(graph, node, dtype: Callable[[str], str | None]) -> bool:
    """An ArgMax of an integer cast of a bool tensor that nothing else reads (CLIP's first end-of-text position):
    the converter casts the bool itself to int8 (CAST) and runs ARG_MAX on that; the integer cast goes unread."""
    x = node.inputs[0] if node.op_type == "ArgMax" and node.inputs else None
    if not x or x in graph.output_names or len(graph.consumers(x)) != 1:
        return False
    return bool_cast_source(graph, x, dtype) is not None


NEVER_SPECIAL = ("IsNaN", "IsInf")


def never_special(graph, node) -> bool:
    """IsNaN / IsInf of a float tensor the model computes: int8 holds neither, so the converter makes the answer a
    constant False (convert/ops_shape.never_special) and writes no op."""
    x = node.inputs[0] if node.op_type in NEVER_SPECIAL and node.inputs else None
    return bool(x) and not graph.tensor(x).is_const and carried_dtype(graph.tensor(x).dtype) is None


def where_of_never_special(graph, node) -> bool:
    """A Where whose condition is such a constant False (nan_to_num after a softmax): the converter aliases its
    else-branch (convert/ops_shape.where) and writes no op, when that branch is computed at run time."""
    if node.op_type != "Where" or len(node.inputs) != 3 or not node.inputs[2] or graph.tensor(node.inputs[2]).is_const:
        return False
    p = graph.producer(node.inputs[0]) if node.inputs[0] else None
    return p is not None and never_special(graph, p)


def whole_map_pool(kernel: Sequence, pads: Sequence, in_hw: Sequence, out_hw: Sequence) -> bool:
    """A 2-D pool with one window over the whole map: a 1x1 output, no pads and a kernel at least the map (ceil_mode
    clips it to the input; EfficientNet's AvgPool2d(C, ceil_mode=True)). The converter writes it as a global pool:
    MEAN over H and W (average) or a pool whose kernel is the map (max)."""
    return len(in_hw) == 2 and tuple(out_hw) == (1, 1) and not any(pads or ()) and len(kernel) == 2 \
        and all(isinstance(d, int) for d in in_hw) and all(k >= d for k, d in zip(kernel, in_hw))

"""Where a node's axes are, for Hailo's checks, in both input formats the Dataflow Compiler parses.

An ONNX model is NCHW: the feature (channel) axis is 1 and attributes carry perms, axes and keepdims. A TFLite model
is NHWC: the features are the last axis, and TRANSPOSE, STRIDED_SLICE, ARG_MAX and the reductions take their
perm/axes as constant inputs. The checks ask these helpers, so one rule serves both formats (the op vocabulary is
mapped once, by tflite_map.onnx_op).
"""

from __future__ import annotations

from ...graph import NodeView
from ..base import Limits
from ..common import const_ints, norm_axis, rank, reduce_axes, slice_axes, transpose_perm
from ..tflite_map import is_tflite

# the input that carries the activation where it is not input 0 (TFLite: TRANSPOSE_CONV reads output_shape, weights,
# input; SPLIT reads axis, input)
_TFLITE_DATA_INPUT = {"TRANSPOSE_CONV": 2, "SPLIT": 1}


def data_input(node: NodeView) -> int:
    return _TFLITE_DATA_INPUT.get(node.op_type, 0) if is_tflite(node) else 0


def data_rank(node: NodeView) -> int | None:
    return rank(node, data_input(node))


def feature_axes(node: NodeView, lim: Limits) -> list[int]:
    """The feature axis of this node's input: the profile's (ONNX, axis 1) or the last one (TFLite, NHWC)."""
    if is_tflite(node):
        r = data_rank(node)
        return [r - 1] if r else [-1]
    return list(lim["feature_axes"])


def perm(node: NodeView) -> list[int] | None:
    """A Transpose's perm: the attribute (ONNX) or the constant second input (TFLite)."""
    return const_ints(node, 1) if is_tflite(node) else transpose_perm(node)


def keepdims(node: NodeView) -> bool:
    return bool(node.attr("keep_dims", False)) if is_tflite(node) else bool(node.attr("keepdims", 1))


def reduced_axes(node: NodeView) -> list[int] | None:
    return reduce_axes(node)  # the axes input is input 1 in both formats (ONNX opset 18+, TFLite)


def sliced_axes(node: NodeView) -> list[int] | None:
    """Axes a Slice cuts. TFLite's STRIDED_SLICE/SLICE spell them through begin/end/size vectors and masks: the axes
    whose size changes are read from the shapes instead."""
    if not is_tflite(node):
        return slice_axes(node)
    i, o = node.input_shape(0), node.output_shape(0)
    if i is None or o is None or len(i) != len(o):
        return None
    return [a for a, (x, y) in enumerate(zip(i, o)) if x != y]


def argmax_axis(node: NodeView) -> int | None:
    if is_tflite(node):
        axis = const_ints(node, 1)
        return None if not axis else norm_axis(axis[0], rank(node))
    return norm_axis(int(node.attr("axis", 0)), rank(node))


def is_relabel(node: NodeView) -> bool:
    """A Transpose that moves only size-1 axes: the data order is unchanged, only the axis labels move (batch-1
    attention's [1, T, C] -> [T, 1, C]). A Reshape/Squeeze that adds or drops size-1 axes is the same kind of
    no-op."""
    i = node.input(0)
    if i is None or not i.is_static:
        return False
    shape = i.shape
    if node.op_type != "Transpose":
        o = node.output(0)
        return o is not None and o.is_static and [d for d in shape if d != 1] == [d for d in o.shape if d != 1]
    p = perm(node)
    if p is None or len(p) != len(shape):
        return False
    moved = [a for a in p if shape[a] != 1]  # the non-unit input axes in output order
    return moved == sorted(moved)


def swaps_last_two(node: NodeView) -> bool:
    """A rank-3 Transpose that swaps tokens and features: transpose(1, 2) of [N, C, T], or, where the batch is 1,
    a permute that also moves the size-1 axis (nn.MultiheadAttention's sequence-first [T, 1, C] from [1, C, T] with
    permute(2, 0, 1), and back with permute(1, 2, 0))."""
    if node.op_type != "Transpose":
        return False
    p, i = perm(node), node.input(0)
    if p is None or i is None or i.rank != 3:
        return False
    if list(p) == [0, 2, 1]:
        return True
    if not i.is_static:
        return False
    moved = [a for a in p if i.shape[a] != 1]
    return len(moved) == 2 and moved[0] > moved[1]

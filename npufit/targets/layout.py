"""Shape and layout facts several targets' rules read, and calibration/bounds.py with them when it reads a rule's
bound off a sweep record (a fact stated once; nothing here builds a profile or reads a bound)."""

from __future__ import annotations

import itertools
import math

from ..graph import NodeView
from . import common


def strided(node: NodeView | None) -> dict[int, tuple[int, int]] | None:
    """{axis: (start, step)} of a Slice with a step other than 1 that runs to the end of each sliced axis."""
    if node is None or node.op_type != "Slice" or len(node.inputs) < 5 or not node.inputs[4]:
        return None
    x = node.input_shape(0)
    starts, ends, steps = common.const_ints(node, 1), common.const_ints(node, 2), common.const_ints(node, 4)
    axes = common.const_ints(node, 3) if node.inputs[3] else list(range(len(starts or ())))
    if not x or None in (starts, ends, steps, axes) or all(s == 1 for s in steps):
        return None
    out = {}
    for a, st, en, sp in zip(axes, starts, ends, steps):
        a = common.norm_axis(a, len(x))
        if not isinstance(x[a], int) or sp < 1 or not 0 <= st < sp or en < x[a]:
            return None
        out[a] = (st, sp)
    return out


def unshared_chain(node: NodeView) -> bool:
    """A strided Slice in a chain that does not branch: one Slice per axis and phase, each read by the next alone
    (YOLOX's Focus as torch writes `x[..., ::2, ::2]` four times: 8 slices). The reorg whose first slices are shared by
    the phases (YOLOv5's 6 slices) or whose slices cut both axes at once (4 slices) does not chain this way."""
    g = node.graph
    src = g.producer(node.inputs[0]) if node.inputs and node.inputs[0] else None
    if strided(src) is not None and len(g.consumers(src.outputs[0])) == 1:
        return True
    cons = g.consumers(node.outputs[0])
    return len(cons) == 1 and strided(cons[0]) is not None


def plain_transpose(shape, perm) -> bool | None:
    """Vela's first two cases for an int8 TRANSPOSE: no move, or a permutation of the last three axes of a 3-D tensor
    or of a higher-rank one whose other axes are 1 (True); anything else (False) is bounded by the product of every
    N-2 axes. None when the shape is not known."""
    if not shape or not all(isinstance(d, int) for d in shape):
        return None
    r = len(shape)
    if list(perm) == list(range(r)):
        return True
    lead = r - 3
    return r >= 3 and list(perm[:lead]) == list(range(lead)) and all(d == 1 for d in shape[:lead])


def max_product(shape) -> int:
    """The largest product of any len(shape) - 2 axes."""
    return max(math.prod(c) for c in itertools.combinations(shape, max(len(shape) - 2, 1)))


def bricks(shape) -> int | None:
    """Bytes of an NHWC int8 tensor in the Ethos-N's 8 x 8 x 16 bricks (H and W rounded up to 8, depth to 16)."""
    if not shape or len(shape) != 4 or not all(isinstance(d, int) for d in shape):
        return None
    n, h, w, c = shape
    return n * -(-h // 8) * 8 * -(-w // 8) * 8 * -(-c // 16) * 16


def _reshape_run(node: NodeView) -> tuple[NodeView, NodeView] | None:
    """(first, last) of the run of Reshapes `node` is in, each feeding the next alone."""
    if node is None or node.op_type != "Reshape":
        return None
    g = node.graph
    first = last = node
    while (
        (p := g.producer(first.inputs[0])) is not None
        and p.op_type == "Reshape"
        and len(g.consumers(p.outputs[0])) == 1
    ):
        first = p
    while len(c := g.consumers(last.outputs[0])) == 1 and c[0].op_type == "Reshape":
        last = c[0]
    return first, last


def _rows_to_map(node: NodeView) -> tuple[int, list[NodeView]] | None:
    """(H x W, its readers) of the [1, C, H, W] map a run of Reshapes makes of channel rows ([1, C*H, W] or
    [1, C*H, 1, W], C and H above 1); None for any other node."""
    run = _reshape_run(node)
    if run is None:
        return None
    x, y = _ints(run[0].input_shape(0)), _ints(run[1].output_shape(0))
    cons = node.graph.consumers(run[1].outputs[0])
    if not x or not y or len(y) != 4 or x[0] != 1 or y[0] != 1 or min(y[1:3]) < 2 or not cons:
        return None
    return (y[2] * y[3], cons) if [d for d in x if d != 1] == [y[1] * y[2], y[3]] else None


def split_rows(node: NodeView) -> int | None:
    """H x W of the map a run of Reshapes makes of channel rows (_rows_to_map) for a convolution to read (a DFL head's
    [1, 64, A] -> [1, 4, 16, A], a pose head's [1, 51, A] -> [1, 17, 3, A]); None for any other node."""
    got = _rows_to_map(node)
    return got[0] if got is not None and all(c.op_type == "Conv" for c in got[1]) else None


def _ints(shape) -> list[int] | None:
    return list(shape) if shape and all(isinstance(d, int) for d in shape) else None


def _flattens_map(node: NodeView | None) -> tuple[int, int] | None:
    """(C, H*W) for a Reshape of a [1, C, H, W] map (H and W above 1) into the rows [1, C, H*W]."""
    if node is None or node.op_type != "Reshape":
        return None
    x, y = _ints(node.input_shape(0)), _ints(node.output_shape(0))
    if not x or not y or len(x) != 4 or x[0] != 1 or min(x[2:]) < 2 or y != [1, x[1], x[2] * x[3]]:
        return None
    return x[1], x[2] * x[3]


def _splits_rows(node: NodeView | None) -> tuple[int, int] | None:
    """(C, A) for a Reshape of the rows [1, C, A] into a [1, k, C / k, A] map (k and C / k above 1)."""
    if node is None or node.op_type != "Reshape":
        return None
    x, y = _ints(node.input_shape(0)), _ints(node.output_shape(0))
    if not x or not y or len(x) != 3 or len(y) != 4 or x[0] != 1 or y[0] != 1 or y[3] != x[2]:
        return None
    return (x[1], x[2]) if y[1] > 1 and y[2] > 1 and y[1] * y[2] == x[1] else None


JOIN_MODULUS = 8  # the head sweep reads a joined map's cell count modulo this (calibration/bounds.py)


def joined_flatten(node: NodeView) -> int | None:
    """H*W of a map flattened into rows that only Concats of rows read (a head's scale joined with the others);
    None for any other node, a flatten a split reads included."""
    f = _flattens_map(node)
    cons = node.graph.consumers(node.outputs[0]) if f is not None else []
    return f[1] if f is not None and cons and all(_concat_rows(c) for c in cons) else None


def head_output_transpose(node: NodeView) -> int | None:
    """A for a Transpose of a head's joined rows [1, C, A] (a Concat on the anchor axis) into the model output
    [1, A, C], as YOLOX's export ends; None for any other node."""
    if node.op_type != "Transpose" or list(node.attr("perm", []) or []) != [0, 2, 1]:
        return None
    if not _concat_rows(node.graph.producer(node.inputs[0])) or not common.graph_output(node):
        return None
    x = _ints(node.input_shape(0))
    return x[2] if x and len(x) == 3 else None


def qkv_view_transpose(node: NodeView) -> int | None:
    """The head width d for a Transpose of a fused q/k/v projection's 5-D view [1, N, 3, heads, d] (as timm's ViT and
    PP-OCRv4's recognizer split q, k and v); None for any other node."""
    if node.op_type != "Transpose":
        return None
    x = _ints(node.input_shape(0))
    if not x or len(x) != 5 or x[0] != 1 or x[2] != 3:
        return None
    src = node.graph.producer(node.inputs[0])
    return x[4] if src is not None and src.op_type == "Reshape" else None


def _concat_rows(node: NodeView | None) -> bool:
    """A Concat of 3-D rows on the row axis (a detection head's scales joined into [1, C, A])."""
    if node is None or node.op_type != "Concat":
        return False
    x = node.output_shape(0)
    return bool(x) and len(x) == 3 and common.norm_axis(int(node.attr("axis", 0)), 3) == 2


def head_rows(node: NodeView) -> tuple[str, int, int] | None:
    """A multi-scale head's Reshape between maps and rows (calibration/sweep.py's head_parts): ("flatten", C, H*W) for a
    map flattened into rows that a Concat joins or a split reads; ("split", C, A) for rows that a Concat or such a
    flatten made, split into a [1, k, C / k, A] map ("split_t" when only Transposes read the map: YOLOv8's DFL);
    None for any other node."""
    g = node.graph
    if (f := _flattens_map(node)) is not None:
        cons = g.consumers(node.outputs[0])
        if cons and all(_concat_rows(c) or _splits_rows(c) is not None for c in cons):
            return ("flatten", *f)
        return None
    if (s := _splits_rows(node)) is not None:
        src = g.producer(node.inputs[0])
        if not (_concat_rows(src) or _flattens_map(src) is not None):
            return None
        cons = g.consumers(node.outputs[0])
        return ("split_t" if cons and all(c.op_type == "Transpose" for c in cons) else "split", *s)
    return None


def head_map(node: NodeView) -> tuple[str, int] | None:
    """A detection head's Reshape that makes a map of its rows or rows of a map, with the map's H x W: ("split", H*A)
    for joined or flattened rows split into a [1, k, H, A] map (head_rows' split; "split_t" when only Transposes read
    the map, as YOLOv8's DFL does), ("merge", H*A) for a [1, k, H, A] map that a Concat on H joined, merged back into
    rows [1, k*H, A] (a pose head's keypoint decode writes its keypoints out this way); None for any other node."""
    got = head_rows(node)
    y = _ints(node.output_shape(0))
    if got is not None:
        return (got[0], y[2] * y[3]) if got[0] != "flatten" and y and len(y) == 4 else None
    x = _ints(node.input_shape(0))
    if node.op_type != "Reshape" or not x or not y or len(x) != 4 or x[0] != 1 or min(x[1:3]) < 2:
        return None
    src = node.graph.producer(node.inputs[0])
    if y != [1, x[1] * x[2], x[3]] or src is None or src.op_type != "Concat":
        return None
    return ("merge", x[2] * x[3]) if common.norm_axis(int(src.attr("axis", 0)), 4) == 2 else None


def reads_head_split(node: NodeView) -> bool:
    """A Transpose of the map a detection head's rows were split into (YOLOv8's DFL reads its bins this way)."""
    src = node.graph.producer(node.inputs[0]) if node.op_type == "Transpose" and node.inputs else None
    got = head_map(src) if src is not None else None
    return got is not None and got[0] in ("split", "split_t")


def dfl_split(node: NodeView) -> int | None:
    """H x W of the map a run of Reshapes makes of channel rows (_rows_to_map) when only Transposes that only
    Softmaxes read take it (YOLOv8's DFL: [1, 64, A] -> [1, 4, 16, A], transposed, a Softmax over the bins); None for
    any other node."""
    got = _rows_to_map(node)
    if got is None:
        return None
    g = node.graph
    softmax = [c.op_type == "Transpose" and (r := g.consumers(c.outputs[0])) and all(s.op_type == "Softmax" for s in r)
               for c in got[1]]  # fmt: skip
    return got[0] if all(softmax) else None

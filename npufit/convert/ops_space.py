"""Lowering of rearrangements and fixed samplings as exact NPU kernels: DepthToSpace / SpaceToDepth as selection
convolutions (TRANSPOSE_CONV / CONV_2D whose weights are one-hot: every output is one input value, exact in int8),
GridSample with a constant grid as one FULLY_CONNECTED over the map's positions, GatherElements / GatherND with
constant indices as a slice or a GATHER of the flattened data; and TopK (k > 1) as TOPK_V2.

Why not TFLite's DEPTH_TO_SPACE / SPACE_TO_DEPTH: Vela 5.2.0 lists neither, so they run on the CPU, while its
transposed convolution (stride 2) and convolution run on the NPU of every Ethos-U."""

from __future__ import annotations

import numpy as np

from ..graph import NodeView
from ..targets.converter_forms import constant_gather_flat, even_run, power_of_two, space_blocks
from ..verify.compare import make_session
from . import ops_int as it
from .int_tensors import dtype_of, int_act
from .lower import NHWC_AXIS, TO_NCHW, TT, Lowering
from .ops_lookup import gather_nd
from .ops_math import mul, scalar_const
from .qparams import activation_q, per_channel_weights

MAX_GRID_WEIGHTS = 1 << 24  # positions out x positions in of a constant-grid GridSample (64 MB of float weights)
_CONV = dict(dilation_w_factor=1, dilation_h_factor=1, fused_activation_function="NONE")


def _selection(L: Lowering, y: TT, w: np.ndarray, x: TT) -> tuple[TT, TT]:
    """One-hot weights [O, kh, kw, I] (int8 127 at scale 1/127: 1.0 exactly) and a zero bias, per output channel."""
    wq, ws = per_channel_weights(w, axis=0)
    wt = L.new(f"{y.name}/weights", wq.shape, None, "plain", data=wq, per_channel=(ws, 0))
    return wt, L.bias(y, np.zeros(len(ws)), x, ws)


def _d2s_source(mode: str, C2: int, b: int):
    """ONNX channel read by output channel c at block offset (i, j): DCR (TFLite's order) or CRD (PyTorch's)."""
    if mode == "CRD":
        return lambda c, i, j: c * b * b + i * b + j
    return lambda c, i, j: (i * b + j) * C2 + c


def depth_to_space(L: Lowering, node: NodeView) -> None:
    """A power-of-two block: k stride-2 TRANSPOSE_CONVs (kernel 2, VALID) with one-hot weights. The channel
    order between stages is ours: stage s keeps channels (c, the row bits below it, the column bits below it), so
    stage 0 also does CRD's reordering. Other blocks: _interleave."""
    b = int(node.attr("blocksize"))
    x = L.act(node.inputs[0], "nhwc")
    N, H, W, C = x.shape
    C2 = C // (b * b)
    src = _d2s_source(node.attr("mode", "DCR"), C2, b)
    if not power_of_two(b):
        return _interleave(L, x, b, src, node.outputs[0])
    k = len(space_blocks(b))
    out = node.outputs[0]
    cur = x
    for s in range(k):
        R = 1 << (k - 1 - s)  # values of the row (and column) bits still to place after this stage
        n_out = C2 * R * R
        w = np.zeros((n_out, 2, 2, cur.shape[3]), np.float64)
        for c in range(C2):
            for i_lo in range(R):
                for j_lo in range(R):
                    o = (c * R + i_lo) * R + j_lo
                    for di in range(2):
                        for dj in range(2):
                            if s == 0:
                                w[o, di, dj, src(c, di * R + i_lo, dj * R + j_lo)] = 1.0
                            else:  # the previous stage's channel (c, di then i_lo, dj then j_lo)
                                w[o, di, dj, (c * 2 * R + di * R + i_lo) * 2 * R + dj * R + j_lo] = 1.0
        shape = (N, cur.shape[1] * 2, cur.shape[2] * 2, n_out)
        y = L.output(out, "nhwc", q=x.q) if s == k - 1 else L.new(f"{out}/stage{s}", shape, x.q, "nhwc")
        wt, bt = _selection(L, y, w, cur)
        L.emit(
            "TRANSPOSE_CONV",
            [L.int32(f"{y.name}/output_shape", shape), wt, cur, bt],
            [y],
            "TransposeConvOptions",
            padding="VALID",
            stride_w=2,
            stride_h=2,
            fused_activation_function="NONE",
        )
        cur = y


def _interleave(L: Lowering, x: TT, b: int, src, out: str) -> None:
    """DepthToSpace by memory moves: in DCR order the channels of block row i are (j, c), so a [N, H, W, b*C'] group
    is already its rows' pixels in order; SPLIT the b groups, view each as [N, H, 1, W*b*C'], CONCATENATION on axis 2
    puts row i of every block after row i-1, and the result is the [N, H*b, W*b, C'] map in memory order (both
    RESHAPEs free). CRD first reorders its channels with a one-hot 1x1 CONV_2D. (Vela runs TRANSPOSE_CONV at stride 2
    only on the U55, and DEPTH_TO_SPACE on neither generation's NPU.)"""
    N, H, W, C = x.shape
    C2 = C // (b * b)
    dcr = _d2s_source("DCR", C2, b)
    order = [src(c, i, j) for i in range(b) for j in range(b) for c in range(C2)]  # DCR channel k reads order[k]
    if order != [dcr(c, i, j) for i in range(b) for j in range(b) for c in range(C2)]:
        w = np.zeros((C, 1, 1, C), np.float64)
        w[np.arange(C), 0, 0, order] = 1.0
        p = L.new(f"{out}/dcr", x.shape, x.q, "nhwc")
        wt, bt = _selection(L, p, w, x)
        L.emit("CONV_2D", [x, wt, bt], [p], "Conv2DOptions", padding="VALID", stride_w=1, stride_h=1, **_CONV)
        x = p
    groups = [L.new(f"{out}/row{i}", (N, H, W, b * C2), x.q, "nhwc") for i in range(b)]
    L.emit("SPLIT", [L.int32(f"{out}/axis", 3), x], groups, "SplitOptions", num_splits=b)
    flat = []
    for g in groups:
        f = L.new(f"{g.name}/flat", (N, H, 1, W * b * C2), x.q, "plain")
        L.emit_reshape(g, f)
        flat.append(f)
    rows = L.new(f"{out}/rows", (N, H, b, W * b * C2), x.q, "plain")
    L.emit("CONCATENATION", flat, [rows], "ConcatenationOptions", axis=2, fused_activation_function="NONE")
    L.emit_reshape(rows, L.output(out, "nhwc", q=x.q))


def space_to_depth(L: Lowering, node: NodeView) -> None:
    """One CONV_2D, kernel = stride = block, VALID, one-hot weights: output channel (i * b + j) * C + c reads
    input channel c at offset (i, j) of its block (ONNX's order)."""
    b = int(node.attr("blocksize"))
    x = L.act(node.inputs[0], "nhwc")
    N, H, W, C = x.shape
    w = np.zeros((b * b * C, b, b, C), np.float64)
    for i in range(b):
        for j in range(b):
            for c in range(C):
                w[(i * b + j) * C + c, i, j, c] = 1.0
    y = L.output(node.outputs[0], "nhwc", q=x.q)
    wt, bt = _selection(L, y, w, x)
    L.emit("CONV_2D", [x, wt, bt], [y], "Conv2DOptions", padding="VALID", stride_w=b, stride_h=b, **_CONV)


def grid_matrix(node: NodeView, x_shape, grid: np.ndarray) -> np.ndarray:
    """[N, Ho*Wo, H*W]: output position <- input position weights of a GridSample with this constant grid, from one
    ONNX Runtime run of the node itself on a basis (channel q of the input is the unit image at position q), so
    every mode, padding mode and align_corners means what ONNX Runtime makes of it."""
    from onnx import TensorProto, helper

    N, _, H, W = (int(d) for d in x_shape)
    Ho, Wo = grid.shape[1:3]
    if H * W * Ho * Wo > MAX_GRID_WEIGHTS:
        raise ValueError("too many positions for one matrix")
    attrs = {k: v for k, v in node.attrs.items()}
    n = helper.make_node("GridSample", ["x", "g"], ["y"], **attrs)
    g = helper.make_graph(
        [n],
        "basis",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [N, H * W, H, W]),
            helper.make_tensor_value_info("g", TensorProto.FLOAT, list(grid.shape)),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    opset = max(16, node.graph.opsets.get("ai.onnx", 16))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = min(m.ir_version, 10)
    basis = np.broadcast_to(np.eye(H * W, dtype=np.float32).reshape(1, H * W, H, W), (N, H * W, H, W))
    y = make_session(m.SerializeToString()).run(None, {"x": np.ascontiguousarray(basis), "g": grid.astype(np.float32)})[
        0
    ]
    return y.reshape(N, H * W, Ho * Wo).transpose(0, 2, 1)  # [N, out position, in position]


def grid_sample(L: Lowering, node: NodeView) -> None:
    """GridSample with a constant grid: a fixed linear map from the input positions to the output ones, the same for
    every channel: TRANSPOSE to [C, H*W] rows, FULLY_CONNECTED by that matrix, RESHAPE to [N, C, Ho, Wo]. One
    batch item at a time when the grids differ."""
    grid = L.const(node.inputs[1])
    if grid is None:
        raise L.fail(node, "the sampling grid is computed at run time")
    xs = L.shape(node.inputs[0])
    try:
        M = grid_matrix(node, xs, np.asarray(grid, np.float32))
    except ValueError as e:
        raise L.fail(node, str(e)) from None
    N, C, H, W = xs
    out = node.outputs[0]
    Ho, Wo = np.asarray(grid).shape[1:3]
    x = L.act(node.inputs[0], "plain")
    y = L.output(out, "plain")
    same = all(np.array_equal(M[0], M[n]) for n in range(1, N))
    groups = [(0, N)] if same else [(n, n + 1) for n in range(N)]
    parts = []
    for a, e in groups:
        rows = (e - a) * C
        xa = x
        if len(groups) > 1:
            xa = L.new(f"{out}/batch{a}", (1, C, H, W), x.q, "plain")
            L.emit(
                "STRIDED_SLICE",
                [
                    x,
                    L.int32(f"{xa.name}/begin", [a, 0, 0, 0]),
                    L.int32(f"{xa.name}/end", [e, C, H, W]),
                    L.int32(f"{xa.name}/strides", [1] * 4),
                ],
                [xa],
                "StridedSliceOptions",
            )
        flat = L.new(f"{out}/rows{a}", (rows, H * W), x.q, "plain")
        L.emit_reshape(xa, flat)
        wq, ws = per_channel_weights(M[a].astype(np.float64), axis=0)
        fc = L.new(f"{out}/sampled{a}", (rows, Ho * Wo), y.q, "plain")
        wt = L.new(f"{fc.name}/weights", wq.shape, None, "plain", data=wq, per_channel=(ws, 0))
        L.emit(
            "FULLY_CONNECTED",
            [flat, wt, L.bias(fc, np.zeros(Ho * Wo), flat, ws)],
            [fc],
            "FullyConnectedOptions",
            fused_activation_function="NONE",
            keep_num_dims=False,
        )
        part = y if len(groups) == 1 else L.new(f"{out}/part{a}", (1, C, Ho, Wo), y.q, "plain")
        L.emit_reshape(fc, part)
        parts.append(part)
    if len(parts) > 1:
        L.emit("CONCATENATION", parts, [y], "ConcatenationOptions", axis=0, fused_activation_function="NONE")


def take(L: Lowering, x: TT, flat: np.ndarray, out: str, y: TT | None = None) -> TT:
    """x's rows (axis 0) at the constant positions `flat` into the ONNX output `out` (shape flat.shape + x.shape[1:],
    or y's): a STRIDED_SLICE when they are one index or an even run, else GATHER. Values pass through unrescaled.
    The slice runs over the H axis of a [1, rows, 1, inner] view: Vela takes strides over H or W only."""
    shape = tuple(flat.shape) + tuple(x.shape[1:])
    y = y or L.output(out, "plain", q=x.q, shape=shape)
    f = flat.reshape(-1)
    if even_run(f):
        step = int(f[1] - f[0]) if f.size > 1 else 1
        inner = int(np.prod(x.shape[1:], dtype=np.int64))
        v = L.new(f"{out}/rows_view", (1, x.shape[0], 1, inner), x.q, "plain", x.dtype)
        L.emit_reshape(x, v)
        s = L.new(f"{out}/run", (1, f.size, 1, inner), x.q, "plain", x.dtype)
        L.emit(
            "STRIDED_SLICE",
            [
                v,
                L.int32(f"{s.name}/begin", [0, int(f[0]), 0, 0]),
                L.int32(f"{s.name}/end", [1, int(f[-1]) + 1, 1, inner]),
                L.int32(f"{s.name}/strides", [1, step, 1, 1]),
            ],
            [s],
            "StridedSliceOptions",
        )
        L.emit_reshape(s, y)
        return y
    L.emit("GATHER", [x, L.int32(f"{out}/indices", flat)], [y], "GatherOptions", axis=0, batch_dims=0)
    return y


def gather_const(L: Lowering, node: NodeView) -> None:
    """GatherElements / GatherND with constant indices: the data flattened to positions (GatherElements) or to
    [rows, inner] (GatherND), then `take` of the constant positions (converter_facts.constant_gather_flat)."""
    if not L.is_const(node.inputs[1]):
        return (gather_nd if node.op_type == "GatherND" else it.lower)(L, node)
    flat = constant_gather_flat(_Const(L, node))
    if flat is None:
        raise L.fail(node, "shapes are not static")
    xs = L.shape(node.inputs[0])
    if node.op_type == "GatherElements":
        lead, inner = int(np.prod(xs)), ()
    else:
        b, kk = int(node.attr("batch_dims", 0)), np.asarray(L.const(node.inputs[1])).shape[-1]
        lead, inner = int(np.prod(xs[: b + kk])), tuple(xs[b + kk :])
    intpath = dtype_of(L, node.inputs[0])
    x = int_act(L, node.inputs[0]) if intpath else L.act(node.inputs[0], "plain")
    rows = L.new(f"{node.outputs[0]}/flat", (lead,) + inner, x.q, "plain", x.dtype if intpath else "int8")
    L.emit_reshape(x, rows)
    oshape = L.shape(node.outputs[0])
    y = L.new(node.outputs[0], oshape, None, "plain", x.dtype) if intpath else L.output(node.outputs[0], "plain", q=x.q)
    L.tensors[node.outputs[0]] = y
    take(L, rows, np.asarray(flat), node.outputs[0], y)


class _Const:
    """The NodeView face converter_facts.constant_gather_flat reads, with the converter's shapes and constants."""

    def __init__(self, L: Lowering, node: NodeView):
        self.L, self.node, self.op_type = L, node, node.op_type

    def const_value(self, i: int):
        v = self.L.const(self.node.inputs[i])
        return None if v is None else np.asarray(v)

    def input_shape(self, i: int = 0):
        return self.L.shape(self.node.inputs[i])

    def attr(self, name: str, default=None):
        return self.node.attr(name, default)


def topk(L: Lowering, node: NodeView) -> None:
    """TopK (k constant) -> TOPK_V2 along the innermost axis: over a map's channels in NHWC as it is, any other axis
    moved there and back with TRANSPOSEs in ONNX order. Values keep the input's parameters, indices are int32; the
    k smallest are the k largest of -x (a MUL by -1 into the mirrored range), negated back."""
    kv = L.const(node.inputs[1])
    if kv is None:
        raise L.fail(node, "k computed at run time")
    k = int(np.asarray(kv).reshape(-1)[0])
    vals = node.outputs[0]
    idx = node.outputs[1] if len(node.outputs) > 1 and node.outputs[1] else f"{vals}/indices"
    x = L.act(node.inputs[0])
    axis = int(node.attr("axis", -1)) % len(x.shape)
    smallest = not int(node.attr("largest", 1))
    if not (x.layout == "nhwc" and NHWC_AXIS[axis] == 3):
        x = L.act(node.inputs[0], "plain")
    x = L.narrow(x)
    if smallest:
        lo, hi = x.q.range
        x = mul(L, x, scalar_const(L, f"{vals}/minus_one", -1.0), f"{vals}/negated", activation_q(-hi, -lo))
    v = _topk(L, x, axis, k, f"{vals}/largest" if smallest else vals, idx)
    if smallest:
        y = L.new(vals, v.shape, activation_q(lo, hi), v.layout)
        mul(L, v, scalar_const(L, f"{vals}/minus_one_back", -1.0), vals, None, out=y)
        v = y
    if L.bits == 16:  # the values at the lowering's width for the ops that read them
        v = L.requant(v, L.aq(*L.real_range(v)), "int16")
    L.tensors[vals] = v


def _topk(L: Lowering, x: TT, axis: int, k: int, vals: str, idx: str) -> TT:
    """TOPK_V2 of int8 `x` along ONNX axis `axis` -> the values' tensor (named `vals`); the int32 indices are
    registered in ONNX order as `idx`."""
    rank = len(x.shape)
    if x.layout == "nhwc":  # the channels: innermost already; the integer path holds the indices in ONNX order
        shape = tuple(x.shape[:3]) + (k,)
        v = L.new(vals, shape, x.q, "nhwc")
        i = L.new(f"{idx}/nhwc", shape, None, "nhwc", "int32")
        L.emit("TOPK_V2", [x, L.int32(f"{vals}/k", k)], [v, i])
        i2 = L.new(idx, tuple(shape[p] for p in TO_NCHW), None, "plain", "int32")
        L.layout_op(i, i2, TO_NCHW)
        L.tensors[idx] = i2
        return v
    perm = list(range(rank))
    perm[axis], perm[-1] = perm[-1], perm[axis]  # a swap is its own inverse
    kshape = tuple(x.shape[p] for p in perm)[:-1] + (k,)
    if axis == rank - 1:
        v, i = L.new(vals, kshape, x.q, "plain"), L.new(idx, kshape, None, "plain", "int32")
        L.emit("TOPK_V2", [x, L.int32(f"{vals}/k", k)], [v, i])
    else:
        src = L.new(f"{vals}/moved", tuple(x.shape[p] for p in perm), x.q, "plain")
        L.layout_op(x, src, perm)
        vm, im = L.new(f"{vals}/moved_top", kshape, x.q, "plain"), L.new(f"{idx}/moved", kshape, None, "plain", "int32")
        L.emit("TOPK_V2", [src, L.int32(f"{vals}/k", k)], [vm, im])
        back = tuple(kshape[p] for p in perm)
        v, i = L.new(vals, back, x.q, "plain"), L.new(idx, back, None, "plain", "int32")
        L.layout_op(vm, v, perm)
        L.layout_op(im, i, perm)
    L.tensors[idx] = i
    return v

"""Lowering of activations, elementwise arithmetic and the layout-sensitive tensor ops (Concat, Reshape family,
Transpose, Resize, Pad, Slice)."""

from __future__ import annotations

import math

import numpy as np

from ..graph import NodeView
from ..targets.converter_facts import resize_flags
from .lower import NHWC_AXIS, TO_NCHW, TO_NHWC, TT, Lowering, memory_trivial, onnx_to_tfl_shape
from .ops_math import div, gelu, gelu_pattern
from .ops_nn import absorb_tail, clip_bounds, fused_activation, int8_scalar
from .ops_shape import edge_pad
from .qparams import activation_q, quantize

UNARY = {
    "Sigmoid": "LOGISTIC",
    "Tanh": "TANH",
    "HardSwish": "HARD_SWISH",
    "Relu": "RELU",
    "Elu": "ELU",
    "Abs": "ABS",
    "Neg": "NEG",
    "Exp": "EXP",
    "Log": "LOG",
}
NO_INT16 = {"HARD_SWISH", "ELU", "EXP", "LOG", "NEG"}  # TFLite kernels without an int16 form
BINARY = {"Add": "ADD", "Sub": "SUB", "Mul": "MUL", "Div": "MUL", "Max": "MAXIMUM", "Min": "MINIMUM"}
_OPTS = {
    "ADD": "AddOptions",
    "SUB": "SubOptions",
    "MUL": "MulOptions",
    "MAXIMUM": "MaximumMinimumOptions",
    "MINIMUM": "MaximumMinimumOptions",
}


def alias(L: Lowering, node: NodeView) -> None:
    """Identity / Dropout (inference) / float->float Cast or CastLike: the output is the input."""
    if node.op_type in ("Cast", "CastLike") and L.graph.tensor(node.outputs[0]).dtype not in (None, "float32"):
        raise L.fail(node, "only float32 -> float32 casts have an int8 equivalent")
    L.alias(node.outputs[0], node.inputs[0])


def unary(L: Lowering, node: NodeView) -> None:
    x = L.act(node.inputs[0])
    op = node.op_type
    if op == "LeakyRelu":
        y = L.output(node.outputs[0], x.layout)
        L.emit("LEAKY_RELU", [x], [y], "LeakyReluOptions", alpha=float(node.attr("alpha", 0.01)))
        return
    if op == "Clip":
        return _clip(L, node, x)
    tfl = UNARY.get(op)
    if tfl is None:
        raise L.fail(node, "no int8 TFLite lowering")
    if L.bits == 16 and tfl in NO_INT16:  # int8 between QUANTIZEs in the wide mode
        y = L.output(node.outputs[0], x.layout)
        t = L.new(f"{y.name}/int8", y.shape, activation_q(*L.real_range(y)), x.layout)
        L.emit(tfl, [L.narrow(x)], [t])
        L.requant(t, y.q, dst=y)
        return
    y = L.output(node.outputs[0], x.layout, q=L.fixed(tfl))
    L.emit(tfl, [x], [y])


def prelu(L: Lowering, node: NodeView) -> None:
    """PRelu -> PRELU with an int8 slope broadcast in the tensor's own layout ([C,1,1] -> [1,1,1,C] in NHWC)."""
    x = L.act(node.inputs[0])
    slope = L.const(node.inputs[1])
    if slope is None:
        raise L.fail(node, "slope computed at run time")
    rank = len(x.shape)
    slope = np.asarray(slope, np.float32)
    slope = slope.reshape((1,) * (rank - slope.ndim) + slope.shape)
    a = L.const_int8(f"{node.outputs[0]}/slope", slope, x.layout)
    y = L.output(node.outputs[0], x.layout)
    L.emit("PRELU", [x, a], [y])


def _clip(L: Lowering, node: NodeView, x: TT) -> None:
    b = clip_bounds(L, node)
    if b is None:
        raise L.fail(node, "Clip bounds computed at run time")
    f = fused_activation(L, node)
    y = L.output(node.outputs[0], x.layout)
    if f is None:  # MAXIMUM / MINIMUM do not rescale: x, the bounds and every step share the output's parameters
        x = L.requant(x, y.q)
    if f == "RELU6":
        L.emit("RELU6", [x], [y])
    elif f == "RELU_N1_TO_1":
        L.emit("RELU_N1_TO_1", [x], [y])
    elif f == "RELU":
        L.emit("RELU", [x], [y])
    else:  # general bounds: MAXIMUM with lo, then MINIMUM with hi (int8 saturation does the rest)
        cur = x
        for k, (bound, op) in enumerate(((b[0], "MAXIMUM"), (b[1], "MINIMUM"))):
            if not math.isfinite(bound):
                continue
            last = k == 1 or not math.isfinite(b[1])
            dst = y if last else L.new(f"{y.name}/max", y.shape, y.q, y.layout)
            L.emit(op, [cur, int8_scalar(L, f"{dst.name}/bound", bound, cur.q)], [dst], "MaximumMinimumOptions")
            cur = dst


def min_max(L: Lowering, node: NodeView) -> None:
    """Max / Min of any number of inputs: a chain of MAXIMUM / MINIMUM. These compare the stored integers and copy
    one (no rescale), so every input, constant and step takes the output's parameters (each with its own: cosine
    0.59 - 0.93 in int8)."""
    names = [n for n in node.inputs if n]
    if len(names) == 1:
        return alias(L, node)
    out, tfl = node.outputs[0], BINARY[node.op_type]
    rank = len(L.shape(out))
    acts = [L.act(n) for n in names if not L.is_const(n)]
    layout = "nhwc" if rank == 4 and any(t.layout == "nhwc" for t in acts) else "plain"
    y = L.output(out, layout)
    ins = []
    for k, name in enumerate(names):
        c = L.const(name)
        if c is None:
            if len(L.shape(name)) != rank and layout == "nhwc":
                raise L.fail(node, "broadcasting a lower-rank activation against a 4-D one is not lowered")
            ins.append(L.requant(L.act(name, layout), y.q))
            continue
        v = np.asarray(c, np.float32)
        v = v.reshape((1,) * (rank - v.ndim) + v.shape) if rank else v
        v = v.transpose(TO_NHWC) if layout == "nhwc" and v.ndim == 4 else v
        ins.append(L.new(f"{out}/const{k}", v.shape, y.q, layout, data=quantize(v, y.q)))
    L.emit_chain(
        tfl,
        ins,
        y,
        "MaximumMinimumOptions",
        lambda k, a, b: L.new(f"{out}/step{k}", np.broadcast_shapes(a.shape, b.shape), y.q, layout),
    )


def binary(L: Lowering, node: NodeView) -> None:
    if node.op_type in ("Max", "Min"):
        return min_max(L, node)
    if node.op_type in ("Div", "Mul"):
        chain = gelu_pattern(L, node)
        if chain is not None:
            L.current = list(dict.fromkeys(L.prep.source_node(n.name) for n in chain))
            return gelu(L, chain)
    a, b = node.inputs[0], node.inputs[1]
    ca, cb = L.const(a), L.const(b)
    tfl = BINARY[node.op_type]
    if node.op_type == "Div":
        if cb is None:  # MUL by a reciprocal built from RSQRT (int8 DIV has no Vela kernel)
            return div(L, node)
        cb = 1.0 / np.asarray(cb, np.float64)
    out, act, _ = absorb_tail(L, node) if tfl in ("ADD", "SUB", "MUL") else (node.outputs[0], "NONE", None)
    layout, ins = operands(L, node, [(a, ca), (b, cb)], out)
    y = L.output(out, layout)
    opts = {"fused_activation_function": act} if tfl in ("ADD", "SUB", "MUL") else {}
    L.emit(tfl, ins, [y], _OPTS[tfl], **opts)


def operands(L: Lowering, node: NodeView, named, out: str) -> tuple[str, list[TT]]:
    """The TFLite tensors of an elementwise node's inputs `named` ((ONNX name, constant value or None) pairs): one
    layout for all (NHWC when the output is 4-D and an activation is stored so), constants as int8 over their own
    range, broadcast to the output's rank."""
    rank = len(L.shape(node.outputs[0]))
    acts = [L.act(n) for n, c in named if c is None]
    layout = "nhwc" if rank == 4 and any(t.layout == "nhwc" for t in acts) else "plain"
    ins = []
    for k, (name, c) in enumerate(named):
        if c is None:
            if len(L.shape(name)) != rank and layout == "nhwc":
                raise L.fail(node, "broadcasting a lower-rank activation against a 4-D one is not lowered")
            ins.append(L.act(name, layout))
        else:
            v = np.asarray(c, np.float32)
            v = v.reshape((1,) * (rank - v.ndim) + v.shape) if rank else v
            ins.append(L.const_int8(f"{out}/{('lhs', 'rhs')[k] if k < 2 else f'in{k}'}", v, layout))
    return layout, ins


def concat(L: Lowering, node: NodeView) -> None:
    rank = len(L.shape(node.outputs[0]))
    axis = int(node.attr("axis", 0)) % rank
    acts = [L.act(n) for n in node.inputs if n and not L.is_const(n)]
    layout = "nhwc" if rank == 4 and any(t.layout == "nhwc" for t in acts) else "plain"
    y = L.output(node.outputs[0], layout)
    ins = []
    for n in node.inputs:
        if not n:
            continue
        c = L.const(n)
        if c is not None:  # constants quantized straight into the output's parameters
            v = np.asarray(c, np.float32)
            v = v.transpose(TO_NHWC) if layout == "nhwc" else v
            ins.append(L.new(f"{y.name}/const", v.shape, y.q, layout, data=quantize(v, y.q)))
        else:
            ins.append(L.requant(L.act(n, layout), y.q))  # int8 CONCATENATION does not rescale
    L.emit(
        "CONCATENATION",
        ins,
        [y],
        "ConcatenationOptions",
        axis=NHWC_AXIS[axis] if layout == "nhwc" else axis,
        fused_activation_function="NONE",
    )


def reshape(L: Lowering, node: NodeView) -> None:
    """Reshape / Flatten / Squeeze / Unsqueeze: ONNX element order, so an NHWC input goes back to NCHW first
    (free when only size-1 axes move, e.g. after global pooling)."""
    x = L.act(node.inputs[0])
    if x.layout == "nhwc" and not memory_trivial(x.shape, TO_NCHW):
        x = L.act(node.inputs[0], "plain")
    shape = L.shape(node.outputs[0])
    y = L.output(node.outputs[0], "plain", q=x.q)
    L.emit("RESHAPE", [x, L.int32(f"{y.name}/shape", shape)], [y], "ReshapeOptions", new_shape=list(shape))


def transpose(L: Lowering, node: NodeView) -> None:
    x = L.act(node.inputs[0])
    rank = len(x.shape)
    perm = [int(p) for p in node.attr("perm", list(range(rank))[::-1])]
    base = TO_NCHW if x.layout == "nhwc" else tuple(range(rank))
    tfl_perm = [base[p] for p in perm]  # ONNX perm expressed on the TFLite tensor's axes
    out = node.outputs[0]
    if tfl_perm == list(range(rank)):  # e.g. NCHW->NHWC of an NHWC-stored tensor: nothing to move
        L.tensors[out] = TT(x.index, x.name, x.shape, x.q, "plain")
        return
    nhwc_perm = [tfl_perm[p] for p in TO_NHWC] if rank == 4 else None
    if nhwc_perm == [0, 1, 2, 3]:  # result is NCHW of the stored data
        L.tensors[out] = TT(x.index, x.name, x.shape, x.q, "nhwc")
        return
    if nhwc_perm is not None and x.layout == "nhwc":  # stay NHWC: spatial consumers need no second TRANSPOSE
        layout, tfl_perm = "nhwc", nhwc_perm
    else:
        layout = "plain"
    y = L.output(out, layout, q=x.q)
    if memory_trivial(x.shape, tfl_perm):
        L.emit_reshape(x, y)
    else:
        L.emit("TRANSPOSE", [x, L.int32(f"{y.name}/perm", tfl_perm)], [y], "TransposeOptions")


def resize(L: Lowering, node: NodeView) -> None:
    """Resize / Upsample -> RESIZE_NEAREST_NEIGHBOR / RESIZE_BILINEAR with the flags converter_facts.resize_flags
    finds (what `check` reads too)."""
    x = L.act(node.inputs[0], "nhwc")
    if len(x.shape) != 4:
        raise L.fail(node, "only 4-D (NCHW) resizes are lowered")
    out_hw = onnx_to_tfl_shape(L.shape(node.outputs[0]), "nhwc")[1:3]
    op, flags = resize_flags(node.op_type, node.attr, list(x.shape[1:3]), list(out_hw))
    if flags is None:
        mode, ctm = node.attr("mode", "nearest"), node.attr("coordinate_transformation_mode", "default")
        raise L.fail(node, f"mode={mode} coordinate_transformation_mode={ctm} has no TFLite resize equivalent")
    opts = "ResizeNearestNeighborOptions" if op == "RESIZE_NEAREST_NEIGHBOR" else "ResizeBilinearOptions"
    y = L.output(node.outputs[0], "nhwc", q=x.q)  # int8 resize kernels do not rescale
    L.emit(
        op, [x, L.int32(f"{y.name}/size", y.shape[1:3])], [y], opts, align_corners=flags[0], half_pixel_centers=flags[1]
    )


def pad(L: Lowering, node: NodeView) -> None:
    x = L.act(node.inputs[0])
    rank = len(x.shape)
    pads = node.attr("pads") if "pads" in node.attrs else L.const(node.inputs[1])
    if pads is None:
        raise L.fail(node, "pads computed at run time")
    pads = [int(p) for p in np.asarray(pads).reshape(-1)]
    axes = L.const(node.inputs[3]) if len(node.inputs) > 3 and node.inputs[3] else None
    full = [[0, 0] for _ in range(rank)]
    for i, ax in enumerate([int(a) % rank for a in axes] if axes is not None else range(rank)):
        n = len(pads) // 2
        full[ax] = [pads[i], pads[i + n]]
    if any(p < 0 for pr in full for p in pr):
        raise L.fail(node, "negative pads (cropping) are not lowered")
    if x.layout == "nhwc":
        full = [full[p] for p in TO_NHWC]
    mode = node.attr("mode", "constant")
    value = node.attr("value", 0.0)
    if len(node.inputs) > 2 and node.inputs[2]:
        v = L.const(node.inputs[2])
        if v is None:
            raise L.fail(node, "pad value computed at run time")
        value = float(np.asarray(v).reshape(-1)[0]) if np.asarray(v).size else 0.0
    if mode == "edge":
        return edge_pad(L, x, full, node.outputs[0])
    y = L.output(node.outputs[0], x.layout, q=x.q)
    paddings = L.int32(f"{y.name}/paddings", full)
    if mode == "reflect":
        L.emit("MIRROR_PAD", [x, paddings], [y], "MirrorPadOptions", mode=0)
    elif mode != "constant":
        raise L.fail(node, f"mode={mode} is not lowered")
    elif value == 0.0:
        L.emit("PAD", [x, paddings], [y], "PadOptions")
    else:
        L.emit("PADV2", [x, paddings, int8_scalar(L, f"{y.name}/value", value, x.q)], [y], "PadV2Options")


def slice_bounds(L: Lowering, node: NodeView):
    """STRIDED_SLICE's begin, end, strides (ONNX axis order) and the axes whose negative step runs through 0."""
    shape = L.shape(node.inputs[0])
    rank = len(shape)
    if "starts" in node.attrs:  # opset < 10
        starts, ends, axes, steps = node.attr("starts"), node.attr("ends"), node.attr("axes"), None
    else:
        vals = [L.const(t) if t else None for t in node.inputs[1:5]] + [None] * (5 - len(node.inputs))
        if vals[0] is None or vals[1] is None or (len(node.inputs) > 3 and node.inputs[3] and vals[2] is None):
            raise L.fail(node, "slice bounds computed at run time")
        starts, ends, axes = vals[0], vals[1], vals[2]
        steps = vals[3] if len(vals) > 3 else None
    axes = list(range(len(starts))) if axes is None else [int(a) % rank for a in np.atleast_1d(axes)]
    steps = [1] * len(axes) if steps is None else [int(s) for s in np.atleast_1d(steps)]
    begin, end, stride = [0] * rank, list(shape), [1] * rank
    to_start = [False] * rank  # a negative step that runs through index 0: TFLite's end_mask, not end = -1
    for ax, s, e, st in zip(axes, np.atleast_1d(starts), np.atleast_1d(ends), steps):
        if st == 0:
            raise L.fail(node, "a zero slice step is invalid")
        b0, e0, _ = slice(int(max(min(s, 2**62), -(2**62))), int(max(min(e, 2**62), -(2**62))), st).indices(shape[ax])
        begin[ax], end[ax], stride[ax] = b0, (max(e0, b0) if st > 0 else min(e0, b0)), st
        to_start[ax] = st < 0 and e0 < 0
    return begin, end, stride, to_start


def slice_(L: Lowering, node: NodeView) -> None:
    begin, end, stride, to_start = slice_bounds(L, node)
    x = L.act(node.inputs[0])
    if x.layout == "nhwc":
        begin, end, stride, to_start = ([v[p] for p in TO_NHWC] for v in (begin, end, stride, to_start))
    y = L.output(node.outputs[0], x.layout, q=x.q)
    L.emit(
        "STRIDED_SLICE",
        [x, L.int32(f"{y.name}/begin", begin), L.int32(f"{y.name}/end", end), L.int32(f"{y.name}/strides", stride)],
        [y],
        "StridedSliceOptions",
        end_mask=sum(1 << a for a, m in enumerate(to_start) if m),
    )

"""Lowering of the data-movement and selection ops of transformers, detectors and RNNs: Split, Gather with
constant indices, Where with a constant condition, ArgMax, Expand, MatMul of two activations (BATCH_MATMUL),
Softmax on any axis."""

from __future__ import annotations

import numpy as np

from ..graph import NodeView
from .lower import NHWC_AXIS, TO_NHWC, TT, Lowering
from .ops_math import mul, scalar_const
from .ops_nn import gemm
from .qparams import FIXED, Q, activation_q, const_q, quantize
from .where_q import fill_q

UNIT = {8: Q(1 / 255, -128), 16: Q(1 / 32767, 0, 16)}  # [0, 1] with both ends exact: 0/1 masks


def _axis(L: Lowering, x: TT, onnx_axis: int) -> int:
    return NHWC_AXIS[onnx_axis] if x.layout == "nhwc" else onnx_axis


def split(L: Lowering, node: NodeView) -> None:
    x = L.act(node.inputs[0])
    rank = len(x.shape)
    axis = int(node.attr("axis", 0)) % rank
    sizes = [L.shape(o)[axis] for o in node.outputs]
    tax = _axis(L, x, axis)
    outs = [L.output(o, x.layout, q=x.q) for o in node.outputs]  # int8 SPLIT does not rescale
    if len(set(sizes)) == 1:
        L.emit("SPLIT", [L.int32(f"{outs[0].name}/axis", tax), x], outs, "SplitOptions", num_splits=len(outs))
    else:
        L.emit(
            "SPLIT_V",
            [x, L.int32(f"{outs[0].name}/sizes", sizes), L.int32(f"{outs[0].name}/axis", tax)],
            outs,
            "SplitVOptions",
            num_splits=len(outs),
        )


def strided(L: Lowering, x: TT, begin, end, stride, out: str, shrink: int = 0) -> TT:
    """STRIDED_SLICE over TFLite axes; `out` is the ONNX output (pass-through quantization)."""
    y = L.output(out, "plain" if shrink else x.layout, q=x.q)
    L.emit(
        "STRIDED_SLICE",
        [x, L.int32(f"{y.name}/begin", begin), L.int32(f"{y.name}/end", end), L.int32(f"{y.name}/strides", stride)],
        [y],
        "StridedSliceOptions",
        shrink_axis_mask=shrink,
    )
    return y


def gather(L: Lowering, node: NodeView) -> None:
    """Gather with constant indices: a STRIDED_SLICE when they are one index or an evenly spaced run, else GATHER."""
    idx = L.const(node.inputs[1])
    if idx is None:
        raise L.fail(
            node, "indices computed at run time (an embedding lookup of integer inputs): only constant indices"
        )
    table = L.const(node.inputs[0])
    if table is not None:  # constant table, constant indices: a constant (left unfolded when it is large)
        L.prep.consts[node.outputs[0]] = np.take(table, idx, axis=int(node.attr("axis", 0)))
        return
    x = L.act(node.inputs[0], "plain")
    rank = len(x.shape)
    axis = int(node.attr("axis", 0)) % rank
    idx = np.asarray(idx, np.int64)
    idx = np.where(idx < 0, idx + x.shape[axis], idx)
    begin, end, stride = [0] * rank, list(x.shape), [1] * rank
    out = node.outputs[0]
    if idx.ndim == 0:
        begin[axis], end[axis] = int(idx), int(idx) + 1
        strided(L, x, begin, end, stride, out, shrink=1 << axis)
        return
    flat = idx.reshape(-1)
    steps = np.diff(flat)
    if idx.ndim == 1 and flat.size and (flat.size == 1 or (steps[0] > 0 and np.all(steps == steps[0]))):
        begin[axis], end[axis] = int(flat[0]), int(flat[-1]) + 1
        stride[axis] = int(steps[0]) if flat.size > 1 else 1
        strided(L, x, begin, end, stride, out)
        return
    y = L.output(out, "plain", q=x.q)
    L.emit("GATHER", [x, L.int32(f"{y.name}/indices", idx)], [y], "GatherOptions", axis=axis, batch_dims=0)


def where(L: Lowering, node: NodeView) -> None:
    """Where with a constant condition: a selection mask. y = a*c + b*(1-c) as MUL + ADD of constants when one
    branch is constant (the attention-mask pattern), else MUL/MUL/ADD."""
    c = L.const(node.inputs[0])
    if c is None:
        raise L.fail(node, "the condition is computed at run time")
    c = np.asarray(c, bool)
    out = node.outputs[0]
    if c.all() or not c.any():
        src = node.inputs[1] if c.all() else node.inputs[2]
        if L.is_const(src):
            raise L.fail(node, "the output is a constant")
        L.aliases[out] = src
        return
    rank = len(L.shape(out))
    yq = fill_q(L, node) or L.q_of(out)  # a finfo.min fill saturates instead of stretching the scale to 1e38
    lo, hi = yq.range
    layout = "plain"
    terms = []
    for name, mask in ((node.inputs[1], c), (node.inputs[2], ~c)):
        v = L.const(name)
        m = mask.reshape((1,) * (rank - mask.ndim) + mask.shape).astype(np.float32)
        if v is None:
            t = L.act(name)
            layout = t.layout if rank == 4 else "plain"
            terms.append(("act", name, m))
        else:  # -inf fills (masked attention scores) clip to the output's range: the same after int8 anyway
            v = np.clip(np.nan_to_num(np.asarray(v, np.float32), posinf=hi, neginf=lo), lo, hi)
            terms.append(("const", v.reshape((1,) * (rank - v.ndim) + v.shape) * m, None))
    acts = [t for t in terms if t[0] == "act"]
    const = sum((t[1] for t in terms if t[0] == "const"), np.zeros((1,) * rank, np.float32))
    parts = []
    for _, name, m in acts:
        x = L.act(name, layout)
        mm = m.transpose(TO_NHWC) if layout == "nhwc" else m
        mt = L.new(f"{out}/mask", mm.shape, UNIT[L.bits], layout, data=quantize(mm, UNIT[L.bits]))
        p = L.new(f"{out}/masked", np.broadcast_shapes(x.shape, mm.shape), x.q, layout)
        L.emit("MUL", [x, mt], [p], "MulOptions", fused_activation_function="NONE")
        parts.append(p)
    if len(parts) == 1 and np.any(const):  # const_int8 lays a 4-D constant out NHWC itself
        parts.append(L.const_int8(f"{out}/fill", const, layout))
    y = L.output(out, layout, q=yq)
    if len(parts) == 1:
        L.emit("QUANTIZE", parts, [y], "QuantizeOptions")
    else:
        L.emit("ADD", parts, [y], "AddOptions", fused_activation_function="NONE")


def argmax(L: Lowering, node: NodeView) -> None:
    """ArgMax / ArgMin -> ARG_MAX (int32 indices; along depth Vela runs it on the NPU, and it lists no ARG_MIN):
    ArgMin is the ArgMax of -x (a MUL by -1 into the mirrored range); select_last_index takes the ArgMax of the
    axis reversed (REVERSE_V2) and maps the index back, n - 1 - i."""
    x = L.act(node.inputs[0])
    rank = len(x.shape)
    axis = int(node.attr("axis", 0)) % rank
    if x.layout == "nhwc" and axis != 1:
        x = L.act(node.inputs[0], "plain")
    x = L.narrow(x)  # Vela parses ARG_MAX with an 8-bit input only
    tax = _axis(L, x, axis)
    out = node.outputs[0]
    if node.op_type == "ArgMin":
        lo, hi = x.q.range
        x = mul(L, x, scalar_const(L, f"{out}/minus_one", -1.0), f"{out}/negated", activation_q(-hi, -lo))
    last = int(node.attr("select_last_index", 0))
    if last:
        r = L.new(f"{out}/reversed", x.shape, x.q, x.layout)
        L.emit("REVERSE_V2", [x, L.int32(f"{out}/reverse_axis", [tax])], [r])
        x = r
    oshape = L.shape(out)
    red = tuple(d for i, d in enumerate(x.shape) if i != tax)
    keep = int(node.attr("keepdims", 1))
    y = L.new(out, red if not keep else oshape, None, "plain", "int32")
    L.tensors[out] = y
    t = y if not keep and not last else L.new(f"{out}/argmax", red, None, "plain", "int32")
    L.emit("ARG_MAX", [x, L.int32(f"{out}/axis", [tax])], [t], "ArgMaxOptions", output_type=2)
    if last:
        u = y if not keep else L.new(f"{out}/last", red, None, "plain", "int32")
        L.emit(
            "SUB",
            [L.int32(f"{out}/n_minus_1", x.shape[tax] - 1), t],
            [u],
            "SubOptions",
            fused_activation_function="NONE",
        )
        t = u
    if keep:
        L.emit("RESHAPE", [t, L.int32(f"{out}/shape", oshape)], [y], "ReshapeOptions", new_shape=list(oshape))


def expand(L: Lowering, node: NodeView) -> None:
    x = L.act(node.inputs[0], "plain")
    shape = L.shape(node.outputs[0])
    xs = (1,) * (len(shape) - len(x.shape)) + tuple(x.shape)
    if xs != tuple(x.shape):
        r = L.new(f"{node.outputs[0]}/rank", xs, x.q, "plain")
        L.emit("RESHAPE", [x, L.int32(f"{r.name}/shape", xs)], [r], "ReshapeOptions", new_shape=list(xs))
        x = r
    reps = [s // d if d else 1 for s, d in zip(shape, x.shape)]
    if tuple(x.shape) != tuple(shape) and sum(r for r in reps if r != 1) <= MAX_COPIES:
        # a few copies (F.normalize's norm expanded over the features): CONCATENATION, which Vela runs on the NPU;
        # BROADCAST_TO is not in its list
        return _concat_copies(L, x, reps, node.outputs[0])
    y = L.output(node.outputs[0], "plain", q=x.q)
    if tuple(x.shape) == tuple(shape):
        L.emit("RESHAPE", [x, L.int32(f"{y.name}/shape", shape)], [y], "ReshapeOptions", new_shape=list(shape))
    else:
        L.emit("BROADCAST_TO", [x, L.int32(f"{y.name}/shape", shape)], [y])


def matmul(L: Lowering, node: NodeView) -> None:
    """MatMul of two activations (attention) -> BATCH_MATMUL; a constant operand of rank > 2 rides along as int8.
    activation x 2-D constant stays FULLY_CONNECTED (per-channel weights, an NPU op)."""
    w = L.const(node.inputs[1])
    if w is not None and np.ndim(w) == 2 and not L.is_const(node.inputs[0]):
        return gemm(L, node)
    ins = []
    for k, name in enumerate(node.inputs[:2]):
        v = L.const(name)
        if v is None:  # Vela runs BATCH_MATMUL with int8 inputs only: in the wide mode, int8 between QUANTIZEs
            ins.append(L.narrow(L.act(name, "plain")))
        else:
            v = np.asarray(v, np.float32)
            q = const_q(v)
            ins.append(
                L.new(f"{node.outputs[0]}/{'lhs' if k == 0 else 'rhs'}", v.shape, q, "plain", data=quantize(v, q))
            )
    if min(len(t.shape) for t in ins) < 2:
        raise L.fail(node, "a 1-D operand (vector product) is not lowered")
    y = L.output(node.outputs[0], "plain")
    t = y if y.q.bits == 8 else L.new(f"{y.name}/int8", y.shape, activation_q(*L.real_range(y)), "plain")
    L.emit("BATCH_MATMUL", ins, [t], "BatchMatMulOptions", adj_x=False, adj_y=False)
    if t is not y:
        L.requant(t, y.q, dst=y)


def softmax(L: Lowering, node: NodeView) -> None:
    """Softmax / LogSoftmax on the innermost TFLite axis; any other axis is moved there and back with TRANSPOSEs."""
    x = L.act(node.inputs[0])
    rank = len(x.shape)
    opset = L.graph.opsets.get("ai.onnx", 13)
    axis = int(node.attr("axis", -1 if opset >= 13 else 1)) % rank
    shape = L.shape(node.inputs[0])
    if opset < 13 and axis != rank - 1:  # opset < 13 normalizes over the flattened axes [axis:]
        if any(d != 1 for d in shape[axis:-1]):
            raise L.fail(node, "opset<13 Softmax over several flattened axes is not lowered")
        axis = rank - 1
    tax = _axis(L, x, axis)
    out = node.outputs[0]
    # LogSoftmax: TFLite's LOG_SOFTMAX (int8 output fixed to [-16, 0]: log-probabilities below e^-16 saturate)
    op, opts = ("LOG_SOFTMAX", {}) if node.op_type == "LogSoftmax" else ("SOFTMAX", {"beta": 1.0})
    otype = "LogSoftmaxOptions" if op == "LOG_SOFTMAX" else "SoftmaxOptions"
    if op == "LOG_SOFTMAX":  # no int16 kernel: int8 between QUANTIZEs in the wide mode
        x = L.narrow(x)
    fq = L.fixed(op) or FIXED[op]  # an int8 LOG_SOFTMAX in the wide mode is requantized after
    if tax == rank - 1:
        y = L.output(out, x.layout, q=fq if fq.bits == L.bits else L.aq(*fq.range))
        s = y if y.q is fq else L.new(f"{out}/int8", y.shape, fq, x.layout)
        L.emit(op, [x], [s], otype, **opts)
        if s is not y:
            L.requant(s, y.q, dst=y)
        return
    perm = list(range(rank))
    perm[tax], perm[-1] = perm[-1], perm[tax]  # a swap is its own inverse
    moved = tuple(x.shape[p] for p in perm)
    t = L.new(f"{out}/moved", moved, x.q, x.layout)
    L.layout_op(x, t, perm)
    s = L.new(f"{out}/softmax", moved, fq, x.layout)
    L.emit(op, [t], [s], otype, **opts)
    s = L.requant(s, L.aq(*fq.range), "int16") if fq.bits != L.bits else s
    y = L.output(out, x.layout, q=s.q)
    L.layout_op(s, y, perm)


def tile(L: Lowering, node: NodeView) -> None:
    """Tile with constant repeats -> CONCATENATION of copies per repeated axis (memory-only on the NPU)."""
    reps = L.const(node.inputs[1])
    if reps is None:
        raise L.fail(node, "repeats computed at run time")
    x = L.act(node.inputs[0])
    out = node.outputs[0]
    reps = [int(r) for r in np.asarray(reps).reshape(-1)]
    if x.layout == "nhwc":
        reps = [reps[p] for p in TO_NHWC]
    if not any(r != 1 for r in reps):
        L.aliases[out] = node.inputs[0]
        return
    _concat_copies(L, x, reps, out)


MAX_COPIES = 64  # Expand by more copies than this stays one BROADCAST_TO


def _concat_copies(L: Lowering, x: TT, reps: list[int], out: str) -> None:
    """`x` repeated reps[a] times along each TFLite axis a: one CONCATENATION per repeated axis."""
    todo = [a for a, r in enumerate(reps) if r != 1]
    for k, a in enumerate(todo):
        shape = tuple(d * reps[a] if i == a else d for i, d in enumerate(x.shape))
        y = L.output(out, x.layout, q=x.q) if k == len(todo) - 1 else L.new(f"{out}/tile{a}", shape, x.q, x.layout)
        L.emit("CONCATENATION", [x] * reps[a], [y], "ConcatenationOptions", axis=a, fused_activation_function="NONE")
        x = y


def edge_pad(L: Lowering, x: TT, full: list[list[int]], out: str) -> None:
    """Pad mode=edge: MIRROR_PAD SYMMETRIC where every pad is <= 1 (the same values), else concatenated edge copies."""
    if all(p <= 1 for pr in full for p in pr):
        y = L.output(out, x.layout, q=x.q)
        L.emit("MIRROR_PAD", [x, L.int32(f"{y.name}/paddings", full)], [y], "MirrorPadOptions", mode=1)
        return
    todo = [a for a, pr in enumerate(full) if any(pr)]
    for k, a in enumerate(todo):
        parts = []
        for side, n in enumerate(full[a]):
            if not n:
                continue
            begin, end = [0] * len(x.shape), list(x.shape)
            begin[a], end[a] = (0, 1) if side == 0 else (x.shape[a] - 1, x.shape[a])
            e = L.new(f"{out}/edge{a}_{side}", tuple(1 if i == a else d for i, d in enumerate(x.shape)), x.q, x.layout)
            L.emit(
                "STRIDED_SLICE",
                [
                    x,
                    L.int32(f"{e.name}/begin", begin),
                    L.int32(f"{e.name}/end", end),
                    L.int32(f"{e.name}/strides", [1] * len(x.shape)),
                ],
                [e],
                "StridedSliceOptions",
            )
            parts.append((side, [e] * n))
        ins = (
            [t for side, ts in parts if side == 0 for t in ts]
            + [x]
            + [t for side, ts in parts if side == 1 for t in ts]
        )
        shape = tuple(d + sum(full[a]) if i == a else d for i, d in enumerate(x.shape))
        y = L.output(out, x.layout, q=x.q) if k == len(todo) - 1 else L.new(f"{out}/pad{a}", shape, x.q, x.layout)
        L.emit("CONCATENATION", ins, [y], "ConcatenationOptions", axis=a, fused_activation_function="NONE")
        x = y


def never_special(L: Lowering, node: NodeView) -> None:
    """IsNaN / IsInf of a tensor the int8 graph computes: int8 holds neither, so the answer is a constant False."""
    L.prep.consts[node.outputs[0]] = np.zeros(L.shape(node.outputs[0]), bool)


MAX_RUNS = 16  # a scatter whose output is at most this many contiguous runs is sliced and concatenated (NPU ops)


def scatter_nd(L: Lowering, node: NodeView) -> None:
    """ScatterND with constant indices (DETR's box updates `boxes[..., :2] = ...`): data and updates flattened to rows
    over the indexed axes, concatenated, then the output's rows picked by a constant map: STRIDED_SLICE runs +
    CONCATENATION when they are few, else one GATHER."""
    idx = L.const(node.inputs[1])
    if idx is None:
        raise L.fail(node, "indices computed at run time")
    if str(node.attr("reduction", "none")) not in ("none", "b'none'"):
        raise L.fail(node, f"reduction '{node.attr('reduction')}'")
    shape, out = L.shape(node.inputs[0]), node.outputs[0]
    idx = np.asarray(idx, np.int64)
    k = idx.shape[-1]
    rows, inner = int(np.prod(shape[:k], dtype=np.int64)), int(np.prod(shape[k:], dtype=np.int64))
    flat = np.ravel_multi_index(tuple((idx.reshape(-1, k) % np.asarray(shape[:k])).T), shape[:k])
    src = np.arange(rows)
    src[flat] = rows + np.arange(flat.size)  # row r of the output: data row r, or updates row j (rows + j)
    q = L.q_of(out)
    parts = []
    for name, n in ((node.inputs[0], rows), (node.inputs[2], flat.size)):
        t = L.requant(L.act(name, "plain"), q)
        r = L.new(f"{out}/{'data' if name == node.inputs[0] else 'updates'}_rows", (n, inner), q, "plain")
        L.emit_reshape(t, r)
        parts.append(r)
    both = L.new(f"{out}/rows", (rows + flat.size, inner), q, "plain")
    L.emit("CONCATENATION", parts, [both], "ConcatenationOptions", axis=0, fused_activation_function="NONE")
    picked = L.new(f"{out}/picked", (rows, inner), q, "plain")
    starts = [0] + [i for i in range(1, rows) if src[i] != src[i - 1] + 1]
    if len(starts) <= MAX_RUNS:
        runs = []
        for a, b in zip(starts, starts[1:] + [rows]):
            s = picked if len(starts) == 1 else L.new(f"{out}/run{a}", (b - a, inner), q, "plain")
            L.emit(
                "STRIDED_SLICE",
                [
                    both,
                    L.int32(f"{s.name}/begin", [int(src[a]), 0]),
                    L.int32(f"{s.name}/end", [int(src[a]) + b - a, inner]),
                    L.int32(f"{s.name}/strides", [1, 1]),
                ],
                [s],
                "StridedSliceOptions",
            )
            runs.append(s)
        if len(runs) > 1:
            L.emit("CONCATENATION", runs, [picked], "ConcatenationOptions", axis=0, fused_activation_function="NONE")
    else:
        L.emit(
            "GATHER", [both, L.int32(f"{picked.name}/indices", src)], [picked], "GatherOptions", axis=0, batch_dims=0
        )
    y = L.output(out, "plain", q=q)
    L.emit_reshape(picked, y)

"""The integer / boolean path: token-id inputs and the index and mask arithmetic computed from them.

Text encoders take int64 token ids into an embedding lookup (Gather from a constant table) and build boolean
attention masks (Cast, Equal, And, CumSum, Expand, Where ...). Everything that depends only on shapes and constants
is already folded (npufit.graph); what is left runs at run time on integers, so it is carried as int32 / bool
TFLite tensors (int64 narrowed to int32: TFLite's index type) in ONNX axis order, never quantized. Vela leaves
these ops on the CPU, which is correct: they are cheap and exact. Where the integer path meets the int8 path:
  - GATHER of an int8 table (or activation) by int32 ids;
  - SELECT_V2 of int8 branches by a bool condition (Where), folded into the Add that applies an attention mask;
  - CAST + QUANTIZE / DEQUANTIZE + CAST for int <-> float casts."""

from __future__ import annotations

import numpy as np

from ..graph import NodeView
from ..targets.converter_facts import argmax_of_bool, bool_cast_source, carried_dtype
from .int_tensors import alias as _alias
from .int_tensors import dtype_of, int_act
from .int_tensors import out as _out
from .lower import TT, Lowering
from .ops_lookup import gather, gather_elements, gather_nd
from .ops_shape import argmax as argmax_int8
from .ops_tensor import slice_bounds
from .qparams import Q, quantize
from .where_q import branch as _branch
from .where_q import far_fills, feeds_softmax, fill_q
from .where_q import fill_room as _fill_room
from .where_q import q_over as _q_over

COMPARE = {
    "Equal": "EQUAL",
    "Less": "LESS",
    "LessOrEqual": "LESS_EQUAL",
    "Greater": "GREATER",
    "GreaterOrEqual": "GREATER_EQUAL",
}
LOGICAL = {"And": "LOGICAL_AND", "Or": "LOGICAL_OR", "Xor": "NOT_EQUAL"}
ARITH = {
    "Add": ("ADD", "AddOptions"),
    "Sub": ("SUB", "SubOptions"),
    "Mul": ("MUL", "MulOptions"),
    "Div": ("DIV", "DivOptions"),
    "Max": ("MAXIMUM", "MaximumMinimumOptions"),
    "Min": ("MINIMUM", "MaximumMinimumOptions"),
}
UNARY = {"Neg": "NEG", "Abs": "ABS"}
RESHAPES = {"Reshape", "Flatten", "Squeeze", "Unsqueeze"}


def claims(L: Lowering, node: NodeView) -> bool:
    """True when `node` computes on the integer path (integer / bool output), or joins it to the int8 path
    (a lookup by run-time indices, a selection by a run-time condition, an Add of such a selection)."""
    if node.op_type not in INT_OPS:  # ops with int outputs of their own (IsNaN, TopK ...) keep their lowerings;
        # integers computed from run-time integers by any other op: lower() says it has no lowering for them
        return _runtime_integers(node, lambda n: dtype_of(L, n) is not None, L.is_const)
    if node.op_type in ("GatherElements", "GatherND") and L.is_const(node.inputs[1]):
        return False  # constant indices, on any data: ops_space.gather_const
    if node.op_type == "ArgMax":  # only where the cast's sole reader is this ArgMax (its int8 twin replaces it)
        return argmax_of_bool(L.graph, node, lambda n: dtype_of(L, n))
    if any(dtype_of(L, o) for o in node.outputs if o):
        return True
    if node.op_type == "Cast" and dtype_of(L, node.inputs[0]):  # int / bool -> float
        return True
    if node.op_type in ("Gather", "GatherElements") and not L.is_const(node.inputs[1]):
        return True
    if node.op_type == "Where" and not L.is_const(node.inputs[0]):
        return True
    return node.op_type in ("Add", "Sub") and _select_operand(L, node) is not None


def unlowered(graph, node: NodeView) -> bool:
    """What `lower` will refuse, read off the graph before any lowering (the check `compile` makes before it says
    anything): the first case of `claims`, integers computed from run-time integers by an op with no integer
    lowering. Forms decided only while lowering are still refused by `lower` itself."""
    if node.op_type in INT_OPS:
        return False

    def integer(name: str) -> bool:
        t = graph.tensors.get(name)
        return t is not None and carried_dtype(t.dtype) is not None

    return _runtime_integers(node, integer, lambda name: graph.tensors[name].is_const)


def _runtime_integers(node: NodeView, integer, const) -> bool:
    """Integers computed from run-time integers: an integer output and a non-constant integer input."""
    return any(integer(o) for o in node.outputs if o) and any(integer(i) and not const(i) for i in node.inputs if i)


def lower(L: Lowering, node: NodeView) -> None:
    op = node.op_type
    if op in ARITH:
        return (add_select if _select_operand(L, node) is not None else arith)(L, node)
    fn = reshape if op in RESHAPES else compare if op in COMPARE or op in LOGICAL else _OWN.get(op)
    if fn is None:
        raise L.fail(node, "no lowering on integer / bool tensors")
    fn(L, node)


# -- tensors ----------------------------------------------------------------------------------------------
# -- integer / bool ops -----------------------------------------------------------------------------------
def cast(L: Lowering, node: NodeView) -> None:
    src, dst = dtype_of(L, node.inputs[0]), dtype_of(L, node.outputs[0])
    out = node.outputs[0]
    if src == dst:  # int64 <-> int32 are both carried as int32
        return _alias(L, node)
    if src is None:  # float -> int / bool: DEQUANTIZE, then CAST (truncates toward zero, as ONNX does)
        x = L.act(node.inputs[0], "plain")
        f = L.new(f"{out}/float", x.shape, None, "plain", "float32")
        L.emit("DEQUANTIZE", [x], [f])
        L.emit("CAST", [f], [_out(L, out, dst)])
        return
    x = int_act(L, node.inputs[0])
    if dst is not None:
        L.emit("CAST", [x], [_out(L, out, dst)])
        return
    # int / bool -> float: CAST to float32, QUANTIZE into the calibrated int8 range
    f = L.new(f"{out}/float", x.shape, None, "plain", "float32")
    L.emit("CAST", [x], [f])
    L.emit("QUANTIZE", [f], [L.output(out, "plain")])


def _bool_source(L: Lowering, name: str) -> str | None:
    """The bool tensor an integer tensor was cast from (its values are 0 / 1), else None."""
    return bool_cast_source(L.graph, name, lambda n: dtype_of(L, n))


def argmax(L: Lowering, node: NodeView) -> None:
    """ArgMax of a 0/1 vector cast from bool (CLIP's first end-of-text position): the bools cast to int8 with
    scale 1 (exact), since Vela accepts ARG_MAX only on an 8-bit input."""

    src = int_act(L, _bool_source(L, node.inputs[0]), "bool")
    t = L.new(f"{node.inputs[0]}/int8", src.shape, Q(1.0, 0), "plain")
    L.emit("CAST", [src], [t])
    L.tensors[t.name] = t
    L.aliases[node.inputs[0]] = t.name
    argmax_int8(L, node)


def _to_shape(L: Lowering, node: NodeView, tfl: str, *opts) -> None:
    """RESHAPE / BROADCAST_TO of an integer tensor to the node's static output shape (an alias when nothing moves)."""
    x = int_act(L, node.inputs[0])
    shape = L.shape(node.outputs[0])
    if tuple(shape) == x.shape:
        return _alias(L, node)
    y = _out(L, node.outputs[0], x.dtype)
    kw = {"new_shape": list(shape)} if opts else {}
    L.emit(tfl, [x, L.int32(f"{y.name}/shape", shape)], [y], *opts, **kw)


def reshape(L: Lowering, node: NodeView) -> None:
    _to_shape(L, node, "RESHAPE", "ReshapeOptions")


def compare(L: Lowering, node: NodeView) -> None:
    """Equal / Less / ... on integers, And / Or / Xor on bools (int32 constants broadcast as TFLite does)."""
    a, b = node.inputs[0], node.inputs[1]
    dt = dtype_of(L, a) or dtype_of(L, b)
    tfl = COMPARE.get(node.op_type) or LOGICAL[node.op_type]
    if dt is None and tfl in COMPARE.values():
        return _compare_int8(L, node, tfl)
    if dt is None:
        raise L.fail(node, "logical ops of float tensors are not lowered")
    L.emit(tfl, [int_act(L, a, dt), int_act(L, b, dt)], [_out(L, node.outputs[0], "bool")])


def _compare_int8(L: Lowering, node: NodeView, tfl: str) -> None:
    """A comparison of float tensors on their int8 values, both in one set of parameters (the first activation's):
    equal stored integers are equal values, so a max-pool peak test (CenterNet's `hmax == heat`) stays exact."""
    a, b = node.inputs[0], node.inputs[1]
    first = a if not L.is_const(a) else b
    x = L.narrow(L.act(first, "plain"))
    ins = []
    for name in (a, b):
        c = L.const(name)
        if c is None:
            ins.append(L.requant(L.narrow(L.act(name, "plain")), x.q))
        else:
            v = np.asarray(c, np.float32)
            ins.append(
                L.new(
                    f"{node.outputs[0]}/{'lhs' if name == a else 'rhs'}", v.shape, x.q, "plain", data=quantize(v, x.q)
                )
            )
    L.emit(tfl, ins, [_out(L, node.outputs[0], "bool")])


def mod(L: Lowering, node: NodeView) -> None:
    """Integer Mod: FLOOR_MOD (fmod=0, the sign of the divisor, as ONNX's integer Mod); fmod=1 (the sign of the
    dividend) as x - y * (x / y) with DIV, which truncates toward zero in int32."""
    if not dtype_of(L, node.outputs[0]):
        raise L.fail(node, "Mod of float tensors (only integer Mod is lowered)")
    x, y = int_act(L, node.inputs[0], "int32"), int_act(L, node.inputs[1], "int32")
    out = _out(L, node.outputs[0], "int32")
    if not int(node.attr("fmod", 0)):
        L.emit("FLOOR_MOD", [x, y], [out])
        return
    shape = np.broadcast_shapes(x.shape, y.shape)
    q = L.new(f"{out.name}/quotient", shape, None, "plain", "int32")
    L.emit("DIV", [x, y], [q], "DivOptions", fused_activation_function="NONE")
    p = L.new(f"{out.name}/product", shape, None, "plain", "int32")
    L.emit("MUL", [q, y], [p], "MulOptions", fused_activation_function="NONE")
    L.emit("SUB", [x, p], [out], "SubOptions", fused_activation_function="NONE")


def logical_not(L: Lowering, node: NodeView) -> None:
    L.emit("LOGICAL_NOT", [int_act(L, node.inputs[0], "bool")], [_out(L, node.outputs[0], "bool")])


def arith(L: Lowering, node: NodeView) -> None:
    """Add / Sub / Mul / Div / Max / Min on int32 (positions, offsets); int32 wraps where ONNX's int64 would not,
    which index arithmetic never comes near. DIV truncates toward zero, as ONNX's integer Div does. Max / Min of
    more inputs are a chain; of one, the input."""
    tfl, opts = ARITH[node.op_type]
    kw = {"fused_activation_function": "NONE"} if opts != "MaximumMinimumOptions" else {}
    names = [n for n in node.inputs if n]
    if len(names) == 1:
        return _alias(L, node)
    ins = [int_act(L, n, "int32") for n in names]
    L.emit_chain(
        tfl,
        ins,
        _out(L, node.outputs[0], "int32"),
        opts,
        lambda k, a, b: L.new(
            f"{node.outputs[0]}/step{k}", np.broadcast_shapes(a.shape, b.shape), None, "plain", "int32"
        ),
        **kw,
    )


def unary(L: Lowering, node: NodeView) -> None:
    L.emit(UNARY[node.op_type], [int_act(L, node.inputs[0], "int32")], [_out(L, node.outputs[0], "int32")])


def clip(L: Lowering, node: NodeView) -> None:
    """Clip of integers (index clamping): MAXIMUM with the lower bound, then MINIMUM with the upper one, in int32
    (exact: integer tensors take no calibration range). Bounds may be constants or run-time tensors."""
    bounds = [(n, op) for n, op in zip(node.inputs[1:3], ("MAXIMUM", "MINIMUM")) if n]
    if not bounds:
        return _alias(L, node)
    cur = int_act(L, node.inputs[0], "int32")
    for k, (name, op) in enumerate(bounds):
        last = k == len(bounds) - 1
        dst = (
            _out(L, node.outputs[0], "int32")
            if last
            else L.new(f"{node.outputs[0]}/max", cur.shape, None, "plain", "int32")
        )
        L.emit(op, [cur, int_act(L, name, "int32")], [dst], "MaximumMinimumOptions")
        cur = dst


def transpose(L: Lowering, node: NodeView) -> None:
    x = int_act(L, node.inputs[0])
    perm = [int(p) for p in node.attr("perm", list(range(len(x.shape)))[::-1])]
    L.emit(
        "TRANSPOSE",
        [x, L.int32(f"{node.outputs[0]}/perm", perm)],
        [_out(L, node.outputs[0], x.dtype)],
        "TransposeOptions",
    )


def concat(L: Lowering, node: NodeView) -> None:
    dt = next(d for d in (dtype_of(L, n) for n in node.inputs if n) if d)
    ins = [int_act(L, n, dt) for n in node.inputs if n]
    axis = int(node.attr("axis", 0)) % len(L.shape(node.outputs[0]))
    L.emit(
        "CONCATENATION",
        ins,
        [_out(L, node.outputs[0], dt)],
        "ConcatenationOptions",
        axis=axis,
        fused_activation_function="NONE",
    )


def slice_(L: Lowering, node: NodeView) -> None:
    begin, end, stride, to_start = slice_bounds(L, node)
    x = int_act(L, node.inputs[0])
    y = _out(L, node.outputs[0], x.dtype)
    L.emit(
        "STRIDED_SLICE",
        [x, L.int32(f"{y.name}/begin", begin), L.int32(f"{y.name}/end", end), L.int32(f"{y.name}/strides", stride)],
        [y],
        "StridedSliceOptions",
        end_mask=sum(1 << a for a, m in enumerate(to_start) if m),
    )


def cumsum(L: Lowering, node: NodeView) -> None:
    x = int_act(L, node.inputs[0])
    axis = L.const(node.inputs[1])
    if axis is None:
        raise L.fail(node, "axis computed at run time")
    ax = int(np.asarray(axis).reshape(-1)[0]) % len(x.shape)
    y = _out(L, node.outputs[0], x.dtype)
    L.emit(
        "CUMSUM",
        [x, L.int32(f"{y.name}/axis", ax)],
        [y],
        "CumsumOptions",
        exclusive=bool(node.attr("exclusive", 0)),
        reverse=bool(node.attr("reverse", 0)),
    )


def expand(L: Lowering, node: NodeView) -> None:
    _to_shape(L, node, "BROADCAST_TO")


# -- where the integer path meets the int8 path ----------------------------------------------------------------
def _select(L: Lowering, cond: str, branches, out: str, q: Q, rank: int) -> TT:
    """SELECT_V2(cond, a, b) in int8 with parameters `q` (SELECT does not rescale); a fill is the int8 end."""
    vals = []
    for k, (kind, v) in enumerate(branches):
        tag = f"{out}/{'then' if k == 0 else 'else'}"
        if kind == "act":
            vals.append(L.requant(L.act(v, "plain"), q))
            continue
        arr = (
            np.full((1,) * rank, q.range[1] if v > 0 else q.range[0], np.float32)
            if kind == "fill"
            else np.asarray(v, np.float32).reshape((1,) * (rank - np.ndim(v)) + np.shape(v))
        )
        vals.append(L.new(tag, arr.shape, q, "plain", data=quantize(arr, q)))
    c = int_act(L, cond, "bool")
    y = L.output(out, "plain", q=q)
    L.emit("SELECT_V2", [c, *vals], [y])
    return y


def where(L: Lowering, node: NodeView) -> None:
    """Where by a run-time condition. On integers: SELECT_V2 in int32. On floats: SELECT_V2 of int8 branches over
    the range of the branches that are not fills; when every consumer is an Add that applies it (an attention mask
    added to scores) nothing is emitted here: each Add folds it in (add_select)."""
    out = node.outputs[0]
    dt = dtype_of(L, out)
    if dt:
        L.emit(
            "SELECT_V2",
            [int_act(L, node.inputs[0], "bool"), int_act(L, node.inputs[1], dt), int_act(L, node.inputs[2], dt)],
            [_out(L, out, dt)],
        )
        return
    cons = L.graph.consumers(out)
    if (
        out not in L.graph.output_names
        and cons
        and all(c.op_type in ("Add", "Sub") and _select_operand(L, c) == out for c in cons)
    ):
        return
    branches = [_branch(L, node.inputs[1]), _branch(L, node.inputs[2])]
    if all(b[0] == "fill" for b in branches):
        raise L.fail(node, "both branches are infinite fills")
    _select(L, node.inputs[0], branches, out, fill_q(L, node, branches) or L.q_of(out), len(L.shape(out)))


def _select_operand(L: Lowering, node: NodeView) -> str | None:
    """The input of an Add / Sub that is a float Where by a run-time condition between constants (a mask), or
    between a fill and a computed value (a bias masked with finfo.min): x + fill must stay the int8 end, which an
    ADD of the selected values does not keep (its output range would span 1e38)."""
    if node.op_type not in ("Add", "Sub") or dtype_of(L, node.outputs[0]):
        return None
    for k, name in enumerate(node.inputs[:2]):
        p = L.graph.producer(name) if name else None
        other = node.inputs[1 - k]
        if (
            p is None
            or p.op_type != "Where"
            or L.is_const(p.inputs[0])
            or dtype_of(L, name)
            or L.is_const(other)
            or (node.op_type == "Sub" and k == 0)
        ):
            continue
        kinds = {_branch(L, b)[0] for b in p.inputs[1:3]}
        if (
            "act" not in kinds
            or kinds == {"act", "fill"}
            or (kinds == {"act", "const"} and feeds_softmax(L, node.outputs[0]))
        ):
            return name
    return None


def add_select(L: Lowering, node: NodeView) -> None:
    """x + Where(c, a, b) with constant a, b = Where(c, x + a, x + b): SELECT_V2 of two int8 shifts of x (or of x
    and the sum x + b where b is computed). A fill branch (-3.4e38, "masked") saturates to the int8 end, so the
    output's scale covers the scores, not 1e38."""
    m = _select_operand(L, node)
    x_name = node.inputs[1] if node.inputs[0] == m else node.inputs[0]
    sign = -1.0 if node.op_type == "Sub" else 1.0
    w = L.graph.producer(m)
    x = L.act(x_name, "plain")
    lo, hi = L.real_range(x)
    out = node.outputs[0]
    rank = len(L.shape(out))
    branches, ranges = [], []
    kinds = [_branch(L, name) for name in w.inputs[1:3]]
    for kind, v in kinds:
        if kind == "fill":
            branches.append(("fill", v * sign))
            ranges.append(None)
            continue
        if kind == "act":  # the Add's own calibrated range where the other branch is a fill, else both ranges summed
            ylo, yhi = sorted(sign * r for r in L.real_range(L.act(v)))
            alone = all(k == "act" or k == "fill" for k, _ in kinds) and L.ranges.get(out)
            ranges.append(alone or (lo + ylo, hi + yhi))
            branches.append(("sum", v))
            continue
        v = sign * v
        ranges.append((lo + float(v.min()), hi + float(v.max())))
        branches.append(("shift", v))
    branches, ranges = far_fills(L, out, branches, ranges)
    ranges = [r for r in ranges if r is not None]
    if not ranges:
        raise L.fail(node, "both mask branches are infinite fills")
    q = _q_over(
        ranges + _fill_room(L, out, ranges) if any(b[0] == "fill" and b[1] < 0 for b in branches) else ranges, L.bits
    )
    sel = []
    for k, (kind, v) in enumerate(branches):
        if kind == "shift" and not np.any(v):
            sel.append(("act", x_name))
        elif kind == "shift":
            t = L.new(f"{out}/{'then' if k == 0 else 'else'}", L.shape(out), q, "plain")
            arr = np.asarray(v, np.float32).reshape((1,) * (rank - np.ndim(v)) + np.shape(v))
            L.emit(
                "ADD",
                [x, L.const_int8(f"{t.name}/shift", arr, "plain")],
                [t],
                "AddOptions",
                fused_activation_function="NONE",
            )
            L.tensors[t.name] = t
            sel.append(("act", t.name))
        elif kind == "sum":
            t = L.new(f"{out}/{'then' if k == 0 else 'else'}", L.shape(out), q, "plain")
            tfl, opts = ARITH[node.op_type]
            L.emit(tfl, [x, L.act(v, "plain")], [t], opts, fused_activation_function="NONE")
            L.tensors[t.name] = t
            sel.append(("act", t.name))
        else:
            sel.append((kind, v))
    _select(L, w.inputs[0], sel, out, q, rank)


_OWN = {
    "ArgMax": argmax,
    "Cast": cast,
    "CastLike": cast,
    "Mod": mod,
    "Gather": gather,
    "GatherElements": gather_elements,
    "GatherND": gather_nd,
    "Where": where,
    "CumSum": cumsum,
    "Not": logical_not,
    "Expand": expand,
    "Identity": _alias,
    "Dropout": _alias,
    "Clip": clip,
    "Neg": unary,
    "Abs": unary,
    "Transpose": transpose,
    "Concat": concat,
    "Slice": slice_,
}
INT_OPS = set(_OWN) | RESHAPES | set(COMPARE) | set(LOGICAL) | set(ARITH)

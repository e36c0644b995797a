"""Lowering of the math ops that have no int8 TFLite kernel of their own, built from ones Vela runs on the NPU
(MUL, ADD, TANH, RSQRT): Erf, Pow with a constant exponent, Sqrt, Reciprocal and Div by a run-time tensor.

Intermediate tensors that exist only in the TFLite graph get ranges derived from their input's calibrated
range (the math is monotone or bounded), not guessed."""

from __future__ import annotations

import math

import numpy as np

from ..graph import NodeView
from .lower import TO_NCHW, TO_NHWC, TT, Lowering
from .qparams import activation_q, quantize

# erf(z) ~= tanh(A z + B z^3): the GELU tanh form's own approximation (max |error| 3.6e-4 on the real line,
# far below the int8 step 1/128 of the result); z beyond +-3 saturates to +-1 either way.
ERF_A = 2.0 / math.sqrt(math.pi)
ERF_B = math.sqrt(2.0 / math.pi) * 0.044715 * 2.0 * math.sqrt(2.0)
ERF_SAT_Z, TANH_SAT = 3.0, 4.0


def scalar_const(L: Lowering, name: str, value: float) -> TT:
    q = L.aq(min(value, 0.0), max(value, 0.0))
    return L.new(name, (), q, "plain", data=quantize(np.array(value), q))


def mul(L: Lowering, a: TT, b: TT, name: str, q, out: TT | None = None) -> TT:
    y = out or L.new(name, _bshape(a.shape, b.shape), q, a.layout if len(a.shape) >= len(b.shape) else b.layout)
    L.emit("MUL", [a, b], [y], "MulOptions", fused_activation_function="NONE")
    return y


def _bshape(a, b):
    return tuple(int(d) for d in np.broadcast_shapes(tuple(a), tuple(b)))


def _absmax(t: TT, cap: float = math.inf) -> float:
    lo, hi = t.q.range
    return min(max(abs(lo), abs(hi)), cap)


def _cubic_arg(L: Lowering, x, m: float, a_coef: float, b_coef: float, out: str, sat: float):
    """x * (A + B x^2) as MUL, MUL, ADD, MUL: the argument of the TANH / LOGISTIC table in the Erf and GELU forms.
    m bounds |x|, so every intermediate gets a range from it rather than from calibration."""
    x2 = mul(L, x, x, f"{out}/x2", L.aq(0.0, m * m))
    bx2 = mul(L, x2, scalar_const(L, f"{out}/b", b_coef), f"{out}/bx2", L.aq(0.0, b_coef * m * m))
    a = L.new(f"{out}/poly", x2.shape, L.aq(0.0, a_coef + b_coef * m * m), x.layout)
    L.emit("ADD", [bx2, scalar_const(L, f"{out}/a", a_coef)], [a], "AddOptions", fused_activation_function="NONE")
    return mul(L, x, a, f"{out}/arg", L.aq(-sat, sat))


def erf(L: Lowering, node: NodeView) -> None:
    """Erf -> TANH(z * (A + B z^2)): four NPU ops (MUL, MUL, ADD, MUL) and a TANH look-up table."""
    x = L.act(node.inputs[0])
    out = node.outputs[0]
    u = _cubic_arg(L, x, _absmax(x, ERF_SAT_Z), ERF_A, ERF_B, out, TANH_SAT)
    y = L.output(out, x.layout, q=L.fixed("TANH"))
    L.emit("TANH", [u], [y])


def pow_(L: Lowering, node: NodeView) -> None:
    e = L.const(node.inputs[1])
    if e is None or np.asarray(e).size != 1:
        raise L.fail(node, "only a constant scalar exponent is lowered")
    e = float(np.asarray(e).reshape(-1)[0])
    x = L.act(node.inputs[0])
    out = node.outputs[0]
    if e == 1.0:
        L.aliases[out] = node.inputs[0]
        return
    if e == 0.5:
        return _sqrt_of(L, x, out)
    if e == -0.5:
        y = L.output(out, x.layout)
        L.emit("RSQRT", [x], [y])
        return
    if e not in (2.0, 3.0):
        raise L.fail(node, f"exponent {e:g} (lowered: 0.5, -0.5, 1, 2, 3)")
    if e == 2.0:
        mul(L, x, x, out, None, out=L.output(out, x.layout))
        return
    m = _absmax(x)
    x2 = mul(L, x, x, f"{out}/x2", L.aq(0.0, m * m))
    mul(L, x2, x, out, None, out=L.output(out, x.layout))


def _rsqrt(L: Lowering, x: TT, name: str) -> TT:
    """RSQRT of a positive tensor, its output range from the input's calibrated one."""
    lo, hi = L.real_range(x)
    if hi <= 0:
        raise ValueError("not positive")
    lo = max(lo, hi / 255.0 / 2, 1e-12)  # the smallest positive int8 step of the input: anything below rounds to it
    q = L.aq(0.0, 1.0 / math.sqrt(lo))
    r = L.new(name if q.bits == 8 else f"{name}/int8", x.shape, activation_q(0.0, 1.0 / math.sqrt(lo)), x.layout)
    L.emit("RSQRT", [L.narrow(x)], [r])  # Vela's RSQRT is int8 only: in the wide mode, int8 between QUANTIZEs
    return L.requant(r, q, "int16")


def _sqrt_of(L: Lowering, x: TT, out: str) -> None:
    """sqrt(x) = x * rsqrt(x): both NPU ops (int8 SQRT has no Vela kernel)."""
    r = _rsqrt(L, x, f"{out}/rsqrt")
    mul(L, x, r, out, None, out=L.output(out, x.layout))


def sqrt(L: Lowering, node: NodeView) -> None:
    out = node.outputs[0]
    users = L.graph.consumers(out)
    if (
        out not in L.graph.output_names
        and users
        and all(u.op_type in ("Div", "Reciprocal") and u.inputs[-1] == out and u.inputs[0] != out for u in users)
    ):
        return  # every user divides by it: they take RSQRT of the input instead (see reciprocal_of)
    x = L.act(node.inputs[0])
    try:
        _sqrt_of(L, x, out)
    except ValueError:
        raise L.fail(node, "the input is never positive on the calibration data") from None


def reciprocal_of(L: Lowering, node: NodeView, name: str) -> TT:
    """1/`name` from NPU ops: RSQRT of the Sqrt's input when `name` is a Sqrt output, else RSQRT squared."""
    p = L.graph.producer(name)
    try:
        if p is not None and p.op_type == "Sqrt" and L.resolve(name) not in L.tensors:
            return _rsqrt(L, L.act(p.inputs[0]), f"{name}/rsqrt")
        b = L.act(name)
        lo, hi = L.real_range(b)
        if lo <= 0:
            raise ValueError("not positive")
        r = _rsqrt(L, b, f"{name}/rsqrt")
        return mul(L, r, r, f"{name}/reciprocal", L.aq(0.0, 1.0 / lo))
    except ValueError:
        raise L.fail(
            node, "division by a run-time tensor that is not always positive on the calibration data"
        ) from None


def reciprocal(L: Lowering, node: NodeView) -> None:
    r = reciprocal_of(L, node, node.inputs[0])
    y = L.output(node.outputs[0], r.layout)
    L.emit("QUANTIZE", [r], [y], "QuantizeOptions")


def div(L: Lowering, node: NodeView) -> None:
    """a / b with b computed at run time -> MUL(a, 1/b)."""
    r = reciprocal_of(L, node, node.inputs[1])
    a = L.const(node.inputs[0])
    layout = r.layout
    if a is None:
        x = L.act(node.inputs[0])
        layout = x.layout if len(x.shape) >= len(r.shape) else r.layout
        if x.layout != r.layout and len(x.shape) == len(r.shape) == 4:  # move the smaller one (a [N, 1, 1, 1] norm)
            if np.prod(r.shape) <= np.prod(x.shape):
                perm = TO_NHWC if x.layout == "nhwc" else TO_NCHW
                r2 = L.new(f"{r.name}/{x.layout}", tuple(r.shape[p] for p in perm), r.q, x.layout)
                L.layout_op(r, r2, perm)
                r, layout = r2, x.layout
            else:
                x, layout = L.act(node.inputs[0], r.layout), r.layout
    else:
        rank = len(L.shape(node.outputs[0]))
        v = np.asarray(a, np.float32)
        x = L.const_int8(f"{node.outputs[0]}/lhs", v.reshape((1,) * (rank - v.ndim) + v.shape), layout)
    mul(L, x, r, node.outputs[0], None, out=L.output(node.outputs[0], layout))


# GELU(x) ~= x * sigmoid(x * (G_A + G_B x^2)): the tanh form, max |error| 4.7e-4 (int8 step of GELU outputs: ~1e-2)
G_A = 2.0 * math.sqrt(2.0 / math.pi)
G_B = G_A * 0.044715
GELU_SAT_X, SIGMOID_SAT = 4.0, 8.0


def _const_is(L: Lowering, name: str, want: float) -> bool:
    v = L.const(name)
    return (
        v is not None
        and np.asarray(v).size == 1
        and abs(float(np.asarray(v).reshape(-1)[0]) - want) <= 1e-4 * abs(want)
    )


def gelu_pattern(L: Lowering, node: NodeView) -> list[NodeView] | None:
    """The exporters' exact GELU: Div(x, sqrt 2) | Mul(x, 1/sqrt 2) -> Erf -> Add 1 -> Mul x -> Mul 0.5 (each the
    sole user of the one before). -> the five nodes, or None."""
    if node.op_type == "Div" and _const_is(L, node.inputs[1], math.sqrt(2.0)):
        x = node.inputs[0]
    elif node.op_type == "Mul" and _const_is(L, node.inputs[1], 1 / math.sqrt(2.0)):
        x = node.inputs[0]
    else:
        return None
    chain, cur = [node], node
    for op, check in (
        ("Erf", lambda n, prev: True),
        ("Add", lambda n, prev: _const_is(L, n.inputs[1 - n.inputs.index(prev)], 1.0)),
        ("Mul", lambda n, prev: x in n.inputs),
        ("Mul", lambda n, prev: _const_is(L, n.inputs[1 - n.inputs.index(prev)], 0.5)),
    ):
        nxt = L.sole_consumer(cur.outputs[0])
        if nxt is None or nxt.op_type != op or len(nxt.inputs) < 1 or not check(nxt, cur.outputs[0]):
            return None
        chain.append(nxt)
        cur = nxt
    return chain


def gelu(L: Lowering, chain: list[NodeView]) -> None:
    """Fused exact-GELU chain -> MUL, MUL, ADD, MUL, LOGISTIC, MUL (all NPU ops; 6 int8 roundings instead of 9)."""
    for n in chain[1:]:
        L.absorbed.add(n.name)
    x = L.act(chain[0].inputs[0])
    out = chain[-1].outputs[0]
    u = _cubic_arg(L, x, _absmax(x, GELU_SAT_X), G_A, G_B, out, SIGMOID_SAT)
    s = L.new(f"{out}/sigmoid", u.shape, L.fixed("LOGISTIC"), x.layout)
    L.emit("LOGISTIC", [u], [s])
    mul(L, x, s, out, None, out=L.output(out, x.layout))

"""Activations and element-wise ops that TFLite has no int8 kernel for, written with kernels Vela runs on the NPU:
HardSigmoid (one 1x1 DEPTHWISE_CONV_2D), Softplus and Mish (ABS / LOGISTIC / LOG / RELU / SUB, TANH), Elu with any
alpha, Selu and Celu (ELU / RELU / MUL / ADD), Softsign (ABS / ADD / RSQRT / MUL), Sum and Mean of any number of
inputs (ADD chains); ThresholdedRelu as GREATER + SELECT_V2; Sin, Cos, Floor, Ceil, Round and Sign as float islands
(DEQUANTIZE -> the float kernel -> QUANTIZE: TFLite has them in float only, so they run on the CPU, as a standard
converter's do).

The chains compute in int8 whatever the activation width (ELU, EXP, LOG, NEG and RSQRT have no int16 form in Vela);
their last op writes an int8 twin of a 16-bit output, requantized into it. Intermediate ranges follow from the
input's calibrated range (each step is monotone or bounded), not from calibration. Softplus as relu(x) + log(1 +
e^-|x|) through EXP and an ADD reached cosine 0.9986 on a conv's output; through the sigmoid of |x|, 0.9999."""

from __future__ import annotations

import math

import numpy as np

from ..graph import NodeView
from .lower import TT, Lowering
from .ops_math import mul, scalar_const
from .ops_nn import channel_affine
from .ops_tensor import alias, operands, unary
from .qparams import FIXED, activation_q, quantize

NONE = {"fused_activation_function": "NONE"}
FLOAT_KERNEL = {"Sin": "SIN", "Cos": "COS", "Floor": "FLOOR", "Ceil": "CEIL", "Round": "ROUND", "Sign": "SIGN"}
LN2 = math.log(2.0)


def _c8(L: Lowering, name: str, value: float) -> TT:
    """An int8 scalar constant (the chains here are int8 at either activation width)."""
    q = activation_q(min(value, 0.0), max(value, 0.0))
    return L.new(name, (), q, "plain", data=quantize(np.array(value), q))


def _t8(L: Lowering, name: str, like: TT, lo: float, hi: float) -> TT:
    return L.new(name, like.shape, activation_q(lo, hi), like.layout)


def _x8(L: Lowering, node: NodeView) -> tuple[TT, float, float]:
    """The node's input as int8 (over its own range in the wide mode) and that real range."""
    x = L.narrow(L.act(node.inputs[0]))
    lo, hi = L.real_range(x)
    return x, lo, hi


def _out8(L: Lowering, out: str, layout: str) -> tuple[TT, TT]:
    """(the ONNX output's tensor, the int8 tensor the chain's last op writes): the same at int8, else an int8 twin
    over the output's calibrated range that _done requantizes into it."""
    y = L.output(out, layout)
    return y, y if y.q.bits == 8 else L.new(f"{y.name}/int8", y.shape, activation_q(*L.real_range(y)), layout)


def _done(L: Lowering, y: TT, t: TT) -> None:
    if t is not y:
        L.requant(t, y.q, dst=y)


def _unary(L: Lowering, op: str, x: TT, dst: TT) -> TT:
    L.emit(op, [x], [dst])
    return dst


def _add(L: Lowering, a: TT, b: TT, dst: TT) -> TT:
    L.emit("ADD", [a, b], [dst], "AddOptions", **NONE)
    return dst


def affine(L: Lowering, x: TT, scale: float, shift: float, dst: TT) -> None:
    """dst = scale * x + shift as one 1x1 DEPTHWISE_CONV_2D (every channel the same weight and bias; dst's int8 range
    clips the result). A tensor that is not 4-D is seen as a [1, 1, rows, last axis] map through free RESHAPEs."""
    four = len(x.shape) == 4
    shape = (
        tuple(x.shape) if four else (1, 1, int(np.prod(x.shape[:-1], dtype=np.int64)), x.shape[-1] if x.shape else 1)
    )
    src, out = x, dst
    if not four:
        src = L.new(f"{dst.name}/map", shape, x.q, "plain")
        L.emit_reshape(x, src)
        out = L.new(f"{dst.name}/map_out", shape, dst.q, "plain")
    C = shape[3]
    channel_affine(L, src, np.full(C, scale, np.float64), np.full(C, shift, np.float64), out)
    if not four:
        L.emit_reshape(out, dst)


def hard_sigmoid(L: Lowering, node: NodeView) -> None:
    """max(0, min(1, alpha x + beta)): the affine map as one depthwise conv; the output's int8 range (calibrated,
    inside [0, 1]) does the clipping."""
    x, _, _ = _x8(L, node)
    y, t = _out8(L, node.outputs[0], x.layout)
    affine(L, x, float(node.attr("alpha", 0.2)), float(node.attr("beta", 0.5)), t)
    _done(L, y, t)


def sum_mean(L: Lowering, node: NodeView) -> None:
    """Sum / Mean of any number of inputs: an ADD chain (each step's range the sum of its inputs' ranges); Mean then
    a MUL by 1/n."""
    names = [n for n in node.inputs if n]
    if len(names) == 1:
        return alias(L, node)
    out = node.outputs[0]
    layout, ins = operands(L, node, [(n, L.const(n)) for n in names], out)
    rng = [L.real_range(t) if not L.is_const(n) else t.q.range for n, t in zip(names, ins)]
    lo, hi = np.cumsum([r[0] for r in rng]), np.cumsum([r[1] for r in rng])
    y = L.output(out, layout)
    mean = node.op_type == "Mean"
    total = L.new(f"{out}/sum", y.shape, L.aq(lo[-1], hi[-1]), layout) if mean else y
    L.emit_chain(
        "ADD",
        ins,
        total,
        "AddOptions",
        lambda k, a, b: L.new(f"{out}/step{k}", np.broadcast_shapes(a.shape, b.shape), L.aq(lo[k], hi[k]), layout),
        **NONE,
    )
    if mean:
        mul(L, total, scalar_const(L, f"{out}/inv_n", 1.0 / len(names)), out, None, out=y)


def _softplus(L: Lowering, x: TT, lo: float, hi: float, dst: TT) -> TT:
    """log(1 + e^x) = relu(x) - log(sigmoid(|x|)): every step bounded (sigmoid(|x|) in [1/2, 1), its log in
    (-ln 2, 0])."""
    m = max(abs(lo), abs(hi))
    n = dst.name
    a = _unary(L, "ABS", x, _t8(L, f"{n}/abs", x, 0.0, m))
    s = _unary(L, "LOGISTIC", a, L.new(f"{n}/sigmoid", x.shape, FIXED["LOGISTIC"], x.layout))
    lg = _unary(L, "LOG", s, _t8(L, f"{n}/log", x, -LN2, 0.0))
    r = _unary(L, "RELU", x, _t8(L, f"{n}/relu", x, 0.0, max(hi, 0.0)))
    L.emit("SUB", [r, lg], [dst], "SubOptions", **NONE)
    return dst


def softplus(L: Lowering, node: NodeView) -> None:
    x, lo, hi = _x8(L, node)
    y, t = _out8(L, node.outputs[0], x.layout)
    _softplus(L, x, lo, hi, t)
    _done(L, y, t)


def mish(L: Lowering, node: NodeView) -> None:
    """x * tanh(softplus(x))."""
    x, lo, hi = _x8(L, node)
    y, t = _out8(L, node.outputs[0], x.layout)
    s = _softplus(L, x, lo, hi, _t8(L, f"{t.name}/softplus", x, 0.0, max(hi, 0.0) + LN2))
    th = _unary(L, "TANH", s, L.new(f"{t.name}/tanh", x.shape, FIXED["TANH"], x.layout))
    mul(L, x, th, t.name, None, out=t)
    _done(L, y, t)


def elu_family(L: Lowering, node: NodeView) -> None:
    """Elu(alpha), Selu(alpha, gamma), Celu(alpha) as c1 * RELU(k x) + c2 * ELU(k x) (TFLite's ELU has alpha 1):
    Elu: c1 = 1 - alpha, c2 = alpha; Selu: gamma times those; Celu: alpha * ELU(x / alpha)."""
    op, a = node.op_type, float(node.attr("alpha", {"Selu": 1.67326319217681884765625}.get(node.op_type, 1.0)))
    k, c1, c2 = (1.0 / a, 0.0, a) if op == "Celu" else (1.0, 1.0 - a, a)
    if op == "Selu":
        g = float(node.attr("gamma", 1.05070102214813232421875))
        c1, c2 = g * c1, g * c2
    x, lo, hi = _x8(L, node)
    y, t = _out8(L, node.outputs[0], x.layout)
    n = t.name
    if k != 1.0:
        lo, hi = sorted((k * lo, k * hi))
        x = mul(L, x, _c8(L, f"{n}/k", k), f"{n}/scaled", activation_q(lo, hi))
    e = _unary(L, "ELU", x, _t8(L, f"{n}/elu", x, min(math.expm1(lo), 0.0), max(hi, 0.0)))
    if c1 == 0.0:
        mul(L, e, _c8(L, f"{n}/c2", c2), n, None, out=t)
        return _done(L, y, t)
    ce = mul(
        L, e, _c8(L, f"{n}/c2", c2), f"{n}/elu_scaled", activation_q(*sorted((c2 * min(math.expm1(lo), 0), c2 * hi)))
    )
    r = _unary(L, "RELU", x, _t8(L, f"{n}/relu", x, 0.0, max(hi, 0.0)))
    cr = mul(L, r, _c8(L, f"{n}/c1", c1), f"{n}/relu_scaled", activation_q(*sorted((0.0, c1 * max(hi, 0.0)))))
    _add(L, ce, cr, t)
    _done(L, y, t)


def elu(L: Lowering, node: NodeView) -> None:
    """Elu: TFLite's ELU where alpha is 1, else the ELU / RELU combination of elu_family."""
    return (unary if float(node.attr("alpha", 1.0)) == 1.0 else elu_family)(L, node)


def softsign(L: Lowering, node: NodeView) -> None:
    """x / (1 + |x|) = x * RSQRT(1 + |x|)^2."""
    x, lo, hi = _x8(L, node)
    y, t = _out8(L, node.outputs[0], x.layout)
    m, n = max(abs(lo), abs(hi)), t.name
    a = _unary(L, "ABS", x, _t8(L, f"{n}/abs", x, 0.0, m))
    d = _add(L, a, _c8(L, f"{n}/one", 1.0), _t8(L, f"{n}/denominator", x, 0.0, 1.0 + m))
    r = _unary(L, "RSQRT", d, _t8(L, f"{n}/rsqrt", x, 0.0, 1.0))
    mul(L, x, mul(L, r, r, f"{n}/reciprocal", activation_q(0.0, 1.0)), n, None, out=t)
    _done(L, y, t)


def thresholded_relu(L: Lowering, node: NodeView) -> None:
    """x where x > alpha, else 0: GREATER + SELECT_V2 (exact; both in Vela's list on the U85 only, as a standard
    converter's GREATER + SELECT would be)."""
    x, _, _ = _x8(L, node)
    y, t = _out8(L, node.outputs[0], x.layout)
    alpha = float(node.attr("alpha", 1.0))
    c = L.new(f"{t.name}/above", x.shape, None, x.layout, "bool")
    bound = L.new(f"{t.name}/alpha", (), x.q, "plain", data=quantize(np.array(alpha), x.q))
    L.emit("GREATER", [x, bound], [c])
    zero = L.new(f"{t.name}/zero", (), t.q, "plain", data=quantize(np.array(0.0), t.q))
    L.emit("SELECT_V2", [c, L.requant(x, t.q), zero], [t])
    _done(L, y, t)


def swish(L: Lowering, node: NodeView) -> None:
    """Swish (opset 24): x * sigmoid(alpha x): MUL, LOGISTIC, MUL."""
    x, lo, hi = _x8(L, node)
    y, t = _out8(L, node.outputs[0], x.layout)
    a = float(node.attr("alpha", 1.0))
    u = (
        x
        if a == 1.0
        else mul(L, x, _c8(L, f"{t.name}/alpha", a), f"{t.name}/scaled", activation_q(*sorted((a * lo, a * hi))))
    )
    s = _unary(L, "LOGISTIC", u, L.new(f"{t.name}/sigmoid", x.shape, FIXED["LOGISTIC"], x.layout))
    mul(L, x, s, t.name, None, out=t)
    _done(L, y, t)


def float_island(L: Lowering, node: NodeView) -> None:
    """Sin / Cos / Floor / Ceil / Round / Sign: DEQUANTIZE -> the float kernel -> QUANTIZE into the output's range."""
    x = L.act(node.inputs[0])
    f = L.new(f"{node.outputs[0]}/float_in", x.shape, None, x.layout, "float32")
    L.emit("DEQUANTIZE", [x], [f])
    g = L.new(f"{node.outputs[0]}/float_out", x.shape, None, x.layout, "float32")
    L.emit(FLOAT_KERNEL[node.op_type], [f], [g])
    L.emit("QUANTIZE", [g], [L.output(node.outputs[0], x.layout)])

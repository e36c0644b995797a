"""Unroll ONNX LSTM / GRU / RNN with a static sequence length into per-step ONNX ops the converter lowers to NPU
kernels: the input projection of all steps is one MatMul (FULLY_CONNECTED), each step is a recurrent MatMul, ADD,
LOGISTIC, TANH and MUL. Exact (same math, default activations); ONNX Runtime then calibrates every step's tensors.
The conditions are targets/converter_facts.rnn_unrollable's (what `check` reads)."""

from __future__ import annotations

import numpy as np
import onnx

from ..targets.converter_facts import rnn_default_activations
from .prepass_build import Builder as _Builder
from .prepass_build import attr as _attr


def _split_gates(b: _Builder, x: str, n: int, hidden: int, step: str) -> list[str]:
    """x[..., n*H] -> n tensors [..., H] (one Split node)."""
    names = [b.name(f"{step}_{k}") for k in range(n)]
    sizes = b.const(f"{step}_sizes", np.array([hidden] * n, np.int64))
    if b.opset >= 13:
        node = onnx.helper.make_node("Split", [x, sizes], names, name=b.name(step), axis=-1)
    else:
        node = onnx.helper.make_node("Split", [x], names, name=b.name(step), axis=-1, split=[hidden] * n)
    b.nodes.append(node)
    return names


def _step_input(b: _Builder, xw: str, t: int) -> str:
    return b.op("Gather", [xw, b.const(f"t{t}", np.array(t, np.int64))], f"x{t}", axis=0)


def _unsqueeze(b: _Builder, x: str, axis: int, step: str) -> str:
    if b.opset >= 13:
        return b.op("Unsqueeze", [x, b.const(f"{step}_axes", np.array([axis], np.int64))], step)
    return b.op("Unsqueeze", [x], step, axes=[axis])


def _state(b: _Builder, name: str, consts: dict):
    """A constant initial state; torch exports its zeros as Expand(zeros, Shape(...)), which counts as zero too."""
    if not name:
        return None
    if name in consts:
        return consts[name]
    p = next((n for n in b.model.graph.node if name in n.output), None)
    if p is not None and p.op_type in ("Expand", "Tile") and p.input[0] in consts and not np.any(consts[p.input[0]]):
        return np.zeros((1,), np.float32)
    if (
        p is not None
        and p.op_type == "ConstantOfShape"
        and not any(np.any(onnx.numpy_helper.to_array(a.t)) for a in p.attribute)
    ):
        return np.zeros((1,), np.float32)
    return None


def unroll(b: _Builder, n: onnx.NodeProto, consts: dict, shapes: dict) -> bool:
    """Replace LSTM/GRU/RNN node `n` by its unrolled steps; False (left alone) when not exactly expressible."""
    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[n.op_type]
    x_shape = shapes.get(n.input[0])
    W, R = consts.get(n.input[1]), consts.get(n.input[2])
    ins = list(n.input) + [""] * (8 - len(n.input))
    B = consts.get(ins[3]) if ins[3] else None
    if x_shape is None or W is None or R is None or (ins[3] and B is None) or int(_attr(n, "layout", 0)):
        return False
    acts, direction = _attr(n, "activations", None), _attr(n, "direction", b"forward")
    if not rnn_default_activations(n.op_type, acts, direction) or _attr(n, "clip", None) is not None:
        return False
    if int(_attr(n, "input_forget", 0)):
        return False
    if ins[4] or (n.op_type == "LSTM" and ins[7]):
        return False  # sequence_lens / peepholes
    init_h = _state(b, ins[5], consts)
    init_c = _state(b, ins[6], consts) if n.op_type == "LSTM" else None
    if (ins[5] and init_h is None) or (n.op_type == "LSTM" and ins[6] and init_c is None):
        return False  # a run-time initial state: not unrolled here
    T, batch, _ = x_shape
    dirs, hidden = W.shape[0], R.shape[-1]
    direction = _attr(n, "direction", b"forward")
    direction = direction.decode() if isinstance(direction, bytes) else direction
    lbr = int(_attr(n, "linear_before_reset", 0))
    ys, hs, cs = [], [], []
    for d in range(dirs):
        reverse = direction == "reverse" or (direction == "bidirectional" and d == 1)
        w = np.asarray(W[d], np.float32)
        r = np.asarray(R[d], np.float32)
        bias = np.zeros(2 * gates * hidden, np.float32) if B is None else np.asarray(B[d], np.float32)
        wb, rb = bias[: gates * hidden], bias[gates * hidden :]
        in_bias = (
            np.concatenate([wb[: 2 * hidden] + rb[: 2 * hidden], wb[2 * hidden :]]) if n.op_type == "GRU" else wb + rb
        )
        xw = b.op(
            "Add",
            [b.op("MatMul", [n.input[0], b.const(f"d{d}_W", w.T.copy())], f"d{d}_xw"), b.const(f"d{d}_xb", in_bias)],
            f"d{d}_xwb",
        )  # [T, batch, gates*H]
        h = None if init_h is None or not np.any(init_h) else b.const(f"d{d}_h0", np.asarray(init_h[d], np.float32))
        c = None if init_c is None or not np.any(init_c) else b.const(f"d{d}_c0", np.asarray(init_c[d], np.float32))
        rt = b.const(f"d{d}_R", r.T.copy())
        outs = {}
        for t in range(T - 1, -1, -1) if reverse else range(T):
            x = _step_input(b, xw, t)
            s = f"d{d}_t{t}"
            if n.op_type == "RNN":
                g = x if h is None else b.op("Add", [x, b.op("MatMul", [h, rt], f"{s}_rh")], f"{s}_in")
                h = b.op("Tanh", [g], f"{s}_h")
            elif n.op_type == "LSTM":
                g = x if h is None else b.op("Add", [x, b.op("MatMul", [h, rt], f"{s}_rh")], f"{s}_gates")
                i, o, f, cc = _split_gates(b, g, 4, hidden, f"{s}_split")
                i, o, f = (b.op("Sigmoid", [v], f"{s}_{k}") for v, k in ((i, "i"), (o, "o"), (f, "f")))
                ic = b.op("Mul", [i, b.op("Tanh", [cc], f"{s}_cand")], f"{s}_ic")
                c = ic if c is None else b.op("Add", [b.op("Mul", [f, c], f"{s}_fc"), ic], f"{s}_c")
                h = b.op("Mul", [o, b.op("Tanh", [c], f"{s}_tc")], f"{s}_h")
            else:
                xz, xr, xh = _split_gates(b, x, 3, hidden, f"{s}_xsplit")
                rbh = b.const(f"d{d}_rbh", rb[2 * hidden :])
                if h is None:
                    z, r_ = (b.op("Sigmoid", [v], f"{s}_{k}") for v, k in ((xz, "z"), (xr, "r")))
                    hh_in = b.op("Add", [xh, b.op("Mul", [r_, rbh], f"{s}_rrb") if lbr else rbh], f"{s}_hin")
                    hh = b.op("Tanh", [hh_in], f"{s}_hh")
                    h = b.op("Sub", [hh, b.op("Mul", [z, hh], f"{s}_zhh")], f"{s}_h")  # (1-z)*hh
                else:
                    hz, hr, hn = _split_gates(b, b.op("MatMul", [h, rt], f"{s}_rh"), 3, hidden, f"{s}_hsplit")
                    z = b.op("Sigmoid", [b.op("Add", [xz, hz], f"{s}_zin")], f"{s}_z")
                    r_ = b.op("Sigmoid", [b.op("Add", [xr, hr], f"{s}_rin")], f"{s}_r")
                    if lbr:
                        rec = b.op("Mul", [r_, b.op("Add", [hn, rbh], f"{s}_hnb")], f"{s}_rhn")
                    else:  # R_h (r * h): one more product with the candidate block of R only
                        rh = b.const(f"d{d}_Rh", r[2 * hidden :].T.copy())
                        rh_h = b.op("MatMul", [b.op("Mul", [r_, h], f"{s}_rh_in"), rh], f"{s}_rhh")
                        rec = b.op("Add", [rh_h, rbh], f"{s}_rhb")
                    hh = b.op("Tanh", [b.op("Add", [xh, rec], f"{s}_hin")], f"{s}_hh")
                    h = b.op("Add", [hh, b.op("Mul", [z, b.op("Sub", [h, hh], f"{s}_dh")], f"{s}_zdh")], f"{s}_h")
            outs[t] = h
        seq = [_unsqueeze(b, outs[t], 0, f"d{d}_y{t}") for t in range(T)]
        ys.append(b.op("Concat", seq, f"d{d}_y", axis=0) if T > 1 else seq[0])  # [T, batch, H]
        hs.append(h)
        cs.append(c)
    y_names = list(n.output) + [""] * (3 - len(n.output))
    if y_names[0]:
        per_dir = [_unsqueeze(b, y, 1, f"y{d}") for d, y in enumerate(ys)]
        if len(per_dir) == 1:
            b.op("Identity", per_dir, "Y", out=y_names[0])
        else:
            b.op("Concat", per_dir, "Y", out=y_names[0], axis=1)
    for k, states in ((1, hs), (2, cs)):
        if k < len(y_names) and y_names[k]:
            st = [_unsqueeze(b, s, 0, f"state{k}_{d}") for d, s in enumerate(states)]
            if len(st) == 1:
                b.op("Identity", st, f"state{k}", out=y_names[k])
            else:
                b.op("Concat", st, f"state{k}", out=y_names[k], axis=0)
    return True

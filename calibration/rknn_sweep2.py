"""Second round of attribute sweeps for rknn_cases.py: integer shape arithmetic, Erf, constant-index Gather, 3-D Pad.

Like rknn_sweep.py, each family is swept on both sides of the conditions npufit's rk3588 rules draw, in several shapes:
- shape arithmetic: Shape of the conv's static output -> Gather -> Unsqueeze -> Concat -> Reshape; the padding
  computation Shape -> Cast -> Div -> Ceil -> Mul -> Sub -> Cast -> Pad; ConstantOfShape of a computed shape; integer
  element-wise ops on run-time integer data (ArgMax + 1, a float tensor cast to int64 / int32 and back).
- Erf: standalone, scaled, and inside the exact GELU (x / sqrt 2 -> Erf -> + 1 -> * x -> * 0.5) and its variations.
- Gather: constant indices of rank 0, 1, 2 on each axis of 4-D and 3-D tensors; a TopK's indices on the query axis.
- Pad: constant / reflect / edge on a 3-D [1, C, T] tensor at the start, the end or both ends of T (and of C).
- Reshape in attention: after the Gather of a relative-position bias table, around a 5-D window mask, and the head
  split [1, N, C] -> [1, N, heads, d] of a Linear's output.
Every graph is written as ONNX directly (conv 1x1 -> ops -> [reshape to 4-D] -> conv 1x1, rknn_sweep._graph); a
case names one op under test, and a graph measured for several of its ops has one case per op (same graph). Names
start with the family; an int8 build's name starts with "int8-". Merged into rknn_cases.CASES."""

from __future__ import annotations

import numpy as np

from .rknn_sweep import _graph


def _mk(nodes, op, ins, outs, **attrs):
    from onnx import helper

    nodes.append(helper.make_node(op, ins, outs, name=outs[0], **attrs))
    return outs[0]


def _const(inits, name, value, dtype=np.int64):
    from onnx import numpy_helper

    inits.append(numpy_helper.from_array(np.array(value, dtype), name))
    return name


# -- shape arithmetic ------------------------------------------------------------------------------------------------


def shape_reshape(c: int = 16, hw=(8, 8)):
    """Shape(x) -> Gather H, W (scalar indices) -> Unsqueeze -> Mul -> Concat with [1, C] -> Reshape x to [1, C, H*W]
    (a bias added after it, so the toolkit cannot cancel the view against the conv's)."""
    from onnx import TensorProto  # noqa: F401

    def body(x, nodes, inits):
        s = _mk(nodes, "Shape", [x], ["shp"])
        h = _mk(nodes, "Gather", [s, _const(inits, "i2", 2)], ["g_h"], axis=0)
        w = _mk(nodes, "Gather", [s, _const(inits, "i3", 3)], ["g_w"], axis=0)
        ax0 = _const(inits, "ax0", [0])
        hu = _mk(nodes, "Unsqueeze", [h, ax0], ["u_h"])
        wu = _mk(nodes, "Unsqueeze", [w, ax0], ["u_w"])
        hw_ = _mk(nodes, "Mul", [hu, wu], ["m_hw"])
        sh = _mk(nodes, "Concat", [_const(inits, "lead", [1, c]), hw_], ["cat"], axis=0)
        r = _mk(nodes, "Reshape", [x, sh], ["resh"])
        return _mk(nodes, "Add", [r, _const(inits, "bias", np.linspace(-1, 1, hw[0] * hw[1]), np.float32)], ["addb"])

    return _graph(c, hw, body, [1, c, hw[0] * hw[1]])


def pad_to_multiple(m: int = 3, c: int = 8, hw=(8, 8)):
    """Pad W up to a multiple of m, computed from the shape as padding helpers do: Shape -> Gather W -> Cast float ->
    Div m -> Ceil -> Mul m -> Sub W -> Cast int64 -> Unsqueeze -> Concat with zeros -> Pad (constant)."""
    w = hw[1]
    wp = -(-w // m) * m

    def body(x, nodes, inits):
        s = _mk(nodes, "Shape", [x], ["shp"])
        g = _mk(nodes, "Gather", [s, _const(inits, "i3", 3)], ["g_w"], axis=0)
        f = _mk(nodes, "Cast", [g], ["cast_f"], to=1)
        d = _mk(nodes, "Div", [f, _const(inits, "mf", float(m), np.float32)], ["div"])
        ce = _mk(nodes, "Ceil", [d], ["ceil"])
        mu = _mk(nodes, "Mul", [ce, _const(inits, "mf2", float(m), np.float32)], ["mul"])
        su = _mk(nodes, "Sub", [mu, f], ["sub"])
        i = _mk(nodes, "Cast", [su], ["cast_i"], to=7)
        u = _mk(nodes, "Unsqueeze", [i, _const(inits, "ax0", [0])], ["unsq"])
        pads = _mk(nodes, "Concat", [_const(inits, "zeros7", [0] * 7), u], ["pads"], axis=0)
        return _mk(nodes, "Pad", [x, pads], ["pad"], mode="constant")

    return _graph(c, hw, body, [1, c, hw[0], wp])


def const_of_shape(c: int = 8, hw=(8, 8)):
    """ConstantOfShape(Shape(x)) of value 0.5 added to x (a mask or bias made in the input's shape)."""
    from onnx import TensorProto, helper

    def body(x, nodes, inits):
        s = _mk(nodes, "Shape", [x], ["shp"])
        k = _mk(nodes, "ConstantOfShape", [s], ["cos"], value=helper.make_tensor("v", TensorProto.FLOAT, [1], [0.5]))
        return _mk(nodes, "Add", [x, k], ["addk"])

    return _graph(c, hw, body, [1, c, *hw])


def argmax_plus(dtype: str = "int64", c: int = 8, hw=(8, 8)):
    """ArgMax over C (run-time int64) + 1 [in int32 after a Cast], Cast to float, multiplied into x."""

    def body(x, nodes, inits):
        a = _mk(nodes, "ArgMax", [x], ["argmax"], axis=1, keepdims=1)
        if dtype == "int32":
            a = _mk(nodes, "Cast", [a], ["cast_i32"], to=6)
        p = _mk(nodes, "Add", [a, _const(inits, "one", 1, np.int32 if dtype == "int32" else np.int64)], ["add_i"])
        f = _mk(nodes, "Cast", [p], ["cast_f"], to=1)
        return _mk(nodes, "Mul", [x, f], ["mulf"])

    return _graph(c, hw, body, [1, c, *hw])


def cast_roundtrip(dtype: str = "int64", op: str | None = None, c: int = 8, hw=(8, 8)):
    """x * 4 cast to int64 / int32 [-> an integer op: Add 1, Mul 2, Sub 1, Transpose HW] -> Cast back to float."""
    to = {"int64": 7, "int32": 6}[dtype]
    npd = np.int64 if dtype == "int64" else np.int32

    def body(x, nodes, inits):
        s = _mk(nodes, "Mul", [x, _const(inits, "four", 4.0, np.float32)], ["scale"])
        i = _mk(nodes, "Cast", [s], ["cast_i"], to=to)
        if op in ("Add", "Mul", "Sub"):
            i = _mk(nodes, op, [i, _const(inits, "k", 2 if op == "Mul" else 1, npd)], ["int_op"])
        elif op == "Transpose":
            i = _mk(nodes, "Transpose", [i], ["int_op"], perm=[0, 1, 3, 2])
        return _mk(nodes, "Cast", [i], ["cast_f"], to=1)

    return _graph(c, hw, body, [1, c, *hw])


# -- Erf -------------------------------------------------------------------------------------------------------------


def erf(form: str, c: int = 16, hw=(8, 8)):
    """Erf of the conv's output: "alone"; "scaled" (x * 0.7 -> Erf); "gelu" (x / sqrt2 -> Erf -> + 1 -> * x -> * 0.5,
    the exact-GELU pattern); "gelu-mul" (x * 1/sqrt2 instead of the Div); "gelu-half-first" (0.5 * x * (1 + erf));
    "erf-add" (Erf -> + 1 only); on tokens: "tokens-gelu", "tokens-alone" ([1, C, H*W] view)."""

    def body(x, nodes, inits):
        if form.startswith("tokens"):
            x = _mk(nodes, "Reshape", [x, _const(inits, "tok", [1, c, hw[0] * hw[1]])], ["tokv"])
        f = form.removeprefix("tokens-")
        if f == "alone":
            return _mk(nodes, "Erf", [x], ["erf"])
        if f == "scaled":
            return _mk(
                nodes, "Erf", [_mk(nodes, "Mul", [x, _const(inits, "k", 0.7, np.float32)], ["pre_mul"])], ["erf"]
            )
        if f in ("gelu", "erf-add", "gelu-half-first"):
            d = _mk(nodes, "Div", [x, _const(inits, "sqrt2", np.sqrt(2.0), np.float32)], ["div"])
        else:
            d = _mk(nodes, "Mul", [x, _const(inits, "isqrt2", 1 / np.sqrt(2.0), np.float32)], ["div"])
        e = _mk(nodes, "Erf", [d], ["erf"])
        a = _mk(nodes, "Add", [e, _const(inits, "one", 1.0, np.float32)], ["add1"])
        if f == "erf-add":
            return a
        if f == "gelu-half-first":
            h = _mk(nodes, "Mul", [x, _const(inits, "half", 0.5, np.float32)], ["halfx"])
            return _mk(nodes, "Mul", [h, a], ["gelu"])
        m = _mk(nodes, "Mul", [x, a], ["mulx"])
        return _mk(nodes, "Mul", [m, _const(inits, "half", 0.5, np.float32)], ["gelu"])

    return _graph(c, hw, body, [1, c, hw[0] * hw[1]] if form.startswith("tokens") else [1, c, *hw])


# -- Gather ----------------------------------------------------------------------------------------------------------


def gather(view: str, axis: int, idx, c: int = 16, hw=(8, 8)):
    """Gather of the conv's output ("nchw") or of its [1, H*W, C] tokens ("tokens") along `axis` by the constant
    indices `idx` (a scalar, a 1-D or a 2-D list)."""
    shape = [1, c, *hw] if view == "nchw" else [1, hw[0] * hw[1], c]
    out = list(np.take(np.zeros(shape), np.array(idx), axis=axis).shape)

    def body(x, nodes, inits):
        if view == "tokens":
            f = _mk(nodes, "Reshape", [x, _const(inits, "flat", [1, c, hw[0] * hw[1]])], ["flat_r"])
            x = _mk(nodes, "Transpose", [f], ["tok_t"], perm=[0, 2, 1])
        return _mk(nodes, "Gather", [x, _const(inits, "idx", idx)], ["gather"], axis=axis)

    return _graph(c, hw, body, out)


def topk_gather(k: int = 8, c: int = 16, hw=(8, 8), unsq: bool = False):
    """DETR-style query selection: scores = ReduceMax of the [1, N, C] tokens over C, TopK k over N, Gather of the
    tokens along N by the TopK indices (1-D after a Squeeze of the batch axis; unsq: Gather by the [1, k] indices)."""
    n = hw[0] * hw[1]

    def body(x, nodes, inits):
        f = _mk(nodes, "Reshape", [x, _const(inits, "flat", [1, c, n])], ["flat_r"])
        t = _mk(nodes, "Transpose", [f], ["tok_t"], perm=[0, 2, 1])
        s = _mk(nodes, "ReduceMax", [t], ["score"], axes=[2], keepdims=0)
        _mk(nodes, "TopK", [s, _const(inits, "k", [k])], ["topv", "topi"], axis=1)
        if unsq:
            return _mk(nodes, "Gather", [t, "topi"], ["gather"], axis=1)  # [1, 1, k, C]
        i = _mk(nodes, "Squeeze", ["topi", _const(inits, "ax0", [0])], ["idx1"])
        return _mk(nodes, "Gather", [t, i], ["gather"], axis=1)

    return _graph(c, hw, body, [1, 1, k, c] if unsq else [1, k, c])


# -- Pad -------------------------------------------------------------------------------------------------------------


def pad3(mode: str, pads, c: int = 16, t: int = 64):
    """Pad of a 3-D [1, C, T] tensor between two 1-D convs (kernel 1, as audio models export Conv1d), pads = (C start,
    T start, C end, T end). (The 4-D conv -> Reshape to [1, C, T] -> Pad form failed inside rknn.build's constant
    folding, an artefact of the reshape pair, so the sweep uses the audio models' own producer.)"""
    from onnx import TensorProto, helper, numpy_helper

    pc0, pt0, pc1, pt1 = pads
    out = [1, c + pc0 + pc1, t + pt0 + pt1]
    rng = np.random.default_rng(3)
    inits = [
        numpy_helper.from_array((rng.standard_normal((c, c, 1)) * 0.3).astype(np.float32), "pre_w"),
        numpy_helper.from_array((rng.standard_normal((8, out[1], 1)) * 0.3).astype(np.float32), "post_w"),
    ]
    nodes = [helper.make_node("Conv", ["x", "pre_w"], ["a"], name="pre", kernel_shape=[1])]
    _mk(nodes, "Pad", ["a", _const(inits, "pads", [0, pc0, pt0, 0, pc1, pt1])], ["pad"], mode=mode)
    nodes.append(helper.make_node("Conv", ["pad", "post_w"], ["y"], name="post", kernel_shape=[1]))
    g = helper.make_graph(
        nodes,
        "case",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, t])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, out[2]])],
        inits,
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name="npufit-rknn-sweep")
    m.ir_version = 8
    return m


# -- Reshape in attention -------------------------------------------------------------------------------------------


def relpos_bias(win: int, heads: int = 4):
    """A relative position bias: Gather of a constant [(2w-1)^2, heads] table by constant [N*N] indices (N = w*w) ->
    Reshape [N, N, heads] -> Transpose -> Unsqueeze, added to the conv's [1, heads, N, N] output (the scores)."""
    n = win * win
    co = np.stack(np.meshgrid(np.arange(win), np.arange(win), indexing="ij")).reshape(2, -1)
    rel = (co[:, :, None] - co[:, None, :]).transpose(1, 2, 0) + win - 1
    idx = (rel[..., 0] * (2 * win - 1) + rel[..., 1]).reshape(-1)

    def body(x, nodes, inits):
        table = _const(
            inits, "table", np.random.default_rng(5).standard_normal(((2 * win - 1) ** 2, heads)) * 0.1, np.float32
        )
        g = _mk(nodes, "Gather", [table, _const(inits, "rel_idx", idx)], ["bias_g"], axis=0)
        r = _mk(nodes, "Reshape", [g, _const(inits, "bias_shape", [n, n, heads])], ["bias_r"])
        t = _mk(nodes, "Transpose", [r], ["bias_t"], perm=[2, 0, 1])
        u = _mk(nodes, "Unsqueeze", [t, _const(inits, "ax0", [0])], ["bias_u"])
        return _mk(nodes, "Add", [x, u], ["scores"])

    return _graph(heads, (n, n), body, [1, heads, n, n])


def window_mask(nw: int, heads: int, n: int, softmax: bool):
    """Swin's shifted-window mask: the conv's [1, nW*heads, N, N] scores -> Reshape [1, nW, heads, N, N] (5-D) -> Add a
    constant [1, nW, 1, N, N] mask -> Reshape [1, nW*heads, N, N] [-> Softmax over the last axis]."""

    def body(x, nodes, inits):
        r = _mk(nodes, "Reshape", [x, _const(inits, "s5", [1, nw, heads, n, n])], ["attn5"])
        mask = np.where(np.random.default_rng(6).random((1, nw, 1, n, n)) < 0.3, -100.0, 0.0)
        a = _mk(nodes, "Add", [r, _const(inits, "mask", mask, np.float32)], ["masked"])
        b = _mk(nodes, "Reshape", [a, _const(inits, "s4", [1, nw * heads, n, n])], ["attn4"])
        return _mk(nodes, "Softmax", [b], ["attn_sm"], axis=-1) if softmax else b

    return _graph(nw * heads, (n, n), body, [1, nw * heads, n, n])


def heads_split(heads: int, d: int, n_hw=(4, 4)):
    """Multi-head attention's head split after a Linear: the conv's tokens [1, N, C] (C = heads*d) -> MatMul -> Reshape
    [1, N, heads, d] (the innermost axis C split into heads x d) -> Transpose [1, heads, N, d] -> scores q @ k^T with
    the k branch made the same way -> [1, heads, N, N] into the conv."""
    c, n = heads * d, n_hw[0] * n_hw[1]

    def body(x, nodes, inits):
        f = _mk(nodes, "Reshape", [x, _const(inits, "flat", [1, c, n])], ["flat_r"])
        t = _mk(nodes, "Transpose", [f], ["tok_t"], perm=[0, 2, 1])
        rng = np.random.default_rng(8)
        hs = []
        for nm in ("q", "k"):
            m = _mk(
                nodes,
                "MatMul",
                [t, _const(inits, f"w{nm}", rng.standard_normal((c, c)) * 0.3, np.float32)],
                [f"{nm}_lin"],
            )
            r = _mk(nodes, "Reshape", [m, _const(inits, f"{nm}_shape", [1, n, heads, d])], [f"{nm}_split"])
            hs.append(_mk(nodes, "Transpose", [r], [f"{nm}_heads"], perm=[0, 2, 1, 3] if nm == "q" else [0, 2, 3, 1]))
        return _mk(nodes, "MatMul", hs, ["scores"])

    return _graph(c, n_hw, body, [1, heads, n, n])


def _catalogue() -> dict:
    cases = {}
    for op in ("Shape", "Gather", "Unsqueeze", "Mul", "Concat", "Reshape"):
        cases[f"shapechain-reshape-{op.lower()}"] = (op, shape_reshape, ())
    cases["shapechain-reshape-c8-16x4-reshape"] = ("Reshape", shape_reshape, (8, (16, 4)))
    for op in ("Cast", "Div", "Ceil", "Sub", "Concat", "Pad"):
        cases[f"shapechain-padmult-{op.lower()}"] = (op, pad_to_multiple, ())
    cases["shapechain-padmult-m4-w10-pad"] = ("Pad", pad_to_multiple, (4, 8, (6, 10)))
    cases["shapechain-constofshape"] = ("ConstantOfShape", const_of_shape, ())
    for dt in ("int64", "int32"):
        for op in ("ArgMax", "Add", "Cast"):
            cases[f"intdata-argmax-{dt}-{op.lower()}"] = (op, argmax_plus, (dt,))
        cases[f"intdata-cast-{dt}-cast"] = ("Cast", cast_roundtrip, (dt,))
        for op in ("Add", "Mul", "Sub", "Transpose"):
            cases[f"intdata-cast-{dt}-{op.lower()}"] = (op, cast_roundtrip, (dt, op))
    for form in ("alone", "scaled", "gelu", "gelu-mul", "gelu-half-first", "erf-add", "tokens-alone", "tokens-gelu"):
        cases[f"erf-{form}"] = ("Erf", erf, (form,))
    cases["erf-alone-c32-14x14"] = ("Erf", erf, ("alone", 32, (14, 14)))
    for view, rank in (("nchw", 4), ("tokens", 3)):
        for ax in range(1, rank):
            for tag, idx in (("scalar", 1), ("1d", [0, 2, 3]), ("2d", [[0, 1], [3, 2]])):
                if (view, ax, tag) == ("nchw", 1, "2d"):
                    continue  # a 5-D [1, 2, 2, H, W]: rknn.build's constant folding failed on the reshape back to 4-D
                cases[f"gather-{view}-ax{ax}-{tag}"] = ("Gather", gather, (view, ax, idx))
    cases["gather-tokens-ax1-scalar0"] = ("Gather", gather, ("tokens", 1, 0))  # a class token
    cases["gather-topk-queries"] = ("Gather", topk_gather, ())
    cases["gather-topk-queries-2d"] = ("Gather", topk_gather, (8, 16, (8, 8), True))
    for mode in ("constant", "reflect", "edge"):
        for tag, p in (
            ("t-start", (0, 2, 0, 0)),
            ("t-end", (0, 0, 0, 2)),
            ("t-both", (0, 3, 0, 3)),
            ("c-end", (0, 0, 2, 0)),
            ("c-start", (2, 0, 0, 0)),
        ):
            cases[f"pad3-{mode}-{tag}"] = ("Pad", pad3, (mode, p))
        cases[f"pad3-{mode}-t-both-c8-t256"] = ("Pad", pad3, (mode, (0, 4, 0, 4), 8, 256))
    for w in (4, 7, 8):
        for op in ("Gather", "Reshape"):
            cases[f"attn-relpos-w{w}-{op.lower()}"] = (op, relpos_bias, (w,))
    for tag, args in (("nw4-h2-n16", (4, 2, 16)), ("nw4-h3-n49", (4, 3, 49)), ("nw2-h4-n16", (2, 4, 16))):
        for sm in (False, True):
            cases[f"attn-winmask-{tag}{'-softmax' if sm else ''}"] = ("Reshape", window_mask, (*args, sm))
    for heads, d in ((8, 4), (4, 8), (16, 2), (2, 16), (4, 4), (6, 4)):
        cases[f"attn-heads-split-h{heads}-d{d}"] = ("Reshape", heads_split, (heads, d))
    cases["attn-heads-split-h8-d4-7x7"] = ("Reshape", heads_split, (8, 4, (7, 7)))
    for name in (
        "shapechain-reshape-reshape",
        "shapechain-padmult-pad",
        "intdata-argmax-int64-add",
        "intdata-cast-int64-add",
        "erf-alone",
        "erf-gelu",
        "gather-nchw-ax2-2d",
        "gather-tokens-ax1-1d",
        "pad3-reflect-t-both",
        "pad3-constant-t-end",
    ):
        cases[f"int8-{name}"] = (*cases[name], "int8")
    return cases


SWEEP2 = _catalogue()

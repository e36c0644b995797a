"""Attribute sweeps for rknn_cases.py: Resize, pooling and ReduceMean, Reshape/Flatten, strided Slice on rk3588.

Where rknn_cases.py measures behaviours one corpus family shows, these sweep the attributes of four op families
systematically, on both sides of each condition and in several shapes, so the rules for them rest on measured
attribute classes rather than on the models where a class happened to appear:
- Resize: nearest / linear x coordinate_transformation_mode (half_pixel, align_corners, asymmetric,
  pytorch_half_pixel) x scale 2, 4, 1.5, 0.5, given as scales or as sizes, 4-D.
- AveragePool / MaxPool: kernel 2..7, stride 1 / 2, no pads / symmetric / asymmetric pads, count_include_pad 0 / 1,
  ceil_mode 0 / 1; GlobalAveragePool; ReduceMean over the spatial axes, the channel axis, all axes.
- Reshape / Flatten: ranks 2..6 in and out, splitting and merging channel and spatial axes, batch-folding 4-D views,
  and the unfold / fold of a patch transformer (Reshape -> Transpose -> Reshape ... with patch 2).
- Slice: steps 1, 2, -1 on each axis of 4-D and 3-D tensors, with and without start offsets, on the conv's own
  output and on token views of it.
Resize, pooling and Slice graphs are written as ONNX directly (conv 1x1 -> op -> conv 1x1, any view reshapes
around the op), so every attribute is the one named; the Reshape graphs are exported from torch. Names start with the
family; an int8 build's name starts with "int8-". The catalogue is merged into rknn_cases.CASES and recorded into
docs/calibration/rk3588-cases.json with them."""

from __future__ import annotations

import math

import numpy as np

OPSET = 17


# -- ONNX-direct graphs ----------------------------------------------------------------------------------------------


def _conv(name: str, x: str, y: str, c_in: int, c_out: int, inits: list) -> "object":
    from onnx import helper, numpy_helper

    rng = np.random.default_rng(len(inits))
    inits += [
        numpy_helper.from_array(rng.standard_normal((c_out, c_in, 1, 1)).astype(np.float32) * 0.3, f"{name}_w"),
        numpy_helper.from_array(rng.standard_normal(c_out).astype(np.float32) * 0.1, f"{name}_b"),
    ]
    return helper.make_node("Conv", [x, f"{name}_w", f"{name}_b"], [y], name=name, kernel_shape=[1, 1])


def _graph(c: int, hw: tuple[int, int], body, out_shape) -> "object":
    """conv 1x1 -> body -> [a reshape to 4-D] -> conv 1x1 as an ONNX model. body(x, nodes, inits) appends its nodes
    reading tensor x and returns its output tensor; out_shape is that tensor's shape."""
    from onnx import TensorProto, helper, numpy_helper

    nodes, inits = [], []
    nodes.append(_conv("pre", "x", "a", c, c, inits))
    t = body("a", nodes, inits)
    shape = list(out_shape)
    if len(shape) != 4:
        c2, _n, (h2, w2) = _as4_nchw(shape)
        inits.append(numpy_helper.from_array(np.array([1, c2, h2, w2], np.int64), "to4_shape"))
        nodes.append(helper.make_node("Reshape", [t, "to4_shape"], ["to4"], name="to4"))
        t, shape = "to4", [1, c2, h2, w2]
    nodes.append(_conv("post", t, "y", shape[1], 8, inits))
    g = helper.make_graph(
        nodes,
        "case",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, *hw])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, *shape[2:]])],
        inits,
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="npufit-rknn-sweep")
    m.ir_version = 8
    return m


def _as4_nchw(shape) -> tuple[int, int, tuple[int, int]]:
    """[1, C, H, W] with as many elements as `shape`: C its second dimension (or 1), H x W the rest."""
    n = math.prod(shape)
    c = shape[1] if len(shape) > 1 else 1
    rest = n // c
    h = max(d for d in range(1, math.isqrt(rest) + 1) if rest % d == 0)
    return c, n, (h, rest // h)


def resize(mode: str, ctm: str, scale: float, by_sizes: bool = False, c: int = 8, hw=(8, 8)):
    """Resize of the conv's [1, C, H, W] output by `scale` on H and W, given as scales or as sizes."""
    from onnx import helper, numpy_helper

    out = [1, c] + [int(math.floor(d * scale)) for d in hw]

    def body(x, nodes, inits):
        if by_sizes:
            inits.append(numpy_helper.from_array(np.array(out, np.int64), "sizes"))
            ins = [x, "", "", "sizes"]
        else:
            inits.append(numpy_helper.from_array(np.array([1, 1, scale, scale], np.float32), "scales"))
            ins = [x, "", "scales"]
        extra = {"nearest_mode": "floor"} if mode == "nearest" else {}
        nodes.append(
            helper.make_node(
                "Resize", ins, ["r"], name="resize", mode=mode, coordinate_transformation_mode=ctm, **extra
            )
        )
        return "r"

    return _graph(c, hw, body, out)


def pool(op: str, k: int, s: int, pads=(0, 0, 0, 0), cip: int = 0, ceil: int = 0, c: int = 8, hw=(16, 16)):
    """AveragePool / MaxPool of the conv's output with kernel k x k, stride s, pads (top, left, bottom, right)."""
    from onnx import helper

    p = [pads[0], pads[1], pads[2], pads[3]]
    rnd = math.ceil if ceil else math.floor
    out = [1, c] + [int(rnd((d + p[i] + p[i + 2] - k) / s)) + 1 for i, d in enumerate(hw)]
    if ceil:  # ONNX drops a last window that starts in the end padding
        out = [1, c] + [o - 1 if (o - 1) * s >= d + p[i] else o for i, (o, d) in enumerate(zip(out[2:], hw))]
    attrs = {"kernel_shape": [k, k], "strides": [s, s], "pads": p, "ceil_mode": ceil}
    if op == "AveragePool":
        attrs["count_include_pad"] = cip

    def body(x, nodes, inits):
        nodes.append(helper.make_node(op, [x], ["p"], name="pool", **attrs))
        return "p"

    return _graph(c, hw, body, out)


def global_pool(c: int = 8, hw=(8, 8)):
    from onnx import helper

    def body(x, nodes, inits):
        nodes.append(helper.make_node("GlobalAveragePool", [x], ["p"], name="gap"))
        return "p"

    return _graph(c, hw, body, [1, c, 1, 1])


def reduce_mean(axes, keepdims: int = 1, c: int = 8, hw=(8, 8)):
    """ReduceMean of the conv's [1, C, H, W] output over `axes`."""
    from onnx import helper

    shape = [1, c, *hw]
    out = (
        [1 if a in axes else d for a, d in enumerate(shape)]
        if keepdims
        else [d for a, d in enumerate(shape) if a not in axes]
    )

    def body(x, nodes, inits):  # opset 17: axes is an attribute
        nodes.append(helper.make_node("ReduceMean", [x], ["m"], name="mean", axes=list(axes), keepdims=keepdims))
        return "m"

    return _graph(c, hw, body, out if len(out) > 1 else [1] + out)


def _view(x: str, nodes, inits, c: int, hw, view: str):
    """The conv's [1, C, H, W] output as a 4-D NCHW tensor ("nchw"), a [1, H, W, C] token map ("nhwc", through a
    Transpose), [1, H*W, C] tokens ("tokens": Reshape + Transpose), [1, C, H*W] ("flat": Reshape), or the tokens
    reshaped to a [1, H, W, C] grid ("grid"; "grid-linear": a Linear's MatMul on the tokens first), as a transformer
    that subsamples its tokens writes it; "tokens-linear": the tokens after that MatMul."""
    from onnx import helper, numpy_helper

    h, w = hw
    if view == "nchw":
        return x, [1, c, h, w]
    if view == "nhwc":
        nodes.append(helper.make_node("Transpose", [x], ["v"], name="view_t", perm=[0, 2, 3, 1]))
        return "v", [1, h, w, c]
    inits.append(numpy_helper.from_array(np.array([1, c, h * w], np.int64), "flat_shape"))
    nodes.append(helper.make_node("Reshape", [x, "flat_shape"], ["f"], name="view_r"))
    if view == "flat":
        return "f", [1, c, h * w]
    nodes.append(helper.make_node("Transpose", ["f"], ["v"], name="view_t", perm=[0, 2, 1]))
    if view == "tokens":
        return "v", [1, h * w, c]
    t = "v"
    if view in ("grid-linear", "tokens-linear"):  # a Linear on the tokens first
        rng = np.random.default_rng(7)
        inits.append(numpy_helper.from_array((rng.standard_normal((c, c)) * 0.3).astype(np.float32), "lin_w"))
        nodes.append(helper.make_node("MatMul", ["v", "lin_w"], ["lin"], name="view_lin"))
        t = "lin"
    if view == "tokens-linear":
        return t, [1, h * w, c]
    inits.append(numpy_helper.from_array(np.array([1, h, w, c], np.int64), "grid_shape"))
    nodes.append(helper.make_node("Reshape", [t, "grid_shape"], ["g"], name="view_g"))
    return "g", [1, h, w, c]


def strided_slice(view: str, axes, starts, steps, c: int = 16, hw=(8, 8)):
    """A Slice of the conv's output in `view` (see _view) along `axes`, from `starts`, with `steps`, to the end (a
    negative step: from `starts` counted from the end, back to the beginning); a [1, H, W, C] result is transposed
    back to NCHW for the conv, as a token map goes back to an image."""
    from onnx import helper, numpy_helper

    grid = view.startswith("grid")
    shape = {
        "nchw": [1, c, *hw],
        "nhwc": [1, hw[0], hw[1], c],
        "tokens": [1, hw[0] * hw[1], c],
        "tokens-linear": [1, hw[0] * hw[1], c],
        "flat": [1, c, hw[0] * hw[1]],
    }.get(view, [1, hw[0], hw[1], c])
    out = list(np.zeros(shape)[tuple(_py_slices(len(shape), axes, starts, steps))].shape)

    def body(x, nodes, inits):
        t, _shape = _view(x, nodes, inits, c, hw, view)
        vals = {
            "starts": [-1 - s if sp < 0 else s for s, sp in zip(starts, steps)],
            "ends": [-(2**62) if sp < 0 else 2**62 for sp in steps],
            "axes": list(axes),
            "steps": list(steps),
        }
        for name, v in vals.items():
            inits.append(numpy_helper.from_array(np.array(v, np.int64), f"s_{name}"))
        nodes.append(helper.make_node("Slice", [t, "s_starts", "s_ends", "s_axes", "s_steps"], ["s"], name="slice"))
        if grid:  # back to tokens
            inits.append(numpy_helper.from_array(np.array([1, out[1] * out[2], out[3]], np.int64), "tok_shape"))
            nodes.append(helper.make_node("Reshape", ["s", "tok_shape"], ["tok"], name="back_r"))
            return "tok"
        if view != "nhwc":
            return "s"
        nodes.append(helper.make_node("Transpose", ["s"], ["back"], name="back_t", perm=[0, 3, 1, 2]))
        return "back"

    return _graph(
        c,
        hw,
        body,
        [out[0], out[3], out[1], out[2]] if view == "nhwc" else [1, out[1] * out[2], out[3]] if grid else out,
    )


def _py_slices(rank: int, axes, starts, steps) -> list:
    sl = [slice(None)] * rank
    for a, s, sp in zip(axes, starts, steps):
        sl[a] = slice(-1 - s if sp < 0 else s, None, sp)
    return sl


# -- Reshape graphs (torch) ------------------------------------------------------------------------------------------


def _bias(n: int):
    import torch

    torch.manual_seed(1)
    return torch.nn.Parameter(torch.randn(n) * 0.1)


def reshape_chain(c: int, hw, shapes):
    """The conv's [1, C, H, W] output reshaped through `shapes` in turn, a constant added along the innermost axis of
    the last one (so the toolkit cannot cancel the reshapes against each other: without it they fold away), then
    reshaped back to [1, C, H, W] for the conv."""
    from calibration.rknn_cases import _net

    bias = _bias(shapes[-1][-1])

    def body(y):
        for s in shapes:
            y = y.reshape(*s)
        return (y + bias).reshape(1, c, *hw)

    m, x = _net(c, hw, body)
    m.bias = bias  # registered, so the export keeps it a constant
    return m, x


def flatten(c: int, hw, start: int):
    """torch.flatten(y, start) (ONNX Flatten for start 1, else a Reshape), reshaped back to 4-D."""
    from calibration.rknn_cases import _net

    def body(y):
        return y.flatten(start).reshape(1, c, hw[0], hw[1])

    return _net(c, hw, body)


def unfold_fold(c: int, hw, patch: int, fold: bool = True):
    """A patch transformer's unfold, self-attention over the N patches of each of the P patch positions (where its
    transformer layers work; a per-channel op there lets the toolkit cancel unfold against fold, a constant Add did),
    and (fold=True) the fold back, written as MobileViT-style blocks do: [1, C, H, W] -> [C*nh, p, nw, p] ->
    transpose(1, 2) -> [1, C, N, P] -> transpose(1, 3) -> [P, N, C] and back (fold=False: [P, N, C] -> [1, P, N, C]
    -> permute to [1, C, P, N] for the conv)."""
    import torch

    from calibration.rknn_cases import _net

    h, w = hw
    nh, nw, pa = h // patch, w // patch, patch * patch
    n = nh * nw

    def body(y):
        t = y.reshape(c * nh, patch, nw, patch).transpose(1, 2)
        t = t.reshape(1, c, n, pa).transpose(1, 3)
        t = t.reshape(pa, n, c)
        t = t + torch.softmax(t @ t.transpose(1, 2), -1) @ t
        if not fold:
            return t.reshape(1, pa, n, c).permute(0, 3, 1, 2)
        t = t.contiguous().view(1, pa, n, c).transpose(1, 3)
        t = t.reshape(c * nh, nw, patch, patch).transpose(1, 2)
        return t.reshape(1, c, h, w)

    return _net(c, hw, body)


# name -> (op under test, builder, arguments[, build])
def _catalogue() -> dict:
    cases = {}
    # Resize: 2 modes x 4 coordinate transformations x scales 2, 4, 1.5, 0.5; sizes input at 2x; two more shapes
    for mode in ("nearest", "linear"):
        for ctm in ("half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel"):
            for tag, sc in (("x2", 2.0), ("x4", 4.0), ("x1.5", 1.5), ("x0.5", 0.5)):
                cases[f"resize-{mode}-{ctm}-{tag}"] = ("Resize", resize, (mode, ctm, sc))
            cases[f"resize-{mode}-{ctm}-sizes-x2"] = ("Resize", resize, (mode, ctm, 2.0, True))
    for ctm in ("align_corners", "half_pixel"):
        cases[f"resize-linear-{ctm}-x2-c32-16x16"] = ("Resize", resize, ("linear", ctm, 2.0, False, 32, (16, 16)))
        cases[f"resize-linear-{ctm}-sizes-x4-c16-6x10"] = ("Resize", resize, ("linear", ctm, 4.0, True, 16, (6, 10)))
    # pooling: kernel x stride x pads x count_include_pad x ceil_mode
    for k, s, p in (
        (3, 1, 1),
        (3, 2, 1),
        (5, 1, 2),
        (7, 1, 3),
        (2, 2, 0),
        (3, 1, 0),
        (2, 1, (0, 0, 1, 1)),
        (3, 2, (1, 1, 0, 0)),
    ):
        pads = p if isinstance(p, tuple) else (p,) * 4
        ptag = "p" + "".join(map(str, pads)) if isinstance(p, tuple) else f"p{p}"
        for cip in (0, 1):
            if not any(pads) and cip:
                continue
            cases[f"pool-avg-k{k}s{s}{ptag}-cip{cip}"] = ("AveragePool", pool, ("AveragePool", k, s, pads, cip))
        cases[f"pool-max-k{k}s{s}{ptag}"] = ("MaxPool", pool, ("MaxPool", k, s, pads))
    for cip in (0, 1):
        cases[f"pool-avg-k3s2p0-ceil-cip{cip}"] = ("AveragePool", pool, ("AveragePool", 3, 2, (0,) * 4, cip, 1))
        cases[f"pool-avg-k3s2p1-ceil-cip{cip}"] = ("AveragePool", pool, ("AveragePool", 3, 2, (1,) * 4, cip, 1))
        cases[f"pool-avg-k3s1p1-cip{cip}-c64-14x14"] = (
            "AveragePool",
            pool,
            ("AveragePool", 3, 1, (1,) * 4, cip, 0, 64, (14, 14)),
        )
        cases[f"pool-avg-k3s1p1-cip{cip}-c16-7x7"] = (
            "AveragePool",
            pool,
            ("AveragePool", 3, 1, (1,) * 4, cip, 0, 16, (7, 7)),
        )
    cases["pool-max-k3s2p0-ceil"] = ("MaxPool", pool, ("MaxPool", 3, 2, (0,) * 4, 0, 1))
    cases["pool-gap-8x8"] = ("GlobalAveragePool", global_pool, (8, (8, 8)))
    cases["pool-gap-c32-14x14"] = ("GlobalAveragePool", global_pool, (32, (14, 14)))
    for tag, axes, kd in (
        ("hw", (2, 3), 1),
        ("hw-nokeep", (2, 3), 0),
        ("c", (1,), 1),
        ("all", (1, 2, 3), 1),
        ("w", (3,), 1),
        ("h", (2,), 1),
        ("chw-c32", (1, 2, 3), 1),
    ):
        c = 32 if tag.endswith("c32") else 8
        cases[f"reducemean-{tag}"] = ("ReduceMean", reduce_mean, (list(axes), kd, c))
    # Reshape / Flatten: rank 4 -> 2..6 and back, channel / spatial splits and merges, batch-folding views
    rs = {
        "4to2-merge-all": (16, (8, 8), [(16, 64)]),
        "4to2-flat": (16, (8, 8), [(1, 1024)]),
        "4to3-merge-hw": (16, (8, 8), [(1, 16, 64)]),
        "4to3-merge-ch": (16, (8, 8), [(1, 128, 8)]),
        "4to4-split-c-into-h": (16, (8, 8), [(1, 8, 16, 8)]),
        "4to4-merge-w-into-h": (16, (8, 8), [(1, 16, 64, 1)]),
        "4to4-batch-c": (16, (8, 8), [(16, 1, 8, 8)]),
        "4to4-batch-ch": (16, (8, 8), [(64, 2, 4, 2)]),
        "4to4-batch-c-nh": (16, (8, 8), [(64, 2, 4, 2), (1, 16, 8, 8)]),
        "4to5-split-c": (16, (8, 8), [(1, 4, 4, 8, 8)]),
        "4to5-split-w": (16, (8, 8), [(1, 16, 8, 4, 2)]),
        "4to5-split-h": (16, (8, 8), [(1, 16, 4, 2, 8)]),
        "4to5-batch": (16, (8, 8), [(4, 4, 8, 4, 2)]),
        "4to6-split-hw": (16, (8, 8), [(1, 16, 4, 2, 4, 2)]),
        "4to6-split-c-hw": (16, (8, 8), [(1, 4, 4, 8, 4, 2)]),
        "4to3-batch": (16, (8, 8), [(4, 32, 8)]),
        "4to2-batch-cols": (16, (8, 8), [(128, 8)]),
        "4to3-c8-merge-hw": (8, (16, 16), [(1, 8, 256)]),
    }
    for name, (c, hw, shapes) in rs.items():
        cases[f"reshape-{name}"] = ("Reshape", reshape_chain, (c, hw, shapes))
    cases["reshape-flatten1"] = ("Flatten", flatten, (16, (8, 8), 1))
    for tag, c, hw in (
        ("c16-8x8", 16, (8, 8)),
        ("c32-8x8", 32, (8, 8)),
        ("c8-16x16", 8, (16, 16)),
        ("c16-4x4", 16, (4, 4)),
    ):
        cases[f"reshape-unfold-fold-p2-{tag}"] = ("Reshape", unfold_fold, (c, hw, 2))
    cases["reshape-unfold-p2-c16-8x8"] = ("Reshape", unfold_fold, (16, (8, 8), 2, False))
    cases["reshape-unfold-p2-c32-8x8"] = ("Reshape", unfold_fold, (32, (8, 8), 2, False))
    cases["reshape-unfold-fold-p4-c16-8x8"] = ("Reshape", unfold_fold, (16, (8, 8), 4))
    for name in (
        "4to2-merge-all",
        "4to3-merge-hw",
        "4to4-batch-c",
        "4to4-batch-ch",
        "4to5-split-c",
        "4to6-split-hw",
        "4to3-batch",
    ):
        c, hw, shapes = rs[name]
        cases[f"int8-reshape-{name}"] = ("Reshape", reshape_chain, (c, hw, shapes), "int8")
    for tag, c, hw in (("c16-8x8", 16, (8, 8)), ("c32-8x8", 32, (8, 8)), ("c8-16x16", 8, (16, 16))):
        cases[f"int8-reshape-unfold-fold-p2-{tag}"] = ("Reshape", unfold_fold, (c, hw, 2), "int8")
    cases["int8-reshape-unfold-p2-c16-8x8"] = ("Reshape", unfold_fold, (16, (8, 8), 2, False), "int8")
    # Slice: steps 1 / 2 / -1 on each axis of 4-D and 3-D views, starts 0 and offset
    for view, rank in (("nchw", 4), ("nhwc", 4), ("tokens", 3), ("flat", 3)):
        for ax in range(1, rank):
            for tag, start, step in (("s1-off1", 1, 1), ("s2", 0, 2), ("s2-off1", 1, 2), ("sm1", 0, -1)):
                cases[f"slice-{view}-ax{ax}-{tag}"] = ("Slice", strided_slice, (view, (ax,), (start,), (step,)))
        pair = (1, 2) if view == "nhwc" else (2, 3) if rank == 4 else (1, 2)
        cases[f"slice-{view}-ax{pair[0]}{pair[1]}-s2"] = ("Slice", strided_slice, (view, pair, (0, 0), (2, 2)))
        cases[f"slice-{view}-ax{pair[0]}{pair[1]}-s2-off1"] = ("Slice", strided_slice, (view, pair, (1, 1), (2, 2)))
    # ... on a [1, H, W, C] grid reshaped from the tokens (and from a Linear's output), reshaped back to tokens after
    for view in ("grid", "grid-linear"):
        for tag, axes, st, sp in (
            ("ax1-s2", (1,), (0,), (2,)),
            ("ax2-s2", (2,), (0,), (2,)),
            ("ax12-s2", (1, 2), (0, 0), (2, 2)),
            ("ax12-s2-off1", (1, 2), (1, 1), (2, 2)),
            ("ax3-s2", (3,), (0,), (2,)),
            ("ax1-s1-off1", (1,), (1,), (1,)),
        ):
            cases[f"slice-{view}-{tag}"] = ("Slice", strided_slice, (view, axes, st, sp))
    cases["slice-grid-ax12-s2-c32-14x14"] = ("Slice", strided_slice, ("grid", (1, 2), (0, 0), (2, 2), 32, (14, 14)))
    cases["slice-grid-linear-ax12-s2-c32-14x14"] = (
        "Slice",
        strided_slice,
        ("grid-linear", (1, 2), (0, 0), (2, 2), 32, (14, 14)),
    )
    for tag, ax, sp in (("ax1-s2", 1, 2), ("ax2-s2", 2, 2), ("ax1-sm1", 1, -1), ("ax2-sm1", 2, -1)):
        cases[f"slice-tokens-linear-{tag}"] = ("Slice", strided_slice, ("tokens-linear", (ax,), (0,), (sp,)))
    cases["slice-nhwc-ax12-s2-c32-14x14"] = ("Slice", strided_slice, ("nhwc", (1, 2), (0, 0), (2, 2), 32, (14, 14)))
    cases["slice-nchw-ax23-s2-c32-14x14"] = ("Slice", strided_slice, ("nchw", (2, 3), (0, 0), (2, 2), 32, (14, 14)))
    # int8 builds of the cases that decide each new condition (RV1106, int8 only, differed on two of them)
    for name in (
        "pool-avg-k3s1p1-cip0",
        "pool-avg-k3s2p0-ceil-cip0",
        "resize-linear-align_corners-x2",
        "resize-linear-asymmetric-x2",
        "slice-nchw-ax3-sm1",
        "slice-nhwc-ax2-sm1",
        "slice-grid-linear-ax12-s2",
        "slice-grid-ax12-s2",
    ):
        cases[f"int8-{name}"] = (*cases[name], "int8")
    return cases


SWEEP = _catalogue()

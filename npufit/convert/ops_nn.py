"""Lowering of the weighted and spatial ops: Conv (+ folded BatchNormalization + fused Relu/Clip), pools,
Gemm/MatMul with constant weights (FULLY_CONNECTED), standalone BatchNormalization."""

from __future__ import annotations

import math

import numpy as np

from ..graph import NodeView
from ..targets.converter_facts import (
    depth_reduce_as_conv,
    mean_as_rows,
    nhwc_mean_as_rows,
    tconv_padding,
    whole_map_pool,
)
from .lower import NHWC_AXIS, TO_NCHW, TO_NHWC, TT, Lowering, onnx_to_tfl_shape
from .qparams import Q, per_channel_weights, quantize

# fused_activation_function values TFLite kernels clamp to, keyed by the (min, max) of a ReLU/Clip
_FUSED = {(0.0, math.inf): "RELU", (0.0, 6.0): "RELU6", (-1.0, 1.0): "RELU_N1_TO_1"}


def clip_bounds(L: Lowering, node: NodeView) -> tuple[float, float] | None:
    if node.op_type == "Relu":
        return 0.0, math.inf
    if node.op_type != "Clip":
        return None
    if "min" in node.attrs or "max" in node.attrs:  # opset < 11
        return float(node.attr("min", -math.inf)), float(node.attr("max", math.inf))
    lo = L.const(node.inputs[1]) if len(node.inputs) > 1 and node.inputs[1] else None
    hi = L.const(node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] else None
    if (len(node.inputs) > 1 and node.inputs[1] and lo is None) or (
        len(node.inputs) > 2 and node.inputs[2] and hi is None
    ):
        return None  # bounds computed at run time
    return (-math.inf if lo is None else float(lo)), (math.inf if hi is None else float(hi))


def fused_activation(L: Lowering, node: NodeView | None) -> str | None:
    if node is None:
        return None
    b = clip_bounds(L, node)
    return None if b is None else _FUSED.get(b)


def absorb_tail(L: Lowering, node: NodeView, allow_bn: bool = False):
    """Follow the op's single output through a BatchNormalization (fold) and a ReLU/Clip (fuse).

    -> (final ONNX tensor the TFLite op produces, fused activation name, (bn_scale, bn_shift) or None)."""
    out, bn, act = node.outputs[0], None, "NONE"
    c = L.sole_consumer(out)
    if (
        allow_bn
        and c is not None
        and c.op_type == "BatchNormalization"
        and c.inputs[0] == out
        and len(c.present_inputs) == 5
    ):
        vals = [L.const(t) for t in c.inputs[1:5]]
        if all(v is not None for v in vals):
            gamma, beta, mean, var = (np.asarray(v, np.float64) for v in vals)
            scale = gamma / np.sqrt(var + float(c.attr("epsilon", 1e-5)))
            bn, out = (scale, beta - mean * scale), c.outputs[0]
            _absorb(L, c)
            c = L.sole_consumer(out)
    f = fused_activation(L, c)
    if f is not None and c.inputs[0] == out:
        act, out = f, c.outputs[0]
        _absorb(L, c)
    return out, act, bn


def _absorb(L: Lowering, node: NodeView) -> None:
    L.absorbed.add(node.name)
    L.current.append(node.name)


def _pairs(node: NodeView, rank: int = 2):
    return (list(node.attr("strides", [1] * rank)), list(node.attr("dilations", [1] * rank)))


def spatial_pad(
    L: Lowering,
    node: NodeView,
    x: TT,
    kernel,
    strides,
    dilations,
    out_hw,
    pad_min: bool = False,
    allow_same: bool = True,
):
    """ONNX pads/auto_pad -> TFLite SAME/VALID, or an explicit PAD(V2) + VALID when neither matches (pad_min: padded
    with the integer minimum, for max pooling)."""
    in_hw = x.shape[1:3]
    auto = node.attr("auto_pad", "NOTSET")
    pads = list(node.attr("pads", [0, 0, 0, 0]))
    begins = []
    for i in range(2):
        keff = (kernel[i] - 1) * dilations[i] + 1
        need = max((out_hw[i] - 1) * strides[i] + keff - in_hw[i], 0)
        if auto == "SAME_UPPER":
            begins.append(need // 2)
        elif auto == "SAME_LOWER":
            begins.append(need - need // 2)
        elif auto == "VALID":
            begins.append(0)
        else:
            begins.append(int(pads[i]))
    afters, same = [], True
    for i in range(2):
        keff = (kernel[i] - 1) * dilations[i] + 1
        need = (out_hw[i] - 1) * strides[i] + keff - in_hw[i]
        afters.append(max(need - begins[i], 0))
        same &= out_hw[i] == -(-in_hw[i] // strides[i]) and begins[i] == max(need, 0) // 2
        if need - begins[i] < 0 and (in_hw[i] + begins[i] - keff) // strides[i] + 1 != out_hw[i]:
            raise L.fail(node, f"padding {pads} gives an output size TFLite cannot reproduce")
    if not any(begins) and not any(afters):
        return x, "VALID"
    if same and allow_same:
        return x, "SAME"
    shape = (x.shape[0], in_hw[0] + begins[0] + afters[0], in_hw[1] + begins[1] + afters[1], x.shape[3])
    out = L.new(f"{x.name}/pad", shape, x.q, "nhwc")
    paddings = L.int32(f"{out.name}/paddings", [[0, 0], [begins[0], afters[0]], [begins[1], afters[1]], [0, 0]])
    if not pad_min:
        L.emit("PAD", [x, paddings], [out], "PadOptions")
    else:
        val = L.new(f"{out.name}/value", (), x.q, "plain", data=np.array(x.q.qmin, x.q.dtype))
        L.emit("PADV2", [x, paddings, val], [out], "PadV2Options")
    return out, "VALID"


def conv(L: Lowering, node: NodeView) -> None:
    w = L.const(node.inputs[1])
    if w is None:
        raise L.fail(node, "the weights are computed at run time (only constant weights can be quantized per channel)")
    if w.ndim != 4:
        raise L.fail(node, f"{w.ndim - 2}-D convolution; only 2-D (NCHW) convolutions are lowered")
    b = L.const(node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] else None
    out, act, bn = absorb_tail(L, node, allow_bn=True)
    w = np.asarray(w, np.float64)
    b = np.zeros(w.shape[0]) if b is None else np.asarray(b, np.float64)
    if bn is not None:
        w, b = w * bn[0].reshape(-1, 1, 1, 1), b * bn[0] + bn[1]
    x = L.act(node.inputs[0], "nhwc")
    cout, Ig, kh, kw = w.shape
    C, group = x.shape[3], int(node.attr("group", 1))
    strides, dil = _pairs(node)
    oshape = onnx_to_tfl_shape(L.shape(out), "nhwc")
    split = _stride_split(strides, (kh, kw))
    x, padding = spatial_pad(L, node, x, (kh, kw), strides, dil, oshape[1:3], allow_same=split is None)
    if split is None and padding == "VALID":
        x = _patch_crop(L, x, (kh, kw), strides, oshape[1:3])
    y = final = L.output(out, "nhwc")
    if split is not None:  # stride a*b: CONV_2D at stride a, then every b-th pixel (1x1 MAX_POOL at stride b)
        strides, pool = split
        hw = [(x.shape[1 + i] - ((kh, kw)[i] - 1) * dil[i] - 1) // strides[i] + 1 for i in range(2)]
        y = L.new(f"{out}/stride{strides[0]}x{strides[1]}", (y.shape[0], *hw, y.shape[3]), y.q, "nhwc")
    opts = dict(
        padding=padding,
        stride_w=strides[1],
        stride_h=strides[0],
        dilation_w_factor=dil[1],
        dilation_h_factor=dil[0],
        fused_activation_function=act,
    )
    if group == 1:
        _conv2d(L, x, w, b, y, opts)
    elif group == C and Ig == 1:
        wq, ws = per_channel_weights(w.transpose(1, 2, 3, 0), axis=3)  # [1, kh, kw, cout]
        wt = L.new(f"{y.name}/weights", wq.shape, None, "plain", data=wq, per_channel=(ws, 3))
        bt = L.bias(y, b, x, ws)
        L.emit("DEPTHWISE_CONV_2D", [x, wt, bt], [y], "DepthwiseConv2DOptions", depth_multiplier=cout // C, **opts)
    else:  # grouped: SPLIT along channels, one CONV_2D per group, CONCATENATION (Vela has no grouped conv)
        parts = [L.new(f"{y.name}/in{g}", x.shape[:3] + (C // group,), x.q, "nhwc") for g in range(group)]
        L.emit("SPLIT", [L.int32(f"{y.name}/axis", 3), x], parts, "SplitOptions", num_splits=group)
        og, outs = cout // group, []
        for g in range(group):
            yg = L.new(f"{y.name}/g{g}", y.shape[:3] + (og,), y.q, "nhwc")
            _conv2d(L, parts[g], w[g * og : (g + 1) * og], b[g * og : (g + 1) * og], yg, opts)
            outs.append(yg)
        L.emit("CONCATENATION", outs, [y], "ConcatenationOptions", axis=3, fused_activation_function="NONE")
    if y is not final:
        L.emit(
            "MAX_POOL_2D",
            [y],
            [final],
            "Pool2DOptions",
            padding="VALID",
            stride_w=pool[1],
            stride_h=pool[0],
            filter_width=1,
            filter_height=1,
            fused_activation_function="NONE",
        )


def _patch_crop(L: Lowering, x: TT, kernel, strides, out_hw) -> TT:
    """A patchify conv (stride = kernel > 3) reads out * stride rows and columns of its VALID input; Vela runs it on
    the NPU only when the input is exactly that big (a padded ViT-Pose patch embedding is not: "Non-passthrough
    operation (Conv2D) could not run on NPU"), so the unread tail is cut off first (STRIDED_SLICE, pass-through)."""
    keep = [o * s if s == k else n for o, s, k, n in zip(out_hw, strides, kernel, x.shape[1:3])]
    if not any(s > 3 and s == k for s, k in zip(strides, kernel)) or list(x.shape[1:3]) == keep:
        return x
    y = L.new(f"{x.name}/patches", (x.shape[0], *keep, x.shape[3]), x.q, "nhwc")
    L.emit(
        "STRIDED_SLICE",
        [
            x,
            L.int32(f"{y.name}/begin", [0, 0, 0, 0]),
            L.int32(f"{y.name}/end", list(y.shape)),
            L.int32(f"{y.name}/strides", [1, 1, 1, 1]),
        ],
        [y],
        "StridedSliceOptions",
    )
    return y


def _stride_split(strides, kernel):
    """Vela takes strides up to 3 (a stride-4 Conv2D stops its compiler): stride s = a*b with a, b <= 3 ->
    ((a_h, a_w), (b_h, b_w)). None when every stride is <= 3 or equals its kernel (patchify convs compile as is)."""
    if all(s <= 3 or s == k for s, k in zip(strides, kernel)):
        return None
    conv, pool = [], []
    for s in strides:
        a = next((a for a in (3, 2, 1) if s % a == 0 and s // a <= 3), None)
        if a is None:
            return None
        conv.append(a)
        pool.append(s // a)
    return conv, pool


def _conv2d(L: Lowering, x: TT, w: np.ndarray, b: np.ndarray, y: TT, opts: dict) -> None:
    wq, ws = per_channel_weights(w.transpose(0, 2, 3, 1), axis=0)  # OHWI
    wt = L.new(f"{y.name}/weights", wq.shape, None, "plain", data=wq, per_channel=(ws, 0))
    bt = L.bias(y, b, x, ws)
    L.emit("CONV_2D", [x, wt, bt], [y], "Conv2DOptions", **opts)


def batchnorm(L: Lowering, node: NodeView) -> None:
    """A BatchNormalization with no conv to fold into: a 1x1 DEPTHWISE_CONV_2D (per-channel scale + bias). On 2-D
    [rows, C] input (BatchNorm1d over flattened tokens, LeViT) the rows become the width of a [1, 1, rows, C] map."""
    vals = [L.const(t) for t in node.inputs[1:5]]
    rank = len(L.shape(node.inputs[0]))
    if any(v is None for v in vals) or rank not in (2, 4):
        raise L.fail(node, "only inference-mode BatchNormalization on 2-D or 4-D inputs with constant statistics")
    gamma, beta, mean, var = (np.asarray(v, np.float64) for v in vals)
    scale = gamma / np.sqrt(var + float(node.attr("epsilon", 1e-5)))
    out, act, _ = absorb_tail(L, node)
    if rank == 2:
        x0 = L.act(node.inputs[0])
        x = L.new(f"{out}/map", (1, 1) + tuple(x0.shape), x0.q, "plain")
        L.emit_reshape(x0, x)
        y = L.new(f"{out}/map_bn", x.shape, L.q_of(out), "plain")
    else:
        x = L.act(node.inputs[0], "nhwc")
        y = L.output(out, "nhwc")
    channel_affine(L, x, scale, beta - mean * scale, y, act)
    if rank == 2:
        z = L.output(out, "plain", q=y.q)
        L.emit_reshape(y, z)


def pool(L: Lowering, node: NodeView) -> None:
    x = L.act(node.inputs[0], "nhwc")
    glob = node.op_type.startswith("Global")
    if (
        not glob
        and len(x.shape) == 4
        and whole_map_pool(
            node.attr("kernel_shape"), node.attr("pads", [0] * 4), x.shape[1:3], L.shape(node.outputs[0])[2:]
        )
    ):
        glob = True
    if glob and len(x.shape) != 4:  # 1-D / 3-D global pooling: a MEAN / REDUCE_MAX over the spatial axes
        y = L.output(node.outputs[0], "plain", q=None if node.op_type == "GlobalAveragePool" else x.q)
        L.emit(
            "MEAN" if node.op_type == "GlobalAveragePool" else "REDUCE_MAX",
            [x, L.int32(f"{y.name}/axes", list(range(2, len(x.shape))))],
            [y],
            "ReducerOptions",
            keep_dims=True,
        )
        return
    if len(x.shape) != 4:
        raise L.fail(node, "only 2-D pooling on 4-D inputs")
    out = node.outputs[0]
    if node.op_type == "GlobalAveragePool" or (glob and node.op_type == "AveragePool"):  # MEAN requantizes: own range
        y = L.output(out, "nhwc")
        L.emit("MEAN", [x, L.int32(f"{y.name}/axes", [1, 2])], [y], "ReducerOptions", keep_dims=True)
        return
    kernel = x.shape[1:3] if glob else list(node.attr("kernel_shape"))
    strides, dil = ([1, 1], [1, 1]) if glob else _pairs(node)
    if any(d != 1 for d in dil):
        raise L.fail(node, "dilated pooling has no TFLite equivalent")
    is_max = "Max" in node.op_type
    oshape = onnx_to_tfl_shape(L.shape(out), "nhwc")
    # TFLite's SAME average pool leaves padding out of the count: right for count_include_pad=0 only
    include = not is_max and int(node.attr("count_include_pad", 0)) == 1
    x2, padding = spatial_pad(L, node, x, kernel, strides, dil, oshape[1:3], pad_min=is_max, allow_same=not include)
    if not is_max and x2 is not x and int(node.attr("count_include_pad", 0)) == 0:
        raise L.fail(node, "asymmetric padding with count_include_pad=0 has no TFLite equivalent")
    # int8 pooling kernels do not rescale: the output keeps the input's quantization
    y = L.output(out, "nhwc", q=x.q)
    L.emit(
        "MAX_POOL_2D" if is_max else "AVERAGE_POOL_2D",
        [x2],
        [y],
        "Pool2DOptions",
        padding=padding,
        stride_w=strides[1],
        stride_h=strides[0],
        filter_width=kernel[1],
        filter_height=kernel[0],
        fused_activation_function="NONE",
    )


def gemm(L: Lowering, node: NodeView) -> None:
    """Gemm / MatMul with a constant right-hand side -> FULLY_CONNECTED (weights [out, in], per channel)."""
    wv = L.const(node.inputs[1])
    if wv is None or L.is_const(node.inputs[0]):
        raise L.fail(node, "only activation x constant-weight products are lowered (FULLY_CONNECTED)")
    w = np.asarray(wv, np.float64)
    if node.op_type == "Gemm":
        if int(node.attr("transA", 0)):
            raise L.fail(node, "transA=1 is not supported")
        w = (w if int(node.attr("transB", 0)) else w.T) * float(node.attr("alpha", 1.0))
        c = L.const(node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] else None
        b = (
            np.zeros(w.shape[0])
            if c is None
            else np.broadcast_to(np.asarray(c, np.float64).reshape(-1), (w.shape[0],)) * float(node.attr("beta", 1.0))
        )
    else:
        if w.ndim != 2:
            raise L.fail(node, f"MatMul with a {w.ndim}-D constant; only 2-D weights map to FULLY_CONNECTED")
        w, b = w.T, np.zeros(w.shape[1])
    out, act, _ = absorb_tail(L, node)
    x = L.act(node.inputs[0], "plain")
    y = L.output(out, "plain")
    wq, ws = per_channel_weights(w, axis=0)
    wt = L.new(f"{y.name}/weights", wq.shape, None, "plain", data=wq, per_channel=(ws, 0))
    bt = L.bias(y, b, x, ws)
    L.emit(
        "FULLY_CONNECTED",
        [x, wt, bt],
        [y],
        "FullyConnectedOptions",
        fused_activation_function=act,
        keep_num_dims=len(x.shape) > 2,
    )


REDUCE = {"ReduceMean": "MEAN", "ReduceMax": "REDUCE_MAX", "ReduceMin": "REDUCE_MIN", "ReduceSum": "SUM"}


def reduce(L: Lowering, node: NodeView) -> None:
    """ReduceMean -> MEAN, ReduceSum -> SUM, ReduceMax/Min -> REDUCE_MAX/MIN (these share their input's range, see
    PASS_THROUGH), over any axes."""
    op = REDUCE[node.op_type]
    axes = node.attr("axes")
    if axes is None and len(node.inputs) > 1 and node.inputs[1]:
        axes = L.const(node.inputs[1])
    x = L.act(node.inputs[0])
    rank = len(x.shape)
    if axes is not None and not np.size(axes) and int(node.attr("noop_with_empty_axes", 0)):
        return L.alias(node.outputs[0], node.inputs[0])
    if axes is None or not np.size(axes):  # no axes, or an empty list: all of them
        axes = list(range(rank))
    axes = sorted(int(a) % rank for a in np.atleast_1d(axes))
    keep = bool(node.attr("keepdims", 1))
    out = node.outputs[0]
    if depth_reduce_as_conv(op, x.shape, [NHWC_AXIS[a] if x.layout == "nhwc" else a for a in axes]):
        return _depth_reduce(L, x, out, op, keep)
    if x.layout == "nhwc" and nhwc_mean_as_rows(op, x.shape, [NHWC_AXIS[a] for a in axes]):
        return _rows_reduce(L, x, out, op, 3)
    if x.layout != "nhwc" and mean_as_rows(op, x.shape, axes):
        return _rows_reduce(L, x, out, op, len(axes))
    if x.layout != "nhwc":
        y = L.output(out, x.layout)
        L.emit(op, [x, L.int32(f"{y.name}/axes", axes)], [y], "ReducerOptions", keep_dims=keep)
        return
    # Reduce in NHWC: moving the tensor back to NCHW first would turn a spatial mean into a MEAN over
    # TFLite's depth axis, which Vela rejects ("Unsupported depth-reduction", probe case mean_dim_linear).
    tfl_axes = [NHWC_AXIS[a] for a in axes]
    kept = [a for a in TO_NHWC if a not in axes]  # surviving ONNX axes in NHWC storage order
    if keep or kept == sorted(
        kept
    ):  # keepdims, or the survivors are already in ONNX order: MEAN writes the output directly
        y = L.output(out, "nhwc" if keep else "plain")
        L.emit(op, [x, L.int32(f"{y.name}/axes", tfl_axes)], [y], "ReducerOptions", keep_dims=keep)
        return
    # e.g. a mean over H alone: reduce with keepdims in NHWC, bring the 4-D result to NCHW, then drop the axis
    q = L.q_of(out)
    m = L.new(f"{out}/reduced", tuple(1 if i in tfl_axes else d for i, d in enumerate(x.shape)), q, "nhwc")
    L.emit(op, [x, L.int32(f"{m.name}/axes", tfl_axes)], [m], "ReducerOptions", keep_dims=True)
    nchw = L.new(f"{out}/nchw", tuple(m.shape[p] for p in TO_NCHW), q, "plain")
    L.layout_op(m, nchw, TO_NCHW)
    y = L.output(out, "plain", q=q)
    L.emit_reshape(nchw, y)


def _rows_reduce(L: Lowering, x: TT, out: str, op: str, n_axes: int) -> None:
    """A reduction over the last `n_axes` axes of a plain tensor as [rows, 1, reduced]: see
    converter_facts.mean_as_rows. Both reshapes keep the memory order, so Vela writes no copy for them."""
    lead = x.shape[: len(x.shape) - n_axes]
    rows, n = int(np.prod(lead, dtype=np.int64)), int(np.prod(x.shape[len(lead) :], dtype=np.int64))
    xr = L.new(f"{out}/rows", (rows, 1, n), x.q, "plain")
    L.emit_reshape(x, xr)
    q = L.q_of(out)
    m = L.new(f"{out}/rows_reduced", (rows, 1, 1), q, "plain")
    L.emit(op, [xr, L.int32(f"{m.name}/axes", [2])], [m], "ReducerOptions", keep_dims=True)
    y = L.output(out, "plain", q=q)
    L.emit_reshape(m, y)


def _depth_reduce(L: Lowering, x: TT, out: str, op: str, keep: bool) -> None:
    """A mean/sum over channels of an HxW map (LayerNorm over C in channels-first models): Vela runs no MEAN over
    depth there ("Unsupported depth-reduction"), but it runs the same sum as a 1x1 CONV_2D with one output channel
    whose weights are all 1/C (or 1): exact in int8, each weight quantizes to 127."""
    C = x.shape[3]
    w = np.full((1, C, 1, 1), 1.0 / C if op == "MEAN" else 1.0)
    opts = dict(
        padding="VALID",
        stride_w=1,
        stride_h=1,
        dilation_w_factor=1,
        dilation_h_factor=1,
        fused_activation_function="NONE",
    )
    q = L.q_of(out)
    floor = x.q.scale * float(w.flat[0]) / 127 / 128  # int8 kernels need input*weight/output scale < 256 (XNNPACK)
    if q.scale < floor:  # a mean that is ~0 on all calibration data (centred input): widen its range to the floor
        lo, hi = q.range
        q = L.aq(min(lo, -128 * floor), max(hi, 127 * floor))
    if keep:
        _conv2d(L, x, w, np.zeros(1), L.output(out, x.layout, q=q), opts)
        return
    m = L.new(f"{out}/keepdims", x.shape[:3] + (1,), q, x.layout)
    _conv2d(L, x, w, np.zeros(1), m, opts)
    y = L.output(out, "plain", q=m.q)
    L.emit_reshape(m, y)


def int8_scalar(L: Lowering, name: str, value: float, q: Q) -> TT:
    return L.new(name, (), q, "plain", data=quantize(np.array(value), q))


def conv_transpose(L: Lowering, node: NodeView) -> None:
    """ConvTranspose (2-D, group 1) -> TRANSPOSE_CONV with VALID or SAME padding, or VALID then cut to the output
    (pads with output_padding inside them: torch's k3 s2 p1 op1 upsampler); weights OHWI, per channel."""
    w = L.const(node.inputs[1])
    if w is None or w.ndim != 4 or int(node.attr("group", 1)) != 1:
        raise L.fail(node, "only 2-D, group-1 transposed convolutions with constant weights are lowered")
    if any(d != 1 for d in node.attr("dilations", [1, 1])):
        raise L.fail(node, "dilated transposed convolution has no TFLite equivalent")
    b = L.const(node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] else None
    out, act, bn = absorb_tail(L, node, allow_bn=True)
    w = np.asarray(w, np.float64)  # [Cin, Cout, kh, kw]
    b = np.zeros(w.shape[1]) if b is None else np.asarray(b, np.float64)
    if bn is not None:
        w, b = w * bn[0].reshape(1, -1, 1, 1), b * bn[0] + bn[1]
    x = L.act(node.inputs[0], "nhwc")
    y = L.output(out, "nhwc")
    strides = list(node.attr("strides", [1, 1]))
    pads = list(node.attr("pads", [0, 0, 0, 0]))
    form = tconv_padding(x.shape[1:3], y.shape[1:3], w.shape[2:], strides, pads)
    if form is None:  # the VALID result cut to the output covers pads with output_padding inside them; not past them
        raise L.fail(node, f"pads {pads} / output size reach beyond the VALID result (output_padding past the pads)")
    padding, crop = form
    full = tuple((x.shape[1 + i] - 1) * strides[i] + w.shape[2 + i] for i in range(2))
    wq, ws = per_channel_weights(w.transpose(1, 2, 3, 0), axis=0)  # OHWI
    t = y if crop is None else L.new(f"{out}/full", (y.shape[0], *full, y.shape[3]), y.q, "nhwc")
    wt = L.new(f"{t.name}/weights", wq.shape, None, "plain", data=wq, per_channel=(ws, 0))
    bt = L.bias(t, b, x, ws)
    L.emit(
        "TRANSPOSE_CONV",
        [L.int32(f"{t.name}/output_shape", t.shape), wt, x, bt],
        [t],
        "TransposeConvOptions",
        padding=padding,
        stride_w=strides[1],
        stride_h=strides[0],
        fused_activation_function=act,
    )
    if crop is not None:
        L.emit(
            "STRIDED_SLICE",
            [
                t,
                L.int32(f"{y.name}/begin", [0, crop[0], crop[1], 0]),
                L.int32(f"{y.name}/end", [y.shape[0], crop[0] + y.shape[1], crop[1] + y.shape[2], y.shape[3]]),
                L.int32(f"{y.name}/strides", [1, 1, 1, 1]),
            ],
            [y],
            "StridedSliceOptions",
        )


def channel_affine(L: Lowering, x: TT, scale, shift, y: TT, act: str = "NONE") -> None:
    """y = scale * x + shift per channel of an NHWC map, as one 1x1 DEPTHWISE_CONV_2D (per-channel int8 weights,
    the bias in y's scale): BatchNormalization without a conv to fold into, and the converter's affine forms."""
    wq, ws = per_channel_weights(np.asarray(scale, np.float64).reshape(1, 1, 1, -1), axis=3)
    wt = L.new(f"{y.name}/weights", wq.shape, None, "plain", data=wq, per_channel=(ws, 3))
    bt = L.bias(y, np.asarray(shift, np.float64), x, ws)
    L.emit(
        "DEPTHWISE_CONV_2D",
        [x, wt, bt],
        [y],
        "DepthwiseConv2DOptions",
        padding="VALID",
        stride_w=1,
        stride_h=1,
        depth_multiplier=1,
        dilation_w_factor=1,
        dilation_h_factor=1,
        fused_activation_function=act,
    )

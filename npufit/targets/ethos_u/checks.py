"""Ethos-U checks, shared by every MAC configuration (the rule tables are in rules.py).

Each check reads its numbers from Profile.limits, so the sentence the user sees is formatted from the same limits it
checks. A check returns None when the node passes, else a short detail. The constraints are Vela 5.2.0's
(`vela --supported-ops-report`); a broken one schedules the op on the CPU, except the padded big stride, which
fails the whole compile (PROBE-V). U55/U65 and U85 differ in the rule set: rules.op_rules(gen, ...) says which.
"""

from __future__ import annotations

import math

import numpy as np

from ...graph import facts, quant
from ...graph.model import NodeView
from .. import common
from .. import tflite_map as tm
from ..base import Limits, Verdict, fmt_list
from . import converted as conv
from . import fitted as fit

CPU, UNSUP = Verdict.CPU, Verdict.UNSUPPORTED


@facts.per_node  # read by three fmap rules of each node
def _act_dtypes(node: NodeView) -> list[str]:
    """Feature-map dtypes as the compiled TFLite file will have them (QDQ-wrapped ONNX ops -> their int type)."""
    if node.graph.format == "onnx":
        d = quant.exec_dtype(node)
        return conv.act_dtypes(node, [d] if d else [])
    out = [node.graph.tensor(node.inputs[i]).dtype for i in quant.activation_inputs(node)]
    out += [node.output_dtype(i) for i in range(len(node.outputs))]
    return [d for d in out if d]


def _wdq(node: NodeView, i: int) -> bool:
    p = node.graph.producer(node.inputs[i]) if i < len(node.inputs) and node.inputs[i] else None
    return p is not None and quant.is_weight_dequantize(p)


# -- generic (all ops) -------------------------------------------------------------------------


def fmap_dtype(node: NodeView, lim: Limits) -> str | None:
    bad = sorted({d for d in _act_dtypes(node) if d not in lim["fmap_dtypes"]})
    return f"feature map {', '.join(bad)}" if bad else None


def static_shape(node: NodeView, lim: Limits) -> str | None:
    if not common.any_dynamic_tail(node.graph):
        return None
    for i in list(quant.activation_inputs(node)):
        s = node.input_shape(i)
        if s is not None and any(not isinstance(d, int) or d < 0 for d in s[1:]):
            return f"input shape {list(s)}"
    return None


def quant_params(node: NodeView, lim: Limits) -> str | None:
    if node.graph.format != "tflite" or tm.tflite_op(node) in lim["no_quant_ops"]:
        return None
    for name in [node.inputs[i] for i in quant.activation_inputs(node)] + [o for o in node.outputs if o]:
        t = node.graph.tensor(name)
        if t.dtype in quant.INTEGER_DTYPES and t.quant is None:
            return f"tensor '{name}' has no quantization parameters"
        if t.quant is not None and any(s <= 0 for s in t.quant.scale):
            return f"tensor '{name}' has a non-positive scale"
    return None


def per_axis(node: NodeView, lim: Limits) -> str | None:
    if node.graph.format != "tflite" or tm.tflite_op(node) in lim["per_axis_ops"]:
        return None
    for name in [t for t in node.inputs if t] + [o for o in node.outputs if o]:
        q = node.graph.tensor(name).quant
        if q is not None and q.per_channel:
            return f"tensor '{name}' is quantized per axis"
    return None


def fmap_64(node: NodeView, lim: Limits) -> str | None:
    if tm.tflite_op(node) == "ARG_MAX":
        return None
    b = lim["u55_cpu_fmap_bits"]
    bad = [d for d in _act_dtypes(node) if d in (f"int{b}", f"uint{b}")]
    return f"feature map {bad[0]}" if bad else None


def fmap_32(node: NodeView, lim: Limits) -> str | None:
    b = lim["op_cpu_fmap_bits"]
    bad = [d for d in _act_dtypes(node) if d in (f"int{b}", f"uint{b}", f"float{b}")]
    return f"feature map {bad[0]}" if bad else None


def _padded_input(node: NodeView) -> bool:
    """Padding that is neither SAME nor VALID: ONNX explicit pads, or a TFLite VALID conv fed by a PAD op."""
    if not tm.is_tflite(node):
        return tm.padding(node) == "EXPLICIT"
    src = node.graph.producer(node.inputs[0]) if node.inputs and node.inputs[0] else None
    return tm.padding(node) == "VALID" and src is not None and src.op_type in ("PAD", "PADV2")


def stride_gt3(node: NodeView, lim: Limits) -> str | None:
    if fit.converter_splits_stride(node, lim):
        return None
    s, d = tm.strides(node), tm.dilations(node)
    if min(s) > 0 and max(s) <= lim["stride_max"]:
        return None  # the padding (a conv's costliest fact) only matters for a big stride
    p = tm.padding(node)
    plain = all(x == lim["big_stride_dilation"] for x in d) and p == "VALID"
    if max(s) > lim["stride_max"] and not plain and not _padded_input(node):
        return f"stride {fmt_list(s)}, dilation {fmt_list(d)}, padding {p}"
    return None


def stride_gt3_padded(node: NodeView, lim: Limits) -> str | None:
    """Vela 5.2 folds the PAD into the convolution after its support check, then cannot place the result on
    the NPU nor hand it to the CPU: the whole compile fails (probe: conv2d_3x3[stride=7,8]; SAME padding falls
    back). A stride along an axis with one output position never moves the window: stride 16 to a 1x1 output ran."""
    if fit.converter_splits_stride(node, lim):
        return None
    y, s = tm.out_shape(node), tm.strides(node)
    hw = y[1:3] if y and len(y) == 4 else [None, None]
    moving = [st for st, n in zip(s, hw) if not (isinstance(n, int) and n == 1)]
    return (
        f"stride {fmt_list(s)} after explicit padding"
        if moving and max(moving) > lim["stride_max"] and _padded_input(node)
        else None
    )


def stride_range(node: NodeView, lim: Limits) -> str | None:
    s = tm.strides(node)
    return None if all(1 <= x <= lim["stride_max"] for x in s) else f"stride {fmt_list(s)}"


def weight_8bit(node: NodeView, lim: Limits) -> str | None:
    i = 3 if node.op_type == "QLinearConv" else 1
    if (
        node.graph.format == "onnx"
    ):  # int8 weights come from a DequantizeLinear: none to look for in a graph without one
        p = (
            node.graph.producer(node.inputs[i])
            if i < len(node.inputs) and node.inputs[i] and node.graph.has_any(quant.DEQUANTIZE_OPS)
            else None
        )
        d = p.input_dtype(0) if p is not None and quant.is_weight_dequantize(p) else None
    else:
        d = node.input_dtype(i)
    b = lim["weight_bits"]
    return None if d is None or d in (f"int{b}", f"uint{b}") else f"weights {d}"


def weight_sum(node: NodeView, lim: Limits) -> str | None:
    w = node.input(1)
    if node.graph.format != "tflite" or w is None or w.value is None or w.quant is None:
        return None  # large weights are never read; Vela checks the rest
    zp = np.asarray(w.quant.zero_point).reshape(-1)
    v = np.abs(w.value.astype(np.int64) - (zp[0] if zp.size == 1 else 0))
    worst = int(v.reshape(v.shape[0], -1).sum(axis=1).max()) if v.ndim > 1 else int(v.sum())
    return None if worst <= lim["weight_sum_8bit"] else f"sum of absolute weights {worst}"


def bias(node: NodeView, lim: Limits) -> str | None:
    if len(node.inputs) < 3 or not node.inputs[2]:
        return None
    p = node.graph.producer(node.inputs[2])
    if not node.is_const(2) and not (p is not None and quant.is_weight_dequantize(p)):
        return "bias is computed at run time"
    d = p.input_dtype(0) if (p is not None and quant.is_weight_dequantize(p)) else node.input_dtype(2)
    if node.graph.format == "tflite" and d not in ("int32", "int64"):
        return f"bias {d}"
    return None


def tconv_stride(node: NodeView, lim: Limits) -> str | None:
    s, k, x = tm.strides(node), tm.kernel(node), tm.in_shape(node)
    if len(s) == 2 and s[0] == s[1] and s[0] in lim["tconv_strides"]:
        return None
    if s == [1, 2] and x and x[1] == 1 and k and k[0] == 1:  # [h, w]: 2x1 WxH needs IFM/kernel height 1
        return None
    if s == [2, 1] and x and x[2] == 1 and k and k[1] == 1:
        return None
    return f"stride {fmt_list(s)}"


def fc_weights(node: NodeView, lim: Limits) -> str | None:
    w = node.input(1)
    if w is None or not w.is_const and not _wdq(node, 1):
        return None  # dynamic weights: see the matmul rule
    s = w.shape or ()
    ok = len(s) >= 2 and all(d == lim["fc_inner_dim"] for d in s[1:-1]) or len(s) == 2
    return None if ok else f"weights of shape {list(s)}"


def matmul(node: NodeView, lim: Limits) -> str | None:
    if tm.tflite_op(node) == "FULLY_CONNECTED" and (node.is_const(1) or _wdq(node, 1)):
        return None
    d = quant.exec_dtype(node)
    if d is not None and d != "int8":
        return f"input {d}"
    y, x = node.output_shape(0), node.input_shape(0)
    if y and isinstance(y[-1], int) and y[-1] > lim["matmul_depth"]:
        return f"output depth {y[-1]}"
    if x and isinstance(x[-1], int) and x[-1] > lim["matmul_depth"]:
        return f"reduced axis {x[-1]}"
    return None


def avgpool_kernel(node: NodeView, lim: Limits) -> str | None:
    k, p = conv.pool_kernel(node), tm.padding(node)
    if not k:
        return None
    if p == "VALID":
        if k[0] * k[1] > lim["pool_kernel_product"] or k[0] > lim["pool_kernel_height"]:
            return f"kernel {fmt_list(k)} VALID"
    elif max(k) > lim["avgpool_same_kernel"]:
        return f"kernel {fmt_list(k)} {p}"
    return None


def maxpool_kernel(node: NodeView, lim: Limits) -> str | None:
    k = conv.pool_kernel(node)
    if k and (k[0] * k[1] > lim["pool_kernel_product"] or k[0] > lim["pool_kernel_height"]):
        return f"kernel {fmt_list(k)}"
    return None


def _mean_axes(node: NodeView):
    x = tm.in_shape(node)
    if node.op_type in ("GlobalAveragePool", "AveragePool"):  # AveragePool: a whole-map one (conv.whole_map)
        return x, [1, 2]
    if node.graph.format == "onnx":
        ax = common.reduce_axes(node)
        r = len(x) if x else None
        return x, None if ax is None else sorted(
            {(0 if a == 0 else (r - 1 if a == 1 else a - 1)) for a in ax}
        ) if r and r >= 3 else ax
    v = node.const_value(1)
    r = len(x) if x else 0
    return x, None if v is None else sorted({int(a) % r for a in v.reshape(-1)}) if r else None


def mean(node: NodeView, lim: Limits) -> str | None:
    x, axes = conv.mean_form(node, lim) or _mean_axes(node)
    if axes is None:
        return "axes are not constant"
    if not x or not all(isinstance(d, int) for d in x) or conv.depth_mean_as_conv(node, x, axes, lim):
        return None
    if len(x) == 4 and x[0] != lim["mean_batch"]:
        return f"batch {x[0]}"
    d = quant.exec_dtype(node) or "int8"
    if d not in ("int8", "uint8", "int16"):
        return f"input {d}"
    n = math.prod(x[a] for a in axes)
    cap = lim.get(f"mean_reduced_{d}", lim["mean_reduced_int8"])
    if n > cap:
        return f"{n} reduced elements"
    if any(x[a] >= lim["mean_axis_max"] for a in axes):
        return f"reduced axis of size {max(x[a] for a in axes)}"
    if len(x) == 4 and 3 in axes and not any(v == lim["mean_depth_unit"] for v in x[1:]):
        return "reduces over depth with h, w, c all > 1"
    return None


def softmax(node: NodeView, lim: Limits) -> str | None:
    x = tm.in_shape(node)
    if (
        x
        and len(x) >= 3
        and isinstance(x[-2], int)
        and isinstance(x[-3], int)
        and x[-2] * x[-3] >= lim["softmax_hw_max"]
    ):
        return f"width × height = {x[-2] * x[-3]}"
    return None


def _align(node: NodeView) -> bool:
    return node.attr("coordinate_transformation_mode") == "align_corners" or bool(node.attr("align_corners", False))


def _resize_scale(node: NodeView):
    x, y = tm.in_shape(node), tm.out_shape(node)
    if not x or not y or len(x) != 4 or not all(isinstance(d, int) for d in x[1:3] + y[1:3]):
        return None, x, y
    f = (lambda i, o: (o - 1) / (i - 1) if i > 1 else o) if _align(node) else (lambda i, o: o / i)
    return (f(x[1], y[1]), f(x[2], y[2])), x, y


def resize_u55(node: NodeView, lim: Limits) -> str | None:
    sc, x, y = _resize_scale(node)
    if sc is None or (x[1] == x[2] == 1):
        return None
    half = node.attr("coordinate_transformation_mode") in ("half_pixel", "pytorch_half_pixel") or bool(
        node.attr("half_pixel_centers", False)
    )
    if x[1:3] == y[1:3]:
        # CAL-V: upernet's same-size half-pixel bilinear resize (PSP branch, 2x2 -> 2x2) ran on the CPU, and so did
        # 2x2, 4x4 and 8x8 ones in benchmarks/calibration/vela_resize.py (docs/calibration/ethos-u55-256-resize.json;
        # align_corners and nearest ran on the NPU): the half-pixel "scale 2 only" check comes before the report's
        # "IFM must match OFM" case
        return "half-pixel bilinear at scale 1" if half and tm.tflite_op(node) == "RESIZE_BILINEAR" else None
    sh, sw = sc
    if sh != sw:
        return None if (y[1] == 1 and sh == 1) or (y[2] == 1 and sw == 1) else f"scale {sh:g}x{sw:g}"
    allowed = (
        (lim["resize_half_pixel_scale"],) if half and tm.tflite_op(node) == "RESIZE_BILINEAR" else lim["resize_scales"]
    )
    return None if sh in allowed else f"scale {sh:g}"


def resize_u85(node: NodeView, lim: Limits) -> str | None:
    sc, x, y = _resize_scale(node)
    if sc is None or x[1:3] == y[1:3]:
        return None
    cap = lim["resize_max_scale_align"] if _align(node) else lim["resize_max_scale"]
    for s in sc:
        if s != int(s) or int(s) & (int(s) - 1) or s > cap:
            return f"scale {s:g}"
    return None


def transpose(node: NodeView, lim: Limits) -> str | None:
    r = common.rank(node)
    if r is not None and r > lim["transpose_rank"]:
        return f"rank {r}"
    if node.graph.format == "onnx":
        perm = common.transpose_perm(node)
    else:
        perm = None if node.const_value(1) is None else [int(v) for v in node.const_value(1)]
    return "permutation is not constant" if perm is None else None


def transpose_u55(node: NodeView, lim: Limits) -> str | None:
    bad = transpose(node, lim)
    if bad:
        return bad
    x = node.input_shape(0)  # the permutation's own axes (for an ONNX model the converter keeps them, see below)
    if not x or not all(isinstance(v, int) for v in x) or len(x) < 3:
        return None
    x = [int(v) for v in x]
    if quant.exec_dtype(node) == "int32":
        return "int32 transpose" if len(x) > lim["transpose_int32_rank"] else None
    perm = _transpose_perm(node)
    if perm is None or perm == sorted(perm):
        return None
    if node.graph.format == "onnx" and _memory_trivial(x, perm):
        return None  # npufit's converter writes a transpose that moves no data as a RESHAPE
    # Regor (Vela 5.2.0's core): a permutation of the last three axes whose leading axes are all 1 has per-axis
    # limits only; any other needs every product of N-2 axes <= 2^16 ("Transpose with permutation 3, 1, 2, 0 has
    # shape out of range: 400, 2, 400, 1"), measured in benchmarks/calibration/vela_transpose.py's TFLite sweep
    lead = len(x) - 3
    if perm[:lead] == list(range(lead)) and all(v == 1 for v in x[:lead]):
        return None
    top = math.prod(sorted(x)[2:])  # the largest product of N-2 axes
    if top > lim["transpose_axes_product"]:
        return f"permutation {', '.join(map(str, perm))} of shape {', '.join(map(str, x))}: N-2 axes multiply to {top}"
    return None


def _transpose_perm(node: NodeView) -> list[int] | None:
    if node.graph.format == "onnx":
        return common.transpose_perm(node)
    v = node.const_value(1)
    return None if v is None else [int(p) for p in v]


def _memory_trivial(shape: list[int], perm: list[int]) -> bool:
    """The axes longer than 1 keep their order: the data does not move (a RESHAPE does the work)."""
    moved = [p for p in perm if shape[p] != 1]
    return moved == sorted(moved)


def params_const(node: NodeView, lim: Limits) -> str | None:
    consts = all(node.is_const(i) for i in range(1, len(node.inputs)) if node.inputs[i])
    return None if consts else "parameters are computed at run time"


def strided_slice(node: NodeView, lim: Limits) -> str | None:
    bad = params_const(node, lim)
    if bad:
        return bad
    fmt = node.graph.format
    steps = (
        common.const_ints(node, 4)
        if fmt == "onnx" and len(node.inputs) > 4 and node.inputs[4]
        else (common.const_ints(node, 3) if fmt == "tflite" and len(node.inputs) > 3 else None)
    )
    return f"steps {steps}" if steps and any(s < 0 for s in steps) else None


def lut_dtype(node: NodeView, lim: Limits) -> str | None:
    """ELU / GELU / LOG: the feature-map types Vela takes for the op (limits['lut_dtypes']) and equal IFM/OFM shapes."""
    d = quant.exec_dtype(node)
    if d is not None and d not in lim["lut_dtypes"][tm.tflite_op(node)]:
        return f"feature map {d}"
    x, y = node.input_shape(0), node.output_shape(0)
    return f"shapes {list(x)} → {list(y)}" if x and y and list(x) != list(y) else None


def minmax_qparams(node: NodeView, lim: Limits) -> str | None:
    if node.graph.format != "tflite":
        return None
    out = node.output(0)
    return (
        "input and output quantization differ"
        if any(node.input(i).quant != out.quant for i in quant.activation_inputs(node))
        else None
    )


def argmax(node: NodeView, lim: Limits) -> str | None:
    x = tm.in_shape(node)
    if node.graph.format == "onnx":
        axis = node.attr("axis", -1)
    else:
        axis = int(node.const_value(1).reshape(-1)[0]) if node.const_value(1) is not None else -1
    r = len(x) if x else None
    if x and isinstance(x[-1], int) and x[-1] > lim["argmax_depth"]:
        return f"depth {x[-1]}"
    if r and node.graph.format == "onnx" and common.norm_axis(int(axis), r) != 1:
        return f"axis {axis}"
    if r and node.graph.format == "tflite" and common.norm_axis(int(axis), r) != r - 1:
        return f"axis {axis}"
    return None


def lstm(node: NodeView, lim: Limits) -> str | None:
    return "peephole weights" if node.graph.format == "onnx" and len(node.inputs) > 7 and node.inputs[7] else None


def gather_u85(node: NodeView, lim: Limits) -> str | None:
    axis, bd = node.attr("axis", 0), node.attr("batch_dims", 0)
    return None if int(axis) == int(bd) else f"axis {axis}, batch_dims {bd}"


def qdq_fused(node: NodeView, lim: Limits) -> str | None:
    """ONNX QDQ pairs around int8 ops become plain int8 tensors in the converted TFLite file."""
    if node.graph.format == "onnx" and quant.absorbed(node):
        return None
    if quant.is_dequantize(node):
        return "standalone DEQUANTIZE"
    d = node.input_dtype(0)
    return f"{d} input" if d in ("float32", "int32") else None

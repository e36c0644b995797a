"""Arm Ethos-U55 / U65 / U85 through Vela 5.2.0 (targets.md §3).

The constraints are Vela's own, taken from `vela --supported-ops-report` (5.2.0) and encoded here as
npufit rules; Vela is never run by `check`. Vela's rule: "If the constraints are not met, then that
operator will be scheduled on the CPU instead" — every violation and every unlisted op is `cpu`
(TensorFlow Lite Micro runs it). MAC configurations share one rule set per generation (U55/U65 vs U85).
"""
from __future__ import annotations

import math

from ..graph import quant
from ..graph.model import NodeView
from . import common, ethos_u_fitted as fit, tflite_map as tm
from .base import Executes, Fallback, OpSupport, Profile, Rule, Verdict

NPU, CPU, UNSUP = Verdict.NPU, Verdict.CPU, Verdict.UNSUPPORTED

SOURCES = {
    "VELA": "vela --supported-ops-report, ethos-u-vela 5.2.0 (TFLite sections for Ethos-U55/U65 and Ethos-U85)",
    "CONV": "usual ONNX -> TF -> TFLite int8 converter behaviour (inferred, targets.md §3 preamble)",
    "PROBE-V": "measured: npufit probe --target ethos-u55-256 --compiler vela --sweep (Vela 5.2.0), docs/probe/ethos-u55-256-matrix.md",
    "CAL-V": "measured: Vela 5.2.0 on npufit's int8 TFLite conversions: the calibration corpus (docs/calibration/ethos-u*-int8-op17.json) "
             "and the case sweeps benchmarks/calibration/vela_transpose.py and vela_resize.py (docs/calibration/ethos-u*-transpose.json, "
             "-resize.json)",
}

# Operators listed in Vela 5.2.0's TFLite summary tables.
U55_OPS = ("ABS ADD ARG_MAX AVERAGE_POOL_2D BATCH_MATMUL CONCATENATION CONV_2D DEPTHWISE_CONV_2D ELU EXP EXPAND_DIMS "
           "FULLY_CONNECTED GELU HARD_SWISH LEAKY_RELU LOG LOGISTIC MAXIMUM MAX_POOL_2D MEAN MINIMUM MIRROR_PAD MUL NEG PACK "
           "PAD PADV2 PRELU QUANTIZE REDUCE_MAX REDUCE_MIN RELU RELU6 RELU_0_TO_1 RELU_N1_TO_1 RESHAPE RESIZE_BILINEAR "
           "RESIZE_NEAREST_NEIGHBOR REVERSE_V2 RSQRT SLICE SOFTMAX SPLIT SPLIT_V SQUARED_DIFFERENCE SQUEEZE STRIDED_SLICE SUB "
           "SUM TANH TILE TRANSPOSE TRANSPOSE_CONV UNIDIRECTIONAL_SEQUENCE_LSTM UNPACK").split()
U85_EXTRA = ("ASSIGN_VARIABLE CAST DIV EQUAL GATHER GREATER GREATER_EQUAL LESS LESS_EQUAL LOGICAL_AND LOGICAL_NOT LOGICAL_OR "
             "NOT_EQUAL READ_VARIABLE REDUCE_ALL REDUCE_ANY SCATTER_ND SELECT SELECT_V2").split()

BASE_LIMITS = {
    "fmap_dtypes": common.Choices(("int8", "uint8", "int16", "int32", "int64")),
    "weight_sum_8bit": 8323072,
    "stride_max": 3,
    "pool_kernel_product": 256 * 256,
    "pool_kernel_height": 256,
    "avgpool_same_kernel": 8,
    "mean_reduced_int8": 16777216, "mean_reduced_uint8": 8388608, "mean_reduced_int16": 65536,
    "mean_axis_max": 4096,
    "softmax_hw_max": 65536,
    "resize_scales": common.Choices((2, 4, 8)),
    "argmax_depth": 127,
    "matmul_depth": 65536,
    "transpose_rank": 8,
    "per_axis_ops": common.Choices(("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "TRANSPOSE_CONV")),
    "no_quant_ops": common.Choices(("ARG_MAX", "EXPAND_DIMS", "MIRROR_PAD", "PAD", "PADV2", "QUANTIZE", "TRANSPOSE")),
}
U85_LIMITS = {**BASE_LIMITS, "fmap_dtypes": common.Choices(("bool", "int8", "uint8", "int16", "int32", "int64")), "resize_max_scale": 1024,
              "resize_max_scale_align": 2048}

# name -> (generation, title, MACs/cycle)
CONFIGS = {
    "ethos-u55-128": ("u55", "Arm Ethos-U55-128", 128), "ethos-u55-256": ("u55", "Arm Ethos-U55-256", 256),
    "ethos-u65-256": ("u55", "Arm Ethos-U65-256", 256), "ethos-u65-512": ("u55", "Arm Ethos-U65-512", 512),
    "ethos-u85-256": ("u85", "Arm Ethos-U85-256", 256), "ethos-u85-512": ("u85", "Arm Ethos-U85-512", 512),
    "ethos-u85-1024": ("u85", "Arm Ethos-U85-1024", 1024), "ethos-u85-2048": ("u85", "Arm Ethos-U85-2048", 2048),
}


def _fmt(v):
    return "x".join(str(x) for x in v)


def _act_dtypes(node: NodeView) -> list[str]:
    """Feature-map dtypes as the compiled TFLite file will have them (QDQ-wrapped ONNX ops -> their int type)."""
    if node.graph.format == "onnx":
        d = quant.exec_dtype(node)
        return [d] if d else []
    out = [node.graph.tensor(node.inputs[i]).dtype for i in quant.activation_inputs(node)]
    out += [node.output_dtype(i) for i in range(len(node.outputs))]
    return [d for d in out if d]


# -- generic (all ops) -------------------------------------------------------------------------

def _fmap_dtype(node, lim):
    bad = sorted({d for d in _act_dtypes(node) if d not in lim["fmap_dtypes"]})
    return f"feature map {', '.join(bad)}" if bad else None


def _static(node, lim):
    for i in list(quant.activation_inputs(node)):
        s = node.input_shape(i)
        if s is not None and any(not isinstance(d, int) or d < 0 for d in s[1:]):
            return f"input shape {list(s)}"
    return None


def _quant_params(node, lim):
    if node.graph.format != "tflite" or tm.tflite_op(node) in lim["no_quant_ops"]:
        return None
    for name in [node.inputs[i] for i in quant.activation_inputs(node)] + [o for o in node.outputs if o]:
        t = node.graph.tensor(name)
        if t.dtype in quant.INTEGER_DTYPES and t.quant is None:
            return f"tensor '{name}' has no quantization parameters"
        if t.quant is not None and any(s <= 0 for s in t.quant.scale):
            return f"tensor '{name}' has a non-positive scale"
    return None


def _per_axis(node, lim):
    if node.graph.format != "tflite" or tm.tflite_op(node) in lim["per_axis_ops"]:
        return None
    for name in [t for t in node.inputs if t] + [o for o in node.outputs if o]:
        q = node.graph.tensor(name).quant
        if q is not None and q.per_channel:
            return f"tensor '{name}' is quantized per axis"
    return None


def _fmap_64(node, lim):
    if tm.tflite_op(node) == "ARG_MAX":
        return None
    bad = [d for d in _act_dtypes(node) if d in ("int64", "uint64")]
    return f"feature map {bad[0]}" if bad else None


def _fmap_32(node, lim):
    bad = [d for d in _act_dtypes(node) if d in ("int32", "uint32", "float32")]
    return f"feature map {bad[0]}" if bad else None


def graph_rules(gen: str, name: str) -> tuple[Rule, ...]:
    r = [
        Rule(f"{name}.fmap.dtype", "feature-map data types must be one of {fmap_dtypes}: float ops stay on the CPU", _fmap_dtype, CPU,
             ("quantize to int8 (or int16) before Vela: npufit quantize, or a full-integer TFLite export",), "VELA"),
        Rule(f"{name}.shape.static", "tensors must have constant shapes (only the first dimension may be dynamic)", _static, CPU,
             ("pin the input shape (--input-shape) before converting",), "VELA"),
        Rule(f"{name}.quant.params", "input, output and weight tensors must have quantization parameters with a positive scale "
             "(except {no_quant_ops})", _quant_params, CPU, ("re-export as a full-integer quantized TFLite model",), "VELA"),
        Rule(f"{name}.quant.per_axis", "per-axis quantization is supported only for {per_axis_ops}", _per_axis, CPU,
             ("quantize this op's tensors per tensor",), "VELA"),
    ]
    if gen == "u55":
        r.append(Rule(f"{name}.fmap.64bit", "64-bit feature maps are not supported (except ARG_MAX)", _fmap_64, CPU,
                      ("cast to int32/int8 earlier in the graph",), "VELA"))
    return tuple(r)


# -- op-specific ---------------------------------------------------------------------------------

def _padded_input(node) -> bool:
    """Padding that is neither SAME nor VALID: ONNX explicit pads, or a TFLite VALID conv fed by a PAD op."""
    if not tm.is_tflite(node):
        return tm.padding(node) == "EXPLICIT"
    src = node.graph.producer(node.inputs[0]) if node.inputs and node.inputs[0] else None
    return tm.padding(node) == "VALID" and src is not None and src.op_type in ("PAD", "PADV2")


def _stride_gt3(node, lim):
    if fit.converter_splits_stride(node, lim):
        return None
    s, d, p = tm.strides(node), tm.dilations(node), tm.padding(node)
    if max(s) > lim["stride_max"] and not (all(x == 1 for x in d) and p == "VALID") and not _padded_input(node):
        return f"stride {_fmt(s)}, dilation {_fmt(d)}, padding {p}"
    return None


def _stride_gt3_padded(node, lim):
    """Vela 5.2 folds the PAD into the convolution after its support check, then cannot place the result on
    the NPU nor hand it to the CPU: the whole compile fails (probe: conv2d_3x3[stride=7,8]; SAME padding falls
    back). A stride along an axis with one output position never moves the window: stride 16 to a 1x1 output ran."""
    if fit.converter_splits_stride(node, lim):
        return None
    y = tm.out_shape(node)
    s = tm.strides(node)
    hw = y[1:3] if y and len(y) == 4 else [None, None]
    moving = [st for st, n in zip(s, hw) if not (isinstance(n, int) and n == 1)]
    return f"stride {_fmt(s)} after explicit padding" if moving and max(moving) > lim["stride_max"] and _padded_input(node) else None


def _stride_range(node, lim):
    s = tm.strides(node)
    return None if all(1 <= x <= lim["stride_max"] for x in s) else f"stride {_fmt(s)}"


def _weight_8bit(node, lim):
    i = 3 if node.op_type == "QLinearConv" else 1
    if node.graph.format == "onnx":
        p = node.graph.producer(node.inputs[i]) if i < len(node.inputs) and node.inputs[i] else None
        d = p.input_dtype(0) if p is not None and quant.is_weight_dequantize(p) else None
    else:
        d = node.input_dtype(i)
    return None if d is None or d in ("int8", "uint8") else f"weights {d}"


def _weight_sum(node, lim):
    w = node.input(1)
    if node.graph.format != "tflite" or w is None or w.value is None or w.quant is None:
        return None  # large weights are never read; Vela checks the rest
    import numpy as np

    zp = np.asarray(w.quant.zero_point).reshape(-1)
    v = np.abs(w.value.astype(np.int64) - (zp[0] if zp.size == 1 else 0))
    cap = lim["weight_sum_8bit"]
    worst = int(v.reshape(v.shape[0], -1).sum(axis=1).max()) if v.ndim > 1 else int(v.sum())
    return None if worst <= cap else f"sum of absolute weights {worst}"


def _bias(node, lim):
    if len(node.inputs) < 3 or not node.inputs[2]:
        return None
    g = node.graph
    p = g.producer(node.inputs[2])
    if not node.is_const(2) and not (p is not None and quant.is_weight_dequantize(p)):
        return "bias is computed at run time"
    d = p.input_dtype(0) if (p is not None and quant.is_weight_dequantize(p)) else node.input_dtype(2)
    if node.graph.format == "tflite" and d not in ("int32", "int64"):
        return f"bias {d}"
    return None


def _tconv_stride(node, lim):
    s, k, x = tm.strides(node), tm.kernel(node), tm.in_shape(node)
    if s in ([1, 1], [2, 2]):
        return None
    if s == [1, 2] and x and x[1] == 1 and k and k[0] == 1:  # [h, w]: 2x1 WxH needs IFM/kernel height 1
        return None
    if s == [2, 1] and x and x[2] == 1 and k and k[1] == 1:
        return None
    return f"stride {_fmt(s)}"


def _fc_weights(node, lim):
    w = node.input(1)
    if w is None or not w.is_const and not _wdq(node, 1):
        return None  # dynamic weights: see the matmul rule
    s = w.shape or ()
    return None if len(s) >= 2 and all(d == 1 for d in s[1:-1]) or len(s) == 2 else f"weights of shape {list(s)}"


def _wdq(node, i):
    p = node.graph.producer(node.inputs[i]) if i < len(node.inputs) and node.inputs[i] else None
    return p is not None and quant.is_weight_dequantize(p)


def _matmul(node, lim):
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


def _avgpool_kernel(node, lim):
    k, p = tm.kernel(node), tm.padding(node)
    if not k:
        return None
    if p == "VALID":
        if k[0] * k[1] > lim["pool_kernel_product"] or k[0] > lim["pool_kernel_height"]:
            return f"kernel {_fmt(k)} VALID"
    elif max(k) > lim["avgpool_same_kernel"]:
        return f"kernel {_fmt(k)} {p}"
    return None


def _maxpool_kernel(node, lim):
    k = tm.kernel(node)
    if k and (k[0] * k[1] > lim["pool_kernel_product"] or k[0] > lim["pool_kernel_height"]):
        return f"kernel {_fmt(k)}"
    return None


def _mean_axes(node):
    x = tm.in_shape(node)
    if node.op_type == "GlobalAveragePool":
        return x, [1, 2]
    if node.graph.format == "onnx":
        ax = common.reduce_axes(node)
        r = len(x) if x else None
        return x, None if ax is None else sorted({(0 if a == 0 else (r - 1 if a == 1 else a - 1)) for a in ax}) if r and r >= 3 else ax
    v = node.const_value(1)
    r = len(x) if x else 0
    return x, None if v is None else sorted({int(a) % r for a in v.reshape(-1)}) if r else None


def _mean(node, lim):
    x, axes = _mean_axes(node)
    if axes is None:
        return "axes are not constant"
    if not x or not all(isinstance(d, int) for d in x):
        return None
    if len(x) == 4 and x[0] != 1:
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
    if len(x) == 4 and 3 in axes and not any(v == 1 for v in x[1:]):
        return "reduces over depth with h, w, c all > 1"
    return None


def _softmax(node, lim):
    x = tm.in_shape(node)
    if x and len(x) >= 3 and isinstance(x[-2], int) and isinstance(x[-3], int) and x[-2] * x[-3] >= lim["softmax_hw_max"]:
        return f"width × height = {x[-2] * x[-3]}"
    return None


def _resize_scale(node):
    x, y = tm.in_shape(node), tm.out_shape(node)
    if not x or not y or len(x) != 4 or not all(isinstance(d, int) for d in x[1:3] + y[1:3]):
        return None, x, y
    align = node.attr("coordinate_transformation_mode") == "align_corners" or bool(node.attr("align_corners", False))
    f = (lambda i, o: (o - 1) / (i - 1) if i > 1 else o) if align else (lambda i, o: o / i)
    return (f(x[1], y[1]), f(x[2], y[2])), x, y


def _resize_u55(node, lim):
    sc, x, y = _resize_scale(node)
    if sc is None or (x[1] == x[2] == 1):
        return None
    half = node.attr("coordinate_transformation_mode") in ("half_pixel", "pytorch_half_pixel") or bool(node.attr("half_pixel_centers", False))
    if x[1:3] == y[1:3]:
        # CAL-V: upernet's same-size half-pixel bilinear resize (PSP branch, 2x2 -> 2x2) ran on the CPU, and so did
        # 2x2, 4x4 and 8x8 ones in benchmarks/calibration/vela_resize.py (docs/calibration/ethos-u55-256-resize.json;
        # align_corners and nearest ran on the NPU): the half-pixel "scale 2 only" check comes before the report's
        # "IFM must match OFM" case
        return "half-pixel bilinear at scale 1" if half and tm.tflite_op(node) == "RESIZE_BILINEAR" else None
    sh, sw = sc
    if sh != sw:
        return None if (y[1] == 1 and sh == 1) or (y[2] == 1 and sw == 1) else f"scale {sh:g}x{sw:g}"
    allowed = (2,) if half and tm.tflite_op(node) == "RESIZE_BILINEAR" else lim["resize_scales"]
    return None if sh in allowed else f"scale {sh:g}"


def _resize_u85(node, lim):
    sc, x, y = _resize_scale(node)
    if sc is None or x[1:3] == y[1:3]:
        return None
    align = node.attr("coordinate_transformation_mode") == "align_corners" or bool(node.attr("align_corners", False))
    cap = lim["resize_max_scale_align"] if align else lim["resize_max_scale"]
    for s in sc:
        if s != int(s) or int(s) & (int(s) - 1) or s > cap:
            return f"scale {s:g}"
    return None


def _transpose(node, lim):
    r = common.rank(node)
    if r is not None and r > lim["transpose_rank"]:
        return f"rank {r}"
    perm = common.transpose_perm(node) if node.graph.format == "onnx" else (None if node.const_value(1) is None else [int(v) for v in node.const_value(1)])
    if perm is None:
        return "permutation is not constant"
    return None


def _transpose_u55(node, lim):
    bad = _transpose(node, lim)
    if bad:
        return bad
    x = tm.in_shape(node)
    d = quant.exec_dtype(node)
    if not x or not all(isinstance(v, int) for v in x) or len(x) < 3:
        return None
    if d == "int32":
        return "int32 transpose" if len(x) > 4 else None
    # CAL-V: the report's "product of any N-2 axes <= 2^16" for non-NHWC int8 permutations was not observed: Vela 5.2.0 ran
    # every int8 transpose of docs/calibration/ethos-u55-256-transpose.json on the NPU, products up to 300x300 = 90000
    return None


def _sourced(rule: Rule, source: str) -> Rule:
    import dataclasses

    return dataclasses.replace(rule, source=source)


def _params_const(node, lim):
    if node.graph.format == "onnx":
        return None if all(node.is_const(i) for i in range(1, len(node.inputs)) if node.inputs[i]) else "parameters are computed at run time"
    return None if all(node.is_const(i) for i in range(1, len(node.inputs)) if node.inputs[i]) else "parameters are computed at run time"


def _strided_slice(node, lim):
    bad = _params_const(node, lim)
    if bad:
        return bad
    steps = common.const_ints(node, 4) if node.graph.format == "onnx" and len(node.inputs) > 4 and node.inputs[4] else (
        common.const_ints(node, 3) if node.graph.format == "tflite" and len(node.inputs) > 3 else None)
    if steps and any(s < 0 for s in steps):
        return f"steps {steps}"
    return None


def _int8_equal_shapes(*dtypes):
    def check(node, lim):
        d = quant.exec_dtype(node)
        if d is not None and d not in dtypes:
            return f"feature map {d}"
        x, y = node.input_shape(0), node.output_shape(0)
        if x and y and list(x) != list(y):
            return f"shapes {list(x)} → {list(y)}"
        return None
    return check


def _minmax_qparams(node, lim):
    if node.graph.format != "tflite":
        return None
    out = node.output(0)
    for i in quant.activation_inputs(node):
        q = node.input(i).quant
        if q != out.quant:
            return "input and output quantization differ"
    return None


def _argmax(node, lim):
    x = tm.in_shape(node)
    axis = node.attr("axis", -1) if node.graph.format == "onnx" else (int(node.const_value(1).reshape(-1)[0]) if node.const_value(1) is not None else -1)
    r = len(x) if x else None
    if x and isinstance(x[-1], int) and x[-1] > lim["argmax_depth"]:
        return f"depth {x[-1]}"
    if r and node.graph.format == "onnx" and common.norm_axis(int(axis), r) != 1:
        return f"axis {axis}"
    if r and node.graph.format == "tflite" and common.norm_axis(int(axis), r) != r - 1:
        return f"axis {axis}"
    return None


def _lstm(node, lim):
    if node.graph.format == "onnx" and len(node.inputs) > 7 and node.inputs[7]:
        return "peephole weights"
    return None


def _gather_u85(node, lim):
    axis = node.attr("axis", 0)
    bd = node.attr("batch_dims", 0)
    return None if int(axis) == int(bd) else f"axis {axis}, batch_dims {bd}"


def _qdq_fused(node, lim):
    """ONNX QDQ pairs around int8 ops become plain int8 tensors in the converted TFLite file."""
    if node.graph.format == "onnx" and quant.absorbed(node):
        return None
    if quant.is_dequantize(node):
        return "standalone DEQUANTIZE"
    d = node.input_dtype(0)
    return f"{d} input" if d in ("float32", "int32") else None


def build(name: str) -> Profile:
    gen, title, macs = CONFIGS[name]
    lim = dict(U85_LIMITS if gen == "u85" else BASE_LIMITS)
    lim["macs_per_cycle"] = macs
    u55 = gen == "u55"

    def R(rid, text, fn, fix=(), fix_rules=()):
        return Rule(f"{name}.{rid}", text, fn, CPU, tuple(fix), "VELA", tuple(fix_rules))

    f32 = R("fmap.32bit", "32-bit feature maps are not supported", _fmap_32, ("keep this op's tensors int8/int16",))
    s3 = R("stride.gt3", "stride > {stride_max} is supported only with dilation 1 and VALID padding", _stride_gt3,
           ("use stride ≤ 3 or VALID padding",))
    w8 = R("weights.8bit", "weight tensors must be 8-bit", _weight_8bit, ("quantize weights to int8",))
    wsum = R("weights.sum", "the sum of absolute weights per output channel cannot exceed {weight_sum_8bit}", _weight_sum)
    bias = R("bias.const", "bias tensors must be constant int32/int64 values on the channel axis", _bias)
    s3pad = Rule(f"{name}.stride.gt3_padded", "stride > {stride_max} after explicit padding (a PAD before a VALID convolution) "
                 "fails the Vela compile: 'Non-passthrough operation (Conv2D) could not run on NPU'", _stride_gt3_padded, UNSUP,
                 ("use SAME or VALID padding, or stride ≤ 3 (then pool)",), "PROBE-V")
    conv = [f32, bias, w8, wsum] if u55 else [bias, w8, wsum]
    if u55:
        conv += [s3, s3pad]
    pc = R("params.const", "parameter tensors must be constant", _params_const)
    ops: dict[str, OpSupport] = {}
    listed = U55_OPS + (U85_EXTRA if not u55 else [])
    for op in listed:
        ops[op] = OpSupport(op, NPU, (f32,) if (u55 and op not in ("SUM", "BATCH_MATMUL", "ARG_MAX", "MIRROR_PAD", "TRANSPOSE")) else (), source="VELA")

    def put(op, *rules, note=""):
        base = ops[op].rules if op in ops else ()
        ops[op] = OpSupport(op, NPU, tuple(base) + tuple(rules), source="VELA", note=note)

    ops["CONV_2D"] = OpSupport("CONV_2D", NPU, tuple(conv), source="VELA")
    ops["DEPTHWISE_CONV_2D"] = OpSupport("DEPTHWISE_CONV_2D", NPU, tuple(conv[:-2] if u55 else conv) + (
        (R("depthwise.stride", "kernel stride must be in the range (1, {stride_max})", _stride_range, ("use stride ≤ 3",)),) if u55 else ()), source="VELA")
    put("TRANSPOSE_CONV", bias, w8, *((R("transpose_conv.stride", "transposed-convolution stride must be 1x1 or 2x2 (2x1/1x2 only when the IFM and "
                                        "kernel are 1 in that dimension)", _tconv_stride, ("use stride 2 or Resize + Conv",)),) if u55 else ()))
    put("FULLY_CONNECTED", bias, w8, R("fc.weights", "fully-connected weights must have the form O,1,...,1,I", _fc_weights),
        R("matmul.dynamic", "a matmul (or FC with dynamic weights) needs an int8 input, output depth ≤ {matmul_depth} and reduced axis ≤ {matmul_depth}", _matmul))
    if u55:
        put("BATCH_MATMUL", R("matmul.dynamic", "a matmul (or FC with dynamic weights) needs an int8 input, output depth ≤ {matmul_depth} and reduced axis ≤ {matmul_depth}", _matmul))
    put("AVERAGE_POOL_2D", R("avgpool.kernel", "average pool: VALID kernels up to {pool_kernel_product} elements and height {pool_kernel_height}; "
                             "SAME kernels up to {avgpool_same_kernel}x{avgpool_same_kernel}", _avgpool_kernel, ("use VALID padding or a smaller kernel",)),
        *((s3,) if u55 else ()))
    put("MAX_POOL_2D", R("maxpool.kernel", "max pool kernel product must be ≤ {pool_kernel_product} and height ≤ {pool_kernel_height}", _maxpool_kernel),
        *((s3,) if u55 else ()))
    put("MEAN", R("mean.limits", "MEAN: batch 1, int8/uint8/int16 input, constant axes, at most {mean_reduced_int8} reduced elements (int8), "
                  "each reduced axis < {mean_axis_max}, depth reduction only when one of h, w, c is 1", _mean, ("pool down before the mean",)))
    for op in ("SUM", "REDUCE_MAX", "REDUCE_MIN") if u55 else ():
        put(op, R("reduce.stride", "kernel stride must be in the range (1, {stride_max})", _stride_range))
    put("SOFTMAX", R("softmax.hw", "softmax needs IFM width × height < {softmax_hw_max}", _softmax, ("softmax over a smaller map, or on the host",)))
    for op in ("RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR"):
        if u55:
            put(op, R("resize.scale", "resize scale must be 2x, 4x or 8x in both dimensions (half-pixel bilinear: 2x only)", _resize_u55,
                      ("upsample by 2/4/8, or chain 2x resizes",)))
        else:
            put(op, R("resize.scale", "resize scale must be an integer power of two up to {resize_max_scale} ({resize_max_scale_align} with align_corners)",
                      _resize_u85, ("upsample by a power of two",)))
    put("TRANSPOSE", _sourced(R("transpose.shape", "transpose: constant permutation, rank ≤ {transpose_rank}" + ("; int32 only up to rank 4 (the report's "
                       "N−2-axes product limit for int8 was not observed, CAL-V)" if u55 else ""), _transpose_u55 if u55 else _transpose),
                              "CAL-V" if u55 else "VELA"))
    for op in ("SLICE", "PAD", "PADV2", "MIRROR_PAD"):
        put(op, pc)
    put("STRIDED_SLICE", R("strided_slice.params", "strided slice: constant parameters and non-negative strides", _strided_slice),
        _sourced(R("strided_slice.after_cpu", "a slice of a CPU op's output that feeds only Shape nodes stays on the CPU with it",
                   fit.shape_only_after_cpu(set(listed))), "CAL-V"))
    put("ELU", R("elu.dtype", "ELU: IFM and OFM int8 with equal shapes", _int8_equal_shapes("int8")))
    put("GELU", R("gelu.dtype", "GELU: IFM and OFM int8 or uint8 with equal shapes", _int8_equal_shapes("int8", "uint8")))
    put("LOG", R("log.dtype", "LOG: IFM and OFM int8 or int16 with equal shapes", _int8_equal_shapes("int8", "int16")))
    for op in ("MAXIMUM", "MINIMUM"):
        put(op, R("minmax.qparams", "MAXIMUM/MINIMUM: both inputs must have the output's quantization parameters", _minmax_qparams))
    if u55:
        put("ARG_MAX", R("argmax.depth", "ARG_MAX: along the depth axis with depth ≤ {argmax_depth}", _argmax, ("run argmax on the host",)))
    put("UNIDIRECTIONAL_SEQUENCE_LSTM", R("lstm.variant", "LSTM: no peephole, projection, gate normalisation or implicit gates", _lstm))
    if not u55:
        put("GATHER", R("gather.axis", "GATHER: axis must equal batch_dims", _gather_u85))
    fused = R("qdq.fused", "a quantize/dequantize survives conversion only where it does not wrap an int8 op; "
              "DEQUANTIZE is not in Vela's list and a float-input QUANTIZE is a 32-bit feature map", _qdq_fused,
              ("keep the whole graph int8 between the model input and output",))
    ops["DEQUANTIZE"] = OpSupport("DEQUANTIZE", NPU, (fused,), source="VELA")
    put("QUANTIZE", fused)
    io = OpSupport("IO_QUANTIZE", Verdict.FOLDED, reason="a converter run with int8 input/output types (the usual Vela flow) removes "
                   "this model-boundary quantize/dequantize: the application exchanges int8 data", source="CONV")
    ops.update(fit.lowered_ops(name, set(listed)))
    ops["IO_QUANTIZE"] = io
    ops["IO_DEQUANTIZE"] = OpSupport("IO_DEQUANTIZE", io.status, reason=io.reason, source="CONV")
    notes = ["ONNX models are judged as the int8 TFLite file a standard ONNX→TFLite converter produces (QDQ pairs fuse into int8 ops)"]
    if u55:
        notes.append("U55 and U65 share Vela's rule set; the U65 adds an AXI interface for external memory")
    return Profile(
        name=name, title=f"{title} (Vela 5.2.0, {macs} MACs/cycle)", vendor="Arm",
        summary="Int8/int16 TFLite models compiled by Vela; operators that break a constraint (or are not listed) are scheduled on the CPU by TensorFlow Lite Micro.",
        fallback=Fallback.CPU, limits=lim, ops=ops, executes=Executes.INT8, family="ethos-u", compiler="vela",
        # Vela's library checks (the vela_checks worker) are its U55/U65 rule set: "auto" judges U85 by the compile
        measure_judges=("vela-checks", "compile") if u55 else ("compile", "vela-checks"),
        # ARG_MAX runs on the NPU along depth, TopK does not; MEAN/REDUCE_MAX map; GELU via TFLite GELU
        rewrite_rules=common.REWRITE_COMMON + ("reduce_keepdims", "topk1_to_argmax", "gelu_tanh"),
        label=name.replace("ethos-", ""), unknown=OpSupport("*", CPU, reason="{op} is not in Vela 5.2.0's supported-operator list: it is scheduled on the CPU", source="VELA"),
        graph_rules=graph_rules(gen, name), sources=dict(SOURCES), input_formats=("tflite",),
        judged_formats=("onnx", "tflite"), op_key=fit.op_key, notes=tuple(notes),
    )


def profiles() -> dict[str, Profile]:
    return {name: build(name) for name in CONFIGS}

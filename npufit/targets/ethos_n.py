"""Arm Ethos-N78: what Arm's Ethos-N support library (driver stack 25.03, library 6.0.0) accepts, measured by
`npufit probe --compiler ethos-n` (source N-LIB, docs/probe/ethos-n78-measured.json), with TVM's flow where it
differs and a seed measured it (targets.md §2).

The support library is the compiler under TVM's BYOC `ethos-n` target and Arm NN's Ethos-N backend. Rules first
written from TVM's pattern table and Arm's documentation (N-PY, N-API, N-SL) were corrected where the library
answered otherwise. One TVM-flow rule stays: TVM imports an int8 LEAKY_RELU as dequantize → leaky_relu →
quantize and runs that island on the host (seed 001, N-KOR), while the library itself supports int8 LeakyReLU.
Fallbacks run on the host CPU (verdict `cpu`). Ops are keyed in TFLite vocabulary (ONNX nodes are mapped first).
"""
from __future__ import annotations

from fractions import Fraction

from ..graph import quant
from ..graph.model import NodeView
from . import common, tflite_map as tm
from .base import Executes, Fallback, OpSupport, Profile, Rule, Verdict

NPU, CPU = Verdict.NPU, Verdict.CPU
N = "ethos-n78"
# The N78 configurations Arm's support library compiles for (its EthosNVariant names); `ethos-n78-<key>` names one
VARIANTS = {"1tops-2ple": "Ethos-N78_1TOPS_2PLE_RATIO", "1tops-4ple": "Ethos-N78_1TOPS_4PLE_RATIO",
            "2tops-2ple": "Ethos-N78_2TOPS_2PLE_RATIO", "2tops-4ple": "Ethos-N78_2TOPS_4PLE_RATIO",
            "4tops-2ple": "Ethos-N78_4TOPS_2PLE_RATIO", "4tops-4ple": "Ethos-N78_4TOPS_4PLE_RATIO",
            "8tops-2ple": "Ethos-N78_8TOPS_2PLE_RATIO"}

SOURCES = {
    "N-PY": "apache/tvm python/tvm/relay/op/contrib/ethosn.py @ v0.13.0 (97c5de63): pattern table and op attributes",
    "N-API": "apache/tvm src/relay/backend/contrib/ethosn/ethosn_api.cc @ v0.13.0: TVM-side checks",
    "N-CE": "apache/tvm src/relay/backend/contrib/ethosn/convert_equivalent.cc @ v0.13.0",
    "N-SL": "Arm Ethos-N Driver Stack operator support text (copy in koreaygj/ethos-vision-optimizer docs/ethos-n/npu_supported_op.md @ d025d9c0)",
    "N-KOR": "koreaygj/ethos-vision-optimizer models/npu_report @ d025d9c0 (seed 001: measured TVM + Ethos-N78 partitions)",
    "N-LIB": "Arm Ethos-N support library 6.0.0 (ARM-software/ethos-n-driver-stack 25.03, 6834c826): IsXxxSupported / "
             "Compile() measured by `npufit probe --compiler ethos-n` (docs/probe/ethos-n78-measured.json)",
}

LIMITS = {
    "dtypes": common.Choices(("int8", "uint8")),
    "max_rank": 4,
    "batch": 1,
    "conv_kernels": common.Choices((1, 2, 3, 5, 7, 9)),
    "conv_strides": common.Choices((1, 2)),
    "big_kernel": 7,
    "big_kernel_stride": 1,  # kernels above big_kernel only with this stride
    "depth_multiplier": 1,
    "transpose_conv_stride": 2,
    "split_channel_multiple": 16,
    "mean_sizes": common.Choices((7, 8)),
    "mean_output": 1,  # a global mean reduces H and W to this size
    "avgpool_kernel": 3, "avgpool_stride": 1,  # the one non-global average pooling (SAME)
    "maxpool_kernels": common.Choices((1, 2, 3)), "maxpool_stride": 2,  # square kernels at stride 2
    "maxpool_unit_stride": 1,  # ... or any square kernel up to the s1 limits at stride 1
    "maxpool_s1_valid_max": 9,
    "maxpool_s1_same_max": 17,
    "maxpool_3x3_max_width": 417,
    "sigmoid_scale": "1/256", "sigmoid_zero_points": {"int8": -128, "uint8": 0},
    "tanh_scale": "1/128", "tanh_zero_points": {"int8": 0, "uint8": 128},
    "depth_to_space_block": 2,
    "transpose_sram_bytes": 1024 * 1024,  # the N78 4TOPS/4PLE SRAM: a transposed tensor must fit it (N-LIB)
    # ops TVM's frontends import as dequantize -> float op -> quantize even in an int8 model
    "float_ops": ("LOGISTIC", "TANH", "LEAKY_RELU", "SOFTMAX", "LOG_SOFTMAX", "HARD_SWISH", "ELU", "GELU", "EXP", "LOG",
                  "SQRT", "RSQRT", "POW", "ERF", "SIN", "COS"),
}


def float_op(node: NodeView) -> bool:
    return tm.tflite_op(node) in LIMITS["float_ops"]


def host_island(node: NodeView) -> bool:
    """A float island that no Ethos-N composite claims: it runs on the host with its dequantize/quantize."""
    if not quant.is_float_island(node, float_op):
        return False
    op = tm.tflite_op(node)
    if op == "LOGISTIC":
        return _sigmoid(node, LIMITS) is not None
    if op == "TANH":
        return _tanh(node, LIMITS) is not None
    return True  # LEAKY_RELU (see its rule) and ops without a pattern


def _island_qparams(node: NodeView, zps: dict[str, int], scale_text: str) -> str | None:
    """Output quantization of the island's quantize (ONNX QDQ) or of the int8 output tensor (TFLite)."""
    qs = quant.q_consumers(node)
    if qs:
        q = qs[0]
        sc = common.const_scalar(q, 1)
        zp = common.const_scalar(q, 2) if len(q.inputs) > 2 and q.inputs[2] else 0.0
        dtype = q.output_dtype(0) or (q.input_dtype(2) if len(q.inputs) > 2 else "uint8")
    else:
        t = node.output(0)
        if t is None or t.quant is None:
            return None
        sc, zp, dtype = t.quant.scale[0], t.quant.zero_point[0], t.dtype
    want, scale = zps.get(dtype or "int8", 0), float(Fraction(scale_text))
    if sc is None or zp is None:
        return None
    if int(zp) != want or abs(sc - scale) > 1e-9:
        return f"output scale {sc:.6g}, zero point {int(zp)}; needs {scale:.6g}, {want}"
    return None


# -- graph rules ---------------------------------------------------------------------------------

def _dtype(node: NodeView, lim) -> str | None:
    d = quant.exec_dtype(node)
    if d is None or d in lim["dtypes"]:
        return None
    return f"computes in {d}"


def _batch(node: NodeView, lim) -> str | None:
    for s in (tm.in_shape(node), tm.out_shape(node)):
        if s and len(s) >= 2 and isinstance(s[0], int) and s[0] != lim["batch"]:
            return f"batch {s[0]}"
    return None


def _rank(node: NodeView, lim) -> str | None:
    r = max(common.ranks(node), default=0)
    return f"rank {r}" if r > lim["max_rank"] else None


GRAPH_RULES = (
    Rule(f"{N}.dtype", "Ethos-N tensors must be {dtypes[0]} or {dtypes[1]} (int32 only for bias): a float model never offloads",
         _dtype, CPU, ("quantize the model to int8 first (npufit quantize, or an int8 TFLite export)",), "N-API"),
    Rule(f"{N}.batch", "batch size must be {batch}", _batch, CPU, ("export with batch 1 and loop over the batch on the host",), "N-API"),
    Rule(f"{N}.rank", "tensors must have at most {max_rank} dimensions", _rank, CPU, ("reshape to 4-D or fewer",), "N-API"),
)


# -- op rules ------------------------------------------------------------------------------------

def _conv_kernel(node, lim):
    k = tm.kernel(node)
    if k and any(x not in lim["conv_kernels"] for x in k):
        return f"kernel {common_fmt(k)}"
    return None


def _conv_stride(node, lim):
    s = tm.strides(node)
    if s[0] != s[-1] or s[0] not in lim["conv_strides"]:
        return f"stride {common_fmt(s)}"
    k = tm.kernel(node)
    if k and max(k) > lim["big_kernel"] and s[0] != lim["big_kernel_stride"]:
        return f"kernel {common_fmt(k)} with stride {s[0]}"
    return None


def _conv_dilation(node, lim):
    d = tm.dilations(node)
    return None if all(x == 1 for x in d) else f"dilation {common_fmt(d)}"


def _const_weights(node, lim):
    i = 3 if node.op_type == "QLinearConv" else 1
    return None if node.is_const(i) or _from_weight_dq(node, i) else "weights are computed at run time"


def _from_weight_dq(node, i):
    p = node.graph.producer(node.inputs[i]) if i < len(node.inputs) and node.inputs[i] else None
    return p is not None and quant.is_weight_dequantize(p)


def _depth_multiplier(node, lim):
    x, y = tm.in_shape(node), tm.out_shape(node)
    if x and y and isinstance(x[-1], int) and isinstance(y[-1], int) and y[-1] != lim["depth_multiplier"] * x[-1]:
        return f"channel multiplier {y[-1] // max(x[-1], 1)}"
    return None


def _tconv_stride(node, lim):
    s = tm.strides(node)
    return None if all(x == lim["transpose_conv_stride"] for x in s) else f"stride {common_fmt(s)}"


def _maxpool(node, lim):
    k, s, pad = tm.kernel(node), tm.strides(node), tm.padding(node)
    x = tm.in_shape(node)
    if not k:
        return None
    if s == [lim["maxpool_stride"]] * 2 and len(k) == 2 and k[0] == k[1] and k[0] in lim["maxpool_kernels"]:
        if k == [3, 3] and x and isinstance(x[2], int) and x[2] > lim["maxpool_3x3_max_width"]:
            return f"3x3/2 pooling on width {x[2]}"
        if k == [3, 3] and pad == "VALID" and not node.attr("ceil_mode", 0) and x and any(isinstance(d, int) and d % 2 == 0 for d in x[1:3]):
            return f"3x3/2 VALID pooling of an even {x[1]}x{x[2]} map"
        return None
    if s == [lim["maxpool_unit_stride"]] * 2 and k[0] == k[1]:
        cap = lim["maxpool_s1_valid_max"] if pad == "VALID" else lim["maxpool_s1_same_max"]
        return None if k[0] <= cap else f"pool {common_fmt(k)} stride 1 {pad}"
    return f"pool {common_fmt(k)} stride {common_fmt(s)} {pad}"


def _avgpool(node, lim):
    k, s, pad = tm.kernel(node), tm.strides(node), tm.padding(node)
    if k == [lim["avgpool_kernel"]] * 2 and s == [lim["avgpool_stride"]] * 2 and pad == "SAME":
        return None
    x = tm.in_shape(node)
    if x and len(x) == 4 and k == [x[1], x[2]] and k[0] == k[1] and k[0] in lim["mean_sizes"]:
        return None
    return f"pool {common_fmt(k)} stride {common_fmt(s)} {pad}"


def _mean(node, lim):
    x = tm.in_shape(node)
    if not x or len(x) != 4:
        return "input is not 4-D"
    if node.op_type not in ("GlobalAveragePool", "MEAN") or node.graph.format == "onnx":
        axes = common.reduce_axes(node) if node.graph.format == "onnx" and node.op_type != "GlobalAveragePool" else None
        if axes is not None and sorted(axes) != [2, 3]:
            return f"reduces axes {axes}"
    if x[1] != x[2] or x[1] not in lim["mean_sizes"]:
        return f"reduces a {x[1]}x{x[2]} map"
    return None


def _const_operand(node: NodeView):
    """(index of the constant input, its value) for a binary op, or (None, None)."""
    for i in (0, 1):
        if i < len(node.inputs) and (node.is_const(i) or _from_weight_dq(node, i)):
            p = node.graph.producer(node.inputs[i])
            v = node.const_value(i) if node.is_const(i) else (p.const_value(0) if p is not None else None)
            return i, v
    return None, None


def _add_const(node, lim):
    i, v = _const_operand(node)
    return None if i is None else _per_channel_const(node, i, v)


def _per_channel_const(node, i, v):
    if v is None:
        return None
    x = tm.in_shape(node, 1 - i)
    c = x[-1] if x else None
    n = int(v.size)
    if n == 1 or (isinstance(c, int) and n == c and max(v.shape, default=1) == n):
        return None
    return f"constant of shape {list(v.shape)}"


def _leaky(node, lim):
    a = node.attr("alpha", 0.01)
    if not 0.0 < float(a) < 1.0:
        return f"alpha {a}"
    if quant.is_float_island(node, float_op):
        return "dequantize → leaky_relu → quantize"
    return None


def _sigmoid(node, lim):
    return _island_qparams(node, lim["sigmoid_zero_points"], lim["sigmoid_scale"]) if quant.is_float_island(node, float_op) else None


def _tanh(node, lim):
    return _island_qparams(node, lim["tanh_zero_points"], lim["tanh_scale"]) if quant.is_float_island(node, float_op) else None


def _channel_ok(shapes, mult):
    for s in shapes:
        if s and isinstance(s[-1], int) and s[-1] % mult:
            return s[-1]
    return None


def _concat(node, lim):
    r = common.rank(node, output=True)
    axis = node.attr("axis", -1)
    axis = axis + r if (r and axis < 0) else axis
    return "concatenation along the batch axis" if r and axis == 0 else None


def _slice(node, lim):
    """A unit-stride slice along one axis (npufit lowers it as a Split, the library having no slice)."""
    x, y = tm.in_shape(node), tm.out_shape(node)
    steps = common.const_ints(node, 4) if node.graph.format == "onnx" else common.const_ints(node, 3)
    if node.graph.format == "tflite" and node.op_type == "SLICE":
        steps = None
    if steps and any(s != 1 for s in steps):
        return f"step {common_fmt(steps)}"
    if x and y and len(x) == len(y):
        cut = sum(1 for a, b in zip(x, y) if a != b)
        if cut > 1:
            return f"slices {cut} axes"
    return None


def _fc_per_channel(node, lim):
    i = 3 if node.op_type == "QLinearMatMul" else 1
    t = node.input(i)
    if t is not None and t.dtype in ("float32", "float16") and node.is_const(i):
        return "per-channel weight scales (npufit's int8 conversion quantizes fully connected weights per output channel)"
    p = node.graph.producer(node.inputs[i]) if i < len(node.inputs) and node.inputs[i] else None
    if p is not None and quant.is_weight_dequantize(p):
        t = p.input(1)  # the DQ's scale tensor
        return "per-channel weight scales" if t is not None and t.shape and max(t.shape, default=1) > 1 else None
    if t is not None and t.quant is not None and len(t.quant.scale) > 1:
        return "per-channel weight scales"
    return None


def _mul_operands(node, lim):
    i, _ = _const_operand(node)
    if i is not None:
        return _add_const(node, lim)
    a, b = tm.in_shape(node, 0), tm.in_shape(node, 1)
    return f"broadcasts {a} with {b}" if a and b and list(a) != list(b) else None


def _transpose_size(node, lim):
    # measured boundary: permute (0,1,3,2) of a 16x256x256 map is 'too large'; (0,2,3,1) and (0,3,1,2) passed at 256
    if common.transpose_perm(node) != [0, 1, 3, 2]:
        return None
    x = tm.in_shape(node)
    if not x or len(x) != 4 or not all(isinstance(d, int) for d in x):
        return None
    n = x[0] * (-(-x[1] // 8) * 8) * (-(-x[2] // 8) * 8) * (-(-x[3] // 16) * 16)  # NHWCB bricks: 8x8x16
    return f"{n} bytes in SRAM bricks" if n >= lim["transpose_sram_bytes"] else None


def _pad_hw(node, lim):
    p = common.const_array(node, 1)
    if p is None or p.size != 8:
        return None
    p = p.reshape(-1)
    # ONNX: [n0, c0, h0, w0, n1, c1, h1, w1]; TFLite: [[n0, n1], [h0, h1], [w0, w1], [c0, c1]]
    bc = (p[0], p[1], p[4], p[5]) if node.graph.format == "onnx" else (p[0], p[1], p[6], p[7])
    return None if not any(bc) else "pads the batch or channel axis"


def _split(node, lim):
    bad = _channel_ok([tm.out_shape(node, i) for i in range(len(node.outputs))], lim["split_channel_multiple"])
    return None if bad is None else f"an output has {bad} channels"


def _resize(node, lim):
    x, y = tm.in_shape(node), tm.out_shape(node)
    if not x or not y or len(x) != 4:
        return None
    for a, b in ((x[1], y[1]), (x[2], y[2])):
        if isinstance(a, int) and isinstance(b, int) and b not in (2 * a, 2 * a - 1):
            return f"{x[1]}x{x[2]} → {y[1]}x{y[2]}"
    return None


def _d2s(node, lim):
    b = node.attr("blocksize", node.attr("block_size", 2))
    if node.graph.format == "onnx" and node.attr("mode", "DCR") != "DCR":
        return f"mode {node.attr('mode')}"
    return None if int(b) == lim["depth_to_space_block"] else f"block size {b}"


def _qdq_absorbed(node, lim):
    if quant.absorbed(node, host_island):
        return None
    return "standalone" if not any(host_island(c) for c in node.graph.successors(node)) and not any(
        host_island(p) for p in node.graph.predecessors(node)) else "bounds a host float island"


def common_fmt(v):
    return "x".join(str(x) for x in v)


def _r(rid, text, fn, fix=(), src="N-SL", on_fail=CPU, fix_rules=()):
    return Rule(f"{N}.{rid}", text, fn, on_fail, tuple(fix), src, tuple(fix_rules))


CONV_RULES = (
    _r("conv.kernel", "convolution kernel height and width must each be one of {conv_kernels}", _conv_kernel,
       ("use 3x3/5x5/7x7 kernels (split a 4x4/6x6 kernel or pad it to the next supported size)",)),
    _r("conv.stride", "convolution stride must be equal in H and W and one of {conv_strides}; kernels larger than {big_kernel} only with stride {big_kernel_stride}",
       _conv_stride, ("use stride 1 or 2 (follow a stride-1 conv with a 2x2 max pool for larger strides)",)),
    _r("conv.dilation", "dilated convolution is not offloaded (dilation must be 1)", _conv_dilation,
       ("replace dilation by a larger kernel or a space-to-depth rewrite",), "N-API"),
    _r("conv.weights", "convolution weights and quantization parameters must be constants", _const_weights, (), "N-PY"),
)


def _ops() -> dict[str, OpSupport]:
    ops: dict[str, OpSupport] = {}

    def add(op, status=NPU, rules=(), reason="", fix=(), src="N-PY", note=""):
        ops[op] = OpSupport(op, status, tuple(rules), reason, tuple(fix), src, note)

    add("CONV_2D", rules=CONV_RULES, note="qnn_conv2d composite (pad + conv + bias + requantize)")
    add("DEPTHWISE_CONV_2D", rules=CONV_RULES + (_r("depthwise.multiplier", "depthwise convolution channel multiplier must be {depth_multiplier}", _depth_multiplier),),
        note="qnn_conv2d composite, channel multiplier 1")
    add("TRANSPOSE_CONV", rules=(CONV_RULES[0], _r("transpose_conv.stride", "transposed convolution stride must be {transpose_conv_stride}",
                                                  _tconv_stride, ("use Resize (nearest) + Conv instead",))), note="qnn_conv2d_transpose composite")
    add("FULLY_CONNECTED", rules=(_r("fc.weights", "fully connected weights must be constants", _const_weights, (), "N-PY"),
                                  _r("fc.per_channel", "fully connected weights must have one quantization scale "
                                     "(the library: 'Multiple quantization scales is not supported for FullyConnected')",
                                     _fc_per_channel, ("quantize the fully connected weights per tensor",), "N-LIB")),
        note="qnn_fc composite")
    add("BATCH_MATMUL", CPU, reason="activation × activation matmul has no Ethos-N pattern: it runs on the host",
        fix=("keep attention / matmul blocks on the host, or restructure to a constant-weight FC",))
    add("MAX_POOL_2D", rules=(_r("maxpool.config", "max pooling supports {maxpool_kernels:#x#|/} with stride {maxpool_stride} (3x3 up to width {maxpool_3x3_max_width}, "
                                 "and VALID 3x3/2 only on odd input sizes), or stride {maxpool_unit_stride} up to {maxpool_s1_valid_max}x{maxpool_s1_valid_max} "
                                 "VALID / {maxpool_s1_same_max}x{maxpool_s1_same_max} SAME", _maxpool,
                                 ("use 2x2/2 or 3x3/2 pooling",), "N-LIB"),))
    add("AVERAGE_POOL_2D", rules=(_r("avgpool.config", "average pooling supports only {avgpool_kernel}x{avgpool_kernel} stride {avgpool_stride} SAME, "
                                     "or a global {mean_sizes:#x#|/} mean", _avgpool,
                                     ("pool down to 7x7 or 8x8 before a global average",)),), note="qnn_avg_pool2d composite")
    add("MEAN", rules=(_r("mean.size", "mean over H,W supports only {mean_sizes[0]}x{mean_sizes[0]} or {mean_sizes[1]}x{mean_sizes[1]} inputs reduced to {mean_output}x{mean_output}", _mean,
                          ("pool down to 7x7 or 8x8 before the global average",)),), note="qnn_mean composite")
    add("ADD", rules=(_r("add.constant", "an addition with a constant needs a scalar or a per-channel [C] constant", _add_const, (), "N-CE"),))
    add("MUL", rules=(_r("mul.constant", "a multiplication by a constant needs a scalar or a per-channel [C] constant; "
                         "activation × activation multiplies on the NPU only with equal shapes (the library: 'Cannot stretch "
                         "along the requested dimensions')", _mul_operands, ("expand the smaller operand to the full shape",), "N-LIB"),))
    add("LEAKY_RELU", rules=(_r("leaky_relu.island",
                                "TVM flow: int8 LeakyReLU is imported as dequantize → leaky_relu → quantize and in the measured TVM + "
                                "Ethos-N78 flow these float islands run on the host (seed 001: 402 × 3 extra ops); the Ethos-N support "
                                "library itself supports int8 LeakyReLU (N-LIB: npufit compile --target ethos-n78 keeps it on the NPU)", _leaky,
                                ("use ReLU or ReLU6 activations (the ReLU variants of seed 001 reached 99% NPU)",), "N-KOR"),))
    add("LOGISTIC", rules=(_r("sigmoid.qparams", "sigmoid offloads (qnn_sigmoid) only when its output quantization is scale {sigmoid_scale} "
                              "with zero point {sigmoid_zero_points[int8]} (int8) / {sigmoid_zero_points[uint8]} (uint8)", _sigmoid, ("quantize the sigmoid output with scale 1/256",), "N-API"),))
    add("TANH", rules=(_r("tanh.qparams", "tanh offloads (qnn_tanh) only when its output quantization is scale {tanh_scale} "
                          "with zero point {tanh_zero_points[int8]} (int8) / {tanh_zero_points[uint8]} (uint8)", _tanh, ("quantize the tanh output with scale 1/128",), "N-API"),))
    for op in ("RELU", "RELU6", "RELU_N1_TO_1", "RELU_0_TO_1", "MINIMUM"):
        add(op, note="clip")
    add("CONCATENATION", rules=(_r("concat.axis", "concatenation cannot run along the batch axis", _concat,
                                   ("concatenate along channels, height or width",), "N-LIB"),))
    for op in ("STRIDED_SLICE", "SLICE"):
        add(op, rules=(_r("slice.unit_stride", "a slice runs on the NPU with unit steps along one axis (npufit lowers it as "
                          "a Split of the support library)", _slice, ("slice one axis at a time with step 1",), "N-LIB"),))
    for op in ("SPLIT", "SPLIT_V"):
        add(op, rules=(_r("split.channels", "channel split needs every output's channel count to be a multiple of {split_channel_multiple}",
                          _split, ("pad channels to a multiple of 16",)),))
    for op in ("RESHAPE", "SQUEEZE", "EXPAND_DIMS"):
        add(op)
    add("DEPTH_TO_SPACE", rules=(_r("depth_to_space.block", "depth-to-space needs block size {depth_to_space_block} (DCR mode)", _d2s),))
    add("RESIZE_NEAREST_NEIGHBOR", rules=(_r("resize.scale", "nearest-neighbour resize needs output height/width = 2n or 2n−1 of the input",
                                             _resize, ("upsample by exactly 2",)),), note="qnn_resize pattern")
    add("RESIZE_BILINEAR", rules=(_r("resize.scale", "resize needs output height/width = 2n or 2n−1 of the input",
                                     _resize, ("upsample by exactly 2",), "N-LIB"),))
    add("PAD", rules=(_r("pad.axes", "padding runs on the NPU for height and width only (fused into the convolution it feeds, "
                         "or as the library's standalone padding)", _pad_hw, ("pad only height and width",), "N-LIB"),))
    add("TRANSPOSE", rules=(_r("transpose.size", "a {max_rank}-D transpose runs on the NPU; swapping the last two axes needs the tensor "
                               "to fit the {transpose_sram_bytes}-byte SRAM (the library: 'The tensors are too large')", _transpose_size,
                               ("transpose smaller tiles, or keep the model NHWC end to end",), "N-LIB"),))
    add("SOFTMAX", CPU, reason="softmax has no Ethos-N pattern: it runs on the host", fix=("move softmax into post-processing",))
    qdq_rule = _r("qdq.standalone", "a quantize/dequantize is offloaded only inside an int8 kernel pattern; one at a model input/output or "
                  "around a host float island runs on the host", _qdq_absorbed, ("feed int8 input and read int8 outputs",), "N-PY")
    add("QUANTIZE", rules=(qdq_rule,))
    add("DEQUANTIZE", rules=(qdq_rule,))
    for op in ("IO_QUANTIZE", "IO_DEQUANTIZE"):
        add(op, CPU, reason="quantize/dequantize at a model input/output is a standalone qnn op: TVM runs it on the host",
            fix=("feed int8 input and read int8 outputs",))
    return ops


def profiles() -> dict[str, Profile]:
    return {N: Profile(
        name=N, title="Arm Ethos-N78 (Ethos-N support library 6.0.0, driver stack 25.03; TVM flow for LeakyReLU)", vendor="Arm",
        summary="Int8/uint8 NHWC models as Arm's Ethos-N support library takes them (measured: npufit compile --target ethos-n78); "
                "TVM's flow keeps int8 LeakyReLU as a host float island; anything else the library refuses runs on the host CPU.",
        fallback=Fallback.CPU, limits=dict(LIMITS), ops=_ops(), executes=Executes.INT8, family="ethos-n", compiler="ethos-n",
        aliases=tuple(f"{N}-{v}" for v in VARIANTS),  # one profile for every N78 configuration
        # TVM BYOC offloads only Conv/pool/FC patterns; reductions, TopK and ArgMax stay on the CPU: the cleanups only
        rewrite_rules=common.REWRITE_COMMON, label="n78", unknown=OpSupport("*", CPU, reason="{op} has no operation in the Ethos-N support library (nor a TVM pattern): it runs on the host CPU",
                                                   source="N-LIB"),
        graph_rules=GRAPH_RULES, sources=dict(SOURCES), input_formats=("tflite", "onnx"),
        judged_formats=("onnx", "tflite"), op_key=tm.tflite_op,
        notes=("ONNX ops are judged as the TFLite/Relay QNN ops they import as (Conv → CONV_2D/qnn.conv2d, Sigmoid → LOGISTIC, ...)",
               "NPU partitions that contain no multiply-accumulate may be inlined back to the CPU when the compiler option is set (N-INL)"),
    )}

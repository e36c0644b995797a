"""Ethos-N78 checks (the rule tables are in rules.py).

Each check reads its numbers from Profile.limits, so the sentence the user sees is formatted from the same limits it
checks. A check returns None when the node passes, else a short detail. Ops are keyed in TFLite vocabulary (ONNX
nodes are mapped first by tflite_map); a broken rule runs the op on the host CPU.
"""

from __future__ import annotations

from fractions import Fraction
from functools import partial

from ...graph import quant
from ...graph.model import NodeView
from .. import common
from .. import tflite_map as tm
from ..base import Limits, Verdict, fmt_list

CPU = Verdict.CPU


def float_op(node: NodeView, lim: Limits) -> bool:
    """An op TVM's frontends import as dequantize -> float op -> quantize even in an int8 model."""
    return tm.tflite_op(node) in lim["float_ops"]


def _floats(lim: Limits):
    return partial(float_op, lim=lim)


def host_island(node: NodeView, lim: Limits) -> bool:
    """A float island that no Ethos-N composite claims: it runs on the host with its dequantize/quantize."""
    if not quant.is_float_island(node, _floats(lim)):
        return False
    op = tm.tflite_op(node)
    if op == "LOGISTIC":
        return sigmoid_qparams(node, lim) is not None
    if op == "TANH":
        return tanh_qparams(node, lim) is not None
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


def dtype(node: NodeView, lim: Limits) -> str | None:
    d = quant.exec_dtype(node)
    if d is None or d in lim["dtypes"]:
        return None
    return f"computes in {d}"


def batch(node: NodeView, lim: Limits) -> str | None:
    # axis 0 is the batch in NCHW and in NHWC alike: the shapes as stored, not tm.in_shape's NHWC copies (every node)
    for s in (node.input_shape(0), node.output_shape(0)):
        if s and len(s) >= 2 and isinstance(s[0], int) and s[0] != lim["batch"]:
            return f"batch {s[0]}"
    return None


def rank(node: NodeView, lim: Limits) -> str | None:
    r = common.max_rank(node)
    return f"rank {r}" if r > lim["max_rank"] else None


# -- op rules ------------------------------------------------------------------------------------


def conv_kernel(node: NodeView, lim: Limits) -> str | None:
    k = tm.kernel(node)
    if k and any(x not in lim["conv_kernels"] for x in k):
        return f"kernel {fmt_list(k)}"
    return None


def conv_stride(node: NodeView, lim: Limits) -> str | None:
    s = tm.strides(node)
    if s[0] != s[-1] or s[0] not in lim["conv_strides"]:
        return f"stride {fmt_list(s)}"
    k = tm.kernel(node)
    if k and max(k) > lim["big_kernel"] and s[0] != lim["big_kernel_stride"]:
        return f"kernel {fmt_list(k)} with stride {s[0]}"
    return None


def conv_dilation(node: NodeView, lim: Limits) -> str | None:
    d = tm.dilations(node)
    return None if all(x == 1 for x in d) else f"dilation {fmt_list(d)}"


def const_weights(node: NodeView, lim: Limits) -> str | None:
    i = 3 if node.op_type == "QLinearConv" else 1
    return None if node.is_const(i) or _from_weight_dq(node, i) else "weights are computed at run time"


def _from_weight_dq(node: NodeView, i):
    if not node.graph.has_any(quant.DEQUANTIZE_OPS):  # a float graph: no producer to look up (every Add/Mul asks)
        return False
    p = node.graph.producer(node.inputs[i]) if i < len(node.inputs) and node.inputs[i] else None
    return p is not None and quant.is_weight_dequantize(p)


def depthwise_multiplier(node: NodeView, lim: Limits) -> str | None:
    x, y = tm.in_shape(node), tm.out_shape(node)
    if x and y and isinstance(x[-1], int) and isinstance(y[-1], int) and y[-1] != lim["depth_multiplier"] * x[-1]:
        return f"channel multiplier {y[-1] // max(x[-1], 1)}"
    return None


def transpose_conv_stride(node: NodeView, lim: Limits) -> str | None:
    s = tm.strides(node)
    return None if all(x == lim["transpose_conv_stride"] for x in s) else f"stride {fmt_list(s)}"


def maxpool_config(node: NodeView, lim: Limits) -> str | None:
    k, s, pad = tm.kernel(node), tm.strides(node), tm.padding(node)
    x = tm.in_shape(node)
    if not k:
        return None
    if s == [lim["maxpool_stride"]] * 2 and len(k) == 2 and k[0] == k[1] and k[0] in lim["maxpool_kernels"]:
        if k == [3, 3] and x and isinstance(x[2], int) and x[2] > lim["maxpool_3x3_max_width"]:
            return f"3x3/2 pooling on width {x[2]}"
        if (
            k == [3, 3]
            and pad == "VALID"
            and not node.attr("ceil_mode", 0)
            and x
            and any(isinstance(d, int) and d % 2 == 0 for d in x[1:3])
        ):
            return f"3x3/2 VALID pooling of an even {x[1]}x{x[2]} map"
        return None
    if s == [lim["maxpool_unit_stride"]] * 2 and k[0] == k[1]:
        cap = lim["maxpool_s1_valid_max"] if pad == "VALID" else lim["maxpool_s1_same_max"]
        return None if k[0] <= cap else f"pool {fmt_list(k)} stride 1 {pad}"
    return f"pool {fmt_list(k)} stride {fmt_list(s)} {pad}"


def avgpool_config(node: NodeView, lim: Limits) -> str | None:
    k, s, pad = tm.kernel(node), tm.strides(node), tm.padding(node)
    if k == [lim["avgpool_kernel"]] * 2 and s == [lim["avgpool_stride"]] * 2 and pad == "SAME":
        return None
    x = tm.in_shape(node)
    if x and len(x) == 4 and k == [x[1], x[2]] and k[0] == k[1] and k[0] in lim["mean_sizes"]:
        return None
    return f"pool {fmt_list(k)} stride {fmt_list(s)} {pad}"


def mean_size(node: NodeView, lim: Limits) -> str | None:
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
            v = node.const_value(i) if node.is_const(i) else None
            if v is None and p is not None and quant.is_weight_dequantize(p):
                v = p.const_value(0)  # a quantized constant (folded, its value not computed): the stored integers
            return i, v
    return None, None


def add_constant(node: NodeView, lim: Limits) -> str | None:
    i, v = _const_operand(node)
    return None if i is None else _per_channel_const(node, i, v)


def _per_channel_const(node: NodeView, i, v):
    if v is None:
        return None
    x = tm.in_shape(node, 1 - i)
    c = x[-1] if x else None
    n = int(v.size)
    if n == 1 or (isinstance(c, int) and n == c and max(v.shape, default=1) == n):
        return None
    return f"constant of shape {list(v.shape)}"


def leaky_relu_island(node: NodeView, lim: Limits) -> str | None:
    a = node.attr("alpha", 0.01)
    if not 0.0 < float(a) < 1.0:
        return f"alpha {a}"
    if quant.is_float_island(node, _floats(lim)):
        return "dequantize → leaky_relu → quantize"
    return None


def sigmoid_qparams(node: NodeView, lim: Limits) -> str | None:
    return (
        _island_qparams(node, lim["sigmoid_zero_points"], lim["sigmoid_scale"])
        if quant.is_float_island(node, _floats(lim))
        else None
    )


def tanh_qparams(node: NodeView, lim: Limits) -> str | None:
    return (
        _island_qparams(node, lim["tanh_zero_points"], lim["tanh_scale"])
        if quant.is_float_island(node, _floats(lim))
        else None
    )


def _channel_ok(shapes, mult):
    for s in shapes:
        if s and isinstance(s[-1], int) and s[-1] % mult:
            return s[-1]
    return None


def concat_axis(node: NodeView, lim: Limits) -> str | None:
    r = common.rank(node, output=True)
    axis = node.attr("axis", -1)
    axis = axis + r if (r and axis < 0) else axis
    return "concatenation along the batch axis" if r and axis == 0 else None


def slice_unit_stride(node: NodeView, lim: Limits) -> str | None:
    """A unit-stride slice along one axis (npufit lowers it as a Split, the library having no slice)."""
    x, y = tm.in_shape(node), tm.out_shape(node)
    steps = common.const_ints(node, 4) if node.graph.format == "onnx" else common.const_ints(node, 3)
    if node.graph.format == "tflite" and node.op_type == "SLICE":
        steps = None
    if steps and any(s != 1 for s in steps):
        return f"step {fmt_list(steps)}"
    if x and y and len(x) == len(y):
        cut = sum(1 for a, b in zip(x, y) if a != b)
        if cut > 1:
            return f"slices {cut} axes"
    return None


def fc_per_channel(node: NodeView, lim: Limits) -> str | None:
    i = 3 if node.op_type == "QLinearMatMul" else 1
    t = node.input(i)
    if t is not None and t.dtype in ("float32", "float16") and node.is_const(i):
        return (
            "per-channel weight scales (npufit's int8 conversion quantizes fully connected weights per output channel)"
        )
    p = node.graph.producer(node.inputs[i]) if i < len(node.inputs) and node.inputs[i] else None
    if p is not None and quant.is_weight_dequantize(p):
        t = p.input(1)  # the DQ's scale tensor
        return "per-channel weight scales" if t is not None and t.shape and max(t.shape, default=1) > 1 else None  # type: ignore[operator]
    if t is not None and t.quant is not None and len(t.quant.scale) > 1:
        return "per-channel weight scales"
    return None


def mul_constant(node: NodeView, lim: Limits) -> str | None:
    i, _ = _const_operand(node)
    if i is not None:
        return add_constant(node, lim)
    a, b = tm.in_shape(node, 0), tm.in_shape(node, 1)
    return f"broadcasts {a} with {b}" if a and b and list(a) != list(b) else None


def transpose_size(node: NodeView, lim: Limits) -> str | None:
    # measured boundary: permute (0,1,3,2) of a 16x256x256 map is 'too large'; (0,2,3,1) and (0,3,1,2) passed at 256
    if common.transpose_perm(node) != [0, 1, 3, 2]:
        return None
    x = tm.in_shape(node)
    if not x or len(x) != lim["max_rank"] or not all(isinstance(d, int) for d in x):
        return None
    n = x[0] * (-(-x[1] // 8) * 8) * (-(-x[2] // 8) * 8) * (-(-x[3] // 16) * 16)  # NHWCB bricks: 8x8x16
    return f"{n} bytes in SRAM bricks" if n >= lim["transpose_sram_bytes"] else None


def pad_axes(node: NodeView, lim: Limits) -> str | None:
    p = common.const_array(node, 1)
    if p is None or p.size != 8:
        return None
    p = p.reshape(-1)
    # ONNX: [n0, c0, h0, w0, n1, c1, h1, w1]; TFLite: [[n0, n1], [h0, h1], [w0, w1], [c0, c1]]
    bc = (p[0], p[1], p[4], p[5]) if node.graph.format == "onnx" else (p[0], p[1], p[6], p[7])
    return None if not any(bc) else "pads the batch or channel axis"


def split_channels(node: NodeView, lim: Limits) -> str | None:
    bad = _channel_ok([tm.out_shape(node, i) for i in range(len(node.outputs))], lim["split_channel_multiple"])
    return None if bad is None else f"an output has {bad} channels"


def resize_scale(node: NodeView, lim: Limits) -> str | None:
    x, y = tm.in_shape(node), tm.out_shape(node)
    if not x or not y or len(x) != 4:
        return None
    for a, b in ((x[1], y[1]), (x[2], y[2])):
        if isinstance(a, int) and isinstance(b, int) and b not in (2 * a, 2 * a - 1):
            return f"{x[1]}x{x[2]} → {y[1]}x{y[2]}"
    return None


def depth_to_space_block(node: NodeView, lim: Limits) -> str | None:
    b = node.attr("blocksize", node.attr("block_size", 2))
    if node.graph.format == "onnx" and node.attr("mode", "DCR") != "DCR":
        return f"mode {node.attr('mode')}"
    return None if int(b) == lim["depth_to_space_block"] else f"block size {b}"


def qdq_standalone(node: NodeView, lim: Limits) -> str | None:
    if quant.absorbed(node, partial(host_island, lim=lim)):
        return None
    g = node.graph
    if any(host_island(c, lim) for c in g.successors(node)) or any(host_island(p, lim) for p in g.predecessors(node)):
        return "bounds a host float island"
    return "standalone"

"""Ethos-N78 rule functions and Rule tables (ids carry the profile name).

Each check reads its numbers from Profile.limits, so the sentence the user sees is formatted from the same limits it
checks. A check returns None when the node passes, else a short detail. Ops are keyed in TFLite vocabulary (ONNX
nodes are mapped first by tflite_map); a broken rule runs the op on the host CPU.
"""
from __future__ import annotations

from fractions import Fraction
from functools import partial

from ...graph import quant
from ...graph.model import NodeView
from .. import common, tflite_map as tm
from ..base import Limits, Rule, RuleMaker, Verdict, fmt_list

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
        return _sigmoid(node, lim) is not None
    if op == "TANH":
        return _tanh(node, lim) is not None
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

def _dtype(node: NodeView, lim: Limits) -> str | None:
    d = quant.exec_dtype(node)
    if d is None or d in lim["dtypes"]:
        return None
    return f"computes in {d}"


def _batch(node: NodeView, lim: Limits) -> str | None:
    # axis 0 is the batch in NCHW and in NHWC alike: the shapes as stored, not tm.in_shape's NHWC copies (every node)
    for s in (node.input_shape(0), node.output_shape(0)):
        if s and len(s) >= 2 and isinstance(s[0], int) and s[0] != lim["batch"]:
            return f"batch {s[0]}"
    return None


def _rank(node: NodeView, lim: Limits) -> str | None:
    r = common.max_rank(node)
    return f"rank {r}" if r > lim["max_rank"] else None


# -- op rules ------------------------------------------------------------------------------------

def _conv_kernel(node: NodeView, lim: Limits) -> str | None:
    k = tm.kernel(node)
    if k and any(x not in lim["conv_kernels"] for x in k):
        return f"kernel {fmt_list(k)}"
    return None


def _conv_stride(node: NodeView, lim: Limits) -> str | None:
    s = tm.strides(node)
    if s[0] != s[-1] or s[0] not in lim["conv_strides"]:
        return f"stride {fmt_list(s)}"
    k = tm.kernel(node)
    if k and max(k) > lim["big_kernel"] and s[0] != lim["big_kernel_stride"]:
        return f"kernel {fmt_list(k)} with stride {s[0]}"
    return None


def _conv_dilation(node: NodeView, lim: Limits) -> str | None:
    d = tm.dilations(node)
    return None if all(x == 1 for x in d) else f"dilation {fmt_list(d)}"


def _const_weights(node: NodeView, lim: Limits) -> str | None:
    i = 3 if node.op_type == "QLinearConv" else 1
    return None if node.is_const(i) or _from_weight_dq(node, i) else "weights are computed at run time"


def _from_weight_dq(node: NodeView, i):
    if not node.graph.has_any(quant.DEQUANTIZE_OPS):  # a float graph: no producer to look up (every Add/Mul asks)
        return False
    p = node.graph.producer(node.inputs[i]) if i < len(node.inputs) and node.inputs[i] else None
    return p is not None and quant.is_weight_dequantize(p)


def _depth_multiplier(node: NodeView, lim: Limits) -> str | None:
    x, y = tm.in_shape(node), tm.out_shape(node)
    if x and y and isinstance(x[-1], int) and isinstance(y[-1], int) and y[-1] != lim["depth_multiplier"] * x[-1]:
        return f"channel multiplier {y[-1] // max(x[-1], 1)}"
    return None


def _tconv_stride(node: NodeView, lim: Limits) -> str | None:
    s = tm.strides(node)
    return None if all(x == lim["transpose_conv_stride"] for x in s) else f"stride {fmt_list(s)}"


def _maxpool(node: NodeView, lim: Limits) -> str | None:
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
        return None if k[0] <= cap else f"pool {fmt_list(k)} stride 1 {pad}"
    return f"pool {fmt_list(k)} stride {fmt_list(s)} {pad}"


def _avgpool(node: NodeView, lim: Limits) -> str | None:
    k, s, pad = tm.kernel(node), tm.strides(node), tm.padding(node)
    if k == [lim["avgpool_kernel"]] * 2 and s == [lim["avgpool_stride"]] * 2 and pad == "SAME":
        return None
    x = tm.in_shape(node)
    if x and len(x) == 4 and k == [x[1], x[2]] and k[0] == k[1] and k[0] in lim["mean_sizes"]:
        return None
    return f"pool {fmt_list(k)} stride {fmt_list(s)} {pad}"


def _mean(node: NodeView, lim: Limits) -> str | None:
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


def _add_const(node: NodeView, lim: Limits) -> str | None:
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


def _leaky(node: NodeView, lim: Limits) -> str | None:
    a = node.attr("alpha", 0.01)
    if not 0.0 < float(a) < 1.0:
        return f"alpha {a}"
    if quant.is_float_island(node, _floats(lim)):
        return "dequantize → leaky_relu → quantize"
    return None


def _sigmoid(node: NodeView, lim: Limits) -> str | None:
    return _island_qparams(node, lim["sigmoid_zero_points"], lim["sigmoid_scale"]) if quant.is_float_island(node, _floats(lim)) else None


def _tanh(node: NodeView, lim: Limits) -> str | None:
    return _island_qparams(node, lim["tanh_zero_points"], lim["tanh_scale"]) if quant.is_float_island(node, _floats(lim)) else None


def _channel_ok(shapes, mult):
    for s in shapes:
        if s and isinstance(s[-1], int) and s[-1] % mult:
            return s[-1]
    return None


def _concat(node: NodeView, lim: Limits) -> str | None:
    r = common.rank(node, output=True)
    axis = node.attr("axis", -1)
    axis = axis + r if (r and axis < 0) else axis
    return "concatenation along the batch axis" if r and axis == 0 else None


def _slice(node: NodeView, lim: Limits) -> str | None:
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


def _fc_per_channel(node: NodeView, lim: Limits) -> str | None:
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


def _mul_operands(node: NodeView, lim: Limits) -> str | None:
    i, _ = _const_operand(node)
    if i is not None:
        return _add_const(node, lim)
    a, b = tm.in_shape(node, 0), tm.in_shape(node, 1)
    return f"broadcasts {a} with {b}" if a and b and list(a) != list(b) else None


def _transpose_size(node: NodeView, lim: Limits) -> str | None:
    # measured boundary: permute (0,1,3,2) of a 16x256x256 map is 'too large'; (0,2,3,1) and (0,3,1,2) passed at 256
    if common.transpose_perm(node) != [0, 1, 3, 2]:
        return None
    x = tm.in_shape(node)
    if not x or len(x) != lim["max_rank"] or not all(isinstance(d, int) for d in x):
        return None
    n = x[0] * (-(-x[1] // 8) * 8) * (-(-x[2] // 8) * 8) * (-(-x[3] // 16) * 16)  # NHWCB bricks: 8x8x16
    return f"{n} bytes in SRAM bricks" if n >= lim["transpose_sram_bytes"] else None


def _pad_hw(node: NodeView, lim: Limits) -> str | None:
    p = common.const_array(node, 1)
    if p is None or p.size != 8:
        return None
    p = p.reshape(-1)
    # ONNX: [n0, c0, h0, w0, n1, c1, h1, w1]; TFLite: [[n0, n1], [h0, h1], [w0, w1], [c0, c1]]
    bc = (p[0], p[1], p[4], p[5]) if node.graph.format == "onnx" else (p[0], p[1], p[6], p[7])
    return None if not any(bc) else "pads the batch or channel axis"


def _split(node: NodeView, lim: Limits) -> str | None:
    bad = _channel_ok([tm.out_shape(node, i) for i in range(len(node.outputs))], lim["split_channel_multiple"])
    return None if bad is None else f"an output has {bad} channels"


def _resize(node: NodeView, lim: Limits) -> str | None:
    x, y = tm.in_shape(node), tm.out_shape(node)
    if not x or not y or len(x) != 4:
        return None
    for a, b in ((x[1], y[1]), (x[2], y[2])):
        if isinstance(a, int) and isinstance(b, int) and b not in (2 * a, 2 * a - 1):
            return f"{x[1]}x{x[2]} → {y[1]}x{y[2]}"
    return None


def _d2s(node: NodeView, lim: Limits) -> str | None:
    b = node.attr("blocksize", node.attr("block_size", 2))
    if node.graph.format == "onnx" and node.attr("mode", "DCR") != "DCR":
        return f"mode {node.attr('mode')}"
    return None if int(b) == lim["depth_to_space_block"] else f"block size {b}"


def _qdq_absorbed(node: NodeView, lim: Limits) -> str | None:
    if quant.absorbed(node, partial(host_island, lim=lim)):
        return None
    g = node.graph
    if any(host_island(c, lim) for c in g.successors(node)) or any(host_island(p, lim) for p in g.predecessors(node)):
        return "bounds a host float island"
    return "standalone"




# -- rules ------------------------------------------------------------------------------------------

def graph_rules(p: str) -> tuple[Rule, ...]:
    r = RuleMaker(p, CPU, "N-SL")  # a broken rule runs the op on the host CPU
    return (
        r('dtype', "Ethos-N tensors must be {dtypes[0]} or {dtypes[1]} (int32 only for bias): a float model never offloads", _dtype, ("quantize the model to int8 first (npufit quantize, or an int8 TFLite export)",), "N-API"),
        r('batch', "batch size must be {batch}", _batch, ("export with batch 1 and loop over the batch on the host",), "N-API"),
        r('rank', "tensors must have at most {max_rank} dimensions", _rank, ("reshape to 4-D or fewer",), "N-API", gate=common.max_rank_gate),
    )


def op_rules(p: str) -> dict[str, tuple[Rule, ...]]:
    """op -> its rules, in the order they are checked."""
    r = RuleMaker(p, CPU, "N-SL")
    kernel = r('conv.kernel', "convolution kernel height and width must each be one of {conv_kernels}", _conv_kernel, ("use 3x3/5x5/7x7 kernels (split a 4x4/6x6 kernel or pad it to the next supported size)",))
    conv = (
        kernel,
        r('conv.stride', "convolution stride must be equal in H and W and one of {conv_strides}; kernels larger than "
           "{big_kernel} only with stride {big_kernel_stride}", _conv_stride, ("use stride 1 or 2 (follow a stride-1 conv with a 2x2 max pool for larger strides)",)),
        r('conv.dilation', "dilated convolution is not offloaded (dilation must be 1)", _conv_dilation, ("replace dilation by a larger kernel or a space-to-depth rewrite",), "N-API"),
        r('conv.weights', "convolution weights and quantization parameters must be constants", _const_weights, (), "N-PY"),
    )
    slice_ = r('slice.unit_stride', "a slice runs on the NPU with unit steps along one axis (npufit lowers it as a Split of "
                "the support library)", _slice, ("slice one axis at a time with step 1",), "N-LIB")
    split = r('split.channels', "channel split needs every output's channel count to be a multiple of {split_channel_multiple}", _split, ("pad channels to a multiple of 16",))
    qdq = r('qdq.standalone', "a quantize/dequantize is offloaded only inside an int8 kernel pattern; one at a model input/output "
             "or around a host float island runs on the host", _qdq_absorbed, ("feed int8 input and read int8 outputs",), "N-PY")
    return {
        "CONV_2D": conv,
        "DEPTHWISE_CONV_2D": conv + (r('depthwise.multiplier', "depthwise convolution channel multiplier must be "
                                        "{depth_multiplier}", _depth_multiplier),),
        "TRANSPOSE_CONV": (kernel, r('transpose_conv.stride', "transposed convolution stride must be {transpose_conv_stride}", _tconv_stride, ("use Resize (nearest) + Conv instead",))),
        "FULLY_CONNECTED": (r('fc.weights', "fully connected weights must be constants", _const_weights, (), "N-PY"),
                            r('fc.per_channel', "fully connected weights must have one quantization scale (the library: "
                               "'Multiple quantization scales is not supported for FullyConnected')", _fc_per_channel, ("quantize the fully connected weights per tensor",), "N-LIB")),
        "MAX_POOL_2D": (r('maxpool.config', "max pooling supports {maxpool_kernels:#x#|/} with stride {maxpool_stride} (3x3 up "
                           "to width {maxpool_3x3_max_width}, and VALID 3x3/2 only on odd input sizes), or stride "
                           "{maxpool_unit_stride} up to {maxpool_s1_valid_max}x{maxpool_s1_valid_max} VALID / "
                           "{maxpool_s1_same_max}x{maxpool_s1_same_max} SAME", _maxpool, ("use 2x2/2 or 3x3/2 pooling",), "N-LIB"),),
        "AVERAGE_POOL_2D": (r('avgpool.config', "average pooling supports only {avgpool_kernel}x{avgpool_kernel} stride "
                               "{avgpool_stride} SAME, or a global {mean_sizes:#x#|/} mean", _avgpool, ("pool down to 7x7 or 8x8 before a global average",)),),
        "MEAN": (r('mean.size', "mean over H,W supports only {mean_sizes[0]}x{mean_sizes[0]} or {mean_sizes[1]}x{mean_sizes[1]} "
                    "inputs reduced to {mean_output}x{mean_output}", _mean, ("pool down to 7x7 or 8x8 before the global average",)),),
        "ADD": (r('add.constant', "an addition with a constant needs a scalar or a per-channel [C] constant", _add_const, (), "N-CE"),),
        "MUL": (r('mul.constant', "a multiplication by a constant needs a scalar or a per-channel [C] constant; activation × "
                   "activation multiplies on the NPU only with equal shapes (the library: 'Cannot stretch along the requested "
                   "dimensions')", _mul_operands, ("expand the smaller operand to the full shape",), "N-LIB"),),
        "LEAKY_RELU": (r('leaky_relu.island', "TVM flow: int8 LeakyReLU is imported as dequantize → leaky_relu → quantize and in "
                          "the measured TVM + Ethos-N78 flow these float islands run on the host (seed 001: 402 × 3 extra ops); the "
                          "Ethos-N support library itself supports int8 LeakyReLU (N-LIB: npufit compile --target ethos-n78 keeps it "
                          "on the NPU)", _leaky, ("use ReLU or ReLU6 activations (the ReLU variants of seed 001 reached 99% NPU)",), "N-KOR"),),
        "LOGISTIC": (r('sigmoid.qparams', "sigmoid offloads (qnn_sigmoid) only when its output quantization is scale "
                        "{sigmoid_scale} with zero point {sigmoid_zero_points[int8]} (int8) / {sigmoid_zero_points[uint8]} (uint8)", _sigmoid, ("quantize the sigmoid output with scale 1/256",), "N-API"),),
        "TANH": (r('tanh.qparams', "tanh offloads (qnn_tanh) only when its output quantization is scale {tanh_scale} with zero "
                    "point {tanh_zero_points[int8]} (int8) / {tanh_zero_points[uint8]} (uint8)", _tanh, ("quantize the tanh output with scale 1/128",), "N-API"),),
        "CONCATENATION": (r('concat.axis', "concatenation cannot run along the batch axis", _concat, ("concatenate along channels, height or width",), "N-LIB"),),
        "STRIDED_SLICE": (slice_,), "SLICE": (slice_,),
        "SPLIT": (split,), "SPLIT_V": (split,),
        "DEPTH_TO_SPACE": (r('depth_to_space.block', "depth-to-space needs block size {depth_to_space_block} (DCR mode)", _d2s),),
        "RESIZE_NEAREST_NEIGHBOR": (r('resize.scale', "nearest-neighbour resize needs output height/width = 2n or 2n−1 of the "
                                       "input", _resize, ("upsample by exactly 2",)),),
        "RESIZE_BILINEAR": (r('resize.scale', "resize needs output height/width = 2n or 2n−1 of the input", _resize, ("upsample by exactly 2",), "N-LIB"),),
        "PAD": (r('pad.axes', "padding runs on the NPU for height and width only (fused into the convolution it feeds, or as the "
                   "library's standalone padding)", _pad_hw, ("pad only height and width",), "N-LIB"),),
        "TRANSPOSE": (r('transpose.size', "a {max_rank}-D transpose runs on the NPU; swapping the last two axes needs the tensor "
                         "to fit the {transpose_sram_bytes}-byte SRAM (the library: 'The tensors are too large')", _transpose_size, ("transpose smaller tiles, or keep the model NHWC end to end",), "N-LIB"),),
        "QUANTIZE": (qdq,), "DEQUANTIZE": (qdq,),
    }

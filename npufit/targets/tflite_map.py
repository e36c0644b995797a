"""See any node as the TFLite op a standard converter produces (ONNX -> TF -> TFLite int8, e.g. onnx2tf).

Arm's NPUs compile TFLite. To judge an ONNX model against them, every ONNX node is mapped to the
TFLite builtin it becomes, and rules read kernel/stride/padding/NHWC shapes through the helpers here,
so one rule serves both input formats. TFLite nodes pass through unchanged.
The mapping is a prediction (the engine says so in the report); it follows what converters emit for
ordinary exports: Conv with group == channels becomes DEPTHWISE_CONV_2D, Gemm/MatMul with constant
weights FULLY_CONNECTED, Clip(0,6) RELU6, Resize nearest/linear RESIZE_NEAREST_NEIGHBOR/RESIZE_BILINEAR.
"""
from __future__ import annotations

from ..graph import NodeView, facts
from . import common

_SIMPLE = {
    "ConvTranspose": "TRANSPOSE_CONV", "Relu": "RELU", "LeakyRelu": "LEAKY_RELU", "PRelu": "PRELU",
    "Sigmoid": "LOGISTIC", "Tanh": "TANH", "HardSwish": "HARD_SWISH", "Elu": "ELU", "Gelu": "GELU",
    "Softmax": "SOFTMAX", "LogSoftmax": "LOG_SOFTMAX", "Add": "ADD", "Sub": "SUB", "Mul": "MUL", "Div": "DIV",
    "Pow": "POW", "Sqrt": "SQRT", "Exp": "EXP", "Log": "LOG", "Abs": "ABS", "Neg": "NEG", "Reciprocal": "DIV",
    "Max": "MAXIMUM", "Min": "MINIMUM", "Floor": "FLOOR", "Ceil": "CEIL", "Round": "ROUND", "Sin": "SIN",
    "Cos": "COS", "Sign": "SIGN", "Mod": "FLOOR_MOD", "MaxPool": "MAX_POOL_2D", "AveragePool": "AVERAGE_POOL_2D",
    "GlobalAveragePool": "MEAN", "GlobalMaxPool": "REDUCE_MAX", "ReduceMean": "MEAN", "ReduceSum": "SUM",
    "ReduceMax": "REDUCE_MAX", "ReduceMin": "REDUCE_MIN", "ReduceProd": "REDUCE_PROD", "Concat": "CONCATENATION",
    "Gather": "GATHER", "GatherND": "GATHER_ND", "GatherElements": "GATHER_ND", "ScatterND": "SCATTER_ND",
    "Reshape": "RESHAPE", "Flatten": "RESHAPE", "Identity": "RESHAPE", "Squeeze": "SQUEEZE",
    "Unsqueeze": "EXPAND_DIMS", "Transpose": "TRANSPOSE", "DepthToSpace": "DEPTH_TO_SPACE",
    "SpaceToDepth": "SPACE_TO_DEPTH", "Tile": "TILE", "Expand": "BROADCAST_TO", "ArgMax": "ARG_MAX",
    "ArgMin": "ARG_MIN", "TopK": "TOPK_V2", "NonMaxSuppression": "NON_MAX_SUPPRESSION_V5", "Cast": "CAST",
    "Equal": "EQUAL", "Greater": "GREATER", "Less": "LESS", "GreaterOrEqual": "GREATER_EQUAL",
    "LessOrEqual": "LESS_EQUAL", "Not": "LOGICAL_NOT", "And": "LOGICAL_AND", "Or": "LOGICAL_OR",
    "Where": "SELECT_V2", "GRU": "GRU", "RNN": "RNN", "Range": "RANGE", "CumSum": "CUMSUM", "Shape": "SHAPE",
    "QuantizeLinear": "QUANTIZE", "DequantizeLinear": "DEQUANTIZE", "Erf": "ERF", "Einsum": "EINSUM",
    "GridSample": "GRID_SAMPLE", "BatchNormalization": "MUL", "InstanceNormalization": "MEAN",
    "LayerNormalization": "MEAN", "Softplus": "SOFTPLUS", "HardSigmoid": "HARD_SIGMOID",
    "Upsample": "RESIZE_NEAREST_NEIGHBOR",
    "QLinearConv": "CONV_2D", "QLinearMatMul": "FULLY_CONNECTED", "QLinearAdd": "ADD", "QLinearMul": "MUL",
    "QLinearSigmoid": "LOGISTIC", "QLinearLeakyRelu": "LEAKY_RELU", "QLinearConcat": "CONCATENATION",
    "QLinearAveragePool": "AVERAGE_POOL_2D", "QLinearGlobalAveragePool": "MEAN", "QLinearSoftmax": "SOFTMAX",
}


@facts.per_node  # asked by several rules of one node
def tflite_op(node: NodeView) -> str:
    """TFLite builtin name for this node ('CONV_2D', 'LEAKY_RELU', ...); TFLite nodes pass through."""
    if node.graph.format == "tflite":
        return node.key
    op = node.op_type
    if node.domain not in ("", "ai.onnx", "com.microsoft"):
        return node.key
    if op in ("Conv", "ConvInteger", "QLinearConv"):
        return _conv_kind(node)
    if op in ("Gemm", "MatMul", "MatMulInteger"):
        return "FULLY_CONNECTED" if _const_weights(node) else "BATCH_MATMUL"
    if op == "Clip":
        return _clip_kind(node)
    if op == "Div" and node.is_const(1):
        # x / c is emitted as MUL by 1/c (TF's arithmetic optimizer, npufit.convert): Vela ran it on the NPU
        # while it has no int8 DIV (probe case div[operand=constant], Ethos-U55)
        return "MUL"
    if op == "Pad":
        return "MIRROR_PAD" if node.attr("mode", "constant") in ("reflect", "edge") else "PAD"
    if op in ("Resize", "Upsample"):
        linear = node.attr("mode", "nearest") in ("linear", "bilinear")
        return "RESIZE_BILINEAR" if linear else "RESIZE_NEAREST_NEIGHBOR"
    if op == "Slice":
        return "STRIDED_SLICE"
    if op == "Split":
        return "SPLIT" if _even_split(node) else "SPLIT_V"
    if op == "LSTM":
        both = node.attr("direction", "forward") == "bidirectional"
        return "BIDIRECTIONAL_SEQUENCE_LSTM" if both else "UNIDIRECTIONAL_SEQUENCE_LSTM"
    if op in ("QuantizeLinear", "DequantizeLinear") and _model_io(node):
        # a converter run with int8 input/output types (the usual Arm flow) drops these: the app feeds int8
        return "IO_QUANTIZE" if op == "QuantizeLinear" else "IO_DEQUANTIZE"
    return _SIMPLE.get(op, op.upper())


def _model_io(node: NodeView) -> bool:
    g = node.graph
    if node.op_type == "QuantizeLinear":
        return bool(node.inputs) and node.inputs[0] in g.input_names
    return any(o in g.output_names for o in node.outputs)


def _conv_kind(node: NodeView) -> str:
    w = node.input(3 if node.op_type == "QLinearConv" else 1)
    r = len(w.shape) if (w is not None and w.shape) else 4
    if r == 5:
        return "CONV_3D"
    group = int(node.attrs.get("group", 1))
    x = node.input(0)
    cin = x.shape[1] if (x is not None and x.shape and len(x.shape) > 1) else None
    if group > 1 and (cin is None or group == cin):
        return "DEPTHWISE_CONV_2D"
    return "CONV_2D"  # 1-D convs become CONV_2D over an expanded axis; grouped convs are split into CONV_2Ds


def _const_weights(node: NodeView) -> bool:
    if node.op_type == "Gemm":
        return node.is_const(1)
    w = node.input(1)
    return bool(w is not None and w.is_const and w.rank == 2)


def _clip_kind(node: NodeView) -> str:
    lo, hi = node.attr("min"), node.attr("max")
    if lo is None:
        lo = common.const_scalar(node, 1) if len(node.inputs) > 1 and node.inputs[1] else None
    if hi is None:
        hi = common.const_scalar(node, 2) if len(node.inputs) > 2 and node.inputs[2] else None
    pairs = {(0.0, 6.0): "RELU6", (-1.0, 1.0): "RELU_N1_TO_1", (0.0, 1.0): "RELU_0_TO_1"}
    if lo is not None and hi is not None and (float(lo), float(hi)) in pairs:
        return pairs[(float(lo), float(hi))]
    if lo is not None and hi is None and float(lo) == 0.0:
        return "RELU"
    return "MINIMUM"  # a general clamp becomes MAXIMUM + MINIMUM


def _even_split(node: NodeView) -> bool:
    split = node.attr("split")
    if split is None and len(node.inputs) > 1 and node.inputs[1]:
        split = common.const_ints(node, 1)
    return split is None or len(set(split)) <= 1


# -- attributes as TFLite sees them ---------------------------------------------------------

def is_tflite(node: NodeView) -> bool:
    return node.graph.format == "tflite"


@facts.per_node
def kernel(node: NodeView) -> list[int]:
    """[kh, kw] of a conv / pool (1-D ops report [1, k])."""
    if node.graph.format == "tflite":
        if "filter_height" in node.attrs:
            return [int(node.attr("filter_height")), int(node.attr("filter_width"))]
        w = node.input(1)
        if w is not None and w.shape and len(w.shape) == 4:  # OHWI (conv) / 1HWC (depthwise) / OHWI (transpose conv)
            return [int(w.shape[1]), int(w.shape[2])]
        return []
    k = node.attrs.get("kernel_shape")
    if k is None:
        w = node.input(3 if node.op_type == "QLinearConv" else 1)
        k = list(w.shape[2:]) if (w is not None and w.shape and len(w.shape) > 2) else []
    k = [int(x) if isinstance(x, int) else -1 for x in k]
    return [1] + k if len(k) == 1 else k


@facts.per_node
def strides(node: NodeView) -> list[int]:
    if node.graph.format == "tflite":
        return [int(node.attr("stride_h", 1)), int(node.attr("stride_w", 1))]
    s = node.attrs.get("strides")
    if not s:
        return [1, 1]
    s = [int(x) for x in s]
    return [1] + s if len(s) == 1 else s


@facts.per_node
def dilations(node: NodeView) -> list[int]:
    if node.graph.format == "tflite":
        return [int(node.attr("dilation_h_factor", 1)), int(node.attr("dilation_w_factor", 1))]
    d = node.attrs.get("dilations")
    if not d:
        return [1, 1]
    d = [int(x) for x in d]
    return [1] + d if len(d) == 1 else d


@facts.per_node
def padding(node: NodeView) -> str:
    """'SAME' | 'VALID' | 'EXPLICIT' (ONNX pads that are neither; converters emit a PAD op first)."""
    if node.graph.format == "tflite":
        p = node.attr("padding")
        return {0: "SAME", 1: "VALID"}.get(p, str(p)) if not isinstance(p, str) else p
    attrs = node.attrs
    auto = attrs.get("auto_pad", "NOTSET")
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        return "SAME"
    if auto == "VALID":
        return "VALID"
    pads = [int(x) for x in (attrs.get("pads") or [])]
    if not any(pads):
        return "VALID"
    k, s, d = kernel(node), strides(node), dilations(node)
    half = len(pads) // 2
    begins, ends = pads[:half], pads[half:]
    k = k[-half:] if half else k
    s, d = s[-half:], d[-half:]
    x = node.input(0)
    spatial = list(x.shape[2:]) if (x is not None and x.shape and len(x.shape) > 2) else [None] * half
    for b, e, kk, ss, dd, n in zip(begins, ends, k, s, d, spatial):
        eff = (kk - 1) * dd + 1
        size = n if isinstance(n, int) else 0
        total = max(eff - ss, 0) if size % ss == 0 else max(eff - size % ss, 0)
        if b + e != total or b != total // 2:
            return "EXPLICIT"
    return "SAME"


def nhwc(shape) -> list | None:
    """NCHW / NCL shape -> NHWC / NLC (TFLite's layout); None stays None."""
    if shape is None:
        return None
    s = list(shape)
    return [s[0]] + s[2:] + [s[1]] if len(s) >= 3 else s


def in_shape(node: NodeView, i: int = 0) -> list | None:
    s = node.input_shape(i)
    return (list(s) if s is not None else None) if is_tflite(node) else nhwc(s)


def out_shape(node: NodeView, i: int = 0) -> list | None:
    s = node.output_shape(i)
    return (list(s) if s is not None else None) if is_tflite(node) else nhwc(s)


def channel_axis(node: NodeView) -> int:
    return -1 if is_tflite(node) else 1


# -- the other direction: TFLite builtins as ONNX op types (for ONNX-keyed targets such as rk3588) --------

_REVERSE_PREFERRED = {
    "CONV_2D": "Conv", "DEPTHWISE_CONV_2D": "Conv", "FULLY_CONNECTED": "Gemm", "BATCH_MATMUL": "MatMul",
    "RELU6": "Clip",
    "RELU_N1_TO_1": "Clip", "RELU_0_TO_1": "Clip", "MEAN": "ReduceMean", "RESHAPE": "Reshape", "PAD": "Pad",
    "PADV2": "Pad",
    "MIRROR_PAD": "Pad", "RESIZE_BILINEAR": "Resize", "RESIZE_NEAREST_NEIGHBOR": "Resize", "STRIDED_SLICE": "Slice",
    "SLICE": "Slice",
    "SPLIT": "Split", "SPLIT_V": "Split", "UNIDIRECTIONAL_SEQUENCE_LSTM": "LSTM", "BIDIRECTIONAL_SEQUENCE_LSTM": "LSTM",
    "SQUARED_DIFFERENCE": "Sub", "RSQRT": "Sqrt", "PACK": "Concat", "UNPACK": "Split", "QUANTIZE": "QuantizeLinear",
    "DEQUANTIZE": "DequantizeLinear", "SELECT": "Where", "SELECT_V2": "Where", "NOT_EQUAL": "Equal",
    "SQUEEZE": "Squeeze",
    "EXPAND_DIMS": "Unsqueeze", "GATHER_ND": "GatherND", "MAXIMUM": "Max", "MINIMUM": "Min",
}
_REVERSE = {v: k for k, v in _SIMPLE.items() if k[0].isupper() and not k.startswith("Q")} | _REVERSE_PREFERRED


def onnx_op(node: NodeView) -> str:
    """ONNX op type a TFLite builtin corresponds to (best effort; custom ops keep their key)."""
    return _REVERSE.get(node.op_type, node.key) if is_tflite(node) else node.key

"""Decisions of npufit's ONNX -> int8 TFLite converter (npufit/convert) that the Ethos-U rules predict from.

The converter decides with these functions and the Ethos-U rules (ethos_u/converted.py) read the same answers, so
the judged op is the op the converter writes. They live here, below both packages, because targets may not import
convert (tests/test_layers.py). Pure functions of dtypes, shapes and graph structure; no converter state."""

from __future__ import annotations

from collections.abc import Callable, Sequence


def carried_dtype(onnx_dtype: str | None) -> str | None:
    """The TFLite type an ONNX integer / bool tensor is carried in (int64 narrowed to int32, TFLite's index type);
    None for float (the int8 path)."""
    if onnx_dtype is None or onnx_dtype.startswith(("float", "bfloat")):
        return None
    return "bool" if onnx_dtype == "bool" else "int32"


def depth_reduce_as_conv(tfl_op: str, shape: Sequence, axes: Sequence[int]) -> bool:
    """A MEAN / SUM over the channels alone of a 4-D NHWC map with H and W > 1 (`shape`, `axes` in TFLite's NHWC
    order) is written as a 1x1 CONV_2D with one output channel: Vela has no depth reduction there."""
    return (
        tfl_op in ("MEAN", "SUM")
        and len(shape) == 4
        and list(axes) == [3]
        and all(isinstance(d, int) for d in shape[1:3])
        and min(shape[1:3]) > 1
    )


def mean_as_rows(tfl_op: str, shape: Sequence, axes: Sequence[int]) -> bool:
    """A MEAN over a trailing run of axes of a tensor in ONNX order (`axes` sorted) that Vela 5.2.0's semantic check
    rejects ("Reduction over depth is only supported if any of h,w,c == 1"; at most 4-D) is written as RESHAPE to
    [rows, 1, reduced] -> MEAN over axis 2 -> RESHAPE: the same mean, with a 1 Vela accepts (e.g. a LayerNorm over
    the features of [4, 16, 16] tokens, a mean over H and W of a [1, 64, 2, 2] NCHW map)."""
    r = len(shape)
    if (
        tfl_op != "MEAN"
        or r < 3
        or not axes
        or list(axes) != list(range(r - len(axes), r))
        or not all(isinstance(d, int) and d > 0 for d in shape)
    ):
        return False
    if r > 4:
        return True
    return not any(d == 1 for d in (shape if r == 3 else shape[1:]))


def nhwc_mean_as_rows(tfl_op: str, shape: Sequence, axes: Sequence[int]) -> bool:
    """A MEAN / SUM over H, W and C of a 4-D NHWC map (`shape`, `axes` in NHWC order) that Vela 5.2.0 rejects as a
    depth reduction (none of h, w, c is 1) is written as RESHAPE to [N, 1, H*W*C] -> MEAN over axis 2: the values
    reduced are the same in any order (RMSNorm and LayerNorm over C, H, W: GroupNorm with one group)."""
    return (
        tfl_op in ("MEAN", "SUM")
        and len(shape) == 4
        and sorted(axes) == [1, 2, 3]
        and all(isinstance(d, int) and d > 1 for d in shape[1:])
    )


def gather_elements_as_gather(data_shape: Sequence, idx_shape: Sequence, axis: int) -> bool:
    """GatherElements whose data and indices are 1 on every axis but `axis` (a per-position lookup at batch 1) is
    written as RESHAPE of the indices + GATHER along `axis` (batch_dims 0)."""
    if not data_shape or not idx_shape or len(data_shape) != len(idx_shape):
        return False
    axis %= len(data_shape)
    return all(d == 1 for k, d in enumerate(data_shape) if k != axis) and all(
        d == 1 for k, d in enumerate(idx_shape) if k != axis
    )


def bool_cast_source(graph, name: str, dtype: Callable[[str], str | None]) -> str | None:
    """The bool tensor that integer tensor `name` was cast from (its values are 0 / 1), else None. `dtype` gives a
    tensor's carried type (carried_dtype of its ONNX type, or the converter's own record of it)."""
    p = graph.producer(name)
    if p is not None and p.op_type == "Cast" and dtype(name) == "int32" and dtype(p.inputs[0]) == "bool":
        return p.inputs[0]
    return None


def argmax_of_bool(graph, node, dtype: Callable[[str], str | None]) -> bool:
    """An ArgMax of an integer cast of a bool tensor that nothing else reads (CLIP's first end-of-text position):
    the converter casts the bool itself to int8 (CAST) and runs ARG_MAX on that; the integer cast goes unread."""
    x = node.inputs[0] if node.op_type == "ArgMax" and node.inputs else None
    if not x or x in graph.output_names or len(graph.consumers(x)) != 1:
        return False
    return bool_cast_source(graph, x, dtype) is not None


NEVER_SPECIAL = ("IsNaN", "IsInf")


def never_special(graph, node) -> bool:
    """IsNaN / IsInf of a float tensor the model computes: int8 holds neither, so the converter makes the answer a
    constant False (convert/ops_shape.never_special) and writes no op."""
    x = node.inputs[0] if node.op_type in NEVER_SPECIAL and node.inputs else None
    return bool(x) and not graph.tensor(x).is_const and carried_dtype(graph.tensor(x).dtype) is None


def where_of_never_special(graph, node) -> bool:
    """A Where whose condition is such a constant False (nan_to_num after a softmax): the converter aliases its
    else-branch (convert/ops_shape.where) and writes no op, when that branch is computed at run time."""
    if node.op_type != "Where" or len(node.inputs) != 3 or not node.inputs[2] or graph.tensor(node.inputs[2]).is_const:
        return False
    p = graph.producer(node.inputs[0]) if node.inputs[0] else None
    return p is not None and never_special(graph, p)


def whole_map_pool(kernel: Sequence, pads: Sequence, in_hw: Sequence, out_hw: Sequence) -> bool:
    """A 2-D pool with one window over the whole map: a 1x1 output, no pads and a kernel at least the map (ceil_mode
    clips it to the input; EfficientNet's AvgPool2d(C, ceil_mode=True)). The converter writes it as a global pool:
    MEAN over H and W (average) or a pool whose kernel is the map (max)."""
    return (
        len(in_hw) == 2
        and tuple(out_hw) == (1, 1)
        and not any(pads or ())
        and len(kernel) == 2
        and all(isinstance(d, int) for d in in_hw)
        and all(k >= d for k, d in zip(kernel, in_hw))
    )


# -- which ONNX ops the converter converts: one list for the converter and for the Ethos-U rules ----------------------
# ops with a lowering of their own: the keys of convert/registry.OPS (tests/test_convert_registry.py holds them
# equal)
LOWERED = frozenset(
    (
        "Conv ConvTranspose BatchNormalization Gemm MatMul MaxPool AveragePool GlobalAveragePool GlobalMaxPool "
        "ReduceSum ReduceMean ReduceMax ReduceMin ArgMax ArgMin TopK "
        "Relu LeakyRelu PRelu Clip Sigmoid Tanh HardSwish HardSigmoid Elu Selu Celu Softplus Mish Softsign Swish "
        "ThresholdedRelu Abs Neg Exp Log Erf Pow Sqrt Reciprocal Sin Cos Floor Ceil Round Sign IsNaN IsInf "
        "Add Sub Mul Div Mod Max Min Sum Mean Softmax LogSoftmax "
        "Concat Split Slice Reshape Flatten Squeeze Unsqueeze Transpose Expand Tile Pad Resize Upsample "
        "DepthToSpace SpaceToDepth Gather GatherElements GatherND ScatterND Where GridSample "
        "Identity Dropout Cast CastLike "
        "Equal Less LessOrEqual Greater GreaterOrEqual And Or Xor Not CumSum"
    ).split()
)
# ops the converter's prepass rewrites into lowered ones first: the keys of convert/prepass.DECOMPOSE, its shape-reading
# decompositions and the RNN unroller
DECOMPOSED = frozenset(
    (
        "LayerNormalization InstanceNormalization GroupNormalization MeanVarianceNormalization LpNormalization Gelu "
        "RMSNormalization "
        "ReduceL1 ReduceL2 ReduceSumSquare ReduceLogSum ReduceLogSumExp Einsum LSTM GRU RNN"
    ).split()
)
# handled before either: Q/DQ pairs become the float tensor with the user's range (convert/onnx_prep._undo_qdq), an
# If whose condition the pinned input shapes decide is replaced by its taken branch (convert/prepass_if), a Constant is
# a value
FRONT = frozenset(("QuantizeLinear", "DequantizeLinear", "If", "Constant"))
CONVERTED = LOWERED | DECOMPOSED | FRONT
RNNS = ("LSTM", "GRU", "RNN")
_RNN_ACTIVATIONS = {"LSTM": ["Sigmoid", "Tanh", "Tanh"], "GRU": ["Sigmoid", "Tanh"], "RNN": ["Tanh"]}


def rnn_default_activations(op: str, activations, direction) -> bool:
    """No activations attribute, or ONNX's defaults spelt out (once per direction): the only ones unrolled."""
    if not activations:
        return True
    names = [a.decode() if isinstance(a, bytes) else str(a) for a in activations]
    d = direction.decode() if isinstance(direction, bytes) else str(direction or "forward")
    return names == _RNN_ACTIVATIONS[op] * (2 if d == "bidirectional" else 1)


def _const_input(node, i: int) -> bool:
    return i < len(node.inputs) and bool(node.inputs[i]) and node.is_const(i)


def rnn_unrollable(node) -> str | None:
    """Why the prepass leaves an LSTM / GRU / RNN as it is (convert/prepass_rnn.unroll), else None: constant weights
    and bias, a static sequence length, the default activations and layout, no clip, sequence lengths or peepholes,
    and a constant (or zero) initial state."""
    ins = list(node.inputs) + [""] * (8 - len(node.inputs))
    if not (_const_input(node, 1) and _const_input(node, 2)) or (ins[3] and not node.is_const(3)):
        return "weights computed at run time"
    if (
        int(node.attr("layout", 0))
        or node.attr("clip") is not None
        or int(node.attr("input_forget", 0))
        or not rnn_default_activations(node.op_type, node.attr("activations"), node.attr("direction", "forward"))
    ):
        return "a non-default layout, activation, clip or coupled input-forget gate"
    if ins[4] or (node.op_type == "LSTM" and ins[7]):
        return "sequence lengths or peepholes"
    if any(ins[k] and not node.is_const(k) for k in ((5, 6) if node.op_type == "LSTM" else (5,))):
        return "an initial state computed at run time"
    x = node.input_shape(0)
    if not x or len(x) != 3 or not all(isinstance(d, int) for d in x):
        return "a sequence length that is not static"
    return None


def _grid_const(node) -> str | None:
    if not _const_input(node, 1):
        return "the sampling grid is computed at run time (only a constant grid is lowered)"
    x = node.input_shape(0)
    return None if x and len(x) == 4 else "only 2-D (NCHW) sampling is lowered"


def _index_const(node) -> str | None:
    """GatherND by run-time indices: TFLite's GATHER_ND, which has no batch_dims."""
    if node.op_type == "GatherND" and not _const_input(node, 1) and int(node.attr("batch_dims", 0)):
        return "batch_dims > 0 with indices computed at run time"
    return None


def _topk(node) -> str | None:
    return None if _const_input(node, 1) else "k computed at run time"


def _mod(node) -> str | None:
    d = node.input_dtype(0)
    return None if d is None or carried_dtype(d) is not None else "Mod of float tensors (only integer Mod is lowered)"


# (coordinate_transformation_mode, nearest_mode) -> TFLite's (align_corners, half_pixel_centers) for a nearest resize,
# coordinate_transformation_mode -> the same for a linear one
_NEAREST = {
    ("asymmetric", "floor"): (False, False),
    ("align_corners", "round_prefer_ceil"): (True, False),
    ("half_pixel", "round_prefer_ceil"): (False, True),
    ("pytorch_half_pixel", "round_prefer_ceil"): (False, True),
    ("tf_half_pixel_for_nn", "floor"): (False, True),
}
_LINEAR = {
    "asymmetric": (False, False),
    "align_corners": (True, False),
    "half_pixel": (False, True),
    "pytorch_half_pixel": (False, True),
}


def _text(v, default: str) -> str:
    return default if v is None else v.decode() if isinstance(v, bytes) else str(v)


def resize_flags(op: str, attrs, in_hw, out_hw) -> tuple[str, tuple[bool, bool] | None]:
    """(TFLite op, (align_corners, half_pixel_centers)) of an ONNX Resize / Upsample of a 4-D NCHW map (`in_hw`,
    `out_hw` its H and W), flags None when TFLite has no resize that computes the same. `attrs` is node.attr."""
    mode = _text(attrs("mode", None), "nearest")
    ctm = _text(attrs("coordinate_transformation_mode", None), "asymmetric" if op == "Upsample" else "half_pixel")
    if mode == "nearest":
        rounding = _text(attrs("nearest_mode", None), "floor" if op == "Upsample" else "round_prefer_floor")
        flags = _NEAREST.get((ctm, rounding))
        if (
            flags is None
            and ctm in ("half_pixel", "pytorch_half_pixel")
            and rounding.startswith("round")
            and all(isinstance(o, int) and isinstance(i, int) and o % i == 0 for o, i in zip(out_hw, in_hw))
        ):
            # integer upscaling: (x + 1/2) / s - 1/2 never lands on a tie, so both round modes give floor(x / s)
            flags = (False, False)
        return "RESIZE_NEAREST_NEIGHBOR", flags
    if mode in ("linear", "bilinear"):
        return "RESIZE_BILINEAR", _LINEAR.get(ctm)
    return "", None


def _resize(node) -> str | None:
    x, y = node.input_shape(0), node.output_shape(0)
    if not x or not y or len(x) != 4 or len(y) != 4:
        return "only 4-D (NCHW) resizes are lowered"
    _, flags = resize_flags(node.op_type, node.attr, list(x[2:]), list(y[2:]))
    if flags is None:
        return (
            f"mode={_text(node.attr('mode'), 'nearest')} coordinate_transformation_mode="
            f"{_text(node.attr('coordinate_transformation_mode'), 'default')} has no TFLite resize equivalent"
        )
    return None


def _if(node) -> str | None:
    return None if node.is_const(0) else "its condition depends on input values, not only on shapes"


def _qdq(node) -> str | None:
    g = node.graph
    if node.op_type == "QuantizeLinear":
        users = g.consumers(node.outputs[0])
        ok = users and node.outputs[0] not in g.output_names and all(u.op_type == "DequantizeLinear" for u in users)
        return None if ok else "a QuantizeLinear that feeds something other than DequantizeLinear"
    p = g.producer(node.inputs[0])
    return (
        None
        if node.is_const(0) or (p is not None and p.op_type == "QuantizeLinear")
        else "a DequantizeLinear of a tensor that no QuantizeLinear produces"
    )


def _spatial(node) -> str | None:
    x = node.input_shape(0)
    if x and len(x) > 4:
        return "only 1-D and 2-D spatial ops are lowered"
    if node.op_type in ("MaxPool", "AveragePool") and any(int(d) != 1 for d in node.attr("dilations", None) or ()):
        return "dilated pooling has no TFLite equivalent"
    return None


def tconv_padding(in_hw, out_hw, kernel, strides, pads) -> tuple[str, list[int] | None] | None:
    """How the converter writes a 2-D ConvTranspose: ("VALID" | "SAME", None), or ("VALID", [top, left]) to cut the
    output from the full VALID result (pads with output_padding inside them); None when the output reaches beyond it."""
    pads = list(pads or [0, 0, 0, 0])
    for name in ("VALID", "SAME"):
        ok = True
        for i in range(2):
            k, st, n_in, n_out = kernel[i], strides[i], in_hw[i], out_hw[i]
            want = (n_in - 1) * st + k if name == "VALID" else n_in * st
            total = max((n_in - 1) * st + k - n_out, 0)
            ok &= n_out == want and (name == "VALID" and not any(pads) or name == "SAME" and pads[i] == total // 2)
        if ok:
            return name, None
    full = [(in_hw[i] - 1) * strides[i] + kernel[i] for i in range(2)]
    begin = [int(p) for p in pads[:2]]
    return None if any(begin[i] + out_hw[i] > full[i] for i in range(2)) else ("VALID", begin)


def _tconv(node) -> str | None:
    w, x, y = node.input_shape(1), node.input_shape(0), node.output_shape(0)
    if not node.is_const(1) or not w or len(w) != 4 or int(node.attr("group", 1)) != 1:
        return "only 2-D, group-1 transposed convolutions with constant weights are lowered"
    if any(int(d) != 1 for d in node.attr("dilations", None) or ()):
        return "dilated transposed convolution has no TFLite equivalent"
    if not x or not y or not all(isinstance(d, int) for d in (*x, *y, *w)):
        return None
    if (
        tconv_padding(
            list(x[2:]), list(y[2:]), list(w[2:]), list(node.attr("strides", [1, 1])), node.attr("pads", None)
        )
        is None
    ):
        return "the output (output_padding past the pads) reaches beyond the VALID result"
    return None


_FLOATS = ("float32",)
_CARRIED = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


def _cast(node) -> str | None:
    """float32 <-> float32 (no op) and between float32 and the integer / bool types the converter carries."""
    for d in (node.input_dtype(0), node.output_dtype(0)):
        if d is not None and d not in _FLOATS + _CARRIED:
            return f"a cast from or to {d} (the int8 file holds float32 values and integer / bool tensors only)"
    return None


def _pow(node) -> str | None:
    v = node.const_value(1)
    if v is None or v.size != 1 or float(v.reshape(-1)[0]) not in (0.5, -0.5, 1.0, 2.0, 3.0):
        return "an exponent other than a constant 0.5, -0.5, 1, 2 or 3"
    return None


def _scatter(node) -> str | None:
    if not _const_input(node, 1):
        return "indices computed at run time"
    r = _text(node.attr("reduction", None), "none")
    return None if r == "none" else f"reduction '{r}'"


def _extra_outputs(node) -> str | None:
    """Dropout's mask and BatchNormalization's running statistics: training outputs the int8 file has no form of."""
    g = node.graph
    used = [o for o in node.outputs[1:] if o and (o in g.output_names or g.consumers(o))]
    if used or int(node.attr("training_mode", 0)):
        return "training outputs (a dropout mask, running statistics)"
    return None


def _gemm(node) -> str | None:
    if node.op_type == "Gemm" and int(node.attr("transA", 0)):
        return "transA=1 is not lowered"
    if any(s is not None and len(s) < 2 for s in (node.input_shape(0), node.input_shape(1))):
        return "a 1-D operand (a vector product) is not lowered"
    return None


FORMS = {op: rnn_unrollable for op in RNNS} | {
    "GridSample": _grid_const,
    "GatherND": _index_const,
    "TopK": _topk,
    "Mod": _mod,
    "Resize": _resize,
    "Upsample": _resize,
    "If": _if,
    "QuantizeLinear": _qdq,
    "DequantizeLinear": _qdq,
    "Conv": _spatial,
    "ConvTranspose": _tconv,
    "MaxPool": _spatial,
    "AveragePool": _spatial,
    "Cast": _cast,
    "CastLike": _cast,
    "Pow": _pow,
    "ScatterND": _scatter,
    "Dropout": _extra_outputs,
    "BatchNormalization": _extra_outputs,
    "Gemm": _gemm,
    "MatMul": _gemm,
}


def converter_gap(node) -> str | None:
    """Why npufit's ONNX -> int8 TFLite converter cannot convert this node of an ONNX graph (it stops before Vela sees
    the model), else None. The converter refuses exactly these nodes (convert/onnx_to_tflite.unsupported_nodes asks
    this function); forms it can only refuse while lowering (a shape its lowering does not handle) are not known
    here."""
    if node.domain not in ("", "ai.onnx"):
        return f"{node.domain}::{node.op_type} is a custom-domain op"
    if node.op_type not in CONVERTED:
        return f"no lowering for {node.op_type}"
    form = FORMS.get(node.op_type)
    return None if form is None else form(node)

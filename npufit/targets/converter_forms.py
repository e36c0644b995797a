"""The TFLite ops npufit's ONNX -> int8 TFLite converter writes for nodes a standard converter writes otherwise (its
forms), and the shape facts those forms rest on. Read by the converter (npufit/convert) and by the Ethos-U rules
(ethos_u/converted.py), like converter_facts.py, of which this is the second half."""

from __future__ import annotations

from .converter_facts import carried_dtype

# -- the TFLite ops the converter writes for nodes a standard converter writes otherwise ----------------------------
FLOAT32 = "a float32 tensor between them"  # not an op: Vela runs no op with a float32 feature map on the NPU
# form -> the TFLite ops of it. Each of these has no Vela constraint a node of ordinary size breaks, so the node runs
# where every op of its form is in Vela's operator list (tests/test_convert_forms.py compiles each with Vela).
WRITES = {
    "affine": ("DEPTHWISE_CONV_2D", "MUL", "ADD"),  # HardSigmoid: alpha * x + beta, clipped by the int8 output range
    "sum": ("ADD",),
    "mean": ("ADD", "MUL"),
    "softplus": ("ABS", "LOGISTIC", "LOG", "RELU", "SUB"),
    "mish": ("ABS", "LOGISTIC", "LOG", "RELU", "SUB", "TANH", "MUL"),
    "elu": ("ELU", "RELU", "MUL", "ADD"),
    "softsign": ("ABS", "ADD", "RSQRT", "MUL"),
    "threshold": ("GREATER", "SELECT_V2"),
    "space_to_depth": ("CONV_2D",),
    "depth_to_space": ("TRANSPOSE_CONV",),
    "interleave": ("CONV_2D", "SPLIT", "RESHAPE", "CONCATENATION"),  # DepthToSpace of another block
    "grid": ("TRANSPOSE", "RESHAPE", "FULLY_CONNECTED"),
    "gather": ("RESHAPE", "GATHER"),
    "slice": ("RESHAPE", "STRIDED_SLICE"),
    "reduce": ("ABS", "MUL", "SUM", "LOG", "EXP", "REDUCE_MAX", "SUB", "ADD", "RSQRT"),
    "norm": ("MEAN", "SUB", "MUL", "ADD", "RSQRT", "SUM"),
    "rnn": ("FULLY_CONNECTED", "ADD", "TANH", "CONCATENATION", "RESHAPE", "STRIDED_SLICE"),
    "alias": (),
    "reciprocal": ("RSQRT", "MUL"),
    "swish": ("MUL", "LOGISTIC"),
    # a mean over an NHWC map of batch > 1: Vela 5.2.0 runs MEAN at batch 1 only ("Batch must be 1"; the backend
    # suite's 4-D RMSNormalization and MeanVarianceNormalization cases)
    "norm_batched": ("batched MEAN", "SUB", "MUL", "ADD", "RSQRT"),
    # select_last_index: ARG_MAX of the axis reversed; Vela 5.2.0 refused every such REVERSE_V2 of the backend suite
    # ("Unsupported reverse mask"), so the op is named as it refused it
    "argmax_last": ("REVERSE_V2 along an axis", "ARG_MAX", "SUB"),
    # the integer / bool path (convert/ops_int): TFLite's integer kernels
    "int_div": ("DIV",),
    "broadcast": ("BROADCAST_TO",),
    "not_equal": ("NOT_EQUAL",),
    "int_reshape": ("RESHAPE",),
    "to_float": ("CAST", "QUANTIZE", FLOAT32),
    "from_float": ("DEQUANTIZE", "CAST"),
}
_FORM_OF = {
    "HardSigmoid": "affine",
    "Sum": "sum",
    "Mean": "mean",
    "Softplus": "softplus",
    "Mish": "mish",
    "Selu": "elu",
    "Celu": "elu",
    "Softsign": "softsign",
    "ThresholdedRelu": "threshold",
    "SpaceToDepth": "space_to_depth",
    "GridSample": "grid",
    "ReduceL1": "reduce",
    "ReduceSumSquare": "reduce",
    "ReduceLogSum": "reduce",
    "ReduceLogSumExp": "reduce",
    "LpNormalization": "norm",
    "MeanVarianceNormalization": "norm",
    "RNN": "rnn",
    "GroupNormalization": "norm",
    "Dropout": "alias",
    "Reciprocal": "reciprocal",
    "RMSNormalization": "norm",
    "Swish": "swish",
}


def power_of_two(n: int) -> bool:
    return n >= 2 and n & (n - 1) == 0


def space_blocks(block: int) -> list[int]:
    """The block size of DepthToSpace / SpaceToDepth as the strides of the exact convolutions the converter writes:
    2 x 2 x ... for a power of two (Vela's transposed convolution takes stride 2 on every Ethos-U), else one block."""
    return [2] * (block.bit_length() - 1) if power_of_two(block) else [block]


def elements_flat(data_shape, idx, axis: int):
    """GatherElements of constant indices `idx` as positions in the flattened data (numpy, the shape of idx)."""
    import numpy as np

    idx = np.asarray(idx, np.int64)
    axis %= len(data_shape)
    idx = np.where(idx < 0, idx + data_shape[axis], idx)
    grid = list(np.indices(idx.shape, sparse=True))
    grid[axis] = idx
    return np.ravel_multi_index(tuple(np.broadcast_arrays(*grid)), tuple(data_shape))


def nd_flat(data_shape, idx, batch_dims: int):
    """GatherND of constant indices `idx` as rows of the data flattened to [rows, inner] (numpy, idx.shape[:-1]);
    batch_dims b: the first b axes of data and indices are matched one to one."""
    import numpy as np

    idx = np.asarray(idx, np.int64)
    b, k = batch_dims, idx.shape[-1]
    shape = tuple(data_shape[: b + k])
    idx = np.where(idx < 0, idx + np.asarray(shape[b:]), idx)
    lead = idx.shape[:-1]
    batch = [np.arange(d).reshape((-1,) + (1,) * (len(lead) - 1 - i)) for i, d in enumerate(lead[:b])]
    cols = tuple(np.broadcast_to(a, lead) for a in batch) + tuple(idx[..., j] for j in range(k))
    return np.ravel_multi_index(cols, shape)


def even_run(flat) -> bool:
    """One index, or an increasing run with one step: a STRIDED_SLICE (convert/ops_shape.take)."""
    import numpy as np

    f = np.asarray(flat).reshape(-1)
    if f.size <= 1:
        return f.size == 1
    d = np.diff(f)
    return bool(d[0] > 0 and np.all(d == d[0]))


def constant_gather_flat(node):
    """The flat positions a constant-index GatherElements / GatherND reads (as the converter lowers it), else None."""
    v, x = node.const_value(1), node.input_shape(0)
    if v is None or not x or not all(isinstance(d, int) for d in x):
        return None
    if node.op_type == "GatherElements":
        return elements_flat(x, v, int(node.attr("axis", 0)))
    return nd_flat(x, v, int(node.attr("batch_dims", 0)))


def judged_as(node) -> str | None:
    """The TFLite op whose Vela rules judge the converter's form of an ONNX node, where it is a standard op of
    another name: ArgMin (ARG_MAX of -x) and TopK with k = 1 (ARG_MAX + REDUCE_MAX, convert/prepass's
    topk1_to_argmax); else None."""
    if node.op_type == "ArgMin":
        return "ARG_MAX"
    if node.op_type == "TopK":
        k = node.const_value(1)
        return "ARG_MAX" if k is not None and k.size == 1 and int(k.reshape(-1)[0]) == 1 else None
    return None


_INT_FORMS = {
    "Div": "int_div",
    "Xor": "not_equal",
    "Expand": "broadcast",
    "Reshape": "int_reshape",
    "Unsqueeze": "int_reshape",
    "Squeeze": "int_reshape",
    "Flatten": "int_reshape",
}
# ops whose form depends on the node (attributes, constants, dtypes); any other op's is _FORM_OF's or none
_NODE_FORMS = frozenset(
    {
        "RMSNormalization",
        "MeanVarianceNormalization",
        "ArgMax",
        "ArgMin",
        "DepthToSpace",
        "Elu",
        "GatherElements",
        "GatherND",
        "Cast",
        "CastLike",
        *_INT_FORMS,
    }
)


def written_as(node) -> str | None:
    """The form (a key of WRITES) of an ONNX node the converter writes as other ops than a standard converter, else
    None. Forms that depend on the node: DepthToSpace as transposed convolutions for a power-of-two block (else
    an interleave of channel groups), constant-index GatherElements / GatherND as a slice (one index or an even run)
    or a GATHER, Elu with alpha != 1 from ELU and RELU, casts and integer ops as TFLite's integer kernels. Asked for
    every ONNX node `check` judges for Ethos-U: an op of neither table returns at once."""
    op = node.op_type
    if op not in _NODE_FORMS:
        return _FORM_OF.get(op)
    if op in ("RMSNormalization", "MeanVarianceNormalization"):
        x = node.input_shape(0)
        return "norm_batched" if x and len(x) == 4 and isinstance(x[0], int) and x[0] > 1 else "norm"
    if op in ("ArgMax", "ArgMin"):
        return "argmax_last" if int(node.attr("select_last_index", 0)) else None
    if op == "DepthToSpace":
        return "depth_to_space" if power_of_two(int(node.attr("blocksize", 0))) else "interleave"
    if op == "Elu":
        return "elu" if float(node.attr("alpha", 1.0)) != 1.0 else None
    if op in ("GatherElements", "GatherND"):
        if not node.is_const(1):
            return None
        flat = constant_gather_flat(node)
        return "slice" if flat is not None and even_run(flat) else "gather"
    src, dst = carried_dtype(node.input_dtype(0)), carried_dtype(node.output_dtype(0))
    if op in ("Cast", "CastLike") and (src is None) != (dst is None):
        return "to_float" if dst is None else "from_float"
    if op == "CastLike" and src is None and dst is None:
        return "alias"
    if dst is None or src is None or op in ("Cast", "CastLike"):
        return None
    if op in ("Div", "Xor"):
        return _INT_FORMS[op]
    x, y = node.input_shape(0), node.output_shape(0)
    if x is not None and y is not None and tuple(x) == tuple(y):  # an integer alias: no op (ethos_u/converted.no_op)
        return None
    return _INT_FORMS[op]

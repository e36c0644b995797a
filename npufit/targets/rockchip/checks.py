"""Rockchip checks (the rule functions of every SoC; the tables are in rules.py).

Each check reads its numbers from Profile.limits, so the sentence the user sees is formatted from the same limits it
checks, and returns None when the node passes, else a short detail (the contract of targets/base.py). Conditions
fitted to the calibration records are in fitted.py, reshapes.py and swept.py.
"""

from __future__ import annotations

from ...graph import NodeView, quant
from .. import common
from .. import tflite_map as tm
from ..base import Limits, Verdict, fmt_list
from . import fitted as fit
from . import swept as sw

CPU, UNSUP = Verdict.CPU, Verdict.UNSUPPORTED


# -- graph checks --------------------------------------------------------------------------------


def dtype(node: NodeView, lim: Limits) -> str | None:
    # Where's bool condition is a mask: the select runs in its values' dtype (RKNN-C: BERT's attention-mask
    # Where ran on the NPU with a bool condition), and float values are converted by rknn.build like every float
    # activation, to float16 or to int8 (PROBE-SOC: rv1106's int8 build ran the where case's Where on the NPU)
    op = node.op_type
    d = node.output_dtype(0) if op == "Where" else quant.exec_dtype(node)
    if d is None or d in lim["dtypes"] or op in ("Cast", "Shape") or (op == "Where" and d in quant.FLOAT_DTYPES):
        return None
    if sw.int_on_npu(node, d, lim):  # CAL-R sweep: int32 Add/Sub, integer Transpose
        return None
    # a node rknn.build deletes passes whatever its dtype (asked only of a node that would fail: every node asks the
    # above)
    return None if fit.noop_expand(node) or fit.noop(node, lim) else f"computes in {d}"


# rknn-toolkit2 2.5.0 kept these on the NPU with 5-D tensors (RT-DETR decoder, source RKNN-C)
RANK_FREE = {
    "Reshape",
    "Unsqueeze",
    "Squeeze",
    "Transpose",
    "Gather",
    "Concat",
    "Add",
    "Sub",
    "Div",
}  # not Mul: 5-D Mul went to the CPU


def _rank_exempt(node: NodeView, r: int, lim: Limits) -> bool:
    if node.op_type == "Transpose":
        return r <= lim["rank_from_npu"] or fit.rank_exempt(
            node, r, lim
        )  # PROBE-R: 5-D ran on the NPU; 6-D: see fitted.py
    if fit.rank_exempt(node, r, lim):
        return True
    if node.op_type == "Slice" and r == lim["rank_from_npu"]:
        axes = common.const_ints(node, 3) if len(node.inputs) > 3 and node.inputs[3] else None
        return axes is not None and all(common.norm_axis(a, r) == 1 for a in axes)  # PROBE-R: axis 1 NPU, axes 2-4 CPU
    return node.op_type in RANK_FREE or fit.noop_expand(node) or fit.mul_add_to_bn(node)


def rank(node: NodeView, lim: Limits) -> str | None:
    r = common.max_rank(node)
    return f"rank {r}" if r > lim["max_rank"] and not _rank_exempt(node, r, lim) else None


OUTPUT_RESHAPES = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Gather"}


def _is_reshape(node: NodeView) -> bool:
    # a Gather of index 0 on a size-1 axis is a reshape; a real gather becomes a Slice/Gather layer
    return node.op_type in OUTPUT_RESHAPES and (node.op_type != "Gather" or common.is_size1_reshape(node))


def _reshape_source(node: NodeView) -> tuple[list | None, bool]:
    """The tensor a chain of reshapes starts from (its shape, and whether it is a model input): the toolkit folds
    the chain into one layout change (PROBE-R squeeze: GAP -> Squeeze -> Squeeze ran fused into the GAP)."""
    for _ in range(16):  # bounded: a cycle cannot occur in a valid graph, but a broken one must not hang
        src = node.graph.producer(node.inputs[0]) if node.inputs and node.inputs[0] else None
        if src is None or not _is_reshape(src):
            return node.input_shape(0), src is None
        node = src
    return node.input_shape(0), False


def output_layout(node: NodeView, lim: Limits) -> str | None:
    """The reshape that produces a non-4-D model output. From an NPU tensor (NC1HWC2 blocks of 8 channels) it runs on
    the NPU only when that layout already is the output's order: a 1x1 map with C % 8 == 0 (PROBE-R: conv -> Flatten of
    [1,C,1,1]: C = 8, 16, 24 NPU, 12 CPU; of [1,C,2,2]: CPU for every C; RKNN-C: MobileNetV2/BERT/LSTM logits and
    RT-DETR's final Gather-as-reshape ran on the CPU). Straight from a model input it runs on the NPU unless it is 2-D
    with an innermost dimension off the 8-grid (RKNN-C: Flatten [1,12,1,1] -> [1,12] CPU; PROBE-R: [1,8,16,16] to
    [1,2048], [1,512,4], [1,8,16,4,4] ... NPU)."""
    if not _is_reshape(node) or not common.graph_output(node) or fit.noop(node, lim):
        return None
    x, from_input = _reshape_source(node)
    y = node.output_shape(0)
    if from_input and not lim.get("input_reshape_npu", True):  # a SoC whose record ran these on the CPU (socs.py)
        return "a reshape from a model input straight to a model output"
    if not x or not y or len(y) == lim["max_rank"] or not all(isinstance(v, int) for v in list(x) + list(y)):
        return None
    align = lim["output_align"]
    if from_input:
        if len(y) == 2 and y[-1] % align:
            return f"output {list(y)}: innermost dimension {y[-1]} is not a multiple of {align}"
        return None
    one = len(x) == 4 and x[2] == x[3] == lim["output_map_hw"]
    if (one and x[1] % align == 0) or fit.unit_channel_squeeze(x, y, lim):
        return None
    if one:
        return f"output {list(y)} from a 1x1 map of {x[1]} channels, not a multiple of {align}"
    return f"output {list(y)} from an NPU tensor {list(x)}: the NC1HWC2 layout must be reordered"


# -- op checks -----------------------------------------------------------------------------------


def conv_kernel(node: NodeView, lim: Limits) -> str | None:
    k = tm.kernel(node)
    dw = tm.tflite_op(node) == "DEPTHWISE_CONV_2D"
    cap = lim["dw_kernel"] if dw else lim["conv_kernel"]
    return (
        None if all(lim["conv_min"] <= x <= cap for x in k) else f"kernel {fmt_list(k)}{' (depthwise)' if dw else ''}"
    )


def conv_stride(node: NodeView, lim: Limits) -> str | None:
    s = tm.strides(node)
    if s == tm.kernel(node) and not any(int(x) for x in (node.attr("pads") or [])):
        return None  # RKNN-C: patchify conv (kernel == stride, no pads) ran on the NPU with stride 8
    return None if all(lim["conv_min"] <= x <= lim["conv_stride"] for x in s) else f"stride {fmt_list(s)}"


def conv_pads(node: NodeView, lim: Limits) -> str | None:
    p = [int(x) for x in (node.attr("pads") or [])]
    return None if all(lim["conv_pad_min"] <= x <= lim["conv_pad"] for x in p) else f"pads {p}"


def conv_dilation(node: NodeView, lim: Limits) -> str | None:
    d = tm.dilations(node)
    if not all(lim["conv_min"] <= x <= lim["conv_dilation"] for x in d):
        return f"dilation {fmt_list(d)}"
    k = tm.kernel(node)
    x = node.input_shape(0)
    if k and d[0] > 1 and k[0] > 1 and x and isinstance(x[-1], int) and x[-1] >= lim["dilated_max_width"]:
        return f"dilated kernel with input width {x[-1]}"
    return None


def conv_transpose_config(node: NodeView, lim: Limits) -> str | None:
    s, d, k = tm.strides(node), tm.dilations(node), tm.kernel(node)
    if any(x not in lim["tconv_strides"] for x in s):
        return f"stride {fmt_list(s)}"
    if any(x != 1 for x in d) and k != [lim["tconv_dilated_kernel"]] * 2:
        return f"dilation {fmt_list(d)} with kernel {fmt_list(k)}"
    g = int(node.attr("group", 1))
    x = node.input_shape(0)
    if g != lim["tconv_group"] and not (x and g == x[1]):
        return f"group {g}"
    return None


def pool_limits(node: NodeView, lim: Limits) -> str | None:
    k, s = tm.kernel(node), tm.strides(node)
    p = [int(x) for x in (node.attr("pads") or [])]
    if any(x > lim["pool_kernel"] for x in k):
        return f"kernel {fmt_list(k)}"
    if any(x > lim["pool_stride"] for x in s):
        return f"stride {fmt_list(s)}"
    if any(x > lim["pool_pad"] for x in p):
        return f"pads {p}"
    x = node.input_shape(0)
    if x and any(isinstance(v, int) and v > lim["pool_dim"] for v in x[1:]):
        return f"input {list(x)}"
    return None


def pool_auto_pad(node: NodeView, lim: Limits) -> str | None:
    # R-PDF also excludes ceil_mode=1; PROBE-R measured shape-changing ceil_mode average and max pooling on the NPU
    if node.attr("auto_pad", "NOTSET") != "NOTSET":
        return f"auto_pad={node.attr('auto_pad')}"
    return None


def axis_range(node: NodeView, lim: Limits) -> str | None:
    r = common.rank(node, output=node.op_type == "Concat")
    a = common.norm_axis(int(node.attr("axis", 0)), r)
    if lim["axes_min"] <= a <= lim["axes_max"] or fit.rank5_from_npu(node, r, lim) or fit.split_high_rank(node, r, lim):
        return None
    return f"axis {a}"


def slice_steps(node: NodeView, lim: Limits) -> str | None:
    steps = common.const_ints(node, 4) if len(node.inputs) > 4 and node.inputs[4] else None
    if not steps or all(s == lim["slice_step"] for s in steps):
        return None
    ok = fit.space_to_depth(node, lim) or sw.slice_flip(node, lim) or sw.strided_matmul_grid(node, lim)
    return None if ok else f"steps {steps}"


def gather_elements_indices(node: NodeView, lim: Limits) -> str | None:
    """PROBE-R: constant indices of the data's shape except along the axis ran on the NPU (axes 1, 2, 3; rank 3 and 4);
    indices also narrower on another axis, or computed at run time (top-k, as in RT-DETR), ran on the CPU."""
    if not node.is_const(1):
        return "indices are computed at run time"
    x, idx = node.input_shape(0), node.input_shape(1)
    if not x or not idx or len(x) != len(idx):
        return "indices of another rank"
    a = common.norm_axis(int(node.attr("axis", 0)), len(x))
    other = [i for i in range(len(x)) if i != a and x[i] != idx[i]]
    return f"indices {list(idx)} differ from the data {list(x)} on axis {other[0]}" if other else None


def tile_axes(node: NodeView, lim: Limits) -> str | None:
    """PROBE-R: repeating one of C, H or W ran on the NPU; repeating the batch, or two axes at once, ran on the CPU."""
    reps = common.const_ints(node, 1)
    if reps is None:
        return "repeats are not constant"
    if reps and reps[0] != 1:
        return f"repeats {reps} tile the batch axis"
    tiled = [i for i, r in enumerate(reps) if r != 1]
    return f"repeats {reps} tile {len(tiled)} axes" if len(tiled) > 1 else None


def gather_const_indices(node: NodeView, lim: Limits) -> str | None:
    idx = node.input(1)
    if (
        idx is not None
        and idx.rank is not None
        and (idx.rank > lim["gather_indices_rank"] or idx.rank == 2 and not sw.gather_rank2(node, lim))
    ):
        return f"indices of rank {idx.rank}"
    r = common.rank(node)
    a = common.norm_axis(int(node.attr("axis", 0)), r)
    return f"axis {a}" if a > lim["axes_max"] else fit.gather_indices(node, lim)


def pad_mode(node: NodeView, lim: Limits) -> str | None:
    mode = node.attr("mode", "constant")
    if not sw.pad_mode_npu(mode, lim):
        return f"mode {mode}"
    why = sw.pad3_end(node, mode, lim, fit.pad_rank3_axis1(node, lim) if mode == "constant" else None)
    if why or mode != "reflect":
        return why
    x = node.input_shape(0)
    if x and len(x) == 4 and all(isinstance(v, int) for v in x[1:]):
        if x[1] > lim["reflect_pad_ch"] or x[2] > lim["reflect_pad_ch"] or x[3] > lim["reflect_pad_w"]:
            return f"reflect pad on {list(x)}"
    return None


def resize_config(node: NodeView, lim: Limits) -> str | None:
    mode = node.attr("mode", "nearest")
    ctm = node.attr("coordinate_transformation_mode", "half_pixel")
    if mode not in ("nearest", "linear"):
        return f"mode {mode}"
    if mode == "linear" and not sw.resize_linear_mode(ctm, lim):
        return f"linear with {ctm}"
    if mode == "nearest":
        return None  # PROBE-R: nearest x1.5 ran on the NPU (bilinear x1.5 on the CPU); integer factors 2..8 both
    x, y = node.input_shape(0), node.output_shape(0)
    if not x or not y or len(x) != 4 or not all(isinstance(v, int) for v in list(x[2:]) + list(y[2:])):
        return None
    for a, b in zip(x[2:], y[2:]):
        if b == a or (a == 1 and x[2] == x[3] == 1):
            continue
        if (b > a and b % a == 0 and b // a in lim["resize_scales"]) or (
            b < a and a % b == 0 and sw.resize_down(a // b, lim)
        ):
            continue
        return f"{x[2]}x{x[3]} → {y[2]}x{y[3]}"
    return None


def _axis_of_softmax(node: NodeView) -> tuple[int | None, int]:
    """(rank, normalised axis) of a Softmax / Hardmax (the axis defaults to -1 from opset 13, 1 before)."""
    r = common.rank(node)
    return r, common.norm_axis(int(node.attr("axis", -1 if node.graph.opsets.get("ai.onnx", 13) >= 13 else 1)), r)


def softmax_axis(node: NodeView, lim: Limits) -> str | None:
    r, a = _axis_of_softmax(node)
    if a in lim["softmax_axes"]:
        return None
    return None if fit.softmax_last_axis(node, r, a, lim) else f"axis {a}"


def softmax_npu_axes(node: NodeView, lim: Limits) -> str | None:
    """A SoC that runs Softmax on the NPU along `softmax_npu_axes` only (RK3566)."""
    _, a = _axis_of_softmax(node)
    return None if a in lim["softmax_npu_axes"] else f"axis {a}"


def const_divisor(node: NodeView, lim: Limits) -> str | None:
    return None if len(node.inputs) > 1 and node.is_const(1) else "divisor computed at run time"


def pow_exponent(node: NodeView, lim: Limits) -> str | None:
    e = common.const_scalar(node, 1)
    return None if e is not None and e in lim["pow_exponents"] else f"exponent {e if e is not None else 'not constant'}"


def div_dtype(node: NodeView, lim: Limits) -> str | None:
    d = quant.exec_dtype(node)
    return f"computes in {d}" if d in ("int8", "uint8") and not fit.int8_div(node, lim) else None


def matmul_k(node: NodeView, lim: Limits) -> str | None:
    x = node.input_shape(0)
    k = x[-1] if x else None
    return None if not isinstance(k, int) or k <= lim["matmul_k"] else f"K = {k}"


def rnn_size(node: NodeView, lim: Limits) -> str | None:
    x = node.input_shape(0)
    hs = node.attr("hidden_size")
    if x and len(x) == 3 and all(isinstance(v, int) for v in x):
        seq, batch, size = x
        if (
            max(seq, size) > lim["rnn_dim"]
            or batch > lim["rnn_dim"]
            or (batch > lim["rnn_batch_free"] and batch % lim["rnn_batch_multiple"])
        ):
            return f"seq {seq}, batch {batch}, input {size}"
    if hs is not None and int(hs) > lim["rnn_dim"]:
        return f"hidden {hs}"
    return None


def cast_cpu(node: NodeView, lim: Limits) -> str | None:
    return (
        None if fit.noop_cast(node) or sw.cast_on_npu(node, lim) else f"{node.input_dtype(0)} → {node.output_dtype(0)}"
    )


def qdq_absorbed(node: NodeView, lim: Limits) -> str | None:
    return None if quant.absorbed(node) else "bounds a CPU op"

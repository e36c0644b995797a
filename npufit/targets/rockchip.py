"""Rockchip RK3588 (RKNPU2, rknn-toolkit2 2.3.x) — ONNX operator list and RK3588 limits (targets.md §4).

Three outcomes: `npu` (RK3588 NPU op within its limits), `cpu` (the RKNN runtime has a CPU kernel: the op
is outside the NPU list or breaks an NPU limit), `unsupported` (the converter rejects the op).
Every limit is its own rule (`rk3588.<op>.<what>`) so a measured correction touches one line.
"""
from __future__ import annotations

from ..graph import quant
from ..graph.model import NodeView
from . import common, patterns, rockchip_fitted as fit, rockchip_socs, tflite_map as tm
from .base import Composite, Executes, Fallback, OpSupport, Profile, Rule, Verdict

NPU, CPU, UNSUP = Verdict.NPU, Verdict.CPU, Verdict.UNSUPPORTED
N = "rk3588"

SOURCES = {
    "R-OP": "airockchip/rknn-toolkit2 doc/RKNNToolKit2_OP_Support-2.3.2.md @ 59a913d (converter op list)",
    "R-PDF": "airockchip/rknn-toolkit2 doc/05_RKNN_Compiler_Support_Operator_List_V2.3.2.pdf @ 59a913d (§3.2 RK3588 NPU limits, Ch.4 CPU ops)",
    "INF": "inferred from R-PDF (see targets.md §4a)",
    "RKNN-C": "observed: rknn-toolkit2 2.5.0 build for rk3588, Network Layer Information Table (benchmarks/compile_rk3588.py)",
    "PROBE-R": "measured: npufit probe --target rk3588 --compiler rknn --sweep (rknn-toolkit2 2.5.0, float16 builds); "
               "record docs/probe/rk3588-measured.json, matrix docs/probe/rk3588-matrix.md",
    "CAL-R": "measured: rknn-toolkit2 2.5.0 builds of the 48-architecture calibration corpus (benchmarks/calibration); "
             "records docs/calibration/rk3588-*.json; each condition names the models and families that show it",
}

LIMITS = {
    "dtypes": common.Choices(("int8", "uint8", "float16", "float32")),
    "max_rank": 4,
    # ranks above max_rank that stay on the NPU: ops on an NPU op's tensor (and Transposes), Splits, 6-D Transposes
    "rank_from_npu": 5, "rank_split_max": 6, "rank_transpose_max": 6,
    # R-PDF lists depthwise kernels to 8, strides to 7 and pooling kernels to 7; PROBE-R measured depthwise 3..31,
    # conv stride 16 and max-pooling kernels to 64 (64x64 input) on the NPU: the limits are the largest values measured
    "conv_min": 1, "conv_kernel": 31, "dw_kernel": 31, "conv_stride": 16, "conv_pad_min": 0, "conv_pad": 15, "conv_dilation": 31, "dilated_max_width": 16383,
    "tconv_strides": common.Choices((1, 2, 4, 8)),
    "tconv_group": 1, "tconv_dilated_kernel": 1,  # group 1 or depthwise; dilation only with a 1x1 kernel
    "pool_kernel": 64, "pool_stride": 8, "pool_pad": 7, "pool_dim": 8192,
    "resize_scales": common.Choices((2, 3, 4, 5, 6, 7, 8)),
    "resize_linear_modes": common.Choices(("half_pixel", "pytorch_half_pixel", "align_corners")),
    "softmax_axes": common.Choices((1, 3)),
    "softmax_last_axes": 4,  # a last-axis softmax with at most this many non-unit axes (CAL-R, rockchip_fitted)
    "pow_exponents": common.Choices((0.0, 1.0, 2.0, 3.0, 0.5, -0.5)),
    "matmul_k": 8192,
    "rnn_dim": 8192,
    "rnn_batch_multiple": 4, "rnn_batch_free": 1,  # a batch above rnn_batch_free must be a multiple of rnn_batch_multiple
    "reflect_pad_ch": 8192, "reflect_pad_w": 8176,
    "axes_min": 0, "axes_max": 3,
    "slice_step": 1,  # other steps only inside a space-to-depth reorg
    "gather_indices_rank": 1,
    "output_align": 8,  # RKNN-C, float16 builds
    "output_map_hw": 1,  # a non-4-D output reshaped from an NPU tensor of this H and W keeps the NC1HWC2 order
    "d2s_blocks": common.Choices((2, 4, 8)),  # CAL-R cases: DepthToSpace x2/x4/x8 NPU, x3/x6 CPU
    # the RKNN runtime converts layout (NC1HWC2 <-> NCHW) and dtype when a tensor crosses to a CPU op (INF)
    "boundary_layout": "NC1HWC2",
}


def _r(rid, text, fn, fix=(), src="R-PDF", on_fail=CPU, fix_rules=()):
    return Rule(f"{N}.{rid}", text, fn, on_fail, tuple(fix), src, tuple(fix_rules))


def _fmt(v):
    return "x".join(str(x) for x in v)


# -- graph rules ---------------------------------------------------------------------------------

def _dtype(node, lim):
    if fit.noop_expand(node) or fit.noop(node, lim):
        return None
    # Where's bool condition is a mask: the select runs in its values' dtype (RKNN-C: BERT's attention-mask
    # Where ran on the NPU with a bool condition), and float values are converted by rknn.build like every float
    # activation, to float16 or to int8 (PROBE-SOC: rv1106's int8 build ran the where case's Where on the NPU)
    d = node.output_dtype(0) if node.op_type == "Where" else quant.exec_dtype(node)
    if node.op_type == "Where" and d in quant.FLOAT_DTYPES:
        return None
    return None if d is None or d in lim["dtypes"] or node.op_type in ("Cast", "Shape") else f"computes in {d}"


# rknn-toolkit2 2.5.0 kept these on the NPU with 5-D tensors (RT-DETR decoder, source RKNN-C)
RANK_FREE = {"Reshape", "Unsqueeze", "Squeeze", "Transpose", "Gather", "Concat", "Add", "Sub", "Div"}  # not Mul: 5-D Mul went to the CPU


def _rank_exempt(node, r: int, lim) -> bool:
    if node.op_type == "Transpose":
        return r <= lim["rank_from_npu"] or fit.rank_exempt(node, r, lim)  # PROBE-R: 5-D ran on the NPU; 6-D: see rockchip_fitted
    if fit.rank_exempt(node, r, lim):
        return True
    if node.op_type == "Slice" and r == lim["rank_from_npu"]:
        axes = common.const_ints(node, 3) if len(node.inputs) > 3 and node.inputs[3] else None
        return axes is not None and all(common.norm_axis(a, r) == 1 for a in axes)  # PROBE-R: axis 1 NPU, axes 2-4 CPU
    return node.op_type in RANK_FREE or fit.noop_expand(node) or fit.mul_add_to_bn(node)


def _rank(node, lim):
    r = max(common.ranks(node), default=0)
    return f"rank {r}" if r > lim["max_rank"] and not _rank_exempt(node, r, lim) else None


OUTPUT_RESHAPES = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Gather"}


def _is_reshape(node) -> bool:
    # a Gather of index 0 on a size-1 axis is a reshape; a real gather becomes a Slice/Gather layer
    return node.op_type in OUTPUT_RESHAPES and (node.op_type != "Gather" or common.is_size1_reshape(node))


def _reshape_source(node) -> tuple[list | None, bool]:
    """The tensor a chain of reshapes starts from (its shape, and whether it is a model input): the toolkit folds
    the chain into one layout change (PROBE-R squeeze: GAP -> Squeeze -> Squeeze ran fused into the GAP)."""
    for _ in range(16):  # bounded: a cycle cannot occur in a valid graph, but a broken one must not hang
        src = node.graph.producer(node.inputs[0]) if node.inputs and node.inputs[0] else None
        if src is None or not _is_reshape(src):
            return node.input_shape(0), src is None
        node = src
    return node.input_shape(0), False


def _output_layout(node, lim):
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
    if from_input and not lim.get("input_reshape_npu", True):  # a SoC whose record ran these on the CPU (rockchip_socs)
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


GRAPH_RULES = (
    _r("dtype", "NPU ops compute in int8 or float16 (float32 models are quantized or converted to float16 by rknn.build)", _dtype,
       ("keep integer index math out of the network body",)),
    _r("rank", "NPU tensors are {max_rank}-D [batch, channel, height, width]: more than {max_rank} dimensions run on the CPU, except "
       "layout ops, {rank_from_npu}-D ops and {rank_from_npu}-D/{rank_split_max}-D splits on tensors an NPU op produced, and "
       "{rank_transpose_max}-D transposes that keep the innermost axis "
       "and move no odd-sized axis back (CAL-R)", _rank,
       ("reshape to 4-D or fewer",), "INF"),
    _r("output_layout", "a reshape that produces a non-{max_rank}-D model output runs on the CPU unless the NPU's NC1HWC2 layout "
       "(blocks of {output_align} channels) already is its order: a {output_map_hw}x{output_map_hw} map with a multiple of "
       "{output_align} channels "
       "(from a model input: unless 2-D with an innermost dimension off the {output_align}-grid)", _output_layout,
       ("return the 4-D tensor and reshape on the host",), "PROBE-R"),
)


# -- op rules -----------------------------------------------------------------------------------

def _conv_kernel(node, lim):
    k = tm.kernel(node)
    dw = tm.tflite_op(node) == "DEPTHWISE_CONV_2D"
    cap = lim["dw_kernel"] if dw else lim["conv_kernel"]
    return None if all(lim["conv_min"] <= x <= cap for x in k) else f"kernel {_fmt(k)}{' (depthwise)' if dw else ''}"


def _conv_stride(node, lim):
    s = tm.strides(node)
    if s == tm.kernel(node) and not any(int(x) for x in (node.attr("pads") or [])):
        return None  # RKNN-C: patchify conv (kernel == stride, no pads) ran on the NPU with stride 8
    return None if all(lim["conv_min"] <= x <= lim["conv_stride"] for x in s) else f"stride {_fmt(s)}"


def _conv_pads(node, lim):
    p = [int(x) for x in (node.attr("pads") or [])]
    return None if all(lim["conv_pad_min"] <= x <= lim["conv_pad"] for x in p) else f"pads {p}"


def _conv_dilation(node, lim):
    d = tm.dilations(node)
    if not all(lim["conv_min"] <= x <= lim["conv_dilation"] for x in d):
        return f"dilation {_fmt(d)}"
    k = tm.kernel(node)
    x = node.input_shape(0)
    if k and d[0] > 1 and k[0] > 1 and x and isinstance(x[-1], int) and x[-1] >= lim["dilated_max_width"]:
        return f"dilated kernel with input width {x[-1]}"
    return None


def _tconv(node, lim):
    s, d, k = tm.strides(node), tm.dilations(node), tm.kernel(node)
    if any(x not in lim["tconv_strides"] for x in s):
        return f"stride {_fmt(s)}"
    if any(x != 1 for x in d) and k != [lim["tconv_dilated_kernel"]] * 2:
        return f"dilation {_fmt(d)} with kernel {_fmt(k)}"
    g = int(node.attr("group", 1))
    x = node.input_shape(0)
    if g != lim["tconv_group"] and not (x and g == x[1]):
        return f"group {g}"
    return None


def _pool(node, lim):
    k, s = tm.kernel(node), tm.strides(node)
    p = [int(x) for x in (node.attr("pads") or [])]
    if any(x > lim["pool_kernel"] for x in k):
        return f"kernel {_fmt(k)}"
    if any(x > lim["pool_stride"] for x in s):
        return f"stride {_fmt(s)}"
    if any(x > lim["pool_pad"] for x in p):
        return f"pads {p}"
    x = node.input_shape(0)
    if x and any(isinstance(v, int) and v > lim["pool_dim"] for v in x[1:]):
        return f"input {list(x)}"
    return None


def _pool_auto_pad(node, lim):
    # R-PDF also excludes ceil_mode=1; PROBE-R measured shape-changing ceil_mode average and max pooling on the NPU
    if node.attr("auto_pad", "NOTSET") != "NOTSET":
        return f"auto_pad={node.attr('auto_pad')}"
    return None


def _axis_le3(node, lim):
    r = common.rank(node, output=node.op_type == "Concat")
    a = common.norm_axis(int(node.attr("axis", 0)), r)
    if lim["axes_min"] <= a <= lim["axes_max"] or (r == 5 and fit.rank5_from_npu(node, r, lim)) or fit.split_high_rank(node, r, lim):
        return None
    return f"axis {a}"


def _slice_steps(node, lim):
    steps = common.const_ints(node, 4) if len(node.inputs) > 4 and node.inputs[4] else None
    if not steps or all(s == lim["slice_step"] for s in steps):
        return None
    return None if fit.space_to_depth(node, lim) else f"steps {steps}"


def _gather_elements(node, lim):
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


def _tile(node, lim):
    """PROBE-R: repeating one of C, H or W ran on the NPU; repeating the batch, or two axes at once, ran on the CPU."""
    reps = common.const_ints(node, 1)
    if reps is None:
        return "repeats are not constant"
    if reps and reps[0] != 1:
        return f"repeats {reps} tile the batch axis"
    tiled = [i for i, r in enumerate(reps) if r != 1]
    return f"repeats {reps} tile {len(tiled)} axes" if len(tiled) > 1 else None


def _gather(node, lim):
    idx = node.input(1)
    if idx is not None and idx.rank is not None and idx.rank > lim["gather_indices_rank"]:
        return f"indices of rank {idx.rank}"
    r = common.rank(node)
    a = common.norm_axis(int(node.attr("axis", 0)), r)
    return f"axis {a}" if a > lim["axes_max"] else fit.gather_indices(node, lim)


def _pad_mode(node, lim):
    mode = node.attr("mode", "constant")
    if mode == "constant":
        return fit.pad_rank3_axis1(node, lim)
    if mode == "reflect":
        x = node.input_shape(0)
        if x and len(x) == 4 and all(isinstance(v, int) for v in x[1:]):
            if x[1] > lim["reflect_pad_ch"] or x[2] > lim["reflect_pad_ch"] or x[3] > lim["reflect_pad_w"]:
                return f"reflect pad on {list(x)}"
        return None
    return f"mode {mode}"


def _resize(node, lim):
    mode = node.attr("mode", "nearest")
    ctm = node.attr("coordinate_transformation_mode", "half_pixel")
    if mode not in ("nearest", "linear"):
        return f"mode {mode}"
    if mode == "linear" and ctm not in lim["resize_linear_modes"]:
        return f"linear with {ctm}"
    if mode == "nearest":
        return None  # PROBE-R: nearest x1.5 ran on the NPU (bilinear x1.5 on the CPU); integer factors 2..8 both
    x, y = node.input_shape(0), node.output_shape(0)
    if not x or not y or len(x) != 4 or not all(isinstance(v, int) for v in list(x[2:]) + list(y[2:])):
        return None
    for a, b in zip(x[2:], y[2:]):
        if b == a or (a == 1 and x[2] == x[3] == 1):
            continue
        if b % a or b // a not in lim["resize_scales"]:
            return f"{x[2]}x{x[3]} → {y[2]}x{y[3]}"
    return None


def _softmax(node, lim):
    r = common.rank(node)
    a = common.norm_axis(int(node.attr("axis", -1 if node.graph.opsets.get("ai.onnx", 13) >= 13 else 1)), r)
    if a in lim["softmax_axes"]:
        return None
    return None if fit.softmax_last_axis(node, r, a, lim) else f"axis {a}"


def _pow(node, lim):
    e = common.const_scalar(node, 1)
    return None if e is not None and e in lim["pow_exponents"] else f"exponent {e if e is not None else 'not constant'}"


def _div_dtype(node, lim):
    d = quant.exec_dtype(node)
    return f"computes in {d}" if d in ("int8", "uint8") and not fit.int8_div(lim) else None


def _matmul(node, lim):
    x = node.input_shape(0)
    k = x[-1] if x else None
    return None if not isinstance(k, int) or k <= lim["matmul_k"] else f"K = {k}"


def _rnn(node, lim):
    x = node.input_shape(0)
    hs = node.attr("hidden_size")
    if x and len(x) == 3 and all(isinstance(v, int) for v in x):
        seq, batch, size = x
        if max(seq, size) > lim["rnn_dim"] or batch > lim["rnn_dim"] or (batch > lim["rnn_batch_free"] and batch % lim["rnn_batch_multiple"]):
            return f"seq {seq}, batch {batch}, input {size}"
    if hs is not None and int(hs) > lim["rnn_dim"]:
        return f"hidden {hs}"
    return None


def _cast(node, lim):
    return None if fit.noop_cast(node) else f"{node.input_dtype(0)} → {node.output_dtype(0)}"


def _qdq(node, lim):
    return None if quant.absorbed(node) else "bounds a CPU op"


def _ops() -> dict[str, OpSupport]:
    ops: dict[str, OpSupport] = {}

    def add(op, status=NPU, rules=(), reason="", fix=(), src="R-PDF", note="", fix_rules=()):
        ops[op] = OpSupport(op, status, tuple(rules), reason, tuple(fix), src, note, tuple(fix_rules))

    conv_rules = (
        _r("conv.kernel", "convolution kernels must be {conv_min}..{conv_kernel} (depthwise too: 3..{dw_kernel} measured on the NPU)", _conv_kernel,
           ("split large kernels",), "PROBE-R"),
        _r("conv.stride", "convolution stride must be {conv_min}..{conv_stride}", _conv_stride, ("use a smaller stride followed by pooling",), "PROBE-R"),
        _r("conv.pads", "convolution pads must each be {conv_pad_min}..{conv_pad}", _conv_pads, ("move large padding into a Pad op",)),
        _r("conv.dilation", "dilation must be {conv_min}..{conv_dilation}; a dilated kernel needs input width < {dilated_max_width}", _conv_dilation),
    )
    add("Conv", rules=conv_rules, note="fuses Relu/Clip/LeakyRelu/Sigmoid/... that follow")
    add("ConvTranspose", rules=(conv_rules[0], _r("conv_transpose.config", "transposed convolution: stride in {tconv_strides}, group {tconv_group} "
                                                   "(or depthwise), dilation only with a {tconv_dilated_kernel}x{tconv_dilated_kernel} kernel", _tconv, ("use Resize + Conv",))))
    pool = _r("pool.limits", "pooling: kernel ≤ {pool_kernel}, stride ≤ {pool_stride}, pads ≤ {pool_pad}, C/H/W ≤ {pool_dim}", _pool,
              src="PROBE-R")  # kernel measured; stride/pads/dims from the R-PDF
    ceil = _r("pool.auto_pad", "pooling supports only auto_pad=NOTSET (explicit pads)", _pool_auto_pad, ("export with explicit pads",))
    add("MaxPool", rules=(pool, ceil))
    add("AveragePool", rules=(pool, ceil))
    # RKNN-C: the R-PDF 7x7 limit is the native op's; rknn.build splits larger global pooling into a chain of NPU
    # convs ('_2conv0..2', average) or pooling tiles ('_tile0..2', max): 20x20, 64x64, 160x160 and TCN's 1x32 all ran on the NPU
    add("GlobalAveragePool", src="RKNN-C", note="any size: rknn.build splits it into NPU convs")
    add("GlobalMaxPool", src="RKNN-C", note="any size: rknn.build splits it into NPU pooling tiles")
    for op in ("Add", "Sub", "Mul", "Max", "Min", "Sigmoid", "Tanh", "Relu", "Clip", "PRelu", "LeakyRelu", "HardSigmoid", "HardSwish",
               "Elu", "Softplus", "BatchNormalization", "Where", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Expand", "Gemm",
               "LayerNormalization", "Identity"):
        add(op)
    # R-PDF lists these as CPU ops or not at all; rknn-toolkit2 2.5.0 ran them on the NPU (probe cases
    # instancenorm2d, pixel_shuffle, sqrt, abs, neg)
    for op in ("InstanceNormalization", "Sqrt", "Abs", "Neg"):
        add(op, src="PROBE-R")
    add("DepthToSpace", rules=(_r("depth_to_space.block", "DepthToSpace runs on the NPU with block size {d2s_blocks} "
                                                          "(3 and 6 measured on the CPU)", fit.depth_to_space,
                                  ("upsample by 2, 4 or 8 per pixel shuffle",), "CAL-R"),), src="PROBE-R")
    add("Tile", rules=(_r("tile.axes", "Tile runs on the NPU when it repeats one of C, H, W; repeating the batch or two axes "
                                       "runs on the CPU", _tile, ("tile one axis at a time, and keep batch repeats on the host",), "PROBE-R"),))
    add("GatherElements", rules=(_r("gather_elements.indices", "GatherElements runs on the NPU when its indices are constant and "
                                                               "have the data's shape except along the gather axis", _gather_elements,
                                    ("gather along one axis with indices spanning the others",), "PROBE-R"),))
    add("Div", rules=(_r("div.dtype", "Div runs on the NPU in float16 and int8 builds (measured; the 2.3.2 document says an int8 "
                                      "Div falls back to the CPU)", _div_dtype, ("multiply by the reciprocal constant instead",), "CAL-R"),))
    add("Pow", rules=(_r("pow.exponent", "Pow needs a constant exponent in {pow_exponents}", _pow, ("use Mul for small integer powers",)),))
    ax = _r("axis.range", "the axis must be {axes_min}..{axes_max}", _axis_le3)
    add("Concat", rules=(ax,))
    add("Split", rules=(ax,))
    add("Slice", rules=(_r("slice.steps", "a Slice with steps other than {slice_step} runs on the NPU only as part of a space-to-depth reorg "
                                          "(every phase concatenated again, as YOLOv5's Focus and Swin's patch merging); alone "
                                          "it runs on the CPU", _slice_steps,
                           ("concatenate every phase, or use SpaceToDepth / a strided conv",), "CAL-R"),))
    add("Gather", rules=(_r("gather.indices", "Gather needs constant rank-{gather_indices_rank} indices and an axis {axes_min}..{axes_max} (indices computed at run "
                                              "time: CPU, CAL-R)", _gather),))
    # R-PDF 2.3.2 gives size limits per permutation; PROBE-R (transpose_*_size, conv -> permute -> relu) measured
    # [0,1,3,2], [0,2,3,1] and [0,3,1,2] on the NPU up to 8x256x256 and 256x16x16, past every one of them
    add("Transpose", src="PROBE-R", note="4-D permutations measured on the NPU up to 8x256x256 and 256x16x16; "
                                         "the 2.3.2 document's per-permutation size limits were not observed")
    add("Pad", rules=(_r("pad.mode", "Pad supports constant mode (a 3-D tensor padded at the end of axis 1 runs on the CPU, CAL-R), and "
                                     "reflect with C,H ≤ {reflect_pad_ch}, W ≤ {reflect_pad_w}", _pad_mode),))
    add("Resize", rules=(_r("resize.config", "Resize: nearest (any scale), or linear with {resize_linear_modes} and integer H/W scale factors {resize_scales:..}", _resize,
                            ("upsample by an integer factor 2..8",), "PROBE-R"),))
    add("Softmax", rules=(_r("softmax.axis", "Softmax runs on the NPU along axis {softmax_axes:#|or}, or along the last axis when at most "
                                             "{softmax_last_axes} axes are larger than one (CAL-R)", _softmax, ("transpose so the softmax axis is the channel axis",)),))
    add("Hardmax", rules=(_r("softmax.axis", "Hardmax runs on the NPU along axis {softmax_axes:#|or} only", _softmax),))
    add("MatMul", rules=(_r("matmul.k", "MatMul (exMatMul) needs K ≤ {matmul_k}", _matmul),))
    rnn = _r("rnn.size", "LSTM/GRU: seq_len, input and hidden size ≤ {rnn_dim}; batch ≤ {rnn_dim} and a multiple of {rnn_batch_multiple} when > {rnn_batch_free}", _rnn)
    add("LSTM", rules=(rnn,))
    add("GRU", rules=(rnn,))
    qdq = _r("qdq.absorbed", "a QuantizeLinear/DequantizeLinear pair is folded into the int8 op it wraps; one bounding a CPU op is a CPU conversion", _qdq)
    add("QuantizeLinear", rules=(qdq,))
    add("DequantizeLinear", rules=(qdq,))
    cpu_ops = {
        "LogSoftmax": "R-PDF", "Erf": "R-PDF", "Exp": "R-PDF", "Log": "R-PDF",
        "Floor": "R-PDF", "Round": "R-PDF", "Cos": "R-PDF", "Sin": "R-PDF", "Not": "R-PDF", "And": "R-PDF",
        "Mod": "R-PDF", "Equal": "R-PDF", "Greater": "R-PDF", "Less": "R-PDF", "GreaterOrEqual": "R-PDF", "LessOrEqual": "R-PDF",
        "LpNormalization": "R-PDF", "LRN": "R-PDF", "ReduceMax": "R-PDF",
        "ReduceMin": "R-PDF", "ArgMax": "R-PDF", "ArgMin": "R-PDF", "TopK": "R-PDF",
        "SpaceToDepth": "R-PDF",
        # RKNN-C: rknn-toolkit2 2.5.0 converts these and runs them as CPU layers (RT-DETR's GridSample, BERT's IsNaN)
        "GridSample": "RKNN-C", "IsNaN": "RKNN-C",
        # PROBE-R: the converter takes these (R-OP does not list them) and runs them as CPU layers
        "Selu": "PROBE-R", "Reciprocal": "PROBE-R",
    }
    add("Cast", rules=(_r("cast.cpu", "Cast is not in the RK3588 NPU operator list: the RKNN runtime runs its CPU kernel "
                              "(a Cast to the dtype it already has is deleted by rknn.build, RKNN-C)", _cast, src="R-PDF"),))
    fixes = {"ReduceMean": ("mean_to_global_pool", "reduce_keepdims"), "Mod": ("mod_decompose",), "TopK": ("topk1_to_argmax",)}
    for op in ("ReduceMean", "ReduceSum"):  # RKNN-C: rewritten to NPU convs by rknn.build
        add(op, NPU, src="RKNN-C", note="the toolkit rewrites it to a conv / global pooling on the NPU")
    for op, src in cpu_ops.items():
        add(op, CPU, reason=f"{op} is not in the RK3588 NPU operator list: the RKNN runtime runs its CPU kernel", src=src,
            fix_rules=fixes.get(op, ()), fix=("the rewrite moves it to an NPU op" ,) if op in fixes else ())
    add("ScatterND", rules=(_r("scatter_nd.measured", "ScatterND runs on the NPU with constant indices (the 2.3.2 document "
                                                     "lists a CPU kernel)", fit.scatter_nd,
                               src="CAL-R"),), src="CAL-R")
    add("ReduceL2", rules=(_r("reduce_l2.measured", "ReduceL2 runs on the NPU (measured in float16 and int8 builds; the 2.3.2 document "
                                                   "lists a CPU kernel)", fit.reduce_l2, src="CAL-R"),), src="CAL-R")
    add("Einsum", rules=(_r("einsum.measured", "Einsum converts and runs on the NPU (every form measured: two and three "
                                               "operands, ellipsis; the 2.3.2 operator list has no Einsum)", fit.einsum,
                            ("write the contraction as MatMul",), "CAL-R", on_fail=UNSUP),), src="CAL-R")
    for op in ("GatherND", "ScatterElements", "GroupNormalization", "RNN", "NonMaxSuppression", "NonZero",
               "CumSum", "Range", "Ceil", "Sign", "Trilu", "Unique", "Loop", "Scan", "DeformConv", "If", "EyeLike"):
        add(op, UNSUP, reason=f"{op} is not supported by the RKNN-Toolkit2 converter: conversion fails", src="R-OP",
            fix=("cut the model before this op (npufit split) or rewrite it",))
    return ops


def _io_conversion(node: NodeView) -> bool:
    g = node.graph
    if node.op_type == "QuantizeLinear":
        return bool(node.inputs) and node.inputs[0] in g.input_names
    return node.op_type == "DequantizeLinear" and any(o in g.output_names for o in node.outputs)


def op_key(node: NodeView) -> str:
    if node.graph.format == "tflite":
        return tm.onnx_op(node)
    if _io_conversion(node):
        return "IO_" + node.op_type
    return node.key


def profiles() -> dict[str, Profile]:
    ops = _ops()
    io = OpSupport("IO_QuantizeLinear", Verdict.FOLDED, reason="RKNN folds model-boundary quantization into its input/output conversion "
                   "(set int8 pass-through I/O to skip it)", source="INF")
    ops["IO_QuantizeLinear"] = io
    ops["IO_DequantizeLinear"] = OpSupport("IO_DequantizeLinear", io.status, reason=io.reason, source="INF")
    fused = "the RKNN converter fuses it into one NPU op ({name})"
    comps = (
        Composite(f"{N}.swish", "SiLU/Swish", fused.format(name="exSwish"), patterns.match_silu, NPU, source="R-PDF"),
        Composite(f"{N}.gelu", "GELU", fused.format(name="exGelu"), patterns.match_gelu_erf, NPU, source="R-PDF"),
        Composite(f"{N}.gelu_tanh", "GELU (tanh)", fused.format(name="exGelu"), patterns.match_gelu_tanh, NPU, source="R-PDF"),
        Composite(f"{N}.layernorm", "LayerNorm", fused.format(name="exNorm"), patterns.match_layernorm, NPU, source="R-PDF"),
    )
    base = Profile(
        name=N, title="Rockchip RK3588 (RKNPU2; rknn-toolkit2 2.3.2 docs, checked against 2.5.0)", vendor="Rockchip",
        summary="ONNX models converted by RKNN-Toolkit2; ops outside the RK3588 NPU list or its limits run as CPU kernels in the RKNN runtime; "
                "ops the converter does not know fail the conversion.",
        fallback=Fallback.CPU, limits=dict(LIMITS), ops=ops, executes=Executes.FP16_INT8, family="rockchip", compiler="rknn",
        # Reduce*/ArgMax/Erf fall back to the CPU; MatMul only within exMatMul limits while a 1x1 Conv is plain NPU
        rewrite_rules=common.REWRITE_COMMON + ("topk1_to_argmax", "linear_to_conv1x1", "gelu_tanh"), unknown=OpSupport("*", UNSUP, reason="{op} is not in RKNN-Toolkit2's ONNX operator list: conversion fails", source="R-OP"),
        graph_rules=GRAPH_RULES, composites=comps, sources=dict(SOURCES), input_formats=("onnx", "tflite"),
        judged_formats=("onnx", "tflite"), op_key=op_key,
        notes=("CPU-kernel ops run in the RKNN runtime on the Cortex-A cores; each NPU↔CPU crossing converts layout (NC1HWC2↔NCHW) and dtype",),
    )
    return {N: base, **rockchip_socs.profiles(base)}  # RK3576, RK3566/68, RV1106/03: RK3588's rules + their measured differences

"""Rockchip RK3588 (RKNPU2, rknn-toolkit2 2.3.x) — ONNX operator list and RK3588 limits.

Three outcomes: `npu` (RK3588 NPU op within its limits), `cpu` (the RKNN runtime has a CPU kernel: the op
is outside the NPU list or breaks an NPU limit), `unsupported` (the converter rejects the op).
Every limit is its own rule (`rk3588.<op>.<what>`) so a measured correction touches one line. Rule functions and
checks are in checks.py, the rule tables in rules.py, the conditions fitted to the calibration records in fitted.py,
reshapes.py and swept.py; RK3576, RK3566 and RV1106 are data in socs.py (each SoC a profile of its own).
"""

from __future__ import annotations

from dataclasses import replace

from ...graph.model import NodeView
from ...toolchains import RKNN
from .. import common, patterns, sweeps
from .. import tflite_map as tm
from ..base import Composite, Fallback, Hint, Limits, OpSupport, Profile, Verdict
from . import bounded
from . import swept as sw
from .rules import graph_rules, op_rules
from .socs import CAL, SOCS, SWEEP_SOC, TAG, Soc

NPU, CPU, UNSUP = Verdict.NPU, Verdict.CPU, Verdict.UNSUPPORTED

SOURCES = {
    "R-OP": "RKNN-Toolkit2 2.3.2's ONNX operator support list (RKNNToolKit2_OP_Support-2.3.2.md): what the converter "
    "takes",
    "R-PDF": "Rockchip's RKNN compiler operator list 2.3.2 (05_RKNN_Compiler_Support_Operator_List_V2.3.2.pdf): "
    "§3.2 RK3588 NPU limits, chapter 4 CPU ops",
    "INF": "inferred from Rockchip's RKNN compiler operator list 2.3.2",
    "RKNN-C": "an observed rknn-toolkit2 2.5.0 build for RK3588 (its Network Layer Information Table)",
    "PROBE-R": "measured rknn-toolkit2 2.5.0 float16 builds for RK3588 of one small model per op and setting (npufit "
    "probe --compiler rknn --sweep; docs/probe/rk3588-matrix.md)",
    "CAL-R": "measured rknn-toolkit2 2.5.0 builds for RK3588 of a calibration set of 48 architectures "
    "(docs/calibration/rk3588-*.json); each condition names the models that show it",
    "SWEEP": sweeps.source("rk3588"),
}

LIMITS = {
    "chip": "RK3588",  # the SoC's name in sentences
    "dtypes": common.Choices(("int8", "uint8", "float16", "float32")),
    "max_rank": 4,
    # ranks above max_rank that stay on the NPU: ops on an NPU op's tensor (and Transposes), Splits, 6-D Transposes
    "rank_from_npu": 5,
    "rank_split_max": 6,
    "rank_transpose_max": 6,
    # R-PDF lists depthwise kernels to 8, strides to 7 and pooling kernels to 7; PROBE-R measured depthwise 3..31,
    # conv stride 16 and max-pooling kernels to 64 (64x64 input) on the NPU: the limits are the largest values measured
    "conv_min": 1,
    "conv_kernel": 31,
    "dw_kernel": 31,
    "conv_stride": 16,
    "conv_pad_min": 0,
    "conv_pad": 15,
    "conv_dilation": 31,
    "dilated_max_width": 16383,
    "tconv_strides": common.Choices((1, 2, 4, 8)),
    "tconv_group": 1,
    "tconv_dilated_kernel": 1,  # group 1 or depthwise; dilation only with a 1x1 kernel
    "pool_kernel": 64,
    "pool_stride": 8,
    "pool_pad": 7,
    "pool_dim": 8192,
    "resize_scales": common.Choices((2, 3, 4, 5, 6, 7, 8)),
    # CAL-R sweep cases: linear align_corners ran on the CPU at every scale, asymmetric on the NPU (the 2.3.2 document
    # lists align_corners, not asymmetric); a linear x0.5 downscale ran on the NPU
    "resize_linear_modes": common.Choices(("half_pixel", "pytorch_half_pixel", "asymmetric")),
    "resize_down_scales": common.Choices((2,)),
    "softmax_axes": common.Choices((1, 3)),
    "softmax_last_axes": 4,  # a last-axis softmax with at most this many non-unit axes (CAL-R, fitted.py)
    "pow_exponents": common.Choices((0.0, 1.0, 2.0, 3.0, 0.5, -0.5)),
    "matmul_k": 8192,
    "rnn_dim": 8192,
    "rnn_batch_multiple": 4,
    "rnn_batch_free": 1,  # a batch above rnn_batch_free must be a multiple of rnn_batch_multiple
    "reflect_pad_ch": 8192,
    "reflect_pad_w": 8176,
    "axes_min": 0,
    "axes_max": 3,
    "slice_step": 1,  # other steps only inside a space-to-depth reorg, or reversing the innermost data (slice_flip_npu)
    # CAL-R sweep: count_include_pad=0 over a ceil_mode partial window (no pads) ran on the CPU (RV1106: on the NPU)
    "avgpool_ceil_window_cpu": True,
    "slice_flip_npu": True,  # CAL-R sweep: a reversed innermost axis ran on the NPU (RK3576: on the CPU)
    # CAL-R sweep: a strided Slice of a grid reshaped from a MatMul ran on the NPU (rk3588 only measured)
    "slice_matmul_grid_npu": True,
    "gather_indices_rank": 2,  # CAL-R sweep: constant 2-D indices ran on the NPU (swept.GATHER_2D)
    # CAL-R sweep (swept.py): on run-time integer data, an int32 Add/Sub and an integer Transpose ran on the NPU, and
    # a Cast from int32 to float
    "int32_npu_ops": common.Choices(("Add", "Sub")),
    "int_transpose_npu": True,
    "cast_int32_npu_to": common.Choices(("float16", "float32")),
    # CAL-R sweep (swept.PAD3_SWEEP): edge Pads ran on the NPU; reflect / edge at the end of axis 1 of a 3-D
    # tensor on the CPU, constant there on the NPU when a Conv produced it
    "pad_npu_modes": common.Choices(("edge",)),
    "pad3_end_sweep": True,
    "output_align": 8,  # RKNN-C, float16 builds
    # a reshape that gives a non-4-D model output from an NPU tensor ran on the NPU (RK3576 and RV1106 measured it; the
    # output_layout rule holds where it is False)
    "output_reshape_npu": False,
    "output_map_hw": 1,  # a non-4-D output reshaped from an NPU tensor of this H and W keeps the NC1HWC2 order
    "d2s_blocks": common.Choices((2, 4, 8)),  # CAL-R cases: DepthToSpace x2/x4/x8 NPU, x3/x6 CPU
    # CAL-R split-last cases: a Reshape splitting the innermost axis W of [.., T, W] into g x k stays on the NPU when
    # k has at least split_min_inner elements or W or T is a multiple of split_row_bytes bytes of elements
    "split_min_inner": 8,
    "split_row_bytes": 16,
    # the RKNN runtime converts layout (NC1HWC2 <-> NCHW) and dtype when a tensor crosses to a CPU op (INF)
    "boundary_layout": "NC1HWC2",
    # read from the compiler sweep (bounded.py): 1-D kernels and strides, Sum inputs, Mean, Min, Cast types
    **bounded.limits(),
}


# (ops, note shown in the support matrix, source): NPU when their rules (rules.op_rules) pass
_NPU_OPS = (
    (("Conv",), "fuses Relu/Clip/LeakyRelu/Sigmoid/... that follow", "R-PDF"),
    (("ConvTranspose", "MaxPool", "AveragePool"), "", "R-PDF"),
    # RKNN-C: the R-PDF 7x7 limit is the native op's; rknn.build splits larger global pooling into a chain of NPU
    # convs ('_2conv0..2', average) or pooling tiles ('_tile0..2', max): 20x20, 64x64, 160x160 and TCN's 1x32 all ran
    # on the NPU
    (("GlobalAveragePool",), "any size: rknn.build splits it into NPU convs", "RKNN-C"),
    (("GlobalMaxPool",), "any size: rknn.build splits it into NPU pooling tiles", "RKNN-C"),
    (
        (
            "Add",
            "Sub",
            "Mul",
            "Max",
            "Min",
            "Sigmoid",
            "Tanh",
            "Relu",
            "Clip",
            "PRelu",
            "LeakyRelu",
            "HardSigmoid",
            "HardSwish",
            "Elu",
            "Softplus",
            "BatchNormalization",
            "Where",
            "Reshape",
            "Flatten",
            "Squeeze",
            "Unsqueeze",
            "Expand",
            "Gemm",
            "LayerNormalization",
            "Identity",
        ),
        "",
        "R-PDF",
    ),
    # R-PDF lists these as CPU ops or not at all; rknn-toolkit2 2.5.0 ran them on the NPU (probe cases
    # instancenorm2d, pixel_shuffle, sqrt, abs, neg)
    (("InstanceNormalization", "Sqrt", "Abs", "Neg", "DepthToSpace"), "", "PROBE-R"),
    (("Tile", "GatherElements", "Div", "Pow", "Concat", "Split", "Slice", "Gather"), "", "R-PDF"),
    # R-PDF 2.3.2 gives size limits per permutation; PROBE-R (transpose_*_size, conv -> permute -> relu) measured
    # [0,1,3,2], [0,2,3,1] and [0,3,1,2] on the NPU up to 8x256x256 and 256x16x16, past every one of them
    (
        ("Transpose",),
        "4-D permutations measured on the NPU up to 8x256x256 and 256x16x16; the 2.3.2 document's "
        "per-permutation size limits were not observed",
        "PROBE-R",
    ),
    (
        ("Pad", "Resize", "Softmax", "Hardmax", "MatMul", "LSTM", "GRU", "QuantizeLinear", "DequantizeLinear", "Cast"),
        "",
        "R-PDF",
    ),
    # RKNN-C: rewritten to NPU convs by rknn.build
    (("ReduceMean", "ReduceSum"), "the toolkit rewrites it to a conv / global pooling on the NPU", "RKNN-C"),
    (("ScatterND", "ReduceL2", "Einsum"), "", "CAL-R"),
    (("Sum",), "the toolkit adds the inputs on the NPU", "SWEEP"),
)

_TO_NPU = "the rewrite moves it to an NPU op"
# (ops, source, fix hints, `npufit fix` rules that move the op to an NPU one): CPU kernels of the RKNN runtime
_CPU_OPS = (
    (("LogSoftmax", "Erf", "Exp", "Log", "Floor", "Round", "Cos", "Sin", "Not", "And"), "R-PDF", (), ()),
    (("Mod",), "R-PDF", (_TO_NPU,), ("mod_decompose",)),
    (
        (
            "Equal",
            "Greater",
            "Less",
            "GreaterOrEqual",
            "LessOrEqual",
            "LpNormalization",
            "LRN",
            "ReduceMax",
            "ReduceMin",
            "ArgMax",
            "ArgMin",
        ),
        "R-PDF",
        (),
        (),
    ),
    (
        ("TopK",),
        "R-PDF",
        (
            Hint(
                "k = 1: ArgMax + ReduceMax compute the same and run on the NPU",
                common.topk_k_is_one,
                ("topk1_to_argmax",),
            ),
        ),
        (),
    ),
    (("SpaceToDepth",), "R-PDF", (), ()),
    # RKNN-C: rknn-toolkit2 2.5.0 converts these and runs them as CPU layers (RT-DETR's GridSample, BERT's IsNaN)
    (("GridSample", "IsNaN"), "RKNN-C", (), ()),
    # PROBE-R: the converter takes these (R-OP does not list them) and runs them as CPU layers
    (("Selu", "Reciprocal"), "PROBE-R", (), ()),
)
CPU_REASON = "{op} is not in the {chip} NPU operator list: the RKNN runtime runs its CPU kernel"

# ops the RKNN-Toolkit2 converter rejects (R-OP)
_UNSUPPORTED = (
    "GatherND",
    "ScatterElements",
    "GroupNormalization",
    "RNN",
    "NonMaxSuppression",
    "NonZero",
    "CumSum",
    "Range",
    "Ceil",
    "Sign",
    "Trilu",
    "Unique",
    "Loop",
    "Scan",
    "DeformConv",
    "If",
    "EyeLike",
)
UNSUPPORTED_REASON = "{op} is not supported by the RKNN-Toolkit2 converter: conversion fails"


def _ops(p: str, lim: Limits) -> dict[str, OpSupport]:
    rules = op_rules(p)
    ops = {
        op: OpSupport(op, NPU, rules.get(op, ()), source=src, note=note)
        for names, note, src in _NPU_OPS
        for op in names
    }
    for names, src, fix, fix_rules in _CPU_OPS:
        for op in names:
            ops[op] = OpSupport(
                op, CPU, reason=CPU_REASON.format(op=op, chip=lim["chip"]), source=src, fix_rules=fix_rules, fix=fix
            )
    # the sweep: Mean of two to four tensors ran on the CPU (an op the 2.3.2 list does not name)
    if lim["mean_cpu"]:
        ops["Mean"] = OpSupport(
            "Mean",
            CPU,
            reason="Mean of several tensors runs on the CPU (measured on RK3588)",
            source="SWEEP",
        )
    for op in _UNSUPPORTED:
        ops[op] = OpSupport(
            op,
            UNSUP,
            reason=UNSUPPORTED_REASON.format(op=op),
            source="R-OP",
            fix=("cut the model before this op (npufit split) or rewrite it",),
        )
    io = OpSupport(
        "IO_QuantizeLinear",
        Verdict.FOLDED,
        reason="RKNN folds model-boundary quantization into its input/output "
        "conversion (set int8 pass-through I/O to skip it)",
        source="INF",
    )
    ops["IO_QuantizeLinear"] = io
    ops["IO_DequantizeLinear"] = OpSupport("IO_DequantizeLinear", io.status, reason=io.reason, source="INF")
    return ops


# (id after the profile name, name, the toolkit's fused layer, matcher, source): NPU ops, or the CPU where a SoC runs
# that layer there (Soc.cpu_layers)
_FUSED = (
    ("swish", "SiLU/Swish", "exSwish", patterns.match_silu, "R-PDF"),
    ("gelu", "GELU", "exGelu", sw.match_gelu_div, "CAL-R"),
    ("gelu_tanh", "GELU (tanh)", "exGelu", patterns.match_gelu_tanh, "R-PDF"),
    ("layernorm", "LayerNorm", "exNorm", patterns.match_layernorm, "R-PDF"),
)


def _composites(soc: Soc, lim: Limits) -> tuple[Composite, ...]:
    out = []
    for cid, name, layer, match, src in _FUSED:
        if layer in soc.cpu_layers:
            text = f"{name} runs on the {lim['chip']} CPU as one fused layer"
            out.append(Composite(f"{soc.name}.{cid}", name, text, match, CPU, source=TAG))
        else:
            text = f"the RKNN converter fuses it into one NPU op ({layer})"
            out.append(Composite(f"{soc.name}.{cid}", name, text, match, NPU, source=src))
    return tuple(out) + soc.extra_composites


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


def build(soc: Soc) -> Profile:
    """`soc`'s profile: RK3588's limits, op tables and rules under the SoC's name, with its measured differences."""
    # each SoC reads the bounds its own sweep record derives (docs/calibration/sweep/<soc>.json) and inherits RK3588's
    # for the patterns its sweep did not measure (bounded.at)
    lim = {**LIMITS, **bounded.limits(soc.name), **soc.limits}
    ops = _ops(soc.name, lim)
    ops.update(soc.ops)
    for op, rules in soc.extra_rules.items():
        ops[op] = replace(ops[op], rules=ops[op].rules + rules)
    sources = {
        **SOURCES,
        **({TAG: soc.probe} if soc.probe else {}),
        **({CAL: soc.calibration} if soc.calibration else {}),
        **({SWEEP_SOC: sweeps.source(soc.name)} if soc.name != "rk3588" and sweeps.recorded(soc.name) else {}),
    }
    return Profile(
        name=soc.name,
        title=soc.title,
        vendor="Rockchip",
        summary=soc.summary,
        fallback=Fallback.CPU,
        limits=lim,
        ops=ops,
        executes=soc.executes,
        family="rockchip",
        compiler=RKNN.name,
        aliases=soc.aliases,
        # Reduce*/ArgMax/Erf fall back to the CPU; MatMul only within exMatMul limits while a 1x1 Conv is plain NPU
        rewrite_rules=common.REWRITE_COMMON + ("topk1_to_argmax", "linear_to_conv1x1", "gelu_tanh"),
        unknown=OpSupport(
            "*", UNSUP, reason="{op} is not in RKNN-Toolkit2's ONNX operator list: conversion fails", source="R-OP"
        ),
        graph_rules=graph_rules(soc.name, lim, soc.executes),
        composites=_composites(soc, lim),
        sources=sources,
        input_formats=("onnx", "tflite"),
        judged_formats=("onnx", "tflite"),
        op_key=op_key,
        notes=(
            "CPU-kernel ops run in the RKNN runtime on the Cortex-A cores; each NPU↔CPU crossing converts layout "
            "(NC1HWC2↔NCHW) and dtype",
        )
        + soc.notes,
        format_notes={
            "tflite": (
                "RKNN-Toolkit2 reads TFLite models through TensorFlow 2.14, which its env gets with "
                "'npufit env install rknn --extra tflite'",
            )
        },
    )


def profiles() -> dict[str, Profile]:
    return {soc.name: build(soc) for soc in SOCS}  # RK3588, then RK3576, RK3566/68, RV1106/03

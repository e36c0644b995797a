"""Arm Ethos-U55 / U65 / U85 through Vela 5.2.0.

The constraints are Vela's own, taken from `vela --supported-ops-report` (5.2.0) and encoded here as
npufit rules; Vela is never run by `check`. Vela's rule: "If the constraints are not met, then that
operator will be scheduled on the CPU instead" — every violation and every unlisted op is `cpu`
(TensorFlow Lite Micro runs it). MAC configurations share one rule set per generation (U55/U65 vs U85). The checks
are in checks.py, the rule tables in rules.py; the conditions fitted to npufit's own converter in fitted.py and
converted.py.
"""

from __future__ import annotations

from ...toolchains import VELA
from .. import common, sweeps
from ..base import Executes, Fallback, OpSupport, Profile, Verdict
from . import converted as conv
from . import fitted as fit
from .rules import graph_rules, op_rules

NPU, CPU = Verdict.NPU, Verdict.CPU

SOURCES = {
    "VELA": "Vela 5.2.0's supported-operator report (vela --supported-ops-report) for Ethos-U55/U65 and Ethos-U85",
    "CONV": "how the usual ONNX -> TensorFlow -> TFLite int8 converters write these ops (inferred)",
    "NPUFIT-CONV": "the ops npufit's own ONNX -> int8 TFLite converter converts and the forms it writes them in",
    "PROBE-V": "measured Vela 5.2.0 compiles of one small model per op and setting (npufit probe --compiler vela "
    "--sweep; docs/probe/ethos-u55-256-matrix.md)",
    "CAL-V": "measured Vela 5.2.0 compiles of npufit's int8 conversions of a calibration set of 48 architectures, and "
    "of swept Transpose and Resize cases (docs/calibration/)",
    "SWEEP": sweeps.source(fit.SWEPT),
}

# Operators listed in Vela 5.2.0's TFLite summary tables.
U55_OPS = (
    "ABS ADD ARG_MAX AVERAGE_POOL_2D BATCH_MATMUL CONCATENATION CONV_2D DEPTHWISE_CONV_2D ELU EXP EXPAND_DIMS "
    "FULLY_CONNECTED GELU HARD_SWISH LEAKY_RELU LOG LOGISTIC MAXIMUM MAX_POOL_2D MEAN MINIMUM MIRROR_PAD MUL NEG PACK "
    "PAD PADV2 PRELU QUANTIZE REDUCE_MAX REDUCE_MIN RELU RELU6 RELU_0_TO_1 RELU_N1_TO_1 RESHAPE RESIZE_BILINEAR "
    "RESIZE_NEAREST_NEIGHBOR REVERSE_V2 RSQRT SLICE SOFTMAX SPLIT SPLIT_V SQUARED_DIFFERENCE SQUEEZE STRIDED_SLICE SUB "
    "SUM TANH TILE TRANSPOSE TRANSPOSE_CONV UNIDIRECTIONAL_SEQUENCE_LSTM UNPACK"
).split()
U85_EXTRA = (
    "ASSIGN_VARIABLE CAST DIV EQUAL GATHER GREATER GREATER_EQUAL LESS LESS_EQUAL LOGICAL_AND LOGICAL_NOT LOGICAL_OR "
    "NOT_EQUAL READ_VARIABLE REDUCE_ALL REDUCE_ANY SCATTER_ND SELECT SELECT_V2"
).split()

BASE_LIMITS = {
    "fmap_dtypes": common.Choices(("int8", "uint8", "int16", "int32", "int64")),
    "weight_sum_8bit": 8323072,
    "stride_max": 3,
    "pool_kernel_product": 256 * 256,
    "pool_kernel_height": 256,
    "avgpool_same_kernel": 8,
    "mean_reduced_int8": 16777216,
    "mean_reduced_uint8": 8388608,
    "mean_reduced_int16": 65536,
    "mean_axis_max": 4096,
    "softmax_hw_max": 65536,
    "resize_scales": common.Choices((2, 4, 8)),
    "argmax_depth": 127,
    "matmul_depth": 65536,
    "transpose_rank": 8,
    "per_axis_ops": common.Choices(("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "TRANSPOSE_CONV")),
    "no_quant_ops": common.Choices(("ARG_MAX", "EXPAND_DIMS", "MIRROR_PAD", "PAD", "PADV2", "QUANTIZE", "TRANSPOSE")),
    "op_cpu_fmap_bits": 32,  # a 32-bit feature map: U55/U65 ops that list the rule; a float-input QUANTIZE
    "weight_bits": 8,
    "big_stride_dilation": 1,  # a stride above stride_max needs this dilation (and VALID padding)
    "fc_inner_dim": 1,  # fully-connected weights O,1,...,1,I
    "mean_batch": 1,
    "mean_depth_unit": 1,  # MEAN reduces depth only when one of h, w, c has this size
    # IFM/OFM types of the LUT activations
    "lut_dtypes": {
        "ELU": common.Choices(("int8",)),
        "GELU": common.Choices(("int8", "uint8")),
        "LOG": common.Choices(("int8", "int16")),
    },
}
U55_LIMITS = {
    **BASE_LIMITS,
    "u55_cpu_fmap_bits": 64,  # 64-bit feature maps (ARG_MAX's output aside)
    "tconv_strides": common.Choices((1, 2)),  # transposed convolution, equal in H and W
    "resize_half_pixel_scale": 2,
    "transpose_int32_rank": 4,
    # the sweep's int8 TFLite TRANSPOSEs that move a non-unit leading axis (calibration/bounds.py)
    "transpose_pair_product": sweeps.value(fit.SWEPT, "transpose_product"),
}
U85_LIMITS = {
    **BASE_LIMITS,
    "fmap_dtypes": common.Choices(("bool", "int8", "uint8", "int16", "int32", "int64")),
    "resize_max_scale": 1024,
    "resize_max_scale_align": 2048,
}

# name -> (generation, title, MACs/cycle)
CONFIGS = {
    "ethos-u55-128": ("u55", "Arm Ethos-U55-128", 128),
    "ethos-u55-256": ("u55", "Arm Ethos-U55-256", 256),
    "ethos-u65-256": ("u55", "Arm Ethos-U65-256", 256),
    "ethos-u65-512": ("u55", "Arm Ethos-U65-512", 512),
    "ethos-u85-256": ("u85", "Arm Ethos-U85-256", 256),
    "ethos-u85-512": ("u85", "Arm Ethos-U85-512", 512),
    "ethos-u85-1024": ("u85", "Arm Ethos-U85-1024", 1024),
    "ethos-u85-2048": ("u85", "Arm Ethos-U85-2048", 2048),
}


def build(name: str) -> Profile:
    gen, title, macs = CONFIGS[name]
    lim = dict(U85_LIMITS if gen == "u85" else U55_LIMITS)
    lim["macs_per_cycle"] = macs
    u55 = gen == "u55"
    listed = tuple(U55_OPS + (U85_EXTRA if not u55 else []))
    rules = op_rules(gen, name, listed)
    for op, more in conv.converted_rules(name, listed).items():
        rules[op] = rules.get(op, ()) + more
    ops = {op: OpSupport(op, NPU, rules.get(op, ()), source="VELA") for op in listed + ("DEQUANTIZE",)}
    ops.update(fit.lowered_ops(name, set(listed)))
    ops.update(conv.converted_ops(name, listed))
    io = OpSupport(
        "IO_QUANTIZE",
        Verdict.FOLDED,
        reason="a converter run with int8 input/output types (the usual Vela flow) removes "
        "this model-boundary quantize/dequantize: the application exchanges int8 data",
        source="CONV",
    )
    ops["IO_QUANTIZE"] = io
    ops["IO_DEQUANTIZE"] = OpSupport("IO_DEQUANTIZE", io.status, reason=io.reason, source="CONV")
    onnx_note = (
        "ONNX models are judged as the int8 TFLite file npufit's ONNX→TFLite converter writes for Vela (QDQ pairs "
        "fuse into int8 ops; a node it cannot convert is a converter gap)"
    )
    notes = []
    if u55:
        notes.append("U55 and U65 share Vela's rule set; the U65 adds an AXI interface for external memory")
    return Profile(
        name=name,
        title=f"{title} (Vela 5.2.0, {macs} MACs/cycle)",
        vendor="Arm",
        summary="Int8/int16 TFLite models compiled by Vela; operators that break a constraint (or are not listed) are "
        "scheduled on the CPU by TensorFlow Lite Micro.",
        fallback=Fallback.CPU,
        limits=lim,
        ops=ops,
        executes=Executes.INT8,
        family="ethos-u",
        compiler=VELA.name,
        # Vela's library checks (the vela_checks worker) are its U55/U65 rule set: "auto" judges U85 by the compile
        measure_judges=("vela-checks", "compile") if u55 else ("compile", "vela-checks"),
        # ARG_MAX runs on the NPU along depth, TopK does not; MEAN/REDUCE_MAX map; GELU via TFLite GELU
        rewrite_rules=common.REWRITE_COMMON + ("reduce_keepdims", "topk1_to_argmax", "gelu_tanh"),
        label=name.replace("ethos-", ""),
        unknown=OpSupport(
            "*",
            CPU,
            reason="{op} is not in Vela 5.2.0's supported-operator list: it is scheduled on the CPU",
            source="VELA",
        ),
        graph_rules=graph_rules(gen, name),
        sources=dict(SOURCES),
        input_formats=("tflite",),
        judged_formats=("onnx", "tflite"),
        op_key=fit.op_key,
        notes=tuple(notes),
        format_notes={"onnx": (onnx_note,)},
        # VELA: an op not in the list is left untouched for the CPU, constant inputs or not (the shipped float16
        # MediaPipe files' weight DEQUANTIZEs and sparse-weight DENSIFYs ran there)
        runs_constant_ops=("DEQUANTIZE", "DENSIFY"),
    )


def profiles() -> dict[str, Profile]:
    return {name: build(name) for name in CONFIGS}

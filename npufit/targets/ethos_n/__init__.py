"""Arm Ethos-N78: what Arm's Ethos-N support library (driver stack 25.03, library 6.0.0) accepts, measured by
`npufit probe --compiler ethos-n` (docs/probe/ethos-n78-measured.json), with TVM's flow where it differs and a user's
measured TVM partitions show it.

The support library is the compiler under TVM's BYOC `ethos-n` target and Arm NN's Ethos-N backend. Rules first
written from TVM's pattern table and Arm's documentation were corrected where the library answered otherwise. One
TVM-flow rule stays: TVM imports an int8 LEAKY_RELU as dequantize → leaky_relu → quantize and runs that island on
the host, while the library itself supports int8 LeakyReLU. Fallbacks run on the host CPU (verdict `cpu`). Ops are
keyed in TFLite vocabulary (ONNX nodes are mapped first). The checks are in checks.py, the rule tables in rules.py.
"""

from __future__ import annotations

from ...toolchains import ETHOS_N
from .. import common
from .. import tflite_map as tm
from ..base import Executes, Fallback, OpSupport, Profile, Verdict
from .rules import graph_rules, op_rules

NPU, CPU = Verdict.NPU, Verdict.CPU
N = "ethos-n78"

SOURCES = {
    "N-PY": "TVM 0.13.0's Ethos-N pattern table (python/tvm/relay/op/contrib/ethosn.py): which ops and attributes it "
    "offloads",
    "N-API": "TVM 0.13.0's Ethos-N checks (src/relay/backend/contrib/ethosn/ethosn_api.cc)",
    "N-CE": "TVM 0.13.0's Ethos-N equivalent-operator conversions (convert_equivalent.cc)",
    "N-SL": "Arm's Ethos-N driver stack operator support list",
    "N-KOR": "measured TVM + Ethos-N78 partitions of a user's YOLO models (ethos-vision-optimizer npu_report)",
    "N-LIB": "the Arm Ethos-N support library 6.0.0 (driver stack 25.03), asked op by op by npufit probe --compiler "
    "ethos-n",
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
    "avgpool_kernel": 3,
    "avgpool_stride": 1,  # the one non-global average pooling (SAME)
    "maxpool_kernels": common.Choices((1, 2, 3)),
    "maxpool_stride": 2,  # square kernels at stride 2
    "maxpool_unit_stride": 1,  # ... or any square kernel up to the s1 limits at stride 1
    "maxpool_s1_valid_max": 9,
    "maxpool_s1_same_max": 17,
    "maxpool_3x3_max_width": 417,
    "sigmoid_scale": "1/256",
    "sigmoid_zero_points": {"int8": -128, "uint8": 0},
    "tanh_scale": "1/128",
    "tanh_zero_points": {"int8": 0, "uint8": 128},
    "depth_to_space_block": 2,
    "transpose_sram_bytes": 1024 * 1024,  # the N78 4TOPS/4PLE SRAM: a transposed tensor must fit it (N-LIB)
    # ops TVM's frontends import as dequantize -> float op -> quantize even in an int8 model
    "float_ops": (
        "LOGISTIC",
        "TANH",
        "LEAKY_RELU",
        "SOFTMAX",
        "LOG_SOFTMAX",
        "HARD_SWISH",
        "ELU",
        "GELU",
        "EXP",
        "LOG",
        "SQRT",
        "RSQRT",
        "POW",
        "ERF",
        "SIN",
        "COS",
    ),
}

# (ops, note shown in the support matrix): NPU when their rules pass (pattern names from N-PY)
_NPU_OPS = (
    (("CONV_2D",), "qnn_conv2d composite (pad + conv + bias + requantize)"),
    (("DEPTHWISE_CONV_2D",), "qnn_conv2d composite, channel multiplier 1"),
    (("TRANSPOSE_CONV",), "qnn_conv2d_transpose composite"),
    (("FULLY_CONNECTED",), "qnn_fc composite"),
    (("MAX_POOL_2D",), ""),
    (("AVERAGE_POOL_2D",), "qnn_avg_pool2d composite"),
    (("MEAN",), "qnn_mean composite"),
    (("ADD", "MUL", "LEAKY_RELU", "LOGISTIC", "TANH"), ""),
    (("RELU", "RELU6", "RELU_N1_TO_1", "RELU_0_TO_1", "MINIMUM"), "clip"),
    (
        (
            "CONCATENATION",
            "STRIDED_SLICE",
            "SLICE",
            "SPLIT",
            "SPLIT_V",
            "RESHAPE",
            "SQUEEZE",
            "EXPAND_DIMS",
            "DEPTH_TO_SPACE",
        ),
        "",
    ),
    (("RESIZE_NEAREST_NEIGHBOR",), "qnn_resize pattern"),
    (("RESIZE_BILINEAR", "PAD", "TRANSPOSE", "QUANTIZE", "DEQUANTIZE"), ""),
)

# (ops, reason, fix hints): no Ethos-N pattern, TVM runs them on the host
_CPU_OPS = (
    (
        ("BATCH_MATMUL",),
        "activation × activation matmul has no Ethos-N pattern: it runs on the host",
        ("keep attention / matmul blocks on the host, or restructure to a constant-weight FC",),
    ),
    (("SOFTMAX",), "softmax has no Ethos-N pattern: it runs on the host", ("move softmax into post-processing",)),
    (
        ("IO_QUANTIZE", "IO_DEQUANTIZE"),
        "quantize/dequantize at a model input/output is a standalone qnn op: TVM runs it on the host",
        ("feed int8 input and read int8 outputs",),
    ),
)


def _ops() -> dict[str, OpSupport]:
    rules = op_rules(N)
    ops = {
        op: OpSupport(op, NPU, rules.get(op, ()), source="N-PY", note=note) for names, note in _NPU_OPS for op in names
    }
    ops.update(
        {
            op: OpSupport(op, CPU, reason=reason, fix=fix, source="N-PY")
            for names, reason, fix in _CPU_OPS
            for op in names
        }
    )
    return ops


def profiles() -> dict[str, Profile]:
    return {
        N: Profile(
            name=N,
            title="Arm Ethos-N78 (Ethos-N support library 6.0.0, driver stack 25.03; TVM flow for LeakyReLU)",
            vendor="Arm",
            summary="Int8/uint8 NHWC models as Arm's Ethos-N support library takes them (measured: npufit compile "
            "--target ethos-n78); "
            "TVM's flow keeps int8 LeakyReLU as a host float island; anything else the library refuses runs on the "
            "host CPU.",
            fallback=Fallback.CPU,
            limits=dict(LIMITS),
            ops=_ops(),
            executes=Executes.INT8,
            family="ethos-n",
            compiler=ETHOS_N.name,
            # one profile for every N78 configuration the library compiles for (ethos-n78-<variant>)
            aliases=tuple(p for p in ETHOS_N.platforms if p != N),
            # TVM BYOC offloads only Conv/pool/FC patterns; reductions, TopK and ArgMax stay on the CPU: the cleanups
            # only
            rewrite_rules=common.REWRITE_COMMON,
            label="n78",
            unknown=OpSupport(
                "*",
                CPU,
                reason="{op} has no operation in the Ethos-N support library (nor a TVM pattern): it runs on the host "
                "CPU",
                source="N-LIB",
            ),
            graph_rules=graph_rules(N),
            sources=dict(SOURCES),
            input_formats=("tflite", "onnx"),
            judged_formats=("onnx", "tflite"),
            op_key=tm.tflite_op,
            notes=(
                "ONNX ops are judged as the TFLite/Relay QNN ops they import as (Conv → CONV_2D/qnn.conv2d, Sigmoid → "
                "LOGISTIC, ...)",
                "NPU partitions that contain no multiply-accumulate may be inlined back to the CPU when the compiler "
                "option for it is set",
            ),
        )
    }

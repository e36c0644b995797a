"""Ethos-N78 rule tables: graph_rules(p) and op_rules(p) (op -> its rules, in the order they are checked).

Every number in a sentence is a {limit} of Profile.limits (tests/test_targets_sentences.py); the checks are in
checks.py. Ops are keyed in TFLite vocabulary; a broken rule runs the op on the host CPU.
"""

from __future__ import annotations

from .. import common
from ..base import Hint, Rule, RuleMaker, Verdict
from ..common import NON_NUMERIC_HINT, float_feature_maps, no_float_feature_maps
from .checks import (
    add_constant,
    avgpool_config,
    batch,
    concat_axis,
    const_weights,
    conv_dilation,
    conv_kernel,
    conv_stride,
    depth_to_space_block,
    depthwise_multiplier,
    dtype,
    fc_per_channel,
    leaky_relu_island,
    maxpool_config,
    mean_size,
    mul_constant,
    pad_axes,
    qdq_standalone,
    rank,
    resize_scale,
    sigmoid_qparams,
    slice_unit_stride,
    split_channels,
    tanh_qparams,
    transpose_conv_stride,
    transpose_size,
)

CPU = Verdict.CPU


def graph_rules(p: str) -> tuple[Rule, ...]:
    r = RuleMaker(p, CPU, "N-SL")  # a broken rule runs the op on the host CPU
    return (
        r(
            "dtype",
            "Ethos-N tensors must be {dtypes[0]} or {dtypes[1]} (int32 only for bias): a float model never offloads",
            dtype,
            (
                Hint(
                    "quantize the model to int8 first (npufit quantize, or an int8 TFLite export)", float_feature_maps
                ),
                Hint(NON_NUMERIC_HINT, no_float_feature_maps),
            ),
            "N-API",
        ),
        r(
            "batch",
            "batch size must be {batch}",
            batch,
            ("export with batch 1 and loop over the batch on the host",),
            "N-API",
        ),
        r(
            "rank",
            "tensors must have at most {max_rank} dimensions",
            rank,
            ("reshape to 4-D or fewer",),
            "N-API",
            gate=common.max_rank_gate,
        ),
    )


def op_rules(p: str) -> dict[str, tuple[Rule, ...]]:
    """op -> its rules, in the order they are checked."""
    r = RuleMaker(p, CPU, "N-SL")
    kernel = r(
        "conv.kernel",
        "convolution kernel height and width must each be one of {conv_kernels}",
        conv_kernel,
        ("use 3x3/5x5/7x7 kernels (split a 4x4/6x6 kernel or pad it to the next supported size)",),
    )
    conv = (
        kernel,
        r(
            "conv.stride",
            "convolution stride must be equal in H and W and one of {conv_strides}; kernels larger than "
            "{big_kernel} only with stride {big_kernel_stride}",
            conv_stride,
            ("use stride 1 or 2 (follow a stride-1 conv with a 2x2 max pool for larger strides)",),
        ),
        r(
            "conv.dilation",
            "dilated convolution is not offloaded (dilation must be 1)",
            conv_dilation,
            ("replace dilation by a larger kernel or a space-to-depth rewrite",),
            "N-API",
        ),
        r(
            "conv.weights",
            "convolution weights and quantization parameters must be constants",
            const_weights,
            (),
            "N-PY",
        ),
    )
    slice_ = r(
        "slice.unit_stride",
        "a slice runs on the NPU with unit steps along one axis (npufit lowers it as a Split of the support library)",
        slice_unit_stride,
        ("slice one axis at a time with step 1",),
        "N-LIB",
    )
    split = r(
        "split.channels",
        "channel split needs every output's channel count to be a multiple of {split_channel_multiple}",
        split_channels,
        ("pad channels to a multiple of 16",),
    )
    qdq = r(
        "qdq.standalone",
        "a quantize/dequantize is offloaded only inside an int8 kernel pattern; one at a model input/output "
        "or around a host float island runs on the host",
        qdq_standalone,
        ("feed int8 input and read int8 outputs",),
        "N-PY",
    )
    return {
        "CONV_2D": conv,
        "DEPTHWISE_CONV_2D": conv
        + (
            r(
                "depthwise.multiplier",
                "depthwise convolution channel multiplier must be {depth_multiplier}",
                depthwise_multiplier,
            ),
        ),
        "TRANSPOSE_CONV": (
            kernel,
            r(
                "transpose_conv.stride",
                "transposed convolution stride must be {transpose_conv_stride}",
                transpose_conv_stride,
                ("use Resize (nearest) + Conv instead",),
            ),
        ),
        "FULLY_CONNECTED": (
            r("fc.weights", "fully connected weights must be constants", const_weights, (), "N-PY"),
            r(
                "fc.per_channel",
                "fully connected weights must have one quantization scale (the library: "
                "'Multiple quantization scales is not supported for FullyConnected')",
                fc_per_channel,
                ("quantize the fully connected weights per tensor",),
                "N-LIB",
            ),
        ),
        "MAX_POOL_2D": (
            r(
                "maxpool.config",
                "max pooling supports {maxpool_kernels:#x#|/} with stride {maxpool_stride} (3x3 up "
                "to width {maxpool_3x3_max_width}, and VALID 3x3/2 only on odd input sizes), or stride "
                "{maxpool_unit_stride} up to {maxpool_s1_valid_max}x{maxpool_s1_valid_max} VALID / "
                "{maxpool_s1_same_max}x{maxpool_s1_same_max} SAME",
                maxpool_config,
                ("use 2x2/2 or 3x3/2 pooling",),
                "N-LIB",
            ),
        ),
        "AVERAGE_POOL_2D": (
            r(
                "avgpool.config",
                "average pooling supports only {avgpool_kernel}x{avgpool_kernel} stride "
                "{avgpool_stride} SAME, or a global {mean_sizes:#x#|/} mean",
                avgpool_config,
                ("pool down to 7x7 or 8x8 before a global average",),
            ),
        ),
        "MEAN": (
            r(
                "mean.size",
                "mean over H,W supports only {mean_sizes[0]}x{mean_sizes[0]} or {mean_sizes[1]}x{mean_sizes[1]} "
                "inputs reduced to {mean_output}x{mean_output}",
                mean_size,
                ("pool down to 7x7 or 8x8 before the global average",),
            ),
        ),
        "ADD": (
            r(
                "add.constant",
                "an addition with a constant needs a scalar or a per-channel [C] constant",
                add_constant,
                (),
                "N-CE",
            ),
        ),
        "MUL": (
            r(
                "mul.constant",
                "a multiplication by a constant needs a scalar or a per-channel [C] constant; activation × "
                "activation multiplies on the NPU only with equal shapes",
                mul_constant,
                ("expand the smaller operand to the full shape",),
                "N-LIB",
                evidence="The Ethos-N support library refuses other shapes: 'Cannot stretch along the requested "
                "dimensions'.",
            ),
        ),
        "LEAKY_RELU": (
            r(
                "leaky_relu.island",
                "In the TVM flow an int8 LeakyReLU becomes dequantize → leaky_relu → quantize and runs on the host; "
                "the Ethos-N support library itself runs it on the NPU",
                leaky_relu_island,
                ("use ReLU or ReLU6 activations",),
                "N-KOR",
                evidence="Measured TVM + Ethos-N78 partitions of a user's YOLO models: every LeakyReLU became a "
                "float island on the host (402 of them, 3 extra ops each), and the ReLU variants of the same models "
                "reached 99% NPU. The Ethos-N support library 6.0.0 itself supports int8 LeakyReLU: npufit compile "
                "--target ethos-n78 keeps it on the NPU.",
            ),
        ),
        "LOGISTIC": (
            r(
                "sigmoid.qparams",
                "sigmoid offloads (qnn_sigmoid) only when its output quantization is scale "
                "{sigmoid_scale} with zero point {sigmoid_zero_points[int8]} (int8) / {sigmoid_zero_points[uint8]} "
                "(uint8)",
                sigmoid_qparams,
                ("quantize the sigmoid output with scale 1/256",),
                "N-API",
            ),
        ),
        "TANH": (
            r(
                "tanh.qparams",
                "tanh offloads (qnn_tanh) only when its output quantization is scale {tanh_scale} with zero "
                "point {tanh_zero_points[int8]} (int8) / {tanh_zero_points[uint8]} (uint8)",
                tanh_qparams,
                ("quantize the tanh output with scale 1/128",),
                "N-API",
            ),
        ),
        "CONCATENATION": (
            r(
                "concat.axis",
                "concatenation cannot run along the batch axis",
                concat_axis,
                ("concatenate along channels, height or width",),
                "N-LIB",
            ),
        ),
        "STRIDED_SLICE": (slice_,),
        "SLICE": (slice_,),
        "SPLIT": (split,),
        "SPLIT_V": (split,),
        "DEPTH_TO_SPACE": (
            r(
                "depth_to_space.block",
                "depth-to-space needs block size {depth_to_space_block} (DCR mode)",
                depth_to_space_block,
            ),
        ),
        "RESIZE_NEAREST_NEIGHBOR": (
            r(
                "resize.scale",
                "nearest-neighbour resize needs output height/width = 2n or 2n−1 of the input",
                resize_scale,
                ("upsample by exactly 2",),
            ),
        ),
        "RESIZE_BILINEAR": (
            r(
                "resize.scale",
                "resize needs output height/width = 2n or 2n−1 of the input",
                resize_scale,
                ("upsample by exactly 2",),
                "N-LIB",
            ),
        ),
        "PAD": (
            r(
                "pad.axes",
                "padding runs on the NPU for height and width only (fused into the convolution it feeds, or as the "
                "library's standalone padding)",
                pad_axes,
                ("pad only height and width",),
                "N-LIB",
            ),
        ),
        "TRANSPOSE": (
            r(
                "transpose.size",
                "a {max_rank}-D transpose runs on the NPU; swapping the last two axes needs the tensor "
                "to fit the {transpose_sram_bytes}-byte SRAM (the library: 'The tensors are too large')",
                transpose_size,
                ("transpose smaller tiles, or keep the model NHWC end to end",),
                "N-LIB",
            ),
        ),
        "QUANTIZE": (qdq,),
        "DEQUANTIZE": (qdq,),
    }

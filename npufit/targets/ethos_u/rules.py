"""Ethos-U rule tables, shared by every MAC configuration: graph_rules(gen, p) and op_rules(gen, p, listed).

The constraints are Vela 5.2.0's (`vela --supported-ops-report`); U55/U65 and U85 differ in the rule set, which
`gen` ("u55", "u85") selects. Every number in a sentence is a {limit} of Profile.limits; the checks are in
checks.py. A broken rule schedules the op on the CPU, except the padded big stride, which fails the whole compile.
"""

from __future__ import annotations

from functools import partial

from .. import common
from ..base import Hint, Rule, RuleMaker, Verdict
from . import fitted as fit
from .checks import (
    argmax,
    avgpool_kernel,
    bias,
    fc_weights,
    fmap_32,
    fmap_64,
    fmap_dtype,
    gather_u85,
    lstm,
    lut_dtype,
    matmul,
    maxpool_kernel,
    mean,
    minmax_qparams,
    params_const,
    per_axis,
    qdq_fused,
    quant_params,
    resize_u55,
    resize_u85,
    softmax,
    static_shape,
    stride_gt3,
    stride_gt3_padded,
    stride_range,
    strided_slice,
    tconv_stride,
    transpose,
    transpose_u55,
    weight_8bit,
    weight_sum,
)

CPU, UNSUP = Verdict.CPU, Verdict.UNSUPPORTED

# U55/U65: every listed op but these checks the 32-bit rule first (Vela's int32 op list; CAL-V: int32 ADD/MUL ran on
# the NPU)
NO_FMAP32 = ("SUM", "BATCH_MATMUL", "ARG_MAX", "MIRROR_PAD", "TRANSPOSE", "ADD", "MUL", "SUB")


def graph_rules(gen: str, p: str) -> tuple[Rule, ...]:
    r = RuleMaker(p, CPU, "VELA")  # a broken rule schedules the op on the CPU (Vela's rule)
    rules = (
        r(
            "fmap.dtype",
            "feature-map data types must be one of {fmap_dtypes}: float ops stay on the CPU",
            fmap_dtype,
            (
                Hint(
                    "quantize to int8 (or int16) before Vela: npufit quantize, or a full-integer TFLite export",
                    common.float_feature_maps,
                ),
                Hint(common.NON_NUMERIC_HINT, common.no_float_feature_maps),
            ),
            "VELA",
        ),
        r(
            "shape.static",
            "tensors must have constant shapes (only the first dimension may be dynamic)",
            static_shape,
            ("pin the input shape (--input-shape) before converting",),
            "VELA",
            gate=common.dynamic_tail_gate,
        ),
        r(
            "quant.params",
            "input, output and weight tensors must have quantization parameters with a positive scale (except "
            "{no_quant_ops})",
            quant_params,
            ("re-export as a full-integer quantized TFLite model",),
            "VELA",
            gate=common.tflite_gate,
        ),
        r(
            "quant.per_axis",
            "per-axis quantization is supported only for {per_axis_ops}",
            per_axis,
            ("quantize this op's tensors per tensor",),
            "VELA",
            gate=common.tflite_gate,
        ),
    )
    u55 = (
        r(
            "fmap.64bit",
            "{u55_cpu_fmap_bits}-bit feature maps are not supported (except ARG_MAX)",
            fmap_64,
            ("cast to int32/int8 earlier in the graph",),
            "VELA",
        ),
    )
    return rules + (u55 if gen == "u55" else ())


def op_rules(gen: str, p: str, listed: tuple[str, ...]) -> dict[str, tuple[Rule, ...]]:
    """op -> its rules for generation `gen` ("u55": U55/U65, "u85"), in the order they are checked."""
    u55 = gen == "u55"
    r = RuleMaker(p, CPU, "VELA")
    f32 = r(
        "fmap.32bit",
        "{op_cpu_fmap_bits}-bit feature maps are not supported",
        fmap_32,
        ("keep this op's tensors int8/int16",),
    )
    s3 = r(
        "stride.gt3",
        "stride > {stride_max} is supported only with dilation {big_stride_dilation} and VALID padding",
        stride_gt3,
        ("use stride ≤ 3 or VALID padding",),
    )
    s3pad = r(
        "stride.gt3_padded",
        "stride > {stride_max} after explicit padding (a PAD before a VALID convolution) "
        "fails the Vela compile: 'Non-passthrough operation (Conv2D) could not run on NPU'",
        stride_gt3_padded,
        ("use SAME or VALID padding, or stride ≤ 3 (then pool)",),
        "PROBE-V",
        on_fail=UNSUP,
    )
    w8 = r("weights.8bit", "weight tensors must be {weight_bits}-bit", weight_8bit, ("quantize weights to int8",))
    wsum = r(
        "weights.sum", "the sum of absolute weights per output channel cannot exceed {weight_sum_8bit}", weight_sum
    )
    bias_ = r("bias.const", "bias tensors must be constant int32/int64 values on the channel axis", bias)
    kstride = r(
        "depthwise.stride", "kernel stride must be in the range (1, {stride_max})", stride_range, ("use stride ≤ 3",)
    )
    mm = r(
        "matmul.dynamic",
        "a matmul (or FC with dynamic weights) needs an int8 input, output depth ≤ {matmul_depth} and reduced "
        "axis ≤ {matmul_depth}",
        matmul,
    )
    pc = r("params.const", "parameter tensors must be constant", params_const)
    fused = r(
        "qdq.fused",
        "a quantize/dequantize survives conversion only where it does not wrap an int8 op; DEQUANTIZE is not in "
        "Vela's list and a float-input QUANTIZE is a {op_cpu_fmap_bits}-bit feature map",
        qdq_fused,
        ("keep the whole graph int8 between the model input and output",),
    )
    minmax = r(
        "minmax.qparams", "MAXIMUM/MINIMUM: both inputs must have the output's quantization parameters", minmax_qparams
    )
    if u55:
        resize = r(
            "resize.scale",
            "resize scale must be {resize_scales:#x|or} in both dimensions (half-pixel bilinear: "
            "{resize_half_pixel_scale}x only)",
            resize_u55,
            ("upsample by 2/4/8, or chain 2x resizes",),
        )
        tr = r(
            "transpose.shape",
            "transpose: constant permutation, rank ≤ {transpose_rank}; int32 only up to rank "
            "{transpose_int32_rank}; unless it permutes the last three axes of a tensor whose other axes are 1, "
            "every product of N−2 axes must be ≤ {transpose_axes_product}",
            transpose_u55,
            ("reshape so that the axes that do not move are merged, or transpose smaller tiles",),
            "CAL-V",
            evidence="measured with Vela 5.2.0: a TRANSPOSE with permutation 3, 1, 2, 0 of a 400x2x400x1 tensor "
            "stays on the CPU ('shape out of range'), the same of 256x2x256x1 compiles; the swept Transpose cases, "
            "whose products stay within the limit, compiled.",
        )
    else:
        resize = r(
            "resize.scale",
            "resize scale must be an integer power of two up to {resize_max_scale} ({resize_max_scale_align} "
            "with align_corners)",
            resize_u85,
            ("upsample by a power of two",),
        )
        tr = r("transpose.shape", "transpose: constant permutation, rank ≤ {transpose_rank}", transpose)
    conv = (bias_, w8, wsum)
    own: dict[str, tuple[Rule, ...]] = {
        "CONV_2D": conv + ((s3, s3pad) if u55 else ()),
        "DEPTHWISE_CONV_2D": conv + ((kstride,) if u55 else ()),
        "TRANSPOSE_CONV": (bias_, w8)
        + (
            (
                r(
                    "transpose_conv.stride",
                    "transposed-convolution stride must be "
                    "{tconv_strides:#x#|or} (2x1/1x2 only when the IFM and kernel are 1 in that "
                    "dimension)",
                    tconv_stride,
                    ("use stride 2 or Resize + Conv",),
                ),
            )
            if u55
            else ()
        ),
        "FULLY_CONNECTED": (
            bias_,
            w8,
            r(
                "fc.weights",
                "fully-connected weights must have the form O,{fc_inner_dim},...,{fc_inner_dim},I",
                fc_weights,
            ),
            mm,
        ),
        "AVERAGE_POOL_2D": (
            r(
                "avgpool.kernel",
                "average pool: VALID kernels up to {pool_kernel_product} elements and height "
                "{pool_kernel_height}; SAME kernels up to {avgpool_same_kernel}x{avgpool_same_kernel}",
                avgpool_kernel,
                ("use VALID padding or a smaller kernel",),
            ),
        )
        + ((s3,) if u55 else ()),
        "MAX_POOL_2D": (
            r(
                "maxpool.kernel",
                "max pool kernel product must be ≤ {pool_kernel_product} and height ≤ {pool_kernel_height}",
                maxpool_kernel,
            ),
        )
        + ((s3,) if u55 else ()),
        "MEAN": (
            r(
                "mean.limits",
                "MEAN: batch {mean_batch}, int8/uint8/int16 input, constant axes, at most {mean_reduced_int8} "
                "reduced elements (int8), each reduced axis < {mean_axis_max}, depth reduction only when one of h, w, "
                "c is {mean_depth_unit}",
                mean,
                ("pool down before the mean",),
                evidence="An ONNX mean over the channels alone becomes a 1x1 CONV_2D in npufit's converter (measured "
                "on vitdet's channel LayerNorms with Vela 5.2.0).",
            ),
        ),
        "SOFTMAX": (
            r(
                "softmax.hw",
                "softmax needs IFM width × height < {softmax_hw_max}",
                softmax,
                ("softmax over a smaller map, or on the host",),
            ),
        ),
        "RESIZE_BILINEAR": (resize,),
        "RESIZE_NEAREST_NEIGHBOR": (resize,),
        "TRANSPOSE": (tr,),
        "SLICE": (pc,),
        "PAD": (pc,),
        "PADV2": (pc,),
        "MIRROR_PAD": (pc,),
        "STRIDED_SLICE": (
            r("strided_slice.params", "strided slice: constant parameters and non-negative strides", strided_slice),
            r(
                "strided_slice.after_cpu",
                "a slice of a CPU op's output that feeds only Shape nodes stays on the CPU with it",
                partial(fit.shape_only_after_cpu, listed=frozenset(listed)),
                (),
                "CAL-V",
            ),
        ),
        "ELU": (r("elu.dtype", "ELU: IFM and OFM {lut_dtypes[ELU]:#|or} with equal shapes", lut_dtype),),
        "GELU": (r("gelu.dtype", "GELU: IFM and OFM {lut_dtypes[GELU]:#|or} with equal shapes", lut_dtype),),
        "LOG": (r("log.dtype", "LOG: IFM and OFM {lut_dtypes[LOG]:#|or} with equal shapes", lut_dtype),),
        "MAXIMUM": (minmax,),
        "MINIMUM": (minmax,),
        "UNIDIRECTIONAL_SEQUENCE_LSTM": (
            r("lstm.variant", "LSTM: no peephole, projection, gate normalisation or implicit gates", lstm),
        ),
        "QUANTIZE": (fused,),
        "DEQUANTIZE": (fused,),
    }
    if "SELECT_V2" not in listed:
        mask = r(
            "add.mask_select",
            "an Add of an attention mask (a Where by a run-time condition between constants) "
            "becomes SELECT_V2 in npufit's converter, which is not in this Ethos-U's operator list",
            fit.mask_select,
            ("apply the mask on the host, or use an Ethos-U85",),
            "CAL-V",
            gate=common.ops_gate("Where"),
        )
        own["ADD"] = own["SUB"] = (mask,)
    if u55:
        own.update(
            {
                "BATCH_MATMUL": (mm,),
                "SUM": (r("reduce.stride", "kernel stride must be in the range (1, {stride_max})", stride_range),),
                "ARG_MAX": (
                    r(
                        "argmax.depth",
                        "ARG_MAX: along the depth axis with depth ≤ {argmax_depth}",
                        argmax,
                        ("run argmax on the host",),
                    ),
                ),
            }
        )
        own["REDUCE_MAX"] = own["REDUCE_MIN"] = own["SUM"]
        # the 32-bit feature-map rule comes first on every listed op that checks it
        return {**own, **{op: (f32,) + own.get(op, ()) for op in listed if op not in NO_FMAP32}}
    own["GATHER"] = (r("gather.axis", "GATHER: axis must equal batch_dims", gather_u85),)
    return own

"""Rockchip rule tables: graph_rules(p, lim, executes) and op_rules(p), one set per SoC under its own name.

Every number in a sentence is a {limit} of Profile.limits and `{chip}` is the SoC's name (tests/test_targets_
sentences.py); the checks are in checks.py. Every limit is its own rule (`rk3588.<op>.<what>`) so a measured
correction touches one line. A broken rule runs the op as a CPU kernel of the RKNN runtime unless it says otherwise.
"""

from __future__ import annotations

from .. import common
from ..base import Executes, Limits, Rule, RuleMaker, Verdict
from . import fitted as fit
from . import reshapes
from . import swept as sw
from .checks import (
    axis_range,
    cast_cpu,
    conv_dilation,
    conv_kernel,
    conv_pads,
    conv_stride,
    conv_transpose_config,
    div_dtype,
    dtype,
    gather_const_indices,
    gather_elements_indices,
    matmul_k,
    output_layout,
    pad_mode,
    pool_auto_pad,
    pool_limits,
    pow_exponent,
    qdq_absorbed,
    rank,
    resize_config,
    rnn_size,
    slice_steps,
    softmax_axis,
    tile_axes,
)

CPU, UNSUP = Verdict.CPU, Verdict.UNSUPPORTED


# the dtype rule's sentence and source by what the SoC's NPU executes: RV1106's int8 builds (PROBE-SOC: rknn.build
# refuses a float build for it) state int8 only
_DTYPE_TEXT = {
    Executes.FP16_INT8: (
        "NPU ops compute in int8 or float16 (float32 models are quantized or converted to float16 by rknn.build)",
        "R-PDF",
    ),
    Executes.INT8: (
        "NPU ops compute in int8 only: rknn.build quantizes float32/float16 activations to int8 (it refuses a "
        "float build for {chip}); other dtypes run on the CPU",
        "PROBE-SOC",
    ),
}


def graph_rules(p: str, lim: Limits, executes: Executes) -> tuple[Rule, ...]:
    """The SoC's graph rules: the dtype sentence by what it executes, output_layout where `output_reshape_npu` is
    False."""
    r = RuleMaker(p, CPU, "R-PDF")  # a broken rule runs the op as a CPU kernel of the RKNN runtime
    dtype_text, dtype_src = _DTYPE_TEXT[executes]
    rules = (
        r("dtype", dtype_text, dtype, ("keep integer index math out of the network body",), dtype_src),
        r(
            "rank",
            "NPU tensors are {max_rank}-D [batch, channel, height, width]: more than {max_rank} dimensions run on the "
            "CPU, "
            "except layout ops, {rank_from_npu}-D ops and {rank_from_npu}-D/{rank_split_max}-D splits on tensors an "
            "NPU op "
            "produced, and {rank_transpose_max}-D transposes that keep the innermost axis and move no odd-sized axis "
            "back (CAL-R)",
            rank,
            ("reshape to 4-D or fewer",),
            "INF",
            gate=common.max_rank_gate,
        ),
    )
    if lim["output_reshape_npu"]:  # the SoC ran those reshapes on the NPU: no output_layout rule
        return rules
    return rules + (
        r(
            "output_layout",
            "a reshape that produces a non-{max_rank}-D model output runs on the CPU unless the NPU's NC1HWC2 "
            "layout (blocks of {output_align} channels) already is its order: a {output_map_hw}x{output_map_hw} map "
            "with a "
            "multiple of {output_align} channels (from a model input: unless 2-D with an innermost dimension off the "
            "{output_align}-grid)",
            output_layout,
            ("return the 4-D tensor and reshape on the host",),
            "PROBE-R",
        ),
    )


def op_rules(p: str) -> dict[str, tuple[Rule, ...]]:
    """op -> its rules, in the order they are checked."""
    r = RuleMaker(p, CPU, "R-PDF")
    kernel = r(
        "conv.kernel",
        "convolution kernels must be {conv_min}..{conv_kernel} (depthwise too: 3..{dw_kernel} measured on the NPU)",
        conv_kernel,
        ("split large kernels",),
        "PROBE-R",
    )
    # pooling kernel measured (PROBE-R); its stride/pads/dims from the R-PDF
    pool = (
        r(
            "pool.limits",
            "pooling: kernel ≤ {pool_kernel}, stride ≤ {pool_stride}, pads ≤ {pool_pad}, C/H/W ≤ {pool_dim}",
            pool_limits,
            (),
            "PROBE-R",
        ),
        r(
            "pool.auto_pad",
            "pooling supports only auto_pad=NOTSET (explicit pads)",
            pool_auto_pad,
            ("export with explicit pads",),
        ),
    )
    axis = (r("axis.range", "the axis must be {axes_min}..{axes_max}", axis_range),)
    rnn = (
        r(
            "rnn.size",
            "LSTM/GRU: seq_len, input and hidden size ≤ {rnn_dim}; batch ≤ {rnn_dim} and a multiple of "
            "{rnn_batch_multiple} when > {rnn_batch_free}",
            rnn_size,
        ),
    )
    qdq = (
        r(
            "qdq.absorbed",
            "a QuantizeLinear/DequantizeLinear pair is folded into the int8 op it wraps; one bounding a CPU op "
            "is a CPU conversion",
            qdq_absorbed,
        ),
    )
    return {
        "Conv": (
            kernel,
            r(
                "conv.stride",
                "convolution stride must be {conv_min}..{conv_stride}",
                conv_stride,
                ("use a smaller stride followed by pooling",),
                "PROBE-R",
            ),
            r(
                "conv.pads",
                "convolution pads must each be {conv_pad_min}..{conv_pad}",
                conv_pads,
                ("move large padding into a Pad op",),
            ),
            r(
                "conv.dilation",
                "dilation must be {conv_min}..{conv_dilation}; a dilated kernel needs input width < "
                "{dilated_max_width}",
                conv_dilation,
            ),
        ),
        "ConvTranspose": (
            kernel,
            r(
                "conv_transpose.config",
                "transposed convolution: stride in {tconv_strides}, group "
                "{tconv_group} (or depthwise), dilation only with a {tconv_dilated_kernel}x"
                "{tconv_dilated_kernel} kernel",
                conv_transpose_config,
                ("use Resize + Conv",),
            ),
        ),
        "MaxPool": pool,
        "AveragePool": pool
        + (
            r(
                "pool.exclude_pad",
                "average pooling that leaves padding out of the average "
                "(count_include_pad=0) runs on the CPU when its windows reach into padding (pads, or a "
                "ceil_mode partial window); counting the padding, or without padding, it runs on the NPU",
                sw.avgpool_exclude_pad,
                ("export with count_include_pad=1, or pad explicitly and divide by the window counts",),
                "CAL-R",
            ),
        ),
        "DepthToSpace": (
            r(
                "depth_to_space.block",
                "DepthToSpace runs on the NPU with block size {d2s_blocks} (3 and 6 measured on the CPU)",
                fit.depth_to_space,
                ("upsample by 2, 4 or 8 per pixel shuffle",),
                "CAL-R",
            ),
        ),
        "Tile": (
            r(
                "tile.axes",
                "Tile runs on the NPU when it repeats one of C, H, W; repeating the batch or two axes runs on the CPU",
                tile_axes,
                ("tile one axis at a time, and keep batch repeats on the host",),
                "PROBE-R",
            ),
        ),
        "GatherElements": (
            r(
                "gather_elements.indices",
                "GatherElements runs on the NPU when its indices are constant and have "
                "the data's shape except along the gather axis",
                gather_elements_indices,
                ("gather along one axis with indices spanning the others",),
                "PROBE-R",
            ),
        ),
        "Div": (
            r(
                "div.dtype",
                "Div runs on the NPU in float16 and int8 builds (measured; the 2.3.2 document says an int8 Div "
                "falls back to the CPU)",
                div_dtype,
                ("multiply by the reciprocal constant instead",),
                "CAL-R",
            ),
        ),
        "Pow": (
            r(
                "pow.exponent",
                "Pow needs a constant exponent in {pow_exponents}",
                pow_exponent,
                ("use Mul for small integer powers",),
            ),
        ),
        "Concat": axis,
        "Split": axis,
        "Slice": (
            r(
                "slice.steps",
                "a Slice with steps other than {slice_step} runs on the NPU only as part of a space-to-depth "
                "reorg (every phase concatenated again, as YOLOv5's Focus and Swin's patch merging) or as the reversal "
                "of "
                "the axis holding the innermost data (step -1, through a Transpose before it), or on a {max_rank}-D "
                "grid "
                "reshaped from a MatMul's output (measured; why is not known); other steps alone run on the CPU (step "
                "2 measured on every axis of 3-D and 4-D tensors)",
                slice_steps,
                ("concatenate every phase, or use SpaceToDepth / a strided conv",),
                "CAL-R",
            ),
        ),
        "Gather": (
            r(
                "gather.indices",
                "Gather needs constant indices of rank ≤ {gather_indices_rank} and an axis {axes_min}..{axes_max} "
                "(indices computed at run time: CPU, CAL-R)",
                gather_const_indices,
            ),
        ),
        "Pad": (
            r(
                "pad.mode",
                "Pad supports constant mode, reflect with C,H ≤ {reflect_pad_ch}, W ≤ {reflect_pad_w}, and the modes "
                "in "
                "`pad_npu_modes` (CAL-R sweep; a 3-D tensor padded at the end of axis 1 runs on the CPU: constant "
                "unless a Conv "
                "produced it, and reflect and edge where `pad3_end_sweep` holds)",
                pad_mode,
            ),
        ),
        "Resize": (
            r(
                "resize.config",
                "Resize: nearest (any scale), or linear with {resize_linear_modes} and integer H/W scale "
                "factors {resize_scales:..} or a downscale by {resize_down_scales:#|or} (linear align_corners ran on "
                "the CPU at every scale measured)",
                resize_config,
                ("upsample by an integer factor 2..8, with align_corners=False",),
                "CAL-R",
            ),
        ),
        "Softmax": (
            r(
                "softmax.axis",
                "Softmax runs on the NPU along axis {softmax_axes:#|or}, or along the last axis when at most "
                "{softmax_last_axes} axes are larger than one (CAL-R)",
                softmax_axis,
                ("transpose so the softmax axis is the channel axis",),
            ),
        ),
        "Hardmax": (r("softmax.axis", "Hardmax runs on the NPU along axis {softmax_axes:#|or} only", softmax_axis),),
        "MatMul": (r("matmul.k", "MatMul (exMatMul) needs K ≤ {matmul_k}", matmul_k),),
        "LSTM": rnn,
        "GRU": rnn,
        "QuantizeLinear": qdq,
        "DequantizeLinear": qdq,
        "Cast": (
            r(
                "cast.cpu",
                "Cast is not in the {chip} NPU operator list: the RKNN runtime runs its CPU kernel (a Cast to the "
                "dtype it already has is deleted by rknn.build, RKNN-C; a Cast from int32 to a float type in "
                "`cast_int32_npu_to` ran on the NPU, CAL-R sweep)",
                cast_cpu,
            ),
        ),
        "Reshape": (
            r(
                "reshape.split_innermost",
                "A Reshape that splits the innermost axis W of a {max_rank}-D [.., T, W] into parts "
                "ending in k (or merges such parts into it) runs on the NPU when k has at least {split_min_inner} "
                "elements or W or T is a multiple of {split_row_bytes} bytes of elements (CAL-R)",
                reshapes.split_innermost,
                ("split the innermost axis into wider parts, or do this reshape on the host",),
                "CAL-R",
            ),
        ),
        "ScatterND": (
            r(
                "scatter_nd.measured",
                "ScatterND runs on the NPU with constant indices (the 2.3.2 document lists a CPU kernel)",
                fit.scatter_nd,
                (),
                "CAL-R",
            ),
        ),
        "ReduceL2": (
            r(
                "reduce_l2.measured",
                "ReduceL2 runs on the NPU (measured in float16 and int8 builds; the 2.3.2 document lists a CPU kernel)",
                fit.reduce_l2,
                (),
                "CAL-R",
            ),
        ),
        "Einsum": (
            r(
                "einsum.measured",
                "Einsum converts and runs on the NPU (every form measured: two and three operands, "
                "ellipsis; the 2.3.2 operator list has no Einsum)",
                fit.einsum,
                ("write the contraction as MatMul",),
                "CAL-R",
                on_fail=UNSUP,
            ),
        ),
    }

"""Rockchip rule tables: graph_rules(p, lim, executes) and op_rules(p), one set per SoC under its own name.

Every number in a sentence is a {limit} of Profile.limits and `{chip}` is the SoC's name (tests/test_targets_
sentences.py); the checks are in checks.py. Every limit is its own rule (`rk3588.<op>.<what>`) so a measured
correction touches one line. A broken rule runs the op as a CPU kernel of the RKNN runtime unless it says otherwise.
"""

from __future__ import annotations

from .. import common
from ..base import Executes, Limits, Rule, RuleMaker, Verdict
from . import bounded as bd
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

CALIBRATED = "measured rknn-toolkit2 2.5.0 builds of a calibration set of 48 architectures"


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
            "NPU tensors are {max_rank}-D [batch, channel, height, width]: ops on tensors of more than {max_rank} "
            "dimensions run on the CPU, with measured exceptions",
            rank,
            ("reshape to 4-D or fewer",),
            "INF",
            gate=common.max_rank_gate,
            evidence="The exceptions, from measured rknn-toolkit2 2.5.0 builds of a calibration set of 48 "
            "architectures: layout ops, 5-D ops and 5-D/6-D splits on tensors an NPU op produced, and 6-D "
            "transposes that keep the innermost axis and move no odd-sized axis back stay on the NPU.",
        ),
        r(
            "int8.functions",
            "In an int8 build these element-wise functions run on the CPU (on the NPU in a float16 build; the Sqrt "
            "of a normalization stays on the NPU): {int8_cpu_functions}",
            bd.int8_cpu_function,
            ("build this part in float16 (a mixed-precision build), or compute the function on the host",),
            "SWEEP",
            evidence="The element-wise function sweep: each function of one tensor on a map and on [1, C, T] rows, "
            "an STFT magnitude (halves squared, added, Sqrt), and LayerNorm and RMSNorm as exporters decompose "
            "them, in float16 and int8 builds.",
        ),
    )
    if lim["output_reshape_npu"]:  # the SoC ran those reshapes on the NPU: no output_layout rule
        return rules
    return rules + (
        r(
            "output_layout",
            "a reshape that produces a non-{max_rank}-D model output runs on the CPU unless the NPU's layout already "
            "is its order (a {output_map_hw}x{output_map_hw} map with a multiple of {output_align} channels)",
            output_layout,
            ("return the 4-D tensor and reshape on the host",),
            "PROBE-R",
            evidence="The NPU keeps tensors as NC1HWC2, blocks of 8 channels; a reshape whose output order differs "
            "needs a CPU layout conversion. Measured: a Flatten of a conv's [1,C,1,1] output ran on the NPU for "
            "C = 8, 16, 24 and on the CPU for C = 12; from a model input the reshape stays on the NPU unless its "
            "output is 2-D with an innermost dimension off the 8-grid.",
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
            r(
                "conv1d.limits",
                "A one-dimensional convolution runs on the NPU with a kernel of up to {conv1d_kernel} and a stride "
                "of up to {conv1d_stride}, the longest measured there.",
                bd.conv1d_limits,
                ("split the kernel into shorter ones, or run the front end on the host",),
                "SWEEP",
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
                "average pooling that leaves padding out of the average (count_include_pad=0) runs on the CPU when its "
                "windows reach into padding",
                sw.avgpool_exclude_pad,
                ("export with count_include_pad=1, or pad explicitly and divide by the window counts",),
                "CAL-R",
                evidence="Swept cases: windows that reach into pads, or a ceil_mode partial window, ran on the CPU; "
                "counting the padding, or without padding, the same pooling ran on the NPU.",
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
                "a Slice with steps other than {slice_step} runs on the NPU only inside a space-to-depth reorg, as the "
                "reversal of the innermost data, or on a {max_rank}-D grid reshaped from a MatMul's output",
                slice_steps,
                ("concatenate every phase, or use SpaceToDepth / a strided conv",),
                "CAL-R",
                evidence="A space-to-depth reorg concatenates every phase again (YOLOv5's Focus, Swin's patch "
                "merging); the reversal is step -1 on the axis holding the innermost data, through a Transpose before "
                "it; the MatMul-output grid case was measured and why it runs is not known. Other steps alone ran on "
                "the CPU (step 2 measured on every axis of 3-D and 4-D tensors).",
            ),
        ),
        "Gather": (
            r(
                "gather.indices",
                "Gather needs constant indices of rank ≤ {gather_indices_rank} and an axis {axes_min}..{axes_max}",
                gather_const_indices,
                evidence=f"Indices computed at run time ran on the CPU ({CALIBRATED}).",
            ),
        ),
        "Pad": (
            r(
                "pad.mode",
                "Pad supports constant mode, reflect with C,H ≤ {reflect_pad_ch}, W ≤ {reflect_pad_w}, and the modes "
                "in `pad_npu_modes`",
                pad_mode,
                evidence="Swept cases: a 3-D tensor padded at the end of axis 1 runs on the CPU: in constant mode "
                "unless a Conv produced it, in reflect and edge mode where `pad3_end_sweep` holds.",
            ),
        ),
        "Resize": (
            r(
                "resize.config",
                "Resize: nearest (any scale), or linear with {resize_linear_modes} and integer H/W scale "
                "factors {resize_scales:..} or a downscale by {resize_down_scales:#|or}",
                resize_config,
                ("upsample by an integer factor 2..8, with align_corners=False",),
                "CAL-R",
                evidence="Linear align_corners ran on the CPU at every scale measured; asymmetric ran on the NPU "
                "although the 2.3.2 operator document lists align_corners, not asymmetric.",
            ),
        ),
        "Softmax": (
            r(
                "softmax.axis",
                "Softmax runs on the NPU along axis {softmax_axes:#|or}, or along the last axis when at most "
                "{softmax_last_axes} axes are larger than one",
                softmax_axis,
                ("transpose so the softmax axis is the channel axis",),
                evidence=f"The last-axis case is fitted to {CALIBRATED}.",
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
                "Cast is not in the {chip} NPU operator list: the RKNN runtime runs its CPU kernel",
                cast_cpu,
                evidence="rknn.build deletes a Cast to the dtype the tensor already has (an observed RK3588 build's "
                "layer table), and a Cast from int32 to a float type in `cast_int32_npu_to` ran on the NPU (swept "
                "cases).",
            ),
        ),
        "Transpose": (
            r(
                "transpose.head_output",
                "The Transpose of a detection head's joined rows into the model output runs on the NPU up to "
                "{head_output_anchors} anchors",
                bd.head_output_transpose_cpu,
                ("write the joined [1, C, A] rows out and transpose them on the host",),
                "SWEEP",
                evidence="The YOLOX head sweep: box, objectness and class convs joined per scale, flattened, joined "
                "on the anchor axis and transposed to the output, at 320 to 768 inputs, 80 classes and one, float16 "
                "and int8 builds; the same Transpose read by a linear layer, and rows a single flatten made, as "
                "controls.",
            ),
        ),
        "Reshape": (
            r(
                "reshape.split_innermost",
                "A Reshape splitting the innermost axis W of a {max_rank}-D [.., T, W] into parts ending in k (or "
                "merging them) runs on the NPU when k has at least {split_min_inner} elements or W or T is a multiple "
                "of {split_row_bytes} bytes",
                reshapes.split_innermost,
                ("split the innermost axis into wider parts, or do this reshape on the host",),
                "CAL-R",
            ),
            r(
                "reshape.split_rows",
                "Reshapes that split channel rows into a map for a convolution run on the NPU while the map's height "
                "times width is at most {split_rows_hw}.",
                bd.split_rows_map,
                ("transpose the split rows before the convolution, or split them on the host",),
                "SWEEP",
            ),
            r(
                "reshape.head_rows",
                "A detection head's Reshape between maps and rows runs on the NPU when its rows (or a flatten's "
                "channels) are a multiple of {head_row_bytes} bytes, or it flattens a map whose cells leave "
                "{head_joined_residues:#|or} over in groups of {head_joined_modulus}",
                bd.head_rows_cpu,
                (
                    "export at an image size whose every head map has a multiple of 8 cells (640 does; 320 and 160 "
                    "leave a 10x10 map), or do the head's reshapes on the host",
                ),
                "SWEEP",
                evidence="The multi-scale head sweep: scales flattened, joined and split as pose and DFL heads do, "
                "one to three scales, 51 channels beside multiples of 8, float16 and int8 builds.",
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
        "Sum": (
            r(
                "sum.inputs",
                "A Sum of up to {sum_inputs} inputs runs on the NPU; with {sum_fails_from} inputs the build failed.",
                bd.sum_inputs,
                ("add the inputs two at a time",),
                "SWEEP",
                on_fail=UNSUP,
            ),
        ),
        "Min": (
            r(
                "min.runtime",
                "A Min of two or more tensors computed while the model runs goes to the CPU.",
                bd.min_runtime,
                ("use Max of the negated inputs (-max(-a, -b)), which ran on the NPU",),
                "SWEEP",
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

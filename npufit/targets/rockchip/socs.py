"""The Rockchip NPUs as data: RK3588, and RK3576, RK3566 (alias RK3568), RV1106 (alias RV1103) as its differences.

All four run RKNN-Toolkit2's converter, so every SoC is built from RK3588's limits, op tables and rules (rockchip/
__init__.py, rules.py) plus the differences its own probe record measured (docs/probe/<soc>-measured.json,
rknn-toolkit2 2.5.0, `target_platform` = the SoC): a SoC below is a few lines of data. Its limits name it (`chip`,
which the sentences quote) and switch the rules whose evidence differs; an op, rule or fused layer it does not
override is RK3588's under its own name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ...graph import Graph
from .. import common, patterns, sweeps
from ..base import Composite, CompositeMatch, Executes, OpSupport, Rule, RuleMaker, Verdict
from . import bounded as bd
from .checks import const_divisor, softmax_npu_axes
from .swept import ceil_pool

TAG = "PROBE-SOC"  # the source tag of a SoC's own probe record
CAL = "CAL-SOC"  # ... and of its calibration-corpus record, where it has one
SWEEP_SOC = "SWEEP-SOC"  # ... and of its own compiler sweep (docs/calibration/sweep/<soc>.json), where it has one


def _sweep_rules(soc: str) -> dict[str, tuple[Rule, ...]]:
    """The rules whose bounds the SoC's own sweep record derives (bounded.soc_limits): Reshapes between a detection
    head's rows and maps, Transposes of its split rows, and the Transpose of an attention layer's 5-D q/k/v view. A
    bound the record does not give has no rule."""
    lim = bd.soc_limits(soc)
    r = RuleMaker(soc, Verdict.CPU, SWEEP_SOC)
    ev = (
        f"The detection-head sweep on this SoC (docs/calibration/sweep/{soc}.json): a head's scales flattened, joined "
        "and split into a map read by a convolution or by Transposes, a pose head's keypoints merged back into rows, "
        "and YOLOv8's DFL, at the anchor counts of 160 to 640 inputs; each limit is the largest map that ran on the "
        "NPU there (0: none did), and every larger one measured ran on the CPU."
    )
    fix = ("do the head's reshapes and its decode on the host, after the NPU part",)
    reshape = (
        ("head_split_hw", "reshape.head_split", bd.head_split_cpu, "A detection head's Reshape that splits its joined "
         "rows into a map runs on the CPU"),
        ("head_split_t_hw", "reshape.head_split_t", bd.head_split_t_cpu, "A detection head's Reshape that splits its "
         "joined rows into a map only Transposes read runs on the CPU"),
        ("head_merge_hw", "reshape.head_merge", bd.head_merge_cpu, "A Reshape that merges a detection head's joined "
         "keypoint map back into rows runs on the CPU"),
        ("dfl_split_hw", "reshape.dfl_split", bd.dfl_split_cpu, "A Reshape that splits rows into a map for a "
         "Transpose and a Softmax (a DFL head) runs on the CPU"),
    )  # fmt: skip

    def text(key: str, head: str) -> str:  # a bound of 0 (none ran on the NPU) needs no number
        return head + (f" above {{{key}}} cells" if lim[key] else "")

    rules = [
        r(rid, text(key, head), check, fix, evidence=ev)
        for key, rid, check, head in reshape
        if key in lim
    ]
    transposes = []
    if lim.get("head_split_transpose_cpu"):
        transposes.append(
            r(
                "transpose.head_split",
                "A Transpose of a detection head's split rows runs on the CPU",
                bd.head_split_transpose_cpu,
                fix,
                evidence=ev,
            )
        )
    if "qkv_view_align" in lim:
        transposes.append(
            r(
                "transpose.qkv_view",
                "The Transpose that splits an attention layer's fused q/k/v projection along an axis of its own runs "
                "on the NPU when the head width is a multiple of {qkv_view_align}",
                bd.qkv_view_transpose_cpu,
                ("split q, k and v with three Reshapes of the projection's slices, or use an aligned head width",),
                evidence=f"The attention sweep on this SoC (docs/calibration/sweep/{soc}.json): self-attention whose "
                "fused q/k/v projection is viewed as [1, N, 3, heads, d] and transposed to [3, 1, heads, N, d], "
                "as timm's ViT and PP-OCRv4's recognizer export it, by head width, heads and tokens.",
            )
        )
    out: dict[str, tuple[Rule, ...]] = {"Reshape": tuple(rules)}
    if transposes:
        out["Transpose"] = tuple(transposes)
    return out


def _cpu(op: str, why: str, src: str = TAG) -> OpSupport:
    return OpSupport(op, Verdict.CPU, reason=why, source=src)


def match_gru_tail(graph: Graph) -> list[CompositeMatch]:
    """A GRU with the Squeeze / Transpose / Reshape chain that turns its output back to batch-first: the toolkit fuses
    them into its one exGRU layer (probe case gru: GRU, Squeeze and Transpose were one layer)."""
    out = []
    for g in patterns._anchors(graph, "GRU"):
        chain, n = [g], patterns.sole_consumer(graph, g, ("Squeeze", "Transpose", "Reshape"))
        while n is not None and len(chain) < 4:
            chain.append(n)
            n = patterns.sole_consumer(graph, n, ("Squeeze", "Transpose", "Reshape"))
        out.append(CompositeMatch(tuple(chain), " -> ".join(x.op_type for x in chain)))
    return out


@dataclass(frozen=True)
class Soc:
    name: str  # RKNN-Toolkit2's target_platform
    title: str
    summary: str
    probe: str = ""  # the probe run that measured it (the text of source PROBE-SOC); "" for RK3588, the reference
    calibration: str = ""  # its calibration-corpus record (source CAL-SOC), if any
    aliases: tuple[str, ...] = ()
    executes: Executes = Executes.FP16_INT8  # INT8 also picks the int8-only sentence of the dtype rule
    limits: Mapping[str, Any] = field(default_factory=dict)  # over RK3588's; `chip` names it in sentences
    ops: Mapping[str, OpSupport] = field(default_factory=dict)  # measured differences from RK3588
    cpu_layers: tuple[str, ...] = ()  # the toolkit's fused layers (exNorm, ...) it runs on the CPU
    extra_rules: Mapping[str, tuple[Rule, ...]] = field(default_factory=dict)  # op -> rules added to RK3588's
    extra_composites: tuple[Composite, ...] = ()  # fused layers this SoC places differently from its parts
    notes: tuple[str, ...] = ()


def _probe_src(soc: str, build: str) -> str:
    return (
        f"measured rknn-toolkit2 2.5.0 {build} builds for {soc} of one small model per op (npufit probe --compiler "
        f"rknn, 89 cases; docs/probe/{soc}-matrix.md)"
    )


def _cal_src(soc: str, build: str) -> str:
    return (
        f"measured rknn-toolkit2 2.5.0 {build} builds for {soc} of a calibration set of 48 architectures and of the "
        f"swept Resize, AveragePool, Slice and Reshape cases (docs/calibration/{soc}-*.json)"
    )


# the second sweep round's conditions (swept.py: 2-D Gather indices, integer ops on the NPU), measured on RK3588
# only
_RK3588_ONLY = {
    "gather_indices_rank": 1,
    "int32_npu_ops": common.Choices(()),
    "int_transpose_npu": False,
    "cast_int32_npu_to": common.Choices(()),
    "pad_npu_modes": common.Choices(()),
    "pad3_end_sweep": False,
}

SOCS: tuple[Soc, ...] = (
    Soc(
        "rk3588",
        "Rockchip RK3588 (RKNPU2; rknn-toolkit2 2.3.2 docs, checked against 2.5.0)",
        "ONNX models converted by RKNN-Toolkit2; ops outside the RK3588 NPU list or its limits run as CPU kernels in "
        "the RKNN "
        "runtime; ops the converter does not know fail the conversion.",
    ),
    Soc(
        "rk3576",
        "Rockchip RK3576 (RKNPU2; rknn-toolkit2 2.5.0, measured)",
        "ONNX models converted by RKNN-Toolkit2 for RK3576; float16 and int8 builds; ops outside its NPU list or "
        "limits run as "
        "CPU kernels in the RKNN runtime.",
        _probe_src("rk3576", "float16"),
        _cal_src("rk3576", "fp16"),
        # rk3576-cases.json: slice-nchw-ax3-sm1 and slice-nhwc-ax2-sm1 (a reversed innermost axis) ran on the CPU here,
        # on
        # the NPU on RK3588 (its linear Resize and AveragePool cases agree with RK3588's)
        # flatten_output ([1, 3, 2, 2] -> [1, 12]) and flatten_output_1x1 ([1, 12, 1, 1] -> [1, 12]) ran on the NPU
        # (output_reshape_npu: no output_layout rule)
        limits={
            "chip": "RK3576",
            "slice_flip_npu": False,
            "output_reshape_npu": True,
            "slice_matmul_grid_npu": False,
            **_RK3588_ONLY,
        },  # the latter measured on RK3588 only
        ops={
            # rk3576-cases.json: the patch unfold / fold with W = H = 4 ran on the NPU here, its innermost-axis splits
            # on
            # RK3588's CPU: RK3588's reshape.split_innermost rule does not hold here
            "Reshape": OpSupport(
                "Reshape",
                Verdict.NPU,
                source=CAL,
                note="an innermost-axis split ran on the NPU (the unfold / fold sweep cases)",
            ),
            # probe cases reduce_max_keepdims0, reduce_max_channel, sin, where (its Greater): CPU on RK3588, NPU here
            "ReduceMax": OpSupport(
                "ReduceMax", Verdict.NPU, source=TAG, note="measured on the NPU (probe reduce_max_*)"
            ),
            "Sin": OpSupport(
                "Sin", Verdict.NPU, source=TAG, note="measured on the NPU (probe sin); Cos was not measured"
            ),
            "Greater": OpSupport(
                "Greater",
                Verdict.NPU,
                source=TAG,
                note="measured on the NPU (probe where); the other comparisons were not measured",
            ),
        },
        # avgpool2d_ceil (3x3/2 on 16x16, ceil -> 8x8): CPU here, NPU on RK3588
        extra_rules={
            "AveragePool": (
                RuleMaker("rk3576", Verdict.CPU, TAG)(
                    "pool.ceil",
                    "average pooling whose ceil_mode adds a partial window runs on the CPU",
                    ceil_pool,
                    ("pad explicitly and use floor mode",),
                ),
            )
        },
    ),
    Soc(
        "rk3566",
        "Rockchip RK3566 / RK3568 (RKNPU2; rknn-toolkit2 2.5.0, measured)",
        "ONNX models converted by RKNN-Toolkit2 for RK3566/RK3568 (one NPU, one target_platform); float16 and int8 "
        "builds; ops "
        "outside its NPU list or limits run as CPU kernels in the RKNN runtime.",
        _probe_src("rk3566", "float16"),
        _cal_src("rk3566", "fp16"),
        aliases=("rk3568",),
        # softmax_npu_axes is read from rk3566's Softmax sweep (calibration/bounds.py): every Softmax it measured, 2-D
        # to 4-D on every axis (a DFL head's bins, attention, a classifier), ran on the CPU, as did all 82 last-axis
        # softmaxes of the corpus (CAL-SOC).
        # Transpose stays RK3588's: the probe's 8x16x16 permutes all ran on the CPU, but 470 of the corpus's data-moving
        # transposes ran on the NPU (about 60 on the CPU): only the Transposes of a detection head's split rows, which
        # its head sweep ran on the CPU, are a rule of its own (_sweep_rules)
        # slice_matmul_grid_npu: measured on RK3588 only
        limits={
            "chip": "RK3566",
            "softmax_npu_axes": common.Choices(tuple(sweeps.value("rk3566", "softmax_npu_axes"))),
            "input_reshape_npu": False,
            "slice_matmul_grid_npu": False,
            **_RK3588_ONLY,
            **bd.soc_limits("rk3566"),
        },
        extra_rules=_sweep_rules("rk3566"),
        ops={
            "Softmax": OpSupport(
                "Softmax",
                Verdict.NPU,
                (
                    RuleMaker("rk3566", Verdict.CPU, TAG)(
                        "softmax.npu_axes",
                        "Softmax runs on the CPU on this SoC except on the axes its compiler tests ran on the NPU: "
                        "{softmax_npu_axes}",
                        softmax_npu_axes,
                        ("compute the softmax on the host, after the NPU part",),
                        evidence="The Softmax sweep on this SoC (docs/calibration/sweep/rk3566.json): a DFL head's "
                        "bins, a map's channels and last axis, an attention map's last axis and a classifier's "
                        "[1, C], each compiled on its own.",
                    ),
                ),
                source=TAG,
            ),
        },
        # reshape ([1, 8, 16, 16] -> [1, 8, 32, 8]) and flatten_rank3 (-> [1, 8, 256]) read a model input and give a
        # model
        # output: CPU here, NPU on RK3588 (input_reshape_npu)
        notes=(
            "RK3566 and RK3568 share one NPU and one target_platform (rk3566); the probe record is rk3566's",
            "The detection-head rules come from compiler tests on this SoC; for other layers it follows the RK3588's, "
            "so install RKNN-Toolkit2 (npufit env install rknn) to measure a model's placement",
        ),
    ),
    Soc(
        "rv1106",
        "Rockchip RV1106 / RV1103 (RKNPU2, int8 only; rknn-toolkit2 2.5.0, measured)",
        "ONNX models converted and quantized by RKNN-Toolkit2 for RV1106/RV1103; the NPU runs int8 only, and the "
        "runtime has CPU kernels for a short list of ops only.",
        _probe_src("rv1106", "int8"),
        _cal_src("rv1106", "int8"),
        aliases=("rv1103",),
        executes=Executes.INT8,
        # rknn.build for rv1106 refuses a float build: "Current target_platform(rv1106) not support do_quantization =
        # False!".
        # `executes` says int8 only; `dtypes` stays what rknn.build takes into NPU ops, since it quantizes float
        # activations
        # of any model: the int8 corpus builds ran BERT-family models (int64 inputs, float body) on the NPU (CAL-SOC)
        # rv1106-cases.json: a reversed innermost axis (slice-nchw-ax3-sm1, slice-nhwc-ax2-sm1) ran on the CPU, and a
        # count_include_pad=0 average pool's ceil_mode partial window without pads on the NPU (both the other way on
        # RK3588)
        # flatten_output ([1, 3, 2, 2] -> [1, 12]) and flatten_output_1x1 ([1, 12, 1, 1] -> [1, 12]): RK3588's float16
        # builds ran both on the CPU (its NC1HWC2 reorder), RV1106's int8 builds on the NPU (output_reshape_npu)
        limits={
            "chip": "RV1106",
            "slice_flip_npu": False,
            "avgpool_ceil_window_cpu": False,
            "output_reshape_npu": True,
            "slice_matmul_grid_npu": False,
            **_RK3588_ONLY,
            **bd.soc_limits("rv1106"),
        },
        extra_rules=_sweep_rules("rv1106"),
        ops={
            # R-PDF §4.1 lists Div among RV1106's CPU kernels (the NPU Div is float16 only). Probe case div (x / y):
            # CPU.
            # Corpus (CAL-SOC): 127 of 127 Divs by a constant ran on the NPU (the toolkit multiplies by the
            # reciprocal); 17 of 21 by a computed divisor ran on the CPU
            "Div": OpSupport(
                "Div",
                Verdict.NPU,
                (
                    RuleMaker("rv1106", Verdict.CPU, TAG)(
                        "div.divisor",
                        "{chip} runs Div on the NPU when the divisor "
                        "is a constant; a divisor computed at run time runs on the CPU",
                        const_divisor,
                        ("multiply by a precomputed reciprocal",),
                        CAL,
                    ),
                ),
                source=CAL,
            ),
            # exLayerNorm is one of RV1106's CPU kernels (R-PDF §4.1): the fused exNorm layer ran on the CPU
            "LayerNormalization": _cpu(
                "LayerNormalization", "RV1106 runs the fused exNorm layer on the CPU (probe case layernorm)"
            ),
            "InstanceNormalization": _cpu(
                "InstanceNormalization", "RV1106 runs the fused exNorm layer on the CPU (probe case instancenorm2d)"
            ),
            # R-PDF §4.1 lists ReduceL2 among RV1106's CPU kernels; corpus (CAL-SOC): 12 of 16 on the CPU (swinv2's and
            # swin2sr's cosine attention), RK3588 ran all 16 on the NPU
            "ReduceL2": _cpu(
                "ReduceL2", "RV1106 runs ReduceL2 as a CPU kernel (12 of 16 in the int8 calibration builds)", CAL
            ),
            # corpus (CAL-SOC): wavlm's int8 Reshapes [1, 2, 99, 8] -> [1, 2, 99, 2, 4], CPU on RK3588 (its split-last
            # cases), ran on RV1106's NPU: RK3588's reshape.split_innermost rule does not hold here
            "Reshape": OpSupport(
                "Reshape",
                Verdict.NPU,
                source=CAL,
                note="an innermost-axis split ran on the NPU (wavlm, int8 corpus build)",
            ),
            # LSTM and BiLSTM ran on the NPU; the exGRU layer did not
            "GRU": _cpu(
                "GRU", "RV1106 runs the exGRU layer on the CPU (probe case gru; lstm and bilstm ran on the NPU)"
            ),
        },
        cpu_layers=("exNorm",),
        extra_composites=(
            Composite(
                "rv1106.gru",
                "GRU (exGRU)",
                "RV1106 runs the exGRU layer, with the output reshapes fused into it, on the CPU",
                match_gru_tail,
                Verdict.CPU,
                source=TAG,
            ),
        ),
        notes=(
            "RV1106/RV1103 have no CPU mean/scale/quantize on the inputs: give the model int8 inputs or keep the "
            "preprocessing in the model",
            "Rockchip's operator list names 11 CPU kernels for the RV1106 runtime; builds place other ops on the CPU "
            "too, and whether the device runs those was not measured",
            "The detection-head rules come from compiler tests on this SoC; for other layers it follows the RK3588's, "
            "so install RKNN-Toolkit2 (npufit env install rknn) to measure a model's placement",
        ),
    ),
)

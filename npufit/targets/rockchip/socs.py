"""The Rockchip NPUs besides RK3588: RK3576, RK3566 (alias RK3568), RV1106 (alias RV1103).

All four run RKNN-Toolkit2's converter, so each SoC's profile is RK3588's (rockchip.py) with the differences its
own probe record measured (docs/probe/<soc>-measured.json, rknn-toolkit2 2.5.0, `target_platform` = the SoC):
a SoC below is a few lines of data, and a rule or op it does not override is RK3588's, re-labelled.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ...graph import Graph
from .. import common, patterns
from ..base import Composite, CompositeMatch, Executes, OpSupport, Profile, Rule, Verdict

# the label RK3588's rule sentences and reasons are written with (swapped for the SoC's own)
BASE_LABEL = "RK3588"
TAG = "PROBE-SOC"  # the source tag of a SoC's own probe record
CAL = "CAL-SOC"  # ... and of its calibration-corpus record, where it has one


def _cpu(op: str, why: str, src: str = TAG) -> OpSupport:
    return OpSupport(op, Verdict.CPU, reason=why, source=src)


def _rule_for(soc: str, rid: str, text: str, fn, fix: tuple[str, ...] = (), src: str = TAG) -> Rule:
    return Rule(f"{soc}.{rid}", text, fn, Verdict.CPU, fix, src)


def softmax_axis(node, lim) -> str | None:
    r = common.rank(node)
    a = common.norm_axis(int(node.attr("axis", -1 if node.graph.opsets.get("ai.onnx", 13) >= 13 else 1)), r)
    return None if a in lim["softmax_npu_axes"] else f"axis {a}"


def const_divisor(node, lim) -> str | None:
    return None if len(node.inputs) > 1 and node.is_const(1) else "divisor computed at run time"


def ceil_pool(node, lim) -> str | None:
    """ceil_mode=1 that changes the output size (an extra, partial window at the edge)."""
    x, y = node.input_shape(0), node.output_shape(0)
    if not int(node.attr("ceil_mode", 0) or 0) or not x or not y or not all(isinstance(d, int) for d in list(x[2:]) + list(y[2:])):
        return None
    k, st = list(node.attr("kernel_shape") or []), list(node.attr("strides") or [1] * len(x[2:]))
    p = list(node.attr("pads") or [0] * 2 * len(k))
    floor = [(x[2 + i] + p[i] + p[i + len(k)] - k[i]) // st[i] + 1 for i in range(len(k))]
    return None if list(y[2:]) == floor else f"ceil_mode=1 gives {list(y[2:])} where floor gives {floor}"


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
    label: str  # as printed in sentences
    title: str
    summary: str
    probe: str  # the probe run that measured it (its source tag's text)
    calibration: str = ""  # its calibration-corpus record, if any
    aliases: tuple[str, ...] = ()
    executes: Executes = Executes.FP16_INT8
    limits: Mapping[str, Any] = field(default_factory=dict)
    ops: Mapping[str, OpSupport] = field(default_factory=dict)  # measured differences from RK3588
    composites: Mapping[str, Verdict] = field(default_factory=dict)  # RK3588 composite (id after the dot) -> verdict here
    extra_rules: Mapping[str, tuple[Rule, ...]] = field(default_factory=dict)  # op -> rules added to RK3588's
    extra_composites: tuple[Composite, ...] = ()  # fused layers this SoC places differently from its parts
    drop_rules: tuple[str, ...] = ()  # RK3588 graph rules (id after the dot) this SoC's record contradicts
    rule_texts: Mapping[str, str] = field(default_factory=dict)  # RK3588 graph rule (id after the dot) -> sentence here
    notes: tuple[str, ...] = ()


def _probe_src(soc: str, build: str) -> str:
    return (f"measured: npufit probe --target {soc} --compiler rknn, the 89 base cases without sweep variants (rknn-toolkit2 "
            f"2.5.0, target_platform {soc}, {build} builds); record docs/probe/{soc}-measured.json, matrix docs/probe/{soc}-matrix.md")


def _cal_src(soc: str, build: str) -> str:
    return (f"measured: rknn-toolkit2 2.5.0 {build} builds of the 48-architecture calibration corpus (benchmarks/calibration) for "
            f"{soc}; record docs/calibration/{soc}-{build}-op17.json; the sweep cases that bound RK3588's Resize, AveragePool, "
            f"Slice and Reshape conditions, docs/calibration/{soc}-cases.json (benchmarks/calibration/rknn_cases.py --target {soc})")


# the second sweep round's conditions (rockchip_swept: 2-D Gather indices, integer ops on the NPU), measured on RK3588 only
_RK3588_ONLY = {"gather_indices_rank": 1, "int32_npu_ops": common.Choices(()), "int_transpose_npu": False,
                "cast_int32_npu_to": common.Choices(()), "pad_npu_modes": common.Choices(()), "pad3_end_sweep": False}

SOCS: tuple[Soc, ...] = (
    Soc("rk3576", "RK3576", "Rockchip RK3576 (RKNPU2; rknn-toolkit2 2.5.0, measured)",
        "ONNX models converted by RKNN-Toolkit2 for RK3576; float16 and int8 builds; ops outside its NPU list or limits run as "
        "CPU kernels in the RKNN runtime.", _probe_src("rk3576", "float16"), _cal_src("rk3576", "fp16"),
        # rk3576-cases.json: slice-nchw-ax3-sm1 and slice-nhwc-ax2-sm1 (a reversed innermost axis) ran on the CPU here, on
        # the NPU on RK3588 (its linear Resize and AveragePool cases agree with RK3588's)
        limits={"slice_flip_npu": False, "slice_matmul_grid_npu": False, **_RK3588_ONLY},  # the latter measured on RK3588 only
        ops={
            # rk3576-cases.json: the patch unfold / fold with W = H = 4 ran on the NPU here, its innermost-axis splits on
            # RK3588's CPU: RK3588's reshape.split_innermost rule does not hold here
            "Reshape": OpSupport("Reshape", Verdict.NPU, source=CAL, note="an innermost-axis split ran on the NPU (the unfold / "
                                                                          "fold sweep cases)"),
            # probe cases reduce_max_keepdims0, reduce_max_channel, sin, where (its Greater): CPU on RK3588, NPU here
            "ReduceMax": OpSupport("ReduceMax", Verdict.NPU, source=TAG, note="measured on the NPU (probe reduce_max_*)"),
            "Sin": OpSupport("Sin", Verdict.NPU, source=TAG, note="measured on the NPU (probe sin); Cos was not measured"),
            "Greater": OpSupport("Greater", Verdict.NPU, source=TAG, note="measured on the NPU (probe where); the other "
                                                                          "comparisons were not measured"),
        },
        # avgpool2d_ceil (3x3/2 on 16x16, ceil -> 8x8): CPU here, NPU on RK3588
        extra_rules={"AveragePool": (_rule_for("rk3576", "pool.ceil", "average pooling whose ceil_mode adds a partial window "
                                                                      "runs on the CPU", ceil_pool, ("pad explicitly and use floor mode",)),)},
        # flatten_output ([1, 3, 2, 2] -> [1, 12]) and flatten_output_1x1 ([1, 12, 1, 1] -> [1, 12]) ran on the NPU
        drop_rules=("output_layout",)),
    Soc("rk3566", "RK3566", "Rockchip RK3566 / RK3568 (RKNPU2; rknn-toolkit2 2.5.0, measured)",
        "ONNX models converted by RKNN-Toolkit2 for RK3566/RK3568 (one NPU, one target_platform); float16 and int8 builds; ops "
        "outside its NPU list or limits run as CPU kernels in the RKNN runtime.", _probe_src("rk3566", "float16"), _cal_src("rk3566", "fp16"),
        aliases=("rk3568",),
        # probe softmax, softmax_axis: axis 3 of a 4-D tensor ran on the CPU (RK3588: NPU); axis 1 was not measured. Corpus
        # (CAL-SOC): all 82 last-axis softmaxes (3-D, 4-D and 5-D attention) ran on the CPU.
        # Transpose stays RK3588's: the probe's 8x16x16 permutes all ran on the CPU, but 470 of the corpus's data-moving
        # transposes ran on the NPU (about 60 on the CPU): no condition separating them is fitted yet
        # slice_matmul_grid_npu: measured on RK3588 only
        limits={"softmax_npu_axes": common.Choices((1,)), "input_reshape_npu": False, "slice_matmul_grid_npu": False, **_RK3588_ONLY},
        ops={
            "Softmax": OpSupport("Softmax", Verdict.NPU, (_rule_for(
                "rk3566", "softmax.npu_axes", "Softmax runs on the NPU along axis {softmax_npu_axes} only (axis 3 ran on the CPU)",
                softmax_axis, ("transpose so the softmax axis is the channel axis",)),), source=TAG),
        },
        # reshape ([1, 8, 16, 16] -> [1, 8, 32, 8]) and flatten_rank3 (-> [1, 8, 256]) read a model input and give a model
        # output: CPU here, NPU on RK3588 (input_reshape_npu)
        notes=("RK3566 and RK3568 share one NPU and one target_platform (rk3566); the probe record is rk3566's",)),
    Soc("rv1106", "RV1106", "Rockchip RV1106 / RV1103 (RKNPU2, int8 only; rknn-toolkit2 2.5.0, measured)",
        "ONNX models converted and quantized by RKNN-Toolkit2 for RV1106/RV1103; the NPU runs int8 only, and the runtime has CPU "
        "kernels for a short list of ops only (targets.md §4a).", _probe_src("rv1106", "int8"), _cal_src("rv1106", "int8"),
        aliases=("rv1103",), executes=Executes.INT8,
        # rknn.build for rv1106 refuses a float build: "Current target_platform(rv1106) not support do_quantization = False!".
        # `executes` says int8 only; `dtypes` stays what rknn.build takes into NPU ops, since it quantizes float activations
        # of any model: the int8 corpus builds ran BERT-family models (int64 inputs, float body) on the NPU (CAL-SOC)
        # rv1106-cases.json: a reversed innermost axis (slice-nchw-ax3-sm1, slice-nhwc-ax2-sm1) ran on the CPU, and a
        # count_include_pad=0 average pool's ceil_mode partial window without pads on the NPU (both the other way on RK3588)
        limits={"slice_flip_npu": False, "avgpool_ceil_window_cpu": False, "slice_matmul_grid_npu": False, **_RK3588_ONLY},
        rule_texts={"dtype": "NPU ops compute in int8 only: rknn.build quantizes float32/float16 activations to int8 (it refuses "
                             "a float build for RV1106); other dtypes run on the CPU"},
        ops={
            # R-PDF §4.1 lists Div among RV1106's CPU kernels (the NPU Div is float16 only). Probe case div (x / y): CPU.
            # Corpus (CAL-SOC): 127 of 127 Divs by a constant ran on the NPU (the toolkit multiplies by the
            # reciprocal); 17 of 21 by a computed divisor ran on the CPU
            "Div": OpSupport("Div", Verdict.NPU, (_rule_for("rv1106", "div.divisor", "RV1106 runs Div on the NPU when the divisor "
                                                            "is a constant; a divisor computed at run time runs on the CPU",
                                                            const_divisor, ("multiply by a precomputed reciprocal",), CAL),), source=CAL),
            # exLayerNorm is one of RV1106's CPU kernels (R-PDF §4.1): the fused exNorm layer ran on the CPU
            "LayerNormalization": _cpu("LayerNormalization", "RV1106 runs the fused exNorm layer on the CPU (probe case layernorm)"),
            "InstanceNormalization": _cpu("InstanceNormalization", "RV1106 runs the fused exNorm layer on the CPU "
                                                                   "(probe case instancenorm2d)"),
            # R-PDF §4.1 lists ReduceL2 among RV1106's CPU kernels; corpus (CAL-SOC): 12 of 16 on the CPU (swinv2's and
            # swin2sr's cosine attention), RK3588 ran all 16 on the NPU
            "ReduceL2": _cpu("ReduceL2", "RV1106 runs ReduceL2 as a CPU kernel (R-PDF §4.1; 12 of 16 in the int8 corpus builds)", CAL),
            # corpus (CAL-SOC): wavlm's int8 Reshapes [1, 2, 99, 8] -> [1, 2, 99, 2, 4], CPU on RK3588 (its split-last
            # cases), ran on RV1106's NPU: RK3588's reshape.split_innermost rule does not hold here
            "Reshape": OpSupport("Reshape", Verdict.NPU, source=CAL, note="an innermost-axis split ran on the NPU (wavlm, "
                                                                          "int8 corpus build)"),
            # LSTM and BiLSTM ran on the NPU; the exGRU layer did not
            "GRU": _cpu("GRU", "RV1106 runs the exGRU layer on the CPU (probe case gru; lstm and bilstm ran on the NPU)"),
        },
        composites={"layernorm": Verdict.CPU},
        extra_composites=(Composite("rv1106.gru", "GRU (exGRU)", "RV1106 runs the exGRU layer, with the output reshapes fused "
                                                                  "into it, on the CPU", match_gru_tail, Verdict.CPU, source=TAG),),
        # flatten_output ([1, 3, 2, 2] -> [1, 12]) and flatten_output_1x1 ([1, 12, 1, 1] -> [1, 12]): RK3588's float16
        # builds ran both on the CPU (its NC1HWC2 reorder), RV1106's int8 builds on the NPU
        drop_rules=("output_layout",),
        notes=("RV1106/RV1103 have no CPU mean/scale/quantize on the inputs (R-PDF §5.1): give the model int8 inputs or "
               "keep the preprocessing in the model",
               "R-PDF §4.1 lists 11 CPU kernels for RV1106/RV1103's runtime (Concat, DataConvert, Div, exLayerNorm, Exp, Gather, "
               "ReduceL2, ReduceMax, Reshape, ScatterND, Softmax); rknn-toolkit2 2.5.0 still builds models with other CPU layers "
               "(Erf, Sin, TopK, ArgMax ... in the probe record). Whether the device runtime runs those was not measured here.")),
)


def _relabel(text: str, soc: Soc) -> str:
    return text.replace(BASE_LABEL, soc.label)


def _rule(r: Rule, base: str, soc: Soc) -> Rule:
    rid = soc.name + r.id[len(base):] if r.id.startswith(base + ".") else r.id
    return replace(r, id=rid, text=_relabel(r.text, soc))


def _op(s: OpSupport, base: str, soc: Soc) -> OpSupport:
    return replace(s, rules=tuple(_rule(r, base, soc) for r in s.rules), reason=_relabel(s.reason, soc))


def _short(rid: str) -> str:
    return rid.split(".", 1)[-1]


def _composite(c: Composite, base: str, soc: Soc) -> Composite:
    c = replace(c, id=soc.name + c.id[len(base):] if c.id.startswith(base + ".") else c.id)
    v = soc.composites.get(_short(c.id))
    return c if v is None else replace(c, verdict=v, text=f"{c.name} runs on the {soc.label} CPU as one fused layer", source=TAG)


def _graph_rule(r: Rule, base: str, soc: Soc) -> Rule:
    r = _rule(r, base, soc)
    text = soc.rule_texts.get(_short(r.id))
    return r if text is None else replace(r, text=text, source=TAG)


def derive(base: Profile, soc: Soc) -> Profile:
    """`soc`'s profile: `base`'s rules under the SoC's name, its measured op differences, limits and execution."""
    ops = {k: _op(s, base.name, soc) for k, s in base.ops.items()}
    ops.update(soc.ops)
    for op, rules in soc.extra_rules.items():
        ops[op] = replace(ops[op], rules=ops[op].rules + rules)
    return replace(
        base, name=soc.name, title=soc.title, summary=soc.summary, aliases=soc.aliases, executes=soc.executes,
        limits={**base.limits, **soc.limits}, ops=ops, unknown=_op(base.unknown, base.name, soc),
        graph_rules=tuple(_graph_rule(r, base.name, soc) for r in base.graph_rules if _short(r.id) not in soc.drop_rules),
        composites=tuple(_composite(c, base.name, soc) for c in base.composites) + soc.extra_composites,
        sources={**base.sources, TAG: soc.probe, **({CAL: soc.calibration} if soc.calibration else {})}, notes=tuple(_relabel(n, soc) for n in base.notes) + soc.notes)


def profiles(base: Profile) -> dict[str, Profile]:
    return {s.name: derive(base, s) for s in SOCS}

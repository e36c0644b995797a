"""Ethos-U conditions fitted to the calibration records (source CAL-V: Vela 5.2.0 on npufit's ONNX -> int8 TFLite
conversions of the corpus in benchmarks/calibration, records docs/calibration/ethos-u55-256-int8-op17.json and
ethos-u85-256-int8-op17.json).

An ONNX model reaches Vela through npufit's own converter (npufit/convert), which lowers several ONNX ops that have
no TFLite kernel in Vela's list into ones that do (Erf -> MUL/ADD/TANH, Div by a tensor -> MUL by RSQRT, ...). The
standard-converter view of tflite_map would call those nodes CPU; the records show Vela ran every one of them on the
NPU. Each condition names the families whose records show it (and, where one family alone does, the synthetic cases of
docs/calibration/ethos-u*-cases.json that show it too: EVIDENCE) and asks `cal.fitted` whether it may be used, so
leave-one-family-out scoring switches off what only the held-out family showed (targets/calibration.py). TFLite
input models are never affected: their ops are what Vela sees."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Callable

import numpy as np

from ...graph import NodeView
from ...graph.quant import FLOAT_DTYPES
from .. import calibration as cal
from .. import tflite_map as tm
from ..base import Limits, OpSupport, Rule, Verdict
from . import converted as conv


def _gather_sliced(node: NodeView) -> bool:
    """Constant indices that are one index or an evenly spaced increasing run: a STRIDED_SLICE
    (convert/ops_shape.gather)."""
    v = node.const_value(1)
    if v is None or np.asarray(v).ndim > 1:
        return False
    idx = np.asarray(v, np.int64).reshape(-1)
    x = node.input_shape(0)
    axis = int(node.attr("axis", 0))
    if x and isinstance(x[axis], int):
        idx = np.where(idx < 0, idx + x[axis], idx)
    if idx.size <= 1:
        return idx.size == 1
    steps = np.diff(idx)
    return steps[0] > 0 and bool(np.all(steps == steps[0]))


def _pow_lowered(node: NodeView) -> bool:
    """A constant exponent of 0.5, -0.5, 1, 2 or 3: MUL / RSQRT (convert/ops_math.pow_)."""
    v = node.const_value(1)
    return (
        v is not None and np.asarray(v).size == 1 and float(np.asarray(v).reshape(-1)[0]) in (0.5, -0.5, 1.0, 2.0, 3.0)
    )


def _expand_copies(node: NodeView) -> bool:
    """At most 64 copies: CONCATENATION (convert/ops_shape.expand); more stay BROADCAST_TO (not in Vela's list)."""
    x, y = node.input_shape(0), node.output_shape(0)
    if not x or not y or not all(isinstance(d, int) for d in (*x, *y)):
        return False
    x = (1,) * (len(y) - len(x)) + tuple(x)
    return sum(b // a for a, b in zip(x, y) if a and b != a) <= 64


def _div_by_tensor(node: NodeView) -> bool:
    """x / y with y computed at run time: MUL by 1/y built from RSQRT (convert/ops_math.div; y must be positive, which
    the normalising divisions of the corpus are: a Sqrt, a clamped norm, a variance)."""
    return not node.is_const(1)


def _always(node: NodeView) -> bool:
    return True


def _float_cast(node: NodeView) -> bool:
    """A cast between float types: the converter emits no op for it (convert/ops_tensor.alias); integer and boolean
    casts (token ids, attention-mask logic) are not measured and keep the standard view."""
    return node.input_dtype(0) in FLOAT_DTYPES and node.output_dtype(0) in FLOAT_DTYPES


def _scatter_sliced(node: NodeView) -> bool:
    """Constant indices whose output rows form at most 16 contiguous runs: RESHAPE/CONCATENATION/STRIDED_SLICE
    (convert/ops_shape.scatter_nd); more runs take one GATHER, which the U55 runs on the CPU."""
    idx, shape = node.const_value(1), node.input_shape(0)
    if idx is None or not shape or not all(isinstance(d, int) for d in shape):
        return False
    idx = np.asarray(idx, np.int64)
    k = idx.shape[-1]
    rows = int(np.prod(shape[:k], dtype=np.int64))
    flat = np.ravel_multi_index(tuple((idx.reshape(-1, k) % np.asarray(shape[:k])).T), shape[:k])
    src = np.arange(rows)
    src[flat] = rows + np.arange(flat.size)
    return 1 + int(np.sum(np.diff(src) != 1)) <= 16


ALL = ("cnn", "transformer", "detector", "audio-rnn")

# Conditions one corpus family alone shows, with the synthetic cases of docs/calibration/ethos-u55-256-cases.json and
# ethos-u85-256-cases.json (benchmarks/calibration/vela_cases.py: Vela 5.2.0 on npufit's conversions of small graphs
# that are none of the corpus's models) that show them too, on both sides where the condition has two.
Ev = cal.Evidence
# mask Add/Sub -> SELECT_V2 (mask_select): finfo and 1e4 fills, a Sub, one mask added twice on the U55's CPU (the U85's
# NPU); a constant-bias Add and an Add of two activations on the NPU
MASK_SELECT = Ev(
    ("transformer",),
    ("mask-add-finfo", "mask-add-1e4", "mask-sub-1e4", "mask-add-shared", "add-const-bias", "add-two-activations"),
)
# Sqrt -> RSQRT: taken by a Div (LayerNorm), by a Reciprocal (RMSNorm's rsqrt) and alone, all on the NPU (the lowering
# has no condition, so there is no other side)
SQRT = Ev(("transformer",), ("sqrt-layernorm-div", "sqrt-rmsnorm-rsqrt", "sqrt-mul"))
# If by a condition the input shape fixes (inlined: either branch, a branch resizing a constant table) on the NPU; by
# one the data decides, not converted
IF_SHAPE = Ev(("transformer",), ("if-shape-then", "if-shape-else", "if-shape-table", "if-value"))
# padded patchify conv with an unread tail (cropped) on the NPU; pads that fit exactly (SAME) on the U55's CPU; no pads
PATCH_CROP = Ev(
    ("detector",), ("patchify16-pad2-tail", "patchify8-pad1-tail", "patchify16-pad2-exact", "patchify16-valid")
)
# Shape-only Slice of an element-wise ScatterND's GATHER (the U55's CPU) and of a sliced ScatterND (NPU)
SHAPE_AFTER_CPU = Ev(("detector",), ("slice-shape-after-gather", "slice-shape-after-rows"))
EVIDENCE = {k: v for k, v in globals().items() if isinstance(v, cal.Evidence)}


@dataclass(frozen=True)
class Lowered:
    """families: those whose records show the node's own lowering on the NPU, plus those whose records show every
    kernel that lowering emits on the NPU (for a lowering into plain MUL/CONCATENATION/... that is all of them);
    evidence says which is which."""

    applies: Callable
    families: tuple[str, ...] | cal.Evidence
    evidence: str


# ONNX op -> when npufit's converter emits only Vela-listed NPU ops for it, and the records that show Vela ran them
# there
LOWERED: dict[str, Lowered] = {
    "Erf": Lowered(
        _always,
        ("cnn", "transformer", "audio-rnn"),
        "93 Erf nodes (exact GELU) in 20 models, e.g. convnextv2, focalnet, upernet (cnn), beit, dinov2, hiera, "
        "swinv2 (transformer), hubert, wavlm, ast (audio-rnn): MUL/ADD/TANH or the fused GELU chain, all NPU",
    ),
    "Cast": Lowered(
        _float_cast,
        ("transformer", "audio-rnn"),
        "28 Casts (float->float attention-mask and position arithmetic) in beit, dinov2, clip_vision, siglip_vision "
        "(transformer), hubert, ast (audio-rnn): the converter emits no op for them",
    ),
    "ReduceL2": Lowered(
        _always,
        ("cnn", "transformer"),
        "16 ReduceL2 (F.normalize, GRN) in convnextv2 (cnn), swinv2, swin2sr (transformer): MUL/SUM/RSQRT",
    ),
    "Div": Lowered(
        _div_by_tensor,
        ("cnn", "transformer"),
        "16 divisions by a norm in convnextv2 (cnn), swinv2, swin2sr (transformer): MUL by RSQRT(y)^2",
    ),
    "Gather": Lowered(
        _gather_sliced,
        ("transformer", "cnn", "audio-rnn"),
        "14 Gathers of one constant index (class-token pooling, a channel pick) in clip_vision, owlvit_vision, "
        "siglip_vision (transformer), glpn (cnn), ast, tcn (audio-rnn): STRIDED_SLICE",
    ),
    "Expand": Lowered(
        _expand_copies,
        ALL,
        "12 Expands of a norm over the features in swinv2, swin2sr (transformer): CONCATENATION of copies; "
        "CONCATENATION ran on the NPU in every family (unet, yolov8_dfl, beit, crnn)",
    ),
    "Pow": Lowered(
        _pow_lowered,
        ALL,
        "2 Pow(x, 2) of yolov5_anchor's box decode (detector): MUL, which ran on the NPU in every family",
    ),
    "LSTM": Lowered(
        _always,
        ALL,
        "crnn's bidirectional LSTM (audio-rnn), unrolled: FULLY_CONNECTED/ADD/MUL/LOGISTIC/TANH/"
        "CONCATENATION, each of which ran on the NPU in every family (attention projections, SiLU, GELU chains)",
    ),
    "LayerNormalization": Lowered(
        _always,
        ALL,
        "every LayerNormalization of the corpus (ConvNeXt's 4-D channels-last ones in convnextv2, "
        "upernet (cnn) included): MEAN/SUB/MUL/ADD/RSQRT over the normalised axes",
    ),
    "Einsum": Lowered(
        lambda n: len(n.inputs) == 2 and "..." not in str(n.attr("equation", "")),
        ("transformer", "audio-rnn", "detector"),
        "cvt's attention einsums (transformer): TRANSPOSE/BATCH_MATMUL, the attention kernels that ran on the "
        "NPU in hubert, wavlm, ast (audio-rnn) and table_transformer, dab_detr (detector) too",
    ),
    "ScatterND": Lowered(
        _scatter_sliced,
        ALL,
        "dab_detr's box updates (detector, 4-8 runs): RESHAPE/CONCATENATION/STRIDED_SLICE, which ran on the NPU in "
        "every family; conditional_detr's element-wise update (40 runs) became a GATHER and ran on the CPU",
    ),
    "Sqrt": Lowered(
        _always,
        SQRT,
        "8 Sqrts of written-out norms in t5_encoder (RMSNorm) and vitdet (LayerNorm) (transformer): RSQRT, taken "
        "by the Div or Reciprocal that reads it, or x * RSQRT(x)",
    ),
    "If": Lowered(
        lambda n: n.is_const(0),
        IF_SHAPE,
        "vitdet's 4 Ifs on its relative-position table size (transformer): the condition folds once the input "
        "shapes are pinned, the converter inlines the taken branch (convert/prepass_if.py), and its ops ran on "
        "the NPU",
    ),
}
LOWERED["GRU"] = LOWERED["LSTM"]
KEY = "NPUFIT_LOWERED_"


def mask_select(node: NodeView, lim: Limits) -> str | None:
    """Rule body for generations without SELECT_V2 in their list (U55/U65): an Add / Sub of an activation and a Where
    by a
    run-time condition between two constants (a text encoder's attention mask). npufit's converter writes the pair as
    one SELECT_V2 of two int8 shifts of the activation (convert/ops_int.add_select), so it runs where SELECT_V2 does.
    CAL-V: the 16 attention-mask Adds of the 8 text encoders (transformer) ran on the CPU on the U55, where SELECT_V2
    is not listed, and on the NPU on the U85."""
    g = node.graph
    if g.format != "onnx" or not cal.fitted(lim, MASK_SELECT):
        return None
    if node.op_type not in ("Add", "Sub") or len(node.inputs) != 2 or node.output_dtype(0) not in FLOAT_DTYPES:
        return None
    for k, name in enumerate(node.inputs):
        p = g.producer(name) if name else None
        if (
            p is not None
            and p.op_type == "Where"
            and len(p.inputs) == 3
            and not p.is_const(0)
            and p.is_const(1)
            and p.is_const(2)
            and not node.is_const(1 - k)
            and (node.op_type == "Add" or k == 1)
        ):
            return "converted with its mask Where into one SELECT_V2"
    return None


def op_key(node: NodeView) -> str:
    """tflite_map's key, except for ONNX nodes npufit's converter writes as no op or another op (converted.py)
    or lowers into Vela-listed ops (see LOWERED)."""
    key = conv.op_key(node)
    if key is not None:
        return key
    if node.graph.format == "onnx" and node.op_type in LOWERED and node.domain in ("", "ai.onnx"):
        try:
            if LOWERED[node.op_type].applies(node):
                return KEY + node.op_type
        except (TypeError, ValueError, IndexError):
            pass
    return tm.tflite_op(node)


def lowered(node: NodeView, lim: Limits, *, listed: frozenset[str]) -> str | None:
    """Rule body of a LOWERED op. With its families held out (leave-one-family-out), the node is judged as the
    standard converter's op again: NPU when that op is in this generation's list (`listed`), else CPU."""
    if cal.fitted(lim, LOWERED[node.op_type].families):
        return None
    std = tm.tflite_op(node)
    return (
        None if std in listed else f"{std} is not in Vela 5.2.0's supported-operator list (fitted condition held out)"
    )


def lowered_ops(name: str, listed) -> dict[str, OpSupport]:
    """One OpSupport per LOWERED op, its rule `lowered` bound to this generation's operator list."""
    check = partial(lowered, listed=frozenset(listed))
    out = {}
    for op, low in LOWERED.items():
        rule = Rule(
            f"{name}.cal.lowered.{op.lower()}",
            f"npufit's converter lowers {op} into ops that Vela runs on the NPU",
            check,
            Verdict.CPU,
            (),
            "CAL-V",
            evidence=f"{conv.CALIBRATED}: {low.evidence}.",
        )
        out[KEY + op] = OpSupport(
            KEY + op,
            Verdict.NPU,
            (rule,),
            source="CAL-V",
            note="lowered by npufit's ONNX -> int8 TFLite converter into ops that Vela runs on the NPU",
            evidence=f"{conv.CALIBRATED}: {low.evidence}.",
        )
    return out


def converter_splits_stride(node: NodeView, lim: Limits) -> bool:
    """A Conv with stride > 3 that npufit's converter writes as CONV_2D at stride a <= 3 + a 1x1 MAX_POOL at stride b
    (s = a*b, b <= 3; convert/ops_nn._stride_split): Vela runs both, so neither the stride limit nor the failed
    PAD fold applies. CAL-V: the 7x7 stride-4 padded patch embeddings of glpn (cnn), hiera and pvt_v2 (transformer)
    ran on the NPU. A stride equal to the kernel (a patchify conv) is not split: the converter pads, then cuts off the
    tail the conv never reads (convert/ops_nn._patch_crop), and Vela runs it (CAL-V: vitpose's padded 16x16/16 patch
    embedding, detector; before the crop it failed the compile: "Non-passthrough operation (Conv2D) could not run on
    NPU"). Pools are not split: only Conv."""
    if node.graph.format != "onnx" or node.op_type != "Conv":
        return False
    s, k = tm.strides(node), tm.kernel(node)
    if not s or not k or all(st <= 3 for st in s):
        return False
    if all(st <= 3 or st == kk for st, kk in zip(s, k)):
        return _patch_crop(node, s) and cal.fitted(lim, PATCH_CROP)
    if not cal.fitted(lim, ("cnn", "transformer")):
        return False
    return all(st <= 3 or any(st % a == 0 and st // a <= 3 for a in (3, 2)) for st in s)


def _patch_crop(node: NodeView, s) -> bool:
    """Whether the converter cuts a tail off this patchify conv's padded input: explicit pads that leave more rows or
    columns than out * stride (pads that fit exactly are SAME padding, which the converter writes as SAME)."""
    x, y, pads = node.input_shape(0), node.output_shape(0), node.attr("pads")
    if (
        not x
        or not y
        or not pads
        or len(x) != 4
        or len(y) != 4
        or not all(isinstance(d, int) for d in list(x) + list(y))
    ):
        return False
    return any(x[2 + i] + pads[i] + pads[i + 2] > y[2 + i] * s[i] for i in range(2))


def shape_only_after_cpu(node: NodeView, lim: Limits, *, listed: frozenset[str]) -> str | None:
    """Rule body (bound to this generation's operator list `listed`): a slice of a CPU op's output that feeds nothing
    but Shape nodes. CAL-V: conditional_detr's (detector) Slice of the GATHER its element-wise ScatterND became ran on
    the CPU with it on the U55 (on the NPU on the U85, where GATHER is listed); dab_detr's Shape-only Slice of an NPU
    op ran on the NPU."""
    g = node.graph
    if g.format != "onnx" or not cal.fitted(lim, SHAPE_AFTER_CPU) or any(o in g.output_names for o in node.outputs):
        return None
    users = [u for o in node.outputs if o for u in g.consumers(o)]
    p = g.producer(node.inputs[0]) if node.inputs and node.inputs[0] else None
    if not users or any(u.op_type != "Shape" for u in users) or p is None:
        return None
    key = op_key(p)
    return None if key in listed or key.startswith(KEY) else f"reads only {key} (a CPU op) and feeds only Shape"

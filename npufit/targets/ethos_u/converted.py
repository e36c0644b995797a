"""Ethos-U verdicts that follow from what npufit's ONNX -> int8 TFLite converter writes for a node (source CAL-V).

An ONNX model reaches Vela as the converter's TFLite file, so some nodes are decided before Vela sees them: the
converter writes no op at all (a constant, an integer alias, an IsNaN guard of int8 values), a different op (a channel
mean as CONV_2D, an ArgMax of bools behind a CAST, GatherElements as GATHER, a whole-map pool as a global one), another
form of it (a MEAN over [rows, 1, reduced]), or carries int64 tensors as int32. The converter decides with the
functions of converter_facts.py and these rules ask the same functions. Each condition names its Evidence: the
records that show it (docs/calibration/ethos-u55-256-int8-op17.json, ethos-u85-256-int8-op17.json) and the synthetic
cases of docs/calibration/ethos-u*-cases.json (benchmarks/calibration/vela_cases_ops.py). Where the
converter alone decides (no op reaches Vela), the op it writes ran on the NPU in every family, or Vela's operator
list decides (CAST), the families are all four (the convention of fitted.LOWERED): nothing of Vela's behaviour
was fitted, so leave-one-family-out keeps the condition. TFLite input models are never affected: their ops are what
Vela sees."""

from __future__ import annotations

import math
import weakref
from functools import partial

from ...graph import Graph, NodeView, facts
from ...graph.folding import CONTROL_FLOW, NON_DETERMINISTIC
from .. import calibration as cal
from .. import tflite_map as tm
from ..base import Limits, OpSupport, Rule, Verdict
from ..calibration import FAMILIES, Evidence
from ..common import reduce_axes
from ..converter_facts import (
    argmax_of_bool,
    carried_dtype,
    converter_gap,
    depth_reduce_as_conv,
    gather_elements_as_gather,
    mean_as_rows,
    never_special,
    nhwc_mean_as_rows,
    where_of_never_special,
    whole_map_pool,
)
from ..converter_forms import FLOAT32, WRITES, judged_as, written_as

EVIDENCE = {
    # the converter's own decisions: nothing of them reaches Vela, so no family's record is needed to know them
    "no_op": Evidence(FAMILIES),
    # a 1x1 CONV_2D: it ran on the NPU in every family
    "depth_mean": Evidence(FAMILIES),
    # the converter's CAST and Vela's operator list (no CAST on the U55), neither fitted: clip_text (transformer) shows
    # it
    "argmax_bool": Evidence(FAMILIES),
    # the converter's RESHAPE -> MEAN over [rows, 1, reduced] -> RESHAPE: rank-3 and rank-4 LayerNorm tokens and
    # ReduceMeans with no size-1 axis (CPU on both generations before the rows form, NPU after) next to ones that
    # have one, a mean over a conv's own NHWC output and over a middle axis; 4608 features break the depth limit
    "mean_rows": Evidence(
        FAMILIES,
        (
            "ln-tokens-4x16x16",
            "ln-tokens-2x64x24",
            "ln-tokens-2x4x8x16",
            "ln-tokens-1x64x16",
            "ln-tokens-1x32x32",
            "mean-hw-reshaped-2x2",
            "mean-hw-reshaped-4x8",
            "mean-hw-conv",
            "mean-last-4x16x16",
            "mean-mid-4x16x16",
            "mean-last-2x2x4608",
        ),
    ),
}
NO_OP = "NPUFIT_NO_OP"
GAP = "NPUFIT_CONVERTER_GAP"  # a node npufit's converter cannot convert: `npufit compile` stops before Vela sees it
FORM = "NPUFIT_WRITES_"  # + a form of converter_facts.WRITES: the TFLite ops the converter writes for the node
# how the evidence of the conditions fitted to the calibration records starts (what a user reads in `npufit explain`)
CALIBRATED = "Measured with Vela 5.2.0 on npufit's int8 conversions of a calibration set of 48 architectures"
_ALIAS_SHAPE = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Expand", "Identity", "Dropout"}
_IF = frozenset({"If"})


def _carried(graph: Graph):
    return lambda name: carried_dtype(graph.tensor(name).dtype)


# -- constants once the size-decided Ifs are inlined -------------------------------------------------------------
_CONSTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _body_reads(graph: Graph) -> dict[str, set[str]]:
    """If node -> the outer tensors its bodies (at any depth) read; None-free."""
    inner: dict[str, list] = {}
    for n in graph.nodes:
        p = n.parent
        while p is not None:
            inner.setdefault(p, []).append(n)
            owner = graph.node(p)
            p = owner.parent if owner is not None else None
    out = {}
    for name, nodes in inner.items():
        made = {o for n in nodes for o in n.outputs if o}
        out[name] = {t for n in nodes for t in n.inputs if t and t not in made}
        if any(n.op_type in NON_DETERMINISTIC for n in nodes):
            out[name].add("")  # never constant
    return out


def converter_constants(graph: Graph) -> tuple[frozenset[str], frozenset[str]]:
    """(tensors, If nodes) that are constants in the converter's copy but not in this graph: an If whose condition
    folded and whose bodies read only constants is inlined (convert/prepass_if.py) and folds, and so does every node
    that reads only such values (ViTDet's relative-position table, gathered by a constant index)."""
    hit = _CONSTS.get(graph)
    if hit is not None:
        return hit
    extra: set[str] = set()
    ifs: set[str] = set()
    if graph.format == "onnx" and graph.nodes_of("If"):
        reads = _body_reads(graph)

        def const(t: str) -> bool:
            return not t or t in extra or graph.tensor(t).is_const

        for n in graph.top_nodes:
            if n.name in graph.folded or n.domain not in ("", "ai.onnx") or n.op_type in NON_DETERMINISTIC:
                continue
            if n.op_type == "If":
                ok = n.is_const(0) and all(t and const(t) for t in reads.get(n.name, ()))
                ifs.update([n.name] if ok else [])
            else:
                ok = (
                    n.op_type not in CONTROL_FLOW and bool(n.present_inputs) and all(const(t) for t in n.present_inputs)
                )
            if ok:
                extra.update(o for o in n.outputs if o)
    hit = _CONSTS[graph] = (frozenset(extra), frozenset(ifs))
    return hit


@facts.per_node  # asked twice per node: by the op key and by the feature-map dtypes
def no_op(node: NodeView) -> str | None:
    """Why npufit's converter writes no TFLite op for this ONNX node, else None."""
    g = node.graph
    if g.format != "onnx" or node.domain not in ("", "ai.onnx"):
        return None
    if g.has_any(_IF):  # a yes-or-no question: the op index answers it (and a local view may ask it)
        consts, ifs = converter_constants(g)
        outs = [o for o in node.outputs if o]
        if outs and all(o in consts for o in outs) or node.parent in ifs:
            return "constant once the Ifs that the input sizes decide are inlined"
    # cases isnan-softmax, where-isnan-softmax: DETR's softmax guard, no op (Vela places nothing of it on the CPU)
    if never_special(g, node):
        return "IsNaN / IsInf of an int8 tensor, which holds neither: a constant False"
    if where_of_never_special(g, node):
        return "a Where by a constant-False IsNaN / IsInf: an alias of its else-branch"
    op = node.op_type
    if op != "Cast" and op not in _ALIAS_SHAPE:
        return None
    dt = _carried(g)
    src, dst = dt(node.inputs[0]) if node.inputs and node.inputs[0] else None, dt(node.outputs[0])
    # integer outputs only: a bool alias inside an attention-mask chain has no op either, but the records give it
    # the device of the mask ops around it (CPU on the U55: clip_text's and roberta's bool Cast and Expand)
    if src is None or dst != "int32":
        return None
    if op == "Cast":
        if src == dst:
            return "an integer cast between types carried alike (int32)"
        users = g.consumers(node.outputs[0])
        if len(users) == 1 and argmax_of_bool(g, users[0], dt):
            return "an integer cast of bools that only an ArgMax reads, which reads the bools itself"
        return None
    x, y = node.input_shape(0), node.output_shape(0)
    if x is not None and y is not None and all(isinstance(d, int) for d in (*x, *y)) and tuple(x) == tuple(y):
        return "an integer reshape that keeps the shape"
    return None


def op_key(node: NodeView) -> str | None:
    """The key of an ONNX node the converter writes as no op or as another op than the standard view; else None."""
    if node.graph.format != "onnx":
        return None
    if node.parent is None and converter_gap(node):  # nodes inside an If's branches are judged as the branch is inlined
        return GAP
    if no_op(node):
        return NO_OP
    if node.op_type == "AveragePool" and whole_map(node):
        return "MEAN"
    if node.op_type == "GatherElements" and node.domain in ("", "ai.onnx") and not node.is_const(1):
        x, i = node.input_shape(0), node.input_shape(1)
        if x and i and gather_elements_as_gather(x, i, int(node.attr("axis", 0))):
            return "GATHER"
    form = written_as(node) if node.domain in ("", "ai.onnx") else None
    return judged_as(node) if form is None else FORM + form


def whole_map(node: NodeView) -> bool:
    """An ONNX AveragePool / MaxPool with one window over the whole map, which the converter writes as a global pool
    (converter_facts.whole_map_pool). Cases avgpool-whole-ceil, avgpool-whole-exact, maxpool-whole-ceil (NPU: MEAN,
    a map-sized max pool) against avgpool-k9-same (a SAME kernel over 8, CPU) and avgpool-k3-include (NPU)."""
    x, y = node.input_shape(0), node.output_shape(0)
    k = node.attr("kernel_shape")
    return (
        node.graph.format == "onnx"
        and node.op_type in ("AveragePool", "MaxPool")
        and bool(x and y and k)
        and len(x) == 4
        and len(y) == 4
        and whole_map_pool(list(k), node.attr("pads", [0] * 4), list(x[2:]), list(y[2:]))
    )


def pool_kernel(node: NodeView) -> list | None:
    """The pool kernel the converter writes: the map itself for a whole-map pool, else the node's own."""
    return list(node.input_shape(0)[2:]) if whole_map(node) else tm.kernel(node)


def act_dtypes(node: NodeView, dtypes: list[str]) -> list[str]:
    """Feature-map dtypes of an ONNX node as its TFLite tensors carry them: none for a node with no op, integer types
    as int32 (so no ONNX tensor is a 64-bit feature map: CAL-V, the int64 position arithmetic of clip_text and
    roberta, transformer, ran as int32 ADD on the U55's NPU)."""
    if no_op(node):
        return []
    return [carried_dtype(d) if d in ("int64", "uint64") else d for d in dtypes]


def depth_mean_as_conv(node: NodeView, x, axes, lim: Limits) -> bool:
    """An ONNX mean over the channels of an HxW map, which the converter writes as a 1x1 CONV_2D (`x`, `axes`: the
    NHWC shape and axes the MEAN rule reads). CAL-V: vitdet's 6 channel LayerNorms (ReduceMean over axis 1 of
    [1, C, 8, 8]) ran on the NPU of both Ethos-U records; the MEAN rule's depth limit does not apply to them."""
    return (
        node.graph.format == "onnx"
        and cal.fitted(lim, EVIDENCE["depth_mean"])
        and x is not None
        and axes is not None
        and depth_reduce_as_conv(tm.tflite_op(node), x, axes)
    )


def mean_form(node: NodeView, lim: Limits) -> tuple[list, list] | None:
    """(shape, axes) of the MEAN the converter writes for an ONNX ReduceMean over a trailing run of axes that Vela's
    semantic check would reject (converter_facts.mean_as_rows): [rows, 1, reduced] over axis 2, so only Vela's size
    limits remain. Of a 4-D input only the mean over C, H and W (converter_facts.nhwc_mean_as_rows): a conv's NHWC
    output is otherwise reduced in NHWC (the MEAN rule's view)."""
    g = node.graph
    x = node.input_shape(0) if node.op_type == "ReduceMean" and g.format == "onnx" else None
    if not x or not cal.fitted(lim, EVIDENCE["mean_rows"]):
        return None
    ax = reduce_axes(node)
    axes = None if ax is None else sorted(int(a) % len(x) for a in ax)
    if len(x) == 4:  # over C, H and W: the rows form whatever the layout (converter_facts.nhwc_mean_as_rows)
        nhwc = [x[0], *x[2:], x[1]]
        rows = axes == [1, 2, 3] and nhwc_mean_as_rows("MEAN", nhwc, [1, 2, 3])
        return ([x[0], 1, math.prod(x[1:])], [2]) if rows else None
    if axes is None or not mean_as_rows("MEAN", x, axes):
        return None
    k = len(x) - len(axes)
    return [math.prod(x[:k]), 1, math.prod(x[k:])], [2]


def argmax_bool_cast(node: NodeView, lim: Limits) -> str | None:
    """Rule body (generations without CAST in their list): an ArgMax the converter runs on int8 bools, CAST from the
    bool tensor in its own lowering."""
    g = node.graph
    if g.format != "onnx" or not cal.fitted(lim, EVIDENCE["argmax_bool"]) or not argmax_of_bool(g, node, _carried(g)):
        return None
    return "reads bools through a CAST to int8"


def _held_out(node: NodeView, lim: Limits, *, listed: frozenset[str]) -> str | None:
    """With the no-op evidence held out, the node is judged as the standard converter's op."""
    if cal.fitted(lim, EVIDENCE["no_op"]):
        return None
    std = tm.tflite_op(node)
    return (
        None if std in listed else f"{std} is not in Vela 5.2.0's supported-operator list (fitted condition held out)"
    )


def converted_ops(name: str, listed) -> dict[str, OpSupport]:
    rule = Rule(
        f"{name}.cal.no_op",
        "npufit's converter writes no op for this node",
        partial(_held_out, listed=frozenset(listed)),
        Verdict.CPU,
        (),
        "CAL-V",
        evidence=f"{CALIBRATED}: vitdet's relative-position Gathers, clip_text's and roberta's integer casts and "
        "same-shape reshapes (transformers).",
    )
    why = "npufit's ONNX -> int8 TFLite converter writes no op for it: nothing of it reaches Vela"
    evidence = (
        "Such a node is a constant once the Ifs that the input sizes decide are inlined, an integer cast or reshape "
        "that keeps the carried type and shape, or an integer cast of bools read only by an ArgMax."
    )
    form_rule = Rule(
        f"{name}.converter.form",
        "converter gap: npufit's ONNX -> int8 TFLite converter has no lowering for this form of the op",
        _form_detail,
        Verdict.UNSUPPORTED,
        GAP_FIX,
        "NPUFIT-CONV",
    )
    forms = {}
    for form, tfl in WRITES.items():
        ops = [op for op in tfl if op != FLOAT32]
        off = [op for op in ops if op not in listed]
        text = f"npufit's ONNX -> int8 TFLite converter writes it as {', '.join(ops) or 'no op'}"
        cpu = (
            [f"{', '.join(off)} {'is' if len(off) == 1 else 'are'} not in Vela 5.2.0's supported-operator list"]
            if off
            else []
        )
        cpu += ["a float32 tensor between them keeps them on the CPU"] if FLOAT32 in tfl else []
        reason = f"{text}; {'; '.join(cpu)}: scheduled on the CPU" if cpu else ""
        forms[FORM + form] = OpSupport(
            FORM + form, Verdict.CPU if cpu else Verdict.NPU, source="NPUFIT-CONV", note=text, reason=reason
        )
    return forms | {
        NO_OP: OpSupport(NO_OP, Verdict.FOLDED, (rule,), reason=why, source="CAL-V", note=why, evidence=evidence),
        GAP: OpSupport(
            GAP,
            Verdict.UNSUPPORTED,
            (form_rule,),
            reason=GAP_TEXT,
            fix=GAP_FIX,
            source="NPUFIT-CONV",
            note="a node npufit's converter cannot convert",
        ),
    }


GAP_FIX = (
    "cut the model before this node and compile the part before it: npufit split MODEL --target TARGET --mode "
    "explicit --end-nodes <this node's activation inputs>, then npufit compile the stage0_npu.onnx it writes",
    "or rewrite the node into ops the converter lowers (docs/guide/convert.md lists them)",
)


GAP_TEXT = (
    "converter gap: npufit's ONNX -> int8 TFLite converter cannot convert this node, so `npufit compile` stops "
    "before Vela sees the model"
)


def _form_detail(node: NodeView, lim: Limits) -> str | None:
    """Rule body of a converter gap: why, where it is a form of an op the converter lowers otherwise."""
    try:
        why = converter_gap(node)
    except (TypeError, ValueError, IndexError, KeyError, AttributeError):
        return "a form of the node the converter does not handle"
    return None if why is None or why.startswith("no lowering for") or "custom-domain" in why else why


def converted_rules(name: str, listed) -> dict[str, tuple[Rule, ...]]:
    """op -> rules this generation adds for the converter's forms of ONNX nodes."""
    if "CAST" in listed:
        return {}
    return {
        "ARG_MAX": (
            Rule(
                f"{name}.argmax.bool_cast",
                "an ArgMax of bools becomes a CAST of the bools to int8 in npufit's converter, which is not in this "
                "Ethos-U's operator list",
                argmax_bool_cast,
                Verdict.CPU,
                ("take the argmax on the host, or use an Ethos-U85",),
                "CAL-V",
                evidence=f"{CALIBRATED}: clip_text's end-of-text ArgMax (over an integer cast of a comparison) ran "
                "on the CPU.",
            ),
        )
    }

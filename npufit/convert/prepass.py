"""What the converter does to its private copy of the ONNX model before lowering, and says it did.

0. `If` nodes whose condition only the (pinned) input shapes decide are replaced by their taken branch (prepass_if).
1. npufit's exact rewrite rules that make a graph convertible: `conv1d_to_conv2d` (a rank-3 Conv becomes a (1,k)
   Conv2d, chains stay 4-D; prepass_conv1d) and `topk1_to_argmax` (npufit/rewrite: TopK k=1 -> ArgMax + ReduceMax).
2. Exact decompositions of ONNX ops that have no int8 TFLite kernel into ops that have one, as plain ONNX nodes,
   so ONNX Runtime calibrates every intermediate tensor the int8 graph will hold: LayerNormalization,
   InstanceNormalization, Gelu (opset 20), GroupNormalization and MeanVarianceNormalization into
   ReduceMean/Sub/Mul/Sqrt/Div chains, BatchNormalization on 3-D tokens into Mul/Add, ReduceL1/L2/SumSquare/LogSum/
   LogSumExp and LpNormalization into Abs or Mul, ReduceSum, Sqrt or Log, two-operand Einsum into Transpose/Reshape/
   MatMul; LSTM, GRU and RNN with a static sequence length unrolled step by step (prepass_rnn). The ops and the
   conditions are targets/converter_facts' (DECOMPOSED, FORMS), which `check` reads too.

Each new node is named `<original node>/<step>` and `Prepared.origin` maps it back, so Vela's placement and
the converter's lineage still name the user's node."""

from __future__ import annotations

import math

import numpy as np
import onnx
from onnx import numpy_helper

from ..graph.onnx_prepare import infer_shapes
from ..rewrite import RuleContext, get_rule
from ..targets.converter_facts import DECOMPOSED, RNNS
from .prepass_build import Builder as _Builder
from .prepass_build import attr as _attr
from .prepass_build import default_opset
from .prepass_conv1d import conv1d_to_conv2d
from .prepass_if import inline_static_ifs, run_on_zeros
from .prepass_rnn import unroll

CONVERT_RULES = ("topk1_to_argmax",)  # exact rules only: the converter never approximates


def apply_rules(model: onnx.ModelProto) -> tuple[onnx.ModelProto, list[str], dict[str, str]]:
    """Apply each converter rule whose op occurs in the model; -> (model, ["conv1d_to_conv2d x2", ...], origin).

    conv1d_to_conv2d runs as the converter's own linear pass (prepass_conv1d); the others through npufit/rewrite,
    imported only when their op occurs (onnx-ir and the pattern matcher cost seconds)."""
    inlined, origin = inline_static_ifs(model) if any(n.op_type == "If" for n in model.graph.node) else (0, {})
    fired, more = conv1d_to_conv2d(model)
    origin.update({k: origin.get(v, v) for k, v in more.items()})
    applied0 = ([f"inlined If x{inlined} (condition fixed by the input shapes)"] if inlined else []) + (
        [f"conv1d_to_conv2d x{fired}"] if fired else []
    )
    if not any(n.op_type == "TopK" for n in model.graph.node):
        return model, applied0, origin
    before = [(n.name, n.op_type) for n in model.graph.node if n.op_type != "Constant"]
    import onnx_ir as ir

    applied = []
    for name in CONVERT_RULES:
        rule = get_rule(name)
        if not set(rule.ops) & {n.op_type for n in model.graph.node}:
            continue
        cand, fired = rule.apply(
            ir.serde.deserialize_model(model), RuleContext(opset=default_opset(model), target="ethos-u")
        )
        if fired:
            model = ir.serde.serialize_model(cand)
            applied.append(f"{name} x{fired}")
    origin = {k: origin.get(v, v) for k, v in _origins(before, model).items()} if applied else origin
    return model, applied0 + applied, origin


def _origins(before: list[tuple[str, str]], model: onnx.ModelProto) -> dict[str, str]:
    """New node -> the user's node it came from. The rewriter renames every node; the rules keep the order and type
    of the nodes they rewrite (Conv stays Conv), so the k-th node of a type is the k-th of that type before; helper
    nodes (Reshape, Squeeze, ArgMax, ...) belong to their nearest neighbour in the node order."""
    old: dict[str, list[str]] = {}
    for name, op in before:
        old.setdefault(op, []).append(name)
    nodes = [n for n in model.graph.node if n.op_type != "Constant"]
    new: dict[str, list[str]] = {}
    for n in nodes:
        new.setdefault(n.op_type, []).append(n.name)
    origin = {}
    for op, names in new.items():
        if len(old.get(op, ())) == len(names):
            origin.update(zip(names, old[op]))
    mapped = [origin.get(n.name) for n in nodes]
    for i, n in enumerate(nodes):
        if n.name not in origin:
            near = next(
                (mapped[j] for d in range(1, len(nodes)) for j in (i + d, i - d) if 0 <= j < len(nodes) and mapped[j]),
                None,
            )
            if near:
                origin[n.name] = near
    return origin


def _layernorm(b: _Builder, n: onnx.NodeProto, rank: int, consts: dict) -> bool:
    if rank is None:
        return False
    axis = int(_attr(n, "axis", -1)) % rank
    parts: dict = {}
    y = b.normalize(n.input[0], list(range(axis, rank)), float(_attr(n, "epsilon", 1e-5)), parts=parts)
    outs = list(n.output) + ["", ""]
    if outs[1]:  # the saved mean and inverse standard deviation (a training export keeps them)
        b.op("Identity", [parts["mean"]], "saved_mean", out=outs[1])
    if outs[2]:
        b.op("Reciprocal", [parts["std"]], "inv_std", out=outs[2])
    if len(n.input) > 2 and n.input[2]:
        b.op("Add", [b.op("Mul", [y, n.input[1]], "scaled"), n.input[2]], "shifted", out=n.output[0])
    else:
        b.op("Mul", [y, n.input[1]], "scaled", out=n.output[0])
    return True


def _instancenorm(b: _Builder, n: onnx.NodeProto, rank: int, consts: dict) -> bool:
    scale, bias = consts.get(n.input[1]), consts.get(n.input[2])
    if rank is None or rank < 3 or scale is None or bias is None:
        return False
    shape = (-1,) + (1,) * (rank - 2)
    y = b.normalize(n.input[0], list(range(2, rank)), float(_attr(n, "epsilon", 1e-5)))
    y = b.op("Mul", [y, b.const("scale", np.asarray(scale, np.float32).reshape(shape))], "scaled")
    b.op("Add", [y, b.const("bias", np.asarray(bias, np.float32).reshape(shape))], "shifted", out=n.output[0])
    return True


def _batchnorm(b: _Builder, n: onnx.NodeProto, rank: int, consts: dict) -> bool:
    """Inference BatchNormalization on 3-D or 5-D+ input (BatchNorm1d over [N, C, L] tokens); 2-D and 4-D ones stay for
    the lowering's 1x1 depthwise conv: x * scale + shift with per-channel constants shaped [C, 1, ...]."""
    vals = [consts.get(t) for t in n.input[1:5]]
    if rank is None or rank in (2, 4) or any(v is None for v in vals) or len(n.output) > 1 and any(n.output[1:]):
        return False
    gamma, beta, mean, var = (np.asarray(v, np.float64) for v in vals)
    scale = gamma / np.sqrt(var + float(_attr(n, "epsilon", 1e-5)))
    shape = (-1,) + (1,) * (rank - 2)
    y = b.op("Mul", [n.input[0], b.const("scale", scale.astype(np.float32).reshape(shape))], "scaled")
    b.op(
        "Add",
        [y, b.const("shift", (beta - mean * scale).astype(np.float32).reshape(shape))],
        "shifted",
        out=n.output[0],
    )
    return True


def _gelu(b: _Builder, n: onnx.NodeProto, rank: int, consts: dict) -> bool:
    x = n.input[0]
    if _attr(n, "approximate", b"none") in (b"tanh", "tanh"):
        x3 = b.op("Mul", [b.op("Mul", [x, x], "square"), x], "cube")
        inner = b.op(
            "Add", [x, b.op("Mul", [x3, b.const("c", np.array(0.044715, np.float32))], "cube_scaled")], "inner"
        )
        t = b.op(
            "Tanh", [b.op("Mul", [inner, b.const("k", np.array(math.sqrt(2 / math.pi), np.float32))], "arg")], "tanh"
        )
        half = b.op("Add", [t, b.const("one", np.array(1.0, np.float32))], "one_plus")
    else:
        e = b.op("Erf", [b.op("Mul", [x, b.const("inv_sqrt2", np.array(1 / math.sqrt(2), np.float32))], "arg")], "erf")
        half = b.op("Add", [e, b.const("one", np.array(1.0, np.float32))], "one_plus")
    b.op(
        "Mul", [b.op("Mul", [x, half], "x_times"), b.const("half", np.array(0.5, np.float32))], "gelu", out=n.output[0]
    )
    return True


def _groupnorm(b: _Builder, n: onnx.NodeProto, rank: int, consts: dict, shapes: dict) -> bool:
    shape = shapes.get(n.input[0])
    scale, bias = consts.get(n.input[1]), consts.get(n.input[2])
    g = int(_attr(n, "num_groups", 1))
    if shape is None or scale is None or bias is None or len(shape) < 3:
        return False
    N, C = shape[0], shape[1]
    grouped = b.op("Reshape", [n.input[0], b.const("grouped_shape", np.array([N, g, -1], np.int64))], "grouped")
    y = b.normalize(grouped, [2], float(_attr(n, "epsilon", 1e-5)))
    y = b.op("Reshape", [y, b.const("shape", np.array(shape, np.int64))], "ungrouped")
    per_c = (-1,) + (1,) * (len(shape) - 2)
    scale = np.asarray(scale, np.float32)
    scale = np.repeat(scale, C // g) if scale.size == g and C != g else scale  # opset-18 per-group scale
    bias = np.asarray(bias, np.float32)
    bias = np.repeat(bias, C // g) if bias.size == g and C != g else bias
    y = b.op("Mul", [y, b.const("scale", scale.reshape(per_c))], "scaled")
    b.op("Add", [y, b.const("bias", bias.reshape(per_c))], "shifted", out=n.output[0])
    return True


def _reduce_axes(n: onnx.NodeProto, consts: dict) -> tuple[bool, list[int] | None]:
    """(known, axes): the axes of a reduction from its attribute or its constant second input (None: all axes);
    known is False for run-time axes and for empty axes with noop_with_empty_axes (the identity)."""
    axes = _attr(n, "axes", None)
    if axes is None and len(n.input) > 1 and n.input[1]:
        axes = consts.get(n.input[1])
        if axes is None:
            return False, None
    axes = None if axes is None else [int(a) for a in np.asarray(axes).reshape(-1)]
    if not axes and int(_attr(n, "noop_with_empty_axes", 0)):
        return False, None
    return True, axes or None


def _reduction(b: _Builder, n: onnx.NodeProto, rank: int, consts: dict) -> bool:
    """ReduceL1 / L2 / SumSquare / LogSum / LogSumExp -> Abs / Mul, ReduceSum, Sqrt / Log (LogSumExp less its max
    first, so that Exp never overflows): each of those the converter lowers (SUM, and sqrt as x * RSQRT(x))."""
    known, axes = _reduce_axes(n, consts)
    if not known:
        return False
    keep, x, op, y = int(_attr(n, "keepdims", 1)), n.input[0], n.op_type, n.output[0]
    if op == "ReduceLogSumExp":
        top = b.reduce("ReduceMax", x, axes, 1, "max")
        e = b.op("Exp", [b.op("Sub", [x, top], "shifted")], "exp")
        s = b.op("Log", [b.reduce("ReduceSum", e, axes, keep, "sum")], "log")
        b.op("Add", [s, top if keep else b.reduce("ReduceMax", x, axes, 0, "max_out")], "logsumexp", out=y)
        return True
    pre = {"ReduceL1": "Abs", "ReduceL2": "Mul", "ReduceSumSquare": "Mul"}.get(op)
    if pre is not None:
        x = b.op(pre, [x, x] if pre == "Mul" else [x], "abs" if pre == "Abs" else "squared")
    post = {"ReduceL2": "Sqrt", "ReduceLogSum": "Log"}.get(op)
    total = b.reduce("ReduceSum", x, axes, keep, "sum")
    b.op(post, [total], "norm" if post == "Sqrt" else "log", out=y) if post else b.op("Identity", [total], "out", out=y)
    return True


def _lpnorm(b: _Builder, n: onnx.NodeProto, rank: int, consts: dict) -> bool:
    """LpNormalization (p 1 or 2) -> x / ReduceL1 or ReduceL2 over the axis (keepdims), written out."""
    p = int(_attr(n, "p", 2))
    if rank is None or p not in (1, 2):
        return False
    x, ax = n.input[0], [int(_attr(n, "axis", -1)) % rank]
    if p == 1:
        norm = b.reduce("ReduceSum", b.op("Abs", [x], "abs"), ax, 1, "norm")
    else:
        norm = b.op("Sqrt", [b.reduce("ReduceSum", b.op("Mul", [x, x], "squared"), ax, 1, "sum")], "norm")
    b.op("Div", [x, norm], "normalized", out=n.output[0])
    return True


def _rmsnorm(b: _Builder, n: onnx.NodeProto, rank: int, consts: dict) -> bool:
    """RMSNormalization (opset 23): x / sqrt(mean(x^2) + eps) * scale over the axes from `axis` on."""
    if rank is None or len(n.output) > 1 and any(n.output[1:]):
        return False
    axes = list(range(int(_attr(n, "axis", -1)) % rank, rank))
    ms = b.mean(b.op("Mul", [n.input[0], n.input[0]], "squared"), axes, "mean_square")
    eps = b.const("epsilon", np.array(float(_attr(n, "epsilon", 1e-5)), np.float32))
    y = b.op("Div", [n.input[0], b.op("Sqrt", [b.op("Add", [ms, eps], "mean_square_eps")], "rms")], "normalized")
    b.op("Mul", [y, n.input[1]], "scaled", out=n.output[0])
    return True


def _mvn(b: _Builder, n: onnx.NodeProto, rank: int, consts: dict) -> bool:
    """MeanVarianceNormalization: (x - mean) / sqrt(variance + 1e-9) over its axes (ONNX's function adds the 1e-9
    to the square root; the difference is below float32's resolution of any variance int8 can hold)."""
    if rank is None:
        return False
    axes = [int(a) % rank for a in _attr(n, "axes", [0, 2, 3])]
    b.normalize(n.input[0], axes, 1e-9, out=n.output[0])
    return True


def _einsum(b: _Builder, n: onnx.NodeProto, shapes: dict) -> bool:
    """A two-operand einsum without ellipsis or repeated letters (attention written as 'bhlk,bhtk->bhlt') -> Transpose
    each operand to [batch, free, contracted] / [batch, contracted, free], MatMul, and back to the output's order.
    A group of several letters is flattened with a Reshape, which needs static shapes."""
    eq = _attr(n, "equation", b"")
    eq = (eq.decode() if isinstance(eq, bytes) else str(eq)).replace(" ", "")
    if len(n.input) != 2 or "->" not in eq or "." in eq or eq.count(",") != 1 or eq.count("->") != 1:
        return False
    (sa, sb), so = eq.split("->")[0].split(","), eq.split("->")[1]
    if any(len(set(t)) != len(t) for t in (sa, sb, so)) or not set(so) <= set(sa) | set(sb):
        return False
    batch = [c for c in so if c in sa and c in sb]
    fa, fb = [c for c in sa if c in so and c not in sb], [c for c in sb if c in so and c not in sa]
    con = [c for c in sa if c in sb and c not in so]
    if set(sa) - set(so) - set(con) or set(sb) - set(so) - set(con):
        return False  # a letter summed over in one operand only (a reduction): not a matmul
    sizes: dict[str, int] = {}
    for spec, name in ((sa, n.input[0]), (sb, n.input[1])):
        shape = shapes.get(name)
        if shape is not None:
            sizes.update(zip(spec, shape))

    def side(x, spec, order, last_two):
        perm = [spec.index(c) for c in order]
        if perm != list(range(len(spec))):
            x = b.op("Transpose", [x], "transpose", perm=perm)
        if any(len(g) != 1 for g in last_two):  # flatten each group to one axis
            if not all(c in sizes for c in order):
                raise KeyError("shape")
            dims = [sizes[c] for c in batch] + [int(np.prod([sizes[c] for c in g], dtype=np.int64)) for g in last_two]
            x = b.op("Reshape", [x, b.const("shape", np.array(dims, np.int64))], "flat")
        return x

    try:
        x = side(n.input[0], sa, batch + fa + con, (fa, con))
        y = side(n.input[1], sb, batch + con + fb, (con, fb))
        z = b.op("MatMul", [x, y], "matmul")
        got = batch + fa + fb
        if len(fa) != 1 or len(fb) != 1:
            z = b.op("Reshape", [z, b.const("out_shape", np.array([sizes[c] for c in got], np.int64))], "unflat")
    except KeyError:
        return False
    perm = [got.index(c) for c in so]
    b.op("Transpose", [z], "out", out=n.output[0], perm=perm) if perm != list(range(len(so))) else b.op(
        "Identity", [z], "out", out=n.output[0]
    )
    return True


def decompose(model: onnx.ModelProto) -> tuple[dict[str, str], list[str]]:
    """Decompose the ops above in place (the converter's own copy); -> (new node -> original node, notes)."""
    wanted = set(DECOMPOSED)
    convs = {n.output[0] for n in model.graph.node if n.op_type in ("Conv", "ConvTranspose")}
    if any(n.op_type == "BatchNormalization" and n.input[0] not in convs for n in model.graph.node):
        wanted.add("BatchNormalization")  # one a conv does not take: shape inference says whether it is 3-D
    if not wanted & {n.op_type for n in model.graph.node}:
        return {}, []
    inferred, _ = infer_shapes(model)  # where it fails, the ops whose shapes stay unknown are left as they are
    shapes, ranks = {}, {}
    for vi in list(inferred.graph.value_info) + list(inferred.graph.input) + list(inferred.graph.output):
        dims = vi.type.tensor_type.shape.dim
        if not vi.type.tensor_type.HasField("shape"):
            continue
        # exporters leave symbolic dims (batch, sequence) that the pinned inputs make static later: the rank is
        # known and is all LayerNorm / InstanceNorm need
        ranks[vi.name] = len(dims)
        if all(d.HasField("dim_value") for d in dims):
            shapes[vi.name] = tuple(int(d.dim_value) for d in dims)
    unknown = [i for n in model.graph.node if n.op_type == "Einsum" for i in n.input if i and i not in shapes]
    if unknown:  # shapes ONNX shape inference does not propagate (Range / Gather chains): from a run on zeros
        shapes.update({k: tuple(v.shape) for k, v in (run_on_zeros(model, list(dict.fromkeys(unknown))) or {}).items()})
    consts = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    for n in model.graph.node:
        if n.op_type == "Constant" and n.output and n.attribute and n.attribute[0].name == "value":
            consts[n.output[0]] = numpy_helper.to_array(n.attribute[0].t)
    taken = {n.name for n in model.graph.node} | {t.name for t in model.graph.initializer}
    taken |= {o for n in model.graph.node for o in n.output}
    origin: dict[str, str] = {}
    counts: dict[str, int] = {}
    out_nodes = []
    for n in model.graph.node:
        if n.op_type not in wanted or n.domain not in ("", "ai.onnx"):
            out_nodes.append(n)
            continue
        b = _Builder(model, n, taken)
        rank = ranks.get(n.input[0])
        if n.op_type in RNNS:
            ok = unroll(b, n, consts, shapes)
        elif n.op_type == "Einsum":
            ok = _einsum(b, n, shapes)
        elif n.op_type == "GroupNormalization":
            ok = _groupnorm(b, n, rank, consts, shapes)
        else:
            ok = DECOMPOSE[n.op_type](b, n, rank, consts)
        if not ok:
            out_nodes.append(n)
            continue
        for new in b.nodes:
            origin[new.name] = n.name
        out_nodes.extend(b.nodes)
        counts[n.op_type] = counts.get(n.op_type, 0) + 1
    del model.graph.node[:]
    model.graph.node.extend(out_nodes)
    return origin, [f"{'unrolled' if op in RNNS else 'decomposed'} {op} x{k}" for op, k in counts.items()]


# op -> its decomposition (b, node, rank, constants) -> done; with the RNN unroller, Einsum and GroupNormalization
# (which read shapes) these are targets/converter_facts.DECOMPOSED (tests/test_convert_registry.py)
DECOMPOSE = {
    "LayerNormalization": _layernorm,
    "InstanceNormalization": _instancenorm,
    "Gelu": _gelu,
    "BatchNormalization": _batchnorm,
    "ReduceL1": _reduction,
    "ReduceL2": _reduction,
    "ReduceSumSquare": _reduction,
    "ReduceLogSum": _reduction,
    "ReduceLogSumExp": _reduction,
    "LpNormalization": _lpnorm,
    "MeanVarianceNormalization": _mvn,
    "RMSNormalization": _rmsnorm,
}
SHAPED = ("Einsum", "GroupNormalization")  # decompositions that read static shapes

"""The converter's view of the ONNX model: weights loaded, inputs pinned, QDQ pairs undone, constants resolved.

A QDQ model (onnxruntime's static quantizer, `npufit quantize`) is lowered as its float twin: constant
DequantizeLinear becomes a float weight (re-quantized per channel later) and an activation Q->DQ pair becomes
an Identity whose tensor keeps the user's own range (so their calibration is honoured, not replaced)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ..errors import NpufitError
from ..graph import Graph
from ..graph.onnx_loader import graph_from
from ..graph.onnx_prepare import from_proto, infer, pin_inputs, read_onnx, require_shapes
from ..util.limits import graph_within_budget
from .prepass import apply_rules, decompose


@dataclass
class Prepared:
    model: onnx.ModelProto  # float model (QDQ undone), inputs pinned, shapes inferred
    graph: Graph  # npufit's view of `model` (folding done)
    consts: dict[str, np.ndarray]  # full-size initializer / Constant values
    fixed_ranges: dict[str, tuple[float, float]] = field(default_factory=dict)  # from the user's Q/DQ pairs
    notes: list[str] = field(default_factory=list)
    origin: dict[str, str] = field(default_factory=dict)  # node added by the prepass -> the user's node
    rewrites: list[str] = field(default_factory=list)  # what the prepass did, e.g. "conv1d_to_conv2d x2"
    input_shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)  # pinned (given, or a dynamic batch of 1)

    def source_node(self, name: str) -> str:
        return self.origin.get(name, name)

    def const(self, name: str) -> np.ndarray | None:
        """The value of a tensor known at conversion time (initializer, Constant, folded, or Identity of one)."""
        for _ in range(64):  # Identity chains (torch shares weights through them)
            if name in self.consts:
                return self.consts[name]
            t = self.graph.tensors.get(name)
            if t is not None and t.value is not None:
                return np.asarray(t.value)
            p = self.graph.producer(name)
            if p is None or p.op_type != "Identity" or not (t is not None and t.is_const):
                return None
            name = p.inputs[0]
        return None


def prepare(path: Path, input_shapes: Mapping[str, tuple[int, ...]] | None) -> Prepared:
    # with external weights (the converter needs every value); the data must be there
    pinned = read_onnx(path, pin_inputs(input_shapes), external_data="loaded")
    require_shapes(pinned, "the int8 TFLite model has fixed shapes")  # a dynamic batch alone is pinned to 1
    model, shape_notes = pinned.model, list(pinned.shapes.notes)
    graph_within_budget("compile", len(model.graph.node))
    fixed, notes = _undo_qdq(model)

    model, applied, origin = apply_rules(model)
    more, decomposed = decompose(model)
    origin.update({k: origin.get(v, v) for k, v in more.items()})
    rewrites = applied + decomposed
    if rewrites:
        notes.append("before converting, on a copy: " + ", ".join(rewrites))
    # the rewritten copy is prepared again (no file read): a failed inference is fine, ONNX Runtime's calibration
    # run gives the real shapes anyway
    prep = from_proto(model, infer, name=str(path))
    model, graph = prep.model, graph_from(prep, [])
    for t in graph.inputs:
        if not t.is_static:
            raise NpufitError(
                f"input '{t.name}' has dynamic dims {t.shape_str()}; the int8 TFLite needs static shapes: "
                f"pass --input-shape {t.name}=..."
            )
    consts = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    for n in model.graph.node:
        if n.op_type == "Constant" and n.output:
            for a in n.attribute:
                if a.name == "value":
                    consts[n.output[0]] = numpy_helper.to_array(a.t)
                elif a.name in ("value_float", "value_floats", "value_int", "value_ints"):
                    consts[n.output[0]] = np.asarray(
                        helper.get_attribute_value(a), np.float32 if "float" in a.name else np.int64
                    )
    return Prepared(model, graph, consts, fixed, shape_notes + notes, origin, rewrites, dict(pinned.shapes.pinned))


def _undo_qdq(model: onnx.ModelProto) -> tuple[dict[str, tuple[float, float]], list[str]]:
    g = model.graph
    inits = {t.name: t for t in g.initializer}
    consumers: dict[str, list[onnx.NodeProto]] = {}
    for n in g.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
    graph_outputs = {o.name for o in g.output}

    def arr(name):
        return numpy_helper.to_array(inits[name]) if name in inits else None

    fixed: dict[str, tuple[float, float]] = {}
    keep, n_const, n_pairs = [], 0, 0
    drop: set[int] = set()
    for n in g.node:
        if id(n) in drop:
            continue
        if n.op_type == "DequantizeLinear" and n.input[0] in inits:
            x, s = arr(n.input[0]), arr(n.input[1])
            zp = arr(n.input[2]) if len(n.input) > 2 and n.input[2] else np.zeros_like(s)
            axis = next((a.i for a in n.attribute if a.name == "axis"), 1)
            if s is None or s.ndim > 1:
                raise NpufitError(
                    f"DequantizeLinear '{n.name}': only constant scales of per-tensor or per-axis form are supported"
                )
            shape = [1] * x.ndim
            if s.ndim == 1 and x.ndim:
                shape[axis % x.ndim] = -1
            val = (x.astype(np.float32) - zp.astype(np.float32).reshape(shape)) * s.astype(np.float32).reshape(shape)
            g.initializer.append(numpy_helper.from_array(val.astype(np.float32), n.output[0]))
            n_const += 1
            continue
        if n.op_type == "QuantizeLinear":
            users = consumers.get(n.output[0], [])
            if not users or n.output[0] in graph_outputs or any(u.op_type != "DequantizeLinear" for u in users):
                raise NpufitError(
                    f"QuantizeLinear '{n.name}' feeds something other than DequantizeLinear; "
                    "give the float model (or a QDQ model) instead"
                )
            s, zp = arr(n.input[1]), arr(n.input[2]) if len(n.input) > 2 and n.input[2] else None
            if s is not None and s.size == 1:
                info = np.iinfo(zp.dtype if zp is not None else np.uint8)
                z = float(zp) if zp is not None else 0.0
                fixed[n.input[0]] = (float(s) * (info.min - z), float(s) * (info.max - z))
            for u in users:  # the pair becomes an Identity that keeps the DQ node's name and output
                drop.add(id(u))
                keep.append(helper.make_node("Identity", [n.input[0]], [u.output[0]], name=u.name))
            n_pairs += 1
            continue
        if n.op_type == "DequantizeLinear":
            raise NpufitError(
                f"DequantizeLinear '{n.name}' reads a non-constant tensor that no QuantizeLinear produces; not "
                "supported"
            )
        keep.append(n)
    if not n_const and not n_pairs:
        return {}, []
    used = {i for n in keep for i in n.input}
    kept_inits = [t for t in g.initializer if t.name in used or t.name in graph_outputs]
    del g.node[:]
    g.node.extend(keep)
    del g.initializer[:]
    g.initializer.extend(kept_inits)
    del g.value_info[:]
    return fixed, [
        f"QDQ input: {n_pairs} activation Q/DQ pair(s) kept their own ranges, {n_const} constant "
        "DequantizeLinear weight(s) re-quantized per channel"
    ]

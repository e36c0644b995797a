"""Which nodes are computable at compile time (the `folded` verdict) and their small values.

A node is folded when every input is a constant (initializer, Constant, or another folded
node's output) or when it only reads a static shape (Shape/Size). Such nodes run nowhere:
the exporter's shape arithmetic (ZeroPad2d, flatten, view) is folded by every vendor parser.
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .model import Graph, NodeView

NON_DETERMINISTIC = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli"}
CONTROL_FLOW = {"If", "Loop", "Scan"}
MAX_EVAL_ELEMS = 1 << 16  # evaluate folded nodes only while their tensors stay small


def is_foldable(node: NodeView) -> bool:
    if node.domain not in ("", "ai.onnx") or node.op_type in NON_DETERMINISTIC or node.op_type in CONTROL_FLOW:
        return False
    if node.op_type == "Constant":
        return True
    if node.op_type in ("Shape", "Size"):
        t = node.input(0)
        return bool(t and (t.is_const or t.is_static))
    present = node.present_inputs
    return bool(present) and all(node.graph.tensor(t).is_const for t in present)


def fold_constants(graph: Graph, opsets: Mapping[str, int]) -> set[str]:
    folded: set[str] = set()
    for node in graph.nodes:
        if not is_foldable(node):
            continue
        folded.add(node.name)
        for o in node.outputs:
            if o:
                graph.tensor(o).is_const = True
        _evaluate(node, opsets)
    graph.folded = folded  # type: ignore[attr-defined]
    return folded


def _evaluate(node: NodeView, opsets: Mapping[str, int]) -> None:
    out = node.output(0)
    if out is None or out.value is not None:
        return
    if node.op_type in ("Shape", "Size"):
        shape = node.input(0).shape
        if shape is not None and all(isinstance(d, int) for d in shape):
            arr = np.array(shape, dtype=np.int64)
            if node.op_type == "Shape":
                start, end = node.attr("start", 0), node.attr("end", None)
                arr = arr[start:end]
            else:
                arr = np.array(int(np.prod(arr)), dtype=np.int64)
            out.value = arr
        return
    ins = [node.graph.tensor(t) if t else None for t in node.inputs]
    if any(t is not None and t.value is None for t in ins) or node.raw is None:
        return
    if any(t is not None and t.value.size > MAX_EVAL_ELEMS for t in ins):
        return
    try:
        results = _run_reference(node, [None if t is None else t.value for t in ins], opsets)
    except Exception:
        return
    for name, val in zip(node.outputs, results):
        if name and isinstance(val, np.ndarray) and val.size <= MAX_EVAL_ELEMS:
            t = node.graph.tensor(name)
            t.value = val
            if t.shape is None or not t.is_static:  # the value's shape beats inference's 'unk__N' dims
                t.shape = tuple(int(d) for d in val.shape)
            t.dtype = t.dtype or val.dtype.name


def _run_reference(node: NodeView, values, opsets: Mapping[str, int]):
    from onnx import helper
    from onnx.reference import ReferenceEvaluator

    proto = node.raw
    feeds, in_vi = {}, []
    for name, v in zip(proto.input, values):
        if name and v is not None:
            feeds[name] = v
            in_vi.append(helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape))
    out_vi = [helper.make_tensor_value_info(o, 0, None) for o in proto.output if o]
    g = helper.make_graph([proto], "fold", in_vi, out_vi)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid(d if d != "ai.onnx" else "", v) for d, v in opsets.items()])
    m.ir_version = 8
    return ReferenceEvaluator(m).run(None, feeds)

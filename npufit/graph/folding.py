"""Which nodes are computable at compile time (the `folded` verdict) and their small values.

A node is folded when every input is a constant (initializer, Constant, or another folded
node's output) or when it only reads a static shape (Shape/Size). Such nodes run nowhere:
the exporter's shape arithmetic (ZeroPad2d, flatten, view) is folded by every vendor parser.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..util.limits import memory_budget
from .model import Graph, NodeView
from .onnx_prepare import infer_shapes

NON_DETERMINISTIC = {
    "RandomNormal",
    "RandomUniform",
    "RandomNormalLike",
    "RandomUniformLike",
    "Multinomial",
    "Bernoulli",
}
CONTROL_FLOW = {"If", "Loop", "Scan"}
MAX_EVAL_ELEMS = 1 << 16  # evaluate folded nodes only while their tensors stay small
FOLD_SHARE = 4  # all values folding computes in one graph: a quarter of the memory budget; past it, nodes keep
# the verdict, not a value
# Ops whose output never holds more elements than their largest input: evaluated even when onnx cannot
# infer their output shape (a hostile model cannot grow memory through them).
NON_GROWING = {
    "Identity",
    "Cast",
    "CastLike",
    "Reshape",
    "Flatten",
    "Squeeze",
    "Unsqueeze",
    "Transpose",
    "Slice",
    "Neg",
    "Abs",
    "Floor",
    "Ceil",
    "Round",
    "Sqrt",
    "Reciprocal",
    "Not",
    "Sign",
    "Relu",
    "Sigmoid",
    "ReduceSum",
    "ReduceMean",
    "ReduceMax",
    "ReduceMin",
    "ReduceProd",
    "ArgMax",
    "ArgMin",
    "Shape",
    "Size",
}


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


_NEVER = NON_DETERMINISTIC | CONTROL_FLOW
_SPECIAL = {"Constant", "Shape", "Size"}


def fold_constants(graph: Graph, opsets: Mapping[str, int]) -> set[str]:
    folded: set[str] = set()
    budget = [memory_budget() // FOLD_SHARE]  # shared by every node of this pass
    tensors, tensor = graph.tensors, graph.tensor
    for node in graph.nodes:
        op = node.op_type
        if op in _SPECIAL or op in _NEVER or node.domain not in ("", "ai.onnx"):
            if not is_foldable(node):
                continue
        else:  # is_foldable's last test inlined (it runs once per node, and again after each shape refinement)
            fold = False
            for t in node.inputs:
                if t:
                    info = tensors.get(t)
                    if info is None:
                        tensor(t)  # registered, as graph.tensor() in is_foldable would
                        fold = False
                        break
                    if not info.is_const:
                        fold = False
                        break
                    fold = True
            if not fold:
                continue
        folded.add(node.name)
        for o in node.outputs:
            if o:
                graph.tensor(o).is_const = True
        _evaluate(node, opsets, budget)
    graph.folded = folded
    graph.max_rank_table = None  # folding makes tensors constant and gives them shapes
    return folded


def _evaluate(node: NodeView, opsets: Mapping[str, int], budget: list[int]) -> None:
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
    if any(t is not None and t.value.size > MAX_EVAL_ELEMS for t in ins) or budget[0] <= 0:
        return
    try:
        m = _single_node_model(node, [None if t is None else t.value for t in ins], opsets)
        if not _output_fits(node, m, budget):
            return  # the value would be too large to keep: never computed (207-byte models asking for GBs)
        from onnx.reference import ReferenceEvaluator

        results = ReferenceEvaluator(m).run(None, {})
    except Exception:
        return
    for name, val in zip(node.outputs, results):
        if name and isinstance(val, np.ndarray) and val.size <= MAX_EVAL_ELEMS:
            budget[0] -= val.nbytes
            t = node.graph.tensor(name)
            t.value = val
            if t.shape is None or not t.is_static:  # the value's shape beats inference's 'unk__N' dims
                t.shape = tuple(int(d) for d in val.shape)
            t.dtype = t.dtype or val.dtype.name


def _output_fits(node: NodeView, m, budget: list[int]) -> bool:
    """Compute each output's size from shapes BEFORE evaluating: onnx shape inference on the one-node model whose
    inputs are the real values (the file's own value_info, which could lie, plays no part)."""
    inferred, error = infer_shapes(m)
    outs = {} if error else {vi.name: vi.type for vi in inferred.graph.output}
    total = 0
    for name in (o for o in node.outputs if o):
        tt = outs[name].tensor_type if name in outs and outs[name].HasField("tensor_type") else None
        dims = (
            [d.dim_value if d.HasField("dim_value") else -1 for d in tt.shape.dim]
            if tt and tt.HasField("shape")
            else None
        )
        if dims is None or any(d < 0 for d in dims):
            if node.op_type in NON_GROWING:
                continue
            return False  # size unknown: evaluating could allocate anything
        n = 1
        for d in dims:
            n *= d
        if n > MAX_EVAL_ELEMS:
            return False
        total += n * 8  # at most 8 bytes per element
    return total <= budget[0]


def _single_node_model(node: NodeView, values, opsets: Mapping[str, int]):
    """The node alone, its constant inputs as initializers (shape inference and the evaluator both read them)."""
    from onnx import helper, numpy_helper

    proto = node.raw
    given = {name: v for name, v in zip(proto.input, values) if name and v is not None}
    inits = [numpy_helper.from_array(np.asarray(v), name) for name, v in given.items()]
    out_vi = [helper.make_tensor_value_info(o, 0, None) for o in proto.output if o]
    g = helper.make_graph([proto], "fold", [], out_vi, inits)
    m = helper.make_model(
        g, opset_imports=[helper.make_opsetid(d if d != "ai.onnx" else "", v) for d, v in opsets.items()]
    )
    m.ir_version = 8
    return m

"""Quantized-graph facts: does a node compute in int8, or is it a float island between a dequantize and a quantize?

Three encodings say the same thing differently:
- ONNX QDQ: float ops wrapped as DequantizeLinear -> op -> QuantizeLinear. Whether the wrapped op really
  runs in int8 depends on the consumer: a converter fuses the wrapper into an int8 kernel when it has one
  (Conv, Add, ...), otherwise it keeps dequantize -> float op -> quantize (an island).
- ONNX QOperator: QLinearConv, ConvInteger, com.microsoft QLinear* ... compute on integer tensors directly.
- TFLite int8/int16: the tensors carry the integer dtype; an explicit DEQUANTIZE -> float op -> QUANTIZE
  is an island, and some importers (TVM) turn int8 ops they only have float kernels for into islands too.

Targets pass `float_op`: the ops *their* importer executes in float even in an int8 model (a predicate
over NodeView or a set of op types). Everything here is structural and cheap (one pass per question).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from . import facts
from .model import Graph, NodeView

QUANTIZE_OPS = frozenset({"QuantizeLinear", "QUANTIZE", "DynamicQuantizeLinear"})
DEQUANTIZE_OPS = frozenset({"DequantizeLinear", "DEQUANTIZE"})
QDQ_OPS = QUANTIZE_OPS | DEQUANTIZE_OPS
# ONNX QOperator form: integer kernels with scales/zero points as inputs (ai.onnx and com.microsoft)
QOPERATOR_OPS = frozenset(
    {
        "QLinearConv",
        "QLinearMatMul",
        "ConvInteger",
        "MatMulInteger",
        "QGemm",
        "QLinearAdd",
        "QLinearMul",
        "QLinearSigmoid",
        "QLinearLeakyRelu",
        "QLinearConcat",
        "QLinearAveragePool",
        "QLinearGlobalAveragePool",
        "QLinearSoftmax",
        "QLinearReduceMean",
        "QLinearConvTranspose",
        "QLinearWhere",
        "QAttention",
        "DynamicQuantizeMatMul",
    }
)
INTEGER_DTYPES = frozenset({"int8", "uint8", "int16", "uint16"})
FLOAT_DTYPES = frozenset({"float32", "float16", "float64", "bfloat16"})
# Ops that move or pick values without arithmetic: they keep whatever dtype flows in.
DATA_MOVEMENT = frozenset(
    {
        "Reshape",
        "Flatten",
        "Squeeze",
        "Unsqueeze",
        "Transpose",
        "Concat",
        "Split",
        "Slice",
        "Gather",
        "Identity",
        "MaxPool",
        "Pad",
        "Resize",
        "DepthToSpace",
        "SpaceToDepth",
        "Tile",
        "Expand",
        "RESHAPE",
        "SQUEEZE",
        "EXPAND_DIMS",
        "TRANSPOSE",
        "CONCATENATION",
        "SPLIT",
        "SPLIT_V",
        "SLICE",
        "STRIDED_SLICE",
        "GATHER",
        "MAX_POOL_2D",
        "PAD",
        "PADV2",
        "RESIZE_NEAREST_NEIGHBOR",
        "DEPTH_TO_SPACE",
        "SPACE_TO_DEPTH",
        "TILE",
        "PACK",
        "UNPACK",
    }
)

# The int8 form every verb assumes (TFLite's int8 quantization spec): these kernels have a fixed output scale and
# zero point, whatever range calibration saw. The converter writes them (convert.qparams), `quantize` pins them in
# its QDQ model, and check's int8 judgement reads them (a target whose kernel needs them, e.g. Ethos-N's sigmoid).
# TFLite op -> (scale, int8 zero point); a uint8 zero point is 128 higher.
FIXED_OUTPUT_QPARAMS: dict[str, tuple[float, int]] = {
    "LOGISTIC": (1 / 256, -128),
    "SOFTMAX": (1 / 256, -128),
    "TANH": (1 / 128, 0),
    "LOG_SOFTMAX": (16 / 256, 127),
}
# ... the ONNX ops that convert to them
FIXED_OUTPUT_ONNX: dict[str, str] = {
    "Sigmoid": "LOGISTIC",
    "Softmax": "SOFTMAX",
    "Tanh": "TANH",
    "LogSoftmax": "LOG_SOFTMAX",
}


def fixed_output_qparams(op_type: str, unsigned: bool = False) -> tuple[float, int] | None:
    """(scale, zero point) of an op whose int8 kernel fixes its output quantization (ONNX or TFLite op name)."""
    fixed = FIXED_OUTPUT_QPARAMS.get(FIXED_OUTPUT_ONNX.get(op_type, op_type))
    if fixed is None:
        return None
    return (fixed[0], fixed[1] + 128) if unsigned else fixed


FloatOp = Callable[[NodeView], bool] | Collection[str]


def _pred(float_op: FloatOp | None) -> Callable[[NodeView], bool]:
    if float_op is None:
        return lambda n: False
    if callable(float_op):
        return float_op
    ops = frozenset(float_op)
    return lambda n: n.op_type in ops


def is_quantize(node: NodeView) -> bool:
    return node.op_type in QUANTIZE_OPS


def is_dequantize(node: NodeView) -> bool:
    return node.op_type in DEQUANTIZE_OPS


def is_weight_dequantize(node: NodeView) -> bool:
    """DequantizeLinear of a constant (weights, bias): folded into the kernel, never a runtime op."""
    return is_dequantize(node) and node.is_const(0)


def graph_quant_form(graph: Graph) -> str:
    """'qdq' | 'qoperator' | 'int8' (integer tensors, e.g. TFLite int8/int16) | 'float': the model's own form,
    however a check judges it."""
    if graph.quant_form:
        return graph.quant_form
    ops = graph.op_types  # from the op-type index check builds anyway
    if ops & QOPERATOR_OPS:
        form = "qoperator"
    elif (
        not ops.isdisjoint(DEQUANTIZE_OPS)
        and any(is_dequantize(n) and not n.is_const(0) for n in graph.nodes)
        and graph.format == "onnx"
    ):  # the op-type set first: a float model has no dequantize to walk for
        form = "qdq"
    elif _any_integer_compute(graph):
        form = "int8"
    else:
        form = "float"
    graph.quant_form = form
    return form


# Whether the check running in this context judges float activations as the int8 tensors a converter would produce.
# A context variable, not graph state: the Graph a caller passes in is only read, and concurrent checks of one Graph
# with different options (threads) do not see each other's choice.
_JUDGE_INT8: ContextVar[bool] = ContextVar("npufit_judge_int8", default=False)


@contextmanager
def judging_as_int8(on: bool) -> Iterator[None]:
    """Within the block, exec_dtype() reports float activations as int8 (check's --judge int8)."""
    token = _JUDGE_INT8.set(on)
    try:
        with facts.scope(None):  # a dtype remembered under the other setting must not answer
            yield
    finally:
        _JUDGE_INT8.reset(token)


@contextmanager
def check_scope(graph: Graph, as_int8: bool) -> Iterator[None]:
    """judging_as_int8(as_int8) while one check reads `graph`, which must not change inside the block: per-node
    facts (graph.facts) are derived once and remembered until the block ends."""
    with judging_as_int8(as_int8), facts.scope(graph):
        yield


def judged_quant_form(graph: Graph) -> str:
    """The form being judged: inside judging_as_int8(True) a float model is its int8 conversion ('int8')."""
    form = graph_quant_form(graph)
    return "int8" if form == "float" and _JUDGE_INT8.get() else form


def is_quantized(graph: Graph) -> bool:
    return judged_quant_form(graph) != "float"


def _stored_dtype(node: NodeView) -> str | None:
    """dtype of the first non-constant input (the activation), else of the first output, as the model stores it."""
    tensor = node.graph.tensor
    for name in node.inputs:
        if name:
            t = tensor(name)
            if not t.is_const:
                return t.dtype
    return node.output_dtype(0)


def _any_integer_compute(graph: Graph) -> bool:
    """any(_stored_dtype(n) in INTEGER_DTYPES) over the non-Q/DQ nodes, with the tensor table read directly:
    on a float model every node is visited, once per check. Missing tensors are registered as graph.tensor() does."""
    for t in graph.tensors.values():  # no integer tensor at all (a float model): no node to walk
        if t.dtype in INTEGER_DTYPES:
            break
    else:
        return False
    tensors, tensor = graph.tensors, graph.tensor
    for n in graph.nodes:
        if n.op_type in QDQ_OPS:
            continue
        for name in n.inputs:
            if name:
                t = tensors.get(name) or tensor(name)
                if not t.is_const:
                    d = t.dtype
                    break
        else:
            outs = n.outputs
            d = tensor(outs[0]).dtype if outs and outs[0] else None
        if d in INTEGER_DTYPES:
            return True
    return False


def _compute_dtype(node: NodeView) -> str | None:
    """The activation dtype a rule judges. Inside judging_as_int8(True) (check_graph, from --judge and the profile's
    `executes`) a float activation is reported as int8: the verdict is then the one for the int8 model a converter
    would produce from this float graph."""
    d = _stored_dtype(node)
    if d in FLOAT_DTYPES and _JUDGE_INT8.get():
        return "int8"
    return d


@facts.per_node
def activation_inputs(node: NodeView) -> list[int]:
    """Indices of the inputs computed at run time (not constants)."""
    tensor = node.graph.tensor
    return [i for i, t in enumerate(node.inputs) if t and not tensor(t).is_const]


def dq_producers(node: NodeView) -> list[NodeView]:
    """Activation DequantizeLinear / DEQUANTIZE nodes feeding `node`."""
    if not node.graph.has_any(DEQUANTIZE_OPS):  # a float graph: nothing to look for on every node
        return []
    out = []
    for i in activation_inputs(node):
        p = node.graph.producer(node.inputs[i])
        if p is not None and is_dequantize(p) and not is_weight_dequantize(p):
            out.append(p)
    return out


def q_consumers(node: NodeView) -> list[NodeView]:
    return [c for o in node.outputs if o for c in node.graph.consumers(o) if is_quantize(c)]


def is_qdq_wrapped(node: NodeView) -> bool:
    """Every activation input comes from a dequantize and every consumed output goes to a quantize."""
    acts = activation_inputs(node)
    if not acts or node.op_type in QDQ_OPS:
        return False
    g = node.graph
    for i in acts:
        p = g.producer(node.inputs[i])
        if p is None or not is_dequantize(p):
            return False
    for o in node.outputs:
        if not o:
            continue
        cons = g.consumers(o)
        if o in g.output_names or not cons or any(not is_quantize(c) for c in cons):
            return False
    return True


@facts.per_node
def exec_dtype(node: NodeView) -> str | None:
    """The dtype the node's arithmetic runs in, as written in the model.

    QDQ-wrapped ops report the quantized dtype (a converter may fuse them; see `is_float_island` for the
    target's view); QOperator ops their integer input dtype; everything else the activation dtype.
    """
    if node.op_type in QOPERATOR_OPS or node.op_type in QUANTIZE_OPS:
        t = node.output(0) if node.op_type in QUANTIZE_OPS else node.input(0)
        return t.dtype if t is not None else None
    if node.op_type in DEQUANTIZE_OPS:
        return node.input_dtype(0)
    dqs = dq_producers(node) if node.graph.format == "onnx" else []  # TFLite DEQUANTIZE -> op is explicitly float
    if dqs and is_qdq_wrapped(node):
        return dqs[0].input_dtype(0)
    return _compute_dtype(node)


def _data_dtype_ok(node: NodeView) -> bool:
    d = exec_dtype(node)
    return d in INTEGER_DTYPES


def executes_in_int8(node: NodeView, float_op: FloatOp | None = None) -> bool:
    """True when the target runs this node on integer data (int8/uint8/int16) without a float detour."""
    if node.op_type in QDQ_OPS:
        return False
    if not _data_dtype_ok(node):
        return False
    return not _pred(float_op)(node)


@dataclass
class Island:
    """Float ops between dequantize(s) and quantize(s) inside an otherwise quantized graph."""

    nodes: list[str]  # the float ops
    op_types: list[str]
    dequantize: list[str] = field(default_factory=list)  # DQ node names in the model (explicit islands)
    quantize: list[str] = field(default_factory=list)
    implicit: bool = False  # the target's importer inserts dequantize/quantize around an int8 op
    dq_count: int = 0
    q_count: int = 0
    bytes_dequantized: int = 0  # integer bytes read by the dequantize ops
    bytes_float: int = 0  # float bytes the island's conversions produce and consume
    tensors_in: list[str] = field(default_factory=list)
    tensors_out: list[str] = field(default_factory=list)

    @property
    def ops(self) -> int:
        return self.dq_count + len(self.nodes) + self.q_count

    @property
    def conversion_ops(self) -> int:
        return self.dq_count + self.q_count

    def to_dict(self) -> dict:
        return {
            "nodes": self.nodes,
            "op_types": self.op_types,
            "dequantize": self.dequantize,
            "quantize": self.quantize,
            "implicit": self.implicit,
            "dequantize_ops": self.dq_count,
            "quantize_ops": self.q_count,
            "ops": self.ops,
            "bytes_dequantized": self.bytes_dequantized,
            "bytes_float": self.bytes_float,
            "tensors_in": self.tensors_in,
            "tensors_out": self.tensors_out,
        }


def _float_bytes(graph: Graph, tensor: str) -> int:
    t = graph.tensor(tensor)
    return 4 * t.numel if t.numel is not None else 0


def _int_bytes(graph: Graph, tensor: str) -> int:
    return graph.tensor(tensor).nbytes or 0


def is_float_island(node: NodeView, float_op: FloatOp | None = None) -> bool:
    """Is `node` a float op the target executes between a dequantize and a quantize?

    Explicit: the node computes in float, at least one activation input comes from a dequantize, and the
    graph is quantized (TFLite DEQUANTIZE -> LEAKY_RELU(float) -> QUANTIZE; ONNX DQ -> Erf -> Q where the
    target has no int8 kernel). Implicit: an int8 node the target's importer only has a float kernel for.
    """
    if node.op_type in QDQ_OPS or node.op_type in QOPERATOR_OPS or node.op_type in DATA_MOVEMENT:
        return False
    onnx = node.graph.format == "onnx"
    if onnx and dq_producers(node):
        # QDQ: the wrapper is fused into an int8 kernel unless the target only has a float kernel for it;
        # a float op whose result is not re-quantized right away stays float until the next quantize
        return _pred(float_op)(node) if is_qdq_wrapped(node) else _reaches_quantize(node)
    acts = activation_inputs(node)
    if not acts:
        return False
    dt = node.graph.tensor(node.inputs[acts[0]]).dtype
    if dt in INTEGER_DTYPES:
        return _pred(float_op)(node)  # implicit island (importer inserts dequantize/quantize)
    if dt in FLOAT_DTYPES:
        # (an ONNX node's dequantize producers were looked for above; without a quantize in the graph nothing is
        # re-quantized: asked first, as it is of every node of a float model judged as int8)
        if onnx and not node.graph.has_any(QUANTIZE_OPS):
            return False
        return is_quantized(node.graph) and ((not onnx and bool(dq_producers(node))) or _reaches_quantize(node))
    return False


def _reaches_quantize(node: NodeView, depth: int = 8) -> bool:
    """A float op downstream of a DEQUANTIZE whose result is re-quantized within a few float ops."""
    if not node.graph.has_any(QUANTIZE_OPS):  # no quantize anywhere: no walk (it would visit 8 levels per node)
        return False
    frontier, seen = [node], set()
    for _ in range(depth):
        nxt = []
        for n in frontier:
            for s in n.graph.successors(n):
                if is_quantize(s):
                    return True
                if s.name not in seen and _compute_dtype(s) in FLOAT_DTYPES:
                    seen.add(s.name)
                    nxt.append(s)
        frontier = nxt
    return False


def islands(graph: Graph, float_op: FloatOp | None = None, skip: Collection[str] = ()) -> list[Island]:
    """Maximal float islands (connected float ops) with their conversion ops and the bytes converted."""
    if not graph.has_any(QDQ_OPS) and not any(
        t.dtype in INTEGER_DTYPES and not t.is_const for t in graph.tensors.values()
    ):
        return []  # no conversion op and no integer activation: no node can be an island (is_float_island)
    members = [n for n in graph.top_nodes if n.name not in skip and is_float_island(n, float_op)]
    in_island = {n.name for n in members}
    parent: dict[str, str] = {n.name: n.name for n in members}

    def find(a: str) -> str:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for n in members:  # float ops feeding each other directly share an island
        for p in graph.predecessors(n):
            if p.name in in_island:
                parent[find(p.name)] = find(n.name)
    groups: dict[str, list[NodeView]] = {}
    for n in members:
        groups.setdefault(find(n.name), []).append(n)
    out = []
    for nodes in sorted(groups.values(), key=lambda ns: ns[0].index):
        out.append(_describe(graph, nodes))
    return out


def _describe(graph: Graph, nodes: list[NodeView]) -> Island:
    names = {n.name for n in nodes}
    isl = Island(nodes=[n.name for n in nodes], op_types=[n.op_type for n in nodes])
    for n in nodes:
        for i in activation_inputs(n):
            t = n.inputs[i]
            p = graph.producer(t)
            if p is not None and p.name in names:
                continue
            if p is not None and is_dequantize(p):
                if p.name not in isl.dequantize:
                    isl.dequantize.append(p.name)
                    isl.dq_count += 1
                    isl.bytes_dequantized += _int_bytes(graph, p.inputs[0])
                    isl.bytes_float += _float_bytes(graph, t)
                    isl.tensors_in.append(p.inputs[0])
            elif graph.tensor(t).dtype in INTEGER_DTYPES:
                isl.implicit = True
                isl.dq_count += 1
                isl.bytes_dequantized += _int_bytes(graph, t)
                isl.bytes_float += _float_bytes(graph, t)
                isl.tensors_in.append(t)
        for o in n.outputs:
            if not o:
                continue
            outside = [c for c in graph.consumers(o) if c.name not in names]
            qs = [c for c in outside if is_quantize(c)]
            for q in qs:
                if q.name not in isl.quantize:
                    isl.quantize.append(q.name)
                    isl.q_count += 1
                    isl.bytes_float += _float_bytes(graph, o)
                    isl.tensors_out.append(q.outputs[0])
            if not qs and graph.tensor(o).dtype in INTEGER_DTYPES and (outside or o in graph.output_names):
                isl.implicit = True
                isl.q_count += 1
                isl.bytes_float += _float_bytes(graph, o)
                isl.tensors_out.append(o)
    return isl


def absorbed(node: NodeView, float_op: FloatOp | None = None) -> bool:
    """Is this (activation) quantize/dequantize folded into an int8 kernel by the target?

    A dequantize is absorbed when every consumer executes in int8 (QDQ fusion); a quantize when its
    producer does. Conversions at model inputs/outputs or around float islands are real runtime ops.
    """
    g = node.graph
    if is_weight_dequantize(node):
        return True
    pred = _pred(float_op)

    def int8_kernel(n: NodeView) -> bool:
        return not is_float_island(n, pred) and n.op_type not in QDQ_OPS

    if is_dequantize(node):
        out = node.outputs[0] if node.outputs else ""
        cons = [c for c in g.consumers(out) if c.parent is None]
        if not cons or out in g.output_names:
            return False
        return all(int8_kernel(c) and exec_dtype(c) in INTEGER_DTYPES for c in cons)
    if is_quantize(node):
        p = g.producer(node.inputs[0]) if node.inputs else None
        return p is not None and int8_kernel(p) and exec_dtype(p) in INTEGER_DTYPES
    return False


# -- counting Q/DQ nodes: the one definition quantize, check's ledger and compare all report -----------------
def qdq_counts(graph: Graph) -> dict[str, int]:
    """How many quantize / dequantize nodes the model holds, the dequantizes split by what they read.

    A dequantize of a constant (weights, bias) is folded into its kernel at compile time and never runs,
    so `check` lists it as folded; an activation dequantize is a real node a converter fuses or keeps.
    quantize, the Q/DQ ledger and compare all print these numbers (see `describe_qdq`), so they agree.
    """
    q = dq = weight_dq = 0
    for n in graph.top_nodes if graph.has_any(QDQ_OPS) else ():  # a graph without Q/DQ: nothing to count
        if is_quantize(n):
            q += 1
        elif is_dequantize(n):
            dq += 1
            weight_dq += is_weight_dequantize(n)
    return {"quantize": q, "dequantize": dq, "dequantize_weights": weight_dq, "dequantize_activations": dq - weight_dq}


def describe_qdq(counts: dict[str, int]) -> str:
    """'17 QuantizeLinear + 33 DequantizeLinear (16 on weights, folded; 17 on activations)'."""
    return (
        f"{counts['quantize']} QuantizeLinear + {counts['dequantize']} DequantizeLinear "
        f"({counts['dequantize_weights']} on weights, folded; {counts['dequantize_activations']} on activations)"
    )

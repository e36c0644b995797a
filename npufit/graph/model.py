"""Read-only views that rules see instead of raw IR objects (ONNX protobuf or TFLite flatbuffer)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

Dim = int | str | None  # int = static, str = symbolic name, None = unknown


@dataclass(frozen=True)
class QuantParams:
    """Affine quantization of a tensor: real = scale * (q - zero_point)."""

    scale: tuple[float, ...]
    zero_point: tuple[int, ...]
    axis: int | None = None  # None = per-tensor
    dtype: str | None = None  # storage dtype, e.g. 'int8'

    @property
    def per_channel(self) -> bool:
        return len(self.scale) > 1


@dataclass(slots=True)  # 100k-node graphs: slots make creation and attribute reads cheaper
class TensorInfo:
    name: str
    shape: tuple[Dim, ...] | None = None  # None = rank unknown
    dtype: str | None = None  # numpy name: 'float32', 'int8', ...
    is_const: bool = False  # initializer, Constant output, or folded at compile time
    is_initializer: bool = False
    value: np.ndarray | None = None  # only when known and small
    quant: QuantParams | None = None

    @property
    def rank(self) -> int | None:
        return None if self.shape is None else len(self.shape)

    @property
    def is_static(self) -> bool:
        return self.shape is not None and all(isinstance(d, int) and d >= 0 for d in self.shape)

    @property
    def numel(self) -> int | None:
        if not self.is_static:
            return None
        n = 1
        for d in self.shape:  # type: ignore[union-attr]
            n *= int(d)
        return n

    @property
    def itemsize(self) -> int | None:
        if self.dtype is None:
            return None
        if self.dtype == "bool":
            return 1
        try:
            return np.dtype(self.dtype).itemsize
        except TypeError:
            return None

    @property
    def nbytes(self) -> int | None:
        n, s = self.numel, self.itemsize
        return None if n is None or s is None else n * s

    def shape_str(self) -> str:
        if self.shape is None:
            return "?"
        return "[" + ",".join("?" if d is None else str(d) for d in self.shape) + "]"


@dataclass(slots=True)
class NodeView:
    """What a rule may look at: op, attributes, tensors and (small) constant values."""

    name: str
    op_type: str
    domain: str
    attrs: Mapping[str, Any]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    graph: "Graph" = field(repr=False, compare=False)
    index: int = 0  # position in Graph.nodes (topological)
    parent: str | None = None  # name of the If/Loop/Scan node holding this one
    subgraph_of: tuple[str, ...] = ()  # attribute names holding subgraphs (If/Loop/Scan)
    raw: Any = field(default=None, repr=False, compare=False)  # underlying IR object; loaders only, not for rules

    # -- tensors -------------------------------------------------------------
    def input(self, i: int) -> TensorInfo | None:
        names = self.inputs
        if i >= len(names) or not names[i]:
            return None
        # the table read inline (Graph.tensor registers a missing name): rules call this for most nodes
        return self.graph.tensors.get(names[i]) or self.graph.tensor(names[i])

    def output(self, i: int = 0) -> TensorInfo | None:
        names = self.outputs
        if i >= len(names) or not names[i]:
            return None
        return self.graph.tensors.get(names[i]) or self.graph.tensor(names[i])

    def input_shape(self, i: int = 0):
        t = self.input(i)
        return None if t is None else t.shape

    def output_shape(self, i: int = 0):
        t = self.output(i)
        return None if t is None else t.shape

    def input_dtype(self, i: int = 0) -> str | None:
        t = self.input(i)
        return None if t is None else t.dtype

    def output_dtype(self, i: int = 0) -> str | None:
        t = self.output(i)
        return None if t is None else t.dtype

    def is_const(self, i: int) -> bool:
        t = self.input(i)
        return bool(t and t.is_const)

    def const_value(self, i: int) -> np.ndarray | None:
        t = self.input(i)
        return None if t is None else t.value

    def attr(self, name: str, default: Any = None) -> Any:
        return self.attrs.get(name, default)

    @property
    def present_inputs(self) -> list[str]:
        return [n for n in self.inputs if n]

    @property
    def key(self) -> str:
        """Op key used by profiles: 'Conv', or 'com.microsoft::FusedConv' for other domains."""
        return self.op_type if self.domain in ("", "ai.onnx") else f"{self.domain}::{self.op_type}"


class Graph:
    """A loaded model: nodes in topological order, a tensor table, producer/consumer maps."""

    def __init__(
        self,
        path: str,
        fmt: str,
        nodes: Sequence[NodeView],
        tensors: dict[str, TensorInfo],
        inputs: Sequence[str],
        outputs: Sequence[str],
        opsets: Mapping[str, int] | None = None,
        warnings: Iterable[str] = (),
        meta: Mapping[str, Any] | None = None,
    ):
        self.path = path
        self.format = fmt  # 'onnx' | 'tflite'
        self.nodes = list(nodes)
        self.tensors = tensors
        self.input_names = list(inputs)
        self.output_names = list(outputs)
        self.input_set = frozenset(self.input_names)  # rules test membership once per node
        self.opsets = dict(opsets or {})
        self.warnings = list(warnings)
        self.meta = dict(meta or {})
        # derived facts, declared here so every reader sees the same attribute (never attached from outside):
        self.folded: set[str] = set()  # nodes computable at compile time (graph.folding / the TFLite loader fill it)
        self.quant_form: str | None = None  # graph.quant.graph_quant_form's answer, cached on first use
        # the shape policy (util.shapes): the input shapes pinned (given, or a dynamic batch set to 1), one note per
        # batch pinned, and the inputs whose other dims are still unknown (no coverage or MAC figure rests on them)
        self.input_shapes: dict[str, tuple[int, ...]] = {}
        self.shape_notes: list[str] = []
        self.shapes_needed: list = []  # util.shapes.NeededShape
        # targets.common.max_rank's per-node table (by node index), built on the first rank rule of a check;
        # whatever changes shapes or constness after loading (folding) sets it back to None
        self.max_rank_table: list[int] | None = None
        self._by_op: dict[str, list[NodeView]] | None = None  # nodes_of's index, built on first use
        self._has_any: dict[frozenset[str], bool] = {}  # has_any's answers, from the same index
        self._producer: dict[str, NodeView] = {}
        self._consumers: dict[str, list[NodeView]] = {}
        producer, consumers = self._producer, self._consumers
        get = consumers.get
        produced = 0  # non-empty outputs: more than len(producer) when some tensor is written by two nodes
        for i, n in enumerate(self.nodes):
            n.index = i
            n.graph = self
            for o in n.outputs:
                if o:
                    producer[o] = n
                    produced += 1
            for t in n.inputs:
                if t:
                    c = get(t)  # not setdefault(t, []): that builds a list for every edge
                    if c is None:
                        consumers[t] = [n]
                    else:
                        c.append(n)
        self._by_name = {n.name: n for n in self.nodes}
        self._top = [n for n in self.nodes if n.parent is None]
        # shortcuts in check's partitioning hold only for well-formed graphs; hostile ones take the general path
        self.names_unique = len(self._by_name) == len(self.nodes)
        self.single_producers = produced == len(producer)

    # -- lookups -----------------------------------------------------------------

    def __repr__(self) -> str:
        from pathlib import Path

        return f"<Graph {Path(str(self.path)).name}: {self.format}, {len(self.nodes)} nodes>"

    def tensor(self, name: str) -> TensorInfo:
        t = self.tensors.get(name)
        if t is None:
            t = self.tensors[name] = TensorInfo(name)
        return t

    def producer(self, tensor: str) -> NodeView | None:
        return self._producer.get(tensor)

    def consumers(self, tensor: str) -> list[NodeView]:
        return self._consumers.get(tensor, [])

    def node(self, name: str) -> NodeView | None:
        return self._by_name.get(name)

    def nodes_of(self, op_type: str) -> list[NodeView]:
        """Nodes of one op type (any domain), in graph order. Composite matchers look for a few anchor ops per
        target: one index over the nodes instead of a scan over all of them per pattern."""
        return self._op_index().get(op_type, [])

    def has_any(self, op_types: frozenset[str]) -> bool:
        """Whether a node of any of these op types is in the graph (from the op-type index). Asked per node by
        quantization facts, so the answer is kept per set of op types."""
        has = self._has_any.get(op_types)
        if has is None:
            has = self._has_any[op_types] = not op_types.isdisjoint(self._op_index())
        return has

    @property
    def op_types(self) -> set[str]:
        """The distinct op types of the graph (from the same index)."""
        return set(self._op_index())

    def _op_index(self) -> dict[str, list[NodeView]]:
        by_op = self._by_op
        if by_op is None:
            by_op = self._by_op = {}
            for n in self.nodes:
                group = by_op.get(n.op_type)
                if group is None:
                    by_op[n.op_type] = [n]
                else:
                    group.append(n)
        return by_op

    @property
    def inputs(self) -> list[TensorInfo]:
        return [self.tensor(n) for n in self.input_names]

    @property
    def outputs(self) -> list[TensorInfo]:
        return [self.tensor(n) for n in self.output_names]

    @property
    def top_nodes(self) -> list[NodeView]:
        """Nodes of the main graph (not inside If/Loop/Scan bodies)."""
        return self._top

    def predecessors(self, node: NodeView) -> list[NodeView]:
        seen, out = set(), []
        for t in node.inputs:
            p = self._producer.get(t) if t else None
            if p is not None and p.name not in seen:
                seen.add(p.name)
                out.append(p)
        return out

    def successors(self, node: NodeView) -> list[NodeView]:
        seen, out = set(), []
        for t in node.outputs:
            for c in self._consumers.get(t, []):
                if c.name not in seen:
                    seen.add(c.name)
                    out.append(c)
        return out

    def __len__(self) -> int:
        return len(self.nodes)

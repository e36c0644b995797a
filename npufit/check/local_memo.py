"""Judge a node once per local signature: a big graph repeats a few node shapes thousands of times.

A node's verdict is a function of whatever its rules read. We run the rules once on a *local view* of the node: a
NodeView whose graph answers only what is the node's own (its tensors' shapes, dtypes, constness, quantization,
whether they are graph inputs/outputs, its attributes) and what is the same for every node of the check (the
model's format, opsets, op-type set, graph-wide scalar facts). Names are replaced by private-use placeholders.
Any other read (a producer, a consumer, a node name, a graph-wide table, a graph fact that is not a scalar) raises
`NonLocal`, and that node is judged on the real graph as before. A read of a constant's value adds that value to
the key: the verdict is kept per value.

Why this is sound: rules are deterministic functions of what they read. Two nodes with equal signatures give equal
answers to every read the first evaluation made, so the second would take the same path and return the same
result. A result that mentions a placeholder (a detail naming a tensor) is not kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..graph import Graph, NodeView, TensorInfo, quant
from ..graph.facts import NonLocal
from ..graph.onnx_loader import LazyAttrs
from ..targets.common import rank_table

MARK = "\ue000"  # private-use code point: never in a real name we compare against, easy to find in a result
VIEW_NAME = f"{MARK}node"  # the name a view's result carries (never kept: _replay names the real node)
ONCE = object()  # a signature seen on one node so far


def _nonlocal(*_a, **_k):
    raise NonLocal


class _Members:
    """`name in graph.output_names` for the node's own placeholders; any other use of the collection is non-local
    (its length or order would differ between the view and the graph)."""

    __slots__ = ("_names",)

    def __init__(self, names: frozenset[str]):
        self._names = names

    def __contains__(self, name) -> bool:
        if isinstance(name, str) and name.startswith(MARK):
            return name in self._names
        raise NonLocal

    def isdisjoint(self, other) -> bool:
        return not any(n in self for n in other if n)

    __iter__ = __len__ = __getitem__ = __eq__ = __hash__ = _nonlocal


class _Tensors(Mapping):
    """The node's own tensors by placeholder; iterating or asking for any other name is non-local."""

    __slots__ = ("_own",)

    def __init__(self, own: dict[str, TensorInfo]):
        self._own = own

    def __getitem__(self, name):
        t = self._own.get(name)
        if t is None:
            raise NonLocal
        return t

    def get(self, name, default=None):
        return self[name]

    def __contains__(self, name) -> bool:
        return self[name] is not None

    __iter__ = __len__ = values = items = keys = _nonlocal


class _ViewGraph:
    """What a rule may read of the graph from a local view: see the module docstring."""

    __slots__ = (
        "_real",
        "format",
        "opsets",
        "path",
        "names_unique",
        "quant_form",
        "tensors",
        "input_names",
        "output_names",
        "input_set",
        "max_rank_table",
        "unproduced",
    )

    def __init__(
        self,
        real: Graph,
        tensors: dict[str, TensorInfo],
        ins: frozenset[str],
        outs: frozenset[str],
        quant_form: str,
        unproduced: frozenset[str],
        max_rank: int,
    ):
        s = object.__setattr__
        s(self, "unproduced", unproduced)
        s(self, "_real", real)
        for k in ("format", "opsets", "path", "names_unique"):
            s(self, k, getattr(real, k))
        s(self, "quant_form", quant_form)
        s(self, "tensors", _Tensors(tensors))
        s(self, "input_names", _Members(ins))
        s(self, "input_set", _Members(ins))
        s(self, "output_names", _Members(outs))
        s(self, "max_rank_table", [max_rank])  # common.max_rank's table: the view's node has index 0

    def tensor(self, name: str) -> TensorInfo:
        return self.tensors[name]

    def has_any(self, op_types: frozenset[str]) -> bool:
        return self._real.has_any(op_types)

    def producer(self, name: str):
        """None for a tensor of the node that no node computes (a weight, a graph input): in the signature."""
        if name in self.unproduced:
            return None
        raise NonLocal

    @property
    def op_types(self) -> set[str]:
        return self._real.op_types

    def __getattr__(self, name):  # producer, consumers, nodes, node, folded, ...: non-local
        raise NonLocal

    def __setattr__(self, name, value):
        raise NonLocal


def _unreadable(slot) -> property:
    """A NodeView slot a rule may not read from a view (non-local); written as usual (NodeView.__init__)."""
    return property(_nonlocal, slot.__set__)


class _ViewNode(NodeView):
    """The node of a local view: its name and IR object are not local facts (a rule never matches names)."""

    __slots__ = ()
    name = _unreadable(NodeView.__dict__["name"])
    raw = _unreadable(NodeView.__dict__["raw"])


class _ViewTensor(TensorInfo):
    """A tensor of the local view: the real one's facts under a placeholder name; its value read is recorded."""

    __slots__ = ("_src", "_reads", "_slot")

    def __init__(self, name: str, src: TensorInfo, reads: list, slot: int):
        self.name, self.shape, self.dtype, self.quant = name, src.shape, src.dtype, src.quant
        self.is_const, self.is_initializer = src.is_const, src.is_initializer
        self._src, self._reads, self._slot = src, reads, slot

    @property
    def value(self):
        if self._slot not in self._reads:
            self._reads.append(self._slot)
        return self._src.value

    @value.setter
    def value(self, v) -> None:
        raise NonLocal


def _attrs_key(attrs) -> tuple | None:
    """A TFLite node's options as a key (plain values only)."""
    if isinstance(attrs, Mapping):
        items = []
        for k, v in attrs.items():
            v = tuple(v) if isinstance(v, list) else v
            if not _plain(v):
                return None
            items.append((k, v))
        return tuple(sorted(items))
    return None


def _plain(v) -> bool:
    if v is None or isinstance(v, (bool, int, float, str)):
        return True
    return isinstance(v, tuple) and all(x is None or isinstance(x, (bool, int, float, str)) for x in v)


def value_key(v) -> Any:
    """A constant's value as a key: equal keys for bitwise-equal arrays of one dtype and shape."""
    if v is None:
        return None
    if isinstance(v, np.ndarray):
        return (v.dtype.str, v.shape, v.tobytes())
    if _plain(v):
        return (type(v).__name__, v)
    raise TypeError  # not a value we can key by: the node is judged on its own


class LocalMemo:
    """One check's memo: the signatures seen, their kept results, the op types judged node by node. The check
    engine (`_Judge.__call__`) decides when to judge a view, keep its result and reuse it."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.tensors = graph.tensors
        self.ins, self.outs = frozenset(graph.input_names), frozenset(graph.output_names)
        self.ids: dict[str, int] | None = None  # tensor name -> the number of its local facts, made on first use
        self.producer = (
            graph._producer
        )  # whether an input is computed: a view answers producer() for those that are not
        self.quant_form: str | None = None  # quant.graph_quant_form(graph), on the first view
        self.kept: dict[tuple, Any] = {}  # signature -> ONCE, or (constant slots read, {their values: kept result})
        self.plain_ops: set[str] = set()  # op types judged node by node (a view read beyond, or too few rules)
        self.hits = self.misses = 0

    def signature(self, node: NodeView) -> tuple | None:
        """The node's local facts as a flat tuple; None when it has none we can key by (then it is judged as it is).
        Each tensor's facts are numbered once (`_number_tensors`): a key of small ints hashes fast."""
        if node.parent is not None or node.subgraph_of:
            return None
        attrs = node.attrs
        if type(attrs) is LazyAttrs:  # an ONNX node: its attribute protobufs as bytes
            raw = attrs._raw
            akey: tuple | None = tuple([a.SerializeToString() for a in raw]) if raw else ()
        else:
            akey = _attrs_key(attrs)
            if akey is None:
                return None
        ids = self.ids if self.ids is not None else self._number_tensors()
        names = node.inputs + node.outputs
        try:
            key: list = [ids[n] for n in names]
        except KeyError:  # a name with no tensor (a malformed graph): judged as it is
            return None
        if len(names) > 1 and len(set(names)) != len(names):  # a tensor read twice (Add(x, x)): part of the key
            key.append(tuple([names.index(n) for n in names]))
        key += (node.op_type, node.domain, len(node.inputs), akey)
        return tuple(key)

    def _number_tensors(self) -> dict[str, int]:
        """Each tensor's local facts as a number (equal facts, equal number), in one pass over the table."""
        ids: dict[str, int] = {"": -1}  # "": an absent optional input
        numbers: dict[tuple, int] = {}
        produced, ins, outs = self.producer, self.ins, self.outs
        for name, t in self.tensors.items():
            facts = (
                t.shape,
                t.dtype,
                t.is_const,
                t.is_initializer,
                t.quant,
                name in produced,
                name in ins,
                name in outs,
            )
            n = numbers.get(facts)
            if n is None:
                n = numbers[facts] = len(numbers)
            ids[name] = n
        self.ids = ids
        return ids

    def view(self, node: NodeView, reads: list) -> NodeView:
        own: dict[str, TensorInfo] = {}
        placeholder: dict[str, str] = {}
        ins, outs, unproduced = set(), set(), set()
        names = node.inputs + node.outputs
        n_in = len(node.inputs)
        for k, name in enumerate(names):
            if not name:
                continue
            p = placeholder.get(name)
            if p is None:
                p = placeholder[name] = f"{MARK}{k}"
                own[p] = _ViewTensor(p, self.tensors[name], reads, k)
                if name in self.ins:
                    ins.add(p)
                if name in self.outs:
                    outs.add(p)
                if k < n_in and name not in self.producer:
                    unproduced.add(p)
        view = _ViewNode(
            VIEW_NAME,
            node.op_type,
            node.domain,
            node.attrs,
            tuple(placeholder.get(n, "") for n in names[:n_in]),
            tuple(placeholder.get(n, "") for n in names[n_in:]),
            None,
            0,
            None,
            (),
            None,
        )  # type: ignore[arg-type]
        if self.quant_form is None:  # asked on the first view only: a check that keeps no result never walks for it
            self.quant_form = quant.graph_quant_form(self.graph)
        max_rank = rank_table(_OneNode(view, own))[0]  # type: ignore[arg-type]  # duck-typed: nodes + tensors
        view.graph = _ViewGraph(
            self.graph,
            own,
            frozenset(ins),
            frozenset(outs),
            self.quant_form,  # type: ignore[assignment]
            frozenset(unproduced),
            max_rank,
        )
        return view


class _OneNode:
    """The minimum of a graph that common.rank_table reads, for one view node."""

    __slots__ = ("nodes", "tensors")

    def __init__(self, view: NodeView, own: dict[str, TensorInfo]):
        self.nodes, self.tensors = [view], own

"""Per-check memo of derived node facts.

A target's rules ask the same facts of one node again and again: its exec dtype, its activation inputs, the
TFLite op and conv geometry a converter gives it. Within one check the graph does not change, so `check` opens
`scope(graph)` and each fact marked `@per_node` is derived once per node and remembered until the scope ends.
A graph changed between two checks is read afresh by the next one. Outside a scope, for a node of another graph,
or for a node that is not the graph's own (a NodeView made by hand), the fact is derived every time.
The scope is a context variable, not graph state: concurrent checks of one Graph do not share it.

A remembered value is handed to every caller as is: facts are immutable values or lists no caller changes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import wraps
from typing import Any, TypeVar

from .model import Graph, NodeView

_UNSET = object()
T = TypeVar("T")


class _Scope:
    __slots__ = ("graph", "nodes", "tables", "columns")

    def __init__(self, graph: Graph):
        self.graph = graph
        self.nodes = graph.nodes
        self.tables: dict[Callable, Any] = {}  # per graph fact: its value
        # per node fact k (its number in _FACTS): its values by node index (_UNSET until derived), None until first
        # asked
        self.columns: list[list | None] = [None] * len(_FACTS)


_SCOPE: ContextVar[_Scope | None] = ContextVar("npufit_facts", default=None)
_FACTS: list[Callable] = []  # every @per_node fact, numbered in the order they were defined


@contextmanager
def scope(graph: Graph | None) -> Iterator[None]:
    """Within the block, @per_node facts of `graph`'s nodes are remembered; scope(None) remembers nothing (a
    setting the facts read, such as quant.judging_as_int8, changes: what an outer scope remembered must not answer)."""
    token = _SCOPE.set(None if graph is None else _Scope(graph))
    try:
        yield
    finally:
        _SCOPE.reset(token)


def per_node(fn: Callable[[NodeView], T]) -> Callable[[NodeView], T]:
    """fn(node), remembered per node inside scope(node.graph)."""

    k = len(_FACTS)
    _FACTS.append(fn)
    current = _SCOPE.get  # the bound method: rules ask a million facts on a 100k-node graph

    @wraps(fn)
    def memo(node: NodeView) -> T:
        s = current()
        if s is None or node.graph is not s.graph:
            return fn(node)
        i = node.index
        try:  # no len() per call: the two reads raise in the rare cases
            own = s.nodes[i] is node
            table = s.columns[k]
        except IndexError:  # a node past the scope's nodes, or a fact defined after the scope opened
            if i >= len(s.nodes):
                return fn(node)
            s.columns.extend([None] * (len(_FACTS) - len(s.columns)))
            return memo(node)
        if not own:
            return fn(node)
        if table is None:
            table = s.columns[k] = [_UNSET] * len(s.nodes)
        v: Any = table[i]
        if v is _UNSET:
            v = table[i] = fn(node)
        return v

    memo.uncached = fn  # type: ignore[attr-defined]  # the plain derivation (tests compare the two)
    return memo


class NonLocal(BaseException):
    """A rule read something beyond a node's local view (check.local_memo). BaseException: rules' `except Exception`
    must not swallow it (that would change the path they take)."""


def scalar_or_nonlocal(value):
    """A graph fact a local view may see: one that cannot tell nodes apart (a bool, number, string or None)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise NonLocal


def per_graph(fn: Callable[[Graph], T]) -> Callable[[Graph], T]:
    """fn(graph), remembered inside scope(graph): a fact about the whole graph that a rule reads for every node."""

    current = _SCOPE.get

    @wraps(fn)
    def memo(graph: Graph) -> T:
        s = current()
        if s is None or graph is not s.graph:
            real = getattr(graph, "_real", None)  # a local view (check.local_memo): the real graph's scalar facts
            if real is not None:
                return scalar_or_nonlocal(memo(real))
            return fn(graph)
        tables = s.tables
        if fn not in tables:
            tables[fn] = fn(graph)  # type: ignore[assignment]
        return tables[fn]  # type: ignore[return-value]

    memo.uncached = fn  # type: ignore[attr-defined]
    return memo

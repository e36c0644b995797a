"""Build npufit's Graph from a prepared ONNX model (graph/onnx_prepare.py reads, validates and infers it).

Why plain onnx protobuf rather than onnx-ir here: the protobuf fields are read once each, and a 100k-node
check stays within seconds. Rewrites (npufit.rewrite) use onnx-ir, where mutation is the point.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ..util.gcpause import gc_paused
from ..util.shapes import imgsz_hint, resolve
from .folding import fold_constants
from .inline_if import inline_ifs
from .model import Graph, NodeView, TensorInfo
from .onnx_prepare import (
    SMALL_VALUE_ELEMS,
    PreparedOnnx,
    infer_beside,
    infer_shapes,
    metadata,
    np_dtype_name,
    pin_inputs,
    read_onnx,
    strip_weights,
    value_types,
)
from .onnx_prepare import (
    elem_type as _elem_type,
)
from .onnx_prepare import (
    shape_of as _shape_of,
)

_INTS, _INT, _FLOAT = onnx.AttributeProto.INTS, onnx.AttributeProto.INT, onnx.AttributeProto.FLOAT


class LazyAttrs(Mapping):
    """Attributes converted to Python values on first access (100k-node graphs stay fast)."""

    __slots__ = ("_raw", "_by_name", "_cache")

    def __init__(self, protos):
        self._raw = protos  # the repeated field; indexed by name only when first read
        self._by_name: dict[str, Any] | None = None
        self._cache: dict[str, Any] | None = None  # made on first read: most nodes' attributes are never read

    @property
    def _protos(self) -> dict[str, Any]:
        if self._by_name is None:
            self._by_name = {a.name: a for a in self._raw}
        return self._by_name

    def __getitem__(self, key):
        if self._cache is None:
            self._cache = {}
        if key not in self._cache:
            a = (self._by_name or self._protos)[key]
            kind = a.type if not a.ref_attr_name else None  # a reference attribute goes the general way (it raises)
            if kind == _INTS:  # the common kinds read directly (get_attribute_value tests a dozen kinds first)
                v = list(a.ints)
            elif kind == _INT:
                v = a.i
            elif kind == _FLOAT:
                v = a.f
            elif a.type == onnx.AttributeProto.GRAPH or a.type == onnx.AttributeProto.GRAPHS:
                v = "<subgraph>"
            elif a.type == onnx.AttributeProto.TENSOR:
                v = numpy_helper.to_array(a.t) if _small(a.t) else f"<tensor {list(a.t.dims)}>"
            else:
                v = helper.get_attribute_value(a)
                if isinstance(v, bytes):
                    v = v.decode("utf-8", "replace")
                elif isinstance(v, list) and v and isinstance(v[0], bytes):
                    v = [x.decode("utf-8", "replace") for x in v]
            self._cache[key] = v
        return self._cache[key]

    def get(self, key, default=None):
        # NodeView.attr's path: Mapping.get raises and catches KeyError for every absent attribute (most reads)
        cache = self._cache
        if cache is not None and key in cache:
            return cache[key]
        return self[key] if key in (self._by_name or self._protos) else default  # the property only on first read

    def __contains__(self, key):
        return (self._cache is not None and key in self._cache) or key in self._protos

    def __iter__(self):
        return iter(self._protos)

    def __len__(self):
        return len(self._protos)


_NO_ATTRS = LazyAttrs(())  # shared by every node without attributes (most of a big graph): one object, not 100k


def _small(t: onnx.TensorProto) -> bool:
    n = 1
    for d in t.dims:
        n *= d
    return n <= SMALL_VALUE_ELEMS and t.data_location != onnx.TensorProto.EXTERNAL


def load_onnx(
    path: str | os.PathLike, input_shapes: Mapping[str, tuple[int, ...]] | None = None, strict: bool = True
) -> Graph:
    return graph_from(read_onnx(path, pin_inputs(input_shapes, strict=strict), strip_weights, infer_beside))


def graph_from(prep: PreparedOnnx, warnings: list[str] | None = None) -> Graph:
    """The Graph of a prepared model; warnings: what to start the graph's warnings with (default: all of prep's)."""
    with gc_paused():
        if prep.overlap is not None:
            graph = _build_overlapped(prep)
        else:
            graph = build_graph(
                prep.model, prep.path, prep.opsets, list(prep.warnings if warnings is None else warnings), prep.kept
            )
    graph.input_shapes, graph.shape_notes = dict(prep.shapes.pinned), list(prep.shapes.notes)
    return graph


_STUB_LOCATION = "__npufit_stub__"  # never opened: inference reads no external data


def build_graph(
    model: onnx.ModelProto,
    path: str,
    opsets: Mapping[str, int],
    warnings: list[str],
    kept: Mapping[str, tuple[bytes, onnx.TensorProto]] | None = None,
) -> Graph:
    tensors: dict[str, TensorInfo] = {}
    nodes: list[NodeView] = []
    _collect_graph(model.graph, tensors, nodes, parent=None, prefix="")
    return _finish_graph(model, _new_graph(model, path, opsets, nodes, tensors), warnings, kept)


def _build_overlapped(prep: PreparedOnnx) -> Graph:
    """build_graph while shape inference runs in a child: nodes, initializers and the graph's maps first, then the
    inferred types (the infer_beside loader: a graph without subgraphs)."""
    overlap = prep.overlap
    try:
        tensors: dict[str, TensorInfo] = {}
        nodes: list[NodeView] = []
        _collect_body(prep.model.graph, tensors, nodes, None, "", {})
        graph = _new_graph(prep.model, prep.path, prep.opsets, nodes, tensors)
        types, checker_warnings, shape_warnings = overlap.finish()
    except Exception:
        overlap.abort(ordinary=True)
        raise
    except BaseException:
        overlap.abort(ordinary=False)
        raise
    for name, shape, dtype in types:
        _merge_type(tensors, name, shape, dtype)
    return _finish_graph(prep.model, graph, checker_warnings + prep.file_warnings + shape_warnings, prep.kept)


def _new_graph(
    model: onnx.ModelProto, path: str, opsets: Mapping[str, int], nodes: list[NodeView], tensors: dict[str, TensorInfo]
) -> Graph:
    g = model.graph
    init_names = {t.name for t in g.initializer}
    return Graph(
        path,
        "onnx",
        nodes,
        tensors,
        [i.name for i in g.input if i.name not in init_names],
        [o.name for o in g.output],
        opsets,
        (),
        meta={"producer": f"{model.producer_name} {model.producer_version}".strip(), "ir_version": model.ir_version},
    )


def _finish_graph(
    model: onnx.ModelProto, graph: Graph, warnings: list[str], kept: Mapping[str, tuple[bytes, onnx.TensorProto]] | None
) -> Graph:
    """The tensor table completed (small weights' values, input warnings), constants folded, shapes refined."""
    tensors = graph.tensors
    for name, raw in (kept or {}).items():  # values of the weights stripped before inference
        t = tensors.get(name)
        if isinstance(t, _InitializerInfo):
            t._proto = raw
    # what the shape policy still needs (a dynamic batch was pinned by pin_inputs; a graph built without it, e.g.
    # an in-memory rewrite, asks for nothing it would have pinned)
    graph.shapes_needed = resolve(
        {name: tensors[name].shape for name in graph.input_names}, side=imgsz_hint(metadata(model))
    ).needed
    graph.warnings = warnings

    fold_constants(graph, graph.opsets)
    # A refined shape can make a Shape node static, whose folded value refines further shapes
    # (RT-DETR: ConstantOfShape -> Expand -> ... -> Shape -> Slice -> Concat); a few rounds reach the fixpoint.
    for _ in range(MAX_REFINE_ROUNDS):
        if not _refine_shapes(model, graph, warnings):
            break
        fold_constants(graph, graph.opsets)
    return graph


# Each round resolves one more Shape -> ... -> Expand/Reshape link. Opset-11 exports of windowed attention chain many
# (SwinV2, Swin2SR and PVT needed 6-10 rounds; LeViT-256's twelve blocks, a reshape_as in every MLP and attention
# layer, 34); the loop stops at the first round that changes nothing.
MAX_REFINE_ROUNDS = 64


def _unknown_dims(shape: tuple | None) -> int:
    """Dims inference could not name: None, or onnx's generated 'unk__N' symbols (not a user's 'batch')."""
    if shape is None:
        return 1 << 30
    return sum(1 for d in shape if d is None or (isinstance(d, str) and d.startswith("unk__")))


def _refine_shapes(model: onnx.ModelProto, graph: Graph, warnings: list[str]) -> bool:
    """Second inference pass with folded values as initializers; True when some shape became better known.

    onnx's data propagation stops at many shape-arithmetic chains (Shape->Gather->Concat->Reshape as
    torch exports flatten/view; ConstantOfShape->Expand), leaving downstream shapes unknown or with
    'unk__N' dims. We already computed those values.
    """
    if not graph.folded:
        return False
    unknown = [
        t
        for n in graph.top_nodes
        if n.name not in graph.folded
        for t in n.outputs
        if t and _unknown_dims(graph.tensor(t).shape)
    ]
    if not unknown:
        return False
    m = onnx.ModelProto()
    m.CopyFrom(model) if not _has_big_embedded(model) else m.CopyFrom(_without_big_data(model))
    g = m.graph
    keep, consts = [], {}
    # top-level nodes in file order (the loader keeps it): by position, since names may repeat in the file
    views = graph.top_nodes if len(graph.top_nodes) == len(g.node) else None
    for k, node in enumerate(g.node):
        view = views[k] if views is not None else graph.node(node.name) if node.name else None
        outs = [graph.tensor(o) for o in node.output if o]
        if view is not None and view.name in graph.folded and outs and all(t.value is not None for t in outs):
            for t in outs:
                consts[t.name] = t.value
            continue
        keep.append(node)
    if not consts:
        return False
    del g.node[:]
    g.node.extend(keep)
    del g.value_info[:]
    g.initializer.extend(numpy_helper.from_array(np.asarray(v), name) for name, v in consts.items())
    # an If whose condition folded: its taken branch, so the tensors after it get their shapes (ViTDet's rel-pos resize)
    conds = {
        k: np.asarray(consts[n.input[0]])
        for k, n in enumerate(g.node)
        if n.op_type == "If" and n.input and n.input[0] in consts
    }
    decided = {k: bool(c.reshape(-1)[0]) for k, c in conds.items() if c.size == 1}
    if decided:
        inline_ifs(m, decided)
    inferred, error = infer_shapes(m)
    if error:
        return False
    changed = False
    for vi in list(inferred.graph.value_info) + list(inferred.graph.output):
        t = graph.tensors.get(vi.name)
        if t is None or t.value is not None:
            continue
        new = _shape_of(vi.type)
        if new is not None and _unknown_dims(new) < _unknown_dims(t.shape):
            t.shape = new
            changed = True
        t.dtype = t.dtype or np_dtype_name(_elem_type(vi.type))
    return changed


def _has_big_embedded(model: onnx.ModelProto) -> bool:
    return model.ByteSize() > 64 * 1024 * 1024


def _without_big_data(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy with large embedded initializers turned into dims-only stubs (inference needs shapes only)."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    for t in m.graph.initializer:
        if not _small(t):
            t.ClearField("raw_data")
            t.data_location = onnx.TensorProto.EXTERNAL
            del t.external_data[:]
            t.external_data.add(key="location", value=_STUB_LOCATION)
    return m


_VALUE = TensorInfo.__dict__["value"]  # the slot behind TensorInfo.value


class _InitializerInfo(TensorInfo):
    """An initializer whose small value is decoded on first read: most weights are never read by a rule."""

    __slots__ = ("_proto",)

    def __init__(
        self, name: str, proto: onnx.TensorProto | tuple | None, shape: tuple | None = None, dtype: str | None = None
    ):
        TensorInfo.__init__(self, name, shape, dtype, True, True)  # an initializer is a constant
        self._proto = proto

    @property
    def value(self):
        proto = self._proto
        if proto is not None:
            self._proto = None
            try:
                if isinstance(proto, tuple):  # (raw bytes, the stripped TensorProto) kept by _strip_weights
                    raw, stub = proto
                    proto = onnx.TensorProto(dims=stub.dims, data_type=stub.data_type, raw_data=raw)
                    proto = proto if _small(proto) else None
                _VALUE.__set__(self, None if proto is None else numpy_helper.to_array(proto))
            except Exception:
                _VALUE.__set__(self, None)
        return _VALUE.__get__(self)

    @value.setter
    def value(self, v) -> None:
        self._proto = None
        _VALUE.__set__(self, v)


def _collect_graph(
    g: onnx.GraphProto, tensors, nodes, parent: str | None, prefix: str, types=None, taken: set[str] | None = None
) -> None:
    """One pass over the graph's protobuf: tensors (value_info, initializers) then nodes."""
    types = {} if types is None else types
    for name, shape, dtype in value_types(g, types):
        _merge_type(tensors, name, shape, dtype)
    _collect_body(g, tensors, nodes, parent, prefix, types, taken)


def _merge_type(tensors, name: str, shape, dtype) -> None:
    """A declared or inferred type of `name`: a new tensor, or what a known one still lacks."""
    t = tensors.get(name)
    if t is None:  # the usual case: a tensor seen first here, made with its facts in one call
        tensors[name] = TensorInfo(name, shape, dtype)
        return
    if t.shape is None:
        t.shape = shape
    t.dtype = t.dtype or dtype


def _collect_body(
    g: onnx.GraphProto, tensors, nodes, parent: str | None, prefix: str, types, taken: set[str] | None = None
) -> None:
    """Initializers (over a declared type: the weight's own) and nodes, with their subgraphs. Node names are made
    unique (taken: the names given so far, bodies included): every count, partition and list of a report is keyed
    by name, and ONNX requires no unique names (an OpenVINO export names 15 nodes 'F0::anon')."""
    if taken is None:
        taken = set()
    EXTERNAL = onnx.TensorProto.EXTERNAL
    for init in g.initializer:
        name = init.name
        dims = tuple(init.dims)
        n = 1
        for d in dims:
            n *= d
        small = n <= SMALL_VALUE_ELEMS and init.data_location != EXTERNAL
        t = _InitializerInfo(name, init if small else None, dims, np_dtype_name(init.data_type))
        old = tensors.get(name)
        if old is not None and not isinstance(old, _InitializerInfo):
            t.quant = old.quant
        tensors[name] = t
    GRAPH, GRAPHS = onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS
    append = nodes.append
    for i, n in enumerate(g.node):
        op = n.op_type
        name = n.name or f"{prefix}{op}_{i}"
        if name in taken:
            name = _unique(name, taken)
        taken.add(name)
        attrs = n.attribute
        bodies = [a for a in attrs if a.type in (GRAPH, GRAPHS)] if attrs else ()
        # n.input[:] copies the strings in one call; tuple(n.input) iterates the container element by element
        view = NodeView(
            name,
            op,
            n.domain,
            LazyAttrs(attrs) if attrs else _NO_ATTRS,
            tuple(n.input[:]),
            tuple(n.output[:]),
            None,  # type: ignore[arg-type]
            0,
            parent,
            tuple(a.name for a in bodies) if bodies else (),
            n,
        )
        append(view)
        if op == "Constant":
            _constant_output(n, tensors)
        for a in bodies:  # the branch name in the prefix: then/else bodies often hold the same unnamed nodes
            subs = [a.g] if a.type == GRAPH else list(a.graphs)
            for k, sub in enumerate(subs):
                _collect_graph(
                    sub,
                    tensors,
                    nodes,
                    parent=name,
                    prefix=f"{name}/{a.name}{k if len(subs) > 1 else ''}/",
                    types=types,
                    taken=taken,
                )


def _unique(name: str, taken: set[str]) -> str:
    """`name#2`, `name#3`, ...: the first free one (the TFLite loader names repeated tensors the same way)."""
    k = 2
    while f"{name}#{k}" in taken:
        k += 1
    return f"{name}#{k}"


def _constant_output(n: onnx.NodeProto, tensors) -> None:
    if not n.output:
        return
    t = tensors.setdefault(n.output[0], TensorInfo(n.output[0]))
    t.is_const = True
    for a in n.attribute:
        try:
            if a.name == "value":
                t.shape, t.dtype = tuple(a.t.dims), np_dtype_name(a.t.data_type)
                if _small(a.t):
                    t.value = numpy_helper.to_array(a.t)
            elif a.name in ("value_float", "value_int"):
                v = helper.get_attribute_value(a)
                t.value = np.array(v, dtype=np.float32 if a.name == "value_float" else np.int64)
                t.shape, t.dtype = (), t.value.dtype.name
            elif a.name in ("value_floats", "value_ints"):
                v = helper.get_attribute_value(a)
                t.value = np.array(v, dtype=np.float32 if a.name == "value_floats" else np.int64)
                t.shape, t.dtype = t.value.shape, t.value.dtype.name
        except Exception:
            pass

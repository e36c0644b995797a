"""Integer / bool TFLite tensors of the converter's integer path (ops_int, ops_lookup): their type, the tensor of
an ONNX tensor (a constant written on first use), a new output, an alias. int64 is carried as int32 (TFLite's index
type)."""

from __future__ import annotations

import numpy as np

from ..errors import NpufitError
from ..graph import NodeView
from ..targets.converter_facts import carried_dtype as tfl_dtype
from .lower import TT, Lowering


def dtype_of(L: Lowering, name: str) -> str | None:
    t = L.tensors.get(L.resolve(name))
    if t is not None and t.q is None and t.dtype in ("int32", "bool"):
        return t.dtype
    c = L.const(name)
    if c is not None:
        return None if np.asarray(c).dtype.kind == "f" else "bool" if np.asarray(c).dtype == bool else "int32"
    g = L.graph.tensors.get(name)
    return tfl_dtype(None if g is None else g.dtype)


def graph_input(L: Lowering, name: str, dtype: str) -> TT:
    t = L.new(name, L.shape(name), None, "plain", dtype)
    L.tensors[name] = t
    return t


def int_act(L: Lowering, name: str, dtype: str | None = None) -> TT:
    """The int32 / bool TFLite tensor of ONNX tensor `name` (a constant is written once, on first use)."""
    name = L.resolve(name)
    t = L.tensors.get(name)
    if t is not None:
        return t
    c = L.const(name)
    if c is None:
        raise NpufitError(f"tensor '{name}' was not produced by any lowered op")
    arr = np.asarray(c)
    dt = dtype or ("bool" if arr.dtype == bool else "int32")
    if dt == "int32":
        arr = np.clip(arr, np.iinfo(np.int32).min, np.iinfo(np.int32).max)
    t = L.tensors[name] = L.new(name, arr.shape, None, "plain", dt, data=arr.astype(dt))
    return t


def out(L: Lowering, name: str, dtype: str, shape=None) -> TT:
    t = L.new(name, L.shape(name) if shape is None else shape, None, "plain", dtype)
    L.tensors[name] = t
    return t


def alias(L: Lowering, node: NodeView) -> None:
    L.aliases[node.outputs[0]] = node.inputs[0]
    if node.outputs[0] in L.graph.output_names:
        L.tensors[node.outputs[0]] = int_act(L, node.inputs[0])

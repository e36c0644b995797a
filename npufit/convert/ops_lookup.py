"""Lookups on the integer path: GATHER by run-time ids (an embedding of token ids, a pick by an ArgMax), GatherElements
and GatherND by run-time indices (GATHER_ND; the per-position form of GatherElements as GATHER)."""

from __future__ import annotations

import numpy as np

from ..graph import NodeView
from ..targets.converter_facts import gather_elements_as_gather
from .int_tensors import dtype_of, int_act
from .int_tensors import out as _out
from .lower import TT, Lowering


def gather(L: Lowering, node: NodeView) -> None:
    """Gather by run-time indices (an embedding lookup of token ids, a pick by an ArgMax): GATHER with int32
    indices. A constant float table is quantized over all its rows (calibration ids reach only a few of them),
    and the output keeps the table's parameters (GATHER does not rescale)."""
    axis = int(node.attr("axis", 0))
    data, idx = node.inputs[0], node.inputs[1]
    if L.is_const(idx):  # integer data, constant indices
        x = int_act(L, data)
        i = np.asarray(L.const(idx), np.int64)
        i = np.where(i < 0, i + x.shape[axis % len(x.shape)], i)
        y = _out(L, node.outputs[0], x.dtype)
        L.emit(
            "GATHER", [x, L.int32(f"{y.name}/indices", i)], [y], "GatherOptions", axis=axis % len(x.shape), batch_dims=0
        )
        return
    ids = int_act(L, idx, "int32")
    if dtype_of(L, data):
        x = int_act(L, data)
        y = _out(L, node.outputs[0], x.dtype)
    else:
        table = L.const(data)
        if table is not None:
            x = L.tensors.get(data) or L.const_int8(data, np.asarray(table, np.float32), "plain")
            L.tensors[data] = x
        else:
            x = L.act(data, "plain")
        y = L.output(node.outputs[0], "plain", q=x.q)
    L.emit("GATHER", [x, ids], [y], "GatherOptions", axis=axis % len(x.shape), batch_dims=0)


def gather_elements(L: Lowering, node: NodeView) -> None:
    """GatherElements along an axis where every other dim of data and indices is 1 (a per-position lookup at
    batch 1, e.g. RoBERTa's buffered token-type ids): the same as GATHER of the flattened indices."""
    shape, ishape = L.shape(node.inputs[0]), L.shape(node.inputs[1])
    axis = int(node.attr("axis", 0)) % len(shape)
    x = int_act(L, node.inputs[0]) if dtype_of(L, node.inputs[0]) else L.act(node.inputs[0], "plain")
    ids = int_act(L, node.inputs[1], "int32")
    if not gather_elements_as_gather(shape, ishape, axis):
        return _gather_nd(L, x, _element_coords(L, ids, axis, node.outputs[0]), node.outputs[0])
    flat = L.new(f"{node.outputs[0]}/indices", (ishape[axis],), None, "plain", "int32")
    L.emit(
        "RESHAPE", [ids, L.int32(f"{flat.name}/shape", flat.shape)], [flat], "ReshapeOptions", new_shape=[ishape[axis]]
    )
    y = _out(L, node.outputs[0], x.dtype) if x.q is None else L.output(node.outputs[0], "plain", q=x.q)
    L.emit("GATHER", [x, flat], [y], "GatherOptions", axis=axis, batch_dims=0)


def _element_coords(L: Lowering, ids: TT, axis: int, out: str) -> TT:
    """GatherElements' run-time indices as GATHER_ND coordinates [*ids.shape, rank]: every axis but `axis` is the
    position itself (a constant grid), `axis` is the index."""
    shape, rank = tuple(ids.shape), len(ids.shape)
    cols = []
    for k in range(rank):
        if k == axis:
            c = L.new(f"{out}/index_column", shape + (1,), None, "plain", "int32")
            L.emit_reshape(ids, c)
        else:
            grid = np.broadcast_to(np.arange(shape[k]).reshape([-1 if j == k else 1 for j in range(rank)]), shape)
            c = L.int32(f"{out}/grid{k}", grid[..., None])
        cols.append(c)
    coords = L.new(f"{out}/coords", shape + (rank,), None, "plain", "int32")
    L.emit("CONCATENATION", cols, [coords], "ConcatenationOptions", axis=rank, fused_activation_function="NONE")
    return coords


def _gather_nd(L: Lowering, x: TT, coords: TT, out: str) -> None:
    """GATHER_ND of int8 (values pass through) or integer data by int32 coordinates into the ONNX output `out`."""
    y = _out(L, out, x.dtype) if x.q is None else L.output(out, "plain", q=x.q)
    L.emit("GATHER_ND", [x, coords], [y])


def gather_nd(L: Lowering, node: NodeView) -> None:
    """GatherND by run-time indices (batch_dims 0): TFLite's GATHER_ND is the same operation."""
    if int(node.attr("batch_dims", 0)):
        raise L.fail(node, "batch_dims > 0 with indices computed at run time")
    x = int_act(L, node.inputs[0]) if dtype_of(L, node.inputs[0]) else L.act(node.inputs[0], "plain")
    _gather_nd(L, x, int_act(L, node.inputs[1], "int32"), node.outputs[0])

"""Loops that provably never end, found before a run starts.

ONNX Runtime runs a Loop without a trip count whose condition stays true until something stops it: npufit's own
verification limit (--verify-timeout, 300 s by default) would, after five minutes of nothing. A Loop whose trip
count is absent (or astronomically large) and whose condition starts true and is passed through the body
unchanged (or is a constant true) never ends on any input: it is refused at once, in one line. Every other Loop
(a condition the body computes) runs under the time limit as before.
"""

from __future__ import annotations

import os

import numpy as np

from ..errors import NpufitError

LOOP_WIRE = b'"\x04Loop'  # NodeProto.op_type = "Loop" as it appears in the protobuf bytes (field 4, length 4)
MAX_TRIPS = 100_000_000  # a constant trip count past this with a condition that never turns false: no end in sight


def refuse_endless_loops(model: str | os.PathLike | bytes, what: str | None = None) -> None:
    """Raise NpufitError when `model` (a file or its bytes) holds a Loop that never ends; models without a Loop
    cost one search of their bytes."""
    why = endless_loop(model)
    if why:
        raise NpufitError(f"{what + ': ' if what else ''}{why}; running it would never finish")


def endless_loop(model: str | os.PathLike | bytes) -> str | None:
    import onnx

    if isinstance(model, bytes):
        data = model
    else:
        try:
            with open(model, "rb") as f:
                data = f.read()
        except OSError:
            return None  # the session's own loading says what is wrong with the file
    if LOOP_WIRE not in data:
        return None
    proto = onnx.ModelProto()
    try:
        proto.ParseFromString(data)
    except Exception:
        return None
    return _in_graph(proto.graph, {})


def _scalar(t) -> object | None:
    """The value of a one-element tensor held in the model (never external data)."""
    from onnx import TensorProto, numpy_helper

    if t.data_location == TensorProto.EXTERNAL or np.prod(t.dims, dtype=np.int64) != 1:
        return None
    try:
        return numpy_helper.to_array(t).reshape(-1)[0].item()
    except Exception:
        return None


def _constants(graph, outer: dict[str, object]) -> dict[str, object]:
    consts = dict(outer)
    for t in graph.initializer:
        consts[t.name] = _scalar(t)
    for n in graph.node:
        if n.op_type == "Constant" and n.output:
            for a in n.attribute:
                if a.name == "value" and a.HasField("t"):
                    consts[n.output[0]] = _scalar(a.t)
    return consts


def _in_graph(graph, outer: dict[str, object]) -> str | None:
    consts = _constants(graph, outer)
    for node in graph.node:
        if node.op_type == "Loop" and node.domain in ("", "ai.onnx"):
            why = _never_ends(node, consts)
            if why:
                return f"Loop '{node.name}' {why}"
        for a in node.attribute:
            for g in [a.g] if a.HasField("g") else list(a.graphs):
                why = _in_graph(g, consts)
                if why:
                    return why
    return None


def _never_ends(node, consts: dict[str, object]) -> str | None:
    trips_name = node.input[0] if len(node.input) > 0 else ""
    cond_name = node.input[1] if len(node.input) > 1 else ""
    trips = consts.get(trips_name) if trips_name else None
    if trips_name and (not isinstance(trips, int) or trips <= MAX_TRIPS):
        return None  # a trip count the data gives, or a finite one
    start = consts.get(cond_name) if cond_name else True  # an absent condition is true
    if start is not True and start != 1:
        return None  # decided by the data, or false: the loop may not run at all
    body = next((a.g for a in node.attribute if a.name == "body" and a.HasField("g")), None)
    if body is None or len(body.input) < 2 or not body.output:
        return None
    if not _stays_true(body, body.output[0].name, body.input[1].name):
        return None
    if trips_name:
        return f"runs {trips:,} iterations (its trip count) and its condition never turns false"
    return "has no trip count and its condition never turns false: it never ends"


def _stays_true(body, out: str, cond_in: str) -> bool:
    """The body's condition output is its condition input passed through unchanged, or a constant true."""
    consts = _constants(body, {})
    producers = {o: n for n in body.node for o in n.output}
    seen = set()
    while out not in seen:
        seen.add(out)
        if out == cond_in:
            return True
        if out in consts:
            return consts[out] is True or consts[out] == 1
        n = producers.get(out)
        if n is None or n.op_type != "Identity" or not n.input:
            return False
        out = n.input[0]
    return False

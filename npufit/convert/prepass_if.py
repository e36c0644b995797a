"""Inline `If` nodes whose condition the pinned input shapes decide (the converter's private copy only).

Exporters trace Python branches on sizes (`if pad_h > 0`, `if rel_pos.shape[0] != max_rel_dist` in ViTDet) into
ONNX `If` nodes computed from Shape ops. With static input shapes such a condition is fixed: the taken branch's
nodes replace the If, and its outputs feed the If's outputs through Identity nodes. A condition that depends on
input values (not only on shapes) is left alone: that If stays a converter gap."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper

from ..graph.inline_if import inline_ifs
from ..verify.compare import make_session

# ops whose output shape follows their input values: a Shape of one of them is not fixed by the input shapes
_VALUE_SHAPED = {"NonZero", "Unique", "Compress"}


def _shape_only(model: onnx.ModelProto, cond: str) -> bool:
    """True when `cond` reaches no graph input except through a Shape op (its value depends only on shapes).
    Nested If nodes in the way are followed into the outer names their branches read; Loop / Scan stop it. (The
    converter's LiteRT check against the original model would show a branch taken wrongly.)"""
    prod = {o: n for n in model.graph.node for o in n.output}
    inputs = {i.name for i in model.graph.input}
    stack, seen = [cond], set()
    while stack:
        t = stack.pop()
        if t in seen or not t:
            continue
        seen.add(t)
        if t in inputs:
            return False
        n = prod.get(t)
        if n is None:
            continue
        if n.op_type == "Shape":
            if getattr(prod.get(n.input[0]), "op_type", None) in _VALUE_SHAPED:
                return False
            continue
        graphs = [a.g for a in n.attribute if a.type == onnx.AttributeProto.GRAPH]
        if n.op_type != "If" and (graphs or any(a.type == onnx.AttributeProto.GRAPHS for a in n.attribute)):
            return False  # Loop / Scan: their bodies may read inputs
        stack.extend(n.input)
        stack.extend(i for g in graphs for b in g.node for i in b.input)  # outer names a branch reads
    return True


def run_on_zeros(model: onnx.ModelProto, names: list[str]) -> dict[str, np.ndarray] | None:
    """`names` from one ONNX Runtime run on all-zero inputs: right for whatever only the input shapes decide (those
    conditions, tensor shapes); None when an input has a dynamic dim or the run fails."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    del m.graph.output[:]
    m.graph.output.extend(helper.make_empty_tensor_value_info(n) for n in names)
    feed = {}
    for i in m.graph.input:
        dims = [d.dim_value if d.HasField("dim_value") else None for d in i.type.tensor_type.shape.dim]
        if any(d is None for d in dims):
            return None
        feed[i.name] = np.zeros(dims, helper.tensor_dtype_to_np_dtype(i.type.tensor_type.elem_type))
    try:
        sess = make_session(m.SerializeToString())
        return {n: np.asarray(v) for n, v in zip(names, sess.run(names, feed))}
    except Exception:  # a model ONNX Runtime cannot run is reported by the calibration step
        return None


def inline_static_ifs(model: onnx.ModelProto) -> tuple[int, dict[str, str]]:
    """Inline every If whose condition depends only on shapes; -> (how many, inlined node -> If node)."""
    done, origin = 0, {}
    for _ in range(8):  # a taken branch may hold If nodes of its own
        g = model.graph
        ifs = {
            k: n.input[0]
            for k, n in enumerate(g.node)
            if n.op_type == "If" and n.domain in ("", "ai.onnx") and _shape_only(model, n.input[0])
        }
        conds = run_on_zeros(model, list(dict.fromkeys(ifs.values()))) if ifs else None
        if not conds:
            break
        fired, inlined = inline_ifs(model, {k: bool(conds[c].reshape(-1)[0]) for k, c in ifs.items()})
        if not fired:
            break
        origin.update({k: origin.get(v, v) for k, v in inlined.items()})
        done += fired
    return done, origin

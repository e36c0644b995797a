"""Ordering ties: a TopK, ArgMax or ArgMin that ranks scores closer together than float rounding can tell apart.

Any change of rounding (ONNX Runtime's optimizer fusing kernels in one model and not in the other) may then pick
the near-equal entries in another order: the index outputs, and whatever is gathered through them, differ although
both models compute the same thing. Found on the original model's own run on the verification samples, so that a
verifier can say so, with the margin, and hold only the outputs that do not read those indices to a tolerance.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np
import onnx

RANKING_OPS = {"TopK": 1, "ArgMax": 0, "ArgMin": 0}  # op -> position of its index output


@dataclass
class Ranking:
    """One ranking node of the main graph: where its scores come from, and which model outputs read its indices."""

    node: str
    op: str
    scores: str  # the tensor it ranks
    picked: str  # its first output (TopK: the values, whose last axis length is k)
    axis: int
    largest: bool
    index_outputs: list[str]  # model outputs that depend on its indices


def rankings(model: onnx.ModelProto) -> list[Ranking]:
    """Ranking nodes of the main graph whose indices reach a model output."""
    g = model.graph
    outputs = [o.name for o in g.output]
    consumers: dict[str, list[onnx.NodeProto]] = {}
    for n in g.node:
        for t in n.input:
            consumers.setdefault(t, []).append(n)
    found = []
    for k, n in enumerate(g.node):
        pos = RANKING_OPS.get(n.op_type)
        if n.domain not in ("", "ai.onnx") or pos is None or len(n.output) <= pos or not n.input:
            continue
        reach = _downstream(n.output[pos], consumers)
        hit = [o for o in outputs if o in reach]
        if not hit:
            continue
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}
        found.append(
            Ranking(
                n.name or f"{n.op_type}_{k}",
                n.op_type,
                n.input[0],
                n.output[0],
                int(attrs.get("axis", -1 if n.op_type == "TopK" else 0)),
                bool(attrs.get("largest", 1)) if n.op_type == "TopK" else n.op_type == "ArgMax",
                hit,
            )
        )
    return found


def _downstream(tensor: str, consumers: Mapping[str, list[onnx.NodeProto]]) -> set[str]:
    seen, stack = {tensor}, [tensor]
    while stack:
        for n in consumers.get(stack.pop(), ()):
            for o in n.output:
                if o and o not in seen:
                    seen.add(o)
                    stack.append(o)
    return seen


def margin(r: Ranking, scores: np.ndarray, picked: np.ndarray) -> tuple[float, float]:
    """(the smallest gap between two neighbouring ranks the node decides, the largest |score|) over one sample.
    TopK decides the order of its k picks and the cut after the k-th; ArgMax/ArgMin the first rank."""
    x = np.asarray(scores, dtype=np.float64)
    if x.size == 0 or x.ndim == 0:
        return float("inf"), 0.0
    axis = r.axis % x.ndim
    s = np.sort(x, axis=axis)
    if r.largest:
        s = np.flip(s, axis=axis)
    n = s.shape[axis]
    k = np.asarray(picked).shape[axis] if r.op == "TopK" and np.asarray(picked).ndim == x.ndim else 1
    decided = min(k + 1, n)  # ranks 0..k-1 ordered, and rank k-1 against rank k (the cut)
    if decided < 2:
        return float("inf"), float(np.nanmax(np.abs(x)))
    head = np.take(s, range(decided), axis=axis)
    gaps = np.abs(np.diff(head, axis=axis))
    finite = np.abs(x[np.isfinite(x)])
    return float(np.nanmin(gaps)), float(finite.max()) if finite.size else 0.0


@dataclass
class Tie:
    node: str
    op: str
    margin: float  # smallest gap between neighbouring ranks over the samples
    scale: float  # largest |score|
    outputs: list[str]  # model outputs that read its indices

    def to_dict(self) -> dict:
        return {"node": self.node, "op": self.op, "margin": self.margin, "scale": self.scale, "outputs": self.outputs}


def ties(
    model: onnx.ModelProto,
    run_with_extra_outputs,
    feeds: list[dict],
    atol: float,
    rtol: float,
) -> list[Tie]:
    """Ranking nodes whose scores, on these feeds, are closer than the float tolerance (atol + rtol * |score|).
    run_with_extra_outputs(names, feed) -> {name: array}: the original model run with these tensors as outputs."""
    found = rankings(model)
    if not found:
        return []
    names = list(dict.fromkeys(t for r in found for t in (r.scores, r.picked)))
    best: dict[str, list[float]] = {r.node: [float("inf"), 0.0] for r in found}
    for f in feeds:
        vals = run_with_extra_outputs(names, f)
        for r in found:
            m, scale = margin(r, vals[r.scores], vals[r.picked])
            b = best[r.node]
            b[0], b[1] = min(b[0], m), max(b[1], scale)
    out = []
    for r in found:
        m, scale = best[r.node]
        if m <= atol + rtol * scale:
            out.append(Tie(r.node, r.op, m, scale, r.index_outputs))
    return out


def with_outputs(model: onnx.ModelProto, names: list[str]) -> onnx.ModelProto:
    """A copy of `model` whose outputs are `names` (intermediate tensors may be read like outputs)."""
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    del probe.graph.output[:]
    probe.graph.output.extend(onnx.ValueInfoProto(name=t) for t in names)
    return probe

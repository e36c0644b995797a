"""The int8 parameters of a Where's output where a branch is a fill (masked_fill(~mask, finfo.min)): the fill
saturates to the int8 end instead of stretching the scale to 1e38. Shared by both Where lowerings (constant
condition: ops_shape; run-time condition: ops_int).
"""

from __future__ import annotations

import math

import numpy as np

from ..graph import NodeView
from .lower import Lowering
from .qparams import Q, activation_q
from .ranges import FILL


def is_fill(v: np.ndarray) -> bool:
    v = np.asarray(v, np.float64)
    return v.size > 0 and bool(np.all(~np.isfinite(v) | (np.abs(v) >= FILL)))


def branch(L: Lowering, name: str):
    """('fill', sign) | ('const', array) | ('act', name) for a Where branch."""
    c = L.const(name)
    if c is None:
        return "act", name
    c = np.asarray(c, np.float32)
    return ("fill", 1.0 if np.all(c > 0) else -1.0) if is_fill(c) else ("const", c)


def range_of(L: Lowering, b) -> tuple[float, float] | None:
    kind, v = b
    if kind == "act":
        return L.real_range(L.act(v))
    if kind == "const":
        return float(v.min()), float(v.max())
    return None


def q_over(ranges, bits: int = 8) -> Q:
    rs = [r for r in ranges if r is not None]
    return activation_q(min(r[0] for r in rs), max(r[1] for r in rs), bits)


def fill_q(L: Lowering, node: NodeView, branches=None) -> Q | None:
    """The int8 parameters of a float Where with a fill branch (scores.masked_fill(~mask, finfo.min) -> Softmax):
    over the other branches' range (plus room below for a Softmax), the fill saturating; None without a fill."""
    branches = branches or [branch(L, node.inputs[1]), branch(L, node.inputs[2])]
    ranges = [range_of(L, b) for b in branches]
    branches, ranges = far_fills(L, node.outputs[0], branches, ranges)
    if not any(b[0] == "fill" for b in branches):
        return None
    ranges = [r for r in ranges if r is not None]
    if any(b[0] == "fill" and b[1] < 0 for b in branches):
        ranges += fill_room(L, node.outputs[0], ranges)
    return q_over(ranges, L.bits)


def feeds_softmax(L: Lowering, out: str) -> bool:
    """`out` is read only by Softmax (and is no model output): where its masked values weigh nothing."""
    cons = L.graph.consumers(out)
    return out not in L.graph.output_names and bool(cons) and all(c.op_type == "Softmax" for c in cons)


def far_fills(L: Lowering, out: str, branches, ranges):
    """Where `out` goes into a Softmax, a branch whose whole range lies below the other branches' fill_room level
    (a -1e4 or -1e9 mask) weighs nothing there, like a fill: it becomes ('fill', -1) and its range None, so it
    saturates to the int8 end instead of stretching the scale over it (cosine 0.58 - 0.72 on a -1e4 mask before)."""
    if not feeds_softmax(L, out):
        return branches, ranges
    far = []
    for k, r in enumerate(ranges):
        others = [o for j, o in enumerate(ranges) if j != k and o is not None]
        room = fill_room(L, out, others) if r is not None and others else []
        far.append(bool(room) and r[1] <= room[0][0])
    return (
        [("fill", -1.0) if f else b for b, f in zip(branches, far)],
        [None if f else r for r, f in zip(ranges, far)],
    )


def fill_room(L: Lowering, out: str, ranges) -> list[tuple[float, float]]:
    """Where masked scores go into a Softmax, the int8 end they saturate to must be far enough below every row's
    largest score that their exp terms vanish: below e^-D with D = ln(512 n), each rounds to 0 in the int8 softmax
    output (scale 1/256) and all n together move the sum by under 1/512. A row's largest score is at least the
    smallest score, so the end goes D below that. Saturating at the scores' own minimum instead leaves masked
    positions weighted like the weakest score (a causal mask then breaks attention); D below the largest score
    leaves rows whose scores are all low weighted towards their masked positions (cosine 0.99893 with 9 in 10
    positions masked, 0.999996 now)."""
    cons = L.graph.consumers(out)
    if not cons or any(c.op_type != "Softmax" for c in cons):
        return []
    shape = L.shape(out)
    n = max(int(shape[int(c.attr("axis", -1)) % len(shape)]) for c in cons)
    hi = max(r[1] for r in ranges)
    return [(min(r[0] for r in ranges) - math.log(512.0 * n), hi)]

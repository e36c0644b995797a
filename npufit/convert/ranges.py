"""Per-tensor float ranges and real shapes from ONNX Runtime runs of the float model on calibration samples.

Every intermediate the converter may quantize is exposed as a graph output of a private copy of the model,
so one run per sample gives min/max (and the true static shape) of all of them. Then tensors that TFLite's
int8 kernels pass through unchanged (RESHAPE, MAX_POOL, CONCATENATION, ...) are merged into one range, so
that no requantization op has to be inserted between them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import helper

from ..util.progress import track
from ..verify.compare import make_session, timed_run

# |v| at or above this is a -inf/+inf stand-in (torch.finfo(float32).min fills masked attention scores): left out of
# ranges, since in int8 it saturates to the end of the range instead of stretching the scale over 1e38
FILL = 1e30


@dataclass
class Ranges:
    lo: dict[str, float] = field(default_factory=dict)
    hi: dict[str, float] = field(default_factory=dict)
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    values: dict[str, np.ndarray] = field(default_factory=dict)  # constants too large for npufit.graph to fold
    samples: int = 0
    rows: dict[str, np.ndarray] = field(default_factory=dict)  # [batch, rows, features] tensor -> per-row max |x|

    def get(self, name: str) -> tuple[float, float] | None:
        return (self.lo[name], self.hi[name]) if name in self.lo else None

    def update(self, name: str, arr: np.ndarray) -> None:
        self.shapes[name] = tuple(int(d) for d in arr.shape)
        if arr.dtype.kind != "f" or arr.size == 0:
            return
        a = arr[np.isfinite(arr) & (np.abs(arr) < FILL)]
        if a.size == 0:
            return
        lo, hi = float(a.min()), float(a.max())
        self.lo[name] = min(lo, self.lo.get(name, lo))
        self.hi[name] = max(hi, self.hi.get(name, hi))


def collect(
    model: onnx.ModelProto,
    names: Iterable[str],
    samples: Sequence[dict[str, np.ndarray]],
    keep: Iterable[str] = (),
    rows: Iterable[str] = (),
) -> Ranges:
    """Run the float model once per sample with `names` (and the model's own outputs) exposed; the values of
    `keep` (input-independent tensors) are recorded from the first run; for the 3-D tensors in `rows`, the
    largest |value| of each row (axis 1) too (row_scale)."""
    keep, rows = set(keep), set(rows)
    names = list(names) + sorted(keep)

    m = onnx.ModelProto()
    m.CopyFrom(model)
    have = {o.name for o in m.graph.output}
    inputs = {i.name for i in m.graph.input}
    for n in dict.fromkeys(names):
        if n and n not in have and n not in inputs:
            m.graph.output.append(helper.make_empty_tensor_value_info(n))
    sess = make_session(m.SerializeToString())
    out_names = [o.name for o in sess.get_outputs()]
    r = Ranges()
    for feed in track(samples, "calibrating (ONNX Runtime)", total=len(samples)):
        for k, v in feed.items():
            r.update(k, np.asarray(v))
        for name, val in zip(out_names, timed_run(sess, out_names, feed)):
            r.update(name, np.asarray(val))
            if name in keep and name not in r.values:
                r.values[name] = np.asarray(val)
            if name in rows and np.ndim(val) == 3:
                m = np.abs(np.asarray(val, np.float64)).max(axis=(0, 2))
                r.rows[name] = np.maximum(r.rows.get(name, m), m)
        r.samples += 1
    return r


def merge_groups(r: Ranges, links: Iterable[tuple[str, str]], fixed: Iterable[str] = ()) -> None:
    """Union-find over linked tensors; each group gets the union of its members' ranges.

    Tensors in `fixed` (the user's own Q/DQ ranges) are never widened; their group keeps theirs."""
    parent: dict[str, str] = {}

    def find(x):
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in links:
        if a in r.lo and b in r.lo:
            parent[find(a)] = find(b)
    groups: dict[str, list[str]] = {}
    for x in list(parent):
        groups.setdefault(find(x), []).append(x)
    fixed = set(fixed)
    for members in groups.values():
        pinned = [m for m in members if m in fixed]
        src = pinned or members
        lo, hi = min(r.lo[m] for m in src), max(r.hi[m] for m in src)
        for m in members:
            r.lo[m], r.hi[m] = lo, hi

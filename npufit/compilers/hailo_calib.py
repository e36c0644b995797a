"""The part of the model the Hailo parser is asked to take, and the calibration set npufit writes for it.

The DFC's input layers are channels-last with the batch first, so npufit writes each sample in that layout,
float32 (`hailo optimize --calib-set-path`):

    ONNX rank 4  [N, C, H, W]  ->  [N, H, W, C]   images (NHWC)
    ONNX rank 3  [N, S, D]     ->  [N, 1, S, D]   sequences and time series: a unit height, D as the channels
    ONNX rank 2  [N, F]        ->  [N, F]

One input: `calib_set.npy`; several: `calib_set.npz` keyed by the DFC's input layer names `NET/input_layerK`, K
counting the region's inputs in the order of the model's inputs (or, for a region that starts inside the
model, in the order the region first reads them). The samples are the user's calibration data (as the ONNX
model takes it: npufit transposes) or, without any, seeded random data that only shows the model compiles. A
region that starts inside the model reads tensors the model computes: ONNX Runtime runs the model on the same
samples and the set holds those tensors.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import NpufitError
from ..graph.onnx_prepare import pin_inputs, read_onnx
from ..quantize.calibration import InputSpec, load_calibration, spread
from ..util.io import atomic_write_bytes
from ..verify.compare import make_session, timed_run

MAX_SAMPLES = 64  # the DFC's default calibset_size: the model script says how many it takes
RANDOM_NOTE = (
    "calibration set: seeded random data (no --calibration given): enough to compile, not to quantize well; "
    "the DFC's accuracy on it means little"
)


@dataclass
class CalibrationFile:
    """What npufit wrote for `--calib-set-path`: the file, how many samples, where they came from, the layout."""

    file: str  # relative to the compile folder
    samples: int
    source: str
    random: bool
    inputs: list[dict] = field(default_factory=list)  # {"tensor", "layer", "shape" (one sample), "layout"}

    def to_dict(self) -> dict:
        return {
            "file": self.file,
            "samples": self.samples,
            "source": self.source,
            "random": self.random,
            "inputs": self.inputs,
        }

    def describe(self) -> str:
        each = "; ".join(f"{i['tensor']} -> {i['layer']} {i['layout']}" for i in self.inputs)
        return f"{self.file}: {self.samples} samples from {self.source}, float32, {each}"


def region(graph, start: list[str], end: list[str]) -> set[str]:
    """Names of the nodes between the start and end nodes (all nodes when neither is given)."""

    def walk(seeds, nxt):
        seen, stack = set(), [graph.node(s) for s in seeds if graph.node(s)]
        while stack:
            n = stack.pop()
            if n.name in seen:
                continue
            seen.add(n.name)
            stack.extend(nxt(n))
        return seen

    every = {n.name for n in graph.top_nodes}
    down = walk(start, graph.successors) if start else every
    up = walk(end, graph.predecessors) if end else every
    return down & up


def region_inputs(graph, nodes: set[str]) -> list[str]:
    """The tensors the region reads from outside itself (constants and folded values aside): the DFC's inputs."""
    inside = {o for n in graph.top_nodes if n.name in nodes for o in n.outputs}
    reads = [
        t
        for n in graph.top_nodes
        if n.name in nodes
        for t in n.present_inputs
        if t not in inside and not graph.tensor(t).is_const
    ]
    reads = list(dict.fromkeys(reads))
    if set(reads) <= graph.input_set:
        return [t for t in graph.input_names if t in reads]
    return reads


def dfc_layout(arr: np.ndarray, tensor: str) -> tuple[np.ndarray, str]:
    """Samples [N, ...] as the ONNX model takes them -> the DFC's layout (module docstring), and its name."""
    if arr.ndim == 4:
        return np.ascontiguousarray(arr.transpose(0, 2, 3, 1)), "[N,C,H,W] -> [N,H,W,C]"
    if arr.ndim == 3:
        return arr[:, None], "[N,S,D] -> [N,1,S,D]"
    if arr.ndim == 2:
        return arr, "[N,F]"
    raise NpufitError(
        f"'{tensor}' has rank {arr.ndim}: the Hailo DFC's input layers are rank 2 to 4; start the parse region "
        "after the node that gives it its rank"
    )


def write_calibration(
    src: Path, graph, tensors: list[str], net: str, out: Path, calibration: str | None, input_shapes
) -> CalibrationFile:
    """Write the calibration set for the region whose inputs are `tensors` (region_inputs) into `out`."""
    if not tensors:
        raise NpufitError("the parse region reads no tensor: nothing to calibrate (check --start-node/--end-node)")
    specs = [
        InputSpec(t.name, tuple(d if isinstance(d, int) and d >= 0 else None for d in (t.shape or ())), _dtype(t))
        for t in graph.inputs
    ]
    cal = load_calibration(calibration or "random", specs, count=MAX_SAMPLES, input_shapes=input_shapes)
    samples = [cal[i] for i in spread(len(cal), min(len(cal), MAX_SAMPLES))]
    inner = [t for t in tensors if t not in graph.input_set]
    computed = _computed(src, inner, samples, input_shapes) if inner else {}
    entries, arrays = [], {}
    for k, t in enumerate(tensors):
        rows = computed[t] if t in computed else [s[t] for s in samples]
        # each sample keeps the model's batch axis: the DFC counts samples, so batches become rows
        data = np.concatenate([np.asarray(r) for r in rows]).astype(np.float32)
        data, layout = dfc_layout(data, t)
        layer = f"{net}/input_layer{k + 1}"
        arrays[layer] = data
        entries.append({"tensor": t, "layer": layer, "shape": list(data.shape[1:]), "layout": layout})
    buf = io.BytesIO()
    if len(arrays) == 1:
        name = "calib_set.npy"
        np.save(buf, next(iter(arrays.values())))
    else:
        name = "calib_set.npz"
        np.savez(buf, **arrays)
    atomic_write_bytes(out / name, buf.getvalue())
    count = len(next(iter(arrays.values())))
    random = cal.kind == "random"
    return CalibrationFile(name, count, "seeded random data" if random else cal.source, random, entries)


def _dtype(t) -> np.dtype:
    try:
        return np.dtype(t.dtype or "float32")
    except TypeError:
        return np.dtype(np.float32)


def _computed(src: Path, tensors: list[str], samples: list[dict], input_shapes) -> dict[str, list[np.ndarray]]:
    """The values of inner tensors on each sample: ONNX Runtime runs the model (weights where they lie) with them
    as extra outputs."""
    from onnx import helper

    model = read_onnx(src, pin_inputs(input_shapes)).model  # our copy (npufit's own file in the compile folder)
    have = {o.name for o in model.graph.output}
    model.graph.output.extend(helper.make_empty_tensor_value_info(t) for t in tensors if t not in have)
    sess = make_session(model.SerializeToString(), external_dir=str(src.parent))
    wanted = {i.name for i in sess.get_inputs()}
    out: dict[str, list[np.ndarray]] = {t: [] for t in tensors}
    for s in samples:
        for t, v in zip(tensors, timed_run(sess, tensors, {k: v for k, v in s.items() if k in wanted})):
            out[t].append(np.asarray(v))
    return out

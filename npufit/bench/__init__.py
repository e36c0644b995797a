"""npufit bench: one measurement protocol across runtimes, comparable numbers, JSON and plots.

`bench(model, runtime=...)` is `npufit bench MODEL --runtime ...`; `compare(files, ...)` is
`npufit bench --compare a.json b.json ...`. See docs/bench-protocol.md for what is timed and what is not.
"""

from __future__ import annotations

import datetime as _dt
import os
from pathlib import Path
from typing import Any

from ..errors import NpufitError
from ..graph.onnx_prepare import pin_inputs, read_onnx, require_shapes
from ..runtimes import BOUNDARY_TEXT, parse_runtimes, runner_class
from ..runtimes.chain import is_plan_dir
from ..util.limits import graph_within_budget
from ..util.readers import require_regular_file
from ..util.shapes import parse_input_shapes
from .comparison import compare_results
from .environment import capture, model_identity
from .inputs import DEFAULT_POOL
from .protocol import Protocol
from .result import SCHEMA, BenchResult, RuntimeResult
from .runner import bench_runtime

__all__ = ["bench", "compare", "Protocol", "BenchResult", "RuntimeResult", "SCHEMA", "default_runtimes"]

# what a model file runs on when --runtime is not given
_DEFAULT_BY_SUFFIX = {
    ".onnx": ["ort-cpu"],
    ".xml": ["openvino"],
    ".hef": ["hailort"],
    ".engine": ["tensorrt"],
    ".plan": ["tensorrt"],
    ".trt": ["tensorrt"],
}


def default_runtimes(model: Path) -> list[str]:

    if is_plan_dir(model):
        return ["chain"]
    if model.suffix.lower() in _DEFAULT_BY_SUFFIX:
        return _DEFAULT_BY_SUFFIX[model.suffix.lower()]
    raise NpufitError(f"{model}: expected an .onnx/.xml/.hef/.engine file or a split-plan folder with plan.json")


def bench(
    model: str | os.PathLike,
    runtime: str | list[str] | None = None,
    *,
    batch: int | None = None,
    threads: int | None = None,
    warmup: int = 10,
    iterations: int | None = 200,
    duration: float | None = None,
    inputs: str | os.PathLike | None = None,
    fresh_inputs: bool = False,
    input_pool: int | None = None,
    boundary: str | None = None,
    fp16: bool = False,
    seed: int = 0,
    options: dict[str, Any] | None = None,
    input_shapes=None,
) -> BenchResult:
    """Benchmark `model` (a model file or a split-plan folder) on each runtime under one stated protocol.

    The library side of `npufit bench MODEL --runtime LIST`. Absent runtimes are skipped with the reason.

    Parameters
    ----------
    model : str or os.PathLike
        An .onnx (.xml, .hef, .engine) file or a split-plan folder.
    runtime : str or list of str, optional
        "ort-cpu", "ort-cuda", "ort-trt", "tensorrt", "openvino", "hailort", "chain" (default: by model type).
    batch : int, optional
        Batch size for a dynamic first dimension (default 1).
    threads : int, optional
        Intra-op / inference threads (default: the runtime's own).
    warmup : int
        Untimed calls after the cold call.
    iterations : int, optional
        Timed calls (or give `duration`).
    duration : float, optional
        Time calls for this many seconds instead.
    inputs : str or os.PathLike, optional
        An .npz of inputs by name (an extra leading axis holds several samples).
    fresh_inputs : bool
        Rotate a pool of distinct samples, one per iteration.
    input_pool : int, optional
        Pool size for fresh_inputs (default 16).
    boundary : str, optional
        GPU runtimes: "host-to-host" (default: copies included) or "compute-only".
    fp16 : bool
        TensorRT runtimes: allow FP16 kernels.
    seed : int
        Seed of the random inputs.
    options : dict, optional
        Per-runtime options (e.g. {"npu_runtime": "hailort"} for a plan folder).
    input_shapes : dict or str, optional
        The shapes fed, {"images": (1, 3, 640, 640)} or "images=1,3,640,640" (an ONNX model's dynamic batch alone
        is pinned to 1, or to `batch`; other unknown dims must be given, unless `inputs` holds the data).

    Returns
    -------
    BenchResult
        Latency distribution, throughput, cold call, build time and peak memory per runtime, with the environment
        needed to judge two results comparable; `.render(...)`, `.to_dict()`.

    Example
    -------
    >>> import npufit
    >>> b = npufit.bench("model.onnx", "ort-cpu", iterations=500)
    >>> b  # doctest: +SKIP
    <BenchResult model.onnx: ort-cpu 1.83 ms>
    """

    path = Path(model)
    if not path.exists():
        raise NpufitError(f"{path}: no such file or folder")
    if path.is_dir() and not is_plan_dir(path):
        raise NpufitError(f"{path}: a folder, but not a split plan (no plan.json)")
    if not path.is_dir():
        require_regular_file(path, "model file")  # hashing or loading a FIFO would block forever
    shapes, notes = _shapes(path, input_shapes, batch, inputs is not None)
    if boundary is not None and boundary not in BOUNDARY_TEXT:
        raise NpufitError(f"unknown boundary '{boundary}' (choose from {', '.join(BOUNDARY_TEXT)})")
    names = parse_runtimes(runtime) if runtime else default_runtimes(path)

    proto = Protocol(
        warmup=warmup,
        iterations=iterations,
        duration_s=duration,
        batch=batch,
        threads=threads,
        fresh_inputs=fresh_inputs,
        input_pool=(input_pool or DEFAULT_POOL) if fresh_inputs else 1,
        boundary=boundary,
        seed=seed,
        input_shapes={k: list(v) for k, v in shapes.items()} or None,
    )
    proto.validate()
    identity = model_identity(path)  # before running: the file we measured, not one changed meanwhile
    opts = dict(options or {})
    if shapes:
        opts["input_shapes"] = shapes  # the runtimes that compile for a shape (TensorRT, OpenVINO) build these
    if fp16:
        opts["fp16"] = True
    created = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    results: list[RuntimeResult] = []
    sources = []
    for name in names:
        r, source = bench_runtime(name, path, proto, str(inputs) if inputs else None, opts)
        results.append(r)
        if source:
            sources.append(source)
    versions = {r.runtime: r.version for r in results}
    versions.update({n: runner_class(n)(path).version() for n in names if versions.get(n) is None})
    res = BenchResult(
        model=identity,
        protocol=proto.to_dict(),
        environment=capture(versions),
        results=results,
        created=created,
        inputs=sources[0] if sources else "",
    )
    if not res.measured and results and all(r.status == "failed" for r in results):
        raise NpufitError("; ".join(f"{r.runtime}: {r.reason}" for r in results))
    res.warnings[:0] = notes
    if proto.duration_s is None and proto.iterations and proto.iterations < 30:
        res.warnings.append(f"{proto.iterations} iterations is too few for stable percentiles")
    return res


def _shapes(path: Path, input_shapes, batch: int | None, data_given: bool) -> tuple[dict, list[str]]:
    """The shape policy for a benchmark (util.shapes): the shapes to feed and the notes it prints. An ONNX file is
    validated here too (the checker's one line, not ONNX Runtime's stack)."""

    given = parse_input_shapes(input_shapes)
    if path.is_dir() or path.suffix.lower() != ".onnx":
        return given, []

    prep = read_onnx(path, pin_inputs(given))
    graph_within_budget("bench", len(prep.model.graph.node))  # the graph's working memory, before any run
    if not data_given:  # an .npz of inputs brings its own shapes
        require_shapes(prep, "a benchmark times one input shape")
    if batch is None:
        return prep.shapes.pinned, prep.shapes.notes
    shapes = dict(prep.shapes.pinned)
    for name, dims in given.items():
        if dims[0] != batch:
            raise NpufitError(f"--batch {batch} and --input-shape {name}={','.join(map(str, dims))} disagree")
    for name in set(shapes) - set(given):  # a dynamic batch pinned by the policy: --batch chooses it instead
        shapes[name] = (batch, *shapes[name][1:])
    return shapes, []


def compare(files: list[str | os.PathLike], baseline: str | None = None, plot: str | os.PathLike | None = None):
    """`npufit bench --compare`: a comparison table of result files, ratios to a baseline, optional PNG."""

    return compare_results(files, baseline=baseline, plot=plot)

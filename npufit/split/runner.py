"""run(): execute a plan's stage chain on real inputs, time each stage, optionally compare with the original."""

from __future__ import annotations

import io
import os
from pathlib import Path

import numpy as np

from ..errors import NpufitError
from ..util.commands import npufit_command, output_folder
from ..util.io import atomic_write_bytes
from ..util.progress import track
from ..util.shapes import parse_input_shapes
from ..verify.compare import compare_outputs, make_session, run_onnx
from .chain import ChainRunner
from .plan import sha256_file
from .result import RunResult
from .verify import load_npz


def run(
    plan_dir: str | os.PathLike,
    inputs: str | os.PathLike | dict | None = None,
    output: str | os.PathLike | None = None,
    compare_original: str | os.PathLike | None = None,
    npu_runtime: str | None = None,
    repeat: int = 1,
    threads: int = 1,
    input_shapes=None,
    seed: int = 0,
) -> RunResult:
    """Run a split plan's stages in order on `inputs` and optionally compare the result with the original model.

    The library side of `npufit run PLAN_DIR --inputs IN.npz`.

    Parameters
    ----------
    plan_dir : str or os.PathLike
        A folder written by `npufit.split` (plan.json and its stages).
    inputs : str, os.PathLike or dict, optional
        An .npz file, or a dict of arrays by input name (None: seeded random inputs at the shapes the plan was
        split for).
    output : str or os.PathLike, optional
        Write the outputs to this .npz (atomically).
    compare_original : str or os.PathLike, optional
        The original model: run it too and report the largest difference.
    npu_runtime : str, optional
        What runs the NPU stages: "auto" (default), "onnxruntime-cpu" or "hailort".
    repeat : int
        Run the chain this many times (stage timings are kept per run).
    threads : int
        Intra-op threads of the ONNX Runtime sessions.
    input_shapes : dict or str, optional
        The shapes expected, {"images": (1, 3, 640, 640)} or "images=1,3,640,640": the plan's stages were written at
        fixed shapes, so another one is refused with the split command that makes it.
    seed : int
        Seed of the random inputs when `inputs` is None.

    Returns
    -------
    RunResult
        The outputs by name, per-stage times, where each stage ran and the comparison; `.render(...)`.

    Example
    -------
    >>> import numpy as np
    >>> import npufit
    >>> x = np.zeros((1, 3, 640, 640), np.float32)
    >>> r = npufit.run("plan/", {"images": x}, compare_original="yolov8n.onnx")
    >>> r.outputs["output0"].shape  # doctest: +SKIP
    (1, 84, 8400)
    """
    if repeat < 1:
        raise NpufitError("--repeat must be at least 1")
    runner = ChainRunner(plan_dir, npu_runtime, threads=threads)
    names = runner.plan.input_names
    planned = _planned_shapes(runner.plan)
    for name, dims in parse_input_shapes(input_shapes).items():
        _refuse_other_shape(runner.plan, planned, name, dims, "--input-shape")
    if inputs is None:
        feeds = _random_feeds(runner.plan, planned, seed)
    else:
        feeds = load_npz(inputs, names) if not isinstance(inputs, dict) else inputs
        for name in names:
            if name in feeds:
                _refuse_other_shape(runner.plan, planned, name, np.shape(feeds[name]), "--inputs")
    outs: dict[str, np.ndarray] = {}
    per_stage: dict[str, list[float]] = {s.name: [] for s in runner.plan.stages}
    for _ in track(range(repeat), "running chain", total=repeat):
        outs, times = runner.run(feeds)
        for name, t in times:
            per_stage[name].append(t)
    res = RunResult(Path(plan_dir), outs, list(per_stage.items()), dict(runner.device_of_stage), list(runner.notes))
    if compare_original is not None:
        res.comparison = _compare(compare_original, feeds, outs, runner.plan.source.get("sha256"))
    if output is not None:
        buf = io.BytesIO()
        np.savez(buf, **outs)
        atomic_write_bytes(output, buf.getvalue())
        res.output_file = str(output)
    return res


def _planned_shapes(plan) -> dict[str, tuple | None]:
    """The input shapes the plan's stages were written at (split pins them: given, or a dynamic batch of 1)."""
    return {
        i["name"]: (tuple(i["shape"]) if i.get("shape") is not None else None) for i in plan.source.get("inputs", [])
    }


def _refuse_other_shape(plan, planned: dict, name: str, dims, what: str) -> None:
    """One line (not ONNX Runtime's cut-off shape error) when an input does not have the shape the plan takes."""

    if name not in planned:
        raise NpufitError(f"{what} {name}: the plan has no input '{name}' (inputs: {', '.join(planned) or 'none'})")
    want = planned[name]
    if want is None or not all(isinstance(d, int) for d in want) or tuple(dims) == tuple(want):
        return
    src = plan.source.get("path") or plan.source.get("file", "MODEL")
    again = npufit_command(
        "split",
        src,
        "--target",
        plan.target["name"],
        "--output-dir",
        output_folder(src, "split"),
        shapes={name: tuple(int(d) for d in dims)},
    )
    raise NpufitError(
        f"{what} {name}: shape {list(dims)}, but the plan's stages were written for {list(want)}; "
        f"split again for that shape: {again}"
    )


def _random_feeds(plan, planned: dict, seed: int) -> dict[str, np.ndarray]:
    """Seeded random inputs (float ~ N(0,1), ints in [0, 10)) at the plan's input shapes."""
    rng = np.random.default_rng(seed)
    feeds = {}
    for i in plan.source.get("inputs", []):
        shape = planned.get(i["name"])
        if shape is None or not all(isinstance(d, int) for d in shape):
            raise NpufitError(f"input '{i['name']}' has no fixed shape in the plan: give --inputs FILE.npz")
        dt = np.dtype(i.get("dtype") or "float32")
        feeds[i["name"]] = (
            rng.standard_normal(shape).astype(dt)
            if np.issubdtype(dt, np.floating)
            else rng.integers(0, 10, shape).astype(dt)
        )
    return feeds


def _compare(model: str | os.PathLike, feeds: dict, outs: dict, plan_sha: str | None) -> dict:

    if not Path(model).is_file():
        raise NpufitError(f"--compare-original {model}: no such file")
    c = compare_outputs(run_onnx(make_session(model), feeds), outs)
    d = c.to_dict()
    d["equivalent"] = c.ok(0.0, 0.0)
    d["sha256_matches"] = (sha256_file(model) == plan_sha) if plan_sha else None
    return d

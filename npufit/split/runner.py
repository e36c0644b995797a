"""run(): execute a plan's stage chain on real inputs, time each stage, optionally compare with the original."""

from __future__ import annotations

import io
import os
from pathlib import Path

import numpy as np

from ..errors import NpufitError
from ..util.progress import track
from .chain import ChainRunner
from .plan import sha256_file
from .result import RunResult
from .verify import load_npz


def run(
    plan_dir: str | os.PathLike,
    inputs: str | os.PathLike | dict,
    output: str | os.PathLike | None = None,
    compare_original: str | os.PathLike | None = None,
    npu_runtime: str | None = None,
    repeat: int = 1,
    threads: int = 1,
) -> RunResult:
    """Run PLAN_DIR's stages on `inputs` (an .npz path or a dict of arrays); write the outputs to `output` (.npz)."""
    if repeat < 1:
        raise NpufitError("--repeat must be at least 1")
    runner = ChainRunner(plan_dir, npu_runtime, threads=threads)
    names = runner.plan.input_names
    feeds = load_npz(inputs, names) if not isinstance(inputs, dict) else inputs
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
        from ..util.io import atomic_write_bytes

        buf = io.BytesIO()
        np.savez(buf, **outs)
        atomic_write_bytes(output, buf.getvalue())
        res.output_file = str(output)
    return res


def _compare(model: str | os.PathLike, feeds: dict, outs: dict, plan_sha: str | None) -> dict:
    from ..verify.compare import compare_outputs, make_session, run_onnx

    if not Path(model).is_file():
        raise NpufitError(f"--compare-original {model}: no such file")
    c = compare_outputs(run_onnx(make_session(model), feeds), outs)
    d = c.to_dict()
    d["equivalent"] = c.ok(0.0, 0.0)
    d["sha256_matches"] = (sha256_file(model) == plan_sha) if plan_sha else None
    return d

"""Compile many models for one target on an executor: local worker processes by default, or Ray tasks.

A model whose compiler crashes, hangs past the timeout or is refused is a failed result, never the end of
the batch. On Ray a compiler that lives in its own environment (RKNN, Hailo DFC) tags its tasks with its
resource, so they only land on nodes that have that environment (Toolchain.resource in npufit.toolchains).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import NpufitError
from ..executors import Task, get_executor, resources_for_compiler
from ..vocab import EXECUTOR
from . import compile_model, compiler_for


def compile_one(job: dict[str, Any]) -> dict[str, Any]:
    """The task: one model -> CompileResult.to_dict() (plain data travels between processes and nodes)."""
    return compile_model(
        job["model"], job["target"], compare_prediction=job["compare_prediction"], **job["options"]
    ).to_dict()


def compile_many(
    models: Sequence[str | os.PathLike],
    target: str,
    compare_prediction: bool = False,
    executor: str = EXECUTOR,
    jobs: int | None = None,
    address: str | None = None,
    task_timeout: float | None = None,
    **options,
) -> list[dict[str, Any]]:
    """`npufit compile M1 M2 ... --target T [--executor ...]`: one result dict per model, in order.

    options: CompileOptions fields as for compile_model; `out_dir` becomes the parent of one folder per model
    (<out_dir>/<stem>-<target>, numbered when two models share a stem).
    """
    if not models:
        raise NpufitError("no model to compile")
    comp = compiler_for(target)
    parent = Path(options.pop("out_dir", None) or Path.cwd() / "npufit-compile")
    stems: dict[str, int] = {}
    tasks = []
    for m in models:
        stem = Path(m).stem
        stems[stem] = stems.get(stem, 0) + 1
        folder = parent / (f"{stem}-{target}" if stems[stem] == 1 else f"{stem}-{stems[stem]}-{target}")
        job = {
            "model": str(m),
            "target": target,
            "compare_prediction": compare_prediction,
            "options": {**options, "out_dir": str(folder)},
        }
        tasks.append(
            Task("npufit.compilers.batch:compile_one", job, resources=resources_for_compiler(comp.name), label=str(m))
        )
    with get_executor(executor, jobs, address) as ex:
        outcomes = ex.map(tasks, task_timeout, description=f"compile {target} ({ex.name})")
    results = []
    for t, o in zip(tasks, outcomes):
        if o.ok:
            results.append(o.value)
        else:
            results.append(
                {
                    "model": t.arg["model"],
                    "target": target,
                    "compiler": comp.name,
                    "ok": False,
                    "error": f"{o.status}: {o.error}",
                    "placement": [],
                    "summary": {},
                }
            )
    return results

"""Run a pipeline: expand the matrix, then step by step run (or reuse) every cell, branch failures contained.

For each cell: if a cell it depends on did not succeed, it is skipped and says which; else its cache key is
computed from its settings and the sha256 of its inputs; a recorded result under the same key is reused
("cached"), otherwise the step runs. An error in a step fails that cell only; the rest of the matrix goes on.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
import traceback
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .. import __version__
from ..compilers import compiler_for
from ..errors import NpufitError
from ..executors import Task, get_executor, resources_for_compiler
from ..util.environment import environment
from ..util.io import atomic_write_json, atomic_write_text, claim_dir
from ..util.progress import track
from ..vocab import PIPELINE_EXECUTOR
from ..zoo.data import load_dataset
from .cache import NO_RECORD, StepRecord, compute_key, digest_file, digest_tree, fresh
from .context import Reject, Skip, StepContext
from .matrix import Cell, dependencies, expand, model_source, select
from .schema import ModelSpec, PipelineConfig, load_config
from .stepdefs import BY_NAME, STEPS
from .summary import render_summary

MANIFEST = "pipeline.json"
RUN_SCHEMA = "npufit.pipeline-run/1"


@dataclass
class CellResult:
    cell: Cell
    record: StepRecord
    action: str  # ran | cached | kept (outside --only/--from) | skipped | failed
    folder: Path

    def to_dict(self, root: Path) -> dict[str, Any]:
        return {
            "cell": self.cell.id,
            "step": self.cell.step,
            "model": self.cell.model,
            "target": self.cell.target,
            "runtime": self.cell.runtime,
            "action": self.action,
            "folder": os.path.relpath(self.folder, root),
            **{k: v for k, v in self.record.to_dict().items() if k not in ("cell", "step", "schema")},
        }


@dataclass
class PipelineRun:
    config: PipelineConfig
    results: list[CellResult]
    seconds: float = 0.0
    started: str = ""
    environment: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        counts = ", ".join(f"{k} {v}" for k, v in self.counts.items() if v)
        return f"<PipelineRun {self.config.name}: {len(self.results)} cells ({counts}), {self.seconds:.1f} s>"

    @property
    def counts(self) -> dict[str, int]:
        out = {a: 0 for a in ("ran", "cached", "kept", "failed", "skipped", "rejected")}
        for r in self.results:
            out[r.action] = out.get(r.action, 0) + 1
        return out

    @property
    def did_nothing(self) -> bool:
        return not any(r.action in ("ran", "failed") for r in self.results)

    @property
    def ok(self) -> bool:
        return not any(r.record.status == "failed" for r in self.results)

    def result(self, cell_id: str) -> CellResult | None:
        return next((r for r in self.results if r.cell.id == cell_id), None)

    def to_dict(self) -> dict[str, Any]:

        root = self.config.output_dir
        return {
            "schema": RUN_SCHEMA,
            "npufit_version": __version__,
            "started": self.started,
            "seconds": round(self.seconds, 2),
            "counts": self.counts,
            "did_nothing": self.did_nothing,
            "config": self.config.to_dict(),
            "environment": self.environment,
            "cells": [r.to_dict(root) for r in self.results],
        }

    def render(self, fmt: str = "table") -> str:

        return render_summary(self, fmt)


def run_pipeline(
    path: str | os.PathLike,
    from_step: str | None = None,
    only: str | None = None,
    force: bool = False,
    output_dir: str | os.PathLike | None = None,
    quiet: bool = False,
    executor: str = PIPELINE_EXECUTOR,
    jobs: int | None = None,
    address: str | None = None,
) -> PipelineRun:
    """`npufit pipeline run`: returns the per-cell results; writes <output_dir>/pipeline.json and the step folders.

    executor: "inprocess" (default) runs the cells one after the other here; "pool" or "ray" run the cells of
    one step side by side (every step but bench and report), a compile cell for a vendor env only on Ray
    nodes tagged with it. Results and records are the same either way."""

    config = load_config(path, output_dir)
    cells = expand(config)
    selected = select(cells, only, from_step)
    claim_dir(
        config.output_dir,
        "pipeline-results",
        "--output-dir",
        [m.onnx for m in config.models if m.onnx],
        legacy_owned=lambda d: os.listdir(d) if (d / MANIFEST).is_file() else None,
    )  # step folders get deleted on re-runs
    run = PipelineRun(
        config, [], started=datetime.now(timezone.utc).isoformat(timespec="seconds"), environment=environment()
    )
    log = (lambda s: None) if quiet else (lambda s: print(s, file=sys.stderr, flush=True))
    log(
        f"pipeline {config.name}: {len(cells)} steps over {len(config.models)} model(s)"
        f" x {len(config.targets)} target(s)"
        f" x {len(config.runtimes)} runtime(s) -> {config.output_dir}"
    )
    records: dict[str, CellResult] = {}
    memo: dict[str, Any] = {}

    def dataset():
        if "dataset" not in memo:
            memo["dataset"] = load_dataset(config.data, config.path.parent)
        return memo["dataset"]

    t0 = time.perf_counter()

    with get_executor(executor, jobs, address) as ex:
        for step in STEPS:
            todo = [c for c in cells if c.step == step.name]
            if not todo:
                continue
            if step.name == "report":  # the report reads the manifest of this very run
                run.results = list(records.values())
                run.seconds = time.perf_counter() - t0
                atomic_write_json(config.output_dir / MANIFEST, run.to_dict())
            if ex.name != "inprocess" and step.parallel and len(todo) > 1:
                _run_step_on(ex, todo, config, cells, records, selected, force, log)
                continue
            for cell in track(todo, f"{step.name:<9}", total=len(todo)):
                res = _run_cell(cell, config, cells, records, selected, force, dataset, log)
                records[cell.id] = res
                log(_line(res))
    run.results = list(records.values())
    run.seconds = time.perf_counter() - t0
    atomic_write_json(config.output_dir / MANIFEST, run.to_dict())
    if run.did_nothing:
        log(
            f"nothing to do: all {run.counts['cached'] + run.counts['kept']} steps are up to date "
            "(inputs and settings unchanged; --force re-runs them)"
        )
    return run


def _run_cell(
    cell: Cell,
    config: PipelineConfig,
    cells: list[Cell],
    records: dict[str, CellResult],
    selected: set[str],
    force: bool,
    dataset,
    log,
) -> CellResult:
    planned = _plan_cell(cell, config, cells, records, selected, force)
    return planned if isinstance(planned, CellResult) else _execute(planned, config, dataset, log)


def _plan_cell(
    cell: Cell,
    config: PipelineConfig,
    cells: list[Cell],
    records: dict[str, CellResult],
    selected: set[str],
    force: bool,
) -> CellResult | dict[str, Any]:
    """The decided result (blocked, kept, cached), or the job that runs the step."""
    folder = config.output_dir / cell.folder
    deps = [records[d.id] for d in dependencies(cell, config, cells) if d.id in records]
    if cell.step != "report":
        blocked = [d for d in deps if d.record.status != "ok"]
        if blocked:
            d = blocked[0]
            msg = (
                d.record.message
                if "blocked by" in d.record.message
                else f"skipped: blocked by {d.cell.id} ({d.record.status})"
            )
            rec = StepRecord(cell.id, cell.step, status="skipped", message=msg)  # names the root cause, not the chain
            return CellResult(cell, rec, "skipped", folder)
    spec = config.model(cell.model) if cell.model else None
    settings = config.settings(cell.step, spec)
    key = compute_key(_key_parts(cell, config, spec, settings, deps))
    previous, why = StepRecord.read(folder, config.output_dir)
    if cell.id not in selected:
        if previous is None:  # nothing this run may use: say why (a stale record names its step and key)
            had = "no earlier result" if why == NO_RECORD else f"its earlier result is unusable ({why})"
            rec = StepRecord(
                cell.id,
                cell.step,
                status="failed",
                message=f"not selected by --only/--from and {had}: run the full pipeline once first",
            )
            return CellResult(cell, rec, "failed", folder)
        return CellResult(cell, previous, "kept", folder)
    ok, why = fresh(previous, key, folder)
    if ok and not force:
        return CellResult(cell, previous, "cached", folder)
    src = model_source(cell, config)
    return {
        "cell": cell,
        "folder": folder,
        "settings": settings,
        "deps": {d.cell.step: (d.record, d.folder) for d in deps},
        "model_from": src.step if src else None,
        "key": key,
    }


def _execute(job: dict[str, Any], config: PipelineConfig, dataset, log) -> CellResult:
    cell, folder, key = job["cell"], job["folder"], job["key"]
    step = BY_NAME[cell.step]
    ctx = StepContext(config, cell, folder, job["settings"], job["deps"], job["model_from"], dataset, log)
    if folder.exists():
        shutil.rmtree(folder)  # no stale outputs from an earlier run survive into this one
    folder.mkdir(parents=True)
    rec = StepRecord(cell.id, cell.step, key=key)
    t0 = time.perf_counter()
    try:
        out = step.run(ctx)
        if not isinstance(out.result, step.result):  # a step wired to the wrong result type is a bug here
            raise TypeError(f"step '{cell.step}' returned {type(out.result).__name__}, not {step.result.__name__}")
        rec.status, rec.outputs, rec.result, rec.message = "ok", out.outputs, out.result, out.message
        rec.digests = {n: digest_tree(folder / p) for n, p in out.outputs.items()}
    except Skip as e:
        rec.status, rec.message = "skipped", f"skipped: {e}"
    except Reject as e:
        rec.status, rec.message = "rejected", str(e)
    except NpufitError as e:
        rec.status, rec.message = "failed", e.message
    except Exception as e:  # a bug in one step must not take the matrix down; the traceback is kept
        rec.status, rec.message = (
            "failed",
            f"internal error: {type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}",
        )
        atomic_write_text(folder / "error.log", traceback.format_exc())
    rec.seconds = round(time.perf_counter() - t0, 3)
    rec.finished = datetime.now(timezone.utc).isoformat(timespec="seconds")
    rec.save(folder)
    action = {"ok": "ran", "failed": "failed", "skipped": "skipped", "rejected": "rejected"}[rec.status]
    return CellResult(cell, rec, action, folder)


def run_cell_task(payload: dict[str, Any]) -> tuple[CellResult, list[str]]:
    """A step cell as an executor task (a worker process or a Ray node): its result and the lines it logged."""
    config, lines = payload["config"], []
    return _execute(payload["job"], config, lambda: _worker_dataset(config), lines.append), lines


_DATASETS: dict[tuple[str, str], Any] = {}  # one dataset per worker process, loaded by the first cell that asks


def _worker_dataset(config: PipelineConfig):

    k = (repr(config.data), str(config.path.parent))
    if k not in _DATASETS:
        _DATASETS[k] = load_dataset(config.data, config.path.parent)
    return _DATASETS[k]


def _run_step_on(
    ex,
    todo: list[Cell],
    config: PipelineConfig,
    cells: list[Cell],
    records: dict[str, CellResult],
    selected: set[str],
    force: bool,
    log,
) -> None:
    """The cells of one step on the executor; decided cells (cached, kept, blocked) are settled here first."""

    jobs: list[dict[str, Any]] = []
    for cell in todo:
        planned = _plan_cell(cell, config, cells, records, selected, force)
        if isinstance(planned, CellResult):
            records[cell.id] = planned
            log(_line(planned))
        else:
            jobs.append(planned)
    tasks = [
        Task(
            "npufit.pipeline.runner:run_cell_task",
            {"config": config, "job": j},
            resources=_cell_resources(j["cell"]),
            label=j["cell"].id,
        )
        for j in jobs
    ]
    for job, o in zip(jobs, ex.map(tasks, None, description=f"{todo[0].step:<9}")):
        if o.ok:
            res, lines = o.value
            for line in lines:
                log(line)
        else:  # the worker died: the cell failed, its branch stops, the matrix goes on
            cell = job["cell"]
            rec = StepRecord(
                cell.id, cell.step, key=job["key"], status="failed", message=f"worker {o.status}: {o.error}"
            )
            job["folder"].mkdir(parents=True, exist_ok=True)
            rec.save(job["folder"])
            res = CellResult(cell, rec, "failed", job["folder"])
        records[res.cell.id] = res
        log(_line(res))
    for cell in todo:  # the manifest lists cells in matrix order, whatever order they finished in
        records[cell.id] = records.pop(cell.id)


def _cell_resources(cell: Cell) -> dict[str, float]:
    """A compile cell needs its vendor compiler's env (a Ray resource tag); other steps run anywhere."""
    if cell.step != "compile" or not cell.target:
        return {}

    try:
        return resources_for_compiler(compiler_for(cell.target).name)
    except NpufitError:
        return {}


def _key_parts(
    cell: Cell, config: PipelineConfig, spec: ModelSpec | None, settings: dict, deps: list[CellResult]
) -> dict:

    parts: dict[str, Any] = {
        "cell": cell.id,
        "settings": settings,
        "npufit": __version__,
        "revision": BY_NAME[cell.step].revision,
    }
    if cell.step == "report":
        parts["inputs"] = {d.cell.id: [d.record.status, d.record.key, d.record.digests, d.record.message] for d in deps}
        return parts
    parts["inputs"] = {d.cell.id: d.record.digests for d in deps}
    if cell.step in ("train", "export") and spec is not None:
        parts["model"] = {"arch": spec.arch, "hidden": spec.hidden, "layers": spec.layers}
        if spec.input_shapes:  # written into the exported model
            parts["model"]["input_shapes"] = {k: list(v) for k, v in spec.input_shapes.items()}
        if spec.onnx is not None:
            parts["model"]["onnx"] = digest_file(spec.onnx) if spec.onnx.is_file() else f"missing:{spec.onnx}"
    if cell.step == "train":
        parts["data"] = config.data
    return parts


_MARK = {
    "ran": "ok",
    "cached": "cached",
    "kept": "kept",
    "failed": "FAILED",
    "skipped": "skipped",
    "rejected": "rejected",
}


def _line(res: CellResult) -> str:
    c, r = res.cell, res.record
    where = " x ".join(p for p in (c.model, c.target or c.runtime) if p) or "all"
    took = f"{r.seconds:6.2f}s" if res.action in ("ran", "failed", "rejected") else "       "
    note = r.message
    if res.action == "cached":
        note = "up to date (same inputs and settings), not re-run" + (f"; {r.message}" if r.message else "")
    return f"  {c.step:<9} {where:<28} {_MARK[res.action]:<8} {took}  {note}".rstrip()

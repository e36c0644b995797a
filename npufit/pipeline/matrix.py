"""Models x targets x runtimes -> the cells of the run and what each one consumes.

A cell is one step for one branch: `train/gru`, `check/gru/hailo8`, `bench/gru/ort-cpu`, `report`.
Per-model steps (train, export) feed every target branch of that model; per-target steps form a chain
(check, fix, split, quantize, compile) where each takes the model its nearest enabled predecessor made;
bench runs the exported model per runtime; report reads everything.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import NpufitError
from .schema import PipelineConfig
from .stepdefs import BY_NAME, STEP_NAMES

MODEL_CHAIN = ("export", "fix", "split")  # steps whose output model the later target steps consume


@dataclass(frozen=True, order=True)
class Cell:
    step: str
    model: str | None = None
    target: str | None = None
    runtime: str | None = None

    @property
    def id(self) -> str:
        return "/".join(p for p in (self.step, self.model, self.target or self.runtime) if p)

    @property
    def branch(self) -> str:
        """What a failure stops: a model (train/export), a model x target or model x runtime branch."""
        return "/".join(p for p in (self.model, self.target or self.runtime) if p) or "all"

    @property
    def folder(self) -> str:
        """Results sub-folder: <model>/<target|runtime>/<step> or <model>/<step>."""
        return "/".join(p for p in (self.model, self.target or self.runtime, self.step) if p)


def expand(config: PipelineConfig) -> list[Cell]:
    """Every cell of the run, in execution order (step by step, then model, then target/runtime)."""
    _require(config)
    cells: list[Cell] = []
    for step in STEP_NAMES:
        if step not in config.steps:
            continue
        scope = BY_NAME[step].scope
        if scope == "all":
            cells.append(Cell(step))
            continue
        for m in config.models:
            if step == "train" and m.arch is None:
                continue  # an ONNX model has nothing to train
            if scope == "model":
                cells.append(Cell(step, m.name))
            elif scope == "target":
                cells.extend(Cell(step, m.name, target=t) for t in config.targets)
            else:
                cells.extend(Cell(step, m.name, runtime=r) for r in config.runtimes)
    return cells


def _require(config: PipelineConfig) -> None:
    needs_model = [s for s in config.steps if BY_NAME[s].scope in ("target", "runtime")]
    if needs_model and "export" not in config.steps:
        raise NpufitError(
            f"{config.path}: steps.{needs_model[0]} needs steps.export (it provides the ONNX model, "
            "also for models given as 'onnx:')"
        )
    if any(BY_NAME[s].scope == "target" for s in config.steps) and not config.targets:
        raise NpufitError(
            f"{config.path}: steps {', '.join(s for s in config.steps if BY_NAME[s].scope == 'target')} need at least "
            "one entry in targets"
        )


def model_source(cell: Cell, config: PipelineConfig) -> Cell | None:
    """The cell whose 'model' output this cell works on."""
    if cell.step in ("train", "export", "report"):
        return None
    if cell.step in ("check", "fix", "bench"):
        return Cell("export", cell.model)
    order = STEP_NAMES.index(cell.step)
    for step in reversed(MODEL_CHAIN):
        if STEP_NAMES.index(step) < order and step in config.steps:
            return (
                Cell(step, cell.model) if BY_NAME[step].scope == "model" else Cell(step, cell.model, target=cell.target)
            )
    return None


def dependencies(cell: Cell, config: PipelineConfig, all_cells: list[Cell]) -> list[Cell]:
    """Cells whose outputs this cell reads (their content hashes go into its cache key)."""
    if cell.step == "report":
        return [c for c in all_cells if c.step != "report"]
    deps: list[Cell] = []
    src = model_source(cell, config)
    if src is not None:
        deps.append(src)
    has_train = "train" in config.steps and config.model(cell.model).arch is not None
    if cell.step == "export" and has_train:
        deps.append(Cell("train", cell.model))
    if cell.step in ("quantize", "compile", "bench") and has_train:
        deps.append(Cell("train", cell.model))  # real windows for calibration and bench inputs
    if cell.step == "compile" and "quantize" in config.steps:
        deps.append(Cell("quantize", cell.model, target=cell.target))
    return deps


def select(cells: list[Cell], only: str | None = None, start: str | None = None) -> set[str]:
    """Ids of the cells to (re)run for --only STEP / --from STEP; the others reuse their recorded results."""
    for s in (only, start):
        if s is not None and s not in BY_NAME:
            raise NpufitError(f"unknown step '{s}' (steps: {', '.join(STEP_NAMES)})")
    present = {c.step for c in cells}
    for s in (only, start):
        if s is not None and s not in present:
            raise NpufitError(
                f"step '{s}' is not in this pipeline's steps ({', '.join(sorted(present, key=STEP_NAMES.index))})"
            )
    if only:
        return {c.id for c in cells if c.step == only}
    if start:
        return {c.id for c in cells if STEP_NAMES.index(c.step) >= STEP_NAMES.index(start)}
    return {c.id for c in cells}

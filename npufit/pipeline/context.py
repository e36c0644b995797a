"""What a pipeline step function sees and returns: its context, its outcome, and the two ways it declines.

Its own module so that the step functions (steps.py) and the runner that looks them up do not import each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ..errors import NpufitError
from .results import StepResult

if TYPE_CHECKING:  # annotations only: the step records (stepdefs.py) reach this module without yaml
    from .cache import StepRecord
    from .matrix import Cell
    from .schema import ModelSpec, PipelineConfig


class Skip(Exception):
    """The step cannot run here (tool not installed, no GPU): not an error, not cached, retried next run."""


class Reject(Exception):
    """The step ran and decided the branch ends here (e.g. nothing worth putting on the NPU); cached."""


@dataclass
class Outcome:
    outputs: dict[str, str]  # name -> path relative to the cell folder
    result: StepResult  # the step's own type (results.RESULT_TYPES)
    message: str = ""


@dataclass
class StepContext:
    """What a step function sees: its settings, its folder, the records of the cells it depends on."""

    config: PipelineConfig
    cell: Cell
    folder: Path
    settings: dict[str, Any]
    deps: dict[str, tuple[StepRecord, Path]]  # dependency step name -> (record, folder)
    model_from: str | None  # the step whose 'model' output this cell consumes
    _dataset: Callable[[], Any]
    log: Callable[[str], None]

    @property
    def spec(self) -> ModelSpec:
        return self.config.model(self.cell.model)

    def input(self, step: str, name: str) -> Path | None:
        if step not in self.deps:
            return None
        rec, folder = self.deps[step]
        return rec.output_path(folder, name)

    def model_input(self) -> Path:
        p = self.input(self.model_from, "model") if self.model_from else None
        if p is None:
            raise NpufitError(f"{self.cell.id}: no input model (the {self.model_from} step produced none)")
        return p

    def dataset(self):
        return self._dataset()

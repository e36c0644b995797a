"""What each pipeline step records as its result: one typed dataclass per step kind.

A step returns one of these in its Outcome; step.json and pipeline.json keep it as the `metrics` object, and the
summary and the HTML report read it back through `parse_result`. Reading is strict: a missing, unknown or wrongly
typed key (a result written by other code, or edited by hand) is a StaleResult naming the step and the key, never a
silent None further down.
"""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass, fields
from typing import Any, ClassVar

from ..errors import NpufitError


class StaleResult(NpufitError):
    """A recorded step result that does not match what this version's step writes."""


def _accepts(value: Any, hint: Any) -> bool:
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        return any(_accepts(value, h) for h in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if isinstance(value, bool):  # JSON true/false is only a bool, never a count
        return hint is bool
    if hint is float:  # JSON writes 3.0 as 3
        return isinstance(value, (int, float))
    return isinstance(value, hint)


@dataclass(frozen=True)
class StepResult:
    step: ClassVar[str]

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, d: Any, where: str = "") -> "StepResult":
        """The result recorded in `d` (every field present, nothing else); `where` says which record, for the error."""
        at = f"{where}: " if where else ""
        if not isinstance(d, dict):
            raise StaleResult(f"{at}step '{cls.step}': its recorded result is not an object")
        hints = typing.get_type_hints(cls)
        names = [f.name for f in fields(cls)]
        missing = [k for k in names if k not in d]
        unknown = [k for k in d if k not in names]
        if missing or unknown:
            what = "; ".join(
                p
                for p in (
                    f"missing key(s) {', '.join(map(repr, missing))}" if missing else "",
                    f"unknown key(s) {', '.join(map(repr, unknown))}" if unknown else "",
                )
                if p
            )
            raise StaleResult(f"{at}step '{cls.step}': recorded result has {what} (written by another npufit version?)")
        for k in names:
            if not _accepts(d[k], hints[k]):
                raise StaleResult(
                    f"{at}step '{cls.step}': recorded result key '{k}' has the wrong type "
                    f"({type(d[k]).__name__}, expected {hints[k]})"
                )
        return cls(**{k: d[k] for k in names})


@dataclass(frozen=True)
class TrainStepResult(StepResult):
    step: ClassVar[str] = "train"
    train_loss: float
    val_loss: float
    baseline_val_loss: float  # MSE of predicting the last observed value
    epochs: int
    parameters: int
    train_seconds: float


@dataclass(frozen=True)
class ExportStepResult(StepResult):
    step: ClassVar[str] = "export"
    nodes: int
    bytes: int


@dataclass(frozen=True)
class CheckStepResult(StepResult):
    step: ClassVar[str] = "check"
    coverage_nodes_pct: float
    coverage_macs_pct: float
    npu_partitions: int
    host_partitions: int
    boundaries: int
    fully_npu: bool
    failing: int
    measured_differing: int | None  # nodes where the compiler disagrees with the prediction; None: not measured


@dataclass(frozen=True)
class FixStepResult(StepResult):
    step: ClassVar[str] = "fix"
    coverage_before_pct: float
    coverage_after_pct: float
    rules_applied: int
    written: bool


@dataclass(frozen=True)
class SplitStepResult(StepResult):
    step: ClassVar[str] = "split"
    needed: bool  # False: the model goes on whole (all on the NPU, or the vendor runtime's CPU fallback runs the rest)
    stages: int
    npu_macs_pct: float
    split_s: float | None  # None when nothing was cut


@dataclass(frozen=True)
class QuantizeStepResult(StepResult):
    """QuantizeReport.summary(), field for field."""

    step: ClassVar[str] = "quantize"
    min_output_sqnr_db: float | str | None  # None: exact or not measured; "-inf": non-finite int8 values
    min_output_cosine: float | None  # None: no held-back samples, nothing measured
    calibration_samples: int | None
    holdout_samples: int | None
    max_clipped_fraction: float | None
    worst_layer: str | None


@dataclass(frozen=True)
class CompileStepResult(StepResult):
    step: ClassVar[str] = "compile"
    compiler: str
    compiler_version: str | None
    model_bytes: int
    wall_s: float  # the compiler's own measurement of its child process where it has one, else the pipeline's
    peak_rss_mb: float
    pipeline_wall_s: float
    pipeline_peak_rss_mb: float
    npu_nodes: int | None  # from the compiler's placement; None when it reports none
    placed_nodes: int | None  # nodes that run somewhere (folded ones left out)


@dataclass(frozen=True)
class BenchStepResult(StepResult):
    step: ClassVar[str] = "bench"
    runtime: str
    p50_ms: float
    p99_ms: float
    mean_ms: float
    throughput_ips: float | None
    iterations: int


@dataclass(frozen=True)
class ReportStepResult(StepResult):
    step: ClassVar[str] = "report"
    bytes: int


RESULT_TYPES: dict[str, type[StepResult]] = {
    c.step: c
    for c in (
        TrainStepResult,
        ExportStepResult,
        CheckStepResult,
        FixStepResult,
        SplitStepResult,
        QuantizeStepResult,
        CompileStepResult,
        BenchStepResult,
        ReportStepResult,
    )
}


def parse_result(step: str, status: str, d: Any, where: str = "") -> StepResult | None:
    """The typed result of a recorded cell: a step that ended `ok` has one, any other outcome records none."""
    if step not in RESULT_TYPES:
        raise StaleResult(f"{where + ': ' if where else ''}unknown step '{step}' in a recorded result")
    if status != "ok":
        if d:
            raise StaleResult(f"{where + ': ' if where else ''}step '{step}' ended {status} but records a result")
        return None
    return RESULT_TYPES[step].from_dict(d, where)

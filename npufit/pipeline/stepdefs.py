"""One record per pipeline step, in execution order: what a cell of it is for, the settings PIPELINE.yaml may give
it, the function that runs it, and the revision its recorded results carry. Everything else reads these records:
the schema (schema.py), the matrix (matrix.py), the runner and the CLI's --from/--only choices.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from ..vocab import (
    MEASURE_MODE,
    PIPELINE_SPLIT_MIN_NODES,
    PIPELINE_SPLIT_MODE,
    PIPELINE_SPLIT_MODES,
    QUANTIZE_METHOD,
    QUANTIZE_METHODS,
)
from . import steps
from .keys import Key, boolean, choice, inside_name, integer, mapping, measure, number, str_list
from .results import RESULT_TYPES

if TYPE_CHECKING:
    from .context import Outcome, StepContext
    from .results import StepResult


@dataclass(frozen=True)
class Step:
    name: str
    scope: str  # one cell per: "model", "target" (model x target), "runtime" (model x runtime), or "all" (one cell)
    run: Callable[[StepContext], Outcome]
    revision: int  # bumped when the step's outputs change meaning or format: results of older code are not reused
    settings: dict[str, Key] = field(default_factory=dict)  # steps.<name> in PIPELINE.yaml
    parallel: bool = True  # cells may run side by side on an executor (bench measures; report reads this run)

    @property
    def result(self) -> type[StepResult]:
        """The typed result its cells record (results.RESULT_TYPES: the record format the run report reads)."""
        return RESULT_TYPES[self.name]


STEPS: tuple[Step, ...] = (
    Step(
        "train",
        "model",
        steps.run_train,
        revision=3,
        settings={
            "epochs": Key(integer(1), 3, "passes over the training windows"),
            "batch_size": Key(integer(1), 64, "windows per optimiser step"),
            "lr": Key(number(1e-9), 3e-3, "Adam learning rate"),
            "seed": Key(integer(0), 0, "weight init and shuffling seed"),
            "max_windows": Key(integer(2), None, "use at most this many windows per split (fast test runs)"),
        },
    ),
    Step(
        "export",
        "model",
        steps.run_export,
        revision=1,
        settings={
            "opset": Key(integer(7), 11, "ONNX opset of the exported model (11: what the Hailo DFC officially takes)")
        },
    ),
    Step(
        "check",
        "target",
        steps.run_check,
        revision=3,
        settings={
            "measure": Key(
                measure,
                MEASURE_MODE,
                "whose placement the check reads: auto (the installed compiler where one runs here, else npufit's "
                "prediction), never (the prediction: check --predict), required, or a judge by name",
            )
        },
    ),
    Step(
        "fix",
        "target",
        steps.run_fix,
        revision=1,
        settings={
            "rules": Key(str_list, None, "only these rewrite rules (default: the target's rule set)"),
            "skip_rules": Key(str_list, None, "rewrite rules not to apply"),
            "allow_approx": Key(boolean, False, "also apply approximate rules (their error is reported)"),
        },
    ),
    Step(
        "split",
        "target",
        steps.run_split,
        revision=2,
        settings={  # not the library's defaults: vocab.py says why
            "mode": Key(
                choice(PIPELINE_SPLIT_MODES),
                PIPELINE_SPLIT_MODE,
                "prefix: largest NPU-runnable prefix; segments: every NPU region",
            ),
            "min_nodes": Key(
                integer(1), PIPELINE_SPLIT_MIN_NODES, "smallest NPU region that becomes its own stage (segments mode)"
            ),
            "max_npu_stages": Key(
                integer(1), None, "segments mode: keep only the N NPU regions with the most MACs (the rest on the host)"
            ),
            "always": Key(
                boolean, False, "split even for targets whose runtime falls back to its CPU by itself (RKNN, Ethos-U)"
            ),
            "min_npu_macs_pct": Key(
                number(0.0, 100.0),
                0.0,
                "reject the split (end the branch) when the NPU part would hold "
                "less than this share of the MACs: not worth a device round trip",
            ),
        },
    ),
    Step(
        "quantize",
        "target",
        steps.run_quantize,
        revision=3,
        settings={
            "method": Key(choice(QUANTIZE_METHODS), QUANTIZE_METHOD, "calibration method"),
            "per_channel": Key(boolean, False, "per-channel weight scales"),
            "samples": Key(integer(1), 64, "calibration windows, spread over the training data"),
            "holdout": Key(
                integer(0),
                None,
                "held-back windows (between the calibration ones) the int8 accuracy is measured "
                "on; default: all 256 the train step writes",
            ),
            "warn_sqnr_db": Key(
                number(), 30.0, "the step line warns when the worst output's SQNR vs float is below this"
            ),
            "min_sqnr_db": Key(
                number(), 20.0, "the step fails (its branch stops) when the worst output's SQNR is below this"
            ),
        },
    ),
    Step(
        "compile",
        "target",
        steps.run_compile,
        revision=3,
        settings={
            "compilers": Key(str_list, None, "only these compilers (default: the one for each target)"),
            "options": Key(mapping, None, "extra options passed to the compiler"),
        },
    ),
    Step(
        "bench",
        "runtime",
        steps.run_bench,
        revision=2,
        parallel=False,
        settings={
            "iterations": Key(integer(1), 100, "timed inferences per runtime"),
            "warmup": Key(integer(0), 10, "untimed inferences first"),
            "threads": Key(integer(1), None, "intra-op threads (default: the runtime's)"),
        },
    ),
    Step(
        "report",
        "all",
        steps.run_report,
        revision=2,
        parallel=False,
        settings={"output": Key(inside_name, "report.html", "file name of the HTML report inside the results folder")},
    ),
)
STEP_NAMES = tuple(s.name for s in STEPS)
BY_NAME = {s.name: s for s in STEPS}

"""A split plan (`npufit split` output folder) run end to end as a chain, through npufit.split's ChainRunner.

The timed call is one ChainRunner.run(feeds): every stage plus the hand-over between stages. The runner also
reports per-stage seconds, which the benchmark keeps per iteration and summarises as per-stage medians.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from .. import __version__
from ..errors import NpufitError
from ..split import load_plan
from ..split.chain import ChainRunner
from ..split.plan import PLAN_FILE
from .base import BOUNDARY_CHAIN, InputSpec, Runner, RuntimeUnavailable, onnx_input_specs


def is_plan_dir(path: str | Path) -> bool:
    p = Path(path)
    return p.is_dir() and (p / PLAN_FILE).is_file()


def plan_files(plan_dir: str | Path) -> list[Path]:
    """plan.json and every stage file it names, in plan order (what a result's sha256 covers)."""
    plan = load_plan(plan_dir)
    return [Path(plan_dir) / PLAN_FILE] + [Path(plan_dir) / s.file for s in plan.stages]


class ChainBenchRunner(Runner):
    name = "chain"
    title = "split plan run as a chain (npufit.split.chain.ChainRunner)"
    boundary = BOUNDARY_CHAIN
    device_kind = "mixed"
    formats = ("/",)  # a folder holding plan.json

    def check_format(self) -> None:
        if not is_plan_dir(self.model):
            raise RuntimeUnavailable("the chain runtime takes a split-plan folder (one with plan.json)")

    def version(self) -> str | None:
        return __version__  # the chain runner ships with npufit

    def input_specs(self) -> list[InputSpec]:
        """The chain's inputs (the original model's), typed from the stage models that read them."""
        plan = load_plan(self.model)
        by_name: dict[str, InputSpec] = {}
        for st in plan.stages:
            by_name.update({s.name: s for s in onnx_input_specs(Path(self.model) / st.file)})
        missing = [n for n in plan.input_names if n not in by_name]
        if missing:
            raise NpufitError(f"{self.model}: no stage model reads chain input(s) {', '.join(missing)}")
        return [by_name[n] for n in plan.input_names]

    def _activate(self) -> None:
        # the deployment setting: ORT's full graph optimiser, the thread count the user asked for (0 = ORT's)
        self.chain = ChainRunner(
            str(self.model), npu_runtime=self.options.get("npu_runtime"), threads=int(self.threads or 0), optimized=True
        )
        plan = self.chain.plan
        self.details.update(
            {
                "stages": [
                    {
                        "name": s.name,
                        "device": s.device,
                        "file": s.file,
                        "ran_on": self.chain.device_of_stage.get(s.name, "?"),
                    }
                    for s in plan.stages
                ],
                "target": plan.target.get("name", ""),
                "npu_runtime": self.options.get("npu_runtime") or "auto",
                "host_runtime": "onnxruntime-cpu (ORT_ENABLE_ALL)",
            }
        )
        if self.chain.notes:
            self.details["notes"] = list(self.chain.notes)

    def _deactivate(self) -> None:
        close = getattr(self.chain, "close", None)
        if callable(close):
            close()
        self.chain = None

    def prepare(self, feeds: Mapping[str, np.ndarray]) -> Callable[[], Any]:
        run, data = self.chain.run, dict(feeds)
        # returns (outputs, [(stage, seconds), ...]); the bench keeps the stage list outside the clock
        return lambda: run(data)

    returns_stage_times = True

    def infer(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        outputs, _ = self.chain.run(dict(feeds))
        return dict(outputs)

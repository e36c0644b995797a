"""A split plan (`npufit split` output folder) run end to end as a chain, through npufit.split's ChainRunner.

The timed call is one ChainRunner.run(feeds): every stage plus the hand-over between stages. The runner also
reports per-stage seconds, which the benchmark keeps per iteration and summarises as per-stage medians.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from ..errors import NpufitError
from .base import BOUNDARY_CHAIN, InputSpec, Runner, RuntimeUnavailable, first_line, onnx_input_specs

PLAN_FILE = "plan.json"
PLAN_SCHEMA = "npufit.plan/1"


def is_plan_dir(path: str | Path) -> bool:
    p = Path(path)
    return p.is_dir() and (p / PLAN_FILE).is_file()


def read_plan_json(plan_dir: str | Path) -> dict:
    p = Path(plan_dir) / PLAN_FILE
    try:
        plan = json.loads(p.read_text())
    except (OSError, ValueError) as e:
        raise NpufitError(f"{p}: not a readable split plan ({first_line(e)})") from None
    if not isinstance(plan, dict) or not str(plan.get("schema", "")).startswith("npufit.plan/"):
        raise NpufitError(f"{p}: not a split plan (expected schema '{PLAN_SCHEMA}')")
    if not plan.get("stages"):
        raise NpufitError(f"{p}: the plan has no stages")
    return plan


def plan_files(plan_dir: str | Path) -> list[Path]:
    """plan.json and every stage file it names, in plan order (what a result's sha256 covers)."""
    plan = read_plan_json(plan_dir)
    return [Path(plan_dir) / PLAN_FILE] + [Path(plan_dir) / s["file"] for s in plan["stages"] if s.get("file")]


def chain_version() -> str | None:
    try:
        from ..split import chain  # noqa: F401
    except ImportError:
        return None
    from .. import __version__

    return __version__


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
        return chain_version()

    def input_specs(self) -> list[InputSpec]:
        """Chain inputs: the tensors stages read that no earlier stage produces (or plan['inputs'] when given)."""
        plan = read_plan_json(self.model)
        produced: set[str] = set()
        wanted: list[str] = []
        by_name: dict[str, InputSpec] = {}
        for st in plan["stages"]:
            f = Path(self.model) / st.get("file", "")
            if f.suffix.lower() == ".onnx" and f.is_file():
                by_name.update({s.name: s for s in onnx_input_specs(f)})
            for t in st.get("inputs", []):
                if t not in produced and t not in wanted:
                    wanted.append(t)
            produced.update(st.get("outputs", []))
        names = [i["name"] if isinstance(i, dict) else i for i in plan.get("inputs", [])] or wanted
        missing = [n for n in names if n not in by_name]
        if missing:
            raise NpufitError(f"{self.model}: no stage model declares the shape of chain input(s) {', '.join(missing)}")
        return [by_name[n] for n in names]

    def _activate(self) -> None:
        try:
            from ..split.chain import ChainRunner
        except ImportError:
            raise RuntimeUnavailable("npufit.split.chain is not available in this npufit build") from None
        plan = read_plan_json(self.model)
        self.chain = ChainRunner(str(self.model), npu_runtime=self.options.get("npu_runtime"))
        self.details.update({
            "stages": [{"name": s.get("name", f"stage{i}"), "device": s.get("device", "?"), "file": s.get("file")}
                       for i, s in enumerate(plan["stages"])],
            "npu_runtime": self.options.get("npu_runtime") or "default of ChainRunner (no NPU runtime given)",
        })

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

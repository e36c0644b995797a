"""split: cut a model into NPU and host stages (plan.json + one ONNX per stage), prove the chain
equals the original, and run it. `npufit.split(...)` is `npufit split`, `npufit.run(...)` is `npufit run`."""

from __future__ import annotations

from .plan import SCHEMA, PlanStage, SplitPlan, load_plan
from .runner import run
from .splitter import split

__all__ = ["split", "run", "load_plan", "SplitPlan", "PlanStage", "SCHEMA"]

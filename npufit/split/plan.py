"""plan.json (schema "npufit.plan/1"): the stages of a split model, in execution order, and how to run them."""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import NpufitError

SCHEMA = "npufit.plan/1"
PLAN_FILE = "plan.json"


@dataclass
class PlanStage:
    name: str
    file: str  # relative to the plan folder
    device: str  # "npu" | "host"
    inputs: list[dict]  # {"name", "from": "input" | stage name, "shape", "dtype", "bytes"}
    outputs: list[dict]  # {"name", "to": [stage names and/or "output"], "shape", "dtype", "bytes"}
    node_count: int = 0
    macs: int = 0
    start_node_names: list[str] = field(default_factory=list)  # NPU stages: where a vendor parser starts
    end_node_names: list[str] = field(default_factory=list)
    vendor: dict[str, Any] = field(default_factory=dict)  # e.g. {"hailo": {"parse_stage": "...", "parse_original": "..."}}
    files: dict[str, Any] = field(default_factory=dict)  # initializers, external data file, helper nodes

    @property
    def input_names(self) -> list[str]:
        return [i["name"] for i in self.inputs]

    @property
    def output_names(self) -> list[str]:
        return [o["name"] for o in self.outputs]

    def to_dict(self) -> dict:
        d = {"name": self.name, "file": self.file, "device": self.device, "node_count": self.node_count, "macs": self.macs,
             "inputs": self.inputs, "outputs": self.outputs}
        if self.device == "npu":
            d["start_node_names"], d["end_node_names"] = self.start_node_names, self.end_node_names
        if self.vendor:
            d["vendor"] = self.vendor
        d["files"] = self.files
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "PlanStage":
        return cls(d["name"], d["file"], d["device"], list(d["inputs"]), list(d["outputs"]), d.get("node_count", 0),
                   d.get("macs", 0), list(d.get("start_node_names", [])), list(d.get("end_node_names", [])),
                   dict(d.get("vendor", {})), dict(d.get("files", {})))


@dataclass
class SplitPlan:
    source: dict  # {"path", "file", "sha256", "inputs", "outputs"}
    target: dict  # {"name", "title"}
    mode: str
    options: dict
    stages: list[PlanStage]
    outputs: list[dict]  # original model outputs: {"name", "from": stage name | "input"}
    boundaries: list[dict]
    cost: dict
    verification: dict | None = None
    warnings: list[str] = field(default_factory=list)
    npufit_version: str = ""

    @property
    def input_names(self) -> list[str]:
        return [i["name"] for i in self.source.get("inputs", [])]

    @property
    def output_names(self) -> list[str]:
        return [o["name"] for o in self.outputs]

    def stage(self, name: str) -> PlanStage:
        for s in self.stages:
            if s.name == name:
                return s
        raise KeyError(name)

    def to_dict(self) -> dict:
        from .. import __version__

        return {"schema": SCHEMA, "npufit_version": self.npufit_version or __version__, "source": self.source,
                "target": self.target, "mode": self.mode, "options": self.options,
                "stages": [s.to_dict() for s in self.stages], "outputs": self.outputs, "boundaries": self.boundaries,
                "cost": self.cost, "verification": self.verification, "warnings": self.warnings}

    @classmethod
    def from_dict(cls, d: dict) -> "SplitPlan":
        if d.get("schema") != SCHEMA:
            raise NpufitError(f"plan.json has schema {d.get('schema')!r}, this npufit reads {SCHEMA!r}")
        try:
            return cls(d["source"], d["target"], d["mode"], d.get("options", {}), [PlanStage.from_dict(s) for s in d["stages"]],
                       d["outputs"], d.get("boundaries", []), d.get("cost", {}), d.get("verification"), d.get("warnings", []),
                       d.get("npufit_version", ""))
        except (KeyError, TypeError) as e:
            raise NpufitError(f"plan.json is incomplete or malformed (missing {e})") from None


def load_plan(plan_dir: str | os.PathLike) -> SplitPlan:
    """Read PLAN_DIR/plan.json (or a plan.json path) and check that every stage file is there."""
    p = Path(plan_dir)
    f = p if p.is_file() else p / PLAN_FILE
    if not f.exists():
        raise NpufitError(f"{p}: no {PLAN_FILE} here (create one with 'npufit split MODEL --output-dir {p}')")
    try:
        data = json.loads(f.read_text("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise NpufitError(f"{f}: not valid JSON ({e})") from None
    plan = SplitPlan.from_dict(data)
    for s in plan.stages:
        sp = (f.parent / s.file).resolve()
        if f.parent.resolve() not in sp.parents:
            raise NpufitError(f"{f}: stage file '{s.file}' points outside the plan folder (refused)")
        if not sp.exists():
            raise NpufitError(f"{f}: stage file '{s.file}' is missing")
    return plan


def sha256_file(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def legacy_plan_entries(folder: Path) -> list[str] | None:
    """What a plan folder written before ownership markers holds: plan.json and the stage files it names."""
    f = folder / PLAN_FILE
    try:
        if not f.is_file() or f.stat().st_size > 16 << 20:
            return None
        stages = json.loads(f.read_text("utf-8")).get("stages", [])
        files = [s["file"] for s in stages if isinstance(s, dict) and isinstance(s.get("file"), str)]
    except (OSError, ValueError, AttributeError):
        return None
    return [PLAN_FILE] + [n for f_ in files if "/" not in f_ for n in (f_, f_ + ".data")]

"""plan.json (schema "npufit.plan/1"): the stages of a split model, in execution order, and how to run them."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import __version__
from ..errors import BadModelError, NpufitError
from ..graph.onnx_prepare import read_onnx
from ..util.readers import confined, read_json, require_regular_file
from ..util.readers import sha256_file as _sha256

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
    vendor: dict[str, Any] = field(
        default_factory=dict
    )  # e.g. {"hailo": {"parse_stage": "...", "parse_original": "..."}}
    files: dict[str, Any] = field(default_factory=dict)  # initializers, external data file, helper nodes

    @property
    def input_names(self) -> list[str]:
        return [i["name"] for i in self.inputs]

    @property
    def output_names(self) -> list[str]:
        return [o["name"] for o in self.outputs]

    def to_dict(self) -> dict:
        d = {
            "name": self.name,
            "file": self.file,
            "device": self.device,
            "node_count": self.node_count,
            "macs": self.macs,
            "inputs": self.inputs,
            "outputs": self.outputs,
        }
        if self.device == "npu":
            d["start_node_names"], d["end_node_names"] = self.start_node_names, self.end_node_names
        if self.vendor:
            d["vendor"] = self.vendor
        d["files"] = self.files
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "PlanStage":
        return cls(
            d["name"],
            d["file"],
            d["device"],
            list(d["inputs"]),
            list(d["outputs"]),
            d.get("node_count", 0),
            d.get("macs", 0),
            list(d.get("start_node_names", [])),
            list(d.get("end_node_names", [])),
            dict(d.get("vendor", {})),
            dict(d.get("files", {})),
        )


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
        return {
            "schema": SCHEMA,
            "npufit_version": self.npufit_version or __version__,
            "source": self.source,
            "target": self.target,
            "mode": self.mode,
            "options": self.options,
            "stages": [s.to_dict() for s in self.stages],
            "outputs": self.outputs,
            "boundaries": self.boundaries,
            "cost": self.cost,
            "verification": self.verification,
            "warnings": self.warnings,
        }

    @classmethod
    def from_dict(cls, d: dict) -> "SplitPlan":
        validate_plan(d)
        return cls(
            d["source"],
            d["target"],
            d["mode"],
            d.get("options", {}),
            [PlanStage.from_dict(s) for s in d["stages"]],
            d["outputs"],
            d.get("boundaries", []),
            d.get("cost", {}),
            d.get("verification"),
            d.get("warnings", []),
            d.get("npufit_version", ""),
        )


# -- validation: a plan.json is read back from disk, where anyone may have edited it -----------------------------
def _bad(where: str, what: str) -> NpufitError:
    return NpufitError(f"plan.json: {where}: expected {what}")


def _want(d: dict, key: str, types, where: str, what: str, required: bool = True):
    if key not in d:
        if required:
            raise NpufitError(f"plan.json: {where}: missing '{key}'")
        return None
    v = d[key]
    if (
        not isinstance(v, types)
        or isinstance(v, bool)
        and bool not in (types if isinstance(types, tuple) else (types,))
    ):
        raise _bad(f"{where}.{key}", what)
    return v


def _names(v: Any, where: str) -> list[str]:
    if not isinstance(v, list) or not all(isinstance(x, str) and x for x in v):
        raise _bad(where, "a list of names")
    return v


def _tensors(v: Any, where: str, link: str) -> list[dict]:
    if not isinstance(v, list):
        raise _bad(where, "a list of tensors")
    for i, t in enumerate(v):
        w = f"{where}[{i}]"
        if not isinstance(t, dict):
            raise _bad(w, "an object")
        if not isinstance(t.get("name"), str) or not t["name"]:
            raise _bad(f"{w}.name", "a tensor name")
        if link in t and not isinstance(t[link], (str, list)):
            raise _bad(f"{w}.{link}", "a stage name or a list of them")
        shape = t.get("shape")
        if shape is not None and not (
            isinstance(shape, list)
            and all(x is None or isinstance(x, str) or isinstance(x, int) and not isinstance(x, bool) for x in shape)
        ):
            raise _bad(f"{w}.shape", "a list of dimensions")
    return v


def validate_plan(d: Any) -> None:
    """Every field npufit reads from a plan, its type, and that the stages feed each other in order; one line
    naming the field otherwise (never a KeyError later, in run, bench or compile)."""
    if not isinstance(d, dict):
        raise NpufitError("plan.json: expected a JSON object at the top level")
    if d.get("schema") != SCHEMA:
        raise NpufitError(f"plan.json has schema {str(d.get('schema'))[:80]!r}, this npufit reads {SCHEMA!r}")
    src = _want(d, "source", dict, "plan", "an object")
    _tensors(src.get("inputs", []), "source.inputs", "from")
    tgt = _want(d, "target", dict, "plan", "an object")
    _want(tgt, "name", str, "target", "a target name")
    _want(d, "mode", str, "plan", "a split mode")
    for key, types, what in (
        ("options", dict, "an object"),
        ("boundaries", list, "a list"),
        ("cost", dict, "an object"),
        ("verification", (dict, type(None)), "an object or null"),
        ("warnings", list, "a list"),
        ("npufit_version", str, "a version string"),
    ):
        _want(d, key, types, "plan", what, required=False)
    stages = _want(d, "stages", list, "plan", "a list of stages")
    if not stages:
        raise NpufitError("plan.json: plan.stages: the plan has no stage")
    available = {t["name"] for t in src.get("inputs", [])}
    seen: set[str] = set()
    for i, st in enumerate(stages):
        w = f"stages[{i}]"
        if not isinstance(st, dict):
            raise _bad(w, "an object")
        name = _want(st, "name", str, w, "a stage name")
        if not name or name in seen or name in ("input", "output"):
            raise _bad(f"{w}.name", "a unique stage name")
        seen.add(name)
        _want(st, "file", str, w, "a file name inside the plan folder")
        if st.get("device") not in ("npu", "host"):
            raise _bad(f"{w}.device", "'npu' or 'host'")
        for key in ("node_count", "macs"):
            v = _want(st, key, int, w, "an integer >= 0", required=False)
            if v is not None and v < 0:
                raise _bad(f"{w}.{key}", "an integer >= 0")
        for key in ("start_node_names", "end_node_names"):
            if key in st:
                _names(st[key], f"{w}.{key}")
        for key in ("vendor", "files"):
            _want(st, key, dict, w, "an object", required=False)
        ins = _tensors(_want(st, "inputs", list, w, "a list of tensors"), f"{w}.inputs", "from")
        outs = _tensors(_want(st, "outputs", list, w, "a list of tensors"), f"{w}.outputs", "to")
        unfed = [t["name"] for t in ins if t["name"] not in available]
        if unfed:
            raise NpufitError(
                f"plan.json: {w} ({name}) reads {unfed[0][:80]!r}, which no earlier stage or model input provides"
            )
        available.update(t["name"] for t in outs)
    outputs = _tensors(_want(d, "outputs", list, "plan", "a list of outputs"), "outputs", "from")
    missing = [t["name"] for t in outputs if t["name"] not in available]
    if missing:
        raise NpufitError(f"plan.json: output {missing[0][:80]!r} is produced by no stage")


def load_plan(plan_dir: str | os.PathLike) -> SplitPlan:
    """Read PLAN_DIR/plan.json (or a plan.json path): schema-checked, within the JSON budgets, and every stage
    file a regular file inside the plan folder."""
    p = Path(plan_dir)
    f = p if p.is_file() or p.name == PLAN_FILE else p / PLAN_FILE
    if not os.path.lexists(f):
        raise NpufitError(f"{p}: no {PLAN_FILE} here (create one with 'npufit split MODEL --output-dir {p}')")
    plan = SplitPlan.from_dict(read_json(f, "plan.json"))
    for s in plan.stages:
        sp = confined(f.parent, s.file, f"{f}: stage file")
        require_regular_file(sp, "stage model")
        for key, rel in s.files.items():  # helper files the stage names (external data, initializers)
            if isinstance(rel, str):
                confined(f.parent, rel, f"{f}: stage {s.name} file '{key}'")
        if s.file.lower().endswith(".onnx"):
            _stage_readable(sp)
    return plan


def _stage_readable(stage: Path) -> None:
    """A stage model passes the front door before anything runs or compiles it: valid, and its external data
    inside its folder (the plan's), there and long enough: a tampered stage never reads a file outside the plan."""
    try:
        read_onnx(stage)
    except BadModelError as e:
        raise BadModelError(f"{stage.parent.name}/{stage.name}: {e.message}") from None


def sha256_file(path: str | os.PathLike) -> str:
    return _sha256(path)


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

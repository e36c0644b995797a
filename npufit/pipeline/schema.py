"""The pipeline YAML: parsed with line numbers kept, validated against a declared schema, frozen into a config.

Every key the file may hold is declared once (type, default, one-line doc): a step's settings in its record
(stepdefs.py), the others below; docs/pipeline.md is the same table in prose. An error names the file, line and
column of the offending key and says what was expected, e.g.
`timeseries.yaml:14:7: steps.train.epochs: expected an integer >= 1, got 'three'`.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..errors import NpufitError
from ..targets import available_targets, get_profile
from ..util.readers import confined_file, read_text
from ..util.shapes import parse_input_shapes
from . import keys
from .keys import Key
from .stepdefs import BY_NAME, STEP_NAMES, STEPS

ZOO_ARCHS = ("gru", "lstm", "bilstm", "tcn")
RUNTIMES = ("ort-cpu", "ort-cuda", "ort-trt", "tensorrt", "openvino", "hailort")
# a run is models x targets x runtimes step folders: bounds far above a real sweep, below a machine-filling one
MAX_MODELS, MAX_TARGETS, MAX_RUNTIMES = 100, 32, len(RUNTIMES)


DATA = {
    "csv": Key(keys.text, None, "CSV file (relative to the YAML); omit for the bundled synthetic sensor set"),
    "columns": Key(keys.str_list, None, "CSV columns to use as features (default: every numeric column)"),
    "target": Key(keys.text, None, "column to forecast (default: the first feature)"),
    "length": Key(keys.integer(16), 4000, "synthetic: number of time steps"),
    "features": Key(keys.integer(1), 4, "synthetic: number of sensors"),
    "seed": Key(keys.integer(0), 0, "synthetic: generator seed"),
    "noise": Key(keys.number(0.0), 0.05, "synthetic: sensor noise level"),
    "seq_len": Key(keys.integer(2), 32, "window length fed to the model"),
    "horizon": Key(keys.integer(1), 1, "steps ahead to forecast"),
    "val_fraction": Key(keys.number(0.01, 0.99), 0.2, "share of the series (its end) held back for validation"),
    "stride": Key(keys.integer(1), 1, "step between consecutive windows"),
}
MODEL = {
    "name": Key(keys.name, None, "unique model name (used in folder names)", required=True),
    "arch": Key(keys.choice(ZOO_ARCHS), None, "zoo architecture to train (gru, lstm, bilstm, tcn)"),
    "onnx": Key(keys.text, None, "an existing ONNX file instead of a zoo model (train/export then just copy it)"),
    "hidden": Key(keys.integer(1), 32, "hidden size / channels"),
    "layers": Key(keys.integer(1), 1, "stacked RNN layers"),
    "input_shapes": Key(
        keys.input_shapes,
        None,
        "shapes the model runs at, e.g. {images: [1, 3, 640, 640]} or 'images=1,3,640,640': written into the exported "
        "model every step reads (a dynamic batch alone is pinned to 1; other unknown dims must be given)",
    ),
    **{s.name: Key(keys.mapping, None, f"per-model overrides of steps.{s.name}") for s in STEPS if s.scope != "all"},
}
TOP = {
    "version": Key(
        lambda v: None if v == 1 else "expected 1 (the only schema version)", 1, "schema version", required=True
    ),
    "name": Key(keys.name, "pipeline", "pipeline name"),
    "output_dir": Key(keys.text, None, "results folder, relative to the YAML (default: results/<name>)"),
    "data": Key(keys.mapping, {}, "the dataset (see data keys)"),
    "models": Key(
        lambda v: (
            (None if len(v) <= MAX_MODELS else f"expected at most {MAX_MODELS} models, got {len(v)}")
            if isinstance(v, list) and v
            else "expected a non-empty list of models"
        ),
        None,
        "the models (see model keys)",
        required=True,
    ),
    "targets": Key(
        keys.bounded(keys.str_list, MAX_TARGETS, "targets"), [], "NPU targets for check/fix/split/quantize/compile"
    ),
    "runtimes": Key(
        keys.bounded(lambda v: keys.str_list(v) or keys.each_in(v, RUNTIMES), MAX_RUNTIMES, "runtimes"),
        ["ort-cpu"],
        "runtimes for bench",
    ),
    "steps": Key(keys.mapping, None, "the steps to run, each with its settings (order is fixed)", required=True),
}


# -- YAML with marks ---------------------------------------------------------------------------
# A pipeline file is a page of settings; these bounds are far above any real one and stop the YAML bombs: an
# alias expands its anchor once more each time it is used (a few lines reach gigabytes), deep nesting
# exhausts the stack.
YAML_MAX_ALIASES = 100
YAML_MAX_DEPTH = 32
YAML_MAX_VALUES = 100_000  # keys, items and scalars after aliases are expanded


class _Limit(Exception):
    def __init__(self, mark: yaml.Mark | None, msg: str):
        self.mark, self.msg = mark, msg


class _Loader(yaml.SafeLoader):
    """SafeLoader that turns the composed node tree into plain values and records each path's mark."""

    def __init__(self, stream):
        super().__init__(stream)
        self._aliases = self._depth = self._values = 0

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > YAML_MAX_ALIASES:
                raise _Limit(self.peek_event().start_mark, f"has more than {YAML_MAX_ALIASES} aliases (*name)")
        self._depth += 1
        try:
            if self._depth > YAML_MAX_DEPTH:
                raise _Limit(self.peek_event().start_mark, f"nests more than {YAML_MAX_DEPTH} levels deep")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def to_python(self, node: yaml.Node, path: tuple, marks: dict[tuple, yaml.Mark]) -> Any:
        self._values += 1
        if self._values > YAML_MAX_VALUES or len(path) > YAML_MAX_DEPTH:
            raise _Limit(node.start_mark, f"expands to more than {YAML_MAX_VALUES} values (aliases of aliases?)")
        marks.setdefault(path, node.start_mark)  # a key's own mark (set by the caller) wins over its value's
        if isinstance(node, yaml.MappingNode):
            self.flatten_mapping(node)  # resolves '<<' merge keys
            out: dict[str, Any] = {}
            for k_node, v_node in node.value:
                key = self.construct_object(k_node, deep=True)
                if not isinstance(key, str):
                    raise _err_at(
                        k_node.start_mark, ".".join(map(str, path)) or "top level", f"keys must be strings, got {key!r}"
                    )
                if key in out:
                    raise _err_at(k_node.start_mark, _dotted(path + (key,)), "duplicate key")
                marks[path + (key,)] = k_node.start_mark
                marks[path + (key, "")] = v_node.start_mark  # where the value itself starts
                out[key] = self.to_python(v_node, path + (key,), marks)
            return out
        if isinstance(node, yaml.SequenceNode):
            return [self.to_python(n, path + (i,), marks) for i, n in enumerate(node.value)]
        return self.construct_object(node, deep=True)


def _dotted(path: tuple) -> str:
    out = ""
    for p in path:
        if p == "":
            continue
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "top level"


def _err_at(mark: yaml.Mark | None, where: str, msg: str, file: str = "") -> NpufitError:
    loc = f"{file or (mark.name if mark else '')}"
    if mark is not None:
        loc += f":{mark.line + 1}:{mark.column + 1}"
    return NpufitError(f"{loc}: {where}: {msg}")


def parse_yaml(text: str, name: str = "<pipeline>") -> tuple[Any, dict[tuple, yaml.Mark]]:
    marks: dict[tuple, yaml.Mark] = {}
    try:
        loader = _Loader(text)
        loader.name = name
        try:
            node = loader.get_single_node()
            data = None if node is None else loader.to_python(node, (), marks)
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"{name}:{mark.line + 1}:{mark.column + 1}" if mark else name
        raise NpufitError(f"{where}: invalid YAML: {e.problem or e.context}") from None
    except _Limit as e:
        where = f"{name}:{e.mark.line + 1}:{e.mark.column + 1}" if e.mark else name
        raise NpufitError(f"{where}: the YAML {e.msg}; npufit reads pipeline files within these bounds") from None
    except yaml.YAMLError as e:  # errors without a mark (e.g. a bad stream)
        raise NpufitError(f"{name}: invalid YAML: {str(e).splitlines()[0][:200]}") from None
    return data, marks


# -- validation ----------------------------------------------------------------------------------
class _Validator:
    def __init__(self, marks: dict[tuple, yaml.Mark], file: str):
        self.marks, self.file = marks, file

    def fail(self, path: tuple, msg: str, value_mark: bool = False) -> NpufitError:
        mark = self.marks.get(path + ("",)) if value_mark else None
        mark = mark or self.marks.get(path)
        return _err_at(mark, _dotted(path), msg, self.file)

    def inside(self, folder: Path, rel: str, path: tuple, what: str) -> Path:
        """A file the YAML names: inside its folder (no absolute path, no '..' or link leading out: a pipeline
        copies its models into the results) and a regular file there now, before any step runs."""
        try:
            return confined_file(folder.resolve(), rel, what)
        except NpufitError as e:
            raise self.fail(path, e.message, value_mark=True) from None

    def section(self, value: Any, keys: dict[str, Key], path: tuple) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(path, "expected a mapping", value_mark=True)
        for k in value:
            if k not in keys:
                close = difflib.get_close_matches(k, list(keys), n=1)
                hint = f" (did you mean '{close[0]}'?)" if close else f" (allowed: {', '.join(keys) or 'none'})"
                raise self.fail(path + (k,), f"unknown key '{k}'{hint}")
        out = {}
        for k, spec in keys.items():
            if k not in value or value[k] is None:
                if spec.required:
                    raise self.fail(path, f"missing required key '{k}' ({spec.doc})")
                out[k] = spec.default
                continue
            err = spec.check(value[k])
            if err:
                raise self.fail(path + (k,), f"{err}, got {value[k]!r}", value_mark=True)
            out[k] = value[k]
        return out


@dataclass
class ModelSpec:
    name: str
    arch: str | None  # zoo architecture, or None for an existing ONNX file
    onnx: Path | None
    hidden: int
    layers: int
    overrides: dict[str, dict[str, Any]] = field(default_factory=dict)
    input_shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)  # pinned in the exported model

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "arch": self.arch,
            "onnx": str(self.onnx) if self.onnx else None,
            "hidden": self.hidden,
            "layers": self.layers,
            "overrides": self.overrides,
            "input_shapes": {k: list(v) for k, v in self.input_shapes.items()},
        }


@dataclass
class PipelineConfig:
    path: Path
    name: str
    output_dir: Path
    data: dict[str, Any]
    models: list[ModelSpec]
    targets: list[str]
    runtimes: list[str]
    steps: dict[str, dict[str, Any]]  # enabled steps, in execution order, with validated settings

    def __repr__(self) -> str:
        return (
            f"<PipelineConfig {self.name}: {len(self.models)} models x {len(self.targets)} targets, "
            f"steps {', '.join(self.steps)}>"
        )

    def settings(self, step: str, model: ModelSpec | None = None) -> dict[str, Any]:
        """The step's settings with the model's overrides applied."""
        s = dict(self.steps.get(step, {}))
        if model is not None:
            s.update(model.overrides.get(step, {}))
        return s

    def model(self, name: str) -> ModelSpec:
        return next(m for m in self.models if m.name == name)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": "npufit.pipeline/1",
            "path": str(self.path),
            "name": self.name,
            "output_dir": str(self.output_dir),
            "data": self.data,
            "models": [m.to_dict() for m in self.models],
            "targets": self.targets,
            "runtimes": self.runtimes,
            "steps": self.steps,
        }


def load_config(path: str | os.PathLike, output_dir: str | os.PathLike | None = None) -> PipelineConfig:
    """Read and validate PIPELINE.yaml; raise NpufitError('file:line:col: where: what') on any problem."""
    p = Path(path)
    if not os.path.lexists(p):
        raise NpufitError(f"{p}: no such pipeline file")
    text = read_text(p, "pipeline file")
    data, marks = parse_yaml(text, str(p))
    v = _Validator(marks, str(p))
    if not isinstance(data, dict):
        raise NpufitError(f"{p}:1:1: top level: expected a mapping with version, models and steps")
    top = v.section(data, TOP, ())
    dat = v.section(top["data"], DATA, ("data",))
    if dat["csv"] is None and dat["columns"] is not None:
        raise v.fail(("data", "columns"), "only applies with data.csv")
    if dat["csv"] is not None:
        v.inside(p.parent, dat["csv"], ("data", "csv"), "CSV file")
    steps: dict[str, dict[str, Any]] = {}
    for s in top["steps"]:
        if s not in BY_NAME:
            close = difflib.get_close_matches(s, STEP_NAMES, n=1)
            raise v.fail(
                ("steps", s),
                f"unknown step '{s}'"
                + (f" (did you mean '{close[0]}'?)" if close else f" (steps: {', '.join(STEP_NAMES)})"),
            )
    for s in STEP_NAMES:
        if s in top["steps"]:
            steps[s] = v.section(top["steps"][s] or {}, BY_NAME[s].settings, ("steps", s))
    models, seen = [], set()
    for i, m in enumerate(top["models"]):
        ms = v.section(m, MODEL, ("models", i))
        if ms["name"] in seen:
            raise v.fail(("models", i, "name"), f"duplicate model name '{ms['name']}'", value_mark=True)
        seen.add(ms["name"])
        if (ms["arch"] is None) == (ms["onnx"] is None):
            raise v.fail(
                ("models", i), "give exactly one of 'arch' (a zoo model to train) or 'onnx' (an existing file)"
            )
        overrides = {}
        for s in STEP_NAMES:
            if ms.get(s) is not None:
                if s not in steps:
                    raise v.fail(("models", i, s), f"overrides step '{s}', which is not in steps")
                overrides[s] = v.section(ms[s], BY_NAME[s].settings, ("models", i, s))
                overrides[s] = {k: val for k, val in overrides[s].items() if k in ms[s]}  # only what the model sets
        onnx = v.inside(p.parent, ms["onnx"], ("models", i, "onnx"), "ONNX model") if ms["onnx"] else None
        shapes = parse_input_shapes(ms["input_shapes"])  # checked by keys.input_shapes above
        models.append(ModelSpec(ms["name"], ms["arch"], onnx, ms["hidden"], ms["layers"], overrides, shapes))
    _check_targets(top["targets"], v)
    out = Path(output_dir) if output_dir else p.parent / (top["output_dir"] or f"results/{top['name']}")
    return PipelineConfig(
        p.resolve(), top["name"], out.resolve(), dat, models, list(top["targets"]), list(top["runtimes"]), steps
    )


def _check_targets(targets: list[str], v: _Validator) -> None:

    for i, t in enumerate(targets):
        try:
            get_profile(t)  # a name or an alias, as `npufit check --target` takes it
        except NpufitError:
            close = difflib.get_close_matches(t.lower(), available_targets(), n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else f" (known: {', '.join(available_targets())})"
            raise v.fail(("targets", i), f"unknown target '{t}'{hint}")

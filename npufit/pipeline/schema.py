"""The pipeline YAML: parsed with line numbers kept, validated against a declared schema, frozen into a config.

Every key the file may hold is declared once in SCHEMA below (type, default, one-line doc); docs/pipeline.md
is the same table in prose. An error names the file, line and column of the offending key and says what was
expected, e.g. `timeseries.yaml:14:7: steps.train.epochs: expected an integer >= 1, got 'three'`.
"""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import yaml

from ..errors import NpufitError
from ..util.readers import confined_file, read_text

STEPS = ("train", "export", "check", "fix", "split", "quantize", "compile", "bench", "report")
ZOO_ARCHS = ("gru", "lstm", "bilstm", "tcn")
RUNTIMES = ("ort-cpu", "ort-cuda", "ort-trt", "tensorrt", "openvino", "hailort")
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")  # used in folder names
# a run is models x targets x runtimes step folders: bounds far above a real sweep, below a machine-filling one
MAX_MODELS, MAX_TARGETS, MAX_RUNTIMES = 100, 32, len(RUNTIMES)


@dataclass(frozen=True)
class Key:
    """One allowed key: a checker (value -> error text or None), a default and the doc line."""

    check: Callable[[Any], str | None]
    default: Any = None
    doc: str = ""
    required: bool = False


def _int(lo: int = 0) -> Callable[[Any], str | None]:
    return lambda v: (
        None if isinstance(v, int) and not isinstance(v, bool) and v >= lo else f"expected an integer >= {lo}"
    )


def _num(lo: float = 0.0, hi: float | None = None) -> Callable[[Any], str | None]:
    def chk(v):
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) and v >= lo and (hi is None or v <= hi)
        return None if ok else f"expected a number in [{lo}, {hi if hi is not None else 'inf'}]"

    return chk


def _str(v) -> str | None:
    return None if isinstance(v, str) and v.strip() else "expected a non-empty string"


def _name(v) -> str | None:
    return None if isinstance(v, str) and NAME_RE.match(v) else "expected a name of letters, digits, '_', '.' or '-'"


def _inside_name(v) -> str | None:
    """A file name inside the results folder: relative, no '..' (nothing is written outside the folder)."""
    if not isinstance(v, str) or not v.strip() or "\x00" in v:
        return "expected a file name"
    parts = v.replace("\\", "/").split("/")
    if v.startswith(("/", "~")) or re.match(r"^[A-Za-z]:", v) or ".." in parts or v.endswith("/"):
        return "expected a file name inside the results folder (no absolute path, no '..')"
    return None


def _bool(v) -> str | None:
    return None if isinstance(v, bool) else "expected true or false"


def _choice(*opts: str) -> Callable[[Any], str | None]:
    return lambda v: None if v in opts else f"expected one of {', '.join(opts)}"


def _measure(v) -> str | None:
    ok = isinstance(v, bool) or v in ("auto", "vela-checks", "compile")
    return None if ok else "expected false, true, auto, vela-checks or compile"


def _str_list(v) -> str | None:
    ok = isinstance(v, list) and all(isinstance(s, str) and s.strip() for s in v)
    return None if ok else "expected a list of strings"


def _any_mapping(v) -> str | None:
    return None if isinstance(v, dict) else "expected a mapping of option: value"


def _each_in(v: list, allowed) -> str | None:
    bad = [s for s in v if s not in allowed]
    return f"unknown runtime(s) {', '.join(bad)}; expected some of {', '.join(allowed)}" if bad else None


def _bounded(check: Callable[[Any], str | None], most: int, what: str) -> Callable[[Any], str | None]:
    """`check`, then at most `most` entries, none repeated (a repeat would only run the same steps again)."""

    def chk(v):
        err = check(v)
        if err:
            return err
        if len(v) > most:
            return f"expected at most {most} {what}, got {len(v)}"
        keys = [str(x).lower() for x in v]
        dup = next((x for i, x in enumerate(v) if keys.index(str(x).lower()) != i), None)
        return f"'{dup}' is listed twice" if dup is not None else None

    return chk


TRAIN = {
    "epochs": Key(_int(1), 3, "passes over the training windows"),
    "batch_size": Key(_int(1), 64, "windows per optimiser step"),
    "lr": Key(_num(1e-9), 3e-3, "Adam learning rate"),
    "seed": Key(_int(0), 0, "weight init and shuffling seed"),
    "max_windows": Key(_int(2), None, "use at most this many windows per split (fast test runs)"),
}
STEP_KEYS: dict[str, dict[str, Key]] = {
    "train": TRAIN,
    "export": {"opset": Key(_int(7), 11, "ONNX opset of the exported model (11: what the Hailo DFC officially takes)")},
    "check": {
        "measure": Key(
            _measure,
            False,
            "also run the real compiler when installed and record its placement beside the prediction "
            "(check --measure)",
        )
    },
    "fix": {
        "rules": Key(_str_list, None, "only these rewrite rules (default: the target's rule set)"),
        "skip_rules": Key(_str_list, None, "rewrite rules not to apply"),
        "allow_approx": Key(_bool, False, "also apply approximate rules (their error is reported)"),
    },
    "split": {
        "mode": Key(
            _choice("prefix", "segments"), "prefix", "prefix: largest NPU-runnable prefix; segments: every NPU region"
        ),
        "min_nodes": Key(_int(1), 1, "smallest NPU region that becomes its own stage (segments mode)"),
        "always": Key(
            _bool, False, "split even for targets whose runtime falls back to its CPU by itself (RKNN, Ethos-U)"
        ),
        "min_npu_macs_pct": Key(
            _num(0.0, 100.0),
            0.0,
            "reject the split (end the branch) when the NPU part would hold "
            "less than this share of the MACs: not worth a device round trip",
        ),
    },
    "quantize": {
        "method": Key(_choice("minmax", "entropy", "percentile"), "minmax", "calibration method"),
        "per_channel": Key(_bool, False, "per-channel weight scales"),
        "samples": Key(_int(1), 64, "calibration windows, spread over the training data"),
        "holdout": Key(
            _int(0),
            None,
            "held-back windows (between the calibration ones) the int8 accuracy is measured "
            "on; default: all 256 the train step writes",
        ),
        "warn_sqnr_db": Key(_num(), 30.0, "the step line warns when the worst output's SQNR vs float is below this"),
        "min_sqnr_db": Key(
            _num(), 20.0, "the step fails (its branch stops) when the worst output's SQNR is below this"
        ),
    },
    "compile": {
        "compilers": Key(_str_list, None, "only these compilers (default: the one for each target)"),
        "options": Key(_any_mapping, None, "extra options passed to the compiler"),
    },
    "bench": {
        "iterations": Key(_int(1), 100, "timed inferences per runtime"),
        "warmup": Key(_int(0), 10, "untimed inferences first"),
        "threads": Key(_int(1), None, "intra-op threads (default: the runtime's)"),
    },
    "report": {"output": Key(_inside_name, "report.html", "file name of the HTML report inside the results folder")},
}
DATA = {
    "csv": Key(_str, None, "CSV file (relative to the YAML); omit for the bundled synthetic sensor set"),
    "columns": Key(_str_list, None, "CSV columns to use as features (default: every numeric column)"),
    "target": Key(_str, None, "column to forecast (default: the first feature)"),
    "length": Key(_int(16), 4000, "synthetic: number of time steps"),
    "features": Key(_int(1), 4, "synthetic: number of sensors"),
    "seed": Key(_int(0), 0, "synthetic: generator seed"),
    "noise": Key(_num(0.0), 0.05, "synthetic: sensor noise level"),
    "seq_len": Key(_int(2), 32, "window length fed to the model"),
    "horizon": Key(_int(1), 1, "steps ahead to forecast"),
    "val_fraction": Key(_num(0.01, 0.99), 0.2, "share of the series (its end) held back for validation"),
    "stride": Key(_int(1), 1, "step between consecutive windows"),
}
MODEL = {
    "name": Key(_name, None, "unique model name (used in folder names)", required=True),
    "arch": Key(_choice(*ZOO_ARCHS), None, "zoo architecture to train (gru, lstm, bilstm, tcn)"),
    "onnx": Key(_str, None, "an existing ONNX file instead of a zoo model (train/export then just copy it)"),
    "hidden": Key(_int(1), 32, "hidden size / channels"),
    "layers": Key(_int(1), 1, "stacked RNN layers"),
    **{s: Key(_any_mapping, None, f"per-model overrides of steps.{s}") for s in STEPS if s != "report"},
}
TOP = {
    "version": Key(
        lambda v: None if v == 1 else "expected 1 (the only schema version)", 1, "schema version", required=True
    ),
    "name": Key(_name, "pipeline", "pipeline name"),
    "output_dir": Key(_str, None, "results folder, relative to the YAML (default: results/<name>)"),
    "data": Key(_any_mapping, {}, "the dataset (see data keys)"),
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
    "targets": Key(_bounded(_str_list, MAX_TARGETS, "targets"), [], "NPU targets for check/fix/split/quantize/compile"),
    "runtimes": Key(
        _bounded(lambda v: _str_list(v) or _each_in(v, RUNTIMES), MAX_RUNTIMES, "runtimes"),
        ["ort-cpu"],
        "runtimes for bench",
    ),
    "steps": Key(_any_mapping, None, "the steps to run, each with its settings (order is fixed)", required=True),
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

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "arch": self.arch,
            "onnx": str(self.onnx) if self.onnx else None,
            "hidden": self.hidden,
            "layers": self.layers,
            "overrides": self.overrides,
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
        if s not in STEPS:
            close = difflib.get_close_matches(s, STEPS, n=1)
            raise v.fail(
                ("steps", s),
                f"unknown step '{s}'"
                + (f" (did you mean '{close[0]}'?)" if close else f" (steps: {', '.join(STEPS)})"),
            )
    for s in STEPS:
        if s in top["steps"]:
            steps[s] = v.section(top["steps"][s] or {}, STEP_KEYS[s], ("steps", s))
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
        for s in STEPS:
            if ms.get(s) is not None:
                if s not in steps:
                    raise v.fail(("models", i, s), f"overrides step '{s}', which is not in steps")
                overrides[s] = v.section(ms[s], STEP_KEYS[s], ("models", i, s))
                overrides[s] = {k: val for k, val in overrides[s].items() if k in ms[s]}  # only what the model sets
        onnx = v.inside(p.parent, ms["onnx"], ("models", i, "onnx"), "ONNX model") if ms["onnx"] else None
        models.append(ModelSpec(ms["name"], ms["arch"], onnx, ms["hidden"], ms["layers"], overrides))
    _check_targets(top["targets"], v)
    out = Path(output_dir) if output_dir else p.parent / (top["output_dir"] or f"results/{top['name']}")
    return PipelineConfig(
        p.resolve(), top["name"], out.resolve(), dat, models, list(top["targets"]), list(top["runtimes"]), steps
    )


def _check_targets(targets: list[str], v: _Validator) -> None:
    from ..targets import _MODULES, available_targets

    for i, t in enumerate(targets):
        if t.lower() not in _MODULES:
            close = difflib.get_close_matches(t.lower(), list(_MODULES), n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else f" (known: {', '.join(available_targets())})"
            raise v.fail(("targets", i), f"unknown target '{t}'{hint}")

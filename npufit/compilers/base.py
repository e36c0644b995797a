"""The compiler protocol: compile(model, target, options) -> CompileResult.

Every vendor module runs its compiler as a child process (Vela's CLI, RKNN-Toolkit2 inside its own
virtualenv, the Hailo DFC's `hailo` CLI) so that wall time and peak memory are those of the compiler
process itself, and a crash in vendor code cannot take npufit down.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from .. import __version__
from ..envs import env_status
from ..envs.process import ToolRun, run_tool  # noqa: F401  (re-exported for vendor modules)
from ..toolchains import Toolchain
from ..util.jsonutil import json_default as _json_default
from .render import render_markdown, render_text

SCHEMA = "npufit.compile/1"
DEVICES = ("npu", "cpu", "folded")
RANDOM_TAG = "random-calibrated"  # in the name of an artifact quantized with random calibration data


def random_calibration(options: "CompileOptions") -> bool:
    """No calibration data given (or "random"): a quantizing compiler calibrates on seeded random noise."""
    return options.calibration in (None, "", "random")


def random_calibration_warning(target: str, artifact_hint: str = "") -> str:
    """The warning, in library terms: a random-calibrated artifact is fine for placement and speed, not for
    deployment."""
    return (
        f"no calibration data: the int8 model for {target} is calibrated on seeded random noise, so its scales fit "
        f"noise, not your data; use it to see placement and speed, not to deploy{artifact_hint}. Give calibration "
        "data (the `calibration` option: a folder of .npy files or an .npz of real inputs)"
    )


@dataclass
class Placement:
    """Where the compiler put one node of the user's model."""

    node: str  # node name in the model the user gave us
    op: str
    device: str  # npu | cpu | folded (removed at compile time)
    reason: str = ""  # the compiler's words, when it says why
    layers: list[str] = field(default_factory=list)  # compiler-side layer names mapped to this node
    how: str = "direct"  # how the layer was mapped back: direct | lineage | fused | absent

    def to_dict(self) -> dict:
        d = {"node": self.node, "op": self.op, "device": self.device, "reason": self.reason, "how": self.how}
        if self.layers:
            d["layers"] = self.layers
        return d


@dataclass
class CompileOptions:
    out_dir: str | os.PathLike | None = None  # default: ./npufit-compile/<model>-<target>
    quantize: bool = False
    calibration: str | None = None  # .npy / .npz / folder of .npy files
    input_shapes: dict[str, tuple[int, ...]] | None = None
    disable_rules: tuple[str, ...] = ()
    simulate: bool = True  # RKNN: run the simulator against ONNX Runtime
    emit_script: str | None = None  # Hailo: write the commands instead of running them
    start_nodes: tuple[str, ...] = ()
    end_nodes: tuple[str, ...] = ()
    plan: str | None = None  # npufit split plan.json (Hailo start/end nodes)
    timeout_s: float | None = None
    activations: str = "auto"  # ONNX input to Ethos-U/N: the converter's activation type (auto, int8, int16)
    verify: bool = True  # ONNX input to Ethos-U/N: hold the converted TFLite against ONNX Runtime (needs LiteRT)
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class CompileResult:
    compiler: str
    compiler_version: str | None
    target: str
    model: str  # the user's file (never modified)
    ok: bool
    artifact: str | None = None
    placement: list[Placement] = field(default_factory=list)
    log_path: str | None = None
    command: str = ""
    wall_s: float | None = None
    peak_rss_mb: float | None = None
    timings: dict[str, float] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)  # cycles, SRAM, inference time, cosine, ...
    error: str | None = None
    next_step: str | None = None  # the command that avoids the failure (compilers/failure.py)
    retries: list[dict] = field(default_factory=list)  # e.g. RKNN disable_rules retries
    notes: list[str] = field(default_factory=list)
    outputs: dict[str, str] = field(default_factory=dict)  # other files kept (intermediate .tflite, scripts)
    comparison: Any = None  # compare.PredictionComparison when --compare-prediction
    verdict: str = ""  # the one line a person reads first (compilers.verdict_line)
    warnings: list[str] = field(default_factory=list)  # what must be read before the numbers (random calibration)
    random_calibrated: bool = False  # quantized on random data: the artifact's name says it too

    def __repr__(self) -> str:
        s = self.summary()
        state = "ok" if self.ok else "FAILED"
        tag = ", random-calibrated" if self.random_calibrated else ""
        return (
            f"<CompileResult {self.target} {Path(self.model).name}: {state}, {s['npu']} npu / {s['cpu']} cpu of "
            f"{s['nodes']} nodes{tag}>"
        )

    @property
    def cpu_nodes(self) -> list[Placement]:
        return [p for p in self.placement if p.device == "cpu"]

    @property
    def log_text(self) -> str:
        if not self.log_path:
            return ""
        try:
            return Path(self.log_path).read_text("utf-8", "replace")
        except OSError:
            return ""

    def summary(self) -> dict:
        counts = {d: sum(p.device == d for p in self.placement) for d in DEVICES}
        return {"nodes": len(self.placement), **counts}

    def to_dict(self) -> dict:

        d = {
            "schema": SCHEMA,
            "npufit_version": __version__,
            "compiler": self.compiler,
            "compiler_version": self.compiler_version,
            "target": self.target,
            "model": self.model,
            "ok": self.ok,
            "error": self.error,
            "next_step": self.next_step,
            "artifact": self.artifact,
            "outputs": self.outputs,
            "command": self.command,
            "wall_s": self.wall_s,
            "peak_rss_mb": self.peak_rss_mb,
            "timings": self.timings,
            "metrics": self.metrics,
            "log_path": self.log_path,
            "retries": self.retries,
            "verdict": self.verdict,
            "warnings": self.warnings,
            "random_calibrated": self.random_calibrated,
            "notes": self.notes,
            "summary": self.summary(),
            "placement": [p.to_dict() for p in self.placement],
        }
        if self.comparison is not None:
            d["comparison"] = self.comparison.to_dict()
        return d

    def render(self, fmt: str = "table", all_nodes: bool = False) -> str:

        if fmt == "json":
            import json

            return json.dumps(self.to_dict(), indent=2, default=_json_default)
        if fmt == "markdown":
            return render_markdown(self, all_nodes)
        return render_text(self, all_nodes)


class Compiler(Protocol):
    toolchain: Toolchain  # its record: name, platforms, environment, ... (npufit.toolchains)
    calibration_format: (
        str  # the calibration form a pipeline hands it: "npz" (one stacked .npz) or "npy-folder" (.npy files)
    )
    extra_options: tuple[str, ...]  # the CompileOptions.extra keys it reads; any other key is refused

    @property
    def name(self) -> str: ...

    def status(self) -> dict: ...

    def compile(self, model: Path, target: str, options: CompileOptions) -> CompileResult: ...

    def calibrates_at_random(self, model: Path, options: CompileOptions) -> bool: ...

    def preflight(self, model: Path, target: str, options: CompileOptions) -> None: ...


class Adapter:
    """What every compiler adapter shares: it is built with its toolchain's record and named by it."""

    def __init__(self, toolchain: Toolchain):
        self.toolchain = toolchain

    @property
    def name(self) -> str:
        return self.toolchain.name

    def calibrates_at_random(self, model: Path, options: CompileOptions) -> bool:
        """Whether this compile quantizes `model` with random calibration data (the default when none is given)."""
        return False

    def preflight(self, model: Path, target: str, options: CompileOptions) -> None:
        """Refuse a request that cannot run, before any warning is said (a refused input stays one line): the
        checks `compile` makes first, made early. Nothing to check by default."""


# -- shared helpers --------------------------------------------------------------------------


def default_out_dir(model: Path, target: str, out_dir: str | os.PathLike | None) -> Path:
    # absolute: compiler workers run with another cwd and read their request files by path
    d = (Path(out_dir) if out_dir else Path.cwd() / "npufit-compile" / f"{model.stem}-{target}").resolve()
    d.mkdir(parents=True, exist_ok=True)
    return d


def private_copy(model: Path, out_dir: Path) -> Path:
    """Compilers and converters work on a copy: some rewrite or annotate their input in place."""
    import shutil

    work = out_dir / "input"  # a subfolder, so a copy can never land on the user's own file
    work.mkdir(parents=True, exist_ok=True)
    dst = work / model.name
    shutil.copyfile(model, dst)
    data = model.with_name(model.name + ".data")
    if os.path.isfile(data):  # ONNX external data travels with the copy (isfile: a 255-byte name has no sibling)
        shutil.copyfile(data, work / data.name)
    return dst


def tail(text: str, lines: int = 12) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


def env_tool_status(toolchain: Toolchain) -> dict:
    """status() of a compiler that lives in one of npufit's own environments (`npufit env install ENV`)."""

    s = env_status(toolchain.env_name)
    return {
        "name": toolchain.status_name,
        "available": s["installed"],
        "version": s["version"],
        "enables": s["enables"],
        "install": s["install"],
        "detail": f"env {s['path']} ({s['size_mb']} MB)" if s["installed"] else "not installed",
    }

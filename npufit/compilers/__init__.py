"""Drive the real vendor compilers and read back where each node went.

    compile_model("m.onnx", "rk3588")            # RKNN-Toolkit2 (own env)
    compile_model("m.tflite", "ethos-u55-256")   # Vela
    compile_model("m.onnx", "hailo8", emit_script="out/")  # Hailo DFC commands (NOT exercised here)
    compile_model("m.tflite", "ethos-n78")       # Arm Ethos-N support library (npufit env install ethos-n)

Vendor SDKs are never imported by npufit itself: each compiler runs as a child process."""

from __future__ import annotations

import importlib
import os
from dataclasses import fields
from pathlib import Path

from .. import toolchains
from ..errors import BadModelError, NpufitError
from ..toolchains import Toolchain
from .base import CompileOptions, Compiler, CompileResult, Placement

__all__ = [
    "compile_model",
    "status",
    "compiler_for",
    "compiler_names",
    "CompileOptions",
    "CompileResult",
    "Placement",
    "OPTION_NAMES",
]
OPTION_NAMES = tuple(f.name for f in fields(CompileOptions))  # compile_model's **options


def adapter(toolchain: Toolchain) -> Compiler:
    """The toolchain's adapter, imported on first use: its module may pull in what only compiling needs."""
    module, _, attr = toolchain.adapter.partition(":")
    cls = getattr(importlib.import_module(module, __name__), attr)
    return cls(toolchain)


def _compilers() -> list[Compiler]:
    return [adapter(t) for t in toolchains.registered()]


def compiler_for(target: str) -> Compiler:
    t = toolchains.for_platform(target)
    if t is None:
        known = "; ".join(f"{x.title}: {', '.join(x.platforms)}" for x in toolchains.registered())
        raise NpufitError(f"no compiler drives target '{target}' ({known})")
    return adapter(t)


def compiler_names() -> list[str]:
    return toolchains.names()


def status() -> list[dict]:
    """For `npufit doctor`: each compiler's name, availability, version, what it enables, how to install it."""
    return [c.status() for c in _compilers()]


def unknown_options(comp, extra) -> list[str]:
    """The keys of `extra` (CompileOptions.extra) that compiler `comp` does not read: refused, never ignored."""
    return sorted(set(extra or ()) - set(comp.extra_options))


def compile_model(model: str | os.PathLike, target: str, compare_prediction: bool = False, **options) -> CompileResult:
    """Compile `model` for `target` with the vendor's compiler; the model file is only read (compilers get a copy).

    options: the fields of CompileOptions (out_dir, quantize, calibration, input_shapes, disable_rules,
    simulate, emit_script, start_nodes, end_nodes, plan, timeout_s, extra)."""
    from ..util.readers import require_regular_file

    path = Path(model)
    require_regular_file(path, "model file", BadModelError)  # a FIFO would block the copy for the compiler
    bad = sorted(set(options) - set(OPTION_NAMES))
    if bad:
        raise NpufitError(f"unknown compile option(s): {', '.join(bad)}")
    opts = CompileOptions(**options)
    shape_notes = _pin_shapes(path, opts)
    if opts.plan:  # schema and stage paths checked before any compiler runs
        from ..split.plan import load_plan

        load_plan(opts.plan)
    comp = compiler_for(target)
    bad = unknown_options(comp, opts.extra)
    if bad:  # a misspelt compiler option would otherwise be ignored without a word
        raise NpufitError(
            f"unknown {comp.name} option(s): {', '.join(bad)} (its options: {', '.join(comp.extra_options) or 'none'})"
        )
    result = comp.compile(path, target.lower(), opts)
    result.notes[:0] = shape_notes
    if compare_prediction:
        attach_comparison(result, path, target, opts)
    return result


def _pin_shapes(path: Path, opts: CompileOptions) -> list[str]:
    """The shape policy for a compile (util.shapes): an ONNX model's given shapes and its dynamic batch (pinned to
    1) become the shapes every compiler builds; other unknown dims are asked for before any compiler starts."""
    from ..graph import model_format
    from ..graph.onnx_prepare import pin_inputs, read_onnx, require_shapes
    from ..util.shapes import parse_input_shapes

    given = parse_input_shapes(opts.input_shapes)
    if model_format(path) != "onnx":
        opts.input_shapes = given or None
        return []
    prep = read_onnx(path, pin_inputs(given))
    require_shapes(prep, "a compiled model has fixed shapes")
    opts.input_shapes = dict(prep.shapes.pinned) or None
    return list(prep.shapes.notes)


def attach_comparison(result: CompileResult, model: Path, target: str, opts: CompileOptions) -> None:
    from ..check import predict
    from ..graph import load
    from ..targets import get_profile
    from .compare import compare_placement

    if not result.ok or not result.placement:
        result.notes.append("no placement to compare with: the compile did not finish")
        return
    try:
        profile = get_profile(target)  # by name or alias (every Ethos-N78 configuration is one profile)
    except NpufitError:
        result.notes.append(f"npufit has no profile for '{target}' yet: nothing to compare")
        return
    graph = load(result.outputs.get("checked_model", model), opts.input_shapes)
    judge = "int8" if opts.quantize else "auto"  # an int8 build is predicted as int8 on any target
    result.comparison = compare_placement(predict(graph, profile, judge=judge), result.placement, result.compiler)

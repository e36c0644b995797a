"""Drive the real vendor compilers and read back where each node went.

    compile_model("m.onnx", "rk3588")            # RKNN-Toolkit2 (own env)
    compile_model("m.tflite", "ethos-u55-256")   # Vela
    compile_model("m.onnx", "hailo8", emit_script="out/")  # Hailo DFC commands (NOT exercised here)
    compile_model("m.tflite", "ethos-n78")       # Arm Ethos-N support library (npufit env install ethos-n)

Vendor SDKs are never imported by npufit itself: each compiler runs as a child process."""

from __future__ import annotations

import importlib
import os
import warnings
from dataclasses import fields
from pathlib import Path

from .. import toolchains
from ..errors import BadModelError, NpufitError, NpufitWarning
from ..toolchains import Toolchain
from ..util.readers import require_regular_file
from ..util.shapes import parse_input_shapes
from .base import RANDOM_TAG, CompileOptions, Compiler, CompileResult, Placement, random_calibration_warning
from .render import verdict_line

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
    """Compile `model` for `target` with the vendor's compiler and read back where each node went. The model file is
    only read (compilers get a copy).

    The library side of `npufit compile MODEL --target T`. A quantizing compile without calibration data (an ONNX
    model for Ethos-U/N, an int8 RKNN build, any Hailo build) calibrates on seeded random data: it warns
    (npufit.errors.NpufitWarning) before the compile, names the artifact "...random-calibrated..." and sets
    `result.random_calibrated`.

    Parameters
    ----------
    model : str or os.PathLike
        An .onnx or .tflite file.
    target : str
        "ethos-u55-256", "ethos-n78", "rk3588", "hailo8", ... (`npufit.doctor()` shows which compilers are here).
    compare_prediction : bool
        Also hold npufit's check against the compiler's placement (CPU-fallback recall/precision, disagreements).
    **options
        The fields of CompileOptions: out_dir, quantize (RKNN int8 build), calibration (real inputs: a folder of
        .npy files or an .npz), input_shapes, disable_rules, simulate, emit_script (Hailo: write the script instead),
        start_nodes, end_nodes, plan, timeout_s, activations, extra.

    Returns
    -------
    CompileResult
        A one-line `verdict`, `warnings`, the artifact, per-node placement with the compiler's reasons, the log,
        command, wall time and peak memory, the compiler's own figures; `.render(...)`, `.to_dict()`.

    Example
    -------
    >>> import npufit
    >>> r = npufit.compile("det.onnx", "ethos-u55-256", calibration="calib.npz", out_dir="out/")
    >>> r.verdict  # doctest: +SKIP
    'det.onnx on ethos-u55-256: 100% of running nodes on the NPU (31 npu, 0 cpu)'
    """

    path = Path(model)
    require_regular_file(path, "model file", BadModelError)  # a FIFO would block the copy for the compiler
    bad = sorted(set(options) - set(OPTION_NAMES))
    if bad:
        raise NpufitError(f"unknown compile option(s): {', '.join(bad)}")
    opts = CompileOptions(**options)
    shape_notes = _pin_shapes(path, opts)
    if opts.plan:  # schema and stage paths checked before any compiler runs
        # cost: numpy/onnx; every `npufit.compilers.<adapter>` import loads this package, which stays light
        from ..split.plan import load_plan

        load_plan(opts.plan)
    comp = compiler_for(target)
    bad = unknown_options(comp, opts.extra)
    if bad:  # a misspelt compiler option would otherwise be ignored without a word
        raise NpufitError(
            f"unknown {comp.name} option(s): {', '.join(bad)} (its options: {', '.join(comp.extra_options) or 'none'})"
        )
    random = comp.calibrates_at_random(path, opts)
    if random:  # before the compile, which may take minutes: the artifact will not be fit to deploy
        comp.preflight(path, target.lower(), opts)  # but after what refuses the request: a refusal stays one line
        warning = random_calibration_warning(target, f" (its file name says {RANDOM_TAG})")
        warnings.warn(warning, NpufitWarning, stacklevel=2)
    result = comp.compile(path, target.lower(), opts)
    if random:
        result.random_calibrated = True
        result.warnings.insert(0, warning)
    result.notes[:0] = shape_notes
    if compare_prediction:
        attach_comparison(result, path, target, opts)
    result.verdict = verdict_line(result, _float_on_int8_only(path, target, result))
    return result


def _float_on_int8_only(model: Path, target: str, result: CompileResult) -> bool:
    """A float TFLite given to an int8-only NPU: every operator stays on the CPU, and the one thing to say is so."""
    if model.suffix.lower() != ".tflite" or not result.placement or result.summary()["npu"]:
        return False
    # cost: numpy/onnx; every `npufit.compilers.<adapter>` import loads this package, which stays light
    from ..check.engine import is_float_model

    # cost: numpy/onnx; every `npufit.compilers.<adapter>` import loads this package, which stays light
    from ..graph import load

    # cost: numpy/onnx; every `npufit.compilers.<adapter>` import loads this package, which stays light
    from ..targets import get_profile

    # cost: numpy/onnx; every `npufit.compilers.<adapter>` import loads this package, which stays light
    from ..targets.base import Executes

    try:
        int8_only = get_profile(target).executes is Executes.INT8
    except NpufitError:
        return False
    return int8_only and is_float_model(load(model))


def _pin_shapes(path: Path, opts: CompileOptions) -> list[str]:
    """The shape policy for a compile (util.shapes): an ONNX model's given shapes and its dynamic batch (pinned to
    1) become the shapes every compiler builds; other unknown dims are asked for before any compiler starts."""
    # cost: numpy/onnx; every `npufit.compilers.<adapter>` import loads this package, which stays light
    from ..graph import model_format

    # cost: numpy/onnx; every `npufit.compilers.<adapter>` import loads this package, which stays light
    from ..graph.onnx_prepare import pin_inputs, read_onnx, require_shapes

    given = parse_input_shapes(opts.input_shapes)
    if model_format(path) != "onnx":
        opts.input_shapes = given or None
        return []
    prep = read_onnx(path, pin_inputs(given))
    require_shapes(prep, "a compiled model has fixed shapes")
    opts.input_shapes = dict(prep.shapes.pinned) or None
    return list(prep.shapes.notes)


def attach_comparison(result: CompileResult, model: Path, target: str, opts: CompileOptions) -> None:
    # cost: numpy/onnx; every `npufit.compilers.<adapter>` import loads this package, which stays light
    from ..check import predict

    # cost: numpy/onnx; every `npufit.compilers.<adapter>` import loads this package, which stays light
    from ..graph import load

    # cost: numpy/onnx; every `npufit.compilers.<adapter>` import loads this package, which stays light
    from ..targets import get_profile

    # cost: numpy/onnx; every `npufit.compilers.<adapter>` import loads this package, which stays light
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

"""Hailo Dataflow Compiler (hailo8 / hailo8l) through its documented CLI:

    hailo parser onnx M.onnx --hw-arch hailo8 --start-node-names .. --end-node-names .. --har-path M.har -y
    hailo optimize M.har --hw-arch hailo8 --model-script M.alls --calib-set-path calib.npy --output-har-path M_optimized.har
    hailo compiler M_optimized.har --hw-arch hailo8 --output-dir .

NOT EXERCISED HERE: the DFC is login-gated and has never been installed on npufit's build machines. The tests
drive this module with a FAKE `hailo` script (it records argv and prints a parser error in the DFC's format).
Without the DFC, `emit_script=DIR` writes these exact commands and files for a user's Hailo machine.
A HEF has no CPU fallback: nodes outside the start/end-node region run on the host (placement "cpu")."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import numpy as np

from ..errors import NpufitError
from ..toolchains import HAILO
from .base import Adapter, CompileOptions, CompileResult, Placement, default_out_dir, private_copy, run_tool, tail

PARSER = HAILO.stage_parser
assert PARSER is not None
_ERR = re.compile(r"(\w+(?:Error|Exception)) in op ([^:\n]+): ([^\n]*)")
_RECOMMEND = re.compile(r"using these end node names: ([^\n]+)")
_VERSION = re.compile(r"Dataflow Compiler v?([\d.]+)")


def hailo_exe() -> str | None:
    env = os.environ.get("NPUFIT_HAILO")
    if env:
        return env
    found = shutil.which(PARSER.command[0])
    if found:
        return found
    from ..envs import env_dir

    cand = env_dir(HAILO.env_name) / "bin" / PARSER.command[0]
    return str(cand) if cand.exists() else None


class HailoCompiler(Adapter):
    calibration_format = "npz"
    extra_options = ()

    def status(self) -> dict:
        exe = hailo_exe()
        version = _version(exe) if exe else None
        return {
            "name": self.toolchain.status_name,
            "available": bool(exe and version),
            "version": version,
            "enables": "npufit compile --target hailo8/hailo8l: parse -> optimize -> HEF (without it: --emit-script)",
            "install": "download hailo_dataflow_compiler-*.whl from the Hailo Developer Zone, then "
            "'npufit env install hailo --wheel FILE.whl'",
            "detail": exe or "hailo CLI not found (NOT exercised on npufit's build machines)",
        }

    def compile(self, model: Path, target: str, options: CompileOptions) -> CompileResult:
        if model.suffix.lower() != ".onnx":
            raise NpufitError(f"{model.name}: the Hailo DFC parser is driven from ONNX here; give an .onnx model")
        out = default_out_dir(model, target, options.emit_script or options.out_dir)
        src = private_copy(model, out)
        start, end = _start_end(model, target, options)
        files = _write_inputs(out, model.stem, src, options)
        steps = commands(PARSER.command[0], target, src.relative_to(out), model.stem, start, end, files)
        exe = hailo_exe()
        res = CompileResult(
            self.toolchain.status_name,
            None,
            target,
            str(model),
            False,
            outputs={k: str(out / v) for k, v in files.items()},
        )
        res.metrics.update({"start_nodes": start, "end_nodes": end})
        if options.emit_script or not exe:
            script = _write_script(out, steps)
            res.outputs["script"] = str(script)
            res.ok = bool(options.emit_script)
            res.command = f"bash {script}"
            res.notes.append(
                "NOT exercised here: commands written for a machine with the Hailo DFC; npufit did not run them"
            )
            res.placement = _placement(model, start, end, {}, options)  # the region the parser is asked to take
            if not options.emit_script:
                res.error = (
                    "the Hailo DFC ('hailo' CLI) is not installed; rerun with --emit-script DIR to get the commands"
                )
            return res
        res.compiler_version = _version(exe)
        wall, peak, logs = 0.0, 0.0, []
        for i, (stage, argv) in enumerate(steps):
            run = run_tool([exe] + argv[1:], out / f"hailo_{stage}.log", cwd=out, timeout_s=options.timeout_s)
            res.timings[stage] = run.wall_s
            wall += run.wall_s
            peak = max(peak, run.peak_rss_mb or 0.0)
            logs.append(str(run.log_path))
            res.command = (res.command + " && " if res.command else "") + run.command_line
            if run.returncode != 0:
                res.error = f"hailo {stage} failed (exit {run.returncode}): {tail(run.log, 2)}"
                if stage == "parser":
                    reasons, recommended = parse_parser_errors(run.log)
                    res.metrics["parser_errors"] = reasons
                    res.metrics["recommended_end_nodes"] = recommended
                    res.placement = _placement(model, start, end, reasons, options)
                break
        else:
            res.ok = True
            res.artifact = str(out / f"{model.stem}.hef")
            res.placement = _placement(model, start, end, {}, options)
        res.wall_s, res.peak_rss_mb, res.log_path = round(wall, 3), peak or None, logs[-1] if logs else None
        res.outputs["logs"] = ", ".join(logs)
        return res


def commands(
    exe: str, arch: str, onnx: Path, name: str, start: list[str], end: list[str], files: dict
) -> list[tuple[str, list[str]]]:
    hw = PARSER.arch_flag  # every DFC command names the architecture with it
    parse = [exe, *PARSER.command[1:], str(onnx), hw, arch, "--har-path", f"{name}.har", "-y"]
    if start:
        parse += [PARSER.start_flag, *start]
    if end:
        parse += [PARSER.end_flag, *end]
    opt = [
        exe,
        "optimize",
        f"{name}.har",
        hw,
        arch,
        "--model-script",
        files["model_script"],
        "--output-har-path",
        f"{name}_optimized.har",
    ]
    opt += ["--calib-set-path", files["calib_set"]] if "calib_set" in files else ["--use-random-calib-set"]
    comp = [exe, "compiler", f"{name}_optimized.har", hw, arch, "--output-dir", "."]
    return [("parser", parse), ("optimize", opt), ("compiler", comp)]


def parse_parser_errors(log: str) -> tuple[dict[str, str], list[str]]:
    """The DFC parser's per-op errors -> {node: reason}, plus the end nodes it recommends."""
    reasons = {}
    for kind, node, msg in _ERR.findall(log):
        reasons[node.strip()] = f"Hailo parser: {kind}: {msg.strip()}"
    rec: list[str] = []
    m = _RECOMMEND.search(log)
    if m:
        rec = [s.strip().strip("'\"[]") for s in m.group(1).split(",") if s.strip()]
    return reasons, rec


def _version(exe: str) -> str | None:
    try:
        p = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = _VERSION.search(p.stdout + p.stderr)
    return m.group(1) if m else None


def _start_end(model: Path, target: str, options: CompileOptions) -> tuple[list[str], list[str]]:
    if options.start_nodes or options.end_nodes:
        return _known_nodes(model, list(options.start_nodes), list(options.end_nodes), options, "--start/--end-nodes")
    if options.plan:
        from ..split.plan import load_plan

        plan = load_plan(options.plan)
        npu = [s for s in plan.stages if s.device == "npu"]
        if not npu:
            raise NpufitError(f"{options.plan}: the plan has no NPU stage")
        _same_model(model, plan.source, options.plan)
        return _known_nodes(
            model, list(npu[0].start_node_names), list(npu[0].end_node_names), options, f"--plan {options.plan}"
        )
    from ..check import predict

    pre = predict(model, _profile_for(target), options.input_shapes).prefix
    if pre.get("covers_whole_model"):
        return [], []
    return list(pre.get("start_nodes", [])), list(pre.get("end_nodes", []))


def _profile_for(target: str):
    """The target's profile; an architecture npufit has none for (hailo15h, ...) is cut where Hailo-8 would cut it."""
    from ..targets import get_profile

    try:
        return get_profile(target)
    except NpufitError:
        return get_profile(HAILO.platforms[0])


def _same_model(model: Path, src: dict, plan_path) -> None:
    """A plan names nodes of the model it was split from; another model's plan would emit end nodes that do not exist."""
    from ..split.plan import sha256_file

    want = src.get("sha256") if isinstance(src, dict) else None
    if want and want != sha256_file(model):
        raise NpufitError(
            f"--plan {plan_path}: the plan was split from {src.get('file', 'another model')}, not from "
            f"{model.name} (sha256 differs); split this model first"
        )


def _known_nodes(model: Path, start: list[str], end: list[str], options, origin: str) -> tuple[list[str], list[str]]:
    from ..graph import load

    g = load(model, options.input_shapes)
    missing = [n for n in start + end if g.node(n) is None]
    if missing:
        shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        raise NpufitError(
            f"{origin}: {shown} {'is not a node' if len(missing) == 1 else 'are not nodes'} of {model.name}"
        )
    return start, end


def _write_inputs(out: Path, name: str, src: Path, options: CompileOptions) -> dict[str, str]:
    files = {"onnx": str(src.relative_to(out)), "model_script": f"{name}.alls"}
    alls = ["# npufit-generated model script for the Hailo DFC", "performance_param(compiler_optimization_level=max)"]
    if options.calibration:
        c = Path(options.calibration)
        if c.suffix != ".npy":
            raise NpufitError(f"{c}: the Hailo calibration set must be one .npy array [N, H, W, C]")
        from ..util.readers import ArrayFile

        with ArrayFile(c, "--calibration") as f:
            arr = f.read("", rows=64)  # the DFC calibrates on at most 64 (calibset_size below)
        np.save(out / "calib_set.npy", arr)
        files["calib_set"] = "calib_set.npy"
        alls.append(f"model_optimization_config(calibration, batch_size=1, calibset_size={min(len(arr), 64)})")
    else:  # a random calibration set is only good for checking that the model compiles
        alls.append("model_optimization_flavor(optimization_level=0, compression_level=0)")
    (out / files["model_script"]).write_text("\n".join(alls) + "\n")
    return files


def _write_script(out: Path, steps) -> Path:
    lines = [
        "#!/usr/bin/env bash",
        "# Generated by npufit: run on a machine with the Hailo Dataflow Compiler.",
        "# NOT exercised by npufit itself (the DFC is login-gated).",
        "set -euo pipefail",
        'cd "$(dirname "$0")"',
    ]
    lines += [shlex.join(argv) for _, argv in steps]
    p = out / "compile_hailo.sh"
    p.write_text("\n".join(lines) + "\n")
    p.chmod(0o755)
    return p


def _placement(model: Path, start: list[str], end: list[str], errors: dict[str, str], options) -> list[Placement]:
    from ..graph import load

    g = load(model, options.input_shapes)
    inside = _region(g, start, end)
    out = []
    for n in g.top_nodes:
        if n.name in errors:
            out.append(Placement(n.name, n.op_type, "cpu", errors[n.name] + " (no CPU fallback in a HEF: cut it away)"))
        elif n.name in inside:
            out.append(Placement(n.name, n.op_type, "npu"))
        else:
            out.append(
                Placement(
                    n.name, n.op_type, "cpu", "outside the parsed start/end-node region: runs on the host", how="absent"
                )
            )
    return out


def _region(g, start: list[str], end: list[str]) -> set[str]:
    def walk(seeds, nxt):
        seen, stack = set(), [g.node(s) for s in seeds if g.node(s)]
        while stack:
            n = stack.pop()
            if n.name in seen:
                continue
            seen.add(n.name)
            stack.extend(nxt(n))
        return seen

    down = walk(start, g.successors) if start else {n.name for n in g.top_nodes}
    up = walk(end, g.predecessors) if end else {n.name for n in g.top_nodes}
    return down & up

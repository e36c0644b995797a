"""Hailo Dataflow Compiler (hailo8 / hailo8l) through its documented CLI, and the script for a Hailo machine:

    hailo parser onnx M.onnx --hw-arch hailo8 --net-name NET --har-path NET.har -y [--start-node-names ..]
          [--end-node-names ..]
    hailo optimize NET.har --hw-arch hailo8 --model-script NET.alls --calib-set-path calib_set.npy
          --output-har-path NET_optimized.har
    hailo compiler NET_optimized.har --hw-arch hailo8 --output-dir .
    hailortcli parse-hef NET.hef                       (when HailoRT is installed: what the HEF holds)
    hailortcli benchmark NET.hef --time-to-run 15      (the emitted script, where a Hailo device is)

Each DFC step is the command-line front of one call of the DFC's Python API (ClientRunner.translate_onnx_model,
.optimize, .compile). NOT exercised against the real DFC: it is login-gated. The tests drive this module through
a FAKE `hailo` / `hailortcli` pair (tests/fakes/hailo) whose outputs are recorded from public runs.

Every run writes the same folder: the model copy, the calibration set (hailo_calib), the model script, the
commands as DIR/compile_hailo.sh (hailo_script), npufit-hailo.json and logs/<step>.log. Without the DFC the
script is the product (`--emit-script DIR`); `--results DIR` reads what it left back (read_results). A HEF has no
CPU fallback: nodes outside the start/end-node region run on the host (placement "cpu").
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from .. import __version__
from ..check import predict
from ..envs import env_dir, env_status
from ..errors import NpufitError
from ..graph import load
from ..split.plan import load_plan, sha256_file
from ..targets import get_profile
from ..toolchains import HAILO, StageParser
from ..util.io import atomic_write_json, atomic_write_text
from ..util.readers import read_json
from .base import (
    Adapter,
    CompileOptions,
    CompileResult,
    Placement,
    default_out_dir,
    private_copy,
    random_calibration,
    run_tool,
    tail,
)
from .hailo_calib import RANDOM_NOTE, CalibrationFile, region, region_inputs, write_calibration
from .hailo_logs import (
    LOGS,
    log_path,
    parse_contexts,
    parse_hef,
    parse_identify,
    parse_mapped_nodes,
    parse_parser_errors,
    parse_snr,
    parse_versions,
    read_log,
    read_steps,
    record_step,
)
from .hailo_script import SCRIPT, device_steps, write_script

_parser = HAILO.stage_parser
assert _parser is not None
PARSER: StageParser = _parser
MANIFEST = "npufit-hailo.json"
MANIFEST_SCHEMA = "npufit.hailo-build/1"
DFC_STEPS = ("parser", "optimize", "compiler")


def install_line() -> str:
    """How to install the DFC, as the toolchain's environment record states it."""

    return env_status(HAILO.env_name)["install"] + " (the wheel is a download from the Hailo Developer Zone)"


def _tool(name: str, override: str = "") -> str | None:
    """A Hailo command: $NPUFIT_HAILO for `hailo`, else on PATH, else in npufit's hailo environment."""
    if override:
        return override
    found = shutil.which(name)
    if found:
        return found

    cand = env_dir(HAILO.env_name) / "bin" / name
    return str(cand) if cand.exists() else None


def hailo_exe() -> str | None:
    return _tool(PARSER.command[0], os.environ.get("NPUFIT_HAILO", ""))


def hailortcli_exe() -> str | None:
    return _tool("hailortcli")


def net_name(model: Path) -> str:
    """The DFC network name (and HEF file name): the model's stem; the DFC refuses dots and other signs in it."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", model.stem)
    return name if name[:1].isalpha() else f"net_{name}"


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
            "install": install_line(),
            "detail": exe or "hailo CLI not found (NOT exercised on npufit's build machines)",
        }

    def calibrates_at_random(self, model: Path, options: CompileOptions) -> bool:
        # the Dataflow Compiler always quantizes (hailo_calib writes the set); without it and without a script
        # asked for, nothing is compiled: the refusal names the script written instead
        return random_calibration(options) and bool(options.emit_script or hailo_exe())

    def preflight(self, model: Path, target: str, options: CompileOptions) -> None:
        self._start_end(model, target, options)

    def _start_end(self, model: Path, target: str, options: CompileOptions) -> tuple[list[str], list[str]]:
        if model.suffix.lower() != ".onnx":
            raise NpufitError(f"{model.name}: the Hailo DFC parser is driven from ONNX here; give an .onnx model")
        return _start_end(model, target, options)  # a wrong node name or plan is refused before anything is written

    def compile(self, model: Path, target: str, options: CompileOptions) -> CompileResult:
        start, end = self._start_end(model, target, options)
        out = default_out_dir(model, target, options.emit_script or options.out_dir)
        net = net_name(model)
        shutil.rmtree(out / LOGS, ignore_errors=True)  # a folder compiled into again: only this run's logs
        src = private_copy(model, out)

        graph = load(src, options.input_shapes)
        nodes = region(graph, start, end)
        calib = write_calibration(
            src, graph, region_inputs(graph, nodes), net, out, options.calibration, options.input_shapes
        )
        script_file = _write_model_script(out, net, calib)
        steps = commands(PARSER.command[0], target, src.relative_to(out), net, start, end, calib, script_file)
        script = write_script(out, net, target, steps, _header(model, target, net, calib))
        _write_manifest(out, model, src, target, net, start, end, calib, script_file, steps)
        res = CompileResult(self.toolchain.status_name, None, target, str(model), False)
        res.outputs = {"script": str(script), "calibration": str(out / calib.file)}
        res.outputs["model_script"] = str(out / script_file)
        res.metrics.update({"start_nodes": start, "end_nodes": end, "calibration": calib.describe()})
        res.notes += [RANDOM_NOTE] if calib.random else []
        exe = hailo_exe()
        if options.emit_script or not exe:
            res.placement = _placement(graph, nodes, {})  # the region the parser is asked to take
            if not options.emit_script:
                raise NpufitError(
                    f"the Hailo Dataflow Compiler is not installed (no 'hailo' command on PATH or in npufit's hailo "
                    f"environment): wrote {script} to run where it is; install it here with {install_line()}"
                )
            res.ok, res.command = True, f"bash {script}"
            res.notes.append("NOT run by npufit: commands written for a machine with the Hailo DFC")
            return res
        res.compiler_version = _version(exe, out)
        _run_dfc(res, exe, out, steps, options)
        if res.ok:
            res.artifact = str(out / f"{net}.hef")
        rt = hailortcli_exe()
        if res.ok and rt:  # reading the HEF needs HailoRT, not a device
            parse_step, parse_argv = device_steps(net)[0]
            run = run_tool([rt, *parse_argv[1:]], log_path(out, parse_step), cwd=out)
            res.timings[parse_step] = run.wall_s
            record_step(out, parse_step, run.returncode, run.wall_s)
        reasons, taken = _fold_logs(res, out, graph, end, calib)
        res.placement = _placement(graph, region(graph, start, taken) if taken else nodes, reasons)
        return res


def commands(
    exe: str, arch: str, onnx: Path, net: str, start: list[str], end: list[str], calib: CalibrationFile, script: str
) -> list[tuple[str, list[str]]]:
    """The DFC's three steps as [(step, argv)], run from the compile folder."""
    hw = PARSER.arch_flag  # every DFC command names the architecture with it
    parse = [exe, *PARSER.command[1:], str(onnx), hw, arch, "--net-name", net, "--har-path", f"{net}.har", "-y"]
    if start:
        parse += [PARSER.start_flag, *start]
    if end:
        parse += [PARSER.end_flag, *end]
    opt = [exe, "optimize", f"{net}.har", hw, arch, "--model-script", script, "--calib-set-path", calib.file]
    opt += ["--output-har-path", f"{net}_optimized.har"]
    comp = [exe, "compiler", f"{net}_optimized.har", hw, arch, "--output-dir", "."]
    return [("parser", parse), ("optimize", opt), ("compiler", comp)]


def read_results(folder: str | os.PathLike, model: str | os.PathLike | None = None) -> CompileResult:
    """What the emitted script (or a run here) left in `folder`: the DFC's steps, the HEF, parse-hef, as a
    CompileResult. `model`, when given, must be the model the folder was written for."""

    d = Path(folder)
    m = read_json(d / MANIFEST, "Hailo compile folder") if (d / MANIFEST).is_file() else None
    if not isinstance(m, dict) or m.get("schema") != MANIFEST_SCHEMA:
        raise NpufitError(
            f"{d}: not a folder npufit wrote for the Hailo DFC (no {MANIFEST}); write one with "
            "'npufit compile MODEL --target hailo8 --emit-script DIR'"
        )
    try:
        src, sha, source = d / m["model"]["file"], m["model"]["sha256"], m["model"]["source"]
        start, end, hef, target = list(m["start_nodes"]), list(m["end_nodes"]), d / m["hef"], m["target"]
        calib = CalibrationFile(**m["calibration"])
    except (KeyError, TypeError):
        raise NpufitError(f"{d / MANIFEST}: damaged (a field npufit writes is missing); write it again") from None
    if model is not None and sha256_file(model) != sha:
        raise NpufitError(f"{d} was written for {source}, not for {model} (sha256 differs)")
    steps = read_steps(d)
    if not steps:
        raise NpufitError(f"{d}: the script has not run yet (no logs/steps.tsv): run 'bash {d / SCRIPT}' first")
    res = CompileResult(HAILO.status_name, None, target, str(model or source), False)
    res.timings = {k: s for k, (_rc, s) in steps.items()}
    res.wall_s = round(sum(s for k, (_rc, s) in steps.items() if k in DFC_STEPS), 3)
    res.command = f"bash {d / SCRIPT}"
    res.metrics.update({"start_nodes": start, "end_nodes": end, "calibration": calib.describe()})
    failed = next(((k, rc) for k, (rc, _s) in steps.items() if rc != 0 and k in DFC_STEPS), None)
    if failed:
        res.error = f"hailo {failed[0]} failed (exit {failed[1]}): {tail(read_log(d, failed[0]) or '', 2)}"
    elif hef.is_file():
        res.ok, res.artifact = True, str(hef)
    else:
        res.error = f"{hef.name} is missing: the Dataflow Compiler steps did not run to the end"
    res.log_path = str(log_path(d, next(reversed(steps))))
    res.outputs = {"script": str(d / SCRIPT), "logs": str(d / "logs")}
    res.notes.append(f"read back from {d}: the steps ran where the script ran, not in this npufit process")
    graph = load(src)
    reasons, taken = _fold_logs(res, d, graph, end, calib)
    res.placement = _placement(graph, region(graph, start, taken or end), reasons)
    return res


def _run_dfc(res: CompileResult, exe: str, out: Path, steps, options: CompileOptions) -> None:
    wall, peak, lines = 0.0, 0.0, []
    for stage, argv in steps:
        run = run_tool([exe, *argv[1:]], log_path(out, stage), cwd=out, timeout_s=options.timeout_s)
        res.timings[stage] = run.wall_s
        record_step(out, stage, run.returncode, run.wall_s)
        wall += run.wall_s
        peak = max(peak, run.peak_rss_mb or 0.0)
        res.log_path = str(run.log_path)
        lines.append(run.command_line)
        if run.returncode != 0:
            why = run.killed or f"exit {run.returncode}"
            res.error = f"hailo {stage} failed ({why}): {tail(run.log, 2)}"
            break
    else:
        res.ok = True
    res.command = " && ".join(lines)
    res.wall_s, res.peak_rss_mb = round(wall, 3), peak or None
    res.outputs["logs"] = str(out / "logs")


def _fold_logs(
    res: CompileResult, folder: Path, graph, end: list[str], calib: CalibrationFile
) -> tuple[dict[str, str], list[str]]:
    """What the logs in `folder` say, into res.metrics and notes; returns the parser's per-node errors and, when
    it took other end nodes than the requested `end` (its own recommendation, with -y), those."""
    reasons: dict[str, str] = {}
    taken: list[str] = []
    parser_log = read_log(folder, "parser") or ""
    if parser_log and not res.ok:
        reasons, recommended = parse_parser_errors(parser_log)
        if reasons or recommended:
            res.metrics["parser_errors"] = reasons
            res.metrics["recommended_end_nodes"] = recommended
    starts, ends = parse_mapped_nodes(parser_log)
    asked = end or [p.name for o in graph.output_names if (p := graph.producer(o)) is not None]
    if ends and set(ends) != set(asked) and all(graph.node(e) for e in ends):
        taken = ends
        res.metrics["end_nodes"] = ends
        res.notes.append(
            f"the parser took the end nodes {', '.join(ends)} (its recommendation) instead of {', '.join(asked)}: "
            "what lies after them runs on the host"
        )
    wrote = {i["tensor"]: i["layer"] for i in calib.inputs}
    moved = [(a, b) for a, b in starts if a in wrote and wrote[a] != b]
    if moved:  # the DFC numbered its input layers otherwise than npufit keyed the calibration set
        res.notes.append(
            "the parser mapped "
            + ", ".join(f"{a} to {b}" for a, b in moved)
            + f"; {calib.file} holds them as "
            + ", ".join(f"{a}: {wrote[a]}" for a, _ in moved)
        )
    snr = parse_snr(read_log(folder, "optimize") or "")
    if snr:
        res.metrics["snr_db"] = snr
    contexts = parse_contexts(read_log(folder, "compiler") or "")
    if contexts is not None:
        res.metrics["contexts"] = contexts
    hef = parse_hef(read_log(folder, "parse-hef") or "")
    if hef:
        res.metrics["hef"] = {
            k: (", ".join(f"{x['name']} {x['format']}({x['shape']})" for x in v) if isinstance(v, list) else v)
            for k, v in hef.items()
        }
        if hef.get("arch") and hef["arch"].lower() != res.target.lower():
            res.notes.append(f"the HEF was compiled for {hef['arch']}, not {res.target}")
    device = parse_identify(read_log(folder, "identify") or "")
    if device:
        res.metrics["device"] = device
        if hef.get("arch") and device.get("arch") and device["arch"] != hef["arch"]:
            res.notes.append(f"the device is a {device['arch']}: HailoRT refuses a HEF compiled for {hef['arch']}")
    versions = parse_versions((read_log(folder, "dfc-version") or "") + (read_log(folder, "hailort-version") or ""))
    res.compiler_version = res.compiler_version or versions.get("dfc")
    if versions.get("hailort"):
        res.metrics["hailort_version"] = versions["hailort"]
    return reasons, taken


def _version(exe: str, folder: Path | None = None) -> str | None:
    """The DFC's version from `hailo --version` (kept in logs/dfc-version.log, as the script keeps it)."""
    try:
        p = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if folder is not None:
        atomic_write_text(log_path(folder, "dfc-version"), p.stdout + p.stderr)
    return parse_versions(p.stdout + p.stderr).get("dfc")


def _start_end(model: Path, target: str, options: CompileOptions) -> tuple[list[str], list[str]]:
    if options.start_nodes or options.end_nodes:
        return _known_nodes(model, list(options.start_nodes), list(options.end_nodes), options, "--start/--end-nodes")
    if options.plan:
        plan = load_plan(options.plan)
        npu = [s for s in plan.stages if s.device == "npu"]
        if not npu:
            raise NpufitError(f"{options.plan}: the plan has no NPU stage")
        if _is_stage_file(model, Path(options.plan).parent / npu[0].file):
            return [], []  # the NPU stage's own file (a pipeline's split step hands it on): parse it whole
        _same_model(model, plan.source, options.plan)
        return _known_nodes(
            model, list(npu[0].start_node_names), list(npu[0].end_node_names), options, f"--plan {options.plan}"
        )

    pre = predict(model, _profile_for(target), options.input_shapes).prefix
    if pre.get("covers_whole_model"):
        return [], []
    return list(pre.get("start_nodes", [])), list(pre.get("end_nodes", []))


def _is_stage_file(model: Path, stage: Path) -> bool:

    return stage.is_file() and sha256_file(stage) == sha256_file(model)


def _profile_for(target: str):
    """The target's profile; an architecture npufit has none for (hailo15h, ...) is cut where Hailo-8 would cut it."""

    try:
        return get_profile(target)
    except NpufitError:
        return get_profile(HAILO.platforms[0])


def _same_model(model: Path, src: dict, plan_path) -> None:
    """A plan names nodes of the model it was split from; another model's plan would name nodes that do not exist."""

    want = src.get("sha256") if isinstance(src, dict) else None
    if want and want != sha256_file(model):
        raise NpufitError(
            f"--plan {plan_path}: the plan was split from {src.get('file', 'another model')}, not from "
            f"{model.name} (sha256 differs); split this model first"
        )


def _known_nodes(model: Path, start: list[str], end: list[str], options, origin: str) -> tuple[list[str], list[str]]:

    g = load(model, options.input_shapes)
    missing = [n for n in start + end if g.node(n) is None]
    if missing:
        shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        raise NpufitError(
            f"{origin}: {shown} {'is not a node' if len(missing) == 1 else 'are not nodes'} of {model.name}"
        )
    return start, end


def _write_model_script(out: Path, net: str, calib: CalibrationFile) -> str:
    """The DFC model script (.alls): compile for throughput; calibrate on every sample npufit wrote."""
    lines = ["# npufit-generated model script for the Hailo DFC", "performance_param(compiler_optimization_level=max)"]
    lines.append(f"model_optimization_config(calibration, batch_size=1, calibset_size={calib.samples})")
    if calib.random:  # seeded random data is only good for checking that the model compiles
        lines.append("model_optimization_flavor(optimization_level=0, compression_level=0)")
    name = f"{net}.alls"
    atomic_write_text(out / name, "\n".join(lines) + "\n")
    return name


def _header(model: Path, target: str, net: str, calib: CalibrationFile) -> list[str]:
    return [
        f"Generated by npufit {__version__} for {target}: {model.name} -> {net}.hef, then parse-hef and a benchmark.",
        "Run it as is where the Hailo Dataflow Compiler ('hailo') is installed; parse-hef and the benchmark run where",
        "HailoRT ('hailortcli') and a Hailo device are (one machine may have both: run it again there otherwise).",
        "Each step's output goes to logs/<step>.log; 'npufit compile --results DIR' reads this folder back.",
        "NOT run by npufit itself (the DFC is login-gated).",
        f"Calibration set {calib.describe()}",
    ]


def _write_manifest(out: Path, model: Path, src: Path, target: str, net: str, start, end, calib, script, steps) -> None:

    atomic_write_json(
        out / MANIFEST,
        {
            "schema": MANIFEST_SCHEMA,
            "npufit_version": __version__,
            "target": target,
            "net": net,
            "model": {"file": src.relative_to(out).as_posix(), "source": str(model), "sha256": sha256_file(src)},
            "start_nodes": start,
            "end_nodes": end,
            "calibration": calib.to_dict(),
            "model_script": script,
            "hef": f"{net}.hef",
            "steps": {stage: argv for stage, argv in steps},
        },
    )


def _placement(graph, nodes: set[str], errors: dict[str, str]) -> list[Placement]:
    out = []
    for n in graph.top_nodes:
        if n.name in errors:
            out.append(Placement(n.name, n.op_type, "cpu", errors[n.name] + " (no CPU fallback in a HEF: cut it away)"))
        elif n.name in nodes:
            out.append(Placement(n.name, n.op_type, "npu"))
        else:
            why = "outside the parsed start/end-node region: runs on the host"
            out.append(Placement(n.name, n.op_type, "cpu", why, how="absent"))
    return out

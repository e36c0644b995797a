"""The nine steps. Each calls the same library function as its CLI verb and writes into its cell folder.

A vendor tool or runtime that is not installed skips the cell with the reason (retried next run). The verbs are
imported at the top: the CLI reads the step names (stepdefs.py) only when --from/--only is checked.
"""

from __future__ import annotations

import inspect
import os
import shutil
from collections.abc import Collection
from pathlib import Path
from typing import Any

from ..bench import bench
from ..compilers import OPTION_NAMES, compile_model, compiler_for, compiler_names, unknown_options
from ..errors import NpufitError, UnsupportedModelError
from ..graph.onnx_prepare import pin_inputs, read_onnx
from ..placement import check, place, reads_placement
from ..quantize import quantize
from ..report.model_explorer import write_node_data
from ..rewrite import fix
from ..split import split
from ..split.plan import PLAN_FILE, load_plan
from ..targets import get_profile
from ..targets.base import Executes, Fallback
from ..util.io import atomic_save_onnx, atomic_write_bytes, atomic_write_json, private_tempdir
from ..util.readers import confined, read_bytes_capped
from ..util.shapes import dims_text
from ..zoo.timeseries import export
from ..zoo.train import build_for, load_trained, save_weights, train
from .context import Outcome, Reject, Skip, StepContext
from .measure import measure
from .results import (
    BenchStepResult,
    CheckStepResult,
    CompileStepResult,
    ExportStepResult,
    FixStepResult,
    QuantizeStepResult,
    ReportStepResult,
    SplitStepResult,
    TrainStepResult,
)


def call(step: str, fn, *args, accepts: Collection[str] | None = None, **kwargs):
    """Call a step's library function with its keyword options (None values left out: the verb's defaults apply).
    An option the function does not take is an error naming the step and the option, never dropped. `accepts`:
    the option names of a function that takes **options and checks them itself (compile_model)."""
    if accepts is None:
        params = inspect.signature(fn).parameters
        if any(p.kind == p.VAR_KEYWORD for p in params.values()):
            raise NpufitError(f"step '{step}': {fn.__name__} takes **options: name them with accepts=")
        accepts = [k for k, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    unknown = [k for k in kwargs if k not in accepts]
    if unknown:
        raise NpufitError(
            f"step '{step}': {fn.__module__}.{fn.__name__} has no option {', '.join(map(repr, unknown))} "
            f"(its options: {', '.join(accepts)})"
        )
    return fn(*args, **{k: v for k, v in kwargs.items() if v is not None})


def save_result(result: Any, path: Path) -> None:
    """The library result as its verb writes it with --format json (the report renders it)."""
    atomic_write_json(path, result.to_dict())


# -- train / export -----------------------------------------------------------------------------------
def run_train(ctx: StepContext) -> Outcome:
    s, spec, ds = ctx.settings, ctx.spec, ctx.dataset()
    module, res = train(
        spec.arch,
        ds,
        epochs=s["epochs"],
        hidden=spec.hidden,
        layers=spec.layers,
        lr=s["lr"],
        batch_size=s["batch_size"],
        seed=s["seed"],
        max_windows=s["max_windows"],
    )
    save_weights(module, ctx.folder / "model.pt")
    atomic_write_json(ctx.folder / "train.json", {**res.to_dict(), "dataset": ds.to_dict()})
    # real windows for calibration (training part, spread over all of it), held-back windows from the same period
    # that calibration never sees (for the int8 accuracy), and bench/verification inputs (validation part)
    ds.save_npz(ctx.folder / "calibration.npz", "train", limit=256, stack=True)
    ds.save_npz(ctx.folder / "holdout.npz", "train", limit=256, stack=True, between=True)
    ds.save_npz(ctx.folder / "validation.npz", "val", limit=256, stack=True)
    ds.save_npy_folder(ctx.folder / "calibration_npy", "train", limit=64)  # RKNN's dataset format
    f = res.final
    return Outcome(
        {
            "weights": "model.pt",
            "history": "train.json",
            "calibration": "calibration.npz",
            "holdout": "holdout.npz",
            "validation": "validation.npz",
            "calibration_npy": "calibration_npy",
        },
        TrainStepResult(
            train_loss=f["train_loss"],
            val_loss=f["val_loss"],
            baseline_val_loss=res.baseline_val_loss,
            epochs=len(res.history),
            parameters=res.parameters,
            train_seconds=round(res.seconds, 2),
        ),
        f"val MSE {f['val_loss']:.4f} (last-value baseline {res.baseline_val_loss:.4f})",
    )


def run_export(ctx: StepContext) -> Outcome:
    out = ctx.folder / "model.onnx"
    spec = ctx.spec
    if spec.onnx is not None:
        # the user's file is only read: the copy later steps read is written with the pinned shapes, or as it is
        m, pinned = _pin_shapes(spec.onnx, spec)  # a broken file fails here, with the loader's clear message
        if pinned:
            atomic_save_onnx(m, out)
        else:
            # a copy: later steps never touch the user's file (a regular file, within protobuf's 2 GiB)
            atomic_write_bytes(out, read_bytes_capped(spec.onnx, 2048 * 1024 * 1024, "ONNX file"))
        note = f"copied {spec.onnx.name}"
    else:
        ds = ctx.dataset()
        weights = ctx.input("train", "weights")
        module = (
            load_trained(spec.arch, weights, ds, spec.hidden, spec.layers)
            if weights
            else build_for(spec.arch, ds, spec.hidden, spec.layers)
        )
        with private_tempdir("export") as tmp:
            raw = tmp / "model.onnx"
            export(module, raw, features=len(ds.features), seq_len=ds.seq_len, opset=ctx.settings["opset"])
            m, pinned = _pin_shapes(raw, spec)
            atomic_save_onnx(m, out)
        note = f"opset {ctx.settings['opset']}" + ("" if weights else " (untrained weights: no train step)")
    if pinned:
        note += f"; {pinned}"
    return Outcome({"model": "model.onnx"}, ExportStepResult(nodes=len(m.graph.node), bytes=out.stat().st_size), note)


def _pin_shapes(src: Path, spec):
    """The shape policy on the model every later step reads (util.shapes): the entry's input_shapes and a dynamic
    batch (pinned to 1) are written into it; other unknown dims fail the step, naming the key to set.
    -> (the model, a note of what was pinned or "")."""
    prep = read_onnx(src, pin_inputs(spec.input_shapes), external_data="loaded")
    if prep.shapes.needed:
        n = prep.shapes.needed[0]
        raise NpufitError(
            f"{n.describe()}: every step runs the model at one shape; set it in the model's entry, e.g. "
            f"input_shapes: {{{n.name}: [{', '.join(map(str, n.example))}]}}"
        )
    pinned = prep.shapes.pinned
    return prep.model, ("input shapes " + ", ".join(f"{k}={dims_text(v)}" for k, v in pinned.items()) if pinned else "")


# -- check / fix / split ---------------------------------------------------------------------------------
def pipeline_judge(target: str) -> str:
    """How the pipeline judges a float model on `target`, the same in its check, fix and split steps: its
    compile step builds int8 wherever the target runs int8 (Ethos-U/N, RK3588); Hailo's DFC quantizes itself."""
    return "int8" if get_profile(target).executes in (Executes.INT8, Executes.FP16_INT8) else "auto"


def run_check(ctx: StepContext) -> Outcome:
    report = check(
        ctx.model_input(), ctx.cell.target, judge=pipeline_judge(ctx.cell.target), measure=ctx.settings["measure"]
    )
    assume_int8 = report.target["judged_as"] == "int8"
    atomic_write_json(ctx.folder / "check.json", report.to_dict())
    write_node_data(report, ctx.folder / "model_explorer.json", ctx.model_input())
    s = report.summary()
    placed = report.extra.get("placement") or {}  # when measured: how far the prediction is from the compiler
    result = CheckStepResult(
        coverage_nodes_pct=s["coverage_nodes_pct"],
        coverage_macs_pct=s["coverage_macs_pct"],
        npu_partitions=s["npu_partitions"],
        host_partitions=s["host_partitions"],
        boundaries=s["boundaries"],
        fully_npu=s["fully_npu"],
        failing=len(report.failing),
        measured_differing=len(placed["disagreements"]) if placed.get("source") == "measured" else None,
    )
    ops = sorted({n.op_type for n in report.failing})
    note = (
        f"{s['coverage_nodes_pct']:.0f}% of nodes on the NPU, {s['npu_partitions']} NPU / "
        f"{s['host_partitions']} host partition(s)"
    )
    note += " (as int8)" if assume_int8 else ""
    return Outcome(
        {"report": "check.json", "model_explorer": "model_explorer.json"},
        result,
        note + (f"; off the NPU: {', '.join(ops)}" if ops else ""),
    )


def run_fix(ctx: StepContext) -> Outcome:
    s, out = ctx.settings, ctx.folder / "model.onnx"
    result = call(
        "fix",
        reads_placement(fix),
        str(ctx.model_input()),
        target=ctx.cell.target,
        output=str(out),
        rules=s["rules"],
        skip_rules=s["skip_rules"],
        allow_approx=s["allow_approx"],
        judge=pipeline_judge(ctx.cell.target),
    )
    save_result(result, ctx.folder / "fix.json")
    if not out.exists():  # nothing fired: the model passes through unchanged
        shutil.copyfile(ctx.model_input(), out)
    typed = FixStepResult(
        coverage_before_pct=round(result.before.coverage_pct, 2),
        coverage_after_pct=round(result.after.coverage_pct, 2),
        rules_applied=len(result.applied),
        written=result.written,
    )
    return Outcome({"model": "model.onnx", "report": "fix.json"}, typed, _fix_note(result))


def _fix_note(result) -> str:
    """The step line of a rewrite.FixResult: the rules that changed the model, and coverage before -> after."""
    fired = [r for r in result.applied if r.fired]
    cov = f"; coverage {result.before.coverage_pct:.0f}% -> {result.after.coverage_pct:.0f}%"
    if not fired:
        return "no rewrite applied" + cov
    return "applied " + ", ".join(f"{r.name} x{r.fired}" for r in fired) + cov


def run_split(ctx: StepContext) -> Outcome:
    s, model, target = ctx.settings, ctx.model_input(), ctx.cell.target
    report = place(model, target, judge=pipeline_judge(target))  # the check step's placement (one per run)
    if report.fully_npu:
        shutil.copyfile(model, ctx.folder / "model.onnx")
        return Outcome(
            {"model": "model.onnx"},
            SplitStepResult(needed=False, stages=1, npu_macs_pct=100.0, split_s=None),
            "not needed: the whole model runs on the NPU",
        )

    fallback = get_profile(target).fallback
    if fallback is not Fallback.NONE and not s["always"]:
        # the vendor runtime runs the other nodes on its CPU inside the compiled model: nothing to cut by hand
        shutil.copyfile(model, ctx.folder / "model.onnx")
        return Outcome(
            {"model": "model.onnx"},
            SplitStepResult(needed=False, stages=1, npu_macs_pct=report.coverage_macs, split_s=None),
            f"not needed: {target} runs its {len(report.failing)} non-NPU node(s) on its {fallback.value} fallback "
            "inside the compiled model (the compile step shows the real placement)",
        )
    prefix = report.prefix
    share = prefix["macs_pct"] or 0.0  # None: a model without MACs
    # a prefix with no multiply-accumulate work (a layout op before an RNN) would be an NPU stage that computes nothing
    idle = prefix["macs_pct"] == 0
    if s["mode"] == "prefix" and (prefix["node_count"] == 0 or idle or share < s["min_npu_macs_pct"]):
        first = report.failing[0]
        why = first.reasons[0].sentence() if first.reasons else first.verdict.value
        raise Reject(
            f"rejected for {target}: the NPU-runnable prefix holds {share:.0f}% of the MACs "
            f"(needs >= {s['min_npu_macs_pct']:g}%); {first.op_type} '{first.name}': {why}"
        )
    plan_dir = ctx.folder / "plan"
    result = call(
        "split",
        reads_placement(split),
        str(model),
        target=target,
        output_dir=str(plan_dir),
        mode=s["mode"],
        min_nodes=s["min_nodes"],
        judge=pipeline_judge(target),
        placement=report,
        **({"max_npu_stages": s["max_npu_stages"]} if s["mode"] == "segments" and s["max_npu_stages"] else {}),
    )
    save_result(result, ctx.folder / "split.json")
    npu = _npu_stage(plan_dir)
    if npu is None:
        raise Reject(f"rejected for {target}: the split plan has no NPU stage")
    shutil.copyfile(npu, ctx.folder / "model.onnx")
    typed = SplitStepResult(
        needed=True, stages=len(result.plan.stages), npu_macs_pct=share, split_s=result.timings["total_s"]
    )
    return Outcome(
        {"model": "model.onnx", "plan": "plan", "report": "split.json"},
        typed,
        f"NPU stage {npu.name} ({share:.0f}% of MACs), the rest on the host",
    )


def _npu_stage(plan_dir: Path) -> Path | None:
    if not (plan_dir / PLAN_FILE).is_file():
        return None
    for st in load_plan(plan_dir).stages:  # schema-checked, stage files inside the plan folder
        if st.device == "npu":
            return plan_dir / st.file
    return None


# -- quantize / compile ------------------------------------------------------------------------------------
def run_quantize(ctx: StepContext) -> Outcome:
    s, out = ctx.settings, ctx.folder / "model.int8.onnx"
    calib, held = ctx.input("train", "calibration"), ctx.input("train", "holdout")
    result = call(
        "quantize",
        quantize,
        str(ctx.model_input()),
        output=str(out),
        calibration=str(calib) if calib else "random",
        method=s["method"],
        per_channel=s["per_channel"],
        samples=s["samples"],
        holdout=s["holdout"],
        evaluation=str(held) if held else None,
    )
    save_result(result, ctx.folder / "quantize.json")
    # the summary's keys are the typed result's fields: a renamed one is an error naming it, not a None
    typed = QuantizeStepResult.from_dict(result.summary(), "quantize summary")
    note, floor = quantize_note(typed, s["warn_sqnr_db"]), s["min_sqnr_db"]
    if _below(typed.min_output_sqnr_db, floor):
        raise NpufitError(
            f"int8 output SQNR below the floor min_sqnr_db {floor:g} dB: {note} (see {ctx.folder / 'quantize.json'})"
        )
    return Outcome(
        {"model": "model.int8.onnx", "report": "quantize.json"},
        typed,
        note + ("" if calib else "; random calibration data: accuracy numbers mean little"),
    )


def _below(sqnr_db: float | str | None, floor: float) -> bool:
    """None is exact (above any floor); "-inf" (non-finite int8 values) is below every one."""
    return sqnr_db == "-inf" or (isinstance(sqnr_db, (int, float)) and sqnr_db < floor)


def quantize_note(q: QuantizeStepResult, warn_db: float) -> str:
    """The step line: worst output SQNR and cosine vs float, samples, and a warning below `warn_db` (with the cause)."""
    sq, cos = q.min_output_sqnr_db, q.min_output_cosine
    if cos is None:
        return f"{q.calibration_samples} calibration samples; no held-back samples, no accuracy measured"
    shown = "exact" if sq is None else (f"{sq:.1f} dB" if isinstance(sq, (int, float)) else str(sq))
    text = (
        f"SQNR {shown}, cosine {cos:.4f} vs float on {q.holdout_samples} held-back; "
        f"{q.calibration_samples} calibration samples"
    )
    if _below(sq, warn_db):
        clip = q.max_clipped_fraction or 0.0  # None only without held-back samples, returned above
        why = (
            f"; {clip:.1%} of some tensor's held-back values saturate: more or more representative calibration data"
            if clip > 0.001
            else ""
        )
        text = f"warning: {text}, below {warn_db:g} dB{why}"
    return text


def _compile_settings(s: dict[str, Any], comp) -> None:
    """steps.compile.compilers names compilers npufit has; steps.compile.options are options this compiler reads."""
    bad = [c for c in s["compilers"] or () if c not in compiler_names()]
    if bad:
        raise NpufitError(
            f"step 'compile': steps.compile.compilers names unknown compiler(s) {', '.join(map(repr, bad))} "
            f"(known: {', '.join(compiler_names())})"
        )
    bad = unknown_options(comp, s["options"])
    if bad:
        raise NpufitError(
            f"step 'compile': {comp.name} has no option {', '.join(map(repr, bad))} in steps.compile.options "
            f"(its options: {', '.join(comp.extra_options) or 'none'})"
        )


# compiler adapter's calibration_format -> the train output that holds it
CALIBRATION_INPUT = {"npy-folder": "calibration_npy", "npz": "calibration"}


def run_compile(ctx: StepContext) -> Outcome:
    try:
        comp = compiler_for(ctx.cell.target)
    except NpufitError as e:
        raise Skip(e.message) from None
    s = ctx.settings
    _compile_settings(s, comp)
    if s["compilers"] and comp.name not in s["compilers"]:
        raise Skip(
            f"{ctx.cell.target} compiles with {comp.name}, not in steps.compile.compilers ({', '.join(s['compilers'])})"
        )
    state = comp.status()
    if not state.get("available"):
        raise Skip(
            f"{state.get('name', 'compiler')} not installed "
            f"({state.get('install') or state.get('detail') or 'see npufit doctor'})"
        )
    model = ctx.model_input()
    # the train step writes both forms: a folder of .npy samples (RKNN) and one .npz stack (the others)
    calib = ctx.input("train", CALIBRATION_INPUT[comp.calibration_format])
    plan = ctx.input("split", "plan")
    with measure() as usage:
        try:
            result = call(
                "compile",
                compile_model,
                str(model),
                ctx.cell.target,
                accepts=OPTION_NAMES,
                out_dir=str(ctx.folder / "out"),
                quantize=True,
                calibration=str(calib) if calib else None,
                plan=str(plan / PLAN_FILE) if plan and (plan / PLAN_FILE).exists() else None,
                extra=s["options"],
            )
        except UnsupportedModelError as e:  # the toolchain cannot take this model: a finding, not a tool failure
            raise Reject(f"rejected by the {ctx.cell.target} toolchain: {e.message}") from None
    save_result(result, ctx.folder / "compile.json")
    if not result.ok:
        raise NpufitError(f"{result.compiler} failed: {result.error or 'see ' + str(ctx.folder / 'compile.json')}")
    # the compiler's own measurement of its child process is the better number when it has one
    wall = result.wall_s or usage.wall_s
    peak = result.peak_rss_mb or usage.peak_rss_bytes / 2**20
    devices = [p.device for p in result.placement]
    folded = devices.count("folded")  # folded nodes run nowhere: counted apart, as check counts them
    typed = CompileStepResult(
        compiler=result.compiler,
        compiler_version=result.compiler_version,
        model_bytes=model.stat().st_size,
        wall_s=round(wall, 3),
        peak_rss_mb=round(peak, 1),
        pipeline_wall_s=round(usage.wall_s, 3),
        pipeline_peak_rss_mb=round(usage.peak_rss_bytes / 2**20, 1),
        npu_nodes=devices.count("npu") if devices else None,
        placed_nodes=len(devices) - folded if devices else None,
    )
    note = f"{result.compiler} {result.compiler_version or ''}: {wall:.1f} s, peak {peak:.0f} MiB"
    if devices:  # so 100% means the same here as in check
        note += f", {typed.npu_nodes}/{typed.placed_nodes} nodes on the NPU" + (f" ({folded} folded)" if folded else "")
    if len(result.timings) > 1:  # a compiler that runs in steps (the Hailo DFC: parser, optimize, compiler)
        note += "; " + ", ".join(f"{k} {v:.1f} s" for k, v in result.timings.items())
    return Outcome({"report": "compile.json", "artifacts": "out"}, typed, note)


# -- bench / report ------------------------------------------------------------------------------------------
def run_bench(ctx: StepContext) -> Outcome:
    s = ctx.settings
    inputs = ctx.input("train", "validation")
    result = call(
        "bench",
        bench,
        str(ctx.model_input()),
        runtime=ctx.cell.runtime,
        iterations=s["iterations"],
        warmup=s["warmup"],
        threads=s["threads"],
        inputs=str(inputs) if inputs else None,
        fresh_inputs=bool(inputs),
    )
    save_result(result, ctx.folder / "bench.json")
    rows = result.results
    if rows and all(r.status == "skipped" for r in rows):
        raise Skip("; ".join(r.reason for r in rows))
    ok = result.measured
    if not ok:
        raise NpufitError("; ".join(f"{r.runtime}: {r.reason or r.status}" for r in rows) or "no result")
    r = ok[0]
    lat = r.latency_ms  # every LATENCY_KEYS entry for a runtime that measured
    typed = BenchStepResult(
        runtime=r.runtime,
        p50_ms=lat["p50"],
        p99_ms=lat["p99"],
        mean_ms=lat["mean"],
        throughput_ips=r.throughput_ips,
        iterations=r.iterations,
    )
    return Outcome(
        {"report": "bench.json"},
        typed,
        f"p50 {typed.p50_ms:.3f} ms, {typed.throughput_ips or 0:.0f} inf/s ({r.boundary})",
    )


def run_report(ctx: StepContext) -> Outcome:
    # cycle: report.html_results reads npufit.pipeline.results, whose package imports this module (runner)
    from ..report.html_results import build_report

    # at the top of the results folder, where people look for it (`npufit report` writes the same file)
    out = confined(ctx.config.output_dir, ctx.settings["output"], "steps.report.output")
    path = build_report(ctx.config.output_dir, out)
    return Outcome(
        {"html": os.path.relpath(path, ctx.folder)}, ReportStepResult(bytes=path.stat().st_size), f"wrote {path}"
    )

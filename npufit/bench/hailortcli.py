"""A Hailo compile folder read back after its script ran on a Hailo machine: the compile result, and HailoRT's
own `hailortcli benchmark` figures in npufit's bench schema (bench.json), so `npufit bench --compare` can put
the NPU beside ONNX Runtime or TensorRT runs of the same model.

The figures are HailoRT's, measured under its protocol, not npufit's timed loop: FPS in `hw_only` mode (the
device alone: compute-only) and in `streaming` mode (host transfers included: host-to-host), HailoRT's mean
hardware latency, and the power it read. Each is one row of the bench result, marked `vendor_figures`.
"""

from __future__ import annotations

import datetime as _dt
import os
from pathlib import Path
from typing import Any

from ..compilers.base import CompileResult
from ..compilers.hailo import read_results
from ..compilers.hailo_logs import parse_machine, read_log, read_steps
from ..compilers.hailo_script import BENCH_SECONDS
from ..runtimes.base import BOUNDARY_DEVICE, BOUNDARY_HOST
from ..runtimes.hailort import parse_hailortcli_benchmark, parse_hailortcli_csv, parse_hailortcli_progress
from ..util.io import atomic_write_json
from .environment import model_identity
from .result import BenchResult, RuntimeResult

TOOL = "hailortcli benchmark"
MODES = {
    BOUNDARY_DEVICE: ("hw_only", "the device runs frames with no host transfer (HailoRT's hw_only mode)"),
    BOUNDARY_HOST: ("streaming", "frames are sent from and read back to the host (HailoRT's streaming mode)"),
}


def figures(folder: Path) -> dict[str, float]:
    """Every figure the benchmark log and its CSV hold: fps_hw_only, fps_streaming, latency_hw_ms, frames_*,
    power_*_w; the CSV (exact columns) wins over the Summary, which wins over the progress lines."""
    text = read_log(folder, "benchmark") or ""
    out = parse_hailortcli_progress(text)
    summary = parse_hailortcli_benchmark(text)
    out.update({k: v for k, v in summary.items() if k in ("fps_hw_only", "fps_streaming", "latency_hw_ms")})
    out.update({k: v for k, v in summary.items() if k.startswith("power_")})
    csv_file = folder / "logs" / "benchmark.csv"
    rows = parse_hailortcli_csv(csv_file.read_text("utf-8", "replace")) if csv_file.is_file() else []
    if rows:
        names = {"fps": "fps_streaming", "hw_only_fps": "fps_hw_only", "num_of_frames": "frames_streaming"}
        names |= {"num_of_frames_hw_only": "frames_hw_only", "hw_latency": "latency_hw_ms"}
        names |= {"overall_latency": "latency_overall_ms", "average_power": "power_average_w"}
        names["max_power"] = "power_max_w"
        out.update({names[k]: float(v) for k, v in rows[0].items() if k in names and isinstance(v, float)})
    return out


def benchmark_result(folder: str | os.PathLike, compiled: CompileResult) -> BenchResult | None:
    """The benchmark the script ran, as a BenchResult (None when it did not run: no Hailo device there)."""
    d = Path(folder)
    figs = figures(d)
    if not any(k.startswith("fps_") for k in figs):
        return None
    device = compiled.metrics.get("device", {})
    rows = []
    for boundary, (mode, text) in MODES.items():
        fps = figs.get(f"fps_{mode}")
        if fps is None:
            continue
        latency = figs.get("latency_hw_ms" if mode == "hw_only" else "latency_overall_ms")
        details: dict[str, Any] = {"vendor_figures": TOOL, "mode": mode, "log": str(d / "logs" / "benchmark.log")}
        if mode == "streaming":
            details.update({k: v for k, v in figs.items() if k.startswith("power_")})
        rows.append(
            RuntimeResult(
                runtime=f"hailortcli:{mode}",
                status="ok",
                title=f"HailoRT CLI benchmark ({mode})",
                version=compiled.metrics.get("hailort_version"),
                device_kind="npu",
                boundary=boundary,
                boundary_text=text + ("; latency: HailoRT's mean hardware latency" if latency is not None else ""),
                iterations=int(figs.get(f"frames_{mode}", 0)),
                latency_ms={"mean": latency} if latency is not None else {},
                throughput_ips=fps,
                details=details,
            )
        )
    steps = read_steps(d)
    rc = steps.get("benchmark", (0, 0.0))[0]
    warnings = []
    if rc != 0:
        last = (read_log(d, "benchmark") or "").strip().splitlines()[-1:] or [""]
        warnings.append(f"{TOOL} stopped (exit {rc}: {last[0].strip()}); the figures it measured before are kept")
    env = {"hailo_device": device, "hailort": compiled.metrics.get("hailort_version")}
    env |= parse_machine(read_log(d, "machine") or "")
    hef = Path(compiled.artifact) if compiled.artifact else None
    return BenchResult(
        model=model_identity(hef) if hef and hef.is_file() else {"path": str(d)},
        protocol={
            "tool": TOOL,
            "warmup": "HailoRT's own",
            "iterations": None,
            "duration_s": BENCH_SECONDS,  # per mode (hailortcli --time-to-run)
            "batch": 1,
            "threads": None,
            "inputs": "HailoRT's own (no --input-files)",
        },
        environment=env,
        results=rows,
        warnings=warnings,
        created=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        inputs=TOOL,
    )


def read_hailo_results(folder: str | os.PathLike, model: str | os.PathLike | None = None) -> CompileResult:
    """`npufit compile --results DIR`: the compile folder read back (compilers.hailo.read_results) with the
    benchmark folded in: its figures in the result's metrics, the bench schema in DIR/bench.json."""
    res = read_results(folder, model)
    bench = benchmark_result(folder, res)
    if bench is None:
        res.notes.append("no benchmark figures in logs/: the script benchmarks where a Hailo device answers")
        return res
    path = atomic_write_json(Path(folder) / "bench.json", bench.to_dict())
    res.outputs["bench"] = str(path)
    figs = figures(Path(folder))
    keep = ("fps_hw_only", "fps_streaming", "latency_hw_ms", "power_average_w")
    res.metrics["benchmark"] = {k: figs[k] for k in keep if k in figs}
    res.notes += bench.warnings
    return res

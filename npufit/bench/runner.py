"""Benchmark one runtime under the protocol: build, cold call, warm-up, timed loop, statistics, memory."""

from __future__ import annotations

import gc
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import NpufitError
from ..runtimes import BOUNDARY_TEXT, runner_class
from ..runtimes.base import RuntimeUnavailable, first_line
from ..verify.compare import budget_error, current_verify_timeout
from .inputs import input_pool
from .protocol import (
    Protocol,
    busy_warning,
    memory_now,
    noise_warnings,
    reset_peak_memory,
    stats,
    time_once,
    timed_loop,
)
from .result import LATENCY_KEYS, MAX_STORED_SAMPLES, RuntimeResult


def bench_runtime(
    name: str, model: Path, proto: Protocol, inputs_file: str | None = None, options: dict[str, Any] | None = None
) -> tuple[RuntimeResult, str]:
    """Return (result, input-source description). Absent runtimes come back as status 'skipped' with a reason."""
    cls = runner_class(name)
    base = dict(runtime=name, title=cls.title, device_kind=cls.device_kind)
    try:
        runner = cls(model, threads=proto.threads, batch=proto.batch, boundary=proto.boundary, options=options)
        runner.check_format()
    except RuntimeUnavailable as e:
        return RuntimeResult(status="skipped", reason=e.reason, **base), ""
    warnings = [w for w in (busy_warning(),) if w]
    exact_peak = reset_peak_memory()
    mem0 = memory_now()
    try:
        t0 = time.perf_counter_ns()
        runner.activate()
        build_ns = time.perf_counter_ns() - t0
    except RuntimeUnavailable as e:
        return RuntimeResult(status="skipped", reason=e.reason, version=runner.version(), **base), ""
    except NpufitError as e:  # this runtime cannot take the model; others may (bench() decides if that is fatal)
        return RuntimeResult(status="failed", reason=e.message, version=runner.version(), **base), ""
    try:
        return _measure(runner, proto, inputs_file, build_ns, mem0, exact_peak, warnings, base)
    except (RuntimeUnavailable, NpufitError):
        raise
    except Exception as e:  # a runtime that crashes mid-run is a finding, not a reason to lose the other numbers
        return RuntimeResult(
            status="failed",
            reason=f"{type(e).__name__}: {first_line(e)}",
            version=runner.version(),
            boundary=runner.boundary,
            details=runner.details,
            **base,
        ), ""
    finally:
        runner.deactivate()


def _measure(runner, proto: Protocol, inputs_file, build_ns, mem0, exact_peak, warnings, base):
    specs = runner.input_specs()
    pool, source, pool_warnings = input_pool(
        specs, proto.batch, proto.fresh_inputs, proto.input_pool, inputs_file, proto.seed, proto.input_shapes
    )
    warnings += pool_warnings + list(runner.details.get("notes", []))  # e.g. "NPU stages ran on onnxruntime-cpu"
    batch = _batch_of(pool[0], specs)
    calls = [runner.prepare(s) for s in pool]
    cold_ns, _ = _cold_call(runner, calls[0])
    gc.collect()  # before warm-up, so the caches it evicts are warm again when timing starts
    keep = bool(getattr(runner, "returns_stage_times", False))
    # warm-up goes through the same loop code, so the interpreter and caches are warm when the clock starts
    warm = timed_loop(calls, proto.warmup, None, cold_ns, f"warm-up {runner.name}", keep)[0] if proto.warmup else []
    estimate = int(np.median(warm)) if len(warm) else cold_ns
    times, kept = timed_loop(calls, proto.iterations, proto.duration_s, estimate, f"bench {runner.name}", keep)
    mem1 = memory_now()
    s = stats(times, batch)
    warnings += noise_warnings(s, len(times))
    res = RuntimeResult(
        status="ok",
        version=runner.version(),
        boundary=runner.boundary,
        boundary_text=BOUNDARY_TEXT[runner.boundary],
        batch=batch,
        warmup=proto.warmup,
        iterations=int(len(times)),
        latency_ms={k: s[k] for k in LATENCY_KEYS},
        cv=s["cv"],
        throughput_ips=s["throughput_ips"],
        cold_ms=cold_ns / 1e6,
        build_s=build_ns / 1e9,
        memory={
            "rss_before_bytes": mem0["rss"],
            "rss_after_bytes": mem1["rss"],
            "peak_bytes": mem1["peak"],
            "peak_method": "VmHWM, reset just before this runtime was built"
            if exact_peak
            else "process peak RSS since start (could not reset per runtime)",
            "note": "host process memory only; GPU/NPU device memory is not included",
        },
        details=dict(runner.details),
        warnings=warnings,
        samples_ms=_stored_samples(times),
        **base,
    )
    if kept:
        info = {st["name"]: st for st in runner.details.get("stages", [])}
        res.stages = [
            {
                "device": info.get(r["name"], {}).get("device", "?"),
                "ran_on": info.get(r["name"], {}).get("ran_on", "?"),
                **r,
            }
            for r in stage_summary(kept, s["p50"])
        ]
    return res, source


def _cold_call(runner, call):
    """The first call under the verification time limit (--verify-timeout): a model that never finishes (a Loop
    without a trip count) is stopped before warm-up and timing. Runtimes without `interrupt` run it as is."""
    import threading

    stop = getattr(runner, "interrupt", None)
    limit, fired = current_verify_timeout(), []
    timer = threading.Timer(limit, lambda: (fired.append(True), stop())) if stop is not None else None
    if timer is not None:
        timer.daemon = True
        timer.start()
    try:
        return time_once(call)
    except Exception as e:
        if fired:
            raise NpufitError(
                f"{runner.name}: the first call did not finish within {limit:g} s (--verify-timeout): "
                f"the model may loop forever (a Loop without a trip count)"
            ) from None
        budget = budget_error(e)  # a tensor past the memory budget: the model's verdict, not the runtime's crash
        if budget is not None:
            raise NpufitError(f"{runner.name}: {budget.message}") from None
        raise
    finally:
        if timer is not None:
            timer.cancel()


def _batch_of(sample: dict[str, np.ndarray], specs) -> int:
    """The leading dimension of the first input with a batch axis (a scalar-only model counts as batch 1)."""
    for sp in specs:
        arr = sample.get(sp.name)
        if arr is not None and arr.ndim > 0:
            return int(arr.shape[0])
    return 1


def _stored_samples(times: np.ndarray) -> list[float]:
    if times.size > MAX_STORED_SAMPLES:  # evenly spaced, keeping time order
        times = times[np.linspace(0, times.size - 1, MAX_STORED_SAMPLES).astype(np.int64)]
    return [round(float(t) / 1e6, 6) for t in times]


def stage_summary(kept: list, chain_p50_ms: float) -> list[dict[str, Any]]:
    """Per-stage medians from each iteration's [(stage, seconds), ...]; the rest of the chain is host glue."""
    per: dict[str, list[float]] = {}
    for r in kept:
        for stage, seconds in r[1] if isinstance(r, tuple) and len(r) == 2 else []:
            per.setdefault(str(stage), []).append(float(seconds) * 1e3)
    rows = []
    for stage, vals in per.items():
        a = np.asarray(vals)
        p50 = float(np.median(a))
        rows.append(
            {
                "name": stage,
                "p50_ms": p50,
                "mean_ms": float(a.mean()),
                "samples": int(a.size),
                "share_pct": 100.0 * p50 / chain_p50_ms if chain_p50_ms else 0.0,
            }
        )
    if rows:
        glue = chain_p50_ms - sum(r["p50_ms"] for r in rows)
        rows.append(
            {
                "name": "(outside stages)",
                "device": "host",
                "ran_on": "python",
                "p50_ms": max(glue, 0.0),
                "mean_ms": max(glue, 0.0),
                "samples": 0,
                "share_pct": 100.0 * max(glue, 0.0) / chain_p50_ms if chain_p50_ms else 0.0,
                "note": "chain p50 minus the sum of stage p50s: hand-over between stages and the chain runner's own "
                "work, approximate",
            }
        )
    return rows

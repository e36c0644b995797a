"""The measurement protocol: one timed call per iteration, statistics, and noise warnings.

What is inside the clock: exactly one call of the runner's prepared callable, bracketed by
time.perf_counter_ns(). Outside it: choosing the next input of the pool, storing the sample in a
preallocated list, the progress bar (updated once per block, not per iteration) and the deadline check.
The garbage collector is paused during the timed loop (as timeit does) so a collection of earlier garbage
does not land in one sample.
"""

from __future__ import annotations

import gc
import math
import os
import re
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import NpufitError
from ..util.progress import track

# Noise thresholds: above either, the spread says the machine (or the runtime) was not steady.
P99_OVER_P50_MAX = 1.5
CV_MAX = 0.10
MIN_SAMPLES_FOR_P99 = 100
PERCENTILES = (50, 90, 95, 99)
PERCENTILE_METHOD = "linear"  # numpy's default: interpolates between the two nearest ranks
PROGRESS_BLOCKS = 50


@dataclass
class Protocol:
    warmup: int = 10
    iterations: int | None = 200
    duration_s: float | None = None
    batch: int | None = None
    threads: int | None = None
    fresh_inputs: bool = False
    input_pool: int = 1
    boundary: str | None = None  # None: each runtime's default (host-to-host, or end-to-end-chain for plans)
    seed: int = 0
    input_shapes: dict[str, list[int]] | None = None  # the shapes fed (given, or a dynamic batch pinned)

    def validate(self) -> None:
        if self.warmup < 0:
            raise NpufitError("--warmup must be 0 or more")
        if self.duration_s is not None:
            if not self.duration_s > 0:
                raise NpufitError("--duration must be a positive number of seconds")
            self.iterations = None
        elif self.iterations is None or self.iterations < 1:
            raise NpufitError("--iterations must be at least 1")
        if self.batch is not None and self.batch < 1:
            raise NpufitError("--batch must be at least 1")
        if self.threads is not None and self.threads < 1:
            raise NpufitError("--threads must be at least 1")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.update(
            {
                "inputs": (
                    f"fresh: a pool of {self.input_pool} distinct samples, the next one each iteration "
                    "(prepared before timing)"
                )
                if self.fresh_inputs
                else "reused: the same sample every iteration",
                "timer": "time.perf_counter_ns around one synchronous inference call; one request in flight",
                "percentile_method": PERCENTILE_METHOD,
                "throughput": "batch / mean latency (synchronous, one request in flight; not pipelined)",
                "cold": "the first call after the session/engine was built, before warm-up",
                "gc": "paused during the timed loop",
                "noise_thresholds": {
                    "p99_over_p50": P99_OVER_P50_MAX,
                    "cv": CV_MAX,
                    "min_samples_for_p99": MIN_SAMPLES_FOR_P99,
                },
            }
        )
        return d


def time_once(fn: Callable[[], Any]) -> tuple[int, Any]:
    clock = time.perf_counter_ns
    t0 = clock()
    out = fn()
    return clock() - t0, out


def timed_loop(
    calls: Sequence[Callable[[], Any]],
    iterations: int | None = None,
    duration_s: float | None = None,
    estimate_ns: int = 1_000_000,
    description: str = "bench",
    keep_results: bool = False,
    clock: Callable[[], int] = time.perf_counter_ns,
) -> tuple[np.ndarray, list[Any] | None]:
    """Run the calls round-robin for `iterations` (or until `duration_s` has passed); return the latencies
    (ns, int64) and, with keep_results, each call's return value (chain runners: per-stage times).
    clock: nanoseconds, monotonic (tests pass a fake one: what is timed must not depend on the machine's load)."""
    if (iterations is None) == (duration_s is None):
        raise ValueError("exactly one of iterations / duration_s")
    planned = iterations if iterations is not None else max(1, math.ceil(duration_s * 1e9 / max(int(estimate_ns), 1)))
    block = max(1, planned // PROGRESS_BLOCKS)
    times: list[int] = [0] * (planned if iterations is not None else 2 * planned + 64)
    kept: list[Any] = [None] * len(times) if keep_results else []
    k = len(calls)
    n = 0

    def blocks():
        nonlocal n, times, kept
        deadline = clock() + int(duration_s * 1e9) if duration_s is not None else 1 << 62
        while iterations is None or n < iterations:
            stop = n + block if iterations is None else min(n + block, iterations)
            if stop > len(times):  # duration mode ran faster than the warm-up estimate: grow, outside the clock
                times += [0] * len(times)
                kept += [None] * (len(times) - len(kept)) if keep_results else []
            for i in range(n, stop):
                fn = calls[i % k]
                if keep_results:
                    t0 = clock()
                    r = fn()
                    t1 = clock()
                    kept[i] = r
                else:
                    t0 = clock()
                    fn()
                    t1 = clock()
                times[i] = t1 - t0
                if t1 >= deadline:
                    n = i + 1
                    return
            n = stop
            yield n

    gc_was_enabled = gc.isenabled()
    gc.disable()  # the caller collects before its warm-up: a collection here would evict the warm caches
    try:
        for _ in track(blocks(), description, total=math.ceil(planned / block)):
            pass
    finally:
        if gc_was_enabled:
            gc.enable()
    return np.asarray(times[:n], dtype=np.int64), (kept[:n] if keep_results else None)


def stats(times_ns: np.ndarray, batch: int) -> dict[str, float]:
    """Latency statistics in milliseconds and batch-aware throughput (inferences per second)."""
    t = times_ns.astype(np.float64) / 1e6
    pct = np.percentile(t, PERCENTILES, method=PERCENTILE_METHOD)
    mean = float(t.mean())
    out = {"mean": mean, "std": float(t.std(ddof=1)) if t.size > 1 else 0.0, "min": float(t.min())}
    out.update({f"p{p}": float(v) for p, v in zip(PERCENTILES, pct)})
    out["max"] = float(t.max())
    out["cv"] = out["std"] / mean if mean > 0 else 0.0
    out["throughput_ips"] = batch * 1e3 / mean if mean > 0 else 0.0
    return {k: round(v, 6) for k, v in out.items()}  # ms to the nanosecond: the timer's resolution


def noise_warnings(s: dict[str, float], n: int) -> list[str]:
    warns = []
    ratio = s["p99"] / s["p50"] if s["p50"] > 0 else 0.0
    if ratio > P99_OVER_P50_MAX:
        warns.append(
            f"noisy: p99/p50 = {ratio:.2f} > {P99_OVER_P50_MAX} (tail latency far above the median: other "
            f"load, frequency scaling, or a runtime that stalls)"
        )
    if s["cv"] > CV_MAX:
        warns.append(
            f"noisy: coefficient of variation {s['cv']:.1%} > {CV_MAX:.0%} (std/mean); rerun on an idle "
            f"machine or pin threads before comparing"
        )
    if n < MIN_SAMPLES_FOR_P99:
        warns.append(f"only {n} samples: p99 is within the few slowest runs (use >= {MIN_SAMPLES_FOR_P99} iterations)")
    return warns


def busy_warning() -> str | None:
    """Load average above half the cores before a run means other work shares the CPU."""
    try:
        load1 = os.getloadavg()[0]
    except OSError:
        return None
    cores = os.cpu_count() or 1
    if load1 > 0.5 * cores:
        return f"busy machine: 1-minute load average {load1:.2f} on {cores} cores before the run"
    return None


# -- process memory --------------------------------------------------------------------------------------------
_STATUS = "/proc/self/status"


def reset_peak_memory() -> bool:
    """Reset the kernel's peak-RSS mark (VmHWM) so the next reading belongs to one runtime (Linux only)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def memory_now() -> dict[str, int]:
    """{'rss': bytes, 'peak': bytes}; peak is VmHWM on Linux, else psutil's RSS (a lower bound)."""
    try:
        text = open(_STATUS).read()
        rss = int(re.search(r"VmRSS:\s+(\d+)", text).group(1)) * 1024
        peak = int(re.search(r"VmHWM:\s+(\d+)", text).group(1)) * 1024
        return {"rss": rss, "peak": peak}
    except (OSError, AttributeError):
        import psutil

        rss = psutil.Process().memory_info().rss
        return {"rss": rss, "peak": rss}

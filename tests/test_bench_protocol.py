"""The measurement protocol: the timed loop, statistics, noise warnings, the HailoRT CLI parser."""
from __future__ import annotations

import time

import numpy as np
import pytest

from npufit.bench.protocol import (CV_MAX, P99_OVER_P50_MAX, Protocol, noise_warnings, stats, timed_loop)
from npufit.errors import NpufitError


def test_timed_loop_rotates_the_pool_and_times_each_call():
    calls = [lambda: "a", lambda: "b", lambda: "c"]
    times, kept = timed_loop(calls, iterations=7, keep_results=True)
    assert kept == ["a", "b", "c", "a", "b", "c", "a"]
    assert times.dtype == np.int64 and times.shape == (7,) and (times > 0).all()


def test_timed_loop_measures_the_call_not_the_loop():
    sleep = lambda: time.sleep(0.002)  # noqa: E731
    times, _ = timed_loop([sleep], iterations=20)
    assert np.median(times) / 1e6 == pytest.approx(2.0, abs=1.5)
    assert times.min() >= 2_000_000  # never shorter than the call itself


def test_timed_loop_duration_grows_past_a_bad_estimate():
    times, _ = timed_loop([lambda: None], duration_s=0.05, estimate_ns=10_000_000)  # estimate says 5 calls
    assert times.size > 100


def test_stats_percentiles_ordered_and_batch_aware():
    t = np.random.default_rng(0).lognormal(0, 0.5, 1000) * 1e6
    s = stats(t.astype(np.int64), batch=8)
    assert s["min"] <= s["p50"] <= s["p90"] <= s["p95"] <= s["p99"] <= s["max"]
    assert s["throughput_ips"] == pytest.approx(8 * 1000 / s["mean"], rel=1e-5)


def test_noise_warnings_fire_on_spread_and_only_then():
    steady = np.full(500, 1_000_000, dtype=np.int64) + np.arange(500)
    assert noise_warnings(stats(steady, 1), 500) == []
    tail = steady.copy()
    tail[-20:] = 5_000_000  # 4% of the calls are 5x slower
    warns = noise_warnings(stats(tail, 1), 500)
    assert any(f"> {P99_OVER_P50_MAX}" in w for w in warns) and any(f"> {CV_MAX:.0%}" in w for w in warns)
    assert any("only 50 samples" in w for w in noise_warnings(stats(steady[:50], 1), 50))


def test_protocol_validation():
    with pytest.raises(NpufitError, match="--iterations"):
        Protocol(iterations=0).validate()
    with pytest.raises(NpufitError, match="--duration"):
        Protocol(duration_s=-1).validate()
    p = Protocol(iterations=100, duration_s=2.0)
    p.validate()
    assert p.iterations is None  # duration wins: one stopping rule, stated
    assert "fresh" in Protocol(fresh_inputs=True, input_pool=4).to_dict()["inputs"]


# FAKE: the shape of `hailortcli benchmark`'s Summary block as HailoRT 4.x prints it (no Hailo device here).
HAILORTCLI_SUMMARY = """
=======
Summary
=======
FPS     (hw_only)                 = 1346.11
        (streaming)               = 1346.04
Latency (hw)                      = 2.05831 ms
Device 0000:01:00.0:
Power in streaming mode (average) = 3.04358 W
                        (max)     = 3.06376 W
"""


def test_parse_hailortcli_benchmark_summary():
    from npufit.runtimes.hailort import parse_hailortcli_benchmark

    figs = parse_hailortcli_benchmark(HAILORTCLI_SUMMARY)
    assert figs == {"fps_hw_only": 1346.11, "fps_streaming": 1346.04, "latency_hw_ms": 2.05831,
                    "power_average_w": 3.04358, "power_max_w": 3.06376}

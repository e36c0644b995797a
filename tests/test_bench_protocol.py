"""The measurement protocol: the timed loop, statistics, noise warnings, the HailoRT CLI parser."""
from __future__ import annotations

import numpy as np
import pytest

from npufit.bench.protocol import (CV_MAX, P99_OVER_P50_MAX, Protocol, noise_warnings, stats, timed_loop)
from npufit.errors import NpufitError


class FakeClock:
    """A nanosecond clock that moves only when read (`tick`: the loop's own work between two reads) or when a call
    spends time (`spend`): timing logic tested without the machine's load in the numbers."""

    def __init__(self, tick: int = 7):
        self.now, self.tick, self.reads = 1_000, tick, 0

    def __call__(self) -> int:
        self.reads += 1
        self.now += self.tick
        return self.now

    def spend(self, ns: int):
        def call():
            self.now += ns
            return ns

        return call


def test_timed_loop_rotates_the_pool_and_times_each_call():
    clock = FakeClock()
    calls = [lambda: "a", lambda: "b", lambda: "c"]
    times, kept = timed_loop(calls, iterations=7, keep_results=True, clock=clock)
    assert kept == ["a", "b", "c", "a", "b", "c", "a"]
    assert times.dtype == np.int64 and times.tolist() == [clock.tick] * 7  # one clock step: nothing but the call


def test_timed_loop_measures_the_call_not_the_loop():
    clock = FakeClock(tick=5)
    calls = [clock.spend(2_000_000), clock.spend(3_000_000)]
    times, _ = timed_loop(calls, iterations=20, clock=clock)
    # each sample is its call's time plus one clock step: no progress update, list growth or rotation inside it
    assert times.tolist() == [2_000_005, 3_000_005] * 10
    assert clock.reads == 2 * 20  # two reads per call, none elsewhere in the timed region


def test_timed_loop_duration_stops_on_the_first_call_past_the_deadline():
    clock = FakeClock(tick=0)
    # the estimate says 5 calls fit; 50 ms of 100 us calls is 500: the buffer grows, the loop stops on the deadline
    times, _ = timed_loop([clock.spend(100_000)], duration_s=0.05, estimate_ns=10_000_000, clock=clock)
    assert times.size == 500 and (times == 100_000).all()
    clock = FakeClock(tick=0)
    times, _ = timed_loop([clock.spend(30_000_000)], duration_s=0.05, clock=clock)
    assert times.tolist() == [30_000_000, 30_000_000]  # the second call ends past 50 ms: it is the last


def test_timed_loop_times_a_real_call_on_the_real_clock():
    calls = [lambda: sum(range(100))]
    times, _ = timed_loop(calls, iterations=5)
    assert times.dtype == np.int64 and times.shape == (5,) and (times >= 0).all()


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

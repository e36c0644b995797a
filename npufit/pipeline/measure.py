"""Wall time and peak memory of a block of work, child processes included (compilers often run as one).

Seed 004's table (compile time and memory per model) was filled in by hand from `time` and `top`; this
samples the resident set of this process and all its descendants every 50 ms while the block runs.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass


@dataclass
class Usage:
    wall_s: float = 0.0
    peak_rss_bytes: int = 0  # this process + children, sampled
    baseline_rss_bytes: int = 0  # before the block started: peak - baseline is what the block added

    @property
    def added_rss_bytes(self) -> int:
        return max(0, self.peak_rss_bytes - self.baseline_rss_bytes)

    def to_dict(self) -> dict:
        return {
            "wall_s": round(self.wall_s, 3),
            "peak_rss_mb": round(self.peak_rss_bytes / 2**20, 1),
            "added_rss_mb": round(self.added_rss_bytes / 2**20, 1),
        }


def _tree_rss(proc) -> int:
    import psutil

    total = 0
    for p in [proc, *proc.children(recursive=True)]:
        try:
            total += p.memory_info().rss
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return total


class measure:
    """with measure() as usage: ...  -> usage.wall_s, usage.peak_rss_bytes filled in on exit."""

    def __init__(self, interval: float = 0.05):
        self.interval = interval
        self.usage = Usage()
        self._stop = threading.Event()

    def __enter__(self) -> Usage:
        import psutil

        self._proc = psutil.Process()
        self.usage.baseline_rss_bytes = self.usage.peak_rss_bytes = _tree_rss(self._proc)
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._t0 = time.perf_counter()
        self._thread.start()
        return self.usage

    def _sample(self) -> None:
        while not self._stop.wait(self.interval):
            self.usage.peak_rss_bytes = max(self.usage.peak_rss_bytes, _tree_rss(self._proc))

    def __exit__(self, *exc) -> None:
        self.usage.wall_s = time.perf_counter() - self._t0
        self._stop.set()
        self._thread.join()
        self.usage.peak_rss_bytes = max(self.usage.peak_rss_bytes, _tree_rss(self._proc))

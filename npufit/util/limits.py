"""Resource limits a verb sets for the whole run, read where the work happens (the ONNX Runtime run, the tool
process), so no limit has to be threaded through every call in between."""

from __future__ import annotations

import math
from contextlib import contextmanager

from ..errors import NpufitError


class RunLimit:
    """One positive, finite limit with a default, set for the duration of a `with` block."""

    def __init__(self, option: str, unit: str, default: float) -> None:
        self.option, self.unit, self.default = option, unit, float(default)
        self._value = self.default

    @property
    def value(self) -> float:
        return self._value

    @contextmanager
    def scoped(self, value: float):
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise NpufitError(f"{self.option} must be a number of {self.unit}, got {value!r}") from None
        if not math.isfinite(value) or value <= 0:
            raise NpufitError(f"{self.option} must be a positive number of {self.unit}, got {value:g}")
        before, self._value = self._value, value
        try:
            yield
        finally:
            self._value = before


# generous: real verifications take seconds; only a runaway Loop reaches it
VERIFY_TIMEOUT = RunLimit("--verify-timeout", "seconds", 300.0)
# far above any real compile measured here (Vela <= 0.2 GB); a 60 KB Concat of 20,000 inputs takes Vela past 2 GB
# within 20 s: such a tool is stopped, not left to take the machine
TOOL_MEMORY_MB = RunLimit("--max-memory", "MB", 8192.0)
DEFAULT_MAX_TOOL_MEMORY_MB = TOOL_MEMORY_MB.default


def tool_memory_limit(mb: float):
    """Bound the memory of every tool process tree started inside the block (compile --max-memory)."""
    return TOOL_MEMORY_MB.scoped(mb)


def max_tool_memory_mb() -> float:
    return TOOL_MEMORY_MB.value

"""Resource limits a verb sets for the whole run (hostile-input issue, part 2), read where the work happens."""
from __future__ import annotations

from contextlib import contextmanager

DEFAULT_MAX_TOOL_MEMORY_MB = 8192.0  # far above any real compile measured here (Vela <= 0.2 GB); a 60 KB Concat of
# 20,000 inputs takes Vela past 2 GB within 20 s: such a tool is stopped, not left to take the machine
_max_tool_memory_mb = [DEFAULT_MAX_TOOL_MEMORY_MB]


@contextmanager
def tool_memory_limit(mb: float):
    """Bound the memory of every tool process tree started inside the block (compile --max-memory)."""
    before = _max_tool_memory_mb[0]
    _max_tool_memory_mb[0] = float(mb)
    try:
        yield
    finally:
        _max_tool_memory_mb[0] = before


def max_tool_memory_mb() -> float:
    return _max_tool_memory_mb[0]

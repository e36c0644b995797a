"""Where batches of independent work run: in this process, a local process pool (default), or a Ray cluster.

Work is a list of `Task`s: an importable function named "package.module:function", one picklable argument
and optional resource tags. Every executor returns one `Outcome` per task, in task order; a task that raises,
kills its worker or overruns its timeout is an outcome (`error` / `timeout`), never the end of the batch.
Scan, probe, compile over many models and pipeline cells all go through `get_executor`.
"""

from __future__ import annotations

from ..errors import NpufitError
from ..vocab import EXECUTORS
from .base import Executor, InProcess, Outcome, Task, call, resources_for_compiler
from .pool import ProcessPool
from .ray_cluster import RayExecutor

__all__ = [
    "EXECUTORS",
    "Executor",
    "Outcome",
    "Task",
    "call",
    "get_executor",
    "resources_for_compiler",
]


# here, not in base.py: the pool and Ray executors build on base.py, so the factory sits above all three
def get_executor(name: str = "pool", jobs: int | None = None, address: str | None = None) -> Executor:
    """`--executor NAME [--jobs N] [--address ADDR]` as an Executor (use it as a context manager)."""
    if name == "inprocess":
        return InProcess()
    if address and name != "ray":
        raise NpufitError(f"--address is for --executor ray, not {name}")
    if name == "pool":
        return ProcessPool(jobs)
    if name == "ray":
        return RayExecutor(jobs, address)
    raise NpufitError(f"unknown executor '{name}' (choose from {', '.join(EXECUTORS)})")

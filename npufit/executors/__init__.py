"""Where batches of independent work run: in this process, a local process pool (default), or a Ray cluster.

Work is a list of `Task`s: an importable function named "package.module:function", one picklable argument
and optional resource tags. Every executor returns one `Outcome` per task, in task order; a task that raises,
kills its worker or overruns its timeout is an outcome (`error` / `timeout`), never the end of the batch.
Scan, probe, compile over many models and pipeline cells all go through `get_executor`.
"""
from __future__ import annotations

from .base import COMPILER_RESOURCES, EXECUTORS, Executor, Outcome, Task, call, get_executor, resources_for_compiler

__all__ = ["COMPILER_RESOURCES", "EXECUTORS", "Executor", "Outcome", "Task", "call", "get_executor", "resources_for_compiler"]

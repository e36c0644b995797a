"""The executor interface, the task/outcome records and the in-process executor."""

from __future__ import annotations

import importlib
import os
import time
import traceback
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import NpufitError
from ..toolchains import find
from ..util.progress import track


def resources_for_compiler(compiler: str | None) -> dict[str, float]:
    """A vendor compiler that runs in its own environment (not pip-installable beside npufit) names a resource
    (Toolchain.resource): on Ray, a task that drives it carries the tag and only lands on a node started with it
    (ray start --resources)."""
    tc = find(compiler or "")
    return {tc.resource: 1} if tc is not None and tc.resource else {}


@dataclass(frozen=True)
class Task:
    fn: str  # "package.module:function", imported where the task runs
    arg: Any = None  # one picklable argument
    # Resource tags the task needs, e.g. {"rknn": 1}: on Ray the task only goes to a node that declares them
    # (`ray start --resources '{"rknn": 4}'`); local executors run everything on this machine.
    resources: Mapping[str, float] = field(default_factory=dict)
    label: str = ""  # what the task is about (a model path, a case id), for messages


@dataclass
class Outcome:
    status: str  # "ok" | "error" | "timeout"
    value: Any = None
    error: str = ""  # one line
    detail: str = ""  # a short traceback for "error"
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def resolve(fn: str):
    module, _, name = fn.partition(":")
    return getattr(importlib.import_module(module), name)


def call(fn: str, arg: Any) -> Outcome:
    """Run one task here; an exception becomes an `error` outcome (what every executor's worker does)."""
    t0 = time.perf_counter()
    try:
        value = resolve(fn)(arg)
    except Exception as e:
        msg = str(e).splitlines()[0][:300] if str(e) else ""
        return Outcome(
            "error",
            None,
            f"{type(e).__name__}: {msg}" if not isinstance(e, NpufitError) else msg,
            traceback.format_exc(limit=6),
            time.perf_counter() - t0,
        )
    return Outcome("ok", value, seconds=time.perf_counter() - t0)


class Executor(ABC):
    """Runs tasks; yields (index, outcome) as each finishes. `map` collects them in task order."""

    name = "executor"

    def __init__(self, jobs: int | None = None):
        self.jobs = max(1, int(jobs or os.cpu_count() or 1))

    @abstractmethod
    def run(
        self, tasks: Sequence[Task], timeout: float | None = None, warmup: str | None = None
    ) -> Iterator[tuple[int, Outcome]]:
        """warmup: a "module:function" run once per worker before its first task (e.g. importing torch)."""

    def map(
        self, tasks: Sequence[Task], timeout: float | None = None, warmup: str | None = None, description: str = ""
    ) -> list[Outcome]:
        out: list[Outcome | None] = [None] * len(tasks)
        for i, o in track(self.run(tasks, timeout, warmup), description or self.name, total=len(tasks)):
            out[i] = o
        return [o if o is not None else Outcome("error", error="no result") for o in out]

    def describe(self) -> dict[str, Any]:
        return {"executor": self.name, "jobs": self.jobs}

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class InProcess(Executor):
    """One task after the other in this process: no start-up cost, no isolation (a timeout cannot stop a task)."""

    name = "inprocess"

    def __init__(self, jobs: int | None = None):
        self.jobs = 1

    def run(self, tasks, timeout=None, warmup=None):
        if warmup and tasks:
            resolve(warmup)()
        for i, t in enumerate(tasks):
            yield i, call(t.fn, t.arg)

"""Resource limits a verb sets for the whole run, read where the work happens (the ONNX Runtime run, the tool
process, the array reader), so no limit has to be threaded through every call in between.

Each limit is one fact with one default, stated here: the CLI option sets it for a run, an environment variable
sets it for library calls and pipelines, and every message that refuses work names the option."""

from __future__ import annotations

import math
import os
from contextlib import contextmanager

from ..errors import NpufitError, TimeLimitReached
from .progress import current_step

MiB = 1 << 20


class RunLimit:
    """One positive, finite limit with a default, set for the duration of a `with` block (or by `env`)."""

    def __init__(self, option: str, unit: str, default: float, env: str | None = None) -> None:
        self.option, self.unit, self.default, self.env = option, unit, float(default), env
        self._scoped: float | None = None

    @property
    def value(self) -> float:
        if self._scoped is not None:
            return self._scoped
        if self.env and os.environ.get(self.env, "").strip():
            return self._check(os.environ[self.env], self.env)
        return self.default

    def _check(self, value, name: str) -> float:
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise NpufitError(f"{name} must be a number of {self.unit}, got {value!r}") from None
        if not math.isfinite(value) or value <= 0:
            raise NpufitError(f"{name} must be a positive number of {self.unit}, got {value:g}")
        return value

    @contextmanager
    def scoped(self, value: float | None):
        """The limit inside the block; None keeps what is set (the environment variable or the default)."""
        value = self.value if value is None else self._check(value, self.option)
        before, self._scoped = self._scoped, value
        try:
            yield
        finally:
            self._scoped = before


# generous: real verifications take seconds; only a runaway Loop reaches it
VERIFY_TIMEOUT = RunLimit("--verify-timeout", "seconds", 300.0)
# far above any real compile measured here (Vela <= 0.2 GB); a 60 KB Concat of 20,000 inputs takes Vela past 2 GB
# within 20 s: such a tool is stopped, not left to take the machine
TOOL_MEMORY_MB = RunLimit("--max-memory", "MB", 8192.0)
DEFAULT_MAX_TOOL_MEMORY_MB = TOOL_MEMORY_MB.default

# The memory npufit itself may fill in one run: tensors ONNX Runtime allocates (its CPU arena is capped at it),
# seeded and calibration samples, arrays read from .npz/.npy files, decoded calibration images, and the working copies
# of the graph that fix and quantize hold (estimated per node, measured). Edge-NPU models and their activations fit
# far below it; a 200-byte model whose Expand, Range or ConstantOfShape asks for gigabytes is refused at it in one
# line, never allowed to take the machine. Weights are not counted (ONNX Runtime keeps initializers outside the arena).
MEMORY_BUDGET_MB = RunLimit("--memory-budget", "MB", 1024.0, env="NPUFIT_MEMORY_BUDGET")

# A whole verb (fix, split, quantize, compile, bench, ...): long work shows progress, and stops here with one line
# rather than running for hours (ONNX Runtime's quantizer takes time quadratic in the node count: a 300,000-node
# chain would take days). Verbs that drive many others (pipeline, probe, env) have none unless one is given.
TIME_LIMIT_S = RunLimit("--time-limit", "seconds", 1800.0, env="NPUFIT_TIME_LIMIT")


def tool_memory_limit(mb: float):
    """Bound the memory of every tool process tree started inside the block (compile --max-memory)."""
    return TOOL_MEMORY_MB.scoped(mb)


def max_tool_memory_mb() -> float:
    return TOOL_MEMORY_MB.value


def memory_budget() -> int:
    """The memory budget in bytes."""
    return int(MEMORY_BUDGET_MB.value * MiB)


def size_text(nbytes: float) -> str:
    if nbytes >= 1 << 30:
        return f"{nbytes / (1 << 30):.1f} GiB"
    return f"{nbytes / MiB:.0f} MiB" if nbytes >= MiB else f"{nbytes:.0f} bytes"


def over_budget(what: str, nbytes: float) -> NpufitError:
    """The one-line refusal of work that would hold `nbytes` (what: "input 'x' [1, 3, 16384, 16384] float32")."""
    return NpufitError(
        f"{what} needs {size_text(nbytes)}, more than npufit's memory budget of {size_text(memory_budget())} "
        f"(raise it with npufit {MEMORY_BUDGET_MB.option} MB if this machine has the memory)"
    )


def within_budget(what: str, nbytes: float) -> None:
    """Refuse (NpufitError) before allocating `nbytes` when that passes the memory budget."""
    if nbytes > memory_budget():
        raise over_budget(what, nbytes)


# What a verb holds per graph node besides tensors (graph copies, IR objects, sessions): peak resident memory over the
# interpreter's own, measured on a 30,000-node chain of cheap ops (fix 640 MB, split 626 MB, compile for Ethos-U
# 648 MB, quantize 240 MB, bench 218 MB; check 145 MB). A 300,000-node graph is refused before the work, in one line.
NODE_BYTES = {"fix": 20 << 10, "split": 18 << 10, "compile": 18 << 10, "quantize": 5 << 10, "bench": 4 << 10}


def graph_within_budget(verb: str, nodes: int) -> None:
    """Refuse `verb` on a graph of `nodes` nodes whose working copies would pass the memory budget."""
    per = NODE_BYTES[verb]
    within_budget(f"{verb} of a {nodes:,}-node graph (about {per >> 10} KiB per node)", nodes * per)


@contextmanager
def verb_time_limit(verb: str, seconds: float | None):
    """Stop the block after `seconds` (None: no limit) with TimeLimitReached, naming the step under way.

    A SIGALRM timer: it interrupts Python code wherever it is (a rule pass, ONNX Runtime's Python quantizer) and
    unwinds like Ctrl-C, so temp files go and tool processes are stopped; native calls finish first (each ONNX
    Runtime run has its own --verify-timeout). Main thread only (signals are delivered there)."""
    import signal
    import threading
    import time

    if seconds is None or threading.current_thread() is not threading.main_thread():
        yield
        return

    def _stop(signum, frame):
        step = current_step()
        raise TimeLimitReached(
            f"{verb} stopped at its time limit of {seconds:g} s{f' while {step}' if step else ''}; give it longer "
            f"with npufit {TIME_LIMIT_S.option} SECONDS (or {TIME_LIMIT_S.env}), or a smaller model"
        )

    previous = signal.signal(signal.SIGALRM, _stop)
    outer, _ = signal.setitimer(signal.ITIMER_REAL, seconds)
    start = time.monotonic()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer:  # someone else's timer ran before ours: give back what is left of it
            signal.setitimer(signal.ITIMER_REAL, max(outer - (time.monotonic() - start), 0.001))

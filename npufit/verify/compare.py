"""Seeded inputs, deterministic ONNX Runtime CPU runs, and per-output differences."""

from __future__ import annotations

import math
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from ..errors import NpufitError
from ..util.limits import VERIFY_TIMEOUT, memory_budget, over_budget, size_text, within_budget
from .loops import refuse_endless_loops


def verify_timeout(seconds: float):
    """Bound every ONNX Runtime verification run inside the block (`--verify-timeout` of fix, split, quantize,
    bench)."""
    return VERIFY_TIMEOUT.scoped(seconds)


def current_verify_timeout() -> float:
    return VERIFY_TIMEOUT.value


def ort_quiet() -> int:
    """ONNX Runtime's own log level: errors and warnings stay out of npufit's one-line output unless --verbose
    (NPUFIT_VERBOSE=1). Returns the severity to put on session and run options."""
    import onnxruntime as ort

    level = _ort_level()
    ort.set_default_logger_severity(level)
    return level


def _ort_level() -> int:
    return 2 if os.environ.get("NPUFIT_VERBOSE") else 4


# The two ONNX Runtime settings a result is verified under: rewrites off (bit-exact comparisons), and
# ORT's default full optimizer (what a host application runs; fusions may change rounding).
ORT_SETTINGS = {False: "graph optimizations off", True: "default graph optimizations (ORT_ENABLE_ALL)"}


def make_session(
    model: str | os.PathLike | bytes, threads: int = 1, optimized: bool = False, external_dir: str | None = None
):
    """An ORT CPU session: deterministic (one thread, no graph rewrites that change rounding) by default,
    ORT's full optimizer with `optimized`; `external_dir` resolves external weights of a model given as bytes."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.log_severity_level = ort_quiet()
    within_memory_budget(so)
    if not optimized:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    if external_dir is not None:
        so.add_session_config_entry("session.model_external_initializers_file_folder_path", str(external_dir))
    refuse_endless_loops(model)
    try:
        return ort.InferenceSession(
            model if isinstance(model, bytes) else str(model), so, providers=["CPUExecutionProvider"]
        )
    except Exception as e:
        raise budget_error(e) or NpufitError(f"ONNX Runtime cannot load the model: {ort_message(e)}") from None


_ARENA: list[int] = []  # the cap the process' shared CPU arena was made with (made once: ORT keeps it for good)


def within_memory_budget(so) -> None:
    """Sessions made with these options allocate from one CPU arena capped at the memory budget (--memory-budget),
    so a tensor past it fails at once in ONNX Runtime instead of taking the machine (a 200-byte model whose Expand
    asks for 4 GiB). The arena is shared by every such session of the process: the budget covers them together."""
    import onnxruntime as ort

    if not _ARENA:
        info = ort.OrtMemoryInfo("Cpu", ort.OrtAllocatorType.ORT_ARENA_ALLOCATOR, 0, ort.OrtMemType.DEFAULT)
        try:
            ort.create_and_register_allocator(info, ort.OrtArenaCfg({"max_mem": memory_budget()}))
        except Exception:  # registered already by someone else in this process: use theirs
            pass
        _ARENA.append(memory_budget())
    so.add_session_config_entry("session.use_env_allocators", "1")


def budget_error(e: BaseException) -> NpufitError | None:
    """The one-line refusal for an ONNX Runtime failure that is the memory budget's arena saying no."""
    text = budget_text(str(e))
    return NpufitError(text) if text else None


def budget_text(msg: str) -> str | None:
    import re

    m = re.search(r"Available memory of \d+ is smaller than requested bytes of (\d+)", msg)
    if m is None:
        return None
    node = re.search(r"running (\w+) node\. Name:'([^']*)'", msg)
    what = "ONNX Runtime: a tensor"
    if node:
        what = f"ONNX Runtime: node '{node[2]}' ({node[1]})" if node[2] else f"ONNX Runtime: a {node[1]} node"
    if _ARENA and _ARENA[0] != memory_budget():
        what += f" (in an arena made with a budget of {size_text(_ARENA[0])})"
    return over_budget(what, int(m[1])).message


_ORT_TO_NP = {
    "tensor(float)": np.float32,
    "tensor(double)": np.float64,
    "tensor(float16)": np.float16,
    "tensor(int64)": np.int64,
    "tensor(int32)": np.int32,
    "tensor(int16)": np.int16,
    "tensor(int8)": np.int8,
    "tensor(uint8)": np.uint8,
    "tensor(uint16)": np.uint16,
    "tensor(bool)": np.bool_,
}


# the bounded range random float inputs fall back to when N(0,1) samples overflow in the original model
BOUNDED_FLOAT_RANGE = (0.0, 1.0)


def random_inputs(
    session,
    seed: int = 0,
    samples: int = 1,
    shapes: Mapping[str, tuple[int, ...]] | None = None,
    float_range: tuple[float, float] | None = None,
) -> list[dict[str, np.ndarray]]:
    """Seeded random feeds for every session input (float ~ N(0,1), or uniform in `float_range`; ints in [0, 10),
    bool random)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(samples):
        feeds = {}
        for i in session.get_inputs():
            shape = tuple((shapes or {}).get(i.name) or [d if isinstance(d, int) and d > 0 else 1 for d in i.shape])
            dt = _ORT_TO_NP.get(i.type, np.float32)
            if not i.type.startswith("tensor("):
                raise NpufitError(f"input '{i.name}' is a {i.type}, not a tensor: npufit feeds tensor inputs only")
            within_budget(
                f"a seeded sample of input '{i.name}' {list(shape)}", math.prod(shape) * np.dtype(dt).itemsize
            )
            if np.issubdtype(dt, np.floating):
                x = rng.standard_normal(shape) if float_range is None else rng.uniform(*float_range, shape)
                feeds[i.name] = x.astype(dt)
            elif dt is np.bool_:
                feeds[i.name] = rng.integers(0, 2, shape).astype(bool)
            else:
                feeds[i.name] = rng.integers(0, 10, shape).astype(dt)
        out.append(feeds)
    return out


class _Watchdog:
    """One daemon thread that sets `terminate` on the RunOptions of every run past its deadline.

    Why RunOptions.terminate, not a child process: ONNX Runtime checks it between kernels and on every Loop
    iteration, so a Loop without a trip count stops at no per-call cost, while a child process would copy the
    model and every feed for each run. Why one thread, not a Timer per run: arming costs a lock, not a thread
    start, so timed loops (bench of a split plan) measure the model, not the watchdog."""

    def __init__(self) -> None:
        self._reset()
        os.register_at_fork(after_in_child=self._reset)  # a forked worker has no watchdog thread and a fresh lock

    def _reset(self) -> None:
        self._cv = threading.Condition()
        self._armed: dict[int, tuple[float, Any]] = {}
        self._next = 0
        self._wake = math.inf  # when the thread wakes next
        self._thread: threading.Thread | None = None

    def arm(self, ro, seconds: float) -> int:
        deadline = time.monotonic() + seconds
        with self._cv:
            self._next += 1
            self._armed[self._next] = (deadline, ro)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._loop, args=(self._cv,), name="npufit-ort-watchdog", daemon=True
                )
                self._thread.start()
            if deadline < self._wake:  # otherwise the thread wakes in time anyway: no context switch per run
                self._cv.notify()
            return self._next

    def disarm(self, token: int) -> None:
        with self._cv:
            self._armed.pop(token, None)  # the thread wakes at the old deadline and finds nothing to do

    def _loop(self, cv: threading.Condition) -> None:
        with cv:
            while cv is self._cv:  # a forked child resets the watchdog; this thread belongs to the old one
                now = time.monotonic()
                for token, (deadline, ro) in list(self._armed.items()):
                    if deadline <= now:
                        ro.terminate = True
                        del self._armed[token]
                self._wake = min((d for d, _ in self._armed.values()), default=now + 3600.0)
                cv.wait(max(self._wake - now, 0.001))


_WATCHDOG = _Watchdog()


class run_limit:
    """`with run_limit() as ro:` RunOptions for ONNX Runtime runs inside the block, stopped at the verification time
    limit (--verify-timeout); an exception of a stopped run becomes the one-line timeout error. A class, not a
    generator: it wraps every timed call of a benchmarked chain."""

    __slots__ = ("ro", "limit", "token")

    def __enter__(self):
        import onnxruntime as ort

        self.ro = ort.RunOptions()
        self.ro.log_severity_level = _ort_level()  # the session that runs it was made by make_session: already quiet
        self.limit = VERIFY_TIMEOUT.value
        self.token = _WATCHDOG.arm(self.ro, self.limit)
        return self.ro

    def __exit__(self, kind, exc, tb) -> bool:
        _WATCHDOG.disarm(self.token)
        if exc is not None and isinstance(exc, Exception) and self.ro.terminate:
            raise NpufitError(
                f"ONNX Runtime did not finish one run within {self.limit:g} s (--verify-timeout): the "
                "model may loop forever (a Loop without a trip count)"
            ) from None
        return False


def timed_run(sess, names: list[str], feeds: Mapping[str, np.ndarray]) -> list:
    """sess.run under the verification time limit; any ONNX Runtime failure becomes one NpufitError line."""
    with run_limit() as ro:
        try:
            return sess.run(names, dict(feeds), ro)
        except Exception as e:
            if ro.terminate:
                raise
            raise budget_error(e) or NpufitError(f"ONNX Runtime cannot run the model: {ort_message(e)}") from None


def ort_message(e: Exception) -> str:
    budget = budget_text(str(e))
    if budget:
        return budget
    msg = str(e).splitlines()[0] if str(e) else type(e).__name__
    msg = msg.split("Status Message: ", 1)[-1]
    if "Failed to allocate memory" in msg:  # the arena's C++ location says nothing to a user
        size = msg.rsplit("size ", 1)[-1].split()[0] if "size " in msg else "?"
        return f"out of memory (a tensor of {size} bytes could not be allocated)"
    return msg[:240]


def run_onnx(model_or_session: Any, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    sess = model_or_session if hasattr(model_or_session, "run") else make_session(model_or_session)
    outs = sess.get_outputs()
    for o in outs:
        if not o.type.startswith("tensor("):
            raise NpufitError(f"output '{o.name}' is a {o.type}, not a tensor: npufit verifies tensor outputs only")
    names = [o.name for o in outs]
    wanted = {i.name for i in sess.get_inputs()}
    vals = timed_run(sess, names, {k: v for k, v in feeds.items() if k in wanted})
    return dict(zip(names, vals))


class OutputDiffs:
    """Worst-case figures over `per_output` ({output: {"max_abs", "max_rel", ...}}); shared by Comparison and the
    split chain check."""

    per_output: dict[str, dict[str, float]]
    missing: list[str]

    @property
    def max_abs(self) -> float:
        return max((d["max_abs"] for d in self.per_output.values()), default=0.0)

    @property
    def max_rel(self) -> float:
        return max((d["max_rel"] for d in self.per_output.values()), default=0.0)

    def worst(self) -> tuple[str, dict[str, float]] | None:
        if not self.per_output:
            return None
        return max(self.per_output.items(), key=lambda kv: kv[1]["max_abs"])


@dataclass
class Comparison(OutputDiffs):
    """Per-output differences between a reference and a candidate run."""

    per_output: dict[str, dict[str, float]] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)

    def ok(self, atol: float = 0.0, rtol: float = 0.0) -> bool:
        if self.missing:
            return False
        return all(d["max_abs"] <= atol + rtol * d["ref_max_abs"] for d in self.per_output.values())

    def merge(self, other: "Comparison") -> "Comparison":
        for k, d in other.per_output.items():
            cur = self.per_output.get(k)
            self.per_output[k] = d if cur is None else {m: max(cur.get(m, 0.0), d.get(m, 0.0)) for m in cur | d}
        self.missing = sorted(set(self.missing) | set(other.missing))
        return self

    def to_dict(self) -> dict:
        return {
            "max_abs": self.max_abs,
            "max_rel": self.max_rel,
            "per_output": self.per_output,
            "missing": self.missing,
        }


def compare_outputs(ref: Mapping[str, np.ndarray], got: Mapping[str, np.ndarray]) -> Comparison:
    c = Comparison()
    for name, a in ref.items():
        if name not in got:
            c.missing.append(name)
            continue
        b = got[name]
        a64, b64 = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        integer = float(not np.issubdtype(np.asarray(a).dtype, np.floating))  # exact_mismatch: must be equal
        if a64.shape != b64.shape:
            c.per_output[name] = {
                "max_abs": float("inf"),
                "max_rel": float("inf"),
                "ref_max_abs": 0.0,
                "ref_nonfinite": 0.0,
                "shape_mismatch": 1.0,
                "integer": integer,
            }
            continue
        finite = np.isfinite(a64)
        with np.errstate(invalid="ignore"):  # inf - inf: equal infinities are caught just below
            diff = np.abs(a64 - b64)
        diff = np.where((a64 == b64) | (np.isnan(a64) & np.isnan(b64)), 0.0, diff)  # equal, NaN in both: no difference
        ref_abs = np.abs(np.where(finite, a64, 0.0))
        max_abs = float(diff.max()) if diff.size else 0.0
        rel = diff / np.maximum(ref_abs, 1e-12)
        c.per_output[name] = {
            "max_abs": max_abs,
            "max_rel": float(rel.max()) if rel.size else 0.0,
            "ref_max_abs": float(ref_abs.max()) if ref_abs.size else 0.0,
            # NaN/Inf values of the reference itself: samples that overflow the original verify little (split says so)
            "ref_nonfinite": float(a64.size - int(finite.sum())),
            "integer": integer,
        }
    return c


def nonfinite_outputs(outputs: Mapping[str, np.ndarray]) -> list[str]:
    """Names of the float outputs holding NaN or Inf."""
    return [
        k for k, v in outputs.items() if np.issubdtype(np.asarray(v).dtype, np.floating) and not np.isfinite(v).all()
    ]


# What a rewrite npufit calls exact may change, stated once: `fix` keeps an exact rule within it, and `split --mode
# auto` accepts its chain against the original within it (the chain is bit-identical to the fixed model). Exact
# rewrites still round differently: BatchNorm folded into a conv moves outputs by ~1e-6 relative.
EXACT_RTOL, EXACT_ATOL = 1e-5, 1e-6


def exact_tolerance(rtol: float = EXACT_RTOL, atol: float = EXACT_ATOL) -> str:
    return f"|diff| <= {atol:g} + {rtol:g}*max|ref|, integer outputs equal"


def exact_mismatch(c: Comparison, rtol: float = EXACT_RTOL, atol: float = EXACT_ATOL) -> str | None:
    """Why `c` (reference = the original) is outside what an exact rewrite may change; None when within."""
    if c.missing:
        return f"outputs missing: {', '.join(c.missing)}"
    for name, d in c.per_output.items():
        limit = 0.0 if d.get("integer") else atol + rtol * d["ref_max_abs"]
        if d["max_abs"] > limit:
            return f"output '{name}' differs from the original: max abs diff {d['max_abs']:.3g} > {limit:.3g}"
    return None

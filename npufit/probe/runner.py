"""Run probe cases in parallel worker processes, each case under a wall-clock timeout.

A pool of long-lived workers (spawned, so torch is imported once per worker, not per case) takes
cases one at a time. A case that overruns its timeout gets its worker killed and a `timeout`
verdict (seed 000's Conv1d timed out in the Hailo compiler: a timeout is a verdict, not a crash);
a worker that dies gets an `error` verdict; in both cases a fresh worker takes its place.
"""
from __future__ import annotations

import multiprocessing as mp
import time
import traceback
from collections import deque
from multiprocessing.connection import wait
from typing import Any

from ..util.progress import track

WARMUP_LIMIT_S = 180.0  # a worker that cannot even import torch within this is broken


def _worker_main(conn) -> None:
    from .case_run import base_result, run_case, warm_up

    try:
        warm_up()
    except BaseException as e:  # report, then exit: the parent turns it into an error verdict
        conn.send(("fatal", f"{type(e).__name__}: {e}"))
        return
    conn.send(("ready", None))
    while True:
        msg = conn.recv()
        if msg is None:
            return
        idx, task = msg
        try:
            res = run_case(task)
        except BaseException as e:  # a bug in one case must not take the other cases down
            res = base_result(task)
            res["predicted"] = {"status": "error", "symbol": "❌", "error": f"{type(e).__name__}: {e}",
                                "traceback": traceback.format_exc(limit=5)}
        conn.send(("done", (idx, res)))


class _Worker:
    def __init__(self, ctx):
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker_main, args=(child,), daemon=True)
        self.proc.start()
        child.close()
        self.ready = False
        self.started = time.monotonic()
        self.task: int | None = None
        self.since = 0.0

    def give(self, idx: int, task: dict) -> None:
        self.task, self.since = idx, time.monotonic()
        self.conn.send((idx, task))

    def stop(self, kill: bool = False) -> None:
        if kill:
            self.proc.kill()
        else:
            try:
                self.conn.send(None)
            except (OSError, BrokenPipeError):
                pass
        self.proc.join(timeout=5)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()
        self.conn.close()


def _failed(task: dict, status: str, message: str) -> dict:
    from .case_run import SYMBOL, base_result

    res = base_result(task)
    res["predicted"] = {"status": status, "symbol": SYMBOL[status], "error": message}
    return res


def run_tasks(tasks: list[dict[str, Any]], jobs: int, timeout: float, description: str = "probe") -> list[dict[str, Any]]:
    """Results in task order. `jobs` worker processes; `timeout` seconds per case."""
    results: list[dict | None] = [None] * len(tasks)
    for _ in track(_execute(tasks, max(1, jobs), timeout, results), description, total=len(tasks)):
        pass
    return [r for r in results if r is not None]


def _execute(tasks, jobs, timeout, results):
    """Generator: yields once per finished case (drives the progress bar)."""
    ctx = mp.get_context("spawn")
    pending = deque(range(len(tasks)))
    workers: list[_Worker] = []
    try:
        while pending or any(w.task is not None for w in workers):
            while len(workers) < min(jobs, len(pending) + sum(w.task is not None for w in workers)):
                workers.append(_Worker(ctx))
            for w in workers:
                if w.ready and w.task is None and pending:
                    _dispatch(w, pending, tasks)
            ready = wait([w.conn for w in workers], timeout=0.1)
            for w in list(workers):
                if w.conn in ready:
                    try:
                        kind, payload = w.conn.recv()
                    except (EOFError, OSError):
                        kind, payload = "died", None
                    if kind == "ready":
                        w.ready = True
                    elif kind == "done":
                        idx, res = payload
                        results[idx] = res
                        w.task = None
                        yield idx
                    else:  # worker died or could not start
                        w.proc.join(timeout=5)  # reap it, so the exit code is known
                        code = w.proc.exitcode
                        why = payload if kind == "fatal" else f"worker process died (exit code {code})"
                        if w.task is not None:
                            results[w.task] = _failed(tasks[w.task], "error", why)
                            yield w.task
                        elif kind == "fatal":
                            raise RuntimeError(f"probe worker could not start: {why}")
                        w.stop(kill=True)
                        workers.remove(w)
            now = time.monotonic()
            for w in list(workers):
                if w.task is not None and now - w.since > timeout:
                    idx = w.task
                    results[idx] = _failed(tasks[idx], "timeout", f"no result within {timeout:g} s (per-case timeout)")
                    w.stop(kill=True)
                    workers.remove(w)
                    yield idx
                elif not w.ready and now - w.started > WARMUP_LIMIT_S:
                    raise RuntimeError(f"probe worker did not start within {WARMUP_LIMIT_S:g} s")
    finally:
        for w in workers:
            w.stop(kill=w.task is not None)


def _dispatch(w: _Worker, pending: deque, tasks: list) -> None:
    idx = pending.popleft()
    w.give(idx, tasks[idx])

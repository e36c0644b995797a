"""Local process pool: long-lived spawned workers, one task at a time each, a wall-clock timeout per task.

A task that overruns its timeout gets its worker killed and a `timeout` outcome; a worker that dies gets an
`error` outcome; in both cases a fresh worker takes its place and the batch goes on.
"""

from __future__ import annotations

import multiprocessing as mp
import time
from collections import deque
from multiprocessing.connection import wait

from .base import Executor, Outcome, call, resolve

WARMUP_LIMIT_S = 180.0  # a worker that cannot even import its libraries within this is broken


def _worker_main(conn, warmup: str | None) -> None:
    try:
        if warmup:
            resolve(warmup)()
    except BaseException as e:  # report, then exit: the parent turns it into an error outcome
        conn.send(("fatal", f"{type(e).__name__}: {e}"))
        return
    conn.send(("ready", None))
    while True:
        msg = conn.recv()
        if msg is None:
            return
        idx, fn, arg = msg
        conn.send(("done", (idx, call(fn, arg))))


class _Worker:
    def __init__(self, ctx, warmup: str | None):
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker_main, args=(child, warmup), daemon=True)
        self.proc.start()
        child.close()
        self.ready = False
        self.started = time.monotonic()
        self.task: int | None = None
        self.since = 0.0

    def give(self, idx: int, fn: str, arg) -> None:
        self.task, self.since = idx, time.monotonic()
        self.conn.send((idx, fn, arg))

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


class ProcessPool(Executor):
    name = "pool"

    def run(self, tasks, timeout=None, warmup=None):
        ctx = mp.get_context("spawn")  # no forked copies of a parent's threads or big graphs
        pending = deque(range(len(tasks)))
        workers: list[_Worker] = []
        jobs = min(self.jobs, len(tasks))
        try:
            while pending or any(w.task is not None for w in workers):
                busy = sum(w.task is not None for w in workers)
                while len(workers) < min(jobs, len(pending) + busy):
                    workers.append(_Worker(ctx, warmup))
                for w in workers:
                    if w.ready and w.task is None and pending:
                        i = pending.popleft()
                        w.give(i, tasks[i].fn, tasks[i].arg)
                ready = wait([w.conn for w in workers], timeout=0.1)
                for w in list(workers):
                    if w.conn not in ready:
                        continue
                    try:
                        kind, payload = w.conn.recv()
                    except (EOFError, OSError):
                        kind, payload = "died", None
                    if kind == "ready":
                        w.ready = True
                    elif kind == "done":
                        idx, outcome = payload
                        w.task = None
                        yield idx, outcome
                    else:  # worker died or could not start
                        w.proc.join(timeout=5)  # reap it, so the exit code is known
                        why = payload if kind == "fatal" else f"worker process died (exit code {w.proc.exitcode})"
                        if w.task is not None:
                            yield w.task, Outcome("error", error=why, seconds=time.monotonic() - w.since)
                        elif kind == "fatal":
                            raise RuntimeError(f"worker could not start: {why}")
                        w.stop(kill=True)
                        workers.remove(w)
                now = time.monotonic()
                for w in list(workers):
                    if timeout and w.task is not None and now - w.since > timeout:
                        idx = w.task
                        w.stop(kill=True)
                        workers.remove(w)
                        yield (
                            idx,
                            Outcome(
                                "timeout",
                                error=f"no result within {timeout:g} s (per-task timeout)",
                                seconds=now - w.since,
                            ),
                        )
                    elif not w.ready and now - w.started > WARMUP_LIMIT_S:
                        raise RuntimeError(f"worker did not start within {WARMUP_LIMIT_S:g} s")
        finally:
            for w in workers:
                w.stop(kill=w.task is not None)

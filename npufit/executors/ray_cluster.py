"""Ray: the same tasks as Ray remote calls, on a local Ray started here or on a cluster (`--address`).

Resource tags become Ray custom resources, so a task tagged {"rknn": 1} is only scheduled on a node started
with `ray start --resources '{"rknn": N}'` (the node with the RKNN toolkit env). Models travel by path: the
workers must see the same files (shared storage; docs/guide/scale.md). At most as many tasks are in flight
as the cluster has CPUs, so a task's timeout counts from (about) when it starts; an overdue task is
cancelled with force (its worker process is killed) and becomes a `timeout` outcome.
"""

from __future__ import annotations

import os
import time
from collections import deque

from ..errors import NpufitError
from .base import Executor, Outcome, call, resolve


def _ray():
    try:
        import ray
    except ImportError:
        raise NpufitError("--executor ray needs Ray: pip install 'npufit[ray]'") from None
    return ray


def _remote_call(fn: str, arg, warmup: str | None) -> Outcome:
    if warmup:
        _warm_once(warmup)
    return call(fn, arg)


_WARM: set[str] = set()


def _warm_once(warmup: str) -> None:
    if warmup not in _WARM:  # a Ray worker process is reused across tasks: warm it once
        resolve(warmup)()
        _WARM.add(warmup)


class RayExecutor(Executor):
    name = "ray"

    def __init__(self, jobs: int | None = None, address: str | None = None):
        ray = _ray()
        self.address = address
        self.started_here = False
        if not ray.is_initialized():
            # workers import npufit from where this process does (a local Ray inherits this environment)
            pkg_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
            env = {"PYTHONPATH": os.pathsep.join(p for p in (pkg_root, os.environ.get("PYTHONPATH", "")) if p)}
            kwargs = dict(include_dashboard=False, log_to_driver=False, configure_logging=False)
            if address:
                ray.init(address=address, **kwargs)
            else:  # the local Ray's processes start now and keep the environment they are started with
                before = os.environ.get("PYTHONPATH")
                os.environ["PYTHONPATH"] = env["PYTHONPATH"]
                try:
                    ray.init(num_cpus=max(1, int(jobs or os.cpu_count() or 1)), **kwargs)
                finally:
                    if before is None:
                        os.environ.pop("PYTHONPATH", None)
                    else:
                        os.environ["PYTHONPATH"] = before
            self.started_here = True
        cpus = int(ray.cluster_resources().get("CPU", 1))
        super().__init__(jobs or cpus)
        self._remote = ray.remote(_remote_call)

    def run(self, tasks, timeout=None, warmup=None):
        ray = _ray()
        pending = deque(range(len(tasks)))
        inflight: dict = {}  # ref -> (index, submitted at)
        have = ray.cluster_resources()
        for i in list(pending):
            missing = [r for r, n in tasks[i].resources.items() if have.get(r, 0) < n]
            if missing:  # Ray would wait for such a node forever
                pending.remove(i)
                yield (
                    i,
                    Outcome(
                        "error",
                        error=f"no node of the Ray cluster has the resource(s) {', '.join(missing)} "
                        "this task needs (ray start --resources ...)",
                    ),
                )
        try:
            while pending or inflight:
                while pending and len(inflight) < self.jobs:
                    i = pending.popleft()
                    t = tasks[i]
                    opts = {"num_cpus": 1, "max_retries": 0}
                    if t.resources:
                        opts["resources"] = dict(t.resources)
                    ref = self._remote.options(**opts).remote(t.fn, t.arg, warmup)
                    inflight[ref] = (i, time.monotonic())
                done, _ = ray.wait(list(inflight), num_returns=1, timeout=0.1)
                for ref in done:
                    i, since = inflight.pop(ref)
                    try:
                        yield i, ray.get(ref)
                    except Exception as e:  # the worker died (a crash in native code, out of memory)
                        msg = str(e).strip().splitlines()[-1][:300] if str(e).strip() else ""
                        yield (
                            i,
                            Outcome(
                                "error",
                                error=f"Ray task failed: {type(e).__name__}: {msg}",
                                seconds=time.monotonic() - since,
                            ),
                        )
                now = time.monotonic()
                for ref, (i, since) in list(inflight.items()):
                    if timeout and now - since > timeout:
                        ray.cancel(ref, force=True)
                        del inflight[ref]
                        yield (
                            i,
                            Outcome(
                                "timeout",
                                error=f"no result within {timeout:g} s (per-task timeout)",
                                seconds=now - since,
                            ),
                        )
        finally:
            for ref in inflight:
                ray.cancel(ref, force=True)

    def describe(self):
        return {"executor": self.name, "jobs": self.jobs, "address": self.address or "local"}

    def close(self) -> None:
        if self.started_here:
            _ray().shutdown()
            self.started_here = False

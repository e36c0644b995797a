"""Run probe cases on an executor (npufit.executors): worker processes by default, or Ray tasks.

Workers are long-lived and warmed once (torch imported once per worker, not per case). A case that overruns
its timeout gets its worker killed and a `timeout` verdict (seed 000's Conv1d timed out in the Hailo
compiler: a timeout is a verdict, not a crash); a worker that dies gets an `error` verdict; the other cases
go on. On Ray a case that needs a vendor compiler's env is tagged with its resource (e.g. rknn), so it only
runs on a node that has that env.
"""

from __future__ import annotations

from typing import Any

from ..executors import Task, get_executor, resources_for_compiler
from ..vocab import EXECUTOR
from .case_run import base_result
from .measure import SYMBOL


def _failed(task: dict, status: str, message: str) -> dict:
    res = base_result(task)
    res["predicted"] = {"status": status, "symbol": SYMBOL[status], "error": message}
    return res


def run_tasks(
    tasks: list[dict[str, Any]],
    jobs: int,
    timeout: float,
    description: str = "probe",
    executor: str = EXECUTOR,
    address: str | None = None,
) -> list[dict[str, Any]]:
    """Results in task order. `jobs` workers (or Ray tasks in flight); `timeout` seconds per case."""
    work = [
        Task("npufit.probe.case_run:run_case", t, resources=resources_for_compiler(t.get("compiler")), label=t["case"])
        for t in tasks
    ]
    with get_executor(executor, jobs, address) as ex:
        outcomes = ex.map(work, timeout, warmup="npufit.probe.case_run:warm_up", description=description)
    results = []
    for t, o in zip(tasks, outcomes):
        if o.ok:
            results.append(o.value)
            continue
        res = _failed(t, o.status, o.error.replace("per-task timeout", "per-case timeout"))
        if o.detail:
            res["predicted"]["traceback"] = o.detail
        results.append(res)
    return results

"""Run a tool as a child process and measure it: wall time, peak memory, full log."""

from __future__ import annotations

import os
import shlex
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import NpufitError
from ..util.limits import max_tool_memory_mb
from ..util.progress import working


@dataclass
class ToolRun:
    command: list[str]
    returncode: int
    wall_s: float
    peak_rss_mb: float | None
    log_path: Path
    killed: str | None = None  # why npufit stopped it ("after 60 s timeout"), None when it ended by itself

    @property
    def log(self) -> str:
        try:
            return self.log_path.read_text("utf-8", "replace")
        except OSError:
            return ""

    @property
    def command_line(self) -> str:
        return shlex.join(self.command)


def run_tool(
    command: list[str],
    log_path: str | os.PathLike,
    cwd: str | os.PathLike | None = None,
    env: dict[str, str] | None = None,
    timeout_s: float | None = None,
    title: str | None = None,
) -> ToolRun:
    """Run a compiler process, its stdout+stderr going to log_path; measure wall time and peak RSS. title: what the
    progress line calls it (default: the program's name); the time limit, when there is one, is shown beside it.

    Peak memory is the VmHWM of the child (and its children), polled while it runs. Not rusage:
    Linux carries the forking parent's RSS high-water mark into the child's ru_maxrss across exec,
    so a 500 MB npufit process would report 500 MB for any compiler it starts. A tree above the memory limit
    (`tool_memory_limit`) is killed like one past its timeout, and the log says why."""
    log_path = Path(log_path)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    what = title or f"running {Path(command[0]).name}"
    limit = f", stopped after {timeout_s:g} s" if timeout_s else ""
    with open(log_path, "wb") as log, working(f"{what} (log: {log_path.name}{limit})"):
        try:
            proc = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=cwd, env=env
            )
        except OSError as e:
            raise NpufitError(f"cannot start {command[0]}: {e.strerror or e}") from None
        status, hwm, killed, limit_mb = 0, 0, None, max_tool_memory_mb()
        try:
            while True:
                hwm = max(hwm, _tree_hwm_kb(proc.pid))
                pid, status, _ru = os.wait4(proc.pid, os.WNOHANG)
                if pid:
                    break
                over_time = timeout_s and time.perf_counter() - t0 > timeout_s
                if over_time or hwm > limit_mb * 1024:
                    _kill_tree(proc.pid)
                    pid, status, _ru = os.wait4(proc.pid, 0)
                    killed = (
                        f"killed after {timeout_s:.0f} s timeout"
                        if over_time
                        else f"killed after using more than {limit_mb:.0f} MB of memory (--max-memory)"
                    )
                    log.write(f"\n[npufit] {killed}\n".encode())
                    break
                time.sleep(0.02)
        except BaseException:  # Ctrl-C, SIGTERM, the verb's time limit: the tool goes with us, never left running
            _kill_tree(proc.pid)
            os.wait4(proc.pid, 0)
            raise
        proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    peak = hwm / 1024.0 if hwm else None
    return ToolRun(
        list(map(str, command)), proc.returncode, round(wall, 3), round(peak, 1) if peak else None, log_path, killed
    )


def _kill_tree(pid: int) -> None:
    """SIGKILL a tool and its descendants (a worker's own children would otherwise keep the memory)."""
    try:
        import psutil

        kids = psutil.Process(pid).children(recursive=True)
    except Exception:
        kids = []
    for p in [*kids, None]:
        try:
            os.kill(pid if p is None else p.pid, 9)
        except OSError:
            pass


def _tree_hwm_kb(pid: int) -> int:
    """VmHWM of a process plus that of its live descendants (KiB); 0 once it is gone."""
    try:
        import psutil

        procs = [psutil.Process(pid)]
        procs += procs[0].children(recursive=True)
    except Exception:
        return 0
    total = 0
    for p in procs:
        try:
            with open(f"/proc/{p.pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        total += int(line.split()[1])
                        break
        except (OSError, ValueError):
            continue
    return total

"""Run a tool as a child process and measure it: wall time, peak memory, full log."""
from __future__ import annotations

import os
import shlex
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import NpufitError


@dataclass
class ToolRun:
    command: list[str]
    returncode: int
    wall_s: float
    peak_rss_mb: float | None
    log_path: Path

    @property
    def log(self) -> str:
        try:
            return self.log_path.read_text("utf-8", "replace")
        except OSError:
            return ""

    @property
    def command_line(self) -> str:
        return shlex.join(self.command)


def run_tool(command: list[str], log_path: str | os.PathLike, cwd: str | os.PathLike | None = None,
             env: dict[str, str] | None = None, timeout_s: float | None = None) -> ToolRun:
    """Run a compiler process, its stdout+stderr going to log_path; measure wall time and peak RSS.

    os.wait4 returns the rusage of exactly this child (and the grandchildren it waited for), so the
    memory figure is the compiler's, not npufit's."""
    log_path = Path(log_path)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    with open(log_path, "wb") as log:
        try:
            proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    cwd=cwd, env=env)
        except OSError as e:
            raise NpufitError(f"cannot start {command[0]}: {e.strerror or e}") from None
        status, rusage = 0, None
        while True:
            pid, status, rusage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if timeout_s and time.perf_counter() - t0 > timeout_s:
                proc.kill()
                pid, status, rusage = os.wait4(proc.pid, 0)
                log.write(f"\n[npufit] killed after {timeout_s:.0f} s timeout\n".encode())
                break
            time.sleep(0.02)
        proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    peak = rusage.ru_maxrss / 1024.0 if rusage is not None else None  # Linux reports KiB
    return ToolRun(list(map(str, command)), proc.returncode, round(wall, 3), round(peak, 1) if peak else None, log_path)



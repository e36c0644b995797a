"""Run one npufit verb on one hostile input the way a user would, and judge the outcome.

A run is a real `python -m npufit` subprocess with an address-space cap, a wall-clock cap, a private TMPDIR
and stdin closed; the judge asserts what every hostile case must show (hostile-input issue, part 5):
exit 0 with a result or exit 2 with exactly one `npufit: error:` line, never a traceback; the inputs
byte-identical; nothing created outside the named output; no temp files left.
"""
from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

MEM_CAP_MB = 2048  # address-space cap; ONNX Runtime and numpy reserve some virtual memory up front
TIME_CAP_S = 120.0  # a generous bound that only a hang reaches, never a timing assertion
PAGE = os.sysconf("SC_PAGE_SIZE")
# ONNX Runtime itself writes a session-id file into TMPDIR when imported: not npufit's temp file
FOREIGN_TMP = {".ses"}


@dataclass
class Outcome:
    argv: list[str]
    rc: int | None  # None: killed at the time cap
    stdout: str
    stderr: str
    peak_rss_mb: float
    tmp_left: list[str] = field(default_factory=list)
    mem_killed: bool = False  # stopped by the resident-memory watchdog (rss_cap_mb)
    cache_writes: list[str] = field(default_factory=list)  # files written under the run's private XDG_CACHE_HOME

    @property
    def hung(self) -> bool:
        return self.rc is None and not self.mem_killed

    def describe(self) -> str:
        killed = " (killed by the memory watchdog)" if self.mem_killed else ""
        return (f"npufit {' '.join(self.argv)} -> rc={self.rc}{killed} peak={self.peak_rss_mb:.0f} MB\n"
                f"stdout: {self.stdout[-2000:]}\nstderr: {self.stderr[-2000:]}")


LAUNCH = Path(__file__).with_name("launch.py")


CAP_DAC = (1, 2)  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH: what lets root read a chmod-0 file


def _limits(mem_mb: int | None, unprivileged: bool = False):
    def apply() -> None:
        if mem_mb:
            cap = mem_mb * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        if unprivileged and os.geteuid() == 0:  # root without the file-permission bypass: a user's view of the files
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            for c in CAP_DAC:
                libc.prctl(24, c, 0, 0, 0)  # PR_CAPBSET_DROP: gone from the program exec'd next
        os.setsid()  # the time cap kills the whole group (ORT threads, workers)
    return apply


def session_rss_mb(sid: int) -> float:
    """Resident memory of every process in session `sid` (the run and whatever it started), summed."""
    total = 0
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            if int(fields[3]) != sid:  # field 6 of stat: the session id (fields[0] is field 3, the state)
                continue
            with open(f"/proc/{d}/statm", "rb") as f:
                total += int(f.read().split()[1]) * PAGE
        except (OSError, IndexError, ValueError):
            continue
    return total / (1 << 20)


class _RssWatch:
    """Kill the run's whole session once its summed resident memory passes `cap_mb` (what an out-of-memory killer
    or a CI limit would do), keeping the highest sum seen: a memory bomb shows as what it is, not as the
    allocation failure an address-space cap turns it into."""

    def __init__(self, pid: int, cap_mb: float, every_s: float = 0.05):
        self.pid, self.cap, self.every = pid, cap_mb, every_s
        self.peak, self.killed = 0.0, False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.every):
            rss = session_rss_mb(self.pid)
            self.peak = max(self.peak, rss)
            if rss > self.cap:
                self.killed = True
                try:
                    os.killpg(self.pid, signal.SIGKILL)
                except OSError:
                    pass
                return

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def run_verb(argv: list[str | os.PathLike], cwd: Path, *, time_cap: float = TIME_CAP_S,
             mem_mb: int | None = MEM_CAP_MB, env: dict[str, str] | None = None,
             rss_cap_mb: float | None = None, unprivileged: bool = False) -> Outcome:
    """Run `npufit ARGV` in `cwd` under the caps; TMPDIR and XDG_CACHE_HOME are fresh folders checked afterwards
    (leftover temp files; anything written to a cache outside the requested output).
    mem_mb: address-space cap (None: none); rss_cap_mb: kill the run when its resident memory passes this;
    unprivileged: as root, run without the capabilities that read any file (file permissions apply as to a user)."""
    args = [str(a) for a in argv]
    scratch = cwd / f".hostile-tmp-{time.monotonic_ns()}"
    tmp, cache = scratch / "tmp", scratch / "cache"
    tmp.mkdir(parents=True)
    cache.mkdir()
    run_env = dict(os.environ)
    run_env.update({"TMPDIR": str(tmp), "XDG_CACHE_HOME": str(cache), "NPUFIT_NO_PROGRESS": "1"})
    run_env.pop("PYTHONFAULTHANDLER", None)
    run_env.pop("ORT_DISABLE_TELEMETRY", None)  # npufit itself must turn it off
    if env:
        run_env.update(env)
    report = scratch / "peak-kib"
    # through a small launcher: the run's own peak, not this test process's (see launch.py)
    proc = subprocess.Popen([sys.executable, "-I", "-S", str(LAUNCH), str(report), sys.executable, "-m", "npufit",
                             *args], cwd=cwd, env=run_env,
                  stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                  preexec_fn=_limits(mem_mb, unprivileged), text=True, errors="replace")
    watch = _RssWatch(proc.pid, rss_cap_mb) if rss_cap_mb else None
    try:
        out, err = proc.communicate(timeout=time_cap)
        rc: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        rc = None
    if watch is not None:
        watch.stop()
        if watch.killed:
            rc = None
    try:
        own_kib = int(report.read_text())
    except (OSError, ValueError):  # the launcher was killed with the run (time cap, watchdog)
        own_kib = 0
    peak = max(own_kib / 1024.0, watch.peak if watch else 0.0)
    try:  # a killed run's own workers may outlive it for a moment
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    left = sorted(str(p.relative_to(tmp)) for p in tmp.rglob("*") if p.name not in FOREIGN_TMP)
    cached = sorted(str(p.relative_to(cache)) for p in cache.rglob("*") if not p.is_dir())
    _remove(scratch)
    return Outcome(args, rc, out, err, peak, left, bool(watch and watch.killed), cached)


def _remove(folder: Path) -> None:
    for p in sorted(folder.rglob("*"), reverse=True):
        if p.is_dir() and not p.is_symlink():
            p.chmod(0o700)
            p.rmdir()
        else:
            p.unlink()
    folder.rmdir()


def snapshot(folder: Path) -> dict[str, bytes | str]:
    """Every entry under `folder`: file bytes, or the kind for FIFOs, links and folders (never opened)."""
    snap: dict[str, bytes | str] = {}
    for p in sorted(folder.rglob("*")):
        rel = str(p.relative_to(folder))
        if rel.startswith(".hostile-tmp-"):
            continue
        if p.is_symlink():
            snap[rel] = f"link->{os.readlink(p)}"
        elif p.is_dir():
            snap[rel] = "dir"
        elif p.is_fifo():
            snap[rel] = "fifo"
        elif p.is_file():
            snap[rel] = p.read_bytes()
        else:
            snap[rel] = "other"
    return snap


def assert_sane(o: Outcome, *, allow_ok: bool = True, needle: str | None = None) -> None:
    """Exit 2 with one clear line (containing `needle` if given) or, when allowed, exit 0; never a
    traceback, an internal error, a hang or temp files left behind."""
    assert not o.hung, "hang: " + o.describe()
    assert not o.mem_killed, "memory: " + o.describe()
    assert not o.cache_writes, f"wrote outside the requested output: {o.cache_writes}\n" + o.describe()
    assert "Traceback" not in o.stderr and "Traceback" not in o.stdout, o.describe()
    assert not o.tmp_left, f"temp files left: {o.tmp_left}\n" + o.describe()
    if o.rc == 0 and allow_ok:
        return
    assert o.rc == 2, "not a clean refusal: " + o.describe()
    lines = [ln for ln in o.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("npufit: error:"), "not one line: " + o.describe()
    if needle is not None:
        assert needle.lower() in lines[0].lower(), o.describe()


def assert_untouched(before: dict[str, bytes | str], folder: Path, *, allowed_new: tuple[str, ...] = ()) -> None:
    """The folder holds exactly what it held before plus the named outputs (and what lies under them)."""
    after = snapshot(folder)
    for k, v in before.items():
        assert after.get(k) == v, f"{k} was changed or removed"
    extra = [k for k in after if k not in before
             and not any(k == a or k.startswith(a.rstrip("/") + "/") for a in allowed_new)]
    assert not extra, f"created outside the requested output: {extra}"

"""Run one function in a forked child while the caller goes on with its own work.

For C++ steps that hold the GIL (onnx's checker and shape inference: a Python thread beside them stalls), a
second process is the only way to use a second core. A fork shares the caller's memory copy-on-write, so the
child needs no copy of a big model. The child sends the function's result, or the exception it raised, back
pickled through a pipe and leaves by os._exit: no atexit handler, no buffer flushed, nothing written anywhere
else. A child that gives no answer (killed, crashed, unpicklable outcome) costs nothing but time: `result`
then runs the function here, so the caller always gets the serial answer.
"""

from __future__ import annotations

import faulthandler
import gc
import os
import pickle
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any


def can_fork() -> bool:
    """Linux with os.fork, and no second Python thread alive: a fork copies only the calling thread, so a lock
    another thread holds (logging, a queue, an import) would stay locked in the child forever. (Native pools
    such as OpenBLAS's sit idle outside their calls; the child never calls into them.)"""
    return sys.platform.startswith("linux") and hasattr(os, "fork") and threading.active_count() == 1


class Forked:
    """`fn(*args)` running in a forked child; `result()` joins it. Start with `start`."""

    def __init__(self, pid: int, fd: int, fallback: Callable[[], Any]):
        self._pid, self._fd, self._fallback = pid, fd, fallback  # fallback: fn(*args) here

    def result(self) -> Any:
        """fn's return value, or raise its exception; when the child gave no answer, fn's outcome here."""
        data, ok = self._join()
        if ok:
            try:
                done, value = pickle.loads(data)  # our own child's bytes
            except Exception:
                done, value = None, None
            if done is True:
                return value
            if done is False:
                raise value
        return self._fallback()

    def cancel(self) -> None:
        """Stop the child and reap it (the caller is unwinding: Ctrl-C, SIGTERM); its answer is not wanted."""
        if self._pid:
            self._kill()
            self._join()

    def _kill(self) -> None:
        try:
            os.kill(self._pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def _join(self) -> tuple[bytes, bool]:
        """Read the child's answer to its end, reap the child: -> (the bytes, whether it exited cleanly)."""
        if not self._pid:
            return b"", False
        chunks = []
        try:
            while chunk := os.read(self._fd, 1 << 16):
                chunks.append(chunk)
        except BaseException:  # interrupted while waiting (Ctrl-C, SIGTERM): the answer is not wanted
            self._kill()
            raise
        finally:
            os.close(self._fd)
            pid, self._pid = self._pid, 0
            try:
                status = os.waitpid(pid, 0)[1]
            except ChildProcessError:  # reaped by someone else (a SIGCHLD handler): its answer may still be whole
                status = 0
        return b"".join(chunks), os.waitstatus_to_exitcode(status) == 0


def _die_with(parent: int) -> None:
    """The child ends when its parent does (a scan worker killed at its timeout, Ctrl-C on the parent alone): an
    orphan would finish its step for nobody. Linux's PR_SET_PDEATHSIG; a parent already gone ends the child now."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # 1: PR_SET_PDEATHSIG
    except Exception:  # no prctl: the child ends on its own when its step is done
        pass
    if os.getppid() != parent:
        os._exit(1)


def start(fn: Callable[..., Any], *args: Any) -> Forked | None:
    """fn(*args) in a forked child (its result and exception should pickle; when they do not, or the child dies,
    `result` runs fn(*args) here); None where forking is not safe (see can_fork) or fails: the caller then runs
    fn itself. fn must give the same answer later in the caller: it may not read what the caller changes meanwhile."""
    if not can_fork():
        return None
    r, w = os.pipe()
    parent = os.getpid()
    try:
        pid = os.fork()
    except OSError:  # out of processes or memory: serial
        os.close(r)
        os.close(w)
        return None
    if pid == 0:  # the child: whatever happens, it leaves by os._exit and never returns into the caller's code
        code = 1
        try:
            os.close(r)
            _die_with(parent)
            faulthandler.disable()  # not even a crash report may reach the caller's output (it may write to a dup)
            null = os.open(os.devnull, os.O_WRONLY)
            for fd in (1, 2):
                os.dup2(null, fd)
            gc.disable()  # a collection would touch every object and copy the parent's pages
            try:
                outcome = (True, fn(*args))
            except Exception as e:
                outcome = (False, e)
            payload = pickle.dumps(outcome, pickle.HIGHEST_PROTOCOL)
            view = memoryview(payload)
            while view:
                view = view[os.write(w, view) :]
            code = 0
        finally:
            os._exit(code)  # KeyboardInterrupt, an unpicklable outcome, a closed pipe: exit 1, no answer
    os.close(w)
    return Forked(pid, r, lambda: fn(*args))

"""Start one command from a small process and write its peak resident memory (KiB) to a file.

Why a launcher: Linux carries a forking parent's resident high-water mark into the child's ru_maxrss across
exec, so a run forked straight from a test process that once held 1 GB would report 1 GB whatever it used.
Forked from this process (a few MB), the child's ru_maxrss is its own peak and that of the children it waited
for. Usage: python -I -S launch.py REPORT_FILE PROGRAM [ARGS...]
"""
import os
import signal
import sys

report, argv = sys.argv[1], sys.argv[2:]
pid = os.fork()
if pid == 0:
    try:
        os.execv(argv[0], argv)
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
with open(report, "w") as f:
    f.write(str(usage.ru_maxrss))
code = os.waitstatus_to_exitcode(status)
if code < 0:  # killed by a signal: end the same way, so the caller sees what the run saw
    signal.signal(-code, signal.SIG_DFL)
    os.kill(os.getpid(), -code)
sys.exit(code)

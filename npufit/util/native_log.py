"""Third-party native libraries that log to the process's stderr (file descriptor 2) behind Python's back.

LiteRT prints "INFO: Created TensorFlow Lite XNNPACK delegate for CPU." when it builds an interpreter; such lines
come before npufit's own output and tell a user nothing. `quiet_native_info()` catches what the native code writes
to fd 2 while it runs and passes on every line except its INFO chatter (NPUFIT_VERBOSE=1: everything).
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

# the INFO lines of TFLite/LiteRT ("INFO: ...") and of glog/absl ("I1128 16:46:01.123 ...")
INFO_LINE = re.compile(r"^(?:INFO: |I\d{4} \d\d:\d\d:\d\d)")


@contextmanager
def quiet_native_info() -> Iterator[None]:
    if os.environ.get("NPUFIT_VERBOSE"):
        yield
        return
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no fd 2 (an embedded interpreter): nothing to filter
        yield
        return
    with tempfile.TemporaryFile(mode="w+b") as buf:
        os.dup2(buf.fileno(), 2)
        try:
            yield
        finally:
            try:
                sys.stderr.flush()
            except (OSError, ValueError):
                pass
            os.dup2(saved, 2)
            os.close(saved)
            buf.seek(0)
            kept = [
                line for line in buf.read().decode("utf-8", "replace").splitlines(True) if not INFO_LINE.match(line)
            ]
            if kept:
                sys.stderr.write("".join(kept))

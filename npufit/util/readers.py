"""Input safety: the one way npufit opens a file it reads (hostile-input issue, part 2).

Every reader checks that the path is a regular file before opening it (a named pipe blocks forever, a device
such as /dev/zero never ends) and never reads more than a stated budget, so a hostile path costs one clear
line, not a hang or gigabytes of memory.
"""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from ..errors import BadModelError, NpufitError

MiB = 1 << 20
JSON_MAX_BYTES = 64 * MiB  # plans, records, results: far above any real one
JSON_MAX_DEPTH = 64  # npufit's own JSON nests a handful of levels


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def require_regular_file(path: str | os.PathLike, what: str = "file", error: type[NpufitError] = NpufitError) -> os.stat_result:
    """stat() a path npufit is about to read; refuse anything but an existing regular file (links are followed)."""
    p = os.fspath(path)
    if "\x00" in p:
        raise error(f"{what} name contains a NUL byte")
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise error(f"{p}: no such file") from None
    except OSError as e:
        raise error(f"{p}: cannot be read ({e.strerror or e})") from None
    if not stat.S_ISREG(st.st_mode):
        raise error(f"{p}: is {_kind(st.st_mode)}, not a {what}")
    return st


def read_bytes_capped(path: str | os.PathLike, max_bytes: int, what: str = "file",
                      error: type[NpufitError] = NpufitError) -> bytes:
    """The bytes of a regular file no larger than `max_bytes`."""
    st = require_regular_file(path, what, error)
    if st.st_size > max_bytes:
        raise error(f"{os.fspath(path)}: {what} is {st.st_size / MiB:.1f} MiB, more than the {max_bytes / MiB:.0f} MiB "
                    f"npufit reads for it")
    try:
        with open(path, "rb") as f:
            data = f.read(max_bytes + 1)
    except OSError as e:
        raise error(f"{os.fspath(path)}: cannot be read ({e.strerror or e})") from None
    if len(data) > max_bytes:  # grew while we read it
        raise error(f"{os.fspath(path)}: {what} is larger than the {max_bytes / MiB:.0f} MiB npufit reads for it")
    return data


def _depth_ok(obj: Any, limit: int) -> bool:
    stack = [(obj, 1)]
    while stack:
        o, d = stack.pop()
        if d > limit:
            return False
        if isinstance(o, dict):
            stack.extend((v, d + 1) for v in o.values())
        elif isinstance(o, list):
            stack.extend((v, d + 1) for v in o)
    return True


def read_json(path: str | os.PathLike, what: str = "JSON file", max_bytes: int = JSON_MAX_BYTES,
              max_depth: int = JSON_MAX_DEPTH, error: type[NpufitError] = NpufitError) -> Any:
    """Parse a JSON file within a size and nesting budget; every failure is one line naming the file."""
    data = read_bytes_capped(path, max_bytes, what, error)
    try:
        obj = json.loads(data.decode("utf-8"))
    except RecursionError:
        raise error(f"{os.fspath(path)}: {what} nests deeper than npufit reads") from None
    except (UnicodeDecodeError, ValueError) as e:
        raise error(f"{os.fspath(path)}: not a valid {what} ({str(e).splitlines()[0][:120]})") from None
    if not _depth_ok(obj, max_depth):
        raise error(f"{os.fspath(path)}: {what} nests more than {max_depth} levels deep")
    return obj


__all__ = ["require_regular_file", "read_bytes_capped", "read_json", "BadModelError", "MiB"]

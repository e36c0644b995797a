"""Input safety: the one way npufit opens a file it reads (hostile-input issue, part 2).

Every reader checks that the path is a regular file before opening it (a named pipe blocks forever, a device
such as /dev/zero never ends) and never reads more than a stated budget, so a hostile path costs one clear
line, not a hang or gigabytes of memory.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import zipfile
from pathlib import Path
from typing import Any, Iterator

from ..errors import BadModelError, NpufitError
from .limits import memory_budget

MiB = 1 << 20
JSON_MAX_BYTES = 64 * MiB  # plans, records, results: far above any real one
JSON_MAX_DEPTH = 64  # npufit's own JSON nests a handful of levels
TEXT_MAX_BYTES = 16 * MiB  # pipeline YAML and other hand-written text
ARRAY_MAX_MEMBERS = 1024  # arrays in one .npz
NUMERIC_KINDS = "biuf"  # bool, signed and unsigned integers, floats: what a model input can take
_KIND_TEXT = {"U": "strings", "S": "byte strings", "V": "raw records", "c": "complex numbers", "M": "dates"}


def file_kind(mode: int) -> str:
    """What a non-regular path is, for a one-line refusal ("a named pipe", "a device", ...)."""
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def require_regular_file(
    path: str | os.PathLike, what: str = "file", error: type[NpufitError] = NpufitError
) -> os.stat_result:
    """stat() a path npufit is about to read; refuse anything but an existing, readable regular file (links are
    followed)."""
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
        raise error(f"{p}: is {file_kind(st.st_mode)}, not a {what}")
    try:  # readable by this user: an unreadable file is one line here, not a PermissionError deep in a copy or parse
        os.close(os.open(p, os.O_RDONLY | os.O_NONBLOCK))
    except OSError as e:
        raise error(f"{p}: cannot be read ({e.strerror or e})") from None
    return st


def read_bytes_capped(
    path: str | os.PathLike, max_bytes: int, what: str = "file", error: type[NpufitError] = NpufitError
) -> bytes:
    """The bytes of a regular file no larger than `max_bytes`."""
    st = require_regular_file(path, what, error)
    if st.st_size > max_bytes:
        raise error(
            f"{os.fspath(path)}: {what} is {st.st_size / MiB:.1f} MiB, more than the {max_bytes / MiB:.0f} MiB "
            f"npufit reads for it"
        )
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


def read_json(
    path: str | os.PathLike,
    what: str = "JSON file",
    max_bytes: int = JSON_MAX_BYTES,
    max_depth: int = JSON_MAX_DEPTH,
    error: type[NpufitError] = NpufitError,
) -> Any:
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


def read_text(
    path: str | os.PathLike,
    what: str = "text file",
    max_bytes: int = TEXT_MAX_BYTES,
    error: type[NpufitError] = NpufitError,
) -> str:
    data = read_bytes_capped(path, max_bytes, what, error)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise error(f"{os.fspath(path)}: {what} is not UTF-8 text") from None


def sha256_file(path: str | os.PathLike, what: str = "file", error: type[NpufitError] = NpufitError) -> str:
    """sha256 of a regular file, read in chunks (a FIFO or device is refused, not hashed forever)."""
    require_regular_file(path, what, error)
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    except OSError as e:
        raise error(f"{os.fspath(path)}: cannot be read ({e.strerror or e})") from None
    return h.hexdigest()


def confined(root: str | os.PathLike, rel: Any, what: str, error: type[NpufitError] = NpufitError) -> Path:
    """root/rel for a relative path `rel` read from a file (a plan, record or results folder npufit wrote, a
    pipeline YAML a user wrote); refused when it is not a plain relative path or leads outside `root` (through
    '..' or a link): the one confinement every reader of such paths calls."""
    if not isinstance(rel, str) or not rel or "\x00" in rel:
        raise error(f"{what}: expected a relative file name, got {str(rel)[:80]!r}")
    if os.path.isabs(rel):
        raise error(
            f"{what} '{rel[:200]}' is an absolute path; it must stay inside {os.fspath(root)} (nothing outside is read)"
        )
    base = Path(root).resolve()
    try:
        full = (base / rel).resolve()
        full.relative_to(base)
    except (OSError, RuntimeError, ValueError):
        raise error(f"{what} '{rel[:200]}' points outside {os.fspath(root)} (refused)") from None
    return full


def confined_file(root: str | os.PathLike, rel: Any, what: str, error: type[NpufitError] = NpufitError) -> Path:
    """`confined`, and the path must name an existing regular file (a FIFO or /dev/zero is refused, never opened):
    for files a user-written config names (pipeline models and data), checked before any work starts."""
    full = confined(root, rel, what, error)
    try:
        require_regular_file(full, what, error)
    except NpufitError as e:
        raise error(f"{what} '{str(rel)[:200]}': {e.message.split(': ', 1)[-1]}") from None
    return full


# ---------------------------------------------------------------- .npy / .npz
class ArrayFile:
    """The arrays of an .npz or .npy file, read without unpickling and within a byte budget.

    Opening reads only each array's header (shape, dtype); `read(name, rows)` then reads the first `rows`
    entries along axis 0 and no more, so a small file that declares (or decompresses to) gigabytes costs
    only what is used. Use as a context manager."""

    def __init__(
        self,
        path: str | os.PathLike,
        what: str = "array file",
        max_bytes: int | None = None,
        error: type[NpufitError] = NpufitError,
    ):
        # the array data read (the samples used, not the file): the memory budget unless the caller gives less
        max_bytes = memory_budget() if max_bytes is None else max_bytes
        self.path, self.what, self.max_bytes, self.error = os.fspath(path), what, max_bytes, error
        require_regular_file(path, f"{what} file", error)
        self._zip: zipfile.ZipFile | None = None
        self.headers: dict[str, tuple[tuple[int, ...], Any, bool]] = {}  # name -> (shape, dtype, fortran order)
        self._member: dict[str, str] = {}
        try:
            if zipfile.is_zipfile(self.path):
                self._zip = zipfile.ZipFile(self.path)
                infos = [i for i in self._zip.infolist() if not i.is_dir()]
                if len(infos) > ARRAY_MAX_MEMBERS:
                    raise self._fail(f"holds {len(infos)} arrays, more than the {ARRAY_MAX_MEMBERS} npufit reads")
                for info in infos:
                    name = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
                    with self._zip.open(info) as f:
                        self.headers[name] = self._header(f, name)
                    self._member[name] = info.filename
            else:
                with open(self.path, "rb") as f:
                    self.headers[""] = self._header(f, "")
        except NpufitError:
            self.close()
            raise
        except (OSError, ValueError, EOFError, zipfile.BadZipFile, NotImplementedError, RuntimeError) as e:
            self.close()
            raise self._fail(f"not a readable .npz/.npy file ({type(e).__name__})") from None

    def _fail(self, msg: str) -> NpufitError:
        return self.error(f"{self.what} {self.path}: {msg}")

    def _header(self, f, name: str):
        import numpy as np
        from numpy.lib import format as npy

        try:
            version = npy.read_magic(f)
            if version == (1, 0):
                shape, fortran, dtype = npy.read_array_header_1_0(f)
            elif version == (2, 0):
                shape, fortran, dtype = npy.read_array_header_2_0(f)
            else:
                raise ValueError(f"version {version}")
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError, EOFError) as e:
            what = f"array '{name}'" if name else "it as .npz or .npy"
            raise self._fail(f"cannot read {what}: no valid .npy header ({type(e).__name__})") from None
        if dtype.hasobject:
            raise self._fail(f"array '{name}' holds Python objects; npufit never unpickles data")
        if any(int(d) < 0 for d in shape):
            raise self._fail(f"array '{name}' declares a negative dimension")
        return tuple(int(d) for d in shape), np.dtype(dtype), bool(fortran)

    def __enter__(self) -> "ArrayFile":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._zip is not None:
            self._zip.close()
            self._zip = None

    def __iter__(self) -> Iterator[str]:
        return iter(self.headers)

    def shape(self, name: str) -> tuple[int, ...]:
        return self.headers[name][0]

    def numeric(self, name: str):
        """The header of array `name`, refused in one line unless it holds numbers (strings would fail deep in a
        cast or an ONNX Runtime run)."""
        shape, dtype, fortran = self.headers[name]
        if dtype.kind not in NUMERIC_KINDS:
            held = _KIND_TEXT.get(dtype.kind, "values that are not numbers")
            label = f"array '{name}'" if name else "the array"
            raise self._fail(f"{label} holds {held} (dtype {dtype.str}), not numbers a model takes")
        return shape, dtype, fortran

    def read_rows(self, name: str, pick: list[int]):
        """Only the entries `pick` (sorted indices along axis 0) of array `name`, streamed one entry at a time: the
        file is read up to the last picked entry and memory holds only what is kept."""
        import numpy as np

        shape, dtype, fortran = self.numeric(name)
        if not shape or fortran:
            raise self._fail(f"array '{name}' cannot be sampled by rows (scalar or Fortran order); save it in C order")
        row = 1
        for d in shape[1:]:
            row *= d
        row_bytes = row * dtype.itemsize
        if len(pick) * row_bytes > self.max_bytes:
            raise self._fail(
                f"array '{name}': {len(pick)} samples of {list(shape[1:])} {dtype} need "
                f"{len(pick) * row_bytes / MiB:.0f} MiB, more than the {self.max_bytes / MiB:.0f} MiB npufit reads "
                f"(its memory budget, --memory-budget)"
            )
        out = np.empty((len(pick),) + tuple(shape[1:]), dtype=dtype)
        flat = memoryview(out.reshape(-1)).cast("B")
        wanted = {i: k for k, i in enumerate(pick)}
        skip = bytearray(row_bytes)
        try:
            with self._zip.open(self._member[name]) if self._zip is not None else open(self.path, "rb") as f:
                self._header(f, name)
                for i in range(pick[-1] + 1 if pick else 0):
                    k = wanted.get(i)
                    buf = flat[k * row_bytes : (k + 1) * row_bytes] if k is not None else memoryview(skip)
                    got = 0
                    while got < row_bytes:
                        n = f.readinto(buf[got:])
                        if not n:
                            raise self._fail(f"array '{name}' is truncated (entry {i} of {shape[0]})")
                        got += n
        except (OSError, ValueError, EOFError, zipfile.BadZipFile, RuntimeError) as e:
            raise self._fail(f"array '{name}' cannot be read ({type(e).__name__})") from None
        return out

    def read(self, name: str, rows: int | None = None):
        """The array `name` ("" for a .npy), or only its first `rows` entries along axis 0."""
        import numpy as np

        shape, dtype, fortran = self.numeric(name)
        if rows is not None and shape and rows < shape[0]:
            shape = (rows,) + shape[1:]
            if fortran:  # column-major data cannot be cut by rows without reading all of it
                raise self._fail(
                    f"array '{name}' is stored in Fortran order; save it in C order (np.ascontiguousarray)"
                )
        count = 1
        for d in shape:
            count *= d
        nbytes = count * dtype.itemsize
        if nbytes > self.max_bytes:
            raise self._fail(
                f"array '{name}' {list(shape)} {dtype} needs {nbytes / MiB:.0f} MiB, more than the "
                f"{self.max_bytes / MiB:.0f} MiB npufit reads from one file (its memory budget, --memory-budget; use "
                f"fewer or smaller samples)"
            )
        arr = np.empty(count, dtype=dtype)  # filled in place: one copy of the data in memory, writable
        buf, got = memoryview(arr).cast("B"), 0
        try:
            with self._zip.open(self._member[name]) if self._zip is not None else open(self.path, "rb") as f:
                self._header(f, name)
                while got < nbytes:
                    n = f.readinto(buf[got:])
                    if not n:
                        break
                    got += n
        except (OSError, ValueError, EOFError, zipfile.BadZipFile, RuntimeError) as e:
            raise self._fail(f"array '{name}' cannot be read ({type(e).__name__})") from None
        if got != nbytes:
            raise self._fail(f"array '{name}' is truncated ({got} of {nbytes} bytes)")
        return arr.reshape(shape, order="F" if fortran else "C")


__all__ = [
    "require_regular_file",
    "read_bytes_capped",
    "read_json",
    "read_text",
    "sha256_file",
    "confined",
    "confined_file",
    "ArrayFile",
    "BadModelError",
    "MiB",
]

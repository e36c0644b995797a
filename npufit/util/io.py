"""Output safety: every file npufit writes goes through here.

Rules (issue: hostile input): an output is written as a temp file beside it and renamed into place, so a
reader never sees half a file; it never replaces a device, FIFO, folder, symlink or a file this run reads;
a folder output is swapped in whole only over a folder npufit owns (a marker lists what it wrote), so a
wrong --output-dir can never delete a user's files; temp names carry the writer's pid and the writer holds a lock
on each while it lives, so a later run (any verb writing beside it, and every run for the temp folder) removes
what a killed run left behind without touching a live one's, even when the dead writer's pid has been reused.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import stat
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator

from ..errors import NpufitError
from .readers import file_kind as _kind

OWNED_MARK = ".npufit-owned"  # a folder holding this file was created by npufit; it lists the entries npufit wrote
_TMP_TAG = ".npufit-tmp-"
_OLD_TAG = ".npufit-old-"

# files this process reads, (device, inode) -> the paths it read them by: an output may never land on one of them
_INPUTS: dict[tuple[int, int], set[str]] = {}


def note_input(path: str | os.PathLike) -> None:
    """Record a file this run reads, so that no output of the same run can replace it."""
    try:
        p = os.path.abspath(path)
        st = os.stat(p)
    except (OSError, ValueError):
        return
    _INPUTS.setdefault((st.st_dev, st.st_ino), set()).add(p)


@contextmanager
def one_run():
    """The files one command reads are its own: a command run after another in the same process (the test suite,
    a program that calls the CLI twice) may write a file the earlier one read, e.g. its own earlier output."""
    saved = {k: set(v) for k, v in _INPUTS.items()}
    _INPUTS.clear()
    try:
        yield
    finally:
        _INPUTS.clear()
        _INPUTS.update(saved)


def _is_input(st: os.stat_result) -> bool:
    """Whether `st` is a file this process read, and still is: once every path an input was read by names another
    file or nothing, its inode number is free for the file system to give to a new file (a later output in a
    long-lived process, the pipeline or the test suite), which must not be refused as that input."""
    key = (st.st_dev, st.st_ino)
    paths = _INPUTS.get(key)
    if not paths:
        return False
    for p in list(paths):
        try:
            now = os.stat(p)
        except OSError:
            now = None
        if now is None or (now.st_dev, now.st_ino) != key:
            paths.discard(p)
    if not paths:
        del _INPUTS[key]
    return bool(paths)


def check_output_file(path: str | os.PathLike) -> Path:
    """Refuse an output path that names anything but a new or existing regular file npufit may replace."""
    p = Path(path)
    if str(p) in ("", "."):
        raise NpufitError("the output file name is empty")
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        if p.parent.exists() and not p.parent.is_dir():
            raise NpufitError(f"{p}: its folder {p.parent} is a file") from None
        return p
    except OSError as e:
        raise NpufitError(f"{p}: cannot be written ({e.strerror})") from None
    if stat.S_ISLNK(st.st_mode):
        raise NpufitError(f"{p}: is a symbolic link; npufit never replaces or writes through links, name the real file")
    if not stat.S_ISREG(st.st_mode):
        raise NpufitError(
            f"{p}: is {_kind(st.st_mode)}; npufit writes outputs only as regular files, choose a file name"
        )
    if _is_input(st):
        raise NpufitError(f"{p}: is an input of this run; write the output to another file")
    return p


def _tmp_prefix(name: str, tag: str = _TMP_TAG) -> str:
    return f".{name}{tag}{os.getpid()}-"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


STALE_UNLOCKED_S = 60.0  # an unlocked entry of a live pid is a reused pid's (the writer locks within microseconds)


def _entry_pid(entry: str, tag: str) -> int | None:
    i = entry.find(tag)
    if i < 0:
        return None
    pid_text = entry[i + len(tag) :].split("-", 1)[0]
    return int(pid_text) if pid_text.isdigit() and len(pid_text) < 10 else None


def _lock(path: Path) -> int | None:
    """Hold an exclusive lock on a temp entry for as long as this process lives (or until `_unlock`)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | (os.O_DIRECTORY if path.is_dir() else 0))
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        pass
    return fd


def _unlock(fd: int | None) -> None:
    if fd is not None:
        os.close(fd)


def _unlocked(e: os.DirEntry) -> bool:
    """Nobody holds the writer's lock on this entry (a regular file or folder; anything else is never opened)."""
    try:
        st = e.stat(follow_symlinks=False)
        if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
            return False
        fd = os.open(e.path, os.O_RDONLY | os.O_NONBLOCK | (os.O_DIRECTORY if stat.S_ISDIR(st.st_mode) else 0))
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def _is_stale(e: os.DirEntry) -> bool:
    for tag in (_TMP_TAG, _OLD_TAG):
        pid = _entry_pid(e.name, tag)
        if pid is None or pid == os.getpid():
            continue
        if not _pid_alive(pid):
            return True
        try:
            old = time.time() - e.stat(follow_symlinks=False).st_mtime > STALE_UNLOCKED_S
        except OSError:
            return False
        return old and _unlocked(e)
    return False


def clean_stale(folder: str | os.PathLike, name: str | None = None) -> list[Path]:
    """Remove temp files/folders that a killed npufit run left in `folder` (for output `name`, or all)."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for e in entries:
        if not e.name.startswith(".") or (_TMP_TAG not in e.name and _OLD_TAG not in e.name):
            continue
        if name is not None and not e.name.startswith(f".{name}."):
            continue
        if not _is_stale(e):
            continue
        p = Path(e.path)
        try:
            if e.is_dir(follow_symlinks=False):
                shutil.rmtree(p)
            else:
                p.unlink()
            removed.append(p)
        except OSError:
            pass
    return removed


def clean_stale_temp() -> list[Path]:
    """What killed runs left in the system temp folder (npufit's own entries only), removed at the start of a run."""
    return clean_stale(tempfile.gettempdir())


def _umask() -> int:
    u = os.umask(0)
    os.umask(u)
    return u


@contextmanager
def atomic_path(path: str | os.PathLike, suffix: str = "") -> Iterator[Path]:
    """Yield a temp path next to `path`; it replaces `path` only if the block succeeds."""
    dst = check_output_file(path)
    dst.parent.mkdir(parents=True, exist_ok=True)
    clean_stale(dst.parent)
    fd, tmp = tempfile.mkstemp(prefix=_tmp_prefix(dst.name), suffix=suffix or dst.suffix, dir=dst.parent)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held while this process lives: see clean_stale
    except OSError:
        pass
    tmp_path = Path(tmp)
    try:
        os.chmod(tmp_path, 0o666 & ~_umask())  # mkstemp creates 0600; outputs should be as readable as a normal file
        yield tmp_path
        check_output_file(dst)  # again just before the swap: the path may have changed while we worked
        os.replace(tmp_path, dst)
    finally:
        os.close(fd)
        if tmp_path.exists():
            tmp_path.unlink()


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
    return Path(path)


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | os.PathLike, obj: Any) -> Path:
    from .jsonutil import json_default as _json_default  # lazy: orjson loads only when JSON is written

    return atomic_write_text(path, json.dumps(obj, indent=2, default=_json_default) + "\n")


def atomic_save_onnx(model, path: str | os.PathLike, external_data: bool | None = None) -> Path:
    """Save an onnx.ModelProto atomically; >1.8 GB models (or external_data=True) get a .data file."""
    import onnx

    dst = Path(path)
    big = model.ByteSize() > 1_800_000_000 if external_data is None else external_data
    if not big:
        return atomic_write_bytes(dst, model.SerializeToString())
    data_name = dst.name + ".data"
    check_output_file(dst.parent / data_name)
    with atomic_path(dst) as tmp:
        # write the data file under its final name, then the graph; the graph swap is the commit point
        onnx.save_model(
            model,
            str(tmp),
            save_as_external_data=True,
            all_tensors_to_one_file=True,
            location=data_name,
            size_threshold=1024,
        )
        tmp_data = tmp.parent / data_name
        if tmp_data.exists() and tmp_data != dst.parent / data_name:
            os.replace(tmp_data, dst.parent / data_name)
    return dst


# ---------------------------------------------------------------- folders


def _marker(folder: Path) -> dict | None:
    f = folder / OWNED_MARK
    try:
        if not f.is_file() or f.stat().st_size > 1 << 20:
            return None
        d = json.loads(f.read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return d if isinstance(d, dict) and d.get("owner") == "npufit" else None


def write_marker(folder: Path, kind: str, entries: Iterable[str] | None = None) -> None:
    d: dict[str, Any] = {"owner": "npufit", "kind": kind}
    if entries is not None:
        d["entries"] = sorted(set(entries) - {OWNED_MARK})
    (folder / OWNED_MARK).write_text(json.dumps(d, indent=1) + "\n", "utf-8")


def foreign_entries(folder: Path, legacy_owned=None) -> list[str]:
    """Names in `folder` that npufit did not write there (by its marker; `legacy_owned(folder)` adopts
    folders written before markers existed and returns the names it vouches for, or None)."""
    names = sorted(os.listdir(folder))
    m = _marker(folder)
    if m is not None:
        listed = m.get("entries", names)  # a claimed folder has no list: all of it is npufit's
        owned = {str(n) for n in listed} if isinstance(listed, list) else set()
    else:
        owned = set(legacy_owned(folder) or ()) if legacy_owned else set()
    owned.add(OWNED_MARK)
    return [n for n in names if n not in owned]


def _inside(child: Path, parent: Path) -> bool:
    try:
        child.resolve().relative_to(parent.resolve())
        return True
    except (OSError, RuntimeError, ValueError):  # RuntimeError: a symlink loop (Python < 3.13)
        return False


def check_output_dir(dst: Path, option: str, inputs: Iterable[str | os.PathLike] = (), legacy_owned=None) -> None:
    """Refuse a folder output that is a link, a file, holds an input, or holds files npufit did not write."""
    dst = Path(dst)
    if str(dst) in ("", "."):
        raise NpufitError(f"{option}: give a folder name of its own, not the current folder")
    if dst.is_symlink():
        raise NpufitError(f"{option} {dst}: is a symbolic link; name the real folder")
    for i in inputs:
        if _inside(Path(i), dst):
            raise NpufitError(
                f"{option} {dst}: contains the input {Path(i).name}; choose a folder that does not hold the model"
            )
    if not dst.exists():
        return
    if not dst.is_dir():
        raise NpufitError(f"{option} {dst}: exists and is not a folder")
    foreign = foreign_entries(dst, legacy_owned)
    if foreign:
        shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
        raise NpufitError(f"{option} {dst}: holds files npufit did not write ({shown}); choose a new or empty folder")


@contextmanager
def atomic_dir(
    dst: str | os.PathLike,
    kind: str,
    option: str = "--output-dir",
    inputs: Iterable[str | os.PathLike] = (),
    legacy_owned=None,
) -> Iterator[Path]:
    """Yield a temp folder beside `dst`; when the block succeeds it becomes `dst`.

    An existing `dst` is replaced only when it is empty or holds nothing but what npufit wrote there, and
    never when it contains one of `inputs`."""
    dst = Path(dst)
    inputs = list(inputs)
    check_output_dir(dst, option, inputs, legacy_owned)
    dst.parent.mkdir(parents=True, exist_ok=True)
    clean_stale(dst.parent)
    tmp = Path(tempfile.mkdtemp(prefix=_tmp_prefix(dst.name), dir=dst.parent))
    lock = _lock(tmp)
    old: Path | None = None
    try:
        os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes 0700; the result should look like any folder the user makes
        yield tmp
        write_marker(tmp, kind, os.listdir(tmp))
        check_output_dir(dst, option, inputs, legacy_owned)  # again: the folder may have changed while we worked
        if dst.exists():
            old = Path(tempfile.mkdtemp(prefix=_tmp_prefix(dst.name, _OLD_TAG), dir=dst.parent))
            os.replace(dst, old / "previous")
        os.replace(tmp, dst)
    finally:
        _unlock(lock)
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)


def claim_dir(
    dst: str | os.PathLike,
    kind: str,
    option: str = "--output-dir",
    inputs: Iterable[str | os.PathLike] = (),
    legacy_owned=None,
) -> Path:
    """Create (or reuse) a folder npufit writes into over several steps: new, empty, or already npufit's."""
    dst = Path(dst)
    if dst.exists() and dst.is_dir() and not dst.is_symlink() and _marker(dst) is not None:
        for i in inputs:
            if _inside(Path(i), dst):
                raise NpufitError(
                    f"{option} {dst}: contains the input {Path(i).name}; choose a folder that does not hold it"
                )
        return dst
    check_output_dir(dst, option, inputs, legacy_owned)
    dst.mkdir(parents=True, exist_ok=True)
    write_marker(dst, kind)  # no entry list: everything inside a claimed folder is npufit's
    return dst


@contextmanager
def private_tempdir(kind: str) -> Iterator[Path]:
    """A scratch folder in the system temp dir, removed afterwards; ones left by killed runs are removed first."""
    base = Path(tempfile.gettempdir())
    clean_stale(base)
    d = Path(tempfile.mkdtemp(prefix=_tmp_prefix(f"npufit-{kind}"), dir=base))
    lock = _lock(d)
    try:
        yield d
    finally:
        _unlock(lock)
        shutil.rmtree(d, ignore_errors=True)

"""Outputs are written atomically: a temp file in the same folder, then os.replace."""
from __future__ import annotations

import json
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator


@contextmanager
def atomic_path(path: str | os.PathLike, suffix: str = "") -> Iterator[Path]:
    """Yield a temp path next to `path`; it replaces `path` only if the block succeeds."""
    dst = Path(path)
    dst.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{dst.name}.", suffix=suffix or dst.suffix, dir=dst.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp_path, 0o666 & ~umask)  # mkstemp creates 0600; outputs should be as readable as a normal file
    try:
        yield tmp_path
        os.replace(tmp_path, dst)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
    return Path(path)


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | os.PathLike, obj: Any) -> Path:
    from .jsonutil import json_default as _json_default

    return atomic_write_text(path, json.dumps(obj, indent=2, default=_json_default) + "\n")


def atomic_save_onnx(model, path: str | os.PathLike, external_data: bool | None = None) -> Path:
    """Save an onnx.ModelProto atomically; >1.8 GB models (or external_data=True) get a .data file."""
    import onnx

    dst = Path(path)
    big = model.ByteSize() > 1_800_000_000 if external_data is None else external_data
    if not big:
        return atomic_write_bytes(dst, model.SerializeToString())
    data_name = dst.name + ".data"
    with atomic_path(dst) as tmp:
        # write the data file under its final name, then the graph; the graph swap is the commit point
        onnx.save_model(model, str(tmp), save_as_external_data=True, all_tensors_to_one_file=True, location=data_name, size_threshold=1024)
        tmp_data = tmp.parent / data_name
        if tmp_data.exists() and tmp_data != dst.parent / data_name:
            os.replace(tmp_data, dst.parent / data_name)
    return dst

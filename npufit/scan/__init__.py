"""npufit scan: every model under some folders / globs / a manifest x every target, one row per pair.

Models are found first (sorted, so every executor sees the same list), hashed, and looked up in the
content-hash cache; only new or changed models become tasks for the executor, one task per model
(the graph is loaded once and judged against every target). A model that crashes its worker or
overruns the timeout is a row with status `error` / `timeout`, never the end of the scan.
"""

from __future__ import annotations

import glob
import hashlib
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .. import __version__
from ..check.engine import require_judge
from ..errors import NpufitError
from ..executors import Task, get_executor
from ..targets import get_profile, resolve_targets
from ..util.io import atomic_write_text
from ..util.jsonutil import dumps
from ..util.readers import read_bytes_capped, read_json, require_regular_file
from ..util.shapes import dims_text, parse_input_shapes
from ..vocab import EXECUTOR, JUDGE, MEASURE_JUDGE, MEASURE_MODES, MEASURE_TIMEOUT_S
from .report import ScanReport
from .work import failed_row

MODEL_SUFFIXES = (".onnx", ".tflite")
MANIFEST_SUFFIXES = (".txt", ".lst", ".list")
MANIFEST_MAX_BYTES = 16 << 20
DEFAULT_TIMEOUT_S = 300.0
CACHE_SCHEMA = "npufit.scan-cache/1"
CACHE_MAX_BYTES = 1 << 30  # ~1 KB a row: room for a zoo of 100k models x 10 targets


def discover(paths: Sequence[str | os.PathLike]) -> list[str]:
    """Model files named by `paths`: folders (searched recursively), globs, model files, manifests
    (a text file listing one path or glob per line, relative to the manifest; '#' starts a comment)."""
    found: dict[str, None] = {}
    for raw in paths:
        for f in _expand(str(raw), depth=0):
            found.setdefault(os.path.abspath(f), None)
    return sorted(found)


def _expand(spec: str, depth: int) -> list[str]:
    p = Path(spec)
    if p.is_dir():
        found = []
        for root, _dirs, files in os.walk(p, followlinks=False):  # a link to a parent folder cannot loop
            found.extend(
                os.path.join(root, f)
                for f in files
                if os.path.splitext(f)[1].lower() in MODEL_SUFFIXES and os.path.isfile(os.path.join(root, f))
            )
        return sorted(found)
    if p.is_file():
        if p.suffix.lower() in MODEL_SUFFIXES:
            return [str(p)]
        if p.suffix.lower() in MANIFEST_SUFFIXES:
            return _manifest(p, depth)
        raise NpufitError(f"{spec}: not an .onnx or .tflite model, nor a manifest (.txt/.lst listing model paths)")
    if any(c in spec for c in "*?["):
        hits = sorted(
            h for h in glob.glob(spec, recursive=True) if Path(h).suffix.lower() in MODEL_SUFFIXES and Path(h).is_file()
        )
        return hits
    if os.path.lexists(spec):
        raise NpufitError(f"{spec}: is neither a folder nor a regular file")
    raise NpufitError(f"{spec}: no such file or folder")


def _manifest(path: Path, depth: int) -> list[str]:
    if depth > 4:
        raise NpufitError(f"{path}: manifests nest more than 4 deep")
    text = read_bytes_capped(path, MANIFEST_MAX_BYTES, "manifest").decode("utf-8", "replace")
    out: list[str] = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            spec = line if os.path.isabs(line) else str(path.parent / line)
            out.extend(_expand(spec, depth + 1))
    return out


def content_hash(path: str, known: dict[str, Any] | None = None) -> str:
    """sha256 of the model file (external weights do not change a check, so they are not hashed).

    known: {path: [size, mtime_ns, sha256]} from the cache; a file whose size and mtime are unchanged is not
    read again (a zoo on shared storage is hashed once, not on every scan)."""
    st = require_regular_file(path, "model file")
    seen = (known or {}).get(path)
    if isinstance(seen, list) and len(seen) == 3 and seen[:2] == [st.st_size, st.st_mtime_ns]:
        return str(seen[2])
    if known is not None:
        known[path] = [st.st_size, st.st_mtime_ns, None]
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    if known is not None:
        known[path][2] = h.hexdigest()
    return h.hexdigest()


def _cache_key(sha: str, target: str, judge: str, measure: str = "never") -> str:
    # a new npufit may judge differently, a measured row is another answer than a predicted one: their own entries
    return f"{sha}:{target}:{judge}:{__version__}" + ("" if measure == "never" else f":{measure}")


def _load_cache(path: Path | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """(rows by key, files by path) of an earlier scan's cache."""
    if path is None or not path.exists():
        return {}, {}

    d = read_json(path, "scan cache", max_bytes=CACHE_MAX_BYTES)
    if not isinstance(d, dict) or d.get("schema") != CACHE_SCHEMA or not isinstance(d.get("rows"), dict):
        raise NpufitError(f"--cache {path}: not an npufit scan cache (schema {CACHE_SCHEMA})")
    files = d.get("files")
    return d["rows"], files if isinstance(files, dict) else {}


def scan(
    paths: Sequence[str | os.PathLike],
    targets: str | Sequence[str],
    executor: str = EXECUTOR,
    jobs: int | None = None,
    address: str | None = None,
    cache: str | os.PathLike | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    judge: str = JUDGE,
    input_shapes=None,
    measure: str = "never",
    measure_judge: str = MEASURE_JUDGE,
    measure_timeout: float = MEASURE_TIMEOUT_S,
) -> ScanReport:
    """Check every model under `paths` against each of `targets`, side by side, on a process pool or Ray.

    The library side of `npufit scan PATHS --target T`.

    Parameters
    ----------
    paths : sequence of str or os.PathLike
        Model files and folders (searched for .onnx and .tflite files).
    targets : str or sequence of str
        Target names, a comma-separated list, or "all".
    executor : str
        "pool" (default), "inprocess" or "ray".
    jobs : int, optional
        Parallel workers.
    address : str, optional
        A Ray cluster (executor="ray").
    cache : str or os.PathLike, optional
        A JSON file of earlier rows keyed by content hash, target, judge mode, input shapes, measure mode and npufit
        version; read
        when present, (re)written atomically after the scan.
    timeout : float
        Seconds per model and target.
    judge : str
        How a float model is judged ("auto", "int8", "float"), as in `npufit.check`.
    input_shapes : dict or str, optional
        {"images": (1, 3, 640, 640)} or "images=1,3,640,640", applied to every model with such an input; a model
        whose other unknown dims are not given gets a `needs-shape` row naming the shape to give.
    measure : str
        "never" (default: npufit's prediction, fast over many models) or "auto": each target's installed compiler
        places each model where one runs here (npufit.placement; `timeout` then covers the compiles).
    measure_judge, measure_timeout
        Which compiler run judges ("auto", "compile", "vela-checks") and how long one compile may take.

    Returns
    -------
    ScanReport
        One row per model and target (coverage, partitions, top reasons); `.render(...)` (table, JSON, JSONL, CSV,
        HTML), `.to_dict()`.

    Example
    -------
    >>> import npufit
    >>> s = npufit.scan(["models/"], "hailo8,rk3588")
    >>> s  # doctest: +SKIP
    <ScanReport 80 rows: 40 models x hailo8, rk3588>
    """
    names = list(
        dict.fromkeys(
            get_profile(t).name for t in resolve_targets(targets if isinstance(targets, str) else ",".join(targets))
        )
    )
    require_judge(judge)
    if measure not in MEASURE_MODES:
        raise NpufitError(f"unknown measure mode '{measure}' (choose from {', '.join(MEASURE_MODES)})")
    shapes = {k: list(v) for k, v in parse_input_shapes(input_shapes).items()}
    mode = judge + ("|" + ";".join(f"{k}={dims_text(v)}" for k, v in sorted(shapes.items())) if shapes else "")
    if timeout <= 0:
        raise NpufitError(f"--timeout {timeout:g}: must be a positive number of seconds")
    if jobs is not None and jobs < 1:
        raise NpufitError(f"--jobs {jobs}: must be at least 1")
    models = discover(paths)
    if not models:
        raise NpufitError("no .onnx or .tflite model found under " + ", ".join(str(p) for p in paths))
    cache_path = Path(cache) if cache is not None else None
    cached, files = _load_cache(cache_path)
    t0 = time.perf_counter()
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    shas: dict[str, str] = {}
    todo: list[str] = []
    for m in models:
        try:
            shas[m] = content_hash(m, files)
        except NpufitError as e:
            for t in names:
                rows[(m, t)] = _row(m, "", t, {"status": "error", "error": e.message}, False)
            continue
        hits = {t: cached.get(_cache_key(shas[m], t, mode, measure)) for t in names}
        if all(hits.values()):
            for t in names:
                rows[(m, t)] = _row(m, shas[m], t, hits[t], True)
        else:
            todo.append(m)
    job = {"targets": names, "judge": judge, "input_shapes": shapes, "measure": measure}
    job["measure_judge"], job["measure_timeout"] = measure_judge, measure_timeout
    tasks = [Task("npufit.scan.work:scan_model", {"path": m, **job}, label=m) for m in todo]
    run_info: dict[str, Any] = {"executor": executor, "jobs": None}
    if tasks:
        with get_executor(executor, jobs, address) as ex:
            run_info = ex.describe()
            outcomes = ex.map(tasks, timeout, description=f"scan ({ex.name})")

        for m, o in zip(todo, outcomes):
            per_target = o.value if o.ok else {t: failed_row(o.status, o.error) for t in names}
            for t in names:
                rows[(m, t)] = _row(m, shas[m], t, per_target[t], False)
    elapsed = time.perf_counter() - t0
    ordered = [rows[(m, t)] for m in models for t in names]
    if cache_path is not None:
        _save_cache(cache_path, cached, files, ordered, mode, measure)
    return ScanReport(
        ordered,
        names,
        judge,
        {
            **run_info,
            "models": len(models),
            "checked": len(todo),
            "from_cache": len(models) - len(todo),
            "seconds": round(elapsed, 3),
            "placement": "predicted by npufit's rules: scan predicts (--measure runs the installed compilers)"
            if measure == "never"
            else "measured by each target's installed compiler where one runs here, else predicted (per row)",
        },
    )


def _row(model: str, sha: str, target: str, body: dict[str, Any], from_cache: bool) -> dict[str, Any]:
    full = failed_row(body.get("status", "error"), body.get("error", "")) if body.get("status") != "ok" else dict(body)
    return {"model": model, "sha256": sha, "target": target, **full, "cached": from_cache}


def _save_cache(
    path: Path, old: dict[str, Any], files: dict[str, Any], rows: list[dict[str, Any]], judge: str, measure: str
) -> None:
    keep = dict(old)
    for r in rows:
        if r["status"] == "ok" and r["sha256"]:  # errors and timeouts are tried again next time
            body = {k: v for k, v in r.items() if k not in ("model", "sha256", "target", "cached")}
            keep[_cache_key(r["sha256"], r["target"], judge, measure)] = body
    atomic_write_text(path, dumps({"schema": CACHE_SCHEMA, "files": files, "rows": keep}, None) + "\n")

"""Content-addressed step results: a step is skipped when the hash of its inputs and settings is unchanged.

Each cell keeps `step.json` in its folder: the key it was computed under, its status, its output files
with their sha256, its typed result (results.py; `metrics` on disk). The key hashes the step's settings, the
model spec, the npufit version and the sha256 of every input file (the outputs of the cells it depends on) --
content, not timestamps, so re-exporting an identical model does not invalidate everything downstream, and an
edited file does.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import NpufitError
from ..util.io import atomic_write_json
from ..util.readers import confined, read_json, sha256_file
from .results import StaleResult, StepResult, parse_result

RECORD = "step.json"
SCHEMA = "npufit.step/1"
NO_RECORD = "no earlier result"
CACHEABLE = ("ok", "rejected")  # deterministic outcomes; failures and "tool not installed" skips are retried

_digests: dict[tuple[str, int, int], str] = {}


def digest_file(path: str | os.PathLike) -> str:
    """sha256 of a file (memoised per path, size and mtime within one process)."""
    p = Path(path)
    st = p.stat()
    memo = (str(p.resolve()), st.st_size, st.st_mtime_ns)
    if memo not in _digests:
        _digests[memo] = sha256_file(p, "step output")
    return _digests[memo]


def digest_tree(path: Path) -> str:
    """sha256 over a file, or over every file of a folder (names and contents, sorted)."""
    if path.is_file():
        return digest_file(path)
    h = hashlib.sha256()
    for f in sorted(q for q in path.rglob("*") if q.is_file()):
        h.update(str(f.relative_to(path)).encode())
        h.update(digest_file(f).encode())
    return h.hexdigest()


def compute_key(parts: dict[str, Any]) -> str:
    blob = json.dumps(parts, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


@dataclass
class StepRecord:
    cell: str
    step: str
    key: str = ""
    status: str = "pending"  # ok | failed | skipped | rejected | cached (in-memory only)
    message: str = ""
    outputs: dict[str, str] = field(default_factory=dict)  # name -> path relative to the cell folder
    digests: dict[str, str] = field(default_factory=dict)
    result: StepResult | None = None  # what the step found (status ok only); on disk as "metrics"
    seconds: float = 0.0
    finished: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "cell": self.cell,
            "step": self.step,
            "key": self.key,
            "status": self.status,
            "message": self.message,
            "outputs": dict(self.outputs),
            "digests": dict(self.digests),
            "metrics": self.result.to_dict() if self.result is not None else {},
            "seconds": self.seconds,
            "finished": self.finished,
        }

    @classmethod
    def read(cls, folder: Path, root: Path | None = None) -> "tuple[StepRecord | None, str]":
        """(the record of an earlier run, "") or (None, why) when there is none or it cannot be trusted (unreadable,
        another version, wrong field types, a result that is not what the step records now, outputs outside the
        results folder `root`): the step then simply runs again, and a cell that may not run says why."""
        p = folder / RECORD
        if not os.path.lexists(p):
            return None, NO_RECORD
        try:
            d = read_json(p, RECORD)
        except NpufitError as e:
            return None, e.message
        if not isinstance(d, dict) or d.get("schema") != SCHEMA:
            return None, f"{p}: not a {SCHEMA} record"
        types = {
            "cell": str,
            "step": str,
            "key": str,
            "status": str,
            "message": str,
            "outputs": dict,
            "digests": dict,
            "metrics": dict,
            "finished": str,
            "seconds": (int, float),
        }
        bad = sorted(set(d) - set(types) - {"schema"}) + [k for k, t in types.items() if not isinstance(d.get(k), t)]
        if bad:
            return None, f"{p}: field '{bad[0]}' is unknown, missing or of the wrong type"
        try:
            result = parse_result(d["step"], d["status"], d["metrics"], str(p))
        except StaleResult as e:
            return None, e.message
        if not all(isinstance(v, str) for v in [*d["digests"].values(), *d["outputs"].values()]):
            return None, f"{p}: outputs and digests must be strings"
        try:
            for rel in d["outputs"].values():  # relative to the cell folder; the report's lies one level up
                confined(root or folder, os.path.relpath(folder / rel, root) if root else rel, "step output")
        except NpufitError as e:
            return None, e.message
        return cls(
            d["cell"],
            d["step"],
            d["key"],
            d["status"],
            d["message"],
            d["outputs"],
            d["digests"],
            result,
            d["seconds"],
            d["finished"],
        ), ""

    def save(self, folder: Path) -> None:
        atomic_write_json(folder / RECORD, self.to_dict())

    def output_path(self, folder: Path, name: str) -> Path | None:
        rel = self.outputs.get(name)
        return folder / rel if rel else None


def fresh(record: StepRecord | None, key: str, folder: Path) -> tuple[bool, str]:
    """(reusable?, why not) for a recorded result under the key computed now."""
    if record is None:
        return False, NO_RECORD
    if record.status not in CACHEABLE:
        return False, f"last run {record.status}"
    if record.key != key:
        return False, "inputs or settings changed"
    for name, rel in record.outputs.items():
        p = folder / rel
        if not p.exists():
            return False, f"output {rel} is missing"
        if record.digests.get(name) and digest_tree(p) != record.digests[name]:
            return False, f"output {rel} was modified"
    return True, ""

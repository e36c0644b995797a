"""Content-addressed step results: a step is skipped when the hash of its inputs and settings is unchanged.

Each cell keeps `step.json` in its folder: the key it was computed under, its status, its output files
with their sha256, its metrics. The key hashes the step's settings, the model spec, the npufit version
and the sha256 of every input file (the outputs of the cells it depends on) -- content, not timestamps,
so re-exporting an identical model does not invalidate everything downstream, and an edited file does.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..util.io import atomic_write_json
from ..errors import NpufitError
from ..util.readers import confined, read_json, sha256_file

RECORD = "step.json"
SCHEMA = "npufit.step/1"
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
    metrics: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    finished: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"schema": SCHEMA, **asdict(self)}

    @classmethod
    def load(cls, folder: Path, root: Path | None = None) -> "StepRecord | None":
        """The record of an earlier run, or None when there is none or it cannot be trusted (unreadable, another
        version, wrong field types, outputs outside the results folder `root`): the step then simply runs again."""
        p = folder / RECORD
        if not os.path.lexists(p):
            return None
        try:
            d = read_json(p, RECORD)
        except NpufitError:
            return None
        if not isinstance(d, dict) or d.get("schema") != SCHEMA:
            return None
        d.pop("schema", None)
        try:
            rec = cls(**d)
        except TypeError:  # written by another version: treat as absent
            return None
        types = {"cell": str, "step": str, "key": str, "status": str, "message": str, "outputs": dict, "digests": dict,
                 "metrics": dict, "finished": str}
        if not all(isinstance(getattr(rec, k), t) for k, t in types.items()) or not isinstance(rec.seconds, (int, float)):
            return None
        try:
            for rel in rec.outputs.values():  # relative to the cell folder; the report's lies one level up
                confined(root or folder, os.path.relpath(folder / rel, root) if root else rel, "step output")
        except NpufitError:
            return None
        if not all(isinstance(v, str) for v in rec.digests.values()):
            return None
        return rec

    def save(self, folder: Path) -> None:
        atomic_write_json(folder / RECORD, self.to_dict())

    def output_path(self, folder: Path, name: str) -> Path | None:
        rel = self.outputs.get(name)
        return folder / rel if rel else None


def fresh(record: StepRecord | None, key: str, folder: Path) -> tuple[bool, str]:
    """(reusable?, why not) for a recorded result under the key computed now."""
    if record is None:
        return False, "no earlier result"
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

"""The record format: where records live, their schemas, one letter per node, reading them. A leaf module."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

SCHEMA = "npufit.calibration.measured/1"  # one record per (target, build, opset) of a model set
CASES_SCHEMA = "npufit.calibration.cases/1"  # synthetic case records: rknn_cases.py, vela_cases.py, vela_transpose.py
# docs/calibration: the rules of npufit/targets/ cite their records by these paths
RECORDS = Path(__file__).resolve().parents[1] / "docs" / "calibration"
LETTER = {"npu": "n", "cpu": "c", "folded": "f"}
OFF = ("cpu", "unsupported")  # npufit verdicts that keep a node off the NPU


def record_path(target: str, build: str, opset: int, folder: Path = RECORDS) -> Path:
    return folder / f"{target}-{build}-op{opset}.json"


def ops_sha(graph) -> str:
    return hashlib.sha256(",".join(n.op_type for n in graph.top_nodes).encode()).hexdigest()[:16]


def placement_entry(graph, placement) -> dict:
    by = {p.node: p for p in placement}
    letters = "".join(LETTER[by[n.name].device] if n.name in by else "f" for n in graph.top_nodes)
    return {
        "nodes": len(graph.top_nodes),
        "ops_sha": ops_sha(graph),
        "placement": letters,
        "cpu": {n.name: n.op_type for n, c in zip(graph.top_nodes, letters) if c == "c"},
    }


def load_record(path: Path) -> dict:
    rec = json.loads(path.read_text())
    if rec.get("schema") != SCHEMA:
        raise ValueError(f"{path}: not a {SCHEMA} record")
    return rec


def load_cases(path: Path) -> dict:
    rec = json.loads(path.read_text())
    if rec.get("schema") != CASES_SCHEMA:
        raise ValueError(f"{path}: not a {CASES_SCHEMA} record")
    return rec

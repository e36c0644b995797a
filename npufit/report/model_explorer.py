"""The placement as a Google Model Explorer node-data overlay (load it in Model Explorer's "custom node data").

Format (model_explorer/node_data_builder.py, ModelNodeData): {graph_id: {"results": {node_key: {"value": number,
"bgColor": css}}, "thresholds": [{"value": v, "bgColor": css}, ...]}}. Node keys are the ONNX node names,
which Model Explorer's ONNX adapter uses as node ids. Values: 0 folded, 1 npu, 2 cpu, 3 unsupported, so the
thresholds colour the graph and the side panel's stats still mean something (average = how far off the NPU).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..util.io import atomic_write_json
from .style import VERDICT_COLOR_HEX

VALUE = {"folded": 0, "npu": 1, "cpu": 2, "unsupported": 3}


def graph_id(model_path: str | os.PathLike | None) -> str:
    """The ONNX graph's name (Model Explorer's graph id); torch exports name it 'main_graph'."""
    if model_path and Path(model_path).is_file():
        try:
            import onnx

            name = onnx.load(str(model_path), load_external_data=False).graph.name
            if name:
                return name
        except Exception:
            pass
    return "main_graph"


def node_data(report: Any, gid: str = "main_graph") -> dict[str, Any]:
    """report: a CheckReport or its to_dict()."""
    d = report.to_dict() if hasattr(report, "to_dict") else report
    results = {}
    for n in d["nodes"]:
        if n.get("parent"):
            continue  # bodies of If/Loop are not separate nodes in the overlay
        v = n["verdict"]
        results[n["name"]] = {"value": VALUE.get(v, 3), "bgColor": VERDICT_COLOR_HEX.get(v, "#d64545")}
    thresholds = [{"value": VALUE[v], "bgColor": VERDICT_COLOR_HEX[v]} for v in ("folded", "npu", "cpu", "unsupported")]
    return {gid: {"results": results, "thresholds": thresholds}}


def write_node_data(report: Any, path: str | os.PathLike, model_path: str | os.PathLike | None = None) -> Path:
    d = report.to_dict() if hasattr(report, "to_dict") else report
    return atomic_write_json(path, node_data(d, graph_id(model_path or d.get("model", {}).get("path"))))

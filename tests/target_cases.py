"""Judge one node of a small test model against a target (shared by the per-target rule tests)."""
from __future__ import annotations

from npufit.check import check_graph
from npufit.graph.onnx_loader import build_graph
from npufit.targets import get_profile


def judge(m, target: str, node: str = "op", mode: str = "auto"):
    """(verdict, {rule id: sentence}) of `node` in ONNX model `m` (in memory; nothing is written);
    `mode` is check's --judge (a float model on an int8-only target is judged as int8 unless "float")."""
    import onnx

    m = onnx.shape_inference.infer_shapes(m)
    g = build_graph(m, "test.onnx", {"ai.onnx": m.opset_import[0].version}, [])
    r = check_graph(g, get_profile(target), mode).node(node)
    return r.verdict.value, {x.rule: x.sentence() for x in r.reasons}

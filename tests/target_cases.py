"""Judge one node of a small test model against a target (shared by the per-target rule tests)."""
from __future__ import annotations

from npufit.check import check_graph
from npufit.graph.onnx_loader import build_graph
from npufit.targets import get_profile


def judge(m, target: str, node: str = "op"):
    """(verdict, {rule id: sentence}) of `node` in ONNX model `m` (in memory; nothing is written)."""
    import onnx

    m = onnx.shape_inference.infer_shapes(m)
    g = build_graph(m, "test.onnx", {"ai.onnx": m.opset_import[0].version}, [])
    r = check_graph(g, get_profile(target)).node(node)
    return r.verdict.value, {x.rule: x.sentence() for x in r.reasons}

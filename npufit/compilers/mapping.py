"""Map compiler layers back to the nodes of the user's model.

Compilers rename, split and fuse. A layer is attributed to a model node by, in order: its exact name
(direct), the compiler's own logged rewrite lineage (lineage), or the longest node name that prefixes
it (lineage). Nodes left without a layer were folded away at compile time or fused into a neighbour;
they take the neighbour's device (fused)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..graph import Graph
from .base import Placement


@dataclass
class Layer:
    name: str  # the compiler's name for the layer
    op: str  # the compiler's op type
    device: str  # npu | cpu
    reason: str = ""
    cycles: str = ""  # compiler estimate, as printed


def origins_from_lineage(rewrites: Iterable[tuple[list[str], list[str]]], known: set[str]) -> dict[str, set[str]]:
    """rewrites: (removed, added) node-name lists in log order -> added name -> original model nodes."""
    origin: dict[str, set[str]] = {}
    for removed, added in rewrites:
        src: set[str] = set()
        for r in removed:
            src |= origin.get(r, {r} if r in known else set())
        if not src:
            continue  # e.g. 'expand_to_4d' helpers: no removed node, fall back to the name prefix
        for a in added:
            origin[a] = origin.get(a, set()) | src if a not in known else {a}
    return origin


LAYOUT_OPS = {"Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten"}
# ONNX ops that compilers lower to pure layout layers: for these, a layout layer IS the work
LAYOUT_NODE_OPS = LAYOUT_OPS | {
    "Gather",
    "Slice",
    "Split",
    "Concat",
    "Identity",
    "Expand",
    "Tile",
    "DepthToSpace",
    "SpaceToDepth",
}


def _shape_math(graph: Graph, n) -> bool:
    """Shape arithmetic (Shape -> Gather -> Concat -> Reshape's shape input) that compilers fold on static
    shapes: a node with no layer whose outputs are all integer tensors, or a Shape/Size op."""
    if n.op_type in ("Shape", "Size"):
        return True
    dts = [graph.tensor(o).dtype for o in n.outputs if o]
    return bool(dts) and all(d in ("int64", "int32") for d in dts)


def _prefix_owner(name: str, names_sorted: list[str]) -> str | None:
    for n in names_sorted:  # longest first
        if name.startswith(n) and (len(name) == len(n) or not name[len(n)].isalnum()):
            return n
    return None


def _fused_into(n, neigh: list, out: Mapping[str, Placement], op_of: Mapping[str, str]):
    """The neighbour a layer-less node was fused into. Compilers fuse into accelerator layers (ConvAdd,
    ConvRelu, exNorm, exSDPAttention); their CPU layers are one op each. So prefer an NPU neighbour whose
    fused layer names this op (ConvAdd for an Add), then any NPU neighbour, and only then a CPU one
    (RKNN-C: RT-DETR's residual Add after the CPU GatherElements is inside the NPU layer 'o_proj/MatMul#2_ConvAdd')."""
    npu = [p for p in neigh if out[p.name].device == "npu"]

    def names_op(lay: str) -> bool:
        op = op_of.get(lay, "")
        return op != n.op_type and n.op_type in op

    named = [p for p in npu if any(names_op(lay) for lay in out[p.name].layers)]
    return (named or npu or neigh)[0]


def resolve(
    graph: Graph,
    layers: Iterable[Layer],
    lineage: Mapping[str, set[str]] | None = None,
    compiler: str = "compiler",
    removed: Mapping[str, str] | None = None,
    merged: Mapping[str, str] | None = None,
) -> list[Placement]:
    """removed: nodes the compiler's log says it deleted as no-ops (node -> rule); without a layer they run nowhere.
    merged: nodes its log says it merged into a neighbour of the same op (RKNN 'fuse_two_slice'): they run where
    that neighbour runs, not where an NPU neighbour of another op does."""
    nodes = {n.name: n for n in graph.top_nodes}
    by_len = sorted(nodes, key=len, reverse=True)
    hits: dict[str, list[tuple[Layer, str]]] = {}
    for layer in layers:
        if layer.name in nodes:
            owners, how = {layer.name}, "direct"
        elif lineage and layer.name in lineage:
            owners, how = lineage[layer.name], "lineage"
        else:
            p = _prefix_owner(layer.name, by_len)
            owners, how = ({p}, "lineage") if p else (set(), "")
        for o in owners:
            hits.setdefault(o, []).append((layer, how))

    folded = graph.folded
    out: dict[str, Placement] = {}
    for n in graph.top_nodes:
        got = hits.get(n.name)
        if got:
            # The node's device is that of the layers doing its work; layout helpers the compiler adds
            # around it (a Reshape/Transpose on the CPU before an output) do not move the node itself.
            work = [lay for lay, _ in got if lay.op not in LAYOUT_OPS or n.op_type in LAYOUT_NODE_OPS] or [
                lay for lay, _ in got
            ]
            cpu = [lay for lay in work if lay.device == "cpu"]
            dev = "cpu" if cpu else "npu"
            hows = {h for _, h in got}
            reason = "; ".join(lay.reason or f"{compiler} placed {lay.op} layer '{lay.name}' on the CPU" for lay in cpu)
            out[n.name] = Placement(
                n.name,
                n.op_type,
                dev,
                reason,
                [lay.name for lay, _ in got],
                "direct" if hows == {"direct"} else "lineage",
            )
        elif removed and n.name in removed:
            out[n.name] = Placement(
                n.name,
                n.op_type,
                "folded",
                f"removed by the {compiler}'s '{removed[n.name]}' rewrite (a no-op)",
                how="absent",
            )
        elif n.name in folded or all(graph.tensor(t).is_const for t in n.present_inputs) or _shape_math(graph, n):
            out[n.name] = Placement(
                n.name, n.op_type, "folded", f"no {compiler} layer: computed at compile time", how="absent"
            )
    # fused-into-neighbour: walk in topological order so chains (Conv->BN->Relu) resolve
    op_of = {lay.name: lay.op for lays in hits.values() for lay, _ in lays}
    for n in graph.top_nodes:
        if n.name in out:
            continue
        # predecessors first (a fused op follows the layer it joins), then successors
        neigh = [
            m
            for m in (*graph.predecessors(n), *graph.successors(n))
            if m.name in out and out[m.name].device != "folded"
        ]
        if merged and n.name in merged:
            neigh = [m for m in neigh if m.op_type == n.op_type] or neigh
        if neigh:
            src = out[_fused_into(n, neigh, out, op_of).name]
            out[n.name] = Placement(
                n.name,
                n.op_type,
                src.device,
                f"fused into {src.op} '{src.node}' by the {compiler}"
                if src.device == "npu"
                else f"fused into {src.op} '{src.node}', which the {compiler} placed on the CPU",
                list(src.layers),
                "fused",
            )
        else:
            out[n.name] = Placement(
                n.name, n.op_type, "folded", f"no {compiler} layer and no placed neighbour", how="absent"
            )
    return [out[n.name] for n in graph.top_nodes]

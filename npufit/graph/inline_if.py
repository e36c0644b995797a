"""Splice the taken branch of `If` nodes whose condition is known into the main graph (a private copy only).

Exporters trace Python branches on sizes (`if rel_pos.shape[0] != max_rel_dist` in ViTDet) into `If` nodes; once the
input shapes are pinned the condition is fixed. The converter inlines such Ifs before lowering (convert/prepass_if.py);
the loader does the same on the copy it re-infers shapes on (onnx_loader._refine_shapes), so that the tensors after
the If get the shapes the converter and the vendor compilers see, while the checked graph keeps its own nodes."""

from __future__ import annotations

from collections.abc import Mapping

import onnx
from onnx import helper


def inline_ifs(model: onnx.ModelProto, taken_branch: Mapping[int, bool]) -> tuple[int, dict[str, str]]:
    """Replace each If node of `model.graph` named in `taken_branch` (its index in graph.node -> condition) by its
    then/else branch; -> (how many, inlined node -> If node). An If whose branch would shadow a name of the main graph
    or another node's subgraph is kept. (By index: protobuf hands out a new wrapper object per access, so id() does
    not name a node.)"""
    g = model.graph
    taken = {o for n in g.node for o in n.output} | {t.name for t in g.initializer} | {i.name for i in g.input}
    # a name written inside any node's subgraphs: once inlined into the main graph, a branch name another node's
    # subgraph also writes would break single assignment (ONNX forbids a subgraph shadowing an outer name)
    scoped = [_written(n) for n in g.node]
    nodes, origin, fired = [], {}, 0
    for k, n in enumerate(g.node):
        branch = None
        if k in taken_branch:
            want = "then_branch" if taken_branch[k] else "else_branch"
            branch = next((a.g for a in n.attribute if a.name == want), None)
            inner = _written_in(branch) if branch is not None else set()
            others = set().union(*(w for j, w in enumerate(scoped) if j != k))
            if branch is None or inner & (taken | others):
                branch = None  # keep the If (never rename user tensors)
        if branch is None:
            nodes.append(n)
            continue
        taken |= inner
        g.initializer.extend(branch.initializer)
        for j, b in enumerate(branch.node):
            b.name = f"{n.name}/{b.name or b.op_type + str(j)}"  # node names stay unique in the main graph
            nodes.append(b)
            origin[b.name] = n.name
        for i, (src, dst) in enumerate(zip(branch.output, n.output)):
            ident = helper.make_node("Identity", [src.name], [dst], name=f"{n.name}/out{i}")
            nodes.append(ident)
            origin[ident.name] = n.name
        fired += 1
    if fired:
        del g.node[:]
        g.node.extend(nodes)
    return fired, origin


def _written_in(graph: onnx.GraphProto) -> set[str]:
    """Every name a graph and its nested subgraphs write (node outputs, initializers)."""
    out = {t.name for t in graph.initializer}
    for n in graph.node:
        out.update(o for o in n.output if o)
        out |= _written(n)
    return out


def _written(node: onnx.NodeProto) -> set[str]:
    """Every name the subgraphs of `node` write."""
    out: set[str] = set()
    for a in node.attribute:
        for sub in (
            [a.g]
            if a.type == onnx.AttributeProto.GRAPH
            else list(a.graphs)
            if a.type == onnx.AttributeProto.GRAPHS
            else []
        ):
            out |= _written_in(sub)
    return out

"""Tensors a node reads from its graph, including the outer-scope names its If/Loop/Scan bodies use.

A body may read any tensor of the enclosing graph without listing it as a node input; a stage that
holds such a node must receive those tensors too.
"""

from __future__ import annotations

import onnx

from ..graph import NodeView


def outer_reads(node: NodeView) -> list[str]:
    reads = [t for t in node.inputs if t]
    if node.subgraph_of and node.raw is not None:
        for a in node.raw.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                reads.extend(_free_names(a.g))
            elif a.type == onnx.AttributeProto.GRAPHS:
                for g in a.graphs:
                    reads.extend(_free_names(g))
    return list(dict.fromkeys(reads))


def _free_names(g: onnx.GraphProto) -> list[str]:
    defined = {i.name for i in g.input} | {t.name for t in g.initializer} | {t.name for t in g.sparse_initializer}
    used: list[str] = []
    for n in g.node:
        for t in n.input:
            if t and t not in defined:
                used.append(t)
        for a in n.attribute:
            subs = (
                [a.g]
                if a.type == onnx.AttributeProto.GRAPH
                else list(a.graphs)
                if a.type == onnx.AttributeProto.GRAPHS
                else []
            )
            for sub in subs:
                used.extend(t for t in _free_names(sub) if t not in defined)
        defined.update(o for o in n.output if o)
    return used

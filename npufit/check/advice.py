"""The command that avoids one node a toolchain cannot take: the `npufit fix` rule npufit knows for it, else a split
that ends the NPU stage just before it. Shared by npufit's converter (a node it has no lowering for) and the vendor
compilers' failures (a node the toolchain names in its error)."""

from __future__ import annotations

import os
from pathlib import Path

from ..graph import Graph
from ..util.commands import fix_command, npufit_command, output_file, output_folder


def split_before(model: str | os.PathLike, target: str, graph: Graph, node: str, shapes=None) -> str:
    """`npufit split` whose NPU stage ends at what `node` reads (its inputs and, for If/Loop/Scan, the outer values
    its bodies read), then the compile of that stage; a node that reads nothing computed takes the prefix mode.
    Both run as pasted: same model, target and input shapes, an output folder beside the model."""
    ends = _computed_reads(graph, node)
    cut = ("--mode", "explicit", "--end-nodes", ",".join(ends)) if ends else ("--mode", "prefix")
    d = output_folder(model, "split")
    stage = str(Path(d) / "stage0_npu.onnx")
    split = npufit_command("split", model, "--target", target, *cut, "-d", d, shapes=shapes)
    return (
        f"{split} (the part before '{node}' becomes {stage}), then "
        f"{npufit_command('compile', stage, '--target', target)}"
    )


def fix_before(model: str | os.PathLike, target: str, rules: list[str], shapes=None) -> str:
    fixed = output_file(model, "fixed")
    return f"{fix_command(model, target, rules, shapes)}, then {npufit_command('compile', fixed, '--target', target)}"


def _computed_reads(graph: Graph, node: str) -> list[str]:
    n = graph.node(node)
    if n is None:
        return []
    reads = list(n.inputs)
    if n.raw is not None:
        reads += _outer_reads(n.raw)
    out: list[str] = []
    for t in reads:
        info = graph.tensors.get(t) if t else None
        if t and t not in out and graph.producer(t) is not None and not (info is not None and info.is_const):
            out.append(t)
    return out


def _outer_reads(proto) -> list[str]:
    """Names the bodies of a control-flow node read from the graph around them (ONNX's outer scope)."""
    found: list[str] = []
    for a in proto.attribute:
        for g in [a.g] if a.HasField("g") else list(a.graphs):
            local = {i.name for i in g.input} | {t.name for t in g.initializer}
            for m in g.node:
                for t in list(m.input) + _outer_reads(m):
                    if t and t not in local and t not in found:
                        found.append(t)
                local.update(m.output)
    return found

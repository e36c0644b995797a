"""annotate -> merge regions -> partition, as a visible list (TVM BYOC's idea, without Relay).

Regions are built so that the contracted graph stays acyclic: a node's "level" counts the
device changes on the longest path from the inputs, and only same-device neighbours on the
same level merge. A path that leaves a region and comes back must change device twice, so it
raises the level; no region can depend on itself. Split stages reuse these partitions.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..graph import Graph, NodeView

NPU, HOST = "npu", "host"


@dataclass
class Partition:
    id: int
    device: str  # "npu" | "host"
    nodes: list[str]
    macs: int = 0
    inputs: list[str] = field(default_factory=list)  # tensors from outside (model inputs or other partitions)
    outputs: list[str] = field(default_factory=list)  # tensors used outside (or model outputs)

    def to_dict(self) -> dict:
        return {"id": self.id, "device": self.device, "node_count": len(self.nodes), "macs": self.macs,
                "inputs": self.inputs, "outputs": self.outputs, "nodes": self.nodes}


@dataclass
class Boundary:
    tensor: str
    shape: list | None
    dtype: str | None
    bytes: int | None
    src: str  # "partition 0" / "model input"
    dst: str
    direction: str  # "npu->host" | "host->npu"

    def to_dict(self) -> dict:
        return {"tensor": self.tensor, "shape": self.shape, "dtype": self.dtype, "bytes": self.bytes,
                "from": self.src, "to": self.dst, "direction": self.direction}


def partition(graph: Graph, device_of: dict[str, str], macs: dict[str, int]) -> list[Partition]:
    """device_of: node name -> 'npu' | 'host' for every top-level node that runs somewhere.

    Linear in nodes + edges: one pass in topological order assigns levels and unions same-device,
    same-level neighbours (union-find with path halving); a second pass collects each region's
    inputs and outputs.
    """
    runnable = [n for n in graph.top_nodes if n.name in device_of]
    made_by = _running_producers(runnable)
    level: dict[str, int] = {}
    root: dict[str, str] = {}  # union-find parent by node name

    def find(a: str) -> str:
        while root[a] != a:
            root[a] = root[root[a]]
            a = root[a]
        return a

    for n in runnable:
        name = n.name
        dev = device_of[name]
        preds = _preds(n, made_by)
        lv = 0
        for p in preds:
            pl = level[p] + (device_of[p] != dev)
            if pl > lv:
                lv = pl
        level[name] = lv
        root[name] = name
        for p in preds:
            if level[p] == lv and device_of[p] == dev:
                ra, rb = find(p), find(name)
                if ra != rb:
                    root[rb] = ra
    group_of: dict[str, int] = {}
    groups: list[list[NodeView]] = []
    first: dict[str, int] = {}
    for n in runnable:  # topological order: groups are numbered by their earliest node
        r = find(n.name)
        g = first.get(r)
        if g is None:
            g = first[r] = len(groups)
            groups.append([])
        groups[g].append(n)
        group_of[n.name] = g
    ins: list[dict[str, None]] = [{} for _ in groups]  # insertion-ordered sets
    outs: list[dict[str, None]] = [{} for _ in groups]
    graph_outs = set(graph.output_names)
    tensors = graph.tensors
    for n in runnable:
        g = group_of[n.name]
        for t in n.inputs:
            if not t or t in ins[g]:
                continue
            p = made_by.get(t)
            if p is not None and group_of[p] == g:
                continue
            info = tensors.get(t)
            if info is None or not info.is_const:
                ins[g][t] = None
        for o in n.outputs:
            if not o or o in outs[g]:
                continue
            if o in graph_outs or any(c.parent is None and group_of.get(c.name) != g for c in graph.consumers(o)):
                outs[g][o] = None
    return [Partition(g, device_of[members[0].name], [m.name for m in members], sum(macs.get(m.name, 0) for m in members),
                      list(ins[g]), list(outs[g])) for g, members in enumerate(groups)]


def _running_producers(runnable: list[NodeView]) -> dict[str, str]:
    """tensor -> name of the running node that writes it."""
    made_by: dict[str, str] = {}
    for n in runnable:
        for o in n.outputs:
            if o:
                made_by[o] = n.name
    return made_by


def _preds(node: NodeView, made_by: dict[str, str]) -> list[str]:
    """Names of the distinct running producers of `node`'s inputs."""
    out: list[str] = []
    for t in node.inputs:
        p = made_by.get(t)
        if p is not None and p not in out:
            out.append(p)
    return out


def boundaries(graph: Graph, parts: list[Partition]) -> list[Boundary]:
    owner: dict[str, Partition] = {}
    for p in parts:
        for n in p.nodes:
            for o in graph.node(n).outputs:
                if o:
                    owner[o] = p
    out: list[Boundary] = []
    seen: set[tuple[str, str]] = set()

    def add(t: str, src: str, dst: str, direction: str):
        if (t, direction) in seen:
            return
        seen.add((t, direction))
        info = graph.tensor(t)
        out.append(Boundary(t, None if info.shape is None else list(info.shape), info.dtype, info.nbytes, src, dst, direction))

    for p in parts:
        for t in p.inputs:
            q = owner.get(t)
            src_dev = q.device if q else HOST
            if src_dev != p.device:
                add(t, f"partition {q.id}" if q else "model input", f"partition {p.id}", f"{src_dev}->{p.device}")
        if p.device == NPU:
            for t in p.outputs:
                if t in graph.output_names:
                    add(t, f"partition {p.id}", "model output", "npu->host")
    return out


def npu_prefix(graph: Graph, device_of: dict[str, str]) -> dict:
    """Largest NPU-runnable prefix: NPU nodes all of whose running ancestors are NPU nodes too."""
    ok: dict[str, None] = {}  # topological order is kept by insertion
    runnable = [n for n in graph.top_nodes if n.name in device_of]
    made_by = _running_producers(runnable)
    for n in runnable:
        if device_of[n.name] == NPU and all(p in ok for p in _preds(n, made_by)):
            ok[n.name] = None
    graph_ins, graph_outs = set(graph.input_names), set(graph.output_names)
    start, end, end_tensors = [], [], []
    for name in ok:
        n = graph.node(name)
        if any(t in graph_ins for t in n.inputs):
            start.append(name)
        crossing = [o for o in n.outputs if o and (o in graph_outs or any(
            c.name not in ok and c.name in device_of for c in graph.consumers(o)))]
        if crossing:
            end.append(name)
            end_tensors.extend(crossing)
    return {"nodes": list(ok), "start_nodes": start, "end_nodes": end, "end_tensors": end_tensors}

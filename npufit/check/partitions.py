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


class _UF:
    def __init__(self):
        self.p: dict[str, str] = {}

    def find(self, a: str) -> str:
        self.p.setdefault(a, a)
        while self.p[a] != a:
            self.p[a] = self.p[self.p[a]]
            a = self.p[a]
        return a

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.p[rb] = ra


def partition(graph: Graph, device_of: dict[str, str], macs: dict[str, int]) -> list[Partition]:
    """device_of: node name -> 'npu' | 'host' for every top-level node that runs somewhere."""
    level: dict[str, int] = {}
    uf = _UF()
    runnable = [n for n in graph.top_nodes if n.name in device_of]
    for n in runnable:
        dev = device_of[n.name]
        preds = [p for p in graph.predecessors(n) if p.name in device_of]
        lv = 0
        for p in preds:
            lv = max(lv, level[p.name] + (device_of[p.name] != dev))
        level[n.name] = lv
        uf.find(n.name)
        for p in preds:
            if device_of[p.name] == dev and level[p.name] == lv:
                uf.union(p.name, n.name)
    groups: dict[str, list[NodeView]] = {}
    for n in runnable:
        groups.setdefault(uf.find(n.name), []).append(n)
    parts = []
    for i, members in enumerate(sorted(groups.values(), key=lambda ms: ms[0].index)):
        parts.append(_describe(graph, i, device_of[members[0].name], members, macs))
    return parts


def _describe(graph: Graph, pid: int, device: str, members: list[NodeView], macs: dict[str, int]) -> Partition:
    names = {m.name for m in members}
    produced = {o for m in members for o in m.outputs if o}
    ins, outs = [], []
    graph_outs = set(graph.output_names)
    for m in members:
        for t in m.inputs:
            if t and t not in produced and t not in ins and not graph.tensor(t).is_const:
                ins.append(t)
        for o in m.outputs:
            if not o:
                continue
            used_outside = any(c.name not in names for c in graph.consumers(o) if c.parent is None)
            if (used_outside or o in graph_outs) and o not in outs:
                outs.append(o)
    return Partition(pid, device, [m.name for m in members], sum(macs.get(m.name, 0) for m in members), ins, outs)


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
    ok: set[str] = set()
    for n in graph.top_nodes:
        if device_of.get(n.name) != NPU:
            continue
        if all(p.name in ok for p in graph.predecessors(n) if p.name in device_of):
            ok.add(n.name)
    graph_ins, graph_outs = set(graph.input_names), set(graph.output_names)
    start, end, end_tensors = [], [], []
    for n in graph.top_nodes:
        if n.name not in ok:
            continue
        if any(t in graph_ins for t in n.inputs):
            start.append(n.name)
        crossing = [o for o in n.outputs if o and (o in graph_outs or any(
            c.name not in ok and c.name in device_of for c in graph.consumers(o)))]
        if crossing:
            end.append(n.name)
            end_tensors.extend(crossing)
    return {"nodes": sorted(ok, key=lambda s: graph.node(s).index), "start_nodes": start, "end_nodes": end, "end_tensors": end_tensors}

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
        return {
            "id": self.id,
            "device": self.device,
            "node_count": len(self.nodes),
            "macs": self.macs,
            "inputs": self.inputs,
            "outputs": self.outputs,
            "nodes": self.nodes,
        }


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
        return {
            "tensor": self.tensor,
            "shape": self.shape,
            "dtype": self.dtype,
            "bytes": self.bytes,
            "from": self.src,
            "to": self.dst,
            "direction": self.direction,
        }


class RunningDag:
    """The running top-level nodes as index lists: device per node and distinct running predecessors.

    Built once per check and shared by partition() and npu_prefix(); lists indexed by node position
    instead of name-keyed dicts keep a 100k-node graph to a few list reads per edge.
    """

    def __init__(
        self, graph: Graph, device_of: dict[str, str], known: tuple[list[NodeView], list[str | None]] | None = None
    ):
        """known: (running top-level nodes in order, device per node index), when the caller built them already
        (the check engine does, in the same pass that fills device_of)."""
        self.graph = graph
        self.group: list[int] | None = None  # partition id per node index (-1: not running), set by partition()
        if known is not None:
            self.runnable, self.dev = known
        else:
            self.runnable = [n for n in graph.top_nodes if n.name in device_of]
            self.dev = [None] * len(graph.nodes)
            for n in self.runnable:
                self.dev[n.index] = device_of[n.name]
        dev, producer = self.dev, graph._producer.get  # the dict's own get: no method frame per edge
        self.preds: list[list[int]] = []
        append = self.preds.append
        for n in self.runnable:
            ps: list[int] = []
            for t in n.inputs:
                if t:
                    p = producer(t)
                    if p is not None:
                        i = p.index
                        if dev[i] is not None and i not in ps:
                            ps.append(i)
            append(ps)


def partition(
    graph: Graph, device_of: dict[str, str], macs: dict[str, int], dag: RunningDag | None = None
) -> list[Partition]:
    """device_of: node name -> 'npu' | 'host' for every top-level node that runs somewhere.

    Linear in nodes + edges: one pass in topological order assigns levels and unions same-device,
    same-level neighbours (union-find with path halving); a second pass collects each region's
    inputs and outputs.
    """
    dag = dag or RunningDag(graph, device_of)
    nodes, dev, runnable = graph.nodes, dag.dev, dag.runnable
    level = [0] * len(nodes)
    root = list(range(len(nodes)))  # union-find parent by node index

    def find(a: int) -> int:
        while root[a] != a:
            root[a] = root[root[a]]
            a = root[a]
        return a

    for n, preds in zip(runnable, dag.preds):
        i = n.index
        d = dev[i]
        if len(preds) == 1:  # the usual case, the loops below in short: same device means same level and a merge
            p = preds[0]
            if dev[p] == d:
                level[i] = level[p]
                ra = root[p]
                if root[ra] != ra:
                    ra = find(p)
                root[i] = ra  # i is its own root still: nothing was merged into it before its own turn
            else:
                level[i] = level[p] + 1
            continue
        lv = 0
        for p in preds:
            pl = level[p] + (dev[p] != d)
            if pl > lv:
                lv = pl
        level[i] = lv
        for p in preds:
            if level[p] == lv and dev[p] == d:
                # most nodes are a root or point at one (unions link roots): no call for those
                ra = root[p]
                if root[ra] != ra:
                    ra = find(p)
                rb = root[i]
                if root[rb] != rb:
                    rb = find(i)
                if ra != rb:
                    root[rb] = ra
    group = [-1] * len(nodes)
    groups: list[list[NodeView]] = []
    first: dict[int, int] = {}
    for n in runnable:  # topological order: groups are numbered by their earliest node
        i = n.index
        r = root[i]
        if root[r] != r:
            r = find(i)
        g = first.get(r)
        if g is None:
            g = first[r] = len(groups)
            groups.append([])
        groups[g].append(n)
        group[i] = g
    dag.group = group
    ins: list[dict[str, None]] = [{} for _ in groups]  # insertion-ordered sets
    outs: list[dict[str, None]] = [{} for _ in groups]
    graph_outs = set(graph.output_names)
    tensors, producer, consumers = graph.tensors.get, graph._producer.get, graph._consumers.get
    for n in runnable:
        g = group[n.index]
        gin, gout = ins[g], outs[g]
        for t in n.inputs:
            if not t or t in gin:
                continue
            src = producer(t)
            if src is not None and group[src.index] == g:
                continue
            info = tensors(t)
            if info is None or not info.is_const:
                gin[t] = None
        for o in n.outputs:
            if not o or o in gout:
                continue
            if o in graph_outs:
                gout[o] = None
                continue
            for c in consumers(o, ()):  # a plain loop: a generator per tensor costs more than the test
                if c.parent is None and group[c.index] != g:
                    gout[o] = None
                    break
    parts = []
    macs_of = macs.get
    for g, members in enumerate(groups):
        names = [m.name for m in members]
        total = 0
        for name in names:
            total += macs_of(name, 0)
        parts.append(Partition(g, dev[members[0].index], names, total, list(ins[g]), list(outs[g])))  # type: ignore[arg-type]
    return parts


def boundaries(graph: Graph, parts: list[Partition], dag: RunningDag | None = None) -> list[Boundary]:
    """dag: the RunningDag `parts` were made from (partition() left each node's partition on it)."""
    owner = _owners(graph, parts, dag)
    out: list[Boundary] = []
    seen: set[tuple[str, str]] = set()

    def add(t: str, src: str, dst: str, direction: str):
        if (t, direction) in seen:
            return
        seen.add((t, direction))
        info = graph.tensor(t)
        out.append(
            Boundary(t, None if info.shape is None else list(info.shape), info.dtype, info.nbytes, src, dst, direction)
        )

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


class _ProducerPartition:
    """owner.get(tensor) read through the producer map and the partition of each node index: no map over every
    output of every partition node (100k entries at 100k nodes) when a few thousand tensors cross partitions."""

    __slots__ = ("producer", "group", "parts")

    def __init__(self, graph: Graph, parts: list[Partition], group: list[int]):
        self.producer, self.group, self.parts = graph._producer.get, group, parts

    def get(self, tensor: str) -> Partition | None:
        p = self.producer(tensor)
        g = -1 if p is None else self.group[p.index]
        return None if g < 0 else self.parts[g]


def _owners(graph: Graph, parts: list[Partition], dag: RunningDag | None):
    """The partition whose nodes output each tensor. Read from the producer map where that gives the same answer:
    node names unique (partitions list names) and no tensor output by two nodes; else the full map by name."""
    if dag is not None and dag.group is not None and graph.names_unique and graph.single_producers:
        return _ProducerPartition(graph, parts, dag.group)
    owner: dict[str, Partition] = {}
    node = graph.node
    for p in parts:
        for n in p.nodes:
            for o in node(n).outputs:
                if o:
                    owner[o] = p
    return owner


def npu_prefix(graph: Graph, device_of: dict[str, str], dag: RunningDag | None = None) -> dict:
    """Largest NPU-runnable prefix: NPU nodes all of whose running ancestors are NPU nodes too."""
    dag = dag or RunningDag(graph, device_of)
    ok = [False] * len(graph.nodes)
    chosen: list[NodeView] = []  # topological order
    dev = dag.dev
    for n, preds in zip(dag.runnable, dag.preds):
        i = n.index
        if dev[i] != NPU:
            continue
        for p in preds:  # a plain loop: all(<generator>) per node costs more than the test
            if not ok[p]:
                break
        else:
            ok[i] = True
            chosen.append(n)
    graph_ins, graph_outs = set(graph.input_names), set(graph.output_names)
    start, end, end_tensors = [], [], []
    for n in chosen:
        if any(t in graph_ins for t in n.inputs):
            start.append(n.name)
        crossing = [
            o
            for o in n.outputs
            if o
            and (o in graph_outs or any(not ok[c.index] and dag.dev[c.index] is not None for c in graph.consumers(o)))
        ]
        if crossing:
            end.append(n.name)
            end_tensors.extend(crossing)
    return {"nodes": [n.name for n in chosen], "start_nodes": start, "end_nodes": end, "end_tensors": end_tensors}

"""Where to cut: stage groups for each mode (best / prefix / segments / explicit / auto), the tensors each
stage reads and writes, and the candidate cuts ranked by a stated cost.

Only *running* top-level nodes are placed into stages. Folded nodes (shape arithmetic, constant
subgraphs) run nowhere at runtime; extraction copies them into every stage that reads them, so
they never create a boundary.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from ..check.partitions import HOST, NPU, Partition, npu_prefix
from ..check.result import CheckReport
from ..errors import NpufitError
from ..graph import Graph
from ..targets.base import Verdict
from .cost import CostModel
from .subgraphs import outer_reads


@dataclass
class Stage:
    name: str
    device: str  # "npu" | "host"
    nodes: list[str]  # running top-level nodes; folded helpers are added at extraction
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    macs: int = 0


@dataclass
class Cut:
    mode: str
    label: str
    stages: list[Stage]
    sources: dict[str, str]  # stage input tensor -> "input" or the producing stage's name
    cost: dict
    options: dict = field(default_factory=dict)  # how to ask for this cut again (CLI options)

    @property
    def npu_stages(self) -> int:
        return self.cost["npu_stages"]

    def rank_key(self) -> tuple:
        c = self.cost
        return (c["est_ms"], c["boundaries"], c["bytes_crossing"], len(self.stages))

    def signature(self) -> tuple:
        return tuple((s.device, tuple(s.nodes)) for s in self.stages)

    def summary(self) -> dict:
        return {
            "mode": self.mode,
            "label": self.label,
            "options": self.options,
            **self.cost,
            "stages": [f"{s.device}:{len(s.nodes)}" for s in self.stages],
        }


class GraphIndex:
    """Runtime dataflow between running top-level nodes (folded producers are constants here)."""

    def __init__(self, graph: Graph, report: CheckReport, cost: CostModel):
        self.graph = graph
        self.report = report
        self.cost = cost
        self.verdict = {n.name: n.verdict for n in report.nodes}
        self.macs = {n.name: n.macs for n in report.nodes}
        self.device_of = {
            n.name: (NPU if self.verdict[n.name] == Verdict.NPU else HOST)
            for n in graph.top_nodes
            if self.verdict[n.name] != Verdict.FOLDED
        }
        self.order = [n.name for n in graph.top_nodes if n.name in self.device_of]
        self.index = {n.name: n.index for n in graph.nodes}
        self.inputs = list(graph.input_names)
        self.outputs = list(graph.output_names)
        self.producer: dict[str, str] = {}
        for name in self.order:
            for o in graph.node(name).outputs:
                if o:
                    self.producer[o] = name
        runtime = set(self.producer) | set(self.inputs)
        self.reads: dict[str, list[str]] = {}
        self.consumers: dict[str, list[str]] = {}
        for name in self.order:
            reads = [t for t in dict.fromkeys(outer_reads(graph.node(name))) if t in runtime]
            self.reads[name] = reads
            for t in reads:
                self.consumers.setdefault(t, []).append(name)
        self.total_macs = sum(self.macs.get(n, 0) for n in self.order)

    def nbytes(self, tensor: str) -> int | None:
        return self.graph.tensor(tensor).nbytes

    def resolve(self, names: list[str], what: str) -> tuple[list[str], list[str]]:
        """Node or tensor names -> (node names, tensor names); an unknown name is a clear error."""
        nodes, tensors = [], []
        known = set(self.order) | set(self.producer) | set(self.inputs)
        for nm in names:
            if nm in self.device_of:
                nodes.append(nm)
            elif nm in self.producer or nm in self.inputs:
                tensors.append(nm)
            elif self.graph.node(nm) is not None:
                raise NpufitError(f"{what} '{nm}' is a folded (compile-time constant) node: name a node that runs")
            else:
                close = difflib.get_close_matches(nm, sorted(known), n=3)
                hint = f" (did you mean {', '.join(close)}?)" if close else ""
                raise NpufitError(f"{what} '{nm}' is neither a node nor a tensor of the model{hint}")
        return nodes, tensors


# -- stages from groups ---------------------------------------------------------------------


def build_cut(
    ix: GraphIndex, mode: str, label: str, groups: list[tuple[str, list[str]]], options: dict | None = None
) -> Cut:
    """Groups (device, node names) in execution order -> stages with their I/O, sources and cost."""
    groups = [(d, sorted(ns, key=ix.index.__getitem__)) for d, ns in groups if ns]
    owner: dict[str, int] = {}
    for si, (_, names) in enumerate(groups):
        for n in names:
            owner[n] = si
    stages, sources = [], {}
    outs = set(ix.outputs)
    for si, (dev, names) in enumerate(groups):
        st = Stage(f"stage{si}_{dev}", dev, names, macs=sum(ix.macs.get(n, 0) for n in names))
        for n in names:
            for t in ix.reads[n]:
                src = ix.producer.get(t)
                if (src is None or owner[src] != si) and t not in st.inputs:
                    st.inputs.append(t)
            for o in ix.graph.node(n).outputs:
                if o in ix.producer and (o in outs or any(owner[c] != si for c in ix.consumers.get(o, []))):
                    st.outputs.append(o)
        stages.append(st)
    for si, st in enumerate(stages):
        for t in st.inputs:
            src = ix.producer.get(t)
            if src is None:
                sources[t] = "input"
            elif owner[src] < si:
                sources[t] = stages[owner[src]].name
            else:  # a partition bug or a cycle through a subgraph's outer-scope read
                raise NpufitError(f"cannot order the stages: {st.name} needs '{t}', produced by a later stage")
    return Cut(mode, label, stages, sources, cut_cost(ix, stages, sources), options or {})


def transfers(ix: GraphIndex, stages: list[Stage], sources: dict[str, str]) -> list[dict]:
    """Every tensor handed between stages (and model inputs/outputs), once per receiving device copy.

    Once a tensor is in host memory every host stage sees it; each NPU stage needs its own copy."""
    dev = {s.name: s.device for s in stages}
    seen, out = set(), []

    def add(t, src, dst, src_dev, dst_dev):
        key = (t, dst if dst_dev == NPU else HOST)
        if key in seen:
            return
        seen.add(key)
        info = ix.graph.tensor(t)
        out.append(
            {
                "tensor": t,
                "from": src,
                "to": dst,
                "direction": f"{src_dev}->{dst_dev}",
                "shape": None if info.shape is None else list(info.shape),
                "dtype": info.dtype,
                "bytes": info.nbytes,
            }
        )

    for st in stages:
        for t in st.inputs:
            src = sources[t]
            add(t, src, st.name, HOST if src == "input" else dev[src], st.device)
        for o in st.outputs:
            if o in ix.outputs:
                add(o, st.name, "output", st.device, HOST)
    return out


def cut_cost(ix: GraphIndex, stages: list[Stage], sources: dict[str, str]) -> dict:
    crossing = [t for t in transfers(ix, stages, sources) if t["direction"] in ("npu->host", "host->npu")]
    npu_macs = sum(s.macs for s in stages if s.device == NPU)
    pct = 100.0 * npu_macs / ix.total_macs if ix.total_macs else 0.0
    nbytes = sum(t["bytes"] or 0 for t in crossing)
    n_npu = sum(s.device == NPU for s in stages)
    est = ix.cost.estimate_ms(ix.total_macs - npu_macs, npu_macs, len(crossing), nbytes, n_npu)
    return {
        "est_ms": round(est, 4),
        "npu_macs_pct": round(pct, 2),
        "npu_macs": npu_macs,
        "total_macs": ix.total_macs,
        "boundaries": len(crossing),
        "bytes_crossing": nbytes,
        "unknown_size_boundaries": sum(t["bytes"] is None for t in crossing),
        "npu_stages": n_npu,
        "host_stages": sum(s.device == HOST for s in stages),
    }


# -- the modes -------------------------------------------------------------------------------


def prefix_cut(ix: GraphIndex) -> Cut:
    pre = npu_prefix(ix.graph, ix.device_of)["nodes"]
    inside = set(pre)
    return build_cut(ix, "prefix", "largest NPU prefix", [(NPU, pre), (HOST, [n for n in ix.order if n not in inside])])


def segments_cut(ix: GraphIndex, partitions: list[Partition], min_nodes: int, max_npu: int | None = None) -> Cut:
    """Every NPU partition with >= min_nodes nodes is a stage (with max_npu: only that many, those with the most
    MACs); the rest runs on the host, merged where order allows."""
    if min_nodes < 1:
        raise NpufitError("--min-nodes must be at least 1")
    dev = [p.device if (p.device == HOST or len(p.nodes) >= min_nodes) else HOST for p in partitions]
    if max_npu is not None:
        npu = sorted(
            (i for i, d in enumerate(dev) if d == NPU),
            key=lambda i: -sum(ix.macs.get(n, 0) for n in partitions[i].nodes),
        )
        for i in npu[max_npu:]:
            dev[i] = HOST
    part_of = {n: i for i, p in enumerate(partitions) for n in p.nodes}
    deps: list[set[int]] = [set() for _ in partitions]
    for i, p in enumerate(partitions):
        for n in p.nodes:
            for t in ix.reads[n]:
                src = ix.producer.get(t)
                if src is not None and part_of[src] != i:
                    deps[i].add(part_of[src])
    # Kahn's order, preferring the device just emitted: consecutive host partitions can then merge
    # (merging neighbours of a topological order never creates a cycle).
    indeg = [len(d) for d in deps]
    users: list[list[int]] = [[] for _ in partitions]
    for i, d in enumerate(deps):
        for j in d:
            users[j].append(i)
    ready = sorted(i for i, k in enumerate(indeg) if k == 0)
    order, last = [], None
    while ready:
        pick = next((i for i in ready if dev[i] == last), ready[0])
        ready.remove(pick)
        order.append(pick)
        last = dev[pick]
        for u in users[pick]:
            indeg[u] -= 1
            if indeg[u] == 0:
                ready.append(u)
        ready.sort()
    if len(order) != len(partitions):
        raise NpufitError("the check partitions form a cycle; use --mode prefix or explicit cut names")
    groups: list[tuple[str, list[str]]] = []
    for i in order:
        if groups and dev[i] == HOST and groups[-1][0] == HOST:
            groups[-1][1].extend(partitions[i].nodes)
        else:
            groups.append((dev[i], list(partitions[i].nodes)))
    if max_npu is None:
        return build_cut(ix, "segments", f"segments --min-nodes {min_nodes}", groups, {"min_nodes": min_nodes})
    which = "largest NPU region" if max_npu == 1 else f"{max_npu} largest NPU regions"
    label = f"the {which} (segments, min {min_nodes} nodes)"
    return build_cut(ix, "segments", label, groups, {"min_nodes": min_nodes, "max_npu_stages": max_npu})


def explicit_cut(ix: GraphIndex, start: list[str], end: list[str]) -> Cut:
    """Hailo semantics: the NPU stage is every node on a path from a start node to an end node."""
    s_nodes, s_tensors = ix.resolve(start, "start")
    e_nodes, e_tensors = ix.resolve(end, "end")
    starts = set(s_nodes) | {c for t in s_tensors for c in ix.consumers.get(t, [])}
    ends = set(e_nodes) | {ix.producer[t] for t in e_tensors if t in ix.producer}
    if start and not starts:
        raise NpufitError(f"no running node reads the start tensor(s) {', '.join(start)}")
    below = _reach(ix, starts, forward=True) if start else set(ix.order)
    above = _reach(ix, ends, forward=False) if end else set(ix.order)
    npu = below & above
    if not npu:
        raise NpufitError("no node lies on a path from the start nodes to the end nodes (are they swapped?)")
    pre = _reach(ix, npu, forward=False) - npu
    post = [n for n in ix.order if n not in npu and n not in pre]
    options = {"start_nodes": list(start), "end_nodes": list(end)}
    return build_cut(ix, "explicit", "explicit start/end", [(HOST, list(pre)), (NPU, list(npu)), (HOST, post)], options)


def _reach(ix: GraphIndex, seeds: set[str], forward: bool) -> set[str]:
    seen, stack = set(seeds), list(seeds)
    while stack:
        n = stack.pop()
        if forward:
            nxt = [c for o in ix.graph.node(n).outputs if o for c in ix.consumers.get(o, [])]
        else:
            nxt = [ix.producer[t] for t in ix.reads[n] if t in ix.producer]
        for m in nxt:
            if m not in seen:
                seen.add(m)
                stack.append(m)
    return seen


# -- candidates ---------------------------------------------------------------------------------


def prefix_truncations(ix: GraphIndex, keep: int = 4) -> list[Cut]:
    """Shorter NPU prefixes (cut after the k-th prefix node), scored incrementally in one pass."""
    pre = npu_prefix(ix.graph, ix.device_of)["nodes"]
    if len(pre) < 2:
        return []
    outs = set(ix.outputs)
    remaining: dict[str, int] = {}
    open_t: set[str] = set()
    used_inputs: set[str] = set()
    macs = nbytes = 0
    best: dict[tuple, int] = {}
    for k, n in enumerate(pre[:-1]):
        macs += ix.macs.get(n, 0)
        for t in ix.reads[n]:
            if t in remaining:
                remaining[t] -= 1
                if remaining[t] == 0 and t not in outs and t in open_t:
                    open_t.discard(t)
                    nbytes -= ix.nbytes(t) or 0
            elif t not in ix.producer and t not in used_inputs:
                used_inputs.add(t)
                nbytes += ix.nbytes(t) or 0
        for o in ix.graph.node(n).outputs:
            if o in ix.producer:
                remaining[o] = len(ix.consumers.get(o, []))
                if remaining[o] or o in outs:
                    open_t.add(o)
                    nbytes += ix.nbytes(o) or 0
        nb = len(open_t) + len(used_inputs)
        key = (round(ix.cost.estimate_ms(ix.total_macs - macs, macs, nb, nbytes, 1), 4), nb, nbytes)
        best[key] = k  # the longest prefix with this score wins
    cuts = []
    for key in sorted(best)[:keep]:
        k = best[key]
        inside = set(pre[: k + 1])
        cut = build_cut(
            ix,
            "prefix",
            f"NPU prefix up to {pre[k]}",
            [(NPU, pre[: k + 1]), (HOST, [m for m in ix.order if m not in inside])],
        )
        cut.options = {"end_nodes": _stage_end_nodes(ix, cut.stages[0])}
        cuts.append(cut)
    return cuts


def _stage_end_nodes(ix: GraphIndex, st: Stage) -> list[str]:
    outs = set(st.outputs)
    return [n for n in st.nodes if any(o in outs for o in ix.graph.node(n).outputs)]


def candidates(ix: GraphIndex, partitions: list[Partition], chosen: Cut | None) -> list[Cut]:
    """The chosen cut plus alternatives from every mode, ranked by the cost model, duplicates removed."""
    pool: list[Cut] = [chosen] if chosen is not None else []
    pool.append(prefix_cut(ix))
    pool.extend(prefix_truncations(ix))
    sizes = sorted({len(p.nodes) for p in partitions if p.device == NPU})
    step = max(1, len(sizes) // 8)
    for m in sizes[::step]:
        pool.append(segments_cut(ix, partitions, m))
    if sizes:  # the NPU regions with the most MACs alone: one or two network groups, the rest on the host
        for k in (1, 2):
            pool.append(segments_cut(ix, partitions, 1, k))
    uniq: dict[tuple, Cut] = {}
    for c in pool:
        uniq.setdefault(c.signature(), c)
    return sorted(uniq.values(), key=Cut.rank_key)


def stage_node_names(ix: GraphIndex, st: Stage) -> tuple[list[str], list[str]]:
    """Hailo-style start/end node names: nodes that read a stage input / write a stage output."""
    ins = set(st.inputs)
    start = [n for n in st.nodes if any(t in ins for t in ix.reads[n])]
    return start, _stage_end_nodes(ix, st)

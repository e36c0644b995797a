"""CheckReport: per-node verdicts + partitions + boundaries; renders to every format."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from .. import __version__
from ..targets.base import Verdict
from ..util.gcpause import gc_paused
from ..util.jsonutil import dumps
from .partitions import Boundary, Partition

SCHEMA = "npufit.check/2"  # /2: `nodes` lists the counted (top-level) nodes; bodies moved to `subgraph_nodes`


@dataclass
class Reason:
    rule: str  # stable rule id
    text: str  # the sentence (formatted from the profile's limits)
    verdict: Verdict  # what breaking this rule means
    detail: str = ""  # what this node has ("got keepdims=0")
    fix: tuple[str, ...] = ()
    source: str = ""
    fix_rules: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        d = {
            "rule": self.rule,
            "text": self.text,
            "verdict": self.verdict.value,
            "detail": self.detail,
            "fix": list(self.fix),
        }
        if self.fix_rules:
            d["fix_rules"] = list(self.fix_rules)
        return d

    def sentence(self) -> str:
        return f"{self.text} ({self.detail})" if self.detail else self.text


@dataclass(slots=True)  # one per node: slots make a 100k-node report cheaper to build and read
class NodeResult:
    name: str
    op_type: str
    domain: str
    verdict: Verdict
    reasons: list[Reason] = field(default_factory=list)
    composite: str | None = None
    macs: int = 0
    partition: int | None = None
    parent: str | None = None
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    notes: list[str] = field(default_factory=list)
    # Where the verdict comes from: "" is npufit's prediction (its rules); "measured:<compiler> <version>" when a
    # compiler that ran here placed the node (npufit.placement). The prediction and the compiler's words stay beside.
    source: str = ""
    predicted: Verdict | None = None  # npufit's own verdict when the verdict is measured
    compiler_reason: str = ""

    @property
    def measured(self) -> bool:
        return bool(self.source)

    def source_label(self) -> str:
        """`measured:<compiler> <version>`, or `predicted:<rule ids>` (plain `predicted` when no rule fired)."""
        if self.source:
            return self.source
        ids = ",".join(dict.fromkeys(r.rule for r in self.reasons))
        return f"predicted:{ids}" if ids else "predicted"

    def to_dict(self) -> dict:
        # _value_ is a plain attribute (.value is a descriptor call): this runs once per node of every report
        d: dict[str, Any] = {
            "name": self.name,
            "op_type": self.op_type,
            "verdict": self.verdict._value_,
            "reasons": [r.to_dict() for r in self.reasons] if self.reasons else [],
        }
        if self.domain:
            d["domain"] = self.domain
        if self.composite:
            d["composite"] = self.composite
        if self.macs:
            d["macs"] = self.macs
        if self.partition is not None:
            d["partition"] = self.partition
        if self.parent:
            d["parent"] = self.parent
        if self.notes:
            d["notes"] = self.notes
        d["source"] = self.source_label()
        if self.source:
            d["predicted"] = self.predicted._value_ if self.predicted is not None else None
            if self.compiler_reason:
                d["compiler_reason"] = self.compiler_reason
        d["inputs"], d["outputs"] = list(self.inputs), list(self.outputs)
        return d


@dataclass
class CheckReport:
    model: dict[str, Any]
    target: dict[str, Any]
    nodes: list[NodeResult]
    partitions: list[Partition]
    boundaries: list[Boundary]
    prefix: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    # Nodes inside If/Loop/Scan bodies (each names its `parent`). `nodes` holds the model's own nodes: the set every
    # count, coverage figure, partition and node table reads, so that they agree; a control-flow node stands there
    # for its bodies (its verdict is their worst, its MACs their sum).
    subgraph_nodes: list[NodeResult] = field(default_factory=list)
    # Sections added by other stages (e.g. the Q/DQ ledger): plain keys go to JSON; "_terminal_sections" and
    # "_markdown_sections" hold render callables (con, report) / (report) -> str for the text formats.
    extra: dict[str, Any] = field(default_factory=dict)
    # rule id -> {"sentence", "evidence", "sources"} for every rule a reason names (npufit.targets.explain)
    evidence: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __repr__(self) -> str:
        s = self.summary()
        return (
            f"<CheckReport {self.target.get('name', '?')} {self.model.get('file', '?')}: "
            f"{s['coverage_nodes_pct']:.1f}% nodes, {s['npu_partitions']} NPU / {s['host_partitions']} host>"
        )

    # -- derived numbers -----------------------------------------------------------
    @property
    def shapes_needed(self) -> list[dict[str, Any]]:
        """Inputs whose unknown dims (other than a batch) the figures need: input, declared shape, an example."""
        return list(self.model.get("shapes_needed") or [])

    @property
    def counts(self) -> dict[str, int]:
        """Verdicts of the listed (top-level) nodes: the nodes the coverage figures count."""
        c = Counter(n.verdict.value for n in self.nodes)
        return {v.value: c.get(v.value, 0) for v in Verdict}

    @property
    def body_counts(self) -> dict[str, int]:
        """Verdicts of the nodes inside If/Loop/Scan bodies (their control-flow node carries them at top level)."""
        c = Counter(n.verdict.value for n in self.subgraph_nodes)
        return {v.value: c.get(v.value, 0) for v in Verdict}

    @property
    def running(self) -> list[NodeResult]:
        folded = Verdict.FOLDED  # read once, not per node: these walk every node of the report
        return [n for n in self.nodes if n.verdict != folded]

    @property
    def coverage_nodes(self) -> float:
        run = self.running
        npu = Verdict.NPU
        on_npu = 0
        for n in run:
            if n.verdict == npu:
                on_npu += 1
        return 100.0 * on_npu / len(run) if run else 100.0

    @property
    def macs_total(self) -> int:
        return sum(n.macs for n in self.running)

    @property
    def macs_npu(self) -> int:
        return sum(n.macs for n in self.running if n.verdict == Verdict.NPU)

    @property
    def coverage_macs(self) -> float:
        tot = self.macs_total
        return 100.0 * self.macs_npu / tot if tot else self.coverage_nodes

    @property
    def failing(self) -> list[NodeResult]:
        bad = (Verdict.CPU, Verdict.UNSUPPORTED)
        return [n for n in self.nodes if n.verdict in bad]

    @property
    def fully_npu(self) -> bool:
        return not self.failing

    def node(self, name: str) -> NodeResult | None:
        """A listed node or a body node, by name."""
        # an index, rebuilt when the node lists change: renderers look up every node (linear, not quadratic)
        index = self.__dict__.get("_index")
        nodes, body = self.nodes, self.subgraph_nodes
        if index is None or index[0] is not nodes or index[2] is not body or index[1] != (len(nodes), len(body)):
            by_name: dict[str, NodeResult] = {}
            for n in nodes + body:
                by_name.setdefault(n.name, n)  # the first of equal names, as the linear search returned
            index = self.__dict__["_index"] = (nodes, (len(nodes), len(body)), body, by_name)
        return index[3].get(name)

    def fix_rules(self) -> list[str]:
        """`npufit fix` rules that address at least one failing node, bodies included (in first-seen order)."""
        seen: dict[str, None] = {}
        bad = (Verdict.CPU, Verdict.UNSUPPORTED)
        for n in self.failing + [b for b in self.subgraph_nodes if b.verdict in bad]:
            for r in n.reasons:
                for f in r.fix_rules:
                    seen.setdefault(f, None)
        return list(seen)

    def summary(self) -> dict[str, Any]:
        npu_parts = [p for p in self.partitions if p.device == "npu"]
        # one pass over the nodes (the properties above each walk them; this runs for every report)
        counts = dict.fromkeys((v.value for v in Verdict), 0)
        body = dict(counts)  # nodes inside If/Loop/Scan bodies, counted apart from the top-level headline
        run = run_npu = macs_total = macs_npu = failing = 0
        npu, folded, cpu, unsup = Verdict.NPU, Verdict.FOLDED, Verdict.CPU, Verdict.UNSUPPORTED
        for n in self.subgraph_nodes:
            body[n.verdict._value_] += 1
        for n in self.nodes:
            v = n.verdict
            counts[v._value_] += 1
            if v is cpu or v is unsup:
                failing += 1
            if v is folded:
                continue
            run += 1
            macs_total += n.macs
            if v is npu:
                run_npu += 1
                macs_npu += n.macs
        cov_nodes = 100.0 * run_npu / run if run else 100.0
        needed = self.shapes_needed
        return {
            "nodes_total": len(self.nodes),
            "counts": counts,
            "subgraph_counts": body,
            # an input's unknown dims leave shape rules unfired and MACs uncounted: no figure rests on a guess
            "coverage_nodes_pct": None if needed else round(cov_nodes, 2),
            "coverage_macs_pct": None
            if needed
            else round(100.0 * macs_npu / macs_total if macs_total else cov_nodes, 2),
            "macs_total": None if needed else macs_total,
            "macs_npu": None if needed else macs_npu,
            "shapes_needed": needed,
            "npu_partitions": len(npu_parts),
            "host_partitions": len(self.partitions) - len(npu_parts),
            "boundaries": len(self.boundaries),
            "boundary_bytes": sum(b.bytes or 0 for b in self.boundaries),
            "fully_npu": not failing,
        }

    def to_dict(self) -> dict[str, Any]:
        d = {
            "schema": SCHEMA,
            "npufit_version": __version__,
            "model": self.model,
            "target": self.target,
            "summary": self.summary(),
            "nodes": [n.to_dict() for n in self.nodes],
            "subgraph_nodes": [n.to_dict() for n in self.subgraph_nodes],
            "partitions": [p.to_dict() for p in self.partitions],
            "boundaries": [b.to_dict() for b in self.boundaries],
            "prefix": self.prefix,
            "fix_suggestions": self.fix_rules(),
            "warnings": self.warnings,
            "evidence": self.evidence,
        }
        d.update({k: v for k, v in self.extra.items() if not k.startswith("_")})  # "_" keys hold render hooks
        return d

    # -- rendering (thin wrappers; renderers live in npufit.report) --------------------
    def to_json(self, indent: int | None = None) -> str:
        """Compact by default (machine output); indent=2 for people."""
        with gc_paused():
            return dumps(self.to_dict(), indent)

    def to_markdown(self, all_nodes: bool = False) -> str:
        # cost: the report renderers load rich; a library caller that reads the result as data never pays it
        from ..report.check_markdown import render_markdown

        return render_markdown(self, all_nodes=all_nodes)

    def render(self, fmt: str = "table", all_nodes: bool = False) -> str:
        if fmt == "json":
            return self.to_json()
        if fmt == "markdown":
            return self.to_markdown(all_nodes)
        if fmt == "html":
            from ..report.html import render_check_html  # cost: as to_markdown's renderer

            return render_check_html(self)
        from ..report.check_terminal import render_text  # cost: rich, as to_markdown's renderer

        return render_text(self, all_nodes=all_nodes)

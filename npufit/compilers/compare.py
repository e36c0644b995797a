"""npufit's prediction vs the compiler's placement, node by node.

The scores that matter are about CPU fallback, not agreement: most nodes of most models run on the
NPU, so a checker that says "npu" to everything agrees 98 % of the time and finds nothing.
  recall    = of the nodes the compiler put on the CPU, how many npufit predicted off the NPU
  precision = of the nodes npufit predicted off the NPU, how many the compiler really put on the CPU
A node the compiler folded away counts as "not on the CPU"."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..check.result import CheckReport
from ..targets.base import Verdict
from .base import Placement

SCHEMA = "npufit.compile.compare/1"
OFF_NPU = (Verdict.CPU, Verdict.UNSUPPORTED)


@dataclass
class NodeComparison:
    node: str
    op: str
    predicted: str  # npufit verdict: npu | cpu | unsupported | folded
    actual: str  # compiler: npu | cpu | folded
    rules: list[dict] = field(default_factory=list)  # npufit rules that fired (id, text, detail)
    compiler_reason: str = ""
    how: str = ""  # how the compiler layer was mapped to this node

    @property
    def predicted_off(self) -> bool:
        return self.predicted in (v.value for v in OFF_NPU)

    @property
    def actual_off(self) -> bool:
        return self.actual == "cpu"

    @property
    def kind(self) -> str:
        if self.predicted_off and self.actual_off:
            return "tp"
        if self.predicted_off:
            return "fp"
        return "fn" if self.actual_off else "tn"

    def to_dict(self) -> dict:
        return {
            "node": self.node,
            "op": self.op,
            "predicted": self.predicted,
            "actual": self.actual,
            "kind": self.kind,
            "rules": self.rules,
            "compiler_reason": self.compiler_reason,
            "how": self.how,
        }


@dataclass
class PredictionComparison:
    target: str
    profile: str
    compiler: str
    nodes: list[NodeComparison]

    def counts(self) -> dict[str, int]:
        c = {"tp": 0, "fp": 0, "fn": 0, "tn": 0}
        for n in self.nodes:
            c[n.kind] += 1
        return c

    @property
    def recall(self) -> float | None:
        c = self.counts()
        return None if c["tp"] + c["fn"] == 0 else c["tp"] / (c["tp"] + c["fn"])

    @property
    def precision(self) -> float | None:
        c = self.counts()
        return None if c["tp"] + c["fp"] == 0 else c["tp"] / (c["tp"] + c["fp"])

    @property
    def agreement(self) -> float | None:
        c = self.counts()
        n = sum(c.values())
        return None if n == 0 else (c["tp"] + c["tn"]) / n

    @property
    def disagreements(self) -> list[NodeComparison]:
        return [n for n in self.nodes if n.kind in ("fp", "fn")]

    def scores(self) -> dict:
        c = self.counts()
        r = lambda v: None if v is None else round(v, 4)  # noqa: E731
        return {
            **c,
            "compiler_cpu_nodes": c["tp"] + c["fn"],
            "predicted_off_npu": c["tp"] + c["fp"],
            "cpu_fallback_recall": r(self.recall),
            "cpu_fallback_precision": r(self.precision),
            "agreement": r(self.agreement),
        }

    def to_dict(self) -> dict:
        return {
            "schema": SCHEMA,
            "target": self.target,
            "profile": self.profile,
            "compiler": self.compiler,
            "scores": self.scores(),
            "disagreements": [n.to_dict() for n in self.disagreements],
            "nodes": [n.to_dict() for n in self.nodes],
        }


def compare_placement(report: CheckReport, placement: list[Placement], compiler: str = "") -> PredictionComparison:
    """Hold a CheckReport against a compiler's placement (nodes present in both)."""
    verdicts = {n.name: n for n in report.nodes if n.parent is None}
    rows = []
    for p in placement:
        r = verdicts.get(p.node)
        if r is None:
            continue
        # the source by its description (the report's evidence), never by its key
        rules = [
            {
                "rule": x.rule,
                "text": x.text,
                "detail": x.detail,
                "sources": report.evidence.get(x.rule, {}).get("sources", []),
            }
            for x in r.reasons
        ]
        rows.append(NodeComparison(p.node, p.op, r.verdict.value, p.device, rules, p.reason, p.how))
    return PredictionComparison(report.target.get("name", ""), report.target.get("title", ""), compiler, rows)


def scores_over(comparisons: list[PredictionComparison]) -> dict:
    """Pooled recall/precision over several models (sums of counts, not a mean of ratios)."""
    c = {"tp": 0, "fp": 0, "fn": 0, "tn": 0}
    for cmp in comparisons:
        for k, v in cmp.counts().items():
            c[k] += v
    rec = None if c["tp"] + c["fn"] == 0 else round(c["tp"] / (c["tp"] + c["fn"]), 4)
    prec = None if c["tp"] + c["fp"] == 0 else round(c["tp"] / (c["tp"] + c["fp"]), 4)
    return {**c, "cpu_fallback_recall": rec, "cpu_fallback_precision": prec}

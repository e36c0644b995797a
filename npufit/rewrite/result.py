"""FixResult: what each rule did to the model and to the target's verdicts; renders to table/JSON/Markdown."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import __version__
from ..util.jsonutil import json_default as _json_default

SCHEMA = "npufit.fix/1"


@dataclass
class TargetState:
    """The numbers fix compares before and after a rule (from npufit.check)."""

    not_npu: int  # running nodes judged cpu or unsupported
    partitions: int
    coverage_pct: float  # by nodes
    nodes: int  # nodes in the graph (all verdicts)

    def to_dict(self) -> dict:
        return {
            "not_npu": self.not_npu,
            "partitions": self.partitions,
            "coverage_pct": round(self.coverage_pct, 2),
            "nodes": self.nodes,
        }


@dataclass
class RuleOutcome:
    name: str
    exact: bool
    status: str  # applied | rolled back | not fired | skipped | not applicable
    fired: int = 0
    removed: dict[str, int] = field(default_factory=dict)  # op type -> count
    added: dict[str, int] = field(default_factory=dict)
    before: TargetState | None = None
    after: TargetState | None = None
    max_abs: float | None = None  # measured against the original model
    max_rel: float | None = None
    reason: str = ""

    @property
    def moved_to_npu(self) -> int:
        return 0 if self.before is None or self.after is None else self.before.not_npu - self.after.not_npu

    def change_text(self) -> str:
        if not self.removed and not self.added:
            return ""
        fmt = lambda d: ", ".join(f"{k}x{v}" if v > 1 else k for k, v in sorted(d.items()))  # noqa: E731
        parts = ([f"-[{fmt(self.removed)}]"] if self.removed else []) + (
            [f"+[{fmt(self.added)}]"] if self.added else []
        )
        return " ".join(parts)

    def to_dict(self) -> dict:
        d: dict[str, Any] = {
            "rule": self.name,
            "exact": self.exact,
            "status": self.status,
            "fired": self.fired,
            "removed": self.removed,
            "added": self.added,
            "moved_to_npu": self.moved_to_npu,
        }
        if self.before is not None:
            d["before"] = self.before.to_dict()
        if self.after is not None:
            d["after"] = self.after.to_dict()
        if self.max_abs is not None:
            d["max_abs_diff"], d["max_rel_diff"] = self.max_abs, self.max_rel
        if self.reason:
            d["reason"] = self.reason
        return d


@dataclass
class FixResult:
    model: str
    target: str
    output: str | None
    written: bool
    dry_run: bool
    rules: list[RuleOutcome]
    before: TargetState
    after: TargetState
    verification: dict[str, Any]  # samples, seed, max_abs, max_rel, tolerance
    remaining: list[dict[str, Any]]  # failing nodes after fix: name, op_type, verdict, reason
    advice: list[str]
    opset: tuple[int, int]  # before, after
    # whose placement "before" and "after" are (npufit.placement's headline: measured by a compiler, or predicted)
    placement: dict[str, str] = field(default_factory=dict)
    # how many leading `advice` lines speak of the input shapes (they stay when the figures after are re-placed)
    shape_advice: int = field(default=0, repr=False)

    @property
    def applied(self) -> list[RuleOutcome]:
        return [r for r in self.rules if r.status == "applied"]

    def __repr__(self) -> str:
        names = ",".join(r.name for r in self.applied) or "none"
        out = self.output if self.written else "nothing written"
        return (
            f"<FixResult {self.target} {Path(self.model).name}: applied {names}; "
            f"{self.before.coverage_pct:.1f}% -> {self.after.coverage_pct:.1f}% nodes; {out}>"
        )

    def to_dict(self) -> dict:
        return {
            "schema": SCHEMA,
            "npufit_version": __version__,
            "model": self.model,
            "target": self.target,
            "output": self.output,
            "written": self.written,
            "dry_run": self.dry_run,
            "opset": {"before": self.opset[0], "after": self.opset[1]},
            "before": self.before.to_dict(),
            "after": self.after.to_dict(),
            "rules": [r.to_dict() for r in self.rules],
            "verification": self.verification,
            "remaining": self.remaining,
            "advice": self.advice,
            "placement": self.placement,
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, default=_json_default)

    def render(self, fmt: str = "table") -> str:
        if fmt == "json":
            return self.to_json()
        return _render_text(self, markdown=(fmt == "markdown"))


def _state(s: TargetState | None) -> str:
    return "-" if s is None else f"{s.coverage_pct:.1f}% / {s.partitions}p"


def verification_text(v: dict[str, Any]) -> str:
    """One line: samples, the largest absolute difference and, where the outputs are not all zero, that difference
    as a share of the largest output value (an element-wise relative difference is no figure to read: it divides by
    values near zero)."""
    share = v.get("max_abs_of_range")
    rel = f" ({share:.1e} of the largest output value)" if share and math.isfinite(share) else ""
    return (
        f"verified with ONNX Runtime CPU on {v['samples']} seeded samples (seed {v['seed']}): max abs diff "
        f"{v['max_abs']:.2e}{rel}; tolerance {v['tolerance']}"
    )


def verdict_line(r: FixResult) -> str:
    """What happened, in one line, first."""
    applied = r.applied
    left = r.after.not_npu
    rules = f"{len(applied)} rule(s) applied and verified" if applied else "no rule changed the model"
    where = f"wrote {r.output}" if r.written else "dry run, nothing written" if r.dry_run else "nothing written"
    cover = f"coverage {r.before.coverage_pct:.1f}% -> {r.after.coverage_pct:.1f}%"
    rest = f"{left} node(s) still off the NPU" if left else f"every running node runs on the {r.target} NPU"
    return f"{where}: {rules}; {cover}; {rest}"


def _remaining_groups(remaining: list[dict[str, Any]]) -> list[tuple[list[str], dict[str, Any]]]:
    """Nodes left off the NPU, one group per (op, verdict, rule, sentence): ten identical Reshapes read once."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for n in remaining:
        key = (n["op_type"], n["verdict"], n.get("rule", ""), n["reason"].split(" (")[0])
        groups.setdefault(key, []).append(n)
    return [([n["name"] for n in ns], ns[0]) for ns in groups.values()]


def _names(names: list[str], show: int = 3) -> str:
    return ", ".join(names[:show]) + (f", … (+{len(names) - show})" if len(names) > show else "")


def _render_text(r: FixResult, markdown: bool) -> str:
    head = ["rule", "kind", "status", "fired", "moved to npu", "coverage / partitions", "max diff", "change / reason"]
    rows = []
    for o in r.rules:
        kind = "exact" if o.exact else "APPROX"
        cov = f"{_state(o.before)} -> {_state(o.after)}" if o.after else "-"
        diff = "-" if o.max_abs is None else f"{o.max_abs:.1e}"
        what = o.change_text() if o.status == "applied" else o.reason
        if o.status == "applied" and o.reason:
            what = f"{what}; {o.reason}"
        rows.append([o.name, kind, o.status, str(o.fired), str(o.moved_to_npu) if o.after else "-", cov, diff, what])
    title = f"npufit fix {r.model} --target {r.target}" + (" (dry run)" if r.dry_run else "")
    summary = (
        f"coverage {r.before.coverage_pct:.1f}% -> {r.after.coverage_pct:.1f}%, partitions {r.before.partitions} -> "
        f"{r.after.partitions}, nodes not on npu {r.before.not_npu} -> {r.after.not_npu}, "
        f"opset {r.opset[0]} -> {r.opset[1]}"
    )
    if r.placement:  # whose placement the figures are: the compiler's, or npufit's prediction
        b, a = r.placement.get("before", ""), r.placement.get("after", "")
        summary += f"\n{b}" if a == b else f"\nbefore: {b}; after: {a}"
    check = verification_text(r.verification)
    groups = _remaining_groups(r.remaining)
    lines: list[str] = []
    if markdown:
        lines += [f"## {title}", "", f"**{verdict_line(r)}**", "", summary, ""]
        lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
        lines += ["", check]
        if groups:
            lines += ["", "### Still not on the NPU", ""] + [
                f"- `{_names(names)}` ({n['op_type']}, {n['verdict']}): {n['reason']}"
                + (f" [`{n['rule']}`]" if n.get("rule") else "")
                for names, n in groups
            ]
        lines += [""] + [f"- {a}" for a in r.advice]
        return "\n".join(lines) + "\n"
    widths = [max(len(head[i]), *(len(row[i]) for row in rows)) if rows else len(head[i]) for i in range(len(head))]
    widths[-1] = len(head[-1])
    fmt_row = lambda row: "  ".join(c.ljust(widths[i]) for i, c in enumerate(row)).rstrip()  # noqa: E731
    lines += [title, verdict_line(r), summary, "", fmt_row(head), fmt_row(["-" * w for w in widths])]
    lines += [fmt_row(row) for row in rows]
    lines += ["", check]
    if groups:
        lines += ["", "still not on the npu:"] + [
            f"  {_names(names)} ({n['op_type']}, {n['verdict']}): {n['reason']}"
            + (f" [{n['rule']}]" if n.get("rule") else "")
            for names, n in groups
        ]
    lines += [""] + r.advice if r.advice else []
    return "\n".join(lines) + "\n"

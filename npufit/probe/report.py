"""ProbeReport: the support matrix (predicted and measured), sweep boundaries and the drift table.

Markdown follows seed 000's layout: a ✅ section grouped by family, a ❌ section with problem and
workaround per case, then what seed 000 could not have: sweep boundaries and prediction-vs-compiler drift.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from .. import __version__
from ..util.jsonutil import json_default as _json_default
from .render import render_markdown, render_text
from .render import value_text as _v

SCHEMA = "npufit.probe/1"
RECORD_SCHEMA = "npufit.probe.measured/1"
OK_SYMBOLS = {"✅"}


@dataclass
class ProbeReport:
    target: str
    title: str
    opset: int
    cases: list[dict[str, Any]]  # one per case / sweep variant (see case_run.run_case)
    compiler: str | None = None
    jobs: int = 1
    timeout_s: float = 0.0
    wall_s: float = 0.0
    sweep: bool = False
    files: dict[str, str] = field(default_factory=dict)
    record: str | None = None  # the measured_record() file the measured side was replayed from, if any

    # -- views ---------------------------------------------------------------------------------

    def __repr__(self) -> str:
        counts = ", ".join(f"{k} {v}" for k, v in self.counts.items() if v)
        return f"<ProbeReport {self.target}: {len(self.cases)} cases ({counts})>"

    @property
    def base_cases(self) -> list[dict]:
        return [c for c in self.cases if not c["params"]]

    def case(self, case_id: str) -> dict | None:
        return next((c for c in self.cases if c["id"] == case_id), None)

    def symbol(self, case_id: str) -> str:
        c = self.case(case_id)
        return "" if c is None else c["predicted"]["symbol"]

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for c in self.base_cases:
            s = c["predicted"]["status"]
            out[s] = out.get(s, 0) + 1
        return out

    def drift(self) -> list[dict[str, Any]]:
        """Every case where the prediction and the real compiler disagree (case level, then node level)."""
        rows = []
        for c in self.cases:
            m = c.get("measured")
            if not m or m["status"] == "unmeasured":
                continue
            p = c["predicted"]
            node_diffs = []
            for node, dev in (m.get("placement") or {}).items():
                pred = (p.get("nodes") or {}).get(node)
                if pred is None or dev == "folded" or pred == "folded":
                    continue
                if (pred == "npu") != (dev == "npu"):
                    node_diffs.append(
                        {
                            "node": node,
                            "predicted": pred,
                            "measured": dev,
                            "compiler_reason": m.get("reasons", {}).get(node, ""),
                        }
                    )
            if p["symbol"] != m["symbol"] or node_diffs:
                rows.append(
                    {
                        "case": c["id"],
                        "predicted": p["status"],
                        "measured": m["status"],
                        "predicted_rules": sorted({r for f in p.get("failing", []) for r in f["rules"]}),
                        "compiler_error": m.get("error", ""),
                        "nodes": node_diffs,
                    }
                )
        return rows

    def unmeasured(self) -> list[dict[str, Any]]:
        """Cases the compiler could not be asked about (converter or environment missing), with why."""
        return [
            {"case": c["id"], "why": c["measured"].get("error", "")}
            for c in self.cases
            if c.get("measured") and c["measured"]["status"] == "unmeasured"
        ]

    def boundaries(self) -> list[dict[str, Any]]:
        """Per swept parameter: the values tried with their verdicts, and where the verdict changes."""
        groups: "OrderedDict[tuple[str, str], list[tuple[Any, str]]]" = OrderedDict()
        for c in self.cases:
            if len(c["params"]) == 1:
                ((name, value),) = c["params"].items()
                sym = (c.get("measured") or c["predicted"])["symbol"] if self.compiler else c["predicted"]["symbol"]
                groups.setdefault((c["case"], name), []).append((value, sym))
        out = []
        for (case, name), vals in groups.items():
            changes = [f"{_v(a)} {sa} -> {_v(b)} {sb}" for (a, sa), (b, sb) in zip(vals, vals[1:]) if sa != sb]
            out.append(
                {
                    "case": case,
                    "parameter": name,
                    "values": [[v, s] for v, s in vals],
                    "changes": changes,
                    "passing": [v for v, s in vals if s in OK_SYMBOLS],
                    "failing": [v for v, s in vals if s not in OK_SYMBOLS],
                }
            )
        return out

    # -- measured record ------------------------------------------------------------------------
    def measured_record(self) -> dict[str, Any]:
        """What the real compiler did, per case and node, without the prediction: small enough to keep in the
        repository as the source a profile correction cites, and to replay against later predictions."""

        measured = [c for c in self.cases if c.get("measured")]
        versions = sorted({str(c["measured"].get("version")) for c in measured if c["measured"].get("version")})
        cases = {}
        for c in measured:
            m = c["measured"]
            row: dict[str, Any] = {"status": m["status"], "symbol": m["symbol"]}
            if m.get("placement"):
                row["placement"] = {n: d for n, d in m["placement"].items() if d != "folded"}
            if m.get("error"):
                row["error"] = m["error"].strip().splitlines()[-1][:200]
            cases[c["id"]] = row
        return {
            "schema": RECORD_SCHEMA,
            "target": self.target,
            "opset": self.opset,
            "compiler": self.compiler,
            "compiler_versions": versions,
            "npufit_version": __version__,
            "cases": cases,
        }

    def replay(self, record: dict[str, Any]) -> "ProbeReport":
        """This (predicted-only) report with the measured side taken from a measured_record(): its drift()
        is then the disagreement between today's profile and that recorded compiler run."""
        import copy

        if record.get("schema") != RECORD_SCHEMA or record.get("target") != self.target:
            raise ValueError(f"not a {RECORD_SCHEMA} record for {self.target}")
        cases = []
        for c in self.cases:
            m = record["cases"].get(c["id"])
            if m is not None:
                c = copy.deepcopy(c)
                c["measured"] = {
                    "compiler": record["compiler"],
                    "status": m["status"],
                    "symbol": m["symbol"],
                    "placement": dict(m.get("placement", {})),
                    "error": m.get("error", ""),
                }
                cases.append(c)
        return ProbeReport(
            self.target,
            self.title,
            self.opset,
            cases,
            record["compiler"],
            self.jobs,
            self.timeout_s,
            self.wall_s,
            self.sweep,
            record=str(record.get("path") or "recorded run"),
        )

    # -- output --------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:

        return {
            "schema": SCHEMA,
            "npufit_version": __version__,
            "target": self.target,
            "title": self.title,
            "opset": self.opset,
            "compiler": self.compiler,
            "jobs": self.jobs,
            "timeout_s": self.timeout_s,
            "wall_s": round(self.wall_s, 2),
            "sweep": self.sweep,
            "summary": self.counts(),
            "cases": self.cases,
            "boundaries": self.boundaries() if self.sweep else [],
            "drift": self.drift(),
            "unmeasured": self.unmeasured(),
            "files": self.files,
            "replayed_from": self.record,
        }

    def to_json(self) -> str:
        import json

        return json.dumps(self.to_dict(), indent=2, default=_json_default, ensure_ascii=False)

    def to_markdown(self) -> str:

        return render_markdown(self)

    def render(self, fmt: str = "table") -> str:
        if fmt == "json":
            return self.to_json()
        if fmt == "markdown":
            return self.to_markdown()

        return render_text(self)

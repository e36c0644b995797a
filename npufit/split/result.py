"""Result objects of split() and run(): to_dict() with a versioned schema, and table / JSON / Markdown text."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .cost import GENERIC, CostModel
from .plan import SplitPlan
from .planner import Cut
from .verify import ChainCheck

SPLIT_SCHEMA = "npufit.split/1"
RUN_SCHEMA = "npufit.run/1"


def _kb(n: int | None) -> str:
    if n is None:
        return "?"
    return f"{n} B" if n < 1024 else f"{n / 1024:.1f} KiB" if n < 1 << 20 else f"{n / (1 << 20):.1f} MiB"


def _table(rows: list[list[str]], md: bool) -> list[str]:
    if md:
        out = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
        return out + ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows[1:]]
    w = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  " + "  ".join(c.ljust(w[i]) for i, c in enumerate(r)).rstrip() for r in rows]


def _grouped(pairs: list[tuple[str, str]], arrow: str = "<-") -> str:
    """'images <- input; 3 tensors <- stage0_npu': original inputs/outputs by name, stage tensors counted."""
    by: dict[str, list[str]] = {}
    for name, where in pairs:
        by.setdefault(where, []).append(name)
    parts = []
    for where, names in by.items():
        what = (
            ", ".join(names)
            if where in ("input", "output") or len(names) == 1 and len(names[0]) <= 24
            else f"{len(names)} tensor(s)"
        )
        parts.append(f"{what} {arrow} {where}")
    return "; ".join(parts)


def how_to_select(c: Cut) -> str:
    """The CLI options that ask for cut `c` again."""
    if c.mode == "segments":
        k = c.options.get("max_npu_stages")
        return f"--mode segments --min-nodes {c.options['min_nodes']}" + (f" --max-npu-stages {k}" if k else "")
    if c.options.get("end_nodes") or c.options.get("start_nodes"):
        parts = []
        if c.options.get("start_nodes"):
            parts.append("--start-nodes " + ",".join(c.options["start_nodes"]))
        ends = c.options.get("end_nodes", [])
        parts.append(
            "--end-nodes " + (",".join(ends) if len(ends) <= 3 else ",".join(ends[:3]) + f",... ({len(ends)} names)")
        )
        return " ".join(parts)
    return f"--mode {c.mode}"


def verification_rows(v: dict) -> list[list[str]]:
    """Per output: max abs / max rel under each ONNX Runtime setting the chain was verified with."""
    opt = (v.get("optimized") or {}).get("per_output", {})
    return [
        [
            k,
            f"{d['max_abs']:.3g}",
            f"{d['max_rel']:.3g}",
            f"{opt[k]['max_abs']:.3g}" if k in opt else "-",
            f"{opt[k]['max_rel']:.3g}" if k in opt else "-",
        ]
        for k, d in v["per_output"].items()
    ]


def verification_sentence(v: dict) -> str:
    """The one-line verification statement of a plan's recorded `verification` dict."""
    c = ChainCheck(
        v["samples"],
        v["seed"],
        v["inputs"],
        dict(v["per_output"]),
        list(v.get("missing", [])),
        v.get("seconds", 0.0),
        v.get("optimized"),
        overflow=v.get("overflow"),
        against_source=v.get("against_source"),
    )
    text = c.sentence()
    return text if c.equivalent else text + " (written with --force)"


@dataclass
class SplitResult:
    plan: SplitPlan
    output_dir: Path
    candidates: list[Cut]
    chosen: Cut
    timings: dict
    top: int = 5
    why: str = ""  # one sentence: why this cut was written (best-ranked, or the mode asked for and its rank)
    report: object = None  # the CheckReport the cut was made from (for the HTML graph; not in to_dict)
    cost_model: CostModel = field(default_factory=lambda: CostModel(dict(GENERIC)))

    def __repr__(self) -> str:
        p = self.plan
        npu = sum(s.device == "npu" for s in p.stages)
        return (
            f"<SplitResult {p.target.get('name', '?')} {p.source.get('file', '?')}: {p.mode}, {npu} NPU / "
            f"{len(p.stages) - npu} host stages -> {Path(self.output_dir).name}>"
        )

    def stage_view(self) -> dict | None:
        """The check report re-coloured by stage: each stage is a partition, its cut edges the plan's boundaries
        (the shape report.html_graph draws)."""
        if self.report is None:
            return None
        d = self.report.to_dict()
        stage_of = {n: i for i, st in enumerate(self.chosen.stages) for n in st.nodes}
        for n in d["nodes"]:
            n["partition"] = stage_of.get(n["name"])
        d["partitions"] = [
            {"id": i, "device": st.device, "node_count": len(st.nodes), "nodes": st.nodes}
            for i, st in enumerate(self.chosen.stages)
        ]
        d["boundaries"] = [b for b in self.plan.boundaries if b.get("direction") in ("npu->host", "host->npu")]
        return d

    def verification_view(self) -> tuple[str, list[list[str]]] | None:
        """The plan's verification as its sentence and per-output rows; None when it was skipped."""
        v = self.plan.verification
        return None if v is None else (verification_sentence(v), verification_rows(v))

    def select_view(self) -> list[str]:
        """Per listed candidate (to_dict's order), the CLI options that pick it again."""
        return [how_to_select(c) for c in self.candidates[: max(self.top, 1)]]

    def to_dict(self) -> dict:
        return {
            "schema": SPLIT_SCHEMA,
            "output_dir": str(self.output_dir),
            "plan": self.plan.to_dict(),
            "ranking": self.cost_model.ranking,
            "cost_model": self.cost_model.to_dict(),
            "candidates": [
                dict(c.summary(), rank=i + 1, chosen=c is self.chosen, select=how_to_select(c))
                for i, c in enumerate(self.candidates[: max(self.top, 1)])
            ],
            "why": self.why,
            "timings": self.timings,
        }

    def render(self, fmt: str = "table") -> str:
        if fmt == "json":
            return json.dumps(self.to_dict(), indent=2, default=str)
        md = fmt == "markdown"
        p = self.plan
        lines = [
            f"{'## ' if md else ''}npufit split {p.source['file']} -> {self.output_dir}  (target "
            f"{p.target['name']}, mode {p.mode})",
            "",
        ]
        if p.target.get("placement"):  # whose placement the cut was made from
            lines[1:1] = [f"cut from the {p.target['placement']}"]
        rows = [["#", "stage", "device", "nodes", "MACs", "inputs", "outputs"]]
        for i, s in enumerate(p.stages):
            ins = _grouped([(t["name"], t["from"]) for t in s.inputs])
            outs = _grouped([(t["name"], ",".join(t["to"])) for t in s.outputs], arrow="->")
            pct = f"{100.0 * s.macs / p.cost['total_macs']:.1f}%" if p.cost.get("total_macs") else "-"
            rows.append([str(i), s.file, s.device, str(s.node_count), pct, ins, outs])
        lines += _table(rows, md)
        c = p.cost
        lines += [
            "",
            f"NPU share of MACs {c['npu_macs_pct']:.2f}%; {c['boundaries']} tensor(s) cross NPU<->host, "
            f"{_kb(c['bytes_crossing'])}"
            + (f" (+{c['unknown_size_boundaries']} of unknown size)" if c.get("unknown_size_boundaries") else ""),
        ]
        if self.why:
            lines.append(self.why)
        for s in p.stages:
            if s.device == "npu":
                lines.append(
                    f"{s.name}: start nodes {', '.join(s.start_node_names) or '-'}; end nodes "
                    f"{', '.join(s.end_node_names) or '-'}"
                )
                for cmds in s.vendor.values():  # the compiler's own commands for this stage (Hailo's parser)
                    lines.append(f"  {'`' if md else ''}{cmds['parse_original']}{'`' if md else ''}")
        v = p.verification
        if v is None:
            lines.append("verification: skipped (--no-verify)")
        else:
            lines.append(verification_sentence(v))
            per = ", ".join(f"{k} {d['max_abs']:.3g}/{d['max_rel']:.3g}" for k, d in v["per_output"].items())
            lines.append(f"  max abs/rel per output ({v.get('settings', 'graph optimizations off')}): {per}")
        for w in p.warnings:
            lines.append(f"warning: {w}")
        lines += ["", f"candidate cuts, ranked by {self.cost_model.ranking}:"]
        lines += [f"  {x}" for x in self.cost_model.sourced_lines()]
        rows = [["rank", "cut", "est. ms", "NPU MACs", "boundaries", "bytes", "stages", "NPU stages", "select with"]]
        for i, cut in enumerate(self.candidates[: max(self.top, 1)]):
            mark = "*" if cut is self.chosen else ""
            rows.append(
                [
                    f"{i + 1}{mark}",
                    cut.label,
                    f"{cut.cost['est_ms']:.3f}",
                    f"{cut.cost['npu_macs_pct']:.1f}%",
                    str(cut.cost["boundaries"]),
                    _kb(cut.cost["bytes_crossing"]),
                    str(len(cut.stages)),
                    str(cut.npu_stages),
                    how_to_select(cut),
                ]
            )
        lines += _table(rows, md)
        if self.chosen not in self.candidates[: max(self.top, 1)]:
            rank = self.candidates.index(self.chosen) + 1
            lines.append(f"  (the chosen cut ranks {rank} of {len(self.candidates)})")
        t = self.timings
        lines.append(
            f"\nwrote {len(p.stages)} stage model(s) + plan.json in {t['total_s']:.2f}s "
            f"(plan {t['plan_s']:.2f}s, extract {t['extract_s']:.2f}s, verify {t['verify_s']:.2f}s)"
        )
        return "\n".join(lines)


@dataclass
class RunResult:
    plan_dir: Path
    outputs: dict[str, np.ndarray]
    stage_seconds: list[tuple[str, list[float]]]  # per stage: one time per repetition
    device_of_stage: dict[str, str]
    notes: list[str] = field(default_factory=list)
    comparison: dict | None = None  # against --compare-original
    output_file: str | None = None

    def __repr__(self) -> str:
        cmp = self.comparison or {}
        same = f", max abs diff vs original {cmp['max_abs']:.2e}" if isinstance(cmp.get("max_abs"), float) else ""
        return (
            f"<RunResult {Path(self.plan_dir).name}: {len(self.stage_seconds)} stages, {len(self.outputs)} "
            f"outputs{same}>"
        )

    def stage_median(self) -> list[tuple[str, float]]:
        return [(n, float(np.median(ts))) for n, ts in self.stage_seconds]

    def to_dict(self) -> dict:
        return {
            "schema": RUN_SCHEMA,
            "plan_dir": str(self.plan_dir),
            "stages": [
                {"name": n, "runtime": self.device_of_stage[n], "median_ms": round(1000 * t, 4)}
                for n, t in self.stage_median()
            ],
            "chain_ms": round(1000 * sum(t for _, t in self.stage_median()), 4),
            "outputs": {k: {"shape": list(v.shape), "dtype": v.dtype.name} for k, v in self.outputs.items()},
            "notes": self.notes,
            "compare_original": self.comparison,
            "output_file": self.output_file,
        }

    def render(self, fmt: str = "table") -> str:
        if fmt == "json":
            return json.dumps(self.to_dict(), indent=2, default=str)
        md = fmt == "markdown"
        d = self.to_dict()
        reps = len(self.stage_seconds[0][1]) if self.stage_seconds else 0
        lines = [
            f"{'## ' if md else ''}npufit run {self.plan_dir}" + (f"  (median of {reps} runs)" if reps > 1 else ""),
            "",
        ]
        rows = [["stage", "runtime", "latency"]] + [
            [s["name"], s["runtime"], f"{s['median_ms']:.3f} ms"] for s in d["stages"]
        ]
        rows.append(["chain", "", f"{d['chain_ms']:.3f} ms"])
        lines += _table(rows, md)
        lines += ["", "outputs: " + ", ".join(f"{k} {v['dtype']}{v['shape']}" for k, v in d["outputs"].items())]
        for n in self.notes:
            lines.append(f"note: {n}")
        if self.comparison is not None:
            c = self.comparison
            state = "bit-identical to the original" if c["equivalent"] else "DIFFERS from the original"
            per = ", ".join(f"{k} {v['max_abs']:.3g}/{v['max_rel']:.3g}" for k, v in c["per_output"].items())
            lines.append(f"compare-original: {state}; max abs/rel per output: {per}")
            if c.get("sha256_matches") is False:
                lines.append(
                    "warning: the model given to --compare-original is not the file this plan was split from "
                    "(sha256 differs)"
                )
        if self.output_file:
            lines.append(f"wrote {self.output_file}")
        return "\n".join(lines)

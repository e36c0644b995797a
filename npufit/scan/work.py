"""The unit of scan work, run wherever the executor puts it: one model file against every target."""

from __future__ import annotations

from collections import Counter
from typing import Any

from ..errors import NpufitError
from ..graph import load
from ..placement import place
from ..util.shapes import needed_lines
from ..vocab import MEASURE_JUDGE, MEASURE_TIMEOUT_S

TOP_REASONS = 3
NEEDS_SHAPE = "needs-shape"  # a row's status: an input's unknown dims leave no figure to report


def row_for(report) -> dict[str, Any]:
    """The scan row of one CheckReport: numbers, and the rules that keep the most nodes off the NPU."""
    s = report.summary()
    by_rule: Counter = Counter()
    text: dict[str, str] = {}
    for n in report.failing:
        for r in n.reasons:
            by_rule[r.rule] += 1
            text.setdefault(r.rule, r.text)
    top = sorted(by_rule.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_REASONS]
    return {
        "status": "ok",
        "nodes": s["nodes_total"],
        "coverage_nodes_pct": s["coverage_nodes_pct"],
        "coverage_macs_pct": s["coverage_macs_pct"],
        "npu_partitions": s["npu_partitions"],
        "host_partitions": s["host_partitions"],
        "boundaries": s["boundaries"],
        "boundary_bytes": s["boundary_bytes"],
        "counts": s["counts"],
        "fully_npu": s["fully_npu"],
        "judged_as": report.target.get("judged_as", ""),
        "top_reasons": [{"rule": k, "nodes": v, "text": text[k]} for k, v in top],
        "error": "",
        # whose placement the row is (npufit.placement): measured by a compiler, or predicted, and why
        "placement": (report.extra.get("placement") or {}).get("source", "predicted"),
        "placement_headline": (report.extra.get("placement") or {}).get("headline", ""),
    }


def failed_row(status: str, message: str) -> dict[str, Any]:
    return {
        "status": status,
        "nodes": None,
        "coverage_nodes_pct": None,
        "coverage_macs_pct": None,
        "npu_partitions": None,
        "host_partitions": None,
        "boundaries": None,
        "boundary_bytes": None,
        "counts": {},
        "fully_npu": False,
        "judged_as": "",
        "top_reasons": [],
        "error": message,
        "placement": "",
        "placement_headline": "",
    }


def scan_model(job: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """job: {"path", "targets", "judge", "input_shapes", "measure"} -> {target: row}. The graph is loaded once for
    all targets; with measure "auto" each target's installed compiler places it where one runs here
    (npufit.placement).

    A model npufit refuses (not a model, broken protobuf) is an `error` row with the one-line reason.
    """
    try:
        graph = load(job["path"], job.get("input_shapes"), strict=False)
    except NpufitError as e:
        return {t: failed_row("error", e.message) for t in job["targets"]}
    if graph.shapes_needed:  # no figure rests on a guessed size: the row says which shape to give
        why = "; ".join(needed_lines([n.to_dict() for n in graph.shapes_needed]))
        return {t: failed_row(NEEDS_SHAPE, why) for t in job["targets"]}
    rows = {}
    for t in job["targets"]:
        try:
            rep = place(
                graph,
                t,
                graph.input_shapes or None,
                judge=job.get("judge", "auto"),
                measure=job.get("measure", "never"),
                measure_judge=job.get("measure_judge", MEASURE_JUDGE),
                timeout_s=job.get("measure_timeout", MEASURE_TIMEOUT_S),
            )
            rows[t] = row_for(rep)
        except NpufitError as e:
            rows[t] = failed_row("error", e.message)
    return rows

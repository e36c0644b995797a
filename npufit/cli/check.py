"""npufit check MODEL --target T: which node runs on the NPU, which does not, why, and how to fix it."""

from __future__ import annotations

import argparse

from ..check.grid import check_grid
from ..errors import NpufitError
from ..graph import load, parse_input_shapes, require_shapes
from ..placement import place
from ..targets import resolve_targets
from ..util.gcpause import gc_paused
from ..vocab import PAGE_FORMATS
from .common import (
    add_format_option,
    add_input_shape_option,
    add_judge_option,
    add_measure_options,
    add_target_option,
    emit,
    measure_mode,
    percent,
    target_of,
)


def register(sub, help: str) -> None:
    p = sub.add_parser(
        "check",
        help=help,
        description="Judge every node of an ONNX or TFLite model against a target profile: verdict "
        "(npu / cpu / unsupported / folded), the rule broken, how to fix it; coverage, "
        "partitions, NPU<->host boundaries and the largest NPU-runnable prefix.",
    )
    p.add_argument("model", help="path to an .onnx or .tflite file (never modified)")
    add_target_option(p, "target name, a comma-separated list, or 'all' (see 'npufit targets')")
    add_format_option(p, choices=PAGE_FORMATS)
    add_input_shape_option(p)
    p.add_argument(
        "--all-nodes", action="store_true", help="list every node in table/markdown output, not only the failing ones"
    )
    add_judge_option(p)
    add_measure_options(p)
    p.add_argument(
        "--record-disagreements",
        metavar="FILE",
        help="append the measured placement and every node where npufit's prediction differs to a calibration "
        "record (JSON; created when missing)",
    )
    p.add_argument(
        "--fail-under",
        type=percent,
        metavar="PCT",
        help="exit 1 when NPU coverage (by nodes) is below PCT, for CI gates",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # The graph and the report live to the end of the verb: the cyclic collector would only walk them again
    # and again (a third of a 100k-node check), and once more when it is switched back on right before the
    # process exits; freeze=True spares that last walk. Reference counting still frees as usual.
    with gc_paused(freeze=True):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    targets = resolve_targets(target_of(args))
    mode, judge = measure_mode(args)
    graph = load(args.model, parse_input_shapes(args.input_shape))
    require_shapes(graph, "verdicts, coverage and MACs depend on it")
    if len(targets) > 1:
        if mode == "required" or args.record_disagreements:
            raise NpufitError("--measure takes one target (a compiler runs per target): give --target NAME")

        grid = check_grid(graph, targets, args.judge)
        emit(grid.render(args.format), args.output)
        worst = min(r.coverage_nodes for r in grid.reports.values())
    else:
        report = place(
            graph,
            targets[0],
            input_shapes=parse_input_shapes(args.input_shape),
            judge=args.judge,
            measure=mode,
            measure_judge=judge,
            timeout_s=args.measure_timeout,
            record=args.record_disagreements,
        )
        emit(report.render(args.format, all_nodes=args.all_nodes), args.output)
        worst = report.coverage_nodes
    if args.fail_under is not None and worst < args.fail_under:
        import sys

        print(f"npufit: coverage {worst:.1f}% is below --fail-under {args.fail_under:g}%", file=sys.stderr)
        return 1
    return 0

"""npufit scan PATHS... --target T[,T...]: every model under folders/globs/manifests x every target, one row each."""

from __future__ import annotations

import argparse

from ..scan import scan
from ..vocab import EXECUTOR, EXECUTORS, FORMAT, SCAN_FORMATS
from .common import (
    add_input_shape_option,
    add_judge_option,
    add_measure_options,
    add_target_option,
    emit,
    input_shapes,
    measure_mode,
    target_of,
)


def register(sub, help: str) -> None:
    p = sub.add_parser(
        "scan",
        help=help,
        description="Find every .onnx/.tflite model under the given folders, globs or manifests (a text file "
        "listing paths), check each against every target and write one row per model x target: "
        "coverage, partitions, boundaries, verdict counts, top reasons, status. A model that "
        "crashes or times out is a row, never the end of the scan.",
    )
    p.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="model file, folder (recursive), glob ('zoo/**/*.onnx') or manifest (.txt/.lst)",
    )
    add_target_option(p, "comma-separated targets or 'all'")
    p.add_argument(
        "--format",
        "-f",
        choices=SCAN_FORMATS,
        default=FORMAT,
        help="table (default), json (rows + summary), jsonl (one row a line), csv, html (one page)",
    )
    p.add_argument("--output", "-o", metavar="FILE", help="write the result to FILE (atomically) instead of stdout")
    p.add_argument(
        "--executor",
        choices=EXECUTORS,
        default=EXECUTOR,
        help="where models are checked: this process, a local process pool (default), or Ray (pip install "
        "'npufit[ray]')",
    )
    p.add_argument(
        "--jobs", "-j", type=int, help="workers for pool (default: number of CPUs) or tasks in flight on Ray"
    )
    p.add_argument(
        "--address", metavar="ADDR", help="Ray cluster address (e.g. ray://head:10001 or auto); default: a local Ray"
    )
    p.add_argument(
        "--cache",
        metavar="FILE",
        help="content-hash cache (JSON): unchanged models are not checked again; created if missing",
    )
    p.add_argument(
        "--timeout", type=float, default=300.0, metavar="S", help="per-model timeout in seconds (default: 300)"
    )
    add_judge_option(p)
    add_measure_options(p, scan=True)
    add_input_shape_option(p)
    p.add_argument(
        "--fail-under",
        type=float,
        metavar="PCT",
        help="exit 1 when any model x target has NPU coverage (by nodes) below PCT or could not be checked (CI gate)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import sys

    mode, judge = measure_mode(args)
    report = scan(
        args.paths,
        target_of(args),
        executor=args.executor,
        jobs=args.jobs,
        address=args.address,
        cache=args.cache,
        timeout=args.timeout,
        judge=args.judge,
        measure=mode,
        measure_judge=judge,
        measure_timeout=args.measure_timeout,
        input_shapes=input_shapes(args),
    )
    emit(report.render(args.format), args.output)
    if args.fail_under is not None:
        bad = report.below(args.fail_under)
        if bad:
            print(
                f"npufit: {len(bad)} of {len(report.rows)} model x target rows are below --fail-under "
                f"{args.fail_under:g}% "
                f"or could not be checked",
                file=sys.stderr,
            )
            return 1
    return 0

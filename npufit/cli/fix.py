"""npufit fix MODEL --target T --output OUT: target-aware rewrites, each verified with ONNX Runtime."""

from __future__ import annotations

import argparse

from ..errors import NpufitError
from ..graph import parse_input_shapes
from ..placement import reads_placement
from ..rewrite import fix
from ..vocab import FORMAT, FORMATS
from .common import (
    add_input_shape_option,
    add_judge_option,
    add_measure_options,
    add_target_option,
    add_verify_timeout_option,
    emit,
    measure_mode,
    positive_int,
    seed_int,
    target_of,
)


def _names(value: str | None) -> list[str] | None:
    return None if value is None else [s.strip() for s in value.split(",") if s.strip()]


def register(sub, help: str) -> None:
    p = sub.add_parser(
        "fix",
        help=help,
        description="Apply the target's rewrite rules (Conv1d->Conv2d, mean->GlobalAveragePool, TopK k=1->"
        "ArgMax, ...) to a fixed point. Every rule is checked against the original with "
        "ONNX Runtime CPU on seeded inputs and rolled back if the outputs differ; the model "
        "is written only when it verifies. The input file is never modified.",
    )
    add_verify_timeout_option(p)
    p.add_argument("model", help="path to an .onnx file (never modified)")
    add_target_option(p)
    p.add_argument(
        "--output", "-o", metavar="OUT", help="where to write the rewritten model (required unless --dry-run)"
    )
    p.add_argument("--rules", metavar="A,B", help="apply only these rules (default: the target's rule set)")
    p.add_argument("--skip-rules", metavar="C,D", help="do not apply these rules")
    p.add_argument(
        "--allow-approx",
        action="store_true",
        help="also run approximate rules (gelu_tanh) and report their measured error",
    )
    p.add_argument("--dry-run", action="store_true", help="print what would change, write nothing")
    p.add_argument("--format", "-f", choices=FORMATS, default=FORMAT, help=f"report format (default: {FORMAT})")
    p.add_argument("--report", metavar="FILE", help="also write the report to FILE (atomically)")
    p.add_argument(
        "--samples", type=positive_int, default=3, help="seeded input samples used for verification (default: 3)"
    )
    p.add_argument("--seed", type=seed_int, default=0, help="seed of the verification inputs (default: 0)")
    add_input_shape_option(p)
    add_judge_option(p)
    add_measure_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if not args.output and not args.dry_run:
        raise NpufitError("give --output OUT for the rewritten model, or --dry-run to only preview")
    if args.samples < 1:
        raise NpufitError("--samples must be at least 1")
    mode, _ = measure_mode(args)
    result = reads_placement(fix)(
        args.model,
        target=target_of(args),
        output=args.output,
        rules=_names(args.rules),
        skip_rules=_names(args.skip_rules),
        allow_approx=args.allow_approx,
        dry_run=args.dry_run,
        input_shapes=parse_input_shapes(args.input_shape),
        samples=args.samples,
        seed=args.seed,
        judge=args.judge,
        measure=mode,
        measure_timeout=args.measure_timeout,
    )
    text = result.render(args.format)
    emit(text, None)
    if args.report:
        emit(text, args.report)
    return 0

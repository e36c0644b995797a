"""npufit pipeline run|validate PIPELINE.yaml: seed 003's all.sh as a declared, cached, failure-tolerant run."""

from __future__ import annotations

import argparse
import sys

from ..errors import NpufitError
from ..pipeline import run_pipeline, validate
from ..pipeline.matrix import expand
from ..pipeline.stepdefs import STEP_NAMES
from ..vocab import EXECUTORS, FORMAT, FORMATS, PIPELINE_EXECUTOR
from .common import emit


def register(sub, help: str) -> None:
    p = sub.add_parser(
        "pipeline",
        help=help,
        description="Run the steps a PIPELINE.yaml declares over its models x targets x runtimes. Each step's "
        "outputs are cached under a hash of its inputs and settings: a re-run skips what has not "
        "changed. A failing step stops only its own branch. Schema: docs/pipeline.md.",
    )
    psub = p.add_subparsers(dest="pipeline_command", metavar="ACTION")
    r = psub.add_parser("run", help="run the pipeline (cached steps are skipped)")
    r.add_argument("pipeline", help="PIPELINE.yaml")
    r.add_argument(
        "--from",
        dest="from_step",
        choices=STEP_NAMES,
        metavar="STEP",
        help="run only STEP and the steps after it; earlier steps reuse their recorded results",
    )
    r.add_argument(
        "--only", choices=STEP_NAMES, metavar="STEP", help="run only STEP; the others reuse their recorded results"
    )
    r.add_argument("--force", action="store_true", help="ignore the cache: re-run every selected step")
    r.add_argument("--output-dir", metavar="DIR", help="results folder (default: the YAML's output_dir)")
    r.add_argument("--format", "-f", choices=FORMATS, default=FORMAT, help=f"summary format (default: {FORMAT})")
    r.add_argument("--output", "-o", metavar="FILE", help="write the summary to FILE instead of stdout")
    r.add_argument("--quiet", "-q", action="store_true", help="no per-step lines on stderr, only the summary")
    r.add_argument(
        "--executor",
        choices=EXECUTORS,
        default=PIPELINE_EXECUTOR,
        help="inprocess (default): one cell after the other; pool / ray: the cells of each step side by side "
        "(bench cells stay one at a time)",
    )
    r.add_argument("--jobs", "-j", type=int, help="workers for --executor pool (default: number of CPUs)")
    r.add_argument("--address", metavar="ADDR", help="Ray cluster address (with --executor ray)")
    r.set_defaults(func=run)
    v = psub.add_parser("validate", help="check the YAML against the schema and list the steps it would run")
    v.add_argument("pipeline", help="PIPELINE.yaml")
    v.add_argument("--output-dir", metavar="DIR", help="results folder (default: the YAML's output_dir)")
    v.set_defaults(func=run_validate)
    p.set_defaults(func=lambda a: (p.print_help(), 0)[1])


def run(args: argparse.Namespace) -> int:
    if args.from_step and args.only:
        raise NpufitError("give --from or --only, not both")
    result = run_pipeline(
        args.pipeline,
        from_step=args.from_step,
        only=args.only,
        force=args.force,
        output_dir=args.output_dir,
        quiet=args.quiet,
        executor=args.executor,
        jobs=args.jobs,
        address=args.address,
    )
    emit(result.render(args.format), args.output)
    if result.ok:
        return 0
    failed = [r.cell.id for r in result.results if r.record.status == "failed"]
    shown = ", ".join(failed[:3]) + (f" and {len(failed) - 3} more" if len(failed) > 3 else "")
    where = f"in {args.output}" if args.output else "above"
    # a failed run always says so on stderr, also with --quiet or the summary in a file (never a bare exit 1)
    print(f"npufit: {len(failed)} step(s) failed: {shown}; the summary {where} says why", file=sys.stderr)
    return 1


def run_validate(args: argparse.Namespace) -> int:
    config = validate(args.pipeline, args.output_dir)
    cells = expand(config)
    by_step: dict[str, int] = {}
    for c in cells:
        by_step[c.step] = by_step.get(c.step, 0) + 1
    print(
        f"{config.path}: valid. {len(config.models)} model(s) x {len(config.targets)} target(s) x "
        f"{len(config.runtimes)} runtime(s) -> {len(cells)} steps: "
        + ", ".join(f"{s} x{n}" for s, n in by_step.items()),
        file=sys.stdout,
    )
    print(f"results folder: {config.output_dir}")
    return 0

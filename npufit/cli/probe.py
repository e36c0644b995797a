"""npufit probe --target T: one tiny model per op -> predicted (and measured) support matrix, drift table."""

from __future__ import annotations

import argparse

from .. import toolchains
from ..probe import probe, select
from ..vocab import DEFAULT_TARGET, EXECUTOR, EXECUTORS, FORMAT, FORMATS
from .common import emit, name_arg, positive_float, positive_int, target_of


def register(sub, help: str) -> None:
    p = sub.add_parser(
        "probe",
        help=help,
        description="Export one small PyTorch model per operation (a catalogue that holds a user's Hailo-8 op "
        "test), judge each with the target profile and, with --compiler, compile it with the real vendor "
        "compiler; write a ✅/❌ matrix with problems and workarounds, JSON, and a drift table.",
    )
    p.add_argument(
        "--target",
        "-t",
        type=name_arg,
        help=f"target profile (default: the --replay record's target, else {DEFAULT_TARGET}, said so in the output)",
    )
    p.add_argument(
        "--opset",
        type=positive_int,
        default=11,
        help="ONNX opset for the TorchScript exporter (default: 11, Hailo's officially supported one)",
    )
    p.add_argument(
        "--cases",
        metavar="PATTERN",
        help="comma-separated globs over case ids, families or groups (e.g. 'conv*,pooling', 'hailo-8-op-test', "
        "'deimv2-port')",
    )
    p.add_argument(
        "--compiler",
        choices=toolchains.names(),
        help="also compile every case with this installed compiler",
    )
    p.add_argument(
        "--replay",
        metavar="FILE",
        help="compare the prediction with a recorded compiler run (<target>-measured.json "
        "from an earlier --compiler run, e.g. docs/probe/rk3588-measured.json) "
        "instead of compiling: the drift table without the vendor toolkit",
    )
    p.add_argument(
        "--output",
        "-o",
        metavar="DIR",
        help="write <target>-matrix.md, <target>-probe.json, <target>-drift.json and cases/*.onnx into DIR",
    )
    p.add_argument("--jobs", "-j", type=positive_int, help="worker processes (default: number of CPUs)")
    p.add_argument(
        "--timeout",
        type=positive_float,
        default=120.0,
        metavar="S",
        help="per-case timeout in seconds; a timeout is a verdict (default: 120)",
    )
    p.add_argument(
        "--executor",
        choices=EXECUTORS,
        default=EXECUTOR,
        help="where cases run: local worker processes (default), this process, or Ray (pip install 'npufit[ray]')",
    )
    p.add_argument("--address", metavar="ADDR", help="Ray cluster address (with --executor ray); default: a local Ray")
    p.add_argument(
        "--sweep", action="store_true", help="also walk each case's parameter grid and report where the verdict changes"
    )
    p.add_argument("--format", "-f", choices=FORMATS, default=FORMAT, help=f"stdout format (default: {FORMAT})")
    p.add_argument(
        "--list", action="store_true", help="list the catalogue (ids, families, ops, sweepable parameters) and exit"
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:

    if args.list:
        lines = ["| case | family | reported by | ops | sweepable |", "|---|---|---|---|---|"]
        for c in select(args.cases):
            lines.append(f"| {c.id} | {c.family} | {c.seed or '-'} | {', '.join(c.ops)} | {', '.join(c.grid) or '-'} |")
        emit("\n".join(lines), None)
        return 0
    report = probe(
        args.target if args.target or args.replay else target_of(args),
        opset=args.opset,
        cases=args.cases,
        compiler=args.compiler,
        output=args.output,
        jobs=args.jobs,
        timeout=args.timeout,
        sweep=args.sweep,
        replay=args.replay,
        executor=args.executor,
        address=args.address,
    )
    emit(report.render(args.format), None)
    return 0

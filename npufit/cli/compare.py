"""npufit compare MODEL... --target T: one row per model variant."""

from __future__ import annotations

import argparse

from ..check.compare import compare
from ..graph import parse_input_shapes
from ..placement import with_placer
from .common import (
    add_format_option,
    add_input_shape_option,
    add_judge_option,
    add_measure_options,
    emit,
    measure_mode,
    name_arg,
)


def register(sub, help: str) -> None:
    p = sub.add_parser(
        "compare",
        help=help,
        description="Check several models (e.g. ReLU vs LeakyReLU variants) against one target and print one row "
        "per model: total ops, ops by type, NPU/CPU partitions, NPU %, extra quantize/dequantize ops, status.",
    )
    p.add_argument("models", nargs="+", help=".onnx or .tflite files (never modified)")
    p.add_argument("--target", "-t", type=name_arg, required=True, help="target name (see 'npufit targets')")
    add_format_option(p)
    add_input_shape_option(p)
    add_judge_option(p)
    add_measure_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    mode, _ = measure_mode(args)
    report = with_placer(compare, takes_shapes=True)(
        args.models,
        args.target,
        parse_input_shapes(args.input_shape),
        judge=args.judge,
        measure=mode,
        measure_timeout=args.measure_timeout,
    )
    emit(report.render(args.format), args.output)
    return 0

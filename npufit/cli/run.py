"""npufit run PLAN_DIR --inputs FILE.npz: execute a split plan's stage chain, with per-stage latency."""

from __future__ import annotations

import argparse

from ..split import run as run_plan
from ..vocab import FORMAT, FORMATS
from .common import add_input_shape_option, add_verify_timeout_option, input_shapes, positive_int, seed_int


def register(sub, help: str) -> None:
    p = sub.add_parser(
        "run",
        help=help,
        description="Execute the stages of a plan folder written by 'npufit split': host stages on "
        "ONNX Runtime CPU, NPU stages on the vendor runtime when it is installed (else on "
        "ONNX Runtime CPU, and the output says so), with per-stage latency.",
    )
    p.add_argument("plan_dir", metavar="PLAN_DIR", help="folder with plan.json and the stage models")
    p.add_argument(
        "--inputs",
        metavar="FILE.npz",
        help="one array per original model input, keyed by input name (default: seeded random inputs at the shapes "
        "the plan was split for)",
    )
    add_input_shape_option(p)
    p.add_argument("--seed", type=seed_int, default=0, help="seed of the random inputs (default: 0)")
    p.add_argument(
        "--output", "-o", metavar="FILE.npz", help="write the outputs (keyed by the original output names) atomically"
    )
    p.add_argument(
        "--compare-original", metavar="MODEL", help="also run the original model and print the difference per output"
    )
    p.add_argument(
        "--npu-runtime",
        default="auto",
        metavar="NAME",
        help="auto (default: vendor runtime if installed, else onnxruntime-cpu), onnxruntime-cpu, or hailort",
    )
    p.add_argument(
        "--repeat",
        type=positive_int,
        default=1,
        metavar="N",
        help="run N times and report the median latency per stage",
    )
    p.add_argument(
        "--threads",
        type=positive_int,
        default=1,
        metavar="N",
        help="ONNX Runtime intra-op threads per stage (default: 1, deterministic)",
    )
    p.add_argument("--format", "-f", choices=FORMATS, default=FORMAT, help=f"output format (default: {FORMAT})")
    add_verify_timeout_option(p, "run of the chain (and of --compare-original)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    res = run_plan(
        args.plan_dir,
        args.inputs,
        output=args.output,
        compare_original=args.compare_original,
        npu_runtime=args.npu_runtime,
        repeat=args.repeat,
        threads=args.threads,
        input_shapes=input_shapes(args),
        seed=args.seed,
    )
    print(res.render(args.format))
    c = res.comparison
    return 1 if c is not None and not c["equivalent"] else 0

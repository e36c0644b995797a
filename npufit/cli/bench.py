"""npufit bench MODEL|PLAN_DIR --runtime ...: one protocol across runtimes; --compare for result files."""

from __future__ import annotations

import argparse
import sys

from ..bench import bench, compare
from ..errors import NpufitError
from ..report.html_verbs import render_bench_html
from ..util.io import atomic_write_text
from ..vocab import FORMAT, PAGE_FORMATS
from .common import (
    add_input_shape_option,
    add_verify_timeout_option,
    count_int,
    input_shapes,
    positive_float,
    positive_int,
    seed_int,
)

RUNTIME_NAMES = "ort-cpu,ort-cuda,ort-trt,tensorrt,openvino,hailort,chain"


def register(sub, help: str) -> None:
    p = sub.add_parser(
        "bench",
        help=help,
        description="Time one synchronous inference call per iteration on each runtime with the same protocol "
        "(warm-up, iterations or duration, same inputs), and state what the clock includes (the "
        "boundary). Reports mean/std/min/p50/p90/p95/p99/max latency, throughput, cold first call, "
        "build time and peak process memory, with the environment needed to judge two results "
        "comparable. Absent runtimes are skipped with the reason. The RKNN simulator is not a "
        "benchmark. With --compare, compares result files against a baseline and can plot them.",
        epilog="examples:\n  npufit bench model.onnx --runtime ort-cpu,openvino --iterations 500 -o cpu.json\n"
        "  npufit bench plan_dir/ --duration 10\n"
        "  npufit bench --compare cpu.json gpu.json --baseline ort-cpu --plot bench.png",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_verify_timeout_option(p)
    p.add_argument(
        "model", nargs="?", help="an .onnx (.xml, .hef, .engine) file or a split-plan folder (never modified)"
    )
    p.add_argument(
        "--runtime",
        "-r",
        metavar="LIST",
        help=f"comma-separated runtimes: {RUNTIME_NAMES} (default: by model type; ort-cpu for .onnx, "
        f"chain for a plan folder)",
    )
    p.add_argument(
        "--batch", type=positive_int, metavar="N", help="batch size for a dynamic first dimension (default: 1)"
    )
    p.add_argument(
        "--threads", type=positive_int, metavar="N", help="intra-op / inference threads (default: runtime's own)"
    )
    p.add_argument(
        "--warmup", type=count_int, default=10, metavar="N", help="untimed calls after the cold call (default: 10)"
    )
    loop = p.add_mutually_exclusive_group()
    loop.add_argument(
        "--iterations", "-n", type=positive_int, default=200, metavar="N", help="timed calls (default: 200)"
    )
    loop.add_argument(
        "--duration", type=positive_float, metavar="S", help="time calls for S seconds instead of N iterations"
    )
    p.add_argument("--inputs", metavar="FILE.npz", help="inputs by name; an extra leading axis holds several samples")
    p.add_argument(
        "--fresh-inputs",
        action="store_true",
        help="rotate a pool of distinct samples, one per iteration (default: reuse one sample)",
    )
    p.add_argument("--input-pool", type=positive_int, metavar="K", help="pool size for --fresh-inputs (default: 16)")
    p.add_argument(
        "--boundary",
        choices=("host-to-host", "compute-only"),
        help="GPU runtimes: include host<->device copies (host-to-host, default) or not (compute-only)",
    )
    p.add_argument(
        "--npu-runtime",
        metavar="NAME",
        help="split plans: what runs the NPU stages (auto, onnxruntime-cpu, hailort; default: auto)",
    )
    add_input_shape_option(p)
    p.add_argument("--fp16", action="store_true", help="TensorRT runtimes: allow FP16 kernels")
    p.add_argument("--seed", type=seed_int, default=0, help="seed of the random inputs (default: 0)")
    p.add_argument(
        "--format",
        "-f",
        choices=PAGE_FORMATS,
        default=FORMAT,
        help=f"what to print on stdout (default: {FORMAT}; html = one self-contained page, e.g. > bench.html)",
    )
    p.add_argument(
        "--output", "-o", metavar="FILE", help="also write the full JSON result (npufit.bench/1) to FILE, atomically"
    )
    p.add_argument("--compare", nargs="+", metavar="RESULT.json", help="compare result files instead of measuring")
    p.add_argument(
        "--baseline",
        metavar="NAME",
        help="--compare: the entry, runtime or file the ratios refer to (default: the first)",
    )
    p.add_argument("--plot", metavar="OUT.png", help="--compare: write a PNG (latency distributions, throughput)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.compare:
        if args.model:
            raise NpufitError("give either a MODEL to measure or --compare result files, not both")

        result = compare(args.compare, baseline=args.baseline, plot=args.plot)
    else:
        if not args.model:
            raise NpufitError("give a MODEL (or PLAN_DIR) to measure, or --compare RESULT.json ...")
        if args.baseline or args.plot:
            raise NpufitError("--baseline and --plot go with --compare")

        result = bench(
            args.model,
            args.runtime,
            batch=args.batch,
            threads=args.threads,
            warmup=args.warmup,
            iterations=None if args.duration else args.iterations,
            duration=args.duration,
            inputs=args.inputs,
            fresh_inputs=args.fresh_inputs,
            input_pool=args.input_pool,
            boundary=args.boundary,
            fp16=args.fp16,
            seed=args.seed,
            options={"npu_runtime": args.npu_runtime} if args.npu_runtime else None,
            input_shapes=input_shapes(args),
        )
    if args.format == "html" and not args.compare:
        text = render_bench_html(result.to_dict())
    else:
        text = result.render("table" if args.format == "html" else args.format)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    sys.stdout.flush()  # the table before the stderr notes, when both go to one terminal
    if args.output:
        atomic_write_text(args.output, result.render("json") + "\n")
        print(f"wrote {args.output}", file=sys.stderr)
    if not args.compare and not result.measured:
        print("npufit: no runtime produced a measurement (see the reasons above)", file=sys.stderr)
        return 1
    return 0

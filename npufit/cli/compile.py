"""npufit compile MODEL --target T: run the vendor compiler, read back per-node placement, compare with npufit."""

from __future__ import annotations

import argparse
import sys

from ..bench.hailortcli import read_hailo_results
from ..compilers import compile_model
from ..compilers.batch import compile_many
from ..errors import NpufitError
from ..graph import parse_input_shapes
from ..util.jsonutil import dumps
from ..util.limits import DEFAULT_MAX_TOOL_MEMORY_MB, tool_memory_limit
from ..vocab import EXECUTOR, EXECUTORS
from .common import add_format_option, add_input_shape_option, emit, name_arg, positive_float


def register(sub, help: str) -> None:
    p = sub.add_parser(
        "compile",
        help=help,
        description="Run Vela (ethos-u55/u65/u85-*), RKNN-Toolkit2 (rk3588, ...; its env comes from "
        "'npufit env install rknn') or the Hailo DFC (hailo8/hailo8l; --emit-script without it). "
        "Reports where each node went (npu/cpu), why, the compiler's log, version, command, "
        "wall time and peak memory; --compare-prediction holds npufit's check against it.",
    )
    p.add_argument(
        "model",
        nargs="*",
        help=".onnx or .tflite file(s) (never modified: compilers work on a copy); several models "
        "are compiled in parallel on --executor",
    )
    p.add_argument(
        "--target",
        "-t",
        type=name_arg,
        help="ethos-u55-256, ethos-u85-512, rk3588, hailo8, ethos-n78[-8tops-2ple], ... (required unless --results)",
    )
    p.add_argument(
        "--out-dir", metavar="DIR", help="where artifacts and logs go (default ./npufit-compile/MODEL-TARGET)"
    )
    p.add_argument("--quantize", action="store_true", help="RKNN: int8 build (default: float16)")
    p.add_argument(
        "--calibration", metavar="PATH", help="calibration data: a .npy, a folder of .npy files (RKNN: or dataset.txt)"
    )
    p.add_argument(
        "--disable-rule",
        action="append",
        default=[],
        metavar="RULE",
        help="RKNN: disable one of the toolkit's rewrite rules (repeatable; crashes that name one are retried "
        "automatically)",
    )
    p.add_argument(
        "--activations",
        choices=("auto", "int8", "int16"),
        default="auto",
        help="Ethos-U, ONNX input: the converter's activation type; auto (default) builds int8 and keeps a "
        "16x8 form (int16 activations, int8 weights) where int8 misses cosine 0.999 vs ONNX Runtime and "
        "int16 does better (slower on the NPU); Ethos-N is always int8",
    )
    p.add_argument("--no-simulate", action="store_true", help="RKNN: skip the simulator-vs-ONNX Runtime check")
    p.add_argument(
        "--emit-script",
        metavar="DIR",
        help="Hailo: write the DFC commands, model script and inputs to DIR instead of running them",
    )
    p.add_argument(
        "--results",
        metavar="DIR",
        help="Hailo: read back a folder written with --emit-script after its script ran on a Hailo machine (HEF, "
        "logs, parse-hef, hailortcli benchmark); writes DIR/bench.json in npufit's bench schema",
    )
    p.add_argument(
        "--start-node", action="append", default=[], metavar="NODE", help="Hailo: parser start node (repeatable)"
    )
    p.add_argument(
        "--end-node", action="append", default=[], metavar="NODE", help="Hailo: parser end node (repeatable)"
    )
    p.add_argument("--plan", metavar="PLAN_JSON", help="Hailo: take start/end nodes from 'npufit split' plan.json")
    p.add_argument("--timeout", type=positive_float, metavar="S", help="kill the compiler after S seconds")
    p.add_argument(
        "--max-memory",
        type=positive_float,
        default=DEFAULT_MAX_TOOL_MEMORY_MB,
        metavar="MB",
        help="kill the compiler when its processes hold more than MB of memory (default: "
        f"{DEFAULT_MAX_TOOL_MEMORY_MB:.0f})",
    )
    p.add_argument(
        "--compare-prediction",
        action="store_true",
        help="hold npufit's check against the compiler's placement: CPU-fallback recall/precision + every disagreement",
    )
    p.add_argument("--all-nodes", action="store_true", help="list every node's placement, not only the CPU ones")
    add_format_option(p)
    add_input_shape_option(p)
    p.add_argument(
        "--executor",
        choices=EXECUTORS,
        default=EXECUTOR,
        help="with several models: local worker processes (default), this process, or Ray tasks (RKNN/Hailo "
        "tasks only go to nodes tagged with their env)",
    )
    p.add_argument("--jobs", "-j", type=int, help="with several models: parallel compiles (default: number of CPUs)")
    p.add_argument("--address", metavar="ADDR", help="Ray cluster address (with --executor ray)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    with tool_memory_limit(args.max_memory):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    if args.results:
        if len(args.model) > 1:
            raise NpufitError("--results reads one compile folder: give at most the one model it was written for")

        res = read_hailo_results(args.results, args.model[0] if args.model else None)
        emit(res.render(args.format, all_nodes=args.all_nodes), args.output)
        return 0 if res.ok else 1
    if not args.model or not args.target:
        raise NpufitError(f"compile needs {'a MODEL' if not args.model else '--target'} (or --results DIR)")

    options = dict(
        out_dir=args.out_dir,
        quantize=args.quantize,
        calibration=args.calibration,
        input_shapes=parse_input_shapes(args.input_shape) or None,
        disable_rules=tuple(args.disable_rule),
        simulate=not args.no_simulate,
        emit_script=args.emit_script,
        start_nodes=tuple(args.start_node),
        end_nodes=tuple(args.end_node),
        plan=args.plan,
        timeout_s=args.timeout,
        activations=args.activations,
    )
    if len(args.model) > 1:
        return _run_many(args, options)
    res = compile_model(args.model[0], args.target, compare_prediction=args.compare_prediction, **options)
    emit(res.render(args.format, all_nodes=args.all_nodes), args.output)
    if res.ok:
        return 0
    # the cause is in the report, once; stderr says that the compile failed (never a bare exit 1)
    where = f"in {args.output}" if args.output else "above"
    print(f"npufit: the {res.target} compile failed; the report {where} gives the cause", file=sys.stderr)
    return 1


def _run_many(args: argparse.Namespace, options: dict) -> int:
    results = compile_many(
        args.model,
        args.target,
        compare_prediction=args.compare_prediction,
        executor=args.executor,
        jobs=args.jobs,
        address=args.address,
        **options,
    )
    if args.format == "json":
        text = dumps(results)
    else:
        head = ["| model | ok | npu | cpu | error |", "|---|---|---|---|---|"] if args.format == "markdown" else []
        lines = [
            f"| {r['model']} | {'yes' if r['ok'] else 'no'} | {r.get('summary', {}).get('npu', '-')} | "
            f"{r.get('summary', {}).get('cpu', '-')} | "
            f"{(r.get('error') or '').splitlines()[0][:120] if r.get('error') else ''} |"
            if args.format == "markdown"
            else f"{'ok    ' if r['ok'] else 'FAILED'} {r['model']}  npu={r.get('summary', {}).get('npu', '-')} "
            f"cpu={r.get('summary', {}).get('cpu', '-')}"
            + (f"  {(r.get('error') or '').splitlines()[0][:120]}" if r.get("error") else "")
            for r in results
        ]
        text = "\n".join(head + lines)
    emit(text, args.output)
    failed = [r["model"] for r in results if not r["ok"]]
    if failed:
        print(f"npufit: {len(failed)} of {len(results)} compiles failed: {', '.join(failed[:3])}", file=sys.stderr)
    return 1 if failed else 0

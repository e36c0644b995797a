"""npufit split MODEL --target T --output-dir DIR: NPU and host stage models + plan.json, proven equal to the
original."""

from __future__ import annotations

import argparse

from ..graph import parse_input_shapes
from ..placement import reads_placement
from ..report.html_verbs import render_split_html
from ..split import split
from ..vocab import PAGE_FORMATS, SPLIT_MIN_NODES, SPLIT_MODES
from .common import (
    add_format_option,
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


def register(sub, help: str) -> None:
    p = sub.add_parser(
        "split",
        help=help,
        description="Cut an ONNX model into NPU and host stages from the check verdicts, write one "
        "standalone ONNX per stage and plan.json (execution order, where each input comes "
        "from, bytes crossing, Hailo-style start/end node names), and verify with ONNX "
        "Runtime CPU that the chain reproduces the original bit for bit.",
    )
    add_verify_timeout_option(p)
    p.add_argument("model", help="path to an .onnx file (never modified)")
    add_target_option(p)
    p.add_argument(
        "--output-dir",
        "-d",
        required=True,
        metavar="DIR",
        help="folder for the stage models and plan.json (written atomically; an earlier plan folder is replaced)",
    )
    p.add_argument(
        "--mode",
        choices=SPLIT_MODES,
        help="best: the best-ranked candidate cut (default; the ranking is printed); prefix: largest "
        "NPU-runnable prefix on the NPU, the rest on the host; segments: every NPU region of at least "
        "--min-nodes nodes is its own stage; explicit: --start-nodes/--end-nodes; auto: npufit fix "
        "(exact rules) on a copy, then the best cut of the fixed model, verified against the original",
    )
    p.add_argument(
        "--min-nodes",
        type=positive_int,
        default=SPLIT_MIN_NODES,
        metavar="N",
        help=f"segments: smallest NPU region kept on the NPU (default: {SPLIT_MIN_NODES})",
    )
    p.add_argument(
        "--max-npu-stages",
        type=positive_int,
        metavar="N",
        help="best/auto: at most N NPU stages in the plan; segments: keep the N NPU regions with the most MACs "
        "(default: the target's own cap, e.g. 1 on Hailo, where each NPU stage is a network group of its own)",
    )
    p.add_argument(
        "--start-nodes",
        action="append",
        metavar="NAMES",
        help="explicit cut: comma-separated node or tensor names where the NPU stage starts (Hailo start_node_names)",
    )
    p.add_argument(
        "--end-nodes",
        action="append",
        metavar="NAMES",
        help="explicit cut: comma-separated node or tensor names where the NPU stage ends (Hailo end_node_names)",
    )
    p.add_argument(
        "--inputs",
        action="append",
        metavar="FILE.npz",
        help="verify on real data: one .npz per sample, one array per model input (repeatable)",
    )
    p.add_argument(
        "--samples", type=positive_int, default=3, metavar="N", help="seeded random samples to verify with (default: 3)"
    )
    p.add_argument("--seed", type=seed_int, default=0, help="seed of the random samples (default: 0)")
    p.add_argument("--no-verify", action="store_true", help="skip the equivalence check (not recommended)")
    p.add_argument("--force", action="store_true", help="write the plan even when the chain is not bit-identical")
    p.add_argument("--top", type=positive_int, default=5, metavar="N", help="candidate cuts to list (default: 5)")
    add_input_shape_option(p)
    add_format_option(p, choices=PAGE_FORMATS)
    add_judge_option(p)
    add_measure_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    mode, _ = measure_mode(args)
    res = reads_placement(split)(
        args.model,
        target_of(args),
        args.output_dir,
        mode=args.mode,
        min_nodes=args.min_nodes,
        start_nodes=args.start_nodes,
        end_nodes=args.end_nodes,
        verify=not args.no_verify,
        samples=args.samples,
        seed=args.seed,
        inputs=args.inputs,
        force=args.force,
        input_shapes=parse_input_shapes(args.input_shape),
        top=args.top,
        judge=args.judge,
        max_npu_stages=args.max_npu_stages,
        measure=mode,
        measure_timeout=args.measure_timeout,
    )
    if args.format == "html":
        emit(
            render_split_html(res.to_dict(), res.stage_view(), res.verification_view(), res.select_view()), args.output
        )
    else:
        emit(res.render(args.format), args.output)
    v = res.plan.verification
    return 1 if v is not None and not v["equivalent"] else 0

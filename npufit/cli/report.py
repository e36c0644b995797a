"""npufit report RESULTS_DIR --output report.html: one self-contained HTML file for a pipeline run."""

from __future__ import annotations

import argparse
import sys

from ..report.html_results import build_report


def register(sub, help: str) -> None:
    p = sub.add_parser(
        "report",
        help=help,
        description="Read the results folder `npufit pipeline run` wrote and render one HTML file with no "
        "external resources: per model and target the coverage, partitions and graph (coloured by "
        "verdict, cut points marked), reasons and fixes, split verification, quantization error, "
        "compile time/memory, benchmarks and the environment.",
    )
    p.add_argument("results_dir", help="results folder of a pipeline run (holds pipeline.json)")
    p.add_argument("--output", "-o", metavar="FILE", help="HTML file to write (default: RESULTS_DIR/report.html)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    out = build_report(args.results_dir, args.output)
    print(f"wrote {out} ({out.stat().st_size // 1024} KiB)", file=sys.stderr)
    return 0

"""Options and output handling shared by the verbs."""
from __future__ import annotations

import argparse
import sys

from ..util.io import atomic_write_text


def add_format_option(p: argparse.ArgumentParser, choices=("table", "json", "markdown"), default="table") -> None:
    p.add_argument("--format", "-f", choices=choices, default=default, help=f"output format (default: {default})")
    p.add_argument("--output", "-o", metavar="FILE", help="write the report to FILE (atomically) instead of stdout")


def add_input_shape_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--input-shape", action="append", metavar="NAME=D0,D1,..",
                   help="pin a dynamic input shape, e.g. images=1,3,640,640 (repeatable)")


def add_judge_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--judge", choices=("auto", "int8", "float"), default="auto",
                   help="how a float model is judged: auto (default) = as its int8 conversion on an int8-only target "
                        "(Ethos-U, Ethos-N), as it is elsewhere; int8 = as its int8 conversion; float = the float graph as it is")
    p.add_argument("--assume-int8", dest="judge", action="store_const", const="int8", help=argparse.SUPPRESS)  # older spelling


def add_verify_timeout_option(p: argparse.ArgumentParser) -> None:
    from ..verify.compare import DEFAULT_VERIFY_TIMEOUT_S

    p.add_argument("--verify-timeout", type=float, default=DEFAULT_VERIFY_TIMEOUT_S, metavar="SECONDS",
                   help=f"time limit for each ONNX Runtime verification run (default: {DEFAULT_VERIFY_TIMEOUT_S:g}); "
                        "a model that loops forever is stopped with one clear error")


def emit(text: str, output: str | None) -> None:
    """Print to stdout, or write atomically to --output."""
    if output:
        atomic_write_text(output, text if text.endswith("\n") else text + "\n")
        print(f"wrote {output}", file=sys.stderr)
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")

"""Options and output handling shared by the verbs."""

from __future__ import annotations

import argparse
import math
import sys

from ..errors import NpufitError
from ..util.io import atomic_write_text, check_output_file
from ..util.limits import VERIFY_TIMEOUT
from ..util.shapes import parse_input_shapes
from ..vocab import DEFAULT_TARGET, FORMAT, FORMATS, JUDGE, JUDGES, MEASURE_JUDGE, MEASURE_JUDGES, MEASURE_TIMEOUT_S


# -- numbers and names on the command line: refused by argparse (one line, exit 2) before any work -------------
def bounded_number(kind: type, lo: float | None = None, hi: float | None = None, lo_open: bool = False, what: str = ""):
    """An argparse `type=` for a finite int/float in [lo, hi] (or (lo, hi] with lo_open); NaN and inf never pass."""

    def parse(text: str):
        try:
            v = kind(text)
        except (TypeError, ValueError):
            raise argparse.ArgumentTypeError(
                f"expected {what or ('an integer' if kind is int else 'a number')}, got {text!r}"
            ) from None
        if not math.isfinite(v) or (lo is not None and (v <= lo if lo_open else v < lo)) or (hi is not None and v > hi):
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
        return v

    parse.__name__ = what or kind.__name__  # argparse names the type in some messages
    return parse


MAX_COUNT = 2**31 - 1  # samples, iterations, threads, ...: far above any real use, below index overflow
positive_int = bounded_number(int, 1, MAX_COUNT, what=f"an integer in [1, {MAX_COUNT}]")
count_int = bounded_number(int, 0, MAX_COUNT, what=f"an integer in [0, {MAX_COUNT}]")
seed_int = bounded_number(int, 0, 2**63 - 1, what="an integer seed >= 0")
positive_float = bounded_number(float, 0.0, lo_open=True, what="a number > 0")
percent = bounded_number(float, 0.0, 100.0, what="a percentage in [0, 100]")
finite_float = bounded_number(float, what="a finite number")
percentile = bounded_number(float, 0.0, 100.0, lo_open=True, what="a percentile in (0, 100]")
cosine = bounded_number(float, -1.0, 1.0, what="a cosine in [-1, 1]")


def name_arg(text: str) -> str:
    """A target or other name: not empty, no control characters (they would reach the terminal)."""
    if not text.strip() or any(ord(c) < 32 or ord(c) == 127 for c in text):
        raise argparse.ArgumentTypeError(f"expected a name, got {text!r}")
    return text


def input_shape_arg(text: str) -> str:
    """NAME=D0,D1,..: read by the one parser every verb and the library use (util.shapes), refused here when bad."""
    try:
        parse_input_shapes([text])
    except NpufitError as e:
        raise argparse.ArgumentTypeError(e.message) from None
    return text.strip()


def add_target_option(p: argparse.ArgumentParser, what: str = "target name (see 'npufit targets')") -> None:
    p.add_argument(
        "--target",
        "-t",
        type=name_arg,
        default=None,
        help=f"{what}; default: {DEFAULT_TARGET}, and the output says it was the default",
    )


# lines said on stderr right before the output (`emit`): a refused input stays one line of error, nothing more
PENDING_NOTES: list[str] = []


def target_of(args: argparse.Namespace) -> str:
    """--target, or the default, said right before the output: no result silently speaks of a target nobody chose."""
    if args.target:
        return args.target
    PENDING_NOTES.append(
        f"npufit: no --target given: {DEFAULT_TARGET} (the default; choose one with --target, see 'npufit targets')"
    )
    return DEFAULT_TARGET


def input_shapes(args: argparse.Namespace) -> dict[str, tuple[int, ...]]:
    """The --input-shape options of a parsed command line, as {name: dims}."""
    return parse_input_shapes(getattr(args, "input_shape", None))


def add_format_option(p: argparse.ArgumentParser, choices=FORMATS, default=FORMAT) -> None:
    p.add_argument("--format", "-f", choices=choices, default=default, help=f"output format (default: {default})")
    p.add_argument("--output", "-o", metavar="FILE", help="write the report to FILE (atomically) instead of stdout")


def add_input_shape_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--input-shape",
        action="append",
        metavar="NAME=D0,D1,..",
        type=input_shape_arg,
        help="the shape an input runs at, e.g. images=1,3,640,640 (repeatable); models npufit writes carry it. "
        "A dynamic batch alone is pinned to 1; other unknown dims must be given",
    )


def add_judge_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--judge",
        choices=JUDGES,
        default=JUDGE,
        help="how a float model is judged: auto (default) = as its int8 conversion on an int8-only target "
        "(Ethos-U, Ethos-N), as it is elsewhere; int8 = as its int8 conversion; float = the float graph as it is",
    )
    p.add_argument(
        "--assume-int8", dest="judge", action="store_const", const="int8", help=argparse.SUPPRESS
    )  # older spelling


def add_measure_options(p: argparse.ArgumentParser, scan: bool = False) -> None:
    """Whose placement the verb reads: the installed compiler's where one runs here (the default; for scan, only
    with --measure), or npufit's prediction (--predict)."""
    g = p.add_mutually_exclusive_group()
    if scan:
        g.add_argument(
            "--measure",
            nargs="?",
            const=MEASURE_JUDGE,
            choices=MEASURE_JUDGES,
            metavar="JUDGE",
            help="place each model with the installed compiler for the target where one runs here (Vela; the "
            "Ethos-N support library and RKNN-Toolkit2 once their env is installed); default: npufit's prediction",
        )
    else:
        g.add_argument(
            "--predict",
            action="store_true",
            help="npufit's prediction only: do not run the installed compiler (by default it judges where it runs "
            "here: Vela for Ethos-U; the Ethos-N support library and RKNN-Toolkit2 once their env is installed)",
        )
        g.add_argument(
            "--measure",
            nargs="?",
            const=MEASURE_JUDGE,
            choices=MEASURE_JUDGES,
            metavar="JUDGE",
            help="require the compiler's placement: stop with one line when none runs here. JUDGE: auto/compile "
            "(the compile, default), vela-checks (Vela's operator checks, TFLite on Ethos-U)",
        )
    p.add_argument(
        "--measure-timeout",
        type=positive_float,
        default=MEASURE_TIMEOUT_S,
        metavar="SECONDS",
        help=f"stop a compile that runs longer and show the prediction, marked as such (default {MEASURE_TIMEOUT_S:g})",
    )


def measure_mode(args: argparse.Namespace) -> tuple[str, str]:
    """(measure mode, measure judge) of add_measure_options's flags."""
    if getattr(args, "predict", False):
        return "never", MEASURE_JUDGE
    if hasattr(args, "predict"):  # check and the verbs like it: measured unless --predict; --measure requires it
        return ("required", args.measure) if args.measure else ("auto", MEASURE_JUDGE)
    return ("auto", args.measure) if args.measure else ("never", MEASURE_JUDGE)  # scan: predicted unless --measure


def add_verify_timeout_option(p: argparse.ArgumentParser, what: str = "verification run") -> None:
    p.add_argument(
        "--verify-timeout",
        type=positive_float,
        default=VERIFY_TIMEOUT.default,
        metavar="SECONDS",
        help=f"time limit for each ONNX Runtime {what} (default: {VERIFY_TIMEOUT.default:g}); "
        "a model that loops forever is stopped with one clear error",
    )


def emit(text: str, output: str | None) -> None:
    """Print to stdout, or write atomically to --output (after the notes that belong before it)."""
    if output:
        check_output_file(output)  # a refused output stays one line: before the notes
    while PENDING_NOTES:
        print(PENDING_NOTES.pop(0), file=sys.stderr, flush=True)
    if output:
        atomic_write_text(output, text if text.endswith("\n") else text + "\n")
        print(f"wrote {output}", file=sys.stderr)
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")

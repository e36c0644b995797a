"""The `npufit` command: one module per verb, each calling exactly one library function."""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import threading
import warnings

from .. import __version__
from ..errors import NpufitError, NpufitWarning, TimeLimitReached
from ..util.term import EscapingStream, esc_line

# verb -> module (each module has register(subparsers) and run(args) -> int)
COMMANDS = {
    "check": "npufit.cli.check",
    "scan": "npufit.cli.scan",
    "targets": "npufit.cli.targets",
    "explain": "npufit.cli.explain",
    "compare": "npufit.cli.compare",
    "fix": "npufit.cli.fix",
    "split": "npufit.cli.split",
    "run": "npufit.cli.run",
    "quantize": "npufit.cli.quantize",
    "compile": "npufit.cli.compile",
    "env": "npufit.cli.env",
    "probe": "npufit.cli.probe",
    "bench": "npufit.cli.bench",
    "pipeline": "npufit.cli.pipeline",
    "report": "npufit.cli.report",
    "doctor": "npufit.cli.doctor",
}


# verbs that drive many others (or build environments): no time limit unless one is given
UNTIMED = {"pipeline", "probe", "env", "scan"}


class Parser(argparse.ArgumentParser):
    """Usage errors (a bad number, a missing argument) are one line like every other npufit error, exit 2."""

    def error(self, message: str):  # type: ignore[override]
        verb = self.prog.split(" ", 1)[1] if " " in self.prog else ""
        hint = f"'npufit {verb} --help'" if verb else "'npufit --help'"
        self.exit(2, f"npufit: error: {verb + ': ' if verb else ''}{esc_line(message)} (see {hint})\n")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="npufit",
        description="Will this network run on the NPU? Check, fix, split, quantize, compile and benchmark models "
        "for Hailo-8/8L, Arm Ethos-N78, Arm Ethos-U55/U65/U85 and Rockchip RK3588, RK3576, RK3566/RK3568 and "
        "RV1106/RV1103 ('npufit targets' lists every target name).",
        epilog="Run 'npufit COMMAND --help' for the options of a command, 'npufit explain RULE_ID' for a rule of a "
        "report.",
    )
    parser.add_argument("--version", action="version", version=f"npufit {__version__}")
    parser.add_argument(
        "--quiet",
        "-q",
        dest="global_quiet",
        action="store_true",
        help="no progress bars (they are shown only on a terminal anyway)",
    )
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="also show ONNX Runtime's own log lines and Python warnings (hidden by default)",
    )
    from ..util.limits import MEMORY_BUDGET_MB, TIME_LIMIT_S
    from .common import positive_float

    parser.add_argument(
        MEMORY_BUDGET_MB.option,
        type=positive_float,
        metavar="MB",
        help=f"memory npufit may fill with tensors, samples and arrays in one run (default: "
        f"{MEMORY_BUDGET_MB.default:.0f}, or {MEMORY_BUDGET_MB.env}); work beyond it is refused in one line",
    )
    parser.add_argument(
        TIME_LIMIT_S.option,
        type=positive_float,
        metavar="SECONDS",
        help=f"stop a command after this long with one line (default: {TIME_LIMIT_S.default:g}, or "
        f"{TIME_LIMIT_S.env}; none for {', '.join(sorted(UNTIMED))} unless given)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for modname in COMMANDS.values():
        importlib.import_module(modname).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help, --version, or a usage error already printed as one line: a return code
        return int(e.code or 0) if not isinstance(e.code, str) else 2
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    from .common import PENDING_NOTES

    PENDING_NOTES.clear()  # main() may run several times in one process (tests)
    if args.global_quiet:
        os.environ["NPUFIT_NO_PROGRESS"] = "1"
    # names from a model never reach the terminal raw (progress bars draw on the unwrapped stream)
    stdout, stderr = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = EscapingStream(stdout), EscapingStream(stderr)
    previous_term = _exit_on_sigterm()
    if args.verbose:
        os.environ["NPUFIT_VERBOSE"] = "1"  # read where ONNX Runtime sessions are made (verify.compare.ort_quiet)
    try:
        from ..util.io import clean_stale_temp, one_run
        from ..util.limits import MEMORY_BUDGET_MB, TIME_LIMIT_S, VERIFY_TIMEOUT, verb_time_limit

        clean_stale_temp()  # what killed runs left in the temp folder
        seconds = args.time_limit
        if seconds is None and (args.command not in UNTIMED or os.environ.get(TIME_LIMIT_S.env or "")):
            seconds = TIME_LIMIT_S.value
        with warnings.catch_warnings():
            if not args.verbose:  # a library's warning must not precede npufit's own one-line output
                warnings.simplefilter("ignore")
            # npufit's own warnings (an artifact calibrated on random data) are shown when they happen, in one line
            warnings.simplefilter("always", NpufitWarning)
            warnings.showwarning = _show_warning
            with (
                VERIFY_TIMEOUT.scoped(getattr(args, "verify_timeout", None)),
                MEMORY_BUDGET_MB.scoped(args.memory_budget),
                verb_time_limit(f"npufit {args.command}", seconds),
                one_run(),
            ):
                return int(args.func(args) or 0)
    except NpufitError as e:
        from ..util.shapes import ShapeNeeded

        # a missing input shape: the user's own command back, with the flag it needs
        msg = e.cli_message(sys.argv[1:] if argv is None else argv) if isinstance(e, ShapeNeeded) else e.message
        print(f"npufit: error: {esc_line(msg)}", file=sys.stderr)
        return e.exit_code
    except TimeLimitReached as e:
        print(f"npufit: error: {esc_line(e.message)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("npufit: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as e:  # the CLI edge: one line, never a traceback (NPUFIT_DEBUG=1 shows it)
        if os.environ.get("NPUFIT_DEBUG"):
            raise
        msg = str(e).splitlines()[0][:300] if str(e) else ""
        print(
            f"npufit: internal error: {type(e).__name__}: {esc_line(msg)} (set NPUFIT_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
        return 3
    finally:
        sys.stdout, sys.stderr = stdout, stderr
        if previous_term is not None:
            signal.signal(signal.SIGTERM, previous_term)


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    if issubclass(category, NpufitWarning):
        print(f"npufit: warning: {esc_line(str(message))}", file=sys.stderr, flush=True)
    else:  # --verbose: other libraries' warnings as Python prints them
        sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


def _exit_on_sigterm():
    """SIGTERM (kill, timeout, CI cancel) unwinds like Ctrl-C, so temp files and folders are removed."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def _raise(signum, frame):
        raise KeyboardInterrupt

    return signal.signal(signal.SIGTERM, _raise)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

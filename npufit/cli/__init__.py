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
from ..errors import NpufitError
from ..util.term import EscapingStream, esc_line

# verb -> module (each module has register(subparsers) and run(args) -> int)
COMMANDS = {
    "check": "npufit.cli.check",
    "scan": "npufit.cli.scan",
    "targets": "npufit.cli.targets",
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
        "for Hailo-8/8L, Arm Ethos-N78, Arm Ethos-U55/65/85 and Rockchip RK3588.",
        epilog="Run 'npufit COMMAND --help' for the options of a command.",
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
    if args.global_quiet:
        os.environ["NPUFIT_NO_PROGRESS"] = "1"
    # names from a model never reach the terminal raw (progress bars draw on the unwrapped stream)
    stdout, stderr = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = EscapingStream(stdout), EscapingStream(stderr)
    previous_term = _exit_on_sigterm()
    if args.verbose:
        os.environ["NPUFIT_VERBOSE"] = "1"  # read where ONNX Runtime sessions are made (verify.compare.ort_quiet)
    try:
        from ..util.io import one_run
        from ..util.limits import VERIFY_TIMEOUT

        with warnings.catch_warnings():
            if not args.verbose:  # a library's warning must not precede npufit's own one-line output
                warnings.simplefilter("ignore")
            with VERIFY_TIMEOUT.scoped(getattr(args, "verify_timeout", VERIFY_TIMEOUT.default)), one_run():
                return int(args.func(args) or 0)
    except NpufitError as e:
        from ..util.shapes import ShapeNeeded

        # a missing input shape: the user's own command back, with the flag it needs
        msg = e.cli_message(sys.argv[1:] if argv is None else argv) if isinstance(e, ShapeNeeded) else e.message
        print(f"npufit: error: {esc_line(msg)}", file=sys.stderr)
        return e.exit_code
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


def _exit_on_sigterm():
    """SIGTERM (kill, timeout, CI cancel) unwinds like Ctrl-C, so temp files and folders are removed."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def _raise(signum, frame):
        raise KeyboardInterrupt

    return signal.signal(signal.SIGTERM, _raise)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

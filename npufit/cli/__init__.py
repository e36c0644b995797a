"""The `npufit` command: one module per verb, each calling exactly one library function."""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import threading
import warnings
from collections.abc import Collection
from typing import NamedTuple

from .. import __version__
from ..errors import NpufitError, NpufitWarning, TimeLimitReached
from ..toolchains import env_specs
from ..util.io import clean_stale_temp, one_run
from ..util.limits import MEMORY_BUDGET_MB, TIME_LIMIT_S, VERIFY_TIMEOUT, verb_time_limit
from ..util.shapes import ShapeNeeded
from ..util.term import EscapingStream, esc_line
from .common import PENDING_NOTES, positive_float


class Verb(NamedTuple):
    module: str  # has register(subparsers, help) and run(args) -> int, and imports its library at module top
    help: str  # its line in `npufit --help`: the module is loaded only for the verb a command runs


COMMANDS = {
    "check": Verb("npufit.cli.check", "judge every node of a model against a target NPU"),
    "scan": Verb("npufit.cli.scan", "check a whole model zoo against one or more targets (one row per model x target)"),
    "targets": Verb("npufit.cli.targets", "list targets, or show one target's support matrix"),
    "explain": Verb(
        "npufit.cli.explain", "explain a rule id from a report: what it checks, how to fix it, the evidence behind it"
    ),
    "compare": Verb(
        "npufit.cli.compare", "compare model variants on one target (ops, partitions, NPU %%, Q/DQ overhead)"
    ),
    "fix": Verb("npufit.cli.fix", "rewrite a model so more of it runs on the target NPU (verified numerically)"),
    "split": Verb("npufit.cli.split", "cut a model into NPU and host stages and prove the chain equals the original"),
    "run": Verb("npufit.cli.run", "execute the stage chain of a split plan"),
    "quantize": Verb("npufit.cli.quantize", "INT8 post-training quantization (QDQ) with a per-layer accuracy report"),
    "compile": Verb("npufit.cli.compile", "compile with the real vendor compiler and read back per-node placement"),
    "env": Verb(
        "npufit.cli.env", f"create / list / remove the environments of vendor tools ({', '.join(env_specs())})"
    ),
    "probe": Verb(
        "npufit.cli.probe", "build a support matrix from one tiny model per op (predicted, and measured by a compiler)"
    ),
    "bench": Verb("npufit.cli.bench", "benchmark a model or split plan on several runtimes under one protocol"),
    "pipeline": Verb(
        "npufit.cli.pipeline", "run a declared train/export/check/fix/split/quantize/compile/bench/report pipeline"
    ),
    "report": Verb("npufit.cli.report", "render a pipeline results folder as one self-contained HTML report"),
    "doctor": Verb("npufit.cli.doctor", "show versions and which optional compilers/runtimes are installed"),
}


# verbs that drive many others (or build environments): no time limit unless one is given
UNTIMED = {"pipeline", "probe", "env", "scan"}


class Parser(argparse.ArgumentParser):
    """Usage errors (a bad number, a missing argument) are one line like every other npufit error, exit 2."""

    def error(self, message: str):  # type: ignore[override]
        verb = self.prog.split(" ", 1)[1] if " " in self.prog else ""
        hint = f"'npufit {verb} --help'" if verb else "'npufit --help'"
        self.exit(2, f"npufit: error: {verb + ': ' if verb else ''}{esc_line(message)} (see {hint})\n")


def build_parser(verbs: Collection[str] | None = None) -> argparse.ArgumentParser:
    """The `npufit` parser. `verbs`: the verbs whose options it knows (None: all); every other verb is there with its
    help line only, so a command loads the one verb module it runs (and that module's library), not all sixteen."""
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
    for name, verb in COMMANDS.items():
        if verbs is None or name in verbs:
            importlib.import_module(verb.module).register(sub, verb.help)
        else:
            sub.add_parser(name, help=verb.help)
    return parser


def _verbs_run(argv: list[str]) -> list[str] | None:
    """build_parser's `verbs` for a command line: the verb it names, none (--help, --version), or all (None) where
    the words before the verb are not plain (an abbreviated option): argparse then reads it as before."""
    takes_value = {MEMORY_BUDGET_MB.option, TIME_LIMIT_S.option}
    words = iter(argv)
    for word in words:
        if word in takes_value:
            next(words, None)
        elif word == "--" or not word.startswith("-"):
            return [word] if word in COMMANDS else None
    return []


def main(argv: list[str] | None = None) -> int:
    parser = build_parser(_verbs_run(sys.argv[1:] if argv is None else argv))
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help, --version, or a usage error already printed as one line: a return code
        return int(e.code or 0) if not isinstance(e.code, str) else 2
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
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

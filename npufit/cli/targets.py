"""npufit targets [show NAME] [--write-docs DIR]: the targets and their support matrices."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import NpufitError
from ..report.console import console_to_string
from ..report.targets_doc import render_profile_markdown
from ..targets import available_targets, get_profile
from ..vocab import FORMAT, TARGETS_FORMATS
from .common import emit


def register(sub, help: str) -> None:
    p = sub.add_parser(
        "targets",
        help=help,
        description="List the NPU targets npufit knows, show one target's support matrix "
        "(rendered from its profile), or regenerate docs/targets/*.md.",
    )
    p.add_argument("action", nargs="?", choices=("list", "show"), default="list")
    p.add_argument("name", nargs="?", help="target name for 'show'")
    p.add_argument("--format", "-f", choices=TARGETS_FORMATS, default=FORMAT)
    p.add_argument("--output", "-o", metavar="FILE", help="write to FILE instead of stdout")
    p.add_argument(
        "--write-docs", metavar="DIR", help="write DIR/<target>.md for every target (what docs/targets/ holds)"
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.write_docs:
        for name in available_targets():
            emit(render_profile_markdown(get_profile(name)), str(Path(args.write_docs) / f"{name}.md"))
        return 0
    if args.action == "show":
        if not args.name:
            raise NpufitError("'npufit targets show' needs a target name (see 'npufit targets')")
        prof = get_profile(args.name)
        if args.format == "markdown" or args.output:
            emit(render_profile_markdown(prof), args.output)
        else:
            from rich.markdown import Markdown

            emit(console_to_string(lambda con: con.print(Markdown(render_profile_markdown(prof))), width=160), None)
        return 0
    from rich.table import Table

    def table(con):
        t = Table(title="npufit targets", title_justify="left")
        for col in ("target", "title", "input formats", "CPU fallback", "ops", "rules"):
            t.add_column(col)
        for name in available_targets():
            pr = get_profile(name)
            t.add_row(name, pr.title, pr.formats_text, pr.fallback.value, str(len(pr.ops)), str(len(pr.rules())))
        con.print(t)

    emit(console_to_string(table), args.output)
    return 0

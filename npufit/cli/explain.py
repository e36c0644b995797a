"""npufit explain RULE_ID: what a rule in a report means, how to fix it, and the evidence behind it."""

from __future__ import annotations

import argparse

from ..check.explain import explain
from .common import add_format_option, emit, name_arg


def register(sub, help: str) -> None:
    p = sub.add_parser(
        "explain",
        help=help,
        description="Explain the rule RULE_ID (printed in brackets beside every reason of a report, e.g. "
        "hailo8.shuffle.rank3): its sentence, the limits it reads, its fix hints, and the evidence and sources "
        "behind it, in plain words.",
    )
    p.add_argument("rule_id", type=name_arg, metavar="RULE_ID", help="e.g. hailo8.shuffle.rank3 or rk3588.op.TopK")
    add_format_option(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:

    emit(explain(args.rule_id).render(args.format), args.output)
    return 0

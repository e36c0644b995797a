"""npufit doctor: versions, and which optional compilers/runtimes are present and what they enable."""

from __future__ import annotations

import argparse
import json

from ..doctor import diagnose
from ..report.console import console_to_string
from ..vocab import FORMAT, STATUS_FORMATS
from .common import emit


def register(sub, help: str) -> None:
    p = sub.add_parser(
        "doctor",
        help=help,
        description="Versions of Python, onnx, onnxruntime, torch; which optional compilers and runtimes "
        "(Vela, RKNN-Toolkit2 env, Hailo DFC/HailoRT, OpenVINO, TensorRT, CUDA) are present, "
        "what each enables, and the exact install step for the missing ones.",
    )
    p.add_argument("--format", "-f", choices=STATUS_FORMATS, default=FORMAT)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    rep = diagnose()
    if args.format == "json":
        emit(json.dumps(rep.to_dict(), indent=2), None)
        return 0
    from rich.table import Table
    from rich.text import Text

    def render(con):
        for title, items in (("core", rep.core), ("compilers", rep.compilers), ("runtimes", rep.runtimes)):
            t = Table(title=title, title_justify="left")
            for col in ("component", "state", "version", "enables", "install / detail"):
                t.add_column(col, overflow="fold")
            for c in items:
                state = Text("ok", style="green") if c.available else Text("missing", style="yellow")
                # plain text: an install step such as pip install 'npufit[torch]' is not rich markup
                cells = [Text(v or "") for v in (c.name, c.version, c.enables, c.install or c.detail)]
                t.add_row(cells[0], state, *cells[1:])
            con.print(t)

    emit(console_to_string(render, width=140), None)
    return 0

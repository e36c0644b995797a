"""Render with rich into a string: colour on a terminal, plain fixed-width text otherwise."""

from __future__ import annotations

import io
import sys
from collections.abc import Callable

from rich.console import Console
from rich.segment import Segment

from ..util.jsonutil import dumps
from ..util.term import esc


class SafeConsole(Console):
    """A rich Console whose text (node and file names included) cannot carry terminal control codes;
    only the styles rich itself adds become escape sequences."""

    def render(self, renderable, options=None):
        for seg in super().render(renderable, options):
            yield seg if seg.control or not seg.text else Segment(esc(seg.text), seg.style, seg.control)


def console_to_string(render: Callable[[Console], None], width: int = 120) -> str:
    buf = io.StringIO()
    tty = sys.stdout.isatty()
    con = SafeConsole(file=buf, force_terminal=tty, width=width if not tty else None, no_color=not tty, highlight=False)
    render(con)
    return buf.getvalue()


class Renderable:
    """Mixin for result objects: `to_dict()`, `_markdown()` and `_print(console)` (or `_text()`) give `render(fmt)`."""

    def to_json(self, indent: int | None = 2) -> str:
        return dumps(self.to_dict(), indent)  # type: ignore[attr-defined]

    def render(self, fmt: str = "table") -> str:
        if fmt == "json":
            return self.to_json()
        if fmt == "markdown":
            return self._markdown()  # type: ignore[attr-defined]
        return self._text()

    def _text(self) -> str:
        return console_to_string(self._print)  # type: ignore[attr-defined]

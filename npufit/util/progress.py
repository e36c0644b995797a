"""One progress-bar style for every long loop (calibration, probe cases, bench iterations)."""
from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")


def progress_enabled() -> bool:
    return sys.stderr.isatty() and not os.environ.get("NPUFIT_NO_PROGRESS")


def track(items: Iterable[T], description: str, total: int | None = None) -> Iterator[T]:
    """Iterate with a rich progress bar on stderr when it is a terminal; silently otherwise."""
    if not progress_enabled():
        yield from items
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.console import Console

    from .term import esc_line, raw_stream

    description = esc_line(description)

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=Console(file=raw_stream(sys.stderr)), transient=True) as prog:
        yield from prog.track(items, total=total, description=description)

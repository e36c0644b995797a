"""One progress style for every long step: a bar with ETA for loops (calibration, probe cases, bench iterations,
training epochs, targets), a spinner with elapsed time for one long call (a vendor compiler, an env install). Shown
only on a terminal; `npufit --quiet` or NPUFIT_NO_PROGRESS=1 turn it off."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")


def progress_enabled() -> bool:
    return sys.stderr.isatty() and not os.environ.get("NPUFIT_NO_PROGRESS")


def track(items: Iterable[T], description: str, total: int | None = None) -> Iterator[T]:
    """Iterate with a rich progress bar on stderr when it is a terminal; silently otherwise."""
    if not progress_enabled():
        yield from items
        return
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    with _progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
    ) as prog:
        yield from prog.track(items, total=total, description=_esc(description))


@contextmanager
def working(description: str) -> Iterator[None]:
    """A spinner with the elapsed time while one long call runs (no total to measure an ETA against)."""
    if not progress_enabled():
        yield
        return
    from rich.progress import SpinnerColumn, TextColumn, TimeElapsedColumn

    with _progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn()) as prog:
        prog.add_task(_esc(description), total=None)
        yield


def _esc(text: str) -> str:
    from .term import esc_line

    return esc_line(text)


def _progress(*columns):
    from rich.console import Console
    from rich.progress import Progress

    from .term import raw_stream

    return Progress(*columns, console=Console(file=raw_stream(sys.stderr)), transient=True)

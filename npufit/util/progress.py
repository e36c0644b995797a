"""One progress style for every long step: a bar with ETA for loops (calibration, probe cases, bench iterations,
training epochs, targets, rewrite rules), a spinner with elapsed time for one long call (a vendor compiler, an env
install). Shown only on a terminal; `npufit --quiet` or NPUFIT_NO_PROGRESS=1 turn it off. The step under way is
known either way (`current_step`): a verb stopped at its time limit says where it was."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from .term import esc_line, raw_stream

T = TypeVar("T")


def progress_enabled() -> bool:
    return sys.stderr.isatty() and not os.environ.get("NPUFIT_NO_PROGRESS")


_STEPS: list[str] = []  # descriptions of the steps under way, innermost last


def current_step() -> str | None:
    return _STEPS[-1] if _STEPS else None


@contextmanager
def _step(description: str) -> Iterator[None]:
    depth = len(_STEPS)
    _STEPS.append(description)
    try:
        yield
    finally:
        del _STEPS[depth:]


def track(items: Iterable[T], description: str, total: int | None = None) -> Iterator[T]:
    """Iterate with a rich progress bar on stderr when it is a terminal; silently otherwise."""
    with _step(description):
        yield from _track(items, description, total)


def _track(items: Iterable[T], description: str, total: int | None) -> Iterator[T]:
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
def working(description: str) -> Iterator[Callable[[str], None]]:
    """A spinner with the elapsed time while one long call runs (no total to measure an ETA against). Yields a
    function that changes the text, for a call that reports its own phases (a callback, a data reader)."""
    with _step(description):
        index = len(_STEPS) - 1

        def say(text: str) -> None:
            if index < len(_STEPS):
                _STEPS[index] = text

        if not progress_enabled():
            yield say
            return
        from rich.progress import SpinnerColumn, TextColumn, TimeElapsedColumn

        with _progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn()) as prog:
            task = prog.add_task(_esc(description), total=None)

            def show(text: str) -> None:
                say(text)
                prog.update(task, description=_esc(text))

            yield show


def _esc(text: str) -> str:
    return esc_line(text)


def _progress(*columns):
    from rich.console import Console
    from rich.progress import Progress

    return Progress(*columns, console=Console(file=raw_stream(sys.stderr)), transient=True)

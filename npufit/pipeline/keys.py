"""A key the pipeline YAML may hold (a checker, a default, a doc line) and the checkers keys are built from.

Its own module, free of yaml, so that the step records (stepdefs.py) declare their settings where the CLI can read
the step names cheaply; schema.py validates a file against them.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, Callable

from ..errors import NpufitError
from ..util.shapes import parse_input_shapes
from ..vocab import MEASURE_JUDGES, MEASURE_MODES

Checker = Callable[[Any], "str | None"]  # value -> what was expected, or None when the value is fine
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")  # used in folder names


@dataclass(frozen=True)
class Key:
    """One allowed key: a checker (value -> error text or None), a default and the doc line."""

    check: Checker
    default: Any = None
    doc: str = ""
    required: bool = False


def integer(lo: int = 0) -> Checker:
    return lambda v: (
        None if isinstance(v, int) and not isinstance(v, bool) and v >= lo else f"expected an integer >= {lo}"
    )


def number(lo: float = 0.0, hi: float | None = None) -> Checker:
    def chk(v):
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) and v >= lo and (hi is None or v <= hi)
        return None if ok else f"expected a number in [{lo}, {hi if hi is not None else 'inf'}]"

    return chk


def text(v) -> str | None:
    return None if isinstance(v, str) and v.strip() else "expected a non-empty string"


def name(v) -> str | None:
    return None if isinstance(v, str) and NAME_RE.match(v) else "expected a name of letters, digits, '_', '.' or '-'"


def inside_name(v) -> str | None:
    """A file name inside the results folder: relative, no '..' (nothing is written outside the folder)."""
    if not isinstance(v, str) or not v.strip() or "\x00" in v:
        return "expected a file name"
    parts = v.replace("\\", "/").split("/")
    if v.startswith(("/", "~")) or re.match(r"^[A-Za-z]:", v) or ".." in parts or v.endswith("/"):
        return "expected a file name inside the results folder (no absolute path, no '..')"
    return None


def boolean(v) -> str | None:
    return None if isinstance(v, bool) else "expected true or false"


def choice(opts: Collection[str]) -> Checker:
    return lambda v: None if v in opts else f"expected one of {', '.join(opts)}"


def measure(v) -> str | None:
    """check's placement as a setting: a mode (auto: the compiler where it runs here; never: the prediction;
    required), true / false (auto / never), or a judge by name (required)."""
    names = tuple(dict.fromkeys((*MEASURE_MODES, *MEASURE_JUDGES)))
    ok = isinstance(v, bool) or v in names
    return None if ok else f"expected false, true, {', '.join(names[:-1])} or {names[-1]}"


def str_list(v) -> str | None:
    ok = isinstance(v, list) and all(isinstance(s, str) and s.strip() for s in v)
    return None if ok else "expected a list of strings"


def mapping(v) -> str | None:
    return None if isinstance(v, dict) else "expected a mapping of option: value"


def each_in(v: list, allowed) -> str | None:
    bad = [s for s in v if s not in allowed]
    return f"unknown runtime(s) {', '.join(bad)}; expected some of {', '.join(allowed)}" if bad else None


def bounded(check: Checker, most: int, what: str) -> Checker:
    """`check`, then at most `most` entries, none repeated (a repeat would only run the same steps again)."""

    def chk(v):
        err = check(v)
        if err:
            return err
        if len(v) > most:
            return f"expected at most {most} {what}, got {len(v)}"
        keys = [str(x).lower() for x in v]
        dup = next((x for i, x in enumerate(v) if keys.index(str(x).lower()) != i), None)
        return f"'{dup}' is listed twice" if dup is not None else None

    return chk


def input_shapes(v) -> str | None:
    """A model's input shapes, in any form util.shapes.parse_input_shapes reads (one parser for CLI, library, YAML)."""
    try:
        parse_input_shapes(v)
    except NpufitError as e:
        return f"expected input shapes such as {{images: [1, 3, 640, 640]}} or 'images=1,3,640,640' ({e.message})"
    return None

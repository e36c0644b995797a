"""Commands npufit prints for a user to run next: built one way, so that each runs as pasted.

A printed command names the model as the user gave it (a path from their working folder), the same target, input
shapes and judge, and an output where the verb needs one (tests/test_hints_run.py runs each one)."""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path

from .shapes import flags


def npufit_command(
    verb: str, model: str | os.PathLike, *args, shapes: Mapping[str, Sequence[int]] | None = None
) -> str:
    """`npufit VERB MODEL ARGS... --input-shape ...`, shell-quoted."""
    return shlex.join(["npufit", verb, str(model), *(str(a) for a in args), *flags(shapes or {})])


def output_folder(model: str | os.PathLike, what: str) -> str:
    """Where a suggested command writes: beside the model, named after it (yolo.onnx -> yolo_split)."""
    p = Path(model)
    return str(p.with_name(f"{p.stem}_{what}"))


def output_file(model: str | os.PathLike, what: str) -> str:
    """A suggested output file beside the model (yolo.onnx -> yolo_fixed.onnx)."""
    p = Path(model)
    return str(p.with_name(f"{p.stem}_{what}{p.suffix or '.onnx'}"))


def fix_command(model: str | os.PathLike, target: str, rules: Sequence[str], shapes=None) -> str:
    """The `npufit fix` a report suggests for its failing nodes: the same model, target and input shapes, the rules
    that apply, and an output file beside the model."""
    return npufit_command(
        "fix", model, "--target", target, "--rules", ",".join(rules), "-o", output_file(model, "fixed"), shapes=shapes
    )

"""One dynamic-shape policy for every verb: how input shapes are given, and what a verb does with a dynamic input.

Given: `--input-shape NAME=D0,D1,...` on the command line, `input_shapes=` in the library, as a mapping
(`{"images": (1, 3, 640, 640)}` or `{"images": "1,3,640,640"}`), a string (`"images=1,3,640,640"`, several
separated by `;` or spaces) or a list of such strings: `parse_input_shapes` reads them all, the CLI included.

Policy (`resolve`), the same for check, fix, split, run, bench, scan, quantize, compile, compare and pipelines:
- an input given a shape is pinned to it, and a model a verb writes carries the pinned shape;
- an input whose only dynamic dim is the first (a batch) of a rank >= 2 tensor is pinned to batch 1, with a
  one-line note;
- any other unknown dim (height, width, sequence length, an unknown rank) is asked for: no verdict percentage, MAC
  figure or ONNX Runtime run rests on a guess. `ShapeNeeded` names the input and an example shape to give, which
  the CLI turns into the user's own command with the flag added.

Pure Python: the CLI's parser imports it before any numpy or onnx.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..errors import NpufitError

MAX_DIM = 2**31 - 1  # far above any real input; bigger ones only overflow sizes downstream
MAX_RANK = 16
EXAMPLE_SIDE = 640  # an unknown height or width: the size detectors are exported at most often
EXAMPLE_LENGTH = 128  # any other unknown dim (a sequence length, a feature count)
_DIMS = re.compile(r"^[0-9]+(?:[,x][0-9]+)*$")

Shapes = dict[str, tuple[int, ...]]


def parse_input_shapes(value) -> Shapes:
    """Input shapes in any accepted form -> {name: dims}; a bad one is one clear error (exit 2 at the CLI)."""
    if value is None:
        return {}
    if isinstance(value, str):
        items: list = [s for s in re.split(r"[;\s]+", value.strip()) if s]
    elif isinstance(value, Mapping):
        return {_name(k): _dims(k, v) for k, v in value.items()}
    elif isinstance(value, Sequence):
        items = list(value)
    else:
        raise NpufitError(
            f"input shapes: expected a mapping {{name: dims}} or 'NAME=D0,D1,...' text, not {type(value).__name__}"
        )
    out: Shapes = {}
    for item in items:
        if not isinstance(item, str):
            raise NpufitError(f"input shape {item!r}: expected 'NAME=D0,D1,...' (e.g. images=1,3,640,640)")
        name, sep, dims = item.strip().rpartition("=")
        if not sep or not name:
            raise NpufitError(f"input shape '{item}': expected NAME=D0,D1,... (e.g. images=1,3,640,640)")
        out[_name(name)] = _dims(name, dims)
    return out


def _name(name) -> str:
    if not isinstance(name, str) or not name or any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise NpufitError(f"input shape: {name!r} is not an input name")
    return name


def _dims(name: str, dims) -> tuple[int, ...]:
    bad = NpufitError(
        f"input shape '{name}': expected dimensions D0,D1,... each in [1, {MAX_DIM}] (e.g. 1,3,640,640), got {dims!r}"
    )
    if isinstance(dims, str):
        text = dims.strip().lower().replace(" ", "")
        if not _DIMS.match(text):
            raise bad
        out = tuple(int(d) for d in re.split(r"[,x]", text))
    elif isinstance(dims, Sequence) and all(isinstance(d, int) and not isinstance(d, bool) for d in dims):
        out = tuple(int(d) for d in dims)
    else:
        try:  # a numpy shape or array of integers
            out = tuple(int(d) for d in dims)
            if any(int(d) != d for d in dims):
                raise ValueError
        except (TypeError, ValueError):
            raise bad from None
    if not out or len(out) > MAX_RANK or not all(1 <= d <= MAX_DIM for d in out):
        raise bad
    return out


def dims_text(dims: Sequence) -> str:
    """1,3,640,640 (the form `--input-shape` takes); an unknown dim shows as its name or '?'."""
    return ",".join("?" if d is None else str(d) for d in dims)


def shape_text(shape: Sequence | None) -> str:
    return "[?]" if shape is None else "[" + dims_text(shape) + "]"


def flag(name: str, dims: Sequence[int]) -> str:
    """The option as it is pasted: --input-shape images=1,3,640,640 (quoted when the name needs it)."""
    import shlex

    return f"--input-shape {shlex.quote(f'{name}={dims_text(dims)}')}"


def flags(shapes) -> list[str]:
    """The arguments of a printed command that pin `shapes` (any form parse_input_shapes reads; argv form)."""
    out: list[str] = []
    for name, dims in parse_input_shapes(shapes).items():
        out += ["--input-shape", f"{name}={dims_text(dims)}"]
    return out


@dataclass(frozen=True)
class NeededShape:
    """An input whose unknown dims a verb needs: its declared shape and an example of a shape to give."""

    name: str
    shape: tuple | None  # as the model declares it (None: no shape at all)
    example: tuple[int, ...]

    def describe(self) -> str:
        what = "has no stored shape" if self.shape is None else f"has unknown dims {shape_text(self.shape)}"
        return f"input '{self.name}' {what}"

    def to_dict(self) -> dict:
        return {
            "input": self.name,
            "shape": None if self.shape is None else list(self.shape),
            "example": list(self.example),
        }


@dataclass
class ShapePolicy:
    """The policy's answer for one model: what to pin, what to say, what to ask for."""

    pinned: Shapes = field(default_factory=dict)  # the user's shapes and the dynamic batches set to 1
    notes: list[str] = field(default_factory=list)  # one line per dynamic batch pinned to 1
    needed: list[NeededShape] = field(default_factory=list)


def _dynamic(d) -> bool:
    return not isinstance(d, int) or d <= 0  # a name, None, or onnx's -1/0 for "unknown" in some exporters


def resolve(
    declared: Mapping[str, tuple | None], given: Mapping[str, tuple[int, ...]] | None = None, side: tuple | None = None
) -> ShapePolicy:
    """Apply the policy to a model's inputs (`declared`: name -> dims, ints for known ones, names or None for
    dynamic ones, or None when the input has no shape). side: (height, width) the model says it was exported at
    (e.g. Ultralytics' `imgsz` metadata), used for the example shape only."""
    given = dict(given or {})
    pol = ShapePolicy(pinned=dict(given))
    for name, shape in declared.items():
        if name in given:
            continue
        if shape is None:
            pol.needed.append(NeededShape(name, None, (1, 3, EXAMPLE_SIDE, EXAMPLE_SIDE)))
            continue
        dyn = [i for i, d in enumerate(shape) if _dynamic(d)]
        if not dyn:
            continue
        if dyn == [0] and len(shape) >= 2:
            pinned = (1, *(int(d) for d in shape[1:]))
            pol.pinned[name] = pinned
            pol.notes.append(
                f"input '{name}': dynamic batch '{shape[0] if shape[0] is not None else '?'}' pinned to 1 "
                f"(--input-shape {name}=N,{dims_text(pinned[1:])} sets another)"
            )
            continue
        pol.needed.append(NeededShape(name, tuple(shape), example_shape(shape, side)))
    return pol


def fitting(declared: Mapping[str, tuple | None], given: Mapping[str, tuple[int, ...]]) -> Shapes:
    """The given shapes that fit a model (one option for many models, as scan takes it): its input of that name,
    of that rank (or of no stored shape), whose fixed dims the shape keeps."""
    out: Shapes = {}
    for name, dims in given.items():
        if name not in declared:
            continue
        shape = declared[name]
        if shape is None or (len(shape) == len(dims) and all(_dynamic(d) or int(d) == w for d, w in zip(shape, dims))):
            out[name] = tuple(dims)
    return out


def example_shape(shape: Sequence, side: tuple | None = None) -> tuple[int, ...]:
    """A shape to suggest for an input with unknown dims: the known dims kept, batch 1, an image's unknown height
    and width EXAMPLE_SIDE (or `side`), channels 3, anything else EXAMPLE_LENGTH."""
    r = len(shape)
    h, w = (tuple(side) + tuple(side))[:2] if side else (EXAMPLE_SIDE, EXAMPLE_SIDE)
    channels_last = r == 4 and not _dynamic(shape[3]) and int(shape[3]) <= 4
    spatial = {1: h, 2: w} if channels_last else {2: h, 3: w}
    out = []
    for i, d in enumerate(shape):
        if not _dynamic(d):
            out.append(int(d))
        elif i == 0 and r >= 2:
            out.append(1)
        elif r == 4 and i in spatial:
            out.append(int(spatial[i]))
        elif r == 4 and i in (1, 3):
            out.append(3)  # the channel axis of an image
        else:
            out.append(EXAMPLE_LENGTH)
    return tuple(out)


def imgsz_hint(metadata: Mapping[str, str]) -> tuple | None:
    """(height, width) from an export's metadata (Ultralytics writes imgsz: '[640, 640]'), else None."""
    text = metadata.get("imgsz") or ""
    nums = [int(n) for n in re.findall(r"\d+", text)][:2]
    return tuple(nums) if nums and all(0 < n <= 16384 for n in nums) else None


class ShapeNeeded(NpufitError):
    """A verb needs input dims the model leaves unknown: which, and an example of the shape to give. The CLI prints
    the user's own command with the `--input-shape` flags added (`cli_message`)."""

    def __init__(self, needed: Sequence[NeededShape], why: str = "the verb runs at one shape"):
        self.needed = list(needed)
        self.why = why
        example = ", ".join(f"{n.name!r}: {tuple(n.example)}" for n in self.needed)
        super().__init__(f"{self._what()}: {why}; give the shape it runs at, e.g. input_shapes={{{example}}}")

    def _what(self) -> str:
        more = f" (and {len(self.needed) - 1} more input(s))" if len(self.needed) > 1 else ""
        return self.needed[0].describe() + more

    @property
    def example_shapes(self) -> Shapes:
        return {n.name: n.example for n in self.needed}

    def cli_message(self, argv: Sequence[str]) -> str:
        """One line for the CLI: which input needs a shape, and the user's own command with the flags added."""
        command = command_with_flags(argv, self.example_shapes)
        return f"{self._what()}: {self.why}; give the shape it runs at, e.g.: {command}"


def command_with_flags(argv: Sequence[str], shapes: Mapping[str, Sequence[int]]) -> str:
    """`npufit ARGV... --input-shape NAME=DIMS ...` as a shell line (an existing --input-shape for a name is
    replaced)."""
    import shlex

    keep: list[str] = []
    skip = False
    for i, a in enumerate(argv):
        if skip:
            skip = False
            continue
        if a == "--input-shape" and i + 1 < len(argv) and argv[i + 1].rpartition("=")[0] in shapes:
            skip = True
            continue
        if a.startswith("--input-shape=") and a[len("--input-shape=") :].rpartition("=")[0] in shapes:
            continue
        keep.append(a)
    return shlex.join(["npufit", *keep, *flags(shapes)])


def needed_lines(needed: Sequence[Mapping]) -> list[str]:
    """The headline of a report whose figures wait for input shapes (from NeededShape.to_dict rows): which input,
    and the exact flag to give."""
    out = []
    for n in needed:
        what = "has no stored shape" if n.get("shape") is None else f"has unknown dims {shape_text(n['shape'])}"
        out.append(
            f"input '{n['input']}' {what}: no coverage or MAC figure without it; give the shape it runs at, "
            f"e.g. {flag(n['input'], n['example'])}"
        )
    return out

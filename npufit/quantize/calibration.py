"""Calibration data: a folder of images, an .npz/.npy set, or seeded random tensors.

A source becomes a lazy `CalibrationSet` (samples are decoded/generated when read, so a large image folder
never sits in memory at once). Each sample is one feed dict {input name: array} for one model run.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import NpufitError
from ..util.limits import within_budget
from ..util.readers import ArrayFile

IMAGE_EXTS = (".jpg", ".jpeg", ".png", ".bmp", ".webp", ".ppm", ".pgm", ".tif", ".tiff")
RANDOM_WARNING = (
    "calibration source is 'random' (seeded N(0,1) noise): scales are fitted to noise, not to your data, "
    "so the accuracy numbers below say little about real inputs; use --calibration DIR or FILE.npz"
)


@dataclass(frozen=True)
class InputSpec:
    """One model input as calibration sees it: name, shape (None = dynamic dim), numpy dtype."""

    name: str
    shape: tuple[int | None, ...]
    dtype: np.dtype


@dataclass
class ImagePreprocessing:
    """How image files become tensors (stated in the report so the numbers can be reproduced)."""

    size: tuple[int, int] | None = None  # (height, width); None = from the model input shape
    mean: tuple[float, ...] = (0.0, 0.0, 0.0)
    std: tuple[float, ...] = (1.0, 1.0, 1.0)
    scale: float = 1.0 / 255.0  # applied to 0..255 pixels before mean/std
    layout: str | None = None  # 'nchw' | 'nhwc'; None = from the model input shape
    bgr: bool = False

    def describe(self, size: tuple[int, int], layout: str, channels: int) -> str:
        color = "grayscale" if channels == 1 else ("BGR" if self.bgr else "RGB")
        return (
            f"resize to {size[0]}x{size[1]} (bilinear, no crop), {color}, x*{self.scale:g}, "
            f"(x-mean)/std with mean={list(self.mean)} std={list(self.std)}, {layout.upper()}"
        )


@dataclass
class CalibrationSet(Sequence):
    """Lazy, indexable samples; `kind` is 'images' | 'npz' | 'npy' | 'random'."""

    kind: str
    source: str
    loader: object = field(repr=False)  # callable(index) -> feed dict
    size: int = 0
    preprocessing: str = ""
    warnings: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self.size))]
        if not -self.size <= i < self.size:
            raise IndexError(i)
        return self.loader(i % self.size)  # type: ignore[operator]

    def describe(self) -> dict:
        d = {"kind": self.kind, "source": self.source, "samples_available": self.size}
        if self.preprocessing:
            d["preprocessing"] = self.preprocessing
        return d


def input_specs(model) -> list[InputSpec]:
    """Graph inputs that are not initializers, with static dims as ints and dynamic ones as None."""
    from onnx import helper

    inits = {t.name for t in model.graph.initializer}
    specs = []
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        dims = tuple(int(d.dim_value) if d.HasField("dim_value") and d.dim_value > 0 else None for d in tt.shape.dim)
        try:
            dt = np.dtype(helper.tensor_dtype_to_np_dtype(tt.elem_type))
        except Exception:
            dt = np.dtype(np.float32)
        specs.append(InputSpec(vi.name, dims, dt))
    return specs


def load_calibration(
    source: str | os.PathLike,
    specs: Sequence[InputSpec],
    *,
    count: int | None = None,
    seed: int = 0,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    image: ImagePreprocessing | None = None,
) -> CalibrationSet:
    """Open a calibration source. `count`: how many samples are used (generated for 'random'; at most this
    many are read from an .npz/.npy)."""
    if not specs:
        raise NpufitError("the model has no inputs to calibrate")
    refuse_huge_samples(specs, input_shapes)
    src = str(source)
    if src == "random":
        return _random_set(specs, count or 1, seed, input_shapes or {})
    p = Path(src)
    if not p.exists():
        raise NpufitError(
            f"--calibration {src}: no such file or folder (give a folder of images, a .npz/.npy file, or 'random')"
        )
    if p.is_dir():
        return _image_set(p, specs, image or ImagePreprocessing())
    suffix = p.suffix.lower()
    if suffix == ".npz":
        return _npz_set(p, specs, count)
    if suffix == ".npy":
        return _npy_set(p, specs, count)
    raise NpufitError(
        f"--calibration {src}: unsupported file type '{suffix}' (expected a folder of images, .npz, .npy or 'random')"
    )


def refuse_huge_samples(specs: Sequence[InputSpec], input_shapes: Mapping[str, Sequence[int]] | None = None) -> None:
    """Every consumer holds at least one sample of every input: a model whose one sample passes the memory budget
    (a 2^40-element or 3 GiB input) is refused before any is made or read."""
    import math

    total, shown = 0, []
    for s in specs:
        dims = (input_shapes or {}).get(s.name) or [d or 1 for d in s.shape]
        total += math.prod(int(d) for d in dims) * s.dtype.itemsize
        shown.append(f"'{s.name}' {list(dims)} {s.dtype}")
    within_budget(f"one sample of input {', '.join(shown)}", total)


# -- random ----------------------------------------------------------------------------------------------
def _random_set(specs, count: int, seed: int, input_shapes) -> CalibrationSet:
    shapes = {}
    for s in specs:
        pinned = input_shapes.get(s.name)
        if pinned is not None:
            shapes[s.name] = tuple(int(d) for d in pinned)
            continue
        dims = list(s.shape)
        if dims and dims[0] is None:
            dims[0] = 1  # a dynamic batch is the one dim we may guess
        if any(d is None for d in dims):
            shown = ",".join("?" if d is None else str(d) for d in s.shape)
            raise NpufitError(
                f"input '{s.name}' has dynamic dims [{shown}]; pass --input-shape {s.name}=... to generate random "
                "samples"
            )
        shapes[s.name] = tuple(dims)

    def load(i: int) -> dict[str, np.ndarray]:
        rng = np.random.default_rng([seed, i])  # per-index stream: sample i is the same however many are drawn
        out = {}
        for s in specs:
            if np.issubdtype(s.dtype, np.floating):
                out[s.name] = rng.standard_normal(shapes[s.name]).astype(s.dtype)
            elif s.dtype == np.bool_:
                out[s.name] = rng.integers(0, 2, shapes[s.name]).astype(bool)
            else:
                out[s.name] = rng.integers(0, 10, shapes[s.name]).astype(s.dtype)
        return out

    return CalibrationSet(
        "random", f"random (seed {seed})", load, count, "N(0,1) floats, ints in [0,10)", [RANDOM_WARNING]
    )


# -- arrays ----------------------------------------------------------------------------------------------
def _split_samples(name: str, arr: np.ndarray, spec: InputSpec, where: str) -> list[np.ndarray] | np.ndarray:
    """An array holds N samples either as [N, *input_shape] or stacked along the batch axis."""
    rank = len(spec.shape)
    if arr.ndim == rank + 1:
        samples = arr
    elif arr.ndim == rank and rank > 0:
        batch = spec.shape[0] or 1
        if arr.shape[0] % batch:
            raise NpufitError(
                f"{where}: array '{name}' has {arr.shape[0]} rows, not a multiple of the model batch {batch}"
            )
        samples = arr.reshape((arr.shape[0] // batch, batch) + arr.shape[1:])
    else:
        raise NpufitError(
            f"{where}: array '{name}' has shape {list(arr.shape)}; input '{spec.name}' needs rank {rank} "
            f"(one sample) or {rank + 1} ([N, ...] samples)"
        )
    for want, got in zip(spec.shape, samples.shape[1:]):
        if want is not None and want != got:
            shown = ",".join("?" if d is None else str(d) for d in spec.shape)
            raise NpufitError(
                f"{where}: samples of '{name}' have shape {list(samples.shape[1:])}, input '{spec.name}' is [{shown}]"
            )
    return samples


def _array_set(kind: str, path: Path, arrays: Mapping[str, np.ndarray], specs) -> CalibrationSet:
    where = f"--calibration {path}"
    if len(specs) == 1 and len(arrays) == 1 and specs[0].name not in arrays:
        arrays = {specs[0].name: next(iter(arrays.values()))}  # one input, one array: names need not match
    missing = [s.name for s in specs if s.name not in arrays]
    if missing:
        raise NpufitError(
            f"{where}: no array for input(s) {', '.join(missing)} (arrays: {', '.join(arrays) or 'none'})"
        )
    per_input = {s.name: _split_samples(s.name, np.asarray(arrays[s.name]), s, where) for s in specs}
    counts = {n: len(v) for n, v in per_input.items()}
    if len(set(counts.values())) != 1:
        raise NpufitError(f"{where}: inputs have different sample counts {counts}")
    dtypes = {s.name: s.dtype for s in specs}

    def load(i: int) -> dict[str, np.ndarray]:
        return {n: np.ascontiguousarray(v[i], dtype=dtypes[n]) for n, v in per_input.items()}

    return CalibrationSet(kind, str(path), load, next(iter(counts.values())), "as stored (no preprocessing)")


SCAN_MAX_BYTES = 1 << 30  # a stored set is sampled over at most this much of it (a zip bomb is not decompressed whole)


def spread(available: int, count: int) -> list[int]:
    """`count` indices evenly spaced over range(available), first and last included.

    Why not the first `count`: a set stored in time (or class) order would calibrate on one corner of the data,
    and values outside that corner saturate.
    """
    if count >= available:
        return list(range(available))
    if count == 1:
        return [0]
    return sorted({round(i * (available - 1) / (count - 1)) for i in range(count)})


def _read_arrays(path: Path, specs, count: int | None, single: bool) -> dict[str, np.ndarray]:
    """The arrays of an .npz/.npy; with `count`, only that many samples, spread evenly over the file (never its
    first `count`: see `spread`), read entry by entry within a byte budget (util/readers.ArrayFile; never
    unpickled), so a file that declares or decompresses to gigabytes costs only what is used."""
    by_rank = {s.name: s for s in specs}
    with ArrayFile(path, "--calibration") as f:
        if single and len(list(f)) != 1:
            raise NpufitError(f"--calibration {path}: holds {len(list(f))} arrays")
        out = {}
        for name in f:
            spec = by_rank.get(name) or (specs[0] if len(specs) == 1 else None)
            shape = f.shape(name)
            if count is None or spec is None or not shape or not spec.shape:
                out["" if single else name] = f.read(name)
                continue
            # [N, *input] holds one sample per entry; [N*batch, ...] stacks `batch` entries per sample
            per = 1 if len(shape) == len(spec.shape) + 1 else (spec.shape[0] or 1)
            row_bytes = max(1, int(np.prod(shape[1:], dtype=np.int64)) * f.headers[name][1].itemsize)
            available = min(shape[0] // per, max(count, SCAN_MAX_BYTES // (row_bytes * per)))
            picks = spread(available, count)
            rows = [s * per + r for s in picks for r in range(per)]
            out["" if single else name] = f.read_rows(name, rows)
        return out


def _npz_set(path: Path, specs, count: int | None = None) -> CalibrationSet:
    return _array_set("npz", path, _read_arrays(path, specs, count, single=False), specs)


def _npy_set(path: Path, specs, count: int | None = None) -> CalibrationSet:
    if len(specs) != 1:
        raise NpufitError(
            f"--calibration {path}: a .npy holds one array but the model has {len(specs)} inputs; use a .npz keyed by "
            "input name"
        )
    return _array_set("npy", path, {specs[0].name: _read_arrays(path, specs, count, single=True)[""]}, specs)


# -- images ----------------------------------------------------------------------------------------------
def _image_layout(spec: InputSpec, pre: ImagePreprocessing) -> tuple[str, int, tuple[int | None, int | None]]:
    shape = spec.shape
    if len(shape) != 4:
        raise NpufitError(f"image calibration needs a 4-D image input; '{spec.name}' has rank {len(shape)}")
    layout = pre.layout
    if layout is None:
        if shape[1] in (1, 3):
            layout = "nchw"
        elif shape[3] in (1, 3):
            layout = "nhwc"
        else:
            raise NpufitError(f"cannot tell the layout of input '{spec.name}'; pass --layout nchw or nhwc")
    ch = shape[1] if layout == "nchw" else shape[3]
    hw = (shape[2], shape[3]) if layout == "nchw" else (shape[1], shape[2])
    return layout, ch or 3, hw


def _image_set(folder: Path, specs, pre: ImagePreprocessing) -> CalibrationSet:
    if len(specs) != 1:
        raise NpufitError(
            f"--calibration {folder}: image folders feed single-input models; this one has {len(specs)} inputs (use "
            ".npz)"
        )
    try:
        from PIL import Image
    except ImportError:
        raise NpufitError("reading calibration images needs Pillow: pip install 'pillow>=10'") from None
    files = sorted(f for f in folder.rglob("*") if f.is_file() and f.suffix.lower() in IMAGE_EXTS)
    if not files:
        raise NpufitError(f"--calibration {folder}: no image files ({', '.join(IMAGE_EXTS)}) in the folder")
    spec = specs[0]
    layout, channels, hw = _image_layout(spec, pre)
    size = pre.size or (hw if None not in hw else None)
    if size is None:
        raise NpufitError(f"input '{spec.name}' has dynamic height/width; pass --image-size H,W")
    for what, vals in (("--mean", pre.mean), ("--std", pre.std)):
        if len(vals) not in (1, channels):
            raise NpufitError(f"{what} has {len(vals)} values; the input has {channels} channels")
    if any(s == 0 for s in pre.std):
        raise NpufitError("--std values must be non-zero")
    mean = np.asarray(pre.mean, np.float32).reshape(1, 1, -1)
    std = np.asarray(pre.std, np.float32).reshape(1, 1, -1)
    batch = spec.shape[0] or 1

    def one(path: Path) -> np.ndarray:
        try:
            with Image.open(path) as im:  # reads the header only: the size is known before any pixel is decoded
                within_budget(f"calibration image {path} ({im.size[0]}x{im.size[1]} {im.mode}) decoded", _decoded(im))
                im = im.convert("L" if channels == 1 else "RGB").resize((size[1], size[0]), Image.BILINEAR)
                x = np.asarray(im, dtype=np.float32)
        except NpufitError:
            raise
        except Exception as e:
            raise NpufitError(f"cannot decode calibration image {path} ({type(e).__name__})") from None
        x = x[:, :, None] if x.ndim == 2 else x
        if pre.bgr and channels == 3:
            x = x[:, :, ::-1]
        x = (x * pre.scale - mean) / std
        return x.transpose(2, 0, 1) if layout == "nchw" else x

    def load(i: int) -> dict[str, np.ndarray]:
        imgs = [one(files[(i * batch + k) % len(files)]) for k in range(batch)]
        return {spec.name: np.stack(imgs).astype(spec.dtype)}

    n = max(1, len(files) // batch)
    return CalibrationSet("images", str(folder), load, n, pre.describe(size, layout, channels))


def _decoded(im) -> int:
    """Bytes an image takes decoded and converted to 8-bit RGB: a PNG of a few hundred KB can decode to gigabytes."""
    width, height = im.size
    per_band = 4 if im.mode in ("I", "F") else 2 if im.mode.startswith("I;16") else 1
    return width * height * (len(im.getbands()) * per_band + 3)

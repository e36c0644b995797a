"""The input pool a benchmark feeds: seeded random samples, or samples from an .npz file.

Fresh inputs mean a pool of distinct samples prepared before timing and rotated each iteration (generating
data inside the clock would time the generator); reused inputs mean one sample for every iteration.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..errors import NpufitError
from ..runtimes.base import InputSpec, concrete_shape
from ..util.limits import memory_budget, size_text
from ..util.readers import ArrayFile
from ..verify.compare import _ORT_TO_NP, random_inputs

DEFAULT_POOL = 16
POOL_SHARE = 4  # a fresh-input pool takes at most a quarter of the memory budget: the runs need the rest


class _Specs:
    """Adapter so verify.compare.random_inputs (written for an ORT session) draws feeds for any runtime."""

    def __init__(self, specs: list[InputSpec]):
        self._specs = specs

    def get_inputs(self):
        return self._specs


def sample_bytes(specs: list[InputSpec], batch: int | None, shapes=None) -> int:
    total = 0
    for s in specs:
        total += int(np.prod(concrete_shape(s, batch, shapes))) * np.dtype(_ORT_TO_NP.get(s.type, np.float32)).itemsize
    return total


def input_pool(
    specs: list[InputSpec],
    batch: int | None = None,
    fresh: bool = False,
    pool: int | None = None,
    npz: str | os.PathLike | None = None,
    seed: int = 0,
    shapes=None,
) -> tuple[list[dict[str, np.ndarray]], str, list[str]]:
    """Return (samples, source description, warnings). shapes: the pinned input shapes (bench's shape policy)."""
    if npz is not None:
        return _from_npz(specs, Path(npz), batch, fresh, pool)
    warnings = []
    size = 1
    if fresh:
        size = pool or DEFAULT_POOL
        per = max(sample_bytes(specs, batch, shapes), 1)
        cap = memory_budget() // POOL_SHARE
        if size * per > cap:
            size = max(2, cap // per)
            warnings.append(
                f"fresh-input pool cut to {size} samples to stay under {size_text(cap)} (a quarter of the memory "
                "budget, --memory-budget)"
            )
    feed = {s.name: concrete_shape(s, batch, shapes) for s in specs}
    samples = random_inputs(_Specs(specs), seed=seed, samples=size, shapes=feed)
    return samples, f"random (seed {seed}; float ~ N(0,1), integers in [0,10))", warnings


def _stacked(shape: tuple[int, ...], specs: list[InputSpec], name: str) -> bool:
    return any(s.name == name and len(shape) == len(s.shape) + 1 for s in specs)


def _from_npz(specs: list[InputSpec], path: Path, batch: int | None, fresh: bool, pool: int | None = None):
    wanted = {s.name for s in specs}
    with ArrayFile(path, "--inputs") as z:  # regular file, header-checked, never unpickled, within budget
        names = list(z)
        # a stack [N, *input] is read only as far as it is used: one sample, --input-pool K, or all (byte budget)
        rows = (pool or None) if fresh else 1
        data = {k: z.read(k, rows) if _stacked(z.shape(k), specs, k) else z.read(k) for k in names if k in wanted}
    missing = [s.name for s in specs if s.name not in data]
    if missing:
        raise NpufitError(
            f"--inputs {path}: no array for model input(s) {', '.join(missing)} "
            f"(the file has {', '.join(sorted(data)) or 'no arrays'})"
        )
    warnings = []
    extra = sorted(set(names) - wanted)
    if extra:
        warnings.append(f"--inputs: arrays not used by the model: {', '.join(extra)}")
    per_input: dict[str, list[np.ndarray]] = {}
    for s in specs:
        arr = data[s.name]
        dtype = _ORT_TO_NP.get(s.type, np.float32)
        # one more axis than the model input: a stack of samples (axis 0), otherwise a single sample
        stack = arr if arr.ndim == len(s.shape) + 1 else arr[None]
        if stack.ndim != len(s.shape) + 1:
            raise NpufitError(
                f"--inputs: '{s.name}' has shape {list(arr.shape)}, the model input has rank {len(s.shape)}"
            )
        for d, (want, got) in enumerate(zip(s.shape, stack.shape[1:])):
            if want is not None and want != got:
                raise NpufitError(f"--inputs: '{s.name}' dimension {d} is {got}, the model needs {want}")
        if batch is not None and stack.shape[1] != batch:
            raise NpufitError(f"--inputs: '{s.name}' has batch {stack.shape[1]} but --batch is {batch}")
        per_input[s.name] = [np.ascontiguousarray(x, dtype=dtype) for x in stack]
    counts = {len(v) for v in per_input.values()}
    if len(counts) != 1:
        raise NpufitError("--inputs: every input needs the same number of samples")
    n = counts.pop()
    if not fresh:
        n = 1
    samples = [{name: per_input[name][i] for name in per_input} for i in range(n)]
    return samples, f"{path.name} ({n} sample{'s' if n != 1 else ''})", warnings

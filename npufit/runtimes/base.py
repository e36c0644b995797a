"""The runner protocol every runtime implements: activate -> prepare(feeds) -> call -> deactivate.

A runner turns one set of host feeds into a zero-argument callable (`prepare`) so the benchmark loop times
exactly one call and nothing else; whatever that call includes (host<->device copies, GPU synchronisation,
a whole split chain) is the runner's stated *boundary*.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..errors import NpufitError
from ..graph.onnx_prepare import read_onnx
from ..quantize.calibration import input_specs
from ..util.shapes import NeededShape, ShapeNeeded, example_shape

# What the timed call includes. Every result names one of these, so numbers from different tools can be judged.
BOUNDARY_HOST = "host-to-host"
BOUNDARY_DEVICE = "compute-only"
BOUNDARY_CHAIN = "end-to-end-chain"
BOUNDARY_TEXT = {
    BOUNDARY_HOST: "inputs start in host memory and outputs end in host memory; any host<->device copies and the "
    "device synchronisation are inside the clock (for CPU runtimes there are no copies)",
    BOUNDARY_DEVICE: "inputs and outputs stay in device memory (bound once, before timing); only the execution and "
    "the device synchronisation are inside the clock",
    BOUNDARY_CHAIN: "the whole split plan: every stage (NPU and host), the tensors handed between stages and the "
    "host-side glue, from host inputs to host outputs",
}


class RuntimeUnavailable(Exception):
    """This runtime cannot run here (package, driver or device missing, or model format not accepted).

    Not a user error: the benchmark skips the runtime and records `reason`."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class InputSpec:
    """One model input. `shape` uses None for a dynamic dimension; `type` is the ORT-style 'tensor(float)'."""

    name: str
    shape: tuple[int | None, ...]
    type: str = "tensor(float)"


class Runner:
    """Base class. Subclasses set `name`, `boundary`, `formats` (accepted model suffixes) and implement
    `_activate` / `prepare` / `_deactivate`. `activate()` returns nothing; build time is measured by bench."""

    name = "runner"
    title = "runner"
    boundary = BOUNDARY_HOST
    formats: tuple[str, ...] = (".onnx",)
    device_kind = "cpu"  # "cpu" | "gpu" | "npu" | "mixed"

    def __init__(
        self,
        model: str | os.PathLike,
        threads: int | None = None,
        batch: int | None = None,
        boundary: str | None = None,
        options: Mapping[str, Any] | None = None,
    ):
        self.model = Path(model)
        self.threads = threads
        self.batch = batch
        self.options = dict(options or {})
        self.details_note = ""
        if boundary and boundary != self.boundary:
            self._set_boundary(boundary)
        self.active = False
        self.details: dict[str, Any] = {"note": self.details_note} if self.details_note else {}
        # ^ provider list, device name, precision ... recorded in the result

    # -- protocol ------------------------------------------------------------------------------------------
    def check_format(self) -> None:
        suffix = "/" if self.model.is_dir() else self.model.suffix.lower()
        if suffix not in self.formats:
            got = "a folder" if suffix == "/" else f"a '{suffix}' file"
            raise RuntimeUnavailable(f"{self.name} takes {', '.join(self.formats)} models, got {got}")

    def activate(self) -> None:
        self.check_format()
        self._activate()
        self.active = True

    def deactivate(self) -> None:
        if self.active:
            self._deactivate()
            self.active = False

    def input_specs(self) -> list[InputSpec]:
        raise NotImplementedError

    def prepare(self, feeds: Mapping[str, np.ndarray]) -> Callable[[], Any]:
        """Return fn() that runs one inference on `feeds` within this runner's boundary (synchronised)."""
        raise NotImplementedError

    def infer(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """One inference returning host outputs by name (used for checks, not in the timed loop)."""
        raise NotImplementedError

    def version(self) -> str | None:
        return None

    def stage_times(self) -> list[tuple[str, float]] | None:
        """Per-stage seconds of the last call (chain runners only)."""
        return None

    # -- hooks -----------------------------------------------------------------------------------------------
    def _activate(self) -> None:
        raise NotImplementedError

    def _deactivate(self) -> None:
        pass

    def _set_boundary(self, boundary: str) -> None:
        if self.device_kind == "cpu" and self.boundary == BOUNDARY_HOST and boundary == BOUNDARY_DEVICE:
            # host memory is the device memory: compute-only and host-to-host are the same measurement
            self.details_note = "CPU runtime: no host<->device copies exist, so compute-only equals host-to-host"
            return
        raise RuntimeUnavailable(f"{self.name} measures only the '{self.boundary}' boundary, not '{boundary}'")

    def __enter__(self):
        self.activate()
        return self

    def __exit__(self, *exc):
        self.deactivate()


def onnx_input_specs(path: str | os.PathLike) -> list[InputSpec]:
    """Graph inputs (initializers excluded) of an ONNX file, without reading external weights."""
    return [InputSpec(s.name, s.shape, _ort_type(s.dtype.name)) for s in input_specs(read_onnx(path).model)]


_NP_TO_ORT = {"float32": "float", "float64": "double", "bool": "bool"}


def _ort_type(np_name: str) -> str:
    return f"tensor({_NP_TO_ORT.get(np_name, np_name)})"


def concrete_shape(spec: InputSpec, batch: int | None, shapes: Mapping[str, Sequence[int]] | None = None):
    """The shape an input is fed at: its pinned shape (`--input-shape`, bench's shape policy), else dim 0 from
    --batch (default 1) with the other dims known; a static batch that differs is an error, and any other unknown
    dim is asked for (util.shapes: no benchmark runs at a guessed size)."""
    if shapes and spec.name in shapes:
        return tuple(int(d) for d in shapes[spec.name])
    shape = list(spec.shape)
    if batch is not None and shape:
        if shape[0] is not None and shape[0] != batch:
            raise NpufitError(
                f"input '{spec.name}' has a static batch of {shape[0]}; --batch {batch} needs a model "
                f"exported with a dynamic first dimension"
            )
        shape[0] = batch
    elif shape and shape[0] is None and len(shape) >= 2:
        shape[0] = 1
    if any(d is None for d in shape):
        raise ShapeNeeded(
            [NeededShape(spec.name, tuple(spec.shape), example_shape(spec.shape))], "a benchmark times one input shape"
        )
    return tuple(int(d) for d in shape)


def first_line(e: BaseException, limit: int = 300) -> str:
    s = str(e).strip()
    return (s.splitlines()[0] if s else type(e).__name__)[:limit]

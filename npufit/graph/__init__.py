"""Graph loading: ONNX and TFLite files -> Graph of read-only NodeViews."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from ..errors import BadModelError
from .model import Dim, Graph, NodeView, QuantParams, TensorInfo

__all__ = ["load", "Graph", "NodeView", "TensorInfo", "QuantParams", "Dim", "parse_input_shapes", "model_format"]


def model_format(path: str | os.PathLike) -> str:
    """'tflite' when the file carries the TFLite flatbuffer identifier, else 'onnx'."""
    from ..util.readers import require_regular_file

    p = Path(path)
    require_regular_file(p, "model file (.onnx or .tflite)", BadModelError)  # sniffing a FIFO would block forever
    if p.suffix.lower() == ".tflite":
        return "tflite"
    try:
        with open(p, "rb") as f:
            head = f.read(8)
        if head[4:8] == b"TFL3":
            return "tflite"
    except OSError:
        pass
    return "onnx"


def load(path: str | os.PathLike, input_shapes: Mapping[str, tuple[int, ...]] | None = None) -> Graph:
    """Load a model for checking. Weights in external data are never read."""
    p = Path(path)
    if model_format(p) == "tflite":
        from .tflite_loader import load_tflite

        return load_tflite(p, input_shapes)
    from .onnx_loader import load_onnx

    return load_onnx(p, input_shapes)


def parse_input_shapes(specs: list[str] | None) -> dict[str, tuple[int, ...]]:
    """Parse ['images=1,3,224,224', ...] (the --input-shape option)."""
    out: dict[str, tuple[int, ...]] = {}
    for spec in specs or []:
        name, sep, dims = spec.rpartition("=")
        try:
            if not sep or not name:
                raise ValueError
            out[name] = tuple(int(d) for d in dims.replace("x", ",").split(",") if d.strip())
        except ValueError:
            raise BadModelError(f"--input-shape '{spec}': expected NAME=D0,D1,... (e.g. images=1,3,224,224)") from None
    return out

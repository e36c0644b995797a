"""Graph loading: ONNX and TFLite files -> Graph of read-only NodeViews."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import BadModelError
from ..util.readers import require_regular_file
from ..util.shapes import ShapeNeeded, parse_input_shapes
from .model import Dim, Graph, NodeView, QuantParams, TensorInfo

__all__ = [
    "load",
    "Graph",
    "NodeView",
    "TensorInfo",
    "QuantParams",
    "Dim",
    "parse_input_shapes",
    "model_format",
    "require_shapes",
]


def model_format(path: str | os.PathLike) -> str:
    """'tflite' when the file carries the TFLite flatbuffer identifier, else 'onnx'."""
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


def load(path: str | os.PathLike, input_shapes=None, strict: bool = True) -> Graph:
    """Load a model for checking. Weights in external data are never read. input_shapes: any form
    util.shapes.parse_input_shapes reads; the shape policy pins a dynamic batch and records what else is unknown
    (`graph.shapes_needed`). strict=False leaves out shapes of inputs the model does not have (scan)."""
    p = Path(path)
    input_shapes = parse_input_shapes(input_shapes)
    if model_format(p) == "tflite":
        from .tflite_loader import load_tflite  # lazy: the loaders pull onnx/tflite; npufit.graph.model stays light

        return load_tflite(p, input_shapes, strict)
    from .onnx_loader import load_onnx  # lazy: pulls onnx (see above)

    return load_onnx(p, input_shapes, strict)


def require_shapes(graph: Graph, why: str) -> None:
    """Refuse, in one line naming the input and a shape to give (the CLI adds the user's command), a graph whose
    input dims other than a batch are unknown: `why` says what needs them."""
    if graph.shapes_needed:
        raise ShapeNeeded(graph.shapes_needed, why)

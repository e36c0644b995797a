"""Export a torch module to ONNX with the TorchScript exporter (what the seeds used, opset 11 default)."""

from __future__ import annotations

import io
import os
import warnings
from pathlib import Path
from typing import Sequence

from ..errors import NpufitError
from ..util.io import atomic_write_bytes


def export_onnx(
    module,
    example_inputs,
    path: str | os.PathLike | None = None,
    opset: int = 11,
    input_names: Sequence[str] | None = None,
    output_names: Sequence[str] | None = None,
) -> bytes:
    """Return the ONNX bytes (and write them atomically to `path` if given)."""
    try:
        import torch
    except ImportError:
        raise NpufitError("this needs PyTorch: pip install 'npufit[torch]' (torch==2.13.0)") from None
    if not isinstance(example_inputs, tuple):
        example_inputs = (example_inputs,)
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        module.eval()
        torch.onnx.export(
            module,
            example_inputs,
            buf,
            opset_version=opset,
            dynamo=False,
            input_names=list(input_names) if input_names else None,
            output_names=list(output_names) if output_names else None,
        )
    data = buf.getvalue()
    if path is not None:
        atomic_write_bytes(Path(path), data)
    return data

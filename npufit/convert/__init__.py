"""Model conversion for compilers that do not take ONNX. `tflite_writer.TFLiteBuilder` writes int8 TFLite
flatbuffers (verified against the LiteRT interpreter in tests/test_convert_tflite_writer.py).

ONNX -> fully int8 TFLite (for Vela) is NOT built yet: onnx_to_int8_tflite raises a clear error naming the
converters measured in issue 7 (litert-torch + ai-edge-quantizer: 23/26 models; onnx2tf: 13/26)."""
from __future__ import annotations

from ..errors import NpufitError


def onnx_to_int8_tflite(model, out_path, calibration=None, input_shapes=None):
    raise NpufitError(f"{getattr(model, 'name', model)}: Vela takes a fully int8 .tflite and npufit cannot convert ONNX yet; "
                      "export one with litert-torch + ai-edge-quantizer (from the PyTorch module) and pass that file")

"""Model conversion for compilers that do not take ONNX.

`tflite_writer.TFLiteBuilder` writes TFLite flatbuffers; `onnx_to_tflite.convert` turns a float (or QDQ) ONNX
model into a fully int8 TFLite file for Arm Vela; `verify.verify_tflite` holds a TFLite file against ONNX
Runtime with the LiteRT interpreter. Heavy imports happen inside the functions."""

from __future__ import annotations

from .onnx_to_tflite import convert as _convert
from .onnx_to_tflite import onnx_to_int8_tflite as _conv
from .verify import verify_tflite as _verify


def convert(model, out_path, calibration=None, input_shapes=None, **kw):
    return _convert(model, out_path, calibration=calibration, input_shapes=input_shapes, **kw)


def onnx_to_int8_tflite(model, out_path, calibration=None, input_shapes=None, **kw):
    return _conv(model, out_path, calibration=calibration, input_shapes=input_shapes, **kw)


def verify_tflite(tflite_path, onnx_path, samples=4, **kw):
    return _verify(tflite_path, onnx_path, samples, **kw)


__all__ = ["convert", "onnx_to_int8_tflite", "verify_tflite"]

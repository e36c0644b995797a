"""Small quantized test models: ONNX QDQ single-op graphs, a minimal TFLite flatbuffer writer, the detector variants."""
from __future__ import annotations


import numpy as np
from onnx import TensorProto, helper, numpy_helper

from npufit.convert.tflite_writer import TFLiteBuilder

from .onnx_builders import model, vi

# -- ONNX QDQ ---------------------------------------------------------------------------------------

def _qparams(prefix: str, scale: float = 0.05, zp: int = 0, dtype=np.int8):
    return [numpy_helper.from_array(np.array(scale, np.float32), f"{prefix}_s"), numpy_helper.from_array(np.array(zp, dtype), f"{prefix}_z")]


def qdq_op(op: str, x_shape, y_shape, attrs=None, weight=None, bias=None, extra_inputs=(), out_scale=0.05, out_zp=0, n_inputs=1, opset=13):
    """x -> Q -> DQ -> op(..., DQ(int8 weight)) -> Q -> DQ -> y. The node under test is named 'op'."""
    nodes, inits = [], []
    act_names = []
    for i in range(n_inputs):
        nodes += [helper.make_node("QuantizeLinear", [f"x{i}", "a_s", "a_z"], [f"xq{i}"], name=f"q_in{i}"),
                  helper.make_node("DequantizeLinear", [f"xq{i}", "a_s", "a_z"], [f"xd{i}"], name=f"dq_in{i}")]
        act_names.append(f"xd{i}")
    inits += _qparams("a")
    ins = list(act_names)
    if weight is not None:
        inits += [numpy_helper.from_array(np.clip(np.round(weight * 20), -127, 127).astype(np.int8), "wq")] + _qparams("w")
        nodes.append(helper.make_node("DequantizeLinear", ["wq", "w_s", "w_z"], ["wd"], name="dq_w"))
        ins.append("wd")
    if bias is not None:
        inits.append(numpy_helper.from_array(bias.astype(np.float32), "b"))
        ins.append("b")
    for name, arr in extra_inputs:
        inits.append(numpy_helper.from_array(arr, name))
        ins.append(name)
    nodes.append(helper.make_node(op, ins, ["y0"], name="op", **(attrs or {})))
    inits += _qparams("o", out_scale, out_zp)
    nodes += [helper.make_node("QuantizeLinear", ["y0", "o_s", "o_z"], ["yq"], name="q_out"),
              helper.make_node("DequantizeLinear", ["yq", "o_s", "o_z"], ["y"], name="dq_out")]
    inputs = [vi(f"x{i}", list(x_shape if not isinstance(x_shape[0], (list, tuple)) else x_shape[i])) for i in range(n_inputs)]
    return model(nodes, inputs, [vi("y", list(y_shape))], inits, opset=opset)


def float_op(op: str, x_shape, y_shape, attrs=None, inits=(), n_inputs=1, opset=13, extra=()):
    ins = [f"x{i}" for i in range(n_inputs)] + [t.name for t in inits] + list(extra)
    inputs = [vi(f"x{i}", list(x_shape if not isinstance(x_shape[0], (list, tuple)) else x_shape[i])) for i in range(n_inputs)]
    return model([helper.make_node(op, ins, ["y"], name="op", **(attrs or {}))], inputs, [vi("y", list(y_shape))], list(inits), opset=opset)


# -- TFLite flatbuffers (npufit.convert.tflite_writer) ------------------------------------------------


class TinyTFLite(TFLiteBuilder):
    """The package's TFLite writer with the short argument names these tests use (zp=, build(inputs, outputs))."""

    def tensor(self, name, shape, dtype, data=None, scale=None, zp=None, axis=0):
        return super().tensor(name, shape, dtype, data=data, scale=scale, zero_point=zp, axis=axis)

    def build(self, inputs, outputs) -> bytes:
        self.io(inputs, outputs)
        return super().build()


def int8_conv_leaky(explicit_island: bool = False) -> bytes:
    """int8 CONV_2D -> LEAKY_RELU (int8), or with explicit_island: CONV -> DEQUANTIZE -> LEAKY_RELU(float) -> QUANTIZE."""
    t = TinyTFLite()
    rng = np.random.default_rng(0)
    x = t.tensor("input", (1, 16, 16, 8), "int8", scale=0.02, zp=-3)
    w = t.tensor("conv/w", (16, 3, 3, 8), "int8", data=rng.integers(-60, 60, (16, 3, 3, 8), dtype=np.int8), scale=[0.01] * 16, zp=[0] * 16, axis=0)
    bias = t.tensor("conv/b", (16,), "int32", data=np.zeros(16, np.int32), scale=[0.0002] * 16, zp=[0] * 16)
    c = t.tensor("conv/out", (1, 16, 16, 16), "int8", scale=0.05, zp=2)
    t.op("CONV_2D", [x, w, bias], [c], "Conv2DOptions", padding=0, stride_w=1, stride_h=1, dilation_w_factor=1, dilation_h_factor=1)
    y = t.tensor("act/out", (1, 16, 16, 16), "int8", scale=0.03, zp=-100)
    if explicit_island:
        f = t.tensor("deq/out", (1, 16, 16, 16), "float32")
        g = t.tensor("leaky/out", (1, 16, 16, 16), "float32")
        t.op("DEQUANTIZE", [c], [f])
        t.op("LEAKY_RELU", [f], [g], "LeakyReluOptions", alpha=0.1)
        t.op("QUANTIZE", [g], [y])
    else:
        t.op("LEAKY_RELU", [c], [y], "LeakyReluOptions", alpha=0.1)
    return t.build([x], [y])


# -- the seed-001 detector in two int8 variants -----------------------------------------------------

def quantized_detector(act: str, folder) -> str:
    """npufit.zoo.detector exported and quantized with onnxruntime's static QDQ quantizer (int8)."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    from npufit.zoo.detector import export

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter([{"images": np.random.default_rng(i).standard_normal((1, 3, 64, 64)).astype(np.float32)} for i in range(4)])

        def get_next(self):
            return next(self.it, None)

    fp = folder / f"detector_{act}.onnx"
    out = folder / f"detector_{act}_int8.onnx"
    if not out.exists():
        export(act, fp)
        quantize_static(str(fp), str(out), Reader(), quant_format=QuantFormat.QDQ, activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)
    return str(out)

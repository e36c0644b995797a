"""Small quantized test models: ONNX QDQ single-op graphs, a minimal TFLite flatbuffer writer, the detector variants."""
from __future__ import annotations

import importlib

import flatbuffers
import numpy as np
from onnx import TensorProto, helper, numpy_helper

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


# -- TFLite flatbuffers, written with the schema bindings of the `tflite` package -------------------

TYPES = {"float32": 0, "int32": 2, "uint8": 3, "int64": 4, "int16": 7, "int8": 9}
OPS = {"CONV_2D": 3, "LEAKY_RELU": 98, "QUANTIZE": 114, "DEQUANTIZE": 6, "SOFTMAX": 25, "ADD": 0, "RESHAPE": 22}
OPTIONS = {"Conv2DOptions": 1, "LeakyReluOptions": 75, "SoftmaxOptions": 9}


def _m(name):
    return importlib.import_module(f"tflite.{name}")


class TinyTFLite:
    """tensors + buffers + builtin ops -> bytes. Enough for loader tests; not a converter."""

    def __init__(self):
        self.tensors, self.buffers, self.ops = [], [b""], []

    def tensor(self, name, shape, dtype, data=None, scale=None, zp=None, axis=0):
        buf = 0
        if data is not None:
            self.buffers.append(np.ascontiguousarray(data).tobytes())
            buf = len(self.buffers) - 1
        self.tensors.append((name, tuple(shape), dtype, buf, scale, zp, axis))
        return len(self.tensors) - 1

    def op(self, code, ins, outs, options=None, **fields):
        self.ops.append((code, ins, outs, options, fields))

    def build(self, inputs, outputs) -> bytes:
        b = flatbuffers.Builder(1024)
        T, Q, B, O, OC, SG, M = (_m(n) for n in ("Tensor", "QuantizationParameters", "Buffer", "Operator", "OperatorCode", "SubGraph", "Model"))

        def ivec(start, vals, kind="int32"):
            start(b, len(vals))
            for v in reversed(vals):
                (b.PrependInt32 if kind == "int32" else b.PrependFloat32 if kind == "float" else b.PrependInt64)(v)
            return b.EndVector()

        tens = []
        for name, shape, dtype, buf, scale, zp, axis in self.tensors:
            n = b.CreateString(name)
            sh = ivec(T.TensorStartShapeVector, list(shape))
            q = None
            if scale is not None:
                sc = ivec(Q.QuantizationParametersStartScaleVector, list(np.atleast_1d(scale)), "float")
                z = ivec(Q.QuantizationParametersStartZeroPointVector, [int(x) for x in np.atleast_1d(zp if zp is not None else 0)], "int64")
                Q.QuantizationParametersStart(b)
                Q.QuantizationParametersAddScale(b, sc)
                Q.QuantizationParametersAddZeroPoint(b, z)
                Q.QuantizationParametersAddQuantizedDimension(b, axis)
                q = Q.QuantizationParametersEnd(b)
            T.TensorStart(b)
            T.TensorAddShape(b, sh)
            T.TensorAddType(b, TYPES[dtype])
            T.TensorAddBuffer(b, buf)
            T.TensorAddName(b, n)
            if q is not None:
                T.TensorAddQuantization(b, q)
            tens.append(T.TensorEnd(b))
        ops = []
        codes = sorted({c for c, *_ in self.ops}, key=list(OPS).index)
        for code, ins, outs, options, fields in self.ops:
            opt = None
            if options:
                mod = _m(options)
                getattr(mod, f"{options}Start")(b)
                for k, v in fields.items():
                    getattr(mod, f"{options}Add{''.join(p.title() for p in k.split('_'))}")(b, v)
                opt = getattr(mod, f"{options}End")(b)
            iv = ivec(O.OperatorStartInputsVector, ins)
            ov = ivec(O.OperatorStartOutputsVector, outs)
            O.OperatorStart(b)
            O.OperatorAddOpcodeIndex(b, codes.index(code))
            O.OperatorAddInputs(b, iv)
            O.OperatorAddOutputs(b, ov)
            if opt is not None:
                O.OperatorAddBuiltinOptionsType(b, OPTIONS[options])
                O.OperatorAddBuiltinOptions(b, opt)
            ops.append(O.OperatorEnd(b))

        def tvec(start, items):
            start(b, len(items))
            for it in reversed(items):
                b.PrependUOffsetTRelative(it)
            return b.EndVector()

        sg_t = tvec(SG.SubGraphStartTensorsVector, tens)
        sg_o = tvec(SG.SubGraphStartOperatorsVector, ops)
        sg_i = ivec(SG.SubGraphStartInputsVector, inputs)
        sg_out = ivec(SG.SubGraphStartOutputsVector, outputs)
        SG.SubGraphStart(b)
        SG.SubGraphAddTensors(b, sg_t)
        SG.SubGraphAddOperators(b, sg_o)
        SG.SubGraphAddInputs(b, sg_i)
        SG.SubGraphAddOutputs(b, sg_out)
        sg = SG.SubGraphEnd(b)
        bufs = []
        for data in self.buffers:
            d = b.CreateByteVector(data) if data else None
            B.BufferStart(b)
            if d is not None:
                B.BufferAddData(b, d)
            bufs.append(B.BufferEnd(b))
        ocs = []
        for c in codes:
            OC.OperatorCodeStart(b)
            OC.OperatorCodeAddBuiltinCode(b, OPS[c])
            OC.OperatorCodeAddDeprecatedBuiltinCode(b, min(OPS[c], 127))
            OC.OperatorCodeAddVersion(b, 1)
            ocs.append(OC.OperatorCodeEnd(b))
        m_sg, m_b, m_oc = tvec(M.ModelStartSubgraphsVector, [sg]), tvec(M.ModelStartBuffersVector, bufs), tvec(M.ModelStartOperatorCodesVector, ocs)
        desc = b.CreateString("npufit-tests")
        M.ModelStart(b)
        M.ModelAddVersion(b, 3)
        M.ModelAddSubgraphs(b, m_sg)
        M.ModelAddBuffers(b, m_b)
        M.ModelAddOperatorCodes(b, m_oc)
        M.ModelAddDescription(b, desc)
        b.Finish(M.ModelEnd(b), file_identifier=b"TFL3")
        return bytes(b.Output())


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

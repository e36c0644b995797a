"""A small TFLite flatbuffer writer: tensors (with int8 quantization), buffers, builtin operators.

Reusable on purpose: tests build .tflite files with it, and npufit.convert.onnx_to_tflite writes its
output through it. Built on the schema bindings of the `tflite` package (no TensorFlow).

    b = TFLiteBuilder()
    x = b.tensor("x", (1, 8, 8, 3), "int8", scale=0.05, zero_point=0)
    w = b.tensor("w", (4, 3, 3, 3), "int8", data=wq, scale=[...], zero_point=[0]*4, axis=0)
    ...
    b.op("CONV_2D", [x, w, bias], [y], "Conv2DOptions", padding="SAME", stride_w=1, stride_h=1)
    b.io([x], [y]); data = b.build()
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

TENSOR_TYPES = {
    "float32": 0,
    "float16": 1,
    "int32": 2,
    "uint8": 3,
    "int64": 4,
    "bool": 6,
    "int16": 7,
    "int8": 9,
    "resource": 13,
}  # resource: the handle of a stateful model's variable (VAR_HANDLE)
PADDING = {"SAME": 0, "VALID": 1}
ACTIVATION = {"NONE": 0, "RELU": 1, "RELU_N1_TO_1": 2, "RELU6": 3, "TANH": 4}
# the lowest version LiteRT registers where it is not 1 (BROADCAST_TO: version 1 is not registered)
MIN_VERSION = {"BROADCAST_TO": 2}


def _schema(name: str):
    return importlib.import_module(f"tflite.{name}")


def _camel(field_name: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in field_name.split("_"))


@dataclass
class _Tensor:
    name: str
    shape: tuple[int, ...]
    dtype: str
    buffer: int
    scale: list[float] | None = None
    zero_point: list[int] | None = None
    axis: int = 0


@dataclass
class _Op:
    code: int
    inputs: list[int]
    outputs: list[int]
    options_type: str | None = None
    options: dict = field(default_factory=dict)


class TFLiteBuilder:
    def __init__(self, description: str = "npufit"):
        self.description = description
        self.tensors: list[_Tensor] = []
        self.buffers: list[bytes] = [b""]  # buffer 0 is the empty sentinel by convention
        self.ops: list[_Op] = []
        self.opcodes: list[int] = []
        self.inputs: list[int] = []
        self.outputs: list[int] = []
        self.subgraphs: list[TFLiteBuilder] = []  # further subgraphs (a CALL_ONCE initialiser, control-flow bodies)
        self.name = "main"

    def subgraph(self, name: str) -> TFLiteBuilder:
        """A further subgraph (index 1, 2, ... in the order made), with its own tensors and operators and the
        model's buffers; CALL_ONCE's `init_subgraph_index` names it."""
        sub = TFLiteBuilder(self.description)
        sub.buffers, sub.name = self.buffers, name
        self.subgraphs.append(sub)
        return sub

    def tensor(
        self,
        name: str,
        shape: Sequence[int],
        dtype: str = "int8",
        data: np.ndarray | None = None,
        scale: float | Sequence[float] | None = None,
        zero_point: int | Sequence[int] | None = None,
        axis: int = 0,
    ) -> int:
        if dtype not in TENSOR_TYPES:
            raise ValueError(f"unsupported TFLite tensor dtype {dtype}")
        buf = 0
        if data is not None:
            arr = np.ascontiguousarray(np.asarray(data, dtype=dtype))
            self.buffers.append(arr.tobytes())
            buf = len(self.buffers) - 1
        sc = None if scale is None else [float(s) for s in np.atleast_1d(scale)]
        zp = None if zero_point is None else [int(z) for z in np.atleast_1d(zero_point)]
        if sc is not None and zp is None:
            zp = [0] * len(sc)
        self.tensors.append(_Tensor(name, tuple(int(d) for d in shape), dtype, buf, sc, zp, axis))
        return len(self.tensors) - 1

    def op(
        self, builtin: str, inputs: Sequence[int], outputs: Sequence[int], options_type: str | None = None, **options
    ) -> int:
        code = getattr(_schema("BuiltinOperator").BuiltinOperator, builtin)
        self.ops.append(_Op(code, list(inputs), list(outputs), options_type, options))
        return len(self.ops) - 1

    def io(self, inputs: Sequence[int], outputs: Sequence[int]) -> None:
        self.inputs, self.outputs = list(inputs), list(outputs)

    # -- serialization ---------------------------------------------------------------------------
    def build(self) -> bytes:
        import flatbuffers

        b = flatbuffers.Builder(1024)
        graphs = [self, *self.subgraphs]
        codes = sorted({o.code for g in graphs for o in g.ops})
        code_index = {c: i for i, c in enumerate(codes)}
        buffers = [self._buffer(b, data) for data in self.buffers]
        subgraphs = [g._subgraph(b, code_index) for g in graphs]
        OC = _schema("OperatorCode")
        ops_enum = _schema("BuiltinOperator").BuiltinOperator
        versions = {getattr(ops_enum, k): v for k, v in MIN_VERSION.items()}
        oc = []
        for c in codes:
            OC.OperatorCodeStart(b)
            OC.OperatorCodeAddDeprecatedBuiltinCode(b, min(c, 127))  # old readers use the int8 field
            OC.OperatorCodeAddBuiltinCode(b, c)
            OC.OperatorCodeAddVersion(b, versions.get(c, 1))
            oc.append(OC.OperatorCodeEnd(b))
        M = _schema("Model")
        oc_vec = self._offsets(b, M.ModelStartOperatorCodesVector, oc)
        sg_vec = self._offsets(b, M.ModelStartSubgraphsVector, subgraphs)
        buf_vec = self._offsets(b, M.ModelStartBuffersVector, buffers)
        desc = b.CreateString(self.description)
        M.ModelStart(b)
        M.ModelAddVersion(b, 3)
        M.ModelAddOperatorCodes(b, oc_vec)
        M.ModelAddSubgraphs(b, sg_vec)
        M.ModelAddDescription(b, desc)
        M.ModelAddBuffers(b, buf_vec)
        b.Finish(M.ModelEnd(b), file_identifier=b"TFL3")
        return bytes(b.Output())

    def _subgraph(self, b, code_index: dict[int, int]):
        tensors = [self._tensor(b, t) for t in self.tensors]
        ops = [self._operator(b, o, code_index[o.code]) for o in self.ops]
        sg_name = b.CreateString(self.name)
        SG = _schema("SubGraph")
        t_vec = self._offsets(b, SG.SubGraphStartTensorsVector, tensors)
        i_vec = self._ints(b, SG.SubGraphStartInputsVector, self.inputs)
        o_vec = self._ints(b, SG.SubGraphStartOutputsVector, self.outputs)
        op_vec = self._offsets(b, SG.SubGraphStartOperatorsVector, ops)
        SG.SubGraphStart(b)
        SG.SubGraphAddTensors(b, t_vec)
        SG.SubGraphAddInputs(b, i_vec)
        SG.SubGraphAddOutputs(b, o_vec)
        SG.SubGraphAddOperators(b, op_vec)
        SG.SubGraphAddName(b, sg_name)
        return SG.SubGraphEnd(b)

    @staticmethod
    def _offsets(b, start, items):
        start(b, len(items))
        for it in reversed(items):
            b.PrependUOffsetTRelative(it)
        return b.EndVector()

    @staticmethod
    def _ints(b, start, items):
        start(b, len(items))
        for it in reversed(items):
            b.PrependInt32(int(it))
        return b.EndVector()

    @staticmethod
    def _buffer(b, data: bytes):
        B = _schema("Buffer")
        vec = None
        if data:
            b.StartVector(1, len(data), 16)  # 16-byte aligned weights, as TFLite's own writer does
            b.head = b.head - len(data)
            b.Bytes[b.head : b.head + len(data)] = data
            vec = b.EndVector()
        B.BufferStart(b)
        if vec is not None:
            B.BufferAddData(b, vec)
        return B.BufferEnd(b)

    def _tensor(self, b, t: _Tensor):
        T, Q = _schema("Tensor"), _schema("QuantizationParameters")
        name = b.CreateString(t.name)
        T.TensorStartShapeVector(b, len(t.shape))
        for d in reversed(t.shape):
            b.PrependInt32(d)
        shape = b.EndVector()
        q = None
        if t.scale is not None:
            Q.QuantizationParametersStartScaleVector(b, len(t.scale))
            for s in reversed(t.scale):
                b.PrependFloat32(s)
            sv = b.EndVector()
            Q.QuantizationParametersStartZeroPointVector(b, len(t.zero_point))
            for z in reversed(t.zero_point):
                b.PrependInt64(z)
            zv = b.EndVector()
            Q.QuantizationParametersStart(b)
            Q.QuantizationParametersAddScale(b, sv)
            Q.QuantizationParametersAddZeroPoint(b, zv)
            Q.QuantizationParametersAddQuantizedDimension(b, t.axis)
            q = Q.QuantizationParametersEnd(b)
        T.TensorStart(b)
        T.TensorAddShape(b, shape)
        T.TensorAddType(b, TENSOR_TYPES[t.dtype])
        T.TensorAddBuffer(b, t.buffer)
        T.TensorAddName(b, name)
        if q is not None:
            T.TensorAddQuantization(b, q)
        return T.TensorEnd(b)

    def _operator(self, b, o: _Op, opcode_index: int):
        Op = _schema("Operator")
        opts = None
        if o.options_type:
            mod = _schema(o.options_type)
            vals = {}
            for k, v in o.options.items():  # vectors first: flatbuffers forbids nesting them in a table
                if isinstance(v, (list, tuple)):
                    getattr(mod, f"{o.options_type}Start{_camel(k)}Vector")(b, len(v))
                    for x in reversed(v):
                        b.PrependInt32(int(x))
                    vals[k] = b.EndVector()
            getattr(mod, f"{o.options_type}Start")(b)
            for k, v in o.options.items():
                if isinstance(v, str):
                    v = PADDING.get(v, ACTIVATION.get(v, v))
                getattr(mod, f"{o.options_type}Add{_camel(k)}")(b, vals.get(k, v))
            opts = getattr(mod, f"{o.options_type}End")(b)
        in_vec = self._ints(b, Op.OperatorStartInputsVector, o.inputs)
        out_vec = self._ints(b, Op.OperatorStartOutputsVector, o.outputs)
        Op.OperatorStart(b)
        Op.OperatorAddOpcodeIndex(b, opcode_index)
        Op.OperatorAddInputs(b, in_vec)
        Op.OperatorAddOutputs(b, out_vec)
        if opts is not None:
            Op.OperatorAddBuiltinOptionsType(b, getattr(_schema("BuiltinOptions").BuiltinOptions, o.options_type))
            Op.OperatorAddBuiltinOptions(b, opts)
        return Op.OperatorEnd(b)

"""Load a TFLite flatbuffer into a Graph with the `tflite` flatbuffer bindings (no TensorFlow).

The file is memory-mapped: only the tables we touch are paged in, and weight buffers are never read
beyond small constants (shape vectors, axes, per-channel tables) that rules look at. Node op_types are
TFLite builtin names (CONV_2D, LEAKY_RELU, ...); attributes come from the builtin options table in
snake_case (stride_h, padding, fused_activation_function, ...); tensors carry QuantParams.
"""

from __future__ import annotations

import mmap
import os
import re
import struct
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import BadModelError
from ..util.io import note_input
from ..util.readers import require_regular_file
from ..util.shapes import ShapePolicy, fitting, resolve
from .model import Graph, NodeView, QuantParams, TensorInfo

SMALL_VALUE_ELEMS = 4096

_DTYPES = {
    0: "float32",
    1: "float16",
    2: "int32",
    3: "uint8",
    4: "int64",
    5: "string",
    6: "bool",
    7: "int16",
    8: "complex64",
    9: "int8",
    10: "float64",
    11: "complex128",
    12: "uint64",
    13: "resource",
    14: "variant",
    15: "uint32",
    16: "uint16",
    17: "int4",
}
_ENUM_ATTRS = {
    "padding": {0: "SAME", 1: "VALID"},
    "fused_activation_function": {0: "NONE", 1: "RELU", 2: "RELU_N1_TO_1", 3: "RELU6", 4: "TANH", 5: "SIGN_BIT"},
}


def _snake(name: str) -> str:
    s = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name)
    return re.sub(r"(?<=[A-Z])([A-Z][a-z])", r"_\1", s).lower()  # DilationHFactor -> dilation_h_factor


def _options_classes() -> dict[int, type]:
    import tflite

    out = {}
    for name, value in vars(tflite.BuiltinOptions).items():
        if not name.startswith("_") and isinstance(value, int) and value and hasattr(tflite, name):
            out[value] = getattr(tflite, name)
    return out


def _read_options(op, classes: dict[int, type]) -> dict[str, Any]:
    """Builtin options -> {snake_case: value}; vector fields come back as lists."""
    kind = op.BuiltinOptionsType()
    cls = classes.get(kind)
    table = op.BuiltinOptions()
    if cls is None or table is None:
        return {}
    obj = cls()
    obj.Init(table.Bytes, table.Pos)
    attrs: dict[str, Any] = {}
    for meth in dir(cls):
        if meth.startswith(("_", "Init", "GetRootAs")) or meth.endswith(("BufferHasIdentifier", "IsNone", "Length")):
            continue
        fn = getattr(obj, meth)
        if meth.endswith("AsNumpy"):
            v = fn()
            attrs[_snake(meth[:-7])] = [int(x) for x in v] if isinstance(v, np.ndarray) else []
            continue
        if hasattr(cls, meth + "AsNumpy"):
            continue  # vector accessor taking an index: read through AsNumpy above
        try:
            v = fn()
        except TypeError:
            continue
        key = _snake(meth)
        attrs[key] = _ENUM_ATTRS.get(key, {}).get(v, v) if isinstance(v, int) else v
    return attrs


def _tensor_info(t, name: str, buffers, buf_len: int) -> TensorInfo:
    dtype = _DTYPES.get(t.Type(), f"type{t.Type()}")
    shape: tuple | None = tuple(int(d) for d in t.ShapeAsNumpy()) if t.ShapeLength() else ()
    if t.ShapeSignatureLength():
        sig = [int(d) for d in t.ShapeSignatureAsNumpy()]
        shape = tuple(None if s < 0 else d for s, d in zip(sig, shape or sig))
    info = TensorInfo(name, shape=shape, dtype=dtype)
    q = t.Quantization()
    if q is not None and q.ScaleLength():
        zps = [int(z) for z in q.ZeroPointAsNumpy()] if q.ZeroPointLength() else [0] * q.ScaleLength()
        info.quant = QuantParams(
            tuple(float(s) for s in q.ScaleAsNumpy()),
            tuple(zps),
            int(q.QuantizedDimension()) if q.ScaleLength() > 1 else None,
            dtype,
        )
    b = t.Buffer()
    if 0 < b < buf_len:
        buf = buffers(b)
        size = buf.DataLength() or (buf.Size() if buf.Offset() > 1 else 0)
        if size:
            info.is_const = info.is_initializer = True
            if info.numel is not None and info.numel <= SMALL_VALUE_ELEMS and buf.DataLength() and dtype in _NP:
                arr: np.ndarray = np.frombuffer(
                    buf.DataAsNumpy().tobytes(), dtype=_NP[dtype]
                )  # copy: the mmap closes after loading
                info.value = arr.reshape(shape) if arr.size == info.numel else arr
    return info


_NP = {
    "float32": np.float32,
    "float16": np.float16,
    "int32": np.int32,
    "uint8": np.uint8,
    "int64": np.int64,
    "bool": np.bool_,
    "int16": np.int16,
    "int8": np.int8,
    "float64": np.float64,
    "uint16": np.uint16,
    "uint32": np.uint32,
    "uint64": np.uint64,
}


def load_tflite(
    path: str | os.PathLike, input_shapes: Mapping[str, tuple[int, ...]] | None = None, strict: bool = True
) -> Graph:
    p = Path(path)
    size = require_regular_file(p, "TFLite model", BadModelError).st_size
    if size < 16:
        raise BadModelError(f"{p}: {size} bytes is too small for a TFLite flatbuffer")
    note_input(p)  # no output of this run may land on a file it reads
    try:
        f = open(p, "rb")
    except OSError as e:
        raise BadModelError(f"{p}: cannot be read ({e.strerror or e})") from None
    # The error is raised after the mmap is closed: numpy views into it, held by a traceback, would make
    # closing it fail (BufferError) and hide the one-line message.
    problem = None
    with f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        if mm[4:8] != b"TFL3":
            raise BadModelError(f"{p}: not a TFLite model (no 'TFL3' file identifier)")
        try:
            return _build(mm, str(p), input_shapes or {}, strict)
        except BadModelError as e:
            problem = e.message
        except (struct.error, IndexError, ValueError, TypeError, AttributeError, OverflowError) as e:
            problem = f"{p}: truncated or corrupt TFLite flatbuffer ({type(e).__name__})"
    raise BadModelError(problem)


def _build(buf, path: str, input_shapes: Mapping[str, tuple[int, ...]], strict: bool = True) -> Graph:
    import tflite
    from tflite.utils import BUILTIN_OPCODE2NAME

    model = tflite.Model.GetRootAsModel(buf, 0)
    if model.SubgraphsLength() == 0:
        raise BadModelError(f"{path}: TFLite model has no subgraph")
    warnings: list[str] = []
    if model.SubgraphsLength() > 1:
        warnings.append(
            f"model has {model.SubgraphsLength()} subgraphs; only the main subgraph is checked (control-flow bodies "
            "are not)"
        )
    sg = model.Subgraphs(0)
    n_buf = model.BuffersLength()
    tensors: dict[str, TensorInfo] = {}
    names: list[str] = []
    for i in range(sg.TensorsLength()):
        t = sg.Tensors(i)
        raw = (t.Name() or b"").decode("utf-8", "replace") or f"tensor_{i}"
        name = raw if raw not in tensors else f"{raw}#{i}"  # TFLite does not require unique names
        tensors[name] = _tensor_info(t, name, model.Buffers, n_buf)
        names.append(name)

    def tname(idx: int) -> str:
        if idx < 0:
            return ""
        if idx >= len(names):
            raise BadModelError(f"{path}: operator refers to tensor {idx} but the subgraph has {len(names)}")
        return names[idx]

    inputs = [tname(int(i)) for i in sg.InputsAsNumpy()] if sg.InputsLength() else []
    outputs = [tname(int(i)) for i in sg.OutputsAsNumpy()] if sg.OutputsLength() else []
    if not strict:  # scan: one option for many models; an input this model lacks is left out
        input_shapes = fitting({name: tensors[name].shape for name in inputs}, input_shapes)
    policy = _apply_input_shapes(tensors, inputs, input_shapes, warnings)
    classes = _options_classes()
    codes = []
    for i in range(model.OperatorCodesLength()):
        oc = model.OperatorCodes(i)
        code = max(int(oc.BuiltinCode()), int(oc.DeprecatedBuiltinCode()))
        custom = (oc.CustomCode() or b"").decode("utf-8", "replace")
        codes.append((BUILTIN_OPCODE2NAME.get(code, f"BUILTIN_{code}"), custom))
    nodes: list[NodeView] = []
    for i in range(sg.OperatorsLength()):
        op = sg.Operators(i)
        idx = op.OpcodeIndex()
        if idx >= len(codes):
            raise BadModelError(f"{path}: operator {i} uses opcode {idx} but the model declares {len(codes)}")
        op_type, custom = codes[idx]
        domain = ""
        if op_type == "CUSTOM":
            op_type, domain = custom or "CUSTOM", "tflite.custom"
        ins = tuple(tname(int(x)) for x in op.InputsAsNumpy()) if op.InputsLength() else ()
        outs = tuple(tname(int(x)) for x in op.OutputsAsNumpy()) if op.OutputsLength() else ()
        nodes.append(
            NodeView(
                name=f"{op_type}_{i}",
                op_type=op_type,
                domain=domain,
                attrs=_read_options(op, classes),
                inputs=ins,
                outputs=outs,
                graph=None,
            )
        )  # type: ignore[arg-type]
    _require_execution_order(nodes, path)
    desc = (model.Description() or b"").decode("utf-8", "replace")
    graph = Graph(
        path,
        "tflite",
        nodes,
        tensors,
        inputs,
        outputs,
        {"tflite": int(model.Version())},
        warnings,
        meta={"producer": desc},
    )
    graph.input_shapes, graph.shape_notes, graph.shapes_needed = policy.pinned, policy.notes, policy.needed
    # ops whose every input is a constant (e.g. DEQUANTIZE of float16 weights) are computed at load time
    graph.folded = {n.name for n in nodes if n.present_inputs and all(tensors[t].is_const for t in n.present_inputs)}
    for n in nodes:
        if n.name in graph.folded:
            for o in n.outputs:
                if o:
                    tensors[o].is_const = True
    return graph


def _require_execution_order(nodes: list[NodeView], path: str) -> None:
    """TFLite stores operators in execution order: an operator may read only what an earlier one wrote, so a
    cycle or a forward reference is a corrupt file, refused here rather than failing somewhere downstream."""
    producer = {o: i for i, n in enumerate(nodes) for o in n.outputs if o}
    for i, n in enumerate(nodes):
        for t in n.inputs:
            j = producer.get(t)
            if j is not None and j >= i:
                raise BadModelError(
                    f"{path}: operator {i} ({n.op_type}) reads tensor '{t}' that operator {j} writes "
                    f"later (a cycle or out-of-order operators)"
                )


def _apply_input_shapes(tensors, inputs, shapes, warnings) -> ShapePolicy:
    """The shape policy on a TFLite model's inputs (util.shapes.resolve): given shapes and a dynamic batch pinned."""
    for name in shapes:
        if name not in inputs:
            raise BadModelError(f"--input-shape: model has no input '{name}' (inputs: {', '.join(inputs) or 'none'})")
    policy = resolve({name: tensors[name].shape for name in inputs}, shapes)
    for name, dims in policy.pinned.items():
        tensors[name].shape = tuple(int(d) for d in dims)
    if shapes:
        warnings.append(
            "--input-shape changes the input tensors only; TFLite stores every other tensor's shape, which is kept"
        )
    return policy

"""The lowering context: ONNX tensors -> TFLite tensors, layout (NCHW vs NHWC), quantization, lineage.

Layout: a 4-D ONNX activation is stored NHWC in TFLite ('nhwc'); everything else keeps ONNX's axis order
('plain'). Ops that care about axis order ask for the layout they need and get a TRANSPOSE (or a free
RESHAPE when the permutation moves only size-1 axes) inserted once per tensor. Every TFLite op records the
ONNX node(s) it came from; its output tensor name is the key Vela reports layers by."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import NpufitError
from ..graph import NodeView
from .onnx_prep import Prepared
from .qparams import Q, activation_q, bias_int32, const_q, fixed_q, quantize
from .ranges import Ranges
from .tflite_writer import TFLiteBuilder

TO_NHWC = (0, 2, 3, 1)
TO_NCHW = (0, 3, 1, 2)
NHWC_AXIS = {0: 0, 1: 3, 2: 1, 3: 2}  # ONNX NCHW axis -> NHWC axis


class Unsupported(NpufitError):
    """One node the converter cannot express in int8 TFLite (turned into the converter-gap message)."""

    def __init__(self, op: str, node: str, why: str):
        super().__init__(f"{op} '{node}': {why}")
        self.op, self.node, self.why = op, node, why


@dataclass
class TT:
    index: int
    name: str
    shape: tuple[int, ...]  # TFLite shape
    q: Q | None
    layout: str  # 'nhwc' | 'plain'
    dtype: str = "int8"  # int32 for indices (ARG_MAX)


def onnx_to_tfl_shape(shape, layout: str) -> tuple[int, ...]:
    shape = tuple(int(d) for d in shape)
    return tuple(shape[i] for i in TO_NHWC) if layout == "nhwc" else shape


def memory_trivial(shape, perm) -> bool:
    """True when permuting `shape` by `perm` keeps the element order (only size-1 axes move)."""
    moved = [p for p in perm if shape[p] != 1]
    return moved == sorted(moved)


class Lowering:
    def __init__(self, prep: Prepared, ranges: Ranges, bits: int = 8):
        self.prep, self.graph, self.ranges = prep, prep.graph, ranges
        self.bits = bits  # activation width: 8, or 16 in the wide (16x8) mode
        self.b = TFLiteBuilder(description="npufit onnx->int8 tflite")
        self.tensors: dict[str, TT] = {}
        self._views: dict[tuple[str, str], TT] = {}
        self.lineage: dict[str, list[str]] = {}
        self.ops: list[dict] = []
        self.current: list[str] = []  # ONNX node names the op being emitted comes from
        self.absorbed: set[str] = set()  # BN / activation nodes folded into a producer
        self.aliases: dict[str, str] = {}
        self._names: set[str] = set()

    # -- ONNX facts ---------------------------------------------------------------------------------------
    def shape(self, name: str) -> tuple[int, ...]:
        s = self.ranges.shapes.get(name)
        if s is None:
            t = self.graph.tensors.get(name)
            if t is None or not t.is_static:
                raise NpufitError(f"tensor '{name}' has no static shape")
            s = tuple(int(d) for d in t.shape)
        return s

    def const(self, name: str) -> np.ndarray | None:
        return None if not name else self.prep.const(name)

    def is_const(self, name: str) -> bool:
        return self.const(name) is not None

    def q_of(self, name: str) -> Q:
        name = self.resolve(name)
        r = self.prep.fixed_ranges.get(name) or self.ranges.get(name)
        if r is None:
            raise NpufitError(f"tensor '{name}': no calibration range (it was not produced by the float model run)")
        return activation_q(*r, bits=self.bits)

    def aq(self, lo: float, hi: float) -> Q:
        """Activation parameters for the float range [lo, hi] at this lowering's width."""
        return activation_q(lo, hi, bits=self.bits)

    def fixed(self, tfl_op: str) -> Q | None:
        """The fixed output parameters of a LUT kernel (LOGISTIC, TANH, SOFTMAX ...) at this width, else None."""
        return fixed_q(tfl_op, self.bits)

    def real_range(self, t: TT) -> tuple[float, float]:
        """The calibrated float range behind a TFLite tensor (not widened to include 0), else its int8 range."""
        for name in (t.name, t.name[:-5] if t.name.endswith(("/nhwc", "/nchw")) else t.name):
            r = self.prep.fixed_ranges.get(name) or self.ranges.get(name)
            if r is not None:
                return r
        return t.q.range

    def alias(self, out: str, src: str) -> None:
        """ONNX tensor `out` is `src` (no op): later readers resolve to it; a graph output gets its tensor."""
        self.aliases[out] = src
        if out in self.graph.output_names and self.resolve(src) in self.tensors:
            self.tensors[out] = self.tensors[self.resolve(src)]

    def resolve(self, name: str) -> str:
        while name in self.aliases:
            name = self.aliases[name]
        return name

    def sole_consumer(self, name: str) -> NodeView | None:
        """The only consumer of `name`, if the tensor is not also a model output (then it must exist)."""
        if name in self.graph.output_names:
            return None
        cons = self.graph.consumers(name)
        return cons[0] if len(cons) == 1 else None

    # -- TFLite tensors -------------------------------------------------------------------------------
    def _unique(self, name: str) -> str:
        base, i = name, 1
        while name in self._names:
            i += 1
            name = f"{base}_{i}"
        self._names.add(name)
        return name

    def new(self, name: str, shape, q: Q | None, layout: str, dtype: str = "int8", data=None, per_channel=None) -> TT:
        name = self._unique(name)
        if q is not None and dtype == "int8":
            dtype = q.dtype
        if per_channel is not None:
            scales, axis = per_channel
            idx = self.b.tensor(
                name, shape, dtype, data=data, scale=list(scales), zero_point=[0] * len(scales), axis=axis
            )
        else:
            idx = self.b.tensor(
                name,
                shape,
                dtype,
                data=data,
                scale=None if q is None else q.scale,
                zero_point=None if q is None else q.zero_point,
            )
        return TT(idx, name, tuple(int(d) for d in shape), q, layout, dtype)

    def output(self, onnx_name: str, layout: str, q: Q | None = None, shape=None) -> TT:
        """The TFLite tensor for an ONNX node output (named like it, so Vela reports the ONNX name)."""
        shape = shape if shape is not None else onnx_to_tfl_shape(self.shape(onnx_name), layout)
        t = self.new(onnx_name, shape, q or self.q_of(onnx_name), layout)
        self.tensors[onnx_name] = t
        return t

    def int32(self, name: str, values) -> TT:
        arr = np.asarray(values, np.int32)
        return self.new(name, arr.shape, None, "plain", "int32", data=arr)

    def const_int8(self, name: str, value: np.ndarray, layout: str) -> TT:
        v = np.asarray(value, np.float32)
        if layout == "nhwc" and v.ndim == 4:
            v = v.transpose(TO_NHWC)
        q = const_q(v, self.bits)
        return self.new(name, v.shape, q, layout, data=quantize(v, q))

    def act(self, name: str, layout: str | None = None) -> TT:
        """The TFLite tensor of ONNX tensor `name`, in `layout` when given (converted once, then cached)."""
        name = self.resolve(name)
        t = self.tensors.get(name)
        if t is None:
            v = self.const(name)
            if v is None:
                raise NpufitError(f"tensor '{name}' was not produced by any lowered op")
            t = self.tensors[name] = self.const_int8(name, v, "plain")
        if layout is None or t.layout == layout or len(t.shape) != 4:
            return t
        key = (name, layout)
        if key not in self._views:
            perm = TO_NCHW if layout == "plain" else TO_NHWC
            shape = tuple(t.shape[p] for p in perm)
            out = self.new(f"{name}/{'nchw' if layout == 'plain' else 'nhwc'}", shape, t.q, layout)
            self.layout_op(t, out, perm)
            self._views[key] = out
        return self._views[key]

    def layout_op(self, src: TT, dst: TT, perm) -> None:
        if memory_trivial(src.shape, perm):
            self.emit(
                "RESHAPE",
                [src, self.int32(f"{dst.name}/shape", dst.shape)],
                [dst],
                "ReshapeOptions",
                new_shape=list(dst.shape),
            )
        else:
            self.emit("TRANSPOSE", [src, self.int32(f"{dst.name}/perm", perm)], [dst], "TransposeOptions")

    def requant(self, t: TT, q: Q, why: str = "rq", dst: TT | None = None) -> TT:
        """`t` with quantization `q` (into `dst` when given): itself if equal, else through a QUANTIZE (rescale, or
        int8 <-> int16) op."""
        if dst is None and (t.q is None or t.q.close_to(q)):
            return t
        out = dst or self.new(f"{t.name}/{why}", t.shape, q, t.layout)
        if t.q.bits != out.q.bits and len(t.shape) > 3 and any(d != 1 for d in t.shape[:-2]):
            # Vela 5.2 crashes (segfault) on a width-changing QUANTIZE of a tensor with batch dims sliced out of a
            # larger one (hiera's q / k / v): it runs on a [1, rows, C] view of it
            flat = (1, int(np.prod(t.shape[:-1])), t.shape[-1])
            a = self.new(f"{t.name}/flat", flat, t.q, "plain")
            self.emit("RESHAPE", [t, self.int32(f"{a.name}/shape", flat)], [a], "ReshapeOptions", new_shape=list(flat))
            b = self.new(f"{out.name}/flat", flat, out.q, "plain")
            self.emit("QUANTIZE", [a], [b], "QuantizeOptions")
            self.emit(
                "RESHAPE",
                [b, self.int32(f"{b.name}/shape", out.shape)],
                [out],
                "ReshapeOptions",
                new_shape=list(out.shape),
            )
        else:
            self.emit("QUANTIZE", [t], [out], "QuantizeOptions")
        return out

    def fixed_or_range(self, tfl_op: str, onnx_name: str) -> Q:
        return self.fixed(tfl_op) or self.q_of(onnx_name)

    def bias(self, y: TT, b, x: TT, w_scales) -> TT:
        """The bias tensor of a CONV_2D / FULLY_CONNECTED ... from `x` into `y`: int32, int64 for an int16 input."""
        wide = x.q is not None and x.q.bits == 16
        bq, bs = bias_int32(b, x.q.scale, w_scales, 64 if wide else 32)
        return self.new(
            f"{y.name}/bias", bq.shape, None, "plain", "int64" if wide else "int32", data=bq, per_channel=(bs, 0)
        )

    def narrow(self, t: TT, why: str = "int8") -> TT:
        """`t` as int8 over its own range, for a kernel with no int16 form (RSQRT in Vela, ARG_MAX ...)."""
        if t.q is None or t.q.bits == 8:
            return t
        return self.requant(t, activation_q(*self.real_range(t)), why)

    # -- ops --------------------------------------------------------------------------------------------
    def emit(self, op: str, ins, outs, options_type: str | None = None, **options) -> None:
        idx = [-1 if t is None else t.index for t in ins]
        self.b.op(op, idx, [t.index for t in outs], options_type, **options)
        for t in outs:
            self.lineage[t.name] = list(self.current)
        self.ops.append(
            {"index": len(self.ops), "op": op, "outputs": [t.name for t in outs], "onnx_nodes": list(self.current)}
        )

    def emit_reshape(self, x: TT, y: TT) -> None:
        """RESHAPE of `x` into `y`'s shape (the memory order kept)."""
        self.emit(
            "RESHAPE", [x, self.int32(f"{y.name}/shape", y.shape)], [y], "ReshapeOptions", new_shape=list(y.shape)
        )

    def emit_chain(self, op: str, ins, out: TT, options_type: str, step, **options) -> None:
        """A binary `op` over more than two inputs, left to right, into `out` (Max / Min / Add of many inputs);
        step(k, a, b) makes the k-th intermediate result of a op b."""
        cur = ins[0]
        for k, t in enumerate(ins[1:], 1):
            dst = out if k == len(ins) - 1 else step(k, cur, t)
            self.emit(op, [cur, t], [dst], options_type, **options)
            cur = dst

    def fail(self, node: NodeView, why: str) -> Unsupported:
        return Unsupported(node.op_type, node.name, why)

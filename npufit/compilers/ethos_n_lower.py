"""Lower npufit's Graph of an int8 TFLite model to the Ethos-N shim's request: one support-library operation
(or a few) per TFLite operator, constants in a side file.

The lowering is the part npufit owns; every verdict on an operation it emits comes from the library's own
IsXxxSupported query. An operator the library has no API for (SUB, SOFTMAX, GATHER...) or that cannot be
expressed (float tensors, rank > 4, dilation) is sent as a host op with npufit's reason, marked "npufit:".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import NpufitError
from ..graph import Graph, NodeView
from ..util.readers import read_bytes_capped

INT_TYPES = ("int8", "uint8")
ACT_BOUNDS = {"RELU": (0.0, None), "RELU6": (0.0, 6.0), "RELU_N1_TO_1": (-1.0, 1.0), "RELU_0_TO_1": (0.0, 1.0)}
_NP = {"int8": np.int8, "uint8": np.uint8, "int32": np.int32}


@dataclass
class Lowered:
    request: str
    blob: bytes
    ops_of: dict[str, list[str]] = field(default_factory=dict)  # TFLite node -> shim op ids
    fused: dict[str, str] = field(default_factory=dict)  # node folded into another (PAD into its convolution)
    host: dict[str, str] = field(default_factory=dict)  # shim op id -> npufit's reason for keeping it on the host
    notes: list[str] = field(default_factory=list)

    @property
    def op_node(self) -> dict[str, str]:
        return {op: n for n, ops in self.ops_of.items() for op in ops}


def shape4(shape) -> list[int] | None:
    if shape is None or any(not isinstance(d, int) for d in shape) or len(shape) > 4:
        return None
    return [1] * (4 - len(shape)) + [int(d) for d in shape]


class _Lowering:
    def __init__(self, graph: Graph, buffers: dict[str, np.ndarray]):
        self.g = graph
        self.buffers = buffers
        self.ids = {name: f"t{i}" for i, name in enumerate(graph.tensors)}
        self.lines: list[str] = []
        self.tensor_lines: dict[str, str] = {}
        self.blob = bytearray()
        self.out = Lowered("", b"")
        self.n_extra = 0

    # -- tensors ---------------------------------------------------------------------------------
    def tensor(
        self,
        name: str,
        fmt: str = "NHWC",
        data: np.ndarray | None = None,
        shape=None,
        quant_dim: int | None = None,
        scales=None,
        zp=None,
        dtype: str | None = None,
    ) -> str:
        """Declare a tensor (once per id) and return its id; `data` makes it a constant in the blob."""
        t = self.g.tensor(name) if name in self.g.tensors else None
        tid = self.ids.get(name) if data is None and shape is None else self._extra(name)
        if tid in self.tensor_lines:
            return tid
        dims = shape4(shape if shape is not None else (t.shape if t else None))
        dtype = dtype or (t.dtype if t else None)
        if dims is None:
            raise _Host(
                f"npufit: tensor '{name}' has rank > 4 or unknown dims; the support library handles 4-D NHWC tensors"
            )
        if dtype not in INT_TYPES + ("int32",):
            raise _Host(f"npufit: tensor '{name}' is {dtype}; the Ethos-N computes int8/uint8 tensors only")
        q = t.quant if t is not None else None
        scales = list(scales if scales is not None else (q.scale if q else (1.0,)))
        zp = int(zp if zp is not None else (q.zero_point[0] if q and q.zero_point else 0))
        qd = quant_dim if len(scales) > 1 else -1
        line = (
            f"tensor {tid} {dtype} {fmt} {' '.join(map(str, dims))} {zp} {qd if qd is not None else -1} {len(scales)} "
            + " ".join(repr(float(s)) for s in scales)
        )
        if data is not None:
            raw = np.ascontiguousarray(data.astype(_NP[dtype])).tobytes()
            line += f" const {len(self.blob)} {len(raw)}"
            self.blob += raw
        elif t is not None and t.is_const:
            arr = self.buffers.get(name)
            if arr is not None:
                raw = np.ascontiguousarray(arr.astype(_NP[dtype])).tobytes()
                line += f" const {len(self.blob)} {len(raw)}"
                self.blob += raw
        self.tensor_lines[tid] = line
        return tid

    def _extra(self, name: str) -> str:
        self.n_extra += 1
        return f"x{self.n_extra}"

    def new_like(self, name: str) -> str:
        """A fresh intermediate tensor with the shape and quantization of `name` (fused activation input)."""
        t = self.g.tensor(name)
        return self.tensor(name, shape=t.shape, dtype=t.dtype)

    # -- ops -------------------------------------------------------------------------------------
    def op(self, node: NodeView, kind: str, ins: list[str], outs: list[str], **kv) -> str:
        oid = f"{node.index}.{len(self.out.ops_of.get(node.name, []))}"
        args = " ".join(f"{k}={','.join(map(str, v)) if isinstance(v, (list, tuple)) else v}" for k, v in kv.items())
        self.lines.append(f"op {oid} {kind} in={','.join(ins)} out={','.join(outs)} {args}".rstrip())
        self.out.ops_of.setdefault(node.name, []).append(oid)
        return oid

    def host(self, node: NodeView, why: str) -> None:
        ins = [self.ids[t] for t in node.inputs if t and t in self.ids and not self.g.tensor(t).is_const]
        outs = [self.ids[t] for t in node.outputs if t]
        self.lines.append(f"op {node.index}.0 host in={','.join(ins)} out={','.join(outs)}")
        self.out.ops_of[node.name] = [f"{node.index}.0"]
        self.out.host[f"{node.index}.0"] = why

    def run(self) -> Lowered:
        g = self.g
        folded = g.folded
        for n in g.top_nodes:
            p = self._fusable_pad(n) if n.op_type in ("CONV_2D", "DEPTHWISE_CONV_2D") else None
            if p is not None:
                self.out.fused[p.name] = n.name
        for n in g.top_nodes:
            if n.name in folded or n.name in self.out.fused:
                continue
            mark = (len(self.lines), dict(self.tensor_lines), len(self.blob))
            try:
                self.lower(n)
            except _Host as h:
                self.lines = self.lines[: mark[0]]
                self.tensor_lines, self.blob = mark[1], self.blob[: mark[2]]
                self.out.ops_of.pop(n.name, None)
                self.host(n, str(h))
        # every activation tensor a shim op reads or writes must be declared
        for line in list(self.lines):
            for part in line.split()[3:5]:
                for tid in part.split("=", 1)[1].split(",") if "=" in part else ():
                    if tid and tid not in self.tensor_lines and tid != "_":
                        name = self._name_of(tid)
                        try:
                            self.tensor(name)
                        except _Host:
                            self.tensor_lines[tid] = f"tensor {tid} int8 NHWC 1 1 1 1 0 -1 1 1.0"  # host-only tensor
        # the model's outputs, and every tensor no node reads (a SPLIT part, a branch the converter left dead): the
        # library refuses a network with an operation nobody consumes ("There are dangling outputs"), and these are
        # written out, as Arm NN does with unconnected layer outputs
        read = {t for n in g.top_nodes for t in n.present_inputs}
        model_outs = [t.name for t in g.outputs]
        dead = [o for n in g.top_nodes if n.name in self.out.ops_of for o in n.outputs if o and o not in read]
        outs = [f"output {self.ids[t]}" for t in dict.fromkeys(model_outs + dead) if t in self.ids]
        self.out.request = "\n".join(["npufit-ethosn 1", *self.tensor_lines.values(), *self.lines, *outs]) + "\n"
        self.out.blob = bytes(self.blob)
        return self.out

    def _name_of(self, tid: str) -> str:
        if not hasattr(self, "_rev"):
            self._rev = {v: k for k, v in self.ids.items()}
        return self._rev[tid]

    def lower(self, n: NodeView) -> None:
        op = n.op_type
        fn = getattr(self, f"_op_{op.lower()}", None) or _ALIASES.get(op) and getattr(self, _ALIASES[op])
        if fn is None:
            raise _Host(f"npufit: the Ethos-N support library has no operation for TFLite {op}")
        for t in list(n.inputs) + list(n.outputs):
            if t and not self.g.tensor(t).is_const:
                self.tensor(t)  # raises _Host for float / rank-5 activations
        fn(n)

    def act(self, n: NodeView, out: str) -> str:
        """Returns the tensor the main op writes; a fused activation becomes a Relu on the real output."""
        fa = n.attr("fused_activation_function", "NONE")
        if fa in (None, "NONE"):
            return self.ids[out]
        if fa not in ACT_BOUNDS:
            raise _Host(f"npufit: fused {fa} activation has no support-library lowering")
        mid = self.new_like(out)
        self.op(n, "relu", [mid], [self.ids[out]], bounds=self.relu_bounds(out, *ACT_BOUNDS[fa]))
        return mid

    def relu_bounds(self, tensor: str, lo: float, hi: float | None) -> list[int]:
        t = self.g.tensor(tensor)
        q = t.quant
        s, z = (q.scale[0], q.zero_point[0]) if q else (1.0, 0)
        qmin, qmax = (-128, 127) if t.dtype == "int8" else (0, 255)
        lo_q = max(qmin, z + int(round(lo / s)))
        hi_q = qmax if hi is None else min(qmax, z + int(round(hi / s)))
        return [lo_q, hi_q]

    # -- convolutions ------------------------------------------------------------------------------
    def _weights(self, n: NodeView, i: int, layout: str) -> str:
        name = n.inputs[i]
        w = self.buffers.get(name)
        t = self.g.tensor(name)
        if w is None or t.quant is None:
            raise _Host("npufit: weights are not constant int8 data")
        if layout == "HWIO":  # TFLite OHWI (conv, transpose conv) or [O, I] (fully connected)
            w = w.reshape(w.shape[0], 1, 1, -1) if w.ndim == 2 else w
            data, qdim = w.transpose(1, 2, 3, 0), 3
        else:  # depthwise [1, H, W, C*M] -> HWIM
            cin = shape4(self.g.tensor(n.inputs[0]).shape)[3]
            data, qdim = w.reshape(w.shape[1], w.shape[2], cin, -1), 2
        return self.tensor(
            name,
            fmt=layout,
            data=data,
            shape=data.shape,
            quant_dim=qdim,
            scales=t.quant.scale,
            zp=t.quant.zero_point[0],
            dtype=t.dtype,
        )

    def _bias(self, n: NodeView, i: int, channels: int) -> str:
        name = n.inputs[i] if i < len(n.inputs) else ""
        b = self.buffers.get(name) if name else None
        data = np.zeros(channels, np.int32) if b is None else b.astype(np.int32)
        # the shim replaces the scale with input x weight scale, as the library requires
        return self.tensor(
            name or f"{n.name}/bias",
            data=data.reshape(1, 1, 1, -1),
            shape=(1, 1, 1, data.size),
            dtype="int32",
            scales=(1.0,),
            zp=0,
        )

    def _pads(self, n: NodeView, k: list[int], s: list[int], inp: str, out: str, dil=(1, 1)) -> list[int]:
        x, y = shape4(self.g.tensor(inp).shape), shape4(self.g.tensor(out).shape)
        if n.attr("padding", "VALID") != "SAME":
            return [0, 0, 0, 0]
        ph = max((y[1] - 1) * s[0] + (k[0] - 1) * dil[0] + 1 - x[1], 0)
        pw = max((y[2] - 1) * s[1] + (k[1] - 1) * dil[1] + 1 - x[2], 0)
        return [ph // 2, ph - ph // 2, pw // 2, pw - pw // 2]

    def _conv_common(self, n: NodeView, kind: str, layout: str) -> None:
        if n.attr("dilation_h_factor", 1) != 1 or n.attr("dilation_w_factor", 1) != 1:
            raise _Host("npufit: dilated convolution: the support library's ConvolutionInfo has no dilation")
        x, out = n.inputs[0], n.outputs[0]
        w = self._weights(n, 1, layout)
        ws = self.g.tensor(n.inputs[1]).shape
        k = [ws[1], ws[2]]
        s = [n.attr("stride_h", 1), n.attr("stride_w", 1)]
        pads = self._pads(n, k, s, x, out)
        src = self.ids[x]
        pad_node = self.g.producer(x)
        if (
            pad_node is not None and self.out.fused.get(pad_node.name) == n.name
        ):  # PAD -> VALID conv: one convolution with that padding (as TVM and Arm NN fuse it)
            extra = _pad_hw(pad_node)
            pads = [p + e for p, e in zip(pads, extra)]
            src = self.ids[pad_node.inputs[0]]
            self.tensor(pad_node.inputs[0])
        b = self._bias(n, 2, shape4(self.g.tensor(out).shape)[3])
        dst = self.act(n, out)
        self._ordered(n, kind, [src, w, b], dst, out, pad=pads, stride=[s[1], s[0]])

    def _fusable_pad(self, n: NodeView) -> NodeView | None:
        p = self.g.producer(n.inputs[0])
        if p is None or p.op_type not in ("PAD", "PADV2") or len(self.g.consumers(n.inputs[0])) != 1:
            return None
        if n.attr("padding", "VALID") != "VALID" or _pad_hw(p) is None:
            return None
        return p

    def _op_conv_2d(self, n):
        self._conv_common(n, "conv", "HWIO")

    def _op_depthwise_conv_2d(self, n):
        self._conv_common(n, "dwconv", "HWIM")

    def _op_transpose_conv(self, n):
        x, out = n.inputs[2], n.outputs[0]
        w = self._weights(n, 1, "HWIO")
        ws = self.g.tensor(n.inputs[1]).shape
        k, s = [ws[1], ws[2]], [n.attr("stride_h", 1), n.attr("stride_w", 1)]
        xi, yo = shape4(self.g.tensor(x).shape), shape4(self.g.tensor(out).shape)
        ph, pw = max((xi[1] - 1) * s[0] + k[0] - yo[1], 0), max((xi[2] - 1) * s[1] + k[1] - yo[2], 0)
        b = self._bias(n, 3, yo[3])
        self.op(
            n,
            "tconv",
            [self.ids[x], w, b],
            [self.ids[out]],
            pad=[ph // 2, ph - ph // 2, pw // 2, pw - pw // 2],
            stride=[s[1], s[0]],
        )

    def _op_fully_connected(self, n):
        x, out = n.inputs[0], n.outputs[0]
        w = self._weights(n, 1, "HWIO")
        b = self._bias(n, 2, self.g.tensor(n.inputs[1]).shape[0])
        dst = self.act(n, out)
        self._ordered(n, "fc", [self.ids[x], w, b], dst, out)

    def _ordered(self, n, kind, ins, dst, out, **kv):
        """Emit the main op before the fused activation act() already queued."""
        if dst == self.ids[out]:
            self.op(n, kind, ins, [dst], **kv)
            return
        relu = self.lines.pop()
        self.out.ops_of[n.name].pop()
        self.op(n, kind, ins, [dst], **kv)
        oid = f"{n.index}.{len(self.out.ops_of[n.name])}"
        self.lines.append(" ".join([relu.split()[0], oid, *relu.split()[2:]]))
        self.out.ops_of[n.name].append(oid)

    # -- element-wise and activations -----------------------------------------------------------------
    def _binary(self, n, kind):
        if self._const_as_depthwise(n, kind):
            return
        ins = []
        for t in n.inputs[:2]:
            ti = self.g.tensor(t)
            if ti.is_const:
                arr = self.buffers.get(t)
                if arr is None:
                    raise _Host("npufit: constant operand without data")
                ins.append(self.tensor(t, data=arr, shape=ti.shape, dtype=ti.dtype))
            else:
                ins.append(self.ids[t])
        dst = self.act(n, n.outputs[0])
        self._ordered(n, kind, ins, dst, n.outputs[0])

    def _const_as_depthwise(self, n, kind) -> bool:
        """x + c and x * c with a scalar or per-channel constant c become a 1x1 depthwise convolution, as TVM's
        ConvertEquivalents and Arm NN's Ethos-N backend lower them (the library's own Addition/Multiplication
        cannot broadcast a constant: 'Cannot stretch along the requested dimensions')."""
        consts = [i for i in (0, 1) if i < len(n.inputs) and self.g.tensor(n.inputs[i]).is_const]
        if len(consts) != 1:
            return False
        c_name, x_name = n.inputs[consts[0]], n.inputs[1 - consts[0]]
        c, ct, xt = self.buffers.get(c_name), self.g.tensor(c_name), self.g.tensor(x_name)
        x4 = shape4(xt.shape)
        if c is None or ct.quant is None or ct.dtype not in INT_TYPES or x4 is None or xt.quant is None:
            return False
        chans = x4[3]
        if (
            c.size not in (1, chans)
            or (c.size == chans and c.ndim and max(c.shape) != chans)
            or (c.ndim and c.size == chans and c.shape[-1] != chans)
        ):
            return False
        real = (c.astype(np.float64).ravel() - ct.quant.zero_point[0]) * ct.quant.scale[0]
        real = np.broadcast_to(real, (chans,))
        if kind == "mul":
            ws = float(np.abs(real).max() / 127.0) or 1.0
            w, bias = np.round(real / ws).astype(np.int8), np.zeros(chans, np.int32)
        else:
            ws = 1.0 / 127.0
            w = np.full(chans, 127, np.int8)
            bias = np.round(real / (xt.quant.scale[0] * ws)).astype(np.int64)
            if np.abs(bias).max(initial=0) >= 2**31:
                return False
            bias = bias.astype(np.int32)
        wid = self.tensor(
            f"{n.name}/dw_weights",
            fmt="HWIM",
            data=w.reshape(1, 1, chans, 1),
            shape=(1, 1, chans, 1),
            scales=(ws,),
            zp=0,
            dtype="int8",
        )
        bid = self.tensor(
            f"{n.name}/dw_bias",
            data=bias.reshape(1, 1, 1, chans),
            shape=(1, 1, 1, chans),
            dtype="int32",
            scales=(1.0,),
            zp=0,
        )
        dst = self.act(n, n.outputs[0])
        self._ordered(n, "dwconv", [self.ids[x_name], wid, bid], dst, n.outputs[0], pad=[0, 0, 0, 0], stride=[1, 1])
        return True

    def _op_add(self, n):
        self._binary(n, "add")

    def _op_mul(self, n):
        self._binary(n, "mul")

    def _op_relu(self, n):
        x, out = n.inputs[0], n.outputs[0]
        lo, hi = ACT_BOUNDS[n.op_type]
        qi, qo = self.g.tensor(x).quant, self.g.tensor(out).quant
        if qi and qo and (qi.scale[0], qi.zero_point[0]) != (qo.scale[0], qo.zero_point[0]):
            mid = self.tensor(x, shape=self.g.tensor(x).shape, dtype=self.g.tensor(x).dtype)
            self.op(n, "relu", [self.ids[x]], [mid], bounds=self.relu_bounds(x, lo, hi))
            self.op(n, "requant", [mid], [self.ids[out]])
        else:
            self.op(n, "relu", [self.ids[x]], [self.ids[out]], bounds=self.relu_bounds(x, lo, hi))

    def _op_leaky_relu(self, n):
        self.op(n, "leaky", [self.ids[n.inputs[0]]], [self.ids[n.outputs[0]]], alpha=repr(float(n.attr("alpha", 0.2))))

    def _op_logistic(self, n):
        self.op(n, "sigmoid", [self.ids[n.inputs[0]]], [self.ids[n.outputs[0]]])

    def _op_tanh(self, n):
        self.op(n, "tanh", [self.ids[n.inputs[0]]], [self.ids[n.outputs[0]]])

    def _op_quantize(self, n):
        self.op(n, "requant", [self.ids[n.inputs[0]]], [self.ids[n.outputs[0]]])

    # -- pooling, shape and data movement -------------------------------------------------------------
    def _pool(self, n, kind):
        k = [n.attr("filter_height", 1), n.attr("filter_width", 1)]
        s = [n.attr("stride_h", 1), n.attr("stride_w", 1)]
        pads = self._pads(n, k, s, n.inputs[0], n.outputs[0])
        dst = self.act(n, n.outputs[0])
        self._ordered(
            n,
            "pool",
            [self.ids[n.inputs[0]]],
            dst,
            n.outputs[0],
            type=kind,
            size=[k[1], k[0]],
            stride=[s[1], s[0]],
            pad=pads,
        )

    def _op_max_pool_2d(self, n):
        self._pool(n, "max")

    def _op_average_pool_2d(self, n):
        self._pool(n, "avg")

    def _op_mean(self, n):
        axes = self.buffers.get(n.inputs[1])
        x = shape4(self.g.tensor(n.inputs[0]).shape)
        y = shape4(self.g.tensor(n.outputs[0]).shape)
        if axes is None or sorted(int(a) % 4 for a in np.ravel(axes)) != [1, 2] or y != [x[0], 1, 1, x[3]]:
            raise _Host("npufit: only a mean over height and width (MeanXy) has a support-library operation")
        self.op(n, "meanxy", [self.ids[n.inputs[0]]], [self.ids[n.outputs[0]]])

    def _op_reshape(self, n):
        self.op(n, "reshape", [self.ids[n.inputs[0]]], [self.ids[n.outputs[0]]])

    def _op_concatenation(self, n):
        r = len(self.g.tensor(n.outputs[0]).shape)
        axis = int(n.attr("axis", 0)) % r + (4 - r)
        ins = [
            self.tensor(t, data=self.buffers[t], shape=self.g.tensor(t).shape, dtype=self.g.tensor(t).dtype)
            if self.g.tensor(t).is_const and t in self.buffers
            else self.ids[t]
            for t in n.inputs
        ]
        dst = self.act(n, n.outputs[0])
        self._ordered(n, "concat", ins, dst, n.outputs[0], axis=axis)

    def _split(self, n, x: str, axis: int, sizes: list[int], outs: list[str]):
        r = len(self.g.tensor(x).shape)
        self.op(n, "split", [self.ids[x]], outs, axis=axis % r + (4 - r), sizes=sizes)

    def _op_split(self, n):
        outs = [t for t in n.outputs if t]
        axis = int(np.ravel(self.buffers[n.inputs[0]])[0]) if n.inputs[0] in self.buffers else None
        if axis is None:
            raise _Host("npufit: split axis is not a constant")
        sizes = [
            shape4(self.g.tensor(t).shape)[axis % len(self.g.tensor(t).shape) + 4 - len(self.g.tensor(t).shape)]
            for t in outs
        ]
        self._split(n, n.inputs[1], axis, sizes, [self.ids[t] for t in outs])

    def _op_split_v(self, n):
        outs = [t for t in n.outputs if t]
        axis = self.buffers.get(n.inputs[2])
        if axis is None:
            raise _Host("npufit: split axis is not a constant")
        axis = int(np.ravel(axis)[0])
        r = len(self.g.tensor(n.inputs[0]).shape)
        sizes = [shape4(self.g.tensor(t).shape)[axis % r + 4 - r] for t in outs]
        self._split(n, n.inputs[0], axis, sizes, [self.ids[t] for t in outs])

    def _slice(self, n, begin, end):
        """A unit-stride slice along one axis is the one kept output of a Split (how Arm NN lowers it)."""
        x = self.g.tensor(n.inputs[0]).shape
        r = len(x)
        cut = [a for a in range(r) if begin[a] != 0 or end[a] != x[a]]
        if len(cut) != 1:
            raise _Host(f"npufit: a slice along {len(cut)} axes has no single support-library operation")
        a = cut[0]
        parts = [(0, begin[a]), (begin[a], end[a]), (end[a], x[a])]
        sizes, outs = [], []
        for lo, hi in parts:
            if hi > lo:
                sizes.append(hi - lo)
                outs.append(self.ids[n.outputs[0]] if (lo, hi) == parts[1] else "_")
        self._split(n, n.inputs[0], a, sizes, outs)

    def _op_strided_slice(self, n):
        b, e, s = (self.buffers.get(t) for t in n.inputs[1:4])
        x = self.g.tensor(n.inputs[0]).shape
        if (
            b is None
            or e is None
            or s is None
            or any(int(v) != 1 for v in np.ravel(s))
            or any(n.attr(m, 0) for m in ("ellipsis_mask", "new_axis_mask", "shrink_axis_mask"))
        ):
            raise _Host("npufit: only a unit-stride slice has a support-library lowering (Split)")
        bm, em = n.attr("begin_mask", 0), n.attr("end_mask", 0)
        begin = [0 if bm >> i & 1 else int(v) % x[i] if int(v) < 0 else int(v) for i, v in enumerate(np.ravel(b))]
        end = [
            x[i] if em >> i & 1 else min(x[i], int(v) % x[i] if int(v) < 0 else int(v))
            for i, v in enumerate(np.ravel(e))
        ]
        self._slice(n, begin, end)

    def _op_slice(self, n):
        b, sz = self.buffers.get(n.inputs[1]), self.buffers.get(n.inputs[2])
        x = self.g.tensor(n.inputs[0]).shape
        if b is None or sz is None:
            raise _Host("npufit: slice bounds are not constants")
        begin = [int(v) for v in np.ravel(b)]
        end = [x[i] if int(v) < 0 else begin[i] + int(v) for i, v in enumerate(np.ravel(sz))]
        self._slice(n, begin, end)

    def _op_pad(self, n):
        hw = _pad_hw(n)
        if hw is None:
            raise _Host("npufit: padding batch or channels has no support-library operation (height/width only)")
        self.op(n, "pad", [self.ids[n.inputs[0]]], [self.ids[n.outputs[0]]], pad=hw)

    def _op_depth_to_space(self, n):
        self.op(n, "d2s", [self.ids[n.inputs[0]]], [self.ids[n.outputs[0]]], block=n.attr("block_size", 2))

    def _op_space_to_depth(self, n):
        self.op(n, "s2d", [self.ids[n.inputs[0]]], [self.ids[n.outputs[0]]], block=n.attr("block_size", 2))

    def _op_transpose(self, n):
        perm = self.buffers.get(n.inputs[1])
        if perm is None or perm.size != 4:
            raise _Host("npufit: only a 4-D transpose with a constant permutation has a support-library operation")
        self.op(n, "transpose", [self.ids[n.inputs[0]]], [self.ids[n.outputs[0]]], perm=[int(v) for v in perm])

    def _op_resize_nearest_neighbor(self, n):
        self.op(n, "resize", [self.ids[n.inputs[0]]], [self.ids[n.outputs[0]]], algo="nearest")

    def _op_resize_bilinear(self, n):
        self.op(n, "resize", [self.ids[n.inputs[0]]], [self.ids[n.outputs[0]]], algo="bilinear")


_ALIASES = {
    "SQUEEZE": "_op_reshape",
    "EXPAND_DIMS": "_op_reshape",
    "RELU6": "_op_relu",
    "RELU_N1_TO_1": "_op_relu",
    "RELU_0_TO_1": "_op_relu",
    "PADV2": "_op_pad",
}


class _Host(Exception):
    """An operator npufit sends to the host without asking the library (the message says why)."""


def _pad_hw(n: NodeView) -> list[int] | None:
    """[top, bottom, left, right] of a 4-D PAD that pads only height and width, else None."""
    p = n.const_value(1) if n.is_const(1) else None
    if p is None or p.shape != (4, 2) or p[0].any() or p[3].any():
        return None
    return [int(p[1, 0]), int(p[1, 1]), int(p[2, 0]), int(p[2, 1])]


def read_buffers(graph: Graph, path: str | Path) -> dict[str, np.ndarray]:
    """Constant tensors of a TFLite file, full size (npufit's Graph keeps only small values)."""
    import tflite

    data = read_bytes_capped(path, 2**31, "TFLite model")
    model = tflite.Model.GetRootAsModel(data, 0)
    sg = model.Subgraphs(0)
    names = list(graph.tensors)
    out: dict[str, np.ndarray] = {}
    for i in range(min(sg.TensorsLength(), len(names))):
        t = graph.tensor(names[i])
        if not t.is_initializer or t.dtype not in _NP or t.shape is None:
            continue
        buf = model.Buffers(sg.Tensors(i).Buffer())
        if buf.DataLength():
            raw = buf.DataAsNumpy().tobytes()
        elif buf.Offset() > 1:
            raw = bytes(data[buf.Offset() : buf.Offset() + buf.Size()])
        else:
            continue
        arr = np.frombuffer(raw, dtype=_NP[t.dtype])
        n = int(np.prod(t.shape)) if t.shape else 1
        if arr.size == n:
            out[names[i]] = arr.reshape(t.shape)
    return out


def lower(graph: Graph, path: str | Path) -> Lowered:
    if graph.format != "tflite":
        raise NpufitError("the Ethos-N lowering reads an int8 TFLite graph (ONNX is converted first)")
    return _Lowering(graph, read_buffers(graph, path)).run()


def request_with(lowered: Lowered, variant: str, sram: int, blob_path: Path) -> str:
    head = f"variant {variant}\nsram {sram}\nblob {blob_path}\n"
    first, rest = lowered.request.split("\n", 1)
    return f"{first}\n{head}{rest}"


__all__ = ["Lowered", "lower", "request_with", "read_buffers", "shape4"]

"""Conv1d as Conv2d for the converter: a rank-3 Conv becomes Unsqueeze(axis 2) -> Conv (1 x k) -> Squeeze(axis 2),
and the Squeeze sinks through the channel-wise ops after it (BatchNormalization, activations, scalar arithmetic,
residual Add/Mul of two such tensors), so a chain of Conv1d blocks stays one 4-D NHWC region with no layout
change between its convolutions. Same math as npufit/rewrite's `conv1d_to_conv2d` (exact), written for the
converter's own copy in one linear pass: the generic pattern rewriter costs seconds on transformer-sized graphs."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from .prepass_build import attr as _attr
from .prepass_build import default_opset

# ops that act per element or per channel (axis 1) and so do not care whether an axis of size 1 is present
_CHANNELWISE = {
    "BatchNormalization",
    "Relu",
    "LeakyRelu",
    "Sigmoid",
    "Tanh",
    "Clip",
    "Elu",
    "HardSwish",
    "HardSigmoid",
    "Erf",
    "Identity",
    "Dropout",
    "Softplus",
    "Abs",
    "Neg",
    "Exp",
}
_BINARY = {"Add", "Mul", "Sub", "Div", "Max", "Min"}
_POOLS = {"AveragePool", "MaxPool"}  # 1-D pools (wav2vec-style feature pooling) take the same (1, k) rewrite


class _G:
    def __init__(self, model: onnx.ModelProto):
        self.model = model
        self.opset = default_opset(model)
        self.consts = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
        self.outputs = {o.name for o in model.graph.output}
        self.n = 0

    def fresh(self, base: str) -> str:
        self.n += 1
        return f"{base}/c1d{self.n}"

    def axes_const(self, base: str) -> str:
        name = self.fresh(base + "_axes")
        self.model.graph.initializer.append(numpy_helper.from_array(np.array([2], np.int64), name))
        return name

    def squeeze(self, x: str, out: str, base: str) -> onnx.NodeProto:
        if self.opset >= 13:
            return helper.make_node("Squeeze", [x, self.axes_const(base)], [out], name=self.fresh(base + "/squeeze"))
        return helper.make_node("Squeeze", [x], [out], name=self.fresh(base + "/squeeze"), axes=[2])

    def unsqueeze(self, x: str, out: str, base: str) -> onnx.NodeProto:
        if self.opset >= 13:
            return helper.make_node(
                "Unsqueeze", [x, self.axes_const(base)], [out], name=self.fresh(base + "/unsqueeze")
            )
        return helper.make_node("Unsqueeze", [x], [out], name=self.fresh(base + "/unsqueeze"), axes=[2])


def _is_scalar(g: _G, name: str) -> bool:
    v = g.consts.get(name)
    return v is not None and v.size == 1


def conv1d_to_conv2d(model: onnx.ModelProto) -> tuple[int, dict[str, str]]:
    """Rewrite in place; -> (Conv1d and 1-D pool nodes rewritten, helper node -> user's node)."""
    g = _G(model)
    convs = [
        n
        for n in model.graph.node
        if n.op_type == "Conv"
        and n.input[1] in g.consts
        and g.consts[n.input[1]].ndim == 3
        or n.op_type in _POOLS
        and len(_attr(n, "kernel_shape", [])) == 1
    ]
    if not convs:
        return 0, {}
    origin: dict[str, str] = {}
    four: dict[str, str] = {}  # 3-D tensor -> its 4-D twin ([N, C, 1, L]) when one exists
    new_nodes: list[onnx.NodeProto] = []
    conv_ids = {id(n) for n in convs}
    replaced: set[str] = set()  # 3-D tensors whose producer now writes the 4-D twin
    for n in model.graph.node:
        if id(n) in conv_ids:
            x = n.input[0]
            if x not in four:
                x4 = g.fresh(x)
                new_nodes.append(g.unsqueeze(x, x4, n.name))
                origin[new_nodes[-1].name] = n.name
                four[x] = x4
            if n.op_type == "Conv":
                w = g.consts[n.input[1]]
                wname = g.fresh(n.input[1])
                model.graph.initializer.append(numpy_helper.from_array(w[:, :, None, :], wname))
                attrs, ins = {"group": int(_attr(n, "group", 1))}, [four[x], wname] + list(n.input[2:])
            else:  # a 1-D pool: the same (1, k) window; its other attributes carry over unchanged
                attrs = {k: _attr(n, k, None) for k in ("ceil_mode", "count_include_pad", "storage_order")}
                attrs, ins = {k: v for k, v in attrs.items() if v is not None}, [four[x]]
            for key in ("kernel_shape", "strides", "dilations"):
                v = _attr(n, key, None)
                if v is not None:
                    attrs[key] = [1, *v]
            pads = _attr(n, "pads", None)
            if pads is not None:
                attrs["pads"] = [0, pads[0], 0, pads[1]]
            auto = _attr(n, "auto_pad", None)
            if auto is not None:
                attrs["auto_pad"] = auto.decode() if isinstance(auto, bytes) else auto
            y4 = g.fresh(n.output[0])
            new_nodes.append(helper.make_node(n.op_type, ins, [y4], name=n.name, **attrs))
            four[n.output[0]] = y4
            replaced.add(n.output[0])
            continue
        ins = [i for i in n.input if i]
        if n.op_type in _CHANNELWISE and ins and ins[0] in four and len(n.output) >= 1 and n.output[0] not in g.outputs:
            y4 = g.fresh(n.output[0])
            new_nodes.append(
                helper.make_node(
                    n.op_type,
                    [four[ins[0]]] + list(n.input[1:]),
                    [y4] + list(n.output[1:]),
                    name=n.name,
                    domain=n.domain,
                    **{a.name: helper.get_attribute_value(a) for a in n.attribute},
                )
            )
            four[n.output[0]] = y4
            replaced.add(n.output[0])
            continue
        if (
            n.op_type in _BINARY
            and len(ins) == 2
            and n.output[0] not in g.outputs
            and all(i in four or _is_scalar(g, i) for i in ins)
            and any(i in four for i in ins)
        ):
            y4 = g.fresh(n.output[0])
            new_nodes.append(helper.make_node(n.op_type, [four.get(i, i) for i in n.input], [y4], name=n.name))
            four[n.output[0]] = y4
            replaced.add(n.output[0])
            continue
        new_nodes.append(n)
    # every 3-D tensor that is still read as 3-D (or is a model output) gets one Squeeze of its 4-D twin
    needed = {i for n in new_nodes for i in n.input} | g.outputs
    back = {four[t3]: t3 for t3 in replaced if t3 in needed}
    out_nodes = []
    for n in new_nodes:
        out_nodes.append(n)
        for o in n.output:
            if o in back:
                out_nodes.append(g.squeeze(o, back[o], n.name))
                origin[out_nodes[-1].name] = n.name
    del model.graph.node[:]
    model.graph.node.extend(out_nodes)
    return len(convs), origin

"""The node builder and attribute reader the converter's graph pre-passes share (prepass.py and its sub-passes)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper


def default_opset(model: onnx.ModelProto) -> int:
    return next((int(o.version) for o in model.opset_import if o.domain in ("", "ai.onnx")), 13)


def attr(node: onnx.NodeProto, name: str, default):
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


class Builder:
    """Appends nodes/initializers for one decomposed node under unique names derived from it."""

    def __init__(self, model: onnx.ModelProto, node: onnx.NodeProto, taken: set[str]):
        self.model, self.base, self.taken, self.nodes = model, node.name or node.op_type, taken, []
        self.opset = default_opset(model)

    def name(self, step: str) -> str:
        n, i = f"{self.base}/{step}", 1
        while n in self.taken:
            i += 1
            n = f"{self.base}/{step}{i}"
        self.taken.add(n)
        return n

    def const(self, step: str, value) -> str:
        n = self.name(step)
        self.model.graph.initializer.append(numpy_helper.from_array(np.asarray(value), n))
        return n

    def op(self, op_type: str, inputs, step: str, out: str | None = None, **attrs) -> str:
        name = self.name(step)
        self.nodes.append(helper.make_node(op_type, list(inputs), [out or name], name=name, **attrs))
        return out or name

    def mean(self, x: str, axes: list[int], step: str) -> str:
        if self.opset >= 18:
            return self.op("ReduceMean", [x, self.const(step + "_axes", np.array(axes, np.int64))], step, keepdims=1)
        return self.op("ReduceMean", [x], step, axes=axes, keepdims=1)

    def reduce(self, op: str, x: str, axes: list[int] | None, keep: int, step: str) -> str:
        """A reduction over `axes` (None: all), axes as an input where the opset takes them so (ReduceSum from 13,
        the others from 18)."""
        if axes is None:
            return self.op(op, [x], step, keepdims=keep)
        if self.opset >= (13 if op == "ReduceSum" else 18):
            return self.op(op, [x, self.const(step + "_axes", np.array(axes, np.int64))], step, keepdims=keep)
        return self.op(op, [x], step, axes=axes, keepdims=keep)

    def normalize(self, x: str, axes: list[int], eps: float, out: str | None = None, parts: dict | None = None) -> str:
        """(x - mean) / sqrt(var + eps) over `axes` (keepdims), written to `out`; `parts` gets the mean and the
        standard deviation tensors."""
        mu = self.mean(x, axes, "mean")
        d = self.op("Sub", [x, mu], "centered")
        var = self.mean(self.op("Mul", [d, d], "squared"), axes, "variance")
        std = self.op(
            "Sqrt", [self.op("Add", [var, self.const("epsilon", np.array(eps, np.float32))], "variance_eps")], "std"
        )
        if parts is not None:
            parts.update(mean=mu, std=std)
        return self.op("Div", [d, std], "normalized", out=out)

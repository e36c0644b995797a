"""The converted model's QDQ twin: the source ONNX graph with the converter's own int8 parameters as Q/DQ pairs.

Why: `npufit check` on a float ONNX model predicts "CPU" for every node of an int8-only NPU (Ethos-U runs no
float), so `compile --compare-prediction` needs the int8 model at ONNX level, with the ONNX node names the
placement is reported in. It also runs in ONNX Runtime: an int8 simulation with the same scales, slightly
noisier than the TFLite because tensors the TFLite fuses away (conv output before its ReLU) are quantized too.
An int16 (16x8) file's activations appear as int8 over the same ranges: QuantizeLinear takes int16 only from
opset 21, and the twin keeps the source's opset."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from ..util.io import atomic_save_onnx
from .lower import Lowering
from .qparams import activation_q, per_channel_weights


def write_qdq_twin(L: Lowering, work_nodes, path: Path) -> Path:
    m = onnx.ModelProto()
    m.CopyFrom(L.prep.model)
    g = m.graph
    work = {n.name for n in work_nodes}
    graph_out = {o.name for o in g.output}
    # integer inputs (token ids, masks) are carried unquantized: no Q/DQ pair on them
    acts = [o for n in work_nodes for o in n.outputs if o and o in L.ranges.lo] + [
        i for i in L.prep.graph.input_names if L.tensors[i].q is not None
    ]
    new_nodes, inits, rename = [], [], {}
    for t in dict.fromkeys(acts):
        q = L.tensors[t].q if t in L.tensors and L.tensors[t].q is not None else L.q_of(t)
        q = activation_q(*q.range) if q.bits == 16 else q
        s, z = f"{t}/qdq_scale", f"{t}/qdq_zp"
        inits += [
            numpy_helper.from_array(np.array(q.scale, np.float32), s),
            numpy_helper.from_array(np.array(q.zero_point, np.int8), z),
        ]
        src = f"{t}/float" if t in graph_out else t
        dst = t if t in graph_out else f"{t}/dq"
        rename[t] = (src, dst)
        new_nodes.append(
            (
                t,
                [
                    helper.make_node("QuantizeLinear", [src, s, z], [f"{t}/q"], name=f"{t}/QuantizeLinear"),
                    helper.make_node("DequantizeLinear", [f"{t}/q", s, z], [dst], name=f"{t}/DequantizeLinear"),
                ],
            )
        )
    after = {t: nodes for t, nodes in new_nodes}
    out_nodes = [n for t in L.prep.graph.input_names for n in after.get(t, [])]
    for i, n in enumerate(g.node):
        # an unnamed node keeps the name npufit's loader gave it (by its index, which the pairs inserted here shift)
        n.name = n.name or f"{n.op_type}_{i}"
        orig_outs = list(n.output)
        if n.name in work:
            for i, name in enumerate(n.input):
                if name in rename:
                    n.input[i] = rename[name][1]
            if n.op_type in ("Conv", "Gemm", "MatMul") and len(n.input) > 1:
                _dequantize_weight(L, n, inits, out_nodes)
            for i, o in enumerate(n.output):
                if o in graph_out and o in rename:
                    n.output[i] = rename[o][0]
        out_nodes.append(n)
        for o in orig_outs:
            out_nodes.extend(after.get(o, []))
    del g.node[:]
    g.node.extend(out_nodes)
    g.initializer.extend(inits)
    del g.value_info[:]
    for o in g.output:
        if o.name in rename:  # an integer output (TopK's indices) keeps its type
            o.type.tensor_type.elem_type = TensorProto.FLOAT
    return atomic_save_onnx(m, path)


def _dequantize_weight(L: Lowering, n, inits: list, out_nodes: list) -> None:
    """Constant weight -> per-channel int8 initializer + DequantizeLinear (what the TFLite file holds)."""
    w = L.const(n.input[1])
    if w is None or w.ndim < 2:
        return
    trans_b = next((a.i for a in n.attribute if a.name == "transB"), 0)
    axis = 0 if n.op_type == "Conv" or (n.op_type == "Gemm" and trans_b) else 1
    wq, ws = per_channel_weights(w, axis)
    base = f"{n.name}/weight"
    opset = next((o.version for o in L.prep.model.opset_import if o.domain in ("", "ai.onnx")), 13)
    if opset < 13:  # per-channel DequantizeLinear (axis) exists from opset 13: store the same values dequantized
        shape = [1] * wq.ndim
        shape[axis] = -1
        inits.append(numpy_helper.from_array((wq.astype(np.float32) * ws.astype(np.float32).reshape(shape)), base))
        n.input[1] = base
        return
    inits += [
        numpy_helper.from_array(wq, f"{base}_q"),
        numpy_helper.from_array(ws.astype(np.float32), f"{base}_scale"),
        numpy_helper.from_array(np.zeros(len(ws), np.int8), f"{base}_zp"),
    ]
    out_nodes.append(
        helper.make_node(
            "DequantizeLinear",
            [f"{base}_q", f"{base}_scale", f"{base}_zp"],
            [base],
            name=f"{base}/DequantizeLinear",
            axis=axis,
        )
    )
    n.input[1] = base

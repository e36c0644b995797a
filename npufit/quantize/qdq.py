"""Read the QDQ structure: which float activation each QuantizeLinear→DequantizeLinear pair wraps,
and build the probe models that expose every pair in one ONNX Runtime run.

Probe models (all written to the temp folder, never next to the user's files):
  float probe  — the float model with every paired activation as an extra output;
  entire probe — the QDQ model with every pair's dequantized tensor as an extra output (errors accumulate);
  single probe — the entire probe where each pair's consumers read the float reference instead (fed as
                 extra inputs), so each layer computes from exact float inputs with its own quantized weights
                 and output: only the error born in the layer shows (RKNN's "single" split).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REF_SUFFIX = "::npufit_ref"


@dataclass
class ActivationPair:
    """One quantized activation: the float tensor `name` and its quantized counterpart `dequantized`."""

    name: str  # tensor name in the float model
    raw: str  # tensor the QuantizeLinear reads in the QDQ model (== name unless ORT renamed a graph output)
    q_node: str
    dequantized: tuple[str, ...]  # outputs of the DequantizeLinear nodes that read this pair's Q output
    node: str  # producer in the float model ('' for a graph input)
    op_type: str  # its op ('input' for a graph input)
    qdq_node: str  # producer in the QDQ model (a Conv when ORT fused the following Relu into it)
    qdq_op: str
    inputs: tuple[str, ...]  # names of the pairs feeding qdq_node (its quantized activation inputs)
    scale: float
    zero_point: int
    dtype: str
    elem_type: int  # ONNX element type of the float tensor

    @property
    def is_graph_input(self) -> bool:
        return self.op_type == "input"

    @property
    def value_range(self) -> tuple[float, float]:
        info = np.iinfo(np.dtype(self.dtype))
        with np.errstate(over="ignore", invalid="ignore"):
            return (
                float(np.float64(self.scale) * (info.min - self.zero_point)),
                float(np.float64(self.scale) * (info.max - self.zero_point)),
            )


def _const_value(model, name: str):
    from onnx import numpy_helper

    for t in model.graph.initializer:
        if t.name == name:
            return numpy_helper.to_array(t)
    for n in model.graph.node:
        if n.op_type == "Constant" and n.output and n.output[0] == name:
            for a in n.attribute:
                if a.name == "value":
                    return numpy_helper.to_array(a.t)
    return None


def _elem_types(model) -> dict[str, int]:
    g = model.graph
    return {
        vi.name: vi.type.tensor_type.elem_type
        for vi in list(g.input) + list(g.output) + list(g.value_info)
        if vi.type.HasField("tensor_type")
    }


def find_pairs(float_model, qdq_model) -> tuple[list[ActivationPair], list[str]]:
    """Every activation QuantizeLinear with its DequantizeLinear(s), mapped back to the float tensor it wraps."""
    fg, qg = float_model.graph, qdq_model.graph
    float_producer = {o: (i, n) for i, n in enumerate(fg.node) for o in n.output if o}
    float_inputs = [i.name for i in fg.input if i.name not in {t.name for t in fg.initializer}]
    q_producer = {o: n for n in qg.node for o in n.output if o}
    consumers: dict[str, list] = {}
    for n in qg.node:
        for t in n.input:
            if t:
                consumers.setdefault(t, []).append(n)
    constants = {t.name for t in qg.initializer} | {
        n.output[0] for n in qg.node if n.op_type == "Constant" and n.output
    }
    types = _elem_types(float_model)
    notes: list[str] = []
    pairs, skipped = [], 0
    for q in qg.node:
        if q.op_type != "QuantizeLinear" or not q.input or q.input[0] in constants:
            continue  # a Q on a constant is a weight, not an activation
        raw = q.input[0]
        dqs = [c for c in consumers.get(q.output[0], []) if c.op_type == "DequantizeLinear"]
        if not dqs:
            continue
        if raw in float_producer or raw in float_inputs:
            name = raw
        else:  # ORT renames a quantized graph output: Conv -> X_QuantizeLinear_Input -> Q -> DQ -> X
            name = next((d.output[0] for d in dqs if d.output[0] in float_producer), "")
            if not name:
                skipped += 1
                continue
        scale = _const_value(qdq_model, q.input[1])
        zp = _const_value(qdq_model, q.input[2]) if len(q.input) > 2 and q.input[2] else None
        if scale is None or np.size(scale) != 1:
            skipped += 1  # per-channel / blocked activation quantization: no single range to report
            continue
        dtype = np.asarray(zp).dtype.name if zp is not None else "uint8"
        if name in float_producer:
            fnode = float_producer[name][1]
            node, op = fnode.name, fnode.op_type
        else:
            node, op = "", "input"
        qprod = q_producer.get(raw)
        pairs.append(
            ActivationPair(
                name=name,
                raw=raw,
                q_node=q.name,
                dequantized=tuple(d.output[0] for d in dqs),
                node=node,
                op_type=op,
                qdq_node=qprod.name if qprod is not None else "",
                qdq_op=qprod.op_type if qprod is not None else "input",
                inputs=(),
                scale=float(np.asarray(scale).reshape(-1)[0]),
                zero_point=int(np.asarray(zp).reshape(-1)[0]) if zp is not None else 0,
                dtype=dtype,
                elem_type=types.get(name, 1),
            )
        )
    by_dq = {d: p.name for p in pairs for d in p.dequantized}
    for p in pairs:
        qprod = q_producer.get(p.raw)
        if qprod is not None:
            p.inputs = tuple(dict.fromkeys(by_dq[t] for t in qprod.input if t in by_dq))
    order = {name: i for i, name in enumerate(float_inputs)}
    order.update({o: len(float_inputs) + i for o, (i, _) in float_producer.items()})
    pairs.sort(key=lambda p: order.get(p.name, 1 << 30))
    if skipped:
        notes.append(
            f"{skipped} Q/DQ pair(s) have no float counterpart or a per-channel activation scale; not in the per-layer "
            "table"
        )
    return pairs, notes


# -- probe models -----------------------------------------------------------------------------------------------
def _add_outputs(model, names: Sequence[str], elem_types: dict[str, int]) -> None:
    from onnx import helper

    have = {o.name for o in model.graph.output} | {i.name for i in model.graph.input}
    for n in dict.fromkeys(names):
        if n not in have:
            model.graph.output.append(helper.make_tensor_value_info(n, elem_types.get(n, 1), None))


def _save(model, path: Path) -> Path:
    import onnx

    big = model.ByteSize() > 1_800_000_000
    onnx.save_model(
        model, str(path), save_as_external_data=big, all_tensors_to_one_file=True, location=path.name + ".data"
    )
    return path


def write_float_probe(float_model, pairs: Sequence[ActivationPair], path: Path) -> Path:
    """The float model with every paired activation as an output (mutates the given proto: pass a copy)."""
    _add_outputs(float_model, [p.name for p in pairs if not p.is_graph_input], {p.name: p.elem_type for p in pairs})
    return _save(float_model, path)


def write_probes(qdq_model, pairs: Sequence[ActivationPair], folder: Path) -> tuple[Path, Path]:
    """Entire and single probes from one proto (mutated in place, so only one copy of the weights is held)."""
    from onnx import helper

    types = {d: p.elem_type for p in pairs for d in p.dequantized}
    _add_outputs(qdq_model, [p.dequantized[0] for p in pairs], types)
    entire = _save(qdq_model, folder / "probe_entire.onnx")

    g = qdq_model.graph
    rename: dict[str, str] = {}
    new_inputs = []
    for p in pairs:
        if p.is_graph_input:
            continue  # its consumers already read Q/DQ of the float input, which is the reference itself
        ref = p.name + REF_SUFFIX
        new_inputs.append(helper.make_tensor_value_info(ref, p.elem_type, None))
        for d in p.dequantized:
            rename[d] = ref
        rename.setdefault(p.raw, ref)  # float consumers of the raw tensor (outside the Q) read the reference too
    pair_q = {p.q_node for p in pairs}
    for n in g.node:
        if n.name in pair_q:
            continue
        for i, t in enumerate(n.input):
            if t in rename:
                n.input[i] = rename[t]
    g.input.extend(new_inputs)
    return entire, _save(qdq_model, folder / "probe_single.onnx")

"""Multiply-accumulate estimates per node, for coverage by compute rather than by node count."""

from __future__ import annotations

from math import prod

from .model import NodeView


def _static(shape) -> bool:
    if shape is None:
        return False
    for d in shape:  # a loop, not all(<generator>): this runs for every conv and matmul of every check
        if not isinstance(d, int) or d < 0:
            return False
    return True


def node_macs(node: NodeView) -> int:
    f = _MACS.get(node.op_type)  # one dict read: most nodes (activations, adds) have no MACs
    if f is None:
        return 0
    try:
        return f(node)
    except (TypeError, ValueError, IndexError):
        return 0


def _shape(node: NodeView, names: tuple[str, ...], i: int):
    """node.input_shape(i) / output_shape(i) with the tensor table read inline (every conv of every check)."""
    if i >= len(names) or not names[i]:
        return None
    t = node.graph.tensors.get(names[i]) or node.graph.tensor(names[i])
    return t.shape


def _conv(node: NodeView) -> int:
    out, w = _shape(node, node.outputs, 0), _shape(node, node.inputs, 3 if node.op_type == "QLinearConv" else 1)
    if not (_static(out) and _static(w)):
        return 0
    if node.graph.format == "tflite":
        # TFLite: OHWI (conv) / 1HWO (depthwise); output NHWC
        k = prod(w[1:-1])
        cin = w[-1] if node.op_type != "DEPTHWISE_CONV_2D" else 1
        return prod(out) * k * cin
    return prod(out) * prod(w[1:])  # out elems x (Cin/group x k...)


def _conv_transpose(node: NodeView) -> int:
    inp, w = node.input_shape(0), node.input_shape(1)
    if node.graph.format == "tflite":
        inp, w = node.input_shape(2), node.input_shape(1)
    if not (_static(inp) and _static(w)):
        return 0
    if node.graph.format == "tflite":
        return prod(inp) * prod(w[:-1])
    return prod(inp) * prod(w[1:])


def _matmul(node: NodeView) -> int:
    a_idx, b_idx = (0, 3) if node.op_type == "QLinearMatMul" else (0, 1)
    a, b, out = node.input_shape(a_idx), node.input_shape(b_idx), node.output_shape(0)
    if not (_static(a) and _static(out)) or not a:
        return 0
    if node.op_type == "Gemm" and node.attr("transA", 0):
        k = a[0]
    elif node.op_type == "FULLY_CONNECTED" and _static(b):
        k = b[-1]
    else:
        k = a[-1]
    return prod(out) * int(k)


def _rnn(node: NodeView) -> int:
    x = node.input_shape(0)
    hidden = node.attr("hidden_size")
    if not _static(x) or not hidden or len(x) < 3:
        return 0
    gates = {"LSTM": 4, "GRU": 3}.get(node.op_type, 1)
    dirs = 2 if node.attr("direction", "forward") == "bidirectional" else 1
    seq, batch, inp = x[0], x[1], x[2]
    return seq * batch * dirs * gates * hidden * (inp + hidden)


_MACS = {
    **dict.fromkeys(("Conv", "QLinearConv", "ConvInteger", "CONV_2D", "DEPTHWISE_CONV_2D", "CONV_3D"), _conv),
    **dict.fromkeys(("ConvTranspose", "TRANSPOSE_CONV"), _conv_transpose),
    **dict.fromkeys(("Gemm", "MatMul", "QLinearMatMul", "MatMulInteger", "FULLY_CONNECTED", "BATCH_MATMUL"), _matmul),
    **dict.fromkeys(("LSTM", "GRU", "RNN", "UNIDIRECTIONAL_SEQUENCE_LSTM", "BIDIRECTIONAL_SEQUENCE_LSTM"), _rnn),
}
MAC_OPS = frozenset(_MACS)  # op types with a MAC estimate: callers skip node_macs for the rest (most nodes)

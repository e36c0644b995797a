"""A compiler-driven sweep generator: tiny graphs over op x attributes x shapes x neighbouring ops, run through the real
compilers, so that rule bounds come from measured records rather than from the models where a class happened to show.

    python -m calibration.sweep list [--families conv2d transpose ...]
    python -m calibration.sweep run --target rk3588|ethos-u55-256|ethos-u85-256|ethos-n78 [--families ...]
        [--cases GLOB,...] [--record]

Families (FAMILIES), each a product over its axes:
- conv2d: kernel 1x1 .. 9x9 and 1-D-like 1x7 / 7x1 / 1x31 x stride 1 / 2 x dense / depthwise;
- conv1d: 1-D convolutions on [1, C, L], short to long kernels, and STFT-style front ends (1 -> 258 channels, kernel
  256 / 400 / 512 with hop 128 / 160 / 256, the 1x256 kernel of a VAD's STFT);
- transpose: every batch-keeping 4-D permutation x shapes from 8x16x16 to [1, 400, 2, 400] (the shape range Vela
  leaves a TRANSPOSE on the CPU for);
- focus: strided slices as in YOLOX's Focus stem (four step-2 slices + Concat) and single step-2 slices;
- head: YOLOv8's DFL (Reshape [1, 4, 16, A] -> Transpose -> Softmax -> 1x1 Conv -> Reshape) for A = 8400 / 2100 / 525,
  and the multi-scale Reshape + Concat of detection heads;
- head_parts: a multi-scale head's maps flattened to rows, joined on the anchor axis and split into a map (a pose
  head's [1, 51, A] -> [1, 17, 3, A], YOLOv8's DFL), one to three scales of 640 / 320 / 160 inputs and beside them,
  51 channels beside multiples of 8, a split read by a conv or a Transpose, float16 and int8 builds;
- merge_parts: a pose head's keypoint decode (split, scale and Sigmoid, Concat) merged back into rows, by anchors;
- yolox: YOLOX's exported head (box, objectness and class convs joined per scale, flattened, joined on the anchor axis,
  transposed to [1, A, 5 + classes]) at 320 to 768 inputs, 80 classes and one, float16 and int8 builds;
- rows_transpose: rows [1, C, A] transposed to [1, A, C] by A, as a model output and read by a linear layer;
- qkv5d: batch-1 self-attention whose fused q/k/v projection is split through a 5-D view, as timm's ViT and PP-OCRv4
  (transposed, then sliced) and DINOv3 (sliced, then transposed) write it;
- arity: Sum / Mean / Max / Min of 2, 3 and 4 inputs;
- cast: float -> int32 / int64 / int8 / uint8 / float16 / bool -> float round trips, and integer Add paths;
- attention: batch-1 multi-head attention in the sequence-first layout torch's nn.MultiheadAttention exports and in the
  batch-first one, 1 / 4 heads, 16 / 64 / 400 tokens;
- unary: element-wise functions of one tensor (Sqrt, Exp, Log, ... UNARY_OPS) on a map and on [1, C, T] rows, and an
  STFT magnitude (halves squared, added, Sqrt), LayerNorm and RMSNorm as exporters decompose them (a Sqrt in the
  denominator), float16 and int8 builds;
- softmax: Softmax by rank, axis and size (a DFL head's bins, a map's channels, an attention map's last axis, a
  classifier's [1, C]);
- token_matmul: a projection of [1, T, C] tokens (MatMul with a constant [C, K] weight) after a LayerNorm as exporters
  decompose it, after one LayerNormalization op, and after none, by C and K.
The earlier hand-written sweeps (rknn_sweep.py: Resize, pooling, Reshape, Slice; rknn_sweep2.py: integer arithmetic,
GELU forms, Gather, Pad, window attention) are families "rknn_sweep" and "rknn_sweep2" here: run through any compiler
with --families (their rk3588 records stay in rk3588-cases.json, made by rknn_cases.py).

Each graph is conv 1x1 -> the pattern -> [a reshape to 4-D] -> conv 1x1 (rknn_sweep._graph), written as ONNX directly
so every attribute is the one named, opset 17. A case records the placement of EVERY top-level node (op "*", with the
op types), so one compile answers for the pattern's neighbours too. RKNN builds are float16 (simulator off); Vela and
the Ethos-N support library get npufit's int8 TFLite conversion. --record writes docs/calibration/sweep/<target>.json
(the case-record format, builder "sweep"); tests/test_calibration_realworld.py replays them."""

from __future__ import annotations

import argparse
import fnmatch
import itertools
import math
import tempfile
from pathlib import Path

import numpy as np

from . import form
from .judge import compile_onnx, compiler_of, is_rknn
from .rknn_sweep import _graph

OPSET = 17
FOLDER = form.RECORDS / "sweep"
TARGETS = ("rk3588", "rk3576", "rk3566", "rv1106", "ethos-u55-256", "ethos-u85-256", "ethos-n78")
ALL = "*"  # a sweep case records every top-level node


def _init(inits: list, name: str, value, dtype=np.float32) -> str:
    from onnx import numpy_helper

    inits.append(numpy_helper.from_array(np.asarray(value, dtype), name))
    return name


def _node(nodes: list, op: str, ins, outs, name: str, **attrs) -> str:
    from onnx import helper

    nodes.append(helper.make_node(op, list(ins), list(outs), name=name, **attrs))
    return outs[0]


def _view(nodes: list, inits: list, x: str, shape, out: str = "rows") -> str:
    """`x` reshaped to `shape` (the pre-conv's map read as rows, tokens or another view)."""
    return _node(nodes, "Reshape", [x, _init(inits, f"{out}_shape", list(shape), np.int64)], [out], f"to_{out}")


def _weights(shape, seed: int) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) / math.sqrt(max(1, math.prod(shape[1:])))).astype(
        np.float32
    )


# -- the pattern builders (each returns an ONNX model) -----------------------------------------------------------------


def conv2d(kh: int, kw: int, stride: int, depthwise: bool, c: int = 16, hw=(16, 64)):
    out = [1, c] + [(d - k) // stride + 1 for d, k in zip(hw, (kh, kw))]

    def body(x, nodes, inits):
        g = c if depthwise else 1
        w = _init(inits, "k_w", _weights((c, c // g, kh, kw), 1))
        return _node(nodes, "Conv", [x, w], ["k"], "conv", kernel_shape=[kh, kw], strides=[stride, stride], group=g)

    return _graph(c, hw, body, out)


def conv1d(k: int, stride: int, c_in: int, c_out: int, depthwise: bool = False, length: int = 4096):
    """A 1-D convolution of the pre-conv's output viewed as [1, C, L] (an audio front end: C_in 1 -> many channels)."""
    frames = (length - k) // stride + 1

    def body(x, nodes, inits):
        t = _node(nodes, "Reshape", [x, _init(inits, "c1_in", [1, c_in, length], np.int64)], ["v"], "to1d")
        g = c_in if depthwise else 1
        w = _init(inits, "c1_w", _weights((c_out, c_in // g, k), 2))
        return _node(nodes, "Conv", [t, w], ["k"], "conv1d", kernel_shape=[k], strides=[stride], group=g)

    return _graph(c_in, (1, length), body, [1, c_out, frames])


def transpose(shape, perm):
    """The pre-conv's [1, C, H, W] output (C, H, W from `shape`) transposed by `perm`."""

    def body(x, nodes, inits):
        return _node(nodes, "Transpose", [x], ["t"], "transpose", perm=list(perm))

    return _graph(shape[1], tuple(shape[2:]), body, [shape[p] for p in perm])


def focus(form_: str, c: int = 3, hw=(64, 64)):
    """YOLOX's Focus stem (form "stem": x[..., ::2, ::2], x[..., 1::2, ::2], x[..., ::2, 1::2], x[..., 1::2, 1::2]
    concatenated on channels), or one step-2 slice on H ("h"), on W ("w") or on both ("hw")."""
    h, w = hw
    parts = {"stem": [(0, 0), (1, 0), (0, 1), (1, 1)], "hw": [(0, 0)], "h": [(0, None)], "w": [(None, 0)]}[form_]

    def body(x, nodes, inits):
        outs = []
        for i, (sh, sw) in enumerate(parts):
            axes = [a for a, s in ((2, sh), (3, sw)) if s is not None]
            starts = [s for s in (sh, sw) if s is not None]
            ins = [
                x,
                _init(inits, f"f{i}_s", starts, np.int64),
                _init(inits, f"f{i}_e", [2**62] * len(axes), np.int64),
                _init(inits, f"f{i}_a", axes, np.int64),
                _init(inits, f"f{i}_p", [2] * len(axes), np.int64),
            ]
            outs.append(_node(nodes, "Slice", ins, [f"s{i}"], f"slice{i}"))
        return outs[0] if len(outs) == 1 else _node(nodes, "Concat", outs, ["cat"], "concat", axis=1)

    oh = h // 2 if parts[0][0] is not None else h
    ow = w // 2 if parts[0][1] is not None else w
    return _graph(c, hw, body, [1, c * len(parts), oh, ow])


def focus_chain(c: int = 3, hw=(640, 640), pre: bool = False, chained: bool = True, shared: bool = False):
    """YOLOX's Focus stem as torch exports `x[..., ::2, ::2]`: per phase a step-2 Slice on H and then one on W
    (chained=True; False: one Slice over both axes), the four phases concatenated on channels. shared=True: the two H
    slices are shared by the phases, as torch exports YOLOv5's `x[:, :, r::2, q::2]` (6 slices, not 8). pre=False:
    straight from the model input, as YOLOX's stem reads the image; pre=True: after a conv."""
    h, w = hw

    def body(x, nodes, inits):
        outs = []
        rows: dict = {}
        for i, (sh, sw) in enumerate(((0, 0), (1, 0), (0, 1), (1, 1))):
            steps = [(2, sh), (3, sw)] if chained else [None]
            t = x
            for j, ax in enumerate(steps):
                if shared and j == 0 and sh in rows:
                    t = rows[sh]
                    continue
                axes, starts = ([2, 3], [sh, sw]) if ax is None else ([ax[0]], [ax[1]])
                ins = [
                    t,
                    _init(inits, f"f{i}{j}_s", starts, np.int64),
                    _init(inits, f"f{i}{j}_e", [2**62] * len(axes), np.int64),
                    _init(inits, f"f{i}{j}_a", axes, np.int64),
                    _init(inits, f"f{i}{j}_p", [2] * len(axes), np.int64),
                ]
                t = _node(nodes, "Slice", ins, [f"s{i}{j}"], f"slice{i}{j}")
                if shared and j == 0:
                    rows[sh] = t
            outs.append(t)
        return _node(nodes, "Concat", outs, ["cat"], "concat", axis=1)

    return _graph(c, hw, body, [1, 4 * c, h // 2, w // 2], pre=pre)


def merge_rows(c: int, h: int, w: int):
    """A conv's [1, C, H, W] output with C and H merged into rows, [1, C*H, W] (YOLOv8's DFL output [1, 1, 4, A] ->
    [1, 4, A], a pose head's keypoints [1, 17, 3, A] -> [1, 51, A]), then viewed as [1, C*H, 1, W] by the next conv."""

    def body(x, nodes, inits):
        t = _node(nodes, "Reshape", [x, _init(inits, "rows_s", [1, c * h, w], np.int64)], ["rows"], "rows")
        return _node(nodes, "Reshape", [t, _init(inits, "back_s", [1, c * h, 1, w], np.int64)], ["back"], "back")

    return _graph(c, (h, w), body, [1, c * h, 1, w])


def flatten(c: int, h: int, w: int):
    """A detection head's flatten of one scale: the conv's [1, C, H, W] map reshaped to [1, C, H*W] (YOLOX and YOLOv8
    write each scale out this way before concatenating them), then viewed as [1, C, 1, H*W] by the next conv."""

    def body(x, nodes, inits):
        t = _node(nodes, "Reshape", [x, _init(inits, "flat_s", [1, c, h * w], np.int64)], ["flat"], "flatten")
        return _node(nodes, "Reshape", [t, _init(inits, "back_s", [1, c, 1, h * w], np.int64)], ["back"], "back")

    return _graph(c, (h, w), body, [1, c, 1, h * w])


def split_rows(c: int, h: int, w: int):
    """Rows split back into channels and height: a conv's [1, C*H, 1, W] output viewed as the rows [1, C*H, W] (a
    detection head's concatenated scales) and reshaped to [1, C, H, W] (a pose head's keypoints [1, 51, A] ->
    [1, 17, 3, A], YOLOv8's DFL input [1, 64, A] -> [1, 4, 16, A]) for the next conv."""

    def body(x, nodes, inits):
        t = _node(nodes, "Reshape", [x, _init(inits, "rows_s", [1, c * h, w], np.int64)], ["rows"], "rows")
        return _node(nodes, "Reshape", [t, _init(inits, "split_s", [1, c, h, w], np.int64)], ["split"], "split")

    return _graph(c * h, (1, w), body, [1, c, h, w])


def concat_rows(anchors: int, parts=(4, 80)):
    """A detection head's last concat: two convs of one [1, C, 1, A] map give the box rows [1, 4, A] and the class rows
    [1, 80, A] (each a Reshape dropping the unit axis), concatenated on the row axis to [1, 84, A], then viewed as 4-D
    by the next conv."""
    c = sum(parts)

    def body(x, nodes, inits):
        rows = []
        for i, k in enumerate(parts):
            w = _init(inits, f"part{i}_w", _weights((k, c, 1, 1), 30 + i))
            t = _node(nodes, "Conv", [x, w], [f"part{i}"], f"part{i}", kernel_shape=[1, 1])
            shp = _init(inits, f"part{i}_s", [1, k, anchors], np.int64)
            rows.append(_node(nodes, "Reshape", [t, shp], [f"rows{i}"], f"rows{i}"))
        t = _node(nodes, "Concat", rows, ["cat"], "concat", axis=1)
        return _node(nodes, "Reshape", [t, _init(inits, "back_s", [1, c, 1, anchors], np.int64)], ["back"], "back")

    return _graph(c, (1, anchors), body, [1, c, 1, anchors])


def head_parts(c: int, k: int, sizes, tail: str = "split", cin: int = 16):
    """A multi-scale head's rows: per scale a model input [1, cin, H, W] -> 1x1 conv to C channels -> Reshape to
    [1, C, H*W], the scales concatenated on the anchor axis (one scale: no Concat), then the rows split into
    [1, k, C / k, A] (a pose head's keypoints [1, 51, A] -> [1, 17, 3, A], YOLOv8's DFL [1, 64, A] -> [1, 4, 16, A])
    for a 1x1 conv ("split"), or transposed first as YOLOv8's DFL does ("transpose")."""
    from onnx import TensorProto, helper

    nodes, inits, inputs, flats = [], [], [], []
    sizes = [(s, s) if isinstance(s, int) else tuple(s) for s in sizes]
    a = sum(h * w for h, w in sizes)
    for i, (h, w) in enumerate(sizes):
        inputs.append(helper.make_tensor_value_info(f"x{i}", TensorProto.FLOAT, [1, cin, h, w]))
        cw = _init(inits, f"c{i}_w", _weights((c, cin, 1, 1), 40 + i))
        t = _node(nodes, "Conv", [f"x{i}", cw], [f"c{i}"], f"conv{i}", kernel_shape=[1, 1])
        flats.append(
            _node(nodes, "Reshape", [t, _init(inits, f"f{i}_s", [1, c, h * w], np.int64)], [f"f{i}"], f"flat{i}")
        )
    t = _node(nodes, "Concat", flats, ["cat"], "concat", axis=2) if len(flats) > 1 else flats[0]
    t = _node(nodes, "Reshape", [t, _init(inits, "split_s", [1, k, c // k, a], np.int64)], ["split"], "split")
    ch, rows = k, c // k
    if tail == "transpose":
        t, ch, rows = _node(nodes, "Transpose", [t], ["tr"], "transpose", perm=[0, 2, 1, 3]), c // k, k
    pw = _init(inits, "post_w", _weights((8, ch, 1, 1), 49))
    _node(nodes, "Conv", [t, pw], ["y"], "post", kernel_shape=[1, 1])
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, rows, a])
    g = helper.make_graph(nodes, "case", inputs, [out], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="npufit-sweep")
    m.ir_version = 8
    return m


def yolox_head(nc: int, sizes, cin: int = 16, join: bool = True, tail: str = "output"):
    """YOLOX's head as its ONNX export writes it (no decode): per scale a model input [1, cin, H, W] through three 1x1
    convs, box (4), objectness (1, Sigmoid) and classes (nc, Sigmoid), joined on the channel axis (join=False: one
    conv to 5 + nc channels), flattened to [1, 5 + nc, H*W]; the scales joined on the anchor axis and transposed to
    the output [1, A, 5 + nc] (tail "matmul": read by a linear layer instead)."""
    from onnx import TensorProto, helper

    nodes, inits, inputs, flats = [], [], [], []
    c = 5 + nc
    for i, (h, w) in enumerate((s, s) if isinstance(s, int) else tuple(s) for s in sizes):
        inputs.append(helper.make_tensor_value_info(f"x{i}", TensorProto.FLOAT, [1, cin, h, w]))
        parts = []
        for j, (what, n) in enumerate((("box", 4), ("obj", 1), ("cls", nc)) if join else (("box", c),)):
            wt = _init(inits, f"{what}{i}_w", _weights((n, cin, 1, 1), 60 + 3 * i + j))
            t = _node(nodes, "Conv", [f"x{i}", wt], [f"{what}{i}"], f"{what}{i}", kernel_shape=[1, 1])
            parts.append(t if what == "box" else _node(nodes, "Sigmoid", [t], [f"{what}{i}_s"], f"{what}{i}_sigmoid"))
        t = _node(nodes, "Concat", parts, [f"out{i}"], f"join{i}", axis=1) if join else parts[0]
        flats.append(
            _node(nodes, "Reshape", [t, _init(inits, f"f{i}_s", [1, c, h * w], np.int64)], [f"f{i}"], f"flat{i}")
        )
    a = sum(h * w for h, w in ((s, s) if isinstance(s, int) else tuple(s) for s in sizes))
    t = _node(nodes, "Concat", flats, ["cat"], "concat", axis=2)
    t = _node(nodes, "Transpose", [t], ["tr" if tail == "matmul" else "y"], "transpose", perm=[0, 2, 1])
    shape = [1, a, c]
    if tail == "matmul":
        _node(nodes, "MatMul", [t, _init(inits, "m_w", _weights((c, 8), 69))], ["y"], "linear")
        shape = [1, a, 8]
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)
    g = helper.make_graph(nodes, "case", inputs, [out], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="npufit-sweep")
    m.ir_version = 8
    return m


def rows_transpose(c: int, hw, tail: str = "output"):
    """Rows [1, C, A] transposed to [1, A, C] (a head's joined scales read anchor by anchor, a text recognizer's
    sequence): a model input [1, 16, H, W] through a 1x1 conv to C channels, flattened to the rows (A = H*W),
    transposed, and written out as the model's output ("output", YOLOX's last node) or read by a linear layer
    ("matmul")."""
    from onnx import TensorProto, helper

    h, w = hw
    nodes, inits = [], []
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, h, w])
    cw = _init(inits, "c_w", _weights((c, 16, 1, 1), 70))
    t = _node(nodes, "Conv", ["x", cw], ["c"], "conv", kernel_shape=[1, 1])
    t = _node(nodes, "Reshape", [t, _init(inits, "f_s", [1, c, h * w], np.int64)], ["rows"], "flatten")
    t = _node(nodes, "Transpose", [t], ["tr" if tail == "matmul" else "y"], "transpose", perm=[0, 2, 1])
    shape = [1, h * w, c]
    if tail == "matmul":
        t = _node(nodes, "MatMul", [t, _init(inits, "m_w", _weights((c, 8), 71))], ["y"], "linear")
        shape = [1, h * w, 8]
    g = helper.make_graph(nodes, "case", [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="npufit-sweep")
    m.ir_version = 8
    return m


def merge_parts(anchors: int, k: int = 17, d: int = 3):
    """A pose head's keypoint decode: a conv's [1, k*d, 1, A] output split into [1, k, d, A], the first d - 1 rows of
    each keypoint scaled and the last through a Sigmoid, joined again on that axis (a Concat) and merged back into the
    rows [1, k*d, A], which the model writes out (Ultralytics' pose head, before its last Concat)."""
    from onnx import TensorProto, helper

    nodes, inits = [], []
    w = _init(inits, "c_w", _weights((k * d, 16, 1, 1), 50))
    t = _node(nodes, "Conv", ["x", w], ["c"], "conv", kernel_shape=[1, 1])
    t = _node(nodes, "Reshape", [t, _init(inits, "split_s", [1, k, d, anchors], np.int64)], ["split"], "split")

    def rows(name, lo, hi):
        ins = [t] + [_init(inits, f"{name}_{i}", [v], np.int64) for i, v in enumerate((lo, hi, 2))]
        return _node(nodes, "Slice", ins, [name], name)

    a = _node(nodes, "Mul", [rows("xy", 0, d - 1), _init(inits, "two", 2.0)], ["xy2"], "scale")
    b = _node(nodes, "Sigmoid", [rows("vis", d - 1, d)], ["vis_s"], "sigmoid")
    t = _node(nodes, "Concat", [a, b], ["kp"], "concat", axis=2)
    _node(nodes, "Reshape", [t, _init(inits, "merge_s", [1, k * d, anchors], np.int64)], ["y"], "merge")
    g = helper.make_graph(
        nodes,
        "case",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 1, anchors])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, k * d, anchors])],
        inits,
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="npufit-sweep")
    m.ir_version = 8
    return m


def tfl_transpose(shape, perm):
    """An int8 TFLite TRANSPOSE written directly (not through npufit's converter): the permutations and shapes a
    TFLite exporter writes (a non-unit leading axis moved, as the attention of an int8 YOLO TFLite file), which npufit's
    converter never writes for a batch-1 model. Compiled from the TFLite file by Vela and the Ethos-N support
    library; RKNN-Toolkit2 is driven from ONNX here, so it has no record of them."""
    from npufit.convert.tflite_writer import TFLiteBuilder

    b = TFLiteBuilder()
    x = b.tensor("input", tuple(shape), "int8", scale=0.05, zero_point=0)
    y = b.tensor("transposed", tuple(shape[p] for p in perm), "int8", scale=0.05, zero_point=0)
    pv = b.tensor("perm", (len(perm),), "int32", data=np.asarray(perm, np.int32))
    b.op("TRANSPOSE", [x, pv], [y], "TransposeOptions")
    b.io([x], [y])
    return TFLite(b.build())


class TFLite(bytes):
    """A case written as a TFLite file (export_case names it .tflite)."""


def dfl(anchors: int, reg_max: int = 16):
    """YOLOv8's distribution focal loss head on [1, 4 * reg_max, A] box logits (A = anchors)."""

    def body(x, nodes, inits):
        t = _node(nodes, "Reshape", [x, _init(inits, "d_s", [1, 4, reg_max, anchors], np.int64)], ["r"], "dfl_r")
        t = _node(nodes, "Transpose", [t], ["t"], "dfl_t", perm=[0, 2, 1, 3])
        t = _node(nodes, "Softmax", [t], ["sm"], "dfl_softmax", axis=1)
        w = _init(inits, "dfl_w", np.arange(reg_max, dtype=np.float32).reshape(1, reg_max, 1, 1))
        t = _node(nodes, "Conv", [t, w], ["dc"], "dfl_conv", kernel_shape=[1, 1])
        return _node(nodes, "Reshape", [t, _init(inits, "d_o", [1, 4, anchors], np.int64)], ["box"], "dfl_out")

    return _graph(4 * reg_max, (1, anchors), body, [1, 4, anchors])


def head_concat(c: int, hw=(80, 80), sigmoid: bool = True):
    """A detection head's multi-scale flatten: the map and two pooled copies (stride 2, 4) reshaped to [1, C, HW_i] and
    concatenated on the anchor axis (YOLOv8 / YOLOX write their three scales out this way), then a Sigmoid."""
    h, w = hw
    sizes = [(h, w), (h // 2, w // 2), (h // 4, w // 4)]

    def body(x, nodes, inits):
        outs = []
        for i, (sh, sw) in enumerate(sizes):
            t = x
            if i:
                k = 2**i
                t = _node(nodes, "MaxPool", [x], [f"p{i}"], f"pool{i}", kernel_shape=[k, k], strides=[k, k])
            shp = _init(inits, f"h{i}_s", [1, c, sh * sw], np.int64)
            outs.append(_node(nodes, "Reshape", [t, shp], [f"f{i}"], f"flat{i}"))
        t = _node(nodes, "Concat", outs, ["cat"], "concat", axis=2)
        return _node(nodes, "Sigmoid", [t], ["sg"], "sigmoid") if sigmoid else t

    return _graph(c, hw, body, [1, c, sum(a * b for a, b in sizes)])


def arity(op: str, n: int, c: int = 16, hw=(16, 16)):
    """`op` (Sum, Mean, Max, Min) over n tensors: the pre-conv's output and n - 1 other 1x1 convs of the input."""

    def body(x, nodes, inits):
        ins = [x] + [_node(nodes, "Conv", *_branch(i, c, inits)) for i in range(1, n)]
        return _node(nodes, op, ins, ["v"], op.lower())

    return _graph(c, hw, body, [1, c, *hw])


def _branch(i: int, c: int, inits: list):
    w = _init(inits, f"b{i}_w", _weights((c, c, 1, 1), 10 + i))
    return ["x", w], [f"b{i}"], f"branch{i}"


_INT = {"int32": 6, "int64": 7, "int8": 3, "uint8": 2, "float16": 10, "bool": 9}


def cast(to: str, add: bool = False, c: int = 8, hw=(8, 8)):
    """A float -> `to` -> float round trip of the pre-conv's output; add=True puts an Add of an integer constant between
    the two casts (an integer path, as index arithmetic writes it)."""

    def body(x, nodes, inits):
        t = _node(nodes, "Cast", [x], ["ci"], "cast_to", to=_INT[to])
        if add:
            t = _node(nodes, "Add", [t, _init(inits, "one", 1, getattr(np, to))], ["ai"], "int_add")
        return _node(nodes, "Cast", [t], ["cf"], "cast_back", to=1)

    return _graph(c, hw, body, [1, c, *hw])


def attention(layout: str, heads: int, hw=(4, 4), c: int = 16):
    """Batch-1 multi-head self-attention over the H*W tokens of the pre-conv's output: "seq" is the sequence-first
    layout torch's nn.MultiheadAttention exports ([N, 1, C], heads split as [N, heads, d] -> Transpose(1, 0, 2)),
    "batch" the batch-first one ([1, N, C] -> [1, N, heads, d] -> Transpose(0, 2, 1, 3))."""
    n, d = hw[0] * hw[1], c // heads

    def body(x, nodes, inits):
        t = _node(nodes, "Reshape", [x, _init(inits, "flat", [1, c, n], np.int64)], ["fl"], "flatten")
        seq = layout == "seq"
        t = _node(nodes, "Transpose", [t], ["tok"], "to_tokens", perm=[2, 0, 1] if seq else [0, 2, 1])
        qkv = []
        for i, nm in enumerate("qkv"):
            w = _init(inits, f"{nm}_w", _weights((c, c), 20 + i))
            p = _node(nodes, "MatMul", [t, w], [f"{nm}_p"], f"{nm}_proj")
            split = [n, heads, d] if seq else [1, n, heads, d]
            r = _node(nodes, "Reshape", [p, _init(inits, f"{nm}_s", split, np.int64)], [f"{nm}_r"], f"{nm}_heads")
            perm = ([1, 2, 0] if nm == "k" else [1, 0, 2]) if seq else ([0, 2, 3, 1] if nm == "k" else [0, 2, 1, 3])
            qkv.append(_node(nodes, "Transpose", [r], [f"{nm}_t"], f"{nm}_transpose", perm=perm))
        s = _node(nodes, "MatMul", qkv[:2], ["scores"], "qk")
        s = _node(nodes, "Mul", [s, _init(inits, "scale", d**-0.5)], ["scaled"], "scale")
        s = _node(nodes, "Softmax", [s], ["attn"], "softmax", axis=-1)
        o = _node(nodes, "MatMul", [s, qkv[2]], ["ctx"], "av")
        o = _node(nodes, "Transpose", [o], ["ctx_t"], "merge_t", perm=[1, 0, 2] if seq else [0, 2, 1, 3])
        o = _node(nodes, "Reshape", [o, _init(inits, "merged", [n, 1, c] if seq else [1, n, c], np.int64)], ["m"], "m")
        return _node(nodes, "Transpose", [o], ["back"], "to_channels", perm=[1, 2, 0] if seq else [0, 2, 1])

    return _graph(c, hw, body, [1, c, n])


def qkv5d(layout: str, heads: int, d: int, hw=(5, 8)):
    """Batch-1 self-attention whose fused q/k/v projection is split through a 5-D [1, N, 3, heads, d] view, as ViT
    exports write it: "timm" transposes the view to [3, 1, heads, N, d] and slices q, k, v off axis 0 (PP-OCRv4's
    recognizer, timm's ViT); "dinov3" slices them off axis 2 first and transposes each [1, N, heads, d] to
    [1, heads, N, d] (DINOv3's attention). The heads are merged back into [1, N, C] rows."""
    c, n = heads * d, hw[0] * hw[1]

    def body(x, nodes, inits):
        t = _node(nodes, "Reshape", [x, _init(inits, "flat", [1, c, n], np.int64)], ["fl"], "flatten")
        t = _node(nodes, "Transpose", [t], ["tok"], "to_tokens", perm=[0, 2, 1])
        t = _node(nodes, "MatMul", [t, _init(inits, "qkv_w", _weights((c, 3 * c), 30))], ["qkv"], "qkv_proj")
        t = _node(nodes, "Reshape", [t, _init(inits, "qkv_s", [1, n, 3, heads, d], np.int64)], ["v5"], "qkv_5d")
        if layout == "timm":
            t = _node(nodes, "Transpose", [t], ["t5"], "qkv_transpose", perm=[2, 0, 3, 1, 4])
        parts = []
        for i, nm in enumerate("qkv"):
            axis = 0 if layout == "timm" else 2
            ins = [t] + [_init(inits, f"{nm}_{k}", [v], np.int64) for k, v in (("b", i), ("e", i + 1), ("a", axis))]
            s = _node(nodes, "Slice", ins, [f"{nm}_sl"], f"{nm}_slice")
            s = _node(nodes, "Squeeze", [s, _init(inits, f"{nm}_ax", [axis], np.int64)], [f"{nm}_sq"], f"{nm}_squeeze")
            if layout == "dinov3":
                s = _node(nodes, "Transpose", [s], [f"{nm}_t"], f"{nm}_transpose", perm=[0, 2, 1, 3])
            parts.append(s)
        kt = _node(nodes, "Transpose", [parts[1]], ["kt"], "k_t", perm=[0, 1, 3, 2])
        s = _node(nodes, "MatMul", [parts[0], kt], ["scores"], "qk")
        s = _node(nodes, "Softmax", [s], ["attn"], "softmax", axis=-1)
        o = _node(nodes, "MatMul", [s, parts[2]], ["ctx"], "av")
        o = _node(nodes, "Transpose", [o], ["ctx_t"], "merge_t", perm=[0, 2, 1, 3])
        o = _node(nodes, "Reshape", [o, _init(inits, "merged", [1, n, c], np.int64)], ["m"], "merge")
        return _node(nodes, "Transpose", [o], ["back"], "to_channels", perm=[0, 2, 1])

    return _graph(c, hw, body, [1, c, n])


def unary(op: str, rank: int = 4, c: int = 16, t: int = 64):
    """`op` on one run-time tensor: the pre-conv's [1, C, 8, T / 8] output (rank 4), or that output viewed as the
    [1, C, T] rows of an audio front end (rank 3). Sqrt, Log and Reciprocal read x * x + 0.001, as a power or a
    variance is (on negative numbers an int8 build fails: its calibration meets NaN)."""
    hw = (8, t // 8) if rank == 4 else (1, t)

    def body(x, nodes, inits):
        if rank == 3:
            x = _view(nodes, inits, x, [1, c, t])
        if op in ("Sqrt", "Log", "Reciprocal"):
            x = _node(nodes, "Mul", [x, x], ["sq"], "square")
            x = _node(nodes, "Add", [x, _init(inits, "eps", 0.001)], ["pos"], "positive")
        return _node(nodes, op, [x], ["u"], op.lower())

    return _graph(c, hw, body, [1, c, *hw] if rank == 4 else [1, c, t])


def magnitude(rank: int = 3, c: int = 129, t: int = 4):
    """An STFT's magnitude: the pre-conv's 2C channels split into real and imaginary halves, squared, added, Sqrt
    (a voice-activity detector's front end on [1, C, T] frames; rank 4 keeps the map)."""
    hw = (1, t)

    def body(x, nodes, inits):
        if rank == 3:
            x = _view(nodes, inits, x, [1, 2 * c, t])
        parts = []
        for i, (a, b) in enumerate(((0, c), (c, 2 * c))):
            ins = [x, _init(inits, f"s{i}", [a], np.int64), _init(inits, f"e{i}", [b], np.int64),
                   _init(inits, f"ax{i}", [1], np.int64)]  # fmt: skip
            h = _node(nodes, "Slice", ins, [f"h{i}"], f"half{i}")
            parts.append(_node(nodes, "Mul", [h, h], [f"sq{i}"], f"square{i}"))
        s = _node(nodes, "Add", parts, ["pw"], "power")
        return _node(nodes, "Sqrt", [s], ["mag"], "sqrt")

    return _graph(2 * c, hw, body, [1, c, t] if rank == 3 else [1, c, *hw])


def _normalized(nodes: list, inits: list, x: str, centred: bool) -> str:
    """`x` normalized over its last axis as exporters decompose LayerNorm (centred: mean, subtract first) and RMSNorm:
    square, mean, + eps, Sqrt, divide (no scale or shift)."""
    d = x
    if centred:
        m = _node(nodes, "ReduceMean", [x], ["mu"], "mean", axes=[-1], keepdims=1)
        d = _node(nodes, "Sub", [x, m], ["d"], "centre")
    sq = _node(nodes, "Pow", [d, _init(inits, "two", 2.0)], ["sq"], "square")
    v = _node(nodes, "ReduceMean", [sq], ["var"], "variance", axes=[-1], keepdims=1)
    v = _node(nodes, "Add", [v, _init(inits, "eps", 1e-5)], ["ve"], "eps")
    r = _node(nodes, "Sqrt", [v], ["std"], "sqrt")
    return _node(nodes, "Div", [d, r], ["n"], "normalize")


def norm(kind: str, c: int = 64, t: int = 40):
    """A normalization over the last axis of [1, T, C] tokens (the pre-conv's map viewed as rows and transposed), as
    exporters decompose it: LayerNorm (mean, subtract, square, mean, + eps, Sqrt, divide) or RMSNorm (square, mean,
    + eps, Sqrt, divide): where the int8 build puts the Sqrt of a normalization's denominator."""

    def body(x, nodes, inits):
        x = _view(nodes, inits, x, [1, c, t])
        x = _node(nodes, "Transpose", [x], ["tok"], "to_tokens", perm=[0, 2, 1])
        y = _normalized(nodes, inits, x, kind == "layernorm")
        return _node(nodes, "Transpose", [y], ["back"], "to_rows_again", perm=[0, 2, 1])

    return _graph(c, (1, t), body, [1, c, t])


def token_matmul(c: int, k: int, norm_: str = "layernorm", t: int = 40):
    """A projection of tokens: the pre-conv's map viewed as rows [1, C, T] and transposed to tokens [1, T, C] (a
    recognizer's encoder reads its conv stem this way), a normalization over C ("layernorm": as exporters decompose it,
    mean, subtract, square, mean, + eps, Sqrt, divide, scale, shift; "lnop": one LayerNormalization; "none"), then a
    MatMul with a constant [C, K] weight plus a bias, transposed back to rows [1, K, T]."""

    def body(x, nodes, inits):
        x = _view(nodes, inits, x, [1, c, t])
        x = _node(nodes, "Transpose", [x], ["tok"], "to_tokens", perm=[0, 2, 1])
        gamma, beta = _init(inits, "gamma", np.ones(c)), _init(inits, "beta", np.zeros(c))
        if norm_ == "lnop":
            x = _node(nodes, "LayerNormalization", [x, gamma, beta], ["ln"], "layernorm", axis=-1)
        elif norm_ == "layernorm":
            y = _node(nodes, "Mul", [_normalized(nodes, inits, x, True), gamma], ["ns"], "scale")
            x = _node(nodes, "Add", [y, beta], ["ln"], "shift")
        w = _init(inits, "proj_w", _weights((c, k), 60))
        x = _node(nodes, "MatMul", [x, w], ["proj"], "projection")
        x = _node(nodes, "Add", [x, _init(inits, "proj_b", np.zeros(k))], ["biased"], "bias")
        return _node(nodes, "Transpose", [x], ["back"], "to_rows_back", perm=[0, 2, 1])

    return _graph(c, (1, t), body, [1, k, t])


def softmax(shape, axis: int):
    """Softmax over `axis` of the pre-conv's output viewed as `shape` (a DFL head's [1, 16, 4, A] over its bins, an
    attention map's last axis, a classifier's [1, C])."""
    c = shape[1]
    rest = math.prod(shape[2:]) if len(shape) > 2 else 1
    h = max(d for d in range(1, math.isqrt(rest) + 1) if rest % d == 0)

    def body(x, nodes, inits):
        if len(shape) != 4 or list(shape[2:]) != [h, rest // h]:
            x = _view(nodes, inits, x, shape, "view")
        return _node(nodes, "Softmax", [x], ["p"], "softmax", axis=axis)

    return _graph(c, (h, rest // h), body, list(shape))


# -- the axes ----------------------------------------------------------------------------------------------------------


def _families() -> dict[str, dict]:
    f: dict[str, dict] = {}
    k2 = ((1, 1), (3, 3), (5, 5), (7, 7), (9, 9), (1, 7), (7, 1), (1, 31))
    f["conv2d"] = {
        f"conv2d-k{kh}x{kw}-s{s}-{'dw' if dw else 'dense'}": (conv2d, (kh, kw, s, dw))
        for (kh, kw), s, dw in itertools.product(k2, (1, 2), (False, True))
    }
    f["conv1d"] = {
        f"conv1d-k{k}-s{s}-{'dw' if dw else 'dense'}": (conv1d, (k, s, 16, 16, dw))
        for (k, s), dw in itertools.product(((3, 1), (9, 1), (31, 1), (64, 1)), (False, True))
    }
    f["conv1d"].update(
        {
            f"conv1d-stft-k{k}-hop{s}": (conv1d, (k, s, 1, 258))
            for k, s in ((256, 128), (400, 160), (512, 256), (64, 32))
        }
    )
    shapes = ((1, 8, 16, 16), (1, 64, 2, 64), (1, 16, 32, 300), (1, 400, 2, 400), (1, 2, 400, 400))
    perms = ((0, 1, 3, 2), (0, 2, 1, 3), (0, 2, 3, 1), (0, 3, 1, 2), (0, 3, 2, 1))
    f["transpose"] = {
        f"transpose-{'x'.join(map(str, s))}-perm{''.join(map(str, p))}": (transpose, (s, p))
        for s, p in itertools.product(shapes, perms)
    }
    f["focus"] = {f"focus-stem-{h}": (focus, ("stem", 3, (h, h))) for h in (64, 320, 640)}
    f["focus"].update({f"focus-{fm}-64": (focus, (fm, 16, (64, 64))) for fm in ("h", "w", "hw")})
    f["focus"].update({f"focus-{fm}-320": (focus, (fm, 3, (320, 320))) for fm in ("h", "w", "hw")})
    f["focus_input"] = {
        "focus-input-chain-640": (focus_chain, (3, (640, 640))),
        "focus-input-chain-320": (focus_chain, (3, (320, 320))),
        "focus-input-chain-64": (focus_chain, (3, (64, 64))),
        "focus-input-stem-640": (focus_chain, (3, (640, 640), False, False)),
        "focus-conv-chain-640": (focus_chain, (3, (640, 640), True)),
        "focus-conv-chain-c16-64": (focus_chain, (16, (64, 64), True)),
        "focus-input-shared-640": (focus_chain, (3, (640, 640), False, True, True)),
        "focus-conv-shared-c16-64": (focus_chain, (16, (64, 64), True, True, True)),
    }
    # rows of a detection head at the anchor counts of a 640 / 448 / 320 / 224 / 160 input and multiples of 8 beside
    # them; int8 builds (RKNN only) of the same
    rows = {
        f"rows-c{c}h{h}-w{w}": (merge_rows, (c, h, w))
        for (c, h) in ((1, 4), (17, 3))
        for w in (8400, 4200, 2100, 1050, 525, 8000, 2000)
    }
    rows.update(
        {
            f"split-rows-c{c}h{h}-w{w}": (split_rows, (c, h, w))
            for (c, h) in ((17, 3), (4, 16))
            for w in (8400, 4200, 2100, 1050, 525, 8000, 2000)
        }
    )
    rows.update({f"concat-rows-a{a}": (concat_rows, (a,)) for a in (8400, 4200, 2100, 1050, 525)})
    # one scale's flatten: channels of a box / keypoint / YOLOX head (1, 51, 85) beside multiples of 8, the map sizes of
    # 160 to 640 inputs
    rows.update(
        {f"flatten-c{c}-{s}x{s}": (flatten, (c, s, s)) for c in (1, 51, 85, 64) for s in (5, 7, 10, 13, 20, 26)}
    )
    f["rows"] = {**rows, **{f"int8-{n}": v for n, v in rows.items()}}
    # TFLite TRANSPOSEs: the leading axis moved, products of two axes around 2^16; batch-1 permutations beside them
    tt = (
        ((400, 2, 400, 1), (3, 1, 2, 0)),
        ((2, 400, 400, 1), (3, 1, 2, 0)),
        ((256, 2, 256, 1), (3, 1, 2, 0)),
        ((257, 2, 256, 1), (3, 1, 2, 0)),
        ((200, 2, 200, 1), (3, 1, 2, 0)),
        ((400, 2, 100, 1), (3, 1, 2, 0)),
        ((16, 64, 64, 1), (3, 1, 2, 0)),
        ((400, 400, 2, 1), (1, 0, 2, 3)),
        ((256, 256, 2, 1), (1, 0, 2, 3)),
        ((2, 128, 600, 1), (2, 1, 0, 3)),
        ((2, 100, 600, 1), (2, 1, 0, 3)),
        ((1, 400, 2, 400), (0, 3, 2, 1)),
        ((1, 400, 400, 2), (0, 2, 1, 3)),
        ((400, 2, 400), (2, 1, 0)),
        ((1, 400, 2, 400, 1), (4, 1, 2, 3, 0)),
    )
    f["tfl_transpose"] = {
        f"tfl-transpose-{'x'.join(map(str, sh))}-perm{''.join(map(str, pm))}": (tfl_transpose, (sh, pm))
        for sh, pm in tt
    }
    # a multi-scale head's flattened scales concatenated and split into a map, by the scale sizes (one scale; the three
    # of a 640 / 320 / 160 input; a last scale whose H*W is or is not a multiple of 8 or 16) and the channel count
    # (a pose head's 51, a multiple of 8 beside it); a DFL's split read by a Transpose; int8 builds of some
    parts = {}
    for name, sizes in (
        ("5", (5,)),
        ("8", (8,)),
        ("9", (9,)),
        ("10", (10,)),
        ("12", (12,)),
        ("16", (16,)),
        ("20", (20,)),
        ("6x4", ((6, 4),)),
        ("2x10", ((2, 10),)),
        ("3x14", ((3, 14),)),
        ("4x6", ((4, 6),)),
        ("80-40-20", (80, 40, 20)),
        ("40-20-10", (40, 20, 10)),
        ("20-10-5", (20, 10, 5)),
        ("40-20-12", (40, 20, 12)),
        ("40-20-8", (40, 20, 8)),
        ("40-20-9", (40, 20, 9)),
        ("40-20-14", (40, 20, 14)),
        ("60-30-15", (60, 30, 15)),
        ("40-20-5", (40, 20, 5)),
        ("40-20-2x4", (40, 20, (2, 4))),
        ("40-20-2x6", (40, 20, (2, 6))),
    ):
        parts[f"parts-c51-{name}"] = (head_parts, (51, 17, sizes))
    for c, k in ((64, 4), (48, 16), (24, 8), (52, 13), (1, 1)):
        parts[f"parts-c{c}-40-20-10"] = (head_parts, (c, k, (40, 20, 10)))
    parts["parts-c64-80-40-20"] = (head_parts, (64, 4, (80, 40, 20)))  # a DFL's rows at a 640 input
    for c, k, name, sizes in (
        (64, 4, "80-40-20", (80, 40, 20)),
        (64, 4, "40-20-10", (40, 20, 10)),
        (64, 4, "20-10-5", (20, 10, 5)),
        (51, 17, "40-20-10", (40, 20, 10)),
    ):
        parts[f"parts-c{c}-{name}-transpose"] = (head_parts, (c, k, sizes, "transpose"))
    int8 = ("80-40-20", "40-20-10", "20-10-5", "40-20-2x4", "40-20-12", "8", "16", "4x6", "10")
    f["head_parts"] = {**parts, **{f"int8-parts-c51-{n}": parts[f"parts-c51-{n}"] for n in int8}}
    # the keypoint decode's merge back into rows, by anchors: int8 builds from a 160 to a 704 input's count, float16
    # at 640 and twice it
    f["merge_parts"] = {
        **{f"int8-merge-parts-a{a}": (merge_parts, (a,)) for a in (2100, 4200, 5376, 6400, 7168, 8000, 8400, 12096)},
        **{f"merge-parts-a{a}": (merge_parts, (a,)) for a in (8400, 16800)},
    }
    # YOLOX's exported head at its 416 (nano, tiny) and 640 inputs, 80 classes and one (a person or face detector),
    # float16 and int8 builds
    yx = {
        f"yolox-c{5 + nc}-{s[0]}": (yolox_head, (nc, s)) for nc in (80, 1) for s in ((52, 26, 13), (80, 40, 20))
    }
    yx.update({f"int8-{n}": v for n, v in yx.items()})
    # what puts the 640 head's output Transpose on the CPU: the input size (320 to 768), one conv per scale, a reader
    yx.update(
        {
            f"yolox-c85-{s[0]}": (yolox_head, (80, s))
            for s in ((40, 20, 10), (64, 32, 16), (72, 36, 18), (76, 38, 19), (88, 44, 22), (96, 48, 24))
        }
    )
    yx["yolox-c85-80-oneconv"] = (yolox_head, (80, (80, 40, 20), 16, False))
    yx["yolox-c85-52-oneconv"] = (yolox_head, (80, (52, 26, 13), 16, False))
    yx["yolox-c85-80-matmul"] = (yolox_head, (80, (80, 40, 20), 16, True, "matmul"))
    f["yolox"] = yx
    # rows [1, C, A] transposed to [1, A, C], by A (a 416 and a 640 head's anchors, powers of two around them), as the
    # model's output and read by a linear layer
    hws = ((42, 50), (39, 91), (64, 64), (60, 70), (80, 80), (64, 128), (80, 105), (120, 140))
    f["rows_transpose"] = {
        f"rows-transpose-c{c}-a{h * w}-{tail}": (rows_transpose, (c, (h, w), tail))
        for c, tails in ((85, ("output", "matmul")), (6, ("output",)))
        for h, w in hws
        for tail in tails
    }
    f["head"] = {f"head-dfl-a{a}": (dfl, (a,)) for a in (8400, 2100, 525)}
    f["head"].update({f"head-concat-c{c}-{h}": (head_concat, (c, (h, h))) for c, h in ((64, 80), (144, 40), (84, 80))})
    # YOLOX's 85-channel outputs at 416 and 640, a pose head's keypoints and a 1-channel score at 320
    f["head"].update({f"head-concat-c{c}-{h}": (head_concat, (c, (h, h), False)) for c, h in ((85, 52), (85, 80))})
    f["head"].update({f"head-concat-c{c}-{h}": (head_concat, (c, (h, h), False)) for c, h in ((51, 40), (1, 40))})
    f["arity"] = {
        f"arity-{op.lower()}-{n}": (arity, (op, n)) for op in ("Sum", "Mean", "Max", "Min") for n in (2, 3, 4)
    }
    # q/k/v split through a 5-D view: PP-OCRv4's 40 tokens of 8 heads x 15, 64 tokens of 4 x 16, a ViT's 400 of 6 x 64
    f["qkv5d"] = {
        f"qkv5d-{lay}-n{h * w}-h{heads}x{d}": (qkv5d, (lay, heads, d, (h, w)))
        for lay in ("timm", "dinov3")
        for (h, w), heads, d in (((5, 8), 8, 15), ((8, 8), 4, 16), ((20, 20), 6, 64))
    }
    # which of PP-OCRv4's sizes moves the 5-D split: the head width d (15, 8, 12, 16), the heads, the tokens
    f["qkv5d"].update(
        {
            f"qkv5d-timm-n{h * w}-h{heads}x{d}": (qkv5d, ("timm", heads, d, (h, w)))
            for (h, w), heads, d in (((5, 8), 8, 16), ((5, 8), 8, 12), ((5, 8), 8, 8), ((8, 8), 4, 15), ((8, 8), 8, 15))
        }
    )
    f["cast"] = {f"cast-{t}": (cast, (t,)) for t in _INT}
    f["cast"].update({f"cast-{t}-add": (cast, (t, True)) for t in ("int32", "int64")})
    f["attention"] = {
        f"attention-{lay}-h{h}-n{s * s}": (attention, (lay, h, (s, s)))
        for lay, h, s in itertools.product(("seq", "batch"), (1, 4), (4, 8, 20))
    }
    # element-wise functions of one tensor, on a map and on [1, C, T] rows, float16 and int8 builds (an int8 build
    # may take a function to the CPU that a float16 build keeps)
    un = {
        f"unary-{op.lower()}-r{r}": (unary, (op, r))
        for op in UNARY_OPS
        for r in (4, 3)
    }
    un.update({f"unary-magnitude-r{r}": (magnitude, (r,)) for r in (3, 4)})
    un.update({f"unary-{k}": (norm, (k,)) for k in ("layernorm", "rmsnorm")})
    f["unary"] = {**un, **{f"int8-{n}": v for n, v in un.items()}}
    # Softmax by rank, axis and size: a DFL head's bins ([1, 16, 4, A] over axis 1), a map over its channels, an
    # attention map's last axis, a classifier's [1, C]
    sm = (((1, 16, 4, 8400), 1), ((1, 16, 4, 525), 1), ((1, 16, 8, 8), 1), ((1, 16, 8, 8), 3), ((1, 4, 64, 64), 3),
          ((1, 64, 40), 2), ((1, 64, 40), 1), ((1, 2), 1), ((1, 1000), 1))  # fmt: skip
    f["softmax"] = {f"softmax-{'x'.join(map(str, sh))}-ax{a}": (softmax, (sh, a)) for sh, a in sm}
    # a projection of tokens after a normalization (decomposed, one LayerNormalization, none), by channels C (a
    # recognizer's 120, multiples of 32 and 16 beside it) and outputs K (C, 2C, 3C: the projections and an MLP's first)
    f["token_matmul"] = {
        f"token-matmul-{nm}-c{c}-k{k * c}": (token_matmul, (c, k * c, nm))
        for nm, c, k in itertools.product(("layernorm", "lnop", "none"), (120, 128, 64), (1, 2, 3))
    }
    return f


UNARY_OPS = ("Sqrt", "Exp", "Log", "Reciprocal", "Abs", "Neg", "Sin", "Cos", "Tanh", "Sigmoid", "Floor", "Ceil",
             "Round", "Softplus", "Elu", "Sign", "HardSigmoid", "HardSwish", "Softsign")  # fmt: skip
FAMILIES = _families()
DEFAULT = tuple(FAMILIES)  # what `run` sweeps without --families (the hand-written catalogues are opt-in)


def _legacy() -> dict[str, dict]:
    from .rknn_sweep import SWEEP
    from .rknn_sweep2 import SWEEP2

    return {"rknn_sweep": SWEEP, "rknn_sweep2": SWEEP2}


def catalogue(families=DEFAULT) -> dict:
    """name -> (builder, args) over the chosen families; a hand-written catalogue's entries keep their op and build."""
    out: dict = {}
    legacy = _legacy() if any(f in ("rknn_sweep", "rknn_sweep2") for f in families) else {}
    for fam in families:
        if fam in FAMILIES:
            out.update(FAMILIES[fam])
        else:
            out.update({n: (e[1], e[2]) for n, e in legacy[fam].items() if (e[3:] or ("fp16",))[0] == "fp16"})
    return out


CASES = catalogue()  # the case builder interface records.replay_cases reads: CASES and export_case


def export_case(name: str, folder: Path) -> Path:
    from npufit.util.io import atomic_write_bytes

    builder, args = CASES[name] if name in CASES else catalogue(("rknn_sweep", "rknn_sweep2"))[name]
    built = builder(*args)
    if isinstance(built, TFLite):
        p = folder / f"{name}.tflite"
        atomic_write_bytes(p, bytes(built))
        return p
    p = folder / f"{name}.onnx"
    if isinstance(built, tuple):  # a torch module from a hand-written catalogue
        from npufit.zoo.export import export_onnx

        export_onnx(*built, p, OPSET, ["x"], ["y"])
    else:
        atomic_write_bytes(p, built.SerializeToString())
    return p


# -- running -----------------------------------------------------------------------------------------------------------


def target_build(target: str) -> str:
    """The build a target's sweep record is made as: RKNN float16 (int8 on a SoC that takes only int8), else int8."""
    from npufit.targets import get_profile
    from npufit.targets.base import Executes

    return "fp16" if is_rknn(target) and get_profile(target).executes != Executes.INT8 else "int8"


def case_build(name: str, target: str) -> str | None:
    """The build case `name` is compiled as for `target`, or None when the case is not for it: an "int8-" case is an
    RKNN int8 build (the other compilers take int8 only), a TFLite case ("tfl-") is for the compilers that read
    TFLite (RKNN-Toolkit2 is driven from ONNX here)."""
    rknn = is_rknn(target)
    if name.startswith("tfl-"):
        return None if rknn else "int8"
    if name.startswith("int8-"):
        return "int8" if rknn and target_build(target) == "fp16" else None
    return target_build(target)


def measure(onnx: Path, target: str, out: Path, build: str | None = None) -> tuple[list[str] | str, str | None]:
    """The compiler's placement of every top-level node of a case graph, or "failed: ..." with why."""
    from npufit.errors import NpufitError
    from npufit.graph import load

    build = build or target_build(target)
    try:
        r = compile_onnx(onnx, target, build, out, timeout_s=600)
    except NpufitError as e:  # npufit's converter (Ethos-U, Ethos-N) has no lowering for a node of the graph
        return f"failed: {str(e).splitlines()[0].split('; way out')[0][:200]}", None
    if not (r.ok and r.placement):
        last = [ln.strip() for ln in str(r.error or "no placement").splitlines() if ln.strip()]
        return f"failed: {(last[-1] if last else 'no placement')[:200]}", r.compiler_version
    letters = form.placement_entry(load(onnx), r.placement)["placement"]
    word = {v: k for k, v in form.LETTER.items()}
    return [word[c] for c in letters], r.compiler_version


def record_file(target: str) -> Path:
    return FOLDER / f"{target}.json"


def run(target: str, names: list[str], record: bool, log=print) -> dict:
    from npufit.graph import load
    from npufit.util.io import atomic_write_json

    from .judge import case_verdicts

    path = record_file(target)
    comp = {"rknn": "rknn-toolkit2"}.get(compiler_of(target), compiler_of(target))
    build = target_build(target)
    rec = (
        form.load_cases(path)
        if record and path.is_file()
        else {
            "schema": form.CASES_SCHEMA,
            "builder": "sweep",
            "target": target,
            "build": build,
            "opset": OPSET,
            "compiler": comp,
            "compiler_versions": [],
            "cases": {},
        }
    )
    cat = {**catalogue(("rknn_sweep", "rknn_sweep2")), **CASES}
    with tempfile.TemporaryDirectory(prefix="npufit-sweep-") as d:
        for name in names:
            cb = case_build(name, target)
            if cb is None:
                continue
            p = export_case(name, Path(d))
            got, ver = measure(p, target, Path(d) / f"{name}-out", cb)
            if ver and ver not in rec["compiler_versions"]:
                rec["compiler_versions"].append(ver)
            ops = [n.op_type for n in load(p).top_nodes]
            rec["cases"][name] = {"op": ALL, "ops": ops, "placement": got, **({"build": cb} if cb != build else {})}
            pred = case_verdicts(p, ALL, target, cb)
            cpu = [o for o, g in zip(ops, got) if g == "cpu"] if isinstance(got, list) else got
            said = [o for o, v in zip(ops, pred) if v in form.OFF]
            log(f"{target} {name:<44} compiler cpu: {cpu}  npufit off-NPU: {said}")
            if record:
                rec["cases"] = {n: rec["cases"][n] for n in cat if n in rec["cases"]}
                FOLDER.mkdir(parents=True, exist_ok=True)
                atomic_write_json(path, rec)
    return rec


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    fams = (*FAMILIES, "rknn_sweep", "rknn_sweep2")
    for nm in ("list", "run"):
        s = sub.add_parser(nm)
        s.add_argument("--families", nargs="+", choices=fams, default=list(DEFAULT))
        s.add_argument("--cases", default="*", help="comma-separated globs over case names (default: all)")
        if nm == "run":
            s.add_argument("--target", required=True, choices=TARGETS)
            s.add_argument("--record", action="store_true", help="write docs/calibration/sweep/<target>.json")
    a = ap.parse_args(argv)
    cat = catalogue(a.families)
    names = [n for n in cat if any(fnmatch.fnmatch(n, g) for g in a.cases.split(","))]
    if not names:
        ap.error(f"no case matches {a.cases!r}")
    if a.cmd == "list":
        for n in names:
            print(n)
        print(f"{len(names)} cases")
        return
    run(a.target, names, a.record, log=lambda s: print(s, flush=True))


if __name__ == "__main__":
    main()

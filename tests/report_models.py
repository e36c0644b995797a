"""Real-sized graphs for the HTML report tests, built with onnx.helper (no torch): a YOLOv8n-style detector
(233 nodes: CSP backbone, SPPF, PAN neck, decoupled head with the DFL box decoder) and a DETR-style detector
(~3,000 nodes: ResNet backbone, transformer encoder and decoder, query selection and deformable sampling).
Channel widths are small so that the files stay a few hundred KB; the topology is the one a user sees."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


class _Builder:
    """Appends nodes with readable, path-like names ("/model.2/m.0/cv1/conv/Conv") and small seeded weights."""

    def __init__(self, seed: int = 0):
        self.nodes: list = []
        self.inits: list = []
        self.rng = np.random.default_rng(seed)
        self.n = 0

    def const(self, name: str, value) -> str:
        arr = np.asarray(value)
        if arr.dtype == np.float64:
            arr = arr.astype(np.float32)
        self.inits.append(numpy_helper.from_array(arr, name))
        return name

    def weight(self, name: str, shape) -> str:
        return self.const(name, (self.rng.standard_normal(shape) * 0.05).astype(np.float32))

    def op(self, op: str, inputs: list[str], name: str, outputs: int = 1, **attrs) -> str | list[str]:
        self.n += 1
        outs = [f"{name}_output_{i}" for i in range(outputs)]
        self.nodes.append(helper.make_node(op, inputs, outs, name=name, **attrs))
        return outs[0] if outputs == 1 else outs

    def save(self, path: Path, name: str, inputs, outputs, opset: int = 17) -> Path:
        g = helper.make_graph(self.nodes, name, inputs, outputs, self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = 8
        onnx.save(m, str(path))
        return Path(path)


# -- YOLOv8n --------------------------------------------------------------------------------------------------
def yolov8n_like(path: Path, size: int = 320, width: int = 4) -> Path:
    """233 nodes as in the exported yolov8n.onnx: Conv+SiLU blocks, C2f with Split, SPPF, Resize/Concat neck, and the
    head's rank-3 Reshapes and DFL (Reshape/Transpose/Softmax/Conv) that Hailo-8 cannot run."""
    b = _Builder()
    ch = {c: max(4, c // width) for c in (16, 32, 64, 128, 256)}

    def cba(x: str, cin: int, cout: int, name: str, k: int = 1, s: int = 1) -> str:
        w = b.weight(f"{name}.conv.weight", (cout, cin, k, k))
        c = b.op("Conv", [x, w], f"{name}/conv/Conv", kernel_shape=[k, k], strides=[s, s], pads=[k // 2] * 4)
        sg = b.op("Sigmoid", [c], f"{name}/act/Sigmoid")
        return b.op("Mul", [c, sg], f"{name}/act/Mul")

    def c2f(x: str, cin: int, cout: int, n: int, shortcut: bool, name: str) -> str:
        y = cba(x, cin, cout, f"{name}/cv1")
        half = cout // 2
        split = b.const(f"{name}.split", np.array([half, half], np.int64))
        parts = b.op("Split", [y, split], f"{name}/Split", outputs=2, axis=1)
        ys = list(parts)
        for i in range(n):
            m = cba(cba(ys[-1], half, half, f"{name}/m.{i}/cv1", 3), half, half, f"{name}/m.{i}/cv2", 3)
            ys.append(b.op("Add", [ys[-1], m], f"{name}/m.{i}/Add") if shortcut else m)
        cat = b.op("Concat", ys, f"{name}/Concat", axis=1)
        return cba(cat, half * len(ys), cout, f"{name}/cv2")

    c16, c32, c64, c128, c256 = (ch[c] for c in (16, 32, 64, 128, 256))
    x = cba("images", 3, c16, "/model.0", 3, 2)
    x = cba(x, c16, c32, "/model.1", 3, 2)
    x = c2f(x, c32, c32, 1, True, "/model.2")
    x = cba(x, c32, c64, "/model.3", 3, 2)
    p3 = c2f(x, c64, c64, 2, True, "/model.4")
    x = cba(p3, c64, c128, "/model.5", 3, 2)
    p4 = c2f(x, c128, c128, 2, True, "/model.6")
    x = cba(p4, c128, c256, "/model.7", 3, 2)
    x = c2f(x, c256, c256, 1, True, "/model.8")
    s = cba(x, c256, c128, "/model.9/cv1")  # SPPF
    pools = [s]
    for i in range(3):
        pools.append(b.op("MaxPool", [pools[-1]], f"/model.9/m_{i}/MaxPool", kernel_shape=[5, 5], pads=[2] * 4))
    p5 = cba(b.op("Concat", pools, "/model.9/Concat", axis=1), 4 * c128, c256, "/model.9/cv2")
    scales = b.const("up.scales", np.array([1, 1, 2, 2], np.float32))
    up = b.op("Resize", [p5, "", scales], "/model.10/Resize", mode="nearest")
    n4 = c2f(b.op("Concat", [up, p4], "/model.11/Concat", axis=1), c256 + c128, c128, 1, False, "/model.12")
    up = b.op("Resize", [n4, "", scales], "/model.13/Resize", mode="nearest")
    o3 = c2f(b.op("Concat", [up, p3], "/model.14/Concat", axis=1), c128 + c64, c64, 1, False, "/model.15")
    d = cba(o3, c64, c64, "/model.16", 3, 2)
    o4 = c2f(b.op("Concat", [d, n4], "/model.17/Concat", axis=1), c64 + c128, c128, 1, False, "/model.18")
    d = cba(o4, c128, c128, "/model.19", 3, 2)
    o5 = c2f(b.op("Concat", [d, p5], "/model.20/Concat", axis=1), c128 + c256, c256, 1, False, "/model.21")
    reg, nc = 16, 80
    flat = []
    for i, (f, cin) in enumerate(((o3, c64), (o4, c128), (o5, c256))):
        heads = []
        for br, cout in (("cv2", 4 * reg), ("cv3", nc)):
            h = cba(
                cba(f, cin, c64, f"/model.22/{br}.{i}/{br}.{i}.0", 3), c64, c64, f"/model.22/{br}.{i}/{br}.{i}.1", 3
            )
            w = b.weight(f"/model.22/{br}.{i}.2.weight", (cout, c64, 1, 1))
            heads.append(b.op("Conv", [h, w], f"/model.22/{br}.{i}/{br}.{i}.2/Conv"))
        cat = b.op("Concat", heads, f"/model.22/Concat_{i}", axis=1)
        shape = b.const(f"/model.22/shape_{i}", np.array([1, 4 * reg + nc, -1], np.int64))
        flat.append(b.op("Reshape", [cat, shape], f"/model.22/Reshape_{i}"))
    y = b.op("Concat", flat, "/model.22/Concat_3", axis=2)
    box, cls = b.op(
        "Split",
        [y, b.const("/model.22/split", np.array([4 * reg, nc], np.int64))],
        "/model.22/Split",
        outputs=2,
        axis=1,
    )
    anchors = (size // 8) ** 2 + (size // 16) ** 2 + (size // 32) ** 2
    dfl = b.op(
        "Reshape",
        [box, b.const("/model.22/dfl/shape", np.array([1, 4, reg, anchors], np.int64))],
        "/model.22/dfl/Reshape",
    )
    dfl = b.op("Transpose", [dfl], "/model.22/dfl/Transpose", perm=[0, 2, 1, 3])
    dfl = b.op("Softmax", [dfl], "/model.22/dfl/Softmax", axis=1)
    proj = b.const("/model.22/dfl/conv.weight", np.arange(reg, dtype=np.float32).reshape(1, reg, 1, 1))
    dfl = b.op("Conv", [dfl, proj], "/model.22/dfl/conv/Conv")
    dist = b.op(
        "Reshape",
        [dfl, b.const("/model.22/dfl/shape2", np.array([1, 4, anchors], np.int64))],
        "/model.22/dfl/Reshape_1",
    )
    sl = [b.const(f"/model.22/sl{i}", np.array([v], np.int64)) for i, v in enumerate((0, 2, 4, 1))]
    lt = b.op("Slice", [dist, sl[0], sl[1], sl[3]], "/model.22/Slice")
    rb = b.op("Slice", [dist, sl[1], sl[2], sl[3]], "/model.22/Slice_1")
    grid = b.const("/model.22/anchors", np.zeros((1, 2, anchors), np.float32))
    x1y1 = b.op("Sub", [grid, lt], "/model.22/Sub")
    x2y2 = b.op("Add", [grid, rb], "/model.22/Add")
    c_xy = b.op(
        "Div", [b.op("Add", [x1y1, x2y2], "/model.22/Add_1"), b.const("/model.22/two", np.float32(2))], "/model.22/Div"
    )
    wh = b.op("Sub", [x2y2, x1y1], "/model.22/Sub_1")
    bbox = b.op(
        "Mul",
        [
            b.op("Concat", [c_xy, wh], "/model.22/Concat_4", axis=1),
            b.const("/model.22/strides", np.ones((1, anchors), np.float32)),
        ],
        "/model.22/Mul_2",
    )
    b.op("Concat", [bbox, b.op("Sigmoid", [cls], "/model.22/Sigmoid")], "/model.22/Concat_5", axis=1)
    b.nodes[-1].output[0] = "output0"
    assert b.n == 233, b.n  # the node count of the exported yolov8n.onnx
    return b.save(
        path,
        "main_graph",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, [1, 3, size, size])],
        [helper.make_tensor_value_info("output0", TensorProto.FLOAT, [1, 84, anchors])],
    )


# -- DETR ------------------------------------------------------------------------------------------------------
def detr_like(path: Path, enc: int = 24, dec: int = 24, d: int = 32, heads: int = 4, queries: int = 50) -> Path:
    """A DETR-style detector of about 3,000 nodes: ResNet bottlenecks, tokens, `enc` encoder and `dec` decoder layers
    (HF-style attention: MatMul/Add/Reshape/Transpose/Softmax, LayerNormalization, GELU FFN), then top-k query
    selection (TopK, GatherElements) and a deformable sampling step (GridSample) that Hailo-8 cannot run."""
    b = _Builder(1)
    hw = 8  # tokens = 8x8 feature map

    def conv(x: str, cin: int, cout: int, name: str, k: int = 1, s: int = 1, relu: bool = True) -> str:
        w = b.weight(f"{name}.weight", (cout, cin, k, k))
        y = b.op(
            "Conv",
            [x, w, b.weight(f"{name}.bias", (cout,))],
            f"{name}/Conv",
            kernel_shape=[k, k],
            strides=[s, s],
            pads=[k // 2] * 4,
        )
        return b.op("Relu", [y], f"{name}/Relu") if relu else y

    x = conv("pixel_values", 3, 16, "/backbone/conv1", 7, 2)
    x = b.op("MaxPool", [x], "/backbone/maxpool/MaxPool", kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4)
    cin = 16
    for stage, (blocks, cout, stride) in enumerate(((3, 32, 1), (4, 32, 2), (6, d, 2), (3, d, 1))):
        for i in range(blocks):
            name = f"/backbone/layer{stage + 1}/{i}"
            s = stride if i == 0 else 1
            y = conv(x, cin, cout // 2, f"{name}/conv1")
            y = conv(y, cout // 2, cout // 2, f"{name}/conv2", 3, s)
            y = conv(y, cout // 2, cout, f"{name}/conv3", relu=False)
            sc = conv(x, cin, cout, f"{name}/downsample", 1, s, relu=False) if i == 0 else x
            x = b.op("Relu", [b.op("Add", [y, sc], f"{name}/Add")], f"{name}/Relu_out")
            cin = cout
    tok = b.op("Reshape", [x, b.const("/tokens/shape", np.array([1, d, hw * hw], np.int64))], "/tokens/Flatten")
    tok = b.op("Transpose", [tok], "/tokens/Transpose", perm=[0, 2, 1])  # [1, T, d]
    pos = b.weight("/encoder/pos", (1, hw * hw, d))

    def linear(x: str, cin: int, cout: int, name: str) -> str:
        return b.op(
            "Add",
            [b.op("MatMul", [x, b.weight(f"{name}.w", (cin, cout))], f"{name}/MatMul"), b.weight(f"{name}.b", (cout,))],
            f"{name}/Add",
        )

    def norm(x: str, name: str) -> str:
        return b.op(
            "LayerNormalization",
            [x, b.const(f"{name}.g", np.ones(d, np.float32)), b.const(f"{name}.beta", np.zeros(d, np.float32))],
            f"{name}/LayerNorm",
            axis=-1,
        )

    def split_heads(x: str, n: int, name: str, key: bool = False) -> str:
        r = b.op(
            "Reshape", [x, b.const(f"{name}.shape", np.array([1, n, heads, d // heads], np.int64))], f"{name}/Reshape"
        )
        return b.op("Transpose", [r], f"{name}/Transpose", perm=[0, 2, 3, 1] if key else [0, 2, 1, 3])

    def attention(q_in: str, k_in: str, v_in: str, nq: int, nk: int, name: str) -> str:
        q = split_heads(linear(q_in, d, d, f"{name}/q_proj"), nq, f"{name}/q")
        k = split_heads(linear(k_in, d, d, f"{name}/k_proj"), nk, f"{name}/k", key=True)
        v = split_heads(linear(v_in, d, d, f"{name}/v_proj"), nk, f"{name}/v")
        s = b.op(
            "Mul", [b.op("MatMul", [q, k], f"{name}/MatMul"), b.const(f"{name}.scale", np.float32(0.35))], f"{name}/Mul"
        )
        a = b.op("MatMul", [b.op("Softmax", [s], f"{name}/Softmax", axis=-1), v], f"{name}/MatMul_1")
        a = b.op("Transpose", [a], f"{name}/Transpose_out", perm=[0, 2, 1, 3])
        a = b.op("Reshape", [a, b.const(f"{name}.oshape", np.array([1, nq, d], np.int64))], f"{name}/Reshape_out")
        return linear(a, d, d, f"{name}/out_proj")

    def ffn(x: str, name: str) -> str:
        h = linear(x, d, 2 * d, f"{name}/fc1")
        g = b.op(
            "Mul",
            [
                h,
                b.op(
                    "Add",
                    [
                        b.op(
                            "Erf",
                            [b.op("Div", [h, b.const(f"{name}.sqrt2", np.float32(1.4142))], f"{name}/act/Div")],
                            f"{name}/act/Erf",
                        ),
                        b.const(f"{name}.one", np.float32(1)),
                    ],
                    f"{name}/act/Add",
                ),
            ],
            f"{name}/act/Mul",
        )
        g = b.op("Mul", [g, b.const(f"{name}.half", np.float32(0.5))], f"{name}/act/Mul_1")
        return linear(g, 2 * d, d, f"{name}/fc2")

    t = hw * hw
    for i in range(enc):
        name = f"/encoder/layers.{i}"
        qk = b.op("Add", [tok, pos], f"{name}/self_attn/with_pos")
        tok = norm(
            b.op("Add", [tok, attention(qk, qk, tok, t, t, f"{name}/self_attn")], f"{name}/Add"),
            f"{name}/self_attn_layer_norm",
        )
        tok = norm(b.op("Add", [tok, ffn(tok, f"{name}/ffn")], f"{name}/Add_1"), f"{name}/final_layer_norm")
    memory = tok
    # query selection: score every token, keep the best `queries` (two-stage DETR / RT-DETR style)
    score = b.op("ReduceMax", [linear(memory, d, 8, "/enc_score_head")], "/select/ReduceMax", axes=[-1], keepdims=0)
    _, idx = b.op(
        "TopK", [score, b.const("/select/k", np.array([queries], np.int64))], "/select/TopK", outputs=2, axis=1
    )
    idx = b.op("Unsqueeze", [idx, b.const("/select/axes", np.array([-1], np.int64))], "/select/Unsqueeze")
    idx = b.op("Tile", [idx, b.const("/select/reps", np.array([1, 1, d], np.int64))], "/select/Tile")
    q = b.op("GatherElements", [memory, idx], "/select/GatherElements", axis=1)
    fmap = b.op("Transpose", [memory], "/decoder/value/Transpose", perm=[0, 2, 1])
    fmap = b.op(
        "Reshape", [fmap, b.const("/decoder/value/shape", np.array([1, d, hw, hw], np.int64))], "/decoder/value/Reshape"
    )
    for i in range(dec):
        name = f"/decoder/layers.{i}"
        q = norm(
            b.op("Add", [q, attention(q, q, q, queries, queries, f"{name}/self_attn")], f"{name}/Add"),
            f"{name}/self_attn_layer_norm",
        )
        if i % 6 == 5:  # deformable sampling of the feature map at offsets the queries predict
            off = linear(q, d, 2, f"{name}/sampling_offsets")
            grid = b.op(
                "Reshape",
                [
                    b.op("Tanh", [off], f"{name}/Tanh"),
                    b.const(f"{name}.gshape", np.array([1, queries, 1, 2], np.int64)),
                ],
                f"{name}/grid/Reshape",
            )
            sampled = b.op("GridSample", [fmap, grid], f"{name}/GridSample", align_corners=0)
            sampled = b.op(
                "Transpose",
                [
                    b.op(
                        "Reshape",
                        [sampled, b.const(f"{name}.sshape", np.array([1, d, queries], np.int64))],
                        f"{name}/sampled/Reshape",
                    )
                ],
                f"{name}/sampled/Transpose",
                perm=[0, 2, 1],
            )
            q = b.op("Add", [q, sampled], f"{name}/Add_sampled")
        q = norm(
            b.op("Add", [q, attention(q, memory, memory, queries, t, f"{name}/encoder_attn")], f"{name}/Add_1"),
            f"{name}/encoder_attn_layer_norm",
        )
        q = norm(b.op("Add", [q, ffn(q, f"{name}/ffn")], f"{name}/Add_2"), f"{name}/final_layer_norm")
    logits = linear(q, d, 91, "/class_head")
    b.op(
        "Sigmoid",
        [linear(b.op("Relu", [linear(q, d, d, "/bbox_head/0")], "/bbox_head/Relu"), d, 4, "/bbox_head/1")],
        "/bbox_head/Sigmoid",
    )
    b.nodes[-1].output[0] = "pred_boxes"  # the graph outputs keep the names a DETR export gives them
    for n in b.nodes:
        if n.output[0] == logits:
            n.output[0] = "logits"
    return b.save(
        path,
        "main_graph",
        [helper.make_tensor_value_info("pixel_values", TensorProto.FLOAT, [1, 3, 32 * hw, 32 * hw])],
        [
            helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, queries, 91]),
            helper.make_tensor_value_info("pred_boxes", TensorProto.FLOAT, [1, queries, 4]),
        ],
    )

"""Hailo verdicts for what detectors and transformer encoders contain: batch-1 attention layouts, token flattening
read by several permutes, RMSNorm, rotary embeddings, integer index math (never on an NPU stage), the TopK rewrite
hint (k = 1 only), and TFLite models judged with NHWC axes."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import npufit
from npufit import check
from npufit.convert.tflite_writer import TFLiteBuilder
from npufit.zoo import hailo_zoo
from tests.onnx_builders import model, vi


def _c(name, value, dtype=np.float32):
    return numpy_helper.from_array(np.array(value, dtype=dtype), name)


def _save(tmp_path, m: onnx.ModelProto, name="m.onnx"):
    p = tmp_path / name
    onnx.save(m, p)
    return p


def _rule(report, node):
    n = report.node(node)
    return n.verdict.value, [r.rule for r in n.reasons]


def test_a_transpose_that_moves_only_size_one_axes_is_a_relabelling(tmp_path):
    """[1, T, C] -> [T, 1, C] (nn.MultiheadAttention at batch 1) keeps the data order: not a batch move, not a rank-3
    shuffle. A real batch move, a real swap of two equal-sized axes and a rank-4 map's batch moved stay flagged."""
    w = _c("w", np.eye(16))
    nodes = [
        helper.make_node("Transpose", ["x"], ["t"], name="to_seq_first", perm=[1, 0, 2]),
        helper.make_node("MatMul", ["t", "w"], ["m"], name="linear"),
        helper.make_node("Transpose", ["m"], ["y"], name="to_batch_first", perm=[1, 0, 2]),
        helper.make_node("Transpose", ["x2"], ["y2"], name="batch_move", perm=[1, 0, 2]),
        helper.make_node("Transpose", ["sq"], ["y3"], name="square_swap", perm=[0, 2, 1]),
        helper.make_node("Transpose", ["map"], ["y4"], name="map_batch_to_channels", perm=[1, 0, 2, 3]),
    ]
    m = model(
        nodes,
        [vi("x", [1, 8, 16]), vi("x2", [2, 8, 16]), vi("sq", [1, 6, 6]), vi("map", [1, 8, 4, 4])],
        [vi("y", [1, 8, 16]), vi("y2", [8, 2, 16]), vi("y3", [1, 6, 6]), vi("y4", [8, 1, 4, 4])],
        [w],
    )
    r = check(_save(tmp_path, m), "hailo8")
    assert _rule(r, "to_seq_first") == ("npu", [])
    assert _rule(r, "to_batch_first") == ("npu", [])
    assert _rule(r, "batch_move") == ("unsupported", ["hailo8.shuffle.rank3", "hailo8.shuffle.batch"])
    assert _rule(r, "square_swap") == ("unsupported", ["hailo8.shuffle.rank3"])
    # a rank-4 map whose batch of 1 becomes its channels is refused: only token tensors are seen relabelled so
    assert _rule(r, "map_batch_to_channels") == ("unsupported", ["hailo8.shuffle.batch"])


def _encoder(batch: int, path):
    """A DETR-style encoder layer as DEIMv2's hybrid encoder exports it: a feature map flattened to tokens
    (flatten(2).permute(0, 2, 1)), a position embedding on the queries/keys, nn.MultiheadAttention (batch first,
    which runs sequence-first inside), LayerNorm and an MLP, tokens back to a map, opset 17."""
    torch = pytest.importorskip("torch")
    from torch import nn

    torch.manual_seed(0)

    class Layer(nn.Module):
        def __init__(self, c=32, hw=(6, 6)):
            super().__init__()
            self.proj = nn.Conv2d(16, c, 1)
            self.attn = nn.MultiheadAttention(c, 4, batch_first=True)
            self.pos = nn.Parameter(torch.randn(1, hw[0] * hw[1], c))
            self.norm1, self.norm2 = nn.LayerNorm(c), nn.LayerNorm(c)
            self.mlp = nn.Sequential(nn.Linear(c, 2 * c), nn.GELU(), nn.Linear(2 * c, c))
            self.out = nn.Conv2d(c, c, 1)

        def forward(self, x):
            f = self.proj(x)
            n, c, h, w = f.shape
            src = f.flatten(2).permute(0, 2, 1)
            q = src + self.pos
            src = self.norm1(src + self.attn(q, q, value=src)[0])
            src = self.norm2(src + self.mlp(src))
            return self.out(src.permute(0, 2, 1).reshape(n, c, h, w))

    from npufit.zoo.export import export_onnx

    export_onnx(Layer().eval(), torch.randn(batch, 16, 6, 6), path, 17, ["x"], ["y"])
    return path


def test_batch1_multihead_attention_encoder_is_all_npu(tmp_path):
    """The user's parser took DEIMv2-N's encoder and the Model Zoo compiles YOLOv5s-C3TR: nn.MultiheadAttention at
    batch 1 with the token flatten read by two permutes is one NPU region."""
    r = check(_encoder(1, tmp_path / "enc1.onnx"), "hailo8")
    assert [(n.name, n.reasons[0].rule) for n in r.failing] == []
    claimed = {n.composite for n in r.nodes if n.composite}
    assert {"hailo8.tokens", "hailo8.attention"} <= claimed
    assert len(r.partitions) == 1


def test_the_same_encoder_at_batch_two_moves_the_batch_axis(tmp_path):
    r = check(_encoder(2, tmp_path / "enc2.onnx"), "hailo8")
    assert "hailo8.shuffle.batch" in {x.rule for n in r.failing for x in n.reasons}


def _rms(x, out, p, form):
    """RMSNorm in three exported forms: Pow/Div(1, .)/Mul (DEIMv2's decoder), Mul(x, x)/Reciprocal/Mul (no eps),
    Pow/Div(x, .)."""
    sq = (
        helper.make_node("Mul", [x, x], [p + "sq"], name=p + "sq")
        if form == "recip"
        else helper.make_node("Pow", [x, "two"], [p + "sq"], name=p + "sq")
    )
    nodes = [sq, helper.make_node("ReduceMean", [p + "sq"], [p + "ms"], name=p + "mean", axes=[-1], keepdims=1)]
    s_in = p + "ms"
    if form != "recip":
        nodes.append(helper.make_node("Add", [p + "ms", "eps"], [p + "mse"], name=p + "eps"))
        s_in = p + "mse"
    nodes.append(helper.make_node("Sqrt", [s_in], [p + "rms"], name=p + "sqrt"))
    if form == "div1":
        nodes += [
            helper.make_node("Div", ["one", p + "rms"], [p + "inv"], name=p + "inv"),
            helper.make_node("Mul", [x, p + "inv"], [p + "n"], name=p + "scale"),
        ]
    elif form == "recip":
        nodes += [
            helper.make_node("Reciprocal", [p + "rms"], [p + "inv"], name=p + "inv"),
            helper.make_node("Mul", [p + "inv", x], [p + "n"], name=p + "scale"),
        ]
    else:
        nodes.append(helper.make_node("Div", [x, p + "rms"], [p + "n"], name=p + "scale"))
    nodes.append(helper.make_node("Mul", [p + "n", "gamma"], [out], name=p + "gamma"))
    return nodes


def test_rmsnorm_forms_are_one_normalization_layer_and_a_lone_sqrt_is_not(tmp_path):
    nodes = (
        _rms("x", "a", "r1/", "div1")
        + _rms("a", "b", "r2/", "recip")
        + _rms("b", "c", "r3/", "div")
        + [helper.make_node("Sqrt", ["c"], ["y"], name="lone_sqrt")]
    )
    inits = [_c("two", 2.0), _c("eps", 1e-6), _c("one", 1.0), _c("gamma", np.ones(16))]
    m = model(nodes, [vi("x", [1, 10, 16])], [vi("y", [1, 10, 16])], inits)
    r = check(_save(tmp_path, m), "hailo8")
    for p in ("r1/", "r2/", "r3/"):
        for n in r.nodes:
            if n.name.startswith(p):
                assert (n.verdict.value, n.composite) == ("npu", "hailo8.rmsnorm"), n.name
    assert _rule(r, "lone_sqrt") == ("unsupported", ["hailo8.op.unknown"])


def _rope(x, out, p):
    """x * cos + rotate_half(x) * sin, rotate_half(x) = concat(-x[..., d/2:], x[..., :d/2]) (DINOv3, Llama)."""
    return [
        helper.make_node("Slice", [x, "h0", "h1", "ax", "st"], [p + "x1"], name=p + "first_half"),
        helper.make_node("Slice", [x, "h1", "h2", "ax", "st"], [p + "x2"], name=p + "second_half"),
        helper.make_node("Neg", [p + "x2"], [p + "nx2"], name=p + "neg"),
        helper.make_node("Concat", [p + "nx2", p + "x1"], [p + "rot"], name=p + "rotate", axis=-1),
        helper.make_node("Mul", [p + "rot", "sin"], [p + "rs"], name=p + "mul_sin"),
        helper.make_node("Mul", [x, "cos"], [p + "xc"], name=p + "mul_cos"),
        helper.make_node("Add", [p + "xc", p + "rs"], [out], name=p + "add"),
    ]


def _rope_model():
    d = 8
    inits = [
        _c("h0", [0], np.int64),
        _c("h1", [d // 2], np.int64),
        _c("h2", [d], np.int64),
        _c("ax", [-1], np.int64),
        _c("st", [1], np.int64),
        _c("sin", np.sin(np.arange(16 * d).reshape(1, 1, 16, d))),
        _c("cos", np.cos(np.arange(16 * d).reshape(1, 1, 16, d))),
        numpy_helper.from_array(np.random.default_rng(0).standard_normal((3, 3, 1, 1)).astype(np.float32), "w"),
    ]
    nodes = [helper.make_node("Conv", ["x", "w"], ["q"], name="conv")] + _rope("q", "r", "rope/")
    nodes.append(helper.make_node("Relu", ["r"], ["y"], name="after"))
    return model(nodes, [vi("x", [1, 3, 16, d])], [vi("y", [1, 3, 16, d])], inits)


def test_rotary_embedding_is_flagged_as_the_parser_risk_it_is(tmp_path):
    r = check(_save(tmp_path, _rope_model()), "hailo8")
    rope = [n for n in r.nodes if n.name.startswith("rope/")]
    assert len(rope) == 7 and all(n.composite == "hailo8.rope" and n.verdict.value == "unsupported" for n in rope)
    text = rope[0].reasons[0].text
    assert "crashed the Hailo-8 parser" in text  # one sentence; the crashes themselves are its evidence
    evidence = r.evidence["hailo8.rope"]["evidence"]
    assert "ZeroDivisionError" in evidence and "3.33" in evidence


def test_a_cut_through_the_rotary_embedding_is_not_called_the_best_ranked(tmp_path):
    """An explicit cut that puts rejected nodes on the NPU stage ranks well only because its estimate counts them as
    NPU work: the split says so instead of calling it the best-ranked."""
    p = _save(tmp_path, _rope_model())
    res = npufit.split(p, "hailo8", tmp_path / "plan", end_nodes=["after"], verify=False)
    assert "best-ranked" not in res.why
    assert "rejects (hailo8.rope x7" in res.why
    own = npufit.split(p, "hailo8", tmp_path / "auto", verify=False)
    npu_nodes = {n for s in own.chosen.stages if s.device == "npu" for n in s.nodes}
    assert npu_nodes and not any(n.startswith("rope/") for n in npu_nodes)


def _detector_with_sizes_island():
    """image -> conv -> box conv, scaled by the int64 image size (orig_target_sizes -> Expand -> Tile -> Unsqueeze
    -> Cast, as DEIMv2's post-processor) -> conv -> output: an integer island in the middle of NPU work."""
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "w1"),
        numpy_helper.from_array(rng.standard_normal((4, 8, 1, 1)).astype(np.float32), "w2"),
        numpy_helper.from_array(rng.standard_normal((4, 4, 1, 1)).astype(np.float32), "w3"),
        _c("eshape", [1, 2], np.int64),
        _c("reps", [1, 2], np.int64),
        _c("uaxes", [2, 3], np.int64),
    ]
    nodes = [
        helper.make_node("Conv", ["images", "w1"], ["c1"], name="backbone", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="act"),
        helper.make_node("Conv", ["r1", "w2"], ["boxes"], name="box_head"),
        helper.make_node("Expand", ["orig_target_sizes", "eshape"], ["e"], name="sizes_expand"),
        helper.make_node("Tile", ["e", "reps"], ["t"], name="sizes_tile"),
        helper.make_node("Unsqueeze", ["t", "uaxes"], ["u"], name="sizes_unsqueeze"),
        helper.make_node("Cast", ["u"], ["uf"], name="sizes_cast", to=TensorProto.FLOAT),
        helper.make_node("Mul", ["boxes", "uf"], ["scaled"], name="scale_boxes"),
        helper.make_node("Conv", ["scaled", "w3"], ["y"], name="refine"),
    ]
    return model(
        nodes,
        [vi("images", [1, 3, 8, 8]), vi("orig_target_sizes", [1, 2], TensorProto.INT64)],
        [vi("y", [1, 4, 8, 8])],
        inits,
    )


ISLAND = ("sizes_expand", "sizes_tile", "sizes_unsqueeze", "sizes_cast")


def test_integer_index_math_is_never_an_npu_node(tmp_path):
    r = check(_save(tmp_path, _detector_with_sizes_island()), "hailo8")
    for name in ISLAND:
        assert r.node(name).verdict.value == "unsupported"
        assert "hailo8.dtype.index_math" in [x.rule for x in r.node(name).reasons], name
    assert r.node("backbone").verdict.value == "npu" and r.node("scale_boxes").verdict.value == "npu"
    assert not set(ISLAND) & set(r.prefix["nodes"] if "nodes" in r.prefix else [])
    assert not set(ISLAND) & set(r.prefix["start_nodes"] + r.prefix["end_nodes"])


@pytest.mark.parametrize("mode", [None, "prefix", "segments"])
def test_an_int64_island_in_a_detector_never_lands_on_an_npu_stage(tmp_path, mode):
    kw = {"min_nodes": 1} if mode == "segments" else {}
    res = npufit.split(_save(tmp_path, _detector_with_sizes_island()), "hailo8", tmp_path / "plan", mode=mode, **kw)
    assert res.plan.verification["equivalent"]
    npu = [st for st in res.chosen.stages if st.device == "npu"]
    assert npu, mode
    for st in npu:
        assert not set(ISLAND) & set(st.nodes), (mode, st.name)
    for ps in res.plan.stages:
        if ps.device == "npu":
            assert npufit.check(tmp_path / "plan" / ps.file, "hailo8").coverage_nodes == 100.0
            for cmd in ps.vendor.get("hailo", {}).values():
                assert not any(n in cmd for n in ISLAND)


def _topk(k: int):
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["s"], name="scores"),
        helper.make_node("Flatten", ["s"], ["f"], name="flat", axis=1),
        helper.make_node("TopK", ["f", "k"], ["v", "i"], name=f"topk{k}", axis=-1),
    ]
    w = numpy_helper.from_array(np.ones((4, 3, 1, 1), np.float32), "w")
    return model(
        nodes, [vi("x", [1, 3, 10, 10])], [vi("v", [1, k]), vi("i", [1, k], TensorProto.INT64)],
        [w, _c("k", [k], np.int64)],
    )  # fmt: skip


def test_topk_rewrite_is_suggested_for_k_equal_one_only(tmp_path):
    one = check(_save(tmp_path, _topk(1), "k1.onnx"), "hailo8")
    assert "topk1_to_argmax" in {f for x in one.node("topk1").reasons for f in x.fix_rules}
    assert "topk1_to_argmax" in one.fix_rules()
    many = check(_save(tmp_path, _topk(300), "k300.onnx"), "hailo8")
    assert many.node("topk300").verdict.value == "unsupported"
    assert not [f for x in many.node("topk300").reasons for f in x.fix_rules]
    assert "topk1_to_argmax" not in many.fix_rules()
    res = npufit.split(tmp_path / "k300.onnx", "hailo8", tmp_path / "plan", verify=False)
    assert not any("topk1_to_argmax" in w for w in res.plan.warnings)


# -- TFLite ----------------------------------------------------------------------------------------------------------


def test_tflite_palm_detection_like_graph_is_npu_up_to_its_head_convolutions(tmp_path):
    """MediaPipe's palm detector as a small TFLite file: the Dataflow Compiler parses TFLite itself; everything up to
    the four head convolutions is npu, the head RESHAPEs to [1, anchors, k] are the shuffles the parser refused."""
    path = tmp_path / "palm.tflite"
    heads = hailo_zoo.palm_detection_lite(path)
    r = check(path, "hailo8")
    assert r.model["format"] == "tflite"
    assert {n.op_type for n in r.failing} == {"RESHAPE"}
    assert all(n.reasons[0].rule == "hailo8.shuffle.rank3" for n in r.failing)
    assert set(heads) <= set(r.prefix["end_nodes"])
    assert {n.op_type for n in r.running if n.verdict.value == "npu"} >= {"CONV_2D", "DEPTHWISE_CONV_2D", "PRELU"}


def test_tflite_hand_landmark_like_graph_is_whole(tmp_path):
    path = tmp_path / "hand.tflite"
    hailo_zoo.hand_landmark_lite(path)
    r = check(path, "hailo8l")
    assert r.failing == [] and len(r.partitions) == 1
    assert r.coverage_nodes == 100.0


def _tflite_axes_model(path):
    """conv -> REDUCE_MAX over channels without keep_dims; STRIDED_SLICE of the channels and of the rows;
    TRANSPOSE with its perm as a constant input."""
    b = TFLiteBuilder()
    x = b.tensor("x", (1, 8, 8, 3), "float32")
    y, _ = hailo_zoo._tflite_conv(b, x, 3, 8, 3, 1, 8, "conv")
    axis = b.tensor("axis", (1,), "int32", data=np.array([3]))
    rm = b.tensor("rmax", (1, 8, 8), "float32")
    b.op("REDUCE_MAX", [y, axis], [rm], "ReducerOptions", keep_dims=False)
    outs = [rm]
    for name, begin, end in (("ch_slice", [0, 0, 0, 0], [1, 8, 8, 4]), ("row_slice", [0, 0, 0, 0], [1, 4, 8, 8])):
        bt = b.tensor(f"{name}/b", (4,), "int32", data=np.array(begin))
        et = b.tensor(f"{name}/e", (4,), "int32", data=np.array(end))
        st = b.tensor(f"{name}/s", (4,), "int32", data=np.ones(4))
        o = b.tensor(name, tuple(e - s for s, e in zip(begin, end)), "float32")
        b.op("STRIDED_SLICE", [y, bt, et, st], [o], "StridedSliceOptions", begin_mask=0, end_mask=0)
        outs.append(o)
    perm = b.tensor("perm", (4,), "int32", data=np.array([0, 3, 1, 2]))
    t = b.tensor("nchw", (1, 8, 8, 8), "float32")
    b.op("TRANSPOSE", [y, perm], [t])
    b.io([x], outs + [t])
    path.write_bytes(b.build())
    return path


def test_tflite_axes_are_read_as_nhwc(tmp_path):
    r = check(_tflite_axes_model(tmp_path / "axes.tflite"), "hailo8")
    by_out = {n.outputs[0]: n for n in r.nodes}
    assert [x.rule for x in by_out["rmax"].reasons] == ["hailo8.reducemax.keepdims"]
    assert by_out["ch_slice"].verdict.value == "npu"
    assert [x.rule for x in by_out["row_slice"].reasons] == ["hailo8.slice.axis"]
    assert by_out["nchw"].verdict.value == "npu"

"""Lowerings the calibration corpus (calibration/) needed: each small model holds LiteRT's int8 output to
ONNX Runtime's float output (cosine >= 0.999 on the calibration samples, tests/test_convert_lowerings.py's harness)."""
import pytest

pytest.importorskip("ai_edge_litert.interpreter", reason="ai-edge-litert is not installed (pip install 'ai-edge-litert>=2.3')")
torch = pytest.importorskip("torch", reason="test models are exported from torch")

from tests.test_convert_lowerings import Seq, _convert, conv, lin  # noqa: E402

F = torch.nn.functional


def test_layernorm_after_a_shape_computed_concat(tmp_path):
    """A class token concatenated with a batch taken from x.shape (ViT/BEiT embeddings) leaves the exporter's
    shapes symbolic ([1, unk, 32]); the LayerNormalization after it still decomposes (its rank is known)."""
    cls = torch.randn(1, 1, 32)

    def f(s, x):
        t = s.mods[0](x)
        return s.mods[1](torch.cat([cls.expand(t.shape[0], -1, -1), t], 1))

    res = _convert(tmp_path, Seq(f, lin(32, 32), torch.nn.LayerNorm(32)), torch.randn(1, 10, 32), 17, ops=("RSQRT",))
    assert any("decomposed LayerNormalization x1" in n for n in res.notes), res.notes


def test_reducel2_normalize(tmp_path):
    """F.normalize (SwinV2's cosine attention, ConvNeXtV2's GRN): ReduceL2 -> Mul/ReduceSum/Sqrt, its Expand over the
    features -> CONCATENATION copies, no BROADCAST_TO (not in Vela's list)."""
    m = Seq(lambda s, x: F.normalize(s.mods[0](x), dim=-1) * 3.0, lin(16, 24))
    _convert(tmp_path, m, torch.randn(1, 12, 16), 17, ops=("SUM", "RSQRT", "CONCATENATION"), absent=("BROADCAST_TO",))


def test_broadcast_to_loads_in_litert(tmp_path):
    """An Expand by more copies than are worth concatenating stays BROADCAST_TO, written at the version LiteRT
    registers (version 1 fails to load: "Didn't find op for builtin opcode 'BROADCAST_TO' version '1'")."""
    m = Seq(lambda s, x: s.mods[0](x).expand(1, 100, 8) + 1.0, lin(4, 8))
    _convert(tmp_path, m, torch.randn(1, 1, 4), 17, ops=("BROADCAST_TO",))


@pytest.mark.parametrize("pool", ["avg", "max"])
def test_pool1d(tmp_path, pool):
    """1-D pooling (SEW's feature squeeze): Unsqueeze -> (1, k) pool -> Squeeze, like a Conv1d."""
    torch.manual_seed(3)
    c = torch.nn.Conv1d(8, 16, 3, padding=1)
    fn = F.avg_pool1d if pool == "avg" else F.max_pool1d
    m = Seq(lambda s, x: fn(s.mods[0](x), 2, 2), c)
    res = _convert(tmp_path, m, torch.randn(1, 8, 20), 17, ops=("AVERAGE_POOL_2D" if pool == "avg" else "MAX_POOL_2D",))
    assert any("conv1d_to_conv2d x2" in n for n in res.notes), res.notes


@pytest.mark.parametrize("dim", [-1, 1])
def test_log_softmax(tmp_path, dim):
    """CTC heads (CRNN): LogSoftmax -> LOG_SOFTMAX on the innermost axis (moved there when it is not)."""
    m = Seq(lambda s, x: F.log_softmax(s.mods[0](x), dim=dim), lin(16, 10))
    _convert(tmp_path, m, torch.randn(1, 6, 16), 17, ops=("LOG_SOFTMAX",))


def test_conv_then_log_softmax_4d(tmp_path):
    m = Seq(lambda s, x: F.log_softmax(s.mods[0](x), dim=1), conv(3, 6))
    _convert(tmp_path, m, torch.randn(1, 3, 8, 8), 17, ops=("LOG_SOFTMAX",))


def test_scatter_nd_box_update(tmp_path):
    """DETR-family box refinement `boxes[..., :2] = f(boxes[..., :2])` exports ScatterND with constant indices: rows
    of data and updates concatenated, then picked by a constant map."""

    def f(s, x):
        b = s.mods[0](x).sigmoid()
        b = b.clone()
        b[..., :2] = b[..., :2] * 2.0 - 0.5
        return b

    import onnx

    _convert(tmp_path, Seq(f, lin(8, 4)), torch.randn(1, 20, 8), 17, ops=("CONCATENATION",))
    assert "ScatterND" in {n.op_type for n in onnx.load(tmp_path / "m.onnx").graph.node}


@pytest.mark.parametrize("eq", ["bhlk,bhtk->bhlt", "bhwc,hkc->bhwk"])
def test_einsum_two_operands(tmp_path, eq):
    """CvT's attention einsums, and ViTDet's relative-position form (a batch letter that is not leading, a free
    letter group flattened): Transpose/Reshape/MatMul -> BATCH_MATMUL."""
    import onnx

    torch.manual_seed(4)
    w = torch.randn(2, 5, 8) * 0.3  # [h, k, c] for the second form

    def f(s, x):
        a = s.mods[0](x).reshape(1, 2, 6, 8)
        if eq.startswith("bhlk"):
            return torch.einsum(eq, a, a * 0.5 + 0.1)
        return torch.einsum(eq, a.reshape(1, 2, 6, 8), w)

    res = _convert(tmp_path, Seq(f, lin(8, 16)), torch.randn(1, 6, 8), 17, ops=("BATCH_MATMUL",))
    assert "Einsum" in {n.op_type for n in onnx.load(tmp_path / "m.onnx").graph.node}
    assert any("decomposed Einsum x1" in n for n in res.notes), res.notes


def _if_model(path, cond_on_shape: bool):
    """x @ W, then an If: Mul by 2 when the condition holds, Neg otherwise (the wrong branch would flip the sign)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((16, 16)).astype(np.float32) / 4, "W"),
             numpy_helper.from_array(np.array(2, np.int64), "axis2"), numpy_helper.from_array(np.array(16, np.int64), "sixteen"),
             numpy_helper.from_array(np.array(2.0, np.float32), "two"), numpy_helper.from_array(np.array(0.0, np.float32), "zero")]
    nodes = [helper.make_node("MatMul", ["x", "W"], ["y"])]
    if cond_on_shape:  # ViTDet's `if rel_pos.shape[0] != max_rel_dist`, traced into Shape / Gather / Equal
        nodes += [helper.make_node("Shape", ["y"], ["s"]), helper.make_node("Gather", ["s", "axis2"], ["d"]),
                  helper.make_node("Equal", ["d", "sixteen"], ["c"])]
    else:
        nodes += [helper.make_node("ReduceMax", ["y"], ["m"], keepdims=0), helper.make_node("Greater", ["m", "zero"], ["c"])]
    then_g = helper.make_graph([helper.make_node("Mul", ["y", "two"], ["t"])], "then", [],
                               [helper.make_tensor_value_info("t", TensorProto.FLOAT, None)])
    else_g = helper.make_graph([helper.make_node("Neg", ["y"], ["e"])], "else", [],
                               [helper.make_tensor_value_info("e", TensorProto.FLOAT, None)])
    nodes += [helper.make_node("If", ["c"], ["z"], name="branch", then_branch=then_g, else_branch=else_g),
              helper.make_node("Add", ["z", "y"], ["out"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 6, 16])],
                          [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 6, 16])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_if_decided_by_the_input_shapes_is_inlined(tmp_path):
    from npufit.convert import convert, verify_tflite
    from npufit.quantize.calibration import input_specs, load_calibration
    import onnx

    src = _if_model(tmp_path / "if.onnx", cond_on_shape=True)
    res = convert(src, tmp_path / "if.tflite", samples=8)
    assert any("inlined If x1" in n for n in res.notes), res.notes
    assert "NEG" not in res.op_counts, res.op_counts  # the branch not taken is gone
    cal = load_calibration("random", input_specs(onnx.load(str(src))), count=8, seed=0)
    assert verify_tflite(res.path, src, [cal[i] for i in range(len(cal))]).min_cosine >= 0.999


def test_if_on_input_values_stays_a_converter_gap(tmp_path):
    from npufit.convert import convert
    from npufit.errors import UnsupportedModelError

    src = _if_model(tmp_path / "if.onnx", cond_on_shape=False)
    with pytest.raises(UnsupportedModelError, match="no lowering for If 'branch'"):
        convert(src, tmp_path / "if.tflite", samples=8)


def test_einsum_with_an_operand_shape_inference_leaves_unknown(tmp_path):
    """ViTDet's relative-position einsum 'bhwc,hkc->bhwk': its table is gathered by indices from a Range over a
    size, whose length ONNX shape inference does not propagate; the decomposition takes that shape from a run."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from npufit.convert import convert, verify_tflite
    from npufit.quantize.calibration import input_specs, load_calibration

    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((8, 6, 16)).astype(np.float32), "table"),
             numpy_helper.from_array(np.array(1, np.int64), "one"), numpy_helper.from_array(np.array(0, np.int64), "zero"),
             numpy_helper.from_array(rng.standard_normal((16, 16)).astype(np.float32) / 4, "W")]
    nodes = [helper.make_node("MatMul", ["x", "W"], ["q"]),
             helper.make_node("Shape", ["q"], ["s"]), helper.make_node("Gather", ["s", "one"], ["h"]),
             helper.make_node("Range", ["zero", "h", "one"], ["idx"]), helper.make_node("Gather", ["table", "idx"], ["rel"]),
             helper.make_node("Einsum", ["q", "rel"], ["out"], equation="bhwc,hkc->bhwk")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 5, 16])],
                          [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)], inits)
    src = tmp_path / "einsum.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), src)
    res = convert(src, tmp_path / "einsum.tflite", samples=8)
    assert any("decomposed Einsum x1" in n for n in res.notes), res.notes
    cal = load_calibration("random", input_specs(onnx.load(str(src))), count=8, seed=0)
    assert verify_tflite(res.path, src, [cal[i] for i in range(len(cal))]).min_cosine >= 0.999

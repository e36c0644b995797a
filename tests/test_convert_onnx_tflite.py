"""ONNX -> fully int8 TFLite (npufit.convert): the LiteRT interpreter's output agrees with ONNX Runtime's."""
import hashlib
import json

import numpy as np
import pytest
from onnx import TensorProto, helper

from npufit.errors import NpufitError

litert = pytest.importorskip("ai_edge_litert.interpreter", reason="ai-edge-litert is not installed (pip install 'ai-edge-litert>=2.3')")
torch = pytest.importorskip("torch", reason="test models are exported from torch")

from npufit.convert import convert, verify_tflite  # noqa: E402
from npufit.zoo.export import export_onnx  # noqa: E402


def _tensor_types(path):
    it = litert.Interpreter(model_path=str(path))
    return it, {d["dtype"].__name__ for d in it.get_tensor_details()}


@pytest.mark.parametrize("act", ["relu", "leakyrelu"])
def test_seed001_detector_cosine_and_fully_int8(tmp_path, act):
    from npufit.zoo.detector import export

    src = tmp_path / f"det_{act}.onnx"
    export(act, src, opset=13)
    before = hashlib.sha256(src.read_bytes()).hexdigest()
    res = convert(src, tmp_path / "det.tflite")
    assert hashlib.sha256(src.read_bytes()).hexdigest() == before  # the user's file is only read
    assert res.verification.min_cosine >= 0.99, res.verification.to_dict()
    it, types = _tensor_types(res.path)
    assert types <= {"int8", "int32"}  # no float tensor anywhere: Vela needs a fully int8 graph
    assert [d["dtype"].__name__ for d in it.get_input_details() + it.get_output_details()] == ["int8"] * 3
    assert res.op_counts["CONV_2D"] == 8 and res.op_counts.get("LEAKY_RELU", 0) == (6 if act == "leakyrelu" else 0)
    assert "RELU" not in res.op_counts  # ReLU is fused into the convolutions
    side = json.loads(res.sidecar.read_text())
    assert side["schema"] == "npufit.convert/1" and side["io"]["inputs"][0]["layout"] == "nhwc"
    nodes = {n for names in side["lineage"].values() for n in names}
    assert "/stem/stem.0/Conv" in nodes and "/Concat" in nodes and "/up/Resize" in nodes


class _Cnn(torch.nn.Module):
    """Pooling + FC head, plus the layout-sensitive ops: a flatten of a 4x4 map (NHWC -> NCHW order matters)."""

    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.BatchNorm2d(16), nn.ReLU6())
        self.dw = nn.Sequential(nn.Conv2d(16, 16, 3, 1, 1, groups=16), nn.BatchNorm2d(16), nn.ReLU())
        self.grouped = nn.Conv2d(16, 16, 3, 1, 1, groups=2)
        self.pool = nn.MaxPool2d(2)
        self.avg = nn.AvgPool2d(3, 1, 1)
        self.se = nn.Conv2d(16, 16, 1)
        self.fc1 = nn.Linear(16 * 4 * 4, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        y = self.dw(self.stem(x))
        y = nn_hs(self.grouped(y)) + y
        y = self.pool(y)
        a = torch.sigmoid(self.se(torch.nn.functional.adaptive_avg_pool2d(y, 1)))
        y = self.avg(y * a)
        y = torch.nn.functional.leaky_relu(y, 0.2) - 0.1
        y = torch.cat([y[:, :8], torch.tanh(y[:, 8:])], 1)
        y = torch.nn.functional.interpolate(y, scale_factor=0.5, mode="bilinear", align_corners=False)
        y = torch.nn.functional.pad(y, (0, 0, 0, 0))
        y = torch.relu(self.fc1(torch.flatten(y, 1)))
        return torch.softmax(self.fc2(y), -1), y.transpose(0, 1)


def nn_hs(x):
    return torch.nn.functional.hardswish(x)


def _export_cnn(path, opset=14):
    torch.manual_seed(0)
    m = _Cnn().eval()
    with torch.no_grad():
        for mod in m.modules():
            if isinstance(mod, torch.nn.BatchNorm2d):
                mod.running_mean.uniform_(-0.2, 0.2)
                mod.running_var.uniform_(0.5, 1.5)
    export_onnx(m, torch.randn(1, 3, 32, 32), path, opset, ["x"], ["probs", "feat"])


def test_small_cnn_with_pooling_and_fc_head(tmp_path):
    src = tmp_path / "cnn.onnx"
    _export_cnn(src)
    res = convert(src, tmp_path / "cnn.tflite", samples=16)
    cos = {k: v["cosine"] for k, v in res.verification.per_output.items()}
    assert min(cos.values()) >= 0.99, res.verification.to_dict()
    ops = res.op_counts
    for op in ("DEPTHWISE_CONV_2D", "SPLIT", "MAX_POOL_2D", "AVERAGE_POOL_2D", "MEAN", "FULLY_CONNECTED", "SOFTMAX",
               "HARD_SWISH", "LOGISTIC", "TANH", "LEAKY_RELU", "RESIZE_BILINEAR", "STRIDED_SLICE", "TRANSPOSE"):
        assert op in ops, (op, ops)
    assert "MUL" in ops and "SUB" in ops and "CONCATENATION" in ops
    # shared ranges: the only rescale is TANH's fixed int8 scale entering the concat; never a float detour
    assert ops.get("QUANTIZE", 0) == 1 and "DEQUANTIZE" not in ops
    # verify_tflite on its own (reads the sidecar for layouts), here on an .npz of inputs
    npz = tmp_path / "x.npz"
    np.savez(npz, x=np.random.default_rng(3).standard_normal((3, 1, 3, 32, 32)).astype(np.float32))
    v = verify_tflite(res.path, src, str(npz))
    assert v.samples == 3 and v.min_cosine >= 0.99


def test_npz_calibration_and_qdq_twin(tmp_path):
    from npufit.zoo.detector import export

    src = tmp_path / "det.onnx"
    export("relu", src, opset=13)
    npz = tmp_path / "cal.npz"
    np.savez(npz, images=(0.5 * np.random.default_rng(0).standard_normal((4, 1, 3, 64, 64))).astype(np.float32))
    res = convert(src, tmp_path / "det.tflite", calibration=str(npz), qdq_twin=True)
    assert res.calibration["kind"] == "npz" and res.calibration["samples_used"] == 4
    s = res.io["inputs"][0]["scale"]  # fitted to the npz (std 0.5), not to N(0,1)
    assert s < 0.02
    from npufit import check

    assert check(str(res.qdq_twin), "ethos-u55-256").coverage_nodes == 100.0


def test_qdq_model_keeps_its_own_input_scale(tmp_path):
    from onnx import load, numpy_helper

    from .quant_builders import quantized_detector

    src = quantized_detector("leakyrelu", tmp_path)
    m = load(src)
    q_in = next(n for n in m.graph.node if n.op_type == "QuantizeLinear" and n.input[0] == "images")
    want = float(numpy_helper.to_array(next(t for t in m.graph.initializer if t.name == q_in.input[1])))
    res = convert(src, tmp_path / "q.tflite")
    assert res.io["inputs"][0]["scale"] == pytest.approx(want, rel=1e-6)
    assert res.verification.min_cosine >= 0.98
    assert any("QDQ input" in n for n in res.notes)


def _onnx(nodes, inits=(), shape=(1, 4, 8, 8), path=None):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    path.write_bytes(m.SerializeToString())
    return path


def test_unsupported_ops_are_one_error_naming_op_and_nodes(tmp_path):
    """A converter gap is npufit's (not Vela's), names every node, and gives the split command that cuts before it."""
    src = _onnx([helper.make_node("Relu", ["x"], ["a"], name="r"), helper.make_node("Sin", ["a"], ["b"], name="my_sin"),
                 helper.make_node("TopK", ["b", "k"], ["y", "i"], name="my_topk", axis=-1)],
                [helper.make_tensor("k", TensorProto.INT64, [1], [2])], path=tmp_path / "bad.onnx")
    with pytest.raises(NpufitError) as e:
        convert(src, tmp_path / "bad.tflite", target="ethos-u55-128")
    msg = str(e.value)
    assert msg.startswith("npufit's ONNX -> int8 TFLite converter (not the vendor toolchain) has no lowering for")
    assert "Sin 'my_sin'" in msg and "TopK 'my_topk'" in msg and "\n" not in msg
    assert f"way out: npufit split {src} --target ethos-u55-128 --mode explicit --end-nodes a " in msg
    assert not (tmp_path / "bad.tflite").exists()


def test_unsupported_attribute_and_dynamic_input(tmp_path):
    src = _onnx([helper.make_node("Resize", ["x", "", "s"], ["y"], name="cubic", mode="cubic")],
                [helper.make_tensor("s", TensorProto.FLOAT, [4], [1, 1, 2, 2])], path=tmp_path / "cubic.onnx")
    with pytest.raises(NpufitError, match=r"Resize 'cubic' \(mode=cubic"):
        convert(src, tmp_path / "c.tflite")
    dyn = _onnx([helper.make_node("Relu", ["x"], ["y"], name="r")], shape=(1, 4, "h", "w"), path=tmp_path / "dyn.onnx")
    with pytest.raises(NpufitError, match=r"input 'x' has unknown dims \[1,4,h,w\].*input_shapes="):
        convert(dyn, tmp_path / "d.tflite")
    res = convert(dyn, tmp_path / "d.tflite", input_shapes={"x": (1, 4, 8, 8)})
    assert res.io["inputs"][0]["tflite_shape"] == [1, 8, 8, 4]
    batch = _onnx([helper.make_node("Relu", ["x"], ["y"], name="r")], shape=("N", 4, 8, 8), path=tmp_path / "b.onnx")
    res = convert(batch, tmp_path / "b.tflite")  # a dynamic batch alone is pinned to 1 (the shape policy)
    assert res.io["inputs"][0]["tflite_shape"] == [1, 8, 8, 4]


@pytest.mark.parametrize("op", ["MEAN", "REDUCE_MAX"])
@pytest.mark.parametrize("dims,keep", [((2, 3), False), ((2, 3), True), (2, False), (3, False), (1, False), ((1, 2), False)])
def test_reduce_stays_spatial_in_nhwc(tmp_path, dims, keep, op):
    """A mean over H/W must stay a MEAN over TFLite's H/W axes: moving the tensor back to NCHW first made Vela see a
    depth reduction and run it on the CPU (probe case mean_dim_linear)."""
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)

        def forward(self, x):
            y = torch.relu(self.conv(x))
            return y.mean(dim=dims, keepdim=keep) if op == "MEAN" else torch.amax(y, dim=dims, keepdim=keep)

    torch.manual_seed(0)
    src = tmp_path / "mean.onnx"
    export_onnx(M(), torch.randn(1, 3, 16, 12), src, 13, ["x"], ["y"])
    res = convert(src, tmp_path / "mean.tflite", samples=8)
    assert res.verification.min_cosine >= 0.99, res.verification.to_dict()
    if op == "MEAN" and dims == 1:  # a channel mean of a map is a 1x1 CONV_2D (test_convert_lowerings)
        assert "MEAN" not in res.op_counts and res.op_counts["CONV_2D"] == 2, res.op_counts
        return
    it = litert.Interpreter(model_path=str(res.path))
    details = it.get_tensor_details()
    mean = next(d for d in it._get_ops_details() if d["op_name"] == op)
    axes = it.get_tensor(mean["inputs"][1]).tolist()
    assert details[mean["inputs"][0]]["shape"].tolist() == [1, 16, 12, 8]  # the conv's NHWC output, not a transposed copy
    nhwc = {0: 0, 1: 3, 2: 1, 3: 2}
    assert sorted(axes) == sorted(nhwc[d] for d in np.atleast_1d(dims))


@pytest.mark.parametrize("fn,tfl", [(torch.nn.functional.elu, "ELU"), (torch.abs, "ABS"), (torch.neg, "NEG"), (torch.exp, "EXP"),
                                    (lambda x: torch.log(torch.sigmoid(x)), "LOG")])
def test_elementwise_math_lowerings(tmp_path, fn, tfl):
    """ELU/ABS/NEG/EXP/LOG as int8 TFLite kernels: LiteRT agrees with ONNX Runtime (lets the Vela probe measure them)."""
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)

        def forward(self, x):
            return fn(self.conv(x))

    torch.manual_seed(0)
    src = tmp_path / "m.onnx"
    export_onnx(M(), torch.randn(1, 3, 8, 8), src, 13, ["x"], ["y"])
    res = convert(src, tmp_path / "m.tflite", samples=8)
    assert tfl in res.op_counts and res.verification.min_cosine >= 0.99, (res.op_counts, res.verification.to_dict())


@pytest.mark.parametrize("channels", [8, 1])
def test_prelu_lowering(tmp_path, channels):
    """nn.PReLU (per-channel [C,1,1] slope, or one shared slope) -> PRELU with the slope in NHWC."""
    torch.manual_seed(0)
    act = torch.nn.PReLU(channels)
    with torch.no_grad():
        act.weight.copy_(torch.linspace(0.05, 0.4, channels))
    m = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), act).eval()
    src = tmp_path / "p.onnx"
    export_onnx(m, torch.randn(1, 3, 8, 8), src, 13, ["x"], ["y"])
    res = convert(src, tmp_path / "p.tflite", samples=8)
    assert "PRELU" in res.op_counts and res.verification.min_cosine >= 0.99, (res.op_counts, res.verification.to_dict())

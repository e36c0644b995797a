"""The ONNX ops real exporters emit, each lowered by npufit's converter: the small model converts, its int8 TFLite
agrees with ONNX Runtime (LiteRT interpreter), Vela 5.2.0 compiles it, the node lands where the test says (the NPU
wherever TFLite's builtins give it an NPU form there), and `check` says the same of every node as Vela did."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

pytest.importorskip("ai_edge_litert.interpreter", reason="ai-edge-litert is not installed")
from npufit.compilers.vela import vela_version  # noqa: E402

pytestmark = pytest.mark.skipif(vela_version() is None, reason="Vela (ethos-u-vela) is not installed")
U55, U85 = "ethos-u55-256", "ethos-u85-256"
COS, HELD_OUT = 0.999, 0.99  # min cosine per output: on the calibration samples, on held-out seeded samples


def run(tmp_path, src, placed: dict[str, str], node: str = "op", cos: float = COS):
    """Compile `src` for each target of `placed` (target -> where `node` must run); returns {target: placement}."""
    import npufit
    from npufit.compilers import compile_model
    from npufit.convert import verify_tflite
    from npufit.convert.onnx_prep import prepare
    from npufit.quantize.calibration import input_specs, load_calibration

    out = {}
    for target, want in placed.items():
        r = compile_model(src, target, out_dir=tmp_path / target)
        assert r.ok, r.error
        conv = r.metrics["conversion"]
        cal = load_calibration("random", input_specs(prepare(src, None).model), count=8, seed=0)
        v = verify_tflite(r.outputs["int8_tflite"], src, [cal[i] for i in range(len(cal))])
        for name, d in v.per_output.items():
            ok = d["agreement"] >= 0.9 if "agreement" in d else d["cosine"] >= cos
            assert ok, (name, v.to_dict())
        if not any("agreement" in d for d in v.per_output.values()):  # index outputs: agreement above
            assert conv["min_cosine_vs_onnx"] >= HELD_OUT, conv
        devices = {p.node: p.device for p in r.placement}
        assert devices[node] == want, (target, node, devices, [p.reason for p in r.placement if p.node == node])
        predicted = {n.name: n.verdict.value for n in npufit.check(src, target, measure="never").nodes}
        assert {k: predicted.get(k) for k in devices} == devices, (target, predicted, devices)
        out[target] = devices
    return out


def _model(tmp_path, nodes, inits=(), shape=(1, 8, 8, 8), opset=17, outs=(("y", TensorProto.FLOAT),), name="m"):
    """x -> 3x3 Conv (8 -> `convout` channels, named conv) -> `nodes` (reading c) -> outputs."""
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                          [helper.make_tensor_value_info(o, t, None) for o, t in outs], list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    path = tmp_path / f"{name}.onnx"
    path.write_bytes(m.SerializeToString())
    return path


def _conv(cout: int, cin: int = 8, seed: int = 0):
    w = (np.random.default_rng(seed).standard_normal((cout, cin, 3, 3)) / np.sqrt(9 * cin) * 2).astype(np.float32)
    return helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]), numpy_helper.from_array(w, "w")


def _t(name, value, dtype=np.float32):
    return numpy_helper.from_array(np.asarray(value, dtype), name)


def _one(op, cout=8, extra=(), inits=(), opset=17, shape=(1, 8, 8, 8), outs=(("y", TensorProto.FLOAT),), **attrs):
    """conv -> op(c, *extra) -> y."""
    def build(tmp_path):
        c, w = _conv(cout, shape[1])
        n = helper.make_node(op, ["c", *extra], [o for o, _ in outs], name="op", **attrs)
        return _model(tmp_path, [c, n], [w, *inits], shape, opset, outs, op)
    return build


BOTH_NPU = {U55: "npu", U85: "npu"}
CASES = {
    "HardSigmoid": (_one("HardSigmoid", alpha=0.2, beta=0.5), BOTH_NPU),  # PP-OCR's form
    "Sum-3": (_one("Sum", extra=("x", "c")), {U55: "npu"}),  # ResNet-50 (ONNX zoo) adds with Sum
    "Mean-3": (_one("Mean", extra=("x", "c")), {U55: "npu"}),
    "Max-3": (_one("Max", extra=("x", "k"), inits=(_t("k", np.full((1, 8, 1, 1), 0.1)),)), {U55: "npu"}),
    "Min-3": (_one("Min", extra=("x", "k"), inits=(_t("k", np.full((1, 8, 1, 1), 0.1)),)), {U55: "npu"}),
    "ReduceL1": (_one("ReduceL1", extra=("ax",), inits=(_t("ax", [2, 3], np.int64),), opset=18), {U55: "npu"}),
    "ReduceL2": (_one("ReduceL2", extra=("ax",), inits=(_t("ax", [1], np.int64),), opset=18), {U55: "npu"}),
    "ReduceSumSquare": (_one("ReduceSumSquare", extra=("ax",), inits=(_t("ax", [3], np.int64),), opset=18), {U55: "npu"}),
    "ReduceLogSumExp": (_one("ReduceLogSumExp", extra=("ax",), inits=(_t("ax", [1], np.int64),), opset=18), {U55: "npu"}),
    "Softplus": (_one("Softplus"), {U55: "npu"}),
    "Mish": (_one("Mish", opset=18), {U55: "npu"}),
    "Selu": (_one("Selu"), {U55: "npu"}),
    "Elu-0.5": (_one("Elu", alpha=0.5), {U55: "npu"}),
    "Celu": (_one("Celu", alpha=2.0), {U55: "npu"}),
    "Softsign": (_one("Softsign"), {U55: "npu"}),
    "PRelu": (_one("PRelu", extra=("s",), inits=(_t("s", np.linspace(0.1, 0.3, 8).reshape(8, 1, 1)),)), {U55: "npu"}),
    "LeakyRelu": (_one("LeakyRelu", alpha=0.1), {U55: "npu"}),
    "Clip": (_one("Clip", extra=("lo", "hi"), inits=(_t("lo", -0.5), _t("hi", 2.0))), {U55: "npu"}),
    "Upsample": (_one("Upsample", extra=("s",), inits=(_t("s", [1, 1, 2, 2]),), opset=9), {U55: "npu"}),
    "LpNormalization": (_one("LpNormalization", axis=1), {U55: "npu"}),
    "MeanVarianceNormalization": (_one("MeanVarianceNormalization"), {U55: "npu"}),
    # a standard converter's DEPTH_TO_SPACE / SPACE_TO_DEPTH run on neither NPU (Vela 5.2.0 lists neither)
    "DepthToSpace-2-DCR": (_one("DepthToSpace", cout=32, blocksize=2, mode="DCR"), BOTH_NPU),
    "DepthToSpace-2-CRD": (_one("DepthToSpace", cout=32, blocksize=2, mode="CRD"), BOTH_NPU),
    "DepthToSpace-3-CRD": (_one("DepthToSpace", cout=27, blocksize=3, mode="CRD"), BOTH_NPU),
    "DepthToSpace-4-DCR": (_one("DepthToSpace", cout=32, blocksize=4, mode="DCR"), BOTH_NPU),
    "SpaceToDepth-2": (_one("SpaceToDepth", blocksize=2), BOTH_NPU),
    "SpaceToDepth-4": (_one("SpaceToDepth", blocksize=4), BOTH_NPU),
    # a fixed sampling is a fixed linear map: one FULLY_CONNECTED
    "GridSample-bilinear": (_one("GridSample", extra=("g",), inits=(_t("g", np.random.default_rng(1).uniform(
        -1.1, 1.1, (1, 5, 6, 2))),), align_corners=0), BOTH_NPU),
    "GridSample-nearest-border": (_one("GridSample", extra=("g",), inits=(_t("g", np.random.default_rng(2).uniform(
        -1, 1, (1, 4, 4, 2))),), mode="nearest", padding_mode="border"), BOTH_NPU),
    # constant indices: a GATHER of the flattened data (Vela lists GATHER on the U85 only), a slice when they run evenly
    "GatherElements": (_one("GatherElements", extra=("i",), inits=(_t("i", np.random.default_rng(3).integers(
        0, 8, (1, 8, 3, 8)), np.int64),), axis=2), {U55: "cpu", U85: "npu"}),
    "GatherElements-run": (_one("GatherElements", extra=("i",), inits=(_t("i", np.arange(4).reshape(1, 1, 1, 4) * 2,
                                                                           np.int64),), axis=3), BOTH_NPU),
    "GatherND": (_one("GatherND", extra=("i",), inits=(_t("i", [[0, 5], [0, 1]], np.int64),)), {U55: "cpu", U85: "npu"}),
    "ThresholdedRelu": (_one("ThresholdedRelu", alpha=0.3), {U55: "cpu", U85: "npu"}),
    # TFLite has SIN / COS / TOPK_V2 only as CPU kernels in Vela: as a standard converter's
    "Sin": (_one("Sin"), {U55: "cpu", U85: "cpu"}),
    "Cos": (_one("Cos"), {U55: "cpu"}),
    # torch's ConvTranspose2d(k=3, s=2, p=1, output_padding=1) upsampler: TRANSPOSE_CONV VALID, then the output cut
    "ConvTranspose-output_padding": (_one("ConvTranspose", extra=("wt",), inits=(_t("wt", np.random.default_rng(4).standard_normal(
        (8, 4, 3, 3)) * 0.2),), strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1]), BOTH_NPU),
    "ArgMin": (_one("ArgMin", axis=1, keepdims=1, outs=(("y", TensorProto.INT64),)), {U55: "npu"}),
    "GroupNormalization": (_one("GroupNormalization", extra=("gs", "gb"), inits=(_t("gs", np.ones(8)), _t("gb", np.zeros(8))),
                                opset=21, num_groups=2), {U55: "npu"}),
    "RMSNormalization": (_one("RMSNormalization", extra=("rs",), inits=(_t("rs", np.linspace(0.5, 1.5, 8)),), opset=23,
                              axis=1), {U55: "npu"}),
    "TopK": (_one("TopK", extra=("k",), inits=(_t("k", [3], np.int64),), axis=1,
                  outs=(("y", TensorProto.FLOAT), ("i", TensorProto.INT64))), {U55: "cpu", U85: "cpu"}),
}
LOOSER = {"Sin": 0.998, "Cos": 0.998, "GridSample-bilinear": 0.998}  # a float kernel / an 8-bit weight per position


@pytest.mark.parametrize("case", list(CASES))
def test_lowering_converts_verifies_and_runs_where_vela_says(tmp_path, case):
    build, placed = CASES[case]
    run(tmp_path, build(tmp_path), placed, cos=LOOSER.get(case, COS))


@pytest.mark.parametrize("cell", ["LSTM", "GRU", "RNN"])
def test_recurrent_cells_unroll_onto_the_npu(tmp_path, cell):
    torch = pytest.importorskip("torch")
    from npufit.zoo.export import export_onnx

    torch.manual_seed(0)
    rnn = getattr(torch.nn, cell)(12, 16, batch_first=True)

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = rnn

        def forward(self, x):
            return self.rnn(x)[0]

    src = tmp_path / "rnn.onnx"
    export_onnx(M().eval(), torch.randn(1, 6, 12), src, 13, ["x"], ["y"])
    import onnx

    name = next(n.name for n in onnx.load(str(src)).graph.node if n.op_type == cell)
    run(tmp_path, src, {U55: "npu"}, node=name)


def test_mobilenetv3_blocks_compile_onto_the_npu(tmp_path):
    """MobileNetV3's inverted residual with squeeze-excitation: Hardswish and the SE gate's Hardsigmoid. Opset 13
    writes Hardswish as x * HardSigmoid(x), opset 14+ as HardSwish; both run on the NPU of both generations (before:
    no lowering for HardSigmoid, while check called the model ~97 % NPU)."""
    torch = pytest.importorskip("torch")
    from npufit.zoo.export import export_onnx

    nn = torch.nn

    class SE(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.fc1, self.fc2 = nn.Conv2d(c, c // 4, 1), nn.Conv2d(c // 4, c, 1)

        def forward(self, x):
            s = torch.nn.functional.adaptive_avg_pool2d(x, 1)
            return x * torch.nn.functional.hardsigmoid(self.fc2(torch.relu(self.fc1(s))))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.BatchNorm2d(16), nn.Hardswish())
            self.expand = nn.Sequential(nn.Conv2d(16, 48, 1), nn.BatchNorm2d(48), nn.Hardswish())
            self.dw = nn.Sequential(nn.Conv2d(48, 48, 5, 1, 2, groups=48), nn.BatchNorm2d(48), nn.Hardswish())
            self.se, self.project = SE(48), nn.Sequential(nn.Conv2d(48, 16, 1), nn.BatchNorm2d(16))

        def forward(self, x):
            y = self.stem(x)
            return y + self.project(self.se(self.dw(self.expand(y))))

    torch.manual_seed(0)
    m = Block().eval()
    for opset in (13, 17):
        src = tmp_path / f"mbv3-{opset}.onnx"
        export_onnx(m, torch.randn(1, 3, 32, 32), src, opset, ["x"], ["y"])
        import onnx

        ops = {n.op_type for n in onnx.load(str(src)).graph.node}
        assert "HardSigmoid" in ops and ("HardSwish" in ops) == (opset >= 14), ops
        for target, devices in run(tmp_path / str(opset), src, {U55: "npu", U85: "npu"},
                                   node=next(n.name for n in onnx.load(str(src)).graph.node
                                             if n.op_type == "HardSigmoid")).items():
            assert set(devices.values()) == {"npu"}, (opset, target, devices)


def _centernet_decoder(tmp_path, k: int = 10):
    """CenterNet's decoder on its three head maps (inputs): 3x3 max-pool peak test, TopK over the flattened heat map,
    Div / Mod of the indices into class, y and x, a GatherElements of the size and offset maps at those indices."""
    torch = pytest.importorskip("torch")
    from npufit.zoo.export import export_onnx

    F = torch.nn.functional

    class Decoder(torch.nn.Module):
        def forward(self, heat, wh, reg):
            keep = (F.max_pool2d(heat, 3, 1, 1) == heat).float()
            heat = heat * keep
            B, C, H, W = heat.shape
            scores, inds = torch.topk(heat.view(B, -1), k)
            classes = torch.div(inds, H * W, rounding_mode="floor")
            inds = inds % (H * W)
            ys, xs = torch.div(inds, W, rounding_mode="floor").float(), (inds % W).float()
            idx = inds.unsqueeze(1).expand(B, 2, k)
            wh, reg = wh.view(B, 2, -1).gather(2, idx), reg.view(B, 2, -1).gather(2, idx)
            cx, cy = xs + reg[:, 0], ys + reg[:, 1]
            return torch.stack([cx - wh[:, 0] / 2, cy - wh[:, 1] / 2, cx + wh[:, 0] / 2, cy + wh[:, 1] / 2], -1), scores, classes

    src = tmp_path / "centernet_decoder.onnx"
    ex = (torch.rand(1, 2, 8, 8), torch.rand(1, 2, 8, 8) * 4, torch.rand(1, 2, 8, 8))
    export_onnx(Decoder().eval(), ex, src, 13, ["heat", "wh", "reg"], ["boxes", "scores", "classes"])
    return src


def test_centernet_decoder_converts_and_says_what_runs_where(tmp_path):
    """Every op of the decoder converts; with heat values int8 keeps apart (128 positions, distinct levels of 1/255)
    the int8 TOPK_V2 picks the same peaks as ONNX Runtime, so boxes, scores and classes agree. Vela: the peak test's
    max pool runs on the NPU; TopK (TOPK_V2), Mod (FLOOR_MOD), the integer Div, the Casts and the GatherElements
    (GATHER_ND) run on the CPU on the U55; on the U85, whose list holds DIV, the comparisons and SELECT_V2, only TopK,
    Mod, the Casts and GATHER_ND stay there."""
    import onnx

    import npufit
    from npufit.compilers import compile_model
    from npufit.convert import convert, verify_tflite

    src = _centernet_decoder(tmp_path)
    rng = np.random.default_rng(0)
    feeds = []
    for s in range(4):
        heat = (rng.permutation(128).reshape(1, 2, 8, 8) + 0.5) / 128.0  # distinct int8 levels: no ties for TopK
        feeds.append({"heat": heat.astype(np.float32), "wh": rng.uniform(0, 4, (1, 2, 8, 8)).astype(np.float32),
                      "reg": rng.uniform(0, 1, (1, 2, 8, 8)).astype(np.float32)})
    cal = tmp_path / "cal.npz"
    np.savez(cal, **{k: np.concatenate([f[k] for f in feeds]) for k in feeds[0]})
    res = convert(src, tmp_path / "dec.tflite", calibration=str(cal), activations="int8", verify=None)
    v = verify_tflite(res.path, src, feeds)
    assert v.per_output["classes"]["agreement"] == 1.0, v.to_dict()
    assert v.per_output["boxes"]["cosine"] >= 0.999 and v.per_output["scores"]["cosine"] >= 0.999, v.to_dict()
    ops = {n.name: n.op_type for n in onnx.load(str(src)).graph.node}
    cpu = {}
    for target in (U55, U85):
        r = compile_model(src, target, out_dir=tmp_path / target, calibration=str(cal))
        assert r.ok, r.error
        devices = {p.node: p.device for p in r.placement}
        cpu[target] = {ops[n] for n, d in devices.items() if d == "cpu"}
        assert "npu" == devices[next(n for n, op in ops.items() if op == "MaxPool")]
        predicted = {n.name: n.verdict.value for n in npufit.check(src, target, measure="never").nodes}
        assert {k: predicted.get(k) for k in devices} == devices, (target, predicted, devices)
    assert {"TopK", "Mod", "Div", "Cast", "GatherElements"} <= cpu[U55], cpu
    assert {"TopK", "Mod", "Cast", "GatherElements"} <= cpu[U85] and "Div" not in cpu[U85], cpu


def test_sum_of_three_and_hardsigmoid_in_one_model_run_on_the_u55_npu(tmp_path):
    """Issue 30's case: ResNet-50 (ONNX zoo) adds with a Sum, PP-OCRv4 gates with HardSigmoid. One model with both, a
    3-input Sum reading the HardSigmoid, converts, agrees with ONNX Runtime and compiles with Vela for ethos-u55-256
    with both nodes (and every other) on the NPU, as check says (before: no lowering for either, while check said npu)."""
    c, w = _conv(8)
    hs = helper.make_node("HardSigmoid", ["c"], ["h"], name="hs", alpha=0.2, beta=0.5)
    total = helper.make_node("Sum", ["h", "x", "c"], ["y"], name="sum")
    src = _model(tmp_path, [c, hs, total], [w], name="sum_hardsigmoid")
    devices = run(tmp_path, src, {U55: "npu"}, node="sum")[U55]
    assert devices["hs"] == "npu" and set(devices.values()) == {"npu"}, devices

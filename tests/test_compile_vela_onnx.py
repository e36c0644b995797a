"""`npufit compile MODEL.onnx --target ethos-u55-256`: npufit's int8 converter, then the real Vela, placement
mapped back to ONNX node names, prediction compared."""
import hashlib
import json

import pytest

from npufit.compilers.vela import vela_version

pytest.importorskip("ai_edge_litert.interpreter", reason="ai-edge-litert is not installed (pip install 'ai-edge-litert>=2.3')")
torch = pytest.importorskip("torch", reason="test models are exported from torch")
pytestmark = pytest.mark.skipif(vela_version() is None, reason="Vela is not installed (pip install 'ethos-u-vela==5.2.0')")


@pytest.mark.parametrize("act", ["relu", "leakyrelu"])
def test_cli_compile_detector_onnx_fully_npu(tmp_path, capsys, act):
    from npufit.cli import main
    from npufit.zoo.detector import export

    src = tmp_path / "det.onnx"
    export(act, src, opset=13)
    before = hashlib.sha256(src.read_bytes()).hexdigest()
    rc = main(["compile", str(src), "--target", "ethos-u55-256", "--compare-prediction", "--format", "json",
               "--out-dir", str(tmp_path / "out")])
    d = json.loads(capsys.readouterr().out)
    assert rc == 0 and d["ok"], d.get("error")
    assert hashlib.sha256(src.read_bytes()).hexdigest() == before
    assert d["metrics"]["cpu_operators"] == 0 and d["metrics"]["npu_operators"] > 0
    conv = d["metrics"]["conversion"]
    assert conv["converter"] == "npufit.convert.onnx_to_tflite" and conv["min_cosine_vs_onnx"] >= 0.99
    # no calibration given: the file name says so
    assert "convert" in d["timings"] and d["outputs"]["int8_tflite"].endswith("_int8_random-calibrated.tflite")
    by = {p["node"]: p for p in d["placement"]}
    assert by["/stem/stem.0/Conv"]["device"] == "npu" and by["/head_small/Conv"]["layers"] == ["p3"]
    assert all(p["device"] in ("npu", "folded") for p in d["placement"])
    if act == "leakyrelu":  # Vela runs LEAKY_RELU on U55; npufit's prediction (on the int8 twin) agrees
        assert by["/stem/stem.2/LeakyRelu"]["device"] == "npu"
    sc = d["comparison"]["scores"]
    assert sc["fp"] == 0 and sc["fn"] == 0 and sc["tn"] >= 16
    assert "npufit.convert.onnx_to_tflite" in open(d["log_path"]).read()


def test_vela_cpu_op_is_reported_on_the_onnx_node(tmp_path):
    from npufit.compilers import compile_model
    from npufit.zoo.export import export_onnx

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.c1, self.c2 = torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.Conv2d(8, 4, 1)
            self.pool = torch.nn.AvgPool2d(9, 1, 4, count_include_pad=False)  # SAME 9x9: Vela's limit is 8

        def forward(self, x):
            return self.c2(self.pool(torch.relu(self.c1(x))))

    torch.manual_seed(0)
    src = tmp_path / "ap.onnx"
    export_onnx(M(), torch.randn(1, 3, 16, 16), src, 13, ["x"], ["y"])
    r = compile_model(src, "ethos-u55-256", compare_prediction=True, out_dir=tmp_path / "out")
    by = {p.node: p for p in r.placement}
    assert by["/pool/AveragePool"].device == "cpu" and "kernel width: 9 out of range" in by["/pool/AveragePool"].reason
    assert by["/c1/Conv"].device == "npu" and by["/c2/Conv"].device == "npu"
    assert r.comparison.scores()["tp"] == 1 and r.comparison.recall == 1.0


def test_unconvertible_onnx_is_one_line_cli_error(tmp_path, capsys):
    from onnx import TensorProto, helper

    from npufit.cli import main

    g = helper.make_graph([helper.make_node("Relu", ["x"], ["a"], name="r"), helper.make_node("Sin", ["a"], ["y"], name="the_sin")],
                          "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    src = tmp_path / "sin.onnx"
    src.write_bytes(m.SerializeToString())
    rc = main(["compile", str(src), "--target", "ethos-u55-256", "--out-dir", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and "no lowering for Sin 'the_sin'" in err and "npufit split" in err and len(err.splitlines()) == 1


def test_stride4_conv_after_explicit_padding_compiles_as_predicted(tmp_path):
    """Vela 5.2 cannot place (nor fall back) a stride-4 conv once it folds the PAD in. npufit's converter avoids it
    (stride 2 + a 1x1 stride-2 MAX_POOL), so from ONNX the model compiles, and the profile predicts that."""
    from npufit.compilers import compile_model
    from npufit.zoo.export import export_onnx

    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(8, 8, 3, stride=4, padding=1)).eval()
    src = tmp_path / "s4.onnx"
    export_onnx(m, torch.randn(1, 3, 32, 32), src, 13, ["x"], ["y"])
    r = compile_model(src, "ethos-u55-256", compare_prediction=True, out_dir=tmp_path / "out")
    assert r.ok and {p.node: p.device for p in r.placement}["/2/Conv"] == "npu", r.error
    from npufit import check

    # the profile knows the converter's split (CAL-V): it predicts what Vela did
    n = check(src, "ethos-u55-256", assume_int8=True).node("/2/Conv")
    assert n.verdict.value == "npu" and not n.reasons


def test_argmax_classifier_compiles_for_the_u55(tmp_path):
    """Linear -> ArgMax: Vela runs the ARG_MAX on the U55's NPU; its `--show-cpu-operations` report crashes on such a
    model (KeyError in Vela 5.2.0's stats writer), so compile must not ask for it."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from npufit.compilers import compile_model

    w = numpy_helper.from_array(np.random.default_rng(0).normal(size=(16, 10)).astype(np.float32), "W")
    g = helper.make_graph([helper.make_node("MatMul", ["x", "W"], ["y"]),
                           helper.make_node("ArgMax", ["y"], ["z"], axis=1, keepdims=0)], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
                          [helper.make_tensor_value_info("z", TensorProto.INT64, [1])], [w])
    src = tmp_path / "argmax.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), src)
    r = compile_model(src, "ethos-u55-256", out_dir=tmp_path / "out")
    assert r.ok, r.error
    assert {p.op: p.device for p in r.placement}["ArgMax"] == "npu"


def test_u85_cpu_gather_whose_output_vela_renames_is_mapped_to_its_node(tmp_path):
    """The U85's GATHER lowering renames a CPU gather's output ('indices' in the per-layer CSV, 'indices#N' in the
    output file): the placement must still find the node through the operator's inputs, not call it NPU."""
    from torch import nn

    from npufit.compilers import compile_model

    class Embeddings(nn.Module):  # RoBERTa's embedding layer in small: token types gathered by position ids
        def __init__(self):
            super().__init__()
            self.pos, self.tok, self.fc = nn.Embedding(18, 8), nn.Embedding(2, 8), nn.Linear(8, 8)
            self.register_buffer("types", torch.zeros(1, 18, dtype=torch.int64))

        def forward(self, ids):
            mask = ids.ne(1).long()
            pos = torch.cumsum(mask, 1) * mask + 1
            return self.fc(self.pos(pos) + self.tok(torch.gather(self.types, 1, pos)))

    src = tmp_path / "emb.onnx"
    torch.onnx.export(Embeddings(), (torch.full((1, 16), 5, dtype=torch.int64),), str(src), opset_version=17, dynamo=False)
    res = compile_model(src, "ethos-u85-256", out_dir=tmp_path / "out")
    assert res.ok, res.error
    by = {p.node: p for p in res.placement}
    ge = next(p for n, p in by.items() if p.op == "GatherElements")
    assert ge.device == "cpu" and "axis must be equal to batch_dims" in ge.reason, ge

"""`npufit probe --target hailo8` predicts exactly seed 000's ✅/❌ for every case it lists.

Seed 000 (Hailo-8, PyTorch 2.7.1 -> ONNX opset 11 -> DFC 3.32.0) is encoded below in its own words;
the probe runs through the real CLI, worker processes included.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytest.importorskip("torch")

from npufit.probe.catalogue import CASES, SEED_000  # noqa: E402

OK, NO = "✅", "❌"
# seed 000's table: its wording -> (probe case ids, verdict)
SEED_000_TABLE = {
    "nn.Conv2d (1x1, 3x3, 5x5, padding, stride)": (["conv2d_1x1", "conv2d_3x3", "conv2d_5x5_s2"], OK),
    "Depthwise Convolution (groups=in_channels)": (["conv2d_depthwise"], OK),
    "Grouped Convolution (1 < groups < in_channels)": (["conv2d_grouped"], OK),
    "Dilated Convolution (dilation > 1)": (["conv2d_dilated"], OK),
    "nn.ConvTranspose2d": (["conv_transpose2d"], OK),
    "nn.MaxPool2d (various kernel_size, stride, padding)": (["maxpool2d_k2s2", "maxpool2d_k3s1p1"], OK),
    "nn.AvgPool2d (various kernel_size, stride, padding)": (["avgpool2d_k2s2", "avgpool2d_k3s1p1"], OK),
    "nn.AdaptiveMaxPool2d": (["adaptive_maxpool2d"], OK),
    "nn.AdaptiveAvgPool2d (1,1)": (["adaptive_avgpool2d"], OK),
    "F.max_pool2d": (["f_max_pool2d"], OK),
    "F.relu": (["relu"], OK), "F.leaky_relu": (["leaky_relu"], OK), "torch.sigmoid": (["sigmoid"], OK),
    "torch.tanh": (["tanh"], OK), "nn.Hardswish": (["hardswish"], OK), "nn.Hardsigmoid": (["hardsigmoid"], OK),
    "F.gelu": (["gelu"], OK), "F.elu": (["elu"], OK), "nn.PReLU": (["prelu"], OK),
    "Swish/SiLU (x * torch.sigmoid(x))": (["silu_mul"], OK),
    "nn.BatchNorm2d": (["batchnorm2d"], OK), "nn.LayerNorm": (["layernorm"], OK), "nn.InstanceNorm2d": (["instancenorm2d"], OK),
    "nn.Linear": (["linear"], OK), "nn.Flatten": (["flatten"], OK),
    "+": (["add"], OK), "-": (["sub"], OK), "*": (["mul"], OK), "/": (["div"], OK),
    "torch.cat": (["cat"], OK), "torch.squeeze": (["squeeze"], OK), "torch.permute": (["permute"], OK),
    "nn.ZeroPad2d": (["zeropad2d"], OK), "torch.clamp": (["clamp"], OK), "torch.reshape": (["reshape"], OK),
    "F.interpolate (bilinear)": (["interpolate_bilinear"], OK), "F.interpolate (nearest)": (["interpolate_nearest"], OK),
    "nn.Dropout2d": (["dropout2d"], OK), "Residual Block": (["residual_block"], OK),
    "Dense Connection": (["dense_concat"], OK), "Simple Attention": (["simple_attention"], OK),
    "nn.Conv1d (compile timeout)": (["conv1d"], NO),
    "torch.mean(dim=...) (Invalid kernel shape at parse)": (["mean_dim_linear"], NO),
    "torch.Tensor.view (ONNX export failed)": (["view"], NO),
}
EXPECTED = {cid: sym for ids, sym in SEED_000_TABLE.values() for cid in ids}


def test_catalogue_holds_exactly_the_seed000_cases():
    assert {c.id for c in CASES if c.seed == SEED_000} == set(EXPECTED)


@pytest.fixture(scope="module")
def probe_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("probe")
    r = subprocess.run([sys.executable, "-m", "npufit", "probe", "--target", "hailo8", "--opset", "11", "--cases", "seed000",
                        "--jobs", "2", "--format", "json", "--output", str(out)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout), out


def test_probe_predicts_seed000_exactly(probe_run):
    data, _ = probe_run
    assert data["schema"] == "npufit.probe/1" and data["target"] == "hailo8" and data["opset"] == 11
    got = {c["id"]: c["predicted"]["symbol"] for c in data["cases"]}
    assert got == EXPECTED, {k: (got.get(k), v) for k, v in EXPECTED.items() if got.get(k) != v}


def test_failures_carry_seed000_reasons_and_workarounds(probe_run):
    data, out = probe_run
    cases = {c["id"]: c for c in data["cases"]}
    conv1d = cases["conv1d"]["predicted"]["failing"][0]
    assert conv1d["rules"] == ["hailo8.conv.rank"] and "conv1d_to_conv2d" in conv1d["fix_rules"]
    assert any("Conv2d with kernel (1, k)" in f for f in conv1d["fix"])
    mean = cases["mean_dim_linear"]["predicted"]["failing"]
    assert {f["op_type"] for f in mean} == {"ReduceMean", "Reshape", "Gemm"}
    assert all(f["rules"] == ["hailo8.mean_linear"] for f in mean)
    view = cases["view"]["predicted"]
    assert view["status"] == "export_failed" and "view size is not compatible" in view["error"]  # PyTorch's own words
    assert cases["view"]["onnx_ops"] == []
    md = (out / "hailo8-matrix.md").read_text()
    assert "## ✅ Supported" in md and "## ❌ Unsupported or failing" in md
    assert "AdaptiveAvgPool2d((1, 1)) + torch.squeeze" in md and "use torch.reshape" in md
    assert (out / "cases" / "conv1d.onnx").exists() and not (out / "cases" / "view.onnx").exists()
    assert json.loads((out / "hailo8-probe.json").read_text())["cases"] == data["cases"]

"""One command from ONNX to Vela (`npufit compile model.onnx --target ethos-u55-256`) for the cases issue 16 found
broken: an exact-GELU (Erf) classifier and a Conv1d model compile fully on the NPU; a real converter gap is npufit's,
names the node and gives the split command, which then works. Real Vela, real CLI."""
import subprocess
import sys

import pytest

pytest.importorskip("ai_edge_litert.interpreter", reason="ai-edge-litert is not installed")
torch = pytest.importorskip("torch", reason="test models are exported from torch")
from npufit.compilers.vela import vela_version  # noqa: E402
from npufit.zoo.export import export_onnx  # noqa: E402

pytestmark = pytest.mark.skipif(vela_version() is None, reason="Vela (ethos-u-vela) is not installed")
nn = torch.nn


def _cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "npufit", *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=300)


def _export(m, x, path, opset=13):
    torch.manual_seed(0)
    export_onnx(m.eval(), x, path, opset, ["x"], ["y"])
    return path


def test_gelu_classifier_compiles_fully_on_the_npu(tmp_path):
    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.GELU(), nn.Conv2d(16, 16, 3, 2, 1), nn.GELU(), nn.AdaptiveAvgPool2d(1),
                      nn.Flatten(), nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 10))
    src = _export(m, torch.randn(1, 3, 32, 32), tmp_path / "gelu.onnx")
    r = _cli("compile", src, "--target", "ethos-u55-256", "--format", "json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    import json

    d = json.loads(r.stdout)
    assert d["ok"] and d["metrics"]["cpu_operators"] == 0 and d["metrics"]["npu_operators"] > 0, d["metrics"]
    assert d["metrics"]["conversion"]["min_cosine_vs_onnx"] >= 0.999
    erf = [p for p in d["placement"] if p["op"] == "Erf"]
    assert len(erf) == 3 and all(p["device"] == "npu" for p in erf), erf  # each Erf's TANH/MUL/ADD ops run on the NPU


def test_conv1d_model_compiles_after_the_exact_rewrite(tmp_path):
    m = nn.Sequential(nn.Conv1d(4, 16, 5, padding=2), nn.ReLU(), nn.Conv1d(16, 16, 3, padding=1), nn.ReLU(), nn.Conv1d(16, 3, 1))
    src = _export(m, torch.randn(1, 4, 64), tmp_path / "c1.onnx")
    r = _cli("compile", src, "--target", "ethos-u55-256", "--all-nodes", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "before converting, on a copy: conv1d_to_conv2d x3" in r.stdout
    assert "placement: 5 npu, 0 cpu, 0 folded of 5 nodes" in r.stdout  # mapped back to the user's node names
    assert "/2/Conv" in r.stdout


def test_converter_gap_names_npufit_the_node_and_a_working_way_out(tmp_path):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.c, self.d, self.g = nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(8, 4, 1), nn.Conv2d(3, 2, 3, padding=1)

        def forward(self, x):  # a sampling grid computed from the input: no TFLite form
            grid = torch.tanh(self.g(x)).permute(0, 2, 3, 1)
            return self.d(torch.nn.functional.grid_sample(torch.relu(self.c(x)), grid, align_corners=False))

    src = _export(M(), torch.randn(1, 3, 16, 16), tmp_path / "grid.onnx", 16)
    r = _cli("compile", src, "--target", "ethos-u55-256", cwd=tmp_path)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    msg = r.stderr.strip()
    assert "npufit's ONNX -> int8 TFLite converter (not the vendor toolchain)" in msg and "GridSample '/GridSample' (the sampling grid is computed at run time" in msg
    assert "rejected by" not in msg and "Traceback" not in msg
    split_cmd = msg.split("way out: ")[1].split(" (the part")[0].split()
    compile_cmd = msg.split("), then ")[1].split()
    assert split_cmd[:2] == ["npufit", "split"] and compile_cmd[:2] == ["npufit", "compile"]
    assert _cli(*split_cmd[1:], cwd=tmp_path).returncode == 0
    r2 = _cli(*compile_cmd[1:], cwd=tmp_path)
    assert r2.returncode == 0, r2.stderr
    assert "vela (5.2.0) -> ethos-u55-256: OK" in r2.stdout


def test_stride4_patch_embedding_compiles(tmp_path):
    """Vela 5.2 stops on a stride-4 CONV_2D ("Non-passthrough operation (Conv2D) could not run on NPU")."""
    src = _export(nn.Sequential(nn.Conv2d(3, 16, 7, stride=4, padding=3), nn.ReLU()), torch.randn(1, 3, 64, 64), tmp_path / "s4.onnx")
    r = _cli("compile", src, "--target", "ethos-u55-256", cwd=tmp_path)
    assert r.returncode == 0 and "vela (5.2.0) -> ethos-u55-256: OK" in r.stdout and "placement: 2 npu, 0 cpu" in r.stdout, r.stdout


def test_padded_patch_embedding_compiles(tmp_path):
    """ViT-Pose's patch embedding (kernel = stride 8, padding 2): the VALID conv after the PAD reads 64x48 of the
    66x50 padded map; Vela 5.2 runs a stride-8 CONV_2D only on an input it tiles exactly, so the unread tail is cut."""
    m = nn.Sequential(nn.Conv2d(3, 16, 8, stride=8, padding=2), nn.ReLU(), nn.Conv2d(16, 8, 3, padding=1))
    src = _export(m, torch.randn(1, 3, 64, 48), tmp_path / "p8.onnx")
    r = _cli("compile", src, "--target", "ethos-u55-256", cwd=tmp_path)
    assert r.returncode == 0 and "vela (5.2.0) -> ethos-u55-256: OK" in r.stdout and "placement: 3 npu, 0 cpu" in r.stdout, r.stdout + r.stderr
    assert "min_cosine_vs_onnx=0.999" in r.stdout or "min_cosine_vs_onnx=1" in r.stdout, r.stdout

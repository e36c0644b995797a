"""merge_reshapes: layout-only chains into one Reshape (seed 000: flatten(2) before a Conv1d)."""
import torch

import npufit
from npufit import check


class FlattenConv1d(torch.nn.Module):
    """Seed 000's case: a Conv2d feature map flattened to [N, C, H*W] and fed to a Conv1d."""

    def __init__(self):
        super().__init__()
        self.c = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.c1 = torch.nn.Conv1d(8, 16, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.c1(torch.relu(self.c(x)).flatten(2)))


def test_reshape_then_unsqueeze_chain_becomes_one_reshape(kit):
    before = kit.parse("""
        <ir_version: 8, opset_import: ["" : 13]>
        g (float[1,8,4,4] x) => (float[1,8,1,16] y) {
            s1 = Constant <value = int64[3] {1, 8, 16}> ()
            a = Reshape (x, s1)
            ax = Constant <value = int64[1] {2}> ()
            y = Unsqueeze (a, ax)
        }""")
    after, fired = kit.apply("merge_reshapes", kit.parse("""
        <ir_version: 8, opset_import: ["" : 13]>
        g (float[1,8,4,4] x) => (float[1,8,1,16] y) {
            s1 = Constant <value = int64[3] {1, 8, 16}> ()
            a = Reshape (x, s1)
            s2 = Constant <value = int64[4] {1, 8, 1, 16}> ()
            y = Reshape (a, s2)
        }"""))
    assert fired == 1 and kit.ops(after) == ["Reshape"]
    kit.assert_same(before, after, rtol=0.0, atol=0.0)


def test_dynamic_final_shape_is_refused(kit):
    m = kit.parse("""
        <ir_version: 8, opset_import: ["" : 13]>
        g (float[N,8,4,4] x) => (float[N,8,1,16] y) {
            s1 = Constant <value = int64[3] {0, 8, 16}> ()
            a = Reshape (x, s1)
            s2 = Constant <value = int64[4] {0, 8, 1, 16}> ()
            y = Reshape (a, s2)
        }""")
    assert any("not static" in r for r in kit.refusals("merge_reshapes", m))


def test_seed000_flatten_conv1d_becomes_fully_npu_on_hailo8(tmp_path):
    from npufit.zoo.export import export_onnx

    src, out = tmp_path / "m.onnx", tmp_path / "fixed.onnx"
    export_onnx(FlattenConv1d(), torch.randn(1, 3, 8, 8), src, opset=11)
    res = npufit.fix(src, target="hailo8", output=out)
    assert {r.name for r in res.applied} >= {"conv1d_to_conv2d", "merge_reshapes"}
    rep = check(out, "hailo8")
    assert rep.fully_npu and len(rep.partitions) == 1  # before this rule a rank-3 Reshape stayed and cut the model
    assert res.verification["max_abs"] <= 1e-6

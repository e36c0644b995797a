import torch

TEXT_ACT = """
<ir_version: 8, opset_import: ["" : 11]>
g (float[2,8] a, float[8,3] b) => (float[2,3] y) {
  y = MatMul(a, b)
}
"""


def test_linear_becomes_1x1_conv(kit):
    before = kit.torch_model(torch.nn.Linear(16, 7), torch.randn(3, 16))
    after, fired = kit.apply("linear_to_conv1x1", before)
    assert fired == 1 and kit.ops(after) == ["Reshape", "Conv", "Flatten"]
    kit.assert_same(before, after)


def test_rank4_matmul_becomes_transposed_conv(kit):
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(6, 4))

        def forward(self, x):
            return x @ self.w

    before = kit.torch_model(M(), torch.randn(1, 3, 5, 6))
    after, fired = kit.apply("linear_to_conv1x1", before)
    assert fired == 1 and kit.ops(after) == ["Transpose", "Conv", "Transpose"]
    kit.assert_same(before, after)


def test_activation_times_activation_does_not_fire(kit):
    before = kit.parse(TEXT_ACT)
    after, fired = kit.apply("linear_to_conv1x1", before)
    assert fired == 0 and kit.ops(after) == ["MatMul"]
    assert any("not a constant matrix" in r for r in kit.refusals("linear_to_conv1x1", before))

import torch


class TCN(torch.nn.Module):
    """Two Conv1d with a residual and ReLU: the chain must stay 4-D (no Squeeze between the convs)."""

    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv1d(4, 8, 3, padding=1)
        self.c2 = torch.nn.Conv1d(8, 8, 5, stride=1, padding=4, dilation=2, groups=2)

    def forward(self, x):
        y = torch.relu(self.c1(x))
        return self.c2(y) + y * 0.5


def test_conv1d_chain_becomes_4d(kit):
    before = kit.torch_model(TCN(), torch.randn(1, 4, 32))
    after, fired = kit.apply("conv1d_to_conv2d", before)
    assert fired == 2
    assert kit.ops(after) == ["Reshape", "Conv", "Relu", "Conv", "Mul", "Add", "Squeeze"]
    assert all(len(i.dims) == 4 for i in after.graph.initializer if "weight" in i.name)  # (1,k) kernels
    kit.assert_same(before, after, rtol=1e-6)


def test_conv1d_opset13_uses_axes_input(kit):
    before = kit.torch_model(torch.nn.Conv1d(3, 5, 3, stride=2), torch.randn(2, 3, 17), opset=13)
    after, fired = kit.apply("conv1d_to_conv2d", before)
    assert fired == 1 and kit.ops(after) == ["Reshape", "Conv", "Squeeze"]
    sq = [n for n in after.graph.node if n.op_type == "Squeeze"][0]
    assert len(sq.input) == 2 and not sq.attribute  # opset >= 13: axes is an input
    kit.assert_same(before, after, rtol=1e-6)


def test_conv2d_does_not_fire(kit):
    before = kit.torch_model(torch.nn.Conv2d(3, 4, 3), torch.randn(1, 3, 8, 8))
    after, fired = kit.apply("conv1d_to_conv2d", before)
    assert fired == 0 and kit.ops(after) == ["Conv"]
    assert any("not a 1-D convolution" in r for r in kit.refusals("conv1d_to_conv2d", before))

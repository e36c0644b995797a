import torch

TEXT_PARTIAL = """
<ir_version: 8, opset_import: ["" : 11]>
g (float[1,4,6,5] x) => (float[1,4,6] y) {
  y = ReduceMean<axes=[3], keepdims=0>(x)
}
"""
TEXT_CHANNEL = """
<ir_version: 8, opset_import: ["" : 11]>
g (float[1,4,6,5] x) => (float[1,1,6,5] y) {
  y = ReduceMean<axes=[1], keepdims=1>(x)
}
"""


class MeanHead(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.fc = torch.nn.Linear(8, 5)

    def forward(self, x):
        y = torch.relu(self.conv(x)).mean(dim=(2, 3))
        return self.fc(y.reshape(y.shape[0], -1))


def test_seed000_mean_reshape_linear_chain(kit):
    before = kit.torch_model(MeanHead(), torch.randn(1, 3, 12, 12))
    assert kit.ops(before) == ["Conv", "Relu", "ReduceMean", "Reshape", "Gemm"]
    after, fired = kit.apply("mean_to_global_pool", before)
    assert fired == 1
    assert kit.ops(after) == ["Conv", "Relu", "GlobalAveragePool", "Flatten", "Gemm"]  # the Reshape is gone too
    kit.assert_same(before, after)


def test_rank3_mean_keepdims(kit):
    class M(torch.nn.Module):
        def forward(self, x):
            return x.mean(dim=-1, keepdim=True)

    before = kit.torch_model(M(), torch.randn(2, 4, 9))
    after, fired = kit.apply("mean_to_global_pool", before)
    assert fired == 1 and kit.ops(after) == ["Reshape", "GlobalAveragePool", "Squeeze"]
    kit.assert_same(before, after)


def test_partial_spatial_mean_becomes_average_pool(kit):
    before = kit.parse(TEXT_PARTIAL)
    after, fired = kit.apply("mean_to_global_pool", before)
    assert fired == 1 and kit.ops(after) == ["AveragePool", "Squeeze"]
    pool = [n for n in after.graph.node if n.op_type == "AveragePool"][0]
    assert list(pool.attribute[0].ints) == [1, 5]
    kit.assert_same(before, after)


def test_channel_mean_does_not_fire(kit):
    before = kit.parse(TEXT_CHANNEL)
    after, fired = kit.apply("mean_to_global_pool", before)
    assert fired == 0 and kit.ops(after) == ["ReduceMean"]
    assert any("batch or channel axis" in r for r in kit.refusals("mean_to_global_pool", before))

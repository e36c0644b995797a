import torch

LAYERNORM17 = """
<ir_version: 8, opset_import: ["" : 17]>
g (float[2,8] x, float[8] s, float[8] b) => (float[2,8] y) {
  y = LayerNormalization(x, s, b)
}
"""


def test_opset17_model_converted_to_11(kit):
    class M(torch.nn.Module):
        def forward(self, x):
            return (x * 2.0).mean(dim=1, keepdim=True).squeeze(1)

    before = kit.torch_model(M(), torch.randn(2, 3, 4), opset=17)
    after, fired = kit.apply("opset_convert", before, opset=11, accepted=(8, 11))
    assert fired == 1
    assert next(o.version for o in after.opset_import if o.domain == "") == 11
    sq = [n for n in after.graph.node if n.op_type == "Squeeze"][0]
    assert [a.name for a in sq.attribute] == ["axes"]  # opset-11 form: axes as an attribute
    kit.assert_same(before, after, rtol=0, atol=0)


def test_accepted_opset_does_not_fire(kit):
    before = kit.torch_model(torch.nn.ReLU(), torch.randn(2, 3), opset=11)
    after, fired = kit.apply("opset_convert", before, opset=11, accepted=(8, 11))
    assert fired == 0 and after.opset_import[0].version == 11


def test_op_without_adapter_reports_why(kit):
    import pytest

    from npufit.rewrite import RuleNotApplicable

    with pytest.raises(RuleNotApplicable, match="LayerNormalization does not exist in opset 11"):
        kit.apply("opset_convert", kit.parse(LAYERNORM17), opset=11, accepted=(8, 11))

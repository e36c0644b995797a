import numpy as np

TEXT = """
<ir_version: 8, opset_import: ["" : {opset}]>
g (float[1,300,80] x) => (float[1,300] y, float[1,80] z) {{
  y = ReduceMax<{axes2}keepdims=0>(x{in2})
  z = ReduceMin<{axes1}keepdims=0>(x{in1})
}}
"""


def _text(opset):
    if opset >= 18:
        return """
<ir_version: 8, opset_import: ["" : 18]>
g (float[1,300,80] x) => (float[1,300] y, float[1,80] z) {
  a2 = Constant<value=int64[1] {2}>()
  a1 = Constant<value=int64[1] {1}>()
  y = ReduceMax<keepdims=0>(x, a2)
  z = ReduceMin<keepdims=0>(x, a1)
}
"""
    return TEXT.format(opset=opset, axes2="axes=[2], ", axes1="axes=[1], ", in2="", in1="")


def test_keepdims_plus_squeeze(kit):
    for opset in (11, 18):
        before = kit.parse(_text(opset))
        after, fired = kit.apply("reduce_keepdims", before)
        assert fired == 2
        assert kit.ops(after) == ["ReduceMax", "Squeeze", "ReduceMin", "Squeeze"]
        assert all(a.i == 1 for n in after.graph.node for a in n.attribute if a.name == "keepdims")
        kit.assert_same(before, after, rtol=0, atol=0)


def test_channel_axis_variant_moves_reduction_to_axis_1(kit):
    before = kit.parse(_text(11))
    after, fired = kit.apply("reduce_keepdims", before, channel_axis=True)
    assert fired == 2
    red = [n for n in after.graph.node if n.op_type in ("ReduceMax", "ReduceMin")]
    assert all(list(a.ints) == [1] for n in red for a in n.attribute if a.name == "axes")
    assert kit.ops(after).count("Transpose") == 2  # only the axis-2 reduction needs the transposes
    # ties: equal maxima along the reduced axis must not change anything
    x = np.zeros((1, 300, 80), np.float32)
    x[0, :, 5] = 1.0
    kit.assert_same(before, after, rtol=0, atol=0, feeds=kit.feeds(x=x))
    kit.assert_same(before, after, rtol=0, atol=0)


def test_keepdims1_channel_reduction_does_not_fire(kit):
    text = """
<ir_version: 8, opset_import: ["" : 11]>
g (float[1,8,4,4] x) => (float[1,1,4,4] y) {
  y = ReduceMax<axes=[1], keepdims=1>(x)
}
"""
    before = kit.parse(text)
    after, fired = kit.apply("reduce_keepdims", before, channel_axis=True)
    assert fired == 0 and kit.ops(after) == ["ReduceMax"]
    assert any("already keepdims=1 on the channel axis" in r for r in kit.refusals("reduce_keepdims", before, channel_axis=True))

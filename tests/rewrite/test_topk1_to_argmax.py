import numpy as np

TEXT = """
<ir_version: 8, opset_import: ["" : 11]>
g (float[2,7,5] x) => (float[2,7,1] v, int64[2,7,1] i, float[2,1,5] v2, int64[2,1,5] i2) {
  k = Constant<value=int64[1] {1}>()
  v, i = TopK<axis=-1>(x, k)
  v2, i2 = TopK<axis=1, largest=0>(x, k)
}
"""
TEXT_K5 = """
<ir_version: 8, opset_import: ["" : 11]>
g (float[2,7] x) => (float[2,5] v, int64[2,5] i) {
  k = Constant<value=int64[1] {5}>()
  v, i = TopK<axis=-1>(x, k)
}
"""


def _tie_feeds():
    x = np.random.default_rng(3).integers(0, 3, (2, 7, 5)).astype(np.float32)  # many ties
    return [{"x": x}]


def test_topk1_becomes_argmax(kit):
    before = kit.parse(TEXT)
    after, fired = kit.apply("topk1_to_argmax", before)
    assert fired == 2
    assert sorted(kit.ops(after)) == ["ArgMax", "ArgMin", "ReduceMax", "ReduceMin"]
    kit.assert_same(before, after, rtol=0, atol=0)
    kit.assert_same(before, after, rtol=0, atol=0, feeds=_tie_feeds())  # first index on ties, like TopK


def test_topk1_channel_axis_variant(kit):
    before = kit.parse(TEXT)
    after, fired = kit.apply("topk1_to_argmax", before, channel_axis=True)
    assert fired == 2
    args = [n for n in after.graph.node if n.op_type in ("ArgMax", "ArgMin")]
    assert all(a.i == 1 for n in args for a in n.attribute if a.name == "axis")
    kit.assert_same(before, after, rtol=0, atol=0, feeds=_tie_feeds())


def test_indices_only_drops_values_branch(kit):
    text = TEXT_K5.replace("{5}", "{1}").replace("float[2,5] v, int64[2,5] i", "int64[2,1] i")
    before = kit.parse(text)
    after, fired = kit.apply("topk1_to_argmax", before)
    assert fired == 1 and kit.ops(after) == ["ArgMax"]
    kit.assert_same(before, after, rtol=0, atol=0)


def test_k5_does_not_fire(kit):
    before = kit.parse(TEXT_K5)
    after, fired = kit.apply("topk1_to_argmax", before)
    assert fired == 0 and kit.ops(after) == ["TopK"]
    assert any("k=5" in r for r in kit.refusals("topk1_to_argmax", before))

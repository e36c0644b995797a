TEXT = """
<ir_version: 8, opset_import: ["" : 13]>
g (float[2,3] x) => (float[2,3] y) {
  a = Identity(x)
  b = Relu(a)
  c = Dropout(b)
  y = Identity(c)
}
"""
PASS_THROUGH = """
<ir_version: 8, opset_import: ["" : 13]>
g (float[2,3] x) => (float[2,3] y) {
  y = Identity(x)
}
"""
TRAINING = """
<ir_version: 8, opset_import: ["" : 13]>
g (float[2,3] x) => (float[2,3] y) {
  r = Constant<value=float {0.5}>()
  t = Constant<value=bool {1}>()
  y = Dropout(x, r, t)
}
"""


def test_identity_and_dropout_removed(kit):
    before = kit.parse(TEXT)
    after, fired = kit.apply("remove_identity", before)
    assert fired == 3 and kit.ops(after) == ["Relu"]
    assert after.graph.output[0].name == "y"  # the model's interface keeps its names
    kit.assert_same(before, after, rtol=0, atol=0)


def test_graph_input_to_output_identity_kept(kit):
    before = kit.parse(PASS_THROUGH)
    after, fired = kit.apply("remove_identity", before)
    assert fired == 0 and kit.ops(after) == ["Identity"]
    assert any("graph output fed directly by a graph input" in r for r in kit.refusals("remove_identity", before))


def test_training_mode_dropout_kept(kit):
    before = kit.parse(TRAINING)
    after, fired = kit.apply("remove_identity", before)
    assert fired == 0 and kit.ops(after) == ["Dropout"]
    assert any("training_mode" in r for r in kit.refusals("remove_identity", before))

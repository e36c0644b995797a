TEXT = """
<ir_version: 8, opset_import: ["" : 13]>
g (float[1,3,4,4] x) => (float[1,48] y, float[1,3,4,4] z) {
  s = Shape(x)
  i0 = Constant<value=int64[1] {0}>()
  n = Gather(s, i0)
  m1 = Constant<value=int64[1] {-1}>()
  shp = Concat<axis=0>(n, m1)
  y = Reshape(x, shp)
  c = ConstantOfShape<value=float[1] {0.5}>(s)
  one = Constant<value=float[1,3,1,1] {1,2,3}>()
  t = Constant<value=int64[4] {1,1,4,4}>()
  e = Tile(one, t)
  cond = Constant<value=bool[1] {1}>()
  w = Where(cond, c, e)
  z = Add(x, w)
}
"""
DYNAMIC = """
<ir_version: 8, opset_import: ["" : 13]>
g (float[N,3] x) => (float[N,3] z) {
  s = Shape(x)
  c = ConstantOfShape<value=float[1] {0.5}>(s)
  z = Add(x, c)
}
"""


def test_shape_arithmetic_and_constant_producers_fold(kit):
    before = kit.parse(TEXT)
    after, fired = kit.apply("fold_constants", before)
    assert fired >= 6  # Shape, Gather, Concat, ConstantOfShape, Tile, Where
    assert kit.ops(after) == ["Reshape", "Add"]
    kit.assert_same(before, after, rtol=0, atol=0)


def test_dynamic_shape_is_not_folded(kit):
    before = kit.parse(DYNAMIC)
    after, fired = kit.apply("fold_constants", before)
    assert fired == 0 and kit.ops(after) == ["Shape", "ConstantOfShape", "Add"]  # N is only known at run time

import numpy as np

INT = """
<ir_version: 8, opset_import: ["" : 13]>
g (int64[64] a, int64[64] b) => (int64[64] py, int64[64] c) {
  py = Mod<fmod=0>(a, b)
  c = Mod<fmod=1>(a, b)
}
"""
FLOAT = """
<ir_version: 8, opset_import: ["" : 13]>
g (float[64] a, float[64] b) => (float[64] y) {
  y = Mod<fmod=1>(a, b)
}
"""
BOOLISH = """
<ir_version: 8, opset_import: ["" : 13]>
g (float[4] a) => (float[4] y) {
  y = Relu(a)
}
"""


def _int_feeds():
    rng = np.random.default_rng(0)
    a = rng.integers(-50, 50, 64).astype(np.int64)
    b = rng.integers(1, 9, 64).astype(np.int64) * rng.choice([-1, 1], 64)
    a[:4], b[:4] = [7, -7, 7, -7], [3, 3, -3, -3]  # every sign combination
    return [{"a": a, "b": b}]


def test_integer_mod_python_and_c_semantics(kit):
    before = kit.parse(INT)
    after, fired = kit.apply("mod_decompose", before)
    assert fired == 2 and "Mod" not in kit.ops(after)
    assert {"Div", "Mul", "Sub", "Where"} <= set(kit.ops(after))
    kit.assert_same(before, after, rtol=0, atol=0, feeds=_int_feeds())  # integer paths exactly equal
    # ONNX/Python semantics spot check: -7 mod 3 = 2, 7 mod -3 = -2; fmod: -7 fmod 3 = -1
    from npufit.verify.compare import make_session, run_onnx

    out = run_onnx(make_session(after.SerializeToString()), _int_feeds()[0])
    assert list(out["py"][:4]) == [1, 2, -2, -1] and list(out["c"][:4]) == [1, -1, 1, -1]


def test_float_fmod(kit):
    before = kit.parse(FLOAT)
    after, fired = kit.apply("mod_decompose", before)
    assert fired == 1 and kit.ops(after) == ["Div", "Sign", "Abs", "Floor", "Mul", "Mul", "Sub"]
    rng = np.random.default_rng(1)
    feeds = [{"a": (rng.standard_normal(64) * 10).astype(np.float32), "b": (rng.uniform(0.5, 3, 64) * rng.choice([-1, 1], 64)).astype(np.float32)}]
    kit.assert_same(before, after, feeds=feeds)


def test_no_mod_does_not_fire(kit):
    before = kit.parse(BOOLISH)
    after, fired = kit.apply("mod_decompose", before)
    assert fired == 0 and kit.ops(after) == ["Relu"]

"""Converter forms met on real models, each as a small ONNX graph: a float Where with one constant and one computed
branch (attention bias, masks of 0 / -100 / -1e4 / -1e9 / finfo.min), integer Clip / Div / Neg / Abs / Transpose /
Concat / Slice (index clamping), Max / Min / Clip against constants and of any number of inputs, constants against
an NHWC activation; int8 and int16. Each is held against ONNX Runtime by the LiteRT interpreter on the calibration
samples: cosine >= 0.999 for float outputs, exact for integer ones."""
import numpy as np
import pytest

pytest.importorskip("ai_edge_litert.interpreter", reason="ai-edge-litert is not installed (pip install 'ai-edge-litert>=2.3')")
onnx = pytest.importorskip("onnx")

from onnx import TensorProto as TP, helper as h, numpy_helper as nh  # noqa: E402

from npufit.convert import convert, verify_tflite  # noqa: E402

COS = 0.999
N = h.make_node
FMIN = float(np.finfo(np.float32).min)  # what transformers fills masked scores with
# x: float activations [1, 4, 8]; i: int64 ids [1, 8] (calibration ids are [0, 10)); m: i == 0 (a sparse mask)
MASK = [N("Equal", ["i", "zero"], ["m"]), N("Mul", ["x", "half"], ["y"])]
BASE = {"zero": np.array(0, np.int64), "half": np.array(0.5, np.float32)}


def _f(v):
    return np.array(v, np.float32)


def _i(v, dt=np.int64):
    return np.array(v, dt)


def _build(path, nodes, out_dtype, inits, xshape=(1, 4, 8), oshape=None):
    shape = oshape or (xshape if out_dtype == TP.FLOAT else [1, 8])
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", TP.FLOAT, xshape), h.make_tensor_value_info("i", TP.INT64, [1, 8])],
                     [h.make_tensor_value_info("o", out_dtype, shape)], [nh.from_array(v, k) for k, v in inits.items()])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    onnx.save(m, path)


def _check(tmp_path, nodes, out_dtype, inits, activations="int8", ops=(), **shapes):
    from npufit.convert.onnx_prep import prepare
    from npufit.quantize.calibration import input_specs, load_calibration

    src = tmp_path / "m.onnx"
    _build(src, nodes, out_dtype, inits, **shapes)
    res = convert(src, tmp_path / "m.tflite", samples=8, verify=None, activations=activations)
    cal = load_calibration("random", input_specs(prepare(src, None).model), count=8, seed=0)
    d = verify_tflite(res.path, src, [cal[k] for k in range(len(cal))]).per_output["o"]
    if out_dtype == TP.FLOAT:
        assert d["cosine"] >= COS, (d, res.op_counts)
    else:  # integer ops are exact
        assert d["agreement"] == 1.0 and d["max_abs"] == 0.0, (d, res.op_counts)
    for op in ops:
        assert op in res.op_counts, (op, res.op_counts)
    return res


@pytest.mark.parametrize("const", [0.0, -100.0, -1e4, -1e9, FMIN], ids=["0", "-100", "-1e4", "-1e9", "finfo.min"])
@pytest.mark.parametrize("computed_first", [False, True])
@pytest.mark.parametrize("activations", ["int8", "int16"])
def test_attention_bias_where_with_one_computed_branch(tmp_path, const, computed_first, activations):
    """x + Where(mask, c, y * 0.5): SELECT_V2 over the output's range; feeding a Softmax with a finfo.min fill or
    a -1e4 / -1e9 mask it folds into the Add (SELECT_V2 of x + y and the int8 end), so no scale spans the mask
    value (1e38 made LiteRT abort; -1e4 gave cosine 0.60)."""
    fill = const <= -1e4
    cond = ["nm"] if computed_first else ["m"]  # keep the masked positions sparse either way
    branches = ["y", "c"] if computed_first else ["c", "y"]
    nodes = MASK + [N("Not", ["m"], ["nm"])] * computed_first + [N("Where", cond + branches, ["w"]), N("Add", ["x", "w"], ["s" if fill else "o"])]
    nodes += [N("Softmax", ["s"], ["o"], axis=-1)] if fill else []
    res = _check(tmp_path, nodes, TP.FLOAT, {**BASE, "c": _f(const)}, activations, ops=("SELECT_V2", "ADD"))
    from ai_edge_litert.interpreter import Interpreter

    scales = [s for t in Interpreter(model_path=str(res.path)).get_tensor_details() for s in t["quantization_parameters"]["scales"]]
    assert max(scales) < 1.0, max(scales)


@pytest.mark.parametrize("form", ["constant-branches", "into-softmax"])
def test_large_finite_mask_value(tmp_path, form):
    """A -1e4 mask (older exporters' masked_fill value): x + Where(m, -1e4, 0) -> Softmax, and Where(m, -1e4, y)
    -> Softmax, saturate the masked positions to the int8 end (cosine 0.72 before: the scale spanned 1e4)."""
    if form == "constant-branches":
        nodes = MASK + [N("Where", ["m", "c", "z"], ["w"]), N("Add", ["x", "w"], ["s"])]
    else:
        nodes = MASK + [N("Where", ["m", "c", "y"], ["s"])]
    _check(tmp_path, nodes + [N("Softmax", ["s"], ["o"], axis=-1)], TP.FLOAT, {**BASE, "c": _f(-1e4), "z": _f(0.0)}, ops=("SELECT_V2",))


def test_mostly_masked_rows_into_softmax(tmp_path):
    """9 in 10 positions masked with finfo.min before a Softmax: rows whose few scores are all low. The int8 end
    sits ln(512 n) below the smallest score, not the largest (cosine 0.99893 before)."""
    nodes = MASK + [N("Where", ["m", "y", "c"], ["w"]), N("Add", ["x", "w"], ["s"]), N("Softmax", ["s"], ["o"], axis=-1)]
    _check(tmp_path, nodes, TP.FLOAT, {**BASE, "c": _f(FMIN)}, ops=("SELECT_V2",))


@pytest.mark.parametrize("activations", ["int8", "int16"])
def test_where_branches_computed_or_constant(tmp_path, activations):
    """A Where of two computed branches plus one of a constant and a computed branch: neither folds into the Add."""
    nodes = MASK + [N("Where", ["m", "x", "y"], ["a"]), N("Where", ["m", "c", "y"], ["b"]), N("Add", ["a", "b"], ["o"])]
    _check(tmp_path, nodes, TP.FLOAT, {**BASE, "c": _f(-1.0)}, activations, ops=("SELECT_V2",))


@pytest.mark.parametrize("activations", ["int8", "int16"])
@pytest.mark.parametrize("op", ["Where", "Max", "Clip"])
def test_constant_input_against_an_nhwc_activation(tmp_path, op, activations):
    """After a Conv (NHWC in TFLite): Where by a constant [1, 1, H, W] condition with a constant branch (its
    constant term was transposed to NHWC twice: LiteRT refused the ADD), Max with a per-channel constant, Clip."""
    rng = np.random.default_rng(0)
    inits = {"wt": (rng.standard_normal((8, 3, 3, 3)) * 0.3).astype(np.float32), "half": _f(0.5), "k": _f(-0.5),
             "cm": rng.random((1, 1, 6, 6)) > 0.3, "kc": (rng.standard_normal((1, 8, 1, 1)) * 0.3).astype(np.float32),
             "hi": _f(0.7)}
    tail = {"Where": [N("Mul", ["c", "half"], ["y"]), N("Where", ["cm", "k", "y"], ["o"])],
            "Max": [N("Max", ["c", "kc"], ["o"])], "Clip": [N("Clip", ["c", "k", "hi"], ["o"])]}[op]
    _check(tmp_path, [N("Conv", ["x", "wt"], ["c"], pads=[1, 1, 1, 1])] + tail, TP.FLOAT, inits, activations,
           ops=("CONV_2D",), xshape=[1, 3, 6, 6], oshape=[1, 8, 6, 6])


CLIP = {"lo": _i(2), "hi": _i(5)}


@pytest.mark.parametrize("nodes, inits, ops", [
    ([N("Clip", ["i", "lo", "hi"], ["o"])], CLIP, ("MAXIMUM", "MINIMUM")),
    ([N("Clip", ["i", "lo"], ["o"])], CLIP, ("MAXIMUM",)),
    ([N("Clip", ["i", "", "hi"], ["o"])], CLIP, ("MINIMUM",)),
    ([N("Cast", ["i"], ["j"], to=TP.INT32), N("Clip", ["j", "l32", "h32"], ["k"]), N("Cast", ["k"], ["o"], to=TP.INT64)],
     {"l32": _i(1, np.int32), "h32": _i(4, np.int32)}, ("MAXIMUM", "MINIMUM")),
    ([N("Gather", ["i", "zero"], ["g"], axis=1), N("Squeeze", ["g", "ax"], ["b"]), N("Clip", ["i", "b", "hi"], ["o"])],
     {"zero": _i(0), "ax": _i([0]), "hi": _i(6)}, ("MAXIMUM", "MINIMUM")),  # the lower bound is ids[0, 0]
], ids=["both", "min", "max", "int32", "runtime-bound"])
def test_integer_clip(tmp_path, nodes, inits, ops):
    """Index clamping: an integer Clip takes no calibration range; MAXIMUM / MINIMUM in int32."""
    _check(tmp_path, nodes, TP.INT64, inits, ops=ops)


def test_clamped_index_lookup(tmp_path):
    """ids shifted and clamped into a table, then a lookup: the clamp stays on the integer path."""
    tab = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    nodes = [N("Add", ["i", "c"], ["j"]), N("Clip", ["j", "lo", "hi"], ["k"]), N("Gather", ["tab", "k"], ["g"], axis=0),
             N("Transpose", ["g"], ["o"], perm=[0, 2, 1])]
    _check(tmp_path, nodes, TP.FLOAT, {"c": _i(-3), "lo": _i(0), "hi": _i(4), "tab": tab}, ops=("MINIMUM", "GATHER"))


# op x dtype x constant input: integer outputs exact; float ones within the bound in int8 and int16
INT_CASES = {
    "div": ([N("Div", ["i", "c"], ["o"])], {"c": _i(3)}, "DIV"),
    "neg": ([N("Neg", ["i"], ["o"])], {}, "NEG"),
    "abs": ([N("Sub", ["i", "c"], ["d"]), N("Abs", ["d"], ["o"])], {"c": _i(5)}, "ABS"),
    "max": ([N("Max", ["i", "c"], ["o"])], {"c": _i(3)}, "MAXIMUM"),
    "max-three": ([N("Max", ["i", "c", "r"], ["o"])], {"c": _i(3), "r": _i(np.arange(8).reshape(1, 8))}, "MAXIMUM"),
    "min-int32": ([N("Cast", ["i"], ["j"], to=TP.INT32), N("Min", ["j", "c"], ["k"]), N("Cast", ["k"], ["o"], to=TP.INT64)],
                  {"c": _i(3, np.int32)}, "MINIMUM"),
    "add-mul": ([N("Add", ["i", "c"], ["d"]), N("Mul", ["d", "c"], ["o"])], {"c": _i(2)}, "MUL"),
    "where": (MASK[:1] + [N("Where", ["m", "c", "i"], ["o"])], {**BASE, "c": _i(7)}, "SELECT_V2"),
    "slice-concat": ([N("Slice", ["i", "s", "e", "a"], ["p"]), N("Concat", ["p", "c"], ["o"], axis=1)],
                     {"s": _i([2]), "e": _i([6]), "a": _i([1]), "c": _i([[1, 2, 3, 4]])}, "CONCATENATION"),
    "transpose": ([N("Unsqueeze", ["i", "a"], ["u"]), N("Transpose", ["u"], ["t"], perm=[0, 2, 1]),
                   N("Reshape", ["t", "sh"], ["o"])], {"a": _i([2]), "sh": _i([1, 8])}, "TRANSPOSE"),
}
FLOAT_CASES = {
    "max-const": ([N("Max", ["x", "c"], ["o"])], {"c": _f(0.5)}, "MAXIMUM"),
    "min-const": ([N("Min", ["c", "x"], ["o"])], {"c": _f(0.5)}, "MINIMUM"),
    "max-acts": (MASK[1:] + [N("Max", ["x", "y"], ["o"])], {"half": _f(3.0)}, "MAXIMUM"),
    "max-three": (MASK[1:] + [N("Max", ["x", "y", "c"], ["o"])], {"half": _f(0.5), "c": _f(0.1)}, "MAXIMUM"),  # variadic
    "min-vector": ([N("Min", ["x", "c"], ["o"])], {"c": np.linspace(-1, 1, 8, dtype=np.float32)}, "MINIMUM"),
    "clip": ([N("Clip", ["x", "lo", "hi"], ["o"])], {"lo": _f(-0.5), "hi": _f(1.0)}, "MINIMUM"),
    "clip-min": ([N("Clip", ["x", "lo"], ["o"])], {"lo": _f(-0.5)}, "MAXIMUM"),
    "add-scalar": ([N("Add", ["x", "c"], ["o"])], {"c": _f(0.5)}, "ADD"),
    "mul-scalar": ([N("Mul", ["c", "x"], ["o"])], {"c": _f(-2.0)}, "MUL"),
    "sub-scalar": ([N("Sub", ["c", "x"], ["o"])], {"c": _f(1.5)}, "SUB"),
}


@pytest.mark.parametrize("case", sorted(INT_CASES))
def test_integer_ops_with_constants(tmp_path, case):
    nodes, inits, op = INT_CASES[case]
    _check(tmp_path, nodes, TP.INT64, inits, ops=(op,))


@pytest.mark.parametrize("activations", ["int8", "int16"])
@pytest.mark.parametrize("case", sorted(FLOAT_CASES))
def test_float_ops_with_constants(tmp_path, case, activations):
    """MAXIMUM / MINIMUM compare stored integers without rescaling: inputs and constants share the output's
    parameters (each had its own: cosine 0.59 - 0.93 in int8); a Max of three inputs dropped the third."""
    nodes, inits, op = FLOAT_CASES[case]
    _check(tmp_path, nodes, TP.FLOAT, inits, activations, ops=(op,))


def test_integer_op_without_lowering_is_one_clear_error(tmp_path, capsys):
    """An integer ReduceSum has no lowering: the converter-gap line naming the node, exit 2 (was a missing
    calibration range of an integer tensor)."""
    from npufit.cli import main

    _build(tmp_path / "m.onnx", [N("ReduceSum", ["i", "a"], ["r"], keepdims=1), N("Add", ["i", "r"], ["o"])], TP.INT64, {"a": _i([1])})
    rc = main(["compile", str(tmp_path / "m.onnx"), "--target", "ethos-u55-256", "--out-dir", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1, (rc, err)
    assert "ReduceSum" in err[0] and "no lowering on integer / bool tensors" in err[0], err


def test_vela_compiles_the_attention_bias_where(tmp_path):
    from npufit.compilers import compile_model
    from npufit.compilers.vela import vela_version

    if vela_version() is None:
        pytest.skip("Vela (ethos-u-vela) is not installed")
    nodes = MASK + [N("Where", ["m", "c", "y"], ["w"]), N("Add", ["x", "w"], ["s"]), N("Softmax", ["s"], ["o"], axis=-1)]
    res = _check(tmp_path, nodes, TP.FLOAT, {**BASE, "c": _f(FMIN)})
    r = compile_model(str(res.path), "ethos-u55-256", out_dir=str(tmp_path / "vela"))
    assert r.ok, r.error
    assert r.metrics["npu_operators"] > 0, r.metrics

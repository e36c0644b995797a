"""split --mode auto: the chain is bit-identical to the fixed model it was cut from, and held against the original
with the tolerance `fix` accepts for exact rules (one fact: verify.compare.EXACT_RTOL/EXACT_ATOL). BatchNorm folding
is exact in arithmetic but not bit for bit: a 100 %-NPU detector with BatchNorm was refused before."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import npufit
from npufit.errors import NpufitError
from npufit.verify.compare import Comparison, exact_mismatch, exact_tolerance


def _conv_bn(path) -> str:
    rng = np.random.default_rng(1)
    inits = [
        numpy_helper.from_array(rng.standard_normal((16, 3, 3, 3)).astype(np.float32), "w"),
        numpy_helper.from_array((rng.random(16) + 0.5).astype(np.float32), "s"),
        numpy_helper.from_array(rng.standard_normal(16).astype(np.float32), "b"),
        numpy_helper.from_array(rng.standard_normal(16).astype(np.float32), "m"),
        numpy_helper.from_array((rng.random(16) * 0.01 + 1e-3).astype(np.float32), "v"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1] * 4),
        helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["bn"], name="bn"),
        helper.make_node("Relu", ["bn"], ["y"], name="relu"),
    ]
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 32, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 16, 32, 32])],
        inits,
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, str(path))
    return str(path)


def test_auto_mode_accepts_batchnorm_folding_within_fix_tolerance(tmp_path):
    src = _conv_bn(tmp_path / "det.onnx")
    fixed = npufit.fix(src, "hailo8", tmp_path / "fixed.onnx")
    assert "fold_batchnorm" in [r.name for r in fixed.applied]
    assert fixed.verification["tolerance"].startswith(f"exact rules: {exact_tolerance()}")
    res = npufit.split(src, "hailo8", tmp_path / "plan", mode="auto")  # refused before: "not equivalent"
    v = res.plan.verification
    assert v["equivalent"] and v["max_abs"] == 0.0  # bit for bit against the fixed model
    a = v["against_source"]
    assert a["within"] and 0.0 < a["max_abs"] <= fixed.verification["max_abs"] * 10 + 1e-3
    assert "bit-identical to the fixed model; against the original" in res.render("table")
    # the plain split of the original itself is still required to be bit-identical (no rewrite, no tolerance)
    plain = npufit.split(src, "hailo8", tmp_path / "plain")
    assert plain.plan.verification["against_source"] is None and plain.plan.verification["max_abs"] == 0.0


def test_exact_tolerance_is_one_fact():
    near = {"max_abs": 5e-6, "max_rel": 1e-6, "ref_max_abs": 1.0, "integer": 0.0}
    assert exact_mismatch(Comparison({"y": near})) is None  # 5e-6 <= 1e-6 + 1e-5 * 1.0
    assert "differs" in exact_mismatch(Comparison({"y": {**near, "max_abs": 5e-5}}))
    assert "differs" in exact_mismatch(Comparison({"i": {**near, "max_abs": 1.0, "integer": 1.0}}))
    assert "missing" in exact_mismatch(Comparison({}, ["y"]))


def test_auto_mode_still_refuses_a_chain_outside_the_tolerance(tmp_path, monkeypatch):
    """A rewrite that changed the model beyond what fix accepts is refused, with the figure."""
    import npufit.verify.compare as cmp

    src = _conv_bn(tmp_path / "det.onnx")
    monkeypatch.setattr(cmp.exact_mismatch, "__defaults__", (0.0, 0.0))  # split's check only: fix passes its own
    with pytest.raises(NpufitError, match="against the original model, output 'y' differs"):
        npufit.split(src, "hailo8", tmp_path / "plan", mode="auto")
    assert not (tmp_path / "plan").exists()

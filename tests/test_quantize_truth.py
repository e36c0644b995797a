"""Quantization that cannot silently fail: clipping found and advised first, the calibration / held-back split
stated, few samples warned about, --per-channel on opset 11, every CLI option combination on opset 11 and 17,
and one Q/DQ count shared by quantize, the ledger and compare."""
from __future__ import annotations

import itertools
import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from npufit.cli import main
from npufit.quantize import quantize, spread

from .quantize_models import save, small_cnn


def _gemm_model(path, opset: int = 11):
    """x[1,16] -> Gemm -> y[1,8]: the shape of the demo's forecast head."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array((rng.standard_normal((8, 16)) / 4).astype(np.float32), "w")
    b = numpy_helper.from_array(np.zeros(8, np.float32), "b")
    g = helper.make_graph([helper.make_node("Gemm", ["x", "w", "b"], ["y"], name="head", transB=1)], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])], [w, b])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 7
    onnx.save(m, str(path))
    return str(path)


def _flat(capsys) -> str:
    """stdout with the terminal's line wrapping undone."""
    return " ".join(capsys.readouterr().out.split())


def _npz(path, n: int, scale: float = 1.0, seed: int = 0, shape=(1, 16)):
    x = np.random.default_rng(seed).standard_normal((n, *shape)).astype(np.float32) * scale
    np.savez(path, x=x)
    return str(path)


def test_clipping_is_found_and_advised_before_weight_quantization(tmp_path):
    """Calibrated on a narrow slice of what the model sees: the held-back values saturate, and the advice says so
    (the old diagnosis blamed the Gemm's weights: 'try --per-channel')."""
    m = _gemm_model(tmp_path / "m.onnx")
    narrow = _npz(tmp_path / "narrow.npz", 64, scale=0.2)
    wide = _npz(tmp_path / "wide.npz", 64, scale=1.0, seed=1)
    r = quantize(m, tmp_path / "q.onnx", narrow, evaluation=wide)
    out = r.accuracy.outputs[0]
    assert out.clipped_fraction > 0.2 and out.sqnr_db < 20
    assert r.warnings[0].startswith("output ") and "calibrated range" in r.warnings[0] and "more, or more representative" in r.warnings[0]
    head = r.accuracy.layer("y")
    assert head.clips and "calibrated range" in head.suggestion and "per-channel" not in head.suggestion
    d = r.to_dict()
    assert d["summary"]["max_clipped_fraction"] > 0.2 and d["accuracy"]["outputs"][0]["clipped_fraction"] > 0.2
    assert d["calibration"]["holdout_source"] == wide and d["calibration"]["holdout"] == 64

    # calibrated on the same distribution: nothing saturates, no clipping warning, good SQNR
    good = quantize(m, tmp_path / "q2.onnx", _npz(tmp_path / "same.npz", 64, seed=2), evaluation=wide)
    assert good.accuracy.outputs[0].clipped_fraction <= 0.01
    assert not any("calibrated range" in w for w in good.warnings) and good.min_output_sqnr_db > out.sqnr_db + 10


def test_split_is_stated_and_small_sets_keep_most_samples_for_calibration(tmp_path, capsys):
    m = _gemm_model(tmp_path / "m.onnx")
    cal = _npz(tmp_path / "twelve.npz", 12)
    assert main(["quantize", m, "-o", str(tmp_path / "q.onnx"), "-c", cal, "-f", "json", "--report", str(tmp_path / "r.json")]) == 0
    d = json.loads((tmp_path / "r.json").read_text())
    assert (d["calibration"]["used"], d["calibration"]["holdout"]) == (10, 2)  # was 2 calibrating, 10 held back
    assert any("only 10 sample(s) calibrate" in w for w in d["warnings"])
    assert main(["quantize", m, "-o", str(tmp_path / "q.onnx"), "-c", cal, "--holdout", "4"]) == 0
    out = _flat(capsys)
    assert "8 calibration sample(s)" in out and "4 held back for the accuracy report" in out
    big = _npz(tmp_path / "many.npz", 100)
    assert main(["quantize", m, "-o", str(tmp_path / "q.onnx"), "-c", big, "--samples", "64"]) == 0
    out = _flat(capsys)
    assert "64 calibration sample(s)" in out and "10 held back" in out and "calibrate the int8 ranges" not in out


def test_calibration_samples_are_spread_over_the_source(tmp_path):
    assert spread(10, 4) == [0, 3, 6, 9] and spread(3, 5) == [0, 1, 2] and spread(7, 1) == [0]
    m = _gemm_model(tmp_path / "m.onnx")
    # stored in order of growing magnitude (a drifting series): the first 5 would miss the large end
    pattern = np.random.default_rng(0).standard_normal((1, 16)).astype(np.float32)
    x = (pattern[None] * np.linspace(0.1, 2.0, 50, dtype=np.float32)[:, None, None]).astype(np.float32)
    np.savez(tmp_path / "ordered.npz", x=x)
    np.savez(tmp_path / "first5.npz", x=x[:5])
    r = quantize(m, tmp_path / "q.onnx", tmp_path / "ordered.npz", samples=5, evaluation=tmp_path / "ordered.npz")
    assert r.accuracy.layer("x").clipped_fraction == 0.0
    first = quantize(m, tmp_path / "q.onnx", tmp_path / "first5.npz", samples=5, evaluation=tmp_path / "ordered.npz")
    assert first.accuracy.layer("x").clipped_fraction > 0.4


def test_per_channel_on_opset_11_raises_the_copy_to_13(tmp_path):
    src = tmp_path / "m.onnx"
    m = small_cnn(size=16)
    m.opset_import[0].version = 11
    save(m, src)
    before = src.read_bytes()
    r = quantize(src, tmp_path / "q.onnx", "random", per_channel=True, samples=8, holdout=2)
    q = onnx.load(str(tmp_path / "q.onnx"))
    onnx.checker.check_model(q)
    assert next(o.version for o in q.opset_import if o.domain in ("", "ai.onnx")) == 13
    assert any("raised from opset 11 to 13" in n for n in r.notes)
    assert src.read_bytes() == before


def test_per_channel_refuses_a_model_that_cannot_reach_opset_13_before_any_work(tmp_path, capsys):
    """Scatter (deprecated at opset 11) has no opset-13 form: one sentence, exit 2, nothing written."""
    idx = numpy_helper.from_array(np.zeros((1, 4), np.int64), "i")
    upd = numpy_helper.from_array(np.ones((1, 4), np.float32), "u")
    g = helper.make_graph([helper.make_node("Scatter", ["x", "i", "u"], ["y"], name="n")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], [idx, upd])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 11)])
    m.ir_version = 7
    onnx.save(m, str(tmp_path / "s.onnx"))
    # the model-loading front door refuses this (invalid) model first; the per-channel refusal itself is held on the
    # proto, where it must name the op before any calibration work
    from npufit.errors import NpufitError
    from npufit.quantize import raise_opset_for_per_channel

    with pytest.raises(NpufitError, match="--per-channel needs opset 13 and this opset-11 model cannot be converted.*Scatter"):
        raise_opset_for_per_channel(m, [])
    assert main(["quantize", str(tmp_path / "s.onnx"), "-o", str(tmp_path / "q.onnx"), "-c", "random", "--per-channel"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("npufit: error:")
    assert not (tmp_path / "q.onnx").exists() and "calibrating" not in err[0]
    for bad in (["--holdout", "-1", "--evaluation", "random"], ["--samples", "0", "--evaluation", "random"]):
        assert main(["quantize", str(tmp_path / "s.onnx"), "-o", str(tmp_path / "q.onnx"), "-c", "random", *bad]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and ("must be" in err[0] or "expected an integer" in err[0])


def _cnn(tmp_path, opset: int) -> str:
    m = small_cnn(size=16)
    m.opset_import[0].version = opset  # Conv/Relu/GlobalAveragePool/Flatten/Gemm mean the same at 11 and 17
    return save(m, tmp_path / f"cnn{opset}.onnx")


def _weight_scale_sizes(q) -> list[int]:
    inits = {t.name: t for t in q.graph.initializer}
    return [int(np.prod(inits[n.input[1]].dims) or 1) for n in q.graph.node
            if n.op_type == "DequantizeLinear" and n.input[0] in inits and n.input[1] in inits and len(inits[n.input[0]].dims) == 4]


@pytest.mark.parametrize("opset,method,per_channel,activations",
                         list(itertools.product((11, 17), ("minmax", "entropy", "percentile"), (False, True), ("int8", "uint8"))))
def test_every_cli_option_combination(tmp_path, opset, method, per_channel, activations):
    src = _cnn(tmp_path, opset)
    np.savez(tmp_path / "cal.npz", x=np.random.default_rng(0).standard_normal((14, 1, 3, 16, 16)).astype(np.float32))
    args = ["quantize", src, "-o", str(tmp_path / "q.onnx"), "-c", str(tmp_path / "cal.npz"), "--method", method,
            "--activations", activations, "-f", "json", "--report", str(tmp_path / "r.json")]
    assert main(args + (["--per-channel"] if per_channel else [])) == 0
    q = onnx.load(str(tmp_path / "q.onnx"))
    onnx.checker.check_model(q)
    d = json.loads((tmp_path / "r.json").read_text())
    assert d["settings"]["method"] == method and d["settings"]["per_channel"] is per_channel
    sizes = _weight_scale_sizes(q)
    assert sizes and (max(sizes) > 1) is per_channel  # per-channel conv weights carry one scale per output channel
    act_zp = [t for t in q.graph.initializer if t.name.endswith("zero_point") and "w" not in t.name.split("_")[0]]
    want = TensorProto.UINT8 if activations == "uint8" else TensorProto.INT8
    assert any(t.data_type == want for t in act_zp)
    assert d["summary"]["min_output_cosine"] > 0.9 and d["calibration"]["used"] + d["calibration"]["holdout"] == 14


@pytest.mark.parametrize("opset", (11, 17))
def test_the_other_cli_options(tmp_path, capsys, opset):
    src = _cnn(tmp_path, opset)
    cal = tmp_path / "cal.npz"
    np.savez(cal, x=np.random.default_rng(0).standard_normal((12, 1, 3, 16, 16)).astype(np.float32))
    q = str(tmp_path / "q.onnx")
    base = ["quantize", src, "-o", q, "-c", str(cal)]
    assert main(base + ["--exclude", "conv3,fc", "--no-preprocess", "--holdout", "0", "-f", "markdown"]) == 0
    md = _flat(capsys)
    assert "excluded conv3, fc" in md and "nothing held back" in md
    names = {n.name for n in onnx.load(q).graph.node}
    assert {"conv3", "fc"} <= names  # left in float, under their own names
    assert main(base + ["--method", "percentile", "--percentile", "99.9", "--evaluation", str(cal), "--target", "ethos-u55-256",
                        "--min-cosine", "0.5", "--worst", "2"]) == 0
    out = _flat(capsys)
    assert "(99.9%)" in out and "12 held back" in out and "ethos-u55-256:" in out and "worst layers" in out
    assert main(base + ["--min-cosine", "1.0", "--samples", "4"]) == 1  # the CI gate: int8 never reaches cosine 1
    capsys.readouterr()

    # an image folder with every preprocessing option, and random data with a pinned shape and seed
    from PIL import Image

    imgs = tmp_path / "imgs"
    imgs.mkdir()
    rng = np.random.default_rng(1)
    for i in range(12):
        Image.fromarray(rng.integers(0, 255, (20, 24, 3), dtype=np.uint8)).save(imgs / f"{i:02d}.png")
    assert main(["quantize", src, "-o", q, "-c", str(imgs), "--image-size", "16,16", "--mean", "0.5,0.5,0.5", "--std", "0.25",
                 "--scale", "0.00392", "--layout", "nchw", "--bgr"]) == 0
    out = _flat(capsys)
    assert "resize to 16x16" in out and "BGR" in out and "10 calibration sample(s)" in out and "2 held back" in out
    assert main(["quantize", src, "-o", q, "-c", "random", "--seed", "3", "--input-shape", "x=1,3,16,16", "--samples", "6"]) == 0
    assert "random (seed 3)" in _flat(capsys)


def test_quantize_ledger_and_compare_count_the_same_qdq_nodes(tmp_path, capsys):
    from npufit import check
    from npufit.check.compare import compare

    src = _cnn(tmp_path, 11)
    r = quantize(src, tmp_path / "q.onnx", "random", samples=8, holdout=2)
    counts = {k: r.qdq[k] for k in ("quantize", "dequantize", "dequantize_weights", "dequantize_activations")}
    assert counts["dequantize_weights"] > 0 and counts["dequantize"] == counts["dequantize_weights"] + counts["dequantize_activations"]
    row = compare([tmp_path / "q.onnx"], "ethos-u55-256").rows[0]
    assert row["qdq"] == counts
    # what runs on the target plus what it folds (weights; Vela's int8 I/O drops the model-boundary Q/DQ) = quantize's totals
    folded = row["qdq_folded"]
    assert folded["weights"] == counts["dequantize_weights"] and folded["model_io"] == 3
    assert (row["ops_by_type"]["DequantizeLinear"] + row["ops_by_type"]["QuantizeLinear"] + folded["weights"] + folded["model_io"]
            == counts["quantize"] + counts["dequantize"])
    assert check(tmp_path / "q.onnx", "ethos-n78").extra["qdq_ledger"]["qdq"] == counts
    # the prediction's accounting, as the library call above (measured, Vela places the converter's I/O quantize)
    assert main(["compare", str(tmp_path / "q.onnx"), "-t", "ethos-u55-256", "--predict", "-f", "markdown"]) == 0
    assert f"(+{counts['dequantize_weights']} DequantizeLinear on weights and 3 Q/DQ at the model I/O, folded)" in _flat(capsys)
    assert main(["quantize", src, "-o", str(tmp_path / "q2.onnx"), "-c", "random", "--samples", "8"]) == 0
    assert (f"{counts['quantize']} QuantizeLinear + {counts['dequantize']} DequantizeLinear "
            f"({counts['dequantize_weights']} on weights") in _flat(capsys)

"""Verification that explains itself: samples that overflow the original, ordering ties of TopK under the optimizer,
and stage files that pass the ONNX checker whatever the exporter left unknown."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import npufit
from npufit.split.verify import OPTIMIZED_ATOL, OPTIMIZED_RTOL, ChainCheck, _explain_ties, _optimized_sentence
from npufit.verify.compare import compare_outputs, make_session, random_inputs, run_onnx
from npufit.verify.ties import rankings


def _save(path, nodes, inputs, outputs, inits=(), opset=13):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    onnx.save(m, str(path))
    return path


def _f(name, v):
    return numpy_helper.from_array(np.asarray(v, np.float32), name)


def _vi(name, shape, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


def overflowing(path, gain):
    """exp(gain * x) mixed by a Conv on the NPU beside a host branch (Erf, left off the NPU by --mode explicit):
    N(0,1) samples overflow it."""
    w = _f("w", np.linspace(-1, 1, 4 * 4).reshape(4, 4, 1, 1))
    nodes = [
        helper.make_node("Mul", ["x", "gain"], ["g"], name="gain"),
        helper.make_node("Exp", ["g"], ["e"], name="exp"),
        helper.make_node("Conv", ["e", "w"], ["y"], name="mix"),
        helper.make_node("Erf", ["x"], ["side"], name="side"),
    ]
    outs = [_vi("y", [1, 4, 4, 4]), _vi("side", [1, 4, 4, 4])]
    return _save(path, nodes, [_vi("x", [1, 4, 4, 4])], outs, [_f("gain", gain), w])


def test_random_samples_that_overflow_the_original_fall_back_to_a_stated_bounded_range(tmp_path):
    """Was: 'not equivalent ... max abs nan', as if the chain were wrong, for a model N(0,1) samples overflow."""
    src = overflowing(tmp_path / "m.onnx", 60.0)  # e^(60 x) overflows float32 for x > 1.48
    res = npufit.split(
        src, "hailo8", output_dir=tmp_path / "plan", mode="explicit", start_nodes="gain", end_nodes="mix", samples=4
    )
    v = json.loads((tmp_path / "plan" / "plan.json").read_text())["verification"]
    assert v["overflow"]["outputs"] == ["y"] and v["overflow"]["fallback"] == "[0, 1)" and v["equivalent"]
    text = res.render("table")
    assert "uniform in [0, 1)" in text and "N(0,1) samples overflow in the original itself" in text
    assert "NaN/Inf in output(s) 'y'" in text


def test_samples_that_overflow_in_any_range_ask_for_real_inputs(tmp_path):
    src = overflowing(tmp_path / "m.onnx", 1000.0)  # e^(1000 x) overflows on [0, 1) too
    sess = make_session(src)
    feeds = random_inputs(sess, samples=2)
    ref = [run_onnx(sess, f) for f in feeds]
    assert not np.isfinite(ref[0]["y"]).all()
    res = npufit.split(
        src, "hailo8", output_dir=tmp_path / "plan", mode="explicit", start_nodes="gain", end_nodes="mix", samples=2
    )
    text = res.render("table")  # equal overflow on both sides: compared where finite, and said so
    assert "where the original is finite" in text and "--inputs FILE.npz" in text
    # when the chain then differs, the refusal blames the samples and says how to give real ones
    check = ChainCheck(
        2,
        0,
        "random",
        {"y": {"max_abs": float("nan"), "max_rel": float("nan")}},
        overflow={"outputs": ["y"], "fallback": None, "tried": "[0, 1)", "still": ["y"]},
    )
    why = check.worst_sentence()
    assert "the samples overflow, not the chain" in why and "--inputs FILE.npz" in why and "[0, 1)" in why


def detr_tail(path, eps, n=64, k=5, reassociated=False):
    """A DETR-style head: scores of near-equal queries (3 + eps * x), TopK, boxes gathered through its indices.
    reassociated: the same sum rounded another way ((eps * x + 1.5) + 1.5), as a fused kernel of ORT's optimizer
    rounds it another way."""
    shift = [helper.make_node("Add", ["xe", "three"], ["scores"], name="shift")]
    if reassociated:
        shift = [
            helper.make_node("Add", ["xe", "half3"], ["part"], name="shift_a"),
            helper.make_node("Add", ["part", "half3"], ["scores"], name="shift"),
        ]
    nodes = [
        helper.make_node("Mul", ["x", "eps"], ["xe"], name="scale"),
        *shift,
        helper.make_node("TopK", ["scores", "k"], ["top_scores", "top_idx"], name="select", axis=1),
        helper.make_node("Mul", ["x", "ten"], ["boxes"], name="boxes"),
        helper.make_node("GatherElements", ["boxes", "top_idx"], ["top_boxes"], name="gather", axis=1),
    ]
    inits = [
        _f("eps", eps),
        _f("three", 3.0),
        _f("half3", 1.5),
        _f("ten", 10.0),
        numpy_helper.from_array(np.array([k], np.int64), "k"),
    ]
    outs = [_vi("top_scores", [1, k]), _vi("top_idx", [1, k], TensorProto.INT64), _vi("top_boxes", [1, k])]
    return _save(path, nodes, [_vi("x", [1, n])], outs, inits)


def test_ranking_nodes_and_the_outputs_that_read_their_indices(tmp_path):
    m = onnx.load(str(detr_tail(tmp_path / "m.onnx", 1e-7)))
    (r,) = rankings(m)
    assert (r.node, r.op, r.scores, r.axis, r.largest) == ("select", "TopK", "scores", 1, True)
    assert sorted(r.index_outputs) == ["top_boxes", "top_idx"]  # not top_scores: it reads the values only


def _rounding_drift(path, feeds, eps):
    """(the original's outputs against those of the same head rounded another way): what ORT's optimizer does to
    a chain whose stages it fuses differently from the whole model."""
    ref_sess = make_session(path)
    other = make_session(detr_tail(path.parent / "other.onnx", eps, reassociated=True))
    total = None
    for f in feeds:
        c = compare_outputs(run_onnx(ref_sess, f), run_onnx(other, f))
        total = c if total is None else total.merge(c)
    return total


def _summary(total):
    return {
        "settings": "default graph optimizations (ORT_ENABLE_ALL)",
        "max_abs": total.max_abs,
        "max_rel": total.max_rel,
        "close": total.ok(OPTIMIZED_ATOL, OPTIMIZED_RTOL),
        "per_output": {k: {"max_abs": v["max_abs"], "max_rel": v["max_rel"]} for k, v in total.per_output.items()},
    }


def test_an_ordering_tie_is_named_with_its_margin_and_the_other_outputs_held_to_the_tolerance(tmp_path):
    """Was: a DETR-style chain 'OUTSIDE float tolerance (max abs 14)' under ORT's optimizer, without saying why."""
    path = detr_tail(tmp_path / "m.onnx", 1e-7)
    feeds = random_inputs(make_session(path), samples=3)
    total = _rounding_drift(path, feeds, 1e-7)
    assert total.per_output["top_idx"]["max_abs"] >= 1 and total.per_output["top_boxes"]["max_abs"] > 1  # swapped
    o = _summary(total)
    assert not o["close"]  # what was reported before: outside the tolerance, no reason given
    _explain_ties(o, total, path, feeds)
    assert o["close"] and o["tie_outputs"] == ["top_boxes", "top_idx"]
    (tie,) = o["ties"]
    assert tie["node"] == "select" and 0 <= tie["margin"] <= OPTIMIZED_ATOL + OPTIMIZED_RTOL * tie["scale"]
    text = _optimized_sentence(o)
    assert "by an ordering tie, not an error" in text and "TopK 'select' ranks scores only" in text
    assert "tie margin" in text and "the other outputs are within float tolerance" in text


def test_well_separated_scores_are_no_tie(tmp_path):
    path = detr_tail(tmp_path / "m.onnx", 1.0)
    feeds = random_inputs(make_session(path), samples=3)
    total = _rounding_drift(path, feeds, 1.0)
    o = _summary(total)
    _explain_ties(o, total, path, feeds)
    assert "ties" not in o and "ordering tie" not in _optimized_sentence(o)


def test_a_scalar_boundary_of_unknown_rank_gets_a_shape_in_every_stage(tmp_path):
    """Was: 'stage ... fails the ONNX checker: Field 'shape' of 'type' is required but missing' on an unsimplified
    tf2onnx-style export, whose Squeeze without axes leaves the rank of a scalar unknown to shape inference."""
    # the slice's length comes from the data (always 1 at run time: ceil of a sigmoid), so the Squeeze without axes
    # leaves the rank unknown although the input shape is static
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu_in"),
        helper.make_node("ReduceSum", ["x"], ["total"], name="total", keepdims=1),
        helper.make_node("Sigmoid", ["total"], ["p"], name="p"),
        helper.make_node("Ceil", ["p"], ["one"], name="one"),
        helper.make_node("Cast", ["one"], ["one_i"], name="one_i", to=TensorProto.INT64),
        helper.make_node("Reshape", ["one_i", "flat"], ["end"], name="end"),
        helper.make_node("Slice", ["r", "zero", "end", "axis1"], ["part"], name="take"),
        helper.make_node("Squeeze", ["part"], ["s"], name="squeeze_all"),
        helper.make_node("Erf", ["s"], ["e"], name="erf"),
        helper.make_node("Relu", ["e"], ["y"], name="relu_out"),
    ]
    consts = [
        numpy_helper.from_array(np.array([1], np.int64), "flat"),
        numpy_helper.from_array(np.array([0], np.int64), "zero"),
        numpy_helper.from_array(np.array([1], np.int64), "axis1"),
    ]
    src = _save(tmp_path / "m.onnx", nodes, [_vi("x", [1, 4])], [_vi("y", [])], inits=consts, opset=11)
    npufit.split(src, "hailo8", output_dir=tmp_path / "plan", mode="segments", min_nodes=1)
    stages = sorted((tmp_path / "plan").glob("stage*.onnx"))
    assert len(stages) >= 3
    for p in stages:
        m = onnx.load(str(p))
        onnx.checker.check_model(m, full_check=True)
        for v in list(m.graph.input) + list(m.graph.output):
            assert v.type.tensor_type.HasField("shape"), (p.name, v.name)
    assert any(len(v.type.tensor_type.shape.dim) == 0 for p in stages for v in onnx.load(str(p)).graph.input)


@pytest.mark.parametrize("value", [np.inf, -np.inf, np.nan])
def test_equal_non_finite_values_are_no_difference(value):
    ref = {"y": np.array([1.0, value], np.float32)}
    c = compare_outputs(ref, {"y": np.array([1.0, value], np.float32)})
    assert c.per_output["y"]["max_abs"] == 0.0 and c.per_output["y"]["ref_nonfinite"] == 1.0
    assert compare_outputs(ref, {"y": np.array([1.0, 0.0], np.float32)}).max_abs != 0.0  # a value lost is a difference

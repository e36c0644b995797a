"""The facts check remembers while it runs (graph/facts.py, Graph.has_any, LazyAttrs.get) give the answers the plain
derivations give, and never outlive the check or the setting they were derived under."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from npufit import check
from npufit.graph import NodeView, TensorInfo, facts, load, quant
from npufit.targets import common, tflite_map as tm
from npufit.targets.ethos_u import checks as ethos_u_checks
from tests.onnx_builders import branchy_model, conv_weight, model, vi
from tests.quant_builders import quantized_detector

FACTS = [quant.exec_dtype, quant.activation_inputs, tm.tflite_op, tm.kernel, tm.strides, tm.dilations, tm.padding,
         ethos_u_checks._act_dtypes]


def _conv_model() -> onnx.ModelProto:
    """Convs with every geometry the TFLite view distinguishes: strided, dilated, depthwise, explicit and SAME pads."""
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["a"], name="s2", strides=[2, 2], pads=[0, 0, 1, 1]),
        helper.make_node("Conv", ["a", "w2"], ["b"], name="dil", dilations=[2, 2], pads=[2, 2, 2, 2]),
        helper.make_node("Conv", ["b", "w3"], ["c"], name="dw", group=8, pads=[1, 1, 1, 1]),
        helper.make_node("LeakyRelu", ["c"], ["d"], name="leaky", alpha=0.2),
        helper.make_node("Conv", ["d", "w4"], ["y"], name="patch", strides=[4, 4], kernel_shape=[4, 4]),
    ]
    inits = [conv_weight("w1", 8, 3), conv_weight("w2", 8, 8, seed=1),
             numpy_helper.from_array(np.ones((8, 1, 3, 3), np.float32), "w3"), conv_weight("w4", 4, 8, k=4, seed=2)]
    return model(nodes, [vi("x", [1, 3, 32, 32])], [vi("y", None)], inits, opset=13)


@pytest.fixture(scope="module")
def graphs(tmp_path_factory):
    d = tmp_path_factory.mktemp("facts")
    out = []
    for name, m in (("branchy", branchy_model()), ("convs", _conv_model())):
        onnx.save_model(m, str(d / f"{name}.onnx"))
        out.append(load(d / f"{name}.onnx"))
    out.append(load(quantized_detector("relu", d)))  # QDQ: exec dtypes come from the dequantize producers
    return out


def test_remembered_facts_equal_their_plain_derivation_under_both_settings(graphs):
    for g in graphs:
        for as_int8 in (False, True):
            with quant.check_scope(g, as_int8):
                for fact in FACTS:
                    for n in g.nodes:
                        first = fact(n)
                        assert first == fact.uncached(n), (fact.__name__, n.name)
                        assert fact(n) is first  # the second ask is answered from the memo
            with quant.judging_as_int8(as_int8):  # outside a scope: derived afresh every time
                n = g.nodes[0]
                assert quant.activation_inputs(n) is not quant.activation_inputs(n)
    # the QDQ model has int8 exec dtypes where plain activation dtypes are float: the facts are not trivially equal
    qdq = graphs[-1]
    with quant.check_scope(qdq, False):
        assert {quant.exec_dtype(n) for n in qdq.nodes} >= {"int8", "float32"}


def test_a_graph_changed_between_two_checks_is_judged_as_it_is_now(tmp_path):
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="relu"), helper.make_node("Sigmoid", ["a"], ["y"], name="sig")]
    p = tmp_path / "m.onnx"
    onnx.save_model(model(nodes, [vi("x", [1, 8, 4, 4])], [vi("y", [1, 8, 4, 4])]), str(p))
    g = load(p)

    def rules(report, node):
        return [r.rule for r in report.node(node).reasons]

    # the rules' facts (a compiler would place the file the Graph was read from, not the Graph edited in memory)
    assert "rk3588.dtype" not in rules(check(g, "rk3588", measure="never"), "relu")
    g.tensor("x").dtype = "float64"  # exec dtype of relu: remembered by the first check, must not answer the second
    assert "rk3588.dtype" in rules(check(g, "rk3588", measure="never"), "relu")

    assert "ethos-u55-256.shape.static" not in rules(check(g, "ethos-u55-256", measure="never"), "sig")
    g.tensor("a").shape = (1, 8, "h", 4)  # the graph-wide 'no dynamic axis' answer of the first check is stale now
    assert "ethos-u55-256.shape.static" in rules(check(g, "ethos-u55-256", measure="never"), "sig")


def test_a_setting_changed_inside_a_check_is_not_answered_from_the_memo(graphs):
    g = graphs[0]
    conv = g.node("conv1")
    with quant.check_scope(g, False):
        assert quant.exec_dtype(conv) == "float32"
        with quant.judging_as_int8(True):
            assert quant.exec_dtype(conv) == "int8"
        assert quant.exec_dtype(conv) == "float32"


def test_a_node_that_is_not_the_graphs_own_gets_its_own_answer(graphs):
    g = graphs[0]
    g.tensors["q8"] = TensorInfo("q8", (1, 8), "int8")
    alien = NodeView("alien", "Relu", "", {}, ("q8",), ("q8_out",), g)  # index 0, like the graph's first node
    first = g.nodes[0]
    with quant.check_scope(g, False):
        assert quant.exec_dtype(first) == "float32"
        assert quant.exec_dtype(alien) == "int8"
        assert quant.activation_inputs(alien) == [0] and quant.activation_inputs(first) == [0]
    with facts.scope(g):  # another graph's node is never answered from this graph's memo
        other = graphs[1].nodes[0]
        assert tm.kernel(other) == tm.kernel.uncached(other) == [3, 3]
        assert tm.kernel(g.node("conv1")) == [3, 3]


def test_per_graph_facts_are_kept_per_scope_and_graph(graphs):
    g, other = graphs[0], graphs[1]
    assert common.any_dynamic_tail(g) is False
    with facts.scope(g):
        assert common.any_dynamic_tail(g) is False
        g.tensors["late"] = TensorInfo("late", (1, None, 4))
        assert common.any_dynamic_tail(g) is False  # remembered: the graph must not change inside a check
        assert common.any_dynamic_tail(other) is False
    assert common.any_dynamic_tail(g) is True  # outside the scope: read afresh
    del g.tensors["late"]


def test_has_any_answers_each_set_of_op_types(graphs):
    g = graphs[0]
    assert g.has_any(frozenset({"Mod"})) and g.has_any(frozenset({"Sigmoid", "Erf"}))
    assert not g.has_any(quant.DEQUANTIZE_OPS) and not g.has_any(quant.QUANTIZE_OPS)
    assert graphs[-1].has_any(quant.DEQUANTIZE_OPS) and graphs[-1].has_any(quant.QUANTIZE_OPS)


def test_attribute_reads_match_onnx_helper_and_absent_ones_give_the_default(graphs):
    g = graphs[1]
    protos = {n.name: n for n in _conv_model().graph.node}
    for n in g.nodes:
        for a in protos[n.name].attribute:
            assert n.attr(a.name) == helper.get_attribute_value(a) and a.name in n.attrs
        assert n.attr("no_such_attr", "dflt") == "dflt" and "no_such_attr" not in n.attrs
    assert g.node("s2").attr("strides") == [2, 2] and g.node("dw").attr("group") == 8
    assert g.node("leaky").attr("alpha") == pytest.approx(0.2) and isinstance(g.node("leaky").attr("alpha"), float)
    assert tm.padding(g.node("s2")) == "SAME" and tm.padding(g.node("dil")) == "SAME" and tm.tflite_op(g.node("dw")) == "DEPTHWISE_CONV_2D"


def test_a_reference_attribute_is_still_refused():
    a = helper.make_attribute("alpha", 0.1)
    a.ref_attr_name = "outer_alpha"  # only valid inside a function body: reading it raises, as onnx.helper does
    from npufit.graph.onnx_loader import LazyAttrs

    attrs = LazyAttrs([a])
    with pytest.raises(ValueError):
        attrs.get("alpha")


def test_an_integer_activation_without_any_conversion_op_still_makes_an_island(tmp_path):
    """islands() skips a graph with no Q/DQ op and no integer activation: an int8 graph without Q/DQ is not skipped."""
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="relu"), helper.make_node("Add", ["a", "x"], ["y"], name="add")]
    p = tmp_path / "int8.onnx"
    onnx.save_model(model(nodes, [vi("x", [1, 8, 4, 4], TensorProto.INT8)], [vi("y", [1, 8, 4, 4], TensorProto.INT8)], opset=14), str(p))
    g = load(p)
    assert not g.has_any(quant.QDQ_OPS)
    found = quant.islands(g, {"Relu"})
    assert [i.nodes for i in found] == [["relu"]] and found[0].implicit
    f = tmp_path / "float.onnx"
    onnx.save_model(model(nodes, [vi("x", [1, 8, 4, 4])], [vi("y", [1, 8, 4, 4])], opset=14), str(f))
    assert quant.islands(load(f), {"Relu"}) == []


def test_a_fact_defined_while_a_check_runs_is_remembered_too(graphs):
    g = graphs[0]
    calls = []
    with quant.check_scope(g, False):
        @facts.per_node
        def late(node):  # defined after the scope opened: the scope has no column for it yet
            calls.append(node.index)
            return node.op_type
        assert [late(n) for n in g.nodes] == [n.op_type for n in g.nodes]
        assert [late(n) for n in g.nodes] == [n.op_type for n in g.nodes]
    assert sorted(calls) == [n.index for n in g.nodes]  # each node derived once

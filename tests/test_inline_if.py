"""graph/inline_if: the taken branch replaces an If on a private copy; the result stays a valid (SSA) graph."""
from __future__ import annotations

import onnx
from onnx import TensorProto, helper


def _if(name: str, out: str) -> onnx.NodeProto:
    """An If whose branches both write the inner name 't' (exporters reuse such names across branches)."""
    def branch(op):
        return helper.make_graph([helper.make_node(op, ["x"], ["t"])], op, [], [helper.make_tensor_value_info("t", TensorProto.FLOAT, None)])
    return helper.make_node("If", ["c"], [out], name=name, then_branch=branch("Relu"), else_branch=branch("Neg"))


def test_two_ifs_writing_one_inner_name_keep_the_graph_single_assignment():
    from npufit.graph.inline_if import inline_ifs

    g = helper.make_graph([_if("a", "ya"), _if("b", "yb")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]), helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
                          [helper.make_tensor_value_info("ya", TensorProto.FLOAT, [2]), helper.make_tensor_value_info("yb", TensorProto.FLOAT, [2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    fired, _ = inline_ifs(m, {0: True, 1: True})
    # inlining either would put 't' in the main graph, where the other If's branch then shadows it: both are kept
    assert fired == 0 and [n.op_type for n in m.graph.node] == ["If", "If"]
    onnx.checker.check_model(m, full_check=True)


def test_an_if_with_its_own_names_is_inlined():
    from npufit.graph.inline_if import inline_ifs

    g = helper.make_graph([_if("a", "ya")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]), helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
                          [helper.make_tensor_value_info("ya", TensorProto.FLOAT, [2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    assert inline_ifs(m, {0: False}) == (1, {"a/Neg0": "a", "a/out0": "a"})
    assert [n.op_type for n in m.graph.node] == ["Neg", "Identity"]
    onnx.checker.check_model(m, full_check=True)

"""Rule.gate (targets/base.py) lets `check` leave a rule out for a whole graph. A gate is only sound if the rule it
guards passes every node of any graph the gate says no to: checked here on every profile, for float and int8
judging, over graphs where the gates say yes and no."""
from __future__ import annotations

import onnx
import pytest
from onnx import helper

from npufit.graph import load, quant
from npufit.targets import available_targets, get_profile
from tests.onnx_builders import branchy_model, model, vi


def _rank5_dynamic() -> onnx.ModelProto:
    """A dynamic batch and a rank-5 tensor: the max-rank, dynamic-tail and dynamic-input gates say yes here."""
    nodes = [helper.make_node("Unsqueeze", ["x", "ax"], ["u"], name="up"),
             helper.make_node("Relu", ["u"], ["y"], name="relu")]
    ax = helper.make_tensor("ax", onnx.TensorProto.INT64, [1], [4])
    return model(nodes, [vi("x", ["n", 3, 8, 8])], [vi("y", None)], [ax], opset=13)


@pytest.fixture(scope="module")
def graphs(tmp_path_factory):
    d = tmp_path_factory.mktemp("gates")
    out = []
    for name, m in (("branchy", branchy_model()), ("rank5", _rank5_dynamic())):
        onnx.save_model(m, str(d / f"{name}.onnx"))
        out.append(load(d / f"{name}.onnx", {"x": (1, 3, 8, 8)} if name == "rank5" else None))
        if name == "rank5":
            out.append(load(d / f"{name}.onnx"))  # the batch left dynamic
    return out


def test_a_rule_passes_every_node_of_a_graph_its_gate_rules_out(graphs):
    answers = set()
    for target in available_targets():
        p = get_profile(target)
        for g in graphs:
            for as_int8 in (False, True):
                with quant.check_scope(g, as_int8):
                    for n in g.nodes:
                        for r in p.graph_rules + tuple(p.support_for(n).rules):
                            if r.gate is None:
                                continue
                            ok = bool(r.gate(g, p.limits))
                            answers.add(ok)
                            if not ok:
                                assert r.check(n, p.limits) is None, (target, r.id, n.name, as_int8)
    assert answers == {True, False}  # both sides of the gates were exercised

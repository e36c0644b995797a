"""Nodes of one local signature are judged once (check.local_memo): the report must equal judging every node
on its own, also for rules that read beyond the node (they are caught and judged per node)."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from npufit.check import engine
from npufit.check.engine import check_graph
from npufit.graph import load
from npufit.targets import available_targets, get_profile
from npufit.targets.base import Executes, OpSupport, Profile, Rule, Verdict
from tests.onnx_builders import branchy_model, model, vi, zoo_model


def _save(tmp_path, m: onnx.ModelProto, name: str = "m.onnx"):
    p = tmp_path / name
    onnx.save_model(m, str(p))
    return load(p)


def _blocks(n: int = 6) -> onnx.ModelProto:
    """Identical Mul/Relu/Add blocks; the Mul constants alternate 2.0 and 0.5, one Add reads a tensor twice."""
    nodes, inits, cur = [], [], "x"
    for i in range(n):
        inits.append(numpy_helper.from_array(np.full((1, 4, 1, 1), 2.0 if i % 2 else 0.5, np.float32), f"c{i}"))
        nodes += [helper.make_node("Mul", [cur, f"c{i}"], [f"m{i}"], name=f"mul{i}"),
                  helper.make_node("Relu", [f"m{i}"], [f"r{i}"], name=f"relu{i}"),
                  helper.make_node("Add", [f"r{i}", f"r{i}" if i == 3 else cur], [f"a{i}"], name=f"add{i}")]
        cur = f"a{i}"
    return model(nodes, [vi("x", [1, 4, 8, 8])], [vi(cur, [1, 4, 8, 8]), vi("r1", [1, 4, 8, 8])], inits, opset=17)


def _report(graph, profile, memo: bool) -> str:
    return check_graph(graph, profile, local_memo=memo).render("json")


def _profile(*rules: Rule) -> Profile:
    """Each op carries the rules and a second one that never fails: ops with one rule are judged without the memo."""
    rules += (_rule("pass", lambda n, L: None),)
    ops = {op: OpSupport(op, Verdict.NPU, rules=tuple(rules)) for op in ("Mul", "Relu", "Add")}
    return Profile(name="toy", title="Toy NPU", vendor="test", summary="", fallback="cpu", limits={}, ops=ops,
                   executes=Executes.FP16_INT8, family="toy", compiler="", unknown=OpSupport("*", Verdict.CPU))


def _rule(rid: str, fn) -> Rule:
    return Rule(f"toy.{rid}", rid, fn, Verdict.CPU, (), "toy")


@pytest.mark.parametrize("target", available_targets())
def test_memo_equals_judging_every_node(tmp_path, target):
    profile = get_profile(target)
    for k, m in enumerate([branchy_model(), _blocks(), *(zoo_model(i) for i in range(0, 15, 3))]):
        g = _save(tmp_path, m, f"m{k}.onnx")
        assert _report(g, profile, True) == _report(g, profile, False), (target, k)


def _count(monkeypatch):
    """The LocalMemo of each check made while the test runs."""
    memos = []
    init = engine._Judge.__init__

    def spy(self, *a, **kw):
        init(self, *a, **kw)
        memos.append(self.memo)

    monkeypatch.setattr(engine._Judge, "__init__", spy)
    return memos


def test_repeated_blocks_are_judged_once_per_signature(tmp_path, monkeypatch):
    memos = _count(monkeypatch)
    g = _save(tmp_path, _blocks(40))
    check_graph(g, get_profile("ethos-u55-256"), local_memo=True)
    memo = memos[-1]
    assert memo.misses <= 10 and memo.hits >= 100  # 120 nodes: Mul x2 values, Relu (x2: one is an output), Add x2 patterns


def test_constant_value_read_keys_the_verdict(tmp_path):
    big = _rule("big", lambda n, L: "scale above 1" if n.op_type == "Mul" and float(n.const_value(1).max()) > 1 else None)
    rep = check_graph(_save(tmp_path, _blocks()), _profile(big), local_memo=True)
    assert [rep.node(f"mul{i}").verdict for i in range(6)] == [Verdict.NPU, Verdict.CPU] * 3


def test_rule_reading_a_producer_is_judged_per_node(tmp_path):
    def after_relu(n, L):
        p = n.graph.producer(n.inputs[0]) if n.op_type == "Add" else None
        return "after a Relu" if p is not None and p.op_type == "Relu" else None

    g = _save(tmp_path, _blocks())
    rep = check_graph(g, _profile(_rule("after_relu", after_relu)), local_memo=True)
    assert all(rep.node(f"add{i}").verdict == Verdict.CPU for i in range(6))
    assert rep.render("json") == _report(g, _profile(_rule("after_relu", after_relu)), False)


def test_details_that_name_tensors_or_nodes_name_the_real_ones(tmp_path):
    names = _rule("names", lambda n, L: f"reads {n.inputs[0]}" if n.op_type == "Relu" else None)
    node_name = _rule("node", lambda n, L: n.name if n.op_type == "Mul" and n.name.endswith("3") else None)
    rep = check_graph(_save(tmp_path, _blocks()), _profile(names, node_name), local_memo=True)
    assert [rep.node(f"relu{i}").reasons[0].detail for i in range(6)] == [f"reads m{i}" for i in range(6)]
    assert [rep.node(f"mul{i}").verdict for i in range(6)] == [Verdict.NPU] * 3 + [Verdict.CPU] + [Verdict.NPU] * 2


def test_graph_wide_collections_are_not_local(tmp_path):
    def only_output(n, L):  # the length of the output list differs between a view and the graph
        return "one of two outputs" if len(n.graph.output_names) == 2 else None

    def all_tensors(n, L):
        return f"{len(n.graph.tensors)} tensors" if n.op_type == "Relu" else None

    g = _save(tmp_path, _blocks())
    for rule in (_rule("outs", only_output), _rule("tensors", all_tensors)):
        assert _report(g, _profile(rule), True) == _report(g, _profile(rule), False)
    rep = check_graph(g, _profile(_rule("tensors", all_tensors)), local_memo=True)
    assert rep.node("relu0").reasons[0].detail == f"{len(g.tensors)} tensors"
    rep = check_graph(g, _profile(_rule("outs", only_output)), local_memo=True)
    assert all(n.verdict == Verdict.CPU for n in rep.nodes)


def test_memo_by_graph_size_or_as_the_environment_says(tmp_path, monkeypatch):
    memos = _count(monkeypatch)
    g = _save(tmp_path, _blocks(40))  # 120 nodes: below MEMO_MIN_NODES
    profile = get_profile("ethos-u55-256")
    check_graph(g, profile)
    assert memos[-1] is None
    monkeypatch.setattr(engine, "MEMO_MIN_NODES", 100)
    check_graph(g, profile)
    assert memos[-1] is not None and memos[-1].hits > 0
    monkeypatch.setenv("NPUFIT_LOCAL_MEMO", "0")
    check_graph(g, profile)
    assert memos[-1] is None
    monkeypatch.setattr(engine, "MEMO_MIN_NODES", 5000)
    monkeypatch.setenv("NPUFIT_LOCAL_MEMO", "1")
    check_graph(g, profile)
    assert memos[-1] is not None and memos[-1].hits > 0

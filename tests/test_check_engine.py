"""Engine: every failing rule reported, acyclic partitions, boundaries with bytes, NPU prefix."""
from __future__ import annotations

import json

import onnx
import pytest
from onnx import helper

from npufit import check
from npufit.check import check_graph
from npufit.graph import load
from npufit.targets.base import Executes, OpSupport, Profile, Rule, Verdict
from tests.onnx_builders import branchy_model, conv_weight, model, vi


def _toy_profile(**kw) -> Profile:
    ops = {op: OpSupport(op, Verdict.NPU) for op in ("Conv", "Relu", "Add", "Sigmoid")}
    ops["Conv"] = OpSupport("Conv", Verdict.NPU, rules=(
        Rule("toy.conv.kernel", "Conv kernel must be at most {max_k}", lambda n, L: None if max(n.attr("kernel_shape", [3])) <= L["max_k"] else f"got {n.attr('kernel_shape')}", Verdict.CPU, ("use a smaller kernel",), "toy"),
        Rule("toy.conv.pads", "Conv padding must be at most {max_pad}", lambda n, L: None if max(n.attr("pads", [0])) <= L["max_pad"] else f"got {n.attr('pads')}", Verdict.UNSUPPORTED, (), "toy"),
    ))
    base = dict(name="toy", title="Toy NPU", vendor="test", summary="", fallback="cpu", limits={"max_k": 1, "max_pad": 0}, ops=ops, executes=Executes.FP16_INT8, family="toy", compiler="",
                unknown=OpSupport("*", Verdict.CPU, reason="{op} is not in the toy table"))
    base.update(kw)
    return Profile(**base)


@pytest.fixture
def branchy(tmp_path):
    p = tmp_path / "branchy.onnx"
    onnx.save_model(branchy_model(), str(p))
    return p


def test_all_failing_rules_reported(branchy):
    rep = check_graph(load(branchy), _toy_profile())
    conv = rep.node("conv1")
    assert [r.rule for r in conv.reasons] == ["toy.conv.kernel", "toy.conv.pads"]
    assert conv.verdict == Verdict.UNSUPPORTED  # worst of cpu and unsupported
    assert conv.reasons[0].text == "Conv kernel must be at most 1"  # sentence formatted from the limit
    assert "got" in conv.reasons[0].detail


def test_partitions_boundaries_prefix(branchy):
    rep = check(branchy, "hailo8")
    assert rep.node("mod").verdict == Verdict.UNSUPPORTED
    devs = [(p.device, p.nodes) for p in rep.partitions]
    # conv1/relu1/sig_aux on NPU, the Mod island on host, the rest back on NPU: three regions in order
    assert devs[0][0] == "npu" and "conv1" in devs[0][1] and "relu1" in devs[0][1]
    assert ("host", ["mod"]) in devs
    assert devs[-1][0] == "npu" and "conv2" in devs[-1][1] and "add_skip" in devs[-1][1]
    crossing = {(b.tensor, b.direction) for b in rep.boundaries}
    assert ("r1", "npu->host") in crossing and ("mod", "host->npu") in crossing
    r1 = next(b for b in rep.boundaries if b.tensor == "r1")
    assert r1.bytes == 8 * 16 * 16 * 4 and r1.shape == [1, 8, 16, 16] and r1.dtype == "float32"
    assert rep.prefix["end_nodes"] == ["relu1", "sig_aux"]
    assert rep.prefix["start_nodes"] == ["conv1"]
    assert not rep.prefix["covers_whole_model"]


def test_partitions_never_form_a_cycle(branchy):
    """relu1 -> add_skip directly AND via the host island: the NPU parts must not merge into one."""
    rep = check(branchy, "hailo8")
    part_of = {n: p.id for p in rep.partitions for n in p.nodes}
    assert part_of["relu1"] != part_of["add_skip"]


def test_coverage_by_nodes_and_macs(branchy):
    rep = check(branchy, "hailo8")
    s = rep.summary()
    assert s["counts"]["unsupported"] == 1 and s["counts"]["npu"] == 6
    assert s["coverage_nodes_pct"] == pytest.approx(100 * 6 / 7, abs=0.01)
    assert s["macs_total"] == (16 * 16 * 8) * (3 * 9) + (16 * 16 * 8) * (8 * 9)
    assert s["coverage_macs_pct"] == 100.0


def test_json_lists_every_node(branchy):
    d = json.loads(check(branchy, "hailo8").to_json())
    assert d["schema"] == "npufit.check/2"
    assert {n["name"] for n in d["nodes"]} == {"conv1", "relu1", "mod", "add_skip", "conv2", "relu2", "sig_aux"}
    for n in d["nodes"]:
        assert n["verdict"] in ("npu", "cpu", "unsupported", "folded") and "op_type" in n and "reasons" in n


def test_fully_supported_model_is_one_partition(tmp_path):
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="c"), helper.make_node("Relu", ["c"], ["y"], name="r")]
    p = tmp_path / "ok.onnx"
    onnx.save_model(model(nodes, [vi("x", [1, 3, 8, 8])], [vi("y", [1, 4, 6, 6])], [conv_weight("w", 4, 3)]), str(p))
    rep = check(p, "hailo8")
    assert rep.fully_npu and len(rep.partitions) == 1 and rep.prefix["covers_whole_model"]


def test_float_model_on_int8_target_is_judged_as_its_int8_conversion(tmp_path):
    """A float model on an int8-only target: judged as its int8 conversion by default (said once), off the NPU
    only when --judge float asks for the float graph; the Graph is not changed by either call."""
    pytest.importorskip("torch")
    from npufit.graph import load
    from npufit.zoo import detector

    p = tmp_path / "det.onnx"
    detector.export("leakyrelu", p)
    graph = load(p)
    default = check(graph, "ethos-u55-256", measure="never")
    assert default.fully_npu and default.target["judged_as"] == "int8"
    assert sum("judged as int8" in w for w in default.warnings) == 1
    as_float = check(graph, "ethos-u55-256", judge="float", measure="never")
    assert as_float.counts["npu"] == 0 and as_float.target["judged_as"] == "as is"
    assert any("judge 'float'" in w for w in as_float.warnings)
    assert check(graph, "ethos-u55-256", measure="never").fully_npu  # no flag sticks to the graph between calls
    assert "assume_int8" not in graph.meta
    assert check(p, "ethos-u55-256", assume_int8=True, measure="never").counts["npu"] == as_float.counts["cpu"]
    assert check(graph, "hailo8").target["judged_as"] == "as is"  # the DFC quantizes itself



def test_check_twice_on_one_graph_with_different_options(tmp_path):
    """Options are arguments: judging one Graph as int8 leaves nothing behind for the next check (one float Conv on
    ethos-n78: npu as int8, cpu as float, and so on), and the Graph's meta stays what load() gave."""
    import copy

    import onnx
    from onnx import helper

    from npufit.graph import load
    from tests.onnx_builders import conv_weight, model, vi

    p = tmp_path / "conv.onnx"
    onnx.save(model([helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], name="conv")],
                    [vi("x", [1, 8, 16, 16])], [vi("y", [1, 8, 16, 16])], [conv_weight("w", 8, 8)]), p)
    graph = load(p)
    meta = copy.deepcopy(graph.meta)
    runs = [check(graph, "ethos-n78", judge="int8", measure="never"), check(graph, "ethos-n78", judge="float", measure="never"),
            check(graph, "ethos-n78", assume_int8=True, measure="never"), check(graph, "ethos-n78", judge="float", measure="never")]
    assert [r.node("conv").verdict.value for r in runs] == ["npu", "cpu", "npu", "cpu"]
    assert [r.target["judged_as"] for r in runs] == ["int8", "as is", "int8", "as is"]
    # the Q/DQ ledger follows each call's judgment (int8: the conversion's ledger; float: none), not the first call's
    assert [r.extra.get("qdq_ledger", {}).get("quant_form") for r in runs] == ["int8", None, "int8", None]
    assert graph.meta == meta

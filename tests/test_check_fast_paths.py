"""The fast paths of check give the same facts as the simple ones: weights stripped before shape inference,
partitions and prefix against a plain reference implementation, compact JSON."""
from __future__ import annotations

import json
import random
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from npufit.check.partitions import HOST, NPU, RunningDag, boundaries, npu_prefix, partition
from npufit.graph import Graph, NodeView, TensorInfo, load
from tests.onnx_builders import branchy_model, model, vi


def test_stripped_weights_keep_shapes_small_values_and_shape_data(tmp_path):
    rng = np.random.default_rng(0)
    w_small = rng.standard_normal((8, 4, 3, 3)).astype(np.float32)  # 288 elements: a rule may read it
    w_big = rng.standard_normal((64, 8, 3, 3)).astype(np.float32)  # 4,608 elements: above SMALL_VALUE_ELEMS
    inits = [numpy_helper.from_array(w_small, "w_small"), numpy_helper.from_array(w_big, "w_big"),
             numpy_helper.from_array(np.array([1, 64, 256], np.int64), "shape"),  # data propagation needs it
             numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")]  # Resize reads float data
    nodes = [helper.make_node("Conv", ["x", "w_small"], ["a"], name="c1", pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["a", "w_big"], ["b"], name="c2", pads=[1, 1, 1, 1]),
             helper.make_node("Resize", ["b", "", "scales"], ["up"], name="up", mode="nearest"),
             helper.make_node("Reshape", ["b", "shape"], ["flat"], name="flat")]
    p = tmp_path / "m.onnx"
    onnx.save_model(model(nodes, [vi("x", [1, 4, 16, 16])], [vi("up", None), vi("flat", None)], inits, opset=17), str(p))
    before = p.read_bytes()
    g = load(p)
    assert p.read_bytes() == before
    assert np.array_equal(g.tensor("w_small").value, w_small) and g.tensor("w_small").shape == (8, 4, 3, 3)
    assert g.tensor("w_big").value is None and g.tensor("w_big").shape == (64, 8, 3, 3)
    assert g.tensor("b").shape == (1, 64, 16, 16)
    assert g.tensor("up").shape == (1, 64, 32, 32)  # inferred from the float scales' data
    assert g.tensor("flat").shape == (1, 64, 256)  # inferred from the int64 shape's data


def _reference_partition(graph: Graph, device_of: dict[str, str]) -> list[tuple[str, list[str]]]:
    """The definition, written plainly: levels count device changes on the longest path; same device and
    level neighbours merge (pairwise union until nothing changes)."""
    level = {}
    preds = {}
    for n in graph.top_nodes:
        if n.name not in device_of:
            continue
        ps = [p.name for p in graph.predecessors(n) if p.name in device_of]
        preds[n.name] = ps
        level[n.name] = max([level[p] + (device_of[p] != device_of[n.name]) for p in ps], default=0)
    group = {name: {name} for name in level}
    changed = True
    while changed:
        changed = False
        for name, ps in preds.items():
            for p in ps:
                if device_of[p] == device_of[name] and level[p] == level[name] and group[p] is not group[name]:
                    merged = group[p] | group[name]
                    for m in merged:
                        group[m] = merged
                    changed = True
    order = [n.name for n in graph.top_nodes if n.name in level]
    seen, out = set(), []
    for name in order:
        key = id(group[name])
        if key not in seen:
            seen.add(key)
            out.append((device_of[name], [m for m in order if m in group[name]]))
    return out


def _random_dag(seed: int, n: int = 60) -> tuple[Graph, dict[str, str]]:
    rnd = random.Random(seed)
    nodes, tensors = [], {"x": TensorInfo("x", (1, 4))}
    for i in range(n):
        k = rnd.choice((1, 1, 2, 2, 3))
        srcs = sorted({rnd.choice(["x"] + [f"t{j}" for j in range(max(0, i - 6), i)]) for _ in range(k)})
        nodes.append(NodeView(f"n{i}", "Add", "", {}, tuple(srcs), (f"t{i}",), None))  # type: ignore[arg-type]
        tensors[f"t{i}"] = TensorInfo(f"t{i}", (1, 4))
    g = Graph("dag", "onnx", nodes, tensors, ["x"], [f"t{n - 1}", f"t{n // 2}"])
    device_of = {f"n{i}": (HOST if rnd.random() < 0.3 else NPU) for i in range(n) if rnd.random() > 0.05}
    return g, device_of


def test_partitions_and_prefix_match_the_plain_definition_on_random_graphs():
    for seed in range(40):
        g, device_of = _random_dag(seed)
        parts = partition(g, device_of, {})
        assert [(p.device, p.nodes) for p in parts] == _reference_partition(g, device_of), seed
        prefix = npu_prefix(g, device_of)
        ok: set[str] = set()
        for n in g.top_nodes:  # NPU nodes all of whose running ancestors are NPU nodes (plain recursion)
            if device_of.get(n.name) == NPU and all(p.name in ok for p in g.predecessors(n) if p.name in device_of):
                ok.add(n.name)
        assert prefix["nodes"] == [n.name for n in g.top_nodes if n.name in ok], seed


def test_boundaries_from_the_producer_map_match_the_map_by_name_on_random_graphs():
    from_partitions = 0
    for seed in range(40):
        g, device_of = _random_dag(seed)
        assert g.names_unique and g.single_producers
        dag = RunningDag(g, device_of)
        parts = partition(g, device_of, {}, dag)
        fast, plain = boundaries(g, parts, dag), boundaries(g, parts)  # without the dag: the map over every output
        assert [b.to_dict() for b in fast] == [b.to_dict() for b in plain], seed
        from_partitions += sum(b.src.startswith("partition") for b in plain)
    assert from_partitions > 40  # the owner lookup is exercised, not only "model input" sources


def test_graphs_with_a_repeated_node_name_or_tensor_writer_say_so():
    x = {"x": TensorInfo("x", (1, 4))}
    twice_named = Graph("g", "onnx", [NodeView("a", "Relu", "", {}, ("x",), ("y",), None),  # type: ignore[arg-type]
                                      NodeView("a", "Relu", "", {}, ("y",), ("z",), None)], dict(x), ["x"], ["z"])  # type: ignore[arg-type]
    assert not twice_named.names_unique and twice_named.single_producers
    twice_written = Graph("g", "onnx", [NodeView("a", "Relu", "", {}, ("x",), ("y",), None),  # type: ignore[arg-type]
                                        NodeView("b", "Relu", "", {}, ("x",), ("y",), None)], dict(x), ["x"], ["y"])  # type: ignore[arg-type]
    assert twice_written.names_unique and not twice_written.single_producers


def test_check_json_is_compact_by_default_and_indented_on_request(tmp_path):
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="r")]
    p = tmp_path / "r.onnx"
    onnx.save_model(model(nodes, [vi("x", [1, 4])], [vi("y", [1, 4])]), str(p))
    out = subprocess.run([sys.executable, "-m", "npufit", "check", str(p), "--format", "json"], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.count("\n") == 1  # one line
    d = json.loads(out.stdout)
    assert d["summary"]["fully_npu"] and d["nodes"][0]["inputs"] == ["x"]
    from npufit import check

    assert check(p, "hailo8").to_json(indent=2).count("\n") > 10


def test_checker_reads_the_files_own_bytes_and_still_rejects(tmp_path, monkeypatch):
    """The ONNX checker gets the bytes the model was parsed from, not a re-serialized copy (for 100k nodes that
    copy cost as much as the check), and refuses what it refused before."""
    from npufit.errors import BadModelError

    seen = []
    real = onnx.checker.check_model

    def spy(m, *a, **k):
        seen.append(m)
        return real(m, *a, **k)

    monkeypatch.setattr(onnx.checker, "check_model", spy)
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="r")]
    p = tmp_path / "ok.onnx"
    onnx.save_model(model(nodes, [vi("x", [1, 4])], [vi("y", [1, 4])]), str(p))
    load(p)
    assert len(seen) == 1 and isinstance(seen[0], bytes) and seen[0] == p.read_bytes()
    bad = tmp_path / "bad.onnx"  # reads a tensor nothing produces
    onnx.save_model(model([helper.make_node("Relu", ["nowhere"], ["y"], name="r")], [vi("x", [1, 4])], [vi("y", [1, 4])]),
                    str(bad))
    try:
        load(bad)
    except BadModelError as e:
        assert "the ONNX checker rejects" in e.message
    else:
        raise AssertionError("a model the checker rejects was loaded")


def test_check_shortcuts_for_unique_names_give_the_report_of_the_general_path(tmp_path):
    # a chain with host islands (Mod) between NPU runs: partitions, boundaries and partition ids all in play
    nodes, cur = [], "x"
    for i in range(12):
        nodes.append(helper.make_node("Relu", [cur], [f"r{i}"], name=f"relu{i}"))
        op = "Mod" if i % 4 == 3 else "Add"
        nodes.append(helper.make_node(op, [f"r{i}", "m" if op == "Mod" else cur], [f"o{i}"], name=f"{op.lower()}{i}",
                                      **({"fmod": 1} if op == "Mod" else {})))
        cur = f"o{i}"
    inits = [numpy_helper.from_array(np.array(2.0, np.float32), "m")]
    p = tmp_path / "chain.onnx"
    onnx.save_model(model(nodes, [vi("x", [1, 8])], [vi(cur, [1, 8])], inits, opset=17), str(p))
    from npufit.check.engine import check_graph
    from npufit.targets import get_profile

    g = load(p)
    assert g.names_unique and g.single_producers
    fast = check_graph(g, get_profile("hailo8")).to_json()
    g.names_unique = g.single_producers = False  # as for a graph with a repeated node name
    general = check_graph(g, get_profile("hailo8")).to_json()
    assert fast == general
    assert len(json.loads(fast)["boundaries"]) >= 4


def _rank_model() -> onnx.ModelProto:
    """Ranks 2..5, a constant rank-5 operand, an omitted optional input, a folded shape chain and a custom-domain op."""
    nodes = [helper.make_node("Reshape", ["x", "s5"], ["x5"], name="to5d"),  # rank-5 output
             helper.make_node("Add", ["x5", "c5"], ["y5"], name="add5"),  # rank-5 activation and rank-5 constant
             helper.make_node("Shape", ["x"], ["xs"], name="shape"),  # folded: its input shape is static
             helper.make_node("Reshape", ["y5", "xs"], ["y4"], name="to4d"),
             helper.make_node("Clip", ["y4", "", "hi"], ["y4c"], name="clip"),  # omitted optional input
             helper.make_node("Flatten", ["y4c"], ["y2"], name="flat", axis=1),
             helper.make_node("Relu", ["y2"], ["r"], name="relu_a"),
             helper.make_node("Relu", ["r"], ["z"], name="relu_b"),
             helper.make_node("Foo", ["z"], ["q"], name="custom", domain="my.ops")]  # no shape: rank unknown
    inits = [numpy_helper.from_array(np.array([1, 2, 2, 4, 4], np.int64), "s5"),
             numpy_helper.from_array(np.ones((1, 2, 2, 4, 4), np.float32), "c5"),
             numpy_helper.from_array(np.array(6.0, np.float32), "hi")]
    return model(nodes, [vi("x", [1, 4, 4, 4])], [vi("q", None)], inits, opset=17, domains=("my.ops",))


def test_max_rank_table_matches_ranks_per_node_and_is_built_once(tmp_path):
    from npufit.check.engine import check_graph
    from npufit.targets import common, get_profile

    p = tmp_path / "ranks.onnx"
    onnx.save_model(_rank_model(), str(p))
    g = load(p)
    assert g.max_rank_table is None  # built by the first rank rule of a check, not by loading
    expect = {n.name: max(common.ranks(n), default=0) for n in g.nodes}
    assert {n.name: common.max_rank(n) for n in g.nodes} == expect
    assert expect["to5d"] == expect["add5"] == 5 and expect["flat"] == 4 and expect["custom"] == 2
    table = g.max_rank_table
    report = check_graph(g, get_profile("hailo8"))
    check_graph(g, get_profile("hailo8l"))
    assert g.max_rank_table is table  # both Hailo targets read the one table
    failed = {r.name for r in report.nodes if any(x.rule == "hailo8.tensor.max_rank" for x in r.reasons)}
    assert failed == {"to5d", "add5", "to4d"}


def test_no_rank_table_when_no_tensor_is_above_the_limit(tmp_path):
    from npufit.check.engine import check_graph
    from npufit.targets import get_profile

    p = tmp_path / "branchy.onnx"
    onnx.save_model(branchy_model(), str(p))
    g = load(p)  # 4-D at most; hailo8's rank rules fail above 4
    check_graph(g, get_profile("hailo8"))
    assert g.max_rank_table is None


def test_folding_resets_the_rank_table(tmp_path):
    from npufit.graph.folding import fold_constants
    from npufit.targets import common

    p = tmp_path / "ranks.onnx"
    onnx.save_model(_rank_model(), str(p))
    g = load(p)
    assert common.max_rank(g.node("relu_b")) == 2
    g.tensor("r").shape = (1, 2, 32)  # stands in for a shape that folding or refinement settles
    fold_constants(g, g.opsets)
    assert g.max_rank_table is None and common.max_rank(g.node("relu_b")) == 3


def test_nodes_of_indexes_nodes_by_op_type_in_graph_order(tmp_path):
    from npufit.targets.patterns import _anchors

    p = tmp_path / "ranks.onnx"
    onnx.save_model(_rank_model(), str(p))
    g = load(p)
    assert [n.name for n in g.nodes_of("Reshape")] == ["to5d", "to4d"]
    assert [n.name for n in g.nodes_of("Relu")] == ["relu_a", "relu_b"]
    assert [n.name for n in g.nodes_of("Foo")] == ["custom"]  # any domain; matchers filter the domain themselves
    assert g.nodes_of("Erf") == []
    for op in ("Reshape", "Shape", "Relu", "Foo"):  # the anchors a matcher sees: the same as a scan over all nodes
        assert _anchors(g, op) == [n for n in g.nodes if n.op_type == op and n.domain in ("", "ai.onnx")
                                   and n.name not in g.folded]
    assert "shape" in g.folded and _anchors(g, "Shape") == []

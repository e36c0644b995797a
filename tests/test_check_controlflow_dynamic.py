"""Models with If/Loop bodies and dynamic inputs: headline figures that add up, unique node names, MACs that are
not silently zero, and the --input-shape hint before the numbers it changes."""
from __future__ import annotations

import json

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from npufit import check
from npufit.cli import main


def _branch(name, scale):
    """A body with an unnamed Constant and a MatMul (the then/else bodies exporters write hold the same names)."""
    w = numpy_helper.from_array(np.full((8, 8), scale, np.float32), f"{name}_w")
    nodes = [helper.make_node("Constant", [], [f"{name}_c"], value=numpy_helper.from_array(np.float32(scale))),
             helper.make_node("MatMul", ["x", w.name], [f"{name}_m"]),
             helper.make_node("Mul", [f"{name}_m", f"{name}_c"], [f"{name}_y"])]
    return helper.make_graph(nodes, name, [], [helper.make_tensor_value_info(f"{name}_y", TensorProto.FLOAT, [1, 8])], [w])


def _if_model(path):
    nodes = [helper.make_node("ReduceSum", ["x"], ["s"], name="sum", keepdims=0),
             helper.make_node("Greater", ["s", "zero"], ["cond"], name="gt"),
             helper.make_node("If", ["cond"], ["y"], name="branch", then_branch=_branch("then", 2.0), else_branch=_branch("else", 3.0))]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])],
                          [numpy_helper.from_array(np.float32(0), "zero")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(m, full_check=True)
    onnx.save(m, str(path))
    return path


def test_if_bodies_have_unique_names_carry_macs_and_headline_counts_match_coverage(tmp_path, capsys):
    rep = check(_if_model(tmp_path / "if.onnx"), "rk3588", measure="never")
    names = [n.name for n in rep.nodes + rep.subgraph_nodes]
    assert len(names) == len(set(names))  # was: 'branch/Constant_0' twice
    assert rep.node("branch").macs == 2 * 64  # both branches' MatMul (an upper bound), not 0
    s = rep.summary()
    assert all(n.parent is None for n in rep.nodes)
    assert sum(s["counts"].values()) == len(rep.nodes) == 3  # the headline counts what the coverage counts
    assert sum(s["subgraph_counts"].values()) == len(rep.subgraph_nodes) == 6
    assert main(["check", str(tmp_path / "if.onnx"), "-t", "rk3588"]) in (0, 1)
    out = capsys.readouterr().out
    assert "inside If/Loop/Scan bodies" in out
    assert main(["check", str(tmp_path / "if.onnx"), "-t", "rk3588", "--format", "json"]) in (0, 1)
    d = json.loads(capsys.readouterr().out)
    assert len({n["name"] for n in d["nodes"]}) == len(d["nodes"])


def test_dynamic_input_asks_for_its_shape_instead_of_figures(tmp_path, capsys):
    w = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "w")
    g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], name="conv", pads=[1] * 4)], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, "h", "w"])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, "h", "w"])], [w])
    p = tmp_path / "dyn.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(p))
    assert main(["check", str(p), "-t", "hailo8"]) == 2
    out, err = capsys.readouterr()
    assert "coverage" not in out and "%" not in out + err  # no figure rests on a guessed size
    assert err.count("\n") == 1 and "input 'x' has unknown dims [1,3,h,w]" in err
    assert f"npufit check {p} -t hailo8 --input-shape x=1,3,640,640" in err  # the user's command, flag added

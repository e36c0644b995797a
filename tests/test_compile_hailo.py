"""Hailo DFC path. NOT exercised against the real DFC (login-gated): a FAKE `hailo` script records its argv and
prints a parser error in the DFC's format; --emit-script writes the commands for a real Hailo machine."""
import json
import os
import stat
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from npufit.compilers import compile_model

FAKE_HAILO = """#!{py}
# FAKE hailo CLI for tests: records argv, answers like the DFC parser would.
import json, sys
open({rec!r}, "a").write(json.dumps(sys.argv[1:]) + "\\n")
if sys.argv[1:2] == ["--version"]:
    print("HailoRT v4.20.0\\nHailo Dataflow Compiler v3.30.0"); sys.exit(0)
if sys.argv[1] == "parser":
    print("[error] Failed to produce compiled graph")
    print("hailo_sdk_client.model_translator.exceptions.ParsingWithRecommendationException: Parsing failed. The errors found in the graph are:")
    print(" UnsupportedOperationError in op topk: TopK operation is unsupported")
    print("Please try to parse the model again, using these end node names: conv2")
    sys.exit(1)
"""


def _model(path):
    w = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "w")
    w2 = numpy_helper.from_array(np.ones((4, 4, 1, 1), np.float32), "w2")
    k = numpy_helper.from_array(np.array([2], np.int64), "k")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], "conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["c", "w2"], ["c2"], "conv2"),
             helper.make_node("Flatten", ["c2"], ["f"], "flat"),
             helper.make_node("TopK", ["f", "k"], ["v", "i"], "topk", axis=1)]
    g = helper.make_graph(nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("v", TensorProto.FLOAT, [1, 2]),
                           helper.make_tensor_value_info("i", TensorProto.INT64, [1, 2])], [w, w2, k])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, path)
    return path


def test_fake_dfc_parser_errors_become_per_node_reasons(tmp_path, monkeypatch):
    rec = tmp_path / "argv.jsonl"
    fake = tmp_path / "hailo"
    fake.write_text(FAKE_HAILO.format(py=sys.executable, rec=str(rec)))
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("NPUFIT_HAILO", str(fake))
    r = compile_model(_model(tmp_path / "m.onnx"), "hailo8", out_dir=tmp_path / "out", end_nodes=("topk",))
    assert not r.ok and "parser failed" in r.error
    calls = [json.loads(x) for x in rec.read_text().splitlines()]
    parse = next(c for c in calls if c[0] == "parser")
    assert parse[:2] == ["parser", "onnx"] and "--hw-arch" in parse and parse[parse.index("--hw-arch") + 1] == "hailo8"
    assert parse[parse.index("--end-node-names") + 1] == "topk"
    assert r.metrics["recommended_end_nodes"] == ["conv2"]
    by = {p.node: p for p in r.placement}
    assert by["topk"].device == "cpu" and "TopK operation is unsupported" in by["topk"].reason
    assert by["conv1"].device == "npu" and r.compiler_version == "3.30.0"


def test_emit_script_writes_commands_and_model_script(tmp_path, monkeypatch):
    monkeypatch.setenv("NPUFIT_HAILO", "")
    monkeypatch.setenv("PATH", os.defpath)
    out = tmp_path / "emit"
    r = compile_model(_model(tmp_path / "m.onnx"), "hailo8l", emit_script=str(out))
    script = (out / "compile_hailo.sh").read_text()
    assert r.ok and r.artifact is None and "NOT exercised" in " ".join(r.notes)
    assert "hailo parser onnx input/m.onnx --hw-arch hailo8l" in script
    # npufit's own check cut the TopK away: its NPU prefix ends before it
    assert "--end-node-names" in script and "topk" not in script.split("--end-node-names")[1].split("\n")[0]
    assert "hailo optimize m.har" in script and "hailo compiler m_optimized.har" in script
    assert (out / "m.alls").read_text().startswith("# npufit-generated")


def test_another_models_plan_is_refused_and_the_script_header_is_honest(tmp_path, monkeypatch, capsys):
    import npufit
    from npufit.cli import main

    monkeypatch.setenv("NPUFIT_HAILO", "")
    monkeypatch.setenv("PATH", os.defpath)
    a = _model(tmp_path / "a.onnx")
    npufit.split(a, "hailo8", tmp_path / "plan_a", mode="prefix")
    other = tmp_path / "b.onnx"
    m = onnx.load(str(a))
    for n in m.graph.node:
        n.name = "b_" + n.name  # same graph, other node names: a's plan names nodes b does not have
    onnx.save(m, str(other))
    rc = main(["compile", str(other), "-t", "hailo8", "--plan", str(tmp_path / "plan_a" / "plan.json"), "--emit-script", str(tmp_path / "e")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "split from a.onnx, not from b.onnx" in err[0]
    rc = main(["compile", str(a), "-t", "hailo8", "--end-node", "nope", "--emit-script", str(tmp_path / "e2")])
    assert rc == 2 and "nope is not a node of a.onnx" in capsys.readouterr().err
    rc = main(["compile", str(a), "-t", "hailo8", "--plan", str(tmp_path / "plan_a" / "plan.json"), "--emit-script", str(tmp_path / "e3")])
    out = capsys.readouterr().out
    assert rc == 0
    head = out.splitlines()[0]
    assert "?" not in head and "not run" in head and "script written" in head
    assert "placement (predicted: the parse region, not compiled): 3 npu, 1 cpu" in out  # was "0 npu ... of 0 nodes"

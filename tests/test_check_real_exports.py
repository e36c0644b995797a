"""Shapes of real exports that crashed `check` or made its figures disagree, each rebuilt small with onnx.helper:
a PP-OCRv6 recogniser's scalar Reshape in its width arithmetic, a Silero VAD export's scalar sample-rate input,
If/Loop bodies that repeat node names, and an OpenVINO export that names 15 nodes 'F0::anon'."""

from __future__ import annotations

import json
import re
from collections import Counter

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from npufit import check
from npufit.cli import main
from npufit.targets import available_targets

VERDICTS = ("npu", "cpu", "unsupported", "folded")


def _save(path, nodes, inputs, outputs, inits=(), opset=13):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    onnx.save(m, str(path))
    return path


def _vi(name, shape, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


def _const(name, value, dtype=np.int64):
    return numpy_helper.from_array(np.asarray(value, dtype), name)


def ppocr_recogniser(path):
    """The width arithmetic of a PP-OCRv6 recogniser (paddle2onnx): Shape -> Slice -> Squeeze -> Reshape to a scalar
    (shape []) -> Unsqueeze -> Concat -> Reshape of the features into a sequence, on a dynamic-width input."""
    w = numpy_helper.from_array(np.ones((8, 3, 3, 3), np.float32), "w")
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["f"], name="conv", pads=[1, 1, 1, 1], strides=[48, 1]),
        helper.make_node("Shape", ["f"], ["s"], name="shape"),
        helper.make_node("Slice", ["s", "three", "four", "zero"], ["s3"], name="slice"),
        helper.make_node("Squeeze", ["s3", "zero"], ["wid"], name="squeeze"),
        helper.make_node("Reshape", ["wid", "scalar"], ["wid0"], name="Reshape.71"),  # rank 0 in, rank 0 out
        helper.make_node("Unsqueeze", ["wid0", "zero"], ["wid1"], name="unsqueeze"),
        helper.make_node("Concat", ["one", "wid1", "eight"], ["seq_shape"], name="concat", axis=0),
        helper.make_node("Transpose", ["f"], ["ft"], name="to_tokens", perm=[0, 2, 3, 1]),
        helper.make_node("Reshape", ["ft", "seq_shape"], ["y"], name="to_seq"),
    ]
    inits = [
        w,
        _const("three", [3]),
        _const("four", [4]),
        _const("zero", [0]),
        _const("scalar", np.zeros(0)),
        _const("one", [1]),
        _const("eight", [8]),
    ]
    return _save(path, nodes, [_vi("x", [1, 3, 48, "width"])], [_vi("y", [1, None, 8])], inits)


def vad_sample_rate(path):
    """A Silero VAD export's head (silero_vad_op18_ifless): the scalar sample-rate input reshaped to [1], compared
    with 16000, choosing a branch."""
    nodes = [
        helper.make_node("Reshape", ["sr", "one"], ["sr1"], name="node_Reshape_1"),  # rank 0 in, rank 1 out
        helper.make_node("Equal", ["sr1", "k16"], ["is16"], name="eq"),
        helper.make_node("Where", ["is16", "x", "x2"], ["y"], name="pick"),
        helper.make_node("Mul", ["x", "two"], ["x2"], name="double"),
    ]
    nodes = [nodes[0], nodes[1], nodes[3], nodes[2]]
    inits = [_const("one", [1]), _const("k16", [16000]), numpy_helper.from_array(np.float32(2), "two")]
    return _save(path, nodes, [_vi("x", [1, 64]), _vi("sr", [], TensorProto.INT64)], [_vi("y", [1, 64])], inits)


@pytest.mark.parametrize("build", [ppocr_recogniser, vad_sample_rate])
def test_scalar_reshapes_are_judged_on_every_target(tmp_path, build):
    """Was: `check --target hailo8` IndexError (tuple index out of range) on both real models."""
    path = build(tmp_path / "m.onnx")
    for target in available_targets():
        rep = check(path, target, measure="never")
        assert sum(rep.summary()["counts"].values()) == len(rep.nodes) > 0, target


def _body(tag, scale, off_npu_op):
    """A branch whose node names repeat in the other branch and at top level (exporters reuse them)."""
    w = numpy_helper.from_array(np.full((8, 8), scale, np.float32), f"{tag}_w")
    nodes = [
        helper.make_node("MatMul", ["x", w.name], [f"{tag}_m"], name="mm"),
        helper.make_node("Relu", [f"{tag}_m"], [f"{tag}_r"], name="act"),
        helper.make_node(off_npu_op, [f"{tag}_r"], [f"{tag}_y"], name="tail"),
    ]
    return helper.make_graph(nodes, tag, [], [_vi(f"{tag}_y", [1, 8])], [w])


def if_model(path):
    """Sample-rate switch of a VAD export: an If whose branches repeat node names, two top-level nodes named like an
    OpenVINO export's ('F0::anon'), and a top-level node named like one inside the bodies ('act')."""
    nodes = [
        helper.make_node("Reshape", ["sr", "one"], ["sr1"], name="node_Reshape_1"),
        helper.make_node("Equal", ["sr1", "k16"], ["is16v"], name="F0::anon"),
        helper.make_node("Squeeze", ["is16v"], ["is16"], name="F0::anon"),
        helper.make_node(
            "If",
            ["is16"],
            ["b"],
            name="branch",
            then_branch=_body("then", 2.0, "Sigmoid"),
            else_branch=_body("else", 3.0, "Erf"),
        ),
        helper.make_node("Relu", ["b"], ["y"], name="act"),
    ]
    inits = [_const("one", [1]), _const("k16", [16000])]
    return _save(path, nodes, [_vi("x", [1, 8]), _vi("sr", [], TensorProto.INT64)], [_vi("y", [1, 8])], inits)


def loop_model(path):
    """A recurrent export: a Loop of three steps whose body repeats a top-level node name ('step')."""
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep"),
            helper.make_node("MatMul", ["h_in", "w"], ["h_m"], name="step"),
            helper.make_node("Erf", ["h_m"], ["h_out"], name="gate"),
        ],
        "body",
        [_vi("i", [], TensorProto.INT64), _vi("cond_in", [], TensorProto.BOOL), _vi("h_in", [1, 8])],
        [_vi("cond_out", [], TensorProto.BOOL), _vi("h_out", [1, 8])],
    )
    nodes = [
        helper.make_node("Relu", ["x"], ["h0"], name="step"),
        helper.make_node("Loop", ["trips", "yes", "h0"], ["h"], name="loop", body=body),
        helper.make_node("Sigmoid", ["h"], ["y"], name="out"),
    ]
    inits = [
        _const("trips", 3),
        numpy_helper.from_array(np.array(True), "yes"),
        numpy_helper.from_array(np.eye(8, dtype=np.float32), "w"),
    ]
    return _save(path, nodes, [_vi("x", [1, 8])], [_vi("y", [1, 8])], inits)


def _terminal_counts(out: str) -> tuple[dict[str, int], dict[str, int]]:
    """(the headline's verdict counts, the column sums of the 'ops by verdict' table) of a terminal report."""
    head = re.search(r"npu (\d+)\s+cpu (\d+)\s+unsupported (\d+)\s+folded (\d+)", out)
    headline = dict(zip(VERDICTS, map(int, head.groups())))
    lines = out.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("ops by verdict")) + 3  # title, header, rule
    table = Counter()
    for ln in lines[start:]:
        cells = [c.strip() for c in ln.split("│")]
        if len(cells) != 5:
            break
        table.update({v: int(c) for v, c in zip(VERDICTS, cells[1:]) if c})
    folded_line = next((ln for ln in lines if ln.startswith("folded at compile time")), "")
    table["folded"] += sum(int(k) for k in re.findall(r"×(\d+)", folded_line))
    return headline, {v: table[v] for v in VERDICTS}


def _markdown_counts(md: str) -> tuple[dict[str, int], dict[str, int]]:
    head = re.search(r"\*\*verdicts\*\*: npu (\d+), cpu (\d+), unsupported (\d+), folded (\d+)", md)
    headline = dict(zip(VERDICTS, map(int, head.groups())))
    ops = md.split("## Ops", 1)[1].split("\n## ", 1)[0]
    table = Counter()
    for ln in ops.splitlines()[4:]:
        cells = [c.strip() for c in ln.strip("|").split("|")]
        table.update({v: int(c) for v, c in zip(VERDICTS, cells[1:]) if c})
    return headline, {v: table[v] for v in VERDICTS}


@pytest.mark.parametrize("build", [if_model, loop_model])
@pytest.mark.parametrize("target", ["rk3588", "hailo8", "ethos-u55-256"])
def test_if_and_loop_reports_count_one_set_of_nodes_in_every_format(tmp_path, capsys, monkeypatch, build, target):
    """Was: headline 0.0 % while 93.3 % of the listed nodes ran on the NPU (silero_vad_op18_ifless on rk3588), and
    15 nodes of one name listed with one node's verdict (silero_vad_openvino_16k)."""
    path = build(tmp_path / "m.onnx")
    assert main(["check", str(path), "-t", target, "-f", "json"]) in (0, 1)
    d = json.loads(capsys.readouterr().out)
    s, nodes, body = d["summary"], d["nodes"], d["subgraph_nodes"]
    names = [n["name"] for n in nodes + body]
    assert len(names) == len(set(names)) == d["model"]["nodes"]  # every node of the file once, under its own name
    assert {"F0::anon", "mm", "act"} <= set(names) or {"step", "gate"} <= set(names)
    assert body and all(n.get("parent") in names for n in body) and not any("parent" in n for n in nodes)
    # the headline, the counts and the coverage read the listed nodes, and only them
    assert s["nodes_total"] == len(nodes) == sum(s["counts"].values())
    assert s["counts"] == {v: sum(n["verdict"] == v for n in nodes) for v in VERDICTS}
    assert s["subgraph_counts"] == {v: sum(n["verdict"] == v for n in body) for v in VERDICTS}
    running = [n for n in nodes if n["verdict"] != "folded"]
    assert s["coverage_nodes_pct"] == round(100.0 * sum(n["verdict"] == "npu" for n in running) / len(running), 2)
    assert s["fully_npu"] == all(n["verdict"] in ("npu", "folded") for n in nodes)
    # partitions hold exactly the running listed nodes, each once, as each node's own partition field says
    in_parts = [(name, p["id"]) for p in d["partitions"] for name in p["nodes"]]
    assert sorted(in_parts) == sorted((n["name"], n["partition"]) for n in running)
    assert s["npu_partitions"] + s["host_partitions"] == len(d["partitions"])
    # a control-flow node stands for its bodies: their worst verdict, with the body nodes off the NPU named
    holder = next(n for n in nodes if n["op_type"] in ("If", "Loop"))
    off = [n for n in body if n["verdict"] in ("cpu", "unsupported")]
    if off:
        assert holder["verdict"] in ("cpu", "unsupported")
        assert any(r["rule"] == "body" and f"'{off[0]['name']}'" in r["text"] for r in holder["reasons"])
    # the terminal and Markdown renderings print the same counts in their headline and their op tables
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["check", str(path), "-t", target]) in (0, 1)
    headline, table = _terminal_counts(capsys.readouterr().out)
    assert headline == table == s["counts"]
    assert main(["check", str(path), "-t", target, "-f", "markdown"]) in (0, 1)
    headline, table = _markdown_counts(capsys.readouterr().out)
    assert headline == table == s["counts"]

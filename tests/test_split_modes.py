"""npufit split on a hand-built branchy model: an unsupported GridSample in the middle, skip connections
across the cut, a host stage that needs an original input, three outputs (one produced on the NPU side),
shape arithmetic that must not become a boundary. Every mode must verify at exactly 0.0."""
from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import npufit
from npufit import check
from npufit.errors import NpufitError
from npufit.split import load_plan
from npufit.split.chain import ChainRunner
from npufit.targets.base import Verdict

TARGET = "hailo8"


def _conv(name, x, cin, cout, k, rng, inits):
    w = numpy_helper.from_array(rng.standard_normal((cout, cin, k, k)).astype(np.float32) * 0.3, f"{name}.w")
    b = numpy_helper.from_array(rng.standard_normal(cout).astype(np.float32) * 0.1, f"{name}.b")
    inits += [w, b]
    return helper.make_node("Conv", [x, w.name, b.name], [f"{name}_out"], name=name, pads=[k // 2] * 4)


def build_model() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    inits: list = []
    n = [
        _conv("conv1", "x", 3, 8, 3, rng, inits),
        helper.make_node("Relu", ["conv1_out"], ["r1"], name="relu1"),
        _conv("conv2", "r1", 8, 8, 3, rng, inits),
        helper.make_node("Add", ["conv2_out", "r1"], ["a1"], name="add1"),  # skip inside the NPU part
        helper.make_node("Sigmoid", ["conv2_out"], ["aux"], name="sig_aux"),  # model output made on the NPU side
        helper.make_node("GridSample", ["a1", "grid"], ["g"], name="gridsample", align_corners=0),  # needs original input
        _conv("conv3", "g", 8, 8, 3, rng, inits),
        helper.make_node("Relu", ["conv3_out"], ["r3"], name="relu3"),
        helper.make_node("Add", ["r3", "r1"], ["a2"], name="add2"),  # skip connection across the cut
        _conv("conv4", "a2", 8, 4, 1, rng, inits),
        # shape arithmetic on an NPU-side tensor: folded, must not cross a boundary
        helper.make_node("Shape", ["r1"], ["shp"], name="shape"),
        helper.make_node("Gather", ["shp", "zero"], ["n0"], name="gather_n", axis=0),
        helper.make_node("Unsqueeze", ["n0", "axes0"], ["n0u"], name="unsq"),
        helper.make_node("Concat", ["n0u", "minus1"], ["newshape"], name="cat_shape", axis=0),
        helper.make_node("Reshape", ["conv4_out", "newshape"], ["main"], name="reshape_main"),
        helper.make_node("GlobalAveragePool", ["g"], ["pooled"], name="gap"),
    ]
    inits += [numpy_helper.from_array(np.array(0, np.int64), "zero"), numpy_helper.from_array(np.array([0], np.int64), "axes0"),
              numpy_helper.from_array(np.array([-1], np.int64), "minus1"),
              numpy_helper.from_array(np.ones(3, np.float32), "unused_weight")]  # must not reach any stage
    g = helper.make_graph(n, "branchy", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8]),
                                         helper.make_tensor_value_info("grid", TensorProto.FLOAT, [1, 8, 8, 2])],
                          [helper.make_tensor_value_info("main", TensorProto.FLOAT, [1, 256]),
                           helper.make_tensor_value_info("aux", TensorProto.FLOAT, [1, 8, 8, 8]),
                           helper.make_tensor_value_info("pooled", TensorProto.FLOAT, [1, 8, 1, 1])], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    p = tmp_path_factory.mktemp("branchy") / "branchy.onnx"
    onnx.save(build_model(), str(p))
    rep = check(p, TARGET)
    # Preconditions the tests rely on (stated against verdicts, not a hard-coded op list).
    assert rep.node("gridsample").verdict != Verdict.NPU
    assert all(rep.node(n).verdict == Verdict.NPU for n in ("conv1", "relu1", "conv2", "add1", "conv3"))
    return p


def _stage_of(plan, tensor):
    return next(s for s in plan.stages if tensor in s.output_names)


def _check_stage_files(plan_dir, plan):
    used_inits = set()
    for s in plan.stages:
        m = onnx.load(str(plan_dir / s.file))
        onnx.checker.check_model(m)
        assert [i.name for i in m.graph.input] == s.input_names
        assert [o.name for o in m.graph.output] == s.output_names
        typed = {v.name for v in list(m.graph.value_info) + list(m.graph.output) if v.type.tensor_type.HasField("shape")}
        assert {o for node in m.graph.node for o in node.output} <= typed  # shapes inferred inside the stage
        names = {t.name for t in m.graph.initializer}
        read = {t for node in m.graph.node for t in node.input}
        assert names <= read, f"{s.name} carries initializers it never reads: {names - read}"
        used_inits |= names
    assert "unused_weight" not in used_inits


def test_prefix_mode(model_path, tmp_path):
    out = tmp_path / "plan"
    res = npufit.split(model_path, TARGET, out, mode="prefix")
    plan = load_plan(out)
    assert plan.verification["equivalent"] and plan.verification["max_abs"] == 0.0
    assert set(plan.verification["per_output"]) == {"main", "aux", "pooled"}
    assert all(d["max_abs"] == 0.0 and d["max_rel"] == 0.0 for d in plan.verification["per_output"].values())
    assert [s.device for s in plan.stages] == ["npu", "host"]
    npu, host = plan.stages
    assert {"conv1", "conv2", "add1"} <= set(_nodes(out, npu))
    assert "gridsample" in _nodes(out, host)
    srcs = {i["name"]: i["from"] for i in host.inputs}
    assert srcs["grid"] == "input"  # a later stage reads an original input
    assert srcs["r1"] == npu.name  # the skip connection crosses the cut
    assert "shp" not in srcs and "newshape" not in srcs  # shape arithmetic stays inside the stage
    assert _stage_of(plan, "aux").device == "npu"
    assert {o["name"]: o["from"] for o in plan.outputs} == {"main": host.name, "aux": npu.name, "pooled": host.name}
    assert npu.start_node_names == ["conv1"] and "sig_aux" in npu.end_node_names
    assert "--end-node-names" in npu.vendor["hailo"]["parse_original"]
    b = {x["tensor"]: x for x in plan.boundaries}
    assert b["r1"]["bytes"] == 8 * 8 * 8 * 4 and b["r1"]["direction"] == "npu->host"
    assert plan.cost["boundaries"] == sum(x["direction"] in ("npu->host", "host->npu") for x in plan.boundaries)
    assert plan.source["sha256"] and plan.mode == "prefix"
    _check_stage_files(out, plan)
    assert res.candidates and res.chosen in res.candidates
    text = res.render("table")
    assert "bit-identical" in text and "estimated latency" in text
    assert json.loads(res.render("json"))["schema"] == "npufit.split/1"
    assert json.loads((out / "plan.json").read_text())["schema"] == "npufit.plan/1"


def _nodes(plan_dir, stage):
    return [n.name for n in onnx.load(str(plan_dir / stage.file)).graph.node]


def test_segments_mode(model_path, tmp_path):
    out = tmp_path / "seg"
    npufit.split(model_path, TARGET, out, mode="segments", min_nodes=2)
    plan = load_plan(out)
    assert plan.verification["max_abs"] == 0.0
    devices = [s.device for s in plan.stages]
    assert devices.count("npu") >= 2  # the NPU regions before and after the GridSample
    post = next(s for s in plan.stages if "conv3" in _nodes(out, s))
    assert post.device == "npu"
    assert {i["name"]: i["from"] for i in post.inputs}["r1"] == plan.stages[0].name  # skip from the first NPU stage
    _check_stage_files(out, plan)


def test_explicit_nodes_and_tensors(model_path, tmp_path):
    out = tmp_path / "exp"
    npufit.split(model_path, TARGET, out, start_nodes=["conv3"], end_nodes=["conv4"])
    plan = load_plan(out)
    assert plan.mode == "explicit" and plan.verification["max_abs"] == 0.0
    assert [s.device for s in plan.stages] == ["host", "npu", "host"]
    npu = plan.stages[1]
    assert sorted(_nodes(out, npu)) == ["add2", "conv3", "conv4", "relu3"]
    assert npu.start_node_names == ["conv3", "add2"] and npu.end_node_names == ["conv4"]
    assert "--start-node-names conv3 add2" in npu.vendor["hailo"]["parse_original"]
    # the same cut named by tensors
    out2 = tmp_path / "exp_t"
    npufit.split(model_path, TARGET, out2, mode="explicit", start_nodes="g", end_nodes="conv4_out")
    plan2 = load_plan(out2)
    assert sorted(_nodes(out2, plan2.stages[1])) == ["add2", "conv3", "conv4", "relu3"]
    assert plan2.verification["max_abs"] == 0.0


def test_auto_picks_best_ranked(model_path, tmp_path):
    res = npufit.split(model_path, TARGET, tmp_path / "auto", mode="auto")
    assert res.chosen is res.candidates[0]
    keys = [c.cost["est_ms"] for c in res.candidates]
    assert keys == sorted(keys)


def test_bad_input_is_one_clear_error(model_path, tmp_path):
    with pytest.raises(NpufitError, match="did you mean conv3"):
        npufit.split(model_path, TARGET, tmp_path / "e1", end_nodes=["conv33"])
    with pytest.raises(NpufitError, match="no node lies"):
        npufit.split(model_path, TARGET, tmp_path / "e2", start_nodes=["conv4"], end_nodes=["conv1"])
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    with pytest.raises(NpufitError, match="holds files npufit did not write"):
        npufit.split(model_path, TARGET, tmp_path / "busy")
    assert (tmp_path / "busy" / "notes.txt").read_text() == "mine"
    with pytest.raises(NpufitError, match="cannot be combined"):
        npufit.split(model_path, TARGET, tmp_path / "e3", mode="segments", end_nodes=["conv1"])


def test_external_data_stays_external(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    onnx.save_model(build_model(), str(src / "m.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
                    location="m.onnx.data", size_threshold=1024)
    before = (src / "m.onnx.data").read_bytes()
    out = tmp_path / "plan"
    npufit.split(src / "m.onnx", TARGET, out, mode="prefix")  # every stage of this cut holds a large weight
    plan = load_plan(out)
    assert plan.verification["max_abs"] == 0.0
    for s in plan.stages:
        assert s.files["external_data"] == s.file + ".data"
        m = onnx.load(str(out / s.file), load_external_data=False)
        big = [t for t in m.graph.initializer if t.name in ("conv2.w", "conv3.w")]
        assert all(t.data_location == TensorProto.EXTERNAL for t in big) and (big or s.device == "host")
        onnx.checker.check_model(str(out / s.file))
    assert (src / "m.onnx.data").read_bytes() == before  # the input is never modified


def test_refuses_non_equivalent_chain(tmp_path):
    # An unseeded RandomNormalLike gives different values in every session: the chain cannot match.
    w = numpy_helper.from_array(np.ones((2, 2, 1, 1), np.float32), "w")
    g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
                           helper.make_node("RandomNormalLike", ["c"], ["noise"], name="noise"),
                           helper.make_node("Add", ["c", "noise"], ["y"], name="add")], "noisy",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 4, 4])], initializer=[w])
    p = tmp_path / "noisy.onnx"
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, str(p))
    with pytest.raises(NpufitError, match="output 'y' differs by max abs"):
        npufit.split(p, TARGET, tmp_path / "refused")
    assert not (tmp_path / "refused").exists()
    assert not any(x.name.startswith(".refused") for x in tmp_path.iterdir())  # temp folder cleaned up
    res = npufit.split(p, TARGET, tmp_path / "forced", force=True)
    assert res.plan.verification["equivalent"] is False and (tmp_path / "forced" / "plan.json").exists()


def test_run_and_npz_inputs(model_path, tmp_path):
    out = tmp_path / "plan"
    rng = np.random.default_rng(7)
    feeds = {"x": rng.standard_normal((1, 3, 8, 8)).astype(np.float32),
             "grid": rng.uniform(-1, 1, (1, 8, 8, 2)).astype(np.float32)}
    npz = tmp_path / "in.npz"
    np.savez(npz, **feeds)
    npufit.split(model_path, TARGET, out, mode="segments", min_nodes=1, inputs=[str(npz)])
    assert load_plan(out).verification["inputs"] == "npz"
    res = npufit.run(out, str(npz), output=tmp_path / "out.npz", compare_original=model_path, repeat=2)
    assert res.comparison["equivalent"] and res.comparison["max_abs"] == 0.0
    assert res.comparison["sha256_matches"] is True
    with np.load(tmp_path / "out.npz") as z:
        assert sorted(z.files) == ["aux", "main", "pooled"]
    assert set(res.device_of_stage.values()) == {"onnxruntime-cpu"}
    assert any("hailo_platform" in n for n in res.notes)  # says why NPU stages ran on the CPU
    runner = ChainRunner(out)
    outs, times = runner.run(feeds)
    assert [t[0] for t in times] == [s.name for s in runner.plan.stages]
    assert all(isinstance(t[1], float) for t in times)
    from npufit.verify.compare import run_onnx

    ref = run_onnx(str(model_path), feeds)
    for k in ref:
        assert np.array_equal(ref[k], outs[k])
    with pytest.raises(NpufitError, match="not installed"):
        ChainRunner(out, "hailort")
    with pytest.raises(NpufitError, match="inputs missing: grid"):
        runner.run({"x": feeds["x"]})


def test_cli(model_path, tmp_path, capsys):
    from npufit.cli import main

    out = tmp_path / "cli"
    assert main(["split", str(model_path), "--target", TARGET, "--output-dir", str(out), "--mode", "segments",
                 "--min-nodes", "2", "--samples", "2"]) == 0
    text = capsys.readouterr().out
    assert "bit-identical" in text and "candidate cuts" in text
    np.savez(tmp_path / "in.npz", x=np.zeros((1, 3, 8, 8), np.float32), grid=np.zeros((1, 8, 8, 2), np.float32))
    assert main(["run", str(out), "--inputs", str(tmp_path / "in.npz"), "--compare-original", str(model_path)]) == 0
    text = capsys.readouterr().out
    assert "onnxruntime-cpu" in text and "bit-identical to the original" in text and "note:" in text
    assert main(["run", str(tmp_path / "nowhere"), "--inputs", str(tmp_path / "in.npz")]) == 2
    assert "no plan.json" in capsys.readouterr().err


def test_subgraph_outer_scope_reads_cross_the_cut(tmp_path):
    """An If body reads an NPU-side tensor without listing it as an input: the host stage must still get it."""
    w = numpy_helper.from_array(np.full((2, 2, 1, 1), 0.5, np.float32), "w")
    then_g = helper.make_graph([helper.make_node("Relu", ["c"], ["t_out"], name="then_relu")], "then", [],
                               [helper.make_tensor_value_info("t_out", TensorProto.FLOAT, [1, 2, 4, 4])])
    else_g = helper.make_graph([helper.make_node("Neg", ["c"], ["e_out"], name="else_neg")], "else", [],
                               [helper.make_tensor_value_info("e_out", TensorProto.FLOAT, [1, 2, 4, 4])])
    g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
                           helper.make_node("If", ["flag"], ["y"], name="branch", then_branch=then_g, else_branch=else_g)],
                          "iffy", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4]),
                                   helper.make_tensor_value_info("flag", TensorProto.BOOL, [])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 4, 4])], initializer=[w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    p = tmp_path / "iffy.onnx"
    onnx.save(m, str(p))
    rep = check(p, TARGET)
    if rep.node("conv").verdict != Verdict.NPU or rep.node("branch").verdict == Verdict.NPU:
        pytest.skip(f"{TARGET} profile does not place Conv on the NPU and If on the host")
    npufit.split(p, TARGET, tmp_path / "plan", samples=4)
    plan = load_plan(tmp_path / "plan")
    host = plan.stages[1]
    assert {i["name"]: i["from"] for i in host.inputs} == {"flag": "input", "c": plan.stages[0].name}
    assert plan.verification["max_abs"] == 0.0

"""Which cut `split` writes and what it says about it: the best-ranked cut by default, fix hints and --mode auto
(fix + split verified against the original), verification under both ONNX Runtime settings, and stage
boundaries whose rank shape inference lost."""
from __future__ import annotations

import json

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import npufit
from npufit.cli import main
from npufit.split import load_plan


def _conv(name, x, cin, cout, rng, inits, k=3, rank=2):
    w = numpy_helper.from_array(rng.standard_normal((cout, cin) + (k,) * rank).astype(np.float32) * 0.2,
                                f"{name}.w")
    inits.append(w)
    return helper.make_node("Conv", [x, w.name], [f"{name}_o"], name=name, pads=[k // 2] * (2 if rank == 1 else 4))


def _host_first(path):
    """A detector-like body whose very first node (a GridSample warp) does not run on Hailo-8."""
    rng = np.random.default_rng(0)
    inits: list = []
    nodes = [helper.make_node("GridSample", ["x", "grid"], ["xs"], name="warp", align_corners=0),
             _conv("c1", "xs", 4, 32, rng, inits), helper.make_node("Relu", ["c1_o"], ["r1"], name="r1"),
             _conv("c2", "r1", 32, 32, rng, inits), helper.make_node("Relu", ["c2_o"], ["y"], name="r2")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 64, 64]),
                                       helper.make_tensor_value_info("grid", TensorProto.FLOAT, [1, 64, 64, 2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32, 64, 64])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def test_default_is_the_best_ranked_cut_not_the_empty_prefix(tmp_path):
    model = _host_first(tmp_path / "det.onnx")
    prefix = npufit.split(model, "hailo8", tmp_path / "prefix", mode="prefix")
    assert prefix.plan.cost["npu_macs_pct"] == 0.0  # the first node blocks the whole prefix
    assert "ranks" in prefix.why and "best:" in prefix.why  # and split says a better cut exists, with its options
    best = npufit.split(model, "hailo8", tmp_path / "best")
    assert best.chosen is best.candidates[0]
    assert best.plan.cost["npu_macs_pct"] > 99.0
    assert best.plan.cost["est_ms"] < prefix.plan.cost["est_ms"]
    assert best.why.startswith("chosen: the best-ranked")
    assert best.to_dict()["why"] == best.why


def _conv1d_stem(path):
    """Whisper-style audio stem: Conv1d layers on [N, C, L] (Hailo runs convolutions as 2-D on rank-4 tensors)."""
    rng = np.random.default_rng(1)
    inits: list = []
    nodes = [_conv("stem1", "mel", 16, 32, rng, inits, rank=1), helper.make_node("Relu", ["stem1_o"], ["a"], name="act1"),
             _conv("stem2", "a", 32, 32, rng, inits, rank=1), helper.make_node("Relu", ["stem2_o"], ["y"], name="act2")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("mel", TensorProto.FLOAT, [1, 16, 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32, 64])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 11)]), str(path))
    return path


def test_blocking_node_with_a_rewrite_gets_a_fix_hint_and_auto_fixes_then_splits(tmp_path):
    model = _conv1d_stem(tmp_path / "audio.onnx")
    before = model.read_bytes()
    plain = npufit.split(model, "hailo8", tmp_path / "plain")
    hint = [w for w in plain.plan.warnings if "npufit fix" in w]
    assert hint and "conv1d_to_conv2d" in hint[0] and "--mode auto" in hint[0]
    assert plain.plan.cost["npu_macs_pct"] < 50.0
    auto = npufit.split(model, "hailo8", tmp_path / "auto", mode="auto")
    assert auto.plan.cost["npu_macs_pct"] > 99.0
    assert "conv1d_to_conv2d" in auto.why
    v = auto.plan.verification
    assert v["equivalent"]  # the fixed chain, verified against the ORIGINAL model's outputs
    assert model.read_bytes() == before


def test_verification_states_both_ort_settings(tmp_path, capsys):
    model = _host_first(tmp_path / "det.onnx")
    rc = main(["split", str(model), "-t", "hailo8", "-d", str(tmp_path / "plan")])
    out = capsys.readouterr().out
    assert rc == 0
    line = next(ln for ln in out.splitlines() if ln.startswith("verification"))
    assert "graph optimizations off: bit-identical" in line and "ORT_ENABLE_ALL" in line
    v = json.loads((tmp_path / "plan" / "plan.json").read_text())["verification"]
    assert v["settings"] == "graph optimizations off"
    assert v["optimized"]["settings"].startswith("default graph optimizations") and v["optimized"]["close"]
    assert set(v["optimized"]["per_output"]) == {"y"}


def _unknown_rank_model(path, side: int = 0):
    """Squeeze without axes on dims only a run knows (a Reshape to a shape computed from the data): shape inference
    cannot tell the rank of 's' and 'r'. side > 0 adds a second input [1, 16, 512, 512] (16 MiB) through `side` Relus
    to a second output: intermediates that a normal run frees but that add up when all are kept."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "k"])
    target = helper.make_tensor("target", TensorProto.FLOAT, [4], [1, 1, 8, 8])
    zero = helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0])
    nodes = [helper.make_node("ReduceMax", ["x"], ["mx"], name="max", keepdims=0),
             helper.make_node("Mul", ["mx", "zero"], ["z"], name="zeroed"),
             helper.make_node("Add", ["z", "target"], ["tf"], name="shape_f"),
             helper.make_node("Cast", ["tf"], ["shp"], name="shape", to=TensorProto.INT64),
             helper.make_node("Reshape", ["x", "shp"], ["xr"], name="reshape"),
             helper.make_node("Squeeze", ["xr"], ["s"], name="squeeze"), helper.make_node("Relu", ["s"], ["r"], name="relu"),
             helper.make_node("Flatten", ["r"], ["y"], name="flatten", axis=0)]
    inputs, outputs = [x], [y]
    inits = [target, zero]
    if side:  # reshaped to a shape computed from the data and squeezed: shape inference knows no rank on the side
        inputs.append(helper.make_tensor_value_info("x2", TensorProto.FLOAT, [1, 16, 512, 512]))
        outputs.append(helper.make_tensor_value_info(f"b{side}", TensorProto.FLOAT, ["a", "b", "c"]))
        inits.append(helper.make_tensor("target2", TensorProto.FLOAT, [4], [1, 16, 512, 512]))
        nodes += [helper.make_node("Add", ["z", "target2"], ["tf2"], name="shape2_f"),
                  helper.make_node("Cast", ["tf2"], ["shp2"], name="shape2", to=TensorProto.INT64),
                  helper.make_node("Reshape", ["x2", "shp2"], ["x2r"], name="reshape2"),
                  helper.make_node("Squeeze", ["x2r"], ["b0"], name="squeeze2")]
        nodes += [helper.make_node("Relu", [f"b{i}"], [f"b{i + 1}"], name=f"side{i}") for i in range(side)]
    m = helper.make_model(helper.make_graph(nodes, "g", inputs, outputs, inits),
                          opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(m, full_check=True)
    onnx.save(m, str(path))
    return path


def test_the_rank_probe_fetches_only_boundary_tensors(tmp_path):
    """A big model's split failed with "rank is unknown even after running the model": the probe kept every
    intermediate alive at once and the memory budget refused the run. Here 12 x 16 MiB of side intermediates under a
    96 MiB budget: a normal run fits, keeping them all would not."""
    import subprocess
    import sys

    path = _unknown_rank_model(tmp_path / "m.onnx", side=12)
    r = subprocess.run([sys.executable, "-m", "npufit", "--memory-budget", "96", "split", str(path), "-t", "hailo8",
                        "-d", str(tmp_path / "plan"), "--mode", "explicit", "--start-nodes", "relu", "--end-nodes",
                        "relu", "--samples", "1"], capture_output=True, text=True)  # fmt: skip
    assert r.returncode == 0, r.stderr
    npu = next(s for s in load_plan(tmp_path / "plan").stages if s.device == "npu")
    stage = onnx.load(str(tmp_path / "plan" / npu.file))
    assert len(stage.graph.input[0].type.tensor_type.shape.dim) == 2


def test_boundary_tensor_of_unknown_rank_gets_its_measured_rank(tmp_path):
    path = _unknown_rank_model(tmp_path / "m.onnx")
    res = npufit.split(path, "hailo8", tmp_path / "plan", start_nodes=["relu"], end_nodes=["relu"])
    assert res.plan.verification["equivalent"]
    plan = load_plan(tmp_path / "plan")
    npu = next(s for s in plan.stages if s.device == "npu")
    stage = onnx.load(str(tmp_path / "plan" / npu.file))
    onnx.checker.check_model(stage, full_check=True)  # failed before: "Field 'shape' of 'type' is required"
    assert len(stage.graph.input[0].type.tensor_type.shape.dim) == 2  # the rank measured on a seeded run

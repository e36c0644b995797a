"""Hailo DFC path. NOT exercised against the real DFC or HailoRT (login-gated): the tests run npufit against the
FAKE `hailo` / `hailortcli` pair in tests/fakes/hailo, whose outputs are recorded from public runs and which
checks what the real tools check for these flows (node names, the calibration set's layout, file names)."""
import json
import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from npufit.compilers import compile_model

from .fakes.hailo import install_tools

RECORDED_FPS_HW, RECORDED_FPS_STREAM, RECORDED_LATENCY = 80.3676, 80.2997, 28.3828  # recorded/benchmark.csv


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


def _host_first(path):
    """x -> Mod (host) -> Conv -> Relu: the NPU part starts inside the model, at the Mod's output."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    two = numpy_helper.from_array(np.array(2.0, np.float32), "two")
    nodes = [helper.make_node("Mod", ["x", "two"], ["a"], "mod_in", fmod=1),
             helper.make_node("Conv", ["a", "w"], ["c"], "conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["y"], "relu")]
    g = helper.make_graph(nodes, "h", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], [w, two])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, path)
    return path


def _two_inputs(path):
    """A sequence input [1, 8, 3] and a feature input [1, 5]: the rank-3 and rank-2 layouts, and an .npz set."""
    w = numpy_helper.from_array(np.ones((3, 4), np.float32), "w")
    w2 = numpy_helper.from_array(np.ones((5, 4), np.float32), "w2")
    nodes = [helper.make_node("MatMul", ["s", "w"], ["a"], "mm_seq"),
             helper.make_node("MatMul", ["f", "w2"], ["b"], "mm_feat"),
             helper.make_node("Add", ["a", "b"], ["y"], "add")]
    g = helper.make_graph(nodes, "t", [helper.make_tensor_value_info("s", TensorProto.FLOAT, [1, 8, 3]),
                                       helper.make_tensor_value_info("f", TensorProto.FLOAT, [1, 5])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 4])], [w, w2])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, path)
    return path


@pytest.fixture
def fake_tools(tmp_path, monkeypatch):
    """FAKE hailo/hailortcli first on PATH; returns the call log reader."""
    bin_dir = install_tools(tmp_path / "fakebin")
    log = tmp_path / "calls.jsonl"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.defpath}")
    monkeypatch.setenv("NPUFIT_HAILO", "")
    monkeypatch.setenv("NPUFIT_ENVS", str(tmp_path / "envs"))  # no real env found by accident
    monkeypatch.setenv("FAKE_HAILO_LOG", str(log))

    def calls():
        return [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []

    return calls


@pytest.fixture
def no_tools(tmp_path, monkeypatch):
    monkeypatch.setenv("NPUFIT_HAILO", "")
    monkeypatch.setenv("PATH", os.defpath)
    monkeypatch.setenv("NPUFIT_ENVS", str(tmp_path / "envs"))


def _run_script(folder, env_extra=None):
    env = dict(os.environ, **(env_extra or {}))
    return subprocess.run(["bash", str(folder / "compile_hailo.sh")], capture_output=True, text=True, env=env,
                          timeout=300)


def test_fake_dfc_parser_errors_become_per_node_reasons(tmp_path, fake_tools):
    r = compile_model(_model(tmp_path / "m.onnx"), "hailo8", out_dir=tmp_path / "out", end_nodes=("topk",))
    assert not r.ok and "parser failed" in r.error
    parse = next(c["argv"] for c in fake_tools() if c["argv"][0] == "parser")
    assert parse[:2] == ["parser", "onnx"] and parse[parse.index("--hw-arch") + 1] == "hailo8"
    assert parse[parse.index("--end-node-names") + 1] == "topk"
    assert r.metrics["recommended_end_nodes"] == ["flat"]
    by = {p.node: p for p in r.placement}
    assert by["topk"].device == "cpu" and "TopK operation is unsupported" in by["topk"].reason
    assert by["conv1"].device == "npu" and r.compiler_version == "3.33.0"


def test_local_dfc_run_builds_the_hef_and_reads_its_logs(tmp_path, fake_tools):
    r = compile_model(_model(tmp_path / "m.onnx"), "hailo8", out_dir=tmp_path / "out")
    assert r.ok and r.artifact == str(tmp_path / "out" / "m.hef") and os.path.isfile(r.artifact)
    assert list(r.timings) == ["parser", "optimize", "compiler", "parse-hef"]
    assert r.metrics["snr_db"] == {"m/output_layer1": 44.04} and r.metrics["contexts"] == 1
    assert r.metrics["hef"]["arch"] == "HAILO8" and "NHWC(8x8x3)" in r.metrics["hef"]["inputs"]
    assert [p.node for p in r.placement if p.device == "cpu"] == ["topk"]  # check's prefix left TopK to the host


def test_emit_script_writes_commands_and_model_script(tmp_path, no_tools):
    out = tmp_path / "emit"
    r = compile_model(_model(tmp_path / "m.onnx"), "hailo8l", emit_script=str(out))
    script = (out / "compile_hailo.sh").read_text()
    assert r.ok and r.artifact is None and "NOT run by npufit" in " ".join(r.notes)
    assert "hailo parser onnx input/m.onnx --hw-arch hailo8l --net-name m --har-path m.har" in script
    # npufit's own check cut the TopK away: its NPU prefix ends before it
    assert "--end-node-names" in script and "topk" not in script.split("--end-node-names")[1].split("\n")[0]
    assert "hailo optimize m.har --hw-arch hailo8l --model-script m.alls --calib-set-path calib_set.npy" in script
    assert "hailo compiler m_optimized.har --hw-arch hailo8l --output-dir ." in script
    assert "hailortcli parse-hef m.hef" in script and "hailortcli benchmark m.hef --time-to-run 15" in script
    alls = (out / "m.alls").read_text()
    assert alls.startswith("# npufit-generated") and "calibset_size=64" in alls
    assert "optimization_level=0" in alls and "seeded random" in " ".join(r.notes)  # no data: only a compile check


def test_missing_dfc_is_one_line_exit_2_and_the_script_is_written(tmp_path, no_tools, capsys):
    from npufit.cli import main

    rc = main(["compile", str(_model(tmp_path / "m.onnx")), "-t", "hailo8", "--out-dir", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1
    assert "Hailo Dataflow Compiler is not installed" in err[0] and "npufit env install hailo --wheel" in err[0]
    assert str(tmp_path / "o" / "compile_hailo.sh") in err[0] and (tmp_path / "o" / "compile_hailo.sh").is_file()


def test_emitted_script_runs_against_fake_tools_and_results_fold_back(tmp_path, no_tools, capsys):
    """seed 003's all.sh by npufit: the written script, run as is where `hailo` and `hailortcli` are, parses,
    optimizes, compiles, reads the HEF and benchmarks; `compile --results` folds it all back."""
    from npufit.cli import main

    model = _model(tmp_path / "m.onnx")
    calib = np.random.default_rng(3).standard_normal((5, 3, 8, 8)).astype(np.float32)  # NCHW, as the model takes it
    np.save(tmp_path / "calib.npy", calib)
    out = tmp_path / "emit"
    compile_model(model, "hailo8l", emit_script=str(out), calibration=str(tmp_path / "calib.npy"))
    fake = install_tools(tmp_path / "fakebin")
    log = tmp_path / "calls.jsonl"
    p = _run_script(out, {"PATH": f"{fake}{os.pathsep}{os.defpath}", "FAKE_HAILO_LOG": str(log),
                          "FAKE_HAILO_DEVICE": "HAILO8L"})
    assert p.returncode == 0, p.stdout + p.stderr
    calls = [(c["tool"], c["argv"]) for c in map(json.loads, log.read_text().splitlines())]
    assert [(t, a[0]) for t, a in calls] == [("hailo", "--version"), ("hailo", "parser"), ("hailo", "optimize"),
                                             ("hailo", "compiler"), ("hailortcli", "--version"),
                                             ("hailortcli", "parse-hef"), ("hailortcli", "fw-control"),
                                             ("hailortcli", "benchmark")]
    assert all(c["cwd"] == str(out) for c in map(json.loads, log.read_text().splitlines()))
    opt = calls[2][1]
    assert opt[opt.index("--calib-set-path") + 1] == "calib_set.npy" and (out / "m_optimized.har").is_file()
    assert calls[7][1][:2] == ["benchmark", "m.hef"] and (out / "logs" / "benchmark.csv").is_file()

    rc = main(["compile", "--results", str(out), "--format", "json"])
    d = json.loads(capsys.readouterr().out)
    assert rc == 0 and d["ok"] and d["artifact"] == str(out / "m.hef") and d["compiler_version"] == "3.33.0"
    assert list(d["timings"]) == ["parser", "optimize", "compiler", "parse-hef", "identify", "benchmark"]
    assert d["metrics"]["benchmark"] == {"fps_hw_only": RECORDED_FPS_HW, "fps_streaming": RECORDED_FPS_STREAM,
                                         "latency_hw_ms": RECORDED_LATENCY, "power_average_w": 2.79538}
    assert d["metrics"]["device"]["arch"] == "HAILO8L" and d["metrics"]["hef"]["arch"] == "HAILO8L"
    assert d["summary"]["npu"] == 3 and d["summary"]["cpu"] == 1
    bench = json.loads((out / "bench.json").read_text())
    rows = {r["runtime"]: r for r in bench["results"]}
    assert bench["schema"] == "npufit.bench/1" and bench["model"]["sha256"]  # the HEF it measured
    assert rows["hailortcli:hw_only"]["throughput_ips"] == RECORDED_FPS_HW
    assert rows["hailortcli:hw_only"]["latency_ms"] == {"mean": RECORDED_LATENCY}
    assert rows["hailortcli:hw_only"]["boundary"] == "compute-only" and rows["hailortcli:hw_only"]["iterations"] == 1207
    assert rows["hailortcli:streaming"]["throughput_ips"] == RECORDED_FPS_STREAM
    assert rows["hailortcli:streaming"]["boundary"] == "host-to-host"
    assert rows["hailortcli:streaming"]["details"]["power_max_w"] == 2.81937
    # the bench schema file goes where every bench result goes: beside other runs in --compare
    assert main(["bench", "--compare", str(out / "bench.json")]) == 0
    assert "hailortcli:streaming" in capsys.readouterr().out


def test_script_parse_line_takes_the_plan_end_nodes_and_the_calibration_layout(tmp_path, no_tools):
    import npufit

    model = _host_first(tmp_path / "h.onnx")
    plan = npufit.split(model, "hailo8", tmp_path / "plan", mode="segments", min_nodes=1).plan
    npu = next(s for s in plan.stages if s.device == "npu")
    assert npu.start_node_names == ["conv"] and npu.end_node_names == ["relu"]
    x = np.random.default_rng(1).standard_normal((6, 3, 8, 8)).astype(np.float32) * 3
    np.save(tmp_path / "calib.npy", x)
    out = tmp_path / "emit"
    compile_model(model, "hailo8", emit_script=str(out), plan=str(tmp_path / "plan" / "plan.json"),
                  calibration=str(tmp_path / "calib.npy"))
    parse = next(ln for ln in (out / "compile_hailo.sh").read_text().splitlines() if "hailo parser onnx" in ln)
    assert parse.split("--start-node-names ")[1].split(" --")[0] == "conv"
    assert parse.split("--end-node-names ")[1].split(" ||")[0] == "relu"
    got = np.load(out / "calib_set.npy")
    # the NPU stage reads the Mod's output, which ONNX Runtime computed from the data; NCHW -> NHWC
    assert got.shape == (6, 8, 8, 3) and got.dtype == np.float32
    np.testing.assert_allclose(got, np.fmod(x, 2.0).transpose(0, 2, 3, 1), rtol=0, atol=1e-6)
    manifest = json.loads((out / "npufit-hailo.json").read_text())
    assert manifest["calibration"]["inputs"] == [
        {"tensor": "a", "layer": "h/input_layer1", "shape": [8, 8, 3], "layout": "[N,C,H,W] -> [N,H,W,C]"}]
    assert "h/input_layer1 [N,C,H,W] -> [N,H,W,C]" in (out / "compile_hailo.sh").read_text()


def test_fake_optimize_refuses_a_calibration_set_in_the_models_own_layout(tmp_path, fake_tools):
    """The layout check the tests above lean on can fail: an NCHW set is refused like the DFC refuses it."""
    out = tmp_path / "out"
    compile_model(_model(tmp_path / "m.onnx"), "hailo8", emit_script=str(out))
    np.save(out / "calib_set.npy", np.load(out / "calib_set.npy").transpose(0, 3, 1, 2))  # back to NCHW
    p = _run_script(out)
    assert p.returncode != 0 and "BadInputsShape" in (out / "logs" / "optimize.log").read_text()
    assert "optimize\t1\t" in (out / "logs" / "steps.tsv").read_text()


def test_sequence_and_feature_inputs_get_their_layouts_in_one_npz(tmp_path, fake_tools):
    r = compile_model(_two_inputs(tmp_path / "t.onnx"), "hailo8", out_dir=tmp_path / "out")
    assert r.ok, r.error  # the FAKE optimize accepted the keys and shapes against its input layers
    with np.load(tmp_path / "out" / "calib_set.npz") as z:
        assert {k: z[k].shape for k in z.files} == {"t/input_layer1": (64, 1, 8, 3), "t/input_layer2": (64, 5)}
    opt = next(c["argv"] for c in fake_tools() if c["argv"][0] == "optimize")
    assert opt[opt.index("--calib-set-path") + 1] == "calib_set.npz"


def test_a_benchmark_that_stops_at_its_latency_step_keeps_its_fps(tmp_path, no_tools, capsys):
    from npufit.cli import main

    out = tmp_path / "emit"
    compile_model(_two_inputs(tmp_path / "t.onnx"), "hailo8", emit_script=str(out))
    fake = install_tools(tmp_path / "fakebin")
    p = _run_script(out, {"PATH": f"{fake}{os.pathsep}{os.defpath}", "FAKE_HAILO_DEVICE": "HAILO8"})
    assert p.returncode == 0 and "stay in logs/benchmark.log" in p.stdout
    assert main(["compile", "--results", str(out)]) == 0
    text = capsys.readouterr().out
    assert "benchmark: fps_hw_only=80.43, fps_streaming=80.3" in text and "stopped (exit 6" in text
    rows = {r["runtime"]: r for r in json.loads((out / "bench.json").read_text())["results"]}
    assert rows["hailortcli:hw_only"]["latency_ms"] == {} and rows["hailortcli:hw_only"]["throughput_ips"] == 80.43


def test_results_of_a_folder_whose_script_has_not_run_or_another_model(tmp_path, no_tools, capsys):
    from npufit.cli import main

    out = tmp_path / "emit"
    compile_model(_model(tmp_path / "m.onnx"), "hailo8", emit_script=str(out))
    assert main(["compile", "--results", str(out)]) == 2
    assert "has not run yet" in capsys.readouterr().err
    (out / "logs").mkdir()
    (out / "logs" / "steps.tsv").write_text("parser\t0\t1.0\n")
    assert main(["compile", str(_host_first(tmp_path / "h.onnx")), "--results", str(out)]) == 2
    assert "not for" in capsys.readouterr().err
    assert main(["compile", "--results", str(tmp_path)]) == 2
    assert "not a folder npufit wrote" in capsys.readouterr().err


def test_another_models_plan_is_refused_and_the_script_header_is_honest(tmp_path, no_tools, capsys):
    import npufit
    from npufit.cli import main

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
    assert not (tmp_path / "e").exists()  # refused before anything was written
    rc = main(["compile", str(a), "-t", "hailo8", "--end-node", "nope", "--emit-script", str(tmp_path / "e2")])
    assert rc == 2 and "nope is not a node of a.onnx" in capsys.readouterr().err
    rc = main(["compile", str(a), "-t", "hailo8", "--plan", str(tmp_path / "plan_a" / "plan.json"), "--emit-script", str(tmp_path / "e3")])
    out = capsys.readouterr().out
    assert rc == 0
    verdict = out.splitlines()[0]  # the one-line verdict first, then the compiler's line
    assert "predicted on the NPU (not compiled here; a script to compile it written)" in verdict
    head = next(x for x in out.splitlines() if x.startswith("hailo"))
    assert "?" not in head and "not run" in head and "script written" in head
    assert "placement (predicted: the parse region, not compiled): 3 npu, 1 cpu" in out  # was "0 npu ... of 0 nodes"


def test_env_install_takes_the_dfc_wheel_and_compile_finds_its_hailo(tmp_path, no_tools, capsys):
    """`npufit env install hailo --wheel` with a FAKE DFC wheel: the environment's own `hailo` then compiles."""
    from npufit.cli import main

    from .fakes.hailo import fake_dfc_wheel

    old = fake_dfc_wheel(tmp_path, requires_python="<3.0")
    assert main(["env", "install", "hailo", "--wheel", str(old)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "needs Python <3.0" in err[0] and "--python" in err[0]
    assert not (tmp_path / "envs" / "hailo").exists()  # refused before a virtualenv was made
    (tmp_path / "new").mkdir()
    whl = fake_dfc_wheel(tmp_path / "new")
    assert main(["env", "install", "hailo", "--wheel", str(whl), "--python", sys.executable]) == 0
    assert "version 3.33.0" in capsys.readouterr().out
    assert (tmp_path / "envs" / "hailo" / "bin" / "hailo").is_file()
    r = compile_model(_model(tmp_path / "m.onnx"), "hailo8", out_dir=tmp_path / "out")
    assert r.ok and r.compiler_version == "3.33.0" and os.path.isfile(r.artifact)


def test_pipeline_compile_step_runs_the_dfc_steps_on_trained_data_and_on_a_split_stage(tmp_path, fake_tools):
    """The pipeline's HAR -> optimize -> HEF: a trained time-series model calibrates on its own training windows
    ([N, S, D] -> [N, 1, S, D]); a model the split step cut hands its NPU stage file on, parsed whole."""
    from npufit.pipeline import run_pipeline

    from .pipeline_helpers import npu_cut_npu_onnx

    npu_cut_npu_onnx(tmp_path / "cut.onnx")
    (tmp_path / "p.yaml").write_text(
        "version: 1\nname: hp\ndata: {length: 240, seq_len: 8, features: 3}\n"
        "models:\n  - {name: tcn, arch: tcn, hidden: 4}\n  - {name: cut, onnx: cut.onnx}\ntargets: [hailo8]\n"
        "steps:\n  train: {epochs: 1, max_windows: 32}\n  export: {}\n  split: {}\n  compile: {}\n")
    run = run_pipeline(tmp_path / "p.yaml", output_dir=tmp_path / "out", quiet=True)
    for model in ("tcn", "cut"):
        rec = run.result(f"compile/{model}/hailo8").record
        assert rec.status == "ok" and "parser" in rec.message and "compiler" in rec.message, rec.message
        assert (tmp_path / "out" / model / "hailo8" / "compile" / "out" / "model.hef").is_file()
    tcn = tmp_path / "out" / "tcn" / "hailo8" / "compile"
    calib = json.loads((tcn / "out" / "npufit-hailo.json").read_text())["calibration"]
    assert calib["source"].endswith("calibration.npz") and not calib["random"]
    assert calib["inputs"][0]["layout"] == "[N,S,D] -> [N,1,S,D]"
    assert np.load(tcn / "out" / "calib_set.npy").shape == (calib["samples"], 1, 8, 3)
    assert run.result("split/cut/hailo8").record.message.startswith("NPU stage")
    cut_parse = next(c["argv"] for c in fake_tools() if c["argv"][0] == "parser" and "/cut/" in c["cwd"])
    assert "--start-node-names" not in cut_parse and "--end-node-names" not in cut_parse  # the stage file, whole


def test_results_follow_the_end_nodes_and_input_layers_the_parser_reports(tmp_path, fake_tools, capsys):
    """With -y the DFC parses again with its own recommended end nodes: the parser log, not the request, says
    which region became the HEF; an input layer numbered otherwise than the calibration keys is said too."""
    from npufit.cli import main

    out = tmp_path / "out"
    r = compile_model(_model(tmp_path / "m.onnx"), "hailo8", out_dir=out)
    assert r.ok and (out / "logs" / "steps.tsv").is_file()  # a run here leaves the folder --results reads
    log = out / "logs" / "parser.log"
    text = log.read_text()
    assert "End nodes mapped from original model: 'flat'" in text
    log.write_text(text.replace("'flat'", "'conv1'").replace("'x': 'm/input_layer1'", "'x': 'm/input_layer2'"))
    assert main(["compile", "--results", str(out), "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    devices = {p["node"]: p["device"] for p in d["placement"]}
    assert devices == {"conv1": "npu", "conv2": "cpu", "flat": "cpu", "topk": "cpu"}
    assert d["metrics"]["end_nodes"] == ["conv1"] and any("took the end nodes conv1" in n for n in d["notes"])
    assert any("mapped x to m/input_layer2; calib_set.npy holds them as x: m/input_layer1" in n for n in d["notes"])


def test_hailortcli_benchmark_summary_reads_the_indented_power_lines():
    """HailoRT prints its power lines indented under "Device ...:" (recorded/benchmark.txt, a public run)."""
    from pathlib import Path

    from npufit.runtimes.hailort import parse_hailortcli_benchmark, parse_hailortcli_progress

    text = (Path(__file__).parent / "fakes" / "hailo" / "recorded" / "benchmark.txt").read_text()
    assert parse_hailortcli_benchmark(text) == {"fps_hw_only": RECORDED_FPS_HW, "fps_streaming": RECORDED_FPS_STREAM,
                                                "latency_hw_ms": RECORDED_LATENCY, "power_average_w": 2.79538,
                                                "power_max_w": 2.81937}
    # the progress lines alone (a run that stopped before its Summary), also when a terminal's \r separates them
    progress = parse_hailortcli_progress(text.replace("\n", "\r"))
    assert progress == {"fps_hw_only": 80.43, "frames_hw_only": 1207.0, "fps_streaming": 80.30,
                        "frames_streaming": 1205.0, "latency_hw_ms": 28.38}

"""One int8 story: every verb judges a float model on an int8-only target the same way (the profile's
`executes` fact), so no verb says 0% where another says 100% for the same node."""
from __future__ import annotations

import importlib.util
import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from npufit import check
from npufit.targets import get_profile
from npufit.targets.base import Executes

TARGET = "ethos-u55-256"


def _mixed_float_model(path):
    """Conv -> Relu -> Sin -> Conv: as int8 the Convs and Relu run on Ethos-U, Sin does not (not in Vela's list, and npufit's
    converter has no NPU lowering for it, unlike Erf); as float nothing does."""
    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "w1")
    w2 = numpy_helper.from_array(rng.standard_normal((8, 8, 3, 3)).astype(np.float32), "w2")
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["a"], ["b"], name="relu"),
             helper.make_node("Sin", ["b"], ["c"], name="sin"),
             helper.make_node("Conv", ["c", "w2"], ["y"], name="conv2", pads=[1, 1, 1, 1])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 16, 16])], [w1, w2])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def _all_npu_as_int8_model(path):
    """Conv -> LeakyRelu -> Conv at opset 11 (what Hailo users export): as int8 every node runs on Ethos-U, as float
    none does; the demo TCN's case, where one verb said 100% and others 0%."""
    rng = np.random.default_rng(1)
    w1 = numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "w1")
    w2 = numpy_helper.from_array(rng.standard_normal((4, 8, 1, 1)).astype(np.float32), "w2")
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("LeakyRelu", ["a"], ["b"], name="lrelu", alpha=0.1),
             helper.make_node("Conv", ["b", "w2"], ["y"], name="conv2")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 16, 16])], [w1, w2])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 11)])
    m.ir_version = 7
    onnx.save(m, str(path))
    return path


def _pipeline_verdicts(p, tmp_path, steps: str):
    """Run the real pipeline (check, fix, split[, compile]) on the ONNX file; its results as written."""
    import json

    from npufit.pipeline import run_pipeline

    y = tmp_path / "p.yaml"
    y.write_text(f"version: 1\nname: story\nmodels:\n  - {{name: m, onnx: {p.name}}}\ntargets: [{TARGET}]\nruntimes: []\n"
                 f"steps:\n  export: {{}}\n  check: {{}}\n  fix: {{}}\n  split: {{}}\n{steps}")
    run = run_pipeline(y, output_dir=tmp_path / "out", quiet=True)
    check_json = json.loads((tmp_path / "out" / "m" / TARGET / "check" / "check.json").read_text())
    return run, {n["name"]: n["verdict"] for n in check_json["nodes"]}


def test_profiles_declare_what_they_execute():
    from npufit.targets import available_targets

    for name in available_targets():
        assert isinstance(get_profile(name).executes, Executes), name


def test_every_verb_agrees_on_every_node(tmp_path):
    from npufit.check.compare import compare
    from npufit.pipeline.steps import pipeline_judge
    from npufit.probe.case_run import _predict
    from npufit.rewrite import fix
    from npufit.split import split

    p = _mixed_float_model(tmp_path / "m.onnx")
    rep = check(p, TARGET)
    verdict = {n.name: n.verdict.value for n in rep.nodes}
    assert verdict == {"conv1": "npu", "relu": "npu", "sin": "cpu", "conv2": "npu"}  # judged as its int8 conversion
    npu = {n for n, v in verdict.items() if v == "npu"}

    fixed = fix(p, TARGET, dry_run=True, rules=["remove_identity"])
    assert fixed.before.not_npu == 1 and fixed.before.coverage_pct == pytest.approx(rep.coverage_nodes)

    res = split(p, TARGET, tmp_path / "plan", mode="segments", min_nodes=1)
    assert {n for st in res.chosen.stages if st.device == "npu" for n in st.nodes} == npu
    assert {n for st in res.chosen.stages if st.device == "host" for n in st.nodes} == {"sin"}

    row = compare([p], TARGET).reports[0]
    assert {n.name: n.verdict.value for n in row.nodes} == verdict

    piped = check(p, TARGET, judge=pipeline_judge(TARGET))
    assert {n.name: n.verdict.value for n in piped.nodes} == verdict

    probed: dict = {"notes": []}
    _predict(probed, p, TARGET)
    assert probed["predicted"]["nodes"] == verdict

    as_float = check(p, TARGET, judge="float")  # the explicit way to judge the float graph
    assert as_float.counts["npu"] == 0

    # the pipeline itself (not only the judge it picks): its check, fix and split steps on the same file
    run, piped_json = _pipeline_verdicts(p, tmp_path, "")
    assert piped_json == verdict
    fix_rec = run.result(f"fix/m/{TARGET}").record
    assert "coverage 75% -> 75%" in fix_rec.message, fix_rec.message
    split_rec = run.result(f"split/m/{TARGET}").record
    assert "runs its 1 non-NPU node(s) on its cpu fallback" in split_rec.message, split_rec.message


def test_every_verb_agrees_on_a_model_that_is_all_npu_as_int8(tmp_path, capsys):
    """No verb says 0% where another says 100%: check, fix, split, compare, probe, the pipeline and Vela itself."""
    from npufit.check.compare import compare
    from npufit.cli import main
    from npufit.probe.case_run import _predict
    from npufit.rewrite import fix
    from npufit.split import split

    p = _all_npu_as_int8_model(tmp_path / "m.onnx")
    want = {"conv1": "npu", "lrelu": "npu", "conv2": "npu"}
    assert {n.name: n.verdict.value for n in check(p, TARGET).nodes} == want
    assert fix(p, TARGET, dry_run=True, rules=["remove_identity"]).before.coverage_pct == 100.0
    res = split(p, TARGET, tmp_path / "plan", mode="segments", min_nodes=1)
    assert [st.device for st in res.chosen.stages] == ["npu"] and set(res.chosen.stages[0].nodes) == set(want)
    assert {n.name: n.verdict.value for n in compare([p], TARGET).reports[0].nodes} == want
    probed: dict = {"notes": []}
    _predict(probed, p, TARGET)
    assert probed["predicted"]["nodes"] == want
    for argv in (["fix", str(p), "-t", TARGET, "--dry-run"], ["split", str(p), "-t", TARGET, "-d", str(tmp_path / "s")]):
        main(argv)
        out = " ".join(capsys.readouterr().out.split())
        assert not re.search(r"(?<![\d.])0(\.0)?%", out) and "no NPU stage" not in out, (argv[0], out)
        assert "100.0%" in out

    vela = importlib.util.find_spec("ethosu") is not None
    run, piped = _pipeline_verdicts(p, tmp_path, "  compile: {}\n" if vela else "")
    assert piped == want
    assert "coverage 100% -> 100%" in run.result(f"fix/m/{TARGET}").record.message
    assert run.result(f"split/m/{TARGET}").record.message.startswith("not needed: the whole model runs on the NPU")
    if vela:  # the compiler agrees: Vela places every node of the int8 model on the NPU
        from npufit.compilers import compile_model

        r = compile_model(p, TARGET, compare_prediction=True, out_dir=tmp_path / "c")
        assert r.ok and r.comparison.nodes and all(row.predicted == row.actual == "npu" for row in r.comparison.nodes)
        comp = run.result(f"compile/m/{TARGET}").record
        assert comp.status == "ok" and "3/3 nodes on the NPU" in comp.message, comp.message


def test_cli_verbs_state_the_int8_judgement_once(tmp_path, capsys):
    from npufit.cli import main

    p = _mixed_float_model(tmp_path / "m.onnx")
    assert main(["check", str(p), "-t", TARGET]) == 0
    out = capsys.readouterr().out
    assert out.count("judged as int8") == 1 and "75.0%" in out
    assert main(["check", str(p), "-t", TARGET, "--judge", "float"]) == 0
    out = capsys.readouterr().out
    assert "judge 'float'" in out and "0.0%" in out
    assert main(["fix", str(p), "-t", TARGET, "--dry-run"]) == 0
    assert "coverage 75.0%" in capsys.readouterr().out


def test_compile_prediction_matches_vela_on_a_float_model(tmp_path):
    """compile --compare-prediction predicts the int8 model Vela receives: the same verdicts as check."""
    pytest.importorskip("torch")
    pytest.importorskip("ethosu.vela")
    from npufit.compilers import compile_model
    from npufit.zoo import detector

    src = tmp_path / "det.onnx"
    detector.export("leakyrelu", src)
    verdict = {n.name: n.verdict.value for n in check(src, TARGET).nodes}
    r = compile_model(src, TARGET, compare_prediction=True, out_dir=tmp_path / "out")
    assert r.ok, r.error
    rows = r.comparison.nodes
    assert rows and all(row.predicted == verdict[row.node] for row in rows)
    assert sum(row.predicted == row.actual for row in rows) / len(rows) >= 0.9

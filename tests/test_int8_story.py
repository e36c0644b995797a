"""One int8 story: every verb judges a float model on an int8-only target the same way (the profile's
`executes` fact), so no verb says 0% where another says 100% for the same node."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from npufit import check
from npufit.targets import get_profile
from npufit.targets.base import Executes

TARGET = "ethos-u55-256"


def _mixed_float_model(path):
    """Conv -> Relu -> Erf -> Conv: as int8 the Convs and Relu run on Ethos-U, Erf does not; as float nothing does."""
    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "w1")
    w2 = numpy_helper.from_array(rng.standard_normal((8, 8, 3, 3)).astype(np.float32), "w2")
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["a"], ["b"], name="relu"),
             helper.make_node("Erf", ["b"], ["c"], name="erf"),
             helper.make_node("Conv", ["c", "w2"], ["y"], name="conv2", pads=[1, 1, 1, 1])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 16, 16])], [w1, w2])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


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
    assert verdict == {"conv1": "npu", "relu": "npu", "erf": "cpu", "conv2": "npu"}  # judged as its int8 conversion
    npu = {n for n, v in verdict.items() if v == "npu"}

    fixed = fix(p, TARGET, dry_run=True, rules=["remove_identity"])
    assert fixed.before.not_npu == 1 and fixed.before.coverage_pct == pytest.approx(rep.coverage_nodes)

    res = split(p, TARGET, tmp_path / "plan", mode="segments", min_nodes=1)
    assert {n for st in res.chosen.stages if st.device == "npu" for n in st.nodes} == npu
    assert {n for st in res.chosen.stages if st.device == "host" for n in st.nodes} == {"erf"}

    row = compare([p], TARGET).reports[0]
    assert {n.name: n.verdict.value for n in row.nodes} == verdict

    piped = check(p, TARGET, judge=pipeline_judge(TARGET))
    assert {n.name: n.verdict.value for n in piped.nodes} == verdict

    probed: dict = {"notes": []}
    _predict(probed, p, TARGET)
    assert probed["predicted"]["nodes"] == verdict

    as_float = check(p, TARGET, judge="float")  # the explicit way to judge the float graph
    assert as_float.counts["npu"] == 0


def test_cli_verbs_state_the_int8_judgement_once(tmp_path, capsys):
    from npufit.cli import main

    p = _mixed_float_model(tmp_path / "m.onnx")
    assert main(["check", str(p), "-t", TARGET]) == 0
    out = capsys.readouterr().out
    assert out.count("judged as int8") == 1 and "75.0%" in out
    assert main(["check", str(p), "-t", TARGET, "--judge", "float"]) == 0
    out = capsys.readouterr().out
    assert "--judge float" in out and "0.0%" in out
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

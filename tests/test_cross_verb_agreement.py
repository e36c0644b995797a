"""Every verb reports the same placement of the same model on the same target: check, fix's figures, split's plan,
quantize's target cost (against a check of the file it wrote), compare, compile --compare-prediction, scan
--measure, the pipeline's check step and the report of that run. On ethos-u55-256 Vela (a dependency, always here)
places the model; on rk3588 the real RKNN-Toolkit2 does (skipped without its env), where npufit's prediction differs from the toolkit on
one node (a 2-input Sum the toolkit fuses on its NPU), so a verb that predicted for itself would disagree; hailo8
has no compiler here, so every verb reads the prediction and says so."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import npufit
from npufit.quantize.target_cost import model_node_counts

pytest.importorskip("ethosu.vela", reason="ethos-u-vela is not installed (pip install ethos-u-vela==5.2.0)")


def _model(path, tail: str, batch: int | str = 1):
    """conv -> relu -> Sum(relu, conv) -> tail op (Exp: a CPU op everywhere; AveragePool 9x9: Vela's CPU op; Transpose
    [0, 2, 1, 3] of a 1x2x400x400 map: RKNN-Toolkit2 2.5.0 runs it on the CPU where npufit's rules predict the NPU,
    a measured case of the rk3588 sweep record that no rule explains yet).
    batch "N": a dynamic batch (the shape policy pins it to 1 in every verb)."""
    rng = np.random.default_rng(0)
    channels, side = (2, 400) if tail == "Transpose" else (8, 16)
    w = numpy_helper.from_array(rng.normal(size=(channels, 3, 3, 3)).astype(np.float32), "w")
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("Add" if tail == "AveragePool" else "Sum", ["r", "c"], ["s"], name="sum"),
    ]
    if tail == "AveragePool":  # SAME 9x9: beyond Vela's 8x8 kernel for SAME average pooling
        nodes.append(helper.make_node("AveragePool", ["s"], ["y"], name="tail", kernel_shape=[9, 9], pads=[4] * 4))
    elif tail == "Transpose":
        nodes.append(helper.make_node("Transpose", ["s"], ["y"], name="tail", perm=[0, 2, 1, 3]))
    else:
        nodes.append(helper.make_node(tail, ["s"], ["y"], name="tail"))
    out = [batch, side, channels, side] if tail == "Transpose" else [batch, channels, side, side]
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3, side, side])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)],
        [w],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    path.write_bytes(m.SerializeToString())
    return path


def _figures(rep) -> dict:
    s = rep.summary()
    return {k: s[k] for k in ("counts", "coverage_nodes_pct", "npu_partitions", "host_partitions")}


def _off(counts: dict) -> int:
    return counts["cpu"] + counts["unsupported"]


CASES = [
    ("ethos-u55-256", "AveragePool", "measured", 1),
    ("ethos-u55-256", "AveragePool", "measured", "N"),  # a dynamic batch: every verb pins it and reads one placement
    ("rk3588", "Transpose", "measured", 1),
    ("hailo8", "Exp", "predicted", 1),
]


@pytest.mark.parametrize(
    "target,tail,source,batch", CASES, ids=[c[0] + ("-dynamic-batch" if c[3] != 1 else "") for c in CASES]
)
def test_every_verb_reports_the_same_placement(tmp_path, target, tail, source, batch):
    from npufit.placement import clear_memo

    if target == "rk3588":
        from npufit.envs import env_status

        if not env_status("rknn")["installed"]:
            pytest.skip("RKNN-Toolkit2 env is not installed (npufit env install rknn)")
    clear_memo()
    m = _model(tmp_path / "m.onnx", tail, batch)
    rep = npufit.check(m, target)
    assert rep.extra["placement"]["source"] == source
    fig = _figures(rep)
    counts = fig["counts"]
    assert _off(counts) >= 1  # the model has a node off the NPU, so the figures below say something
    if target == "rk3588":  # the prediction alone would count other numbers: the verbs must read the placement
        # if a rule learns this case, pick another measured CPU node the rules do not predict (the sweep record's
        # disagreements list them): without one, this test cannot tell the placement from the prediction
        assert {d["node"] for d in rep.extra["placement"]["disagreements"]} == {"tail"}
        assert _figures(npufit.check(m, target, measure="never"))["counts"] != counts

    fx = npufit.fix(m, target, dry_run=True)
    assert (fx.before.not_npu, fx.before.partitions) == (_off(counts), len(rep.partitions))
    assert round(fx.before.coverage_pct, 2) == fig["coverage_nodes_pct"]

    # every NPU region its own stage: the plan's NPU stages hold exactly the nodes placed on the NPU
    sp = npufit.split(m, target, tmp_path / "plan", mode="segments", min_nodes=1, max_npu_stages=8, verify=False)
    by_device = {"npu": 0, "host": 0}
    for st in sp.plan.stages:
        by_device[st.device] += st.node_count
    assert by_device == {"npu": counts["npu"], "host": _off(counts)}
    assert sp.plan.target["placement"] == rep.extra["placement"]["headline"]

    cmp = npufit.compare([m], target)
    row = cmp.rows[0]
    assert (row["npu_pct"], row["npu_partitions"], row["cpu_partitions"]) == (
        fig["coverage_nodes_pct"],
        fig["npu_partitions"],
        fig["host_partitions"],
    )
    assert row["placement"] == source

    sc = npufit.scan([m], target, executor="inprocess", measure="auto")
    assert sc.rows[0]["counts"] == counts and sc.rows[0]["placement"] == source

    q = tmp_path / "q.onnx"
    qr = npufit.quantize(m, q, samples=4, holdout=0, target=target)
    (cost,) = qr.extra["target_cost"]
    qrep = npufit.check(q, target)
    qfig = _figures(qrep)
    # the cost counts the model's own nodes (its Q/DQ pairs apart) of the same placement a check of the file reads
    assert cost["nodes"] == model_node_counts(qrep)
    assert (cost["npu_partitions"], cost["host_partitions"]) == (qfig["npu_partitions"], qfig["host_partitions"])
    assert cost["placement"] == qrep.extra["placement"]["headline"]

    if source == "measured":  # a compiler runs here: the compile verb's own placement is the same
        res = npufit.compile(m, target, out_dir=tmp_path / "compiled", compare_prediction=True)
        assert res.ok, res.error
        s = res.summary()
        assert (s["npu"], s["cpu"], s["folded"]) == (counts["npu"], _off(counts), counts["folded"])
        assert res.comparison.scores()["compiler_cpu_nodes"] == s["cpu"]

    y = tmp_path / "p.yaml"
    y.write_text(
        f"version: 1\nname: agree\nmodels:\n  - name: m\n    onnx: m.onnx\ntargets: [{target}]\n"
        "steps:\n  export: {}\n  check: {}\n"
    )
    npufit.pipeline(y, output_dir=tmp_path / "run")
    import json

    step = json.loads(next((tmp_path / "run").rglob("check.json")).read_text())
    from npufit.pipeline.steps import pipeline_judge

    judged = npufit.check(m, target, judge=pipeline_judge(target))  # the pipeline judges as its compile step builds
    assert step["summary"]["counts"] == _figures(judged)["counts"]
    assert step["placement"]["source"] == source

    # the report of that run shows the same figures and says whose placement they are
    from html import escape

    from npufit.report import report

    page = report(tmp_path / "run", tmp_path / "report.html").read_text()
    sf = step["summary"]
    assert f"{sf['coverage_nodes_pct']:.1f}%" in page
    assert escape(step["placement"]["headline"]) in page

"""split's cost model on Hailo: each NPU stage is a network group of its own, so the default plan holds one NPU stage
unless a second pays by a safe margin; the figures and their sources are stated; --max-npu-stages allows more."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import npufit
from npufit.cli import main
from npufit.split.chain import ChainRunner
from npufit.split.cost import GENERIC, CostModel
from npufit.targets import get_profile
from npufit.verify.compare import make_session, random_inputs, run_onnx


def _island_detector(path, tail_ch: int, tail_hw: int, body_ch: int = 16):
    """conv body (NPU) -> Cos (a host-only op on Hailo) -> conv tail (NPU): a host island in the middle. The tail's
    size decides whether a second NPU stage pays."""
    rng = np.random.default_rng(0)
    inits, nodes = [], []

    def conv(name, x, cin, cout, stride=1):
        w = numpy_helper.from_array((rng.standard_normal((cout, cin, 3, 3)) * 0.1).astype(np.float32), f"{name}.w")
        inits.append(w)
        nodes.append(
            helper.make_node("Conv", [x, w.name], [f"{name}_c"], name=name, pads=[1] * 4, strides=[stride] * 2)
        )
        nodes.append(helper.make_node("Relu", [f"{name}_c"], [f"{name}_o"], name=f"{name}_relu"))
        return f"{name}_o"

    h = conv("b1", "x", 3, body_ch)
    h = conv("b1b", h, body_ch, body_ch)  # 37.7 MMAC at 16 channels: the body holds most of the small model's work
    h = conv("b1c", h, body_ch, body_ch)
    h = conv("b2", h, body_ch, tail_ch, stride=128 // tail_hw)
    nodes.append(helper.make_node("Cos", [h], ["island"], name="island"))
    h = conv("t1", "island", tail_ch, tail_ch)
    h = conv("t2", h, tail_ch, tail_ch)
    nodes.append(helper.make_node("Identity", [h], ["y"], name="out"))
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 128, 128])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, tail_ch, tail_hw, tail_hw])],
        inits,
    )
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def test_host_island_in_the_middle_gets_one_npu_stage_by_default(tmp_path):
    # tail: 2 x 9.4 MMAC, ~1.9 ms on the host against two switches between network groups (2 x 3.4 ms)
    model = _island_detector(tmp_path / "det.onnx", 16, 64)
    res = npufit.split(model, "hailo8", tmp_path / "plan")
    npu = [s for s in res.plan.stages if s.device == "npu"]
    assert len(npu) == 1 and res.plan.stages[0].device == "npu"
    two = [c for c in res.candidates if c.npu_stages == 2]
    assert two, "the two-NPU-stage cut is still ranked, with its cost"
    assert "no cut with more than 1 NPU stage(s) ranks above it" in res.why
    assert two[0].cost["est_ms"] > res.chosen.cost["est_ms"] + 6.8 - 2.0  # two switches charged, ~1.9 ms host saved
    d = res.to_dict()
    assert "3.4 ms per NPU stage" in d["ranking"]
    assert any(c["select"].startswith("--mode segments") for c in d["candidates"] if c["npu_stages"] == 2)
    # the generic figures (no switch cost) would have taken the two-stage cut: the Hailo figures decide here
    generic = CostModel(dict(GENERIC))
    host = lambda c: c.cost["total_macs"] - c.cost["npu_macs"]  # noqa: E731
    est = {
        id(c): generic.estimate_ms(
            host(c), c.cost["npu_macs"], c.cost["boundaries"], c.cost["bytes_crossing"], c.npu_stages
        )
        for c in res.candidates
    }
    assert min(res.candidates, key=lambda c: est[id(c)]).npu_stages == 2

    # a higher cap allows more NPU stages, it does not force them: the ranking still decides
    allowed = npufit.split(model, "hailo8", tmp_path / "plan2", max_npu_stages=2, verify=False)
    assert allowed.chosen.signature() == res.chosen.signature() and allowed.plan.options["max_npu_stages"] == 2
    more = npufit.split(model, "hailo8", tmp_path / "plan3", mode="segments", min_nodes=1, max_npu_stages=2)
    assert sum(s.device == "npu" for s in more.plan.stages) == 2 and more.plan.verification["equivalent"]


def test_second_npu_stage_that_pays_by_a_margin_is_taken_and_said(tmp_path):
    # body ~320 MMAC and tail 2 x 151 MMAC, ~30 ms each on the host, a small tensor (256 KiB) crossing at the island:
    # either one on the host costs far more than two switches between network groups
    model = _island_detector(tmp_path / "det.onnx", 256, 16, body_ch=32)
    res = npufit.split(model, "hailo8", tmp_path / "plan", verify=False)
    assert [s.device for s in res.plan.stages] == ["npu", "host", "npu"]
    assert "a second NPU stage pays" in res.why and "6.8 ms instead of 3.4" in res.why
    capped = npufit.split(model, "hailo8", tmp_path / "capped", max_npu_stages=1, verify=False)
    assert sum(s.device == "npu" for s in capped.plan.stages) == 1
    assert "--max-npu-stages 1" in capped.why and "allow it with --max-npu-stages 2" in capped.why


def test_cost_figures_state_their_sources(tmp_path):
    for name in ("hailo8", "hailo8l"):
        cm = CostModel.for_profile(get_profile(name))
        assert cm.max_npu_stages == 1 and cm.figures["ms_per_npu_switch"] > 0
        assert set(cm.sources) == set(GENERIC) | {"max_npu_stages"}
        assert all(s and "generic" not in s for s in cm.sources.values())
    assert (
        CostModel.for_profile(get_profile("hailo8l")).figures["npu_gmacs_per_s"]
        < CostModel.for_profile(get_profile("hailo8")).figures["npu_gmacs_per_s"]
    )
    other = CostModel.for_profile(get_profile("rk3588"))  # a target that states none keeps the generic figures
    assert other.figures == GENERIC and other.max_npu_stages is None
    model = _island_detector(tmp_path / "det.onnx", 16, 64)
    assert (
        main(
            [
                "split",
                str(model),
                "-t",
                "hailo8",
                "-d",
                str(tmp_path / "p"),
                "--no-verify",
                "--format",
                "json",
                "-o",
                str(tmp_path / "s.json"),
            ]
        )
        == 0
    )
    cost = json.loads((tmp_path / "s.json").read_text())["cost_model"]
    assert "Model Zoo" in cost["sources"]["ms_per_npu_switch"] and cost["max_npu_stages"] == 1


def test_profile_with_a_misspelt_cost_figure_is_refused():
    p = get_profile("hailo8")

    class Typo:
        name, split_costs = "x", {"ms_per_npu_swich": 1.0}

    with pytest.raises(ValueError, match="ms_per_npu_swich"):
        CostModel.for_profile(Typo())
    assert CostModel.for_profile(p).target == "hailo8"


def test_max_npu_stages_cli(tmp_path, capsys):
    model = _island_detector(tmp_path / "det.onnx", 16, 64)
    assert main(["split", str(model), "-t", "hailo8", "-d", str(tmp_path / "a"), "--max-npu-stages", "2"]) == 0
    out = capsys.readouterr().out
    assert "NPU stages" in out and "switch to an NPU stage" in out and "source: Hailo Model Zoo" in out
    assert main(["split", str(model), "-t", "hailo8", "-d", str(tmp_path / "b"), "--max-npu-stages", "0"]) == 2
    assert (
        main(
            [
                "split",
                str(model),
                "-t",
                "hailo8",
                "-d",
                str(tmp_path / "c"),
                "--mode",
                "prefix",
                "--max-npu-stages",
                "2",
            ]
        )
        == 2
    )
    assert "applies to the best, auto and segments modes" in capsys.readouterr().err
    # segments: only the region with the most MACs stays on the NPU
    seg = npufit.split(model, "hailo8", tmp_path / "d", mode="segments", min_nodes=1, max_npu_stages=1)
    assert sum(s.device == "npu" for s in seg.plan.stages) == 1 and seg.plan.verification["equivalent"]


def test_pipeline_split_passes_max_npu_stages(tmp_path):
    from npufit.pipeline.steps import call
    from npufit.split import split
    model = _island_detector(tmp_path / "det.onnx", 16, 64)
    res = call(
        "split",
        split,
        str(model),
        target="hailo8",
        output_dir=str(tmp_path / "p"),
        mode="segments",
        min_nodes=1,
        max_npu_stages=1,
        verify=False,
    )
    assert sum(s.device == "npu" for s in res.plan.stages) == 1


def test_lazy_chain_opens_sessions_on_run_and_release_closes_them(tmp_path):
    model = _island_detector(tmp_path / "det.onnx", 16, 64)
    npufit.split(model, "hailo8", tmp_path / "plan", max_npu_stages=2, verify=False)
    chain = ChainRunner(tmp_path / "plan", lazy=True)
    assert chain._steps is None
    feeds = random_inputs(make_session(model), seed=1)[0]
    first, _ = chain.run(feeds)
    chain.release()
    assert chain._steps is None
    again, _ = chain.run(feeds)
    ref = run_onnx(make_session(model), feeds)
    assert np.array_equal(first["y"], ref["y"]) and np.array_equal(again["y"], ref["y"])

"""Typed step results: each step records one dataclass; reading a recorded result back is strict, so a renamed or
missing key is an error naming the step and the key (a stale cache entry is recomputed), never a silent None."""
from __future__ import annotations

import json

import pytest

from npufit.cli import main
from npufit.pipeline.cache import StepRecord
from npufit.pipeline.results import (RESULT_TYPES, BenchStepResult, CheckStepResult, CompileStepResult, ExportStepResult,
                                     FixStepResult, QuantizeStepResult, ReportStepResult, SplitStepResult, StaleResult,
                                     TrainStepResult, parse_result)

# one recorded-looking result per step kind, with the edge values JSON has to carry (None, "-inf", ints for floats)
SAMPLES = {
    "train": TrainStepResult(train_loss=0.25, val_loss=0.5, baseline_val_loss=0.75, epochs=3, parameters=1234, train_seconds=1.5),
    "export": ExportStepResult(nodes=17, bytes=4096),
    "check": CheckStepResult(coverage_nodes_pct=62.5, coverage_macs_pct=99.1, npu_partitions=2, host_partitions=1, boundaries=3,
                             fully_npu=False, failing=4, measured_differing=None),
    "fix": FixStepResult(coverage_before_pct=50.0, coverage_after_pct=75.0, rules_applied=2, written=True),
    "split": SplitStepResult(needed=True, stages=3, npu_macs_pct=88.0, split_s=0.42),
    "quantize": QuantizeStepResult(min_output_sqnr_db="-inf", min_output_cosine=0.25, calibration_samples=64, holdout_samples=255,
                                   max_clipped_fraction=0.01, worst_layer="conv1_out"),
    "compile": CompileStepResult(compiler="vela", compiler_version="5.2.0", model_bytes=9000, wall_s=1.25, peak_rss_mb=300.5,
                                 pipeline_wall_s=1.5, pipeline_peak_rss_mb=310.0, npu_nodes=5, placed_nodes=6),
    "bench": BenchStepResult(runtime="ort-cpu", p50_ms=0.125, p99_ms=0.5, mean_ms=0.2, throughput_ips=None, iterations=200),
    "report": ReportStepResult(bytes=123456),
}


def test_every_step_kind_has_a_sample():
    assert set(SAMPLES) == set(RESULT_TYPES)


@pytest.mark.parametrize("step", list(SAMPLES))
def test_round_trip_through_json(step):
    r = SAMPLES[step]
    back = parse_result(step, "ok", json.loads(json.dumps(r.to_dict())), "step.json")
    assert type(back) is RESULT_TYPES[step] and back == r


@pytest.mark.parametrize("step", list(SAMPLES))
def test_a_renamed_key_is_an_error_naming_step_and_both_keys(step):
    d = SAMPLES[step].to_dict()
    first = next(iter(d))
    d[first + "_renamed"] = d.pop(first)
    with pytest.raises(StaleResult) as e:
        RESULT_TYPES[step].from_dict(d, "x/step.json")
    msg = e.value.message
    assert msg.startswith("x/step.json: ") and f"step '{step}'" in msg and f"missing key(s) '{first}'" in msg
    assert f"unknown key(s) '{first}_renamed'" in msg


def test_wrong_type_and_result_of_a_failed_cell_are_errors():
    d = SAMPLES["check"].to_dict() | {"failing": "4"}
    with pytest.raises(StaleResult, match=r"step 'check': recorded result key 'failing' has the wrong type \(str"):
        CheckStepResult.from_dict(d)
    with pytest.raises(StaleResult, match="'fully_npu' has the wrong type"):  # a count is not a flag, nor a flag a count
        CheckStepResult.from_dict(SAMPLES["check"].to_dict() | {"fully_npu": 0})
    assert parse_result("check", "failed", {}) is None  # no result for a cell that did not end ok ...
    with pytest.raises(StaleResult, match="ended rejected but records a result"):
        parse_result("check", "rejected", SAMPLES["check"].to_dict())  # ... and none may be recorded


# -- recorded results of a real run ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny_once(tmp_path_factory):
    """One real run per module (the slow part); tests never touch its folder."""
    pytest.importorskip("torch")
    from npufit.pipeline import run_pipeline

    from .pipeline_helpers import write_tiny

    folder = tmp_path_factory.mktemp("results")
    run = run_pipeline(write_tiny(folder, extra_steps=""), output_dir=folder / "out", quiet=True)
    assert run.ok
    return folder, run


@pytest.fixture
def tiny(tiny_once, tmp_path):
    """Each test's own copy of that run (one test renames keys in its records and re-runs it)."""
    from .pipeline_helpers import private_copy

    folder = private_copy(tiny_once[0], tmp_path)
    run = tiny_once[1]
    return folder, folder / "tiny.yaml", run


def test_steps_record_their_typed_result_and_read_it_back(tiny):
    folder, _, run = tiny
    for r in run.results:
        assert type(r.record.result) is RESULT_TYPES[r.cell.step], r.cell.id
        again = StepRecord.read(folder / "out" / r.cell.folder, folder / "out")[0]  # in this test's copy
        assert again is not None and again.result == r.record.result
    check = run.result("check/gru/hailo8").record.result
    assert 0 <= check.coverage_nodes_pct < 100 and check.failing > 0 and check.measured_differing is None
    manifest = json.loads((folder / "out/pipeline.json").read_text())
    assert {c["cell"]: c["metrics"] for c in manifest["cells"]} == {r.cell.id: r.record.result.to_dict() for r in run.results}


def test_report_renders_the_typed_results(tiny):
    from npufit.report.html_results import Results, render_results_html

    folder, _, _ = tiny
    r = Results(folder / "out")
    check, export = r.result("check/gru/hailo8"), r.result("export/gru")
    assert isinstance(check, CheckStepResult) and isinstance(export, ExportStepResult)
    html = render_results_html(folder / "out")
    assert f"{check.coverage_nodes_pct:.0f}% nodes / {check.coverage_macs_pct:.0f}% MACs" in html
    assert f"{export.nodes} ONNX nodes" in html and f"{check.npu_partitions} / {check.host_partitions}" in html
    train = r.result("train/tcn")
    assert isinstance(train, TrainStepResult) and f"<td>tcn</td><td>tcn</td><td class=\"num\">{train.epochs}</td>" in html
    assert f"{train.val_loss:.5f}" in html


def _rename_in(path, old: str, new: str, key: str = "metrics") -> None:
    d = json.loads(path.read_text())
    cells = d["cells"] if "cells" in d else [d]
    for c in cells:
        if old in c[key]:
            c[key][new] = c[key].pop(old)
    path.write_text(json.dumps(d))


def test_stale_cached_result_is_recomputed_or_named(tiny, capsys):
    from npufit.pipeline import run_pipeline

    folder, yaml_path, _ = tiny
    out = folder / "out"
    record = out / "gru/hailo8/check/step.json"
    _rename_in(record, "failing", "failing_nodes")  # as if an older npufit had called the key otherwise
    rec, why = StepRecord.read(record.parent, out)
    assert rec is None and "step 'check'" in why and "'failing'" in why and "'failing_nodes'" in why
    # a cell that may not run (--only another step) cannot use it, and says which step and key
    run = run_pipeline(yaml_path, output_dir=out, quiet=True, only="report")
    kept = run.result("check/gru/hailo8")
    assert kept.action == "failed" and "step 'check'" in kept.record.message and "missing key(s) 'failing'" in kept.record.message
    # a cell that may run recomputes it; the other cells stay cached
    run = run_pipeline(yaml_path, output_dir=out, quiet=True)
    acts = {r.cell.id: r.action for r in run.results}
    assert acts["check/gru/hailo8"] == "ran" and acts["check/tcn/hailo8"] == acts["export/gru"] == "cached"
    assert run.result("check/gru/hailo8").record.result.failing > 0

    # the report reads pipeline.json as strictly: a renamed key there is one line naming the cell, step and key
    _rename_in(out / "pipeline.json", "npu_partitions", "npu_parts")
    capsys.readouterr()
    assert main(["report", str(out), "-o", str(folder / "r.html")]) == 2
    err = capsys.readouterr().err.strip()
    assert "cell check/gru/hailo8" in err and "step 'check'" in err and "missing key(s) 'npu_partitions'" in err
    assert len(err.splitlines()) == 1 and not (folder / "r.html").exists()

"""Pipeline runs: caching by content hash, per-branch re-runs, failures contained to their branch."""
from __future__ import annotations

import json
import os

import pytest

pytest.importorskip("torch")

from npufit.cli import main
from npufit.pipeline import run_pipeline
from npufit.pipeline.measure import measure

from .pipeline_helpers import conv_relu_onnx, private_copy, write_tiny


def _actions(run) -> dict[str, str]:
    return {r.cell.id: r.action for r in run.results}


@pytest.fixture(scope="module")
def tiny_once(tmp_path_factory):
    """One run of the tiny pipeline per module (the slow part); tests never touch its folder."""
    folder = tmp_path_factory.mktemp("tiny")
    first = run_pipeline(write_tiny(folder), output_dir=folder / "out", quiet=True)
    return folder, first


@pytest.fixture
def tiny(tiny_once, tmp_path):
    """Each test's own copy of that run: it may change models, re-run or tamper, in any order."""
    folder = private_copy(tiny_once[0], tmp_path)
    return folder, folder / "tiny.yaml", tiny_once[1]


def test_first_run_does_every_step_and_records_results(tiny):
    folder, _, first = tiny
    acts = _actions(first)
    assert set(acts.values()) == {"ran"}, acts
    assert list(acts) == ["train/gru", "train/tcn", "export/gru", "export/tcn", "check/gru/hailo8", "check/tcn/hailo8",
                          "bench/gru/ort-cpu", "bench/tcn/ort-cpu", "report"]
    hist = json.loads((folder / "out/gru/train/train.json").read_text())
    assert hist["schema"] == "npufit.train/1" and len(hist["history"]) == 1
    assert {"train_loss", "val_loss"} <= set(hist["history"][0])
    check = json.loads((folder / "out/gru/hailo8/check/check.json").read_text())
    assert check["schema"] == "npufit.check/2" and check["summary"]["counts"]["npu"] < check["summary"]["nodes_total"]
    manifest = json.loads((folder / "out/pipeline.json").read_text())
    assert manifest["schema"] == "npufit.pipeline-run/1" and len(manifest["cells"]) == 9
    assert (folder / "out/report.html").stat().st_size > 10_000


def test_second_run_does_no_work_and_says_so(tiny, capsys):
    folder, yaml_path, _ = tiny
    before = {p: p.stat().st_mtime_ns for p in (folder / "out").rglob("*") if p.is_file() and p.name != "pipeline.json"}
    rc = main(["pipeline", "run", str(yaml_path), "--output-dir", str(folder / "out")])
    cap = capsys.readouterr()
    assert rc == 0
    assert "nothing to do: all 9 steps are up to date" in cap.err
    assert cap.err.count("up to date (same inputs and settings), not re-run") == 9
    assert "9 cached" in cap.out
    after = {p: p.stat().st_mtime_ns for p in before}
    assert after == before  # not one output file rewritten


def test_changing_one_model_reruns_only_its_branch(tiny):
    folder, yaml_path, _ = tiny
    write_tiny(folder, tcn_hidden=6)  # only the tcn model changes
    run = run_pipeline(yaml_path, output_dir=folder / "out", quiet=True)
    acts = _actions(run)
    assert {k for k, v in acts.items() if v == "ran"} == {"train/tcn", "export/tcn", "check/tcn/hailo8", "bench/tcn/ort-cpu", "report"}
    assert {k for k, v in acts.items() if v == "cached"} == {"train/gru", "export/gru", "check/gru/hailo8", "bench/gru/ort-cpu"}
    # --only / --from restrict what may run; --force ignores the cache for those
    run = run_pipeline(yaml_path, output_dir=folder / "out", quiet=True, only="check", force=True)
    acts = _actions(run)
    assert acts["check/gru/hailo8"] == acts["check/tcn/hailo8"] == "ran"
    assert acts["train/gru"] == acts["bench/tcn/ort-cpu"] == acts["report"] == "kept"
    run = run_pipeline(yaml_path, output_dir=folder / "out", quiet=True, from_step="bench")
    acts = _actions(run)
    assert acts["check/gru/hailo8"] == "kept" and acts["bench/gru/ort-cpu"] == "cached"


def test_tampered_output_is_detected(tiny):
    folder, yaml_path, _ = tiny
    run_pipeline(yaml_path, output_dir=folder / "out", quiet=True)
    check_json = folder / "out/gru/hailo8/check/check.json"
    check_json.write_text(check_json.read_text().replace('"npu"', '"cpu"', 1))
    run = run_pipeline(yaml_path, output_dir=folder / "out", quiet=True)
    assert _actions(run)["check/gru/hailo8"] == "ran"
    assert json.loads(check_json.read_text())["schema"] == "npufit.check/2"


def test_failing_step_stops_only_its_branch(tmp_path):
    bad = tmp_path / "broken.onnx"
    bad.write_bytes(b"this is not a protobuf at all")
    good = conv_relu_onnx(tmp_path / "convnet.onnx")
    yaml_path = write_tiny(tmp_path, extra_models=f"  - {{name: broken, onnx: {bad.name}}}\n  - {{name: convnet, onnx: {good.name}}}\n",
                           extra_steps="  split: {}\n  compile: {}\n")
    run = run_pipeline(yaml_path, output_dir=tmp_path / "out", quiet=True)
    acts = _actions(run)
    failed = run.result("export/broken").record
    assert failed.status == "failed" and "not a valid ONNX model" in failed.message, failed.message
    for step in ("check", "split", "compile"):
        assert run.result(f"{step}/broken/hailo8").record.message == "skipped: blocked by export/broken (failed)"
    assert acts["check/convnet/hailo8"] == acts["check/gru/hailo8"] == acts["check/tcn/hailo8"] == "ran"
    # a whole-NPU model needs no split; the Hailo DFC is not installable here: compile is skipped, with the reason
    split = run.result("split/convnet/hailo8").record
    assert split.status == "ok" and split.message.startswith("not needed")
    comp = run.result("compile/convnet/hailo8").record
    assert comp.status == "skipped" and "not installed" in comp.message, comp.message
    assert acts["report"] == "ran" and not run.ok
    assert not bad.read_bytes().startswith(b"\x08")  # the user's file was only read
    # the CLI exits 1 when a branch failed, after printing the summary with the reason
    assert main(["pipeline", "run", str(yaml_path), "--output-dir", str(tmp_path / "out"), "-q", "-f", "markdown"]) == 1


def test_measure_sees_wall_time_and_memory():
    import time

    import numpy as np

    with measure() as usage:
        t0 = time.perf_counter()
        block = np.ones(200 * 2**20 // 8)  # 200 MiB, touched
        # held until the sampler has seen it (however long a loaded machine takes to run the sampler thread), not for
        # a fixed time: a sleep the sampler never woke up in would let the block come and go unseen
        waited = 0
        while usage.peak_rss_bytes - usage.baseline_rss_bytes <= 150 * 2**20 and waited < 6000:
            time.sleep(0.01)
            waited += 1
        inside = time.perf_counter() - t0
        del block
    assert usage.wall_s >= inside  # the measured block contains everything timed inside it
    assert usage.added_rss_bytes > 150 * 2**20


def test_bad_yaml_at_the_cli_is_one_line(tmp_path, capsys):
    p = write_tiny(tmp_path)
    p.write_text(p.read_text().replace("epochs: 1", "epochs: one"))
    assert main(["pipeline", "run", str(p), "--output-dir", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "tiny.yaml:10:19:" in err[0] and "steps.train.epochs: expected an integer" in err[0]
    assert not os.path.exists(tmp_path / "out")


def test_cells_of_a_step_run_side_by_side_on_a_process_pool(tmp_path):
    """The same tiny pipeline in-process and on 2 pool workers: the same cells, statuses and check results."""
    yaml_path = write_tiny(tmp_path, extra_steps="")
    here = run_pipeline(yaml_path, output_dir=tmp_path / "inproc", quiet=True)
    pooled = run_pipeline(yaml_path, output_dir=tmp_path / "pool", quiet=True, executor="pool", jobs=2)
    assert [r.cell.id for r in pooled.results] == [r.cell.id for r in here.results]
    assert [(r.action, r.record.status) for r in pooled.results] == [(r.action, r.record.status) for r in here.results]
    assert all(r.record.status == "ok" for r in pooled.results)
    checks = lambda run: {r.cell.id: r.record.result for r in run.results if r.cell.step == "check"}  # noqa: E731
    assert checks(pooled) == checks(here) and checks(here)
    assert (tmp_path / "pool" / "pipeline.json").is_file()

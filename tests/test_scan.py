"""npufit scan: a zoo x targets, one row each; the same rows on every executor; cache; error rows; formats; CI gate."""
from __future__ import annotations

import csv
import io
import json
import subprocess
import sys

import onnx
import pytest

from npufit.executors import Task, get_executor
from npufit.scan import scan
from tests.onnx_builders import write_zoo, zoo_model

TARGETS = "hailo8,rk3588,ethos-u55-128,ethos-n78"


def _comparable(report) -> dict:
    d = report.to_dict()
    d.pop("run")  # executor name, workers, seconds: the only part allowed to differ
    return d


@pytest.fixture(scope="module")
def zoo(tmp_path_factory):
    root = tmp_path_factory.mktemp("zoo")
    write_zoo(root, 50)
    return root


@pytest.fixture(scope="module")
def local_ray():
    """A local Ray cluster with 2 CPUs and an `rknn` resource tag, shared by the Ray tests of this module."""
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'npufit[ray]')")
    ray.init(num_cpus=2, resources={"rknn": 1}, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield ray
    ray.shutdown()


def test_scan_rows_are_identical_on_every_executor(zoo, local_ray):
    base = scan([zoo], TARGETS, executor="inprocess")
    assert len(base.rows) == 50 * 4 and base.run["checked"] == 50
    assert all(r["status"] == "ok" for r in base.rows)
    # the zoo is varied: otherwise equal results across executors would prove little
    assert len({r["coverage_nodes_pct"] for r in base.rows}) > 5 and any(r["top_reasons"] for r in base.rows)
    pool = scan([zoo], TARGETS, executor="pool", jobs=2)
    ray = scan([zoo], TARGETS, executor="ray", jobs=2)
    assert (pool.run["executor"], ray.run["executor"]) == ("pool", "ray")
    assert _comparable(pool) == _comparable(base)
    assert _comparable(ray) == _comparable(base)


def test_ray_tasks_go_only_where_their_resource_is(local_ray):
    with get_executor("ray", 2) as ex:
        out = ex.map([Task("math:sqrt", 16.0, resources={"rknn": 1}), Task("math:sqrt", 9.0, resources={"hailo_dfc": 1}),
                      Task("math:sqrt", -1.0)], timeout=60)
    assert out[0].ok and out[0].value == 4.0
    assert out[1].status == "error" and "hailo_dfc" in out[1].error
    assert out[2].status == "error" and "ValueError" in out[2].error


def test_cache_skips_unchanged_models_and_rechecks_a_changed_one(tmp_path):
    paths = write_zoo(tmp_path / "zoo", 6)
    cache = tmp_path / "scan-cache.json"
    first = scan([tmp_path / "zoo"], "hailo8,rk3588", executor="inprocess", cache=cache)
    assert first.run["checked"] == 6 and cache.is_file()
    # size and mtime of every file are kept with its hash: an unchanged file is not read again
    assert json.loads(cache.read_text())["files"][str(paths[0])][2] == first.rows[0]["sha256"]
    again = scan([tmp_path / "zoo"], "hailo8,rk3588", executor="inprocess", cache=cache)
    assert again.run["checked"] == 0 and again.run["from_cache"] == 6 and all(r["cached"] for r in again.rows)
    strip = lambda rows: [{k: v for k, v in r.items() if k != "cached"} for r in rows]  # noqa: E731
    assert strip(again.rows) == strip(first.rows)
    onnx.save_model(zoo_model(17), str(paths[2]))  # model 2 changes: only it is checked again
    third = scan([tmp_path / "zoo"], "hailo8,rk3588", executor="inprocess", cache=cache)
    assert third.run["checked"] == 1
    changed = [r for r in third.rows if r["model"] == str(paths[2])]
    assert not changed[0]["cached"] and changed[0]["sha256"] != first.rows[4]["sha256"]
    # a wider target list needs checks the cache does not hold
    wider = scan([tmp_path / "zoo"], "hailo8,rk3588,ethos-n78", executor="inprocess", cache=cache)
    assert wider.run["checked"] == 6


def test_manifest_glob_bad_file_and_formats(tmp_path):
    paths = write_zoo(tmp_path / "zoo", 4)
    (tmp_path / "zoo" / "broken.onnx").write_bytes(b"this is not a protobuf")
    manifest = tmp_path / "models.txt"
    manifest.write_text(f"# two models and a broken one\n{paths[0].relative_to(tmp_path)}\nzoo/family_1/*.onnx\nzoo/broken.onnx\n")
    rep = scan([manifest], "hailo8", executor="inprocess")
    models = [r["model"] for r in rep.rows]
    assert models == sorted(models) and len(models) == 3
    broken = [r for r in rep.rows if r["model"].endswith("broken.onnx")][0]
    assert broken["status"] == "error" and "not a valid ONNX model" in broken["error"]
    lines = rep.render("jsonl").splitlines()
    assert [json.loads(x)["model"] for x in lines] == models
    rows = list(csv.DictReader(io.StringIO(rep.render("csv"))))
    assert [r["status"] for r in rows].count("error") == 1 and all(r["coverage_nodes_pct"] != "" for r in rows if r["status"] == "ok")
    html = rep.render("html")
    assert html.startswith("<!DOCTYPE html>") and html.count("<tr>") == 4 and "broken.onnx" in html
    assert "broken.onnx" in rep.render("table")


def test_cli_scan_fail_under_gate_and_bad_input(tmp_path):
    write_zoo(tmp_path / "zoo", 3)
    out = tmp_path / "rows.jsonl"
    cmd = [sys.executable, "-m", "npufit", "scan", str(tmp_path / "zoo"), "-t", "hailo8", "--executor", "inprocess"]
    ok = subprocess.run(cmd + ["-f", "jsonl", "-o", str(out), "--fail-under", "0"], capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0, ok.stderr
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(rows) == 3
    gate = subprocess.run(cmd + ["--fail-under", "100.1"], capture_output=True, text=True, timeout=300)
    assert gate.returncode == 1 and "below --fail-under" in gate.stderr
    bad = subprocess.run([sys.executable, "-m", "npufit", "scan", str(tmp_path / "nowhere")], capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "no such file or folder" in bad.stderr

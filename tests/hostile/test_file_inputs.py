"""Hostile file inputs (hostile-input issue, parts 2-3 for every non-model file) through the real CLI.

Each case builds a small hostile file (a tampered plan.json, a FIFO or device where a file is expected, a
zip-bomb .npz, a YAML alias bomb, deeply nested JSON/YAML, a tampered results folder, a bad number on the
command line), runs one verb under the harness' memory and time caps and asserts: exit 2 with one line (or a
correct result), the inputs byte-identical, nothing created outside the output, no temp files left, and a
peak resident memory far below the cap."""
from __future__ import annotations

import io
import json
import os
import zipfile
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from .harness import assert_sane, assert_untouched, run_verb, snapshot

PEAK_MB = 1024  # the goal for every hostile case
SHAPE = [1, 3, 8, 8]


def _model(path: Path) -> Path:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, SHAPE)
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"), helper.make_node("Sigmoid", ["r"], ["y"], name="sig")]
    m = helper.make_model(helper.make_graph(nodes, "g", [x], [y]), opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(m, str(path))
    return path


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    """A model, a split plan of it and a valid input .npz, made once and copied into each case's folder."""
    d = tmp_path_factory.mktemp("hostile-files")
    model = _model(d / "m.onnx")
    from npufit.split import split

    split(str(model), "hailo8", output_dir=str(d / "plan"), verify=False)
    np.savez(d / "x.npz", x=np.ones(SHAPE, np.float32))
    return d


def _case(base: Path, tmp: Path) -> Path:
    import shutil

    for p in base.iterdir():
        (shutil.copytree if p.is_dir() else shutil.copy2)(p, tmp / p.name)
    return tmp


def _run(tmp: Path, argv: list, allowed_new: tuple[str, ...] = (), needle: str | None = None, allow_ok: bool = False):
    before = snapshot(tmp)
    o = run_verb(argv, tmp)
    assert_sane(o, allow_ok=allow_ok, needle=needle)
    assert_untouched(before, tmp, allowed_new=allowed_new)
    assert o.peak_rss_mb < PEAK_MB, o.describe()
    return o


def _edit_plan(tmp: Path, edit) -> None:
    f = tmp / "plan" / "plan.json"
    d = json.loads(f.read_text())
    edit(d)
    f.write_text(json.dumps(d))


# -- plan.json: every verb that reads one refuses a tampered plan in one line --------------------------------------
def _stage(d):
    return d["stages"][0]


TAMPERED_PLANS = {
    "wrong schema": (lambda d: d.update(schema="npufit.plan/999"), "schema"),
    "stage outside (..)": (lambda d: _stage(d).update(file="../m.onnx"), "outside"),
    "stage absolute": (lambda d: _stage(d).update(file="/etc/passwd"), "absolute"),
    "stage not a string": (lambda d: _stage(d).update(file=7), "stage"),
    "stages not a list": (lambda d: d.update(stages={"a": 1}), "stages"),
    "no stage": (lambda d: d.update(stages=[]), "no stage"),
    "device unknown": (lambda d: _stage(d).update(device="gpu"), "device"),
    "unfed input": (lambda d: _stage(d)["inputs"][0].update(name="nowhere"), "nowhere"),
    "output from nowhere": (lambda d: d["outputs"][0].update(name="ghost"), "ghost"),
    "negative macs": (lambda d: _stage(d).update(macs=-1), "macs"),
    "top level a list": (lambda d: (d.clear(), d.update({"schema": "npufit.plan/1"})), "missing"),
}


@pytest.mark.parametrize("case", list(TAMPERED_PLANS))
def test_run_refuses_a_tampered_plan(base, tmp_path, case):
    tmp = _case(base, tmp_path)
    edit, needle = TAMPERED_PLANS[case]
    _edit_plan(tmp, edit)
    _run(tmp, ["run", "plan", "--inputs", "x.npz"], needle=needle)


def test_deep_json_plan_is_one_line(base, tmp_path):
    tmp = _case(base, tmp_path)
    (tmp / "plan" / "plan.json").write_text("[" * 200_000 + "]" * 200_000)
    _run(tmp, ["run", "plan", "--inputs", "x.npz"], needle="nests")


@pytest.mark.parametrize("verb", ["compile", "bench"])
def test_compile_and_bench_refuse_a_plan_with_outside_stage_paths(base, tmp_path, verb):
    tmp = _case(base, tmp_path)
    _edit_plan(tmp, lambda d: _stage(d).update(file="../m.onnx"))
    argv = (["compile", "m.onnx", "-t", "hailo8", "--plan", "plan/plan.json", "--out-dir", "out"] if verb == "compile"
            else ["bench", "plan", "--runtime", "chain", "-n", "2", "--warmup", "0"])
    _run(tmp, argv, needle="outside")


def test_compile_refuses_a_plan_of_the_wrong_schema(base, tmp_path):
    tmp = _case(base, tmp_path)
    (tmp / "other.json").write_text(json.dumps({"schema": "npufit.bench/1", "results": []}))
    _run(tmp, ["compile", "m.onnx", "-t", "hailo8", "--plan", "other.json", "--out-dir", "out"], needle="schema")


# -- FIFOs and devices where a file is read: refused at once, never opened ------------------------------------------
def _fifo(p: Path) -> None:
    os.mkfifo(p)


def _devzero(p: Path) -> None:
    p.symlink_to("/dev/zero")


SPECIAL_FILES = {
    "plan.json fifo": ("plan/plan.json", ["run", "plan", "--inputs", "x.npz"]),
    "stage fifo": ("plan/stage0_npu.onnx", ["run", "plan", "--inputs", "x.npz"]),
    "npz fifo (run --inputs)": ("in.npz", ["run", "plan", "--inputs", "in.npz"]),
    "npz fifo (quantize -c)": ("cal.npz", ["quantize", "m.onnx", "-o", "q.onnx", "-c", "cal.npz"]),
    "record fifo (probe --replay)": ("rec.json", ["probe", "--replay", "rec.json"]),
    "yaml fifo": ("p.yaml", ["pipeline", "validate", "p.yaml"]),
    "bench result fifo": ("b.json", ["bench", "--compare", "b.json"]),
}


@pytest.mark.parametrize("case", list(SPECIAL_FILES))
@pytest.mark.parametrize("make", [_fifo, _devzero], ids=["fifo", "devzero"])
def test_fifos_and_devices_are_refused_not_read(base, tmp_path, case, make):
    tmp = _case(base, tmp_path)
    rel, argv = SPECIAL_FILES[case]
    target = tmp / rel
    if target.exists():
        target.unlink()
    make(target)
    # a stage linked to /dev/zero is first of all outside the plan folder
    _run(tmp, argv, needle="outside" if make is _devzero and rel.startswith("plan/stage") else "not a")


# -- .npz / .npy: header-checked, never unpickled, only the samples used are read ----------------------------------
def _npy_member(z: zipfile.ZipFile, name: str, shape: tuple, data_bytes: int, dtype: str = "<f4") -> None:
    hdr = io.BytesIO()
    np.lib.format.write_array_header_1_0(hdr, {"descr": dtype, "fortran_order": False, "shape": shape})
    with z.open(name, "w", force_zip64=True) as f:
        f.write(hdr.getvalue())
        block = bytes(1 << 22)
        for _ in range(data_bytes // len(block)):
            f.write(block)


def test_zip_bomb_npz_costs_only_the_samples_used(base, tmp_path):
    tmp = _case(base, tmp_path)
    # 3.1 GB of float32 samples declared; 128 MiB of zeros really stored (compressed to ~130 KB); 110 samples read
    n = 4_000_000
    with zipfile.ZipFile(tmp / "bomb.npz", "w", zipfile.ZIP_DEFLATED) as z:
        _npy_member(z, "x.npy", (n, *SHAPE), 128 << 20)
    assert (tmp / "bomb.npz").stat().st_size < 1 << 20
    o = _run(tmp, ["quantize", "m.onnx", "-o", "q.onnx", "-c", "bomb.npz", "--format", "json"], allowed_new=("q.onnx",),
             allow_ok=True)
    # samples are spread over the stored set, so the file is read past what it really holds: a clean refusal that
    # names the truncation, at a few tens of MB, never the declared 3.1 GB
    assert o.rc == 2 and "truncated" in o.stderr, o.describe()
    assert o.peak_rss_mb < 1024


def test_npz_declaring_a_huge_sample_is_refused_before_reading(base, tmp_path):
    tmp = _case(base, tmp_path)
    with zipfile.ZipFile(tmp / "huge.npz", "w", zipfile.ZIP_DEFLATED) as z:
        _npy_member(z, "x.npy", (1, 3, 40_000, 40_000), 1 << 22)  # 19 GB declared for one sample
    _run(tmp, ["run", "plan", "--inputs", "huge.npz"], needle="MiB")


def test_object_arrays_are_never_unpickled(base, tmp_path):
    tmp = _case(base, tmp_path)
    np.save(tmp / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    _run(tmp, ["quantize", "m.onnx", "-o", "q.onnx", "-c", "obj.npy"], needle="unpickle")


# -- YAML and JSON bombs ----------------------------------------------------------------------------------------------
ALIAS_BOMB = "".join([
    'a: &a ["x","x","x","x","x","x","x","x","x"]\n',
    *[f"{c}: &{c} [{','.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi")],
])


@pytest.mark.parametrize("text,needle", [
    (ALIAS_BOMB, "values"),
    ("version: 1\nx: " + "[" * 50_000 + "]" * 50_000 + "\n", "nests"),
    ("version: 1\nx: " + "{a: " * 50_000 + "1" + "}" * 50_000 + "\n", "nests"),
    ("version: 1\n" + "".join(f"k{i}: &a{i} {i}\n" for i in range(120)) + "y: [" + ",".join(f"*a{i}" for i in range(120)) + "]\n",
     "aliases"),
], ids=["alias-bomb", "deep-flow-list", "deep-flow-map", "many-aliases"])
def test_yaml_bombs_are_one_line(tmp_path, text, needle):
    (tmp_path / "p.yaml").write_text(text)
    _run(tmp_path, ["pipeline", "validate", "p.yaml"], needle=needle)


def _pipeline(models: int, targets: list[str], report_output: str = "report.html") -> str:
    lines = ["version: 1", "models:"] + [f"  - {{name: m{i}, onnx: m.onnx}}" for i in range(models)]
    lines += ["targets: [" + ", ".join(targets) + "]", "steps:", "  export: {}", "  check: {}",
              f"  report: {{output: {json.dumps(report_output)}}}"]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("text,needle", [
    (_pipeline(1, ["hailo8"], "/tmp/evil.html"), "inside the results folder"),
    (_pipeline(1, ["hailo8"], "../evil.html"), "inside the results folder"),
    (_pipeline(1, ["hailo8"] * 1000), "at most"),
    (_pipeline(1000, ["hailo8"]), "at most"),
    (_pipeline(1, ["hailo8", "HAILO8"]), "listed twice"),
], ids=["report-absolute", "report-dotdot", "1000-targets", "1000-models", "repeated-target"])
def test_pipeline_bounds_and_report_output_confined(base, tmp_path, text, needle):
    tmp = _case(base, tmp_path)
    (tmp / "p.yaml").write_text(text)
    _run(tmp, ["pipeline", "validate", "p.yaml"], needle=needle)


# -- report: a tampered results folder never makes it read or embed outside the folder ------------------------------
def _results(tmp: Path, outputs: dict[str, str], pngs: dict[str, str] | None = None) -> Path:
    root = tmp / "results"
    cell = root / "check" / "m" / "hailo8"
    cell.mkdir(parents=True)
    for name, target in (pngs or {}).items():
        (cell / name).symlink_to(target)
    from npufit.pipeline.results import BenchStepResult, CheckStepResult

    check = CheckStepResult(50.0, 50.0, 1, 1, 1, False, 1, None).to_dict()  # well-formed results: only the paths are hostile
    bench = BenchStepResult("ort-cpu", 1.0, 1.0, 1.0, 1000.0, 5).to_dict()
    cells = [{"cell": "check/m/hailo8", "step": "check", "model": "m", "target": "hailo8", "runtime": None,
              "folder": "check/m/hailo8", "action": "ran", "status": "ok", "message": "", "metrics": check, "outputs": outputs},
             {"cell": "bench/m/ort-cpu", "step": "bench", "model": "m", "target": None, "runtime": "ort-cpu",
              "folder": "check/m/hailo8", "action": "ran", "status": "ok", "message": "", "metrics": bench, "outputs": outputs}]
    manifest = {"schema": "npufit.pipeline-run/1", "seconds": 1.0, "counts": {"ran": 2}, "started": "",
                "config": {"name": "p", "path": "p.yaml", "models": [{"name": "m"}], "targets": ["hailo8"],
                           "runtimes": ["ort-cpu"], "steps": ["check", "bench"]},
                "environment": {}, "cells": cells}
    (root / "pipeline.json").write_text(json.dumps(manifest))
    return root


def test_report_never_embeds_a_file_outside_the_results_folder(base, tmp_path):
    tmp = _case(base, tmp_path)
    secret = tmp / "secret.txt"
    secret.write_text("TOP-SECRET-" * 100)
    _results(tmp, {"report": "../../../../secret.txt", "model_explorer": "/etc/passwd"},
             pngs={"leak.png": str(secret), "zero.png": "/dev/zero"})
    o = _run(tmp, ["report", "results", "-o", "r.html"], allowed_new=("r.html",), allow_ok=True)
    if o.rc == 0:
        import base64

        html = (tmp / "r.html").read_text()
        for leaked in (secret.read_bytes(), Path("/etc/passwd").read_bytes()[:60]):
            assert base64.b64encode(leaked)[:40].decode() not in html
        assert "TOP-SECRET" not in html


@pytest.mark.parametrize("edit,needle", [
    (lambda m: m.update(cells="x"), "cells"),
    (lambda m: m["cells"][0].update(folder=5), "folder"),
    (lambda m: m["config"].update(models=[1]), "models"),
    (lambda m: m.update(seconds="fast"), "seconds"),
], ids=["cells", "folder", "models", "seconds"])
def test_report_of_a_tampered_manifest_is_one_line(base, tmp_path, edit, needle):
    tmp = _case(base, tmp_path)
    root = _results(tmp, {})
    m = json.loads((root / "pipeline.json").read_text())
    edit(m)
    (root / "pipeline.json").write_text(json.dumps(m))
    _run(tmp, ["report", "results", "-o", "r.html"], needle=needle)


def test_report_of_a_pipeline_json_pointing_at_dev_zero(base, tmp_path):
    tmp = _case(base, tmp_path)
    root = tmp / "results"
    root.mkdir()
    (root / "pipeline.json").symlink_to("/dev/zero")
    _run(tmp, ["report", "results", "-o", "r.html"], needle="results")


# -- numbers and names on the command line ------------------------------------------------------------------------------
@pytest.mark.parametrize("argv,needle", [
    (["check", "m.onnx", "--fail-under", "nan"], "--fail-under"),
    (["check", "m.onnx", "--fail-under", "-5"], "--fail-under"),
    (["check", "m.onnx", "--target", ""], "--target"),
    (["bench", "m.onnx", "--threads", "-4"], "--threads"),
    (["bench", "m.onnx", "--duration", "inf"], "--duration"),
    (["quantize", "m.onnx", "-o", "q.onnx", "-c", "random", "--samples", "0"], "--samples"),
    (["quantize", "m.onnx", "-o", "q.onnx", "-c", "random", "--mean", "nan"], "--mean"),
    (["split", "m.onnx", "--input-shape", "x=1,3,-8,8"], "--input-shape"),
    (["split", "m.onnx", "--input-shape", "x=1,3,0,8"], "--input-shape"),
    (["split", "m.onnx", "-d", "out", "--input-shape", "x=1,3,8"], "rank"),
    (["run", "plan", "--inputs", "x.npz", "--repeat", "0"], "--repeat"),
    (["probe", "--timeout", "nan"], "--timeout"),
    (["check", "m.onnx", "-o", "plan"], "folder"),
], ids=lambda v: "_".join(map(str, v)) if isinstance(v, list) else None)
def test_bad_numbers_and_names_are_one_line(base, tmp_path, argv, needle):
    tmp = _case(base, tmp_path)
    _run(tmp, argv, needle=needle)


# -- leftovers ------------------------------------------------------------------------------------------------------------
def test_quantize_and_split_leave_no_temp_files_and_plain_folder_modes(base, tmp_path):
    tmp = _case(base, tmp_path)
    old = os.umask(0o022)
    try:
        o = _run(tmp, ["quantize", "m.onnx", "-o", "q.onnx", "-c", "x.npz", "--holdout", "0"], allowed_new=("q.onnx",),
                 allow_ok=True)
        assert o.rc == 0, o.describe()
        o = _run(tmp, ["split", "m.onnx", "-t", "hailo8", "-d", "out", "--no-verify"], allowed_new=("out",), allow_ok=True)
        assert o.rc == 0, o.describe()
    finally:
        os.umask(old)
    assert (tmp / "out").stat().st_mode & 0o777 == 0o755  # like any folder the user makes, not 0700


# -- records and results written by other runs -------------------------------------------------------------------------
BENCH = {"schema": "npufit.bench/1", "model": {"sha256": "0" * 64}, "protocol": {}, "environment": {},
         "results": [{"runtime": "ort-cpu", "status": "ok", "batch": 1, "iterations": 10,
                      "latency_ms": {"mean": 1.0, "p50": 1.0, "p99": 1.2}, "throughput_ips": 1000.0}]}


@pytest.mark.parametrize("edit,needle", [
    (lambda d: d["results"][0]["latency_ms"].pop("p99"), "latency_ms"),
    (lambda d: d["results"][0].update(throughput_ips=None), "throughput_ips"),
    (lambda d: d["results"][0].update(batch="one"), "batch"),
    (lambda d: d.update(results={"a": 1}), "results"),
], ids=["no-p99", "no-throughput", "batch-string", "results-object"])
def test_bench_compare_of_a_tampered_result_is_one_line(tmp_path, edit, needle):
    d = json.loads(json.dumps(BENCH))
    edit(d)
    (tmp_path / "b.json").write_text(json.dumps(d))
    _run(tmp_path, ["bench", "--compare", "b.json"], needle=needle)


@pytest.mark.parametrize("target", ["", "ethos-u55-128"])
def test_probe_replay_of_a_record_for_another_target_is_one_line(tmp_path, target):
    rec = {"schema": "npufit.probe.measured/1", "target": target, "compiler": "hailo", "opset": 11,
           "cases": {"relu": {"status": "ok", "symbol": "ok"}}}
    (tmp_path / "rec.json").write_text(json.dumps(rec))
    _run(tmp_path, ["probe", "--replay", "rec.json", "--target", "hailo8"], needle="rec.json")

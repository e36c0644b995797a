"""Probe machinery: worker processes, per-case timeout and crash verdicts, sweeps, drift, CLI errors."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

pytest.importorskip("torch")

from npufit.errors import NpufitError  # noqa: E402
from npufit.probe import probe  # noqa: E402
from npufit.probe.catalogue import BY_ID, Case, conv2d  # noqa: E402
from npufit.probe.report import ProbeReport  # noqa: E402


# user-defined cases (module level: workers are spawned processes and import this module)
def slow_conv(seconds=60.0):
    time.sleep(seconds)  # a case that never finishes in time, like seed 000's Conv1d in the Hailo compiler
    return conv2d()


def crashing_case():
    os._exit(3)  # the worker process dies (a segfaulting exporter looks the same)


def test_timeout_and_crash_are_verdicts():
    cases = [Case("slow", "custom", ("sleep",), slow_conv, {"seconds": 3600.0}),
             Case("crash", "custom", ("os._exit",), crashing_case)]
    # no wall-clock assert, and no real case racing the timeout (a loaded machine would time it out): the sleeper
    # never finishes and the crash ends at once, so the verdicts cannot depend on the machine's speed; a runner that
    # waited would block here for the sleeper's hour
    rep = probe("hailo8", cases=cases, jobs=2, timeout=2)
    by = {c["id"]: c["predicted"] for c in rep.cases}
    assert by["slow"]["status"] == "timeout" and "2 s" in by["slow"]["error"] and by["slow"]["symbol"] == "⏱"
    assert by["crash"]["status"] == "error" and "exit code 3" in by["crash"]["error"]


def test_cases_after_a_crashed_worker_finish_in_order():
    cases = [Case("crash", "custom", ("os._exit",), crashing_case), BY_ID["conv2d_1x1"], BY_ID["topk"]]
    rep = probe("hailo8", cases=cases, jobs=1)  # one worker: the real cases run on the one started after the crash
    by = {c["id"]: c["predicted"] for c in rep.cases}
    assert by["crash"]["status"] == "error" and "exit code 3" in by["crash"]["error"]
    assert by["conv2d_1x1"]["symbol"] == "✅" and by["topk"]["symbol"] == "❌"
    assert [c["id"] for c in rep.cases] == ["crash", "conv2d_1x1", "topk"]  # task order kept


def test_sweep_reports_where_the_verdict_changes():
    rep = probe("hailo8", cases="permute,reduce_max_keepdims0,tile_batch", jobs=2, sweep=True)
    b = {(x["case"], x["parameter"]): x for x in rep.boundaries()}
    perm = b[("permute", "perm")]
    assert (0, 2, 1, 3) in [tuple(v) for v in perm["failing"]] and (0, 2, 3, 1) in [tuple(v) for v in perm["passing"]]
    assert (1, 0, 2, 3) in [tuple(v) for v in perm["failing"]]  # batch moved
    assert b[("reduce_max_keepdims0", "keepdim")]["changes"] == ["False ❌ -> True ✅"]
    tiles = b[("tile_batch", "repeats")]
    assert [tuple(v) for v in tiles["failing"]] == [(2, 1, 1, 1)] and len(tiles["passing"]) >= 3  # only the batch tile
    md = rep.to_markdown()
    assert "## Sweeps: where the verdict changes" in md and "False ❌ -> True ✅" in md
    assert "tile_batch[repeats=1x2x1x1]" in rep.render("table")


def _case(cid, predicted, measured=None, nodes=None):
    return {"id": cid, "case": cid, "params": {}, "family": "f", "label": cid, "seed": "", "ops": [], "onnx_ops": ["Conv"],
            "predicted": {"status": predicted, "symbol": {"npu": "✅", "cpu": "⚠️", "unsupported": "❌"}[predicted],
                          "failing": [], "nodes": nodes or {}},
            "measured": measured, "notes": [], "seconds": 0.1}


def test_drift_lists_case_and_node_disagreements():
    """Drift logic on recorded results (the measured side of a real compile is exercised in test_probe_drift_vela)."""
    agree = _case("a", "npu", {"status": "npu", "symbol": "✅", "placement": {"conv": "npu"}}, {"conv": "npu"})
    differ = _case("b", "npu", {"status": "cpu", "symbol": "⚠️", "placement": {"conv": "npu", "tanh": "cpu"},
                                "reasons": {"tanh": "not supported"}, "error": ""}, {"conv": "npu", "tanh": "npu"})
    rep = ProbeReport("t", "T", 11, [agree, differ], compiler="vela")
    (row,) = rep.drift()
    assert row["case"] == "b" and row["nodes"] == [{"node": "tanh", "predicted": "npu", "measured": "cpu",
                                                     "compiler_reason": "not supported"}]
    assert "| `b` | npu | cpu |" in rep.to_markdown()


def test_measured_record_replays_without_the_compiler(tmp_path):
    """A compiler run's compact record, replayed against a later prediction, gives that prediction's drift."""
    measured = {"status": "cpu", "symbol": "⚠️", "placement": {"conv": "npu", "tanh": "cpu", "c0": "folded"}, "error": "",
                "version": "5.2.0"}
    run = ProbeReport("hailo8", "Hailo-8", 11, [_case("relu", "npu", measured, {"conv": "npu", "tanh": "npu"})], compiler="vela")
    rec = run.measured_record()
    assert rec["schema"] == "npufit.probe.measured/1" and rec["compiler_versions"] == ["5.2.0"]
    assert rec["cases"]["relu"]["placement"] == {"conv": "npu", "tanh": "cpu"}  # folded constants are not kept
    later = ProbeReport("hailo8", "Hailo-8", 11, [_case("relu", "npu", None, {"conv": "npu", "tanh": "cpu"}),
                                                  _case("abs", "npu", None, {"abs": "npu"})])
    replayed = later.replay(rec)
    assert [c["id"] for c in replayed.cases] == ["relu"] and replayed.compiler == "vela"
    assert replayed.drift()[0]["nodes"] == []  # the node now agrees; the case symbol differs (✅ vs ⚠️)
    # through the CLI: the recorded run's target and cases, real prediction, no compiler needed
    f = tmp_path / "hailo8-measured.json"
    f.write_text(json.dumps(rec))
    r = subprocess.run([sys.executable, "-m", "npufit", "probe", "--replay", str(f), "--format", "json", "--jobs", "1"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["target"] == "hailo8" and [c["id"] for c in d["cases"]] == ["relu"] and d["replayed_from"] == str(f)
    assert d["cases"][0]["predicted"]["symbol"] == "✅" and [x["case"] for x in d["drift"]] == ["relu"]
    with pytest.raises(NpufitError, match="recorded for target hailo8, not rk3588"):
        probe("rk3588", replay=f)
    with pytest.raises(NpufitError, match="leave out --compiler"):
        probe(None, replay=f, compiler="vela")
    with pytest.raises(NpufitError, match="no such file"):
        probe(None, replay=tmp_path / "missing.json")
    f.write_text(json.dumps({**rec, "cases": {"relu": {"placement": {}}}}))  # a case entry without its status
    with pytest.raises(NpufitError, match="not a npufit.probe.measured/1 file"):
        probe(None, replay=f)
    f.write_text("{}")
    r = subprocess.run([sys.executable, "-m", "npufit", "probe", "--replay", str(f)], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "not a npufit.probe.measured/1 file" in r.stderr


def test_catalogue_refuses_a_grid_without_a_default():
    from npufit.probe.catalogue import _c

    with pytest.raises(AssertionError, match="grid \\['size'\\] has no default"):
        _c("bad", "f", ["x"], conv2d, grid={"size": (8, 16)}, kernel=3)


def test_bad_arguments_are_one_line_errors(tmp_path):
    with pytest.raises(NpufitError, match="matches no probe case"):
        probe("hailo8", cases="no_such_case*")
    with pytest.raises(NpufitError, match="does not compile target"):
        probe("hailo8", compiler="vela")
    with pytest.raises(NpufitError, match="unknown target"):
        probe("nosuch")
    f = tmp_path / "file"
    f.write_text("x")
    r = subprocess.run([sys.executable, "-m", "npufit", "probe", "--cases", "relu", "--output", str(f)], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "not a directory" in r.stderr
    r = subprocess.run([sys.executable, "-m", "npufit", "probe", "--timeout", "0"], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--timeout: expected a number > 0" in r.stderr


def test_list_shows_the_catalogue():
    r = subprocess.run([sys.executable, "-m", "npufit", "probe", "--list", "--cases", "deimv2-port"], capture_output=True, text=True)
    assert r.returncode == 0
    assert "grid_sample" in r.stdout and "| reduce_max_keepdims0 | reduction | DEIMv2 port |" in r.stdout


def test_cli_table_is_printed_once():
    r = subprocess.run([sys.executable, "-m", "npufit", "probe", "--target", "hailo8", "--cases", "abs,relu", "--jobs", "1"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("2 cases (") == 1 and r.stdout.count("│ relu ") == 1, r.stdout


def _vela_ready() -> str | None:
    from npufit.probe.measure import compiler_state

    ok, why = compiler_state("vela")
    return None if ok else why


def test_probe_drift_vela(tmp_path):
    """Measured side with a real compiler (Vela via npufit.compilers); skipped when that is not installed here."""
    why = _vela_ready()
    if why:
        pytest.skip(f"Vela measurement unavailable: {why}")
    from npufit.targets import available_targets

    if "ethos-u55-256" not in available_targets():
        pytest.skip("the ethos-u55-256 profile is not in this build")
    # mean_dim_linear and div were in drift before the converter (NHWC MEAN) and profile (x / c is a MUL) were fixed
    rep = probe("ethos-u55-256", cases="conv2d_1x1,relu,tanh,topk,mean_dim_linear,div", compiler="vela", jobs=2, timeout=300,
                output=tmp_path, sweep=True)
    for c in rep.cases:
        assert c["measured"] and c["measured"]["compiler"], c["id"]
        assert c["measured"]["status"] in ("npu", "cpu", "failed", "unmeasured")
    if len(rep.unmeasured()) == len(rep.cases):  # Vela is there but cannot be fed yet (ONNX -> int8 TFLite converter)
        assert all(c["id"] not in {d["case"] for d in rep.drift()} for c in rep.cases)
        pytest.skip(f"Vela installed but nothing measurable: {rep.unmeasured()[0]['why']}")
    by = {c["id"]: c for c in rep.cases}
    for cid in ("mean_dim_linear", "mean_dim_linear[dim=2]", "mean_dim_linear[dim=3]", "div[operand=constant]"):
        assert by[cid]["measured"]["status"] == "npu", (cid, by[cid]["measured"])
    assert by["topk"]["measured"]["status"] == "unmeasured"  # the converter has no TopK k>1 lowering: said, not guessed
    # TopK k=1 is converted as ArgMax + ReduceMax (topk1_to_argmax) and Vela runs both on the NPU; the ethos-u profile
    # still judges TopK as an unknown op: the one known drift until the profile learns it
    assert by["topk[k=1]"]["measured"]["status"] == "npu"
    assert [d["case"] for d in rep.drift()] == ["topk[k=1]"], rep.drift()
    drift = json.loads((tmp_path / "ethos-u55-256-drift.json").read_text())
    assert drift["compiler"] == "vela" and drift["drift"] == rep.drift()
    assert "## Drift: prediction vs vela" in rep.to_markdown()


@pytest.mark.slow
@pytest.mark.vendor
def test_probe_measures_with_rknn(tmp_path):
    """Real RKNN-Toolkit2 (its own environment): a measured matrix with per-node placement and a drift table."""
    from npufit.probe.measure import compiler_state

    ok, why = compiler_state("rknn")
    if not ok:
        pytest.skip(f"RKNN-Toolkit2 unavailable: {why}")
    rep = probe("rk3588", cases="conv2d_1x1,tile_batch", compiler="rknn", jobs=2, timeout=500, output=tmp_path)
    by = {c["id"]: c for c in rep.cases}
    for c in by.values():
        m = c["measured"]
        assert m["compiler"] == "rknn-toolkit2" and m["status"] in ("npu", "cpu", "failed"), m
    assert by["conv2d_1x1"]["measured"]["placement"] == {"/conv/Conv": "npu"}
    # whatever the toolkit decided, every disagreement with the rk3588 profile is in the drift table, node by node
    for c in by.values():
        pred, meas = c["predicted"]["nodes"], c["measured"]["placement"]
        differs = any((pred.get(n) == "npu") != (d == "npu") for n, d in meas.items() if n in pred and d != "folded")
        assert differs == (c["id"] in {r["case"] for r in rep.drift()})
    assert json.loads((tmp_path / "rk3588-drift.json").read_text())["drift"] == rep.drift()

"""Ethos-N78 through Arm's own Ethos-N support library (npufit env install ethos-n): the env build, the TFLite
lowering, the compile adapter (the library's verdicts, Compile(), EstimatePerformance()) and seed 001's table.

The library tests run the real library (built from ../shared/vendor/ethos-n-driver-stack-25.03 by
scripts/test-setup.sh) and skip, saying so, where it is not built."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from npufit.envs import env_status, install
from npufit.errors import NpufitError

pytest.importorskip("torch")

BUILT = env_status("ethos-n")["installed"]
needs_lib = pytest.mark.skipif(not BUILT, reason="the Ethos-N support library is not built here: run "
                               "'npufit env install ethos-n --source <driver stack>' (scripts/test-setup.sh does it for make test)")


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    from npufit.compilers.ethos_n_seed import build_models

    # 64x64: the SPPF pools (5x5) then see 8x8 maps; at 32x32 the library refuses them (maps smaller than the pool)
    return build_models(tmp_path_factory.mktemp("seed001"), size=64, width=16)


def _cli(*args, env=None):
    e = dict(os.environ, **(env or {}))
    return subprocess.run([sys.executable, "-m", "npufit", *args], capture_output=True, text=True, env=e, timeout=600)


# -- without the library ------------------------------------------------------------------------------

def test_missing_build_tools_is_one_clear_error(tmp_path, monkeypatch):
    from npufit.envs import ethos_n

    monkeypatch.setenv("NPUFIT_ENVS", str(tmp_path / "envs"))
    monkeypatch.setattr(ethos_n, "tools", lambda: {"g++": None, "scons": None})
    with pytest.raises(NpufitError) as e:
        install("ethos-n", source=str(tmp_path))
    assert "g++" in e.value.message and "scons==4.4.0" in e.value.message
    assert not (tmp_path / "envs" / "ethos-n" / "npufit-env.json").exists()


def test_a_folder_that_is_not_the_driver_stack_is_refused(tmp_path, monkeypatch):
    from npufit.envs import ethos_n

    if None in ethos_n.tools().values():
        pytest.skip("g++ or scons missing here: the tool check comes first")
    monkeypatch.setenv("NPUFIT_ENVS", str(tmp_path / "envs"))
    (tmp_path / "src").mkdir()
    with pytest.raises(NpufitError, match="not an Ethos-N driver stack"):
        install("ethos-n", source=str(tmp_path / "src"))
    assert not (tmp_path / "envs" / "ethos-n").exists()  # nothing left behind


def test_compile_without_the_library_says_how_to_build_it(tmp_path, models):
    r = _cli("compile", str(models["level2_relu"]), "--target", "ethos-n78", "--out-dir", str(tmp_path / "o"),
             env={"NPUFIT_ENVS": str(tmp_path / "no-envs")})
    assert r.returncode == 2 and "npufit env install ethos-n" in r.stderr and "Traceback" not in r.stderr


@needs_lib
def test_a_corrupt_model_is_one_line_naming_the_users_file(tmp_path):
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(b"\x00" * 64)
    r = _cli("compile", str(bad), "--target", "ethos-n78", "--out-dir", str(tmp_path / "o"))
    assert r.returncode == 2 and r.stderr.strip() == f"npufit: error: {bad}: not a TFLite model (no 'TFL3' file identifier)"
    assert bad.read_bytes() == b"\x00" * 64


def test_variants_are_target_options():
    from npufit.compilers import compiler_for
    from npufit.compilers.base import CompileOptions
    from npufit.compilers.ethos_n import variant_of

    assert variant_of("ethos-n78") == "Ethos-N78_4TOPS_4PLE_RATIO"  # seed 001's TOPS=4, PLE=4
    assert variant_of("ethos-n78-8tops-2ple") == "Ethos-N78_8TOPS_2PLE_RATIO"
    assert variant_of("ethos-n78", CompileOptions(extra={"ethos_n_variant": "1tops-4ple"})) == "Ethos-N78_1TOPS_4PLE_RATIO"
    assert compiler_for("ethos-n78-2tops-4ple").name == "ethos-n"
    with pytest.raises(NpufitError):
        compiler_for("ethos-n78-3tops-1ple")


def test_lowering_builds_one_library_op_per_tflite_op(models):
    """PAD before a VALID convolution is folded into its padding; LeakyReLU stays one int8 op (no Q/DQ)."""
    from npufit.compilers.ethos_n_lower import lower
    from npufit.graph import load

    path = models["level3_leakyrelu"]
    g = load(path)
    low = lower(g, path)
    kinds = [ln.split()[2] for ln in low.request.splitlines() if ln.startswith("op ")]
    pads = [n.name for n in g.nodes if n.op_type == "PAD"]
    assert pads and set(low.fused) == set(pads)
    assert "pad" not in kinds and kinds.count("leaky") == sum(n.op_type == "LEAKY_RELU" for n in g.nodes)
    assert {"conv", "concat", "pool", "split", "resize"} <= set(kinds) and "requant" not in kinds
    conv_lines = [ln for ln in low.request.splitlines() if ln.startswith("op ") and " conv " in ln]
    assert any("pad=1,1,1,1" in ln or "pad=0,1,0,1" in ln for ln in conv_lines)
    # weights are HWIO with per-output-channel scales on axis 3
    w = next(ln for ln in low.request.splitlines() if ln.startswith("tensor ") and " HWIO " in ln).split()
    assert w[9] == "3" and int(w[10]) == int(w[7])


# -- with the library ----------------------------------------------------------------------------------

@needs_lib
def test_env_install_is_idempotent():
    from npufit.envs import env_dir

    files = lambda: {p: p.stat().st_mtime_ns for p in env_dir("ethos-n").rglob("*") if p.is_file()}  # noqa: E731
    before = files()
    m = install("ethos-n")
    assert m["reused"] and m["version"] == "6.0.0" and m["size_mb"] > 1
    assert files() == before  # nothing rebuilt or rewritten (not a time bound: a loaded machine is slow anyway)
    r = _cli("env", "install", "ethos-n")
    assert r.returncode == 0 and "nothing to do" in r.stdout


@needs_lib
def test_another_shim_version_is_linked_beside_never_over(monkeypatch):
    """Worktrees / npufit versions share ~/.cache/npufit/envs: each shim source gets its own binary."""
    from npufit.envs import env_dir, ethos_n

    d = env_dir("ethos-n")
    mine = ethos_n.shim_path(d)
    monkeypatch.setattr(ethos_n, "shim_digest", lambda: "0000test0000")
    other = ethos_n.shim_path(d)
    try:
        m = install("ethos-n")
        assert m["relinked"] and other.exists() and mine.exists() and other != mine
        assert install("ethos-n")["reused"]
    finally:
        other.unlink(missing_ok=True)


@needs_lib
def test_relu_detector_compiles_fully_on_the_npu(tmp_path, models):
    from npufit.compilers import compile_model

    r = compile_model(models["level2_relu"], "ethos-n78", out_dir=tmp_path)
    assert r.ok, r.error
    assert r.compiler == "ethos-n-support-library" and r.compiler_version == "6.0.0"
    assert {p.device for p in r.placement} == {"npu"}
    m = r.metrics
    assert m["compile"]["ok"] and m["compile"]["networks"] >= 1 and m["compile"]["serialized_bytes"] > 0
    assert Path(r.artifact).stat().st_size == m["compile"]["serialized_bytes"]  # the compiled command stream
    assert m["support_levels"]["unsupported"] == 0 and m["npu_partitions"] == 1 and m["host_partitions"] == 0
    est = m["estimate"]
    assert est["passes"] >= 1 and est["mce_cycles"] > 0 and est["dram_bytes"] > 0
    assert m["estimated_latency_ms"] == pytest.approx(est["cycles_estimated"] / (m["clock_mhz"] * 1e3), abs=1e-4)
    assert "support library" in m["flow"]


@needs_lib
def test_leaky_relu_is_supported_by_the_library_but_an_island_in_tvms_flow(tmp_path, models):
    from npufit import check
    from npufit.compilers import compile_model

    path = models["level2_leakyrelu"]
    r = compile_model(path, "ethos-n78", out_dir=tmp_path)
    leaky = [p for p in r.placement if p.op == "LEAKY_RELU"]
    assert r.ok and leaky and all(p.device == "npu" for p in leaky)
    assert any("TVM" in n and "leaky_relu" in n for n in r.notes)
    tvm = check(path, "ethos-n78", measure="never")  # the profile's prediction models TVM's flow
    assert all(tvm.node(p.node).verdict.value == "cpu" for p in leaky)
    # measured by the library (the default where it is built), the difference is listed with both explanations
    lib = check(path, "ethos-n78")
    differ = {d["node"]: d for d in lib.extra["placement"]["disagreements"]}
    assert {p.node for p in leaky} <= set(differ) and all(lib.node(p.node).verdict.value == "npu" for p in leaky)
    assert all(differ[p.node]["predicted"] == "cpu" and differ[p.node]["npufit_explanation"] for p in leaky)


@needs_lib
def test_unsupported_operations_carry_the_librarys_reason(tmp_path):
    """The library's own words: a 4x4 kernel is EstimateOnly, a mean over 16x16 Unsupported; SOFTMAX has no
    library operation at all (npufit's reason)."""
    import torch

    from npufit.compilers import compile_model
    from npufit.convert import onnx_to_int8_tflite
    from npufit.zoo.export import export_onnx

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv3, self.conv4 = torch.nn.Conv2d(16, 16, 3, padding=1), torch.nn.Conv2d(16, 16, 4, padding=2)

        def forward(self, x):
            y = self.conv4(torch.relu(self.conv3(x)))
            return torch.softmax(y.mean((2, 3)), 1)

    export_onnx(M().eval(), torch.randn(1, 16, 16, 16), tmp_path / "m.onnx", 13)
    tfl = onnx_to_int8_tflite(tmp_path / "m.onnx", tmp_path / "m.tflite").path
    r = compile_model(tfl, "ethos-n78", out_dir=tmp_path / "o")
    convs = sorted((p for p in r.placement if p.op == "CONV_2D"), key=lambda p: p.device)
    assert [p.device for p in convs] == ["cpu", "npu"]
    assert convs[0].reason == ("Ethos-N support library: EstimateOnly: Unsupported kernel size. "
                               "Width(4)/height(4) must be in { 1, 2, 3, 5, 7, 9 }")
    mean = next(p for p in r.placement if p.op == "MEAN")
    assert mean.device == "cpu" and mean.reason.startswith("Ethos-N support library: Unsupported: MeanXy is supported for 7x7")
    soft = next(p for p in r.placement if p.op == "SOFTMAX")
    assert soft.device == "cpu" and soft.reason.startswith("npufit: ")
    assert r.ok and r.metrics["support_levels"]["estimate_only"] >= 1 and r.metrics["host_partitions"] >= 1


@needs_lib
def test_onnx_input_is_converted_and_mapped_back(tmp_path):
    from npufit.compilers import compile_model
    from npufit.zoo import detector

    onnx = tmp_path / "det.onnx"
    detector.export("relu", onnx, size=32)
    r = compile_model(onnx, "ethos-n78", out_dir=tmp_path / "o")
    assert r.ok, r.error
    ops = {p.op for p in r.placement}
    assert "Conv" in ops and "CONV_2D" not in ops  # the user's ONNX nodes, not the TFLite ones
    assert all(p.device in ("npu", "folded") for p in r.placement)
    assert "int8_tflite" in r.outputs and r.metrics["conversion"]["tflite_ops"] > 0


@needs_lib
def test_a_bigger_variant_estimates_fewer_mce_cycles(tmp_path, models):
    from npufit.compilers import compile_model

    small = compile_model(models["level2_relu"], "ethos-n78-1tops-4ple", out_dir=tmp_path / "a").metrics
    big = compile_model(models["level2_relu"], "ethos-n78-8tops-2ple", out_dir=tmp_path / "b").metrics
    assert small["variant"] == "Ethos-N78_1TOPS_4PLE_RATIO" and big["variant"] == "Ethos-N78_8TOPS_2PLE_RATIO"
    assert big["estimate"]["mce_cycles"] < small["estimate"]["mce_cycles"]


@needs_lib
def test_a_variant_the_library_finds_no_plan_for_is_a_failed_compile(tmp_path, models):
    """Measured: with the default SRAM, 25.03's Compile() returns no network for the 2TOPS variants."""
    from npufit.compilers import compile_model

    r = compile_model(models["level2_relu"], "ethos-n78-2tops-2ple", out_dir=tmp_path)
    assert not r.ok and r.error == "Compile() failed: Error: Internal compiler error: Failed to find a valid combination!"
    assert {p.device for p in r.placement} == {"npu"}  # every operation was Supported; no plan was found


@needs_lib
def test_compile_cli_prints_the_librarys_figures(tmp_path, models):
    r = _cli("compile", str(models["level2_relu"]), "--target", "ethos-n78", "--out-dir", str(tmp_path / "o"), "--format", "json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["compiler"] == "ethos-n-support-library" and d["metrics"]["estimated_latency_ms"] > 0


@needs_lib
def test_seed001_table_from_the_real_library(tmp_path, models):
    from npufit.compilers.ethos_n_seed import measure, render

    rows = measure(models, tmp_path)
    print("\n" + render(rows))
    assert len(rows) == 6 and all(r.compiled for r in rows), [r.notes for r in rows]
    for r in rows:
        if r.act == "relu":
            assert r.ratio >= 0.95  # seed 001: ReLU variants 96-99% on the NPU
        else:
            assert r.leaky > 0 and r.library_extra_qdq == 0  # the library runs int8 LeakyReLU as is
            assert r.tvm_ratio < r.ratio  # TVM's dequantize -> leaky_relu -> quantize islands go to the host
    assert "Level 3 LeakyReLU" in render(rows)


# -- the bridge: networks the library compiles --------------------------------------------------------------------
def _tflite(path, build):
    from npufit.convert.tflite_writer import TFLiteBuilder

    b = TFLiteBuilder()
    x, outs = build(b)
    b.io([x], outs)
    path.write_bytes(b.build())
    return path


@needs_lib
def test_split_parts_feeding_several_operations_compile(tmp_path):
    """Handed a network whose split parts feed several operations as they are, Compile() failed on its own graph
    ("`buffer` is not part of this graph (or is nullptr)"), and check --measure stopped; the bridge now hands
    further readers copies and, where the library still breaks, keeps that split on the host and says so."""
    from npufit import check
    from npufit.compilers import compile_model

    from .tflite_models import split_fanout

    m = _tflite(tmp_path / "m.tflite", split_fanout)
    r = compile_model(m, "ethos-n78", out_dir=tmp_path / "out")
    assert r.ok, r.error
    for p in r.placement:
        assert p.device == "npu" or (p.op == "SPLIT" and "keeps it on the host" in p.reason), p
    rep = check(m, "ethos-n78")
    assert rep.extra["placement"]["source"] == "measured"
    assert rep.counts == {"npu": r.summary()["npu"], "cpu": r.summary()["cpu"], "unsupported": 0, "folded": 0}


@needs_lib
def test_an_output_nobody_reads_is_written_out(tmp_path):
    """A convolution whose output no operation reads and the model does not return: the library refuses dangling
    outputs ('There are dangling outputs'); the bridge writes such a tensor out, as Arm NN does."""
    from npufit.compilers import compile_model

    from .tflite_models import conv1x1

    def build(b):
        x = b.tensor("input", (1, 8, 8, 4), "int8", scale=0.02, zero_point=0)
        c1 = conv1x1(b, x, 4, 8, "c1", 8, in_scale=0.02)
        conv1x1(b, c1, 8, 4, "dead", 8, seed=5)
        return x, [conv1x1(b, c1, 8, 4, "c2", 8)]

    r = compile_model(_tflite(tmp_path / "m.tflite", build), "ethos-n78", out_dir=tmp_path / "out")
    assert r.ok, r.error
    assert {p.device for p in r.placement} == {"npu"}

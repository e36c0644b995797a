"""`npufit bench` at the CLI edge: JSON output, --compare table with ratios, the PNG plot, one-line errors."""
from __future__ import annotations

import importlib.util
import json

import pytest

from .test_bench_runtimes import conv_model


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    d = tmp_path_factory.mktemp("cmp")
    model = conv_model(d / "conv.onnx")
    second = "openvino" if importlib.util.find_spec("openvino") else "ort-cpu"
    a, b = d / "a.json", d / "b.json"
    assert main([str(model), "-r", "ort-cpu", "-n", "40", "--warmup", "2", "-o", str(a), "-f", "json"]) == 0
    assert main([str(model), "-r", second, "-n", "40", "--warmup", "2", "--threads", "1", "-o", str(b)]) == 0
    return d, a, b, second


def main(argv):
    from npufit.cli import main as cli_main

    return cli_main(["bench", *argv])


def test_output_is_the_json_result(results):
    d, a, _, _ = results
    data = json.loads(a.read_text())
    assert data["schema"] == "npufit.bench/1" and data["results"][0]["runtime"] == "ort-cpu"


def test_compare_table_ratios_and_plot(results, capsys):
    d, a, b, second = results
    png = d / "cmp.png"
    capsys.readouterr()
    assert main(["--compare", str(a), str(b), "--baseline", "ort-cpu", "--plot", str(png), "-f", "json"]) == 0
    cmp = json.loads(capsys.readouterr().out)
    assert cmp["schema"] == "npufit.bench-compare/1" and cmp["baseline"].endswith("ort-cpu")
    base, other = cmp["rows"]
    assert base["p50_ratio"] == 1.0 and base["throughput_ratio"] == 1.0
    assert other["p50_ratio"] == pytest.approx(other["p50_ms"] / base["p50_ms"])
    assert other["speedup"] == pytest.approx(base["p50_ms"] / other["p50_ms"])
    raw = png.read_bytes()
    assert raw[:8] == b"\x89PNG\r\n\x1a\n" and len(raw) > 10_000
    assert main(["--compare", str(a), str(b), "--baseline", "ort-cpu"]) == 0
    table = capsys.readouterr().out
    assert "baseline:" in table and "1.00x" in table and "p50 vs base" in table


def test_compare_states_what_makes_numbers_incomparable(results, tmp_path, capsys):
    _, a, b, _ = results
    other = json.loads(b.read_text())
    other["model"]["sha256"] = "0" * 64
    other["environment"]["cpu_model"] = "another CPU"
    c = tmp_path / "c.json"
    c.write_text(json.dumps(other))
    capsys.readouterr()
    assert main(["--compare", str(a), str(c), "-f", "markdown"]) == 0
    out = capsys.readouterr().out
    assert "models (sha256) differ" in out and "machines (cpu_model) differ" in out


def test_cli_errors_are_one_line(results, tmp_path, capsys):
    d, a, _, _ = results
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "npufit.check/1"}')
    cases = [([str(tmp_path / "missing.onnx")], "no such file"),
             (["--compare", str(bad)], "not an npufit bench result"),
             ([str(d / "conv.onnx"), "-n", "0"], "argument --iterations/-n: expected an integer in [1,"),
             ([str(d / "conv.onnx"), "--compare", str(a)], "not both"),
             (["--compare", str(a), "--baseline", "nope"], "matches no entry"),
             ([str(d / "conv.onnx"), "-r", "rknn"], "not a benchmark")]
    for argv, msg in cases:
        capsys.readouterr()
        try:
            rc = main(argv)
        except SystemExit as e:  # refused by the argument parser, before any work
            rc = e.code
        assert rc == 2, argv
        err = capsys.readouterr().err.strip()
        assert msg in err and len(err.splitlines()) == 1 and "Traceback" not in err


def test_nothing_measured_exits_1(results, capsys):
    d, _, _, _ = results
    assert main([str(d / "conv.onnx"), "-r", "hailort"]) == 1
    assert "skipped hailort" in capsys.readouterr().out

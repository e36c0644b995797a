"""A hint is shown only where it holds, and a command a report suggests does what it says.

Hint kinds: a `npufit fix --rules R` suggestion (only where rule R rewrites the node: TopK k = 1, not k = 4, 100 or
300, which topk1_to_argmax refuses); "quantize first" (only for float feature maps, not for the resource variables
or bools of an int8 model); a risky default (random calibration for a deployable artifact: warned before the compile,
in its name and its metadata).
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import warnings
from pathlib import Path

import onnx
import pytest

import npufit
from npufit.convert.tflite_writer import TFLiteBuilder
from npufit.errors import NpufitWarning

from .hint_models import float_conv_model, topk_model
from .tflite_models import stateful_conv

QUANTIZE = "npufit quantize"


def _rules(report, op: str) -> set[str]:
    return {f for n in report.failing if n.op_type == op for r in n.reasons for f in r.fix_rules}


def _hints(report, op: str) -> list[str]:
    return [f for n in report.failing if n.op_type == op for r in n.reasons for f in r.fix]


@pytest.mark.parametrize("target", ["hailo8", "rk3588", "rv1106"])
@pytest.mark.parametrize("k", [4, 100, 300])
def test_topk_to_argmax_is_not_suggested_for_k_above_one(tmp_path, target, k):
    m = topk_model(tmp_path / f"topk{k}.onnx", k)
    report = npufit.check(m, target)
    assert [n for n in report.failing if n.op_type == "TopK"], "TopK is off the NPU on every one of these targets"
    assert "topk1_to_argmax" not in _rules(report, "TopK")
    assert "topk1_to_argmax" not in report.fix_rules()
    assert not any("k = 1" in h for h in _hints(report, "TopK"))
    assert "topk1_to_argmax" not in report.render("table") + report.render("markdown") + report.render("html")


@pytest.mark.parametrize("target", ["hailo8", "rk3588"])
def test_topk_to_argmax_suggested_for_k_one_and_the_suggestion_runs_as_pasted(tmp_path, target):
    m = topk_model(tmp_path / "topk1.onnx", 1)
    report = npufit.check(m, target)
    assert "topk1_to_argmax" in report.fix_rules() and any("k = 1" in h for h in _hints(report, "TopK"))
    table = report.render("table")
    # the last line of the report, which a narrow terminal wraps at a space
    line = "".join(table.split("suggested: ", 1)[1].splitlines())
    assert line.startswith("npufit fix ") and "--rules topk1_to_argmax" in line
    # run as pasted: the rule fires and the TopK leaves the model
    p = subprocess.run([sys.executable, "-m", *shlex.split(line)], capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    out = next(Path(a) for a in shlex.split(line) if a.endswith(".onnx") and a != str(m))
    assert out.is_file() and "TopK" not in {n.op_type for n in onnx.load(out).graph.node}
    fixed = npufit.fix(m, target, output=tmp_path / "fixed.onnx", rules=report.fix_rules())
    (topk,) = [r for r in fixed.rules if r.name == "topk1_to_argmax"]
    assert topk.status == "applied" and topk.fired == 1 and "TopK" in topk.removed and fixed.written


def test_every_fix_suggestion_of_a_report_is_a_rule_fix_applies(tmp_path):
    """On a model where several rules are suggested, `npufit fix --rules <suggested>` applies each of them."""
    m = topk_model(tmp_path / "topk1.onnx", 1, opset=13)
    report = npufit.check(m, "hailo8")
    suggested = report.fix_rules()
    fixed = npufit.fix(m, "hailo8", output=tmp_path / "f.onnx", rules=suggested)
    assert {r.name for r in fixed.applied} == set(suggested)


def test_quantize_hint_only_for_float_feature_maps(tmp_path):
    f = float_conv_model(tmp_path / "float.onnx")
    for target in ("ethos-u55-256", "ethos-n78"):
        report = npufit.check(f, target, judge="float")  # the float graph as it is: float ops stay off the NPU
        hints = [h for n in report.failing for r in n.reasons for h in r.fix]
        assert any(QUANTIZE in h for h in hints), (target, hints)
    # an int8 TFLite whose resource variables stay on the CPU: quantizing changes nothing there
    b = TFLiteBuilder()
    x, out = stateful_conv(b)
    b.io([x], [out])
    stateful = tmp_path / "stateful.tflite"
    stateful.write_bytes(b.build())
    for target in ("ethos-u55-256", "ethos-n78"):
        report = npufit.check(stateful, target)
        variables = [n for n in report.failing if n.op_type in ("VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE")]
        assert variables, target
        hints = [h for n in variables for r in n.reasons for h in r.fix]
        assert not any(QUANTIZE in h for h in hints), (target, hints)
        assert QUANTIZE not in report.render("table")
    hints = [h for n in npufit.check(stateful, "ethos-u55-256").failing for r in n.reasons for h in r.fix]
    assert any("resource variable" in h for h in hints)


def test_random_calibration_is_warned_first_and_named_in_the_artifact(tmp_path):
    f = float_conv_model(tmp_path / "float.onnx")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = npufit.compile(f, "ethos-u55-256", out_dir=tmp_path / "out")
    mine = [w for w in caught if issubclass(w.category, NpufitWarning)]
    assert len(mine) == 1 and "random" in str(mine[0].message) and "--" not in str(mine[0].message)
    assert r.ok and r.random_calibrated and "random-calibrated" in Path(r.artifact).name
    assert r.to_dict()["random_calibrated"] is True
    text = r.render("table").splitlines()
    assert "random data" in text[0] and text[1].startswith("WARNING: no calibration data")
    # with calibration data there is no warning and the name is plain
    import numpy as np

    np.savez(tmp_path / "cal.npz", x=np.random.default_rng(0).standard_normal((8, 1, 3, 16, 16)).astype(np.float32))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = npufit.compile(f, "ethos-u55-256", out_dir=tmp_path / "out2", calibration=str(tmp_path / "cal.npz"))
    assert not [w for w in caught if issubclass(w.category, NpufitWarning)]
    assert r.ok and not r.random_calibrated and "random" not in Path(r.artifact).name and not r.warnings


def test_random_calibration_warning_comes_first_on_the_command_line(tmp_path):
    f = float_conv_model(tmp_path / "float.onnx")
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "npufit",
            "compile",
            str(f),
            "--target",
            "ethos-u55-256",
            "--out-dir",
            str(tmp_path / "o"),
        ],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stderr
    first = p.stderr.splitlines()[0]
    assert first.startswith("npufit: warning: no calibration data"), p.stderr
    assert "INFO:" not in p.stderr and "XNNPACK" not in p.stderr  # LiteRT's own log lines are not shown

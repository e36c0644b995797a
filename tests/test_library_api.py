"""The library reads like a library: short reprs, docstrings with parameters and an example, a target that is never
chosen silently, and a --help that names every target family."""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

import npufit
from npufit.targets import available_targets, get_profile

from .hint_models import float_conv_model, topk_model

DOCUMENTED = (
    "check",
    "fix",
    "split",
    "run",
    "quantize",
    "compile",
    "bench",
    "probe",
    "scan",
    "compare",
    "pipeline",
    "report",
    "explain",
)
TARGETED = ("check", "fix", "split", "scan", "compare", "probe")
MAX_REPR = 200
ROOT = Path(__file__).resolve().parent.parent


def _params(fn) -> list[str]:
    return [p.name for p in inspect.signature(fn).parameters.values()]


@pytest.mark.parametrize("verb", DOCUMENTED)
def test_every_verb_has_a_docstring_with_its_parameters_and_an_example(verb):
    fn = getattr(npufit, verb)
    doc = inspect.getdoc(fn) or ""
    assert "Parameters\n----------" in doc and "Example\n-------" in doc, verb
    params = doc.split("Parameters\n----------", 1)[1].split("\nReturns", 1)[0]
    for name in _params(fn):
        assert re.search(rf"(^|[\s,*]){re.escape(name)}\b", params, re.M), f"{verb}: parameter {name} undocumented"
    example = doc.split("Example\n-------", 1)[1]
    assert ">>> import npufit" in example and f"npufit.{verb}(" in example, verb


@pytest.mark.parametrize("verb", TARGETED)
def test_the_target_is_required_in_the_library(verb):
    p = inspect.signature(getattr(npufit, verb)).parameters
    name = "targets" if verb == "scan" else "target"
    assert p[name].default is inspect.Parameter.empty, verb


def test_check_without_a_target_is_refused_and_the_cli_says_when_it_uses_its_default(tmp_path):
    m = float_conv_model(tmp_path / "m.onnx")
    with pytest.raises(TypeError):
        npufit.check(m)  # type: ignore[call-arg]
    run = [sys.executable, "-m", "npufit", "check", str(m)]
    p = subprocess.run(run, capture_output=True, text=True)
    assert p.returncode == 0 and "no --target given: hailo8 (the default" in p.stderr.splitlines()[0]
    p = subprocess.run([*run, "--target", "rk3588"], capture_output=True, text=True)
    assert p.returncode == 0 and "no --target given" not in p.stderr


def test_help_names_every_target_family_and_chip():
    text = subprocess.run([sys.executable, "-m", "npufit", "--help"], capture_output=True, text=True).stdout
    flat = " ".join(text.split())
    for name in available_targets():
        head = get_profile(name).title.split(" (")[0]
        chips = re.findall(r"(?:RK|RV)\d{4}|\b[NU]\d\d\b|Hailo-8L?", head.replace("Ethos-", "Ethos- "))
        assert chips, head
        for chip in chips:
            chip = "8L" if chip == "Hailo-8L" else chip
            assert chip in flat, (name, chip)
    assert "npufit targets" in flat


def test_reprs_are_short_and_say_what_the_result_is(tmp_path):
    from .report_models import yolov8n_like

    yolo = yolov8n_like(tmp_path / "yolov8n.onnx")
    report = npufit.check(yolo, "hailo8")
    r = repr(report)
    assert re.fullmatch(r"<CheckReport hailo8 yolov8n\.onnx: \d+\.\d% nodes, \d+ NPU / \d+ host>", r), r
    assert len(r) < 100 and len(report.to_json()) > 50 * len(r)  # it was the whole report: 170,000 characters
    k1 = topk_model(tmp_path / "topk1.onnx", 1)
    objects = [
        report,
        npufit.fix(k1, "hailo8", output=tmp_path / "f.onnx"),
        npufit.split(yolo, "hailo8", tmp_path / "plan", verify=False),
        npufit.compare([yolo, k1], "hailo8"),
        npufit.explain("hailo8.shuffle.rank3"),
        get_profile("rk3588"),
        npufit.load(yolo),
        npufit.scan([k1], "hailo8,rk3588", executor="inprocess"),
        npufit.validate_pipeline(ROOT / "examples" / "timeseries.yaml"),
        npufit.doctor(),
    ]
    from npufit.check.grid import check_grid
    from npufit.graph import load

    objects.append(check_grid(load(yolo), ["hailo8", "rk3588"], "auto"))
    import numpy as np

    g = load(yolo)
    x = {t.name: np.zeros(t.shape, np.float32) for t in g.inputs}
    objects.append(npufit.run(tmp_path / "plan", x))
    for obj in objects:
        text = repr(obj)
        assert text.startswith(f"<{type(obj).__name__} ") and text.endswith(">") and len(text) <= MAX_REPR, text


def test_result_reprs_of_the_heavier_verbs(tmp_path):
    m = float_conv_model(tmp_path / "conv.onnx")
    q = npufit.quantize(m, tmp_path / "q.onnx", "random", samples=8, holdout=2)
    b = npufit.bench(m, "ort-cpu", iterations=5, warmup=1)
    c = npufit.compile(m, "ethos-u55-256", out_dir=tmp_path / "c", calibration="random")
    for obj in (q, b, c):
        text = repr(obj)
        assert text.startswith(f"<{type(obj).__name__} ") and len(text) <= MAX_REPR, text
    assert "random-calibrated" in repr(c) and "ort-cpu" in repr(b) and "q.onnx" in repr(q)


def test_input_shapes_as_a_dict_and_as_a_string_give_the_same_report(tmp_path):
    from .report_models import yolov8n_like

    yolo = yolov8n_like(tmp_path / "yolov8n.onnx")
    (inp,) = npufit.load(yolo).inputs
    dims = tuple(inp.shape)
    as_dict = npufit.check(yolo, "hailo8", input_shapes={inp.name: dims})
    as_text = npufit.check(yolo, "hailo8", input_shapes=f"{inp.name}={','.join(map(str, dims))}")
    assert as_dict.to_json() == as_text.to_json()
    from npufit.errors import NpufitError

    with pytest.raises(NpufitError):
        npufit.check(yolo, "hailo8", input_shapes="images=1,3,x")


def test_one_plain_check_function():
    """`npufit.check` is a function (not a callable module) and the subpackage does not export another `check`."""
    import importlib
    import types

    pkg = importlib.import_module("npufit.check")
    assert isinstance(pkg, types.ModuleType) and not callable(pkg)
    assert isinstance(npufit.check, types.FunctionType)
    for verb in DOCUMENTED:
        assert isinstance(getattr(npufit, verb), types.FunctionType), verb
    assert not hasattr(pkg, "check") or pkg.check is npufit.check

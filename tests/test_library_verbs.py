"""Every CLI verb is a plain library function of the same name (README: `npufit.check(...)`, `npufit.pipeline(...)`),
defined once and named in npufit.verbs; `npufit.<verb>` is that function even where a subpackage has its name."""
from __future__ import annotations

import inspect
import subprocess
import sys
import types

import pytest

import npufit
from npufit import verbs
from npufit.cli import COMMANDS
from npufit.errors import NpufitError

from .onnx_builders import branchy_model


def _run(code: str) -> str:
    """`code` in a fresh interpreter (what a user's script sees first), its stdout."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.parametrize("verb", sorted(COMMANDS))
def test_every_cli_verb_is_a_plain_function_of_the_library(verb):
    fn = getattr(npufit, verb)
    assert inspect.isfunction(fn), f"npufit.{verb} is {type(fn).__name__}, not a plain function"
    assert fn is getattr(verbs, verb)


def test_the_root_names_exactly_the_verbs_module():
    assert set(npufit.VERBS) == set(verbs.__all__)
    assert all(inspect.isfunction(getattr(npufit, v)) for v in npufit.VERBS)


def test_npufit_check_is_the_verb_and_from_npufit_import_check_works():
    from npufit import check
    from npufit.placement import check as defined

    assert npufit.check is check is defined is verbs.check
    assert list(inspect.signature(check).parameters) == [
        "model",
        "target",
        "input_shapes",
        "judge",
        "assume_int8",
        "measure",
        "timeout_s",
        "record",
    ]
    assert inspect.signature(check).parameters["judge"].default == "auto"
    assert inspect.signature(check).parameters["measure"].default == "auto"  # the compiler judges where it runs


def test_there_is_one_check():
    """`from npufit.check import check` once gave a second function without `measure`: the package has none now."""
    with pytest.raises(ImportError):
        from npufit.check import check  # noqa: F401
    from npufit.check import predict

    assert predict is not npufit.check


def test_a_verb_stays_the_function_after_its_subpackage_is_imported_first():
    """Python binds a subpackage on its parent when it is first imported: in a fresh interpreter that imports the
    subpackages before ever touching the verbs, every verb is still the function (and it runs)."""
    subs = ["check", "split", "quantize", "bench", "probe", "scan", "pipeline", "report", "targets", "doctor"]
    code = (
        "import importlib, inspect, sys\n"
        f"for s in {subs!r}:\n"
        "    importlib.import_module('npufit.' + s)\n"
        "import npufit.check.engine, npufit.split.plan\n"
        "import npufit\n"
        f"bad = [s for s in {subs!r} if not inspect.isfunction(getattr(npufit, s))]\n"
        "print('bad', bad)\n"
        "print('targets', npufit.targets('rk3588').name)\n"
    )
    out = _run(code)
    assert "bad []" in out and "targets rk3588" in out, out


def test_subpackages_are_reached_by_their_full_name():
    from npufit.check import engine
    from npufit.check.engine import predict

    assert isinstance(engine, types.ModuleType) and engine.predict is predict
    assert isinstance(sys.modules["npufit.check"], types.ModuleType)
    assert all(type(m) is types.ModuleType for n, m in list(sys.modules.items()) if n.startswith("npufit.")), (
        "no callable modules"
    )


def test_import_npufit_is_light():
    """`import npufit` imports no numpy, onnx, torch or vendor SDK, nor any verb; a verb comes on first use."""
    out = _run(
        "import sys, npufit\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'onnx', 'torch', 'yaml', 'onnxruntime')"
        " or (m.startswith('npufit.'))))\n"
    )
    assert out.strip() == "[]", out


def test_the_check_verb_predicts_what_the_engine_does(tmp_path):
    import onnx

    path = tmp_path / "m.onnx"
    onnx.save_model(branchy_model(), str(path))
    from npufit.check.engine import predict

    a, b = npufit.check(path, "hailo8"), predict(path, "hailo8")  # no compiler for hailo8 runs here: the prediction
    da, db = a.to_dict(), b.to_dict()
    assert da.pop("placement")["source"] == "predicted" and da == db


def test_subpackage_verbs_do_what_their_cli_does(tmp_path):
    assert [p.name for p in npufit.targets()][:1] == ["hailo8"] and npufit.targets("rk3588").name == "rk3588"
    assert {c.name for c in npufit.doctor().core}
    assert {e["name"] for e in npufit.env()} >= {"rknn", "hailo"}
    with pytest.raises(NpufitError):
        npufit.pipeline(tmp_path / "missing.yaml")
    with pytest.raises(NpufitError):
        npufit.validate_pipeline(tmp_path / "missing.yaml")
    with pytest.raises(NpufitError):
        npufit.report(tmp_path / "no-results")
